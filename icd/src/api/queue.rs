//! Command queues and the host-side commands (read, write, copy, fill, their rect forms,
//! map/unmap, markers, barriers).
//!
//! **Owns**: command order. Every command is a core task: an in-order queue chains each
//! task after the previous one (`TaskBuilder::after`), an out-of-order queue only after
//! the last barrier; wait lists add `after` edges. Buffer data dependencies come from
//! core anyway (sequential consistency per handle). Host-side commands run on a CPU
//! worker with the buffer's handle accessed on the host (core brings the data there);
//! kernels are in `kernel.rs`.
//! **Does not own**: completion state (events).

use super::cl::*;
use super::context::Context;
use super::event::{Event, EventState, add_after_events, code_of, hand_out, new_event, wait_list};
use super::icd::{self, Obj, new_obj, publish};
use super::memory::Mem;
use super::platform::DeviceKind;
use super::{ClResult, Info, cl_entrypoint, entry::retain_release, info_ptr, info_val, is_true, slice};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use weft_core::ReplicaState;
use weft_core::task::{AccessMode, Arch, Codelet, OpenClImpl, TaskBuilder, TaskContext, TaskHandle};
use weft_vendors::{Endpoint, Rect as VRect};

#[derive(Default)]
pub struct QueueState {
    /// The last barrier of an out-of-order queue. (An in-order queue's last command is the
    /// back of `pending`, or complete and gone: one handle less to clone per command.)
    pub last: Option<TaskHandle>,
    /// Commands not yet seen complete (a command's task completes after its state does:
    /// its callback or payload completes the state first).
    pub pending: std::collections::VecDeque<TaskHandle>,
    /// Prune every finished command when `pending` reaches this length (then twice what is
    /// left, at least 64): amortised O(1) per command.
    pub prune_at: usize,
}

pub struct Queue {
    pub context: Arc<Obj<Context>>,
    pub device: DeviceKind,
    pub properties: cl_bitfield,
    pub state: Mutex<QueueState>,
    /// Which of the allowed real devices an in-order queue on the unified device runs its
    /// kernels on (queues are spread round robin) when their program was built for only
    /// some of the devices; over all of them, each kernel is placed anew (`kernel.rs`).
    pub spread: usize,
    /// The list given to `clCreateCommandQueueWithProperties`, as given (with its
    /// terminator), for `CL_QUEUE_PROPERTIES_ARRAY`; `None` for a null list or
    /// `clCreateCommandQueue`.
    pub properties_array: Option<Vec<u64>>,
}
crate::cl_object!(Queue, CL_INVALID_COMMAND_QUEUE);

impl Queue {
    pub fn in_order(&self) -> bool {
        self.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0
    }

    /// The driver worker kernels of this queue run on, if pinned (a real device).
    pub fn worker(&self) -> Option<usize> {
        match self.device {
            DeviceKind::Real(i) => Some(self.context.platform.real[i].0),
            DeviceKind::Unified => None,
        }
    }
}

/// Who completes a command's [`EventState`] when its task completes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Completes {
    /// A task callback the submission adds (an allocation of its own).
    Callback,
    /// The task's payload (`TaskPayload::completed`; a kernel launch's).
    Payload,
}

/// Submit `b` as a command of `q`, after `waits`; `barrier`: after every earlier command.
pub fn submit(
    q: &Arc<Obj<Queue>>,
    waits: &[Arc<Obj<Event>>],
    command: cl_uint,
    state: Arc<EventState>,
    b: TaskBuilder,
    barrier: bool,
) -> ClResult<Arc<Obj<Event>>> {
    let mut b = b;
    submit_with(q, waits, command, state, &mut b, barrier, Completes::Callback)
}

/// [`submit`], saying who completes the state. `b` is consumed (see [`enqueue`]).
pub fn submit_with(
    q: &Arc<Obj<Queue>>,
    waits: &[Arc<Obj<Event>>],
    command: cl_uint,
    state: Arc<EventState>,
    b: &mut TaskBuilder,
    barrier: bool,
    by: Completes,
) -> ClResult<Arc<Obj<Event>>> {
    enqueue(q, waits, Some(state.clone()), b, barrier, by)?;
    Ok(new_event(q.context.clone(), Some(q.clone()), command, state))
}

