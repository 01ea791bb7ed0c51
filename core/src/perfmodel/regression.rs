//! Regressions over a model's samples: the power law `a·n^b`, fitted online by least
//! squares on `(ln n, ln t)`, and the non-linear `a·n^b + c`, fitted on demand.
//!
//! **Owns**: [`PowerLaw`] (the running sums, their merge, the fit and StarPU's rule for
//! when it may be used) and [`fit_nl`].
//! **Does not own**: which samples are recorded (`store`), the per-footprint history the
//! non-linear fit reads (`history`).
//!
//! Invariant: a [`PowerLaw`] with `count == 0` is all zeros; otherwise `0 < min_n <= max_n`
//! and the sums are over exactly `count` samples with `n > 0` and `t > 0`.

/// Samples a regression needs before it is used (as for a history entry).
pub(crate) const REGRESSION_MIN: u64 = 10;
/// A regression is used only if its smallest size is below this fraction of its largest
/// (StarPU's rule: a fit over one size says nothing about the exponent).
pub(crate) const SPREAD: f64 = 0.9;

/// Running least-squares sums of `y = ln t` against `x = ln n`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PowerLaw {
    pub(crate) count: u64,
    pub(crate) sum_x: f64,
    pub(crate) sum_y: f64,
    pub(crate) sum_xx: f64,
    pub(crate) sum_xy: f64,
    pub(crate) min_n: f64,
    pub(crate) max_n: f64,
}

impl PowerLaw {
    /// Adds one sample; one with `n <= 0` or `t <= 0` has no logarithm and is skipped.
    pub(crate) fn add(&mut self, n: f64, t: f64) {
        if !(n > 0.0 && t > 0.0 && n.is_finite() && t.is_finite()) {
            return;
        }
        let (x, y) = (n.ln(), t.ln());
        if self.count == 0 {
            self.min_n = n;
            self.max_n = n;
        } else {
            self.min_n = self.min_n.min(n);
            self.max_n = self.max_n.max(n);
        }
        self.count += 1;
        self.sum_x += x;
        self.sum_y += y;
        self.sum_xx += x * x;
        self.sum_xy += x * y;
    }

    /// Adds another process's sums (least-squares sums simply add).
    pub(crate) fn merge(&mut self, o: &PowerLaw) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = o.clone();
            return;
        }
        self.count += o.count;
        self.sum_x += o.sum_x;
        self.sum_y += o.sum_y;
        self.sum_xx += o.sum_xx;
        self.sum_xy += o.sum_xy;
        self.min_n = self.min_n.min(o.min_n);
        self.max_n = self.max_n.max(o.max_n);
    }

    /// `(a, b)` of `t = a·n^b`, once there are [`REGRESSION_MIN`] samples spread over sizes
    /// (smallest below [`SPREAD`] of the largest); `None` before.
    pub(crate) fn fit(&self) -> Option<(f64, f64)> {
        if self.count < REGRESSION_MIN || self.min_n >= SPREAD * self.max_n {
            return None;
        }
        let n = self.count as f64;
        let den = n * self.sum_xx - self.sum_x * self.sum_x;
        // The spread rule keeps this away from zero; rounding of large sums could not.
        if den <= 1e-12 * n * self.sum_xx.abs() {
            return None;
        }
        let b = (n * self.sum_xy - self.sum_x * self.sum_y) / den;
        let a = ((self.sum_y - b * self.sum_x) / n).exp();
        (a.is_finite() && b.is_finite()).then_some((a, b))
    }
}

/// `(a, b, c)` of `t = a·n^b + c` through `points` (`(n, t)`, one per footprint), or `None`
/// with fewer than 3 distinct sizes.
///
/// For a given `c` the best `a, b` are a linear fit of `ln(t - c)` on `ln n`; the `c` kept
/// minimises the sum of squared *relative* errors (times span decades: absolute errors
/// would fit only the largest sizes). `c` lies in `[0, min t)`: searched on a grid of
/// [`NL_GRID`] points, then refined by golden-section search around the best one.
pub(crate) fn fit_nl(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let pts: Vec<(f64, f64)> = points.iter().copied().filter(|&(n, t)| n > 0.0 && t > 0.0 && n.is_finite() && t.is_finite()).collect();
    let mut sizes: Vec<f64> = pts.iter().map(|p| p.0).collect();
    sizes.sort_unstable_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < 3 {
        return None;
    }
    let t_min = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    // Keep `t - c` positive for the smallest t.
    let c_max = t_min * (1.0 - 1e-9);
    let cost = |c: f64| -> Option<(f64, f64, f64)> {
        let (a, b) = fit_shifted(&pts, c)?;
        let err = pts
            .iter()
            .map(|&(n, t)| {
                let r = (a * n.powf(b) + c - t) / t;
                r * r
            })
            .sum::<f64>();
        err.is_finite().then_some((err, a, b))
    };
    let mut best: Option<(usize, f64)> = None;
    for k in 0..NL_GRID {
        let c = c_max * k as f64 / (NL_GRID - 1) as f64;
        if let Some((err, _, _)) = cost(c)
            && best.is_none_or(|(_, e)| err < e)
        {
            best = Some((k, err));
        }
    }
    let (k, _) = best?;
    let step = c_max / (NL_GRID - 1) as f64;
    let (mut lo, mut hi) = ((k as f64 - 1.0).max(0.0) * step, ((k + 1) as f64 * step).min(c_max));
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let f = |c: f64| cost(c).map_or(f64::INFINITY, |r| r.0);
    let (mut x1, mut x2) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..80 {
        if f1 <= f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - phi * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + phi * (hi - lo);
            f2 = f(x2);
        }
    }
    let c = (lo + hi) / 2.0;
    // The grid point may beat the refined one when the cost is flat or not unimodal there.
    let grid_c = k as f64 * step;
    let (c, (_, a, b)) = match (cost(c), cost(grid_c)) {
        (Some(r), Some(g)) if g.0 < r.0 => (grid_c, g),
        (Some(r), _) => (c, r),
        (None, Some(g)) => (grid_c, g),
        (None, None) => return None,
    };
    Some((a, b, c))
}

