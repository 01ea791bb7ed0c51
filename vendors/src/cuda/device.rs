//! One CUDA GPU as a Weft [`Device`]: its primary context, three lanes (streams with
//! completion threads), a staging pool, and a cuBLAS handle made on first use.
//!
//! **Owns**: the context, lanes and pool of the device, its properties, and the
//! [`Device`] trait methods (allocation in `memory`, copies and launches in `queue`).
//! **Does not own**: choosing devices (core), or the order between lanes (core orders
//! work through completions; see `queue`).
//!
//! The context is the device's *primary* context (`cuDevicePrimaryCtxRetain`), the one the
//! CUDA runtime and libraries such as cuBLAS use, so memory and modules are shared with
//! any CUDA code of the program. Every method binds it to the calling thread first
//! (`cuCtxSetCurrent`, skipped when already current), so any thread may use any device.
//!
//! Calls into cudarc are guarded with `catch_unwind` where cudarc may panic (a driver too
//! old for a symbol, a failing `Drop`): a panic becomes `DeviceError::Lost`, never an
//! unwind into core.

use super::CudaError;
use super::conv::lost;
use super::memory::StagingPool;
use super::queue::Lane;
use crate::{Buffer, Completion, Device, DeviceError, DeviceKind, Endpoint, Rect};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// An NVIDIA GPU driven through the CUDA driver API.
pub struct CudaDevice {
    ordinal: usize,
    name: String,
    identity: String,
    total_mem: usize,
    compute_capability: (i32, i32),
    max_pitch: usize,
    // Field order matters for drop: the cuBLAS handle (taken in `drop`), then the lanes
    // (streams and threads), then the staging pool, then the context.
    blas: OnceLock<Result<Mutex<CudaBlas>, String>>,
    pub(crate) h2d: Lane,
    pub(crate) d2h: Lane,
    pub(crate) compute: Lane,
    pub(crate) staging: Arc<StagingPool>,
    pub(crate) ctx: Arc<CudaContext>,
    /// Bytes currently allocated through [`Device::alloc`].
    pub(crate) allocated: AtomicUsize,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("ordinal", &self.ordinal).field("name", &self.name).finish_non_exhaustive()
    }
}

impl CudaDevice {
    /// Open GPU `ordinal` (in the driver's order, after `CUDA_VISIBLE_DEVICES`). The
    /// driver must have been found ([`super::driver_present`]).
    pub fn open(ordinal: usize) -> Result<CudaDevice, CudaError> {
        let at = |call: &'static str| move |e| CudaError::driver(call, e);
        let ctx = CudaContext::new(ordinal).map_err(at("cuDevicePrimaryCtxRetain"))?;
        let name = ctx.name().map_err(at("cuDeviceGetName"))?;
        let total_mem = ctx.total_mem().map_err(at("cuDeviceTotalMem"))?;
        let compute_capability = ctx.compute_capability().map_err(at("cuDeviceGetAttribute"))?;
        let max_pitch =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PITCH).ok().filter(|&p| p > 0).unwrap_or(i32::MAX) as usize;
        let driver = super::result::driver_version().map_err(at("cuDriverGetVersion"))?;
        let lane = |role: &str| Lane::new(&ctx, format!("weft-cuda{ordinal}-{role}")).map_err(at("cuStreamCreate"));
        let (h2d, d2h, compute) = (lane("h2d")?, lane("d2h")?, lane("compute")?);
        let identity =
            format!("{name} | sm_{}{} | driver CUDA {}.{}", compute_capability.0, compute_capability.1, driver / 1000, driver % 1000 / 10);
        Ok(CudaDevice {
            ordinal,
            name,
            identity,
            total_mem,
            compute_capability,
            max_pitch,
            blas: OnceLock::new(),
            h2d,
            d2h,
            compute,
            staging: StagingPool::new(&ctx),
            ctx,
            allocated: AtomicUsize::new(0),
        })
    }

    /// The device's ordinal in the driver's numbering.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Device name, compute capability and driver version: what compiled code depends on.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// (major, minor) compute capability, e.g. (9, 0) for an H100.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    /// The largest row pitch a 2-D or 3-D copy accepts.
    pub fn max_pitch(&self) -> usize {
        self.max_pitch
    }

    /// The device's primary context (cudarc's), for codelets that call CUDA themselves.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream of the compute lane: work a CUDA codelet enqueues there itself is
    /// ordered with [`CudaDevice::launch`]es and covered by [`CudaDevice::fence`].
    pub fn compute_stream(&self) -> &Arc<CudaStream> {
        self.compute.stream()
    }

    /// Bytes currently allocated through [`Device::alloc`].
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Bytes of pinned staging buffers kept for reuse.
    pub fn staging_cached(&self) -> usize {
        self.staging.cached()
    }

    /// The device's cuBLAS handle (created on first use, bound to the compute stream, the
    /// device's context made current on this thread), locked for the caller: a cuBLAS
    /// handle must not be used by two threads at once. Calls through it are ordered with
    /// kernel launches; [`CudaDevice::fence`] gives their completion.
    ///
    /// Call cuBLAS through cudarc: its safe `Gemm`/`Gemv` traits for cudarc slices, or
    /// `cudarc::cublas::result::{sgemm, dgemm, …}` with `*blas.handle()` and the device
    /// addresses of [`Buffer`]s (`buf.addr as *const f32`).
    pub fn cublas(&self) -> Result<MutexGuard<'_, CudaBlas>, CudaError> {
        let blas = self.blas.get_or_init(|| {
            if !super::cublas_present() {
                return Err(CudaError::NoCublas.to_string());
            }
            let stream = self.compute.stream().clone();
            match catch_unwind(AssertUnwindSafe(|| CudaBlas::new(stream))) {
                Ok(Ok(b)) => Ok(Mutex::new(b)),
                Ok(Err(e)) => Err(format!("cublasCreate: {:?}", e.0)),
                Err(_) => Err("cublasCreate panicked".into()),
            }
        });
        let blas = blas.as_ref().map_err(|e| CudaError::Blas(e.clone()))?;
        self.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
        Ok(blas.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Block until every lane has run everything submitted so far.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        for (lane, name) in [(&self.h2d, "h2d"), (&self.d2h, "d2h"), (&self.compute, "compute")] {
            lane.synchronize().map_err(|e| lost(&format!("cuStreamSynchronize ({name})"), e))?;
        }
        Ok(())
    }

    /// Run `f`, turning a panic inside cudarc into `DeviceError::Lost`.
    fn guarded<T>(call: &str, f: impl FnOnce() -> Result<T, DeviceError>) -> Result<T, DeviceError> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(DeviceError::Lost(format!("{call} panicked inside cudarc"))))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // cudarc's CudaBlas unwraps in its Drop: keep a failure there from unwinding.
        if let Some(Ok(blas)) = self.blas.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(blas)));
        }
        // Let in-flight work (and its completions) finish before streams and pool go.
        for lane in [&self.h2d, &self.d2h, &self.compute] {
            lane.close();
        }
    }
}

impl Device for CudaDevice {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }

    fn memory_size(&self) -> Option<usize> {
        Some(self.total_mem)
    }

    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
        Self::guarded("cuMemAlloc", || self.alloc_zeroed(len))
    }

    fn free(&self, buf: Buffer) {
        let _ = Self::guarded("cuMemFree", || {
            self.release(buf);
            Ok(())
        });
    }

    fn host_ptr(&self, _buf: Buffer) -> Option<*mut u8> {
        None
    }

    unsafe fn copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: forwarded from the caller's contract.
        Self::guarded("copy", || unsafe { self.enqueue_copy(src, dst, rect) })
    }
}
