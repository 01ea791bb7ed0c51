//! Streams ("lanes") of a [`CudaDevice`], and turning stream work into [`Completion`]s.
//!
//! **Owns**: copies (`Device::copy`), kernel launches, fences, and completion tracking.
//! **Does not own**: ordering between lanes (core orders work through completions).
//!
//! # Lanes
//! Each device has three lanes, each a non-blocking CUDA stream plus one completion
//! thread: `h2d` (host-to-device and device-to-device copies), `d2h` (device-to-host
//! copies) and `compute` (kernels and cuBLAS). Separate streams let a GPU's copy engines
//! move data in both directions while a kernel runs, which is what core's driver keeps
//! several tasks in flight for. Nothing orders one lane after another: core may start
//! work that reads a buffer only after the completion of the work that wrote it has
//! fired (the `Device::copy` contract), so no cross-stream event is needed.
//!
//! # Completions: an event and a completion thread per lane
//! After enqueueing, the submitter records a `CU_EVENT_BLOCKING_SYNC` event on the lane's
//! stream and hands it, with the [`Completion`] and an optional host step, to the lane's
//! thread, which waits on the events in submission order (one stream runs its work in
//! order, so no later event completes first), runs the host step, and completes. Why not
//! a host callback (`cuLaunchHostFunc`): after a sticky error the driver never calls it,
//! so a completion would never fire (core would hang), and a host function may not call
//! CUDA, which the host step needs (freeing pinned memory). An event wait returns the
//! error instead, and the completion fires with `DeviceError::Lost` naming it. A blocking
//! sync sleeps rather than spins (CPU workers need the cores), at the price of a few
//! microseconds of wake-up latency.
//!
//! **Invariants**:
//! * A lane's sender mutex is held from the first enqueue to the send of the event, so
//!   the thread receives events in stream order and each event covers its own work.
//! * Every submitted piece of work ends with its completion firing, once: normally on the
//!   lane thread; inline if that thread is gone; and if enqueueing fails half-way, the
//!   stream is synchronized before the error returns, so no command still uses the
//!   caller's memory.
//! * A panic on the lane thread (there should be none) completes that work with
//!   `DeviceError::Lost` instead of leaving it pending.
//!
//! # Staging
//! The DMA engines reach only page-locked host memory: an async copy from pageable
//! memory is silently synchronous. A host side that is not pinned (see
//! `result::is_pinned`) goes through a pinned staging buffer from the device's
//! `memory::StagingPool`, packed: host-to-device copies pack the rectangle into it in
//! the calling thread and DMA from it; device-to-host copies DMA into it and the lane
//! thread unpacks it into the caller's memory before completing. If no staging buffer
//! can be had, the copy goes directly from pageable memory (correct, but the call
//! blocks).

use super::conv::{Piece, copy_plan, lost};
use super::device::CudaDevice;
use super::result::{self as r, Side};
use super::{CudaKernel, LaunchDims};
use crate::{Buffer, Completion, DeviceError, Endpoint, Rect};
use cudarc::driver::sys::{CUevent, CUstream};
use cudarc::driver::{CudaContext, CudaStream, DriverError, result as dr};
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// An event of one context, destroyed on drop.
pub(crate) struct Event {
    raw: CUevent,
    ctx: Arc<CudaContext>,
}

// SAFETY: CUDA events may be used from any thread (the driver API is thread-safe).
unsafe impl Send for Event {}

impl Event {
    /// A new blocking-sync event recorded on `stream` (of `ctx`, current on this thread).
    fn record(ctx: &Arc<CudaContext>, stream: CUstream) -> Result<Event, DriverError> {
        // SAFETY: the context is current (caller) and the library loaded.
        let raw = unsafe { r::event_create_blocking() }?;
        let ev = Event { raw, ctx: ctx.clone() };
        // SAFETY: both handles are live.
        unsafe { dr::event::record(ev.raw, stream) }?;
        Ok(ev)
    }

    fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event of the bound context.
        unsafe { dr::event::synchronize(self.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: the event is ours and no longer used.
        let _ = unsafe { dr::event::destroy(self.raw) };
    }
}

/// A host step run on the lane thread once the stream work is over: `true` if it
/// succeeded. It must release what it holds either way.
type After = Box<dyn FnOnce(bool) + Send>;

/// Stream work whose completion is still to fire.
struct Pending {
    event: Event,
    after: Option<After>,
    done: Completion,
}

impl Pending {
    /// Wait for the work, run the host step, complete. Never panics.
    fn finish(self) {
        let Pending { event, after, done } = self;
        let mut result = match catch_unwind(AssertUnwindSafe(|| event.synchronize())) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(lost("CUDA stream work failed (cuEventSynchronize)", e)),
            Err(_) => Err(DeviceError::Lost("cuEventSynchronize panicked".into())),
        };
        if let Some(after) = after {
            let ok = result.is_ok();
            if catch_unwind(AssertUnwindSafe(|| after(ok))).is_err() {
                result = result.and(Err(DeviceError::Lost("a copy's host step panicked".into())));
            }
        }
        let _ = catch_unwind(AssertUnwindSafe(|| drop(event)));
        done.complete(result);
    }
}

/// A stream and the thread that completes its work (see the module doc).
pub(crate) struct Lane {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// `None` once closed. Held across a whole submission (module doc, "Invariants").
    tx: Mutex<Option<Sender<Pending>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Lane {
    pub(crate) fn new(ctx: &Arc<CudaContext>, thread_name: String) -> Result<Lane, DriverError> {
        let stream = ctx.new_stream()?;
        let (tx, rx) = channel::<Pending>();
        let thread = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                for p in rx {
                    p.finish();
                }
            })
            .expect("spawning a CUDA completion thread");
        Ok(Lane { ctx: ctx.clone(), stream, tx: Mutex::new(Some(tx)), thread: Mutex::new(Some(thread)) })
    }

    /// The lane's stream (for cuBLAS and for codelets that enqueue work themselves).
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Enqueue work with `enqueue` (given the stream) and return its completion, which
    /// fires after `after` has run. `after` runs whatever happens.
    pub(crate) fn submit(
        &self,
        call: &'static str,
        enqueue: impl FnOnce(CUstream) -> Result<(), DriverError>,
        after: Option<After>,
    ) -> Result<Completion, DeviceError> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let fail = |e: DeviceError, after: Option<After>| {
            // Whatever was enqueued must be over before the caller's memory is released.
            let _ = self.stream.synchronize();
            if let Some(after) = after {
                let _ = catch_unwind(AssertUnwindSafe(|| after(false)));
            }
            Err(e)
        };
        let Some(sender) = tx.as_ref() else { return fail(DeviceError::Lost("CUDA device closed".into()), after) };
        if let Err(e) = self.ctx.bind_to_thread() {
            return fail(lost("cuCtxSetCurrent", e), after);
        }
        let stream = self.stream.cu_stream();
        let enqueued = catch_unwind(AssertUnwindSafe(|| enqueue(stream)));
        let event = match enqueued {
            Ok(Ok(())) => Event::record(&self.ctx, stream).map_err(|e| lost("cuEventRecord", e)),
            Ok(Err(e)) => Err(lost(call, e)),
            Err(_) => Err(DeviceError::Lost(format!("{call} panicked (a missing driver symbol?)"))),
        };
        let event = match event {
            Ok(ev) => ev,
            Err(e) => return fail(e, after),
        };
        let done = Completion::new();
        if let Err(back) = sender.send(Pending { event, after, done: done.clone() }) {
            // The thread is gone (it never panics, so only at shutdown): finish here.
            back.0.finish();
        }
        Ok(done)
    }

    /// Block until the lane's stream has run everything submitted so far.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        self.stream.synchronize()
    }

    /// Finish what is in flight and stop the completion thread.
    pub(crate) fn close(&self) {
        let _ = self.synchronize();
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.close();
    }
}

/// A host address that may cross to the lane thread.
struct HostPtr(*mut u8);

// SAFETY: `Device::copy`'s caller keeps the memory valid and unaliased until the
// completion fires, which is after the lane thread's last use.
unsafe impl Send for HostPtr {}

