//! Barriers, single (with copyprivate), master/masked, critical, reductions, ordered and
//! flush, on the team's barrier, `ws::single_start`, the futex locks of lock.rs and
//! `ws::ordered_start`, as their GOMP counterparts.
//!
//! A `kmp_critical_name` is 32 zeroed bytes the compiler emits per name (unnamed
//! `critical` too); its first 4 bytes are the lock word, as for GOMP's named sections. A
//! reduction takes libomp's "atomic" method (2) where libomp takes it: the compiler
//! generated it (the `ident_t` flag `KMP_IDENT_ATOMIC_REDUCE`) and the team has at most 4
//! threads; each thread then combines its partial results into the shared ones with atomic
//! updates (or its own `critical` where a type has none), with no lock of ours. Otherwise
//! the "critical" method (1): each thread combines under the lock the compiler passes, then
//! calls `__kmpc_end_reduce*`. The tree method (0 in all threads but one) is a valid choice
//! we do not make.

use super::Ident;
use crate::abi::guard;
use crate::lock;
use crate::team::ctx;
use crate::ws;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lock word of a `kmp_critical_name`.
///
/// # Safety
/// `crit` is the compiler's zero-initialized, 4-byte aligned `kmp_critical_name`, alive as
/// long as the program.
unsafe fn word<'a>(crit: *mut [i32; 8]) -> &'a AtomicU32 {
    // SAFETY: per the contract; only these functions access the word.
    unsafe { AtomicU32::from_ptr(crit as *mut u32) }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_barrier(_loc: Ident, _gtid: i32) {
    guard("__kmpc_barrier", || ctx().team().barrier())
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_flush(_loc: Ident) {
    std::sync::atomic::fence(Ordering::SeqCst);
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_single(_loc: Ident, _gtid: i32) -> i32 {
    guard("__kmpc_single", || i32::from(ws::single_start()))
}

/// The compiler puts the barrier after the region itself (none with `nowait`).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_single(_loc: Ident, _gtid: i32) {
    crate::ws::trace_end_current();
}

/// The thread that runs the block calls `__kmpc_end_master` after it (the others do not).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_master(_loc: Ident, _gtid: i32) -> i32 {
    guard("__kmpc_master", || {
        let me = ctx().tid == 0;
        if me {
            crate::trace::enter_now();
        }
        i32::from(me)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_master(_loc: Ident, _gtid: i32) {
    crate::trace::exit("omp master");
}

/// As [`__kmpc_master`], for the thread numbered `filter`.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_masked(_loc: Ident, _gtid: i32, filter: i32) -> i32 {
    guard("__kmpc_masked", || {
        let me = i64::from(ctx().tid) == i64::from(filter);
        if me {
            crate::trace::enter_now();
        }
        i32::from(me)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_masked(_loc: Ident, _gtid: i32) {
    crate::trace::exit("omp masked");
}

/// `single copyprivate(...)`: the thread that ran the region (`didit`) publishes its
/// `data`; after a barrier the others copy from it with `copy(dst, src)`; a second barrier
/// keeps the source alive until they are done (as `GOMP_single_copy_start/end`).
///
/// # Safety
/// `copy` copies between two of the compiler's copyprivate lists; `data` is this thread's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_copyprivate(
    _loc: Ident,
    _gtid: i32,
    _size: usize,
    data: *mut c_void,
    copy: unsafe extern "C" fn(*mut c_void, *mut c_void),
    didit: i32,
) {
    guard("__kmpc_copyprivate", || {
        let t = ctx().team();
        if didit != 0 {
            // Release: the region's values, to the threads that copy them after the barrier.
            t.copyprivate.store(data, Ordering::Release);
        }
        t.barrier();
        if didit == 0 {
            // SAFETY: per the contract; the source list is alive until the next barrier.
            unsafe { copy(data, t.copyprivate.load(Ordering::Acquire)) };
        }
        t.barrier();
    })
}

/// # Safety
/// `crit` is the compiler's `kmp_critical_name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_critical(_loc: Ident, _gtid: i32, crit: *mut [i32; 8]) {
    let traced = crate::trace::start();
    // SAFETY: per the contract.
    lock::lock(unsafe { word(crit) });
    crate::trace::enter(traced);
}

/// # Safety
/// As [`__kmpc_critical`]; the hint changes nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_critical_with_hint(loc: Ident, gtid: i32, crit: *mut [i32; 8], _hint: u32) {
    // SAFETY: the same contract.
    unsafe { __kmpc_critical(loc, gtid, crit) }
}

/// # Safety
/// As [`__kmpc_critical`], held by the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_end_critical(_loc: Ident, _gtid: i32, crit: *mut [i32; 8]) {
    // SAFETY: per the contract.
    lock::unlock(unsafe { word(crit) });
    crate::trace::exit("omp critical");
}

/// libomp's "critical" reduction method: the compiler then combines under `lck` and calls
/// `__kmpc_end_reduce_nowait` (`__kmpc_end_reduce`).
const CRITICAL_REDUCE: i32 = 1;
/// libomp's "atomic" method: the compiler combines with atomic updates, then calls
/// `__kmpc_end_reduce` in the blocking form and nothing in the `nowait` one.
const ATOMIC_REDUCE: i32 = 2;
/// `ident_t` flag: the compiler generated the atomic method's code (libomp's
/// `KMP_IDENT_ATOMIC_REDUCE`; clang sets it on every reduction's `ident_t`).
const IDENT_ATOMIC_REDUCE: i32 = 0x10;
/// The largest team that takes the atomic method (libomp's `teamsize_cutoff` on x86-64):
/// atomic updates of the shared variables beat a lock handed from thread to thread, but
/// an array reduction is an atomic update per element, and with more threads contending
/// for the same lines the lock's one pass per thread wins.
const ATOMIC_REDUCE_MAX_TEAM: u32 = 4;

thread_local! {
    /// Whether this thread's current blocking reduction holds its lock (the critical
    /// method): `__kmpc_end_reduce` releases it, and is called after the atomic method too.
    static REDUCE_LOCKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The method for a reduction at `loc` in a team of `n` threads.
fn reduce_method(loc: Ident, n: u32) -> i32 {
    if super::ident_flags(loc) & IDENT_ATOMIC_REDUCE != 0 && n <= ATOMIC_REDUCE_MAX_TEAM { ATOMIC_REDUCE } else { CRITICAL_REDUCE }
}

/// # Safety
/// `lck` is the compiler's `kmp_critical_name` for the reduction; `loc` null or the
/// compiler's `ident_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_reduce_nowait(
    loc: Ident,
    _gtid: i32,
    _nvars: i32,
    _size: usize,
    _data: *mut c_void,
    _func: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    lck: *mut [i32; 8],
) -> i32 {
    let method = guard("__kmpc_reduce_nowait", || reduce_method(loc, ctx().team().n));
    if method == CRITICAL_REDUCE {
        // SAFETY: per the contract.
        lock::lock(unsafe { word(lck) });
    }
    method
}

/// Only after the critical method (the compiler calls nothing after the atomic one).
///
/// # Safety
/// As [`__kmpc_reduce_nowait`], held by the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_end_reduce_nowait(_loc: Ident, _gtid: i32, lck: *mut [i32; 8]) {
    // SAFETY: per the contract.
    lock::unlock(unsafe { word(lck) })
}

/// The blocking form: as `nowait`, and `__kmpc_end_reduce` (after either method) ends
/// with the barrier.
///
/// # Safety
/// As [`__kmpc_reduce_nowait`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_reduce(
    loc: Ident,
    gtid: i32,
    nvars: i32,
    size: usize,
    data: *mut c_void,
    func: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    lck: *mut [i32; 8],
) -> i32 {
    // SAFETY: the same contract.
    let method = unsafe { __kmpc_reduce_nowait(loc, gtid, nvars, size, data, func, lck) };
    REDUCE_LOCKED.with(|l| l.set(method == CRITICAL_REDUCE));
    method
}

/// # Safety
/// `lck` as [`__kmpc_reduce`]'s, which the calling thread called last.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_end_reduce(loc: Ident, gtid: i32, lck: *mut [i32; 8]) {
    if REDUCE_LOCKED.with(|l| l.replace(false)) {
        // SAFETY: the same contract; the critical method took the lock.
        unsafe { __kmpc_end_reduce_nowait(loc, gtid, lck) };
    }
    guard("__kmpc_end_reduce", || ctx().team().barrier())
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_ordered(_loc: Ident, _gtid: i32) {
    let traced = crate::trace::start();
    guard("__kmpc_ordered", ws::kmp_ordered_start);
    crate::trace::enter(traced);
}

/// The turn passes on at the end of the thread's chunk (as `GOMP_ordered_end`).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_ordered(_loc: Ident, _gtid: i32) {
    crate::trace::exit("omp ordered");
}
