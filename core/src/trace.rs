//! Execution traces (`WEFT_TRACE=path.json`): a Chrome trace-event file that Perfetto
//! (<https://ui.perfetto.dev>) and `chrome://tracing` open. See `docs/tracing.md`.
//!
//! **Owns**: the events recorded while the runtime runs (tasks and idle spans per worker,
//! copies between memory nodes), their buffers, and writing them out as JSON.
//! **Does not own**: when events happen. The runtime, the workers and the coherence code
//! record them; the runtime writes the file at shutdown (`Runtime` drop) and the C API's
//! exit hook writes that of the front ends' shared runtime, which is never shut down.
//!
//! Cost: off, an event site loads one field (`RuntimeInner::trace`, an `Option`; for copies
//! `MemoryNode::trace`, a `OnceLock`) and reads no clock. On, a task costs two reads of the
//! trace's clock ([`Tracer::now`]: the TSC where the kernel keeps time with it; module
//! `clock`) and a 32-byte record in its worker's own log ([`WorkerLog`]), which only that
//! worker's thread appends to: no lock and no read-modify-write, the readings stored as read
//! and converted when the file is written (from the clock's anchors, logged as marks when
//! they change). Tasks of threads that are not workers, a device's kernels, a front end's
//! spans and idle spans go to one locked buffer per worker ([`ThreadBuf`]), and threads that
//! are not workers share one more; copies (µs at least) share a list of their own. Names are
//! interned per buffer and handle ids go to a flat side log; records go to chunks that are
//! never moved. An idle span is one relaxed store, closed by the worker's next task.
//! Nothing is written before shutdown (or exit). Measurements: `bench/RESULTS.md`,
//! "Tracing cost".
//!
//! Invariant: every timestamp recorded is a duration since the runtime's epoch (the clock
//! of `WEFT_STATS`), so the tracks line up: TSC readings are converted before they are
//! stored.

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Arc, Mutex, lock};
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A worker's track in the trace.
pub(crate) struct Track {
    /// "cpu 0", "null 1", "opencl 0 (pthread-...)".
    pub name: String,
}

/// What a task slice says about its task (`Tracer::task`).
#[derive(Clone, Copy)]
pub(crate) struct TaskEvent<'a> {
    pub task: u64,
    /// The codelet's unique id (names are interned by it) and name; id 0 for tasks without
    /// a codelet, named by kind ("reduction", "empty").
    pub codelet: u64,
    pub name: &'a str,
    /// The task's footprint in its codelet's model, if it has one (or a policy computed it).
    pub footprint: Option<u32>,
    /// Calibrated prediction of the codelet's model for this worker, µs.
    pub predicted_us: Option<f64>,
    /// The implementation's (or the device kernel's) duration, µs.
    pub measured_us: Option<f64>,
}

/// A front end's span of work on the calling thread, outside core's tasks
/// ([`crate::Runtime::trace_front_end`]): an OpenMP team member's share of a parallel
/// region, a worksharing construct, a barrier wait, an explicit task's body.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrontSpan {
    /// "omp parallel", "omp for", "omp task": a static string, interned by its address.
    pub name: &'static str,
    /// The span is a task's body (`"cat":"omp_task"`, counted as a task), not busy time of a
    /// construct (`"cat":"omp"`).
    pub task: bool,
    /// The task had depend clauses.
    pub depend: bool,
    /// The core task ordering it (a task with depend clauses): the flow arrows of its
    /// dependencies then bind to this slice.
    pub core_task: Option<u64>,
    /// Where in the source the construct is ("file.c:12 (main)"), when the ABI says.
    pub loc: Option<&'static str>,
    /// How long the thread waited to enter the construct before the span (a `critical`
    /// section's lock, an `ordered` block's turn): the slice's `wait_us`.
    pub wait: Option<std::time::Duration>,
}

/// Idle spans shorter than this are not recorded: a worker that finds work on its second
/// look would add one per task.
const MIN_IDLE_NS: u64 = 5_000;

/// When a task's slice starts and ends.
#[derive(Clone, Copy)]
pub(crate) enum Stamps {
    /// Readings of [`Tracer::now`] (a task a CPU worker ran).
    Ticks(u64, u64),
    /// Instants (a device's kernel, timed by its driver).
    Instants(Instant, Instant),
}

#[derive(Clone, Copy)]
enum What {
    Task {
        task: u64,
        footprint: Option<u32>,
        predicted_us: f32,
        measured_us: f32,
        handles: (u32, u32),
    },
    /// Spun waiting for work, and slept too if `slept`.
    Idle {
        slept: bool,
    },
    /// Work a front end ran on the thread outside core's tasks ([`FrontSpan`]), named.
    Span {
        task: bool,
        depend: bool,
        /// The core task's id, 0 for none (ids start at 1).
        core_task: u64,
        /// Index into `ThreadBuf::names` of its location, `u32::MAX` for none.
        loc: u32,
        /// [`FrontSpan::wait`] in ns, `u64::MAX` for none.
        wait_ns: u64,
    },
}

#[derive(Clone, Copy)]
struct Slice {
    start: u64,
    end: u64,
    /// Index into `ThreadBuf::names` (tasks only).
    name: u32,
    what: What,
}

#[derive(Default)]
struct ThreadBuf {
    /// The codelet of the last task recorded, and its name's index.
    last: Option<(u64, u32)>,
    /// The last pairing of a [`Tracer::now`] reading with the time since the epoch (see
    /// [`clock::Anchor`]): this thread's readings convert from it.
    anchor: Option<clock::Anchor>,
    /// In chunks of [`CHUNK`]: a push never moves what was recorded (a growing `Vec` copies
    /// it all at each doubling, a fifth of an event's cost over a million tasks).
    slices: Vec<Vec<Slice>>,
    names: Vec<Box<str>>,
    by_codelet: HashMap<(u64, usize), u32>,
    /// Front ends' static strings (span names, locations) by address and length: a lookup
    /// without comparing the text.
    by_addr: HashMap<(usize, usize), u32>,
    handles: Vec<u64>,
}

/// Slices per chunk of `ThreadBuf::slices` (about 200 KiB).
const CHUNK: usize = 4096;

