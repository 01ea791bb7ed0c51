//! History tables: what one model has measured, per architecture and footprint.
//!
//! **Owns**: [`Entry`] (one (arch, footprint) cell: Welford count/mean/M2, min, max, the
//! newest [`RECENT`] samples and the robust estimate taken from them), [`ArchHistory`] (an
//! architecture's entries plus its power-law sums) and [`ModelData`] (every architecture of
//! one model), and the merge of two of each (what two processes' samples add up to).
//! **Does not own**: the text format (`file`), locking and calibration modes (`store`), the
//! regression arithmetic (`regression`).
//!
//! Invariants: an [`Entry`] has `count >= 1`, `1 <= recent.len() <= min(count, RECENT)`,
//! every value of `recent` lies in `[min, max]`, and `estimate` is the median of `recent`
//! (recomputed by every mutation, so `predict` reads it without sorting or allocating). An
//! [`ArchHistory`]'s `nl` is the non-linear fit through its calibrated entries as of its
//! last refit, which every merge and every entry reaching calibration triggers, and at
//! most [`NL_REFIT`] samples of calibrated entries ago otherwise.

use super::regression::{PowerLaw, SPREAD, fit_nl};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry as Slot;

/// Samples an entry keeps for its robust estimate (and persists).
pub(crate) const RECENT: usize = 32;
/// Samples after which an entry is calibrated (StarPU's `STARPU_CALIBRATE_MINIMUM`).
pub(crate) const CALIBRATION_MIN: u64 = 10;

/// Samples of calibrated entries after which the non-linear fit is redone: a fit costs
/// about 150 evaluations over the entries (tens of µs), too much for every sample of a
/// model that keeps calibrating, and one sample moves a median of 32 little.
pub(crate) const NL_REFIT: u32 = 32;

/// One (architecture, footprint) cell of a model's history.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// Mean task size `n` of the samples (every sample of one footprint has the same size
    /// with the default size and footprint functions).
    pub(crate) size: f64,
    pub(crate) count: u64,
    /// Welford's running mean of the durations, µs.
    pub(crate) mean: f64,
    /// Welford's M2: sum of squared deviations from `mean` (kept instead of the standard
    /// deviation so that the file round-trips it exactly).
    pub(crate) m2: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// The newest samples, oldest first, at most [`RECENT`].
    pub(crate) recent: Vec<f64>,
    /// Median of `recent`: what predictions use.
    estimate: f64,
}

impl Entry {
    /// An entry holding one sample.
    pub(crate) fn new(size: f64, us: f64) -> Entry {
        let mut recent = Vec::with_capacity(RECENT);
        recent.push(us);
        Entry { size, count: 1, mean: us, m2: 0.0, min: us, max: us, recent, estimate: us }
    }

    /// An entry read back from a file; the caller (`file`) has checked the invariants.
    pub(crate) fn from_parts(size: f64, count: u64, mean: f64, m2: f64, min: f64, max: f64, recent: Vec<f64>) -> Entry {
        let estimate = median(&recent);
        Entry { size, count, mean, m2, min, max, recent, estimate }
    }

    /// Adds one sample (Welford's update).
    pub(crate) fn push(&mut self, size: f64, us: f64) {
        self.count += 1;
        let n = self.count as f64;
        self.size += (size - self.size) / n;
        let delta = us - self.mean;
        self.mean += delta / n;
        self.m2 += delta * (us - self.mean);
        self.min = self.min.min(us);
        self.max = self.max.max(us);
        if self.recent.len() == RECENT {
            self.recent.remove(0);
        }
        self.recent.push(us);
        self.estimate = median(&self.recent);
    }

    /// Adds `other`'s samples, taken after this entry's (Chan et al.'s parallel formula for
    /// the mean and M2; the recent samples are concatenated, newest kept).
    pub(crate) fn merge(&mut self, other: &Entry) {
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.size += (other.size - self.size) * nb / n;
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.recent.extend_from_slice(&other.recent);
        let excess = self.recent.len().saturating_sub(RECENT);
        self.recent.drain(..excess);
        self.estimate = median(&self.recent);
    }

    /// The robust estimate, µs: the median of the newest [`RECENT`] samples.
    ///
    /// A median, not the mean: one spike (a page fault, a preempted worker, a GPU clock
    /// ramping up) moves a mean of 10 samples by a tenth of the spike, which is how one bad
    /// timing sends every GEMM to one GPU; the median ignores anything less than half the
    /// window. A median rather than a trimmed mean: with 10 to 32 samples a trimmed mean
    /// still lets a cluster of spikes through, and the median costs no more. A window
    /// rather than all samples: it follows a device whose speed drifts (clocks, drivers)
    /// when calibration keeps measuring.
    pub(crate) fn estimate(&self) -> f64 {
        self.estimate
    }

