//! Scheduling policies behind one trait, one file per policy, chosen by `WEFT_SCHED`.
//!
//! **Owns**: where a ready task waits and which worker takes it.
//! **Does not own**: dependencies (a task is pushed only once ready), waking workers (the
//! runtime wakes the worker a push names, see `worker::sleep`), data transfers.
//!
//! Room for model-driven policies (`dm`, `dmda`, `heft`): `SchedCtx` describes each worker
//! (architecture, memory node, relative speed) and `Policy::push` may ask the context for a
//! task's expected duration on a worker and for the cost of moving its data there.

mod eager;
mod lws;
mod prio;
mod queues;
mod random;
mod ws;

pub(crate) use queues::steal as steal_one;

use crate::task::{Arch, TaskRef};
use crate::topology::Topology;
use std::time::Duration;

/// Which policy to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Eager,
    Prio,
    Random,
    Ws,
    Lws,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 5] = [PolicyKind::Eager, PolicyKind::Prio, PolicyKind::Random, PolicyKind::Ws, PolicyKind::Lws];
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Eager => "eager",
            PolicyKind::Prio => "prio",
            PolicyKind::Random => "random",
            PolicyKind::Ws => "ws",
            PolicyKind::Lws => "lws",
        }
    }
}

impl std::str::FromStr for PolicyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown policy {s:?}; choose one of eager, prio, random, ws, lws"))
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
}

/// What a policy knows about the machine.
pub struct SchedCtx {
    pub workers: Vec<WorkerDesc>,
    pub topology: Topology,
}

// The model hooks are what dm/dmda/heft will call; the first policies do not need them yet.
#[allow(dead_code)]
impl SchedCtx {
    /// Expected duration of `task` on `worker`, from performance models (none yet).
    pub(crate) fn expected_duration(&self, _task: &TaskRef, _worker: usize) -> Option<Duration> {
        None
    }
    /// Expected time to move `task`'s data to `worker`'s memory node (no bus model yet).
    pub(crate) fn transfer_cost(&self, _task: &TaskRef, _worker: usize) -> Option<Duration> {
        None
    }
    pub(crate) fn can_run(&self, task: &TaskRef, worker: usize) -> bool {
        task.arch_mask & self.workers[worker].arch.bit() != 0
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
}

pub(crate) fn create(kind: PolicyKind, ctx: SchedCtx) -> Box<dyn Policy> {
    match kind {
        PolicyKind::Eager => Box::new(eager::Eager::new(ctx)),
        PolicyKind::Prio => Box::new(prio::Prio::new(ctx)),
        PolicyKind::Random => Box::new(random::Random::new(ctx)),
        PolicyKind::Ws => Box::new(ws::Ws::new(ctx, false)),
        PolicyKind::Lws => Box::new(lws::new(ctx)),
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
            has_commute: false,
            flat: true,
            has_callback: false,
            callback: Mutex::new(None),
            pending: AtomicUsize::new(0),
            done: crate::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(TaskState { done: false, waiters: 0, result: None, successors: SmallVec::new(), launched_on: None }),
            cv: Condvar::new(),
            poison: OnceLock::new(),
        })
    }
}