/// [`submit_with`] without making an event object (for a command whose caller asked for
/// none). `state`: the command's, if anyone can see it (an event object, or a host command's
/// blocking wait); a kernel launch asked for no event has none. Required for
/// `Completes::Callback`.
pub fn enqueue(
    q: &Arc<Obj<Queue>>,
    waits: &[Arc<Obj<Event>>],
    state: Option<Arc<EventState>>,
    b: &mut TaskBuilder,
    barrier: bool,
    by: Completes,
) -> ClResult<()> {
    add_after_events(b, waits);
    // The claims on application memory are settled before the command shows complete: the
    // callback runs before the payload's completion (core's order).
    let claims = super::memory::claims_of(b);
    let unsubmitted = (!claims.is_empty()).then(|| claims.clone());
    if by == Completes::Callback {
        let st = state.clone().expect("a command completed by a callback has a state");
        b.set_callback(move |r| {
            super::memory::claims_done(&claims);
            st.complete(code_of(&r))
        });
    } else if !claims.is_empty() {
        b.set_callback(move |_| super::memory::claims_done(&claims));
    }
    let mut qs = q.state.lock().unwrap_or_else(|e| e.into_inner());
    // Drop finished commands: from the front (commands mostly finish in order), and all of
    // them when the list doubled since the last full pass, so a submission costs O(1)
    // amortised, not O(pending).
    while qs.pending.front().is_some_and(TaskHandle::is_done) {
        qs.pending.pop_front();
    }
    if qs.pending.len() >= qs.prune_at.max(64) {
        qs.pending.retain(|t| !t.is_done());
        qs.prune_at = 2 * qs.pending.len();
    }
    // In order: after the last command still pending (when pruning took the very last one,
    // it is complete; one still pending before it is earlier, so the edge is harmless).
    let last = if q.in_order() { qs.pending.back() } else { qs.last.as_ref() };
    if let Some(last) = last {
        b.add_after(last);
    }
    if barrier && !q.in_order() {
        for t in &qs.pending {
            b.add_after(t);
        }
    }
    let t = q.context.platform.rt.submit_from(b).map_err(|e| {
        eprintln!("weft: submitting an OpenCL command failed: {e}");
        if let Some(c) = &unsubmitted {
            super::memory::claims_done(c);
        }
        CL_OUT_OF_RESOURCES
    })?;
    if let Some(state) = &state {
        state.set_task(t.clone());
    }
    if barrier && !q.in_order() {
        qs.last = Some(t.clone());
    }
    qs.pending.push_back(t);
    Ok(())
}

/// Wait for every command of `q` so far.
pub fn finish(q: &Queue) -> ClResult<()> {
    let pending: Vec<TaskHandle> = q.state.lock().unwrap_or_else(|e| e.into_inner()).pending.iter().cloned().collect();
    // Newest first: commands mostly complete in order, so after the last one the others are
    // complete already and this thread sleeps once, not once per command still running.
    // A command's task completes after its state, so its event shows it complete too.
    for t in pending.iter().rev() {
        t.wait_done();
    }
    Ok(())
}

/// `WEFT_SOCL_NULL_DEVICE=1` (or all of SOCL's conventions, `WEFT_SOCL=1`): a NULL device in
/// `clCreateCommandQueue*` is the unified device.
fn socl_null_device() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("WEFT_SOCL_NULL_DEVICE").is_ok_and(|v| v == "1")) || super::platform::socl()
}

fn create_queue(context: Handle, device: Handle, properties: cl_bitfield, properties_array: Option<Vec<u64>>) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    // SOCL's convention, where asked for (WEFT_SOCL_NULL_DEVICE=1): a NULL device is the
    // unified device, over the context's devices. Off by default: the specification (and
    // the CTS) want CL_INVALID_DEVICE for it.
    let kind = if device.is_null() && socl_null_device() {
        DeviceKind::Unified
    } else {
        let d = c.platform.device(device)?;
        // CL_INVALID_DEVICE if device is not a valid device or is not associated with context.
        if !c.has(d.kind) {
            return Err(CL_INVALID_DEVICE);
        }
        d.kind
    };
    // CL_INVALID_VALUE if values specified in properties are not valid. (An on-device
    // default queue is an on-device queue.)
    const ON_DEVICE: cl_bitfield = 1 << 2;
    const ON_DEVICE_DEFAULT: cl_bitfield = 1 << 3;
    let known = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE | ON_DEVICE | ON_DEVICE_DEFAULT;
    if properties & !known != 0 || (properties & ON_DEVICE_DEFAULT != 0 && properties & ON_DEVICE == 0) {
        return Err(CL_INVALID_VALUE);
    }
    // CL_INVALID_QUEUE_PROPERTIES if values specified in properties are valid but are not
    // supported by the device: no Weft device has on-device queues (its device-enqueue
    // capabilities are none).
    if properties & ON_DEVICE != 0 {
        return Err(CL_INVALID_QUEUE_PROPERTIES);
    }
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let spread = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let q = new_obj(Queue { context: c.clone(), device: kind, properties, state: Mutex::default(), spread, properties_array });
    Ok(publish(&q))
}

#[cl_entrypoint(clCreateCommandQueue)]
fn create_command_queue(context: Handle, device: Handle, properties: cl_bitfield) -> ClResult<Handle> {
    create_queue(context, device, properties, None)
}

