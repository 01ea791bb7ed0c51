//! Worksharing: loops (static, dynamic, guided; `long` and `unsigned long long`), ordered,
//! doacross, sections, and the slot protocol that lets threads be several `nowait`
//! constructs apart.
//!
//! **Owns**: the [`WorkShare`] slots of a team's ring and the iteration arithmetic
//! ([`LoopBounds`]). **Does not own**: team membership (team.rs).
//!
//! A loop is normalized to iterations `0..n`; a chunk `[a, b)` maps back to
//! `start + a*incr .. start + b*incr` (the last chunk ends at `end` exactly, so that
//! `unsigned long long` loops reaching the top of the range do not wrap).
//!
//! Slot protocol: construct number `g` of a team uses slot `g % RING`. The first thread to
//! get there when the slot is free for `g` (`free_for == g`, CAS to `g | INIT`) initializes
//! it and publishes `ready = g`; the others wait for `ready == g`. The last thread to leave
//! sets `free_for = g + RING`.
//!
//! A slot's data is shared without `unsafe`: the loop's parameters are Relaxed atomics
//! ([`SpecCell`]: plain moves on x86-64, ordered by the Release store and Acquire loads of
//! `ready`), and the rarer parts (scratch memory, doacross table, task reductions) sit
//! behind a mutex that each thread takes once per construct (a doacross table is then
//! cached in the thread's context, `Ctx::doacross`, for its per-iteration posts and waits).

use crate::abi::gomp::reduction::Descriptor;
use crate::sys::{self, spin_until};
use crate::team::{Ctx, ctx};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Worksharing constructs a team can have in flight (threads up to RING `nowait`
/// constructs apart); a thread further ahead waits for the slot to be freed.
pub const RING: usize = 32;
const INIT: u64 = 1 << 63;
const NONE: u64 = u64::MAX;

pub const STATIC: i32 = 1;
pub const DYNAMIC: i32 = 2;
pub const GUIDED: i32 = 3;

/// A loop's iteration space, as the GOMP entry points give it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoopBounds {
    pub start: u64,
    pub end: u64,
    /// Two's complement step.
    pub incr: u64,
    /// Number of iterations.
    pub n: u64,
}

impl LoopBounds {
    /// `for (i = start; i < end; i += incr)` (or `>` for a negative `incr`) on `long`.
    pub fn long(start: i64, end: i64, incr: i64) -> LoopBounds {
        let (s, e, i) = (start as i128, end as i128, incr as i128);
        let n = if i > 0 && e > s {
            (e - s + i - 1) / i
        } else if i < 0 && s > e {
            (s - e - i - 1) / -i
        } else {
            0
        };
        LoopBounds { start: start as u64, end: end as u64, incr: incr as u64, n: n.min(u64::MAX as i128) as u64 }
    }

    /// The `unsigned long long` form: `up` says whether the loop counts up.
    pub fn ull(up: bool, start: u64, end: u64, incr: u64) -> LoopBounds {
        let n = if up && end > start && incr != 0 {
            ((end - start) as u128).div_ceil(incr as u128)
        } else if !up && start > end && incr != 0 {
            ((start - end) as u128).div_ceil(incr.wrapping_neg() as u128)
        } else {
            0
        };
        LoopBounds { start, end, incr, n: n.min(u64::MAX as u128) as u64 }
    }

    /// The kmp ABI's inclusive form: `for (i = lb; i <= ub; i += st)` (or `>=` for a
    /// negative `st`), with the values of any integer type widened to `i128`.
    pub fn inclusive(lb: i128, ub: i128, st: i128) -> LoopBounds {
        let n = if st > 0 && ub >= lb {
            (ub - lb) / st + 1
        } else if st < 0 && lb >= ub {
            (lb - ub) / -st + 1
        } else {
            0
        };
        let n = n.min(u64::MAX as i128) as u64;
        let (start, incr) = (lb as u64, st as u64);
        LoopBounds { start, end: start.wrapping_add(n.wrapping_mul(incr)), incr, n }
    }

