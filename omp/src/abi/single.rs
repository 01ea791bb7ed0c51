//! single (with copyprivate), masked/master is inlined by GCC (omp_get_thread_num).

use super::guard;
use crate::team::ctx;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// True in the one thread that runs the single region (ws::single_start).
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_single_start() -> bool {
    crate::ws::single_start()
}

/// copyprivate: NULL in the thread that runs the region; the others get the pointer it
/// passes to GOMP_single_copy_end, after a barrier.
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_single_copy_start() -> *mut c_void {
    guard("GOMP_single_copy_start", || {
        if GOMP_single_start() {
            return std::ptr::null_mut();
        }
        let c = ctx();
        let t = c.team();
        t.barrier();
        // Acquire: published before the barrier by GOMP_single_copy_end.
        t.copyprivate.load(Ordering::Acquire)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_single_copy_end(data: *mut c_void) {
    guard("GOMP_single_copy_end", || {
        let c = ctx();
        let t = c.team();
        t.copyprivate.store(data, Ordering::Release);
        t.barrier();
    })
}
