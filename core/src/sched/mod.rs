//! Scheduling policies behind one trait, one file per policy, chosen by `WEFT_SCHED`.
//!
//! **Owns**: where a ready task waits and which worker takes it.
//! **Does not own**: dependencies (a task is pushed only once ready), waking workers (the
//! runtime wakes the worker a push names, see `worker::sleep`), data transfers.
//!
//! Model-driven policies (`dm`, `dmda`, `dmdas`, `heteroprio`) ask `perf` for a task's
//! expected duration on a worker and the time its data needs to get there; the runtime tells
//! them when a task they placed ends (`Policy::done`), so that each worker's expected end
//! follows what it really ran.

mod dm;
mod dmda;
mod dmdas;
mod eager;
mod heteroprio;
mod lws;
pub(crate) mod perf;
pub(crate) mod prefetch;
mod prio;
mod queues;
mod random;
mod ws;

pub use heteroprio::HeteroprioOrders;
pub(crate) use queues::steal as steal_one;

use crate::sync::Arc;
use crate::task::{Arch, TaskRef};
use crate::topology::Topology;

/// Which policy to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Eager,
    Prio,
    Random,
    Ws,
    Lws,
    /// Earliest expected finish time (performance models).
    Dm,
    /// `dm` plus the expected time to move the task's data (the bus model).
    Dmda,
    /// `dmda` with per-worker queues sorted by priority.
    Dmdas,
    /// Priority buckets, one per codelet, each kind of worker taking first the buckets
    /// where its speed-up over the others is largest; or one per task priority, taken in
    /// the orders the program gives (`Config::heteroprio`).
    Heteroprio,
    /// `dmdas` where workers are of more than one kind, else `lws` (the default).
    Auto,
}

impl PolicyKind {
    /// Every concrete policy (`Auto` resolves to one of them).
    pub const ALL: [PolicyKind; 9] = [
        PolicyKind::Eager,
        PolicyKind::Prio,
        PolicyKind::Random,
        PolicyKind::Ws,
        PolicyKind::Lws,
        PolicyKind::Dm,
        PolicyKind::Dmda,
        PolicyKind::Dmdas,
        PolicyKind::Heteroprio,
    ];
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Eager => "eager",
            PolicyKind::Prio => "prio",
            PolicyKind::Random => "random",
            PolicyKind::Ws => "ws",
            PolicyKind::Lws => "lws",
            PolicyKind::Dm => "dm",
            PolicyKind::Dmda => "dmda",
            PolicyKind::Dmdas => "dmdas",
            PolicyKind::Heteroprio => "heteroprio",
            PolicyKind::Auto => "auto",
        }
    }
    /// Whether it places tasks by performance models.
    pub fn uses_models(self) -> bool {
        matches!(self, PolicyKind::Dm | PolicyKind::Dmda | PolicyKind::Dmdas | PolicyKind::Heteroprio)
    }
    /// The policy `Auto` stands for on a machine whose workers are of the kinds in `archs`
    /// (a mask of `Arch::bit`s): a model-driven one where they differ (measured with
    /// `bench/cholesky/policies.sh`), work stealing where they are all alike.
    pub fn resolve(self, archs: u8) -> PolicyKind {
        match self {
            PolicyKind::Auto if archs.count_ones() > 1 => PolicyKind::Dmdas,
            PolicyKind::Auto => PolicyKind::Lws,
            k => k,
        }
    }
}

impl std::str::FromStr for PolicyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "heft" {
            // StarPU's deprecated name of dmda.
            return Ok(PolicyKind::Dmda);
        }
        PolicyKind::ALL
            .into_iter()
            .chain([PolicyKind::Auto])
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown policy {s:?}; choose one of eager, prio, random, ws, lws, dm, dmda, dmdas, heteroprio, auto"))
    }
}

/// A worker as policies see it.
#[derive(Clone, Debug)]
pub struct WorkerDesc {
    pub id: usize,
    pub arch: Arch,
    pub node: usize,
    /// Processing unit index the worker is bound to (CPU workers).
    pub pu: Option<usize>,
    /// Relative speed (1.0 for a CPU core); `random` weighs workers by it.
    pub speed: f64,
    /// Its key in performance models: workers with the same key share measurements
    /// ("cpu", "null", "opencl:<device name>", "cuda:<device name>").
    pub perf_arch: String,
    /// An OpenCL device computing on the CPU workers' cores: it takes only tasks that have
    /// no CPU implementation (unless `Config::opencl_on_cpus`).
    pub shares_cores: bool,
}