    /// The value of normalized iteration `k` (two's complement, wrapping).
    pub fn value(&self, k: u64) -> u64 {
        self.start.wrapping_add(k.wrapping_mul(self.incr))
    }

    /// The iteration values of chunk `[a, b)`: (first, bound).
    pub fn values(&self, a: u64, b: u64) -> (u64, u64) {
        let first = self.start.wrapping_add(a.wrapping_mul(self.incr));
        let bound = if b >= self.n { self.end } else { self.start.wrapping_add(b.wrapping_mul(self.incr)) };
        (first, bound)
    }
}

#[derive(Clone, Copy, Default)]
struct Spec {
    bounds: LoopBounds,
    sched: i32,
    chunk: u64,
    ordered: bool,
    nthreads: u32,
}

/// A [`Spec`] shared by the team: written by the initializing thread before it publishes
/// `ready` (Release), read by the others after they saw it (Acquire), so Relaxed suffices
/// for each field; a slot is written again only once every thread has left it. The
/// schedule, team size and ordered flag share one word ([`Mode`]): a chunk's hand-out
/// reads that word, `n` and `chunk`, no more than it read of a plain copy.
#[derive(Default)]
struct SpecCell {
    start: AtomicU64,
    end: AtomicU64,
    incr: AtomicU64,
    n: AtomicU64,
    chunk: AtomicU64,
    /// The schedule (low 32 bits), the team size (bits 32 to 62) and the ordered flag.
    mode: AtomicU64,
}

/// A loop's schedule, team size and ordered flag, as [`SpecCell`] packs them.
#[derive(Clone, Copy)]
struct Mode {
    sched: i32,
    nthreads: u32,
    ordered: bool,
}

const ORDERED: u64 = 1 << 63;

impl Mode {
    #[inline]
    fn pack(self) -> u64 {
        // (A team has at most a few thousand threads.)
        debug_assert!(self.nthreads < 1 << 31);
        self.sched as u32 as u64 | (self.nthreads as u64) << 32 | if self.ordered { ORDERED } else { 0 }
    }

    #[inline]
    fn unpack(m: u64) -> Mode {
        Mode { sched: m as u32 as i32, nthreads: ((m & !ORDERED) >> 32) as u32, ordered: m & ORDERED != 0 }
    }
}

impl SpecCell {
    #[inline]
    fn mode(&self) -> Mode {
        Mode::unpack(self.mode.load(Ordering::Relaxed))
    }

    #[cfg(test)]
    fn get(&self) -> Spec {
        let m = self.mode();
        Spec { bounds: self.bounds(), sched: m.sched, chunk: self.chunk.load(Ordering::Relaxed), ordered: m.ordered, nthreads: m.nthreads }
    }

    #[inline]
    fn bounds(&self) -> LoopBounds {
        let r = Ordering::Relaxed;
        LoopBounds { start: self.start.load(r), end: self.end.load(r), incr: self.incr.load(r), n: self.n.load(r) }
    }

    #[inline]
    fn set(&self, s: Spec) {
        let r = Ordering::Relaxed;
        self.start.store(s.bounds.start, r);
        self.end.store(s.bounds.end, r);
        self.incr.store(s.bounds.incr, r);
        self.n.store(s.bounds.n, r);
        self.chunk.store(s.chunk, r);
        self.mode.store(Mode { sched: s.sched, nthreads: s.nthreads, ordered: s.ordered }.pack(), r);
    }
}

/// What a construct has besides its loop (set by the initializing thread before it
/// publishes `ready`; each thread reads it once, after entering).
#[derive(Default)]
struct Extra {
    /// Scratch memory (`GOMP_loop_start`'s `mem`), as u64 words.
    mem: Vec<u64>,
    doacross: Option<Arc<Doacross>>,
    /// The task reductions of the thread that initialized the construct (their blocks).
    task_red: Option<Descriptor>,
}

