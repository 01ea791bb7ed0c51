//! Worksharing loops: `__kmpc_for_static_init_*` (the thread computes its own iterations
//! and loops over them itself) and `__kmpc_dispatch_*` (dynamic, guided, runtime and
//! ordered loops: chunk by chunk from the team's worksharing slot, `ws::loop_start` and
//! `ws::next_chunk`, as the GOMP loops).
//!
//! Quirks decoded here: inclusive upper bounds; `4`/`4u`/`8`/`8u` variants whose bounds are
//! `kmp_int32`, `kmp_uint32`, … but whose stride is always signed; libomp's `sched_type`
//! numbers (33 static chunked … 47, ordered ones 32 higher, `nomerge` ones 128 higher,
//! distribute 91/92) with the monotonic (bit 29) and nonmonotonic (bit 30) modifiers; and the
//! end of a dispatch loop, which is the first `__kmpc_dispatch_next` that returns 0 (there
//! is no "loop end" call: that is where this thread leaves the slot).

use super::Ident;
use crate::abi::guard;
use crate::team::ctx;
use crate::ws::{self, DYNAMIC, GUIDED, LoopBounds, STATIC};

const SCH_STATIC_CHUNKED: i32 = 33;
const SCH_STATIC: i32 = 34;
const SCH_DYNAMIC: i32 = 35;
const SCH_GUIDED: i32 = 36;
const SCH_RUNTIME: i32 = 37;
const SCH_AUTO: i32 = 38;
const SCH_TRAPEZOIDAL: i32 = 39;
const SCH_STATIC_GREEDY: i32 = 40;
const SCH_STATIC_BALANCED: i32 = 41;
const SCH_GUIDED_ITERATIVE: i32 = 42;
const SCH_GUIDED_ANALYTICAL: i32 = 43;
const SCH_STATIC_STEAL: i32 = 44;
const SCH_STATIC_BALANCED_CHUNKED: i32 = 45;
const SCH_GUIDED_SIMD: i32 = 46;
const SCH_RUNTIME_SIMD: i32 = 47;
const ORD_LOWER: i32 = 64;
const ORD_UPPER: i32 = 72;
const DISTRIBUTE_STATIC_CHUNKED: i32 = 91;
const DISTRIBUTE_STATIC: i32 = 92;
const NM_LOWER: i32 = 160;
const MODIFIERS: i32 = (1 << 29) | (1 << 30);

/// A decoded `sched_type`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Sched {
    /// One of ws's kinds with its chunk size (0: static without a chunk size).
    Fixed(i32, u64),
    /// The run-sched ICV (`schedule(runtime)`, and `auto`, as the GOMP loops do).
    Runtime,
}

/// `sched_type` and chunk → (schedule, ordered).
pub(crate) fn decode(sched: i32, chunk: i64) -> (Sched, bool) {
    let mut k = sched & !MODIFIERS;
    if k >= NM_LOWER {
        k -= NM_LOWER - 32;
    }
    let ordered = (ORD_LOWER..=ORD_UPPER).contains(&k);
    if ordered {
        k -= ORD_LOWER - 32;
    }
    let c = chunk.max(1) as u64;
    let s = match k {
        SCH_STATIC_CHUNKED | SCH_STATIC_BALANCED_CHUNKED | DISTRIBUTE_STATIC_CHUNKED => Sched::Fixed(STATIC, c),
        SCH_STATIC | SCH_STATIC_GREEDY | SCH_STATIC_BALANCED | DISTRIBUTE_STATIC => Sched::Fixed(STATIC, 0),
        SCH_DYNAMIC | SCH_STATIC_STEAL => Sched::Fixed(DYNAMIC, c),
        SCH_GUIDED | SCH_GUIDED_ITERATIVE | SCH_GUIDED_ANALYTICAL | SCH_GUIDED_SIMD | SCH_TRAPEZOIDAL => Sched::Fixed(GUIDED, c),
        SCH_RUNTIME | SCH_AUTO | SCH_RUNTIME_SIMD => Sched::Runtime,
        _ => {
            eprintln!("weft-omp: unknown loop schedule {sched} from the compiler; using static");
            Sched::Fixed(STATIC, 0)
        }
    };
    (s, ordered)
}

