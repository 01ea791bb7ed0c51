//! `ws`: work stealing. A task made ready by a worker goes to that worker's queue; tasks
//! from application threads go to a shared queue; an idle worker takes from its own queue,
//! then the shared one, then steals from the others in its victim order.
//! `lws` is the same policy with victims ordered by topological distance.

use super::queues::{MaskQueues, steal};
use super::{Policy, SchedCtx, Target};
use crate::task::TaskRef;
use crossbeam_deque::Injector;
use crossbeam_utils::CachePadded;

pub(crate) struct Ws {
    ctx: SchedCtx,
    local: Vec<CachePadded<Injector<TaskRef>>>,
    shared: MaskQueues,
    /// Per worker, the other workers in the order it steals from them.
    victims: Vec<Vec<usize>>,
    locality: bool,
}

impl Ws {
    pub fn new(ctx: SchedCtx, locality: bool) -> Ws {
        let n = ctx.workers.len();
        let victims = (0..n)
            .map(|w| {
                let mut v: Vec<usize> = (1..n).map(|k| (w + k) % n).collect();
                if locality {
                    let pu = |x: usize| ctx.workers[x].pu;
                    v.sort_by_key(|&x| match (pu(w), pu(x)) {
                        (Some(a), Some(b)) => ctx.topology.distance(a, b),
                        _ => 3,
                    });
                }
                v
            })
            .collect();
        Ws { local: (0..n).map(|_| CachePadded::new(Injector::new())).collect(), shared: MaskQueues::new(), victims, ctx, locality }
    }
}

impl Policy for Ws {
    fn name(&self) -> &'static str {
        if self.locality { "lws" } else { "ws" }
    }
    fn push(&self, task: TaskRef, from: Option<usize>) -> Target {
        let m = task.arch_mask;
        match from {
            Some(w) if self.ctx.can_run(&task, w) => self.local[w].push(task),
            _ => self.shared.push(task),
        }
        Target::Any(m)
    }
    fn pop(&self, worker: usize, wake: &dyn Fn(Target)) -> Option<TaskRef> {
        if let Some(t) = steal(&self.local[worker]) {
            return Some(t);
        }
        if let Some(t) = self.shared.pop(self.ctx.workers[worker].arch, self.ctx.workers[worker].shares_cores) {
            return Some(t);
        }
        for &v in &self.victims[worker] {
            if self.local[v].is_empty() {
                continue;
            }
            if let Some(t) = steal(&self.local[v]) {
                if self.ctx.can_run(&t, worker) {
                    return Some(t);
                }
                // Not ours to run: hand it back where its owner finds it, and wake a worker
                // that can run it. Its owner may have found its queue empty while we held
                // the task and gone to sleep (a lost wake-up: every worker parked, the task
                // queued; seen as a rare hang with CPU-only reduction tasks beside null
                // devices in `tests/graphs.rs`).
                let m = t.arch_mask;
                self.shared.push(t);
                wake(Target::Any(m));
            }
        }
        None
    }
    fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.local.iter().all(|q| q.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::WorkerDesc;
    use crate::sched::tests::task;
    use crate::task::Arch;
    use crate::topology::Topology;
    use std::cell::RefCell;

    fn desc(id: usize, arch: Arch) -> WorkerDesc {
        WorkerDesc { id, arch, node: 0, pu: None, speed: 1.0, perf_arch: arch.name().into(), shares_cores: false }
    }

    /// A thief that steals a task it cannot run hands it back and wakes a worker that can:
    /// the task's owner may have found its own queue empty meanwhile and gone to sleep.
    #[test]
    fn a_task_handed_back_wakes_a_worker_that_can_run_it() {
        let ws =
            Ws::new(SchedCtx { workers: vec![desc(0, Arch::Cpu), desc(1, Arch::Null)], topology: Topology::detect(), models: None }, false);
        // The CPU worker made a CPU-only task ready: its own queue, nobody woken.
        assert_eq!(ws.push(task(7, Arch::Cpu.bit()), Some(0)), Target::Any(Arch::Cpu.bit()));
        let woken = RefCell::new(Vec::new());
        let wake = |t: Target| woken.borrow_mut().push(t);
        // The null worker steals it, cannot run it, hands it back.
        assert!(ws.pop(1, &wake).is_none());
        assert_eq!(*woken.borrow(), vec![Target::Any(Arch::Cpu.bit())]);
        assert!(!ws.is_empty());
        // The CPU worker, woken, finds it in the shared queue.
        assert_eq!(ws.pop(0, &wake).map(|t| t.id), Some(7));
        assert!(ws.is_empty());
        assert_eq!(woken.borrow().len(), 1, "a pop that takes a task it can run wakes nobody");
    }
}
