//! The `omp_*_lock` API. `omp_lock_t` is libgomp's 4-byte futex word; `omp_nest_lock_t`
//! (16 bytes) is { lock word, count, owner }. The owner of a nestable lock is the implicit
//! task (its context; with explicit tasks it will be the task).

use crate::lock;
use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicU32;

#[repr(C)]
pub struct NestLock {
    word: u32,
    count: c_int,
    owner: *mut c_void,
}

/// # Safety
/// `l` points to an omp_lock_t.
unsafe fn word<'a>(l: *mut u32) -> &'a AtomicU32 {
    // SAFETY: per the contract (4-byte aligned, live while the lock is used).
    unsafe { AtomicU32::from_ptr(l) }
}

/// The owner of a nestable lock: the current task (OpenMP 3.0+: locks are owned by tasks, so
/// a nested region's thread 0 or an explicit task does not own its parent task's lock).
fn me() -> *mut c_void {
    let c = crate::team::cur();
    // SAFETY: the calling thread's context.
    match unsafe { (*c).task.id } {
        0 => c as *mut c_void,
        id => id as *mut c_void,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_lock(l: *mut u32) {
    // SAFETY: the program passes its lock.
    unsafe { l.write(0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_lock_with_hint(l: *mut u32, _hint: c_int) {
    // SAFETY: the program passes its lock.
    unsafe { l.write(0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_lock(_l: *mut u32) {}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_lock(l: *mut u32) {
    // SAFETY: the program passes an initialized lock.
    lock::lock(unsafe { word(l) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_lock(l: *mut u32) {
    // "A program that accesses a lock that is not in the locked state [...] through
    // omp_unset_lock is non-conforming": say so, and leave the lock unlocked.
    // SAFETY: as above.
    if !lock::unlock_checked(unsafe { word(l) }) {
        eprintln!("weft-omp: omp_unset_lock on a lock that is not locked; ignored");
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_lock(l: *mut u32) -> c_int {
    // SAFETY: as above.
    lock::try_lock(unsafe { word(l) }) as c_int
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_nest_lock(l: *mut NestLock) {
    // SAFETY: the program passes its lock.
    unsafe { l.write(NestLock { word: 0, count: 0, owner: std::ptr::null_mut() }) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_nest_lock_with_hint(l: *mut NestLock, _hint: c_int) {
    // SAFETY: as above.
    unsafe { omp_init_nest_lock(l) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_nest_lock(_l: *mut NestLock) {}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_nest_lock(l: *mut NestLock) {
    // SAFETY: the program passes an initialized lock; `count` and `owner` are only written
    // by the holder.
    unsafe {
        if (*l).owner == me() {
            (*l).count += 1;
            return;
        }
        lock::lock(word(&raw mut (*l).word));
        (*l).owner = me();
        (*l).count = 1;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_nest_lock(l: *mut NestLock) {
    // SAFETY: as above.
    unsafe {
        if (*l).owner != me() || (*l).count == 0 {
            eprintln!("weft-omp: omp_unset_nest_lock on a lock the caller does not hold; ignored");
            return;
        }
        (*l).count -= 1;
        if (*l).count == 0 {
            (*l).owner = std::ptr::null_mut();
            lock::unlock(word(&raw mut (*l).word));
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_nest_lock(l: *mut NestLock) -> c_int {
    // SAFETY: as above.
    unsafe {
        if (*l).owner == me() {
            (*l).count += 1;
            return (*l).count;
        }
        if !lock::try_lock(word(&raw mut (*l).word)) {
            return 0;
        }
        (*l).owner = me();
        (*l).count = 1;
        1
    }
}
