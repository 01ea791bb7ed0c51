//! The C API of weft-mpi: `include/weft_mpi.h` is generated from this module by cbindgen
//! (`mpi/cbindgen.toml`, checked by `mpi/tests/header.rs`). libweft_mpi.so exports it
//! together with core's C API (`weft.h`): a C program links `-lweft_mpi` only.
//!
//! **This module is weft-mpi's FFI boundary**, the only place of the crate besides `ffi`
//! that allows `unsafe_code`: every entry point checks its pointers, calls the safe
//! [`MpiRuntime`] API and reports through core's conventions: 0 or a negative `weft_error`
//! code, with the message for `weft_last_error` (core's `ret_*` wrappers, which also turn a
//! panic into `WEFT_EINTERNAL` instead of unwinding into C).
//!
//! **Shares core's C API.** `weft_mpi_init` takes a reference to the runtime `weft_init`
//! started (`weft_core::capi::share_runtime`, one more `weft_init`): tasks run on it, data
//! handles are the `weft_data_handle`s registered with `weft_*_data_register`, tasks are the
//! `struct weft_task`s built with `weft_task_create` and its setters.
//! `weft_mpi_shutdown` releases it (the matching `weft_shutdown`).
//!
//! **The one global.** As core's C API, this one keeps its runtime in a private static:
//! [`MpiRuntime`] plus the distributed handles by core handle id. Entry points lock it only
//! long enough to clone an `Arc`; no lock of it is held while a call blocks.

#![allow(unsafe_code)]

use crate::{DistHandle, Error, MpiConfig, MpiRuntime, MpiTask, lock};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int};
use std::sync::{Arc, Mutex};
use weft_core::capi::data::{core_handle, weft_data_handle};
use weft_core::capi::error::{CError, CResult, ret_code, ret_value, weft_error};
use weft_core::capi::task::{task_parts, weft_task, weft_task_destroy};

/// What `weft_mpi_init` starts.
struct CMpi {
    /// The handles given to `weft_mpi_data_register`, by the id of their core handle.
    /// (Declared first: dropped before the runtime they belong to.)
    handles: Mutex<HashMap<u64, DistHandle>>,
    mpi: MpiRuntime,
}

static GLOBAL: Mutex<Option<Arc<CMpi>>> = Mutex::new(None);

fn mpi() -> CResult<Arc<CMpi>> {
    lock(&GLOBAL)
        .clone()
        .ok_or_else(|| CError::new(weft_error::WEFT_ENOTINIT, "weft-mpi is not initialised: call weft_mpi_init (after weft_init) first"))
}

/// The one mapping from weft-mpi errors to C API codes.
fn c_error(e: Error) -> CError {
    match e {
        Error::Core(e) => e.into(),
        Error::Unregistered(_) => CError::new(weft_error::WEFT_EUNREGISTERED, e.to_string()),
        // MPI itself is missing or lacks the thread level weft-mpi needs.
        Error::Mpi(_) => CError::new(weft_error::WEFT_ENOTSUP, e.to_string()),
        Error::NoSuchRank { .. } | Error::BadTag { .. } | Error::DuplicateTag(_) | Error::Invalid(_) => CError::inval(e.to_string()),
    }
}

/// The distributed handle registered for `h`.
///
/// # Safety
/// `h` is NULL or a handle returned by core's C API, not freed during the call.
unsafe fn dist(c: &CMpi, h: weft_data_handle, what: &str) -> CResult<DistHandle> {
    // SAFETY: forwarded contract.
    let local = unsafe { core_handle(h) }?;
    lock(&c.handles).get(&local.id()).cloned().ok_or_else(|| {
        CError::new(
            weft_error::WEFT_EUNREGISTERED,
            format!("{what}: data handle {h:p} ({local:?}) is used before weft_mpi_data_register: register it on every rank first"),
        )
    })
}

