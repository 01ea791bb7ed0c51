//! The bus model: latency and bandwidth between memory nodes, measured once per machine and
//! cached in `$WEFT_HOME/bus`, so that model-driven policies can weigh a transfer's cost
//! against a task's (StarPU's `sampling/bus`).
//!
//! **Owns**: measuring every host<->device link through the device's own copy path (small
//! copies for latency, large ones for bandwidth), the cache file `<key>.bus` (its format,
//! validation and atomic rewrite), and the estimate of a transfer's time between any two
//! nodes. Device-to-device transfers are not measured: Weft routes them through host memory
//! (`data::coherence`), so their cost is the sum of the two hops.
//! **Does not own**: deciding when to measure (the runtime calls [`BusModel::load_or_measure`]
//! at start-up, before any data exists, and reads `WEFT_BUS_CALIBRATE`), where `$WEFT_HOME`
//! is, or contention: like StarPU's, the model assumes an idle bus.
//!
//! The file follows [`weft_vendors::fsutil`]'s trust rule: `bus/` is created 0700, and a
//! directory or file that another user owns or could write is not read (one warning, and
//! the links are measured again); such a directory is not written to either.
//!
//! Units: latency in µs, bandwidth in MB/s (10^6 bytes per second), so `bytes / bandwidth`
//! is already µs.
#![allow(unsafe_code)] // issuing the measurement copies (`Device::copy`), with their SAFETY argument

use crate::hash::Fnv;
use crate::memory::MemoryNode;
use crate::sync::Arc;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};
use weft_vendors::fsutil::{self, PrivateDir};
use weft_vendors::{Buffer, Device, DeviceKind, Endpoint, Rect};

/// One direction of one host<->device link.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Link {
    latency_us: f64,
    bandwidth_mb_s: f64,
}

impl Link {
    /// What a pair is assumed to cost when it is not measured: slow enough that a policy
    /// does not move data for nothing on the strength of a guess.
    const DEFAULT: Link = Link { latency_us: 10.0, bandwidth_mb_s: 1000.0 };

    fn time_us(&self, bytes: usize) -> f64 {
        self.latency_us + bytes as f64 / self.bandwidth_mb_s
    }

    /// Whether the values can be used (a file can hold anything).
    fn is_sane(&self) -> bool {
        self.latency_us.is_finite() && self.latency_us >= 0.0 && self.bandwidth_mb_s.is_finite() && self.bandwidth_mb_s > 0.0
    }
}

/// Latency and bandwidth of every ordered pair of memory nodes.
///
/// Invariant: `up`, `down` and `labels` have one entry per node; index 0 (host memory to
/// itself) is never read, since a transfer within one node is free.
pub(crate) struct BusModel {
    /// `up[d]`: host memory → node `d`.
    up: Vec<Link>,
    /// `down[d]`: node `d` → host memory.
    down: Vec<Link>,
    /// `"<kind> <name>"` of each node, for the report (empty when unknown).
    labels: Vec<String>,
}

/// The cache file's first line: format name and version.
const HEADER: &str = "weft-bus 1";

/// How hard to measure one device: a start-up measurement that is cached can afford more
/// than one that is thrown away with the runtime (tests create many runtimes).
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Small copies timed for latency (their median is kept).
    lat_reps: usize,
    lat_bytes: usize,
    /// Size of the copies timed for bandwidth, and how many (the best rate is kept).
    bw_bytes: usize,
    bw_reps: usize,
    /// Time allowed per direction at most; less when the devices share `total` (see
    /// [`measure`]). Whatever it is, [`MIN_LAT_REPS`] latency copies and one bandwidth copy
    /// are timed.
    budget: Duration,
    /// Time allowed for every device together, divided among the directions left to
    /// measure as the measurement goes.
    total: Duration,
}

/// Latency copies timed per direction however short its share of the budget: the floor on
/// the measurement's quality (a median of fewer says little), with one bandwidth copy.
const MIN_LAT_REPS: usize = 3;

impl Plan {
    /// Measured once per machine and cached: about 0.3 s per device at most, 1 s for all of
    /// them, so that the first start stays under 2 s with the allocations, the untimed first
    /// copy and the floor of each device however many there are.
    const FULL: Plan = Plan {
        lat_reps: 20,
        lat_bytes: 8,
        bw_bytes: 16 << 20,
        bw_reps: 8,
        budget: Duration::from_millis(150),
        total: Duration::from_secs(1),
    };
    /// Not cached (no `$WEFT_HOME`): a few ms per device. Copies of 4 MiB still, like the
    /// full plan's for null devices: smaller ones fit in a cache and time it, not the bus.
    const QUICK: Plan = Plan {
        lat_reps: 5,
        lat_bytes: 8,
        bw_bytes: 4 << 20,
        bw_reps: 3,
        budget: Duration::from_millis(10),
        total: Duration::from_millis(100),
    };

