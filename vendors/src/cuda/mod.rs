//! The CUDA backend: every NVIDIA GPU as a Weft [`Device`](crate::Device), plus the
//! kernel API (NVRTC, modules, launches) and the cuBLAS handle that core's CUDA codelets
//! use.
//!
//! **Owns**: finding the driver and the GPUs, one context (the primary one) and three
//! streams per GPU, device memory, asynchronous copies (staged through pinned memory
//! when the host side is pageable), compiling CUDA C with NVRTC (with a cache), launching
//! kernels, and completion tracking.
//! **Does not own**: which GPUs Weft uses, coherence, or scheduling. Backends validate
//! little: a broken core invariant is `unreachable!`.
//!
//! # Loading
//! Nothing links `libcuda`, `libnvrtc` or `libcublas`: cudarc is built with
//! `dynamic-loading`, and opens each library with `dlopen` the first time one of its
//! functions is called, resolving each function on first use. cudarc *panics* when a
//! library is missing, so this backend probes first: [`discover`] calls cudarc's
//! `is_culib_present()` for the driver (and [`driver_present`], [`nvrtc_present`],
//! [`cublas_present`] exist for the others) and reports "no CUDA driver" instead; every
//! probe and every call that can reach a missing library also runs under
//! `catch_unwind`, as a second line of defence. Without a driver, or with no GPU
//! (`CUDA_VISIBLE_DEVICES=""`), [`devices`] is empty: no error, no panic.
//!
//! cudarc's bindings are fixed at the CUDA 13.0 API level (`cuda-13000`) rather than
//! read from an installed toolkit, so the crate builds without one. The level decides
//! two things. Library names: cudarc tries `libnvrtc.so`, then `.so.13`, `.so.12`,
//! `.so.11`… for a 13.x level, but only `.so.12` and older for a 12.x one, which would
//! miss a CUDA 13 toolkit's libraries (the GPU machines this project is tested on run
//! driver 580 with CUDA 13). Symbols: every driver function this backend calls (context,
//! stream, event, `cuMemAlloc`, `cuMemcpy{2D,3D}Async`, `cuPointerGetAttributes`,
//! `cuModuleLoadData`, `cuLaunchKernel`) has had the same name and signature since CUDA
//! 11, so a 12.x driver serves it too; a function a driver lacks would panic when first
//! called, which the guards turn into `DeviceError::Lost`.
//!
//! # Layers (as cudarc)
//! cudarc's `driver::sys` (raw bindings) → cudarc's `driver::result` plus this module's
//! [`result`] (the calls cudarc does not wrap: strided copies, blocking events, pointer
//! attributes), each returning `Result<_, DriverError>` → cudarc's safe types
//! (`CudaContext`, `CudaStream`, `CudaModule`, `CudaFunction`, `CudaBlas`) and ours
//! (`queue::Lane`, [`PinnedHost`], [`KernelCache`]) → [`CudaDevice`], the `Device`
//! implementation. [`conv`] holds the pure translations (errors, copy planning).
//!
//! # Devices, streams and completions
//! Each [`CudaDevice`] retains its GPU's primary context and creates three non-blocking
//! streams ("lanes"): host-to-device copies, device-to-host copies, and compute (kernels
//! and cuBLAS), so transfers in both directions overlap kernels. `Device::copy` enqueues
//! `cuMemcpy{HtoD,DtoH,DtoD}Async` for contiguous rectangles, one `cuMemcpy2DAsync` or
//! `cuMemcpy3DAsync` for strided ones (or one per slice or row when the pitches do not
//! fit those calls), and returns a [`Completion`](crate::Completion) fired by the lane's
//! completion thread once an event recorded after the work has completed (why an event
//! and not a host callback: see `queue.rs`). Pageable host memory is staged through
//! pinned buffers; memory from [`CudaDevice::alloc_pinned`] (or any pinned memory) is
//! used directly. `host_ptr` is `None`: device memory is reached only by copies.
//!
//! # Kernels and the argument convention
//! [`CudaDevice::build_module`] compiles CUDA C with NVRTC for the device's architecture
//! (an error carries NVRTC's log) through a [`KernelCache`] (PTX by source hash, modules
//! per context); [`CudaDevice::kernel`] finds an `extern "C" __global__` function;
//! [`CudaDevice::launch`] launches it on the compute stream and returns its completion.
//! A codelet's CUDA kernel takes, in order — the same convention as OpenCL kernels:
//! 1. one device pointer per task buffer, in the order of the task's accesses (the
//!    buffer's base address on this device; offsets and leading dimensions come as
//!    values), then
//! 2. the task's argument blob, split by core into one by-value argument per field, each
//!    passed as raw bytes of exactly the size of the kernel parameter.
//!
//! A CUDA codelet that is not a single kernel (cuBLAS calls, several launches) uses
//! [`CudaDevice::cublas`] (a handle on the compute stream) or
//! [`CudaDevice::compute_stream`], then [`CudaDevice::fence`] for its completion.
//!
//! # Safety
//! Device memory is addressed by raw `CUdeviceptr`s in [`Buffer`](crate::Buffer)s, so the
//! compiler checks none of it. The rules, which core upholds:
//! * a `Buffer` is used only with the device that allocated it, only while allocated,
//!   and freed once, with nothing in flight on it ([`Device::free`](crate::Device::free));
//! * the memory of both ends of a copy stays valid, and the destination untouched, until
//!   its completion fires ([`Device::copy`](crate::Device::copy)); work that reads a
//!   buffer starts only after the completion of the work that wrote it (lanes are not
//!   ordered with each other);
//! * a launch's buffers stay allocated until its completion fires, its by-value
//!   arguments match the kernel's parameters in number and size, and the kernel stays in
//!   bounds ([`CudaDevice::launch`] is `unsafe` for this: a kernel can write anywhere in
//!   the device's memory);
//! * cuBLAS calls through [`CudaDevice::cublas`] take raw device addresses: the same
//!   rules as a launch apply to them.
//!
//! Every `CudaDevice` method may be called from any thread.

