//! Submitting work to an [`OpenClDevice`]'s queue and turning OpenCL events into
//! [`Completion`]s.
//!
//! **Owns**: copies (`Device::copy`), kernel launches, completion tracking, and the
//! profiling record of a launch or kernel-queue copy (`*_timed`: [`DeviceTiming`], read
//! into Weft's clock, [`clock_ns`], by [`to_weft_clock`]).
//! **Invariants**:
//! * Submissions hold the device's submission lock (see `device.rs` for the PoCL
//!   deadlock it avoids); waiting never does.
//! * Every command is submitted non-blocking, its event gets a `clSetEventCallback`
//!   (`CL_COMPLETE`) that completes the [`Completion`], and the queue is flushed before
//!   returning, so the command makes progress without anyone waiting on the queue.
//!   Batched launches (`launch_batched`) are the exception: no event each, one shared
//!   completion that a marker completes once `close_batch` enqueued it (and flushed).
//! * The callback takes no lock of ours except the completion's own, and we hold only
//!   the submission lock while calling into OpenCL: PoCL's "basic" devices run the command, and so the
//!   callback, inside the thread that enqueues or flushes (this one), and other vendors
//!   run it on their own threads; neither can deadlock.
//! * A command that ends abnormally (negative status) completes with
//!   `DeviceError::Lost` naming its error code.
//! * If a multi-command copy fails half-way, the commands already submitted are waited
//!   for before the error is returned, so no command still uses the caller's memory.
//! * Our event reference is released once the callback is registered; the command keeps
//!   the event alive until it has completed and run its callbacks.

use super::conv::{RectPlan, lost, rect_plan};
use super::device::OpenClDevice;
use super::memory::raw_mem;
use super::result::{self as r, ClError, ClResult, RectArgs};
use super::safe::{Event, Kernel, Queue};
use super::sys::*;
use crate::{Completion, DeviceError, Endpoint, Rect};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Launches per batch (`launch_batched`) at most: a full batch closes by itself, so that a
/// launch's completion waits on at most this many later ones, however long the stream.
const BATCH: usize = 64;

/// Events still to complete for one [`Completion`].
struct Pending {
    remaining: AtomicUsize,
    error: Mutex<Option<DeviceError>>,
    done: Completion,
}

impl Pending {
    fn one_done(&self, status: cl_int) {
        if status < 0 {
            let mut e = self.error.lock().unwrap_or_else(|e| e.into_inner());
            e.get_or_insert_with(|| DeviceError::Lost(format!("OpenCL command failed: {}", ClError(status))));
        }
        // AcqRel: the last decrement must see every other callback's writes (they also go
        // through the `error` mutex, so this is belt and braces).
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let e = self.error.lock().unwrap_or_else(|e| e.into_inner()).take();
            self.done.complete(e.map_or(Ok(()), Err));
        }
    }
}

/// Registered with `clSetEventCallback`; `user` is an `Arc<Pending>` from `Arc::into_raw`.
unsafe extern "C" fn on_event_complete(_event: cl_event, status: cl_int, user: *mut c_void) {
    // SAFETY: `track` passed exactly one `Arc::into_raw` reference per registered callback,
    // and OpenCL calls each callback once.
    let pending = unsafe { Arc::from_raw(user.cast_const().cast::<Pending>()) };
    // A panic must not unwind into the vendor; `one_done` does not panic, but be sure.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pending.one_done(status)));
}

/// A `clSetEventCallback` per event completing `pending` (or, where the vendor refuses
/// one, a wait here).
fn register_callbacks(queue: &Queue, events: Vec<Event>, pending: &Arc<Pending>) {
    for ev in events {
        let user = Arc::into_raw(pending.clone()).cast_mut().cast::<c_void>();
        // SAFETY: the event is live; `on_event_complete` takes `user` back exactly once.
        if unsafe { r::set_event_callback(ev.as_raw(), CL_COMPLETE, on_event_complete, user) }.is_err() {
            // SAFETY: the callback was not registered, so the reference is still ours.
            drop(unsafe { Arc::from_raw(user.cast_const().cast::<Pending>()) });
            // No callbacks (or a broken one): wait here instead.
            let _ = queue.flush();
            let status = match ev.wait() {
                Ok(()) => CL_COMPLETE,
                Err(e) => e.0,
            };
            pending.one_done(status);
        }
    }
}

