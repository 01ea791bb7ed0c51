//! A model's file: its name on disk, its text format, reading it back, and the lock that
//! serialises processes saving it.
//!
//! **Owns**: the format `weft-perfmodel 1` (see `docs/perfmodel.md`, which shows it), the
//! checks that decide a file is corrupt, the file-name sanitizer and the `<file>.lock` lock.
//! **Does not own**: when to load, merge or save (`store`), what the numbers mean
//! (`history`, `regression`), the trust rule and the atomic (temporary file + rename)
//! write (`weft_vendors::fsutil`).
//!
//! Invariants: [`render`] then [`parse`] gives back exactly the same [`ModelData`] (floats
//! are written with `{:?}`, the shortest text that parses back to the same bits; strings
//! are quoted and escaped); [`parse`] accepts nothing that breaks the invariants listed
//! in `history` and `regression`, so a loaded model never holds a NaN or a negative count.
//! The lock file is never renamed or removed: a lock on the model file itself would be
//! lost when the rename replaces it. Every file is reached through a
//! [`PrivateDir`](weft_vendors::fsutil::PrivateDir), so it follows that module's trust rule
//! (the effective user's, not group- or world-writable, no symbolic link followed): a model
//! file others could have written is ignored as a corrupt one is, and replaced at the next save.

use super::history::{ArchHistory, Entry, ModelData, RECENT};
use super::regression::PowerLaw;
use std::collections::btree_map;
use std::fmt::Write as _;
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use weft_vendors::fsutil::{self, PrivateDir};

/// First line of every model file: format name and version.
pub(crate) const HEADER: &str = "weft-perfmodel 1";
/// Longest file-name stem kept from a model name before the hash is appended.
const MAX_STEM: usize = 100;

/// The file name of model `name`: its characters outside `[A-Za-z0-9._-]` replaced by `_`,
/// and, if any was replaced, the name was empty or longer than [`MAX_STEM`], a 64-bit FNV
/// hash of the original appended, so that distinct names get distinct files.
pub fn file_name(name: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let mut stem: String = name.chars().map(|c| if keep(c) { c } else { '_' }).take(MAX_STEM).collect();
    if name.is_empty() || name.len() > MAX_STEM || !name.chars().all(keep) {
        let _ = write!(stem, "-{:016x}", crate::hash::Fnv::hash(name.as_bytes()));
    }
    stem + ".model"
}

/// The lock file beside model file `path`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// The one warning about an unusable file.
pub(crate) fn warning(path: &Path, why: &str) -> String {
    format!("weft: ignoring performance model file {}: {why}", path.display())
}

/// Why a file could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The file exists but could not be read.
    Io(io::Error),
    /// The file was read but is not a valid model file for this model, or it (or its
    /// directory) fails the trust rule: either way it is ignored and may be replaced.
    Corrupt(String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        if fsutil::is_untrusted(&e) { ReadError::Corrupt(e.to_string()) } else { ReadError::Io(e) }
    }
}

/// `path`'s directory and file name (a model path always has both: `dir/<file_name>`).
pub(crate) fn split(path: &Path) -> io::Result<(&Path, &str)> {
    let name = path.file_name().and_then(|n| n.to_str());
    match (path.parent(), name) {
        (Some(dir), Some(name)) => Ok((if dir.as_os_str().is_empty() { Path::new(".") } else { dir }, name)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display()))),
    }
}