/// # Safety
/// `properties` null or a 0-terminated list; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateCommandQueueWithProperties)]
unsafe fn create_command_queue_with_properties(context: Handle, device: Handle, properties: *const u64) -> ClResult<Handle> {
    let mut props = 0;
    let mut sized = false;
    let mut i = 0;
    while !properties.is_null() {
        // SAFETY: the caller's contract (0-terminated pairs).
        let key = unsafe { properties.add(i).read_unaligned() };
        if key == 0 {
            break;
        }
        // SAFETY: as above: a key other than 0 has its value.
        let value = unsafe { properties.add(i + 1).read_unaligned() };
        match key as cl_uint {
            CL_QUEUE_PROPERTIES => props = value,
            // CL_QUEUE_SIZE: an on-device queue's, refused below (create_queue) when the
            // properties ask for one; else not valid.
            CL_QUEUE_SIZE => sized = true,
            _ => return Err(CL_INVALID_VALUE),
        }
        i += 2;
        if i > 16 {
            return Err(CL_INVALID_VALUE);
        }
    }
    // CL_QUEUE_SIZE without CL_QUEUE_ON_DEVICE is not a valid property list.
    if sized && props & (1 << 2) == 0 {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the list was read up to its terminator at `i` above.
    let array = (!properties.is_null()).then(|| (0..=i).map(|j| unsafe { properties.add(j).read_unaligned() }).collect());
    create_queue(context, device, props, array)
}

// A release performs an implicit flush; Weft's commands are already submitted.
retain_release!(Queue, clRetainCommandQueue => retain_command_queue, clReleaseCommandQueue => release_command_queue);

#[cl_entrypoint(clGetCommandQueueInfo)]
fn get_command_queue_info(qq: Arc<Obj<Queue>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_QUEUE_CONTEXT => info_ptr(icd::handle_of(&qq.context)),
        CL_QUEUE_DEVICE => info_ptr(qq.context.platform.handle(qq.device)),
        CL_QUEUE_REFERENCE_COUNT => info_val(icd::refcount_of(&qq)),
        CL_QUEUE_PROPERTIES => info_val(qq.properties),
        // CL_QUEUE_PROPERTIES_ARRAY: as given, or nothing.
        0x1098 => qq.properties_array.as_ref().map_or_else(Vec::new, |p| p.iter().flat_map(|v| v.to_ne_bytes()).collect()),
        // CL_QUEUE_SIZE is a device queue's: "CL_INVALID_COMMAND_QUEUE if command_queue is
        // not a valid command-queue for param_name" (Weft has no device queues).
        CL_QUEUE_SIZE => return Err(CL_INVALID_COMMAND_QUEUE),
        // CL_QUEUE_DEVICE_DEFAULT: the device's default device queue; none.
        0x1095 => info_ptr(std::ptr::null()),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

#[cl_entrypoint(clFlush)]
fn flush(q: Handle) -> ClResult<()> {
    icd::get::<Queue>(q).map(drop)
}

#[cl_entrypoint(clFinish)]
fn finish_queue(q: Handle) -> ClResult<()> {
    finish(&**icd::get::<Queue>(q)?)
}

/// An enqueue's queue, wait list and event pointer: what `#[cl_entrypoint]` makes of a
/// `Cmd` parameter (the C `command_queue` and the last three, `num_events_in_wait_list`,
/// `event_wait_list`, `event`): the common prologue of an enqueue.
pub struct Cmd {
    pub q: Arc<Obj<Queue>>,
    pub waits: Vec<Arc<Obj<Event>>>,
    /// Null or writable for one handle (the contract of [`Cmd::from_c`]).
    pub event: *mut Handle,
}

impl Cmd {
    /// The queue, then the wait list: the kind's `CL_INVALID_*` code for the first that fails.
    ///
    /// # Safety
    /// `list` null or readable for `n` handles; `event` null or writable for one handle until
    /// the command is handed out.
    pub unsafe fn from_c(q: Handle, n: cl_uint, list: *const Handle, event: *mut Handle) -> ClResult<Cmd> {
        let q = icd::get::<Queue>(q)?;
        // SAFETY: the caller's contract.
        let waits = unsafe { wait_list(n, list, Some(&q.context)) }?;
        Ok(Cmd { q, waits, event })
    }
}

/// A buffer argument of a command on `q`: live, and of `q`'s context.
pub(super) fn buffer_of(q: &Queue, m: Handle) -> ClResult<Arc<Obj<Mem>>> {
    let mm = mem_of(q, m)?;
    // CL_INVALID_MEM_OBJECT if buffer is not a valid buffer object.
    if mm.image.is_some() {
        return Err(CL_INVALID_MEM_OBJECT);
    }
    Ok(mm)
}

/// A memory object (buffer or image) of a command on `q`: live, and of `q`'s context.
pub(super) fn mem_of(q: &Queue, m: Handle) -> ClResult<Arc<Obj<Mem>>> {
    let mm = icd::get::<Mem>(m)?;
    // CL_INVALID_CONTEXT if the context associated with command_queue and buffer are not the same.
    if !Arc::ptr_eq(&mm.context, &q.context) {
        return Err(CL_INVALID_CONTEXT);
    }
    Ok(mm)
}

/// `offset..offset+size` within a buffer of `len` bytes.
pub(super) fn check_range(offset: usize, size: usize, len: usize) -> ClResult<()> {
    // CL_INVALID_VALUE if the region being read or written specified by (offset, size) is out
    // of bounds or if ptr is a NULL value.
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(CL_INVALID_VALUE),
    }
}

/// The driver worker of a device holding the only valid copies of `m`'s data (none when the
/// host's copy is valid). A placement hint: core moves the data if it changed meanwhile.
fn device_holding(q: &Queue, m: &Mem) -> Option<usize> {
    let states = m.handle().replica_states();
    if states.first().is_none_or(|s| *s != ReplicaState::Invalid) {
        return None;
    }
    let node = states.iter().position(|s| *s != ReplicaState::Invalid)?;
    let rt = &q.context.platform.rt;
    rt.workers().iter().find(|w| w.node == node && w.arch == Arch::OpenCl).map(|w| w.id)
}

/// A host-side command: `f` gets the host addresses of the task's buffers (in access order).
pub(super) fn host_codelet(name: &str, state: &Arc<EventState>, f: impl Fn(&[usize]) + Send + Sync + 'static) -> Arc<Codelet> {
    let st = state.clone();
    Codelet::builder(name)
        .cpu(move |ctx: &TaskContext<'_>| {
            st.started();
            let addrs: Vec<usize> = (0..ctx.nbuffers()).map(|i| ctx.buffer(i).as_ptr() as usize).collect();
            f(&addrs);
            Ok(())
        })
        .build()
}

