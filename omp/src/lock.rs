//! Mutexes for `critical`, `atomic`, the `omp_*_lock` API and the runtime's own
//! [`Locked`] values: a futex word (0 free, 1 held, 2 held with sleepers, as in Drepper's
//! "Futexes are tricky"), spinning for the spin budget before sleeping. The `omp_*_lock`
//! API's simple locks also record their owner ([`owned`]).

use crate::sys::{futex_wait, futex_wake, spin_until};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
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
    let t0 = crate::sys::sleep_start();
    while w.swap(2, Ordering::Acquire) != 0 {
        futex_wait(w, 2);
    }
    crate::sys::sleep_end(t0);
}

/// A value behind a [`lock`] word, for the runtime's own short critical sections (a task's
/// successor list): std's `Mutex` checks the panic count on each lock and unlock (its
/// poisoning), which was a fifth of making a dependency edge (issue 34).
#[derive(Default)]
pub struct Locked<T> {
    w: AtomicU32,
    v: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `Guard`, which exists while its thread holds
// the word (one holder at a time, Acquire/Release on the word order the accesses), or
// through `&mut Locked`: as std's `Mutex`, shareable between threads when the value can be
// sent between them.
unsafe impl<T: Send> Sync for Locked<T> {}

/// The held lock of a [`Locked`]: its value; released when dropped.
pub struct Guard<'a, T> {
    l: &'a Locked<T>,
}

