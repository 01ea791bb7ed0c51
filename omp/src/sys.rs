//! Waiting: futexes and the spin-then-sleep policy (`OMP_WAIT_POLICY`, `GOMP_SPINCOUNT`).
//!
//! **Owns**: the raw futex calls and `sched_getcpu` (the only `unsafe` here) and how long a waiter spins before
//! it sleeps. A waiter spins while its condition is false, for at most the spin budget. While
//! more OpenMP threads are busy than there are processors, it yields its processor between
//! looks instead (spinning would only take the time of the thread it waits for, which may be
//! waiting for this processor), for the same budget.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// Sleep while `*a == v` (or until woken; spurious returns are possible).
pub fn futex_wait(a: &AtomicU32, v: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind a live reference; a null timeout.
    unsafe {
        libc::syscall(libc::SYS_futex, a.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, v, std::ptr::null::<libc::timespec>());
    }
}

/// Sleep while `*a == v`, for at most `d` (or until woken; spurious returns are possible).
pub fn futex_wait_timeout(a: &AtomicU32, v: u32, d: std::time::Duration) {
    let ts = libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long };
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind a live reference; a relative timeout.
    unsafe {
        libc::syscall(libc::SYS_futex, a.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, v, &ts as *const libc::timespec);
    }
}

/// Wake up to `n` threads sleeping on `a`.
pub fn futex_wake(a: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, a.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// The CPU the calling thread runs on (None: unknown).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments; -1 is an error.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
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

fn budget(adaptive: bool) -> u64 {
    let s = SPIN_NS.load(Ordering::Relaxed);
    if s == u64::MAX || !adaptive { s } else { ADAPT.with(|a| a.get()).min(s) }
}

/// Whether more OpenMP threads are busy than there are processors: a waiter's partner may
/// then be off its processor, waiting for the waiter's.
#[inline]
pub fn oversubscribed() -> bool {
    // Relaxed: a heuristic; a stale count only changes how long we spin.
    BUSY.load(Ordering::Relaxed) > NPROCS.load(Ordering::Relaxed)
}

/// Pauses a waiter spins, without reading the clock, before it looks at its budget: most
/// waits (a lock handed over, a barrier partner arriving) end within them (a pause is
/// 10-40 ns).
const BURST: u32 = 256;

/// Pauses a waiter spins before it starts yielding while the threads are oversubscribed
/// (LLVM's libomp yields at once; libgomp spins 100 pauses, then sleeps). EPCC at 3 threads
/// on 2 cores: spinning out the burst and 2 µs, then sleeping, a BARRIER took 17.6 µs and a
/// PARALLEL 47 (libgomp 6.3 and 12.7, libomp 2.3 and 2.9); yielding after 64 pauses, 3.5 and
/// 6.9; after 8, 1.3 and 2.7.
const BURST_OVERSUBSCRIBED: u32 = 8;

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
    if !adapts(max) {
        return;
    }
    ADAPT.with(|a| {
        let spun = a.get().min(max);
        if spun.saturating_add(slept.as_nanos() as u64) < max {
            a.set(max);
        }
    });
}

/// Whether a spin budget of `max` adapts ([`after_sleep`] uses how long a sleep took): not
/// under either wait policy, which never spins or never stops.
#[inline]
fn adapts(max: u64) -> bool {
    max != u64::MAX && max != 0
}

/// When a sleep starts, if [`after_sleep`] will need to know how long it took.
#[inline]
pub fn sleep_start() -> Option<Instant> {
    adapts(SPIN_NS.load(Ordering::Relaxed)).then(Instant::now)
}

/// [`after_sleep`] for a sleep that [`sleep_start`] timed.
#[inline]
pub fn sleep_end(t0: Option<Instant>) {
    if let Some(t0) = t0 {
        after_sleep(t0.elapsed());
    }
}

/// Spin until `done()` holds or the spin budget is spent; returns `done()`'s last value.
#[inline]
pub fn spin_until(done: impl FnMut() -> bool) -> bool {
    spin_until_with(done, true)
}

/// [`spin_until`] for a thread waiting while its team has tasks in flight: the whole budget,
/// not the adapted one. More tasks are likely to come within it (a task's successors, the
/// next burst of a dependency graph); a thread that went to sleep at once would need a
/// wake-up for each of them.
#[inline]
pub fn spin_until_tasks(done: impl FnMut() -> bool) -> bool {
    spin_until_with(done, false)
}