    /// The plan for one device: a null device's copies are host `memcpy`s, nothing a long
    /// measurement would learn more about.
    fn for_kind(self, kind: DeviceKind) -> Plan {
        match kind {
            DeviceKind::Null => Plan { bw_bytes: self.bw_bytes.min(4 << 20), budget: self.budget.min(Duration::from_millis(40)), ..self },
            _ => self,
        }
    }
}

/// How long one measurement copy may take before the device is given up on. Its buffers
/// are then leaked: a copy that may still run must not have its memory freed under it.
const COPY_TIMEOUT: Duration = Duration::from_secs(5);

impl BusModel {
    /// `n` nodes, every host<->device link at the conservative default (10 µs, 1 GB/s).
    pub(crate) fn unmeasured(n: usize) -> BusModel {
        BusModel { up: vec![Link::DEFAULT; n], down: vec![Link::DEFAULT; n], labels: vec![String::new(); n] }
    }

    /// Load the cached measurement for this machine's nodes from `dir` (`$WEFT_HOME/bus`),
    /// or measure and cache it. `force`: measure again even if cached
    /// (`WEFT_BUS_CALIBRATE=1`). `dir` `None`: measure quickly, keep it in memory.
    ///
    /// Never fails: an unreadable or foreign file is reported on stderr and measured over, a
    /// file that cannot be written is reported and the measurement still used, and a device
    /// whose copies fail gets the default for its links (and the file is not written, so the
    /// next start measures again). A machine without devices has nothing to measure or cache.
    pub(crate) fn load_or_measure(nodes: &[Arc<MemoryNode>], dir: Option<&Path>, force: bool) -> BusModel {
        let Some(dir) = dir else {
            return measure(nodes, Plan::QUICK).0;
        };
        if nodes.len() <= 1 {
            return measure(nodes, Plan::QUICK).0;
        }
        let name = format!("{:016x}.bus", machine_key(nodes));
        let path = dir.join(&name);
        // Whether the one warning about an untrusted directory or file was printed.
        let mut warned = false;
        if !force {
            let read = PrivateDir::open(dir).and_then(|d| d.read(&name));
            match read.map(|b| b.map(String::from_utf8)) {
                Ok(Some(Ok(text))) => match parse(&text, nodes) {
                    Ok(model) => return model,
                    Err(why) => eprintln!("weft: ignoring bus model file {}: {why}", path.display()),
                },
                Ok(Some(Err(_))) => eprintln!("weft: ignoring bus model file {}: not UTF-8 text", path.display()),
                Ok(None) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    warned = fsutil::is_untrusted(&e);
                    eprintln!("weft: ignoring bus model file {}: {e}", path.display());
                }
            }
        }
        let (model, complete) = measure(nodes, Plan::FULL);
        if complete
            && let Err(e) = PrivateDir::create(dir).and_then(|d| d.write_atomic(&name, model.to_file_text().as_bytes()))
            && !(warned && fsutil::is_untrusted(&e))
        {
            eprintln!("weft: cannot write bus model file {}: {e}", path.display());
        }
        model
    }

    /// The cached measurement for `nodes` in `dir`, if there is a usable one; measures
    /// nothing and writes nothing.
    fn cached(nodes: &[Arc<MemoryNode>], dir: &Path) -> Option<Result<BusModel, String>> {
        let name = format!("{:016x}.bus", machine_key(nodes));
        let path = dir.join(&name);
        match PrivateDir::open(dir).and_then(|d| d.read(&name)) {
            Ok(Some(bytes)) => Some(
                String::from_utf8(bytes)
                    .map_err(|_| "not UTF-8 text".to_string())
                    .and_then(|text| parse(&text, nodes))
                    .map_err(|why| format!("{}: {why}", path.display())),
            ),
            Ok(None) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(format!("{}: {e}", path.display()))),
        }
    }

    /// The hops a transfer takes: none within a node, one between host memory and a
    /// device, two (through host memory) between devices. A node out of range (a caller's
    /// bug) costs the default rather than nothing.
    fn hops(&self, src: usize, dst: usize) -> [Option<Link>; 2] {
        let up = |d: usize| self.up.get(d).copied().unwrap_or(Link::DEFAULT);
        let down = |d: usize| self.down.get(d).copied().unwrap_or(Link::DEFAULT);
        match (src, dst) {
            _ if src == dst => [None, None],
            (0, d) => [Some(up(d)), None],
            (s, 0) => [Some(down(s)), None],
            (s, d) => [Some(down(s)), Some(up(d))],
        }
    }

    /// Expected time to move `bytes` from node `src` to node `dst`, µs: 0 within a node,
    /// latency + bytes / bandwidth per hop. Always `latency_us + bytes / bandwidth_mb_s`.
    pub(crate) fn transfer_us(&self, src: usize, dst: usize, bytes: usize) -> f64 {
        self.hops(src, dst).iter().flatten().map(|l| l.time_us(bytes)).sum()
    }

    /// Latency from `src` to `dst`, µs (the hops' sum; 0 within a node).
    pub(crate) fn latency_us(&self, src: usize, dst: usize) -> f64 {
        self.hops(src, dst).iter().flatten().map(|l| l.latency_us).sum()
    }

    /// Effective bandwidth from `src` to `dst`, MB/s: the hops in series (`1 / Σ 1/bw`);
    /// infinite within a node.
    pub(crate) fn bandwidth_mb_s(&self, src: usize, dst: usize) -> f64 {
        let inverse: f64 = self.hops(src, dst).iter().flatten().map(|l| 1.0 / l.bandwidth_mb_s).sum();
        if inverse == 0.0 { f64::INFINITY } else { 1.0 / inverse }
    }

    /// A table of latency and bandwidth for every ordered pair of distinct nodes (for
    /// `WEFT_STATS` and the docs).
    pub(crate) fn report(&self) -> String {
        let n = self.up.len();
        let mut s = String::from("bus model (device to device goes through host memory):\n");
        for (i, label) in self.labels.iter().enumerate() {
            let label = if label.is_empty() { "(unmeasured)" } else { label };
            let _ = writeln!(s, "  node {i}: {label}");
        }
        let _ = writeln!(s, "  {:>4} {:>4} {:>12} {:>14}", "src", "dst", "latency_us", "bandwidth_MB/s");
        for src in 0..n {
            for dst in (0..n).filter(|&d| d != src) {
                let via = if src != 0 && dst != 0 { "  (via host)" } else { "" };
                let _ = writeln!(s, "  {src:>4} {dst:>4} {:>12.3} {:>14.1}{via}", self.latency_us(src, dst), self.bandwidth_mb_s(src, dst));
            }
        }
        s
    }

    /// The cache file's text: header, one line per node, one per measured link.
    fn to_file_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        s.push_str("# Weft bus model: host<->device links measured on this machine; device to device\n");
        s.push_str("# goes through host memory. Measure again with WEFT_BUS_CALIBRATE=1.\n");
        s.push_str("# node <index> <kind> <name>\n");
        for (i, label) in self.labels.iter().enumerate() {
            let _ = writeln!(s, "node {i} {label}");
        }
        s.push_str("# link <src> <dst> <latency_us> <bandwidth_MB/s>\n");
        for d in 1..self.up.len() {
            for (src, dst, l) in [(0, d, self.up[d]), (d, 0, self.down[d])] {
                let _ = writeln!(s, "link {src} {dst} {:.3} {:.3}", l.latency_us, l.bandwidth_mb_s);
            }
        }
        s
    }
}

