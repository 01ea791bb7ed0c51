//! `heteroprio`: ready tasks wait in priority buckets; each kind of worker takes first from
//! the buckets it does best. Two ways to say which those are:
//! - **automatic** (the default; StarPU's heteroprio with automatic bucket orders): one
//!   bucket per codelet (sorted by task priority inside), and each kind takes first from
//!   the bucket where it is fastest relative to the other kinds present, as measured by the
//!   performance models;
//! - **given** ([`HeteroprioOrders`], `Config::heteroprio` or `WEFT_HETEROPRIO`; StarPU's
//!   `starpu_heteroprio_set_mapping`): a task's bucket is its priority, and a kind of
//!   worker takes from the buckets its architecture lists in the order listed, then from
//!   any other bucket, highest priority first (so that no task waits for a kind that will
//!   never look at it); an architecture with no list takes highest priorities first.
//!
//! Either way, a worker at least [`SLOW`] times slower than another kind on a bucket (by
//! the models) leaves it alone while the faster workers can drain it: `s` times slower, it
//! takes a task only from a bucket holding more than `s` tasks per faster worker (StarPU's
//! slow factor, measured instead of given), so the last tasks of a phase do not end up on
//! the slow one, and then the bucket's least urgent task; a kind whose model is calibrated
//! does the same (with `s` = 1) for kinds still to be calibrated.
//!
//! Kinds are the workers' model keys (`WorkerDesc::perf_arch`): two identical GPUs are one
//! kind. A bucket's kind without measurements yet counts as fastest there, and calibrated
//! kinds leave it as many tasks as it has workers: it gets calibration runs whenever its
//! workers look for work, but unlike the `dm` family nothing holds a task for it (a device
//! whose driver rarely gets a core may calibrate slowly).

use super::perf::{self, Expect};
use super::{ModelCtx, Policy, SchedCtx, Target};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, lock};
use crate::task::{Arch, TaskKind, TaskRef};
use smallvec::SmallVec;
use std::collections::{HashMap, VecDeque};

/// `heteroprio`'s bucket orders given by the program: per architecture, the task priorities
/// (buckets) its workers take first, in that order (StarPU's `starpu_heteroprio_set_mapping`
/// of priority index to bucket). Text form (`WEFT_HETEROPRIO`): `cpu=2,1,0;opencl=0,1,2`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeteroprioOrders {
    pub orders: Vec<(Arch, Vec<i32>)>,
}

impl HeteroprioOrders {
    /// The buckets `arch` lists, in order (empty: none given).
    fn of(&self, arch: Arch) -> &[i32] {
        self.orders.iter().find(|(a, _)| *a == arch).map_or(&[], |(_, o)| o.as_slice())
    }
}

impl std::str::FromStr for HeteroprioOrders {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut orders: Vec<(Arch, Vec<i32>)> = Vec::new();
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, list) =
                part.split_once('=').ok_or_else(|| format!("{part:?}: expected <architecture>=<priority>,<priority>,..."))?;
            let name = name.trim();
            let arch = Arch::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| format!("{name:?} is not an architecture; choose one of cpu, null, opencl, cuda"))?;
            if orders.iter().any(|(a, _)| *a == arch) {
                return Err(format!("{name:?} is given twice"));
            }
            let mut order = Vec::new();
            for p in list.split(',').map(str::trim) {
                let v: i32 = p.parse().map_err(|_| format!("{name}: {p:?} is not a priority (an integer)"))?;
                if order.contains(&v) {
                    return Err(format!("{name}: priority {v} is listed twice"));
                }
                order.push(v);
            }
            orders.push((arch, order));
        }
        if orders.is_empty() {
            return Err("no architecture given; expected e.g. cpu=2,1,0;opencl=0,1,2".into());
        }
        Ok(HeteroprioOrders { orders })
    }
}

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
    /// Its key in `Buckets::by_key` (with given orders: the priority of its tasks).
    key: i64,
}

