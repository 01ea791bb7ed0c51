//! Parallel regions (GOMP_parallel and the GCC < 4.9 start/end pair), the combined
//! parallel-loop and parallel-sections entry points, teams on the host, cancellation.

use super::guard;
use crate::env::{SCHED_MONOTONIC, env};
use crate::outlined::Outlined;
use crate::team::{self, Body, ctx};
use crate::ws::{self, DYNAMIC, GUIDED, LoopBounds, STATIC};
use std::ffi::{c_int, c_long, c_uint, c_void};
use std::sync::atomic::Ordering;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel(f: Body, data: *mut c_void, num_threads: c_uint, flags: c_uint) {
    // SAFETY: the compiler-outlined body with its data, for this region.
    let body = unsafe { Outlined::new(f, data) };
    guard("GOMP_parallel", || team::parallel(body, num_threads, flags, None))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_start(f: Body, data: *mut c_void, num_threads: c_uint) {
    // The caller runs thread 0's share itself, then calls GOMP_parallel_end.
    // SAFETY: the compiler-outlined body with its data, for this region.
    let body = unsafe { Outlined::new(f, data) };
    guard("GOMP_parallel_start", || team::fork(Some(body), num_threads, 0, true, None))
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_parallel_end() {
    guard("GOMP_parallel_end", team::join)
}

/// The schedule a combined construct's `sched` argument or `runtime` means.
fn runtime_sched() -> (i32, u64) {
    let (k, c) = team::run_sched();
    match k {
        STATIC | DYNAMIC | GUIDED => (k, c.max(0) as u64),
        _ => (STATIC, 0),
    }
}

#[allow(clippy::too_many_arguments)]
fn parallel_loop(body: Outlined, nthreads: c_uint, b: LoopBounds, sched: i32, chunk: u64, flags: c_uint, split: bool) {
    let setup = move |w: &ws::WorkShare, n: u32| w.setup_first(b, sched, chunk, n);
    if split {
        team::fork(Some(body), nthreads, flags, true, Some(&setup));
    } else {
        team::parallel(body, nthreads, flags, Some(&setup));
    }
}

/// [`Outlined::new`] for the combined constructs' entry points.
///
/// # Safety
/// As [`Outlined::new`]: the body and data a GOMP entry point received, for its region.
unsafe fn outlined(f: Body, data: *mut c_void) -> Outlined {
    // SAFETY: the compiler-outlined body with its data, for this region.
    unsafe { Outlined::new(f, data) }
}

macro_rules! parallel_loop {
    ($($name:ident => $sched:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(f: Body, data: *mut c_void, nthreads: c_uint, start: c_long, end: c_long, incr: c_long, chunk: c_long, flags: c_uint) {
            guard(stringify!($name), || parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(start, end, incr), $sched, chunk.max(0) as u64, flags, false))
        }
    )*};
}
parallel_loop! {
    GOMP_parallel_loop_static => STATIC,
    GOMP_parallel_loop_dynamic => DYNAMIC,
    GOMP_parallel_loop_guided => GUIDED,
    GOMP_parallel_loop_nonmonotonic_dynamic => DYNAMIC,
    GOMP_parallel_loop_nonmonotonic_guided => GUIDED,
}

macro_rules! parallel_loop_runtime {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(f: Body, data: *mut c_void, nthreads: c_uint, start: c_long, end: c_long, incr: c_long, flags: c_uint) {
            guard(stringify!($name), || {
                let (k, c) = runtime_sched();
                parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(start, end, incr), k, c, flags, false)
            })
        }
    )*};
}
parallel_loop_runtime! {
    GOMP_parallel_loop_runtime,
    GOMP_parallel_loop_nonmonotonic_runtime,
    GOMP_parallel_loop_maybe_nonmonotonic_runtime,
}