/// The bus model cached in `dir` (`$WEFT_HOME/bus`) for these memory nodes, as the table
/// `WEFT_STATS` prints (latency and bandwidth of every ordered pair of nodes), for display
/// (`weft machine`). `None` when nothing is cached for this machine's nodes (a machine
/// without devices has nothing to cache); `Err` says why a cached file cannot be used.
/// Measures nothing and writes nothing.
pub fn cached_report(nodes: &[Arc<MemoryNode>], dir: &Path) -> Option<Result<String, String>> {
    if nodes.len() <= 1 {
        return None;
    }
    BusModel::cached(nodes, dir).map(|m| m.map(|m| m.report()))
}

/// A node's line in the file and the report: its device's kind and name, the name made to
/// fit on one line.
fn label(node: &MemoryNode) -> String {
    let name: String = node.device.name().chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!("{} {}", node.device.kind(), name.trim())
}

/// The cache file's key: FNV-1a over each node's device kind and name, in order (lengths
/// included, so that no two lists run together into the same bytes).
fn machine_key(nodes: &[Arc<MemoryNode>]) -> u64 {
    let mut h = Fnv::default();
    h.write_u64(nodes.len() as u64);
    for n in nodes {
        let kind = n.device.kind().to_string();
        let name = n.device.name();
        h.write_u64(kind.len() as u64);
        h.write(kind.as_bytes());
        h.write_u64(name.len() as u64);
        h.write(name.as_bytes());
    }
    h.finish()
}

