//! The C API of the runtime: `include/weft.h` is generated from this module by cbindgen
//! (`cbindgen.toml`, checked by `tests/header.rs`).
//!
//! **This module is core's FFI boundary.** It holds the only `extern "C"` functions of the
//! crate, which is why it allows `unsafe_code` (core denies it elsewhere): every entry point
//! converts raw pointers, opaque handles and integer flags into Rust values, calls the safe
//! Rust API, and turns the `Result` into the C convention (0 or a negative `weft_error`,
//! with a message for `weft_last_error`). Every body runs under `catch_unwind`: a panic
//! never crosses `extern "C"`; it becomes `WEFT_EINTERNAL`. Nothing reachable from C calls
//! `unwrap()`.
//!
//! **Owns**: the process-wide runtime of C programs (below), the C-side objects
//! (`weft_data_handle` boxes in `data`, `struct weft_task` boxes and the conversion of
//! `struct weft_codelet` in `task`), and error reporting (`error`).
//! **Does not own**: any runtime behaviour; everything is delegated to `Runtime`,
//! `DataHandle` and `TaskBuilder`.
//!
//! **The one global.** C has no `Runtime` value to pass around, so `weft_init` stores one in
//! `GLOBAL`, a `static Mutex<Global>`: the process-wide runtime that C programs use (and that
//! other front ends can share through [`runtime`], and other crates' C APIs through
//! [`share_runtime`]). It is the one exception to "nothing is
//! global" (STYLE.md §5). Entry points lock it only long enough to clone an `Arc<State>`;
//! no lock of it is held while a call blocks or a task runs. `weft_init` and
//! `weft_shutdown` nest like StarPU's `starpu_init`/`starpu_shutdown`: the runtime stops at
//! the last `weft_shutdown`.
//!
//! **Handle validation.** Opaque objects (`weft_data_handle`, `struct weft_task *`) begin
//! with a magic number that is checked on every call and cleared when the object is freed:
//! NULL and foreign pointers are reported as `WEFT_EINVAL`; a freed object is caught as long
//! as its memory was not reused (best effort, as in OpenCL implementations).
#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

pub mod data;
pub mod error;
pub mod task;

use self::error::{CError, CResult, ret_code, ret_value, weft_error};
use crate::error::Error;
use crate::runtime::Runtime;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_ulonglong};
use std::sync::{Arc, Mutex, MutexGuard};

/// Lock ignoring poisoning: bodies run under `catch_unwind`, and the data these mutexes
/// guard (maps of pointers, reference counts) is updated in single steps.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a C program's runtime consists of.
pub(crate) struct State {
    pub rt: Arc<Runtime>,
    /// Root handles registered through the C API: handle id → its `weft_data_handle` box
    /// (as an address). Used by `weft_data_lookup` and by `weft_shutdown`.
    pub roots: Mutex<HashMap<u64, usize>>,
    /// Core codelets converted from `struct weft_codelet`s, by address.
    pub codelets: Mutex<task::CodeletCache>,
}

struct Global {
    state: Option<Arc<State>>,
    /// Calls of `weft_init` not yet matched by `weft_shutdown`.
    refs: usize,
}

/// The process-wide runtime of the C API (see the module doc: the one global).
static GLOBAL: Mutex<Global> = Mutex::new(Global { state: None, refs: 0 });

/// The runtime of the C API, if `weft_init` was called (for other front ends to share it).
pub fn runtime() -> Option<Arc<Runtime>> {
    lock(&GLOBAL).state.as_ref().map(|s| s.rt.clone())
}

/// The process-wide runtime, started from the environment if nobody started it yet: what the
/// other front ends (OpenMP, the OpenCL ICD) use, so that one process has one pool of workers.
/// Each call that starts it holds a reference that is never dropped: a C program's last
/// `weft_shutdown` then leaves it running for the front end that shares it.
pub fn shared_runtime() -> Result<Arc<Runtime>, Error> {
    shared_runtime_with(|_| {})
}