impl CudaDevice {
    /// `Device::copy`.
    ///
    /// # Safety
    /// See [`crate::Device::copy`].
    pub(crate) unsafe fn enqueue_copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        if rect.bytes() == 0 {
            return Ok(Completion::done());
        }
        if let (Endpoint::Host(s), Endpoint::Host(d)) = (src, dst) {
            // SAFETY: the caller guarantees both are valid and disjoint over the rectangle.
            unsafe { crate::copy_rect_host(s, d, rect) };
            return Ok(Completion::done());
        }
        let dev = |b: Buffer, off: usize| Side::Device((b.addr + off) as u64);
        // The pointer queries (`is_pinned`) and staging allocations need the context.
        self.ctx.bind_to_thread().map_err(|e| lost("cuCtxSetCurrent", e))?;
        match (src, dst) {
            (Endpoint::Host(_), Endpoint::Host(_)) => unreachable!("handled above"),
            (Endpoint::Device(s, so), Endpoint::Device(d, doff)) => {
                // SAFETY: both are live buffers of this device (caller's contract).
                unsafe { self.enqueue_plan(&self.h2d, "cuMemcpyDtoDAsync", dev(s, so), dev(d, doff), rect, None) }
            }
            (Endpoint::Host(h), Endpoint::Device(b, off)) => {
                let packed = Rect { src_pitch: packed_pitch(rect.region), ..rect };
                // SAFETY: the caller keeps `h` valid over the rectangle until completion.
                if unsafe { r::is_pinned(h, super::conv::extent(rect.region, rect.src_pitch)) } {
                    // SAFETY: as above; `b` is a live buffer of this device.
                    return unsafe { self.enqueue_plan(&self.h2d, "cuMemcpyHtoDAsync", Side::Host(h), dev(b, off), rect, None) };
                }
                let Some(stage) = self.staging.take(rect.bytes()) else {
                    // SAFETY: as above (pageable: the driver copies synchronously).
                    return unsafe { self.enqueue_plan(&self.h2d, "cuMemcpyHtoDAsync", Side::Host(h), dev(b, off), rect, None) };
                };
                let staged = Rect { dst_pitch: packed.src_pitch, ..rect };
                // SAFETY: `h` spans the rectangle (caller) and `stage` holds `rect.bytes()`.
                unsafe { crate::copy_rect_host(h, stage.ptr(), staged) };
                let from = Side::Host(stage.ptr());
                let release = self.staging.releaser(stage);
                // SAFETY: the staging buffer lives until `release` runs, after the DMA.
                unsafe { self.enqueue_plan(&self.h2d, "cuMemcpyHtoDAsync", from, dev(b, off), packed, Some(Box::new(move |_| release()))) }
            }
            (Endpoint::Device(b, off), Endpoint::Host(h)) => {
                // SAFETY: the caller keeps `h` valid over the rectangle until completion.
                if unsafe { r::is_pinned(h, super::conv::extent(rect.region, rect.dst_pitch)) } {
                    // SAFETY: as above; `b` is a live buffer of this device.
                    return unsafe { self.enqueue_plan(&self.d2h, "cuMemcpyDtoHAsync", dev(b, off), Side::Host(h), rect, None) };
                }
                let Some(stage) = self.staging.take(rect.bytes()) else {
                    // SAFETY: as above (pageable: the driver copies synchronously).
                    return unsafe { self.enqueue_plan(&self.d2h, "cuMemcpyDtoHAsync", dev(b, off), Side::Host(h), rect, None) };
                };
                let packed = Rect { dst_pitch: packed_pitch(rect.region), ..rect };
                let unpack = Rect { src_pitch: packed.dst_pitch, ..rect };
                let to = stage.ptr();
                let (staged, user) = (HostPtr(to), HostPtr(h));
                let release = self.staging.releaser(stage);
                let after: After = Box::new(move |ok| {
                    let (staged, user) = (staged, user);
                    if ok {
                        // SAFETY: the DMA into the staging buffer is over; the caller keeps
                        // `user` valid and unaliased over the rectangle until completion.
                        unsafe { crate::copy_rect_host(staged.0, user.0, unpack) };
                    }
                    release();
                });
                // SAFETY: the staging buffer lives until `after` runs, after the DMA.
                unsafe { self.enqueue_plan(&self.d2h, "cuMemcpyDtoHAsync", dev(b, off), Side::Host(to), packed, Some(after)) }
            }
        }
    }

    /// Enqueue the pieces that move `rect` from `src` to `dst` on `lane`.
    ///
    /// # Safety
    /// Both sides are valid over the rectangle until the completion fires.
    unsafe fn enqueue_plan(
        &self,
        lane: &Lane,
        call: &'static str,
        src: Side,
        dst: Side,
        rect: Rect,
        after: Option<After>,
    ) -> Result<Completion, DeviceError> {
        let plan = copy_plan(&rect, self.max_pitch());
        let enqueue = |stream| {
            plan.iter().try_for_each(|piece: &Piece| {
                // SAFETY: forwarded contract; the context is bound by `submit`.
                unsafe { r::memcpy_piece_async(piece, src, dst, stream) }
            })
        };
        lane.submit(call, enqueue, after)
    }

    /// Launch `kernel` on the compute lane with the task's arguments, in the convention of
    /// the module doc of [`cuda`](super): one device pointer per buffer, in order, then
    /// each by-value argument as raw bytes (each exactly the size of its kernel parameter).
    ///
    /// # Safety
    /// Every buffer is a live buffer of this device that stays allocated, and is not read
    /// or written by anyone else than the kernel's declared accesses, until the completion
    /// fires; `values` match the kernel's parameter list in number and sizes.
    pub unsafe fn launch(
        &self,
        kernel: &CudaKernel,
        dims: LaunchDims,
        buffers: &[Buffer],
        values: &[&[u8]],
    ) -> Result<Completion, DeviceError> {
        let mut args = KernelArgs::new(buffers, values);
        let f = kernel.function.cu_function();
        let enqueue = |stream| {
            // SAFETY: `f` is live (the kernel holds its module); the parameters point to
            // `args`, which the driver copies during the call; the buffers are live (caller).
            unsafe { dr::launch_kernel(f, dims.grid, dims.block, dims.shared_mem_bytes, stream, &mut args.params()) }
        };
        self.compute.submit("cuLaunchKernel", enqueue, None)
    }

    /// A completion that fires once everything submitted to the compute lane so far (kernels,
    /// cuBLAS calls on [`CudaDevice::cublas`]'s handle, work a codelet enqueued on
    /// [`CudaDevice::compute_stream`]) has run.
    pub fn fence(&self) -> Result<Completion, DeviceError> {
        self.compute.submit("cuEventRecord", |_| Ok(()), None)
    }
}