impl ThreadBuf {
    /// Record the pending idle span `p` (`PerThread::idle`), ending at `end`, if long enough.
    fn close_idle(&mut self, p: u64, end: u64) {
        let (start, slept) = ((p >> 1) - 1, p & 1 == 1);
        if idle_kept(p, end) {
            self.push(Slice { start, end, name: 0, what: What::Idle { slept } });
        }
    }

    // Inlined: out of line, the 64-byte record went through a `memcpy` call (a fifth of a
    // record's instructions under callgrind).
    #[inline(always)]
    fn push(&mut self, s: Slice) {
        match self.slices.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(s),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(s);
                self.slices.push(c);
            }
        }
    }

    /// Index of `name` (of codelet `id`) in `names`, interned on first use.
    fn intern(&mut self, id: u64, name: &str) -> u32 {
        if let Some((last, i)) = self.last
            && last == id
            && id != 0
        {
            return i;
        }
        let i = self.intern_slow(id, name);
        self.last = Some((id, i));
        i
    }

    /// Index of the static string `s` in `names`, interned on first use.
    fn intern_static(&mut self, s: &'static str) -> u32 {
        let key = (s.as_ptr() as usize, s.len());
        if let Some(&i) = self.by_addr.get(&key) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.by_addr.insert(key, i);
        i
    }

    fn intern_slow(&mut self, id: u64, name: &str) -> u32 {
        // Keyed by codelet id, and by the name's length as a cheap check for tasks without a
        // codelet (id 0), whose names differ.
        if let Some(&i) = self.by_codelet.get(&(id, name.len()))
            && *self.names[i as usize] == *name
        {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.into());
        self.by_codelet.insert((id, name.len()), i);
        i
    }
}

struct Transfer {
    start: u64,
    end: u64,
    src: usize,
    dst: usize,
    bytes: usize,
    handle: u64,
}

/// A task a worker recorded in its own log ([`WorkerLog`]): 32 bytes, with the clock's
/// readings as read (converted at write time, from the anchor marks before them).
#[derive(Clone, Copy)]
struct TaskRec {
    /// Readings of [`Tracer::now`]; for an anchor mark, its reading and its ns.
    start: u64,
    end: u64,
    /// The task's id; for an anchor mark, its `mult`.
    task: u64,
    /// Index into [`WorkerLog::names`]; [`ANCHOR`] for an anchor mark.
    name: u32,
    /// Index into the log's `args` of the task's arguments (a header word, the model's
    /// figures present, the handle ids: [`TaskRec::args_of`]), [`NO_ARGS`] for none; for an
    /// anchor mark, whether readings are nanoseconds already (1) or ticks (0).
    args: u32,
}

const ANCHOR: u32 = u32::MAX;
const NO_ARGS: u32 = u32::MAX;
/// Header bits of a task's arguments: its handle count in the low 32 bits, then which of
/// footprint, prediction and measurement follow (in that order, before the handles).
const HAS_FOOTPRINT: u64 = 1 << 32;
const HAS_PREDICTED: u64 = 1 << 33;
const HAS_MEASURED: u64 = 1 << 34;

/// What only a worker's own thread touches when it records a task ([`log::Owned`]).
struct WorkerState {
    recs: log::Writer<TaskRec>,
    args: log::Writer<u64>,
    /// As `ThreadBuf::anchor`; each new one is also a mark in `recs`.
    anchor: Option<clock::Anchor>,
    /// The codelet of the last task recorded, and its name's index.
    last: Option<(u64, u32)>,
    /// Names' indices by codelet id, with the text (tasks without a codelet share id 0).
    by_codelet: HashMap<u64, Vec<(Box<str>, u32)>>,
}

/// A worker's own record of the tasks it ran: appended by the worker's thread alone, with no
/// lock nor read-modify-write (`log`); read when the trace is written. Other events of the
/// worker (idle spans, a front end's spans, a device's kernels) go to its locked
/// `ThreadBuf`, as do the tasks of a thread that is not the log's owner.
struct WorkerLog {
    own: log::Owned<WorkerState>,
    recs: Arc<log::Shared<TaskRec>>,
    args: Arc<log::Shared<u64>>,
    /// Task names, by the index records hold: locked when a name is first seen, and when
    /// the trace is written.
    names: Mutex<Vec<Box<str>>>,
}

impl Default for WorkerLog {
    fn default() -> WorkerLog {
        let (recs, rw) = log::new();
        let (args, aw) = log::new();
        let st = WorkerState { recs: rw, args: aw, anchor: None, last: None, by_codelet: HashMap::new() };
        WorkerLog { own: log::Owned::new(st), recs, args, names: Mutex::new(Vec::new()) }
    }
}

impl WorkerLog {
    /// The tasks recorded so far as slices (times converted, names from `base` on, handle ids
    /// appended to `handles`).
    fn append_to(&self, base: u32, slices: &mut Vec<Slice>, handles: &mut Vec<u64>) {
        // Records first: the arguments a record points to were published before it.
        let recs = self.recs.read();
        let args = self.args.read();
        let mut anchor = None;
        for r in recs {
            if r.name == ANCHOR {
                anchor = Some(clock::Anchor::from_parts(r.start, r.end, r.task, r.args == 1));
                continue;
            }
            // (A mark precedes every record: the first record of a worker makes one.)
            let Some(a) = anchor else { continue };
            let (start, end) = (a.ns(r.start), a.ns(r.end));
            let (mut footprint, mut predicted_us, mut measured_us, mut hs) = (None, f32::NAN, f32::NAN, (handles.len() as u32, 0));
            if let Some(&head) = args.get(r.args as usize) {
                let mut rest = args[r.args as usize + 1..].iter().copied();
                if head & HAS_FOOTPRINT != 0 {
                    footprint = rest.next().map(|f| f as u32);
                }
                if head & HAS_PREDICTED != 0 {
                    predicted_us = rest.next().map_or(f32::NAN, |p| f64::from_bits(p) as f32);
                }
                if head & HAS_MEASURED != 0 {
                    measured_us = rest.next().map_or(f32::NAN, |m| f64::from_bits(m) as f32);
                }
                let before = handles.len();
                handles.extend(rest.take(head as u32 as usize));
                hs.1 = (handles.len() - before) as u32;
            }
            let what = What::Task { task: r.task, footprint, predicted_us, measured_us, handles: hs };
            slices.push(Slice { start, end: end.max(start), name: base + r.name, what });
        }
    }
}