/// Model `name` as file `path` holds it; `Ok(None)` if there is no file (nor directory).
pub(crate) fn read(path: &Path, name: &str) -> Result<Option<ModelData>, ReadError> {
    let (dir, file) = split(path)?;
    match PrivateDir::open(dir) {
        Ok(d) => read_in(&d, file, name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Model `name` as file `file` of `dir` holds it; `Ok(None)` if there is no file.
pub(crate) fn read_in(dir: &PrivateDir, file: &str, name: &str) -> Result<Option<ModelData>, ReadError> {
    let Some(bytes) = dir.read(file)? else { return Ok(None) };
    let text = String::from_utf8(bytes).map_err(|_| ReadError::Corrupt("not UTF-8 text".into()))?;
    parse(&text, name).map(Some).map_err(ReadError::Corrupt)
}

/// The text of model `name` holding `data`.
pub(crate) fn render(name: &str, data: &ModelData) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "{HEADER}");
    let _ = writeln!(s, "model {}", quote(name));
    let _ = writeln!(s, "# regression: count sum_ln_n sum_ln_t sum_ln_n_sq sum_ln_n_ln_t min_n max_n");
    let _ = writeln!(s, "# entry: footprint size count mean m2 min max nrecent recent_oldest_first...");
    for (arch, h) in &data.archs {
        let r = &h.regression;
        let _ = writeln!(s, "arch {}", quote(arch));
        let _ = writeln!(s, "regression {} {:?} {:?} {:?} {:?} {:?} {:?}", r.count, r.sum_x, r.sum_y, r.sum_xx, r.sum_xy, r.min_n, r.max_n);
        for (fp, e) in &h.entries {
            let _ = write!(s, "entry {fp:08x} {:?} {} {:?} {:?} {:?} {:?} {}", e.size, e.count, e.mean, e.m2, e.min, e.max, e.recent.len());
            for v in &e.recent {
                let _ = write!(s, " {v:?}");
            }
            s.push('\n');
        }
    }
    s.push_str("end\n");
    s
}

/// The model name a model file's text states on its `model` line (without checking the
/// rest: [`parse`] does), if it has one.
pub(crate) fn model_name(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.starts_with('#') && l.starts_with("model "))?;
    unquote(&line["model ".len()..]).ok()
}

/// Parses a model file's text, which must hold model `name`.
pub(crate) fn parse(text: &str, name: &str) -> Result<ModelData, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty());
    match lines.next() {
        Some((_, l)) if l == HEADER => {}
        Some((_, l)) => return Err(format!("not a {HEADER:?} file (first line {:?})", truncate(l))),
        None => return Err("empty".into()),
    }
    match lines.next() {
        Some((i, l)) => {
            let (kw, rest) = l.split_once(' ').unwrap_or((l, ""));
            if kw != "model" {
                return Err(format!("line {}: expected `model`", i + 1));
            }
            let got = unquote(rest).map_err(|e| format!("line {}: {e}", i + 1))?;
            if got != name {
                return Err(format!("it holds model {got:?}, not {name:?}"));
            }
        }
        None => return Err("truncated after the header".into()),
    }
    let mut data = ModelData::default();
    // Index in `data.archs` of the architecture being read, and whether its regression
    // line has been seen.
    let mut current: Option<(usize, bool)> = None;
    for (i, line) in lines.by_ref() {
        let at = |e: String| format!("line {}: {e}", i + 1);
        let (kw, rest) = line.split_once(' ').unwrap_or((line, ""));
        match kw {
            "end" if rest.is_empty() => {
                if let Some((_, false)) = current {
                    return Err(at("architecture without a regression line".into()));
                }
                if let Some((j, _)) = lines.next() {
                    return Err(format!("line {}: text after `end`", j + 1));
                }
                data.refit_nl();
                return Ok(data);
            }
            "arch" => {
                if let Some((_, false)) = current {
                    return Err(at("architecture without a regression line".into()));
                }
                let arch = unquote(rest).map_err(at)?;
                if data.arch(&arch).is_some() {
                    return Err(at(format!("architecture {arch:?} appears twice")));
                }
                data.archs.push((arch, ArchHistory::default()));
                current = Some((data.archs.len() - 1, false));
            }
            "regression" => match current {
                Some((a, false)) => {
                    data.archs[a].1.regression = parse_regression(rest).map_err(at)?;
                    current = Some((a, true));
                }
                Some((_, true)) => return Err(at("second regression line".into())),
                None => return Err(at("regression before any architecture".into())),
            },
            "entry" => match current {
                Some((a, true)) => {
                    let (fp, e) = parse_entry(rest).map_err(at)?;
                    match data.archs[a].1.entries.entry(fp) {
                        btree_map::Entry::Vacant(v) => {
                            v.insert(e);
                        }
                        btree_map::Entry::Occupied(_) => return Err(at(format!("footprint {fp:08x} appears twice"))),
                    }
                }
                _ => return Err(at("entry before its architecture's regression line".into())),
            },
            _ => return Err(at(format!("unknown line {:?}", truncate(line)))),
        }
    }
    Err("truncated (no `end` line)".into())
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn parse_regression(rest: &str) -> Result<PowerLaw, String> {
    let t: Vec<&str> = rest.split_ascii_whitespace().collect();
    if t.len() != 7 {
        return Err(format!("regression: expected 7 fields, found {}", t.len()));
    }
    let count = int(t[0])?;
    let f: Vec<f64> = t[1..].iter().map(|s| num(s)).collect::<Result<_, _>>()?;
    let r = PowerLaw { count, sum_x: f[0], sum_y: f[1], sum_xx: f[2], sum_xy: f[3], min_n: f[4], max_n: f[5] };
    if count == 0 {
        return if r == PowerLaw::default() { Ok(r) } else { Err("regression: no samples but non-zero sums".into()) };
    }
    if !(r.min_n > 0.0 && r.min_n <= r.max_n && r.sum_xx >= 0.0) {
        return Err("regression: inconsistent sizes or sums".into());
    }
    Ok(r)
}

