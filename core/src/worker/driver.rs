//! Device drivers: running codelet tasks on the device a driver worker drives, through its
//! [`KernelBackend`] (`crate::backend`), whatever the backend.
//!
//! **Owns**: turning a task into a launch on the driver's device (buffers acquired on the
//! device's memory node, the launch handed to the backend), the window of tasks in flight
//! ([`InFlight`], [`Start`]) and their retirement (waiting, unpinning, completing, measuring
//! their durations), and the early release of successors pinned to the driver.
//! **Does not own**: coherence (`data::coherence` makes the replicas valid and pins them),
//! building and launching kernels (the backend: `backend::opencl`, `backend::cuda`).
//!
//! A driver keeps up to [`DEPTH`] tasks in flight ([`DEEP`] for tasks pinned to it;
//! `worker::run_driver`): it prepares and
//! launches the next task (its transfers included) while the device still runs the previous
//! one, and retires tasks (waits, unpins, completes) in launch order. Its launches may join
//! the device's open batch (OpenCL: no vendor event, callback or flush each; see
//! `OpenClDevice::launch_batched`): the driver closes the batch
//! (`KernelBackend::close_batch`) before it waits for a task in flight (only then can a
//! batched task be pending), so no batch stays open unwaited.

use crate::backend::{DeviceLaunch, KernelBackend};
use crate::runtime::RuntimeInner;
use crate::task::{AccessMode, Codelet, TaskError, TaskRef};
use smallvec::SmallVec;
use weft_vendors::{Buffer, Completion};

/// How many tasks a device driver keeps started at once (`crate::DRIVER_WINDOW`).
pub(crate) const DEPTH: usize = crate::DRIVER_WINDOW;
/// How many tasks a driver keeps started at once when the next one is pinned to it (an
/// OpenCL in-order queue's commands): no other worker could take them, and a device fed
/// [`DEPTH`] tiny kernels at a time runs dry and sleeps between them (PoCL direct with 8
/// commands outstanding: 4.5 us per tiny kernel, with 1000: 2 us).
pub(crate) const DEEP: usize = crate::DRIVER_WINDOW_PINNED;

/// A task whose device work is started and not yet retired: it holds pins on its replicas.
pub(crate) struct InFlight {
    pub t: TaskRef,
    node: usize,
    /// How many of the task's accesses were acquired (all of them).
    n: usize,
    scratch: SmallVec<[Buffer; 1]>,
    pub done: Completion,
    /// When it was launched, if its duration is measured (its model wants a sample,
    /// `WEFT_STATS` or `WEFT_TRACE`), and its model if it wants one.
    launched: Option<std::time::Instant>,
    model: Option<std::sync::Arc<crate::perfmodel::ModelHandle>>,
}

/// What starting a task on a device gave.
pub(crate) enum Start {
    Flying(InFlight),
    /// Failed before reaching the device (data or launch error).
    Finished(Result<(), TaskError>),
    /// The node is full of pinned replicas: retire the tasks in flight, then start again.
    Busy,
    /// Some of its data is on its way (home from another device, or reserved by another
    /// thread): start it again once this completed (the driver runs other tasks meanwhile).
    Deferred(Completion),
}

fn codelet_name(t: &TaskRef) -> String {
    match &t.kind {
        crate::task::TaskKind::Codelet(c) => c.name.clone(),
        _ => String::from("task"),
    }
}

impl RuntimeInner {
    /// Start `t` (a codelet task) on device driver worker `w`: acquire its buffers on the
    /// device's node and launch its implementation there, without waiting for the device.
    /// `retry`: wait out a full node whose replicas are in use (else report `Busy`, so that a
    /// driver with tasks in flight retires them first: they hold the pins).
    /// `batch`: an OpenCL launch may join the device's open batch (see `close_batch`).
    pub(crate) fn start_on_device(&self, w: usize, t: &TaskRef, c: &Codelet, retry: bool, batch: bool) -> Start {
        let node = self.workers[w].node;
        // A measured launch needs its own completion: a batch's completes with its last.
        let model = self.sampling(w, t);
        let batch = batch && model.is_none();
        let mut bufs: SmallVec<[Buffer; 3]> = SmallVec::new();
        let mut scratch: SmallVec<[Buffer; 1]> = SmallVec::new();
        let acquired = if retry {
            self.acquire_on_device_retrying(node, t, &mut bufs, &mut scratch)
        } else {
            match self.acquire_on_device(node, t, &mut bufs, &mut scratch) {
                Err(crate::Error::MemoryBusy(_)) => {
                    self.release_on_device(node, t, bufs.len(), scratch);
                    return Start::Busy;
                }
                r => r,
            }
        };
        let launched = match acquired {
            Err(e) => Err(TaskError::Data(e.to_string())),
            Ok(Some(copy)) => {
                self.release_on_device(node, t, bufs.len(), scratch);
                return Start::Deferred(copy);
            }
            Ok(None) => {
                // Before the launch: a device that runs kernels in the thread that enqueues
                // or flushes them (PoCL's basic) has completed it when the call returns.
                let at = (model.is_some() || self.config.stats || self.trace.is_some()).then(std::time::Instant::now);
                self.launch_on(w, t, c, &bufs, batch).map(|done| (done, at))
            }
        };
        match launched {
            Ok((done, launched)) => Start::Flying(InFlight { t: t.clone(), node, n: bufs.len(), scratch, done, launched, model }),
            Err(e) => {
                self.release_on_device(node, t, bufs.len(), scratch);
                Start::Finished(Err(e))
            }
        }
    }