impl WorkerState {
    /// Index of `name` (of codelet `id`) in the log's names, added on first use.
    #[inline]
    fn intern(&mut self, id: u64, name: &str, names: &Mutex<Vec<Box<str>>>) -> u32 {
        if let Some((last, i)) = self.last
            && last == id
            && id != 0
        {
            return i;
        }
        let i = self.intern_slow(id, name, names);
        self.last = Some((id, i));
        i
    }

    #[cold]
    fn intern_slow(&mut self, id: u64, name: &str, names: &Mutex<Vec<Box<str>>>) -> u32 {
        let known = self.by_codelet.entry(id).or_default();
        if let Some(&(_, i)) = known.iter().find(|(n, _)| **n == *name) {
            return i;
        }
        let mut names = lock(names);
        let i = names.len() as u32;
        names.push(name.into());
        known.push((name.into(), i));
        i
    }
}

/// Whether the pending idle span `p` (`PerThread::idle`) ending at `end` is long enough to
/// record.
#[inline]
fn idle_kept(p: u64, end: u64) -> bool {
    end >= (p >> 1) - 1 + MIN_IDLE_NS
}

impl PerThread {
    /// The pending idle span (0 for none), cleared: a load, and a store only if one is
    /// pending (no read-modify-write). Only the worker's own thread calls this (see `idle`).
    #[inline]
    fn take_idle(&self) -> u64 {
        let p = self.idle.load(Ordering::Relaxed);
        if p != 0 {
            self.idle.store(0, Ordering::Relaxed);
        }
        p
    }
}

/// One thread's events.
#[derive(Default)]
struct PerThread {
    /// A worker's tasks (unused by the buffer of threads that are not workers).
    log: WorkerLog,
    buf: Mutex<ThreadBuf>,
    /// The idle span the worker is in or just left, not recorded yet: 0 for none, else
    /// `(start_ns + 1) << 1 | slept`. Its end is the start of the worker's next slice
    /// (`Tracer::task`), so an idle span costs no clock read, and one too short to keep
    /// costs no lock nor memory. Relaxed: only the worker's own thread loads and stores it
    /// (`idle` and `task` run on the thread of the worker they name); `to_json` reads it
    /// after the workers were joined, or at exit as a best effort.
    idle: AtomicU64,
}

/// The events of one runtime, and where they go.
pub(crate) struct Tracer {
    path: PathBuf,
    epoch: Instant,
    clock: clock::Clock,
    tracks: Vec<Track>,
    /// Per worker, then one for every thread that is not a worker.
    bufs: Vec<CachePadded<PerThread>>,
    transfers: Mutex<Vec<Transfer>>,
    /// Dependencies (earlier task id, later task id), recorded where submission links them.
    deps: Mutex<Vec<(u64, u64)>>,
    /// The same, from the one thread that owns `dep_writer` (the first to record one; an
    /// application's submitting thread, usually): no lock ([`log`]).
    dep_log: Arc<log::Shared<(u64, u64)>>,
    dep_writer: log::Owned<log::Writer<(u64, u64)>>,
    /// Memory nodes' names ("host", device names), by node id.
    nodes: Vec<String>,
}

