//! `prio`: a central queue ordered by task priority (highest first, FIFO among equals).

use super::{Policy, SchedCtx, Target};
use crate::sync::{Mutex, lock};
use crate::task::TaskRef;
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

struct Item(i32, u64, TaskRef);

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0 && self.1 == o.1
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        self.0.cmp(&o.0).then(o.1.cmp(&self.1))
    }
}

pub(crate) struct Prio {
    ctx: SchedCtx,
    heap: Mutex<BinaryHeap<Item>>,
    seq: AtomicU64,
    len: AtomicUsize,
}

impl Prio {
    pub fn new(ctx: SchedCtx) -> Prio {
        Prio { ctx, heap: Mutex::new(BinaryHeap::new()), seq: AtomicU64::new(0), len: AtomicUsize::new(0) }
    }
}

impl Policy for Prio {
    fn name(&self) -> &'static str {
        "prio"
    }
    fn push(&self, task: TaskRef, _from: Option<usize>) -> Target {
        let m = task.arch_mask;
        let s = self.seq.fetch_add(1, Ordering::Relaxed);
        lock(&self.heap).push(Item(task.priority, s, task));
        // Relaxed: `len` is a hint for idle workers; the heap's mutex orders the data.
        self.len.fetch_add(1, Ordering::Relaxed);
        Target::Any(m)
    }
    fn pop(&self, worker: usize, _wake: &dyn Fn(Target)) -> Option<TaskRef> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut h = lock(&self.heap);
        let t = if h.peek().is_some_and(|i| self.ctx.can_run(&i.2, worker)) {
            h.pop().map(|i| i.2)
        } else {
            // Highest-priority task this worker can run, keeping the others in place.
            let mut items = std::mem::take(&mut *h).into_vec();
            items.sort_by(|a, b| b.cmp(a));
            let pos = items.iter().position(|i| self.ctx.can_run(&i.2, worker));
            let t = pos.map(|p| items.remove(p).2);
            *h = BinaryHeap::from(items);
            t
        };
        if t.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        t
    }
    fn is_empty(&self) -> bool {
        lock(&self.heap).is_empty()
    }
}