fn parse_entry(rest: &str) -> Result<(u32, Entry), String> {
    let t: Vec<&str> = rest.split_ascii_whitespace().collect();
    if t.len() < 8 {
        return Err(format!("entry: expected at least 8 fields, found {}", t.len()));
    }
    if t[0].len() != 8 {
        return Err(format!("entry: footprint {:?} is not 8 hex digits", truncate(t[0])));
    }
    let fp = u32::from_str_radix(t[0], 16).map_err(|_| format!("entry: bad footprint {:?}", truncate(t[0])))?;
    let size = num(t[1])?;
    let count = int(t[2])?;
    let (mean, m2, min, max) = (num(t[3])?, num(t[4])?, num(t[5])?, num(t[6])?);
    let k = usize::try_from(int(t[7])?).map_err(|_| "entry: recent count too large".to_string())?;
    if t.len() != 8 + k {
        return Err(format!("entry: says {k} recent samples, has {}", t.len() - 8));
    }
    let recent: Vec<f64> = t[8..].iter().map(|s| num(s)).collect::<Result<_, _>>()?;
    if count == 0 || k == 0 || k > RECENT || k as u64 > count {
        return Err(format!("entry: {count} samples with {k} recent ones"));
    }
    if !(size >= 0.0 && m2 >= 0.0 && min >= 0.0 && min <= max && recent.iter().all(|&v| min <= v && v <= max)) {
        return Err(format!("entry {fp:08x}: inconsistent values"));
    }
    Ok((fp, Entry::from_parts(size, count, mean, m2, min, max, recent)))
}

/// A finite float (`parse` alone also takes `NaN` and `inf`).
fn num(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("bad number {:?}", truncate(s))),
    }
}

/// A non-negative integer (a `-` fails here).
fn int(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| format!("bad count {:?}", truncate(s)))
}

/// `s` in double quotes with `\`, `"` and control characters escaped, so that any
/// architecture or model name (spaces, colons, newlines) fits in one line.
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(q, "\\u{{{:x}}}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The inverse of [`quote`]; the quoted string must be all of `s`.
pub(crate) fn unquote(s: &str) -> Result<String, String> {
    let inner = s.strip_prefix('"').ok_or("expected a quoted string")?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                return if chars.as_str().is_empty() { Ok(out) } else { Err("text after a quoted string".into()) };
            }
            '\\' => match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let rest = chars.as_str();
                    let body = rest.strip_prefix('{').and_then(|r| r.split_once('}')).ok_or("bad \\u escape")?;
                    let c = u32::from_str_radix(body.0, 16).ok().and_then(char::from_u32).ok_or("bad \\u escape")?;
                    out.push(c);
                    chars = body.1.chars();
                }
                _ => return Err("bad escape".into()),
            },
            c => out.push(c),
        }
    }
    Err("unterminated quoted string".into())
}

/// An exclusive lock on a model file's lock file, released on drop (or when the process
/// dies: an `flock` does not outlive its holder, so there is no stale lock to clean up).
pub(crate) struct FileLock {
    _file: File,
}