impl Tracer {
    pub(crate) fn new(path: PathBuf, epoch: Instant, tracks: Vec<Track>, nodes: Vec<String>) -> Tracer {
        let bufs = (0..=tracks.len()).map(|_| CachePadded::new(PerThread::default())).collect();
        let clock = clock::Clock::new(epoch);
        let (dep_log, dep_writer) = log::new();
        Tracer {
            path,
            epoch,
            clock,
            tracks,
            bufs,
            transfers: Mutex::new(Vec::new()),
            deps: Mutex::new(Vec::new()),
            dep_log,
            dep_writer: log::Owned::new(dep_writer),
            nodes,
        }
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn buf(&self, worker: Option<usize>) -> &PerThread {
        let last = self.bufs.len() - 1;
        &self.bufs[worker.map_or(last, |w| w.min(last))]
    }

    /// A reading of the trace's clock, for [`Stamps::Ticks`]: the TSC where the kernel
    /// keeps time with it (two to four times cheaper than `Instant::now` on the development
    /// VM; `bench/RESULTS.md`, "Tracing cost"), else nanoseconds since the epoch.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// A task ran on `worker` (`None`: a thread that is not a worker) from one stamp to the
    /// other and accessed `handles`.
    // Inlined into its one caller (`RuntimeInner::trace_task`, cold and out of line itself):
    // a call less per task.
    #[inline]
    pub(crate) fn task(&self, worker: Option<usize>, at: Stamps, e: &TaskEvent<'_>, handles: impl ExactSizeIterator<Item = u64>) {
        let pt = self.buf(worker);
        let mut handles = handles;
        if let (Some(w), Stamps::Ticks(start, end)) = (worker, at)
            && w < self.tracks.len()
            && pt.log.own.with(|st| self.task_own(pt, st, start, end, e, &mut handles)).is_some()
        {
            return;
        }
        let mut b = lock(&pt.buf);
        let (start, end) = match at {
            Stamps::Instants(s, e) => (self.ns(s), self.ns(e)),
            Stamps::Ticks(s, e) => {
                let a = clock::Anchor::current(&mut b.anchor, &self.clock, e);
                (a.ns(s), a.ns(e))
            }
        };
        let p = pt.take_idle();
        if p != 0 {
            b.close_idle(p, start);
        }
        let name = b.intern(e.codelet, e.name);
        let first = b.handles.len() as u32;
        b.handles.extend(handles);
        let n = b.handles.len() as u32 - first;
        let f = |x: Option<f64>| x.map_or(f32::NAN, |x| x as f32);
        let what = What::Task {
            task: e.task,
            footprint: e.footprint,
            predicted_us: f(e.predicted_us),
            measured_us: f(e.measured_us),
            handles: (first, n),
        };
        b.push(Slice { start, end: end.max(start), name, what });
    }

    /// [`Tracer::task`] by the worker's own thread, from readings of [`Tracer::now`]: a
    /// record in its log, converted when the trace is written.
    #[inline(always)]
    fn task_own(
        &self,
        pt: &PerThread,
        st: &mut WorkerState,
        start: u64,
        end: u64,
        e: &TaskEvent<'_>,
        handles: &mut impl ExactSizeIterator<Item = u64>,
    ) {
        let a = match st.anchor {
            Some(a) if a.covers(end) => a,
            _ => {
                let a = clock::Anchor::current(&mut st.anchor, &self.clock, end);
                let (tick, ns, mult, identity) = a.parts();
                st.recs.push(TaskRec { start: tick, end: ns, task: mult, name: ANCHOR, args: u32::from(identity) });
                a
            }
        };
        let p = pt.take_idle();
        if p != 0 && idle_kept(p, a.ns(start)) {
            lock(&pt.buf).close_idle(p, a.ns(start));
        }
        let name = st.intern(e.codelet, e.name, &pt.log.names);
        let n = handles.len();
        let args = if n == 0 && e.footprint.is_none() && e.predicted_us.is_none() && e.measured_us.is_none() {
            NO_ARGS
        } else {
            let mut head = n as u64;
            head |= if e.footprint.is_some() { HAS_FOOTPRINT } else { 0 };
            head |= if e.predicted_us.is_some() { HAS_PREDICTED } else { 0 };
            head |= if e.measured_us.is_some() { HAS_MEASURED } else { 0 };
            let at = st.args.push(head);
            for v in [e.footprint.map(u64::from), e.predicted_us.map(f64::to_bits), e.measured_us.map(f64::to_bits)].into_iter().flatten() {
                st.args.push(v);
            }
            for h in handles {
                st.args.push(h);
            }
            u32::try_from(at).unwrap_or(NO_ARGS)
        };
        st.recs.push(TaskRec { start, end: end.max(start), task: e.task, name, args });
    }

    /// A front end's span of work `s` ran on `worker` (`None`: a thread that is not a
    /// worker) from `start` to `end`.
    pub(crate) fn span(&self, worker: Option<usize>, s: &FrontSpan, start: Instant, end: Instant) {
        let (start, end) = (self.ns(start), self.ns(end));
        let pt = self.buf(worker);
        let mut b = lock(&pt.buf);
        if worker.is_some() {
            let p = pt.take_idle();
            if p != 0 {
                b.close_idle(p, start);
            }
        }
        let name = b.intern_static(s.name);
        let loc = s.loc.map_or(u32::MAX, |l| b.intern_static(l));
        let wait_ns = s.wait.map_or(u64::MAX, |w| (w.as_nanos() as u64).min(u64::MAX - 1));
        let what = What::Span { task: s.task, depend: s.depend, core_task: s.core_task.unwrap_or(0), loc, wait_ns };
        b.push(Slice { start, end: end.max(start), name, what });
    }

    /// Worker `worker` (the calling thread) looked for work from `start` on, and slept if
    /// `slept`. The span ends where the worker's next slice starts (or when the trace is
    /// written): no clock read, and no lock unless an earlier span is still open.
    pub(crate) fn idle(&self, worker: usize, start: Instant, slept: bool) {
        let start = self.ns(start);
        let pt = self.buf(Some(worker));
        // A load and a store, not a swap: only this thread writes the field (`PerThread::idle`).
        let prev = pt.idle.load(Ordering::Relaxed);
        pt.idle.store(((start + 1) << 1) | u64::from(slept), Ordering::Relaxed);
        if prev != 0 {
            // Idle twice with no task between (a job ran): the first span ends here.
            lock(&pt.buf).close_idle(prev, start);
        }
    }

    /// `bytes` of handle `handle` were copied from node `src` to node `dst`, from `start` to `end`.
    pub(crate) fn transfer(&self, src: usize, dst: usize, bytes: usize, handle: u64, start: Instant, end: Instant) {
        let (start, end) = (self.ns(start), self.ns(end));
        lock(&self.transfers).push(Transfer { start, end: end.max(start), src, dst, bytes, handle });
    }

    /// Task `later` waits for task `earlier` (a dependency submission created).
    pub(crate) fn dependency(&self, earlier: u64, later: u64) {
        if self.dep_writer.with(|w| w.push((earlier, later))).is_none() {
            lock(&self.deps).push((earlier, later));
        }
    }

    /// Write everything recorded so far to the file, atomically (a temporary file beside
    /// it, renamed over it). A failure is one warning naming `WEFT_TRACE` and the path.
    pub(crate) fn write(&self) {
        if let Err(warning) = self.try_write() {
            eprintln!("{warning}");
        }
    }

    /// [`Tracer::write`], with the warning returned instead of printed.
    fn try_write(&self) -> Result<(), String> {
        write_atomic(&self.path, |f| self.write_json(&mut std::io::BufWriter::with_capacity(1 << 16, f)))
            .map_err(|e| format!("weft: WEFT_TRACE={}: cannot write the trace: {e}", self.path.display()))
    }

    /// The trace as Chrome trace-event JSON.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> String {
        let mut v = Vec::new();
        self.write_json(&mut v).expect("writing to memory");
        String::from_utf8(v).expect("valid UTF-8")
    }