/// What `__kmpc_for_static_init` hands one thread back: its first iterations
/// `lower..=upper` (a chunk, or the whole block), the stride to its next chunk, and whether
/// it runs the loop's last iteration. Values are within the loop type's range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StaticInit {
    pub last: bool,
    pub lower: i128,
    pub upper: i128,
    pub stride: i128,
}

/// Thread `tid` of `nth`'s share of the static loop `lower..=upper` by `incr` under
/// `sched`; `min..=max` is the loop type's range, `smax` its signed type's maximum (the
/// stride's). An empty share is `lower > upper` (`<` counting down) even after the
/// compiler clamps `upper` to the loop's own.
#[allow(clippy::too_many_arguments)]
pub(crate) fn static_init(
    sched: i32,
    lower: i128,
    upper: i128,
    incr: i128,
    chunk: i64,
    tid: u32,
    nth: u32,
    (min, max, smax): (i128, i128, i128),
) -> StaticInit {
    let b = LoopBounds::inclusive(lower, upper, incr);
    let n = b.n as i128;
    let (nth, tid) = (nth.max(1) as i128, tid as i128);
    let value = |k: i128| lower + k * incr;
    let stride = |s: i128| s.clamp(-smax - 1, smax);
    let empty =
        StaticInit { last: false, lower: if incr > 0 { max } else { min }, upper: if incr > 0 { min } else { max }, stride: stride(incr) };
    if n == 0 {
        return StaticInit { last: false, lower, upper, stride: stride(incr) };
    }
    match decode(sched, chunk).0 {
        Sched::Fixed(STATIC, c) if c > 0 => {
            let c = c as i128;
            let first = tid * c;
            if first >= n {
                return empty;
            }
            StaticInit {
                last: ((n - 1) / c) % nth == tid,
                lower: value(first),
                upper: value((first + c).min(n) - 1),
                stride: stride(nth * c * incr),
            }
        }
        _ => {
            let (a, z) = ws::static_block(n as u64, nth as u64, tid as u64);
            if a == z {
                return empty;
            }
            StaticInit { last: z as i128 == n, lower: value(a as i128), upper: value(z as i128 - 1), stride: stride(n * incr) }
        }
    }
}

/// A team's share of a `distribute` loop over `nteams` teams: its iterations (the block
/// `a..z` of the loop's `n`, as libomp's balanced split), empty when `a == z`.
fn team_block(lower: i128, upper: i128, incr: i128, team: u32, nteams: u32) -> (u64, u64, u64) {
    let n = LoopBounds::inclusive(lower, upper, incr).n;
    let (a, z) = ws::static_block(n, nteams.max(1) as u64, team as u64);
    (a, z, n)
}

/// `__kmpc_dist_for_static_init` (`distribute parallel for` in one call): team `team` of
/// `nteams` takes its block of `lower..=upper`, then thread `tid` of `nth` its share of that
/// block under `sched` (a static schedule). Also returns the team's last iteration (the
/// `pupperD` bound the compiler clamps chunks to; the team's empty bound when it has none).
#[allow(clippy::too_many_arguments)]
pub(crate) fn dist_static_init(
    sched: i32,
    lower: i128,
    upper: i128,
    incr: i128,
    chunk: i64,
    (team, nteams): (u32, u32),
    (tid, nth): (u32, u32),
    range: (i128, i128, i128),
) -> (StaticInit, i128) {
    let (a, z, n) = team_block(lower, upper, incr, team, nteams);
    if a == z {
        let (min, max, smax) = range;
        let (lo, hi) = if incr > 0 { (max, min) } else { (min, max) };
        return (StaticInit { last: false, lower: lo, upper: hi, stride: incr.clamp(-smax - 1, smax) }, hi);
    }
    let (lo, hi) = (lower + a as i128 * incr, lower + (z as i128 - 1) * incr);
    let mut s = static_init(sched, lo, hi, incr, chunk, tid, nth, range);
    s.last &= z == n;
    (s, hi)
}

