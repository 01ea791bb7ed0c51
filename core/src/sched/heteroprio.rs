//! `heteroprio`: ready tasks wait in priority buckets, one per codelet (sorted by task
//! priority inside); each kind of worker takes first from the bucket where it is fastest
//! relative to the other kinds present, as measured by the performance models (StarPU's
//! heteroprio with automatic bucket orders). A worker at least [`SLOW`] times slower than
//! another kind on a bucket leaves it alone while the faster workers can drain it (no more
//! tasks than faster workers), so the last tasks of a phase do not end up on the slow one;
//! a kind whose model is calibrated does the same for kinds still to be calibrated.
//!
//! Kinds are the workers' model keys (`WorkerDesc::perf_arch`): two identical GPUs are one
//! kind. A bucket's kind without measurements yet counts as fastest there, so each kind
//! gets its calibration runs.

use super::perf::{self, Expect};
use super::{ModelCtx, Policy, SchedCtx, Target};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, lock};
use crate::task::{TaskKind, TaskRef};
use std::collections::{HashMap, VecDeque};

/// How much slower than another kind a worker must be on a bucket to leave its last tasks
/// to the faster kind.
const SLOW: f64 = 1.5;

struct Bucket {
    /// Sorted by decreasing priority, FIFO among equals.
    tasks: VecDeque<TaskRef>,
    /// Per kind: the latest prediction for this bucket's tasks there (µs), `None` unknown.
    pred: Vec<Option<f64>>,
    /// Per kind: the model needs more samples there (as of the latest task pushed).
    uncal: Vec<bool>,
}

#[derive(Default)]
struct Buckets {
    list: Vec<Bucket>,
    /// Codelet id → bucket (tasks without codelet share bucket of id 0).
    by_codelet: HashMap<u64, usize>,
}

pub(crate) struct Heteroprio {
    ctx: SchedCtx,
    m: Arc<ModelCtx>,
    /// Kind of each worker (index into `kinds`).
    kind: Vec<usize>,
    /// One representative worker per kind.
    kinds: Vec<usize>,
    /// Workers per kind.
    count: Vec<usize>,
    b: Mutex<Buckets>,
    len: AtomicUsize,
}

impl Heteroprio {
    pub(crate) fn new(ctx: SchedCtx) -> Heteroprio {
        let m = ctx.models.clone().expect("invariant: model-driven policies get the model context");
        let mut kinds: Vec<usize> = Vec::new();
        let mut kind = Vec::new();
        for w in &ctx.workers {
            match kinds.iter().position(|&r| ctx.workers[r].perf_arch == w.perf_arch) {
                Some(k) => kind.push(k),
                None => {
                    kind.push(kinds.len());
                    kinds.push(w.id);
                }
            }
        }
        let count = (0..kinds.len()).map(|k| kind.iter().filter(|&&x| x == k).count()).collect();
        Heteroprio { ctx, m, kind, kinds, count, b: Mutex::new(Buckets::default()), len: AtomicUsize::new(0) }
    }

    /// How a kind fares on a bucket: its prediction over the best other kind's that can run
    /// the task (1: as fast or no model; to be calibrated there: 0, take it first).
    fn ratio(&self, bucket: &Bucket, k: usize, task: &TaskRef) -> f64 {
        if bucket.uncal[k] {
            return 0.0;
        }
        let Some(mine) = bucket.pred[k] else { return 1.0 };
        let best = (0..self.kinds.len())
            .filter(|&o| o != k && self.ctx.can_run(task, self.kinds[o]))
            .filter_map(|o| bucket.pred[o])
            .fold(f64::INFINITY, f64::min);
        if best.is_finite() && best > 0.0 { mine / best } else { 1.0 }
    }
}

impl Policy for Heteroprio {
    fn name(&self) -> &'static str {
        "heteroprio"
    }
    fn push(&self, task: TaskRef, _from: Option<usize>) -> Target {
        let id = match &task.kind {
            TaskKind::Codelet(c) => c.id,
            _ => 0,
        };
        // Predictions outside the lock: a model lookup takes the model's own lock.
        let preds: Vec<Option<Expect>> =
            self.kinds.iter().map(|&w| self.ctx.can_run(&task, w).then(|| perf::expect(&self.m, &task, &self.ctx.workers[w]))).collect();
        let mask = task.arch_mask;
        let mut b = lock(&self.b);
        let at = match b.by_codelet.get(&id) {
            Some(&i) => i,
            None => {
                let i = b.list.len();
                b.list.push(Bucket { tasks: VecDeque::new(), pred: vec![None; self.kinds.len()], uncal: vec![false; self.kinds.len()] });
                b.by_codelet.insert(id, i);
                i
            }
        };
        let bucket = &mut b.list[at];
        for (k, p) in preds.into_iter().enumerate() {
            bucket.uncal[k] = p == Some(Expect::Uncalibrated);
            if let Some(Expect::Us(x)) = p {
                bucket.pred[k] = Some(x);
            }
        }
        let pos = bucket.tasks.partition_point(|t| t.priority >= task.priority);
        bucket.tasks.insert(pos, task);
        self.len.fetch_add(1, Ordering::Relaxed);
        Target::Any(mask)
    }
    fn pop(&self, worker: usize, wake: &dyn Fn(Target)) -> Option<TaskRef> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let k = self.kind[worker];
        let mut b = lock(&self.b);
        // (ratio, -priority, bucket, index of the first task this worker can run)
        let mut best: Option<(f64, i64, usize, usize)> = None;
        let mut declined: Option<usize> = None;
        for (i, bucket) in b.list.iter().enumerate() {
            let Some(j) = bucket.tasks.iter().position(|t| self.ctx.can_run(t, worker)) else { continue };
            let t = &bucket.tasks[j];
            let r = self.ratio(bucket, k, t);
            // Kinds that should rather run it: much faster, or still to be calibrated (while
            // this one is not). Leave it to them while they can drain the bucket.
            let mine = bucket.pred[k].filter(|_| !bucket.uncal[k]);
            let faster: usize = (0..self.kinds.len())
                .filter(|&o| o != k && self.ctx.can_run(t, self.kinds[o]))
                .filter(|&o| (bucket.uncal[o] && !bucket.uncal[k]) || bucket.pred[o].zip(mine).is_some_and(|(p, m)| p * SLOW <= m))
                .map(|o| self.count[o])
                .sum();
            if faster > 0 && bucket.tasks.len() <= faster {
                declined = Some(i);
                continue;
            }
            let key = (r, -i64::from(t.priority), i, j);
            if best.is_none_or(|b0| (key.0, key.1) < (b0.0, b0.1)) {
                best = Some(key);
            }
        }
        let Some((_, _, i, j)) = best else {
            if let Some(i) = declined {
                // The faster workers may all be asleep: wake them for what this one left.
                let t = &b.list[i].tasks[0];
                let targets: Vec<usize> =
                    self.ctx.workers.iter().filter(|w| self.kind[w.id] != k && self.ctx.can_run(t, w.id)).map(|w| w.id).collect();
                drop(b);
                for w in targets {
                    wake(Target::Worker(w));
                }
            }
            return None;
        };
        let t = b.list[i].tasks.remove(j).expect("invariant: found above");
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(t)
    }
    fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }
}
