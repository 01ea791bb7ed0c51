//! The process's models: one [`ModelHandle`] per (directory, model name), loaded from its
//! file on first use and saved (merged with what other processes saved) on demand.
//! STUB: replaced by the full implementation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// One performance model of this process.
pub struct ModelHandle {
    name: String,
    path: Option<PathBuf>,
    samples: Mutex<Vec<(String, u32, f64, f64)>>,
}

impl ModelHandle {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    pub fn predict(&self, arch: &str, footprint: u32, _size: f64) -> Prediction {
        let s = self.samples.lock().unwrap();
        let v: Vec<f64> = s.iter().filter(|x| x.0 == arch && x.1 == footprint).map(|x| x.3).collect();
        if v.len() < 10 { Prediction::Uncalibrated } else { Prediction::Calibrated(v.iter().sum::<f64>() / v.len() as f64) }
    }
    pub fn wants_sample(&self, _arch: &str, _footprint: u32) -> bool {
        true
    }
    pub fn record(&self, arch: &str, footprint: u32, size: f64, us: f64) {
        self.samples.lock().unwrap().push((arch.to_string(), footprint, size, us));
    }
    pub fn save(&self) -> std::io::Result<()> {
        Ok(())
    }
}

static MODELS: Mutex<Vec<Arc<ModelHandle>>> = Mutex::new(Vec::new());

/// The model `name` kept in `dir` (`None`: in memory only), loaded on first use.
pub(crate) fn models_in(dir: Option<&Path>, name: &str, _calibrate: Calibrate) -> Arc<ModelHandle> {
    let path = dir.map(|d| d.join(format!("{name}.model")));
    let mut m = MODELS.lock().unwrap();
    if let Some(h) = m.iter().find(|h| h.name == name && h.path == path) {
        return h.clone();
    }
    let h = Arc::new(ModelHandle { name: name.to_string(), path, samples: Mutex::new(Vec::new()) });
    m.push(h.clone());
    h
}

/// Save every model that has a file.
pub(crate) fn save_all() {}
