//! `random`: each ready task goes to a worker drawn at random among those that can run it,
//! weighted by relative speed; workers never steal.

use super::queues::steal;
use super::{Policy, SchedCtx, Target};
use crate::task::TaskRef;
use crossbeam_deque::Injector;

pub(crate) struct Random {
    ctx: SchedCtx,
    queues: Vec<Injector<TaskRef>>,
}

/// splitmix64: a well-mixed hash of the task id serves as the random draw.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Random {
    pub fn new(ctx: SchedCtx) -> Random {
        let queues = ctx.workers.iter().map(|_| Injector::new()).collect();
        Random { ctx, queues }
    }
}

impl Policy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn push(&self, task: TaskRef, _from: Option<usize>) -> Target {
        let total: f64 = self.ctx.workers.iter().filter(|w| self.ctx.can_run(&task, w.id)).map(|w| w.speed).sum();
        let mut x = (mix(task.id) >> 11) as f64 / (1u64 << 53) as f64 * total;
        let mut chosen = None;
        for w in self.ctx.workers.iter().filter(|w| self.ctx.can_run(&task, w.id)) {
            chosen = Some(w.id);
            if x < w.speed {
                break;
            }
            x -= w.speed;
        }
        let w = chosen.expect("invariant: submission checked that some worker can run the task");
        self.queues[w].push(task);
        Target::Worker(w)
    }
    fn pop(&self, worker: usize, _wake: &dyn Fn(Target)) -> Option<TaskRef> {
        steal(&self.queues[worker])
    }
    fn is_empty(&self) -> bool {
        self.queues.iter().all(|q| q.is_empty())
    }
}
