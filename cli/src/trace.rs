//! Reading a `WEFT_TRACE` file (Chrome trace-event JSON, as `core/src/trace.rs` writes it and
//! `docs/tracing.md` describes it) and summing it up.
//!
//! What is read: process 1's tracks (one per worker, `thread_name` metadata) with their task
//! slices (`"cat":"task"`, and OpenMP explicit tasks' `"cat":"omp_task"`), OpenMP region
//! shares and constructs (`"cat":"omp"`) and idle spans (`"cat":"idle"`); process 2's tracks (one or more
//! per ordered pair of memory nodes) with their copies (`"cat":"transfer"`, args `bytes`,
//! `src`, `dst`); and flow events (`"ph":"s"` / `"f"`, matched by `id`), which bind to the
//! task slice enclosing them and are the dependencies the critical path follows. Counter
//! events and anything else are skipped, so a newer trace with more in it still reads.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

/// What a slice on a worker's track is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A core task, or an OpenMP explicit task's body (named `omp task`).
    Task,
    /// A front end's span of work that is not a task: an OpenMP parallel region's share run
    /// on the worker (`"cat":"omp"`, `omp parallel`). Busy time, not counted as a task.
    Region,
    /// An OpenMP construct inside a region share (`"cat":"omp"`: `omp for`, `omp single`,
    /// `omp barrier`, ...). Busy time inside the share, not counted as a task.
    Construct,
    /// The worker spun looking for work.
    Idle,
    /// The worker slept waiting for work.
    Sleep,
}

#[derive(Clone, Debug)]
pub struct Slice {
    /// µs since the runtime started.
    pub start: f64,
    pub dur: f64,
    /// The codelet's name (tasks), `idle` or `sleep`.
    pub name: String,
    pub kind: Kind,
}

impl Slice {
    pub fn end(&self) -> f64 {
        self.start + self.dur
    }
}

/// A worker's track.
#[derive(Clone, Debug)]
pub struct Worker {
    /// `cpu 0`, `null 1`, `opencl 0 (device)`.
    pub name: String,
    tid: u64,
    sort: i64,
    pub slices: Vec<Slice>,
}

impl Worker {
    /// `cpu`, `null`, `opencl`, `cuda`: the first word of the track's name.
    pub fn kind(&self) -> &str {
        self.name.split(' ').next().unwrap_or("")
    }
}

/// One copy between memory nodes.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub start: f64,
    pub dur: f64,
    pub bytes: u64,
    pub src: usize,
    pub dst: usize,
    /// Index in [`Trace::lanes`] of the track it is drawn on.
    pub lane: usize,
}

/// A track of process 2: copies of one ordered pair of nodes that do not overlap.
#[derive(Clone, Debug)]
pub struct Lane {
    /// `node 0 (host) -> node 1 (null0)`, with ` #2` for a pair's further lanes.
    pub name: String,
    tid: u64,
}