/// Points of the grid over `c` in [`fit_nl`].
pub(crate) const NL_GRID: usize = 64;

/// Least-squares `(a, b)` of `ln(t - c) = ln a + b·ln n`.
fn fit_shifted(pts: &[(f64, f64)], c: f64) -> Option<(f64, f64)> {
    let mut s = PowerLaw::default();
    for &(n, t) in pts {
        s.add(n, t - c);
    }
    let k = s.count as f64;
    let den = k * s.sum_xx - s.sum_x * s.sum_x;
    if s.count < 2 || den <= 0.0 {
        return None;
    }
    let b = (k * s.sum_xy - s.sum_x * s.sum_y) / den;
    let a = ((s.sum_y - b * s.sum_x) / k).exp();
    (a.is_finite() && b.is_finite()).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    /// Exact power-law data gives back its a and b.
    #[test]
    fn power_law_recovers_a_and_b() {
        let mut p = PowerLaw::default();
        for i in 0..30 {
            let n = 1e3 * 1.3f64.powi(i);
            p.add(n, 2.0 * n.powf(0.9));
        }
        let (a, b) = p.fit().expect("30 spread samples");
        assert!(close(a, 2.0, 1e-6), "a = {a}");
        assert!(close(b, 0.9, 1e-6), "b = {b}");
    }

    /// Fewer than 10 samples, or sizes too close together: not usable.
    #[test]
    fn power_law_needs_ten_spread_samples() {
        let mut p = PowerLaw::default();
        for i in 0..9 {
            p.add(100.0 * (i + 1) as f64, 5.0 * (i + 1) as f64);
        }
        assert_eq!(p.fit(), None, "9 samples");
        p.add(1000.0, 50.0);
        assert!(p.fit().is_some(), "10 samples");

        let mut q = PowerLaw::default();
        for i in 0..20 {
            q.add(1000.0 + i as f64, 7.0);
        }
        assert_eq!(q.fit(), None, "smallest size 98% of the largest");
    }

    /// Merged sums equal the sums of all samples.
    #[test]
    fn power_law_merge_adds_sums() {
        let (mut a, mut b, mut all) = (PowerLaw::default(), PowerLaw::default(), PowerLaw::default());
        for i in 1..=12 {
            let (n, t) = (i as f64 * 10.0, i as f64 * 3.0 + 1.0);
            if i % 2 == 0 {
                a.add(n, t)
            } else {
                b.add(n, t)
            }
            all.add(n, t);
        }
        let mut m = PowerLaw::default();
        m.merge(&a);
        m.merge(&b);
        assert_eq!(m.count, all.count);
        assert_eq!((m.min_n, m.max_n), (all.min_n, all.max_n));
        assert!(close(m.sum_xy, all.sum_xy, 1e-12));
        let (fa, fb) = (m.fit().unwrap(), all.fit().unwrap());
        assert!(close(fa.0, fb.0, 1e-9) && close(fa.1, fb.1, 1e-9));
    }

    /// The non-linear fit recovers a, b and c of exact data.
    #[test]
    fn nl_fit_recovers_a_b_c() {
        for (a, b, c) in [(0.5, 1.5, 200.0), (3.0, 0.8, 40.0), (0.01, 2.0, 5.0)] {
            let pts: Vec<(f64, f64)> = (1..=16).map(|i| 10.0 * 2f64.powi(i)).map(|n| (n, a * f64::powf(n, b) + c)).collect();
            let (fa, fb, fc) = fit_nl(&pts).expect("16 sizes");
            assert!(close(fa, a, 0.01), "a {fa} vs {a}");
            assert!(close(fb, b, 0.01), "b {fb} vs {b}");
            assert!(close(fc, c, 0.01), "c {fc} vs {c}");
        }
    }

    /// A pure power law fits with c near 0.
    #[test]
    fn nl_fit_of_a_pure_power_law_has_small_c() {
        let pts: Vec<(f64, f64)> = (1..=10).map(|i| 100.0 * 3f64.powi(i)).map(|n| (n, 2.0 * n.powf(0.9))).collect();
        let (a, b, c) = fit_nl(&pts).unwrap();
        assert!(close(b, 0.9, 0.01) && close(a, 2.0, 0.05), "{a} {b}");
        assert!(c < 0.01 * pts[0].1, "c = {c}");
    }

    #[test]
    fn nl_fit_needs_three_sizes() {
        assert_eq!(fit_nl(&[(1.0, 2.0), (2.0, 3.0), (2.0, 3.1)]), None);
    }
}