impl<T> Locked<T> {
    #[inline]
    pub fn lock(&self) -> Guard<'_, T> {
        lock(&self.w);
        Guard { l: self }
    }

    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        self.v.get_mut()
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard's thread holds the word (see `Locked`'s `Sync`).
        unsafe { &*self.l.v.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`; `&mut self` keeps this the only reference made through the
        // guard.
        unsafe { &mut *self.l.v.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        unlock(&self.l.w);
    }
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

/// A lock with an owner (the `omp_*_lock` API): the word holds the owner's id (see [`me`](owned::me),
/// whose low 2 bits are clear) or'ed with the state in the low 2 bits (0 free, 1 held, 2
/// held with sleepers), so that an unset by a thread that does not hold the lock can be
/// told from a correct one and refused. Whoever holds the lock alone writes the owner bits;
/// the others only turn state 1 into 2 (compare-and-swap). A held word is never 0 (its
/// state is not), whatever the id.
pub mod owned {
    use super::*;

    /// Why an unset was refused.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Misuse {
        NotLocked,
        NotOwner,
    }

    const STATE: u32 = 3;

    /// The calling thread's owner id, with the state bits clear (a lock is owned by a
    /// task; a task is tied to its thread, so the thread names it): the low 32 bits of its
    /// `pthread_self`, read from the thread pointer without a thread-local lookup or a call,
    /// and used as they are, so that the set and unset fast paths are one compare-and-swap
    /// each with an or'ed state. Two live threads with the same bits would only go
    /// undetected unsetting each other's locks: an owner always finds its own id.
    #[inline]
    pub fn me() -> u32 {
        // Thread descriptors are at least 8-byte aligned: the mask changes nothing there,
        // it only keeps the state bits ours on any other target.
        thread_pointer() as u32 & !STATE
    }

    /// The calling thread's `pthread_self`: on x86-64 the thread pointer's first word (the
    /// TCB points to itself there), one load instead of a call through the PLT.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn thread_pointer() -> usize {
        let t: usize;
        // SAFETY: %fs:0 is the TCB's self pointer on x86-64 Linux (glibc and musl), always
        // mapped for a running thread; the load has no other effect.
        unsafe { std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) t, options(nostack, readonly, preserves_flags)) };
        // SAFETY: the thread pointer is the address of the thread's descriptor, a struct of
        // pointers (glibc aligns it to 64 bytes, musl to at least 8): its low 3 bits are 0.
        // (Told to the compiler so that `me` needs no mask.)
        unsafe { std::hint::assert_unchecked(t & 7 == 0) };
        t
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn thread_pointer() -> usize {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() as usize }
    }

    #[inline]
    pub fn lock(w: &AtomicU32) {
        // Acquire: the critical section sees the previous holder's writes.
        if w.compare_exchange(0, me() | 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            lock_slow(w);
        }
    }

    /// (`extern "C"`: it cannot unwind, so an entry point calling it needs no landing pad
    /// and ends in a tail call; it takes no id, which would keep a copy of it in the fast
    /// path's registers.)
    #[cold]
    extern "C" fn lock_slow(w: &AtomicU32) {
        let me = me();
        // As super::lock_slow: poll every few pauses for the spin budget, then sleep.
        if spin_until(|| {
            for _ in 0..4 {
                std::hint::spin_loop();
            }
            w.load(Ordering::Relaxed) == 0 && w.compare_exchange(0, me | 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
        }) {
            return;
        }
        let t0 = crate::sys::sleep_start();
        loop {
            let v = w.load(Ordering::Relaxed);
            if v == 0 {
                // Taken as "held with sleepers": others may sleep still (Drepper's mutex 2).
                if w.compare_exchange(0, me | 2, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    break;
                }
                continue;
            }
            let sleeping = v & !STATE | 2;
            // Relaxed: the unlocker's swap sees the 2 (one modification order on the word).
            if v & STATE != 2 && w.compare_exchange(v, sleeping, Ordering::Relaxed, Ordering::Relaxed).is_err() {
                continue;
            }
            futex_wait(w, sleeping);
        }
        crate::sys::sleep_end(t0);
    }

    #[inline]
    pub fn try_lock(w: &AtomicU32) -> bool {
        w.compare_exchange(0, me() | 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Unlock if the calling thread holds the lock and nobody sleeps on it (the common case: one
    /// compare-and-swap); false otherwise, the lock left as it is ([`unlock`] then).
    #[inline]
    pub fn unlock_fast(w: &AtomicU32) -> bool {
        // Release: publishes the critical section to the next holder.
        w.compare_exchange(me() | 1, 0, Ordering::Release, Ordering::Relaxed).is_ok()
    }

    /// Unlock, if the calling thread holds the lock; else leave it as it is.
    #[inline]
    pub fn unlock(w: &AtomicU32) -> Result<(), Misuse> {
        // Relaxed: only the holder writes the owner bits, so if they are ours they stay.
        let v = w.load(Ordering::Relaxed);
        if v == 0 {
            return Err(Misuse::NotLocked);
        }
        if v & !STATE != me() {
            return Err(Misuse::NotOwner);
        }
        // Release: publishes the critical section to the next holder.
        if w.swap(0, Ordering::Release) & STATE == 2 {
            futex_wake(w, 1);
        }
        Ok(())
    }

    /// Whether the lock is held (by anyone).
    pub fn held(w: &AtomicU32) -> bool {
        w.load(Ordering::Relaxed) != 0
    }
}

/// The lock of `GOMP_critical_start` (unnamed critical) and of `GOMP_atomic_start`, each on
/// a cache line of its own (no false sharing with each other or with other globals).
pub static CRITICAL: crossbeam_utils::CachePadded<AtomicU32> = crossbeam_utils::CachePadded::new(AtomicU32::new(0));
pub static ATOMIC: crossbeam_utils::CachePadded<AtomicU32> = crossbeam_utils::CachePadded::new(AtomicU32::new(0));

#[cfg(test)]
mod tests {
    use super::owned::{self, Misuse};
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn only_the_holder_unlocks_an_owned_lock() {
        let w = AtomicU32::new(0);
        let me = owned::me();
        assert_eq!(owned::unlock(&w), Err(Misuse::NotLocked));
        owned::lock(&w);
        assert!(owned::held(&w) && !owned::try_lock(&w));
        let other = std::thread::scope(|s| s.spawn(|| (owned::me(), owned::unlock(&w))).join().unwrap());
        assert_ne!(other.0, me);
        assert_eq!(other.1, Err(Misuse::NotOwner));
        assert!(owned::held(&w));
        assert_eq!(owned::unlock(&w), Ok(()));
        assert!(!owned::held(&w) && owned::try_lock(&w));
        assert!(owned::unlock_fast(&w) && !owned::held(&w));
        assert!(!owned::unlock_fast(&w));
    }

    #[test]
    fn an_owned_lock_excludes_and_hands_over() {
        let w = AtomicU32::new(0);
        // A read and a write, not one atomic add: an increment lost means no exclusion.
        let n = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..10_000 {
                        owned::lock(&w);
                        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        // Both unlocks, as omp_unset_lock takes them: the fast one fails
                        // only when a waiter went to sleep (then the full one wakes it).
                        if i % 2 == 1 || !owned::unlock_fast(&w) {
                            assert_eq!(owned::unlock(&w), Ok(()));
                        }
                    }
                });
            }
        });
        assert_eq!(n.into_inner(), 40_000);
    }
}
