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
pub mod cancel;
pub mod fork;
pub mod loop_;
pub mod sync;
pub mod task;
pub mod taskred;

/// `ident_t *`: the source location the compiler passes first; unused.
pub type Ident = *const std::ffi::c_void;
