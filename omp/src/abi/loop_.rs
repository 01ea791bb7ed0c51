//! Worksharing loops (`long` and `unsigned long long`), ordered, doacross and sections.
//!
//! Quirks decoded here: exclusive upper bounds (`iend`), the `sched` word of the GCC 9+
//! entry points (`GFS_*` with the monotonic bit), the `ull` forms' `up` flag, and the
//! variadic `GOMP_doacross_wait` (read as fixed arguments: on x86-64 the first six come in
//! registers and the rest from the caller's stack, as for a non-variadic function).

use super::gomp::reduction::Descriptor;
use super::guard;
use crate::env::SCHED_MONOTONIC;
use crate::team::{self, ctx};
use crate::ws::{self, DYNAMIC, GUIDED, LoopBounds, STATIC};
use std::ffi::{c_long, c_uint, c_ulonglong, c_void};

const GFS_RUNTIME: i32 = 0;
const GFS_AUTO: i32 = 4;

/// `sched` of GOMP_loop_start and friends → (kind, chunk).
fn decode(sched: c_long, chunk: u64) -> (i32, u64) {
    match (sched as i32) & !SCHED_MONOTONIC {
        STATIC => (STATIC, chunk),
        DYNAMIC => (DYNAMIC, chunk),
        GUIDED => (GUIDED, chunk),
        GFS_RUNTIME | GFS_AUTO => runtime(),
        k => {
            eprintln!("weft-omp: unknown loop schedule {k} from the compiler; using static");
            (STATIC, 0)
        }
    }
}

pub(crate) fn runtime() -> (i32, u64) {
    let (k, c) = team::run_sched();
    match k {
        STATIC | DYNAMIC | GUIDED => (k, c.max(0) as u64),
        _ => (STATIC, 0),
    }
}

/// Write the chunk's values; false when none is left.
///
/// # Safety
/// `istart`/`iend` are valid for writes.
unsafe fn put<T: Copy>(r: Option<(u64, u64)>, b: LoopBounds, istart: *mut T, iend: *mut T, conv: fn(u64) -> T) -> bool {
    match r {
        Some((a, z)) => {
            let (s, e) = b.values(a, z);
            // SAFETY: per the contract.
            unsafe {
                *istart = conv(s);
                *iend = conv(e);
            }
            true
        }
        None => false,
    }
}

fn to_long(x: u64) -> c_long {
    x as c_long
}
fn to_ull(x: u64) -> c_ulonglong {
    x
}

/// Next chunk of the current loop into `istart`/`iend`.
///
/// # Safety
/// As [`put`].
unsafe fn next_long(istart: *mut c_long, iend: *mut c_long) -> bool {
    let (r, b) = ws::next_chunk_and_bounds();
    let Some(b) = b else { return false };
    // SAFETY: per the contract.
    unsafe { put(r, b, istart, iend, to_long) }
}

/// # Safety
/// As [`put`].
unsafe fn next_ull(istart: *mut c_ulonglong, iend: *mut c_ulonglong) -> bool {
    let (r, b) = ws::next_chunk_and_bounds();
    let Some(b) = b else { return false };
    // SAFETY: per the contract.
    unsafe { put(r, b, istart, iend, to_ull) }
}

macro_rules! loop_start {
    ($($name:ident => ($sched:expr, $ordered:expr)),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(start: c_long, end: c_long, incr: c_long, chunk: c_long, istart: *mut c_long, iend: *mut c_long) -> bool {
            guard(stringify!($name), || {
                ws::loop_start(LoopBounds::long(start, end, incr), $sched, chunk.max(0) as u64, $ordered);
                // SAFETY: the compiler passes valid out-pointers.
                unsafe { next_long(istart, iend) }
            })
        }
    )*};
}
loop_start! {
    GOMP_loop_static_start => (STATIC, false),
    GOMP_loop_dynamic_start => (DYNAMIC, false),
    GOMP_loop_guided_start => (GUIDED, false),
    GOMP_loop_nonmonotonic_dynamic_start => (DYNAMIC, false),
    GOMP_loop_nonmonotonic_guided_start => (GUIDED, false),
    GOMP_loop_ordered_static_start => (STATIC, true),
    GOMP_loop_ordered_dynamic_start => (DYNAMIC, true),
    GOMP_loop_ordered_guided_start => (GUIDED, true),
}