    /// The trace as Chrome trace-event JSON, streamed to `out` (one event at a time: a
    /// long trace is never whole in memory as JSON).
    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        let mut ev = Emitter { out, n: 0, err: None };
        let meta = |pid: u32, tid: Option<u32>, what: &str, args: String| {
            let tid = tid.map(|t| format!(",\"tid\":{t}")).unwrap_or_default();
            format!("{{\"ph\":\"M\",\"pid\":{pid}{tid},\"name\":\"{what}\",\"args\":{args}}}")
        };
        ev.push(meta(1, None, "process_name", "{\"name\":\"weft workers\"}".into()));
        ev.push(meta(1, None, "process_sort_index", "{\"sort_index\":1}".into()));
        ev.push(meta(2, None, "process_name", "{\"name\":\"weft transfers\"}".into()));
        ev.push(meta(2, None, "process_sort_index", "{\"sort_index\":2}".into()));
        let other = self.tracks.len();
        let now = self.ns(Instant::now());
        // Where each task's slice is: (track, start, end), for the dependency arrows.
        let mut placed: HashMap<u64, (u32, u64, u64)> = HashMap::new();
        for (w, pt) in self.bufs.iter().enumerate() {
            let b = lock(&pt.buf);
            let tid = w as u32 + 1;
            if w == other && b.slices.is_empty() {
                continue;
            }
            // The worker's own log's tasks join the buffer's slices, their names after the
            // buffer's and their handles after its handles.
            let log_names = lock(&pt.log.names);
            let mut names: Vec<&str> = b.names.iter().map(|n| &**n).collect();
            let base = names.len() as u32;
            names.extend(log_names.iter().map(|n| &**n));
            let mut handles_all = b.handles.clone();
            let mut slices: Vec<Slice> = b.slices.concat();
            pt.log.append_to(base, &mut slices, &mut handles_all);
            let name = self.tracks.get(w).map_or("other threads", |t| t.name.as_str());
            ev.push(meta(1, Some(tid), "thread_name", format!("{{\"name\":{}}}", json_str(name))));
            ev.push(meta(1, Some(tid), "thread_sort_index", format!("{{\"sort_index\":{w}}}")));
            // The span a worker is idle in now (it never started another task) ends now.
            let p = pt.idle.load(Ordering::Relaxed);
            if p != 0 && now >= (p >> 1) - 1 + MIN_IDLE_NS {
                slices.push(Slice { start: (p >> 1) - 1, end: now, name: 0, what: What::Idle { slept: p & 1 == 1 } });
            }
            slices.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
            for s in &slices {
                let (name, cat, args) = match s.what {
                    What::Idle { slept } => (if slept { "sleep" } else { "idle" }, "idle", String::from("{}")),
                    What::Span { task: false, loc: u32::MAX, wait_ns: u64::MAX, .. } => (names[s.name as usize], "omp", String::from("{}")),
                    What::Span { task, depend, core_task, loc, wait_ns } => {
                        let mut a = String::from("{");
                        if task {
                            let _ = write!(a, "\"depend\":{depend}");
                            if core_task != 0 {
                                placed.insert(core_task, (tid, s.start, s.end));
                                let _ = write!(a, ",\"task\":{core_task}");
                            }
                        }
                        if loc != u32::MAX {
                            let sep = if a.len() > 1 { "," } else { "" };
                            let _ = write!(a, "{sep}\"loc\":{}", json_str(names[loc as usize]));
                        }
                        if wait_ns != u64::MAX {
                            let sep = if a.len() > 1 { "," } else { "" };
                            let _ = write!(a, "{sep}\"wait_us\":{}", us(wait_ns));
                        }
                        a.push('}');
                        (names[s.name as usize], if task { "omp_task" } else { "omp" }, a)
                    }
                    What::Task { task, footprint, predicted_us, measured_us, handles } => {
                        placed.insert(task, (tid, s.start, s.end));
                        let hs = &handles_all[handles.0 as usize..(handles.0 + handles.1) as usize];
                        let hs: Vec<String> = hs.iter().map(u64::to_string).collect();
                        let mut a = format!("{{\"task\":{task},\"handles\":[{}]", hs.join(","));
                        if let Some(fp) = footprint {
                            let _ = write!(a, ",\"footprint\":\"{fp:08x}\"");
                        }
                        if predicted_us.is_finite() {
                            let _ = write!(a, ",\"predicted_us\":{predicted_us:.3}");
                        }
                        if measured_us.is_finite() {
                            let _ = write!(a, ",\"measured_us\":{measured_us:.3}");
                        }
                        a.push('}');
                        (names[s.name as usize], "task", a)
                    }
                };
                ev.push(format!(
                    "{{\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"name\":{},\"cat\":\"{cat}\",\"ts\":{},\"dur\":{},\"args\":{args}}}",
                    json_str(name),
                    us(s.start),
                    us(s.end - s.start)
                ));
            }
        }
        // Dependencies: a flow arrow from the end of the earlier task's slice to the start of
        // the later one's (both ends inside their slices, so viewers bind them), for the
        // pairs whose two tasks both ran (an arrow id per pair).
        let mut deps = self.dep_log.read();
        deps.extend(lock(&self.deps).iter());
        for (i, &(a, b)) in deps.iter().enumerate() {
            let (Some(&(ta, sa, ea)), Some(&(tb, sb, _))) = (placed.get(&a), placed.get(&b)) else { continue };
            let from = ea.saturating_sub(1).max(sa);
            ev.push(format!(
                "{{\"ph\":\"s\",\"id\":{i},\"pid\":1,\"tid\":{ta},\"name\":\"dependency\",\"cat\":\"dep\",\"ts\":{}}}",
                us(from)
            ));
            ev.push(format!(
                "{{\"ph\":\"f\",\"bp\":\"e\",\"id\":{i},\"pid\":1,\"tid\":{tb},\"name\":\"dependency\",\"cat\":\"dep\",\"ts\":{}}}",
                us(sb)
            ));
        }
        // Transfers: a track per (source, destination) pair; copies that overlap in time
        // (issued by different threads) go to further lanes of the pair, so that no track
        // holds overlapping slices.
        let mut ts: Vec<&Transfer> = Vec::new();
        let transfers = lock(&self.transfers);
        ts.extend(transfers.iter());
        ts.sort_by_key(|t| (t.start, t.end));
        // Per (src, dst): the end of each lane's last copy, and the lane's tid.
        type Lanes = Vec<(u64, u32)>;
        let mut lanes: Vec<((usize, usize), Lanes)> = Vec::new();
        let mut totals: HashMap<(usize, usize), u64> = HashMap::new();
        let mut next_tid = 1u32;
        let node = |n: usize| self.nodes.get(n).map_or_else(|| format!("node {n}"), |d| format!("node {n} ({d})"));
        for t in ts {
            let pair = (t.src, t.dst);
            let i = match lanes.iter().position(|(p, _)| *p == pair) {
                Some(i) => i,
                None => {
                    lanes.push((pair, Vec::new()));
                    lanes.len() - 1
                }
            };
            let lane = match lanes[i].1.iter().position(|&(end, _)| end <= t.start) {
                Some(l) => l,
                None => {
                    let tid = next_tid;
                    next_tid += 1;
                    let k = lanes[i].1.len();
                    let name = format!("{} -> {}{}", node(t.src), node(t.dst), if k == 0 { String::new() } else { format!(" #{}", k + 1) });
                    ev.push(meta(2, Some(tid), "thread_name", format!("{{\"name\":{}}}", json_str(&name))));
                    ev.push(meta(2, Some(tid), "thread_sort_index", format!("{{\"sort_index\":{tid}}}")));
                    lanes[i].1.push((0, tid));
                    k
                }
            };
            let tid = lanes[i].1[lane].1;
            lanes[i].1[lane].0 = t.end;
            ev.push(format!(
                "{{\"ph\":\"X\",\"pid\":2,\"tid\":{tid},\"name\":\"copy {} -> {}\",\"cat\":\"transfer\",\"ts\":{},\"dur\":{},\"args\":{{\"bytes\":{},\"src\":{},\"dst\":{},\"handle\":{}}}}}",
                t.src,
                t.dst,
                us(t.start),
                us(t.end - t.start),
                t.bytes,
                t.src,
                t.dst,
                t.handle
            ));
            let total = totals.entry(pair).or_default();
            *total += t.bytes as u64;
            ev.push(format!(
                "{{\"ph\":\"C\",\"pid\":2,\"name\":\"bytes {} -> {}\",\"ts\":{},\"args\":{{\"bytes\":{total}}}}}",
                t.src,
                t.dst,
                us(t.end)
            ));
        }
        if let Some(e) = ev.err {
            return Err(e);
        }
        ev.out.write_all(b"\n]}\n")?;
        ev.out.flush()
    }
}

