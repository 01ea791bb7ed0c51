//! `weft perfmodel list | show | plot`: the performance models under `$WEFT_HOME/models`,
//! read with core's own parser (`ModelHandle::read_file`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use weft_core::perfmodel::{ModelHandle, model_file_name};

/// `$WEFT_HOME/models`, as the runtime resolves it (`WEFT_HOME`, else
/// `$XDG_CACHE_HOME/weft`, else `~/.cache/weft`).
pub fn models_dir() -> Result<PathBuf, String> {
    let config = weft_core::Config::from_env().map_err(|e| e.to_string())?;
    config.home.map(|h| h.join("models")).ok_or_else(|| "no WEFT_HOME, XDG_CACHE_HOME nor HOME: no model directory".to_string())
}

/// The `.model` files of `dir`, sorted by name.
fn model_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "model")).collect();
    v.sort();
    Ok(v)
}

/// The model `name` means: a path to a file, a file name in the models directory, the
/// file core would keep model `name` in, or a file there that states that name.
pub fn open(name: &str) -> Result<ModelHandle, String> {
    let as_path = Path::new(name);
    if (name.contains('/') || name.ends_with(".model")) && as_path.is_file() {
        return ModelHandle::read_file(as_path);
    }
    let dir = models_dir()?;
    for candidate in [dir.join(name), dir.join(model_file_name(name))] {
        if candidate.is_file() {
            return ModelHandle::read_file(&candidate);
        }
    }
    for f in model_files(&dir)? {
        if let Ok(m) = ModelHandle::read_file(&f)
            && m.name() == name
        {
            return Ok(m);
        }
    }
    Err(format!("no model {name:?} in {} (`weft perfmodel list` lists them)", dir.display()))
}

/// The text of `weft perfmodel list`.
pub fn list() -> Result<String, String> {
    let dir = models_dir()?;
    let files = model_files(&dir)?;
    let mut o = String::new();
    if files.is_empty() {
        let _ = writeln!(o, "no performance models in {} (a codelet with a model writes one there at shutdown)", dir.display());
        return Ok(o);
    }
    let _ = writeln!(o, "{} models in {}", files.len(), dir.display());
    for f in files {
        let file = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match ModelHandle::read_file(&f) {
            Ok(m) => {
                let entries = m.entries();
                let archs: Vec<String> = m
                    .archs()
                    .iter()
                    .map(|a| {
                        let mine = entries.iter().filter(|e| &e.arch == a);
                        let (n, samples) = mine.fold((0, 0), |(n, s), e| (n + 1, s + e.count));
                        format!("{a} ({n} entries, {samples} samples)")
                    })
                    .collect();
                let shown = if file == model_file_name(m.name()) { String::new() } else { format!("  [{file}]") };
                let _ = writeln!(o, "  {}{shown}: {}", m.name(), if archs.is_empty() { "empty".into() } else { archs.join("; ") });
            }
            Err(why) => {
                let _ = writeln!(o, "  [{file}]: unreadable: {why}");
            }
        }
    }
    Ok(o)
}

/// The text of `weft perfmodel show NAME`: per architecture its fits, then its entries by
/// increasing size.
pub fn show(name: &str) -> Result<String, String> {
    let m = open(name)?;
    let mut o = String::new();
    let _ = writeln!(o, "model {}", m.name());
    if let Some(p) = m.path() {
        let _ = writeln!(o, "file  {}", p.display());
    }
    let entries = m.entries();
    for arch in m.archs() {
        let mut mine: Vec<_> = entries.iter().filter(|e| e.arch == arch).collect();
        mine.sort_by(|a, b| a.size.total_cmp(&b.size).then(a.footprint.cmp(&b.footprint)));
        let samples: u64 = mine.iter().map(|e| e.count).sum();
        let _ = writeln!(o, "\narch {arch}: {} entries, {samples} samples", mine.len());
        match m.regression(&arch) {
            Some((a, b)) => {
                let _ = writeln!(o, "  regression t = a*n^b: a = {a:.6e}, b = {b:.4} (used for footprints without a calibrated entry)");
            }
            None => o.push_str("  regression t = a*n^b: not usable yet (needs 10 samples and sizes that differ by 10% or more)\n"),
        }
        match m.nl_regression(&arch) {
            Some((a, b, c)) => {
                let _ = writeln!(o, "  regression t = a*n^b + c through the entries: a = {a:.6e}, b = {b:.4}, c = {c:.3} us");
            }
            None => o.push_str("  regression t = a*n^b + c: none (needs 3 distinct sizes)\n"),
        }
        // What a model of kind NlRegression predicts with: fitted through calibrated entries
        // only, and refit every 32 samples, so it can differ from the line above.
        match m.nl_prediction(&arch) {
            Some((a, b, c)) => {
                let _ = writeln!(o, "  predicting (kind nl-regression): a = {a:.6e}, b = {b:.4}, c = {c:.3} us");
            }
            None => o.push_str("  predicting (kind nl-regression): not usable yet (needs 3 calibrated entries of distinct sizes)\n"),
        }
        let _ = writeln!(
            o,
            "  {:<8} {:>14} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "footprint", "size", "count", "mean_us", "stddev_us", "min_us", "max_us", "median_us"
        );
        for e in mine {
            let _ = writeln!(
                o,
                "  {:08x}  {:>14} {:>8} {:>12.3} {:>12.3} {:>12.3} {:>12.3} {:>12.3}",
                e.footprint, e.size, e.count, e.mean, e.stddev, e.min, e.max, e.estimate
            );
        }
    }
    if entries.is_empty() {
        o.push_str("no entries\n");
    }
    o.push_str("\n(median: of the newest 32 samples, what predictions use once an entry has 10 samples)\n");
    Ok(o)
}
