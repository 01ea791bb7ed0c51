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
    fn pop(&self, worker: usize) -> Option<TaskRef> {
        if let Some(t) = steal(&self.local[worker]) {
            return Some(t);
        }
        if let Some(t) = self.shared.pop(self.ctx.workers[worker].arch) {
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
                // Not ours to run: hand it back where its owner finds it.
                self.shared.push(t);
            }
        }
        None
    }
    fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.local.iter().all(|q| q.is_empty())
    }
}