macro_rules! loop_runtime_start {
    ($($name:ident => $ordered:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(start: c_long, end: c_long, incr: c_long, istart: *mut c_long, iend: *mut c_long) -> bool {
            guard(stringify!($name), || {
                let (k, c) = runtime();
                ws::loop_start(LoopBounds::long(start, end, incr), k, c, $ordered);
                // SAFETY: the compiler passes valid out-pointers.
                unsafe { next_long(istart, iend) }
            })
        }
    )*};
}
loop_runtime_start! {
    GOMP_loop_runtime_start => false,
    GOMP_loop_nonmonotonic_runtime_start => false,
    GOMP_loop_maybe_nonmonotonic_runtime_start => false,
    GOMP_loop_ordered_runtime_start => true,
}

macro_rules! loop_next {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(istart: *mut c_long, iend: *mut c_long) -> bool {
            // SAFETY: the compiler passes valid out-pointers.
            guard(stringify!($name), || unsafe { next_long(istart, iend) })
        }
    )*};
}
loop_next! {
    GOMP_loop_static_next, GOMP_loop_dynamic_next, GOMP_loop_guided_next, GOMP_loop_runtime_next,
    GOMP_loop_nonmonotonic_dynamic_next, GOMP_loop_nonmonotonic_guided_next, GOMP_loop_nonmonotonic_runtime_next,
    GOMP_loop_maybe_nonmonotonic_runtime_next,
    GOMP_loop_ordered_static_next, GOMP_loop_ordered_dynamic_next, GOMP_loop_ordered_guided_next, GOMP_loop_ordered_runtime_next,
}

