//! The FFI layer: every exported `GOMP_*` and `omp_*` symbol, one file per area (the GOMP
//! layouts' decoders in `gomp/`), and the `__kmpc_*` ones of LLVM's ABI in `kmp/`. Entry
//! points decode the ABI's quirks and call the safe modules; [`guard`] keeps panics from
//! crossing `extern "C"` (GOMP has no error channel: print and abort, as libgomp does).
#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)]

pub mod alloc;
pub mod gomp;
pub mod icv;
pub mod kmp;
pub mod lock;
pub mod loop_;
pub mod parallel;
pub mod single;
pub mod sync;
pub mod target;
pub mod task;

/// Run `f`, aborting with a message naming `what` if it panics.
#[inline]
pub(crate) fn guard<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => internal_error(what),
    }
}

/// [`guard`]'s panic path, out of line: formatted in the entry point, the message made the
/// entry store `what` on its stack (the formatter takes it by reference) on every call, and
/// kept small entries such as GOMP_taskwait from inlining `guard`.
#[cold]
#[inline(never)]
fn internal_error(what: &str) -> ! {
    eprintln!("weft-omp: internal error in {what}; aborting");
    std::process::abort()
}