/// `__kmpc_dist_dispatch_init`: team `team` of `nteams`'s block of `lower..=upper` (a
/// dynamic loop over the team's threads follows), and whether it holds the last iteration.
pub(crate) fn dist_dispatch_bounds(lower: i128, upper: i128, incr: i128, (team, nteams): (u32, u32)) -> (LoopBounds, bool) {
    let (a, z, n) = team_block(lower, upper, incr, team, nteams);
    if a == z {
        return (LoopBounds { n: 0, ..LoopBounds::inclusive(lower, lower, incr) }, false);
    }
    (LoopBounds::inclusive(lower + a as i128 * incr, lower + (z as i128 - 1) * incr, incr), z == n)
}

/// The host `teams` construct the calling thread is in: (team number, number of teams).
fn teams() -> (u32, u32) {
    let (num, n) = crate::abi::parallel::teams();
    (num.max(0) as u32, n.max(1) as u32)
}

/// Who shares a static loop: a `distribute` loop's iterations go to the teams of the
/// enclosing host `teams` construct (run one after the other), any other's to the threads
/// of the calling thread's team.
fn sharers(sched: i32, c: &crate::team::Ctx) -> (u32, u32) {
    if matches!(sched & !MODIFIERS, DISTRIBUTE_STATIC | DISTRIBUTE_STATIC_CHUNKED) { teams() } else { (c.tid, c.team().n) }
}

/// The construct a static loop init starts, for its trace slice: clang runs `sections` and
/// `distribute` as static loops, and marks their `ident_t`; a distribute schedule says so too.
fn static_name(loc: Ident, sched: i32) -> &'static str {
    let flags = super::ident_flags(loc);
    if flags & super::IDENT_WORK_DISTRIBUTE != 0 || matches!(sched & !MODIFIERS, DISTRIBUTE_STATIC | DISTRIBUTE_STATIC_CHUNKED) {
        "omp distribute"
    } else if flags & super::IDENT_WORK_SECTIONS != 0 {
        "omp sections"
    } else {
        "omp for"
    }
}