/// Start weft-mpi on the runtime of `weft_init` (StarPU's `starpu_mpi_init_conf`): initialise
/// MPI with `MPI_THREAD_SERIALIZED` unless the program did (then it must have asked for at
/// least that level), duplicate `MPI_COMM_WORLD`, start the progress thread, and read
/// `WEFT_MPI_CHECK`, `WEFT_MPI_CACHE`, `WEFT_MPI_STATS` and `WEFT_MPI_POLL_US`. Every rank
/// calls it.
///
/// Returns 0; `WEFT_ENOTINIT` if `weft_init` has not been called (nothing is started:
/// call `weft_init` and then this again); `WEFT_EINVAL` if weft-mpi is already initialised;
/// `WEFT_ENOTSUP` if MPI cannot be initialised, runs below `MPI_THREAD_SERIALIZED`, or was
/// finalized (by `weft_mpi_shutdown`: MPI, hence weft-mpi, starts once per process);
/// `WEFT_ECONFIG` for a malformed variable. Once it succeeded, the program calls MPI itself
/// only if it initialised MPI with `MPI_THREAD_MULTIPLE`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_init() -> c_int {
    ret_code(|| {
        let mut g = lock(&GLOBAL);
        if g.is_some() {
            return Err(CError::inval("weft_mpi_init was already called (call weft_mpi_shutdown first)"));
        }
        let config = MpiConfig::from_env().map_err(|e| CError::new(weft_error::WEFT_ECONFIG, e.to_string()))?;
        let rt = weft_core::capi::share_runtime().map_err(|e| {
            if e.code == weft_error::WEFT_ENOTINIT {
                CError::new(e.code, "weft_mpi_init: call weft_init first: weft-mpi runs its tasks on the runtime it starts")
            } else {
                e
            }
        })?;
        let mpi = MpiRuntime::with_shared_runtime(rt, config).map_err(c_error)?;
        *g = Some(Arc::new(CMpi { handles: Mutex::new(HashMap::new()), mpi }));
        Ok(())
    })
}

/// Stop weft-mpi (StarPU's `starpu_mpi_shutdown`): wait for this rank's tasks and transfers,
/// then for every rank (a barrier), stop the progress thread, release the runtime (the
/// matching `weft_shutdown`: call `weft_shutdown` afterwards as usual) and finalize MPI if
/// `weft_mpi_init` initialised it. Every rank calls it, on an application thread.
///
/// Data handles registered with `weft_mpi_data_register` are forgotten by weft-mpi; they stay
/// registered with the runtime (`weft_data_unregister` them, or let `weft_shutdown` do it).
/// Returns 0, or `WEFT_ENOTINIT` if weft-mpi was not initialised.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_shutdown() -> c_int {
    ret_code(|| {
        let mut c = lock(&GLOBAL).take().ok_or_else(|| CError::new(weft_error::WEFT_ENOTINIT, "weft-mpi is not initialised"))?;
        // Calls in progress on other threads hold a reference for their duration only: stop
        // here, on this thread, once they are done.
        loop {
            match Arc::try_unwrap(c) {
                Ok(c) => {
                    drop(c);
                    return Ok(());
                }
                Err(back) => {
                    c = back;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        }
    })
}

/// This process's rank in `MPI_COMM_WORLD` (StarPU's `starpu_mpi_world_rank`), or
/// `WEFT_ENOTINIT` (negative) before `weft_mpi_init`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_rank() -> c_int {
    ret_value(weft_error::WEFT_ENOTINIT as c_int, || Ok(mpi()?.mpi.rank()))
}

/// The number of ranks (StarPU's `starpu_mpi_world_size`), or `WEFT_ENOTINIT` (negative)
/// before `weft_mpi_init`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_size() -> c_int {
    ret_value(weft_error::WEFT_ENOTINIT as c_int, || Ok(mpi()?.mpi.size()))
}

/// Make `handle` the distributed data of `tag`, owned by rank `owner` (StarPU's
/// `starpu_mpi_data_register`). Every rank registers every distributed handle, in the same
/// order, with the same shape and tag: the owner registers the data (`weft_*_data_register`
/// of its memory), every other rank a buffer of the same shape, which weft-mpi uses as that
/// rank's cache of the data (its content is overwritten when the data arrives there; it is
/// current on that rank only after `weft_mpi_get_data_on_rank` or a task there read it).
///
/// `tag` is in 0 ..= MPI_TAG_UB / 2 and unique among registered handles. Returns 0;
/// `WEFT_EINVAL` for an invalid handle, rank or tag, a tag in use, or a handle already
/// registered with weft-mpi; `WEFT_ENOTINIT` before `weft_mpi_init`.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by core's C API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_data_register(handle: weft_data_handle, tag: i64, owner: c_int) -> c_int {
    ret_code(|| {
        let c = mpi()?;
        // SAFETY: forwarded contract.
        let local = unsafe { core_handle(handle) }?;
        let id = local.id();
        let mut handles = lock(&c.handles);
        if let Some(d) = handles.get(&id) {
            return Err(CError::inval(format!(
                "data handle {handle:p} ({local:?}) is already registered with weft_mpi_data_register (tag {})",
                d.tag()
            )));
        }
        let d = c.mpi.register(local, owner, tag).map_err(c_error)?;
        handles.insert(id, d);
        Ok(())
    })
}

