//! Helpers shared by the benchmark binaries of `weft-bench`: environment set-up for PoCL,
//! run-to-run statistics, and a tiny `-x value` option parser.
//!
//! **Owns**: nothing of the runtime; only what several binaries under `src/bin/` repeat.

use std::collections::HashMap;

/// Give PoCL two single-core "basic" devices unless the environment already chose
/// (`shared/reference/opencl-facts.md`). Returns the value in effect.
///
/// PoCL reads `POCL_DEVICES` when it initialises, so call this first thing in `main`,
/// before any thread exists and before anything touches OpenCL.
pub fn pocl_devices_default() -> String {
    match std::env::var("POCL_DEVICES") {
        Ok(v) => v,
        Err(_) => {
            // SAFETY: called at the top of `main`, before any other thread exists (the
            // function's contract), so nothing reads the environment concurrently.
            unsafe { std::env::set_var("POCL_DEVICES", "basic basic") };
            "basic basic".to_string()
        }
    }
}

/// Run-to-run figures of one measurement.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    pub fn push(&mut self, x: f64) {
        self.0.push(x);
    }
    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v
    }
    /// The median (the mean of the two middle values for an even count); NaN when empty.
    pub fn median(&self) -> f64 {
        let v = self.sorted();
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }
    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }
    /// `(max - min) / median`, in percent: the run-to-run spread.
    pub fn spread_pct(&self) -> f64 {
        (self.max() - self.min()) / self.median() * 100.0
    }
    /// "median (min..max)" with `prec` decimals.
    pub fn show(&self, prec: usize) -> String {
        format!("{:.p$} ({:.p$}..{:.p$})", self.median(), self.min(), self.max(), p = prec)
    }
}

/// `-x value` options (`-xvalue` works too), each flag a single letter from `known`;
/// `-h` returns the usage text as the error.
pub struct Flags(HashMap<char, String>);

impl Flags {
    pub fn parse(args: &[String], known: &str, usage: &str) -> Result<Flags, String> {
        let mut m = HashMap::new();
        let mut it = args.iter().skip(1);
        while let Some(a) = it.next() {
            let Some(flag) = a.strip_prefix('-').and_then(|f| f.chars().next()) else {
                return Err(format!("unexpected argument {a:?}\n{usage}"));
            };
            if flag == 'h' {
                return Err(usage.to_string());
            }
            if !known.contains(flag) {
                return Err(format!("unknown option {a:?}\n{usage}"));
            }
            let attached = &a[1 + flag.len_utf8()..];
            let v = if attached.is_empty() {
                it.next().cloned().ok_or_else(|| format!("-{flag} needs a value\n{usage}"))?
            } else {
                attached.to_string()
            };
            m.insert(flag, v);
        }
        Ok(Flags(m))
    }

    /// The value of `-flag` parsed as `T`, or `default`.
    pub fn get<T: std::str::FromStr>(&self, flag: char, default: T) -> Result<T, String> {
        match self.0.get(&flag) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("-{flag} {v:?}: not a valid value")),
        }
    }

    pub fn has(&self, flag: char) -> bool {
        self.0.contains_key(&flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_summarise() {
        let s = Samples(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!(s.median(), 2.5);
        assert_eq!((s.min(), s.max()), (1.0, 10.0));
        assert!(Samples::default().median().is_nan());
    }

    #[test]
    fn flags_parse_attached_and_separate_values() {
        let args: Vec<String> = ["prog", "-n", "5", "-t7"].iter().map(|s| s.to_string()).collect();
        let f = Flags::parse(&args, "nt", "usage").unwrap();
        assert_eq!(f.get('n', 0usize).unwrap(), 5);
        assert_eq!(f.get('t', 0usize).unwrap(), 7);
        assert_eq!(f.get('r', 3usize).unwrap(), 3);
        assert!(Flags::parse(&args, "n", "usage").is_err());
    }
}
