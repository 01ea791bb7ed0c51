//! The process's models: one [`ModelHandle`] per (directory, model name), loaded from its
//! file on first use and saved, merged with what other processes saved, on demand.
//!
//! **Owns**: the process-global registry ([`models_in`], [`save_all`]), the calibration
//! modes ([`Calibrate`]), predictions ([`ModelHandle::predict`]), and the load/merge/save
//! cycle of a model file.
//! **Does not own**: the format and the lock (`file`), the statistics (`history`,
//! `regression`), deciding when to save (the runtime calls [`save_all`] at shutdown and at
//! exit), timing tasks.
//!
//! Invariants of a handle's state: `total` is what the file held at the last load or save
//! merged with `fresh`; `fresh` holds exactly the samples this process recorded since then,
//! and is what a save adds to the file (re-read under the lock), so no sample is counted
//! twice however many processes save. The registry is global because models outlive
//! runtimes (the OpenMP and OpenCL front ends start and stop runtimes in one process) and
//! are saved at exit.

use super::file::{self, ReadError};
#[cfg(test)]
use super::history::NL_REFIT;
use super::history::{ArchHistory, CALIBRATION_MIN, ModelData};
use super::regression::fit_nl;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};
use std::time::{Duration, Instant};
use weft_vendors::fsutil::{self, PrivateDir};

/// How long [`ModelHandle::save`] waits for another process's save of the same file.
const SAVE_PATIENCE: Duration = Duration::from_secs(10);
/// How long [`save_all`] waits, in all, for locks (it runs at exit, where a lock may be held
/// by a thread that will never run again).
const EXIT_PATIENCE: Duration = Duration::from_secs(2);

/// `WEFT_CALIBRATE`: what the runtime does with its models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Calibrate {
    /// `0`: use the models; measure only entries that are not calibrated yet.
    #[default]
    Use,
    /// `1`: use the models and keep measuring every task.
    Keep,
    /// `2`: discard what the files hold and start over (measuring every task).
    Reset,
}

/// What a model predicts for one task on one architecture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prediction {
    /// Expected duration, µs.
    Calibrated(f64),
    /// Too few samples: the model-driven policies force a run there.
    Uncalibrated,
}

/// One (architecture, footprint) entry of a model, for statistics and display.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryInfo {
    pub arch: String,
    pub footprint: u32,
    /// Mean task size `n` of its samples.
    pub size: f64,
    pub count: u64,
    /// Mean of all samples, µs.
    pub mean: f64,
    /// Population standard deviation of all samples, µs.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// What predictions use once calibrated: the median of the newest 32 samples, µs.
    pub estimate: f64,
    /// The newest samples (at most 32), oldest first, µs: what `estimate` is the median of.
    pub recent: Vec<f64>,
}

struct State {
    /// The file's content at the last load or save, merged with `fresh`.
    total: ModelData,
    /// Samples recorded by this process since the last load or save.
    fresh: ModelData,
    /// `Calibrate::Reset` until the first successful save: that save replaces the file.
    replace: bool,
}

/// How a model predicts from its samples: StarPU's `STARPU_HISTORY_BASED`,
/// `STARPU_REGRESSION_BASED` and `STARPU_NL_REGRESSION_BASED`.
///
/// Every kind records the same samples (entries and power-law sums), so the kind is not
/// part of the file: a model calibrated under one kind predicts under another at once, and
/// codelets naming one model with different kinds share its samples. The kind chooses only
/// the answer of [`ModelHandle::predict`]. Which samples are kept does not depend on it
/// (see [`ModelHandle::wants_sample`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// The entry's estimate once calibrated (10 samples); for a footprint without one, the
    /// power law `a·n^b` once usable; otherwise uncalibrated.
    #[default]
    History,
    /// The power law `a·n^b` for every footprint and size once usable (10 samples, sizes
    /// spread), as StarPU's regression-based model: no entry answers, and it is
    /// uncalibrated before.
    Regression,
    /// `a·n^b + c` through the calibrated entries for every footprint and size once usable
    /// (3 calibrated entries of distinct, spread sizes); before, as [`ModelKind::History`].
    NlRegression,
}

/// What the handles of one model file (one per kind in use) share.
struct Shared {
    /// Read by every `predict` of every worker, written by `record`: a read-write lock.
    state: RwLock<State>,
    /// Serialises saves of this model (between processes the file lock does).
    saving: Mutex<()>,
    /// Warnings printed about the file: at most one per model.
    warnings: AtomicU32,
}

/// One performance model of this process, as one kind predicts from it.
pub struct ModelHandle {
    name: String,
    path: Option<PathBuf>,
    calibrate: Calibrate,
    kind: ModelKind,
    /// The samples, shared with the handles of the other kinds of this (name, path).
    shared: Arc<Shared>,
}

impl ModelHandle {
    /// Model `name` backed by `path` (`None`: memory only), read now unless `calibrate` is
    /// [`Calibrate::Reset`]; prints the warning about an unusable file, if any.
    pub(crate) fn open(name: &str, path: Option<PathBuf>, calibrate: Calibrate) -> ModelHandle {
        let (h, warning) = ModelHandle::load(name, path, calibrate);
        if let Some(w) = warning {
            eprintln!("{w}");
        }
        h
    }

    /// [`ModelHandle::open`], returning the warning instead of printing it (counted as
    /// printed: a later save will not warn again).
    fn load(name: &str, path: Option<PathBuf>, calibrate: Calibrate) -> (ModelHandle, Option<String>) {
        let mut warning = None;
        let total = match (&path, calibrate) {
            (Some(p), Calibrate::Use | Calibrate::Keep) => match file::read(p, name) {
                Ok(d) => d.unwrap_or_default(),
                Err(ReadError::Corrupt(why)) => {
                    warning = Some(file::warning(p, &why));
                    ModelData::default()
                }
                Err(ReadError::Io(e)) => {
                    warning = Some(file::warning(p, &e.to_string()));
                    ModelData::default()
                }
            },
            _ => ModelData::default(),
        };
        let h = ModelHandle {
            name: name.to_string(),
            path,
            calibrate,
            kind: ModelKind::History,
            shared: Arc::new(Shared {
                state: RwLock::new(State { total, fresh: ModelData::default(), replace: calibrate == Calibrate::Reset }),
                saving: Mutex::new(()),
                warnings: AtomicU32::new(u32::from(warning.is_some())),
            }),
        };
        (h, warning)
    }