/// Forget the distributed data of `handle` on every rank (StarPU's `starpu_mpi_data_unregister`
/// minus the runtime's part): pending contributions are reduced into the owner's copy, and
/// its tag may be registered again. The handle stays registered with the runtime:
/// `weft_data_unregister` it afterwards (on the owner, that writes the data back into its
/// memory). Every rank calls it, in the same place of the flow.
///
/// Returns 0; `WEFT_EUNREGISTERED` if the handle is not registered with weft-mpi;
/// `WEFT_EINVAL` for an invalid handle; `WEFT_ENOTINIT` before `weft_mpi_init`.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by core's C API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_data_unregister(handle: weft_data_handle) -> c_int {
    ret_code(|| {
        let c = mpi()?;
        // SAFETY: forwarded contract.
        let d = unsafe { dist(&c, handle, "weft_mpi_data_unregister") }?;
        c.mpi.unregister(&d).map_err(c_error)?;
        // SAFETY: forwarded contract.
        let id = unsafe { core_handle(handle) }?.id();
        lock(&c.handles).remove(&id);
        Ok(())
    })
}

/// # Safety
/// As `weft_mpi_task_insert`.
unsafe fn insert(task: *mut weft_task, rank: Option<c_int>, what: &str) -> CResult<()> {
    let c = mpi()?;
    // SAFETY: forwarded contract.
    let parts = unsafe { task_parts(task, what) }?;
    let mut t = MpiTask::new(&parts.codelet).args(&parts.args).priority(parts.priority);
    {
        let handles = lock(&c.handles);
        for (i, (h, mode)) in parts.accesses.iter().enumerate() {
            let d = handles.get(&h.id()).ok_or_else(|| {
                CError::new(
                    weft_error::WEFT_EUNREGISTERED,
                    format!(
                        "{what}: buffer {i} of task '{}' ({h:?}) is used before weft_mpi_data_register: register it on every rank first",
                        parts.codelet.name()
                    ),
                )
            })?;
            t = t.access(d, *mode);
        }
    }
    if let Some(r) = rank {
        t = t.on_rank(r);
    }
    c.mpi.task_insert(t).map_err(c_error)?;
    // SAFETY: a live task (task_parts checked it), inserted: it is ours to free now.
    unsafe { weft_task_destroy(task) };
    Ok(())
}

/// Insert `task` into the distributed flow (StarPU's `starpu_mpi_task_insert`, with the task
/// built by `weft_task_create`, `weft_task_set_handle[_mode]`, `weft_task_set_arg` and
/// `weft_task_set_priority`). Every rank inserts the same tasks in the same order. The task
/// runs on the owner of the first handle it writes (`WEFT_W`, `WEFT_RW`, commute), else of the
/// largest handle it reads; that rank receives the data it reads from their owners, and the
/// others only send or record. Every handle must be registered with `weft_mpi_data_register`.
///
/// **Ownership**: on success the task is consumed (freed on every rank, as a detached task by
/// `weft_task_submit`): do not touch it again; wait with `weft_mpi_wait_for_all`. On error it
/// stays the caller's, unchanged: fix and insert it again, or `weft_task_destroy` it.
///
/// Returns 0; `WEFT_EUNREGISTERED` for a handle not registered with weft-mpi (the message
/// names the buffer and says "used before weft_mpi_data_register") or unregistered since;
/// `WEFT_ENOTSUP` for what a distributed task cannot carry (a tag, dependencies, a callback, a
/// non-detached task, no codelet); the errors of `weft_task_submit` (`WEFT_ENODEV`,
/// `WEFT_EBUFCOUNT`, `WEFT_EINVAL`); `WEFT_ENOTINIT` before `weft_mpi_init`. A task that
/// fails while running stops every rank (`MPI_Abort`), since others may wait for its data.
///
/// # Safety
/// `task` must be NULL or a live task from `weft_task_create` whose codelet is still valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_task_insert(task: *mut weft_task) -> c_int {
    // SAFETY: forwarded contract.
    ret_code(|| unsafe { insert(task, None, "weft_mpi_task_insert") })
}

