//! `dm`: each ready task goes to the worker where it is expected to finish first: the
//! worker's queued work (the predictions of the tasks it holds), plus the task's predicted
//! duration there. Also the engine of `dmda` (which adds the expected transfer time,
//! weighted by `WEFT_SCHED_BETA`) and `dmdas` (queues sorted by priority).
//!
//! Each worker has its own queue and takes only from it: a placement is a decision, not a
//! hint (StarPU's dm family does the same). A task whose model has fewer than 10 samples
//! on some kind of worker that could run it goes to such a worker (the one with the least
//! queued work), so that every kind gets measured; a task without a model goes where the
//! least work is queued.
//!
//! Locality (`dmda`, `dmdas`): the bus model prices a transfer at its bandwidth, which on a
//! machine whose copies are memcpy (a PoCL device) is a small fraction of a task, so the
//! transfer term hardly ever changes a placement, and `dmda` moved more bytes than `eager`
//! on one CPU worker beside one PoCL device (bench/RESULTS.md, 2026-11-28). So every worker
//! whose score is within `WEFT_SCHED_LOCALITY` (default 3) times the task's predicted
//! duration on the best one counts as equally good (the models' own error is 5-30% of a
//! task, and a worker's queue drifts by more), and among them the task goes where it moves
//! the fewest bytes (`perf::bytes_to_move`: inputs missing there, plus what it writes away
//! from host memory, which must come back). The tolerance scales with the task's duration
//! on the best worker: giving it to another for its data delays it, by the models, by at
//! most that much. An idle best worker is no exception: it gets the next task that moves
//! fewer bytes there, or that no other worker finishes within the tolerance.
//!
//! A worker's expected end is `max(busy_until, now) + queued`: `queued` sums the
//! predictions of its queued tasks; `busy_until` is pushed forward by each task it takes
//! (a device runs its tasks in flight one after another) and reset to now when it has
//! none running.

use super::perf::{self, Expect};
use super::{ModelCtx, Policy, SchedCtx, Target};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, lock};
use crate::task::TaskRef;
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;

#[derive(Default)]
struct Queue {
    /// Tasks with the prediction counted for them; sorted by decreasing priority (FIFO
    /// among equals) when the policy sorts.
    tasks: VecDeque<(TaskRef, f64)>,
    /// Sum of the queued tasks' predictions, µs.
    queued: f64,
    /// When the tasks it has taken are expected to be done, µs on the model clock.
    busy_until: f64,
    /// Tasks taken and not done yet.
    running: usize,
}

impl Queue {
    fn expected_end(&self, now: f64) -> f64 {
        self.busy_until.max(now) + self.queued
    }
}

pub(crate) struct Dm {
    name: &'static str,
    ctx: SchedCtx,
    m: Arc<ModelCtx>,
    /// Weight of the expected transfer time (0 for `dm`).
    beta: f64,
    /// Queues sorted by priority (`dmdas`).
    sorted: bool,
    queues: Vec<CachePadded<Mutex<Queue>>>,
    len: AtomicUsize,
    /// Tolerance, in task durations, within which the worker moving the fewest bytes wins
    /// (0 for `dm`).
    locality: f64,
}

/// `dm` on `ctx`.
pub(crate) fn new(ctx: SchedCtx) -> Dm {
    Dm::new("dm", ctx, false, false)
}

impl Dm {
    pub(crate) fn new(name: &'static str, ctx: SchedCtx, transfers: bool, sorted: bool) -> Dm {
        let m = ctx.models.clone().expect("invariant: model-driven policies get the model context");
        let beta = if transfers { m.beta } else { 0.0 };
        let queues = ctx.workers.iter().map(|_| CachePadded::new(Mutex::new(Queue::default()))).collect();
        let locality = if transfers { m.locality } else { 0.0 };
        Dm { name, ctx, m, beta, sorted, queues, len: AtomicUsize::new(0), locality }
    }

