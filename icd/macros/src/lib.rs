//! `#[cl_entrypoint(clName)]`: the one place that writes weft-icd's `extern "C"` entry
//! points (shared/STYLE.md §2, after rusticl's `cl_entrypoint`). It goes on the function
//! that does the work, keeps it as written, and adds next to it
//!
//! ```text
//! pub [unsafe] extern "C" fn clName(<C parameters>) -> <C return>
//! ```
//!
//! that converts typed handles, calls the function under `catch_unwind` (a panic never
//! crosses `extern "C"`; it is `CL_OUT_OF_RESOURCES`, or null, or nothing) and turns its
//! result into the C convention, by its return type:
//!
//! | the function returns | the entry point |
//! |---|---|
//! | `ClResult<()>` | returns the `cl_int` (`api::ret_code`) |
//! | `ClResult<Info>` | a `clGet*Info`: takes the last three parameters `param_value_size`, `param_value`, `param_value_size_ret` and does the size dance with the bytes (`api::write_info`), returning the `cl_int` |
//! | `ClResult<T>` | takes a last `errcode_ret: *mut cl_int`, writes the code there when it is not null and returns the object, or null (`api::obj_or_code`, `api::set_errcode`) |
//! | anything else, `R` | returns `R`, `R::no_value()` after a panic (`api::ret_plain`, `api::NoValue`) |
//!
//! A parameter of type `Arc<Obj<T>>` is a typed handle: the entry point takes a `Handle`
//! there and passes `icd::get::<T>(handle)?`, so the kind's `CL_INVALID_*` code comes
//! before the function runs (handles are converted in parameter order, first to last).
//! A parameter of type `Cmd` (an enqueue's queue, wait list and event, `api::queue::Cmd`)
//! takes a `Handle` there and three last parameters `num_events_in_wait_list`,
//! `event_wait_list`, `event` (before an `errcode_ret`).
//! Every other parameter is passed as it is. An `unsafe fn` (one that reads the caller's
//! raw pointers) makes an `unsafe extern "C" fn` with the same contract; so does an
//! `errcode_ret`.

use proc_macro::TokenStream;
use quote::quote;
use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type, parse_macro_input};