pub struct Doacross {
    /// Per iteration of the first dimension: 1 + the last posted flat index of the others.
    done: Vec<AtomicU64>,
    strides: Vec<u64>,
    counts: Vec<u64>,
}

/// One worksharing construct's shared state.
pub struct WorkShare {
    free_for: AtomicU64,
    ready: AtomicU64,
    left: AtomicU32,
    preinit: AtomicBool,
    next: crossbeam_utils::CachePadded<AtomicU64>,
    turn: crossbeam_utils::CachePadded<AtomicU64>,
    turn_seq: AtomicU32,
    turn_sleepers: AtomicU32,
    /// A kmp ordered loop: one of its ordered regions has called `__kmpc_ordered`, so its
    /// chunks no longer wait for their turn before they are handed out
    /// ([`next_chunk_and_bounds_held`]).
    announced: AtomicBool,
    pub cancelled: AtomicBool,
    spec: SpecCell,
    /// Taken once per thread per construct, only by constructs that have these.
    extra: Mutex<Extra>,
}

impl WorkShare {
    pub fn new(i: u64) -> WorkShare {
        WorkShare {
            free_for: AtomicU64::new(i),
            ready: AtomicU64::new(NONE),
            left: AtomicU32::new(0),
            preinit: AtomicBool::new(false),
            next: Default::default(),
            turn: Default::default(),
            turn_seq: AtomicU32::new(0),
            turn_sleepers: AtomicU32::new(0),
            announced: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            spec: SpecCell::default(),
            extra: Mutex::new(Extra::default()),
        }
    }

    /// Only while no thread uses the team (team reset).
    pub fn reset(&self, i: u64) {
        self.free_for.store(i, Ordering::Relaxed);
        self.ready.store(NONE, Ordering::Relaxed);
        self.preinit.store(false, Ordering::Relaxed);
    }

    pub fn preinit(&self) -> bool {
        self.preinit.load(Ordering::Relaxed)
    }

    /// The construct's extras (a poisoned lock still holds them: no invariant spans a
    /// panic there).
    fn extra(&self) -> MutexGuard<'_, Extra> {
        self.extra.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn init(&self, spec: Spec) {
        self.spec.set(spec);
        self.next.store(0, Ordering::Relaxed);
        self.turn.store(0, Ordering::Relaxed);
        self.announced.store(false, Ordering::Relaxed);
        self.cancelled.store(false, Ordering::Relaxed);
        self.left.store(spec.nthreads, Ordering::Relaxed);
    }

    /// Initialize slot 0 of a team before its threads start (combined parallel constructs).
    pub fn setup_first(&self, bounds: LoopBounds, sched: i32, chunk: u64, nthreads: u32) {
        self.free_for.store(INIT, Ordering::Relaxed);
        self.init(Spec { bounds, sched, chunk: chunk_of(sched, chunk), ordered: false, nthreads });
        self.preinit.store(true, Ordering::Relaxed);
        self.ready.store(0, Ordering::Release);
    }
}

fn chunk_of(sched: i32, chunk: u64) -> u64 {
    if sched != STATIC && chunk == 0 { 1 } else { chunk }
}