impl OpenClDevice {
    /// A completion for `events` (all submitted to `queue`, one of this device's): registers
    /// the callbacks, then flushes. The caller holds the submission lock.
    fn track(&self, queue: &Queue, events: Vec<Event>) -> Result<Completion, DeviceError> {
        if events.is_empty() {
            return Ok(Completion::done());
        }
        self.track_into(queue, events, Completion::new())
    }

    /// [`OpenClDevice::track`] completing `done`.
    fn track_into(&self, queue: &Queue, events: Vec<Event>, done: Completion) -> Result<Completion, DeviceError> {
        let pending = Arc::new(Pending { remaining: AtomicUsize::new(events.len()), error: Mutex::new(None), done });
        let done = pending.done.clone();
        if let Some(poller) = &self.poller {
            poller.add(events.into_iter().map(|ev| (ev, pending.clone())));
        } else {
            register_callbacks(queue, events, &pending);
        }
        queue.flush().map_err(|e| lost("clFlush", e))?;
        Ok(done)
    }

    /// Submit `commands` to `queue` in order; on a failure, wait for those already
    /// submitted and return the error.
    fn submit(
        &self,
        queue: &Queue,
        call: &'static str,
        commands: impl IntoIterator<Item = impl FnOnce() -> ClResult<cl_event>>,
    ) -> Result<Completion, DeviceError> {
        self.submit_timed(queue, call, commands, false).map(|(done, _)| done)
    }

    /// [`OpenClDevice::submit`], and with `timed` (on the profiling kernel queue) the
    /// [`DeviceTiming`] of the commands.
    fn submit_timed(
        &self,
        queue: &Queue,
        call: &'static str,
        commands: impl IntoIterator<Item = impl FnOnce() -> ClResult<cl_event>>,
        timed: bool,
    ) -> Result<(Completion, Option<DeviceTiming>), DeviceError> {
        let submitting = self.lock_submissions();
        // Taken under the lock: the bracket holds the enqueue calls only. Only the kernel
        // queue profiles.
        let timed = timed && self.profiling && std::ptr::eq(queue, &self.queue);
        let lo = if timed { clock_ns() } else { 0 };
        let mut events = Vec::new();
        for cmd in commands {
            match cmd() {
                // SAFETY: a new event whose one reference we own.
                Ok(ev) => events.push(unsafe { Event::from_raw(ev) }),
                Err(e) => {
                    let _ = queue.flush();
                    drop(submitting);
                    for ev in &events {
                        let _ = ev.wait();
                    }
                    return Err(lost(call, e));
                }
            }
        }
        let timing = match (timed, events.first(), events.last()) {
            (true, Some(first), Some(last)) => {
                let enqueued = (lo, clock_ns());
                // A reference of our own to each (the track below gives its away); without
                // one, no device times, which is not an error.
                match (first.try_clone(), last.try_clone()) {
                    (Ok(first), Ok(last)) => Some(DeviceTiming { first, last, enqueued }),
                    _ => None,
                }
            }
            _ => None,
        };
        Ok((self.track(queue, events)?, timing))
    }