    /// The model that file `path` holds, read once for display (`weft perfmodel`), apart
    /// from the process's models: the handle is in no registry, predicts from what the file
    /// holds, and is never saved unless [`ModelHandle::save`] is called. The model's name is
    /// the one the file states. Unlike the runtime's loading, the file is read whatever its
    /// owner and mode (nothing read here steers a scheduler); a file that is not a valid
    /// model file is an error saying why.
    pub fn read_file(path: &Path) -> Result<ModelHandle, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = file::model_name(&text).ok_or_else(|| format!("{}: not a model file (no `model` line)", path.display()))?;
        let total = file::parse(&text, &name).map_err(|why| format!("{}: {why}", path.display()))?;
        Ok(ModelHandle {
            name,
            path: Some(path.to_path_buf()),
            calibrate: Calibrate::Use,
            kind: ModelKind::History,
            shared: Arc::new(Shared {
                state: RwLock::new(State { total, fresh: ModelData::default(), replace: false }),
                saving: Mutex::new(()),
                warnings: AtomicU32::new(0),
            }),
        })
    }

    /// The same model (the same samples, recorded and saved once) predicting as `kind`.
    pub fn as_kind(&self, kind: ModelKind) -> ModelHandle {
        ModelHandle { name: self.name.clone(), path: self.path.clone(), calibrate: self.calibrate, kind, shared: self.shared.clone() }
    }

    pub fn kind(&self) -> ModelKind {
        self.kind
    }

    /// Identifies the model's samples: equal for the handles of every kind of one model.
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The architectures the model has measured, in the order they were first recorded.
    pub fn archs(&self) -> Vec<String> {
        self.read().total.archs.iter().map(|(a, _)| a.clone()).collect()
    }

    /// The model's file; `None` for a model kept in memory only.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn calibrate(&self) -> Calibrate {
        self.calibrate
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // Poisoning: no code holding this lock panics short of a bug; the state is whole
        // between statements, so a poisoned lock's data is still usable.
        self.shared.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.shared.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Expected duration of a task of this footprint and size on `arch`, as the handle's
    /// [`ModelKind`] answers: History, the robust estimate of its entry once calibrated,
    /// else the architecture's power law if usable; Regression, the power law only;
    /// NlRegression, `a·n^b + c` once usable, else as History. Allocates nothing.
    pub fn predict(&self, arch: &str, footprint: u32, size: f64) -> Prediction {
        let s = self.read();
        let Some(h) = s.total.arch(arch) else { return Prediction::Uncalibrated };
        let usable = size > 0.0 && size.is_finite();
        let answer = |t: f64| if t.is_finite() && t >= 0.0 { Prediction::Calibrated(t) } else { Prediction::Uncalibrated };
        let power_law = || match h.regression.fit() {
            Some((a, b)) if usable => answer(a * size.powf(b)),
            _ => Prediction::Uncalibrated,
        };
        match self.kind {
            ModelKind::Regression => return power_law(),
            ModelKind::NlRegression => {
                if let Some((a, b, c)) = h.nl.abc
                    && usable
                    && let p @ Prediction::Calibrated(_) = answer(a * size.powf(b) + c)
                {
                    return p;
                }
            }
            ModelKind::History => {}
        }
        if let Some(e) = h.entries.get(&footprint)
            && e.calibrated()
        {
            return Prediction::Calibrated(e.estimate());
        }
        power_law()
    }

    /// Whether [`ModelHandle::record`] would keep a sample of this entry now (so that the
    /// runtime times only tasks whose timing is used). The same rule for every kind: a
    /// regression that is not usable yet lacks samples of entries that are not calibrated
    /// (too few samples in all, or too few sizes), never more samples of a calibrated
    /// entry's size, so freezing calibrated entries never stalls its calibration.
    pub fn wants_sample(&self, arch: &str, footprint: u32) -> bool {
        wants(self.calibrate, self.read().total.arch(arch), footprint)
    }

    /// Records one measured duration, µs. Under [`Calibrate::Use`] a sample of an entry
    /// that is already calibrated is dropped (StarPU's default: calibrated entries are
    /// frozen) and does not reach the regression either.
    pub fn record(&self, arch: &str, footprint: u32, size: f64, us: f64) {
        let mut s = self.write();
        if !wants(self.calibrate, s.total.arch(arch), footprint) {
            return;
        }
        s.total.arch_mut(arch).record(footprint, size, us);
        s.fresh.arch_mut(arch).record(footprint, size, us);
    }

    /// Every entry, architecture by architecture, footprints in increasing order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        let s = self.read();
        let mut v = Vec::new();
        for (arch, h) in &s.total.archs {
            for (fp, e) in &h.entries {
                v.push(EntryInfo {
                    arch: arch.clone(),
                    footprint: *fp,
                    size: e.size,
                    count: e.count,
                    mean: e.mean,
                    stddev: e.stddev(),
                    min: e.min,
                    max: e.max,
                    estimate: e.estimate(),
                    recent: e.recent.clone(),
                });
            }
        }
        v
    }

    /// `(a, b)` of the power law `t = a·n^b` of `arch`, once usable (10 samples, smallest
    /// size below 90% of the largest).
    pub fn regression(&self, arch: &str) -> Option<(f64, f64)> {
        self.read().total.arch(arch)?.regression.fit()
    }

    /// `(a, b, c)` of `t = a·n^b + c` that [`ModelKind::NlRegression`] predicts with on
    /// `arch`: fitted through its calibrated entries, refit at most 32 samples ago;
    /// `None` until usable (3 calibrated entries of distinct sizes, spread).
    pub fn nl_prediction(&self, arch: &str) -> Option<(f64, f64, f64)> {
        self.read().total.arch(arch)?.nl.abc
    }

    /// `(a, b, c)` of `t = a·n^b + c` fitted now through the entries of `arch` (each
    /// entry's mean size and robust estimate), calibrated or not, for display; `None` with
    /// fewer than 3 distinct sizes.
    pub fn nl_regression(&self, arch: &str) -> Option<(f64, f64, f64)> {
        let points: Vec<(f64, f64)> = {
            let s = self.read();
            s.total.arch(arch)?.entries.values().map(|e| (e.size, e.estimate())).collect()
        };
        fit_nl(&points)
    }

    /// Writes the samples recorded since the last load or save into the file, merged with
    /// what it holds now (other processes may have saved since); a no-op without a path,
    /// or with nothing recorded since (unless a [`Calibrate::Reset`] file awaits replacing).
    /// Waits up to 10 s for another process saving the same model.
    pub fn save(&self) -> io::Result<()> {
        self.save_until(None, Instant::now() + SAVE_PATIENCE)
    }

    /// [`ModelHandle::save`] waiting for the file lock until `deadline`, and for this
    /// handle's own locks until `locks_deadline` (`None`: as long as it takes).
    fn save_until(&self, locks_deadline: Option<Instant>, deadline: Instant) -> io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let _saving = acquire(locks_deadline, || match self.shared.saving.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        })
        .ok_or_else(busy)?;
        let (taken, replace) = {
            let mut s = self.write_until(locks_deadline).ok_or_else(busy)?;
            if s.fresh.is_empty() && !s.replace {
                // Nothing to add: no I/O at all (a model used, not calibrated, may live in
                // a directory this process cannot write).
                return Ok(());
            }
            (std::mem::take(&mut s.fresh), s.replace)
        };
        match self.merge_into_file(path, &taken, replace, deadline) {
            Ok(mut merged) => {
                // Failing to get the lock back here (at exit) loses nothing: the file has
                // `taken`, `fresh` no longer does, and `total` still counts it once.
                if let Some(mut s) = self.write_until(locks_deadline) {
                    merged.merge(&s.fresh);
                    s.total = merged;
                    s.replace = false;
                }
                Ok(())
            }
            Err(e) => {
                // Put the samples back before those recorded meanwhile, for the next save.
                if let Some(mut s) = self.write_until(locks_deadline) {
                    let newer = std::mem::replace(&mut s.fresh, taken);
                    s.fresh.merge(&newer);
                }
                Err(e)
            }
        }
    }

    fn write_until(&self, deadline: Option<Instant>) -> Option<RwLockWriteGuard<'_, State>> {
        acquire(deadline, || match self.shared.state.try_write() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        })
    }

    /// Under the file lock: the file's current content (nothing if `replace`, or if it is
    /// unusable) merged with `taken`, written back; returns what was written.
    /// The directory is created 0700 if missing; one others could write is not used (the
    /// handle's one warning says so, and the save fails).
    fn merge_into_file(&self, path: &Path, taken: &ModelData, replace: bool, deadline: Instant) -> io::Result<ModelData> {
        let (dir, name) = file::split(path)?;
        let dir = PrivateDir::create(dir).inspect_err(|e| {
            if fsutil::is_untrusted(e) {
                self.warn(file::warning(path, &e.to_string()));
            }
        })?;
        let _lock = file::lock(&dir, name, deadline)?;
        let mut merged = if replace {
            ModelData::default()
        } else {
            match file::read_in(&dir, name, &self.name) {
                Ok(d) => d.unwrap_or_default(),
                Err(ReadError::Corrupt(why)) => {
                    self.warn(file::warning(path, &why));
                    ModelData::default()
                }
                // Unreadable now but maybe not later: do not overwrite what we cannot see.
                Err(ReadError::Io(e)) => return Err(e),
            }
        };
        merged.merge(taken);
        dir.write_atomic(name, file::render(&self.name, &merged).as_bytes())?;
        Ok(merged)
    }

    /// Prints `msg` unless this handle has already warned about its file.
    fn warn(&self, msg: String) {
        // Relaxed: only the count matters, nothing is published through it.
        if self.shared.warnings.compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            eprintln!("{msg}");
        }
    }
}