/// The longest a waiter yields while the threads are oversubscribed, whatever the wait
/// policy: the default spin budget. As libgomp, whose waits sleep after 1000 pauses then
/// under `OMP_WAIT_POLICY=active`: yielding without end, a thread hands its processor to
/// another program's busy thread for a time slice at every yield (libgomp's for-15.c at 4
/// threads on 2 cores beside a busy loop, active policy: 3.8 s, libgomp 0.32).
const YIELD_MAX_NS: u64 = 300_000;

/// The wait of [`spin_until_with`] while oversubscribed: yield the processor between looks
/// (to the thread waited for, if it shares this processor), for the spin budget, at most
/// [`YIELD_MAX_NS`].
#[cold]
fn yield_until(mut done: impl FnMut() -> bool) -> bool {
    let limit = SPIN_NS.load(Ordering::Relaxed).min(YIELD_MAX_NS);
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        std::thread::yield_now();
        if start.elapsed().as_nanos() as u64 >= limit {
            return done();
        }
    }
}

#[inline]
fn spin_until_with(mut done: impl FnMut() -> bool, adaptive: bool) -> bool {
    if SPIN_NS.load(Ordering::Relaxed) == 0 {
        // OMP_WAIT_POLICY=passive: sleep at once.
        return done();
    }
    for _ in 0..BURST_OVERSUBSCRIBED {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    if oversubscribed() {
        return yield_until(done);
    }
    for _ in BURST_OVERSUBSCRIBED..BURST {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    let limit = budget(adaptive);
    if limit == 0 {
        return false;
    }
    let start = Instant::now();
    let mut i: u32 = 0;
    loop {
        for _ in 0..32 {
            if done() {
                if adaptive {
                    adapt(true);
                }
                return true;
            }
            std::hint::spin_loop();
        }
        i = i.wrapping_add(1);
        if limit != u64::MAX && i.is_multiple_of(4) {
            let e = start.elapsed().as_nanos() as u64;
            if e >= limit {
                let d = done();
                if adaptive {
                    adapt(d);
                }
                return d;
            }
            if e > 20_000 && limit <= 2_000_000 && i.is_multiple_of(64) {
                std::thread::yield_now();
            }
        } else if limit == u64::MAX && i.is_multiple_of(1024) && oversubscribed() {
            // Oversubscribed since the wait began: the same bounded yielding as from the start.
            return yield_until(done);
        }
    }
}

/// Wait until `word != old`: spin, then sleep on the futex. `extra` is polled too (a
/// cancellation flag); returns early when it holds.
pub fn wait_change(word: &AtomicU32, old: u32, sleepers: &AtomicU32, extra: impl Fn() -> bool) {
    wait_change_with(word, old, sleepers, &extra, &extra, false, None)
}

/// [`wait_change`]; `tasks`: the team has tasks in flight (spin as [`spin_until_tasks`]).
/// `spin_extra` is polled while spinning (it may look only now and then), `extra` before
/// sleeping (it must be exact: its condition's setter wakes sleepers only). `tick`, if
/// given, is called before each sleep, and the sleeps then time out (1 ms, doubling to 1 s)
/// so that it runs again (a barrier's diagnostics: watch.rs).
pub fn wait_change_with(
    word: &AtomicU32,
    old: u32,
    sleepers: &AtomicU32,
    spin_extra: &dyn Fn() -> bool,
    extra: &dyn Fn() -> bool,
    tasks: bool,
    tick: Option<&dyn Fn()>,
) {
    // Acquire: what the waker wrote before changing the word is visible once we see it.
    let spun = if tasks {
        spin_until_tasks(|| word.load(Ordering::Acquire) != old || spin_extra())
    } else {
        spin_until(|| word.load(Ordering::Acquire) != old || spin_extra())
    };
    if spun {
        return;
    }
    // SeqCst on the sleeper count and the word: the waker changes the word then reads the
    // count; we raise the count then read the word. One of us sees the other.
    let t0 = sleep_start();
    sleepers.fetch_add(1, Ordering::SeqCst);
    let mut slice = std::time::Duration::from_millis(1);
    while word.load(Ordering::SeqCst) == old && !extra() {
        if let Some(tick) = tick {
            tick();
        }
        if tick.is_some() && !tasks {
            futex_wait_timeout(word, old, slice);
            slice = crate::watch::next_slice(slice);
        } else if tasks {
            // Queued tasks wake sleepers without changing `word` (Team::nudge), so such a
            // wake-up can be missed; a timeout bounds what missing it costs.
            futex_wait_timeout(word, old, std::time::Duration::from_millis(1));
        } else {
            futex_wait(word, old);
        }
    }
    sleepers.fetch_sub(1, Ordering::SeqCst);
    sleep_end(t0);
}