/// `weft_mpi_task_insert`, running the task on `rank` whatever owns its data (StarPU's
/// `STARPU_EXECUTE_ON_NODE`): the data it writes goes back to its owners afterwards (and stays
/// cached on `rank`). `WEFT_EINVAL` for a rank that does not exist.
///
/// # Safety
/// As `weft_mpi_task_insert`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_task_insert_on(task: *mut weft_task, rank: c_int) -> c_int {
    // SAFETY: forwarded contract.
    ret_code(|| unsafe { insert(task, Some(rank), "weft_mpi_task_insert_on") })
}

/// Make rank `rank`'s copy of `handle` current, sending it from its owner if it is not
/// (StarPU's `starpu_mpi_get_data_on_node`), e.g. to gather results on rank 0, which then
/// reads it with `weft_data_acquire`. Every rank calls it.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by core's C API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_get_data_on_rank(handle: weft_data_handle, rank: c_int) -> c_int {
    ret_code(|| {
        let c = mpi()?;
        // SAFETY: forwarded contract.
        let d = unsafe { dist(&c, handle, "weft_mpi_get_data_on_rank") }?;
        c.mpi.get_data_on_rank(&d, rank).map_err(c_error)
    })
}

/// Make `rank` the owner of `handle` (data migration, StarPU's `starpu_mpi_data_migrate`),
/// sending it the current value if its copy is not current. Every rank calls it.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by core's C API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_set_owner(handle: weft_data_handle, rank: c_int) -> c_int {
    ret_code(|| {
        let c = mpi()?;
        // SAFETY: forwarded contract.
        let d = unsafe { dist(&c, handle, "weft_mpi_set_owner") }?;
        c.mpi.set_owner(&d, rank).map_err(c_error)
    })
}

/// Forget the cached copies of `handle` on the ranks that do not own it (StarPU's
/// `starpu_mpi_cache_flush`): the next task reading it elsewhere receives it again. Every
/// rank calls it.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by core's C API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_cache_flush(handle: weft_data_handle) -> c_int {
    ret_code(|| {
        let c = mpi()?;
        // SAFETY: forwarded contract.
        let d = unsafe { dist(&c, handle, "weft_mpi_cache_flush") }?;
        c.mpi.cache_flush(&d).map_err(c_error)
    })
}

/// Wait for every task and transfer of this rank's share of the flow, then for all ranks to
/// get there (StarPU's `starpu_mpi_wait_for_all`). Every rank calls it. Returns 0, the
/// runtime's `weft_task_wait_for_all` errors, or `WEFT_ENOTINIT`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_wait_for_all() -> c_int {
    ret_code(|| mpi()?.mpi.wait_for_all().map_err(c_error))
}

/// A barrier of all ranks that does not wait for tasks (StarPU's `starpu_mpi_barrier`).
/// Returns 0 or `WEFT_ENOTINIT`.
#[unsafe(no_mangle)]
pub extern "C" fn weft_mpi_barrier() -> c_int {
    ret_code(|| {
        mpi()?.mpi.barrier();
        Ok(())
    })
}

/// Stop every rank (`MPI_Abort` with `code`) after printing `msg` (NULL: none) with this
/// rank's number on stderr: what a rank does on an error it cannot recover from, so that the
/// others do not wait for it forever. Never returns. Without MPI running, it exits with
/// `code`.
///
/// # Safety
/// `msg` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_mpi_abort(msg: *const c_char, code: c_int) -> ! {
    let text = if msg.is_null() {
        "weft_mpi_abort".to_string()
    } else {
        // SAFETY: a non-NULL `msg` is NUL-terminated (contract).
        unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    };
    let _ = std::panic::catch_unwind(|| {
        // try_lock: the lock's holder may be the call that went wrong.
        let c = GLOBAL.try_lock().ok().and_then(|g| g.clone());
        if let Some(c) = c {
            c.mpi.abort(&text, code);
        }
        if ::mpi::environment::is_initialized() && !::mpi::environment::is_finalized() {
            crate::ffi::abort_world(&format!("weft-mpi: {text}"), code);
        }
    });
    eprintln!("weft-mpi: {text}");
    std::process::exit(code)
}
