//! The `omp_*_lock` API. `omp_lock_t` is a 4-byte futex word (libgomp's is 4 bytes, LLVM
//! libomp's 8: both hold it). `omp_nest_lock_t` is 16 bytes in libgomp's ABI but 8 in
//! libomp's, so Weft writes only its first 8 bytes, in both: a pointer to the lock (lock
//! word, count, owner), allocated by `omp_init_nest_lock` and freed by
//! `omp_destroy_nest_lock`. The owner of a nestable lock is the current task (its context
//! for an implicit task). The owner and count are atomics: a thread that does not hold the
//! lock reads the owner to learn so.

use crate::lock::{self, owned, owned::Misuse};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};

/// What a program's `omp_nest_lock_t` holds (its first 8 bytes).
#[repr(C)]
pub struct NestLockRef(*mut NestLock);

pub struct NestLock {
    word: AtomicU32,
    /// Written by the holder only.
    count: AtomicI32,
    /// The holding task (see `me`), 0 when free.
    owner: AtomicUsize,
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
    match c.get(|c| c.task.id) {
        0 => c.addr() as *mut c_void,
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
pub unsafe extern "C" fn omp_destroy_lock(l: *mut u32) {
    // "A program that accesses a lock that is not in the unlocked state through either
    // routine [omp_destroy_lock, omp_destroy_nest_lock] is non-conforming": say so, and
    // leave the lock as it is (locked), so its holder's unset still finds a lock.
    // SAFETY: the program passes an initialized lock.
    if owned::held(unsafe { word(l) }) {
        eprintln!("weft-omp: omp_destroy_lock on a lock that is locked; ignored (it stays locked)");
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_lock(l: *mut u32) {
    // SAFETY: the program passes an initialized lock.
    owned::lock(unsafe { word(l) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_lock(l: *mut u32) {
    // SAFETY: the program passes an initialized lock.
    let w = unsafe { word(l) };
    if !owned::unlock_fast(w) {
        unset_slow(w);
    }
}

/// `omp_unset_lock` with sleepers to wake, or misused. "A program that accesses a lock
/// that is not in the locked state or that is not owned by the task that contains the call
/// through either routine is non-conforming": say so, and leave the lock as it is.
/// (`extern "C"`: it cannot unwind, so `omp_unset_lock` needs no landing pad and ends in a
/// tail call.)
#[cold]
extern "C" fn unset_slow(w: &AtomicU32) {
    match owned::unlock(w) {
        Ok(()) => {}
        Err(Misuse::NotLocked) => eprintln!("weft-omp: omp_unset_lock on a lock that is not locked; ignored"),
        Err(Misuse::NotOwner) => {
            eprintln!("weft-omp: omp_unset_lock on a lock that another thread holds; ignored (it stays locked)")
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_lock(l: *mut u32) -> c_int {
    // SAFETY: as above.
    owned::try_lock(unsafe { word(l) }) as c_int
}

/// The lock behind a program's `omp_nest_lock_t`, allocated by `omp_init_nest_lock`.
///
/// # Safety
/// `l` points to an `omp_nest_lock_t` (at least 8 bytes, 8-aligned) that `omp_init_nest_lock`
/// initialised and `omp_destroy_nest_lock` did not destroy; None (a message) otherwise.
unsafe fn nest<'a>(l: *mut NestLockRef, what: &str) -> Option<&'a NestLock> {
    // SAFETY: per the contract, the first word holds our pointer (or null).
    let p = unsafe { l.read() }.0;
    if p.is_null() {
        eprintln!("weft-omp: {what} on a nestable lock that is not initialised; ignored");
        return None;
    }
    // SAFETY: allocated by omp_init_nest_lock and live until omp_destroy_nest_lock.
    Some(unsafe { &*p })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_nest_lock(l: *mut NestLockRef) {
    let p = Box::into_raw(Box::new(NestLock { word: AtomicU32::new(0), count: AtomicI32::new(0), owner: AtomicUsize::new(0) }));
    // SAFETY: the program passes its lock, at least 8 bytes in either ABI.
    unsafe { l.write(NestLockRef(p)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_nest_lock_with_hint(l: *mut NestLockRef, _hint: c_int) {
    // SAFETY: as above.
    unsafe { omp_init_nest_lock(l) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_nest_lock(l: *mut NestLockRef) {
    // SAFETY: the program passes a lock it initialised; the pointer is taken out first, so a
    // second destroy finds null.
    unsafe {
        let p = l.read().0;
        // As omp_destroy_lock: a held lock stays as it is (its memory too: the holder's
        // unset goes on using it).
        if !p.is_null() && (*p).owner.load(Ordering::Relaxed) != 0 {
            eprintln!("weft-omp: omp_destroy_nest_lock on a lock that is held; ignored (it stays held)");
            return;
        }
        l.write(NestLockRef(std::ptr::null_mut()));
        if !p.is_null() {
            drop(Box::from_raw(p));
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_nest_lock(l: *mut NestLockRef) {
    // SAFETY: the program passes an initialized lock.
    let Some(n) = (unsafe { nest(l, "omp_set_nest_lock") }) else { return };
    let me = me() as usize;
    if n.owner.load(Ordering::Relaxed) == me {
        n.count.fetch_add(1, Ordering::Relaxed);
        return;
    }
    lock::lock(&n.word);
    n.owner.store(me, Ordering::Relaxed);
    n.count.store(1, Ordering::Relaxed);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_unset_nest_lock(l: *mut NestLockRef) {
    // SAFETY: as above.
    let Some(n) = (unsafe { nest(l, "omp_unset_nest_lock") }) else { return };
    if n.owner.load(Ordering::Relaxed) != me() as usize || n.count.load(Ordering::Relaxed) == 0 {
        eprintln!("weft-omp: omp_unset_nest_lock on a lock the caller does not hold; ignored");
        return;
    }
    if n.count.fetch_sub(1, Ordering::Relaxed) == 1 {
        n.owner.store(0, Ordering::Relaxed);
        lock::unlock(&n.word);
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_test_nest_lock(l: *mut NestLockRef) -> c_int {
    // SAFETY: as above.
    let Some(n) = (unsafe { nest(l, "omp_test_nest_lock") }) else { return 0 };
    let me = me() as usize;
    if n.owner.load(Ordering::Relaxed) == me {
        return n.count.fetch_add(1, Ordering::Relaxed) + 1;
    }
    if !lock::try_lock(&n.word) {
        return 0;
    }
    n.owner.store(me, Ordering::Relaxed);
    n.count.store(1, Ordering::Relaxed);
    1
}
