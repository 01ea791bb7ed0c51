//! CPU workers and device drivers: one thread each, running tasks the policy hands them.
//!
//! **Owns**: the worker threads, their binding to cores, the idle loop (spin, then sleep),
//! and the "current worker" thread-local (the one thread-local of the runtime).
//! **Does not own**: what a task does (`runtime::execute`), which task runs (`sched`).

pub(crate) mod driver;
pub(crate) mod jobs;
pub(crate) mod sleep;

use crate::runtime::RuntimeInner;
use crate::sync::Arc;
use crate::sync::atomic::Ordering;
use crate::task::Arch;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A worker as users see it.
#[derive(Clone, Debug)]
pub struct WorkerInfo {
    pub id: usize,
    pub arch: Arch,
    pub node: usize,
    /// OS index of the processing unit it is bound to, if bound.
    pub pu: Option<usize>,
    pub name: String,
    /// Its device computes off this machine's cores (a GPU): threads waiting for its work
    /// spin a while before they sleep (`Config::wait_spin_us`).
    pub spins: bool,
    /// Its key in performance models: workers with the same key share measurements
    /// ("cpu", "null", "opencl:<device name>", "cuda:<device name>").
    pub perf_arch: String,
    /// An OpenCL device of type CPU beside CPU workers (without `Config::opencl_on_cpus`):
    /// it computes on their cores, so it runs only tasks that have no CPU implementation.
    pub shares_cores: bool,
}

thread_local! {
    /// (runtime id, worker id) of the worker this thread is.
    static CURRENT: Cell<Option<(u64, usize)>> = const { Cell::new(None) };
    /// OS index of the processing unit this worker thread is bound to, if it is.
    static BOUND: Cell<Option<usize>> = const { Cell::new(None) };
}

/// OS index of the processing unit the calling thread is bound to, if it is a bound worker.
pub(crate) fn bound_pu() -> Option<usize> {
    BOUND.with(|b| b.get())
}

/// The worker the calling thread is, for runtime `rt`.
pub(crate) fn current(rt: u64) -> Option<usize> {
    CURRENT.with(|c| c.get()).filter(|(r, _)| *r == rt).map(|(_, w)| w)
}

/// Whether the calling thread is a worker of any runtime.
pub fn in_worker() -> bool {
    CURRENT.with(|c| c.get()).is_some()
}

pub(crate) fn run(rt: Arc<RuntimeInner>, w: usize) {
    CURRENT.with(|c| c.set(Some((rt.id, w))));
    let info = &rt.workers[w];
    // `pu` is an OS index (not the topology's own order).
    if rt.config.bind
        && let Some(pu) = info.pu
        && rt.topology.bind_current_thread_os(pu)
    {
        BOUND.with(|b| b.set(Some(pu)));
    }
    let spin = Duration::from_micros(rt.config.spin_us);
    if rt.backends[w].is_some() {
        run_driver(&rt, w, spin);
        CURRENT.with(|c| c.set(None));
        return;
    }
    loop {
        if rt.run_job(w) {
            continue;
        }
        match rt.pop(w).map_or_else(|| idle(&rt, w, spin), Found::Task) {
            Found::Task(t) => rt.execute(w, t),
            Found::Job => {}
            Found::Shutdown => break,
        }
    }
    CURRENT.with(|c| c.set(None));
}

enum Found {
    Task(crate::task::TaskRef),
    /// A job was posted to this (CPU) worker.
    Job,
    Shutdown,
}

/// Nothing to do: spin a little (work often arrives within microseconds), then sleep until a
/// push or a posted job wakes the worker. Traced (`WEFT_TRACE`), the span becomes an "idle"
/// slice on the worker's track ("sleep" if it parked), which ends where the worker's next
/// slice starts (`trace::Tracer::idle`): no clock read beyond the spin's own.
fn idle(rt: &RuntimeInner, w: usize, spin: Duration) -> Found {
    let start = Instant::now();
    let mut slept = false;
    let found = wait_for_work(rt, w, spin, start, &mut slept);
    if let Some(tr) = rt.trace.as_deref() {
        tr.idle(w, start, slept);
    }
    found
}

/// [`idle`]'s loop, from `start`; sets `slept` if it parked.
fn wait_for_work(rt: &RuntimeInner, w: usize, spin: Duration, mut start: Instant, slept: &mut bool) -> Found {
    loop {
        let mut i = 0u32;
        while !rt.shutdown.load(Ordering::Relaxed) {
            if rt.jobs.has_work(w) {
                return Found::Job;
            }
            if let Some(t) = rt.pop(w) {
                return Found::Task(t);
            }
            if i < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            i += 1;
            if i.is_multiple_of(16) && start.elapsed() >= spin {
                break;
            }
        }
        rt.sleep.announce(w);
        if rt.jobs.has_work(w) {
            rt.sleep.clear(w);
            return Found::Job;
        }
        if let Some(t) = rt.pop(w) {
            rt.sleep.clear(w);
            return Found::Task(t);
        }
        if rt.shutdown.load(Ordering::SeqCst) {
            rt.sleep.clear(w);
            return Found::Shutdown;
        }
        *slept = true;
        std::thread::park();
        rt.sleep.clear(w);
        start = Instant::now();
    }
}

