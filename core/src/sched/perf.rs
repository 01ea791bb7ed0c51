//! What model-driven policies ask about a task: its expected duration on a worker (the
//! codelet's performance model) and the time its inputs need to reach the worker's memory
//! node (the bus model).

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

/// Where `task`'s inputs are: per read access, its bytes and a mask of the memory nodes
/// (below 64) holding a valid replica.
pub(crate) fn inputs(task: &TaskInner) -> SmallVec<[(usize, u64); 4]> {
    let mut v = SmallVec::new();
    for a in task.accesses.iter().filter(|a| a.mode.reads()) {
        let h = &a.handle.0;
        let st = h.tree.lock();
        let e = &st.entries[h.idx];
        let mask = e.replicas.iter().take(64).enumerate().filter(|(_, r)| r.valid()).fold(0u64, |m, (n, _)| m | 1 << n);
        v.push((e.shape.size(), mask));
    }
    v
}

/// Expected time to bring `inputs` to memory node `node`, µs: each input not valid there
/// comes from the valid replica that reaches it fastest.
pub(crate) fn transfer_us(m: &ModelCtx, inputs: &[(usize, u64)], node: usize) -> f64 {
    let mut total = 0.0;
    for &(bytes, mask) in inputs {
        if mask == 0 || (node < 64 && mask & (1 << node) != 0) {
            continue;
        }
        let best = (0..64).filter(|n| mask & (1u64 << n) != 0).map(|src| m.bus.transfer_us(src, node, bytes)).fold(f64::INFINITY, f64::min);
        if best.is_finite() {
            total += best;
        }
    }
    total
}