/// Run the command, wait if blocking, hand out its event.
///
/// # Safety
/// `event` null or writable.
pub(super) unsafe fn finish_command(
    q: &Arc<Obj<Queue>>,
    waits: &[Arc<Obj<Event>>],
    command: cl_uint,
    state: Arc<EventState>,
    b: TaskBuilder,
    blocking: bool,
    event: *mut Handle,
) -> ClResult<()> {
    let e = submit(q, waits, command, state, b, false)?;
    // SAFETY: the caller's contract.
    unsafe { hand_out(&e, event) };
    if blocking && e.state.wait() < 0 {
        return Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    Ok(())
}

/// # Safety
/// OpenCL's contract for clEnqueueReadBuffer.
#[cl_entrypoint(clEnqueueReadBuffer)]
unsafe fn enqueue_read_buffer(cmd: Cmd, buffer: Handle, blocking: cl_bool, offset: usize, size: usize, ptr: *mut c_void) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let m = buffer_of(&qq, buffer)?;
    super::memory::host_access(&m, true, false)?;
    check_range(offset, size, m.size)?;
    if ptr.is_null() || size == 0 {
        return Err(CL_INVALID_VALUE);
    }
    let state = EventState::new_queued();
    let dst = ptr as usize;
    let offset = offset + m.offset;
    // Data valid only on a device is read from there straight into `ptr` (one copy, not
    // two through the buffer's home).
    let b = match device_holding(&qq, &m) {
        Some(w) => {
            let st = state.clone();
            let plat = qq.context.platform;
            // A profiling queue's read reports the device's times (event.rs).
            let profiled = qq.properties & CL_QUEUE_PROFILING_ENABLE != 0;
            let c = Codelet::builder("clEnqueueReadBuffer")
                .opencl_impl(OpenClImpl::custom(move |l| {
                    st.started();
                    let (from, to) = (Endpoint::Device(l.buffers[0], offset), Endpoint::Host(dst as *mut u8));
                    // On the kernel queue, not the transfer queue: core may launch this read as
                    // soon as the queue's previous kernel is launched on this device (not
                    // complete), and only the kernel queue orders it after that kernel.
                    let (done, timing) = if profiled {
                        // SAFETY: the replica is valid and pinned until the completion fires and
                        // holds `offset + size` bytes; the application's `ptr` is writable for
                        // `size` bytes until the command completes.
                        unsafe { l.device.copy_after_kernels_timed(from, to, VRect::linear(size)) }
                    } else {
                        // SAFETY: as for the timed copy just above (the same endpoints).
                        unsafe { l.device.copy_after_kernels(from, to, VRect::linear(size)) }.map(|d| (d, None))
                    }
                    .map_err(|e| e.to_string())?;
                    // The read ran as the vendor's command on this device (cl_weft_placement).
                    if let Some(i) = plat.real_index(l.device) {
                        st.ran_on(i, timing);
                    }
                    Ok(done)
                }))
                .build();
            TaskBuilder::new(&c).access(m.handle(), AccessMode::R).on_worker(w)
        }
        None => {
            let c = host_codelet("clEnqueueReadBuffer", &state, move |a| {
                // SAFETY: the buffer's host replica holds `offset + size` bytes; the application's
                // `ptr` is writable for `size` bytes until the command completes.
                unsafe { weft_vendors::copy_host((a[0] + offset) as *const u8, dst as *mut u8, size) }
            });
            TaskBuilder::new(&c).access(m.handle(), AccessMode::R)
        }
    };
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_READ_BUFFER, state, b, is_true(blocking), event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueWriteBuffer.
#[cl_entrypoint(clEnqueueWriteBuffer)]
unsafe fn enqueue_write_buffer(
    cmd: Cmd,
    buffer: Handle,
    blocking: cl_bool,
    offset: usize,
    size: usize,
    ptr: *const c_void,
) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let m = buffer_of(&qq, buffer)?;
    super::memory::host_access(&m, false, true)?;
    check_range(offset, size, m.size)?;
    if ptr.is_null() || size == 0 {
        return Err(CL_INVALID_VALUE);
    }
    let state = EventState::new_queued();
    let src = ptr as usize;
    let mode = if m.whole(offset, size) { AccessMode::W } else { AccessMode::RW };
    let offset = offset + m.offset;
    let c = host_codelet("clEnqueueWriteBuffer", &state, move |a| {
        // SAFETY: as in clEnqueueReadBuffer, the other way.
        unsafe { weft_vendors::copy_host(src as *const u8, (a[0] + offset) as *mut u8, size) }
    });
    let b = TaskBuilder::new(&c).access(m.handle(), mode);
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_WRITE_BUFFER, state, b, is_true(blocking), event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueCopyBuffer.
#[cl_entrypoint(clEnqueueCopyBuffer)]
unsafe fn enqueue_copy_buffer(cmd: Cmd, src: Handle, dst: Handle, src_offset: usize, dst_offset: usize, size: usize) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let s = buffer_of(&qq, src)?;
    let d = buffer_of(&qq, dst)?;
    check_range(src_offset, size, s.size)?;
    check_range(dst_offset, size, d.size)?;
    if size == 0 {
        return Err(CL_INVALID_VALUE);
    }
    let same = Arc::ptr_eq(&super::memory::root(&s), &super::memory::root(&d));
    let dst_whole = d.whole(dst_offset, size);
    let (src_offset, dst_offset) = (src_offset + s.offset, dst_offset + d.offset);
    // CL_MEM_COPY_OVERLAP if src_buffer and dst_buffer are the same buffer or sub-buffer
    // object and the source and destination regions overlap.
    if same && src_offset < dst_offset + size && dst_offset < src_offset + size {
        return Err(CL_MEM_COPY_OVERLAP);
    }
    let state = EventState::new_queued();
    let c = host_codelet("clEnqueueCopyBuffer", &state, move |a| {
        let (from, to) = if same { (a[0], a[0]) } else { (a[0], a[1]) };
        // SAFETY: both ranges lie within their buffers' host replicas (checked above) and do
        // not overlap when in one buffer.
        unsafe { std::ptr::copy((from + src_offset) as *const u8, (to + dst_offset) as *mut u8, size) }
    });
    let b = if same {
        TaskBuilder::new(&c).access(s.handle(), AccessMode::RW)
    } else {
        let mode = if dst_whole { AccessMode::W } else { AccessMode::RW };
        TaskBuilder::new(&c).access(s.handle(), AccessMode::R).access(d.handle(), mode)
    };
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_COPY_BUFFER, state, b, false, event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueFillBuffer.
#[cl_entrypoint(clEnqueueFillBuffer)]
unsafe fn enqueue_fill_buffer(
    cmd: Cmd,
    buffer: Handle,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let m = buffer_of(&qq, buffer)?;
    // CL_INVALID_VALUE if pattern is NULL or if pattern_size is 0 or if pattern_size is not
    // one of { 1, 2, 4, 8, 16, 32, 64, 128 }; if offset and size are not a multiple of pattern_size.
    if pattern.is_null()
        || !pattern_size.is_power_of_two()
        || pattern_size > 128
        || !offset.is_multiple_of(pattern_size)
        || !size.is_multiple_of(pattern_size)
    {
        return Err(CL_INVALID_VALUE);
    }
    check_range(offset, size, m.size)?;
    // SAFETY: the caller's contract: `pattern` is readable for `pattern_size` bytes.
    let pat = unsafe { slice(pattern.cast::<u8>(), pattern_size) }?.to_vec();
    let mode = if m.whole(offset, size) { AccessMode::W } else { AccessMode::RW };
    let offset = offset + m.offset;
    let state = EventState::new_queued();
    let c = host_codelet("clEnqueueFillBuffer", &state, move |a| {
        // SAFETY: the range lies within the buffer's host replica (checked above).
        let dst = unsafe { std::slice::from_raw_parts_mut((a[0] + offset) as *mut u8, size) };
        for chunk in dst.chunks_exact_mut(pat.len()) {
            chunk.copy_from_slice(&pat);
        }
    });
    let b = TaskBuilder::new(&c).access(m.handle(), mode);
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_FILL_BUFFER, state, b, false, event) }
}

