//! Explicit tasks: GOMP_task, taskwait, taskgroups, taskloop, task reductions, detach
//! (`omp_fulfill_event`). The work is in task.rs.

use super::gomp::data::{CpyFn, Detach, TaskData};
use super::gomp::flags as gflags;
use super::gomp::reduction::{Descriptor, Registration};
use super::guard;
use crate::outlined::{Outlined, OutlinedTask};
use crate::task::{self, Spawn};
use crate::team::{self, Body};
use std::ffi::{c_int, c_long, c_uint, c_ulong, c_void};

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_task(
    f: Body,
    data: *mut c_void,
    cpyfn: Option<CpyFn>,
    arg_size: c_long,
    arg_align: c_long,
    if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    detach: *mut c_void,
) {
    guard("GOMP_task", || {
        // Whether `undeferred` below already chose to defer the task.
        let mut deferred = false;
        if flags & (gflags::DEPEND | gflags::DETACH) == 0 && cpyfn.is_none() && !crate::env::env().cancellation {
            // No dependencies, copy function or detach: if the task is to run at once (if(0),
            // final, the throttle), run the body on the caller's data without assembling the
            // general case's arguments.
            match task::undeferred(if_clause, flags & gflags::FINAL != 0) {
                task::Now::Defer => deferred = true,
                // SAFETY: GOMP_task's contract: `f` is the compiler's body for `data`,
                // run here once, before GOMP_task returns.
                now => return task::run_now(now, unsafe { OutlinedTask::new(f, data) }),
            }
        }
        // SAFETY: the compiler's arguments.
        unsafe { gomp_task_spawn(f, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach, deferred) }
    })
}