/// [`shared_runtime`], with `adjust` applied to the configuration read from the environment
/// if this call starts it (a front end's defaults: the OpenMP runtime leaves accelerators
/// out of a process that has no OpenCL library loaded).
pub fn shared_runtime_with(adjust: impl FnOnce(&mut crate::Config)) -> Result<Arc<Runtime>, Error> {
    let mut g = lock(&GLOBAL);
    if let Some(s) = &g.state {
        return Ok(s.rt.clone());
    }
    let mut config = crate::Config::from_env()?;
    adjust(&mut config);
    let rt = Arc::new(Runtime::new(config)?);
    g.state =
        Some(Arc::new(State { rt: rt.clone(), roots: Mutex::new(HashMap::new()), codelets: Mutex::new(task::CodeletCache::default()) }));
    g.refs = 1;
    Ok(rt)
}

/// At process exit (or when libweft.so is unloaded), print the statistics of a runtime that is
/// still running when `WEFT_STATS=1`, and write its trace under `WEFT_TRACE`: the shared
/// runtime of a program run through the OpenMP or OpenCL front end is never shut down, so
/// this is where it shows where tasks ran. A runtime stopped by `weft_shutdown` printed and
/// wrote its own when it stopped. Also saves the process's performance models, which that
/// runtime measured.
extern "C" fn report_stats_at_exit() {
    // The front ends' runtime is never shut down: its performance models are saved here.
    let _ = std::panic::catch_unwind(crate::perfmodel::save_all);
    let _ = std::panic::catch_unwind(|| {
        // try_lock: at exit another thread may be stopped inside a critical section.
        let Ok(g) = GLOBAL.try_lock() else { return };
        if let Some(st) = &g.state
            && st.rt.config().stats
        {
            eprint!("weft: statistics at exit\n{}", st.rt.stats_report());
        }
        if let Some(st) = &g.state {
            st.rt.write_trace();
        }
    });
}

// SAFETY (link section): an entry of `.fini_array` is a pointer to a function taking and
// returning nothing, which the dynamic loader calls once when this module is unloaded or
// the process exits; `report_stats_at_exit` is such a function and never unwinds.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".fini_array")]
static REPORT_STATS_AT_EXIT: extern "C" fn() = report_stats_at_exit;

/// The C API's runtime (the one `weft_init` started), held by another crate's C API that
/// the same library exports (weft-mpi's `weft_mpi_init`), so that its calls act on the
/// handles and tasks of this one. Holding it counts as one more `weft_init`: a
/// `weft_shutdown` made while it is held does not stop the runtime, and dropping it is the
/// matching `weft_shutdown` (waiting for the tasks, and stopping the runtime if it is the
/// last reference; an error is printed on stderr). Drop it on an application thread, not
/// inside a task.
pub struct SharedRuntime {
    rt: Arc<Runtime>,
}

impl std::ops::Deref for SharedRuntime {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.rt
    }
}

impl Drop for SharedRuntime {
    fn drop(&mut self) {
        // `rt` drops after this: if `shutdown` dropped the State, the runtime stops on this
        // thread, once this reference goes.
        if let Err(e) = error::guarded(shutdown) {
            eprintln!("weft: releasing the runtime shared with another C API: {}", e.msg);
        }
    }
}

/// Take a reference to the C API's runtime ([`SharedRuntime`]); `WEFT_ENOTINIT` if
/// `weft_init` has not been called. Unlike [`shared_runtime`], it never starts one.
pub fn share_runtime() -> CResult<SharedRuntime> {
    let mut g = lock(&GLOBAL);
    let st =
        g.state.clone().ok_or_else(|| CError::new(weft_error::WEFT_ENOTINIT, "the runtime is not initialised: call weft_init first"))?;
    g.refs += 1;
    Ok(SharedRuntime { rt: st.rt.clone() })
}

pub(crate) fn state() -> CResult<Arc<State>> {
    lock(&GLOBAL)
        .state
        .clone()
        .ok_or_else(|| CError::new(weft_error::WEFT_ENOTINIT, "the runtime is not initialised: call weft_init first"))
}

fn init() -> CResult<()> {
    let mut g = lock(&GLOBAL);
    if g.state.is_some() {
        g.refs += 1;
        return Ok(());
    }
    let rt = Runtime::from_env()?;
    g.state =
        Some(Arc::new(State { rt: Arc::new(rt), roots: Mutex::new(HashMap::new()), codelets: Mutex::new(task::CodeletCache::default()) }));
    g.refs = 1;
    Ok(())
}