#[derive(Default)]
struct Buckets {
    list: Vec<Bucket>,
    /// What tells buckets apart (codelet id, tasks without codelet sharing 0; or, with
    /// given orders, the task's priority) → bucket.
    by_key: HashMap<i64, usize>,
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
    /// Given orders, per kind: the priorities (buckets) it takes first, in order. `None`:
    /// automatic (buckets per codelet, ordered by the models).
    given: Option<Vec<Vec<i32>>>,
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
        let given = m.heteroprio.as_ref().map(|o| kinds.iter().map(|&w| o.of(ctx.workers[w].arch).to_vec()).collect());
        Heteroprio { ctx, m, kind, kinds, count, given, b: Mutex::new(Buckets::default()), len: AtomicUsize::new(0) }
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
        let key = match (&self.given, &task.kind) {
            (Some(_), _) => i64::from(task.priority),
            (None, TaskKind::Codelet(c)) => c.id as i64,
            (None, _) => 0,
        };
        // Predictions outside the lock: a model lookup takes the model's own lock.
        let preds: Vec<Option<Expect>> =
            self.kinds.iter().map(|&w| self.ctx.can_run(&task, w).then(|| perf::expect(&self.m, &task, &self.ctx.workers[w]))).collect();
        let mask = task.arch_mask;
        let mut b = lock(&self.b);
        let at = match b.by_key.get(&key) {
            Some(&i) => i,
            None => {
                let i = b.list.len();
                b.list.push(Bucket {
                    tasks: VecDeque::new(),
                    pred: vec![None; self.kinds.len()],
                    uncal: vec![false; self.kinds.len()],
                    key,
                });
                b.by_key.insert(key, i);
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
        // (rank, priority, bucket, index of the task this worker would take there)
        let mut found: SmallVec<[(f64, i32, usize, usize); 16]> = SmallVec::new();
        let mut declined: Option<usize> = None;
        for (i, bucket) in b.list.iter().enumerate() {
            let Some(j) = bucket.tasks.iter().position(|t| self.ctx.can_run(t, worker)) else { continue };
            let t = &bucket.tasks[j];
            // Kinds that should rather run it: much faster, or still to be calibrated (while
            // this one is not). Leave it to them while they can drain the bucket: while this
            // worker ran one task, a kind `s` times faster would run `s` per worker of its
            // (StarPU's slow factor, here measured), so it takes one only from a bucket
            // holding more than that many.
            let mine = bucket.pred[k].filter(|_| !bucket.uncal[k]);
            let drained: f64 = (0..self.kinds.len())
                .filter(|&o| o != k && self.ctx.can_run(t, self.kinds[o]))
                .filter_map(|o| {
                    if bucket.uncal[o] && !bucket.uncal[k] {
                        return Some(self.count[o] as f64);
                    }
                    let (p, m) = bucket.pred[o].zip(mine)?;
                    (p * SLOW <= m).then(|| self.count[o] as f64 * m / p.max(f64::MIN_POSITIVE))
                })
                .sum();
            if drained > 0.0 && bucket.tasks.len() as f64 <= drained {
                declined = Some(i);
                continue;
            }
            // A kind that a faster one could stand in for takes the least urgent task it
            // can run: the bucket's most urgent ones (a critical path's) stay for the faster.
            let (j, t) = if drained > 0.0 {
                let last = bucket.tasks.iter().rposition(|t| self.ctx.can_run(t, worker)).expect("invariant: task j is one");
                (last, &bucket.tasks[last])
            } else {
                (j, t)
            };
            // Given orders: the bucket's place in this kind's list (unlisted after every
            // listed one), then its priority.
            let r = match &self.given {
                Some(g) => g[k].iter().position(|&p| i64::from(p) == bucket.key).unwrap_or(g[k].len()) as f64,
                None => self.ratio(bucket, k, t),
            };
            found.push((r, t.priority, i, j));
        }
        // Automatic orders: buckets whose ratio is within SLOW of the best one's are as good
        // (the models' errors and a kernel's variation are of that order), and the most
        // urgent task among them goes first: a critical-path task is not left behind one a
        // few percent more profitable here. Given orders: the rank alone, then priority.
        let lowest = found.iter().map(|f| f.0).fold(f64::INFINITY, f64::min);
        let within = if self.given.is_some() { lowest } else { lowest * SLOW };
        let best =
            found.iter().filter(|f| f.0 <= within).min_by(|a, b| b.1.cmp(&a.1).then(a.0.total_cmp(&b.0)).then(a.2.cmp(&b.2))).copied();
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