/// Takes the lock of model file `file` of `dir`, retrying until `deadline` (a process
/// stuck while holding it must not stop this one from exiting).
pub(crate) fn lock(dir: &PrivateDir, file: &str, deadline: Instant) -> io::Result<FileLock> {
    let path = lock_path(&dir.path().join(file));
    let file = dir.open_rw(&format!("{file}.lock"))?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(FileLock { _file: file }),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{} stayed locked", path.display())));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ModelData {
        let mut d = ModelData::default();
        for (k, arch) in ["cpu", "cuda:NVIDIA H200 \"SXM\" \\ 141GB", "opencl:pthread-Intel(R) Xeon(R)\tx\n"].iter().enumerate() {
            let h = d.arch_mut(arch);
            for fp in [0u32, 0xdead_beef, 7 + k as u32] {
                for i in 0..(3 + 17 * k) {
                    h.record(fp, 1000.0 * (fp % 5 + 1) as f64, 1.0 / 3.0 + i as f64 * 0.1 + fp as f64 * 1e-9);
                }
            }
        }
        d
    }

    #[test]
    fn render_parse_round_trips_exactly() {
        let d = sample();
        let text = render("cl-1a2b3c4d5e6f7788-sgemm \"x\"", &d);
        assert!(text.starts_with("weft-perfmodel 1\n"));
        let back = parse(&text, "cl-1a2b3c4d5e6f7788-sgemm \"x\"").expect("parses");
        assert_eq!(back, d);
        assert_eq!(render("cl-1a2b3c4d5e6f7788-sgemm \"x\"", &back), text);
    }

    #[test]
    fn quote_round_trips_any_string() {
        for s in ["", "cuda:Tesla V100-SXM2-16GB", "a\"b\\c", "tab\there\nnew\r\u{1}\u{7f}", "é ü 漢字 \u{200b}"] {
            let q = quote(s);
            assert!(!q.contains('\n'));
            assert_eq!(unquote(&q).unwrap(), s);
        }
        assert!(unquote("\"abc").is_err());
        assert!(unquote("\"a\" b").is_err());
        assert!(unquote("\"\\q\"").is_err());
    }

    /// Each damaged variant of a valid file is refused with a reason.
    #[test]
    fn corrupt_files_are_refused() {
        let name = "m";
        let good = render(name, &sample());
        assert!(parse(&good, name).is_ok());
        let entry_line = good.lines().find(|l| l.starts_with("entry")).unwrap().to_string();
        let fields: Vec<&str> = entry_line.split(' ').collect();
        let with_field = |i: usize, v: &str| {
            let mut f = fields.clone();
            f[i] = v;
            good.replacen(&entry_line, &f.join(" "), 1)
        };
        let cases: Vec<(&str, String)> = vec![
            ("empty", String::new()),
            ("wrong header", good.replacen("weft-perfmodel 1", "weft-perfmodel 2", 1)),
            ("foreign", "# StarPU model\nntypes 1\n".into()),
            ("other model", good.replacen("model \"m\"", "model \"n\"", 1)),
            ("truncated", good[..good.len() / 2].to_string()),
            ("no end", good.replacen("end\n", "", 1)),
            ("after end", format!("{good}entry 0 0\n")),
            ("NaN mean", with_field(4, "NaN")),
            ("inf size", with_field(2, "inf")),
            ("negative count", with_field(3, "-3")),
            ("zero count", with_field(3, "0")),
            ("short footprint", with_field(1, "abc")),
            ("bad recent count", with_field(8, "99")),
            ("min above max", with_field(6, "1e300")),
            ("duplicate arch", good.replacen("arch \"cpu\"\n", "arch \"cpu\"\nregression 0 0.0 0.0 0.0 0.0 0.0 0.0\narch \"cpu\"\n", 1)),
            ("duplicate entry", good.replacen(&entry_line, &format!("{entry_line}\n{entry_line}"), 1)),
            ("unknown line", good.replacen("end\n", "bogus 1\nend\n", 1)),
        ];
        for (what, text) in cases {
            assert!(text != good, "{what}: the damage must change the text");
            match parse(&text, name) {
                Err(why) => assert!(!why.is_empty(), "{what}"),
                Ok(_) => panic!("{what}: accepted"),
            }
        }
    }

    #[test]
    fn file_names_are_sanitized_and_distinct() {
        assert_eq!(file_name("sgemm"), "sgemm.model");
        assert_eq!(file_name("cl-1a2b3c4d5e6f7788-sgemm"), "cl-1a2b3c4d5e6f7788-sgemm.model");
        let a = file_name("a b");
        let b = file_name("a/b");
        let c = file_name("a_b");
        assert!(a.starts_with("a_b-") && b.starts_with("a_b-"), "{a} {b}");
        assert!(a != b && a != c && b != c);
        assert!(!file_name("../../etc/passwd").contains('/'));
        let long = "x".repeat(300);
        let l = file_name(&long);
        assert!(l.len() < 130 && l != file_name(&"x".repeat(301)));
        assert_ne!(file_name(""), ".model");
    }
}