/// A rectangle of a rect command, in bytes.
#[derive(Clone, Copy)]
pub(super) struct Rect {
    pub(super) origin: [usize; 3],
    pub(super) row: usize,
    pub(super) slice: usize,
}

impl Rect {
    pub(super) fn offset(&self) -> Option<usize> {
        self.origin[2].checked_mul(self.slice)?.checked_add(self.origin[1].checked_mul(self.row)?)?.checked_add(self.origin[0])
    }

    /// One past the last byte the region touches.
    pub(super) fn end(&self, region: [usize; 3]) -> Option<usize> {
        self.offset()?
            .checked_add((region[2] - 1).checked_mul(self.slice)?)?
            .checked_add((region[1] - 1).checked_mul(self.row)?)?
            .checked_add(region[0])
    }
}

/// Read origin/region triples and default the pitches.
///
/// # Safety
/// `origin` and `region` null or readable for 3 elements.
unsafe fn rect(origin: *const usize, region: [usize; 3], row: usize, slice_: usize) -> ClResult<Rect> {
    // SAFETY: the caller's contract.
    let o = unsafe { slice(origin, 3) }?;
    // CL_INVALID_VALUE if [...] row_pitch is not 0 and is less than region[0]; slice_pitch is
    // not 0 and is less than region[1] * row_pitch and not a multiple of row_pitch.
    let row = if row == 0 { region[0] } else { row };
    if row < region[0] {
        return Err(CL_INVALID_VALUE);
    }
    let min_slice = region[1].checked_mul(row).ok_or(CL_INVALID_VALUE)?;
    let slice_ = if slice_ == 0 { min_slice } else { slice_ };
    if slice_ < min_slice || slice_ % row != 0 {
        return Err(CL_INVALID_VALUE);
    }
    Ok(Rect { origin: [o[0], o[1], o[2]], row, slice: slice_ })
}