macro_rules! parallel_loop_start {
    ($($name:ident => $sched:expr),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(f: Body, data: *mut c_void, nthreads: c_uint, start: c_long, end: c_long, incr: c_long, chunk: c_long) {
            guard(stringify!($name), || parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(start, end, incr), $sched, chunk.max(0) as u64, 0, true))
        }
    )*};
}
parallel_loop_start! {
    GOMP_parallel_loop_static_start => STATIC,
    GOMP_parallel_loop_dynamic_start => DYNAMIC,
    GOMP_parallel_loop_guided_start => GUIDED,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_loop_runtime_start(
    f: Body,
    data: *mut c_void,
    nthreads: c_uint,
    start: c_long,
    end: c_long,
    incr: c_long,
) {
    guard("GOMP_parallel_loop_runtime_start", || {
        let (k, c) = runtime_sched();
        parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(start, end, incr), k, c, 0, true)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_sections(f: Body, data: *mut c_void, nthreads: c_uint, count: c_uint, flags: c_uint) {
    guard("GOMP_parallel_sections", || {
        parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(1, count as i64 + 1, 1), DYNAMIC, 1, flags, false)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_sections_start(f: Body, data: *mut c_void, nthreads: c_uint, count: c_uint) {
    guard("GOMP_parallel_sections_start", || {
        parallel_loop(unsafe { outlined(f, data) }, nthreads, LoopBounds::long(1, count as i64 + 1, 1), DYNAMIC, 1, 0, true)
    })
}

// ---------------------------------------------------------------------------------------
// Cancellation.

const CANCEL_PARALLEL: c_int = 1;
const CANCEL_LOOP: c_int = 2;
const CANCEL_SECTIONS: c_int = 4;
const CANCEL_TASKGROUP: c_int = 8;

fn cancelled(which: c_int) -> bool {
    let c = ctx();
    let t = c.team();
    if t.cancelled.load(Ordering::Acquire) {
        return true;
    }
    if which & (CANCEL_LOOP | CANCEL_SECTIONS) != 0 {
        return ws::current(c).is_some_and(|w| w.cancelled.load(Ordering::Acquire));
    }
    if which & CANCEL_TASKGROUP != 0 {
        return crate::task::taskgroup_cancelled();
    }
    false
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_cancellation_point(which: c_int) -> bool {
    if !env().cancellation {
        return false;
    }
    guard("GOMP_cancellation_point", || cancelled(which))
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_cancel(which: c_int, do_cancel: bool) -> bool {
    if !env().cancellation {
        return false;
    }
    guard("GOMP_cancel", || {
        if !do_cancel {
            return cancelled(which);
        }
        let c = ctx();
        let t = c.team();
        if which & CANCEL_PARALLEL != 0 {
            // Release: pairs with the cancellable barriers' Acquire loads.
            t.cancelled.store(true, Ordering::Release);
            t.cbar.wake_all();
            return true;
        }
        if which & (CANCEL_LOOP | CANCEL_SECTIONS) != 0 {
            if let Some(w) = ws::current(c) {
                w.cancelled.store(true, Ordering::Release);
            }
            return true;
        }
        if which & CANCEL_TASKGROUP != 0 {
            return crate::task::cancel_taskgroup();
        }
        false
    })
}

// ---------------------------------------------------------------------------------------
// Teams on the host: run the teams one after the other on the encountering thread.

/// (team number, number of teams) of the calling task's host `teams` construct ((0, 1)
/// outside any): an ICV, so that it reaches the regions the teams fork.
pub(crate) fn teams() -> (c_int, c_int) {
    ctx().icv.teams
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_teams_reg(f: Body, data: *mut c_void, num_teams: c_uint, thread_limit: c_uint, _flags: c_uint) {
    guard("GOMP_teams_reg", || {
        let dflt = super::icv::omp_get_max_teams();
        let n = if num_teams == 0 { if dflt > 0 { dflt } else { 3 } } else { num_teams.min(i32::MAX as u32) as c_int };
        let limit = if thread_limit == 0 { super::icv::omp_get_teams_thread_limit().max(0) as u32 } else { thread_limit };
        let c = ctx();
        let old = c.icv.thread_limit;
        if limit > 0 {
            c.icv.thread_limit = limit;
        }
        let outer = c.icv.teams;
        for i in 0..n {
            ctx().icv.teams = (i, n);
            let traced = crate::trace::start();
            // SAFETY: the compiler-outlined teams body with its data.
            unsafe { f(data) };
            crate::trace::end(traced, "omp teams");
        }
        let c = ctx();
        c.icv.teams = outer;
        c.icv.thread_limit = old;
    })
}

#[allow(dead_code)]
const _: i32 = SCHED_MONOTONIC;