#[derive(Debug, Default)]
pub struct Trace {
    /// In the trace's worker order.
    pub workers: Vec<Worker>,
    pub lanes: Vec<Lane>,
    pub transfers: Vec<Transfer>,
    /// Memory nodes' names by id, from the transfer tracks' names (`host`, `null0`, ...).
    pub nodes: BTreeMap<usize, String>,
    /// Dependencies (from flow events): (worker, slice index) of the earlier task, then of
    /// the later one.
    pub deps: Vec<((usize, usize), (usize, usize))>,
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Trace::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a trace file's text: an object with `traceEvents`, or a bare array of events.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let events = match &v {
            Value::Array(a) => a,
            Value::Object(o) => o.get("traceEvents").and_then(Value::as_array).ok_or("no `traceEvents` array: not a trace-event file")?,
            _ => return Err("not a trace-event file".into()),
        };
        let mut t = Trace::default();
        let mut workers: HashMap<u64, usize> = HashMap::new();
        let mut lanes: HashMap<u64, usize> = HashMap::new();
        let worker = |t: &mut Trace, workers: &mut HashMap<u64, usize>, tid: u64| {
            *workers.entry(tid).or_insert_with(|| {
                t.workers.push(Worker { name: format!("thread {tid}"), tid, sort: tid as i64, slices: Vec::new() });
                t.workers.len() - 1
            })
        };
        let lane = |t: &mut Trace, lanes: &mut HashMap<u64, usize>, tid: u64| {
            *lanes.entry(tid).or_insert_with(|| {
                t.lanes.push(Lane { name: format!("link {tid}"), tid });
                t.lanes.len() - 1
            })
        };
        // Flow events: (id, phase, pid, tid, ts).
        let mut flows: Vec<(String, char, u64, u64, f64)> = Vec::new();
        for e in events {
            let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
            let pid = e.get("pid").and_then(Value::as_u64).unwrap_or(0);
            let tid = e.get("tid").and_then(Value::as_u64).unwrap_or(0);
            let name = e.get("name").and_then(Value::as_str).unwrap_or("");
            let args = e.get("args");
            let arg = |k: &str| args.and_then(|a| a.get(k));
            match (ph, pid) {
                ("M", 1 | 2) if name == "thread_name" || name == "thread_sort_index" => {
                    let i = if pid == 1 { worker(&mut t, &mut workers, tid) } else { lane(&mut t, &mut lanes, tid) };
                    if name == "thread_name" {
                        let n = arg("name").and_then(Value::as_str).unwrap_or("").to_string();
                        if pid == 1 {
                            t.workers[i].name = n;
                        } else {
                            note_nodes(&mut t.nodes, &n);
                            t.lanes[i].name = n;
                        }
                    } else if pid == 1 {
                        t.workers[i].sort = arg("sort_index").and_then(Value::as_i64).unwrap_or(tid as i64);
                    }
                }
                ("X", 1) => {
                    let (Some(start), Some(dur)) = (e.get("ts").and_then(num), e.get("dur").and_then(num)) else { continue };
                    let cat = e.get("cat").and_then(Value::as_str).unwrap_or("task");
                    let kind = match (cat, name) {
                        ("idle", "sleep") => Kind::Sleep,
                        ("idle", _) => Kind::Idle,
                        ("omp", "omp parallel") => Kind::Region,
                        ("omp", _) => Kind::Construct,
                        _ => Kind::Task,
                    };
                    let w = worker(&mut t, &mut workers, tid);
                    t.workers[w].slices.push(Slice { start, dur, name: name.to_string(), kind });
                }
                ("X", 2) => {
                    let (Some(start), Some(dur)) = (e.get("ts").and_then(num), e.get("dur").and_then(num)) else { continue };
                    let l = lane(&mut t, &mut lanes, tid);
                    let bytes = arg("bytes").and_then(Value::as_u64).unwrap_or(0);
                    let node = |k: &str| arg(k).and_then(Value::as_u64).map(|n| n as usize);
                    let (src, dst) = match (node("src"), node("dst")) {
                        (Some(s), Some(d)) => (s, d),
                        _ => parse_copy_name(name).unwrap_or((0, 0)),
                    };
                    t.transfers.push(Transfer { start, dur, bytes, src, dst, lane: l });
                }
                ("s" | "t" | "f", _) => {
                    let id = match e.get("id") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => continue,
                    };
                    let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
                    let Some(ts) = e.get("ts").and_then(num) else { continue };
                    flows.push((format!("{cat}/{id}"), ph.chars().next().unwrap_or('s'), pid, tid, ts));
                }
                _ => {}
            }
        }
        // Workers in the order the runtime numbered them; their lookup table moves along.
        let mut order: Vec<usize> = (0..t.workers.len()).collect();
        order.sort_by_key(|&i| (t.workers[i].sort, t.workers[i].tid));
        let mut new_index = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let mut ws: Vec<Option<Worker>> = std::mem::take(&mut t.workers).into_iter().map(Some).collect();
        t.workers = order.iter().map(|&i| ws[i].take().expect("each worker once")).collect();
        for w in &mut t.workers {
            w.slices.sort_by(|a, b| a.start.total_cmp(&b.start));
        }
        let by_tid: HashMap<u64, usize> = workers.iter().map(|(&tid, &i)| (tid, new_index[i])).collect();
        t.lanes.sort_by_key(|l| l.tid);
        let lane_of: HashMap<u64, usize> = t.lanes.iter().enumerate().map(|(i, l)| (l.tid, i)).collect();
        let old_lane: HashMap<usize, u64> = lanes.iter().map(|(&tid, &i)| (i, tid)).collect();
        for x in &mut t.transfers {
            x.lane = lane_of[&old_lane[&x.lane]];
        }
        t.deps = bind_flows(&t, &by_tid, &flows);
        Ok(t)
    }

    /// Every task slice: (worker index, slice).
    pub fn tasks(&self) -> impl Iterator<Item = (usize, &Slice)> {
        self.workers.iter().enumerate().flat_map(|(w, wk)| wk.slices.iter().filter(|s| s.kind == Kind::Task).map(move |s| (w, s)))
    }

    /// Every OpenMP region share: (worker index, slice).
    pub fn regions(&self) -> impl Iterator<Item = (usize, &Slice)> {
        self.workers.iter().enumerate().flat_map(|(w, wk)| wk.slices.iter().filter(|s| s.kind == Kind::Region).map(move |s| (w, s)))
    }

    /// Every OpenMP construct's slice inside region shares: (worker index, slice).
    pub fn constructs(&self) -> impl Iterator<Item = (usize, &Slice)> {
        self.workers.iter().enumerate().flat_map(|(w, wk)| wk.slices.iter().filter(|s| s.kind == Kind::Construct).map(move |s| (w, s)))
    }

    /// From the first task, region share, construct or transfer's start to the last one's
    /// end, µs; `None` if the trace holds none.
    pub fn span(&self) -> Option<(f64, f64)> {
        let ends = self
            .tasks()
            .chain(self.regions())
            .chain(self.constructs())
            .map(|(_, s)| (s.start, s.end()))
            .chain(self.transfers.iter().map(|x| (x.start, x.start + x.dur)));
        ends.fold(None, |acc, (a, b)| match acc {
            None => Some((a, b)),
            Some((lo, hi)) => Some((f64::min(lo, a), f64::max(hi, b))),
        })
    }

    /// The memory node worker `w` computes in: host memory (0) for CPU workers, else the
    /// node whose name is the worker's device (the k-th such node for the k-th worker naming
    /// that device); `None` when the trace does not say (no transfer ever touched it).
    pub fn node_of(&self, w: usize) -> Option<usize> {
        let name = &self.workers[w].name;
        let dev = match (self.workers[w].kind(), name.split_once(" (")) {
            ("cpu", _) => return Some(0),
            (_, Some((_, d))) => d.strip_suffix(')').unwrap_or(d).to_string(),
            // `null 0` computes in node `null0`.
            (_, None) => name.replace(' ', ""),
        };
        let k = self.workers[..w].iter().filter(|o| o.name.split_once(" (").map(|(_, d)| d.trim_end_matches(')')) == Some(&dev)).count();
        self.nodes.iter().filter(|(_, n)| **n == dev).nth(k).map(|(&id, _)| id)
    }

    /// Critical path through the recorded dependencies: its length in µs (sum of its tasks'
    /// durations) and its task count; `None` without dependencies.
    pub fn critical_path(&self) -> Option<(f64, usize)> {
        if self.deps.is_empty() {
            return None;
        }
        let mut preds: HashMap<(usize, usize), Vec<(usize, usize)>> = HashMap::new();
        for &(a, b) in &self.deps {
            preds.entry(b).or_default().push(a);
        }
        let slice = |k: (usize, usize)| &self.workers[k.0].slices[k.1];
        let mut tasks: Vec<(usize, usize)> = self
            .workers
            .iter()
            .enumerate()
            .flat_map(|(w, wk)| wk.slices.iter().enumerate().filter(|(_, s)| s.kind == Kind::Task).map(move |(i, _)| (w, i)))
            .collect();
        tasks.sort_by(|a, b| slice(*a).start.total_cmp(&slice(*b).start));
        let mut best: HashMap<(usize, usize), (f64, usize)> = HashMap::new();
        let mut top = (0.0, 0);
        for k in tasks {
            let s = slice(k);
            let mut b = (0.0, 0);
            // Only predecessors that started earlier count: the order of start times is a
            // topological order of any real dependency graph, and it keeps bad input acyclic.
            for p in preds.get(&k).into_iter().flatten() {
                if slice(*p).start < s.start
                    && let Some(&v) = best.get(p)
                    && v.0 > b.0
                {
                    b = v;
                }
            }
            let v = (b.0 + s.dur, b.1 + 1);
            if v.0 > top.0 {
                top = v;
            }
            best.insert(k, v);
        }
        Some(top)
    }
}