/// Read a cache file written for `nodes`; why not, when it cannot be used.
fn parse(text: &str, nodes: &[Arc<MemoryNode>]) -> Result<BusModel, String> {
    let mut lines = text.lines().map(str::trim).enumerate().filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    match lines.next() {
        Some((_, HEADER)) => {}
        Some((_, l)) if l.starts_with("weft-bus ") => return Err(format!("unsupported version `{l}` (expected `{HEADER}`)")),
        _ => return Err(format!("not a bus model file (no `{HEADER}` header)")),
    }
    let n = nodes.len();
    let labels: Vec<String> = nodes.iter().map(|n| label(n)).collect();
    let mut seen_nodes = 0;
    let mut up: Vec<Option<Link>> = vec![None; n];
    let mut down: Vec<Option<Link>> = vec![None; n];
    for (i, line) in lines {
        let at = i + 1;
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "node" => {
                let (index, label) = rest.split_once(' ').ok_or(format!("line {at}: `node` needs an index, kind and name"))?;
                let index: usize = index.parse().map_err(|_| format!("line {at}: bad node index `{index}`"))?;
                if index != seen_nodes {
                    return Err(format!("line {at}: node {index} out of order (expected node {seen_nodes})"));
                }
                match labels.get(index) {
                    Some(want) if want == label.trim() => seen_nodes += 1,
                    Some(want) => return Err(format!("written for other nodes (node {index} is `{}` there, `{want}` here)", label.trim())),
                    None => return Err(format!("written for other nodes (more than this machine's {n})")),
                }
            }
            "link" => {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let [src, dst, lat, bw] = f[..] else {
                    return Err(format!("line {at}: `link` needs src, dst, latency and bandwidth"));
                };
                let (Ok(src), Ok(dst)) = (src.parse::<usize>(), dst.parse::<usize>()) else {
                    return Err(format!("line {at}: bad node index"));
                };
                let (Ok(latency_us), Ok(bandwidth_mb_s)) = (lat.parse::<f64>(), bw.parse::<f64>()) else {
                    return Err(format!("line {at}: bad number"));
                };
                let link = Link { latency_us, bandwidth_mb_s };
                if !link.is_sane() {
                    return Err(format!("line {at}: latency must be finite and >= 0, bandwidth finite and > 0"));
                }
                let slot = match (src, dst) {
                    (0, d) if d > 0 && d < n => &mut up[d],
                    (s, 0) if s > 0 && s < n => &mut down[s],
                    _ => return Err(format!("line {at}: no measured link {src} -> {dst} on this machine")),
                };
                if slot.replace(link).is_some() {
                    return Err(format!("line {at}: link {src} -> {dst} given twice"));
                }
            }
            _ => return Err(format!("line {at}: unknown line `{word}`")),
        }
    }
    if seen_nodes != n {
        return Err(format!("written for other nodes ({seen_nodes} nodes there, {n} here)"));
    }
    let mut model = BusModel::unmeasured(n);
    model.labels = labels;
    for d in 1..n {
        let (Some(u), Some(w)) = (up[d], down[d]) else {
            return Err(format!("the links between host memory and node {d} are missing"));
        };
        (model.up[d], model.down[d]) = (u, w);
    }
    Ok(model)
}

/// Measure every host<->device link; whether every one was measured (a failed device keeps
/// the default and the result should not be cached).
///
/// The devices share `plan.total`: each direction gets at most an equal share of what is
/// left (time a fast device leaves unused goes to the next ones), and at least the floor
/// ([`MIN_LAT_REPS`] latency copies, one bandwidth copy). Once `total` is spent, a device
/// with the kind and name of one measured already takes its links instead of its floor
/// (machines with many devices have many identical ones), so the time beyond `total` is
/// bounded by the floors of devices unlike any other.
fn measure(nodes: &[Arc<MemoryNode>], plan: Plan) -> (BusModel, bool) {
    let n = nodes.len();
    let mut model = BusModel::unmeasured(n);
    model.labels = nodes.iter().map(|n| label(n)).collect();
    let mut measured = vec![false; n];
    let mut complete = true;
    let start = Instant::now();
    // One device at a time: the model is of an idle bus.
    for (d, node) in nodes.iter().enumerate().skip(1) {
        let left = plan.total.saturating_sub(start.elapsed());
        if left.is_zero()
            && let Some(twin) = (1..d).find(|&e| measured[e] && model.labels[e] == model.labels[d])
        {
            (model.up[d], model.down[d], measured[d]) = (model.up[twin], model.down[twin], true);
            continue;
        }
        let kind_plan = plan.for_kind(node.device.kind());
        // Two directions for each device not measured yet, this one included.
        let share = left / (2 * (n - d)).try_into().unwrap_or(u32::MAX);
        match measure_device(&*node.device, Plan { budget: kind_plan.budget.min(share), ..kind_plan }) {
            Ok((up, down)) => (model.up[d], model.down[d], measured[d]) = (up, down, true),
            Err(why) => {
                complete = false;
                eprintln!("weft: bus model: measuring {} (node {d}) failed: {why}; assuming 10 µs and 1 GB/s", model.labels[d]);
            }
        }
    }
    (model, complete)
}

/// A host buffer and a buffer of one device, the same size, for measurement copies.
/// Invariant: while a copy on them may still be in flight, neither is freed (`leak`).
struct Scratch<'a> {
    device: &'a dyn Device,
    host: Vec<u8>,
    buf: Option<Buffer>,
}