    /// `Device::copy`.
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    pub(crate) unsafe fn enqueue_copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_copy_on(&self.transfer, src, dst, rect) }
    }

    /// `Device::copy` on the kernel queue: after every kernel already launched on this
    /// device, in order, even those not complete yet (the transfer queue gives no such
    /// order). What a command that core launches right behind a kernel it has not seen
    /// complete needs (an in-order OpenCL queue's read after its kernels).
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    pub unsafe fn copy_after_kernels(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_copy_on(&self.queue, src, dst, rect) }
    }

    /// [`OpenClDevice::copy_after_kernels`], with the copy's [`DeviceTiming`] (None when
    /// the vendor ran no command: an empty or host-to-host copy, or a queue without
    /// profiling).
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    pub unsafe fn copy_after_kernels_timed(
        &self,
        src: Endpoint,
        dst: Endpoint,
        rect: Rect,
    ) -> Result<(Completion, Option<DeviceTiming>), DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_copy_timed(&self.queue, src, dst, rect, true) }
    }

    /// Copy `rect` from `src` to `dst` on `tq`, one of this device's queues.
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    unsafe fn enqueue_copy_on(&self, tq: &Queue, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_copy_timed(tq, src, dst, rect, false) }.map(|(done, _)| done)
    }

    /// [`OpenClDevice::enqueue_copy_on`], with the copy's [`DeviceTiming`] if `timed`.
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    unsafe fn enqueue_copy_timed(
        &self,
        tq: &Queue,
        src: Endpoint,
        dst: Endpoint,
        rect: Rect,
        timed: bool,
    ) -> Result<(Completion, Option<DeviceTiming>), DeviceError> {
        if rect.bytes() == 0 {
            return Ok((Completion::done(), None));
        }
        let q = tq.as_raw();
        let plan = rect_plan(&rect);
        let shift = |mut a: RectArgs, a_off: usize, b_off: usize| {
            a.a_origin[0] += a_off;
            a.b_origin[0] += b_off;
            a
        };
        // SAFETY (every command below): the queue is live; `Device` endpoints are live
        // buffers of this device and host endpoints stay valid over the rectangle until
        // the completion fires (caller's contract); `track`/`submit` wait or register.
        match (src, dst) {
            (Endpoint::Host(s), Endpoint::Host(d)) => {
                // SAFETY: the caller guarantees both are valid and disjoint over the rectangle.
                unsafe { crate::copy_rect_host(s, d, rect) };
                Ok((Completion::done(), None))
            }
            (Endpoint::Host(h), Endpoint::Device(b, off)) => match plan {
                RectPlan::Linear(n) => self.submit_timed(
                    tq,
                    "clEnqueueWriteBuffer",
                    // SAFETY: the arguments meet the call's contract (see above this `match`).
                    [|| unsafe { r::enqueue_write_buffer(q, raw_mem(b), off, n, h.cast_const().cast(), &[]) }],
                    timed,
                ),
                RectPlan::Rects(rects) => self.submit_timed(
                    tq,
                    "clEnqueueWriteBufferRect",
                    rects.into_iter().map(|a| {
                        // Buffer side first in `RectArgs` for the read/write calls.
                        let a = RectArgs {
                            a_origin: a.b_origin,
                            b_origin: a.a_origin,
                            a_pitch: a.b_pitch,
                            b_pitch: a.a_pitch,
                            region: a.region,
                        };
                        let a = shift(a, off, 0);
                        // SAFETY: the arguments meet the call's contract (see above this `match`).
                        move || unsafe { r::enqueue_write_buffer_rect(q, raw_mem(b), &a, h.cast_const().cast(), &[]) }
                    }),
                    timed,
                ),
            },
            (Endpoint::Device(b, off), Endpoint::Host(h)) => match plan {
                RectPlan::Linear(n) => {
                    // SAFETY: the arguments meet the call's contract (see above this `match`).
                    self.submit_timed(
                        tq,
                        "clEnqueueReadBuffer",
                        [|| unsafe { r::enqueue_read_buffer(q, raw_mem(b), off, n, h.cast(), &[]) }],
                        timed,
                    )
                }
                RectPlan::Rects(rects) => self.submit_timed(
                    tq,
                    "clEnqueueReadBufferRect",
                    rects.into_iter().map(|a| {
                        let a = shift(a, off, 0);
                        // SAFETY: the arguments meet the call's contract (see above this `match`).
                        move || unsafe { r::enqueue_read_buffer_rect(q, raw_mem(b), &a, h.cast(), &[]) }
                    }),
                    timed,
                ),
            },
            (Endpoint::Device(s, soff), Endpoint::Device(d, doff)) => match plan {
                RectPlan::Linear(n) => self
                    // SAFETY: the arguments meet the call's contract (see above this `match`).
                    .submit_timed(
                        tq,
                        "clEnqueueCopyBuffer",
                        [|| unsafe { r::enqueue_copy_buffer(q, raw_mem(s), raw_mem(d), soff, doff, n, &[]) }],
                        timed,
                    ),
                RectPlan::Rects(rects) => self.submit_timed(
                    tq,
                    "clEnqueueCopyBufferRect",
                    rects.into_iter().map(|a| {
                        let a = shift(a, soff, doff);
                        // SAFETY: the arguments meet the call's contract (see above this `match`).
                        move || unsafe { r::enqueue_copy_buffer_rect(q, raw_mem(s), raw_mem(d), &a, &[]) }
                    }),
                    timed,
                ),
            },
        }
    }

    /// Launch `kernel` over `global` work-items (1 to 3 dimensions), in work-groups of
    /// `local` (or the vendor's choice), after every command already submitted to this
    /// device.
    ///
    /// # Safety
    /// Every buffer set as an argument of `kernel` is a live buffer of this device and
    /// stays allocated, and is not read or written by anyone else than the kernel's
    /// declared accesses, until the completion fires.
    pub unsafe fn launch(&self, kernel: &Kernel, global: &[usize], local: Option<&[usize]>) -> Result<Completion, DeviceError> {
        // SAFETY: the caller's contract, which is launch_at's.
        unsafe { self.launch_at(kernel, None, global, local) }
    }

    /// [`OpenClDevice::launch`] with a global work offset (`None`: zero).
    ///
    /// # Safety
    /// As [`OpenClDevice::launch`].
    pub unsafe fn launch_at(
        &self,
        kernel: &Kernel,
        offset: Option<&[usize]>,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<Completion, DeviceError> {
        let (q, k) = (self.queue.as_raw(), kernel.as_raw());
        // SAFETY: queue and kernel are live; the caller keeps the arguments alive.
        self.submit(&self.queue, "clEnqueueNDRangeKernel", [|| unsafe { r::enqueue_nd_range_kernel(q, k, offset, global, local) }])
    }

    /// [`OpenClDevice::launch_at`], with the launch's [`DeviceTiming`] (None when the
    /// vendor's queue has no profiling).
    ///
    /// # Safety
    /// As [`OpenClDevice::launch`].
    pub unsafe fn launch_timed(
        &self,
        kernel: &Kernel,
        offset: Option<&[usize]>,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<(Completion, Option<DeviceTiming>), DeviceError> {
        let (q, k) = (self.queue.as_raw(), kernel.as_raw());
        // SAFETY: queue and kernel are live; the caller keeps the arguments alive.
        self.submit_timed(
            &self.queue,
            "clEnqueueNDRangeKernel",
            [|| unsafe { r::enqueue_nd_range_kernel(q, k, offset, global, local) }],
            true,
        )
    }

    /// [`OpenClDevice::launch_at`] without an event of its own: the kernel joins the open
    /// batch, whose completion it returns; that completion fires once
    /// [`OpenClDevice::close_batch`] was called and everything before it ran. Saves the
    /// vendor an event, a callback and a flush per launch (an in-order queue's tiny kernels).
    /// A failure reported by the batch's marker fails every launch of the batch.
    ///
    /// # Safety
    /// As [`OpenClDevice::launch`], until the returned completion fires.
    pub unsafe fn launch_batched(
        &self,
        kernel: &Kernel,
        offset: Option<&[usize]>,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<Completion, DeviceError> {
        let (q, k) = (self.queue.as_raw(), kernel.as_raw());
        let submitting = self.lock_submissions();
        // SAFETY: queue and kernel are live; the caller keeps the arguments alive.
        unsafe { r::enqueue_nd_range_kernel_no_event(q, k, offset, global, local) }.map_err(|e| lost("clEnqueueNDRangeKernel", e))?;
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        let (done, n) = batch.get_or_insert_with(|| (Completion::new(), 0));
        *n += 1;
        let (done, full) = (done.clone(), *n >= BATCH);
        drop(batch);
        if full {
            // Bounds how long an early launch's completion waits on later ones.
            self.close_batch_locked(submitting);
        }
        Ok(done)
    }

    /// Close the open batch of [`OpenClDevice::launch_batched`], if any: a marker whose
    /// completion completes the batch's, then a flush. Whoever is about to wait for a batched
    /// launch calls this first.
    pub fn close_batch(&self) {
        self.close_batch_locked(self.lock_submissions());
    }

    /// [`OpenClDevice::close_batch`] with the submission lock held.
    fn close_batch_locked(&self, submitting: std::sync::MutexGuard<'_, ()>) {
        let Some((done, _)) = self.batch.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        // SAFETY: the queue is live.
        match unsafe { r::enqueue_marker(self.queue.as_raw()) } {
            Ok(ev) => {
                // SAFETY: a new event whose one reference we own.
                let ev = unsafe { Event::from_raw(ev) };
                if let Err(e) = self.track_into(&self.queue, vec![ev], done.clone()) {
                    done.complete(Err(e));
                }
            }
            Err(e) => {
                // No marker: wait for the queue to drain instead.
                let r = self.queue.flush().and_then(|_| self.queue.finish());
                drop(submitting);
                done.complete(r.map_err(|_| lost("clEnqueueMarkerWithWaitList", e)));
            }
        }
    }

    /// Submit raw commands to the kernel queue, in order (each gets the raw queue and
    /// returns its event), and return one completion for all of them: what a launch that
    /// surrounds its kernel with copies (images) needs.
    ///
    /// # Safety
    /// Each command meets its call's contract on this device's queue; every object the
    /// commands use stays alive and is used by no one else until the completion fires.
    pub unsafe fn enqueue_raw(
        &self,
        call: &'static str,
        commands: Vec<Box<dyn FnOnce(cl_command_queue) -> ClResult<cl_event> + '_>>,
    ) -> Result<Completion, DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.enqueue_raw_timed(call, commands, false) }.map(|(done, _)| done)
    }

    /// [`OpenClDevice::enqueue_raw`], with the commands' [`DeviceTiming`] if `timed` (and
    /// the queue profiles): from the first's start to the last's end.
    ///
    /// # Safety
    /// As [`OpenClDevice::enqueue_raw`].
    pub unsafe fn enqueue_raw_timed(
        &self,
        call: &'static str,
        commands: Vec<Box<dyn FnOnce(cl_command_queue) -> ClResult<cl_event> + '_>>,
        timed: bool,
    ) -> Result<(Completion, Option<DeviceTiming>), DeviceError> {
        let q = self.queue.as_raw();
        self.submit_timed(&self.queue, call, commands.into_iter().map(|c| move || c(q)), timed)
    }
}