    /// Population standard deviation of all samples.
    pub(crate) fn stddev(&self) -> f64 {
        (self.m2 / self.count as f64).max(0.0).sqrt()
    }

    pub(crate) fn calibrated(&self) -> bool {
        self.count >= CALIBRATION_MIN
    }
}

/// Median of at most [`RECENT`] values, sorted in a stack copy (no allocation).
fn median(v: &[f64]) -> f64 {
    let mut buf = [0.0f64; RECENT];
    let k = v.len().min(RECENT);
    let s = &mut buf[..k];
    s.copy_from_slice(&v[v.len() - k..]);
    s.sort_unstable_by(f64::total_cmp);
    match k {
        0 => 0.0,
        _ if k % 2 == 1 => s[k / 2],
        _ => (s[k / 2 - 1] + s[k / 2]) / 2.0,
    }
}

/// Everything one model knows about one architecture.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ArchHistory {
    /// Power-law sums over every sample recorded for this architecture (all footprints).
    pub(crate) regression: PowerLaw,
    /// Keyed by footprint; ordered so the file lists them in a stable order.
    pub(crate) entries: BTreeMap<u32, Entry>,
    /// `a·n^b + c` through the calibrated entries, kept so that `predict` reads it.
    pub(crate) nl: NlFit,
}

/// The cached non-linear fit of an architecture, and how many samples it is behind.
#[derive(Clone, Debug, Default)]
pub(crate) struct NlFit {
    /// `(a, b, c)`; `None` until usable (see [`ArchHistory::refit_nl`]).
    pub(crate) abc: Option<(f64, f64, f64)>,
    stale: u32,
}

/// Derived from the entries (which the comparison of two histories compares), and refit on
/// a schedule that depends on the order of samples: never part of equality.
impl PartialEq for NlFit {
    fn eq(&self, _: &NlFit) -> bool {
        true
    }
}

impl ArchHistory {
    /// Records one sample; a non-finite or negative duration or size is ignored, a zero
    /// one goes to the entry only (the regression works on logarithms).
    pub(crate) fn record(&mut self, footprint: u32, size: f64, us: f64) {
        if !(us.is_finite() && us >= 0.0 && size.is_finite() && size >= 0.0) {
            return;
        }
        let e = match self.entries.entry(footprint) {
            Slot::Occupied(o) => {
                let e = o.into_mut();
                e.push(size, us);
                e
            }
            Slot::Vacant(v) => v.insert(Entry::new(size, us)),
        };
        let (calibrated, just) = (e.calibrated(), e.count == CALIBRATION_MIN);
        self.regression.add(size, us);
        if calibrated {
            self.nl.stale += 1;
            if just || self.nl.stale >= NL_REFIT {
                self.refit_nl();
            }
        }
    }

    /// Fits `a·n^b + c` through the calibrated entries (each one's mean size and robust
    /// estimate). Usable, as the power law, only with sizes spread (smallest below
    /// [`SPREAD`] of the largest), and with 3 distinct sizes, one per unknown.
    /// Only calibrated entries: one sample per size would let a single spike bend the
    /// curve that then answers for every size.
    pub(crate) fn refit_nl(&mut self) {
        self.nl.stale = 0;
        let points: Vec<(f64, f64)> = self.entries.values().filter(|e| e.calibrated()).map(|e| (e.size, e.estimate())).collect();
        let (lo, hi) = points.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
        self.nl.abc = if lo < SPREAD * hi { fit_nl(&points) } else { None };
    }

    pub(crate) fn merge(&mut self, other: &ArchHistory) {
        self.regression.merge(&other.regression);
        for (fp, e) in &other.entries {
            match self.entries.get_mut(fp) {
                Some(mine) => mine.merge(e),
                None => {
                    self.entries.insert(*fp, e.clone());
                }
            }
        }
        self.refit_nl();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.regression.count == 0
    }
}

/// Every architecture of one model, in first-seen order (few: a linear search by `&str`
/// finds one without building a key).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ModelData {
    pub(crate) archs: Vec<(String, ArchHistory)>,
}

impl ModelData {
    pub(crate) fn arch(&self, arch: &str) -> Option<&ArchHistory> {
        self.archs.iter().find(|(a, _)| a == arch).map(|(_, h)| h)
    }