impl Scratch<'_> {
    /// Copy `len` bytes (from offset 0) one way and wait; how long it took.
    fn copy(&mut self, to_device: bool, len: usize) -> Result<Duration, String> {
        // `None` only after `leak`, whose error ends the measurement: no copy comes after it.
        let buf = self.buf.ok_or("the device was given up on")?;
        debug_assert!(len <= self.host.len() && len <= buf.len);
        let host = Endpoint::Host(self.host.as_mut_ptr());
        let dev = Endpoint::Device(buf, 0);
        let (src, dst) = if to_device { (host, dev) } else { (dev, host) };
        let start = Instant::now();
        // SAFETY: `host` is this scratch's own vector and `buf` came from `device.alloc`;
        // both hold at least `len` bytes (the rectangle is `len` contiguous bytes at offset
        // 0). Nobody else sees either, and neither is read, written or freed until the
        // completion has fired: we wait for it below, and if it does not fire in time the
        // scratch is leaked (`leak`) instead of dropped.
        let done = unsafe { self.device.copy(src, dst, Rect::linear(len)) }.map_err(|e| e.to_string())?;
        if !done.wait_timeout(COPY_TIMEOUT) {
            self.leak();
            return Err(format!("a {len}-byte copy did not complete in {} s", COPY_TIMEOUT.as_secs()));
        }
        let took = start.elapsed();
        done.wait().map_err(|e| e.to_string())?;
        Ok(took)
    }

    /// Give up on the buffers: a copy may still use them.
    fn leak(&mut self) {
        self.buf = None;
        std::mem::forget(std::mem::take(&mut self.host));
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            self.device.free(b);
        }
    }
}

/// Measure host → device and device → host: (up, down).
fn measure_device(device: &dyn Device, plan: Plan) -> Result<(Link, Link), String> {
    // A device short of memory still gets measured, with smaller copies.
    let mut len = plan.bw_bytes;
    let buf = loop {
        match device.alloc(len) {
            Ok(b) => break b,
            Err(e) if len <= 64 << 10 => return Err(e.to_string()),
            Err(_) => len /= 4,
        }
    };
    // Written, not just zeroed: untouched pages would all read as the one zero page.
    let mut s = Scratch { device, host: vec![0x5a; len], buf: Some(buf) };
    // A first copy faults the device buffer's pages in (host allocations are lazy) and
    // wakes up whatever the device's copy path sleeps on; it is not timed.
    s.copy(true, len)?;
    let up = measure_direction(&mut s, true, len, plan)?;
    let down = measure_direction(&mut s, false, len, plan)?;
    Ok((up, down))
}

fn measure_direction(s: &mut Scratch<'_>, to_device: bool, len: usize, plan: Plan) -> Result<Link, String> {
    let start = Instant::now();
    // Latency: a quarter of the budget at most, but the floor.
    let mut lat = Vec::with_capacity(plan.lat_reps);
    while lat.len() < plan.lat_reps.max(MIN_LAT_REPS) && (lat.len() < MIN_LAT_REPS || start.elapsed() < plan.budget / 4) {
        lat.push(s.copy(to_device, plan.lat_bytes)?.as_secs_f64() * 1e6);
    }
    // Bandwidth: what remains. The small copy's latency is taken off each large copy's time,
    // so that latency + bytes / bandwidth predicts the large copy.
    let latency_us = median(&mut lat);
    let mut rates = Vec::with_capacity(plan.bw_reps);
    while rates.len() < plan.bw_reps.max(1) && (rates.is_empty() || start.elapsed() < plan.budget) {
        let us = s.copy(to_device, len)?.as_secs_f64() * 1e6;
        // At least a tenth of the copy's time is transfer: a latency sample that happened
        // to be slow must not make the bandwidth absurd.
        rates.push(len as f64 / (us - latency_us).max(us / 10.0).max(1e-3));
    }
    // The best rate, not the median: other work on the machine only ever slows a copy down
    // (a helper thread of a split host copy waiting a scheduler tick on a busy core makes a
    // 4 MiB copy look like 1 GB/s), and the model is of an idle bus.
    let best = rates.iter().copied().fold(0.0, f64::max);
    let link = Link { latency_us, bandwidth_mb_s: best };
    if link.is_sane() { Ok(link) } else { Err(format!("measured nonsense ({link:?})")) }
}