/// The trace's clock: the TSC, converted to nanoseconds since the epoch where it is
/// recorded. Unsafe code: reading the TSC (`_rdtsc`), an instruction without preconditions.
#[allow(unsafe_code)]
mod clock {
    use std::time::Instant;

    /// A reading pairs with its time since the epoch for this long (then the next task's
    /// record reads `Instant::now` once to pair anew): a reading converts with an error of
    /// the scale's (at most 1e-4 after the startup calibration) times its distance from the
    /// pair, under a microsecond.
    const REANCHOR_NS: f64 = 10e6;
    /// The startup calibration's length.
    const CALIBRATE_NS: u64 = 1_000_000;

    pub(crate) struct Clock {
        epoch: Instant,
        /// Whether readings are TSC ticks (else nanoseconds since the epoch).
        tsc: bool,
        /// The TSC at the epoch (estimated).
        tsc0: u64,
        /// Nanoseconds per tick, from the startup calibration.
        scale0: f64,
    }

    /// The kernel keeps time with the TSC: it found it invariant and synchronized across
    /// CPUs (Linux's `current_clocksource`), so readings on different CPUs compare.
    fn tsc_usable() -> bool {
        cfg!(target_arch = "x86_64")
            && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").is_ok_and(|s| s.trim() == "tsc")
    }

    #[inline]
    fn tsc() -> u64 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: RDTSC reads a counter; it has no preconditions and touches no memory.
        return unsafe { core::arch::x86_64::_rdtsc() };
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("the TSC is only used on x86_64")
    }

    /// A TSC reading and the instant it was taken at (the middle of the tightest of a few
    /// `Instant::now` brackets around it: a thread preempted between the two reads would
    /// pair them milliseconds apart).
    fn pair(epoch: Instant) -> (u64, u64) {
        let mut best = (0, 0, u64::MAX);
        for _ in 0..8 {
            let a = Instant::now();
            let t = tsc();
            let b = Instant::now();
            let width = b.duration_since(a).as_nanos() as u64;
            if width < best.2 {
                let mid = a.saturating_duration_since(epoch).as_nanos() as u64 + width / 2;
                best = (t, mid, width);
            }
            if width < 1_000 {
                break;
            }
        }
        (best.0, best.1)
    }

    impl Clock {
        pub(crate) fn new(epoch: Instant) -> Clock {
            if !tsc_usable() {
                return Clock { epoch, tsc: false, tsc0: 0, scale0: 1.0 };
            }
            // Calibrate over a millisecond, once per traced runtime.
            let (t0, n0) = pair(epoch);
            let (mut t1, mut n1) = (t0, n0);
            while n1 < n0 + CALIBRATE_NS || t1 <= t0 {
                std::hint::spin_loop();
                (t1, n1) = pair(epoch);
            }
            let scale0 = (n1 - n0) as f64 / (t1 - t0) as f64;
            Clock { epoch, tsc: true, tsc0: t0.saturating_sub((n0 as f64 / scale0) as u64), scale0 }
        }

        #[inline]
        pub(crate) fn now(&self) -> u64 {
            if self.tsc { tsc() } else { self.epoch.elapsed().as_nanos() as u64 }
        }
    }

    /// A reading and its time since the epoch, read together, and the scale to convert
    /// readings near it.
    #[derive(Clone, Copy)]
    pub(crate) struct Anchor {
        tick: u64,
        ns: u64,
        /// Nanoseconds per tick in 32.32 fixed point: a conversion is an integer multiply and shift
        /// (floating point and its saturating casts were a tenth of a record's instructions).
        mult: u64,
        /// Ticks in [`REANCHOR_NS`].
        span: u64,
        /// Readings are nanoseconds already.
        identity: bool,
    }

    impl Anchor {
        /// The anchor in `slot` if it is recent enough for `reading`, else a new one.
        #[inline]
        pub(crate) fn current(slot: &mut Option<Anchor>, c: &Clock, reading: u64) -> Anchor {
            match *slot {
                Some(a) if a.covers(reading) => a,
                _ => {
                    let a = Anchor::new(c);
                    *slot = Some(a);
                    a
                }
            }
        }

        #[cold]
        fn new(c: &Clock) -> Anchor {
            if !c.tsc {
                return Anchor { tick: 0, ns: 0, mult: 1 << 32, span: 0, identity: true };
            }
            let (tick, ns) = pair(c.epoch);
            // Over a tenth of a second since the epoch, the pair's own baseline is more
            // precise than the startup calibration.
            let span = tick.saturating_sub(c.tsc0);
            let scale = if ns > 100_000_000 && span > 0 { ns as f64 / span as f64 } else { c.scale0 };
            Anchor { tick, ns, mult: (scale * (1u64 << 32) as f64) as u64, span: (REANCHOR_NS / scale) as u64, identity: false }
        }

        /// Whether `reading` converts from this anchor (as [`Anchor::current`] decides).
        #[inline]
        pub(crate) fn covers(&self, reading: u64) -> bool {
            self.identity || (reading.wrapping_sub(self.tick) as i64) < self.span as i64
        }

        /// (reading, ns, mult, identity): what converting needs, for a mark in a log.
        pub(crate) fn parts(&self) -> (u64, u64, u64, bool) {
            (self.tick, self.ns, self.mult, self.identity)
        }

        /// The anchor of [`Anchor::parts`] (it converts only).
        pub(crate) fn from_parts(tick: u64, ns: u64, mult: u64, identity: bool) -> Anchor {
            Anchor { tick, ns, mult, span: 0, identity }
        }

        /// `reading`'s time since the epoch, ns.
        #[inline]
        pub(crate) fn ns(&self, reading: u64) -> u64 {
            if self.identity {
                return reading;
            }
            let d = ((reading.wrapping_sub(self.tick) as i64 as i128 * self.mult as i128) >> 32) as i64;
            (self.ns as i64).saturating_add(d).max(0) as u64
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn readings_convert_to_the_instants_they_were_taken_at() {
            let epoch = Instant::now();
            let c = Clock::new(epoch);
            let mut slot = None;
            for _ in 0..3 {
                let before = epoch.elapsed().as_nanos() as i64;
                let r = c.now();
                let after = epoch.elapsed().as_nanos() as i64;
                std::thread::sleep(std::time::Duration::from_millis(4));
                let a = Anchor::current(&mut slot, &c, c.now());
                let ns = a.ns(r) as i64;
                // Between the instants around it, give or take the conversion's error (under
                // a microsecond; 50 µs allowed for an anchor made while preempted).
                assert!(
                    before - 50_000 <= ns && ns <= after + 50_000,
                    "reading at {ns} ns, taken between {before} and {after} (tsc: {})",
                    c.tsc
                );
            }
        }
    }
}