/// Weft's profiling clock: the host's `CLOCK_MONOTONIC_RAW`, in nanoseconds. The raw clock
/// (not slewed by NTP) is the one PoCL's CPU devices time their commands with, so on them a
/// device time needs no translation ([`to_weft_clock`]).
pub fn clock_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// What the vendor recorded of commands submitted together (one Weft command): the first
/// and the last command's events, and [`clock_ns`] just before the first enqueue call and
/// just after the last one. Read it ([`DeviceTiming::times`]) once the commands completed.
pub struct DeviceTiming {
    first: Event,
    last: Event,
    enqueued: (u64, u64),
}

/// A command's device times in Weft's clock ([`clock_ns`]): START is the first vendor
/// command's, END and COMPLETE the last one's; `start <= end <= complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceTimes {
    pub start: u64,
    pub end: u64,
    pub complete: u64,
}

impl DeviceTiming {
    /// The device's times, translated into Weft's clock; None if the vendor gives none.
    pub fn times(&self) -> Option<DeviceTimes> {
        let queued = self.first.profiling(CL_PROFILING_COMMAND_QUEUED).ok()?;
        let start = self.first.profiling(CL_PROFILING_COMMAND_START).ok()?;
        let end = self.last.profiling(CL_PROFILING_COMMAND_END).ok()?;
        // COMPLETE is OpenCL 2.0's: a 1.x vendor's END stands for it.
        let complete = self.last.profiling(CL_PROFILING_COMMAND_COMPLETE).unwrap_or(end);
        if queued == 0 || start == 0 || end == 0 {
            return None;
        }
        Some(to_weft_clock(self.enqueued, queued, start, end, complete))
    }
}