    fn launch_on(&self, w: usize, t: &TaskRef, c: &Codelet, bufs: &[Buffer], batch: bool) -> Result<Completion, TaskError> {
        self.backend(w).launch(&DeviceLaunch { worker: w, task: t, codelet: c, buffers: bufs, batch })
    }

    /// Driver worker `w`'s backend.
    fn backend(&self, w: usize) -> &dyn KernelBackend {
        self.backends[w].as_deref().expect("invariant: device driver workers have a backend")
    }

    /// Start `t` on driver worker `w`, adding it to the tasks in flight; a task that does not
    /// reach the device (failed preparation, poisoned, not a codelet) completes here.
    pub(crate) fn start_task_on_driver(
        &self,
        w: usize,
        t: TaskRef,
        flight: &mut std::collections::VecDeque<InFlight>,
        deferred: &mut Vec<(TaskRef, Completion)>,
        next: &mut std::collections::VecDeque<TaskRef>,
    ) {
        self.stats[w].busy.store(true, std::sync::atomic::Ordering::Relaxed);
        let c = match (&t.kind, t.poison.get()) {
            (crate::task::TaskKind::Codelet(c), None) => c.clone(),
            _ => return self.execute(w, t),
        };
        use std::sync::atomic::Ordering::Relaxed;
        // An in-order task expected to run long neither lets its successors follow it on the
        // device's queue (`launched`) nor joins the open batch: a batch's completions show
        // only when the whole batch has run (PoCL's `basic` runs it inside the flush), so a
        // follower waiting on this one would be placed a kernel late.
        let back_to_back = !(t.worker.is_some() || t.follow) || self.short_on(w, &t);
        loop {
            // Counted in flight from before the launch: a device that runs a kernel inside
            // the launching call (PoCL's `basic`, unbatched) is busy with it meanwhile, and
            // followers placed then must see it (`RuntimeInner::place_follower`).
            if flight.is_empty() {
                self.stats[w].head_ns.store(self.epoch.elapsed().as_nanos() as u64, Relaxed);
            }
            self.stats[w].inflight.store(flight.len() + 1, Relaxed);
            let started = self.start_on_device(w, &t, &c, flight.is_empty(), back_to_back);
            if !matches!(started, Start::Flying(_)) {
                self.stats[w].inflight.store(flight.len(), Relaxed);
            }
            match started {
                Start::Flying(f) => {
                    flight.push_back(f);
                    return self.launched(w, &t, back_to_back, next);
                }
                Start::Finished(r) => return self.finish_on_driver(w, &t, r),
                Start::Deferred(copy) => {
                    self.stats[w].deferred.fetch_add(1, Relaxed);
                    return deferred.push((t, copy));
                }
                // The tasks in flight pin the replicas that would make room: retire them.
                Start::Busy => {
                    self.close_batch(w);
                    while let Some(f) = flight.pop_front() {
                        self.finish_in_flight(w, f);
                    }
                }
            }
        }
    }