macro_rules! kmp_loops {
    ($($t:ty, $st:ty => $init:ident, $dinit:ident, $next:ident, $fini:ident;)*) => {$(
        /// # Safety
        /// The out-pointers are valid for reads and writes (`plastiter` may be null).
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $init(loc: Ident, _gtid: i32, sched: i32, plastiter: *mut i32, plower: *mut $t, pupper: *mut $t, pstride: *mut $st, incr: $st, chunk: $st) {
            guard(stringify!($init), || {
                let c = ctx();
                let range = (<$t>::MIN as i128, <$t>::MAX as i128, <$st>::MAX as i128);
                // SAFETY: the compiler passes its loop variables.
                let (lower, upper) = unsafe { (*plower as i128, *pupper as i128) };
                let (tid, nth) = sharers(sched, c);
                let s = static_init(sched, lower, upper, incr as i128, chunk as i64, tid, nth, range);
                if crate::trace::on() {
                    ws::trace_begin(c, static_name(loc, sched));
                }
                // SAFETY: as above; the values are within the types' ranges.
                unsafe {
                    *plower = s.lower as $t;
                    *pupper = s.upper as $t;
                    *pstride = s.stride as $st;
                    if !plastiter.is_null() {
                        *plastiter = i32::from(s.last);
                    }
                }
            })
        }

        #[unsafe(no_mangle)]
        pub extern "C" fn $dinit(_loc: Ident, _gtid: i32, sched: i32, lb: $t, ub: $t, st: $st, chunk: $st) {
            guard(stringify!($dinit), || {
                let (s, ordered) = decode(sched, chunk as i64);
                let (kind, chunk) = match s {
                    Sched::Fixed(k, c) => (k, c),
                    Sched::Runtime => crate::abi::loop_::runtime(),
                };
                ws::loop_start(LoopBounds::inclusive(lb as i128, ub as i128, st as i128), kind, chunk, ordered);
            })
        }

        /// The calling thread's next chunk: 1 and its bounds, or 0 at the loop's end.
        ///
        /// # Safety
        /// The out-pointers are valid for writes (`plast` may be null).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $next(_loc: Ident, _gtid: i32, plast: *mut i32, plower: *mut $t, pupper: *mut $t, pstride: *mut $st) -> i32 {
            guard(stringify!($next), || match ws::next_chunk_and_bounds_held() {
                (Some((a, z)), Some(b)) => {
                    // SAFETY: the compiler passes its loop variables. The values are those
                    // of the loop's type, widened and truncated back (two's complement).
                    unsafe {
                        *plower = b.value(a) as $t;
                        *pupper = b.value(z - 1) as $t;
                        *pstride = b.incr as $st;
                        if !plast.is_null() {
                            *plast = i32::from(z == b.n);
                        }
                    }
                    1
                }
                _ => {
                    ws::leave(ctx());
                    0
                }
            })
        }

        /// The end of one iteration of an ordered loop: nothing to do. The ordered turn is
        /// a chunk's (ws.rs, libgomp's scheme): it passes on when the thread asks for its
        /// next chunk, whether or not the chunk's iterations ran an ordered region, and a
        /// chunk whose loop has not called `__kmpc_ordered` waits for it before it is handed
        /// out (`ws::next_chunk_and_bounds_held`: clang 14's `ordered threads simd`).
        #[unsafe(no_mangle)]
        pub extern "C" fn $fini(_loc: Ident, _gtid: i32) {}
    )*};
}
kmp_loops! {
    i32, i32 => __kmpc_for_static_init_4, __kmpc_dispatch_init_4, __kmpc_dispatch_next_4, __kmpc_dispatch_fini_4;
    u32, i32 => __kmpc_for_static_init_4u, __kmpc_dispatch_init_4u, __kmpc_dispatch_next_4u, __kmpc_dispatch_fini_4u;
    i64, i64 => __kmpc_for_static_init_8, __kmpc_dispatch_init_8, __kmpc_dispatch_next_8, __kmpc_dispatch_fini_8;
    u64, i64 => __kmpc_for_static_init_8u, __kmpc_dispatch_init_8u, __kmpc_dispatch_next_8u, __kmpc_dispatch_fini_8u;
}