#[allow(clippy::too_many_arguments)]
fn loop_start_gcc9(
    b: LoopBounds,
    sched: c_long,
    chunk: u64,
    ordered: bool,
    reductions: *mut usize,
    mem: *mut *mut c_void,
    what: &str,
) -> bool {
    let _ = what;
    let (k, c) = decode(sched, chunk);
    // SAFETY: `mem`, when not null, holds the size of the scratch memory wanted.
    let size = (!mem.is_null()).then(|| unsafe { *mem } as usize);
    // SAFETY: the compiler's task reduction descriptors, or null.
    let red = unsafe { Descriptor::from_raw(reductions) };
    let (_, m) = ws::loop_start_full(b, k, c, ordered, None, size, red);
    if !mem.is_null() {
        // SAFETY: as above.
        unsafe { *mem = m as *mut c_void };
    }
    true
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_start(
    start: c_long,
    end: c_long,
    incr: c_long,
    sched: c_long,
    chunk: c_long,
    istart: *mut c_long,
    iend: *mut c_long,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_start", || {
        loop_start_gcc9(LoopBounds::long(start, end, incr), sched, chunk.max(0) as u64, false, reductions, mem, "GOMP_loop_start");
        // SAFETY: the compiler passes valid out-pointers (or a null istart: no chunk wanted).
        istart.is_null() || unsafe { next_long(istart, iend) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ordered_start(
    start: c_long,
    end: c_long,
    incr: c_long,
    sched: c_long,
    chunk: c_long,
    istart: *mut c_long,
    iend: *mut c_long,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_ordered_start", || {
        loop_start_gcc9(LoopBounds::long(start, end, incr), sched, chunk.max(0) as u64, true, reductions, mem, "GOMP_loop_ordered_start");
        // SAFETY: as GOMP_loop_start.
        istart.is_null() || unsafe { next_long(istart, iend) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ull_start(
    up: bool,
    start: c_ulonglong,
    end: c_ulonglong,
    incr: c_ulonglong,
    sched: c_long,
    chunk: c_ulonglong,
    istart: *mut c_ulonglong,
    iend: *mut c_ulonglong,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_ull_start", || {
        loop_start_gcc9(LoopBounds::ull(up, start, end, incr), sched, chunk, false, reductions, mem, "GOMP_loop_ull_start");
        // SAFETY: as GOMP_loop_start.
        istart.is_null() || unsafe { next_ull(istart, iend) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ull_ordered_start(
    up: bool,
    start: c_ulonglong,
    end: c_ulonglong,
    incr: c_ulonglong,
    sched: c_long,
    chunk: c_ulonglong,
    istart: *mut c_ulonglong,
    iend: *mut c_ulonglong,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_ull_ordered_start", || {
        loop_start_gcc9(LoopBounds::ull(up, start, end, incr), sched, chunk, true, reductions, mem, "GOMP_loop_ull_ordered_start");
        // SAFETY: as GOMP_loop_start.
        istart.is_null() || unsafe { next_ull(istart, iend) }
    })
}

macro_rules! loop_ull_start {
    ($($name:ident => ($sched:expr, $ordered:expr)),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(up: bool, start: c_ulonglong, end: c_ulonglong, incr: c_ulonglong, chunk: c_ulonglong, istart: *mut c_ulonglong, iend: *mut c_ulonglong) -> bool {
            guard(stringify!($name), || {
                ws::loop_start(LoopBounds::ull(up, start, end, incr), $sched, chunk, $ordered);
                // SAFETY: the compiler passes valid out-pointers.
                unsafe { next_ull(istart, iend) }
            })
        }
    )*};
}
loop_ull_start! {
    GOMP_loop_ull_static_start => (STATIC, false),
    GOMP_loop_ull_dynamic_start => (DYNAMIC, false),
    GOMP_loop_ull_guided_start => (GUIDED, false),
    GOMP_loop_ull_nonmonotonic_dynamic_start => (DYNAMIC, false),
    GOMP_loop_ull_nonmonotonic_guided_start => (GUIDED, false),
    GOMP_loop_ull_ordered_static_start => (STATIC, true),
    GOMP_loop_ull_ordered_dynamic_start => (DYNAMIC, true),
    GOMP_loop_ull_ordered_guided_start => (GUIDED, true),
}

macro_rules! loop_ull_runtime_start {
    ($($name:ident => $ordered:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(up: bool, start: c_ulonglong, end: c_ulonglong, incr: c_ulonglong, istart: *mut c_ulonglong, iend: *mut c_ulonglong) -> bool {
            guard(stringify!($name), || {
                let (k, c) = runtime();
                ws::loop_start(LoopBounds::ull(up, start, end, incr), k, c, $ordered);
                // SAFETY: the compiler passes valid out-pointers.
                unsafe { next_ull(istart, iend) }
            })
        }
    )*};
}
loop_ull_runtime_start! {
    GOMP_loop_ull_runtime_start => false,
    GOMP_loop_ull_nonmonotonic_runtime_start => false,
    GOMP_loop_ull_maybe_nonmonotonic_runtime_start => false,
    GOMP_loop_ull_ordered_runtime_start => true,
}

macro_rules! loop_ull_next {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(istart: *mut c_ulonglong, iend: *mut c_ulonglong) -> bool {
            // SAFETY: the compiler passes valid out-pointers.
            guard(stringify!($name), || unsafe { next_ull(istart, iend) })
        }
    )*};
}
loop_ull_next! {
    GOMP_loop_ull_static_next, GOMP_loop_ull_dynamic_next, GOMP_loop_ull_guided_next, GOMP_loop_ull_runtime_next,
    GOMP_loop_ull_nonmonotonic_dynamic_next, GOMP_loop_ull_nonmonotonic_guided_next, GOMP_loop_ull_nonmonotonic_runtime_next,
    GOMP_loop_ull_maybe_nonmonotonic_runtime_next,
    GOMP_loop_ull_ordered_static_next, GOMP_loop_ull_ordered_dynamic_next, GOMP_loop_ull_ordered_guided_next, GOMP_loop_ull_ordered_runtime_next,
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_loop_end() {
    guard("GOMP_loop_end", || {
        let c = ctx();
        ws::leave(c);
        c.team().barrier();
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_loop_end_nowait() {
    guard("GOMP_loop_end_nowait", || ws::leave(ctx()))
}

/// The end of a loop in a region with cancellation: a cancellable barrier.
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_loop_end_cancel() -> bool {
    guard("GOMP_loop_end_cancel", end_cancel)
}

/// True only when the enclosing parallel region was cancelled (the caller then jumps to
/// its end); a cancelled loop or sections construct simply ends here.
fn end_cancel() -> bool {
    let c = ctx();
    ws::leave(c);
    let t = c.team();
    t.cbarrier()
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_ordered_start() {
    let traced = crate::trace::start();
    guard("GOMP_ordered_start", ws::ordered_start);
    crate::trace::enter(traced);
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_ordered_end() {
    // The turn passes on when the thread is done with its chunk (libgomp's scheme).
    crate::trace::exit("omp ordered");
}

// ---------------------------------------------------------------------------------------
// Doacross.

/// # Safety
/// `counts` holds `ncounts` values.
unsafe fn counts_of<T: Copy + Into<i128>>(ncounts: c_uint, counts: *const T) -> Vec<u64> {
    // SAFETY: per the contract.
    (0..ncounts as usize).map(|i| unsafe { *counts.add(i) }.into().max(0) as u64).collect()
}

fn doacross_start_long(counts: Vec<u64>, sched: i32, chunk: u64, istart: *mut c_long, iend: *mut c_long, reductions: *mut usize) -> bool {
    let n0 = counts.first().copied().unwrap_or(0);
    // SAFETY: the compiler's task reduction descriptors, or null.
    let red = unsafe { Descriptor::from_raw(reductions) };
    ws::loop_start_full(LoopBounds::long(0, n0 as i64, 1), sched, chunk, false, Some(&counts), None, red);
    // SAFETY: the compiler passes valid out-pointers.
    !istart.is_null() && unsafe { next_long(istart, iend) }
}

fn doacross_start_ull(
    counts: Vec<u64>,
    sched: i32,
    chunk: u64,
    istart: *mut c_ulonglong,
    iend: *mut c_ulonglong,
    reductions: *mut usize,
) -> bool {
    let n0 = counts.first().copied().unwrap_or(0);
    // SAFETY: the compiler's task reduction descriptors, or null.
    let red = unsafe { Descriptor::from_raw(reductions) };
    ws::loop_start_full(LoopBounds::ull(true, 0, n0, 1), sched, chunk, false, Some(&counts), None, red);
    // SAFETY: the compiler passes valid out-pointers.
    !istart.is_null() && unsafe { next_ull(istart, iend) }
}

macro_rules! doacross_start {
    ($($name:ident => $sched:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ncounts: c_uint, counts: *const c_long, chunk: c_long, istart: *mut c_long, iend: *mut c_long) -> bool {
            // SAFETY: the compiler passes ncounts counts.
            guard(stringify!($name), || doacross_start_long(unsafe { counts_of(ncounts, counts) }, $sched, chunk.max(0) as u64, istart, iend, std::ptr::null_mut()))
        }
    )*};
}
doacross_start! {
    GOMP_loop_doacross_static_start => STATIC,
    GOMP_loop_doacross_dynamic_start => DYNAMIC,
    GOMP_loop_doacross_guided_start => GUIDED,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_doacross_runtime_start(
    ncounts: c_uint,
    counts: *const c_long,
    istart: *mut c_long,
    iend: *mut c_long,
) -> bool {
    guard("GOMP_loop_doacross_runtime_start", || {
        let (k, c) = runtime();
        // SAFETY: the compiler passes ncounts counts.
        doacross_start_long(unsafe { counts_of(ncounts, counts) }, k, c, istart, iend, std::ptr::null_mut())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_doacross_start(
    ncounts: c_uint,
    counts: *const c_long,
    sched: c_long,
    chunk: c_long,
    istart: *mut c_long,
    iend: *mut c_long,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_doacross_start", || {
        if !mem.is_null() {
            eprintln!("weft-omp: GOMP_loop_doacross_start: scratch memory is not supported; aborting");
            std::process::abort();
        }
        let (k, c) = decode(sched, chunk.max(0) as u64);
        // SAFETY: the compiler passes ncounts counts.
        doacross_start_long(unsafe { counts_of(ncounts, counts) }, k, c, istart, iend, reductions)
    })
}

macro_rules! doacross_ull_start {
    ($($name:ident => $sched:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ncounts: c_uint, counts: *const c_ulonglong, chunk: c_ulonglong, istart: *mut c_ulonglong, iend: *mut c_ulonglong) -> bool {
            // SAFETY: the compiler passes ncounts counts.
            guard(stringify!($name), || doacross_start_ull(unsafe { counts_of(ncounts, counts) }, $sched, chunk, istart, iend, std::ptr::null_mut()))
        }
    )*};
}
doacross_ull_start! {
    GOMP_loop_ull_doacross_static_start => STATIC,
    GOMP_loop_ull_doacross_dynamic_start => DYNAMIC,
    GOMP_loop_ull_doacross_guided_start => GUIDED,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ull_doacross_runtime_start(
    ncounts: c_uint,
    counts: *const c_ulonglong,
    istart: *mut c_ulonglong,
    iend: *mut c_ulonglong,
) -> bool {
    guard("GOMP_loop_ull_doacross_runtime_start", || {
        let (k, c) = runtime();
        // SAFETY: the compiler passes ncounts counts.
        doacross_start_ull(unsafe { counts_of(ncounts, counts) }, k, c, istart, iend, std::ptr::null_mut())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_ull_doacross_start(
    ncounts: c_uint,
    counts: *const c_ulonglong,
    sched: c_long,
    chunk: c_ulonglong,
    istart: *mut c_ulonglong,
    iend: *mut c_ulonglong,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    guard("GOMP_loop_ull_doacross_start", || {
        if !mem.is_null() {
            eprintln!("weft-omp: GOMP_loop_ull_doacross_start: scratch memory is not supported; aborting");
            std::process::abort();
        }
        let (k, c) = decode(sched, chunk);
        // SAFETY: the compiler passes ncounts counts.
        doacross_start_ull(unsafe { counts_of(ncounts, counts) }, k, c, istart, iend, reductions)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_doacross_post(counts: *const c_long) {
    let traced = crate::trace::start();
    guard("GOMP_doacross_post", || {
        let n = ws::doacross_ncounts();
        // SAFETY: the compiler passes one count per doacross dimension.
        let v: Vec<u64> = (0..n).map(|i| unsafe { *counts.add(i) }.max(0) as u64).collect();
        if !v.is_empty() {
            ws::doacross_post(&v);
        }
    });
    crate::trace::end(traced, "omp ordered depend(source)");
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_doacross_ull_post(counts: *const c_ulonglong) {
    let traced = crate::trace::start();
    guard("GOMP_doacross_ull_post", || {
        let n = ws::doacross_ncounts();
        // SAFETY: the compiler passes one count per doacross dimension.
        let v: Vec<u64> = (0..n).map(|i| unsafe { *counts.add(i) }).collect();
        if !v.is_empty() {
            ws::doacross_post(&v);
        }
    });
    crate::trace::end(traced, "omp ordered depend(source)");
}

/// The body of both `GOMP_doacross_wait` forms: `regs` holds the six register arguments,
/// `stack` the caller's stack arguments (the seventh onwards).
///
/// # Safety
/// Called only by the naked entry points below, with the caller's arguments.
unsafe extern "C" fn doacross_wait_impl(regs: *const u64, stack: *const u64) {
    let traced = crate::trace::start();
    guard("GOMP_doacross_wait", || {
        let n = ws::doacross_ncounts();
        // SAFETY: the caller passed one argument per doacross dimension: the first six in
        // registers (spilled to `regs`), the others on its stack.
        let v: Vec<u64> = (0..n).map(|i| unsafe { if i < 6 { *regs.add(i) } else { *stack.add(i - 6) } }).collect();
        if !v.is_empty() {
            ws::doacross_wait(&v);
        }
    });
    crate::trace::end(traced, "omp ordered depend(sink)");
}

/// `void GOMP_doacross_wait (long first, ...)`: variadic, which stable Rust cannot define;
/// this x86-64 entry spills the six argument registers next to each other and hands their
/// address and the address of the stack arguments to [`doacross_wait_impl`]. Negative
/// (out of range) values compare as huge unsigned ones and never wait.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_doacross_wait() {
    std::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push r9",
        "push r8",
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "mov rdi, rsp",
        "lea rsi, [rbp + 16]",
        "call {imp}",
        "leave",
        "ret",
        imp = sym doacross_wait_impl,
    )
}

/// `void GOMP_doacross_ull_wait (unsigned long long first, ...)`: as [`GOMP_doacross_wait`].
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_doacross_ull_wait() {
    std::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push r9",
        "push r8",
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "mov rdi, rsp",
        "lea rsi, [rbp + 16]",
        "call {imp}",
        "leave",
        "ret",
        imp = sym doacross_wait_impl,
    )
}

// ---------------------------------------------------------------------------------------
// Sections.

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_sections_start(count: c_uint) -> c_uint {
    guard("GOMP_sections_start", || ws::sections_start(count))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_sections2_start(count: c_uint, reductions: *mut usize, mem: *mut *mut c_void) -> c_uint {
    guard("GOMP_sections2_start", || {
        // SAFETY: `mem`, when not null, holds the size of the scratch memory wanted.
        let size = (!mem.is_null()).then(|| unsafe { *mem } as usize);
        // SAFETY: the compiler's task reduction descriptors, or null.
        let red = unsafe { Descriptor::from_raw(reductions) };
        let (_, m) = ws::loop_start_full(LoopBounds::long(1, count as i64 + 1, 1), DYNAMIC, 1, false, None, size, red);
        ws::trace_sections();
        if !mem.is_null() {
            // SAFETY: as above.
            unsafe { *mem = m as *mut c_void };
        }
        ws::sections_next()
    })
}

/// The first call of each thread of a combined `parallel sections` comes here (the fork set
/// the construct up as a loop): its trace slice is renamed `omp sections`.
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_sections_next() -> c_uint {
    ws::trace_sections();
    guard("GOMP_sections_next", ws::sections_next)
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_sections_end() {
    GOMP_loop_end()
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_sections_end_nowait() {
    GOMP_loop_end_nowait()
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_sections_end_cancel() -> bool {
    guard("GOMP_sections_end_cancel", end_cancel)
}

/// `#pragma omp scope` with task reductions (OpenMP 5.1): a worksharing construct without
/// iterations whose reductions the first thread allocates for the team; the construct ends
/// with GOMP_workshare_task_reduction_unregister.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_scope_start(reductions: *mut usize) {
    guard("GOMP_scope_start", || {
        if reductions.is_null() {
            return;
        }
        // SAFETY: the compiler's task reduction descriptors, or null.
        let red = unsafe { Descriptor::from_raw(reductions) };
        ws::loop_start_full(LoopBounds::long(0, 0, 1), STATIC, 0, false, None, None, red);
        // Every thread has read the first one's blocks before it leaves the slot.
        ws::leave(ctx());
    })
}