    /// Refits every architecture's non-linear model (after reading a file).
    pub(crate) fn refit_nl(&mut self) {
        for (_, h) in &mut self.archs {
            h.refit_nl();
        }
    }

    /// The architecture's history, created empty if new.
    pub(crate) fn arch_mut(&mut self, arch: &str) -> &mut ArchHistory {
        let i = match self.archs.iter().position(|(a, _)| a == arch) {
            Some(i) => i,
            None => {
                self.archs.push((arch.to_string(), ArchHistory::default()));
                self.archs.len() - 1
            }
        };
        &mut self.archs[i].1
    }

    /// Adds `other`'s samples, taken after ours.
    pub(crate) fn merge(&mut self, other: &ModelData) {
        for (arch, h) in &other.archs {
            self.arch_mut(arch).merge(h);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.archs.iter().all(|(_, h)| h.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Welford's running values agree with the two-pass formulas.
    #[test]
    fn entry_statistics_match_two_pass() {
        let xs = [3.0, 7.0, 7.0, 19.0, 24.5, 1.25, 8.0];
        let mut e = Entry::new(10.0, xs[0]);
        for &x in &xs[1..] {
            e.push(10.0, x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        assert_eq!(e.count, 7);
        assert!(close(e.mean, mean, 1e-12));
        assert!(close(e.stddev(), var.sqrt(), 1e-12));
        assert_eq!((e.min, e.max), (1.25, 24.5));
        assert_eq!(e.estimate(), 7.0);
    }

    /// One spike among 20 ordinary samples leaves the estimate at the ordinary value (a
    /// mean would be ~4 860 µs).
    #[test]
    fn one_spike_does_not_poison_the_estimate() {
        let mut e = Entry::new(1.0, 100.0);
        for _ in 0..19 {
            e.push(1.0, 100.0);
        }
        e.push(1.0, 100_000.0);
        assert_eq!(e.count, 21);
        assert!(e.mean > 4000.0, "the mean does see the spike");
        assert!(close(e.estimate(), 100.0, 0.05), "estimate {}", e.estimate());
        assert_eq!(e.max, 100_000.0);
    }

    /// The window keeps the newest RECENT samples, and the estimate follows them.
    #[test]
    fn window_keeps_the_newest_samples() {
        let mut e = Entry::new(1.0, 500.0);
        for _ in 0..40 {
            e.push(1.0, 50.0);
        }
        assert_eq!(e.recent.len(), RECENT);
        assert!(e.recent.iter().all(|&x| x == 50.0));
        assert_eq!(e.estimate(), 50.0);
        assert_eq!(e.min, 50.0);
        assert_eq!(e.max, 500.0);
    }

    /// Merging two entries gives the statistics of all their samples (Chan), and the
    /// newest samples in order.
    #[test]
    fn merge_equals_recording_everything() {
        let a_xs: Vec<f64> = (0..25).map(|i| 10.0 + i as f64).collect();
        let b_xs: Vec<f64> = (0..17).map(|i| 200.0 - 3.0 * i as f64).collect();
        let build = |xs: &[f64]| {
            let mut e = Entry::new(4.0, xs[0]);
            for &x in &xs[1..] {
                e.push(4.0, x);
            }
            e
        };
        let mut merged = build(&a_xs);
        merged.merge(&build(&b_xs));
        let all: Vec<f64> = a_xs.iter().chain(&b_xs).copied().collect();
        let whole = build(&all);
        assert_eq!(merged.count, whole.count);
        assert!(close(merged.mean, whole.mean, 1e-12));
        assert!(close(merged.m2, whole.m2, 1e-10));
        assert_eq!((merged.min, merged.max), (whole.min, whole.max));
        assert_eq!(merged.recent, whole.recent);
        assert_eq!(merged.estimate(), whole.estimate());
    }

    #[test]
    fn calibrated_after_ten_samples() {
        let mut e = Entry::new(1.0, 1.0);
        for _ in 0..8 {
            e.push(1.0, 1.0);
        }
        assert!(!e.calibrated());
        e.push(1.0, 1.0);
        assert!(e.calibrated());
    }

    #[test]
    fn bad_samples_are_ignored() {
        let mut h = ArchHistory::default();
        for (n, t) in [(1.0, f64::NAN), (1.0, -1.0), (f64::INFINITY, 1.0), (-2.0, 3.0)] {
            h.record(7, n, t);
        }
        assert!(h.is_empty());
        h.record(7, 0.0, 0.0);
        assert_eq!(h.entries[&7].count, 1);
        assert_eq!(h.regression.count, 0, "logarithms of zero are not summed");
    }
}