/// Records the node names a transfer track's name gives: `node 0 (host) -> node 1 (null0)`.
fn note_nodes(nodes: &mut BTreeMap<usize, String>, track: &str) {
    let track = track.split(" #").next().unwrap_or(track);
    for part in track.split(" -> ") {
        if let Some(rest) = part.strip_prefix("node ") {
            let (id, name) = match rest.split_once(" (") {
                Some((id, n)) => (id, n.strip_suffix(')').unwrap_or(n).to_string()),
                None => (rest, String::new()),
            };
            if let Ok(id) = id.parse() {
                nodes.entry(id).or_insert(name);
            }
        }
    }
}

/// `copy 0 -> 1` → (0, 1).
fn parse_copy_name(name: &str) -> Option<(usize, usize)> {
    let (a, b) = name.strip_prefix("copy ")?.split_once(" -> ")?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Flow events bound to the task slices that enclose them, as (earlier, later) pairs.
fn bind_flows(t: &Trace, by_tid: &HashMap<u64, usize>, flows: &[(String, char, u64, u64, f64)]) -> Vec<((usize, usize), (usize, usize))> {
    let enclosing = |pid: u64, tid: u64, ts: f64| -> Option<(usize, usize)> {
        if pid != 1 {
            return None;
        }
        let w = *by_tid.get(&tid)?;
        let s = &t.workers[w].slices;
        // The last task starting at or before `ts` that has not ended by then.
        s.iter().enumerate().rev().find(|(_, x)| x.kind == Kind::Task && x.start <= ts && ts <= x.end()).map(|(i, _)| (w, i))
    };
    let mut open: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut deps = Vec::new();
    for (id, ph, pid, tid, ts) in flows {
        let Some(at) = enclosing(*pid, *tid, *ts) else { continue };
        match ph {
            's' => {
                open.insert(id, at);
            }
            _ => {
                if let Some(&from) = open.get(id.as_str())
                    && from != at
                {
                    deps.push((from, at));
                }
                if *ph == 't' {
                    open.insert(id, at);
                }
            }
        }
    }
    deps
}

/// A duration in µs, in the unit that suits it.
pub fn dur(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.1} us")
    } else if us < 1e6 {
        format!("{:.3} ms", us / 1e3)
    } else {
        format!("{:.3} s", us / 1e6)
    }
}

