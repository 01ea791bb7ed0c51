//! Mutexes for `critical`, `atomic` and the `omp_*_lock` API: a futex word (0 free,
//! 1 held, 2 held with sleepers, as in Drepper's "Futexes are tricky"), spinning for the
//! spin budget before sleeping.

use crate::sys::{futex_wait, futex_wake, spin_until};
use std::sync::atomic::{AtomicU32, Ordering};

#[inline]
pub fn lock(w: &AtomicU32) {
    // Acquire: the critical section sees the previous holder's writes.
    if w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        lock_slow(w);
    }
}

#[cold]
fn lock_slow(w: &AtomicU32) {
    // Poll the word every few pauses, not after each one (5 pauses, about 120 ns here): a
    // holder that releases and retakes the lock at once (a contended `critical` in a loop)
    // then keeps it instead of losing it to a waiter that caught the short free window —
    // every change of holder moves the lock's cache line and the data it protects between
    // cores. This halved the EPCC CRITICAL and LOCK overheads (to below libgomp's, whose
    // waiter polls after each pause); the price is up to about 100 ns more before a waiter
    // notices a lock that stays free.
    if spin_until(|| {
        for _ in 0..4 {
            std::hint::spin_loop();
        }
        w.load(Ordering::Relaxed) == 0 && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }) {
        return;
    }
    let t0 = std::time::Instant::now();
    while w.swap(2, Ordering::Acquire) != 0 {
        futex_wait(w, 2);
    }
    crate::sys::after_sleep(t0.elapsed());
}

#[inline]
pub fn try_lock(w: &AtomicU32) -> bool {
    w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
}

#[inline]
pub fn unlock(w: &AtomicU32) {
    // Release: publishes the critical section to the next holder.
    if w.swap(0, Ordering::Release) == 2 {
        futex_wake(w, 1);
    }
}

/// `unlock`, returning whether the lock was held (unlocking a free lock is the caller's
/// error; it stays free).
#[inline]
pub fn unlock_checked(w: &AtomicU32) -> bool {
    // Release: as `unlock`.
    match w.swap(0, Ordering::Release) {
        0 => false,
        2 => {
            futex_wake(w, 1);
            true
        }
        _ => true,
    }
}

/// The lock of `GOMP_critical_start` (unnamed critical) and of `GOMP_atomic_start`, each on
/// a cache line of its own (no false sharing with each other or with other globals).
pub static CRITICAL: crossbeam_utils::CachePadded<AtomicU32> = crossbeam_utils::CachePadded::new(AtomicU32::new(0));
pub static ATOMIC: crossbeam_utils::CachePadded<AtomicU32> = crossbeam_utils::CachePadded::new(AtomicU32::new(0));
