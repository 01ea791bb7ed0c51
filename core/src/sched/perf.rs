//! What model-driven policies ask about a task: its expected duration on a worker (the
//! codelet's performance model) and the time its inputs need to reach the worker's memory
//! node (the bus model), and the bytes a placement commits to moving (`dmda`'s locality).

use super::{ModelCtx, WorkerDesc};
use crate::task::{TaskInner, TaskKind};
use smallvec::SmallVec;

/// A task's expected duration on one worker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Expect {
    /// The task has no model (no codelet, or a codelet without one): placed by queued work.
    NoModel,
    /// Its model has too few samples there: a run there calibrates it.
    Uncalibrated,
    /// µs.
    Us(f64),
}

impl Expect {
    /// The duration counted in a worker's expected end: unknown ones count nothing.
    pub fn us(self) -> f64 {
        match self {
            Expect::Us(x) => x,
            _ => 0.0,
        }
    }
}

/// `task`'s expected duration on worker `w`.
pub(crate) fn expect(m: &ModelCtx, task: &TaskInner, w: &WorkerDesc) -> Expect {
    let TaskKind::Codelet(c) = &task.kind else { return Expect::NoModel };
    let Some(model) = c.model_handle(m.dir.as_deref(), m.calibrate) else { return Expect::NoModel };
    let (fp, size) = task.perf_key();
    match model.predict(&w.perf_arch, fp, size) {
        crate::perfmodel::Prediction::Calibrated(us) => Expect::Us(us),
        crate::perfmodel::Prediction::Uncalibrated => Expect::Uncalibrated,
    }
}

/// One data access of a task, as placement weighs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Datum {
    /// Bytes.
    pub bytes: usize,
    /// Memory nodes (below 64) holding a valid replica now.
    pub valid: u64,
    pub reads: bool,
    pub writes: bool,
}

impl Datum {
    fn valid_on(&self, node: usize) -> bool {
        node < 64 && self.valid & (1 << node) != 0
    }
}

/// Where `task`'s data are: per access that reads or writes, its bytes and the memory
/// nodes holding a valid replica.
pub(crate) fn data(task: &TaskInner) -> SmallVec<[Datum; 4]> {
    let mut v = SmallVec::new();
    for a in task.accesses.iter().filter(|a| a.mode.reads() || a.mode.writes()) {
        let h = &a.handle.0;
        let st = h.tree.lock();
        let e = &st.entries[h.idx];
        let valid = e.replicas.iter().take(64).enumerate().filter(|(_, r)| r.valid()).fold(0u64, |m, (n, _)| m | 1 << n);
        v.push(Datum { bytes: e.shape.size(), valid, reads: a.mode.reads(), writes: a.mode.writes() });
    }
    v
}

/// Expected time to bring the inputs among `data` to memory node `node`, µs: each input
/// not valid there comes from the valid replica that reaches it fastest.
pub(crate) fn transfer_us(m: &ModelCtx, data: &[Datum], node: usize) -> f64 {
    let mut total = 0.0;
    for d in data.iter().filter(|d| d.reads) {
        if d.valid == 0 || d.valid_on(node) {
            continue;
        }
        let best =
            (0..64).filter(|n| d.valid & (1u64 << n) != 0).map(|src| m.bus.transfer_us(src, node, d.bytes)).fold(f64::INFINITY, f64::min);
        if best.is_finite() {
            total += best;
        }
    }
    total
}

/// The bytes that running the task on memory node `node` commits the runtime to moving:
/// its inputs not valid there, and what it writes there while host memory (node 0, where
/// the application reads its results) still holds it: that comes back to host memory later,
/// for the next task there or for the application. Data already away from host memory owes
/// its trip back whatever this task does.
pub(crate) fn bytes_to_move(data: &[Datum], node: usize) -> u64 {
    data.iter()
        .map(|d| {
            let fetch = d.reads && d.valid != 0 && !d.valid_on(node);
            let owe = d.writes && node != 0 && d.valid_on(0);
            (u64::from(fetch) + u64::from(owe)) * d.bytes as u64
        })
        .sum()
}
