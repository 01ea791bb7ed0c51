//! Events: a command's completion (a core task's), or a user event (a gate task that
//! waits on a core tag until `clSetUserEventStatus`).
//!
//! **Owns**: status, callbacks, profiling timestamps, and the real device a command ran on
//! (`cl_weft_placement`). Timestamps are Weft's profiling clock (`clock_ns`, the host's
//! `CLOCK_MONOTONIC_RAW`): QUEUED and SUBMIT taken when the command is enqueued; START, END
//! and COMPLETE those of the vendor's own event when the command ran as vendor commands on
//! a real device (a kernel), translated into Weft's clock (`weft_vendors::opencl::queue::
//! to_weft_clock`), else taken when its task starts and completes. Reported ordered:
//! QUEUED and SUBMIT are capped at START rather than START raised, so that END − START is
//! always the device's own measure.
//! **Invariants**: the status only goes down (queued → submitted → running → complete
//! or an error) and is final once ≤ 0; callbacks run once, outside every lock.

use super::cl::*;
use super::context::Context;
use super::icd::{self, Obj, new_obj, publish};
use super::queue::Queue;
use super::{ClResult, Info, cl_entrypoint, entry::retain_release, info_ptr, info_val, slice, write_info};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use weft_core::task::{Codelet, TaskBuilder, TaskError, TaskHandle};
use weft_vendors::opencl::DeviceTiming;

pub type EventNotify = unsafe extern "C" fn(Handle, cl_int, *mut c_void);

/// Weft's profiling clock, in nanoseconds (every Weft device's: see the module doc).
pub fn now_ns() -> u64 {
    weft_vendors::opencl::clock_ns()
}

struct Callback {
    event: Arc<Obj<Event>>,
    f: EventNotify,
    user_data: usize,
    trigger: cl_int,
}

/// What [`EventState`]'s one lock guards: a command's state changes together (status,
/// callbacks, task), so one lock taken once per step, not one per field.
#[derive(Default)]
struct Shared {
    status: Option<cl_int>,
    /// Threads sleeping on `cv`: `complete` notifies only when there are some (a
    /// notification is a system call even with no one to wake).
    waiters: usize,
    callbacks: Vec<Callback>,
    /// The command's task until it completes (a wait list naming the event then needs no
    /// dependency). Dropped at completion: the task holds this state (its launch payload
    /// or completion callback does), and keeping it here would make a cycle that leaks
    /// both, with the buffers the task accesses.
    task: Option<TaskHandle>,
    /// The vendor's record of the commands a launch made (profiling queues only), read at
    /// completion.
    device_timing: Option<DeviceTiming>,
}

#[derive(Default)]
pub struct EventState {
    shared: Mutex<Shared>,
    cv: Condvar,
    /// queued, submit, start, end, complete.
    times: [AtomicU64; 5],
    /// The real device (index into the platform's `real`) plus one the command ran on; 0:
    /// none (yet).
    ran_on: AtomicUsize,
    /// Whether `times` are taken: only a profiling queue's commands show them
    /// (`clGetEventProfilingInfo`), and a clock read per step is a cost on the hot path.
    timed: bool,
}

impl EventState {
    pub fn new_queued() -> Arc<EventState> {
        EventState::submitted(true)
    }