pub mod conv;
pub mod device;
pub mod memory;
pub mod program;
pub mod queue;
pub mod result;

pub use cudarc;
pub use device::CudaDevice;
pub use memory::PinnedHost;
pub use program::{CacheStats, CudaKernel, KernelCache, LaunchDims};

use cudarc::driver::DriverError;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Errors of the CUDA backend's own API (the `Device` trait reports
/// [`DeviceError`](crate::DeviceError) instead).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CudaError {
    #[error("{call}: {code}")]
    Driver { call: &'static str, code: String },
    #[error("compiling CUDA C for {device} failed with {code}; NVRTC log:\n{log}")]
    Build { device: String, code: String, log: String },
    #[error("NVRTC: {0}")]
    Nvrtc(String),
    #[error("NVRTC (libnvrtc.so) not found: install the CUDA toolkit's NVRTC or add its directory to LD_LIBRARY_PATH")]
    NoNvrtc,
    #[error("cuBLAS (libcublas.so) not found: install cuBLAS or add its directory to LD_LIBRARY_PATH")]
    NoCublas,
    #[error("cuBLAS: {0}")]
    Blas(String),
    #[error("CUDA kernel {name:?}: {code}")]
    Kernel { name: String, code: String },
    #[error("{0}")]
    Invalid(String),
    #[error("{0} panicked inside cudarc")]
    Panicked(&'static str),
}

impl CudaError {
    pub(crate) fn driver(call: &'static str, e: DriverError) -> CudaError {
        CudaError::Driver { call, code: conv::error_name(e.0) }
    }
}

/// Whether `probe` (a cudarc `is_culib_present`) found its library; a panic is "no".
fn probe(probe: unsafe fn() -> bool) -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the library's names (running the
    // library's initializers, as any use of it would) and closes it again.
    catch_unwind(|| unsafe { probe() }).unwrap_or(false)
}

/// Whether the CUDA driver library (`libcuda.so`) can be loaded.
pub fn driver_present() -> bool {
    probe(cudarc::driver::sys::is_culib_present)
}

/// Whether NVRTC (`libnvrtc.so`) can be loaded.
pub fn nvrtc_present() -> bool {
    probe(cudarc::nvrtc::sys::is_culib_present)
}

/// Whether cuBLAS (`libcublas.so`) can be loaded.
pub fn cublas_present() -> bool {
    probe(cudarc::cublas::sys::is_culib_present)
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Whether the CUDA driver library was found.
    pub driver: bool,
    /// Every GPU that opened, in the driver's order.
    pub devices: Vec<CudaDevice>,
    /// Why the driver or a GPU was left out (for `weft` tool output and logs).
    pub skipped: Vec<String>,
}

/// Find every CUDA GPU, with the reasons for what was left out. Never panics.
pub fn discover() -> Discovery {
    let mut d = Discovery::default();
    if !driver_present() {
        d.skipped.push("no CUDA driver (libcuda.so not found)".into());
        return d;
    }
    d.driver = true;
    let count = catch_unwind(|| {
        cudarc::driver::result::init()?;
        cudarc::driver::result::device::get_count()
    });
    let count = match count {
        Ok(Ok(n)) => n.max(0) as usize,
        Ok(Err(e)) => {
            d.skipped.push(format!("no CUDA device: cuInit/cuDeviceGetCount: {}", conv::error_name(e.0)));
            return d;
        }
        Err(_) => {
            d.skipped.push("no CUDA device: the driver library lacks cuInit or cuDeviceGetCount".into());
            return d;
        }
    };
    if count == 0 {
        d.skipped.push("no CUDA device (the driver lists none)".into());
    }
    for ordinal in 0..count {
        match catch_unwind(AssertUnwindSafe(|| CudaDevice::open(ordinal))) {
            Ok(Ok(dev)) => d.devices.push(dev),
            Ok(Err(e)) => d.skipped.push(format!("CUDA device {ordinal}: {e}")),
            Err(_) => d.skipped.push(format!("CUDA device {ordinal}: opening it panicked inside cudarc")),
        }
    }
    d
}

/// Every CUDA GPU (empty without a driver or a GPU).
pub fn devices() -> Vec<CudaDevice> {
    discover().devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_never_panics_and_explains_an_empty_result() {
        let d = discover();
        if d.devices.is_empty() {
            assert!(!d.skipped.is_empty(), "an empty discovery says why");
        }
        if !d.driver {
            assert!(d.devices.is_empty());
            assert!(d.skipped[0].contains("no CUDA driver"));
        }
    }

    #[test]
    fn errors_name_the_call_and_code() {
        let e = CudaError::driver("cuMemAlloc", DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(e.to_string(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)");
    }
}
