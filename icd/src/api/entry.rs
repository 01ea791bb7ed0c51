//! What every entry point written by `#[cl_entrypoint]` (crate `weft-icd-macros`) calls:
//! `catch_unwind` around the function that does the work, and its result in the C
//! convention. A panic never crosses `extern "C"`: it is `CL_OUT_OF_RESOURCES` (shared/STYLE.md
//! §2), a null object or pointer, or nothing.

use super::ClResult;
use super::cl::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use weft_icd_macros::cl_entrypoint;

/// What an entry point returns when it has nothing to return: after an error or a panic.
pub trait NoValue {
    fn no_value() -> Self;
}

impl<T> NoValue for *mut T {
    fn no_value() -> Self {
        std::ptr::null_mut()
    }
}

impl NoValue for () {
    fn no_value() -> Self {}
}

/// A status call: its code (`CL_SUCCESS` for `Ok`); a panic is `CL_OUT_OF_RESOURCES`.
pub fn ret_code(f: impl FnOnce() -> ClResult<()>) -> cl_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => CL_SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => CL_OUT_OF_RESOURCES,
    }
}

/// An object-creating call: the object and `CL_SUCCESS`, or no object and the code (a
/// panic is `CL_OUT_OF_RESOURCES`). The entry point writes the code with [`set_errcode`].
pub fn obj_or_code<T: NoValue>(f: impl FnOnce() -> ClResult<T>) -> (T, cl_int) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(h)) => (h, CL_SUCCESS),
        Ok(Err(e)) => (T::no_value(), e),
        Err(_) => (T::no_value(), CL_OUT_OF_RESOURCES),
    }
}

/// Write `code` to `errcode_ret` unless it is null.
///
/// # Safety
/// `errcode_ret` is null or writable for one `cl_int`.
pub unsafe fn set_errcode(errcode_ret: *mut cl_int, code: cl_int) {
    if !errcode_ret.is_null() {
        // SAFETY: the caller's contract; unaligned, as C callers may pass any address.
        unsafe { errcode_ret.write_unaligned(code) };
    }
}

/// A call with no error code (`clSVMAlloc`, `clSVMFree`, `clGetExtensionFunctionAddress`):
/// its value; a panic is no value.
pub fn ret_plain<T: NoValue>(f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| T::no_value())
}

/// `clRetain*` of kind `$t` and, where releasing only drops the API reference (the object
/// lives on while Weft's own references hold it), `clRelease*`.
macro_rules! retain_release {
    ($t:ty, $retain:ident => $r:ident $(, $release:ident => $rel:ident)?) => {
        #[doc = concat!("`", stringify!($retain), "`: one more API reference.")]
        #[$crate::api::entry::cl_entrypoint($retain)]
        fn $r(h: $crate::api::cl::Handle) -> $crate::api::ClResult<()> {
            $crate::api::icd::retain::<$t>(h)
        }
        $(
            #[doc = concat!("`", stringify!($release), "`: one API reference less.")]
            #[$crate::api::entry::cl_entrypoint($release)]
            fn $rel(h: $crate::api::cl::Handle) -> $crate::api::ClResult<()> {
                $crate::api::icd::release::<$t>(h).map(drop)
            }
        )?
    };
}
pub(crate) use retain_release;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn panics_become_codes_and_no_value() {
        assert_eq!(ret_code(|| Ok(())), CL_SUCCESS);
        assert_eq!(ret_code(|| Err(CL_INVALID_VALUE)), CL_INVALID_VALUE);
        assert_eq!(ret_code(|| panic!("an entry point's bug")), CL_OUT_OF_RESOURCES);
        let (h, code) = obj_or_code::<Handle>(|| panic!("an entry point's bug"));
        assert!(h.is_null());
        assert_eq!(code, CL_OUT_OF_RESOURCES);
        let (h, code) = obj_or_code::<Handle>(|| Err(CL_INVALID_CONTEXT));
        assert!(h.is_null());
        assert_eq!(code, CL_INVALID_CONTEXT);
        assert!(ret_plain::<*mut c_void>(|| panic!("an entry point's bug")).is_null());
        let mut code = 0;
        // SAFETY: `code` is writable; null is skipped.
        unsafe {
            set_errcode(&mut code, CL_INVALID_DEVICE);
            set_errcode(std::ptr::null_mut(), CL_INVALID_DEVICE);
        }
        assert_eq!(code, CL_INVALID_DEVICE);
    }
}
