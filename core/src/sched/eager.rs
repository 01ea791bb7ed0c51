//! `eager`: one central FIFO (per architecture mask); any idle worker takes the oldest task.

use super::queues::MaskQueues;
use super::{Policy, SchedCtx, Target};
use crate::task::TaskRef;

pub(crate) struct Eager {
    ctx: SchedCtx,
    q: MaskQueues,
}

impl Eager {
    pub fn new(ctx: SchedCtx) -> Eager {
        Eager { ctx, q: MaskQueues::new() }
    }
}

impl Policy for Eager {
    fn name(&self) -> &'static str {
        "eager"
    }
    fn push(&self, task: TaskRef, _from: Option<usize>) -> Target {
        let m = task.arch_mask;
        self.q.push(task);
        Target::Any(m)
    }
    fn pop(&self, worker: usize, _wake: &dyn Fn(Target)) -> Option<TaskRef> {
        let w = &self.ctx.workers[worker];
        self.q.pop(w.arch, w.shares_cores)
    }
    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}
