//! The LLVM libomp ABI (`__kmpc_*`) that clang emits for host code: the same runtime as the
//! GOMP entry points (one team, worksharing and lock machinery, two ABIs; DESIGN.md "The
//! OpenMP runtime"). libweft.so defines libomp's symbol version node `VERSION`
//! (omp/libgomp.map), so it stands in for `libomp.so.5` and wins under `LD_PRELOAD`.
//!
//! Quirks decoded here: the variadic `__kmpc_fork_call` (x86-64 only: two naked functions
//! read the varargs and pass them on to the outlined microtask, as LLVM's
//! `__kmp_invoke_microtask` does; `fork.rs`), `num_threads`/`proc_bind` pushed before the
//! fork rather than passed to it, inclusive loop upper bounds and the `sched_type` numbers
//! with their modifier bits (`loop_.rs`), and the reduction protocol (`sync.rs`). The
//! `gtid` argument every entry point takes is ignored: the calling thread's context is
//! thread-local already.
#![cfg(target_arch = "x86_64")]

pub mod api;
pub mod atomic;
pub mod atomic_x87;
pub mod cancel;
pub mod doacross;
pub mod fork;
pub mod loop_;
pub mod sync;
pub mod task;
pub mod taskred;
pub mod threadprivate;

/// `ident_t *`: the source location the compiler passes first; unused but for traces
/// ([`psource`]).
pub type Ident = *const std::ffi::c_void;

/// `ident_t` (LLVM's kmp.h): four 32-bit words, then the location string.
#[repr(C)]
struct IdentT {
    reserved_1: i32,
    flags: i32,
    reserved_2: i32,
    reserved_3: i32,
    /// ";file;function;line;column;;", NUL-terminated.
    psource: *const std::ffi::c_char,
}

/// `ident_t` flags marking the construct a static loop init starts (libomp's kmp.h, read by
/// its OMPT support; clang sets them): a `sections` construct, a `distribute` loop.
pub(crate) const IDENT_WORK_SECTIONS: i32 = 0x400;
pub(crate) const IDENT_WORK_DISTRIBUTE: i32 = 0x800;

/// The flags of `ident` (an [`Ident`] a compiler passed; 0 for a null one).
pub(crate) fn ident_flags(ident: Ident) -> i32 {
    if ident.is_null() {
        return 0;
    }
    // SAFETY: as in `psource`: a constant `ident_t` clang emits, live for the whole process.
    unsafe { (*(ident as *const IdentT)).flags }
}

/// The location string of `ident` (an [`Ident`] a compiler passed; 0: none), if it has one
/// in UTF-8.
pub(crate) fn psource(ident: usize) -> Option<&'static str> {
    if ident == 0 {
        return None;
    }
    // SAFETY: `ident` is an `ident_t*` clang passed to an entry point: a constant it emits
    // in the program's read-only data (never on the stack), live for the whole process.
    let p = unsafe { (*(ident as *const IdentT)).psource };
    if p.is_null() {
        return None;
    }
    // SAFETY: as above; a non-null `psource` is a NUL-terminated constant string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()
}

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Kinds of [`team_shared`] state.
pub(crate) const SHARED_TASKRED: u8 = 0;
pub(crate) const SHARED_TASKRED_WS: u8 = 1;
pub(crate) const SHARED_DOACROSS: u8 = 2;
const SHARED_KINDS: usize = 3;

type Pending = HashMap<(usize, u8, u64), (Arc<dyn Any + Send + Sync>, u32)>;
/// State being handed to the team's threads: (team, kind, construct count) → the state
/// and the threads still to take it.
static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

thread_local! {
    /// Per kind: (team, count) of the constructs of that kind this thread entered in that
    /// team. The team's threads meet the constructs in the same order, so the count names
    /// one even when a thread runs ahead into the next (`nowait`).
    static SEQ: std::cell::Cell<[(usize, u64); SHARED_KINDS]> = const { std::cell::Cell::new([(0, 0); SHARED_KINDS]) };
}

/// State of the construct of kind `kind` the calling thread's team is entering, which this
/// ABI keeps outside the team (the compiler hands each thread only its own pointers): the
/// first of the team's threads to arrive makes it with `make`, every thread gets it.
pub(crate) fn team_shared<T: Send + Sync + 'static>(kind: u8, make: impl FnOnce(u32) -> T) -> Arc<T> {
    let team = crate::team::ctx().team();
    let (id, n) = (team as *const crate::team::Team as usize, team.n);
    let seq = SEQ.with(|s| {
        let mut v = s.get();
        let (t, c) = v[kind as usize];
        let c = if t == id { c + 1 } else { 0 };
        v[kind as usize] = (id, c);
        s.set(v);
        c
    });
    let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let map = p.get_or_insert_with(HashMap::new);
    let key = (id, kind, seq);
    let e = map.entry(key).or_insert_with(|| (Arc::new(make(n)) as Arc<dyn Any + Send + Sync>, n));
    e.1 -= 1;
    let got = e.0.clone();
    if e.1 == 0 {
        map.remove(&key);
    }
    drop(p);
    got.downcast::<T>().unwrap_or_else(|_| unreachable!("a construct's state has the type of its kind"))
}
