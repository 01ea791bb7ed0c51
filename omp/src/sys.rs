//! Waiting: futexes and the spin-then-sleep policy (`OMP_WAIT_POLICY`, `GOMP_SPINCOUNT`).
//!
//! **Owns**: the raw futex calls (the only `unsafe` here) and how long a waiter spins before
//! it sleeps. A waiter spins while its condition is false, for at most the spin budget; the
//! budget shrinks to a few microseconds while more OpenMP threads are busy than there are
//! processors (spinning then only steals the time of the thread being waited for).

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// Sleep while `*a == v` (or until woken; spurious returns are possible).
pub fn futex_wait(a: &AtomicU32, v: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind a live reference; a null timeout.
    unsafe {
        libc::syscall(libc::SYS_futex, a.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, v, std::ptr::null::<libc::timespec>());
    }
}

/// Wake up to `n` threads sleeping on `a`.
pub fn futex_wake(a: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, a.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// Spin budget in nanoseconds (u64::MAX: never sleep; 0: sleep at once). Set once from the
/// environment (`OMP_WAIT_POLICY`, `GOMP_SPINCOUNT`), read on every wait.
pub static SPIN_NS: AtomicU64 = AtomicU64::new(300_000);
/// OpenMP threads currently members of a team (the encountering threads included).
pub static BUSY: AtomicI64 = AtomicI64::new(0);
/// Processors available, for the oversubscription check.
pub static NPROCS: AtomicI64 = AtomicI64::new(1);

thread_local! {
    /// This thread's current spin budget: adapts between 1 µs and SPIN_NS. A wait that had
    /// to give up spinning quarters it (the thread waited for is probably not running:
    /// spinning would only take its processor), a wait that ended while spinning doubles it.
    static ADAPT: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

fn budget() -> u64 {
    let s = SPIN_NS.load(Ordering::Relaxed);
    // Relaxed: a heuristic; a stale count only changes how long we spin.
    let s = if s != u64::MAX && BUSY.load(Ordering::Relaxed) > NPROCS.load(Ordering::Relaxed) { s.min(2_000) } else { s };
    if s == u64::MAX { s } else { ADAPT.with(|a| a.get()).min(s) }
}

fn adapt(success: bool) {
    let max = SPIN_NS.load(Ordering::Relaxed);
    if max == u64::MAX {
        return;
    }
    ADAPT.with(|a| {
        let b = a.get().min(max);
        a.set(if success { b.saturating_mul(2).min(max) } else { (b / 4).max(1_000) });
    });
}

/// After a wait that gave up spinning and then slept for `slept`: when the whole wait was
/// shorter than the full spin budget, spinning longer would have caught it, so the thread
/// gets its full budget back. Without this a quartered budget could never recover once
/// every wake-up takes longer than it (on a loaded machine the partner's futex wake-up
/// takes tens of µs): each handoff would then cost a sleep and a wake-up, a slow state
/// that feeds itself.
pub fn after_sleep(slept: std::time::Duration) {
    let max = SPIN_NS.load(Ordering::Relaxed);
    if max == u64::MAX || max == 0 {
        return;
    }
    ADAPT.with(|a| {
        let spun = a.get().min(max);
        if spun.saturating_add(slept.as_nanos() as u64) < max {
            a.set(max);
        }
    });
}

/// Spin until `done()` holds or the spin budget is spent; returns `done()`'s last value.
#[inline]
pub fn spin_until(mut done: impl FnMut() -> bool) -> bool {
    if SPIN_NS.load(Ordering::Relaxed) == 0 {
        // OMP_WAIT_POLICY=passive: sleep at once.
        return done();
    }
    // A short burst without reading the clock: most waits (a lock handed over, a barrier
    // partner arriving) end within it.
    for _ in 0..256 {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    let limit = budget();
    if limit == 0 {
        return false;
    }
    let start = Instant::now();
    let mut i: u32 = 0;
    loop {
        for _ in 0..32 {
            if done() {
                adapt(true);
                return true;
            }
            std::hint::spin_loop();
        }
        i = i.wrapping_add(1);
        if limit != u64::MAX && i.is_multiple_of(4) {
            let e = start.elapsed().as_nanos() as u64;
            if e >= limit {
                let d = done();
                adapt(d);
                return d;
            }
            if e > 20_000 && limit <= 2_000_000 && i.is_multiple_of(64) {
                std::thread::yield_now();
            }
        } else if limit == u64::MAX && i.is_multiple_of(1024) && BUSY.load(Ordering::Relaxed) > NPROCS.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
    }
}

/// Wait until `word != old`: spin, then sleep on the futex. `extra` is polled too (a
/// cancellation flag); returns early when it holds.
pub fn wait_change(word: &AtomicU32, old: u32, sleepers: &AtomicU32, extra: impl Fn() -> bool) {
    // Acquire: what the waker wrote before changing the word is visible once we see it.
    if spin_until(|| word.load(Ordering::Acquire) != old || extra()) {
        return;
    }
    // SeqCst on the sleeper count and the word: the waker changes the word then reads the
    // count; we raise the count then read the word. One of us sees the other.
    let t0 = Instant::now();
    sleepers.fetch_add(1, Ordering::SeqCst);
    while word.load(Ordering::SeqCst) == old && !extra() {
        futex_wait(word, old);
    }
    sleepers.fetch_sub(1, Ordering::SeqCst);
    after_sleep(t0.elapsed());
}