/// See the crate documentation.
#[proc_macro_attribute]
pub fn cl_entrypoint(attr: TokenStream, item: TokenStream) -> TokenStream {
    let name = parse_macro_input!(attr as Ident);
    let mut f = parse_macro_input!(item as ItemFn);
    // The parameters are the C API's, as many as the specification gives.
    f.attrs.push(syn::parse_quote!(#[allow(clippy::too_many_arguments)]));
    match expand(&name, &f) {
        Ok(wrapper) => quote!(#f #wrapper).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The `T` of `Wrapper<T>` when `ty`'s last path segment is `Wrapper`.
fn inner_of<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else { return None };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// Whether `ty`'s last path segment is `name`.
fn is_named(ty: &Type, name: &str) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == name))
}

fn expand(name: &Ident, f: &ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let inner = &f.sig.ident;
    let is_unsafe = f.sig.unsafety.is_some();
    let docs: Vec<_> = f.attrs.iter().filter(|a| a.path().is_ident("doc") || a.path().is_ident("allow")).collect();
    let documented_safety = f.attrs.iter().any(|a| a.path().is_ident("doc") && quote!(#a).to_string().contains("# Safety"));

    let mut params = Vec::new();
    let mut args = Vec::new();
    let mut any_typed = false;
    // Parameters that go after the function's own (a `Cmd`'s wait list and event).
    let mut tail = Vec::new();
    let mut cmd = false;
    for input in &f.sig.inputs {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new_spanned(input, "an entry point takes no `self`"));
        };
        let Pat::Ident(id) = &*pt.pat else {
            return Err(syn::Error::new_spanned(&pt.pat, "an entry point's parameters are plain names"));
        };
        let id = &id.ident;
        if is_named(&pt.ty, "Cmd") {
            // An enqueue's queue (first) and wait list and event (last), validated in the
            // order the function's first statement used to: queue, then wait list.
            params.push(quote!(#id: crate::api::cl::Handle));
            tail.push(quote!(num_events_in_wait_list: crate::api::cl::cl_uint));
            tail.push(quote!(event_wait_list: *const crate::api::cl::Handle));
            tail.push(quote!(event: *mut crate::api::cl::Handle));
            // `from_c` is unsafe: it runs inside the call's `unsafe` block below (the function
            // is an `unsafe fn`), whose SAFETY argument covers the wait list and event too.
            args.push(quote!(crate::api::queue::Cmd::from_c(#id, num_events_in_wait_list, event_wait_list, event)?));
            any_typed = true;
            cmd = true;
            continue;
        }
        match inner_of(&pt.ty, "Arc").and_then(|t| inner_of(t, "Obj")) {
            Some(kind) => {
                params.push(quote!(#id: crate::api::cl::Handle));
                args.push(quote!(crate::api::icd::get::<#kind>(#id)?));
                any_typed = true;
            }
            None => {
                let ty = &pt.ty;
                params.push(quote!(#id: #ty));
                args.push(quote!(#id));
            }
        }
    }

    params.extend(tail);
    if cmd && !is_unsafe {
        return Err(syn::Error::new_spanned(&f.sig, "a `Cmd` holds the caller's event pointer: make the function `unsafe fn`"));
    }
    let call = if is_unsafe {
        // SAFETY (of the generated block): the entry point is an `unsafe extern "C" fn`
        // whose contract is the function's own (its `# Safety`: the OpenCL
        // specification's for this entry point), which the C caller upholds; a `Cmd`'s
        // `from_c` reads the wait list (`num_events_in_wait_list` handles) and keeps the
        // event pointer under that same contract.
        quote!(unsafe { #inner(#(#args),*) })
    } else {
        quote!(#inner(#(#args),*))
    };

    let result = match &f.sig.output {
        ReturnType::Type(_, t) => inner_of(t, "ClResult"),
        ReturnType::Default => None,
    };
    let (ret, body, needs_unsafe) = match (result, &f.sig.output) {
        (Some(t), _) if is_named(t, "Info") => {
            params.push(quote!(param_value_size: usize));
            params.push(quote!(param_value: *mut std::ffi::c_void));
            params.push(quote!(param_value_size_ret: *mut usize));
            let body = quote! {
                crate::api::ret_code(|| {
                    let info = #call?;
                    // SAFETY: `param_value` is null or writable for `param_value_size` bytes and
                    // `param_value_size_ret` null or writable: every `clGet*Info`'s contract
                    // (stated in its docs).
                    unsafe { crate::api::write_info(&info.0, param_value_size, param_value, param_value_size_ret) }
                })
            };
            (quote!(crate::api::cl::cl_int), body, true)
        }
        (Some(Type::Tuple(t)), _) if t.elems.is_empty() => {
            (quote!(crate::api::cl::cl_int), quote!(crate::api::ret_code(|| #call)), is_unsafe)
        }
        (Some(obj), _) => {
            params.push(quote!(errcode_ret: *mut crate::api::cl::cl_int));
            let body = quote! {
                let (obj, code) = crate::api::obj_or_code(|| #call);
                // SAFETY: `errcode_ret` is null or writable for one `cl_int`: every
                // object-creating entry point's contract (stated in its docs).
                unsafe { crate::api::set_errcode(errcode_ret, code) };
                obj
            };
            (quote!(#obj), body, true)
        }
        (None, ReturnType::Type(_, t)) if !any_typed => (quote!(#t), quote!(crate::api::ret_plain(|| #call)), is_unsafe),
        (None, ReturnType::Default) if !any_typed => (quote!(()), quote!(crate::api::ret_plain(|| #call)), is_unsafe),
        (None, _) => return Err(syn::Error::new_spanned(&f.sig.output, "typed handles need a `ClResult` to return their error in")),
    };

    let what = format!(" The `extern \"C\"` entry point of `{inner}` (written by `#[cl_entrypoint]`).");
    let safety = match (needs_unsafe && !documented_safety, result) {
        (false, _) => quote!(),
        (true, Some(t)) if is_named(t, "Info") => quote! {
            #[doc = ""]
            #[doc = " # Safety"]
            #[doc = " `param_value` is null or writable for `param_value_size` bytes; `param_value_size_ret` null or writable."]
        },
        (true, _) => quote! {
            #[doc = ""]
            #[doc = " # Safety"]
            #[doc = " `errcode_ret` is null or writable for one `cl_int`."]
        },
    };
    let unsafety = if needs_unsafe { quote!(unsafe) } else { quote!() };
    Ok(quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #what]
        #safety
        pub #unsafety extern "C" fn #name(#(#params),*) -> #ret {
            #body
        }
    })
}
