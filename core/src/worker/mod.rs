//! CPU workers and device drivers: one thread each, running tasks the policy hands them.
//!
//! **Owns**: the worker threads, their binding to cores, the idle loop (spin, then sleep),
//! and the "current worker" thread-local (the one thread-local of the runtime).
//! **Does not own**: what a task does (`runtime::execute`), which task runs (`sched`).

#[cfg(any(feature = "opencl", feature = "cuda"))]
pub(crate) mod driver;
#[cfg(feature = "cuda")]
pub(crate) mod driver_cuda;
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
}

thread_local! {
    /// (runtime id, worker id) of the worker this thread is.
    static CURRENT: Cell<Option<(u64, usize)>> = const { Cell::new(None) };
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
    if rt.config.bind
        && let Some(pu) = info.pu
    {
        rt.topology.bind_current_thread(pu);
    }
    let spin = Duration::from_micros(rt.config.spin_us);
    loop {
        if rt.run_job(w) {
            continue;
        }
        if let Some(t) = rt.pop(w) {
            rt.execute(w, t);
            continue;
        }
        // Spin a little: work often arrives within microseconds.
        let start = Instant::now();
        let mut found = None;
        let mut i = 0u32;
        while found.is_none() && !rt.shutdown.load(Ordering::Relaxed) && !rt.jobs.has_work(w) {
            if i < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            i += 1;
            found = rt.pop(w);
            if i.is_multiple_of(16) && start.elapsed() >= spin {
                break;
            }
        }
        if let Some(t) = found {
            rt.execute(w, t);
            continue;
        }
        if rt.jobs.has_work(w) {
            continue;
        }
        rt.sleep.announce(w);
        if rt.jobs.has_work(w) {
            rt.sleep.clear(w);
            continue;
        }
        if let Some(t) = rt.pop(w) {
            rt.sleep.clear(w);
            rt.execute(w, t);
            continue;
        }
        if rt.shutdown.load(Ordering::SeqCst) {
            rt.sleep.clear(w);
            break;
        }
        std::thread::park();
        rt.sleep.clear(w);
    }
    CURRENT.with(|c| c.set(None));
}