/// Append-only logs that one thread writes and any thread reads, and the ownership that
/// makes one thread their writer. Unsafe code: the logs' slots are written by their writer
/// while readers read the slots published before (disjoint memory, ordered by the count's
/// release store), and [`Owned`] hands the owner's state out by `&mut` without a lock.
///
/// Why: a lock of a worker's own buffer per task (two read-modify-writes, uncontended) was
/// a sixth of what recording a task cost (`bench/RESULTS.md`, "Tracing cost", 2026-11-29
/// session 30).
#[allow(unsafe_code)]
mod log {
    use crate::sync::Arc;
    use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
    use std::cell::UnsafeCell;
    use std::mem::MaybeUninit;

    /// Slots per chunk.
    const CHUNK: usize = 4096;

    struct Chunk<T> {
        slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
        next: AtomicPtr<Chunk<T>>,
    }

    /// What readers see of a log: its chunks (never moved nor freed while it lives) and how
    /// many slots are published.
    pub(crate) struct Shared<T> {
        head: AtomicPtr<Chunk<T>>,
        len: AtomicUsize,
    }

    // SAFETY: the slots hold `Copy + Send` values; a slot is written once, by the one
    // `Writer`, before the release store of `len` that publishes it, and read only below the
    // `len` a reader acquired: no slot is read and written at once.
    unsafe impl<T: Copy + Send> Sync for Shared<T> {}
    // SAFETY: as above; the chunks are owned by the log.
    unsafe impl<T: Copy + Send> Send for Shared<T> {}

    /// The one writer of a log (made with it by [`new`]; not `Clone`).
    pub(crate) struct Writer<T> {
        log: Arc<Shared<T>>,
        tail: *mut Chunk<T>,
        n: usize,
    }

    // SAFETY: the writer may move to another thread; `tail` points into the log it holds.
    unsafe impl<T: Copy + Send> Send for Writer<T> {}

    pub(crate) fn new<T: Copy>() -> (Arc<Shared<T>>, Writer<T>) {
        let log = Arc::new(Shared { head: AtomicPtr::new(std::ptr::null_mut()), len: AtomicUsize::new(0) });
        (log.clone(), Writer { log, tail: std::ptr::null_mut(), n: 0 })
    }

    impl<T: Copy> Writer<T> {
        /// Append `v`; returns its index.
        #[inline]
        pub(crate) fn push(&mut self, v: T) -> usize {
            let i = self.n % CHUNK;
            if i == 0 {
                self.grow();
            }
            // SAFETY: `tail` is the log's last chunk (grow made it when the previous one
            // filled) and slot `i` of it is unpublished: no reader reads it.
            unsafe { (*(*self.tail).slots[i].get()).write(v) };
            self.n += 1;
            // Release: the slot's contents before a reader that acquires this count.
            self.log.len.store(self.n, Ordering::Release);
            self.n - 1
        }

        #[cold]
        fn grow(&mut self) {
            let slots = (0..CHUNK).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect();
            let c = Box::into_raw(Box::new(Chunk { slots, next: AtomicPtr::new(std::ptr::null_mut()) }));
            // Release: the chunk's initialization before a reader that follows the link
            // (it does so only for slots published after this store).
            if self.tail.is_null() {
                self.log.head.store(c, Ordering::Release);
            } else {
                // SAFETY: `tail` is the log's last chunk, alive as long as the log.
                unsafe { (*self.tail).next.store(c, Ordering::Release) };
            }
            self.tail = c;
        }
    }

    impl<T: Copy> Shared<T> {
        /// The values published so far, in order.
        pub(crate) fn read(&self) -> Vec<T> {
            // Acquire: the slots below `n`, and the links to their chunks.
            let n = self.len.load(Ordering::Acquire);
            let mut out = Vec::with_capacity(n);
            let mut c = self.head.load(Ordering::Acquire);
            for i in 0..n {
                if i > 0 && i % CHUNK == 0 {
                    // SAFETY: `c` is a chunk of the log (non-null: slot `i - 1` was in it).
                    c = unsafe { (*c).next.load(Ordering::Acquire) };
                }
                // SAFETY: slot `i` is published (`i < n`), so its chunk is linked and the
                // slot initialized; the writer never writes it again.
                out.push(unsafe { (*(*c).slots[i % CHUNK].get()).assume_init() });
            }
            out
        }
    }

    impl<T> Drop for Shared<T> {
        fn drop(&mut self) {
            let mut c = *self.head.get_mut();
            while !c.is_null() {
                // SAFETY: every chunk came from `Box::into_raw` in `grow` and is freed once,
                // here (the last owner of the log; slots hold `Copy` values, nothing to drop).
                let b = unsafe { Box::from_raw(c) };
                c = b.next.load(Ordering::Relaxed);
            }
        }
    }

    thread_local! {
        /// Its address names the calling thread (never 0; unique among live threads).
        static TAG: u8 = const { 0 };
    }

    fn thread_tag() -> usize {
        TAG.with(|t| std::ptr::from_ref(t) as usize)
    }