/// Whether a sample of `footprint` on an architecture holding `h` is kept in mode `c`.
fn wants(c: Calibrate, h: Option<&ArchHistory>, footprint: u32) -> bool {
    match c {
        Calibrate::Keep | Calibrate::Reset => true,
        Calibrate::Use => h.and_then(|h| h.entries.get(&footprint)).is_none_or(|e| e.count < CALIBRATION_MIN),
    }
}

fn busy() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "performance model busy in this process")
}

/// Calls `try_once` until it gives a guard, sleeping between tries, up to `deadline`
/// (`None`: no limit).
fn acquire<G>(deadline: Option<Instant>, mut try_once: impl FnMut() -> Option<G>) -> Option<G> {
    loop {
        if let Some(g) = try_once() {
            return Some(g);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every model of the process, keyed by (name, path).
static MODELS: Mutex<Vec<Arc<ModelHandle>>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<Arc<ModelHandle>>> {
    MODELS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The model `name` kept in `dir` (`None`: in memory only), as file
/// `dir/<sanitized name>.model`, read on the first call for it, predicting as `kind`. Later
/// calls return the same handle for the same kind, and one sharing its samples for another
/// kind, whatever their `calibrate` (the first call's mode holds).
pub(crate) fn models_in(dir: Option<&Path>, name: &str, calibrate: Calibrate, kind: ModelKind) -> Arc<ModelHandle> {
    let path = dir.map(|d| d.join(file::file_name(name)));
    let mut m = registry();
    let mut same_model = m.iter().filter(|h| h.name == name && h.path == path);
    if let Some(h) = same_model.clone().find(|h| h.kind == kind) {
        return h.clone();
    }
    let h = Arc::new(match same_model.next() {
        Some(other) => other.as_kind(kind),
        None => ModelHandle { kind, ..ModelHandle::open(name, path, calibrate) },
    });
    m.push(h.clone());
    h
}

/// Saves every model of the process that has a file, printing a line for each that fails
/// (but for a directory that fails the trust rule: the handle warned about it already).
/// Never panics and gives up on locks after about 2 s in all: it runs at exit, where a
/// thread stopped mid-save or mid-record may hold one forever.
pub(crate) fn save_all() {
    let deadline = Instant::now() + EXIT_PATIENCE;
    let models: Vec<Arc<ModelHandle>> = match acquire(Some(deadline), || match MODELS.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }) {
        Some(m) => {
            // One handle per model: the handles of its other kinds share its samples.
            let mut one_each: Vec<Arc<ModelHandle>> = Vec::new();
            for h in m.iter().filter(|h| h.path.is_some()) {
                if !one_each.iter().any(|o| o.id() == h.id()) {
                    one_each.push(h.clone());
                }
            }
            one_each
        }
        None => {
            eprintln!("weft: performance models not saved: their registry stayed locked");
            return;
        }
    };
    for h in models {
        // An untrusted directory was reported by the handle's one warning already.
        if let Err(e) = h.save_until(Some(deadline), deadline)
            && !fsutil::is_untrusted(&e)
            && let Some(p) = h.path()
        {
            eprintln!("weft: could not save performance model {}: {e}", p.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static N: AtomicU64 = AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!("weft-perfmodel-{}-{tag}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
            let _ = std::fs::remove_dir_all(&p);
            TempDir(p)
        }
        fn model(&self, name: &str) -> PathBuf {
            self.0.join(file::file_name(name))
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn open(path: &Path, c: Calibrate) -> ModelHandle {
        let (h, w) = ModelHandle::load("m", Some(path.to_path_buf()), c);
        assert_eq!(w, None, "unexpected warning");
        h
    }

    fn total(h: &ModelHandle) -> ModelData {
        h.read().total.clone()
    }

    /// `read_file` gives back what a save wrote, under the name the file states, and says
    /// why a file that is not a model file is refused.
    #[test]
    fn read_file_reads_a_saved_model_by_the_name_it_states() {
        let d = TempDir::new("readfile");
        let path = d.model("gemm \"x\"");
        let (h, _) = ModelHandle::load("gemm \"x\"", Some(path.clone()), Calibrate::Keep);
        for i in 0..12 {
            h.record("cpu", 7, 1000.0 * (1 + i % 3) as f64, 10.0 + i as f64);
        }
        h.save().unwrap();
        let r = ModelHandle::read_file(&path).unwrap();
        assert_eq!(r.name(), "gemm \"x\"");
        assert_eq!(r.archs(), ["cpu"]);
        assert_eq!(r.entries(), h.entries());
        assert_eq!(r.entries()[0].recent.len(), 12);
        assert_eq!(r.regression("cpu"), h.regression("cpu"));
        std::fs::write(d.0.join("bad.model"), "weft-perfmodel 1\nmodel \"b\"\n").unwrap();
        let why = ModelHandle::read_file(&d.0.join("bad.model")).err().unwrap();
        assert!(why.contains("bad.model") && why.contains("truncated"), "{why}");
    }

    fn count(h: &ModelHandle, arch: &str, fp: u32) -> u64 {
        h.entries().iter().find(|e| e.arch == arch && e.footprint == fp).map_or(0, |e| e.count)
    }

    /// Two architectures (one with spaces, colons and quotes), several footprints: saved and
    /// loaded back by a fresh handle, every field is identical.
    #[test]
    fn round_trip_through_a_file() {
        let d = TempDir::new("roundtrip");
        let path = d.model("m");
        let h = open(&path, Calibrate::Keep);
        let archs = ["cpu", "opencl:NVIDIA \"H200\": sm_90 \\ x"];
        for (k, arch) in archs.iter().enumerate() {
            for fp in [1u32, 0x8000_0000, 0xffff_ffff, 42] {
                for i in 0..(5 + 11 * k + fp as usize % 7) {
                    h.record(arch, fp, (fp % 1000 + 1) as f64 * 64.0, 10.0 / 3.0 + (i * i) as f64 * 0.7 + k as f64);
                }
            }
        }
        h.save().unwrap();
        let back = open(&path, Calibrate::Use);
        assert_eq!(total(&back), total(&h));
        assert_eq!(back.entries(), h.entries());
        assert_eq!(back.entries().len(), 8);
        for arch in archs {
            assert_eq!(back.regression(arch), h.regression(arch));
            assert_eq!(back.predict(arch, 42, 1.0e5), h.predict(arch, 42, 1.0e5));
        }
        assert!(back.read().fresh.is_empty(), "nothing recorded since load");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("weft-perfmodel 1\nmodel \"m\"\n"), "{text}");
    }

    /// Saving twice adds nothing the second time; a second handle's samples add to the
    /// first's (counts add, nothing counted twice).
    #[test]
    fn saves_merge_without_double_counting() {
        let d = TempDir::new("merge");
        let path = d.model("m");
        let a = open(&path, Calibrate::Keep);
        let b = open(&path, Calibrate::Keep);
        for _ in 0..7 {
            a.record("cpu", 1, 8.0, 5.0);
        }
        a.save().unwrap();
        a.save().unwrap();
        for _ in 0..4 {
            b.record("cpu", 1, 8.0, 6.0);
            b.record("cuda:X", 2, 8.0, 1.0);
        }
        b.save().unwrap();
        assert_eq!(count(&b, "cpu", 1), 11, "b's total has a's samples after its save");
        a.record("cpu", 1, 8.0, 5.0);
        a.save().unwrap();
        let c = open(&path, Calibrate::Use);
        assert_eq!(count(&c, "cpu", 1), 12);
        assert_eq!(count(&c, "cuda:X", 2), 4);
        assert_eq!(c.read().total.arch("cpu").unwrap().regression.count, 12);
        let e = c.entries().into_iter().find(|e| e.arch == "cpu").unwrap();
        assert_eq!((e.min, e.max), (5.0, 6.0));
        assert!((e.mean - (8.0 * 5.0 + 4.0 * 6.0) / 12.0).abs() < 1e-12);
    }

    /// A corrupt file: one warning naming it, treated as empty, rewritten valid by the next
    /// save, which does not warn again.
    #[test]
    fn corrupt_file_warns_once_and_is_rewritten() {
        let d = TempDir::new("corrupt");
        let path = d.model("m");
        std::fs::create_dir_all(&d.0).unwrap();
        for junk in ["garbage\n\0\u{1}", "weft-perfmodel 1\nmodel \"m\"\narch \"cpu\"\nregression 1 NaN", "\u{feff}{\"json\":1}"] {
            std::fs::write(&path, junk).unwrap();
            let (h, w) = ModelHandle::load("m", Some(path.clone()), Calibrate::Use);
            let w = w.expect("a warning");
            assert!(w.starts_with(&format!("weft: ignoring performance model file {}: ", path.display())), "{w}");
            assert!(h.entries().is_empty());
            for _ in 0..3 {
                h.record("cpu", 9, 1.0, 2.0);
            }
            h.save().unwrap();
            assert_eq!(h.shared.warnings.load(Ordering::Relaxed), 1, "the save warned again");
            let back = open(&path, Calibrate::Use);
            assert_eq!(count(&back, "cpu", 9), 3);
        }
        // Invalid UTF-8 too.
        std::fs::write(&path, [0xffu8, 0xfe, 0x00]).unwrap();
        assert!(ModelHandle::load("m", Some(path.clone()), Calibrate::Use).1.is_some());
        // A file that went bad after the load: the save warns (once), then replaces it.
        let h = open(&path.with_file_name("other.model"), Calibrate::Keep);
        std::fs::write(h.path().unwrap(), "weft-perfmodel 1\nmodel \"m\"\n").unwrap();
        h.record("cpu", 1, 1.0, 1.0);
        h.save().unwrap();
        assert_eq!(h.shared.warnings.load(Ordering::Relaxed), 1);
        h.record("cpu", 1, 1.0, 1.0);
        h.save().unwrap();
        assert_eq!(h.shared.warnings.load(Ordering::Relaxed), 1);
        assert_eq!(count(&open(h.path().unwrap(), Calibrate::Use), "cpu", 1), 2);
    }

    /// A model file others could have written is ignored with one warning, as a corrupt one
    /// is, and replaced by the next save with a file only the owner can write; a directory
    /// others can write is neither read nor written (one warning, and the save fails).
    #[test]
    fn files_and_directories_others_can_write_are_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let d = TempDir::new("trust");
        let path = d.model("m");
        let h = open(&path, Calibrate::Keep);
        h.record("cpu", 1, 1.0, 1.0);
        h.save().unwrap();
        assert_eq!((mode(&d.0), mode(&path)), (0o700, 0o600), "created private");
        for m in [0o666, 0o664] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
            let (h, w) = ModelHandle::load("m", Some(path.clone()), Calibrate::Keep);
            let w = w.expect("a warning");
            assert!(w.contains("writable by other users"), "{w}");
            assert!(h.entries().is_empty(), "mode {m:o}: the file was used");
            h.record("cpu", 2, 1.0, 1.0);
            h.save().unwrap();
            assert_eq!(h.shared.warnings.load(Ordering::Relaxed), 1, "the save warned again");
            assert_eq!(mode(&path), 0o600, "replaced by a private file");
            assert_eq!(count(&open(&path, Calibrate::Use), "cpu", 2), 1, "the file others could write was dropped");
        }
        // A symbolic link in the file's place is not followed, and is replaced.
        let elsewhere = d.0.join("elsewhere");
        std::fs::rename(&path, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let (h, w) = ModelHandle::load("m", Some(path.clone()), Calibrate::Keep);
        assert!(w.expect("a warning").contains("symbolic link"));
        h.record("cpu", 3, 1.0, 1.0);
        h.save().unwrap();
        assert!(!std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        assert_eq!(count(&open(&elsewhere, Calibrate::Use), "cpu", 3), 0, "written through the link");

        std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        let before = std::fs::read(&path).unwrap();
        let (h, w) = ModelHandle::load("m", Some(path.clone()), Calibrate::Keep);
        assert!(w.expect("a warning").contains("writable by other users"));
        assert!(h.entries().is_empty());
        h.record("cpu", 4, 1.0, 1.0);
        let e = h.save().unwrap_err();
        assert!(fsutil::is_untrusted(&e), "{e}");
        assert_eq!(h.shared.warnings.load(Ordering::Relaxed), 1, "one warning in all");
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
        std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    /// A missing file (and directory) is simply empty; the save creates both.
    #[test]
    fn missing_file_is_empty_and_save_creates_it() {
        let d = TempDir::new("missing");
        let path = d.0.join("deeper").join("m.model");
        let h = open(&path, Calibrate::Use);
        assert!(h.entries().is_empty());
        h.record("null", 3, 1.0, 1.0);
        h.save().unwrap();
        assert_eq!(count(&open(&path, Calibrate::Use), "null", 3), 1);
    }

    /// 9 samples: uncalibrated; the 10th calibrates the entry.
    #[test]
    fn calibrated_after_ten_samples() {
        let h = ModelHandle::open("m", None, Calibrate::Use);
        for i in 0..9 {
            h.record("cpu", 5, 100.0, 20.0 + i as f64);
        }
        assert_eq!(h.predict("cpu", 5, 100.0), Prediction::Uncalibrated);
        assert!(h.wants_sample("cpu", 5));
        h.record("cpu", 5, 100.0, 29.0);
        assert_eq!(h.predict("cpu", 5, 100.0), Prediction::Calibrated(24.5));
        assert_eq!(h.predict("cuda:x", 5, 100.0), Prediction::Uncalibrated, "per architecture");
        assert_eq!(h.predict("cpu", 6, 100.0), Prediction::Uncalibrated, "one size: no usable regression");
    }

    /// One spike among 20 ordinary samples: the prediction stays at the ordinary value.
    #[test]
    fn a_spike_does_not_move_the_prediction() {
        let h = ModelHandle::open("m", None, Calibrate::Keep);
        for _ in 0..20 {
            h.record("cuda:GPU 0", 1, 1e6, 100.0);
        }
        h.record("cuda:GPU 0", 1, 1e6, 100_000.0);
        let Prediction::Calibrated(t) = h.predict("cuda:GPU 0", 1, 1e6) else { panic!("calibrated") };
        assert!((t - 100.0).abs() <= 5.0, "{t}");
        assert_eq!(h.entries()[0].max, 100_000.0);
    }

    /// Sizes 1e3..1e6 with t = 2·n^0.9, one sample each: no entry is calibrated, the power
    /// law predicts an unseen size within 5%; a calibrated entry wins over the law.
    #[test]
    fn regression_predicts_unseen_sizes() {
        let h = ModelHandle::open("m", None, Calibrate::Use);
        let mut n = 1e3;
        let mut fp = 0;
        while n <= 1e6 {
            if fp < 10 {
                assert_eq!(h.predict("cpu", 999, 3e4), Prediction::Uncalibrated, "only {fp} samples");
            }
            h.record("cpu", fp, n, 2.0 * f64::powf(n, 0.9));
            n *= 1.5;
            fp += 1;
        }
        let want = 2.0 * f64::powf(3.3e5, 0.9);
        let Prediction::Calibrated(t) = h.predict("cpu", 999, 3.3e5) else { panic!("regression usable") };
        assert!((t - want).abs() <= 0.05 * want, "{t} vs {want}");
        let (a, b) = h.regression("cpu").unwrap();
        assert!((a - 2.0).abs() < 1e-6 && (b - 0.9).abs() < 1e-9);
        for _ in 0..10 {
            h.record("cpu", 999, 3.3e5, 7.0);
        }
        assert_eq!(h.predict("cpu", 999, 3.3e5), Prediction::Calibrated(7.0));
    }

    /// The non-linear model through the handle's entries recovers a, b and c.
    #[test]
    fn nl_regression_through_the_handle() {
        let h = ModelHandle::open("m", None, Calibrate::Keep);
        let (a, b, c) = (0.02, 1.3, 35.0);
        for k in 0..12u32 {
            let n = 1024.0 * 2f64.powi(k as i32);
            for _ in 0..3 {
                h.record("cpu", k, n, a * n.powf(b) + c);
            }
        }
        let (fa, fb, fc) = h.nl_regression("cpu").unwrap();
        assert!((fa - a).abs() < 0.01 * a && (fb - b).abs() < 0.01 * b && (fc - c).abs() < 0.01 * c, "{fa} {fb} {fc}");
        assert_eq!(h.nl_regression("opencl:none"), None);
    }

    /// Durations `3·n^0.9 + 50` µs at 8 sizes, 10 samples each (one footprint per size).
    fn latency_law(h: &ModelHandle, sizes: usize) {
        for k in 0..sizes {
            let n = 1e3 * 2f64.powi(k as i32);
            for _ in 0..10 {
                h.record("cpu", k as u32, n, 3.0 * n.powf(0.9) + 50.0);
            }
        }
    }

    fn us(p: Prediction) -> f64 {
        match p {
            Prediction::Calibrated(t) => t,
            Prediction::Uncalibrated => panic!("uncalibrated"),
        }
    }

    /// Each kind on the same samples of `3·n^0.9 + 50`: NlRegression predicts an unseen size
    /// within 1% and answers every size by its curve; Regression answers every size, seen
    /// ones included, by the power law; History keeps each entry's estimate and the power
    /// law for unseen footprints.
    #[test]
    fn each_kind_predicts_from_the_same_samples() {
        let h = ModelHandle::open("m", None, Calibrate::Use);
        latency_law(&h, 8);
        let (nl, reg) = (h.as_kind(ModelKind::NlRegression), h.as_kind(ModelKind::Regression));
        let law = |n: f64| 3.0 * n.powf(0.9) + 50.0;
        let unseen = 3.0e4;
        let t = us(nl.predict("cpu", 999, unseen));
        assert!((t - law(unseen)).abs() < 0.01 * law(unseen), "{t} vs {}", law(unseen));
        let (a, b, c) = nl.nl_prediction("cpu").expect("usable");
        assert!((b - 0.9).abs() < 0.01 && (c - 50.0).abs() < 1.0, "{a} {b} {c}");
        let seen = 4e3;
        assert_eq!(nl.predict("cpu", 2, seen), Prediction::Calibrated(a * seen.powf(b) + c));
        let (pa, pb) = h.regression("cpu").unwrap();
        assert_eq!(reg.predict("cpu", 2, seen), Prediction::Calibrated(pa * seen.powf(pb)));
        assert_ne!(reg.predict("cpu", 2, seen), Prediction::Calibrated(law(seen)), "not the entry");
        assert_eq!(reg.predict("cpu", 999, unseen), Prediction::Calibrated(pa * unseen.powf(pb)));
        assert_eq!(h.predict("cpu", 2, seen), Prediction::Calibrated(law(seen)), "History: the entry");
        assert_eq!(h.predict("cpu", 999, unseen), Prediction::Calibrated(pa * unseen.powf(pb)));
        for k in [&h, &nl, &reg] {
            assert_eq!(
                k.predict("cpu", 2, -1.0),
                if k.kind == ModelKind::Regression { Prediction::Uncalibrated } else { Prediction::Calibrated(law(seen)) }
            );
            assert_eq!(k.predict("gpu", 2, seen), Prediction::Uncalibrated);
        }
    }

    /// Before their curves are usable: Regression is uncalibrated (at one size, even where
    /// an entry is), so the policies force runs; NlRegression answers as History until 3
    /// calibrated sizes.
    #[test]
    fn kinds_before_their_curve_is_usable() {
        let h = ModelHandle::open("m", None, Calibrate::Use);
        let (nl, reg) = (h.as_kind(ModelKind::NlRegression), h.as_kind(ModelKind::Regression));
        latency_law(&h, 1);
        let t0 = 3.0 * 1e3f64.powf(0.9) + 50.0;
        assert_eq!(reg.predict("cpu", 0, 1e3), Prediction::Uncalibrated, "one size: no power law");
        assert_eq!(nl.predict("cpu", 0, 1e3), Prediction::Calibrated(t0));
        assert_eq!(h.predict("cpu", 0, 1e3), Prediction::Calibrated(t0));
        latency_law(&h, 2);
        assert!(matches!(reg.predict("cpu", 0, 1e3), Prediction::Calibrated(t) if t != t0), "two sizes: the power law");
        assert_eq!(nl.nl_prediction("cpu"), None, "two sizes: no curve");
        assert_eq!(nl.predict("cpu", 0, 1e3), Prediction::Calibrated(t0));
        assert_eq!(nl.predict("cpu", 9, 5e3), h.predict("cpu", 9, 5e3), "unseen: the power law, as History");
        // A third size with 9 samples: not calibrated, not in the curve yet; the 10th is.
        let n = 4e3;
        for i in 0..10 {
            assert_eq!(nl.nl_prediction("cpu").is_some(), i == 10, "{i} samples");
            h.record("cpu", 2, n, 3.0 * n.powf(0.9) + 50.0);
        }
        assert!(nl.nl_prediction("cpu").is_some());
    }

    /// Calibration is the same for every kind: an entry is sampled until calibrated, and
    /// sampling stops then, even while a Regression model (one size) is unusable.
    #[test]
    fn wants_sample_is_per_entry_for_every_kind() {
        for kind in [ModelKind::History, ModelKind::Regression, ModelKind::NlRegression] {
            let h = ModelHandle::open("m", None, Calibrate::Use).as_kind(kind);
            for i in 0..10 {
                assert!(h.wants_sample("cpu", 0), "{kind:?}: {i} samples");
                h.record("cpu", 0, 1e3, 10.0);
            }
            assert!(!h.wants_sample("cpu", 0), "{kind:?}");
            assert!(h.wants_sample("cpu", 1) && h.wants_sample("gpu", 0), "{kind:?}");
            assert_eq!(h.predict("cpu", 0, 1e3) == Prediction::Uncalibrated, kind == ModelKind::Regression);
            let k = ModelHandle::open("m", None, Calibrate::Keep).as_kind(kind);
            latency_law(&k, 3);
            assert!(k.wants_sample("cpu", 0), "{kind:?}: Keep keeps sampling");
        }
    }

    /// The curve is refit from what a file holds, and follows an entry that keeps
    /// calibrating (within 32 samples).
    #[test]
    fn nl_curve_after_load_and_while_calibrating() {
        let d = TempDir::new("nl");
        let path = d.model("m");
        let h = open(&path, Calibrate::Keep);
        latency_law(&h, 4);
        h.save().unwrap();
        let back = open(&path, Calibrate::Keep);
        assert_eq!(back.nl_prediction("cpu"), h.nl_prediction("cpu"));
        assert!(back.nl_prediction("cpu").is_some());
        let before = back.nl_prediction("cpu");
        for _ in 0..NL_REFIT + 32 {
            back.record("cpu", 3, 8e3, 1e5);
        }
        assert_ne!(back.nl_prediction("cpu"), before, "the new estimate reached the curve");
    }

    /// Use: calibrated entries are frozen (samples dropped, regression untouched); Keep:
    /// every sample counts.
    #[test]
    fn use_freezes_calibrated_entries_keep_does_not() {
        let hu = ModelHandle::open("m", None, Calibrate::Use);
        let hk = ModelHandle::open("m", None, Calibrate::Keep);
        for h in [&hu, &hk] {
            for i in 0..15 {
                h.record("cpu", 1, 10.0 + i as f64, 50.0);
            }
        }
        assert!(!hu.wants_sample("cpu", 1));
        assert!(hu.wants_sample("cpu", 2) && hu.wants_sample("gpu", 1));
        assert!(hk.wants_sample("cpu", 1));
        assert_eq!(count(&hu, "cpu", 1), 10);
        assert_eq!(hu.read().total.arch("cpu").unwrap().regression.count, 10);
        assert_eq!(count(&hk, "cpu", 1), 15);
        assert_eq!(hk.read().total.arch("cpu").unwrap().regression.count, 15);
    }

    /// Use also freezes entries calibrated by the file it loaded.
    #[test]
    fn use_freezes_entries_calibrated_on_disk() {
        let d = TempDir::new("use");
        let path = d.model("m");
        let k = open(&path, Calibrate::Keep);
        for _ in 0..10 {
            k.record("cpu", 1, 1.0, 1.0);
        }
        k.save().unwrap();
        let u = open(&path, Calibrate::Use);
        assert!(!u.wants_sample("cpu", 1));
        u.record("cpu", 1, 1.0, 1.0);
        assert_eq!(count(&u, "cpu", 1), 10);
        assert!(u.read().fresh.is_empty());
    }

    /// Reset ignores the file at load, records everything, and its first save replaces
    /// the file (later saves merge again).
    #[test]
    fn reset_replaces_the_file() {
        let d = TempDir::new("reset");
        let path = d.model("m");
        let k = open(&path, Calibrate::Keep);
        for _ in 0..12 {
            k.record("cpu", 1, 1.0, 1.0);
            k.record("cpu", 2, 2.0, 2.0);
        }
        k.save().unwrap();
        let r = open(&path, Calibrate::Reset);
        assert!(r.entries().is_empty(), "file ignored at load");
        assert_eq!(r.predict("cpu", 1, 1.0), Prediction::Uncalibrated);
        for _ in 0..12 {
            r.record("cpu", 1, 1.0, 3.0);
        }
        assert!(r.wants_sample("cpu", 1), "Reset keeps measuring");
        assert_eq!(count(&r, "cpu", 1), 12);
        r.save().unwrap();
        let after = open(&path, Calibrate::Use);
        assert_eq!(count(&after, "cpu", 1), 12);
        assert_eq!(count(&after, "cpu", 2), 0, "the old file's entries are gone");
        // A second Reset save merges with what others saved since.
        let other = open(&path, Calibrate::Keep);
        other.record("cpu", 2, 2.0, 2.0);
        other.save().unwrap();
        r.record("cpu", 1, 1.0, 3.0);
        r.save().unwrap();
        let last = open(&path, Calibrate::Use);
        assert_eq!((count(&last, "cpu", 1), count(&last, "cpu", 2)), (13, 1));
    }

    /// A save with nothing new touches nothing (not even the directory), except the first
    /// save of a Reset model, which empties the file.
    #[test]
    fn save_without_new_samples_does_no_io() {
        let d = TempDir::new("noop");
        let path = d.0.join("sub").join("m.model");
        let h = open(&path, Calibrate::Keep);
        h.save().unwrap();
        assert!(!d.0.exists(), "the save created the directory");
        h.record("cpu", 1, 1.0, 1.0);
        h.save().unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, "junk").unwrap();
        h.save().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "junk");
        let r = open(&path, Calibrate::Reset);
        r.save().unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with("weft-perfmodel 1\n") && after != before);
        assert!(open(&path, Calibrate::Use).entries().is_empty());
    }

    /// A model without a path saves nothing and succeeds.
    #[test]
    fn memory_only_model_saves_nothing() {
        let h = ModelHandle::open("m", None, Calibrate::Keep);
        h.record("cpu", 1, 1.0, 1.0);
        assert!(h.path().is_none());
        h.save().unwrap();
        assert_eq!(count(&h, "cpu", 1), 1);
    }

    /// The registry gives one handle per (dir, name), under a sanitized file name, and
    /// `save_all` saves it.
    #[test]
    fn registry_and_save_all() {
        let d = TempDir::new("registry");
        let name = "cl-1a2b3c4d5e6f7788-sgemm kernel/v2";
        let h = models_in(Some(&d.0), name, Calibrate::Keep, ModelKind::History);
        assert!(Arc::ptr_eq(&h, &models_in(Some(&d.0), name, Calibrate::Use, ModelKind::History)));
        assert!(!Arc::ptr_eq(&h, &models_in(None, name, Calibrate::Keep, ModelKind::History)));
        let nl = models_in(Some(&d.0), name, Calibrate::Use, ModelKind::NlRegression);
        assert!(!Arc::ptr_eq(&h, &nl) && nl.id() == h.id(), "another kind shares the samples");
        assert_eq!((nl.kind(), nl.calibrate()), (ModelKind::NlRegression, Calibrate::Keep));
        let p = h.path().unwrap().to_path_buf();
        assert_eq!(p.parent(), Some(d.0.as_path()));
        assert!(p.file_name().unwrap().to_str().unwrap().starts_with("cl-1a2b3c4d5e6f7788-sgemm_kernel_v2-"));
        h.record("cpu", 4, 1.0, 1.0);
        save_all();
        let (back, w) = ModelHandle::load(name, Some(p), Calibrate::Use);
        assert_eq!(w, None);
        assert_eq!(count(&back, "cpu", 4), 1);
    }

    /// Threads of one process saving one model at once, through one shared handle and
    /// through separate handles (separate lock descriptions, as separate processes would
    /// have), leave a file with every sample.
    #[test]
    fn threads_saving_concurrently_lose_nothing() {
        let d = TempDir::new("threads");
        let path = d.model("m");
        let shared = Arc::new(open(&path, Calibrate::Keep));
        const THREADS: usize = 4;
        const ROUNDS: usize = 5;
        const PER_ROUND: usize = 6;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let shared = &shared;
                let path = &path;
                s.spawn(move || {
                    let own = open(path, Calibrate::Keep);
                    for r in 0..ROUNDS {
                        for i in 0..PER_ROUND {
                            shared.record("cpu", 0, 100.0, 1.0 + i as f64);
                            own.record("cpu", 0, 200.0, 2.0 + i as f64);
                            own.record("opencl:dev", t as u32, 300.0, 3.0);
                        }
                        if r % 2 == t % 2 {
                            shared.save().unwrap()
                        } else {
                            own.save().unwrap()
                        }
                        own.save().unwrap();
                    }
                });
            }
        });
        shared.save().unwrap();
        let back = open(&path, Calibrate::Use);
        let n = (THREADS * ROUNDS * PER_ROUND) as u64;
        assert_eq!(count(&back, "cpu", 0), 2 * n);
        for t in 0..THREADS as u32 {
            assert_eq!(count(&back, "opencl:dev", t), n / THREADS as u64);
        }
        assert_eq!(back.read().total.arch("cpu").unwrap().regression.count, 2 * n);
    }

    const CHILD_ENV: &str = "WEFT_PERFMODEL_TEST_WRITER";
    const CHILDREN: usize = 3;
    const CHILD_ROUNDS: usize = 8;
    const CHILD_PER_ROUND: usize = 25;

    /// Several processes calibrating one model and saving it repeatedly at the same time
    /// leave one valid file holding every process's samples. The test binary re-runs
    /// itself, this test only, as each writer.
    #[test]
    fn processes_saving_concurrently_lose_nothing() {
        if let Ok(spec) = std::env::var(CHILD_ENV) {
            let (id, path) = spec.split_once(':').expect("id:path");
            let id: u32 = id.parse().unwrap();
            let h = open(Path::new(path), Calibrate::Keep);
            for r in 0..CHILD_ROUNDS {
                for i in 0..CHILD_PER_ROUND {
                    h.record("cuda:NVIDIA H200", 7, 4096.0, 10.0 + (i + r) as f64);
                    h.record("cpu", 100 + id, 1024.0 * (id + 1) as f64, 3.0);
                }
                h.save().unwrap();
            }
            return;
        }
        let d = TempDir::new("processes");
        std::fs::create_dir_all(&d.0).unwrap();
        let path = d.model("m");
        let exe = std::env::current_exe().unwrap();
        let test = format!("{}::processes_saving_concurrently_lose_nothing", module_path!().split_once("::").unwrap().1);
        let children: Vec<_> = (0..CHILDREN)
            .map(|id| {
                std::process::Command::new(&exe)
                    .args(["--exact", &test, "--nocapture", "--test-threads=1"])
                    .env(CHILD_ENV, format!("{id}:{}", path.display()))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "writer failed:\n{log}");
            assert!(log.contains("1 passed"), "the writer did not run the test:\n{log}");
            assert!(!log.contains("weft: "), "a writer warned:\n{log}");
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let data = file::parse(&text, "m").expect("a valid file");
        let k = (CHILD_ROUNDS * CHILD_PER_ROUND) as u64;
        let gpu = data.arch("cuda:NVIDIA H200").expect("shared architecture");
        assert_eq!(gpu.entries[&7].count, CHILDREN as u64 * k);
        assert_eq!(gpu.regression.count, CHILDREN as u64 * k);
        let cpu = data.arch("cpu").unwrap();
        for id in 0..CHILDREN as u32 {
            assert_eq!(cpu.entries[&(100 + id)].count, k, "writer {id}");
        }
        assert_eq!(cpu.regression.count, CHILDREN as u64 * k);
        assert!(cpu.regression.fit().is_some(), "the writers' sizes differ");
    }
}