macro_rules! kmp_dist_loops {
    ($($t:ty, $st:ty => $init:ident, $dinit:ident, $team:ident;)*) => {$(
        /// `distribute parallel for` with a static schedule: the team's block of the loop,
        /// then the calling thread's share of it.
        ///
        /// # Safety
        /// The out-pointers are valid for reads and writes (`plastiter` may be null).
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $init(_loc: Ident, _gtid: i32, sched: i32, plastiter: *mut i32, plower: *mut $t, pupper: *mut $t, pupperd: *mut $t, pstride: *mut $st, incr: $st, chunk: $st) {
            guard(stringify!($init), || {
                let c = ctx();
                let range = (<$t>::MIN as i128, <$t>::MAX as i128, <$st>::MAX as i128);
                // SAFETY: the compiler passes its loop variables.
                let (lower, upper) = unsafe { (*plower as i128, *pupper as i128) };
                let (s, upper_d) = dist_static_init(sched, lower, upper, incr as i128, chunk as i64, teams(), (c.tid, c.team().n), range);
                ws::trace_begin(c, "omp distribute parallel for");
                // SAFETY: as above; the values are within the types' ranges.
                unsafe {
                    *plower = s.lower as $t;
                    *pupper = s.upper as $t;
                    *pstride = s.stride as $st;
                    if !pupperd.is_null() {
                        *pupperd = upper_d as $t;
                    }
                    if !plastiter.is_null() {
                        *plastiter = i32::from(s.last);
                    }
                }
            })
        }

        /// `distribute parallel for` with a dynamic schedule: the team's block of the loop,
        /// then `__kmpc_dispatch_next` hands its chunks to the team's threads.
        ///
        /// # Safety
        /// `plast` is null or valid for writes.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $dinit(_loc: Ident, _gtid: i32, sched: i32, plast: *mut i32, lb: $t, ub: $t, st: $st, chunk: $st) {
            guard(stringify!($dinit), || {
                let (b, last) = dist_dispatch_bounds(lb as i128, ub as i128, st as i128, teams());
                if !plast.is_null() {
                    // SAFETY: per the contract.
                    unsafe { *plast = i32::from(last) };
                }
                let (s, ordered) = decode(sched, chunk as i64);
                let (kind, chunk) = match s {
                    Sched::Fixed(k, c) => (k, c),
                    Sched::Runtime => crate::abi::loop_::runtime(),
                };
                ws::loop_start(b, kind, chunk, ordered);
                ws::trace_rename("omp distribute parallel for");
            })
        }

        /// `dist_schedule(static, chunk)`: the calling team's first chunk of the loop and
        /// the stride to its next.
        ///
        /// # Safety
        /// The out-pointers are valid for reads and writes (`plast` may be null).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $team(_loc: Ident, _gtid: i32, plast: *mut i32, plower: *mut $t, pupper: *mut $t, pstride: *mut $st, incr: $st, chunk: $st) {
            guard(stringify!($team), || {
                let range = (<$t>::MIN as i128, <$t>::MAX as i128, <$st>::MAX as i128);
                // SAFETY: the compiler passes its loop variables.
                let (lower, upper) = unsafe { (*plower as i128, *pupper as i128) };
                let (team, nteams) = teams();
                let s = static_init(DISTRIBUTE_STATIC_CHUNKED, lower, upper, incr as i128, chunk as i64, team, nteams, range);
                // SAFETY: as above.
                unsafe {
                    *plower = s.lower as $t;
                    *pupper = s.upper as $t;
                    *pstride = s.stride as $st;
                    if !plast.is_null() {
                        *plast = i32::from(s.last);
                    }
                }
            })
        }
    )*};
}
kmp_dist_loops! {
    i32, i32 => __kmpc_dist_for_static_init_4, __kmpc_dist_dispatch_init_4, __kmpc_team_static_init_4;
    u32, i32 => __kmpc_dist_for_static_init_4u, __kmpc_dist_dispatch_init_4u, __kmpc_team_static_init_4u;
    i64, i64 => __kmpc_dist_for_static_init_8, __kmpc_dist_dispatch_init_8, __kmpc_team_static_init_8;
    u64, i64 => __kmpc_dist_for_static_init_8u, __kmpc_dist_dispatch_init_8u, __kmpc_team_static_init_8u;
}

/// The end of a static loop: nothing to release (no worksharing slot was taken).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_for_static_fini(_loc: Ident, _gtid: i32) {
    ws::trace_end_current();
}

#[cfg(test)]
mod tests {
    use super::*;

    const I32: (i128, i128, i128) = (i32::MIN as i128, i32::MAX as i128, i32::MAX as i128);
    const U32: (i128, i128, i128) = (0, u32::MAX as i128, i32::MAX as i128);