    /// A value only one thread ever uses: the first that asks for it.
    pub(crate) struct Owned<T> {
        /// The owner's [`thread_tag`], 0 before the first use.
        owner: AtomicUsize,
        /// The owner is inside [`Owned::with`] (a nested call gets `None`).
        busy: AtomicBool,
        value: UnsafeCell<T>,
    }

    // SAFETY: the value is reached only by the owning thread (`with`), one call at a time.
    unsafe impl<T: Send> Sync for Owned<T> {}

    impl<T> Owned<T> {
        pub(crate) fn new(value: T) -> Owned<T> {
            Owned { owner: AtomicUsize::new(0), busy: AtomicBool::new(false), value: UnsafeCell::new(value) }
        }

        /// `f` on the value, if the calling thread owns it (the first thread to call this
        /// does, for good) and is not inside `with` for it already; else `None`.
        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
            let me = thread_tag();
            // Relaxed: only the owner's own stores matter to it; another thread sees a
            // non-zero owner other than itself and backs off (the value is never shared).
            let o = self.owner.load(Ordering::Relaxed);
            if o != me && (o != 0 || self.owner.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed).is_err()) {
                return None;
            }
            // Relaxed: only the owner reads and writes `busy`.
            if self.busy.load(Ordering::Relaxed) {
                return None;
            }
            self.busy.store(true, Ordering::Relaxed);
            // SAFETY: the calling thread owns the value and no other `&mut` to it is live
            // (not `busy` before); a panic in `f` leaves `busy` set, and the value unused.
            let r = f(unsafe { &mut *self.value.get() });
            self.busy.store(false, Ordering::Relaxed);
            Some(r)
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_reader_sees_a_prefix_while_the_writer_appends() {
            let (log, mut w) = new::<u64>();
            let n = 3 * CHUNK as u64 + 17;
            let writer = std::thread::spawn(move || {
                for i in 0..n {
                    assert_eq!(w.push(i * 3), i as usize);
                }
            });
            loop {
                let seen = log.read();
                assert!(seen.iter().enumerate().all(|(i, &v)| v == i as u64 * 3));
                if seen.len() as u64 == n {
                    break;
                }
            }
            writer.join().unwrap();
        }

        #[test]
        fn only_the_first_thread_owns_the_value() {
            let o = Arc::new(Owned::new(0u32));
            assert_eq!(
                o.with(|v| {
                    *v += 1;
                    *v
                }),
                Some(1)
            );
            assert_eq!(o.with(|_| o.with(|_| ())), Some(None), "a nested use");
            let o2 = o.clone();
            assert_eq!(std::thread::spawn(move || o2.with(|v| *v)).join().unwrap(), None);
            assert_eq!(o.with(|v| *v), Some(1));
        }
    }
}

/// Writes events to the file as they come, separated by commas; keeps the first error.
struct Emitter<'a> {
    out: &'a mut dyn std::io::Write,
    n: usize,
    err: Option<std::io::Error>,
}

impl Emitter<'_> {
    fn push(&mut self, event: String) {
        if self.err.is_some() {
            return;
        }
        let sep: &[u8] = if self.n == 0 { b"" } else { b",\n" };
        self.n += 1;
        if let Err(e) = self.out.write_all(sep).and_then(|()| self.out.write_all(event.as_bytes())) {
            self.err = Some(e);
        }
    }
}

/// Nanoseconds as the format's microseconds.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Replace `path` with what `data` writes: a new temporary file beside it (`create_new`, so never one
/// that exists, nor through a link planted there), written, then renamed over `path`. Not
/// `weft_vendors::fsutil::PrivateDir::write_atomic`: that one refuses directories others
/// can write (its trust rule is for caches Weft reads back), and a trace in `/tmp` is usual.
fn write_atomic(path: &Path, data: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tries = 0u32;
    let (tmp, mut f) = loop {
        let tag = std::collections::hash_map::RandomState::new();
        let tag = std::hash::BuildHasher::hash_one(&tag, (std::process::id(), tries));
        let tmp = dir.join(format!(".{}.{tag:016x}.tmp", name.to_string_lossy()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    };
    let r = data(&mut f).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(us(1_234_567), "1234.567");
    }

    #[test]
    fn overlapping_copies_of_a_pair_get_lanes() {
        let epoch = Instant::now();
        let t = Tracer::new(PathBuf::from("x.json"), epoch, vec![Track { name: "cpu 0".into() }], vec!["host".into(), "null0".into()]);
        let at = |us: u64| epoch + std::time::Duration::from_micros(us);
        t.transfer(0, 1, 8, 1, at(0), at(10));
        t.transfer(0, 1, 8, 2, at(5), at(15));
        t.transfer(0, 1, 8, 3, at(12), at(20));
        let j = t.to_json();
        assert!(j.contains("node 0 (host) -> node 1 (null0) #2"), "{j}");
        assert!(!j.contains("#3"), "{j}");
    }

    #[test]
    fn an_unwritable_path_is_a_warning_naming_the_variable_and_the_path() {
        let path = PathBuf::from("/nonexistent-weft-dir/sub/trace.json");
        let t = Tracer::new(path, Instant::now(), vec![Track { name: "cpu 0".into() }], vec!["host".into()]);
        let w = t.try_write().unwrap_err();
        assert!(w.contains("WEFT_TRACE=/nonexistent-weft-dir/sub/trace.json"), "{w}");
        t.write();
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("weft-trace-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        std::fs::write(&path, "old").unwrap();
        let t = Tracer::new(path.clone(), Instant::now(), vec![Track { name: "cpu 0".into() }], vec!["host".into()]);
        let from = t.now();
        t.task(
            Some(0),
            Stamps::Ticks(from, t.now()),
            &TaskEvent { task: 1, codelet: 7, name: "k\"q", footprint: Some(3), predicted_us: Some(1.5), measured_us: None },
            [4u64, 5].into_iter(),
        );
        t.try_write().unwrap();
        let j = std::fs::read_to_string(&path).unwrap();
        assert!(j.starts_with("{\"displayTimeUnit\"") && j.contains("\"name\":\"k\\\"q\"") && j.contains("\"handles\":[4,5]"), "{j}");
        assert!(j.contains("\"predicted_us\":1.500") && !j.contains("measured_us"), "{j}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("t.json")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