/// Bytes in the binary unit that suits them.
pub fn bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", units[u]) }
}

/// Length of the union of intervals (start, end), µs.
fn union_len(mut iv: Vec<(f64, f64)>) -> f64 {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in iv {
        match cur {
            Some((s, e)) if a <= e => cur = Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((s, e)) = cur {
        total += e - s;
    }
    total
}

/// The text of `weft trace summary`.
pub fn summary(t: &Trace) -> String {
    let mut o = String::new();
    let ntasks = t.tasks().count();
    let nomp = t.tasks().filter(|(_, s)| s.name == "omp task").count();
    let of_them = if nomp > 0 { format!(" ({nomp} of them OpenMP tasks)") } else { String::new() };
    let _ = writeln!(o, "{} workers, {ntasks} tasks{of_them}, {} transfers", t.workers.len(), t.transfers.len());
    let nregions = t.regions().count();
    if nregions > 0 {
        let _ = writeln!(
            o,
            "{nregions} OpenMP region shares (busy time on their threads, not tasks), {} in all",
            dur(t.regions().map(|(_, s)| s.dur).sum())
        );
    }
    let Some((lo, hi)) = t.span() else {
        o.push_str("the trace holds no task and no transfer\n");
        return o;
    };
    let makespan = hi - lo;
    let _ = writeln!(o, "makespan {} (first task or transfer starts at {}, the last ends at {})", dur(makespan), dur(lo), dur(hi));
    match t.critical_path() {
        Some((len, n)) => {
            let _ = writeln!(
                o,
                "critical path {} over {n} tasks ({:.0}% of the makespan; durations of its tasks, waits left out)",
                dur(len),
                100.0 * len / makespan.max(f64::MIN_POSITIVE)
            );
        }
        None => o.push_str("critical path: unknown (the trace records no dependencies between tasks)\n"),
    }

    let pct = |x: f64| format!("{:.1}%", 100.0 * x / makespan.max(f64::MIN_POSITIVE));
    o.push_str("\nper worker (shares of the makespan; transfer: copies to or from the worker's memory node in flight)\n");
    let wn = t.workers.iter().map(|w| w.name.len()).max().unwrap_or(6).max(6);
    let _ =
        writeln!(o, "  {:<wn$} {:>7} {:>12} {:>7} {:>7} {:>7} {:>9}", "worker", "tasks", "busy", "busy%", "idle%", "sleep%", "transfer%");
    for (i, w) in t.workers.iter().enumerate() {
        // Spans clipped to the makespan: a worker sleeps from the runtime's start to its
        // first task, which may be long before (a bus calibration, the program's setup).
        let sum =
            |k: Kind| 0.0 + w.slices.iter().filter(|s| s.kind == k).map(|s| (s.end().min(hi) - s.start.max(lo)).max(0.0)).sum::<f64>();
        let n = w.slices.iter().filter(|s| s.kind == Kind::Task).count();
        // The union: tasks run inside region shares and constructs (and OpenMP tasks inside
        // other tasks, at a taskwait), which a sum would count twice.
        let busy = union_len(
            w.slices
                .iter()
                .filter(|s| matches!(s.kind, Kind::Task | Kind::Region | Kind::Construct))
                .map(|s| (s.start.max(lo), s.end().min(hi)))
                .filter(|(a, b)| b > a)
                .collect(),
        );
        let xfer = match t.node_of(i) {
            // Host memory is an end of every copy: its share says nothing about one CPU worker.
            Some(0) | None => "-".to_string(),
            Some(node) => {
                pct(union_len(t.transfers.iter().filter(|x| x.src == node || x.dst == node).map(|x| (x.start, x.start + x.dur)).collect()))
            }
        };
        let _ = writeln!(
            o,
            "  {:<wn$} {n:>7} {:>12} {:>7} {:>7} {:>7} {xfer:>9}",
            w.name,
            dur(busy),
            pct(busy),
            pct(sum(Kind::Idle)),
            pct(sum(Kind::Sleep))
        );
    }

    // Per codelet: count, total, mean, and where they ran (per kind of worker).
    struct Row {
        n: usize,
        total: f64,
        min: f64,
        max: f64,
        kinds: BTreeMap<String, usize>,
    }
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    for (w, s) in t.tasks() {
        let r = rows.entry(&s.name).or_insert(Row { n: 0, total: 0.0, min: f64::INFINITY, max: 0.0, kinds: BTreeMap::new() });
        r.n += 1;
        r.total += s.dur;
        r.min = r.min.min(s.dur);
        r.max = r.max.max(s.dur);
        *r.kinds.entry(t.workers[w].kind().to_string()).or_default() += 1;
    }
    o.push_str("\nper codelet (durations: data acquisition to release, as the slices show; OpenMP tasks as `omp task`,\n  whose durations include the tasks they ran at a taskwait)\n");
    let cn = rows.keys().map(|k| k.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(o, "  {:<cn$} {:>7} {:>12} {:>12} {:>12} {:>12}  ran on", "codelet", "count", "mean", "min", "max", "total");
    for (name, r) in &rows {
        let kinds: Vec<String> = r.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            o,
            "  {name:<cn$} {:>7} {:>12} {:>12} {:>12} {:>12}  {}",
            r.n,
            dur(r.total / r.n as f64),
            dur(r.min),
            dur(r.max),
            dur(r.total),
            kinds.join(", ")
        );
    }

    // OpenMP constructs: busy time inside region shares (already in the workers' busy
    // time), by construct.
    let mut cons: BTreeMap<&str, (usize, f64)> = BTreeMap::new();
    for (_, s) in t.constructs() {
        let c = cons.entry(&s.name).or_default();
        c.0 += 1;
        c.1 += s.dur;
    }
    if !cons.is_empty() {
        o.push_str("\nper OpenMP construct (inside region shares: part of their threads' busy time, not tasks)\n");
        let cn = cons.keys().map(|k| k.len()).max().unwrap_or(9).max(9);
        let _ = writeln!(o, "  {:<cn$} {:>7} {:>12} {:>12}", "construct", "count", "mean", "total");
        for (name, (n, total)) in &cons {
            let _ = writeln!(o, "  {name:<cn$} {n:>7} {:>12} {:>12}", dur(total / *n as f64), dur(*total));
        }
    }

    o.push_str("\nper link (ordered pair of memory nodes)\n");
    if t.transfers.is_empty() {
        o.push_str("  no transfers\n");
    } else {
        let mut links: BTreeMap<(usize, usize), (usize, u64, f64)> = BTreeMap::new();
        for x in &t.transfers {
            let l = links.entry((x.src, x.dst)).or_default();
            l.0 += 1;
            l.1 += x.bytes;
            l.2 += x.dur;
        }
        let node = |n: usize| match t.nodes.get(&n) {
            Some(name) if !name.is_empty() => format!("node {n} ({name})"),
            _ => format!("node {n}"),
        };
        let names: Vec<String> = links.keys().map(|&(a, b)| format!("{} -> {}", node(a), node(b))).collect();
        let ln = names.iter().map(String::len).max().unwrap_or(4).max(4);
        let _ = writeln!(o, "  {:<ln$} {:>7} {:>12} {:>14} {:>12}", "link", "copies", "bytes", "", "busy");
        for ((_, (n, b, busy)), name) in links.iter().zip(&names) {
            let _ = writeln!(o, "  {name:<ln$} {n:>7} {:>12} {:>14} {:>12}", bytes(*b), format!("({b} B)"), dur(*busy));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_intervals() {
        assert_eq!(union_len(vec![(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]), 4.0);
        assert_eq!(union_len(vec![]), 0.0);
    }

    #[test]
    fn node_names_come_from_transfer_tracks() {
        let mut n = BTreeMap::new();
        note_nodes(&mut n, "node 0 (host) -> node 2 (pthread-x (y)) #2");
        assert_eq!(n[&0], "host");
        assert_eq!(n[&2], "pthread-x (y)");
        assert_eq!(parse_copy_name("copy 1 -> 0"), Some((1, 0)));
    }

    #[test]
    fn units() {
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(dur(1500.0), "1.500 ms");
    }
}