/// # Safety
/// `region` null or readable for 3 elements.
unsafe fn region(region: *const usize) -> ClResult<[usize; 3]> {
    // SAFETY: the caller's contract.
    let r = unsafe { slice(region, 3) }?;
    // CL_INVALID_VALUE if any region array element is 0.
    if r.contains(&0) {
        return Err(CL_INVALID_VALUE);
    }
    Ok([r[0], r[1], r[2]])
}

/// Copy a rectangle between two host areas.
///
/// # Safety
/// Both rectangles lie within their areas.
pub(super) unsafe fn copy_rect(src: usize, s: Rect, dst: usize, d: Rect, region: [usize; 3]) {
    let (so, do_) = (s.offset().unwrap_or(0), d.offset().unwrap_or(0));
    for z in 0..region[2] {
        for y in 0..region[1] {
            let from = src + so + z * s.slice + y * s.row;
            let to = dst + do_ + z * d.slice + y * d.row;
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy(from as *const u8, to as *mut u8, region[0]) };
        }
    }
}

/// Shared body of the read and write rect commands.
///
/// # Safety
/// OpenCL's contract for clEnqueue{Read,Write}BufferRect.
unsafe fn host_rect(
    cmd: Cmd,
    buffer: Handle,
    blocking: cl_bool,
    [buffer_origin, host_origin, region_]: [*const usize; 3],
    [buffer_row, buffer_slice, host_row, host_slice]: [usize; 4],
    ptr: usize,
    write: bool,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let m = buffer_of(&qq, buffer)?;
        super::memory::host_access(&m, !write, write)?;
        if ptr == 0 {
            return Err(CL_INVALID_VALUE);
        }
        let reg = region(region_)?;
        let b = rect(buffer_origin, reg, buffer_row, buffer_slice)?;
        let h = rect(host_origin, reg, host_row, host_slice)?;
        if b.end(reg).is_none_or(|e| e > m.size) || h.end(reg).is_none() {
            return Err(CL_INVALID_VALUE);
        }
        let state = EventState::new_queued();
        let name = if write { "clEnqueueWriteBufferRect" } else { "clEnqueueReadBufferRect" };
        let sub = m.offset;
        let c = host_codelet(name, &state, move |a| {
            // SAFETY: the buffer rectangle lies within the replica (checked); the host one within
            // the application's memory (its contract).
            if write { copy_rect(ptr, h, a[0] + sub, b, reg) } else { copy_rect(a[0] + sub, b, ptr, h, reg) }
        });
        let mode = if write { AccessMode::RW } else { AccessMode::R };
        let tb = TaskBuilder::new(&c).access(m.handle(), mode);
        let cmd = if write { CL_COMMAND_WRITE_BUFFER_RECT } else { CL_COMMAND_READ_BUFFER_RECT };
        finish_command(&qq, &waits, cmd, state, tb, is_true(blocking), event)
    }
}