    /// `t` was launched on driver `w`'s device, whose queue runs launches in order: its
    /// successors pinned to `w`, and its in-order followers (`TaskBuilder::set_follow`,
    /// placed on `w` here), need not wait for its completion, only to be launched after
    /// it. Release them now (and let later ones skip the dependency, `add_successor`). They
    /// are no longer cancelled if `t` fails: like the commands after a failed one in an
    /// OpenCL in-order queue, they run. Not behind an in-order task expected to run
    /// [`crate::BACK_TO_BACK_US`] or more: those successors wait for its completion (and a
    /// follower is then placed where it is expected to finish first): `back_to_back` false.
    ///
    /// `next`: the driver's own list of released tasks, which it starts before looking at its
    /// queues again (no push to and steal from the shared queue per task).
    fn launched(&self, w: usize, t: &TaskRef, back_to_back: bool, next: &mut std::collections::VecDeque<TaskRef>) {
        let early: SmallVec<[TaskRef; 2]> = {
            let mut st = crate::sync::lock(&t.state);
            st.launched_on = Some(w);
            st.back_to_back = back_to_back;
            if !back_to_back {
                return;
            }
            // `place_on` is idempotent for one worker: asking twice gives the same answer.
            let releasable = |s: &TaskRef| s.flat && (s.worker == Some(w) || s.place_on(w));
            // Mostly all or none (an in-order queue's next command, or nothing yet): no
            // partition, which moves every successor twice.
            if st.successors.iter().all(releasable) {
                std::mem::take(&mut st.successors)
            } else if !st.successors.iter().any(releasable) {
                SmallVec::new()
            } else {
                let (early, keep): (SmallVec<[TaskRef; 2]>, SmallVec<[TaskRef; 2]>) =
                    std::mem::take(&mut st.successors).into_iter().partition(releasable);
                st.successors = keep;
                early
            }
        };
        for s in early {
            if s.pending.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
                // COMMUTE accesses go through the arbiter first.
                if s.has_commute { self.make_ready(s, Some(w), false) } else { next.push_back(s) }
            }
        }
    }

    /// Whether `t` is expected to run under `Config::back_to_back_us` ([`crate::BACK_TO_BACK_US`])
    /// on driver `w` (or has no calibrated prediction there, unless that is 0): its
    /// in-order successors may follow it there without waiting for its completion.
    fn short_on(&self, w: usize, t: &TaskRef) -> bool {
        let limit = self.config.back_to_back_us;
        if limit <= 0.0 {
            return false;
        }
        let crate::task::TaskKind::Codelet(c) = &t.kind else { return true };
        let Some(m) = c.model_handle(self.model_dir.as_deref(), self.config.calibrate) else { return true };
        let (fp, size) = t.perf_key();
        match m.predict(&self.workers[w].perf_arch, fp, size) {
            crate::perfmodel::Prediction::Calibrated(p) => p < limit,
            crate::perfmodel::Prediction::Uncalibrated => true,
        }
    }

    /// Close driver `w`'s open batch of launches (`KernelBackend::close_batch`): before
    /// waiting for any task in flight, which may be one of them.
    pub(crate) fn close_batch(&self, w: usize) {
        self.backend(w).close_batch();
    }

    /// Retire a task in flight and complete it.
    pub(crate) fn finish_in_flight(&self, w: usize, f: InFlight) {
        let t = f.t.clone();
        let (launched, model, done) = (f.launched, f.model.clone(), f.done.clone());
        let r = self.retire(f);
        self.stats[w].inflight.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if r.is_ok() {
            // Relaxed: a statistic, read at exit.
            self.stats[w].launches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // Every retired task moves `last_done`, measured or not: the device ran the next
        // one after it, and a measured task launched behind an unmeasured one must not be
        // charged its time.
        if let Some(at) = done.completed_at() {
            use std::sync::atomic::Ordering::Relaxed;
            let ns = |i: std::time::Instant| i.saturating_duration_since(self.epoch).as_nanos() as u64;
            let end = ns(at);
            let last_done = self.stats[w].last_done_ns.fetch_max(end, Relaxed);
            // The next task in flight has had the device since this one completed.
            self.stats[w].head_ns.store(end, Relaxed);
            if let Some(launched) = launched.filter(|_| r.is_ok()) {
                let start = ns(launched).max(last_done).min(end);
                self.stats[w].busy_ns.fetch_add(end - start, Relaxed);
                if let Some(m) = model {
                    self.measured(w, &t, &m, (end - start) as f64 / 1e3);
                }
            }
            // The device's time line: from when it could start the kernel (launched, and the
            // one before done) to its completion; kernels of one device do not overlap.
            if let (Some(tr), Some(launched)) = (self.trace.as_deref(), launched) {
                let start = self.epoch + std::time::Duration::from_nanos(ns(launched).max(last_done).min(end));
                let modelled = matches!(&t.kind, crate::task::TaskKind::Codelet(c) if c.model.is_some());
                let us = at.saturating_duration_since(start).as_secs_f64() * 1e6;
                self.trace_task(tr, w, &t, crate::trace::Stamps::Instants(start, at), (modelled && r.is_ok()).then_some(us));
            }
        }
        self.finish_on_driver(w, &t, r);
    }

    fn finish_on_driver(&self, w: usize, t: &TaskRef, r: Result<(), TaskError>) {
        self.stats[w].tasks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if t.worker.is_none() && t.placed_on().is_none() {
            self.policy.done(w, t);
        }
        self.complete(t, r, Some(w));
    }

    /// Wait for a started task's device work, then unpin its buffers.
    pub(crate) fn retire(&self, f: InFlight) -> Result<(), TaskError> {
        let r = f.done.wait().map_err(|e| TaskError::Failed { task: codelet_name(&f.t), msg: e.to_string() });
        self.release_on_device(f.node, &f.t, f.n, f.scratch);
        r
    }

    /// Run `t` on device worker `w` and wait for it (the non-pipelined path).
    pub(crate) fn run_on_device(&self, w: usize, t: &TaskRef, c: &Codelet) -> Result<(), TaskError> {
        loop {
            match self.start_on_device(w, t, c, true, false) {
                Start::Flying(f) => {
                    let r = self.retire(f);
                    if r.is_ok() {
                        // Relaxed: a statistic, read at exit.
                        self.stats[w].launches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    return r;
                }
                Start::Finished(r) => return r,
                Start::Deferred(copy) => {
                    let _ = copy.wait();
                }
                Start::Busy => unreachable!("a retrying start does not report Busy"),
            }
        }
    }

    /// Acquire `t`'s buffers on device node `node`; a full node whose replicas are in use
    /// makes it let go of everything and try again later (giving up after a while). On
    /// error, what was acquired is released by `release_on_device` (it counts `bufs`).
    pub(crate) fn acquire_on_device_retrying(
        &self,
        node: usize,
        t: &TaskRef,
        bufs: &mut SmallVec<[Buffer; 3]>,
        scratch: &mut SmallVec<[Buffer; 1]>,
    ) -> crate::Result<Option<Completion>> {
        let mut state = (std::mem::take(bufs), std::mem::take(scratch));
        let r = crate::runtime::retry_while_busy(
            &mut state,
            |(bufs, scratch)| self.acquire_on_device(node, t, bufs, scratch),
            |(bufs, scratch)| {
                self.release_on_device(node, t, bufs.len(), std::mem::take(scratch));
                bufs.clear();
            },
        );
        (*bufs, *scratch) = state;
        r
    }

    /// Acquire `t`'s buffers on device node `node`, in access order; `Some(copy)` when one of
    /// them waits for a copy in flight (from another device, or reserved by another thread;
    /// see `data::coherence`). Copies it needs itself run here, without the tree lock.
    fn acquire_on_device(
        &self,
        node: usize,
        t: &TaskRef,
        bufs: &mut SmallVec<[Buffer; 3]>,
        scratch: &mut SmallVec<[Buffer; 1]>,
    ) -> crate::Result<Option<Completion>> {
        for a in &t.accesses {
            let h = &a.handle.0;
            let b = match a.mode {
                AccessMode::Scratch => {
                    let shape = h.tree.lock().entries[h.idx].shape;
                    let b = self.nodes[node].alloc_raw(shape.span(shape.packed()))?;
                    scratch.push(b);
                    b
                }
                AccessMode::Redux => unreachable!("submission keeps REDUX tasks off device-driver workers"),
                mode => {
                    let got = crate::data::coherence::acquire_unlocked(
                        &h.tree,
                        h.idx,
                        node,
                        mode,
                        true,
                        || true,
                        |st| Ok(st.entries[h.idx].replicas[node].buf.expect("invariant: allocated by step")),
                    )?;
                    match got {
                        Ok(b) => b,
                        Err(c) => return Ok(Some(c)),
                    }
                }
            };
            bufs.push(b);
        }
        Ok(None)
    }

    pub(crate) fn release_on_device(&self, node: usize, t: &TaskRef, n: usize, scratch: SmallVec<[Buffer; 1]>) {
        for a in t.accesses.iter().take(n) {
            if a.mode != AccessMode::Scratch {
                a.handle.0.tree.lock().release(a.handle.0.idx, node);
            }
        }
        for b in scratch {
            self.nodes[node].release(b);
        }
    }
}
