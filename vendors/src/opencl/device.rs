//! One OpenCL device as a Weft [`Device`]: a context of its own and one in-order queue.
//!
//! **Owns**: the context and queue of the device, and the [`Device`] trait methods
//! (allocation in `memory`, copies and launches in `queue`).
//! **Does not own**: choosing devices (core, `WEFT_NOPENCL`), or the order between
//! commands beyond what one in-order queue gives.
//!
//! One queue, not two: every copy and kernel goes through one in-order queue, so commands
//! complete in submission order and a kernel never races a copy of its own buffers, with
//! no cross-queue events to manage. The price is no copy/kernel overlap on devices with
//! separate DMA engines; PoCL's "basic" devices run commands in the submitting thread
//! anyway. A copy queue can be added later behind the same API (copies would wait on
//! the compute queue's last event), once core's driver keeps several tasks in flight.
//!
//! Submissions are serialized per device (`submit_lock`, held across enqueue, callback
//! registration and flush). PoCL 3.1's "basic" device runs a command inside the thread
//! that submits it; if a second thread enqueues on the same queue while the first is
//! still running a command there, the new command waits on the running one, and when
//! that completes PoCL runs the waiter from its completion notification while holding
//! the waiter's event lock, then takes that lock again: the thread deadlocks on itself
//! (reproduced in plain C through the ICD loader: two threads doing fill+write on one
//! queue hang within a few iterations). Under the lock, each command has finished (on
//! "basic") or is merely queued (elsewhere) before the next thread submits, so no command
//! ever waits on one still running in another thread. Waiting never holds the lock.

use super::OpenClError;
use super::safe::{Context, DeviceId, Platform, Queue};
use super::sys::*;
use crate::{Buffer, Completion, Device, DeviceError, DeviceKind, Endpoint, Rect};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// An OpenCL device of some vendor platform, with its own context and two in-order queues:
/// one for kernels, one for transfers (copies and fills), so that a driver's next task's
/// transfers can run while the current kernel does. Whoever submits orders the two: core
/// waits for a task's transfers before launching its kernel, and retires a kernel before
/// anything else may touch the buffers it writes.
pub struct OpenClDevice {
    pub(crate) platform: Platform,
    pub(crate) id: DeviceId,
    // Field order matters for drop: the queues before the context.
    pub(crate) queue: Queue,
    pub(crate) transfer: Queue,
    pub(crate) context: Context,
    name: String,
    platform_name: String,
    vendor_library: String,
    identity: String,
    device_type: cl_device_type,
    global_mem: Option<usize>,
    max_alloc: Option<usize>,
    /// Bytes currently allocated through [`Device::alloc`].
    pub(crate) allocated: AtomicUsize,
    /// Held while submitting (enqueue, callback registration, flush): see the module doc.
    pub(crate) submit_lock: Mutex<()>,
    /// The completion shared by the kernels launched without an event since the last
    /// [`OpenClDevice::close_batch`] (`launch_batched`); taken under `submit_lock`.
    /// With how many launches so far.
    pub(crate) batch: Mutex<Option<(Completion, usize)>>,
    /// Whether the kernel queue has `CL_QUEUE_PROFILING_ENABLE` (its events carry times).
    pub(crate) profiling: bool,
    /// Completion by polling (GPUs and accelerators, or as `WEFT_OCL_POLL` says, see
    /// [`super::queue::Poller`]); None: by event callbacks (CPU devices).
    pub(crate) poller: Option<super::queue::Poller>,
}

impl std::fmt::Debug for OpenClDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClDevice").field("name", &self.name).field("platform", &self.platform_name).finish_non_exhaustive()
    }
}