fn shutdown() -> CResult<()> {
    let st = {
        let mut g = lock(&GLOBAL);
        match g.refs {
            0 => return Ok(()),
            1 => {}
            _ => {
                g.refs -= 1;
                return Ok(());
            }
        }
        state_of(&g)?
    };
    // Wait without the lock: running tasks may still call the C API (e.g. submit tasks).
    let drained = match st.rt.wait_for_all() {
        Ok(()) => true,
        Err(Error::WouldDeadlock) => {
            return Err(CError::new(weft_error::WEFT_EDEADLK, "weft_shutdown called from inside a task: ignored"));
        }
        Err(_) => false,
    };
    {
        let mut g = lock(&GLOBAL);
        match &g.state {
            Some(s) if Arc::ptr_eq(s, &st) => {}
            // Another thread shut the runtime down meanwhile.
            _ => return Ok(()),
        }
        if g.refs > 1 {
            // Another thread called weft_init meanwhile: it keeps the runtime.
            g.refs -= 1;
            return Ok(());
        }
        g.state = None;
        g.refs = 0;
    }
    data::retire_roots(&st, drained);
    // Stop the workers here, not on whichever thread drops the last reference (a worker
    // cannot join itself): other references are only held for the duration of a call.
    let mut st = st;
    loop {
        match Arc::try_unwrap(st) {
            Ok(s) => {
                drop(s);
                return Ok(());
            }
            Err(s) => {
                st = s;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

fn state_of(g: &Global) -> CResult<Arc<State>> {
    g.state.clone().ok_or_else(|| CError::new(weft_error::WEFT_EINTERNAL, "invariant: an initialised runtime has a state"))
}

/// Start the process-wide runtime, configured from the environment: `WEFT_NCPU` (CPU
/// workers), `WEFT_SCHED` (policy), `WEFT_STATS`, … (every variable is listed in
/// core/src/config.rs). StarPU's `starpu_init(NULL)`.
///
/// Returns 0, or `WEFT_ECONFIG` when a variable is malformed (the message names it). Calls
/// nest: each successful `weft_init` must be matched by one `weft_shutdown`; the runtime
/// stops at the last one.
#[unsafe(no_mangle)]
pub extern "C" fn weft_init() -> c_int {
    ret_code(init)
}

/// Wait for every submitted task, unregister the data handles still registered (writing
/// their data back, with a warning on stderr), and stop the workers.
///
/// Matches one `weft_init` (only the last call stops the runtime). Called from inside a task,
/// it does nothing and records `WEFT_EDEADLK` for `weft_last_error`. Data handles and tasks
/// must not be used after the runtime stopped, except that `weft_data_unregister` still frees
/// a handle that shutdown unregistered.
#[unsafe(no_mangle)]
pub extern "C" fn weft_shutdown() {
    if ret_code(shutdown) != 0 {
        eprintln!(
            "weft: weft_shutdown: {}",
            // SAFETY: weft_last_error returns a NUL-terminated string owned by this thread.
            unsafe { std::ffi::CStr::from_ptr(error::weft_last_error()) }.to_string_lossy()
        );
    }
}

/// Block until every submitted task has completed.
///
/// Returns 0, `WEFT_EDEADLK` from inside a task, `WEFT_ESTALLED` when the remaining tasks
/// wait on tags that no task carries, `WEFT_ETASK` when tasks failed or were cancelled since
/// the previous call (`weft_last_error` names the first; each failure is reported once), or
/// `WEFT_ENOTINIT`. Like StarPU's, it does not return
/// while the calling thread holds acquired (`weft_data_acquire`) data that a submitted task
/// waits for.
#[unsafe(no_mangle)]
pub extern "C" fn weft_task_wait_for_all() -> c_int {
    ret_code(|| Ok(state()?.rt.wait_for_all()?))
}

/// The number of workers (CPU workers and device drivers); 0 if the runtime is not initialised.
#[unsafe(no_mangle)]
pub extern "C" fn weft_worker_count() -> c_uint {
    ret_value(0, || Ok(c_uint::try_from(state()?.rt.workers().len()).unwrap_or(c_uint::MAX)))
}

/// The number of tasks worker `worker` (0 ≤ worker < `weft_worker_count()`) has run so far;
/// 0 for an unknown worker or when the runtime is not initialised.
#[unsafe(no_mangle)]
pub extern "C" fn weft_worker_task_count(worker: c_uint) -> c_ulonglong {
    ret_value(0, || {
        let counts = state()?.rt.tasks_per_worker();
        counts.get(worker as usize).copied().ok_or_else(|| CError::inval(format!("worker {worker} does not exist")))
    })
}