/// What a policy knows about the machine.
pub struct SchedCtx {
    pub workers: Vec<WorkerDesc>,
    pub topology: Topology,
    /// Performance models and the bus model, for the model-driven policies.
    pub(crate) models: Option<Arc<ModelCtx>>,
}

/// What model-driven policies read: the bus model, the memory nodes (where data is valid),
/// the calibration mode and the weights of `dmda`.
pub(crate) struct ModelCtx {
    pub bus: crate::perfmodel::bus::BusModel,
    pub dir: Option<std::path::PathBuf>,
    pub calibrate: crate::perfmodel::Calibrate,
    pub alpha: f64,
    pub beta: f64,
    /// `dmda`'s tolerance, in task durations, within which the worker moving the fewest
    /// bytes wins (`Config::sched_locality`).
    pub locality: f64,
    pub epoch: std::time::Instant,
    /// Brings a placed task's inputs to its worker's node (`dm` family, device nodes).
    pub prefetch: Option<prefetch::Prefetcher>,
    /// `heteroprio`'s bucket orders given by the program (`None`: automatic).
    pub heteroprio: Option<HeteroprioOrders>,
}

impl ModelCtx {
    /// µs since the runtime started: the clock of expected start and end times.
    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1e6
    }
}

impl SchedCtx {
    pub(crate) fn can_run(&self, task: &TaskRef, worker: usize) -> bool {
        let w = &self.workers[worker];
        task.arch_mask & w.arch.bit() != 0 && !(w.shares_cores && task.arch_mask & Arch::Cpu.bit() != 0)
    }
}

/// Whom a push asks the runtime to wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Only this worker may take the task.
    Worker(usize),
    /// Any worker of an architecture in the mask.
    Any(u8),
}

pub(crate) trait Policy: Send + Sync {
    fn name(&self) -> &'static str;
    /// A task became ready; `from` is the worker pushing it (`None`: an application thread).
    fn push(&self, task: TaskRef, from: Option<usize>) -> Target;
    /// Worker `worker` looks for a task it can run. A policy that moves a task while
    /// looking (a steal it cannot run, handed back) calls `wake` for it as a push would:
    /// the worker that could run it may have looked meanwhile and be going to sleep.
    fn pop(&self, worker: usize, wake: &dyn Fn(Target)) -> Option<TaskRef>;
    /// Whether no task is queued (approximate while pushes are in flight).
    fn is_empty(&self) -> bool;
    /// Worker `worker` finished `task`, which this policy gave it.
    fn done(&self, _worker: usize, _task: &TaskRef) {}
}

pub(crate) fn create(kind: PolicyKind, ctx: SchedCtx) -> Box<dyn Policy> {
    match kind {
        PolicyKind::Eager => Box::new(eager::Eager::new(ctx)),
        PolicyKind::Prio => Box::new(prio::Prio::new(ctx)),
        PolicyKind::Random => Box::new(random::Random::new(ctx)),
        PolicyKind::Ws => Box::new(ws::Ws::new(ctx, false)),
        PolicyKind::Lws => Box::new(lws::new(ctx)),
        PolicyKind::Dm => Box::new(dm::new(ctx)),
        PolicyKind::Dmda => Box::new(dmda::new(ctx)),
        PolicyKind::Dmdas => Box::new(dmdas::new(ctx)),
        PolicyKind::Heteroprio => Box::new(heteroprio::Heteroprio::new(ctx)),
        PolicyKind::Auto => unreachable!("resolved before the policy is created"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::sync::atomic::AtomicUsize;
    use crate::sync::{Arc, Condvar, Mutex};
    use crate::task::{TaskInner, TaskKind, TaskRef, TaskState};
    use smallvec::SmallVec;
    use std::sync::OnceLock;

    /// An empty ready task runnable by the architectures in `arch_mask`.
    pub(crate) fn task(id: u64, arch_mask: u8) -> TaskRef {
        Arc::new(TaskInner {
            id,
            kind: TaskKind::Empty,
            accesses: SmallVec::new(),
            args: SmallVec::new(),
            payload: None,
            priority: 0,
            tag: None,
            dep_tags: SmallVec::new(),
            arch_mask,
            worker: None,
            follow: false,
            placed: AtomicUsize::new(usize::MAX),
            has_commute: false,
            flat: true,
            has_callback: false,
            callback: Mutex::new(None),
            pending: AtomicUsize::new(0),
            done: crate::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(TaskState {
                done: false,
                waiters: 0,
                result: None,
                successors: SmallVec::new(),
                launched_on: None,
                back_to_back: false,
            }),
            cv: Condvar::new(),
            poison: OnceLock::new(),
            perf_key: OnceLock::new(),
        })
    }
}