    /// A command's state, submitted; `timed`: take the profiling timestamps.
    pub fn submitted(timed: bool) -> Arc<EventState> {
        let t = if timed { now_ns() } else { 0 };
        Arc::new(EventState {
            shared: Mutex::new(Shared { status: Some(CL_SUBMITTED), ..Shared::default() }),
            times: [AtomicU64::new(t), AtomicU64::new(t), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            timed,
            ..EventState::default()
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The command started (its task runs).
    pub fn started(&self) {
        // Relaxed: a timestamp read only after the status says complete (under the lock).
        if self.timed {
            let _ = self.times[2].compare_exchange(0, now_ns(), Ordering::Relaxed, Ordering::Relaxed);
        }
        let mut s = self.lock();
        if s.status.is_some_and(|v| v > CL_RUNNING) {
            s.status = Some(CL_RUNNING);
        }
    }

    /// The command runs on real device `i`, as the vendor commands `timing` records (None:
    /// no device times, the host's stand).
    pub fn ran_on(&self, i: usize, timing: Option<DeviceTiming>) {
        // Relaxed: read by clGetEventInfo, which promises nothing about a command still
        // running; once complete, the status lock orders it (set before the launch's
        // completion can fire).
        self.ran_on.store(i + 1, Ordering::Relaxed);
        if self.timed && timing.is_some() {
            self.lock().device_timing = timing;
        }
    }

    /// The real device the command ran on (index into the platform's `real`).
    pub fn device(&self) -> Option<usize> {
        self.ran_on.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Whether the command's profiling times are taken (a profiling queue's command).
    pub fn timed(&self) -> bool {
        self.timed
    }

    pub fn set_task(&self, t: TaskHandle) {
        // Either `complete` has not set the final status yet (and drops the task after
        // setting it), or the task is not kept at all.
        let mut s = self.lock();
        if s.status.is_none_or(|v| v > CL_COMPLETE) {
            s.task = Some(t);
        }
    }

    pub fn task(&self) -> Option<TaskHandle> {
        self.lock().task.clone()
    }

    pub fn status(&self) -> cl_int {
        self.lock().status.unwrap_or(CL_QUEUED)
    }

    /// Final status `code` (`CL_COMPLETE` or an error); runs the callbacks.
    pub fn complete(&self, code: cl_int) {
        if self.timed {
            let device = self.lock().device_timing.take().and_then(|t| t.times());
            match device {
                Some(d) => {
                    self.times[2].store(d.start, Ordering::Relaxed);
                    self.times[3].store(d.end, Ordering::Relaxed);
                    self.times[4].store(d.complete, Ordering::Relaxed);
                }
                None => {
                    let end = now_ns();
                    let _ = self.times[2].compare_exchange(0, end, Ordering::Relaxed, Ordering::Relaxed);
                    self.times[3].store(end, Ordering::Relaxed);
                    self.times[4].store(end, Ordering::Relaxed);
                }
            }
        }
        let (task, cbs) = {
            let mut s = self.lock();
            if s.status.is_some_and(|v| v <= CL_COMPLETE) {
                return;
            }
            s.status = Some(code);
            let out = (s.task.take(), std::mem::take(&mut s.callbacks));
            let notify = s.waiters > 0;
            drop(s);
            if notify {
                self.cv.notify_all();
            }
            out
        };
        // Outside the lock: dropping the task may drop the last reference to this state.
        drop(task);
        for cb in cbs {
            call(&cb, code);
        }
    }

    /// Block until final; the final status.
    pub fn wait(&self) -> cl_int {
        // A command's task completes after its state: spinning on the task (for a GPU,
        // where that pays) leaves this thread awake when the state is final.
        if let Some(t) = self.task() {
            t.spin_wait();
        }
        let mut s = self.lock();
        loop {
            match s.status {
                Some(v) if v <= CL_COMPLETE => return v,
                _ => {
                    s.waiters += 1;
                    s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
                    s.waiters -= 1;
                }
            }
        }
    }

    /// Run `cb` once the status reaches its trigger (now, if it has; else at completion,
    /// when every callback runs). Outside the lock either way.
    fn add_callback(&self, cb: Callback) {
        let mut s = self.lock();
        let status = s.status.unwrap_or(CL_QUEUED);
        if status <= cb.trigger {
            drop(s);
            call(&cb, status);
        } else {
            s.callbacks.push(cb);
        }
    }

    /// The profiling times (queued, submit, start, end, complete), ordered: QUEUED and
    /// SUBMIT capped at START (a device's START may precede a host time by the translation's
    /// error), END and COMPLETE at least START and END.
    pub fn times(&self) -> [u64; 5] {
        let t: [u64; 5] = std::array::from_fn(|i| self.times[i].load(Ordering::Relaxed));
        ordered(t)
    }
}

/// Profiling times ordered as OpenCL wants them, moving the host's QUEUED and SUBMIT rather
/// than the device's START, END and COMPLETE.
fn ordered([q, s, start, end, complete]: [u64; 5]) -> [u64; 5] {
    let end = end.max(start);
    let complete = complete.max(end);
    let s = s.min(start);
    [q.min(s), s, start, end, complete]
}

fn call(cb: &Callback, status: cl_int) {
    let h = icd::handle_of(&cb.event);
    let code = if status < 0 { status } else { cb.trigger };
    // SAFETY: the application registered `f` for this event with this `user_data`; the
    // event object is kept alive by `cb` for the call.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (cb.f)(h, code, cb.user_data as *mut c_void) }));
}

/// The CL status for a task's result.
pub fn code_of(r: &Result<(), TaskError>) -> cl_int {
    match r {
        Ok(()) => CL_COMPLETE,
        Err(TaskError::Cancelled(_)) => CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
        Err(e) => {
            eprintln!("weft: an OpenCL command failed: {e}");
            CL_OUT_OF_RESOURCES
        }
    }
}

pub struct Event {
    pub context: Arc<Obj<Context>>,
    pub queue: Option<Arc<Obj<Queue>>>,
    pub command: cl_uint,
    pub state: Arc<EventState>,
    /// For user events: the tag its gate task waits on, and the status the application set.
    user: Option<(u64, Arc<Mutex<Option<cl_int>>>)>,
}
crate::cl_object!(Event, CL_INVALID_EVENT);

/// Make an event object for a command's state.
pub fn new_event(context: Arc<Obj<Context>>, queue: Option<Arc<Obj<Queue>>>, command: cl_uint, state: Arc<EventState>) -> Arc<Obj<Event>> {
    new_obj(Event { context, queue, command, state, user: None })
}

/// Validate a wait list: every event live and of `context` (when given).
///
/// # Safety
/// `list` null or readable for `n` handles.
pub unsafe fn wait_list(n: cl_uint, list: *const Handle, context: Option<&Arc<Obj<Context>>>) -> ClResult<Vec<Arc<Obj<Event>>>> {
    // CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list > 0,
    // or event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects
    // in event_wait_list are not valid events.
    if (list.is_null() && n > 0) || (!list.is_null() && n == 0) {
        return Err(CL_INVALID_EVENT_WAIT_LIST);
    }
    // SAFETY: the caller's contract.
    let hs = unsafe { slice(list, n as usize) }.map_err(|_| CL_INVALID_EVENT_WAIT_LIST)?;
    let mut out = Vec::with_capacity(hs.len());
    for &h in hs {
        let e = icd::get::<Event>(h).map_err(|_| CL_INVALID_EVENT_WAIT_LIST)?;
        // CL_INVALID_CONTEXT if the context associated with command_queue and events in
        // event_wait_list are not the same.
        if let Some(c) = context
            && !Arc::ptr_eq(c, &e.context)
        {
            return Err(CL_INVALID_CONTEXT);
        }
        out.push(e);
    }
    Ok(out)
}

/// Make the task of `b` wait for `events` (in place: no copy of the builder, which a
/// command's hot path notices).
pub fn add_after_events(b: &mut TaskBuilder, events: &[Arc<Obj<Event>>]) {
    for e in events {
        if let Some(t) = e.state.task() {
            b.add_after(&t);
        }
    }
}

/// Write a new event's handle to `event` if asked.
///
/// # Safety
/// `event` null or writable.
pub unsafe fn hand_out(e: &Arc<Obj<Event>>, event: *mut Handle) {
    if !event.is_null() {
        // SAFETY: the caller's contract.
        unsafe { event.write_unaligned(publish(e)) };
    }
}

/// # Safety
/// `list` null or readable for `n` handles.
#[cl_entrypoint(clWaitForEvents)]
unsafe fn wait_for_events(n: cl_uint, list: *const Handle) -> ClResult<()> {
    // CL_INVALID_VALUE if num_events is zero or event_list is NULL.
    if n == 0 || list.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let hs = unsafe { slice(list, n as usize) }?;
    let evs = hs.iter().map(|&h| icd::get::<Event>(h)).collect::<ClResult<Vec<_>>>()?;
    // CL_INVALID_CONTEXT if events specified in event_list do not belong to the same context.
    if evs.iter().any(|e| !Arc::ptr_eq(&e.context, &evs[0].context)) {
        return Err(CL_INVALID_CONTEXT);
    }
    let mut failed = false;
    // Last first: events listed in submission order mostly complete in that order, so
    // this thread sleeps once (see `queue::finish`).
    for e in evs.iter().rev() {
        failed |= e.state.wait() < 0;
    }
    // CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST if the execution status of any of the
    // events in event_list is a negative integer value.
    if failed { Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) } else { Ok(()) }
}

#[cl_entrypoint(clGetEventInfo)]
fn get_event_info(e: Arc<Obj<Event>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_EVENT_COMMAND_QUEUE => info_ptr(e.queue.as_ref().map_or(std::ptr::null(), |q| icd::handle_of(q).cast_const())),
        CL_EVENT_CONTEXT => info_ptr(icd::handle_of(&e.context)),
        CL_EVENT_COMMAND_TYPE => info_val(e.command),
        CL_EVENT_COMMAND_EXECUTION_STATUS => info_val(e.state.status()),
        CL_EVENT_REFERENCE_COUNT => info_val(icd::refcount_of(&e)),
        // cl_weft_placement: the real device (as the platform lists it) the command ran on;
        // NULL for a command that ran on no device (host-side commands, markers, user
        // events) or has not been launched on one yet.
        CL_EVENT_DEVICE_WEFT => info_ptr(match e.state.device() {
            Some(i) => e.context.platform.handle(super::platform::DeviceKind::Real(i)).cast_const(),
            None => std::ptr::null(),
        }),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

retain_release!(Event, clRetainEvent => retain_event, clReleaseEvent => release_event);

/// # Safety
/// `value` null or writable for `size` bytes; `size_ret` null or writable.
#[cl_entrypoint(clGetEventProfilingInfo)]
unsafe fn get_event_profiling_info(event: Handle, param: cl_uint, size: usize, value: *mut c_void, size_ret: *mut usize) -> ClResult<()> {
    let e = icd::get::<Event>(event)?;
    // CL_PROFILING_INFO_NOT_AVAILABLE if the CL_QUEUE_PROFILING_ENABLE flag is not set for
    // the command-queue, if the execution status of the command identified by event is
    // not CL_COMPLETE or if event is a user event object.
    let Some(q) = &e.queue else { return Err(CL_PROFILING_INFO_NOT_AVAILABLE) };
    if q.properties & CL_QUEUE_PROFILING_ENABLE == 0 || e.state.status() != CL_COMPLETE {
        return Err(CL_PROFILING_INFO_NOT_AVAILABLE);
    }
    let i = match param {
        CL_PROFILING_COMMAND_QUEUED => 0,
        CL_PROFILING_COMMAND_SUBMIT => 1,
        CL_PROFILING_COMMAND_START => 2,
        CL_PROFILING_COMMAND_END => 3,
        CL_PROFILING_COMMAND_COMPLETE => 4,
        _ => return Err(CL_INVALID_VALUE),
    };
    let t = e.state.times()[i];
    // SAFETY: the caller's contract.
    unsafe { write_info(&info_val(t), size, value, size_ret) }
}

/// # Safety
/// `f` is callable with `user_data` from any thread.
#[cl_entrypoint(clSetEventCallback)]
unsafe fn set_event_callback(event: Handle, trigger: cl_int, f: Option<EventNotify>, user_data: *mut c_void) -> ClResult<()> {
    let e = icd::get::<Event>(event)?;
    // CL_INVALID_VALUE if pfn_event_notify is NULL or if command_exec_callback_type is not
    // CL_SUBMITTED, CL_RUNNING or CL_COMPLETE.
    let f = f.ok_or(CL_INVALID_VALUE)?;
    if ![CL_SUBMITTED, CL_RUNNING, CL_COMPLETE].contains(&trigger) {
        return Err(CL_INVALID_VALUE);
    }
    e.state.add_callback(Callback { event: e.clone(), f, user_data: user_data as usize, trigger });
    Ok(())
}

static NEXT_TAG: AtomicU64 = AtomicU64::new(1 << 62);

#[cl_entrypoint(clCreateUserEvent)]
fn create_user_event(context: Handle) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    let rt = &c.platform.rt;
    let tag = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
    let set: Arc<Mutex<Option<cl_int>>> = Arc::default();
    // Submitted, without profiling times (a user event has none).
    let state = EventState::submitted(false);
    // The gate: a CPU task released by the tag, failing when the status set is an error,
    // so that commands waiting on the event are cancelled (their status an error too).
    let seen = set.clone();
    let gate = Codelet::builder("clCreateUserEvent")
        .cpu(move |_| match *seen.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(s) if s < 0 => Err(format!("user event set to {s}")),
            _ => Ok(()),
        })
        .build();
    let st = state.clone();
    let set2 = set.clone();
    let b = TaskBuilder::new(&gate).after_tag(tag).callback(move |_| {
        let s = set2.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(CL_COMPLETE);
        st.complete(s.min(CL_COMPLETE));
    });
    let t = rt.submit(b).map_err(|_| CL_OUT_OF_RESOURCES)?;
    state.set_task(t);
    let e = new_obj(Event { context: c.clone(), queue: None, command: CL_COMMAND_USER, state, user: Some((tag, set)) });
    Ok(publish(&e))
}

#[cl_entrypoint(clSetUserEventStatus)]
fn set_user_event_status(event: Handle, status: cl_int) -> ClResult<()> {
    let e = icd::get::<Event>(event)?;
    let Some((tag, set)) = &e.user else { return Err(CL_INVALID_EVENT) };
    // CL_INVALID_VALUE if the execution_status is not CL_COMPLETE or a negative integer value.
    if status > CL_COMPLETE {
        return Err(CL_INVALID_VALUE);
    }
    {
        let mut s = set.lock().unwrap_or_else(|e| e.into_inner());
        // CL_INVALID_OPERATION if the execution_status for event has already been changed
        // by a previous call to clSetUserEventStatus.
        if s.is_some() {
            return Err(CL_INVALID_OPERATION);
        }
        *s = Some(status);
    }
    e.context.platform.rt.tag_notify(*tag).map_err(|_| CL_OUT_OF_RESOURCES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{Config, Runtime};

    /// A command's state keeps its task only until it completes: the task holds the state
    /// (callback, launch payload), so keeping it longer would leak both.
    #[test]
    fn a_completed_command_state_lets_its_task_go() {
        let rt = Runtime::new(Config { ncpu: Some(1), nopencl: Some(0), ..Config::default() }).unwrap();
        let state = EventState::new_queued();
        let st = state.clone();
        let t = rt.submit(TaskBuilder::empty().callback(move |r| st.complete(code_of(&r)))).unwrap();
        t.wait().unwrap();
        state.set_task(t.clone());
        assert!(state.task().is_none(), "a task set after completion is not kept");
        assert_eq!(state.status(), CL_COMPLETE);

        let state = EventState::new_queued();
        state.set_task(t.clone());
        assert!(state.task().is_some());
        state.complete(CL_COMPLETE);
        assert!(state.task().is_none(), "completion drops the task");
    }
}