/// clEnqueueReadBufferRect and clEnqueueWriteBufferRect: one signature, `ptr` written or read.
macro_rules! read_write_rect {
    ($($cl:ident => $f:ident($ptr:ty, $write:expr);)*) => {$(
        /// # Safety
        #[doc = concat!("OpenCL's contract for ", stringify!($cl), ".")]
        #[cl_entrypoint($cl)]
        unsafe fn $f(
            cmd: Cmd,
            buffer: Handle,
            blocking: cl_bool,
            buffer_origin: *const usize,
            host_origin: *const usize,
            region_: *const usize,
            buffer_row: usize,
            buffer_slice: usize,
            host_row: usize,
            host_slice: usize,
            ptr: $ptr,
        ) -> ClResult<()> {
            let origins = [buffer_origin, host_origin, region_];
            let pitches = [buffer_row, buffer_slice, host_row, host_slice];
            // SAFETY: forwarded contract.
            unsafe { host_rect(cmd, buffer, blocking, origins, pitches, ptr as usize, $write) }
        }
    )*};
}

read_write_rect! {
    clEnqueueReadBufferRect => enqueue_read_buffer_rect(*mut c_void, false);
    clEnqueueWriteBufferRect => enqueue_write_buffer_rect(*const c_void, true);
}

/// # Safety
/// OpenCL's contract for clEnqueueCopyBufferRect.
#[cl_entrypoint(clEnqueueCopyBufferRect)]
unsafe fn enqueue_copy_buffer_rect(
    cmd: Cmd,
    src: Handle,
    dst: Handle,
    src_origin: *const usize,
    dst_origin: *const usize,
    region_: *const usize,
    src_row: usize,
    src_slice: usize,
    dst_row: usize,
    dst_slice: usize,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let s = buffer_of(&qq, src)?;
        let d = buffer_of(&qq, dst)?;
        let reg = region(region_)?;
        let sr = rect(src_origin, reg, src_row, src_slice)?;
        let dr = rect(dst_origin, reg, dst_row, dst_slice)?;
        let (Some(se), Some(de)) = (sr.end(reg), dr.end(reg)) else { return Err(CL_INVALID_VALUE) };
        if se > s.size || de > d.size {
            return Err(CL_INVALID_VALUE);
        }
        let same = Arc::ptr_eq(&super::memory::root(&s), &super::memory::root(&d));
        let (ssub, dsub) = (s.offset, d.offset);
        if same {
            let (so, do_) = (sr.offset().unwrap_or(0) + ssub, dr.offset().unwrap_or(0) + dsub);
            let (se, de) = (se + ssub, de + dsub);
            // CL_MEM_COPY_OVERLAP (conservatively: the spans overlap).
            if so < de && do_ < se {
                return Err(CL_MEM_COPY_OVERLAP);
            }
        }
        let state = EventState::new_queued();
        let c = host_codelet("clEnqueueCopyBufferRect", &state, move |a| {
            let (from, to) = if same { (a[0], a[0]) } else { (a[0], a[1]) };
            // SAFETY: both rectangles lie within their replicas (checked above).
            copy_rect(from + ssub, sr, to + dsub, dr, reg)
        });
        let tb = if same {
            TaskBuilder::new(&c).access(s.handle(), AccessMode::RW)
        } else {
            TaskBuilder::new(&c).access(s.handle(), AccessMode::R).access(d.handle(), AccessMode::RW)
        };
        finish_command(&qq, &waits, CL_COMMAND_COPY_BUFFER_RECT, state, tb, false, event)
    }
}

/// # Safety
/// OpenCL's contract for clEnqueueMapBuffer.
#[cl_entrypoint(clEnqueueMapBuffer)]
unsafe fn enqueue_map_buffer(
    cmd: Cmd,
    buffer: Handle,
    blocking: cl_bool,
    flags: cl_bitfield,
    offset: usize,
    size: usize,
) -> ClResult<*mut c_void> {
    // SAFETY: the caller's contract: `list` readable for `n` events.
    let Cmd { q: qq, waits, event } = cmd;
    let m = buffer_of(&qq, buffer)?;
    super::memory::host_map(&m, flags)?;
    check_range(offset, size, m.size)?;
    // CL_INVALID_VALUE if [...] size is 0 or values specified in map_flags are not valid.
    if size == 0
        || flags & !(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0
        || (flags & CL_MAP_WRITE_INVALIDATE_REGION != 0 && flags & (CL_MAP_READ | CL_MAP_WRITE) != 0)
    {
        return Err(CL_INVALID_VALUE);
    }
    let state = EventState::new_queued();
    let c = host_codelet("clEnqueueMapBuffer", &state, |_| {});
    // The task brings the data home (valid for reading, owned for writing).
    let mode = if flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 { AccessMode::RW } else { AccessMode::R };
    let tb = TaskBuilder::new(&c).access(m.handle(), mode);
    let ptr = m.base + offset;
    m.map_count.fetch_add(1, Ordering::Relaxed);
    m.maps.lock().unwrap_or_else(|e| e.into_inner()).push((ptr, size));
    // SAFETY: the caller's contract: `event` null or writable.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_MAP_BUFFER, state, tb, is_true(blocking), event) }?;
    Ok(ptr as *mut c_void)
}

/// # Safety
/// OpenCL's contract for clEnqueueUnmapMemObject.
#[cl_entrypoint(clEnqueueUnmapMemObject)]
unsafe fn enqueue_unmap_mem_object(cmd: Cmd, memobj: Handle, mapped: *mut c_void) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let m = mem_of(&qq, memobj)?;
    {
        let mut maps = m.maps.lock().unwrap_or_else(|e| e.into_inner());
        // CL_INVALID_VALUE if mapped_ptr is not a valid pointer returned by clEnqueueMapBuffer
        // [...] for memobj.
        let i = maps.iter().position(|&(p, _)| p == mapped as usize).ok_or(CL_INVALID_VALUE)?;
        maps.swap_remove(i);
    }
    m.map_count.fetch_sub(1, Ordering::Relaxed);
    let state = EventState::new_queued();
    let tb = TaskBuilder::empty();
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_UNMAP_MEM_OBJECT, state, tb, false, event) }
}

