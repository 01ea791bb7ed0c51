//! Performance models: how long a codelet's task takes on each kind of worker, and how long
//! its data takes to move between memory nodes.
//!
//! **Owns**: per-codelet history tables keyed by (architecture, footprint), power-law
//! regressions over them, calibration state, their files under `$WEFT_HOME/models`, and the
//! bus model (`bus`).
//! **Does not own**: choosing a worker (`sched`), timing a task (the runtime measures and
//! calls [`ModelHandle::record`]).
//!
//! See `docs/perfmodel.md` for the file format and the estimates used.

pub(crate) mod bus;
mod file;
mod history;
mod regression;
mod store;

pub use bus::cached_report as cached_bus_report;
pub use file::file_name as model_file_name;
pub use store::ModelKind;
pub use store::{Calibrate, EntryInfo, ModelHandle, Prediction};
pub(crate) use store::{models_in, save_all};

use crate::data::Shape;
use std::sync::Arc;

/// A codelet's size function: the task's size `n` from its data shapes and argument blob.
pub type SizeFn = Arc<dyn Fn(&[Shape], &[u8]) -> f64 + Send + Sync>;
/// A codelet's footprint function: what tells two tasks of different cost apart.
pub type FootprintFn = Arc<dyn Fn(&[Shape], &[u8]) -> u32 + Send + Sync>;

/// What a codelet says about its model (`CodeletBuilder::model`): its name (the file
/// `$WEFT_HOME/models/<name>.model`), its [`ModelKind`], and optionally its own size and
/// footprint functions.
#[derive(Clone)]
pub struct PerfModel {
    pub(crate) name: String,
    pub(crate) kind: ModelKind,
    pub(crate) size: Option<SizeFn>,
    pub(crate) footprint: Option<FootprintFn>,
}

impl std::fmt::Debug for PerfModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfModel").field("name", &self.name).field("kind", &self.kind).finish()
    }
}

impl PerfModel {
    /// A history-based model with power-law regression for sizes it has not seen: the
    /// footprint hashes the task's data shapes, the size is their total bytes.
    pub fn new(name: impl Into<String>) -> PerfModel {
        PerfModel { name: name.into(), kind: ModelKind::History, size: None, footprint: None }
    }
    /// How the model predicts from its samples (default [`ModelKind::History`]). The kind
    /// is not part of the file: codelets naming one model with different kinds share its
    /// samples and each predicts by its own kind.
    pub fn kind(mut self, kind: ModelKind) -> Self {
        self.kind = kind;
        self
    }
    pub fn model_kind(&self) -> ModelKind {
        self.kind
    }
    /// The task's size `n` for the regression (default: bytes of all its data). A value
    /// that is not a finite number `>= 0` is replaced by the default (such a sample would
    /// otherwise be dropped, and the entry never calibrate).
    pub fn size(mut self, f: impl Fn(&[Shape], &[u8]) -> f64 + Send + Sync + 'static) -> Self {
        self.size = Some(Arc::new(f));
        self
    }
    /// The task's footprint (default: a hash of each access's dimensions and element size).
    pub fn footprint(mut self, f: impl Fn(&[Shape], &[u8]) -> u32 + Send + Sync + 'static) -> Self {
        self.footprint = Some(Arc::new(f));
        self
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    /// (footprint, size) of a task with these shapes and arguments.
    pub fn key(&self, shapes: &[Shape], args: &[u8]) -> (u32, f64) {
        let fp = match &self.footprint {
            Some(f) => f(shapes, args),
            None => footprint(shapes),
        };
        let n = match &self.size {
            Some(f) => Some(f(shapes, args)).filter(|n| n.is_finite() && *n >= 0.0).unwrap_or_else(|| size(shapes)),
            None => size(shapes),
        };
        (fp, n)
    }
}

/// (footprint, size) of a task with these shapes when its codelet says nothing.
pub fn default_key(shapes: &[Shape]) -> (u32, f64) {
    (footprint(shapes), size(shapes))
}

/// The default size: bytes of the task's data (StarPU's default `size_base`).
fn size(shapes: &[Shape]) -> f64 {
    shapes.iter().map(|s| s.size() as f64).sum()
}

/// The default footprint: FNV-1a over each shape's dimensions and element size, folded to
/// 32 bits (StarPU hashes the same with CRC32).
pub fn footprint(shapes: &[Shape]) -> u32 {
    let mut h = crate::hash::Fnv::default();
    for s in shapes {
        let [x, y, z] = s.dims();
        for v in [x, y, z, s.elem()] {
            h.write_u64(v as u64);
        }
    }
    fold(h.finish())
}

/// A 64-bit hash folded to 32 bits.
pub fn fold(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}