    #[test]
    fn schedule_kinds() {
        assert_eq!(decode(34, 0), (Sched::Fixed(STATIC, 0), false));
        assert_eq!(decode(33, 4), (Sched::Fixed(STATIC, 4), false));
        // clang 14: schedule(dynamic, 3) is nonmonotonic dynamic.
        assert_eq!(decode(0x4000_0023, 3), (Sched::Fixed(DYNAMIC, 3), false));
        assert_eq!(decode(35 | 1 << 29, 0), (Sched::Fixed(DYNAMIC, 1), false));
        assert_eq!(decode(36, 2), (Sched::Fixed(GUIDED, 2), false));
        assert_eq!(decode(37, 0), (Sched::Runtime, false));
        assert_eq!(decode(38, 0), (Sched::Runtime, false));
        // Ordered: 32 higher; clang 14 marks ordered guided nonmonotonic too.
        assert_eq!(decode(0x4000_0044, 1), (Sched::Fixed(GUIDED, 1), true));
        assert_eq!(decode(66, 0), (Sched::Fixed(STATIC, 0), true));
        assert_eq!(decode(65, 5), (Sched::Fixed(STATIC, 5), true));
        assert_eq!(decode(69, 0), (Sched::Runtime, true));
        // nomerge: 128 higher.
        assert_eq!(decode(163, 2), (Sched::Fixed(DYNAMIC, 2), false));
        assert_eq!(decode(92, 0), (Sched::Fixed(STATIC, 0), false));
        assert_eq!(decode(91, 8), (Sched::Fixed(STATIC, 8), false));
    }

    /// The compiler's loop over one thread's static share: each chunk's upper bound clamped
    /// to `bound`, stepping by the stride (once for unchunked `static`); its iterations go
    /// into `seen`.
    fn run_chunks(sched: i32, s: &StaticInit, bound: i128, seen: &mut Vec<i128>) {
        let (mut lb, mut ub) = (s.lower, s.upper);
        loop {
            ub = ub.min(bound);
            if lb > ub {
                break;
            }
            seen.extend(lb..=ub);
            if sched == SCH_STATIC {
                break;
            }
            lb += s.stride;
            ub += s.stride;
        }
    }

    /// Every iteration of `lower..=upper` exactly once over the team, following the
    /// compiler's loop (clamp the chunk's upper bound to the loop's, step by the stride).
    fn cover(sched: i32, lower: i128, upper: i128, chunk: i64, nth: u32, range: (i128, i128, i128)) -> Vec<i128> {
        let mut seen = Vec::new();
        let mut lasts = 0;
        for tid in 0..nth {
            let s = static_init(sched, lower, upper, 1, chunk, tid, nth, range);
            assert!(s.lower >= range.0 && s.lower <= range.1 && s.upper >= range.0 && s.upper <= range.1, "{s:?}");
            lasts += i32::from(s.last);
            run_chunks(sched, &s, upper, &mut seen);
        }
        assert_eq!(lasts, i32::from(upper >= lower), "exactly one thread runs the last iteration");
        seen.sort();
        seen
    }