/// Markers and barriers: an empty task after the wait list (or after everything before).
///
/// # Safety
/// `list` null or readable for `n` handles; `event` null or writable.
unsafe fn sync_point(cmd: Cmd, command: cl_uint, barrier: bool) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let all = waits.is_empty() || barrier;
    let e = submit(&qq, &waits, command, EventState::new_queued(), TaskBuilder::empty(), all)?;
    // SAFETY: the caller's contract.
    unsafe { hand_out(&e, event) };
    Ok(())
}

/// # Safety
/// `event` null or writable.
#[cl_entrypoint(clEnqueueMarker)]
unsafe fn enqueue_marker(q: Handle, event: *mut Handle) -> ClResult<()> {
    // CL_INVALID_VALUE if event is a NULL value.
    if event.is_null() && icd::is::<Queue>(q) {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `event` null or writable.
    unsafe { sync_point(Cmd::from_c(q, 0, std::ptr::null(), event)?, CL_COMMAND_MARKER, true) }
}

/// # Safety
/// As clEnqueueMarkerWithWaitList.
#[cl_entrypoint(clEnqueueMarkerWithWaitList)]
unsafe fn enqueue_marker_with_wait_list(cmd: Cmd) -> ClResult<()> {
    // SAFETY: the caller's contract.
    unsafe { sync_point(cmd, CL_COMMAND_MARKER, false) }
}

/// # Safety
/// As clEnqueueBarrierWithWaitList.
#[cl_entrypoint(clEnqueueBarrierWithWaitList)]
unsafe fn enqueue_barrier_with_wait_list(cmd: Cmd) -> ClResult<()> {
    // SAFETY: the caller's contract.
    unsafe { sync_point(cmd, CL_COMMAND_BARRIER, true) }
}

/// # Safety
/// `q` is any value (validated).
#[cl_entrypoint(clEnqueueBarrier)]
fn enqueue_barrier(q: Handle) -> ClResult<()> {
    // SAFETY: no wait list and no event: nothing is read or written but the handle, which is
    // validated before use.
    unsafe { sync_point(Cmd::from_c(q, 0, std::ptr::null(), std::ptr::null_mut())?, CL_COMMAND_BARRIER, true) }
}

/// # Safety
/// `list` readable for `n` handles.
#[cl_entrypoint(clEnqueueWaitForEvents)]
unsafe fn enqueue_wait_for_events(q: Handle, n: cl_uint, list: *const Handle) -> ClResult<()> {
    // CL_INVALID_VALUE if num_events is 0 or event_list is NULL.
    if icd::is::<Queue>(q) && (n == 0 || list.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `list` readable for `n` handles; no event.
    unsafe { sync_point(Cmd::from_c(q, n, list, std::ptr::null_mut())?, CL_COMMAND_BARRIER, true) }
}

/// Migration is a hint: a marker after the wait list, with the buffers validated.
///
/// # Safety
/// `mems` readable for `num` handles; `list`/`event` as for any enqueue.
#[cl_entrypoint(clEnqueueMigrateMemObjects)]
unsafe fn enqueue_migrate_mem_objects(
    q: Handle,
    num: cl_uint,
    mems: *const Handle,
    flags: cl_bitfield,
    n: cl_uint,
    list: *const Handle,
    event: *mut Handle,
) -> ClResult<()> {
    let qq = icd::get::<Queue>(q)?;
    // CL_INVALID_VALUE if num_mem_objects is zero or if mem_objects is NULL [or] flags is not 0
    // or any of the values described in the table.
    if num == 0 || mems.is_null() || flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0 {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    for &m in unsafe { slice(mems, num as usize) }? {
        mem_of(&qq, m)?;
    }
    // SAFETY: the caller's contract.
    unsafe { sync_point(Cmd::from_c(q, n, list, event)?, CL_COMMAND_MIGRATE_MEM_OBJECTS, false) }
}