impl OpenClDevice {
    /// Open `id` of `platform` (served by `vendor_library`): a context and a queue.
    pub fn open(platform: Platform, id: DeviceId, vendor_library: &str) -> Result<OpenClDevice, OpenClError> {
        let at = |call: &'static str| move |code| OpenClError::Call { call, code };
        let name = id.info_string(CL_DEVICE_NAME).map_err(at("clGetDeviceInfo"))?;
        let platform_name = platform.name().map_err(at("clGetPlatformInfo"))?;
        let platform_version = platform.info_string(CL_PLATFORM_VERSION).map_err(at("clGetPlatformInfo"))?;
        let device_version = id.info_string(CL_DEVICE_VERSION).map_err(at("clGetDeviceInfo"))?;
        let driver_version = id.info_string(CL_DRIVER_VERSION).map_err(at("clGetDeviceInfo"))?;
        let device_type = id.info_u64(CL_DEVICE_TYPE).unwrap_or(0);
        let global_mem = id.info_u64(CL_DEVICE_GLOBAL_MEM_SIZE).ok().map(|n| n as usize);
        let max_alloc = id.info_u64(CL_DEVICE_MAX_MEM_ALLOC_SIZE).ok().map(|n| n as usize);
        let context = Context::new(platform, &[id]).map_err(at("clCreateContext"))?;
        // Profiling on the kernel queue, so that a launch can report the device's own times
        // (`launch_timed`). Always on: a profiling queue's cost is a clock read per stage
        // per command (measured in docs/opencl.md, "Profiling and placement"); a vendor that
        // refuses it gets a plain queue.
        let (queue, profiling) = match Queue::with_properties(&context, id, CL_QUEUE_PROFILING_ENABLE) {
            Ok(q) => (q, true),
            Err(_) => (Queue::new(&context, id).map_err(at("clCreateCommandQueue"))?, false),
        };
        let transfer = Queue::new(&context, id).map_err(at("clCreateCommandQueue"))?;
        let identity = format!("{platform_name} | {platform_version} | {name} | {device_version} | {driver_version}");
        let poll = match std::env::var("WEFT_OCL_POLL").as_deref() {
            Ok("1") => true,
            Ok("0") => false,
            _ => device_type & CL_DEVICE_TYPE_CPU == 0,
        };
        let poller = match poll {
            true => Some(super::queue::Poller::start(&name).map_err(|e| OpenClError::Vendor {
                library: vendor_library.to_owned(),
                reason: format!("starting its poller thread: {e}"),
            })?),
            false => None,
        };
        Ok(OpenClDevice {
            platform,
            id,
            queue,
            transfer,
            context,
            name,
            platform_name,
            vendor_library: vendor_library.to_owned(),
            identity,
            device_type,
            global_mem,
            max_alloc,
            allocated: AtomicUsize::new(0),
            profiling,
            submit_lock: Mutex::new(()),
            batch: Mutex::new(None),
            poller,
        })
    }

    pub fn platform(&self) -> Platform {
        self.platform
    }

    pub fn id(&self) -> DeviceId {
        self.id
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The device's one in-order queue (copies and kernels).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    pub fn platform_name(&self) -> &str {
        &self.platform_name
    }

    /// The vendor library (as named in its `.icd` file) serving this device.
    pub fn vendor_library(&self) -> &str {
        &self.vendor_library
    }

    /// Platform and device names and versions: what a compiled binary depends on.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// `CL_DEVICE_TYPE` bits (`CL_DEVICE_TYPE_CPU`, `_GPU`, …).
    pub fn device_type(&self) -> cl_device_type {
        self.device_type
    }

    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, if the device told.
    pub fn max_alloc_size(&self) -> Option<usize> {
        self.max_alloc
    }

    /// Bytes currently allocated through [`Device::alloc`].
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Whether completion is found by polling (GPUs and accelerators: the device computes
    /// off this machine's cores), not by callbacks (CPU devices).
    pub fn polls(&self) -> bool {
        self.poller.is_some()
    }

    /// Block until every command submitted so far has completed.
    pub fn finish(&self) -> Result<(), DeviceError> {
        let _submitting = self.lock_submissions();
        self.transfer.finish().map_err(|e| super::conv::lost("clFinish", e))?;
        self.queue.finish().map_err(|e| super::conv::lost("clFinish", e))
    }

    /// The submission lock (see the module doc). Hold it across every raw call that may run
    /// commands on a PoCL "basic" device: enqueue, flush, finish. This type's own methods
    /// (`launch`, copies, `finish`) take it themselves; it is not re-entrant.
    pub fn lock_submissions(&self) -> MutexGuard<'_, ()> {
        self.submit_lock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for OpenClDevice {
    fn drop(&mut self) {
        // Let in-flight commands (and their completion callbacks) finish before the queue
        // and context go.
        let _ = self.finish();
        if let Some(p) = &self.poller {
            p.stop();
        }
    }
}

impl Device for OpenClDevice {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> DeviceKind {
        DeviceKind::OpenCl
    }

    fn memory_size(&self) -> Option<usize> {
        self.global_mem
    }

    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
        self.alloc_zeroed(len)
    }

    fn free(&self, buf: Buffer) {
        self.release(buf)
    }

    fn host_ptr(&self, _buf: Buffer) -> Option<*mut u8> {
        None
    }

    unsafe fn copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.enqueue_copy(src, dst, rect) }
    }
}