/// A driver with room for more work whose oldest task in flight runs long: sleep (the idle
/// protocol: announce, look once more, park) until `oldest` completes or a push wakes it.
/// Returns the task found on the last look, if any. Spurious wake-ups only cost a lap of
/// the driver's loop.
fn sleep_while_in_flight(rt: &RuntimeInner, w: usize, oldest: &weft_vendors::Completion) -> Option<crate::task::TaskRef> {
    rt.sleep.announce(w);
    // Pinned tasks first, as `pop` takes them; the driver's loop looked at both queues before.
    if let Some(t) = rt.pop(w) {
        rt.sleep.clear(w);
        return Some(t);
    }
    if !rt.shutdown.load(Ordering::SeqCst) && oldest.unpark_on_complete(std::thread::current()) {
        std::thread::park();
    }
    rt.sleep.clear(w);
    None
}

/// A GPU's driver with room for more work and a task in flight: spin, yielding the core,
/// until `oldest` or a deferred task's copy completes or a task arrives (returned), for at
/// most `Config::wait_spin_us`.
fn spin_while_in_flight(
    rt: &RuntimeInner,
    w: usize,
    oldest: &weft_vendors::Completion,
    deferred: &[(crate::task::TaskRef, weft_vendors::Completion)],
) -> Option<crate::task::TaskRef> {
    let limit = Duration::from_micros(rt.config.wait_spin_us);
    let start = Instant::now();
    while !oldest.is_complete() && !deferred.iter().any(|(_, c)| c.is_complete()) && !rt.shutdown.load(Ordering::Relaxed) {
        if let Some(t) = rt.pop(w) {
            return Some(t);
        }
        if start.elapsed() >= limit {
            break;
        }
        std::thread::yield_now();
    }
    None
}

/// A device driver's loop: up to `driver::DEPTH` tasks started at once (`driver::DEEP` pinned
/// ones), retired in order.
fn run_driver(rt: &RuntimeInner, w: usize, spin: Duration) {
    use driver::{DEEP, DEPTH, InFlight};
    use std::collections::VecDeque;
    let mut flight: VecDeque<InFlight> = VecDeque::with_capacity(DEPTH);
    // Tasks waiting for a copy home from another device, with that copy's completion.
    let mut deferred: Vec<(crate::task::TaskRef, weft_vendors::Completion)> = Vec::new();
    // Pinned tasks released by this driver's own launches (`RuntimeInner::launched`): ready,
    // and started after what the shared queues hold.
    let mut next: VecDeque<crate::task::TaskRef> = VecDeque::new();
    loop {
        while flight.front().is_some_and(|f| f.done.is_complete()) {
            let f = flight.pop_front().expect("checked");
            rt.finish_in_flight(w, f);
        }
        if flight.len() < DEPTH
            && let Some(i) = deferred.iter().position(|(_, c)| c.is_complete())
        {
            let (t, _) = deferred.swap_remove(i);
            rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
            continue;
        }
        if flight.len() < DEPTH
            && let Some(t) = rt.pop(w)
        {
            rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
            continue;
        }
        if flight.len() < DEEP
            && let Some(t) = rt.pop_pinned(w)
        {
            rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
            continue;
        }
        if flight.len() < DEEP
            && let Some(t) = next.pop_front()
        {
            rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
            continue;
        }
        if let Some(f) = flight.front() {
            // Launches batched since the last wait complete only once the batch is closed.
            rt.close_batch(w);
            // Full: wait for the oldest. Otherwise wait a little (a short kernel completes
            // meanwhile), then sleep until the oldest completes or a push wakes this driver,
            // so the next task starts while the device runs this one. Not a poll: waking
            // every few microseconds through a long kernel takes a core from the device's
            // own threads (PoCL's CPU devices compute on the same cores).
            if flight.len() >= DEPTH {
                let _ = f.done.wait();
            } else if rt.workers[w].spins {
                // A GPU computes off this machine's cores: spin instead, and start the
                // next kernel tens of µs sooner than a sleeping driver would.
                let found = spin_while_in_flight(rt, w, &f.done, &deferred)
                    .or_else(|| (!f.done.is_complete() && deferred.is_empty()).then(|| sleep_while_in_flight(rt, w, &f.done)).flatten());
                if let Some(t) = found {
                    rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
                }
            } else if !f.done.wait_timeout(Duration::from_micros(50))
                && deferred.is_empty()
                && let Some(t) = sleep_while_in_flight(rt, w, &f.done)
            {
                rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next);
            }
            continue;
        }
        if let Some((_, c)) = deferred.first() {
            // Nothing in flight: wait a little for a copy home, looking for new work between.
            c.wait_timeout(Duration::from_micros(50));
            continue;
        }
        rt.stats[w].busy.store(false, Ordering::Relaxed);
        match idle(rt, w, spin) {
            Found::Task(t) => rt.start_task_on_driver(w, t, &mut flight, &mut deferred, &mut next),
            Found::Job => unreachable!("jobs are posted to CPU workers only"),
            Found::Shutdown => break,
        }
    }
}