/// Translate device times into Weft's clock. The device's QUEUED time of the first command
/// was taken inside its enqueue call, which ran between `lo` and `hi` of Weft's clock: if it
/// lies there, the device counts in Weft's clock (PoCL's CPU devices) and its times stand as
/// they are; else the device's clock is another, and its times are shifted so that QUEUED
/// falls in the middle of the bracket (an error of at most half the enqueue call, the same
/// for the command's every time: START, END and COMPLETE keep the device's differences).
/// Each command brings its own bracket, so a device clock drifting from the host's does
/// not accumulate. The result is ordered (`start <= end <= complete`) whatever the vendor gave.
pub fn to_weft_clock((lo, hi): (u64, u64), queued: u64, start: u64, end: u64, complete: u64) -> DeviceTimes {
    let shift = if (lo..=hi).contains(&queued) { 0 } else { i128::from(queued) - i128::from(lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2) };
    let map = |t: u64| (i128::from(t) - shift).clamp(0, i128::from(u64::MAX)) as u64;
    let start = map(start.max(queued));
    let end = map(end).max(start);
    DeviceTimes { start, end, complete: map(complete).max(end) }
}

/// Completion by polling instead of `clSetEventCallback`, for GPUs and accelerators
/// (`WEFT_OCL_POLL` = 1 or 0 forces it on or off for every device): one thread per device
/// asks each tracked event's status (`clGetEventInfo`) in turn, yielding between rounds
/// (sleeping 20 µs a round once 1 ms passed without an event added or completed), and
/// blocks while none is pending. NVIDIA's callbacks come late: on an H100,
/// bench/cl/clbench.c's 0.6 ms SGEMM ran at 330-900 GFLOP/s through Weft with callbacks,
/// 3,170-3,530 polling without sleeps, 3,730-3,800 direct (and 3,280-3,310 with a first
/// version that slept after 200 µs counted from the last completion, so a kernel
/// submitted after an idle spell was watched in 20 µs sleeps from its start). CPU devices
/// keep callbacks: PoCL runs them at once, and a polling thread would take a core from the
/// device's own threads.
pub(crate) struct Poller {
    shared: Arc<PollShared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct PollShared {
    state: Mutex<PollState>,
    wake: Condvar,
}

#[derive(Default)]
struct PollState {
    /// Events still running, each with the completion it counts towards.
    pending: Vec<(Event, Arc<Pending>)>,
    /// The device is going: the thread ends once nothing is pending.
    stopping: bool,
}

impl Poller {
    /// The poller of device `name`, its thread started.
    pub(crate) fn start(name: &str) -> std::io::Result<Poller> {
        let shared = Arc::new(PollShared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new().name(format!("weft-ocl-poll {name}")).spawn(move || s.run())?;
        Ok(Poller { shared, thread: Mutex::new(Some(thread)) })
    }

    fn add(&self, events: impl Iterator<Item = (Event, Arc<Pending>)>) {
        let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = st.pending.is_empty();
        st.pending.extend(events);
        if was_empty {
            self.shared.wake.notify_one();
        }
    }

    /// Waits for the pending events, then ends the thread.
    pub(crate) fn stop(&self) {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).stopping = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl PollShared {
    fn run(&self) {
        let mut polling = Vec::new();
        // Since the last event was added or completed: yield between rounds for SPIN,
        // then sleep a little each round, so a long kernel does not keep a core busy.
        const SPIN: std::time::Duration = std::time::Duration::from_millis(1);
        let mut progress = std::time::Instant::now();
        loop {
            {
                let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                // (Everything pending was taken last round: what is there now is new.)
                let mut fresh = !st.pending.is_empty();
                st.pending.append(&mut polling);
                while st.pending.is_empty() {
                    if st.stopping {
                        return;
                    }
                    st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                    fresh = true;
                }
                if fresh {
                    progress = std::time::Instant::now();
                }
                std::mem::swap(&mut polling, &mut st.pending);
            }
            let before = polling.len();
            polling.retain(|(ev, pending)| match ev.status() {
                Ok(s) if s > CL_COMPLETE => true,
                Ok(s) => {
                    pending.one_done(s);
                    false
                }
                Err(e) => {
                    pending.one_done(if e.0 < 0 { e.0 } else { CL_OUT_OF_RESOURCES });
                    false
                }
            });
            if polling.len() < before {
                progress = std::time::Instant::now();
            } else if progress.elapsed() < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device counting in Weft's clock (its QUEUED inside the enqueue bracket) keeps its
    /// times exactly.
    #[test]
    fn times_in_weft_clock_stand_as_they_are() {
        let t = to_weft_clock((1_000, 1_100), 1_050, 2_000, 5_000, 5_000);
        assert_eq!(t, DeviceTimes { start: 2_000, end: 5_000, complete: 5_000 });
    }

    /// Another clock (far ahead, or behind): QUEUED lands mid-bracket, every time moves by
    /// the same amount, so the device's durations are kept.
    #[test]
    fn another_clock_is_shifted_by_one_offset() {
        let t = to_weft_clock((1_000, 1_100), 9_000_000_050, 9_000_001_050, 9_000_004_050, 9_000_004_060);
        assert_eq!(t, DeviceTimes { start: 2_050, end: 5_050, complete: 5_060 });
        let t = to_weft_clock((1_000_000, 1_000_100), 10, 20, 30, 0);
        assert_eq!(t, DeviceTimes { start: 1_000_060, end: 1_000_070, complete: 1_000_070 });
    }

    /// Whatever the vendor reports, the result is ordered and START is not before QUEUED.
    #[test]
    fn the_result_is_ordered() {
        let t = to_weft_clock((100, 200), 150, 140, 120, 110);
        assert!(t.start >= 150 && t.start <= t.end && t.end <= t.complete, "{t:?}");
        let t = to_weft_clock((u64::MAX - 10, u64::MAX), 5, 6, 7, 8);
        assert!(t.start <= t.end && t.end <= t.complete, "{t:?}");
    }
}