/// GOMP_task's general case: its arguments decoded into a [`Spawn`]. Inline: called out of
/// line, passing the ten arguments again cost a task with depend clauses about 40
/// instructions, more than the undeferred path saves by it.
///
/// # Safety
/// GOMP_task's arguments, as GCC passes them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gomp_task_spawn(
    f: Body,
    data: *mut c_void,
    cpyfn: Option<CpyFn>,
    arg_size: c_long,
    arg_align: c_long,
    if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    detach: *mut c_void,
    deferred: bool,
) {
    // GCC passes a depend array exactly with the DEPEND flag.
    let flags = gflags::task(if depend.is_null() { flags & !gflags::DEPEND } else { flags });
    // SAFETY: GCC's data block, copy function, size and alignment.
    let data = unsafe { TaskData::new(data, cpyfn, arg_size, arg_align) };
    // SAFETY: GCC's event handle variable (or null), whose firstprivate copy starts the
    // data.
    let detach = unsafe { Detach::gomp(detach, &data) };
    let mut s = Spawn { body: f, data, if_clause, flags, deps: task::Deps::new(), priority, detach, deferred };
    if flags.depend {
        // SAFETY: the compiler's depend array.
        unsafe { super::gomp::depend::decode(depend, &mut s.deps) }
    }
    // SAFETY: the compiler's arguments.
    unsafe { task::spawn(&s) }
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_taskwait() {
    guard("GOMP_taskwait", task::taskwait)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_taskwait_depend(depend: *mut *mut c_void) {
    guard("GOMP_taskwait_depend", || {
        if !depend.is_null() {
            let mut deps = task::Deps::new();
            // SAFETY: the compiler's depend array.
            unsafe { super::gomp::depend::decode(depend, &mut deps) };
            task::taskwait_depend(&deps)
        }
    })
}

/// A scheduling point where nothing needs to happen: the calling task goes on (tasks are
/// tied to their thread, and queued tasks are run at the next wait).
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_taskyield() {}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_taskgroup_start() {
    guard("GOMP_taskgroup_start", || task::taskgroup_start(false))
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_taskgroup_end() {
    guard("GOMP_taskgroup_end", task::taskgroup_end)
}

/// A taskloop's tasks as GOMP_taskloop describes them.
///
/// # Safety
/// GCC's taskloop arguments: `data` (starting with the loop's bounds), its copy function,
/// size and alignment.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn_args(
    f: Body,
    data: *mut c_void,
    cpyfn: Option<CpyFn>,
    arg_size: c_long,
    arg_align: c_long,
    flags: task::TaskFlags,
    priority: c_int,
) -> Spawn {
    // SAFETY: per the contract.
    let data = unsafe { TaskData::taskloop(data, cpyfn, arg_size, arg_align) };
    Spawn { body: f, data, if_clause: true, flags, deps: task::Deps::new(), priority, detach: None, deferred: false }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_taskloop(
    f: Body,
    data: *mut c_void,
    cpyfn: Option<CpyFn>,
    arg_size: c_long,
    arg_align: c_long,
    flags: c_uint,
    num_tasks: c_ulong,
    priority: c_int,
    start: c_long,
    end: c_long,
    step: c_long,
) {
    guard("GOMP_taskloop", || {
        let (tf, lf) = gflags::taskloop(flags);
        // SAFETY: with GOMP_TASK_FLAG_REDUCTION the data starts { start, end, reductions }.
        let red = if lf.reduction { unsafe { Descriptor::from_taskloop_data(data) } } else { None };
        // SAFETY: GCC's taskloop arguments.
        let s = unsafe { spawn_args(f, data, cpyfn, arg_size, arg_align, tf, priority) };
        let traced = crate::trace::start();
        // SAFETY: the compiler's arguments.
        unsafe { task::taskloop(s, lf, red, num_tasks, start as u64, end as u64, step as u64, true) }
        crate::trace::end(traced, "omp taskloop");
    })
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn GOMP_taskloop_ull(
    f: Body,
    data: *mut c_void,
    cpyfn: Option<CpyFn>,
    arg_size: c_long,
    arg_align: c_long,
    flags: c_uint,
    num_tasks: c_ulong,
    priority: c_int,
    start: u64,
    end: u64,
    step: u64,
) {
    guard("GOMP_taskloop_ull", || {
        let (tf, lf) = gflags::taskloop(flags);
        // SAFETY: with GOMP_TASK_FLAG_REDUCTION the data starts { start, end, reductions }.
        let red = if lf.reduction { unsafe { Descriptor::from_taskloop_data(data) } } else { None };
        // SAFETY: GCC's taskloop arguments.
        let s = unsafe { spawn_args(f, data, cpyfn, arg_size, arg_align, tf, priority) };
        let traced = crate::trace::start();
        // SAFETY: the compiler's arguments.
        unsafe { task::taskloop(s, lf, red, num_tasks, start, end, step, false) }
        crate::trace::end(traced, "omp taskloop");
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_fulfill_event(event: usize) {
    guard("omp_fulfill_event", || {
        // An odd handle is a clang-built program's (`__kmpc_task_allow_completion_event`):
        // its cell is checked (each once) before it is read, then the task's handle is.
        let event = if event & 1 != 0 {
            task::take_event(event);
            super::kmp::task::event_task(event)
        } else {
            event
        };
        // SAFETY: an event handle from a detach clause.
        unsafe { task::fulfill(event) }
    })
}

// ---------------------------------------------------------------------------------------
// Task reductions.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_taskgroup_reduction_register(data: *mut usize) {
    guard("GOMP_taskgroup_reduction_register", || {
        // SAFETY: the compiler's reduction descriptors, alive until their unregistration.
        if let Some(d) = unsafe { Descriptor::from_raw(data) } {
            task::reduction_register(d);
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_taskgroup_reduction_unregister(data: *mut usize) {
    guard("GOMP_taskgroup_reduction_unregister", || {
        // SAFETY: descriptors registered by GOMP_taskgroup_reduction_register, their results
        // combined: their taskgroup has ended and nothing uses them after.
        unsafe {
            if let Some(d) = Descriptor::from_raw(data) {
                Registration::from_linked(d).unregister();
            }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_task_reduction_remap(cnt: usize, cntorig: usize, ptrs: *mut *mut c_void) {
    guard("GOMP_task_reduction_remap", || {
        // SAFETY: the compiler's pointer array: `cnt` addresses, then `cntorig` (<= cnt) slots.
        let ptrs = unsafe { std::slice::from_raw_parts_mut(ptrs, cnt + cntorig.min(cnt)) };
        task::reduction_remap(ptrs, cnt)
    })
}

/// The end of a worksharing construct with task reductions: its taskgroup ends, thread 0
/// frees the private blocks (the others their lookup tables), then the team's barrier.
#[unsafe(no_mangle)]
pub extern "C" fn GOMP_workshare_task_reduction_unregister(cancelled: bool) {
    guard("GOMP_workshare_task_reduction_unregister", || {
        let data = team::cur().get(|c| c.task.group.as_ref().and_then(|g| g.reductions.load(std::sync::atomic::Ordering::Acquire)));
        task::taskgroup_end();
        let c = team::ctx();
        if let Some(r) = data {
            // SAFETY: registered by this thread at the construct's start; its taskgroup has
            // ended. Thread 0 allocated the blocks, the others only share them.
            unsafe { if c.tid == 0 { r.unregister() } else { r.free_map() } }
        }
        if !cancelled {
            c.team().barrier();
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_reductions(f: Body, data: *mut c_void, num_threads: c_uint, flags: c_uint) -> c_uint {
    guard("GOMP_parallel_reductions", || {
        // SAFETY: the region's data starts with the reduction descriptors' address.
        let red = unsafe { Descriptor::from_parallel_data(data) };
        // SAFETY: the compiler-outlined body with its data, for this region.
        let body = unsafe { Outlined::new(f, data) };
        let n = team::fork_with(Some(body), num_threads, flags, true, None, red);
        body.call();
        team::join();
        n
    })
}