    /// The worker `task` should go to, and the duration expected there (0: unknown).
    fn place(&self, task: &TaskRef) -> (usize, f64) {
        let now = self.m.now();
        let data = if self.beta > 0.0 || self.locality > 0.0 { perf::data(task) } else { Default::default() };
        // The calibrated choices, and the least loaded worker whose kind still needs measuring.
        let mut choices: smallvec::SmallVec<[Choice; 8]> = smallvec::SmallVec::new();
        let mut calibrate: Option<(f64, usize, usize)> = None;
        for w in self.ctx.workers.iter().filter(|w| self.ctx.can_run(task, w.id)) {
            let (end, ntasks) = {
                let q = lock(&self.queues[w.id]);
                (q.expected_end(now), q.tasks.len() + q.running)
            };
            let e = perf::expect(&self.m, task, w);
            if e == Expect::Uncalibrated {
                if calibrate.is_none_or(|(e0, n0, _)| (end, ntasks) < (e0, n0)) {
                    calibrate = Some((end, ntasks, w.id));
                }
                continue;
            }
            let transfer = if self.beta > 0.0 { perf::transfer_us(&self.m, &data, w.node) } else { 0.0 };
            let score = self.m.alpha * (end + e.us()) + self.beta * transfer;
            let bytes = if self.locality > 0.0 { perf::bytes_to_move(&data, w.node) } else { 0 };
            choices.push(Choice { score, ntasks, worker: w.id, predicted: e.us(), bytes });
        }
        if let Some((_, _, w)) = calibrate {
            return (w, 0.0);
        }
        let by_score = |a: &&Choice, b: &&Choice| a.score.total_cmp(&b.score).then(a.ntasks.cmp(&b.ntasks));
        let best = *choices.iter().min_by(by_score).expect("invariant: submission checked that some worker can run the task");
        // Within the tolerance the scores cannot tell the workers apart (the models err by
        // 5-30% a task, bench/RESULTS.md), but the bytes each would move are known: the
        // fewest win, even against a best worker with nothing queued or running (keeping
        // the task there whatever it moved cost a PoCL device beside a CPU worker 11-23%
        // more bytes at no gain in speed: the device then ran its share of the trailing
        // updates on whichever tiles came, each bringing two to four).
        let tolerance = self.m.alpha * self.locality * best.predicted;
        let pick = choices
            .iter()
            .filter(|c| c.score <= best.score + tolerance)
            .min_by(|a, b| a.bytes.cmp(&b.bytes).then(by_score(a, b)))
            .unwrap_or(&best);
        (pick.worker, pick.predicted)
    }
}

/// A worker `place` could choose for a task, its model calibrated there.
#[derive(Clone, Copy)]
struct Choice {
    /// `alpha · expected end + beta · transfer time`, µs.
    score: f64,
    /// Tasks queued on or running on the worker: the tie-break among equal scores.
    ntasks: usize,
    worker: usize,
    /// The task's predicted duration there, µs.
    predicted: f64,
    /// Bytes running it there commits to moving (`perf::bytes_to_move`).
    bytes: u64,
}

impl Policy for Dm {
    fn name(&self) -> &'static str {
        self.name
    }
    fn push(&self, task: TaskRef, _from: Option<usize>) -> Target {
        let (w, p) = self.place(&task);
        let mut q = lock(&self.queues[w]);
        q.queued += p;
        let at = if self.sorted {
            // After every task of the same or higher priority: FIFO among equals.
            q.tasks.partition_point(|(t, _)| t.priority >= task.priority)
        } else {
            q.tasks.len()
        };
        // Outside the queue's lock: a request for host memory looks at the inputs' trees.
        let prefetch = self.m.prefetch.as_ref().map(|pf| (pf, task.clone()));
        q.tasks.insert(at, (task, p));
        drop(q);
        if let Some((pf, task)) = prefetch {
            pf.request(self.ctx.workers[w].node, &task);
        }
        self.len.fetch_add(1, Ordering::Relaxed);
        Target::Worker(w)
    }
    fn pop(&self, worker: usize, _wake: &dyn Fn(Target)) -> Option<TaskRef> {
        let mut q = lock(&self.queues[worker]);
        let (t, p) = q.tasks.pop_front()?;
        self.len.fetch_sub(1, Ordering::Relaxed);
        q.queued = (q.queued - p).max(0.0);
        if q.tasks.is_empty() {
            // Rounding must not leave phantom work behind.
            q.queued = 0.0;
        }
        q.busy_until = q.busy_until.max(self.m.now()) + p;
        q.running += 1;
        Some(t)
    }
    fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }
    fn done(&self, worker: usize, _task: &TaskRef) {
        let mut q = lock(&self.queues[worker]);
        q.running = q.running.saturating_sub(1);
        if q.running == 0 {
            q.busy_until = self.m.now();
        }
    }
}