/// Enter the calling thread's next worksharing construct; `init` runs in the first thread.
/// Returns whether this thread initialized it.
fn enter(c: &mut Ctx, init: impl FnOnce(&WorkShare)) -> bool {
    let g = c.ws_gen;
    c.ws_gen += 1;
    let i = (g % RING as u64) as usize;
    let w = &c.team().ring[i];
    c.ws = Some(i);
    c.ws_cur_gen = g;
    c.doacross = None;
    c.static_trip = 0;
    c.ordered_pending = false;
    loop {
        // Acquire: the initializer's writes.
        if w.ready.load(Ordering::Acquire) == g {
            return false;
        }
        if w.free_for.load(Ordering::Acquire) == g && w.free_for.compare_exchange(g, g | INIT, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        {
            init(w);
            w.ready.store(g, Ordering::Release);
            return true;
        }
        if !spin_until(|| w.ready.load(Ordering::Acquire) == g || w.free_for.load(Ordering::Acquire) == g) {
            std::thread::yield_now();
        }
    }
}

/// Trace: the calling thread starts construct `name` (a slice from now to [`trace_end`],
/// when tracing). A span still open ends here, before this one starts: a GOMP `single`,
/// which has no end call (with `nowait`, the thread's next construct ends it).
#[inline]
pub fn trace_begin(c: &mut Ctx, name: &'static str) {
    if crate::trace::on() {
        trace_end(c);
        c.ws_trace = crate::trace::start().map(|t| (t, name));
    }
}

/// Trace: the calling thread's construct ends (nothing when none is open: not tracing).
#[inline]
pub fn trace_end(c: &mut Ctx) {
    if let Some((t, name)) = c.ws_trace.take() {
        crate::trace::end(Some(t), name);
    }
}

/// [`trace_end`] on the calling thread's context, when tracing.
#[inline]
pub fn trace_end_current() {
    if crate::trace::on() {
        trace_end(ctx());
    }
}

/// Trace: the start of a barrier wait, when tracing. The construct before it ends first:
/// a GOMP `single` at its implicit barrier.
#[inline]
pub fn trace_barrier() -> Option<std::time::Instant> {
    if !crate::trace::on() {
        return None;
    }
    if let Some(c) = crate::team::cur_if_any() {
        c.with(trace_end);
    }
    crate::trace::start()
}

/// Trace: the construct just started is a `sections` one (it runs as a loop).
pub fn trace_sections() {
    trace_rename("omp sections");
}

/// Trace: the construct just started is named `name` (it runs as a loop).
pub fn trace_rename(name: &'static str) {
    if crate::trace::on()
        && let Some(s) = &mut ctx().ws_trace
    {
        s.1 = name;
    }
}

/// Leave the current construct (its last use by this thread).
pub fn leave(c: &mut Ctx) {
    trace_end(c);
    let Some(i) = c.ws else { return };
    finish_chunk(c);
    let w = &c.team().ring[i];
    let g = c.ws_cur_gen;
    c.ws = None;
    c.doacross = None;
    // AcqRel: the last leaver sees everyone's reads done before it frees the slot.
    if w.left.fetch_sub(1, Ordering::AcqRel) == 1 {
        w.ready.store(NONE, Ordering::Relaxed);
        w.preinit.store(false, Ordering::Relaxed);
        w.free_for.store(g + RING as u64, Ordering::Release);
    }
}

pub fn current<'a>(c: &Ctx) -> Option<&'a WorkShare> {
    // (The slot lives in the team, which outlives the context: `Ctx::team`.)
    c.ws.map(|i| &c.team().ring[i])
}

/// Start a loop construct. Returns whether this thread initialized it.
pub fn loop_start(bounds: LoopBounds, sched: i32, chunk: u64, ordered: bool) -> bool {
    loop_start_full(bounds, sched, chunk, ordered, None, None, None).0
}

/// Start a loop construct with doacross `counts` and/or `mem_size` bytes of zeroed scratch
/// memory shared by the team (`GOMP_loop_start`'s `mem`). Returns whether this thread
/// initialized it, and the scratch memory. `reductions` (non-null): the construct's task
/// reductions (`reduction(task, …)`): it opens a taskgroup holding them, with private
/// blocks the initializing thread allocates for the whole team.
pub fn loop_start_full(
    bounds: LoopBounds,
    sched: i32,
    chunk: u64,
    ordered: bool,
    counts: Option<&[u64]>,
    mem_size: Option<usize>,
    reductions: Option<Descriptor>,
) -> (bool, *mut u8) {
    if reductions.is_some() {
        crate::task::taskgroup_start(true);
    }
    let c = ctx();
    let n = c.team().n;
    let extras = counts.is_some() || mem_size.is_some() || reductions.is_some();
    let first = enter(c, |w| {
        w.init(Spec { bounds, sched, chunk: chunk_of(sched, chunk), ordered, nthreads: n });
        if extras {
            let mut x = w.extra();
            x.task_red = reductions.inspect(|r| r.alloc(n));
            x.doacross = counts.map(|counts| Arc::new(doacross_new(counts)));
            if let Some(size) = mem_size {
                x.mem.clear();
                x.mem.resize(size.div_ceil(8).max(1), 0);
            }
        }
    });
    trace_begin(c, "omp for");
    let mut mem = std::ptr::null_mut();
    if extras && let Some(w) = current(c) {
        let mut x = w.extra();
        if let Some(r) = reductions {
            // The first thread's descriptors: this thread's share their blocks.
            let first = x.task_red.expect("a worksharing construct's task reductions without blocks");
            crate::task::reduction_register_shared(r, first);
        }
        c.doacross = x.doacross.clone();
        if mem_size.is_some() {
            // (The words stay put until the slot is reused: the team writes them through
            // this pointer while no reference to them exists.)
            mem = x.mem.as_mut_ptr() as *mut u8;
        }
    }
    (first, mem)
}

/// Pass the ordered turn on after the chunk this thread held.
fn finish_chunk(c: &mut Ctx) {
    if !c.ordered_pending {
        return;
    }
    c.ordered_pending = false;
    let Some(w) = current(c) else { return };
    let (a, b) = c.chunk;
    wait_turn(w, a);
    // SeqCst store, then SeqCst load of the sleeper count (`wake_turn_waiters`): a waiter
    // announces itself (SeqCst) before re-checking `turn`, so either it sees the new turn or
    // we see it and bump the futex word it sleeps on.
    w.turn.store(b, Ordering::SeqCst);
    wake_turn_waiters(w);
}

/// Wake the threads sleeping in [`wait_turn_or`] after a change of what they wait for
/// (`turn` or `announced`, stored SeqCst before this SeqCst load of the sleeper count).
fn wake_turn_waiters(w: &WorkShare) {
    if w.turn_sleepers.load(Ordering::SeqCst) > 0 {
        w.turn_seq.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake(&w.turn_seq, i32::MAX);
    }
}

fn wait_turn(w: &WorkShare, a: u64) {
    wait_turn_or(w, a, || false)
}

/// Wait until the turn is `a` (the chunk starting at iteration `a` may run its ordered
/// regions) or `also()` holds (checked after announcing a sleep: its setter wakes the
/// sleepers as `wake_turn_waiters` does).
fn wait_turn_or(w: &WorkShare, a: u64, also: impl Fn() -> bool) {
    loop {
        let seq = w.turn_seq.load(Ordering::SeqCst);
        // Acquire: the previous holder's ordered region happened before.
        if w.turn.load(Ordering::Acquire) == a || also() {
            return;
        }
        sys::wait_change(&w.turn_seq, seq, &w.turn_sleepers, || w.turn.load(Ordering::Acquire) == a || also());
    }
}

/// GOMP_ordered_start: wait for this thread's turn.
pub fn ordered_start() {
    let c = ctx();
    // (A chunk is pending only in an ordered loop: `next_chunk_in`.)
    if c.ordered_pending
        && let Some(w) = current(c)
    {
        wait_turn(w, c.chunk.0);
    }
}

/// `__kmpc_ordered`: [`ordered_start`], after telling the loop that its ordered regions
/// call in (the chunks of the other threads waiting in [`next_chunk_and_bounds_held`] go).
pub fn kmp_ordered_start() {
    let c = ctx();
    // (A chunk is pending only in an ordered loop: `next_chunk_in`.)
    if c.ordered_pending
        && let Some(w) = current(c)
    {
        if !w.announced.load(Ordering::Relaxed) {
            // SeqCst, then the sleeper count: as `finish_chunk`'s store of the turn.
            w.announced.store(true, Ordering::SeqCst);
            wake_turn_waiters(w);
        }
        wait_turn(w, c.chunk.0);
    }
}

/// The next chunk of the current loop for the calling thread, as normalized `[a, b)`.
pub fn next_chunk() -> Option<(u64, u64)> {
    next_chunk_in(ctx())
}

/// The next chunk and the loop's bounds (one thread-local lookup for both: the loop entry
/// points call this once per chunk).
pub fn next_chunk_and_bounds() -> (Option<(u64, u64)>, Option<LoopBounds>) {
    let c = ctx();
    let r = next_chunk_in(c);
    (r, current(c).map(|w| w.spec.bounds()))
}

/// `__kmpc_dispatch_next`: [`next_chunk_and_bounds`]; in an ordered loop none of whose
/// ordered regions has called `__kmpc_ordered` yet, a chunk is handed out only in its turn
/// (once the chunks before it are done). clang 14 emits no call at all for `ordered threads
/// simd` (only `__kmpc_dispatch_fini` after each iteration), so such a region is ordered
/// only by its chunk waiting here: the iterations of an ordered loop that never announces
/// an ordered region run one chunk after the other. As soon as one region calls in (in
/// the first chunk's holder, which never waits here), the chunks go out at once again and
/// the regions wait for their turn in `__kmpc_ordered` (`kmp_ordered_start`). libomp does
/// not hold chunks: its `__kmpc_dispatch_fini` waits for an iteration's turn after its
/// body, too late for a region in it, and ordered-5.c of GCC's testsuite fails now and then
/// under it.
pub fn next_chunk_and_bounds_held() -> (Option<(u64, u64)>, Option<LoopBounds>) {
    let c = ctx();
    let r = next_chunk_in(c);
    let w = current(c);
    if r.is_some()
        && c.ordered_pending
        && let Some(w) = w
        // SeqCst: read again after announcing a sleep (`wait_turn_or`), against
        // `kmp_ordered_start`'s store then load of the sleeper count.
        && !w.announced.load(Ordering::SeqCst)
    {
        wait_turn_or(w, c.chunk.0, || w.announced.load(Ordering::SeqCst));
    }
    (r, w.map(|w| w.spec.bounds()))
}

fn next_chunk_in(c: &mut Ctx) -> Option<(u64, u64)> {
    finish_chunk(c);
    let w = current(c)?;
    // (The loop was published with `ready`; it is unchanged until the slot is freed.)
    let s = w.spec.mode();
    let n = w.spec.n.load(Ordering::Relaxed);
    let chunk = w.spec.chunk.load(Ordering::Relaxed);
    if w.cancelled.load(Ordering::Relaxed) || c.team().cancelled.load(Ordering::Relaxed) {
        return None;
    }
    let r = match s.sched {
        STATIC => {
            let nth = s.nthreads as u64;
            let tid = c.tid as u64;
            if chunk == 0 {
                if c.static_trip > 0 {
                    return None;
                }
                c.static_trip = 1;
                let (a, b) = static_block(n, nth, tid);
                if a == b {
                    return None;
                }
                (a, b)
            } else {
                let k = c.static_trip as u128 * nth as u128 + tid as u128;
                let a = k * chunk as u128;
                if a >= n as u128 {
                    return None;
                }
                c.static_trip += 1;
                (a as u64, (a + chunk as u128).min(n as u128) as u64)
            }
        }
        GUIDED => {
            let nth = s.nthreads as u64;
            let mut a = w.next.load(Ordering::Relaxed);
            loop {
                if a >= n {
                    return None;
                }
                let rem = n - a;
                let q = rem.div_ceil(nth).max(chunk).min(rem);
                match w.next.compare_exchange_weak(a, a + q, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => break (a, a + q),
                    Err(x) => a = x,
                }
            }
        }
        _ => {
            // Dynamic. Relaxed: the counter only partitions iterations; the construct's
            // data is published through `ready`.
            if chunk <= 1 << 32 && n < 1 << 62 {
                let a = w.next.fetch_add(chunk, Ordering::Relaxed);
                if a >= n {
                    return None;
                }
                (a, (a + chunk).min(n))
            } else {
                let mut a = w.next.load(Ordering::Relaxed);
                loop {
                    if a >= n {
                        return None;
                    }
                    let b = a.saturating_add(chunk).min(n);
                    match w.next.compare_exchange_weak(a, b, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => break (a, b),
                        Err(x) => a = x,
                    }
                }
            }
        }
    };
    c.chunk = r;
    c.ordered_pending = s.ordered;
    Some(r)
}

/// The static schedule without a chunk size: thread `tid` of `nth` gets one contiguous block
/// `[a, b)` of `0..n` (empty when `a == b`), the first `n % nth` threads one iteration more.
pub fn static_block(n: u64, nth: u64, tid: u64) -> (u64, u64) {
    let q = n / nth;
    let t = n % nth;
    let (q, a) = if tid < t { (q + 1, (q + 1) * tid) } else { (q, q * tid + t) };
    (a, a + q)
}

/// `single`: true in the one thread that runs the region: the first to bump the team's
/// count from this thread's count (libgomp's scheme: no worksharing slot needed).
pub fn single_start() -> bool {
    let c = ctx();
    let t = c.team();
    if t.n == 1 {
        return true;
    }
    let mine = c.single_count;
    c.single_count += 1;
    // Relaxed: only decides who runs the region; the barrier after it (or the program's own
    // synchronization for nowait) orders its effects.
    let me =
        t.single.load(Ordering::Relaxed) == mine && t.single.compare_exchange(mine, mine + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok();
    if me {
        trace_begin(c, "omp single");
    }
    me
}

/// Sections: construct of `count` sections; returns the first section number (0: none).
pub fn sections_start(count: u32) -> u32 {
    loop_start(LoopBounds::long(1, count as i64 + 1, 1), DYNAMIC, 1, false);
    trace_sections();
    sections_next()
}

pub fn sections_next() -> u32 {
    match next_chunk() {
        Some((a, _)) => a as u32 + 1,
        None => 0,
    }
}

// ---------------------------------------------------------------------------------------
// Doacross (ordered(n) with depend(sink/source)).

pub fn doacross_new(counts: &[u64]) -> Doacross {
    let mut strides = vec![1u64; counts.len()];
    for i in (1..counts.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(counts[i + 1]);
    }
    let n0 = counts.first().copied().unwrap_or(0) as usize;
    Doacross { done: (0..n0).map(|_| AtomicU64::new(0)).collect(), strides, counts: counts.to_vec() }
}

/// The current loop's doacross table (cached in the context when the loop started).
fn doacross<'a>() -> Option<&'a Doacross> {
    ctx().doacross.as_deref()
}

fn flat(d: &Doacross, v: &[u64]) -> Option<u64> {
    let mut f = 0u64;
    for i in 1..d.counts.len() {
        let x = *v.get(i)?;
        if x >= d.counts[i] {
            return None;
        }
        f = f.wrapping_add(x.wrapping_mul(d.strides[i]));
    }
    Some(f)
}

pub fn doacross_post(v: &[u64]) {
    if let Some(d) = doacross() {
        doacross_post_in(d, v)
    }
}

/// Iteration `v` (normalized: 0-based counts) of `d` is done.
pub fn doacross_post_in(d: &Doacross, v: &[u64]) {
    let Some(e) = d.done.get(v[0] as usize) else { return };
    let Some(f) = flat(d, v) else { return };
    // Release: the iteration's writes happen before a waiter sees it posted.
    e.fetch_max(f + 1, Ordering::Release);
}

pub fn doacross_wait(v: &[u64]) {
    if let Some(d) = doacross() {
        doacross_wait_in(d, v)
    }
}

/// Wait until iteration `v` (normalized) of `d` is done.
pub fn doacross_wait_in(d: &Doacross, v: &[u64]) {
    let Some(e) = d.done.get(v[0] as usize) else { return };
    let Some(f) = flat(d, v) else { return };
    while !spin_until(|| e.load(Ordering::Acquire) > f) {
        std::thread::yield_now();
    }
}

pub fn doacross_ncounts() -> usize {
    doacross().map(|d| d.counts.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_bounds() {
        assert_eq!(LoopBounds::long(0, 10, 3).n, 4);
        assert_eq!(LoopBounds::long(10, 0, -3).n, 4);
        assert_eq!(LoopBounds::long(0, 0, 1).n, 0);
        assert_eq!(LoopBounds::long(5, 0, 1).n, 0);
        assert_eq!(LoopBounds::long(i64::MIN, i64::MAX, i64::MAX).n, 3);
        let b = LoopBounds::ull(true, u64::MAX - 10, u64::MAX, 4);
        assert_eq!(b.n, 3);
        assert_eq!(b.values(2, 3), (u64::MAX - 2, u64::MAX));
        let d = LoopBounds::ull(false, 10, 0, (-2i64) as u64);
        assert_eq!(d.n, 5);
        assert_eq!(d.values(1, 2), (8, 6));
        assert_eq!(LoopBounds::long(0, 10, 3).values(1, 4), (3, 10));
    }

    #[test]
    fn inclusive_bounds() {
        let b = LoopBounds::inclusive(0, 9, 1);
        assert_eq!((b.n, b.value(9)), (10, 9));
        assert_eq!(LoopBounds::inclusive(10, 0, -3).n, 4);
        assert_eq!(LoopBounds::inclusive(5, 4, 1).n, 0);
        assert_eq!(LoopBounds::inclusive(0, 0, 0).n, 0);
        // The whole u64 range but one (the count must fit in u64).
        let b = LoopBounds::inclusive(1, u64::MAX as i128, 1);
        assert_eq!((b.n, b.value(b.n - 1)), (u64::MAX, u64::MAX));
        let b = LoopBounds::inclusive(i64::MIN as i128, i64::MAX as i128, 1 << 62);
        assert_eq!((b.n, b.value(3) as i64), (4, (i64::MIN as i128 + 3 * (1i128 << 62)) as i64));
    }

    /// A slot's loop reads back as it was written (the fields are stored one by one).
    #[test]
    fn spec_cell_round_trips() {
        let bounds = LoopBounds::ull(false, u64::MAX, 3, (-7i64) as u64);
        let spec = Spec { bounds, sched: GUIDED, chunk: 1 << 40, ordered: true, nthreads: (1 << 31) - 1 };
        let cell = SpecCell::default();
        cell.set(spec);
        let got = cell.get();
        assert_eq!((got.bounds, got.sched, got.chunk, got.ordered, got.nthreads), (bounds, GUIDED, 1 << 40, true, (1 << 31) - 1));
        cell.set(Spec { ordered: false, sched: -1, nthreads: 0, ..spec });
        let got = cell.get();
        assert_eq!((got.sched, got.ordered, got.nthreads), (-1, false, 0));
        assert_eq!(cell.bounds(), bounds);
    }

    #[test]
    fn static_blocks_cover_the_space_once() {
        for (n, nth) in [(0u64, 3u64), (2, 3), (10, 3), (9, 3), (100, 7)] {
            let mut next = 0;
            for tid in 0..nth {
                let (a, b) = static_block(n, nth, tid);
                assert_eq!(a, next, "n {n} nth {nth} tid {tid}");
                assert!(b >= a && b - a <= n.div_ceil(nth));
                next = b;
            }
            assert_eq!(next, n);
        }
    }
}