/// The median of a non-empty sample (the lower middle for an even count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use weft_vendors::host::HostDevice;
    use weft_vendors::null::NullDevice;
    use weft_vendors::{Completion, DeviceError};

    /// Host memory and `k` null devices, as `Runtime` builds them.
    fn nodes(k: usize) -> Vec<Arc<MemoryNode>> {
        let mut v = vec![Arc::new(MemoryNode::new(0, Arc::new(HostDevice), None))];
        for i in 1..=k {
            v.push(Arc::new(MemoryNode::new(i, Arc::new(NullDevice::new(i - 1)), None)));
        }
        v
    }

    /// A directory under the system's temporary one, removed when dropped.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("weft-bus-{tag}-{}-{k}", std::process::id()));
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn file_of(dir: &Path, nodes: &[Arc<MemoryNode>]) -> PathBuf {
        dir.join(format!("{:016x}.bus", machine_key(nodes)))
    }

    /// Replace the bandwidth of `link src dst` in a cache file by `bw`.
    fn tamper(path: &Path, src: usize, dst: usize, bw: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        let prefix = format!("link {src} {dst} ");
        let mut found = false;
        let out: Vec<String> = text
            .lines()
            .map(|l| match l.strip_prefix(&prefix) {
                Some(rest) => {
                    found = true;
                    format!("{prefix}{} {bw}", rest.split_whitespace().next().unwrap())
                }
                None => l.to_string(),
            })
            .collect();
        assert!(found, "no `{prefix}` line in\n{text}");
        std::fs::write(path, out.join("\n") + "\n").unwrap();
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    fn assert_measured(m: &BusModel, k: usize) {
        for d in 1..=k {
            for (s, t) in [(0, d), (d, 0)] {
                let (lat, bw) = (m.latency_us(s, t), m.bandwidth_mb_s(s, t));
                assert!(lat.is_finite() && lat > 0.0, "latency {s}->{t}: {lat}");
                assert!(bw.is_finite() && bw > 0.0, "bandwidth {s}->{t}: {bw}");
            }
        }
    }

    #[test]
    fn measures_host_and_two_null_devices() {
        let nodes = nodes(2);
        let start = Instant::now();
        let m = BusModel::load_or_measure(&nodes, None, false);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(2), "measuring took {took:?}");
        assert_measured(&m, 2);
        let sizes = [0usize, 1, 8, 4096, 1 << 20, 64 << 20, 1 << 30];
        for (s, t) in [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)] {
            let times: Vec<f64> = sizes.iter().map(|&b| m.transfer_us(s, t, b)).collect();
            assert!(times.windows(2).all(|w| w[0] < w[1]), "{s}->{t} not increasing in bytes: {times:?}");
            for &b in &sizes {
                let want = m.latency_us(s, t) + b as f64 / m.bandwidth_mb_s(s, t);
                assert!(close(m.transfer_us(s, t, b), want), "{s}->{t}, {b} bytes: not latency + bytes/bandwidth");
            }
        }
        for i in 0..3 {
            assert_eq!(m.transfer_us(i, i, 1 << 20), 0.0);
            assert_eq!(m.latency_us(i, i), 0.0);
        }
        for b in sizes {
            assert!(close(m.transfer_us(1, 2, b), m.transfer_us(1, 0, b) + m.transfer_us(0, 2, b)), "1->2 is not 1->0 + 0->2");
            assert!(close(m.transfer_us(2, 1, b), m.transfer_us(2, 0, b) + m.transfer_us(0, 1, b)), "2->1 is not 2->0 + 0->1");
        }
        eprintln!("measured in {took:?}:\n{}", m.report());
    }

    /// A device over host memory whose copies touch nothing and end as `copy` says: after
    /// a time (a slow link), or failed.
    struct Fake {
        name: &'static str,
        kind: DeviceKind,
        copy: fn(Rect) -> Result<(), DeviceError>,
    }

    impl Device for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn kind(&self) -> DeviceKind {
            self.kind
        }
        fn memory_size(&self) -> Option<usize> {
            None
        }
        fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
            HostDevice.alloc(len)
        }
        fn free(&self, buf: Buffer) {
            HostDevice.free(buf)
        }
        fn host_ptr(&self, _: Buffer) -> Option<*mut u8> {
            None
        }
        unsafe fn copy(&self, _: Endpoint, _: Endpoint, r: Rect) -> Result<Completion, DeviceError> {
            let c = Completion::new();
            c.complete((self.copy)(r));
            Ok(c)
        }
    }

    /// Copies take 20 µs plus 1 ns a byte (1 GB/s): a slow link, that the full plan
    /// measures for its whole 150 ms a direction.
    fn slow(name: &'static str) -> Fake {
        let copy = |r: Rect| {
            std::thread::sleep(Duration::from_micros(20) + Duration::from_nanos(r.bytes() as u64));
            Ok(())
        };
        Fake { name, kind: DeviceKind::OpenCl, copy }
    }

    fn slow_nodes(names: &[&'static str]) -> Vec<Arc<MemoryNode>> {
        let mut v = vec![Arc::new(MemoryNode::new(0, Arc::new(HostDevice), None))];
        for (i, &name) in names.iter().enumerate() {
            v.push(Arc::new(MemoryNode::new(i + 1, Arc::new(slow(name)), None)));
        }
        v
    }

    /// The cached (full) measurement of many slow devices stays under the 2 s (each
    /// alone takes about 0.3 s: 16 of them took 4.7 s before they shared one budget), and
    /// every link is still measured, close to the simulated 20 µs and 1 GB/s. A requirement,
    /// not a benchmark: the bound is the issue's.
    #[test]
    fn many_devices_are_measured_within_the_overall_budget() {
        let names: Vec<&'static str> = (0..16).map(|i| &*format!("slow{i}").leak()).collect();
        let nodes = slow_nodes(&names);
        let start = Instant::now();
        let (m, complete) = measure(&nodes, Plan::FULL);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(2), "measuring 16 devices took {took:?}");
        assert!(complete);
        assert_measured(&m, 16);
        for d in 1..=16 {
            let bw = m.bandwidth_mb_s(0, d);
            assert!((500.0..1100.0).contains(&bw), "node {d}: {bw} MB/s");
        }
    }

    /// Past the overall budget, a device like one measured already (same kind and name)
    /// takes its links; one unlike any still gets the floor.
    #[test]
    fn past_the_budget_identical_devices_share_a_measurement() {
        let mut nodes = vec![Arc::new(MemoryNode::new(0, Arc::new(HostDevice), None))];
        for i in 1..=3 {
            nodes.push(Arc::new(MemoryNode::new(i, Arc::new(NullDevice::new(0)), None)));
        }
        nodes.push(Arc::new(MemoryNode::new(4, Arc::new(NullDevice::new(1)), None)));
        let (m, complete) = measure(&nodes, Plan { total: Duration::ZERO, ..Plan::FULL });
        assert!(complete);
        assert_measured(&m, 4);
        for d in 2..=3 {
            assert_eq!((m.up[d], m.down[d]), (m.up[1], m.down[1]), "node {d} reuses node 1");
        }
        assert_ne!(m.up[4], m.up[1], "node 4 (another device) was measured");
    }

    #[test]
    fn unmeasured_is_the_conservative_default() {
        let m = BusModel::unmeasured(3);
        assert_eq!(m.latency_us(0, 1), 10.0);
        assert_eq!(m.bandwidth_mb_s(2, 0), 1000.0);
        assert_eq!(m.transfer_us(0, 1, 1_000_000), 1010.0);
        assert_eq!(m.transfer_us(1, 2, 1_000_000), 2020.0, "device to device is two hops");
        assert_eq!(m.bandwidth_mb_s(1, 2), 500.0);
        assert_eq!(m.transfer_us(2, 2, 1_000_000), 0.0);
        assert_eq!(m.bandwidth_mb_s(1, 1), f64::INFINITY);
        // A node out of range is not free.
        assert_eq!(m.transfer_us(0, 7, 0), 10.0);
        fn send_sync<T: Send + Sync>() {}
        send_sync::<BusModel>();
    }

    #[test]
    fn report_lists_every_ordered_pair() {
        let m = BusModel::load_or_measure(&nodes(2), None, false);
        let r = m.report();
        assert!(r.contains("node 1: null null0") && r.contains("node 2: null null1"), "{r}");
        let rows: Vec<&str> = r.lines().filter(|l| l.split_whitespace().count() >= 4 && l.trim().starts_with(char::is_numeric)).collect();
        assert_eq!(rows.len(), 6, "3 nodes, 6 ordered pairs:\n{r}");
        assert_eq!(rows.iter().filter(|l| l.contains("via host")).count(), 2, "{r}");
    }

    #[test]
    fn cache_is_written_then_read_then_measured_again_when_forced() {
        let dir = TempDir::new("cache");
        let bus = dir.0.join("bus"); // created by the first call
        let nodes = nodes(2);
        let path = file_of(&bus, &nodes);
        let start = Instant::now();
        let first = BusModel::load_or_measure(&nodes, Some(&bus), false);
        let took = start.elapsed();
        assert!(took < Duration::from_secs(2), "the full measurement took {took:?}");
        assert_measured(&first, 2);
        eprintln!("full measurement in {took:?}:\n{}", first.report());
        let text = std::fs::read_to_string(&path).expect("the first call writes the file");
        assert!(text.starts_with(HEADER), "{text}");
        assert!(parse(&text, &nodes).is_ok());
        let leftovers: Vec<_> = std::fs::read_dir(&bus).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 1, "only the model file: {leftovers:?}");

        tamper(&path, 0, 2, "4242.5");
        let second = BusModel::load_or_measure(&nodes, Some(&bus), false);
        assert_eq!(second.bandwidth_mb_s(0, 2), 4242.5, "the second call reads the file");
        // What it did not tamper came back as written (3 decimals).
        assert!((second.latency_us(1, 0) - first.latency_us(1, 0)).abs() <= 0.0005);

        let third = BusModel::load_or_measure(&nodes, Some(&bus), true);
        assert_ne!(third.bandwidth_mb_s(0, 2), 4242.5, "forced: measured again");
        assert_measured(&third, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("4242.5"), "forced: the file is rewritten:\n{text}");
    }

    #[test]
    fn corrupt_cache_is_measured_over_and_rewritten() {
        let dir = TempDir::new("corrupt");
        let nodes = nodes(1);
        let path = file_of(&dir.0, &nodes);
        let valid = BusModel::load_or_measure(&nodes, Some(&dir.0), false).to_file_text();
        let mut corrupt = vec![
            "garbage\n".to_string(),
            String::new(),
            "weft-bus 99\n".to_string(),
            valid.replace("link 0 1 ", "link 0 1 x"),
            valid.replace("link 1 0 ", "link 1 0 -"),
            valid.lines().filter(|l| !l.starts_with("link 1 0")).map(|l| format!("{l}\n")).collect(),
            format!("{valid}link 0 1 1 1\n"),
            format!("{valid}link 0 5 1 1\n"),
            format!("{valid}unknown 1\n"),
        ];
        let without_0_1: String = valid.lines().filter(|l| !l.starts_with("link 0 1 ")).map(|l| format!("{l}\n")).collect();
        corrupt.push(format!("{without_0_1}link 0 1 1 inf\n"));
        corrupt.push(format!("{without_0_1}link 0 1 1 0\n"));
        assert!(parse(&format!("{without_0_1}link 0 1 1 2.5\n"), &nodes).is_ok(), "the cases above fail for their one fault");
        for bad in corrupt {
            std::fs::write(&path, &bad).unwrap();
            assert!(parse(&bad, &nodes).is_err(), "accepted:\n{bad}");
            let m = BusModel::load_or_measure(&nodes, Some(&dir.0), false);
            assert_measured(&m, 1);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(parse(&text, &nodes).is_ok(), "not rewritten valid after:\n{bad}\ngot:\n{text}");
        }
        // Not UTF-8.
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        assert_measured(&BusModel::load_or_measure(&nodes, Some(&dir.0), false), 1);
        assert!(parse(&std::fs::read_to_string(&path).unwrap(), &nodes).is_ok());
    }

    #[test]
    fn cache_for_other_nodes_is_not_used() {
        let dir = TempDir::new("foreign");
        let one = nodes(1);
        let two = nodes(2);
        assert_ne!(machine_key(&one), machine_key(&two));
        assert_eq!(machine_key(&two), machine_key(&nodes(2)), "the key is stable");
        BusModel::load_or_measure(&one, Some(&dir.0), false);
        let path_one = file_of(&dir.0, &one);
        tamper(&path_one, 0, 1, "4242.5");
        assert_eq!(BusModel::load_or_measure(&one, Some(&dir.0), false).bandwidth_mb_s(0, 1), 4242.5);
        // The one-device file under the two-device machine's name: refused, measured over.
        let path_two = file_of(&dir.0, &two);
        std::fs::copy(&path_one, &path_two).unwrap();
        let m = BusModel::load_or_measure(&two, Some(&dir.0), false);
        assert_ne!(m.bandwidth_mb_s(0, 1), 4242.5, "a file for another node list was used");
        assert_measured(&m, 2);
        let text = std::fs::read_to_string(&path_two).unwrap();
        assert!(parse(&text, &two).is_ok() && text.contains("node 2 null null1"), "{text}");
        // Same count, other names (null0 where null1 was): refused too.
        let swapped = vec![two[0].clone(), two[2].clone(), two[1].clone()];
        assert!(parse(&text, &swapped).is_err());
    }

    /// A bus file others could have written is measured over and replaced by a private one;
    /// a directory others can write is neither read nor written.
    #[test]
    fn cache_others_can_write_is_measured_over() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let dir = TempDir::new("trust");
        let bus = dir.0.join("bus");
        let nodes = nodes(1);
        let path = file_of(&bus, &nodes);
        BusModel::load_or_measure(&nodes, Some(&bus), false);
        assert_eq!((mode(&bus), mode(&path)), (0o700, 0o600), "created private");
        tamper(&path, 0, 1, "4242.5");
        assert_eq!(BusModel::load_or_measure(&nodes, Some(&bus), false).bandwidth_mb_s(0, 1), 4242.5);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o646)).unwrap();
        let m = BusModel::load_or_measure(&nodes, Some(&bus), false);
        assert_ne!(m.bandwidth_mb_s(0, 1), 4242.5, "a file others could write was used");
        assert_measured(&m, 1);
        assert_eq!(mode(&path), 0o600, "replaced by a private file");

        tamper(&path, 0, 1, "4242.5");
        std::fs::set_permissions(&bus, std::fs::Permissions::from_mode(0o777)).unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        let m = BusModel::load_or_measure(&nodes, Some(&bus), false);
        assert_ne!(m.bandwidth_mb_s(0, 1), 4242.5, "a file in a directory others can write was used");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "written into a directory others can write");
    }

    #[test]
    fn unwritable_cache_still_gives_a_measured_model() {
        let dir = TempDir::new("unwritable");
        // The cache directory's place is taken by a file: it cannot be created.
        let bus = dir.0.join("bus");
        std::fs::write(&bus, "not a directory").unwrap();
        let m = BusModel::load_or_measure(&nodes(1), Some(&bus), false);
        assert_measured(&m, 1);
        assert_eq!(std::fs::read_to_string(&bus).unwrap(), "not a directory");
    }

    #[test]
    fn failing_device_gets_the_default_and_is_not_cached() {
        let dir = TempDir::new("broken");
        let mut nodes = nodes(1);
        nodes.push(Arc::new(MemoryNode::new(
            2,
            Arc::new(Fake { name: "broken", kind: DeviceKind::Null, copy: |_| Err(DeviceError::Lost("test".into())) }),
            None,
        )));
        let m = BusModel::load_or_measure(&nodes, Some(&dir.0), false);
        assert_measured(&m, 1);
        assert_eq!((m.latency_us(0, 2), m.bandwidth_mb_s(2, 0)), (10.0, 1000.0));
        assert!(!file_of(&dir.0, &nodes).exists(), "a partial measurement was cached");
    }
}
