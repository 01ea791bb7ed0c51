//! single (with copyprivate), masked/master is inlined by GCC (omp_get_thread_num).

use super::guard;
use crate::team::ctx;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// True in the one thread that runs the single region: the first to bump the team's count
/// from this thread's count (libgomp's scheme: no worksharing slot needed).
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_single_start() -> bool {
    let c = ctx();
    let t = c.team();
    if t.n == 1 {
        return true;
    }
    let mine = c.single_count;
    c.single_count += 1;
    // Relaxed: only decides who runs the region; the barrier after it (or the program's own
    // synchronization for nowait) orders its effects.
    t.single.load(Ordering::Relaxed) == mine && t.single.compare_exchange(mine, mine + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok()
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