/// Row and slice pitch of `region` packed without gaps.
fn packed_pitch(region: [usize; 3]) -> [usize; 2] {
    [region[0], region[0] * region[1]]
}

/// Kernel parameters in `cuLaunchKernel`'s form: one pointer per parameter to its value.
/// By-value arguments are copied into 16-byte aligned storage first.
pub(crate) struct KernelArgs {
    pointers: Vec<u64>,
    values: Vec<Vec<u128>>,
}

impl KernelArgs {
    pub(crate) fn new(buffers: &[Buffer], values: &[&[u8]]) -> KernelArgs {
        let values = values
            .iter()
            .map(|v| {
                let mut words = vec![0u128; v.len().div_ceil(16).max(1)];
                // SAFETY: `words` holds at least `v.len()` bytes; the two do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), words.as_mut_ptr().cast::<u8>(), v.len()) };
                words
            })
            .collect();
        KernelArgs { pointers: buffers.iter().map(|b| b.addr as u64).collect(), values }
    }

    /// The `void**` array (valid while `self` is neither moved nor changed).
    pub(crate) fn params(&mut self) -> Vec<*mut c_void> {
        let ptrs = self.pointers.iter_mut().map(|p| (p as *mut u64).cast());
        ptrs.chain(self.values.iter_mut().map(|v| v.as_mut_ptr().cast())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_args_point_at_buffers_then_aligned_values() {
        let bufs = [Buffer { addr: 0x1000, len: 8 }, Buffer { addr: 0x2000, len: 8 }];
        let n = 7i32.to_ne_bytes();
        let x = 2.5f64.to_ne_bytes();
        let mut args = KernelArgs::new(&bufs, &[&n, &x]);
        let p = args.params();
        assert_eq!(p.len(), 4);
        // SAFETY: each parameter points at a value of the type it was built from.
        unsafe {
            assert_eq!(*p[0].cast::<u64>(), 0x1000);
            assert_eq!(*p[1].cast::<u64>(), 0x2000);
            assert_eq!(*p[2].cast::<i32>(), 7);
            assert_eq!(*p[3].cast::<f64>(), 2.5);
        }
        assert!(p.iter().all(|q| (*q as usize).is_multiple_of(8)));
    }

    #[test]
    fn packed_pitches_have_no_gaps() {
        assert_eq!(packed_pitch([3, 4, 5]), [3, 12]);
    }
}