    /// `distribute parallel for` through `dist_static_init`: every iteration once over all
    /// teams' threads, following the compiler's loop (chunks clamped to the team's bound),
    /// and exactly one thread of one team runs the last.
    #[test]
    fn dist_static_covers_each_iteration_once() {
        for (nteams, nth) in [(1, 1), (2, 3), (3, 2), (5, 4)] {
            for (lo, hi) in [(0, 99), (0, 0), (5, 4), (-10, 10), (0, 2)] {
                for (sched, chunk) in [(SCH_STATIC, 0), (SCH_STATIC_CHUNKED, 1), (SCH_STATIC_CHUNKED, 3)] {
                    let mut seen = Vec::new();
                    let mut lasts = 0;
                    for team in 0..nteams {
                        for tid in 0..nth {
                            let (s, ud) = dist_static_init(sched, lo, hi, 1, chunk, (team, nteams), (tid, nth), I32);
                            lasts += i32::from(s.last);
                            run_chunks(sched, &s, ud, &mut seen);
                        }
                    }
                    seen.sort();
                    let want: Vec<i128> = (lo..=hi).collect();
                    assert_eq!(seen, want, "{sched}/{chunk}: {lo}..={hi} on {nteams}x{nth}");
                    assert_eq!(lasts, i32::from(hi >= lo), "{sched}/{chunk}: {lo}..={hi} on {nteams}x{nth}");
                }
            }
        }
        // 10 iterations on 3 teams: blocks of 4, 3, 3; team 1's second thread of 2 gets 6.
        let (s, ud) = dist_static_init(SCH_STATIC, 0, 9, 1, 0, (1, 3), (1, 2), I32);
        assert_eq!((s.lower, s.upper, ud, s.last), (6, 6, 6, false));
        // Counting down, unsigned: the teams' blocks stay inside the type.
        let (s, ud) = dist_static_init(SCH_STATIC, 9, 0, -1, 0, (2, 3), (0, 1), U32);
        assert_eq!((s.lower, s.upper, ud, s.last), (2, 0, 0, true));
    }

    #[test]
    fn dist_dispatch_takes_the_teams_block() {
        let (b, last) = dist_dispatch_bounds(0, 9, 1, (0, 3));
        assert_eq!((b, last), (LoopBounds::inclusive(0, 3, 1), false));
        let (b, last) = dist_dispatch_bounds(0, 9, 1, (2, 3));
        assert_eq!((b, last), (LoopBounds::inclusive(7, 9, 1), true));
        // More teams than iterations: the last ones get nothing.
        let (b, last) = dist_dispatch_bounds(0, 1, 1, (3, 4));
        assert_eq!((b.n, last), (0, false));
        let (b, last) = dist_dispatch_bounds(0, 1, 1, (1, 4));
        assert_eq!((b.n, last), (1, true));
    }

    #[test]
    fn static_chunking() {
        for nth in [1, 2, 3, 7] {
            for (lo, hi) in [(0, 99), (0, 0), (5, 4), (-10, 10)] {
                let want: Vec<i128> = (lo..=hi).collect();
                assert_eq!(cover(SCH_STATIC, lo, hi, 0, nth, I32), want, "static {lo}..={hi} on {nth}");
                for c in [1, 4, 200] {
                    assert_eq!(cover(SCH_STATIC_CHUNKED, lo, hi, c, nth, I32), want, "chunk {c} {lo}..={hi} on {nth}");
                }
            }
        }
        // Blocks: 10 on 3 threads is 4, 3, 3.
        let s = static_init(SCH_STATIC, 0, 9, 1, 0, 1, 3, I32);
        assert_eq!((s.lower, s.upper, s.last), (4, 6, false));
        let s = static_init(SCH_STATIC, 0, 9, 1, 0, 2, 3, I32);
        assert_eq!((s.lower, s.upper, s.last), (7, 9, true));
        // Chunks of 4 on 2 threads: thread 1 starts at 4, strides 8, and owns chunk 2 (8, 9)?
        // No: chunks 0 (0..4) and 2 (8..10) are thread 0's, so it runs the last one.
        let s = static_init(SCH_STATIC_CHUNKED, 0, 9, 1, 4, 1, 2, I32);
        assert_eq!((s.lower, s.upper, s.stride, s.last), (4, 7, 8, false));
        assert!(static_init(SCH_STATIC_CHUNKED, 0, 9, 1, 4, 0, 2, I32).last);
        // A thread with nothing to do at the top of an unsigned range stays empty.
        let s = static_init(SCH_STATIC, 0, 1, 1, 0, 2, 3, U32);
        assert!(s.lower > s.upper.min(1) && !s.last, "{s:?}");
        let top = u32::MAX as i128;
        assert_eq!(cover(SCH_STATIC, top - 5, top, 0, 4, U32), ((top - 5)..=top).collect::<Vec<_>>());
    }
}
