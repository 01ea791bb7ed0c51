//! Barriers, critical sections (traced: `omp critical`, with the wait for the lock) and
//! GOMP_atomic_start/end.

use super::guard;
use crate::lock::{self, ATOMIC, CRITICAL};
use crate::team::ctx;
use std::ffi::c_void;
use std::sync::atomic::AtomicU32;

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_barrier() {
    guard("GOMP_barrier", || {
        ctx().team().barrier();
    })
}

/// A barrier in a region with cancellation: true when the region was cancelled.
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_barrier_cancel() -> bool {
    guard("GOMP_barrier_cancel", || {
        let t = ctx().team();
        t.cbarrier()
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_critical_start() {
    let traced = crate::trace::start();
    lock::lock(&CRITICAL);
    crate::trace::enter(traced);
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_critical_end() {
    lock::unlock(&CRITICAL);
    crate::trace::exit("omp critical");
}

/// The lock of a named critical section lives in the pointer-sized, zero-initialized
/// variable the compiler emits for the name (its first 4 bytes are the futex word).
///
/// # Safety
/// `pptr` is that variable.
unsafe fn named<'a>(pptr: *mut *mut c_void) -> &'a AtomicU32 {
    // SAFETY: the variable is 8-byte aligned, zero-initialized and lives as long as the
    // program; only these functions access it.
    unsafe { AtomicU32::from_ptr(pptr as *mut u32) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_critical_name_start(pptr: *mut *mut c_void) {
    let traced = crate::trace::start();
    // SAFETY: the compiler passes the name's variable.
    lock::lock(unsafe { named(pptr) });
    crate::trace::enter(traced);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_critical_name_end(pptr: *mut *mut c_void) {
    // SAFETY: as above.
    lock::unlock(unsafe { named(pptr) });
    crate::trace::exit("omp critical");
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_atomic_start() {
    lock::lock(&ATOMIC)
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_atomic_end() {
    lock::unlock(&ATOMIC)
}

/// The text of an `error` directive's message (`len == usize::MAX`: NUL-terminated).
///
/// # Safety
/// `msg` is null or points to `len` bytes (or a C string).
unsafe fn message(msg: *const std::ffi::c_char, len: usize) -> Option<String> {
    if msg.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe {
        if len == usize::MAX { std::ffi::CStr::from_ptr(msg).to_bytes() } else { std::slice::from_raw_parts(msg as *const u8, len) }
    };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// `#pragma omp error severity(warning)` (OpenMP 5.1). The text matches libgomp's, which
/// programs' expected outputs quote.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_warning(msg: *const std::ffi::c_char, len: usize) {
    // SAFETY: the compiler passes the message and its length.
    match unsafe { message(msg, len) } {
        Some(m) => eprintln!("\nlibgomp: error directive encountered: {m}"),
        None => eprintln!("\nlibgomp: error directive encountered"),
    }
}

/// `#pragma omp error severity(fatal)` at run time: print and exit with failure.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_error(msg: *const std::ffi::c_char, len: usize) {
    // SAFETY: the compiler passes the message and its length.
    match unsafe { message(msg, len) } {
        Some(m) => eprintln!("\nlibgomp: fatal error: error directive encountered: {m}"),
        None => eprintln!("\nlibgomp: fatal error: error directive encountered"),
    }
    std::process::exit(1);
}
