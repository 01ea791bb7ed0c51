//! A codelet's CUDA implementation, and the context CUDA host code runs in.
//!
//! **Owns**: the two kinds of CUDA implementation ([`CudaImpl`], a CUDA C kernel built
//! with NVRTC; [`CudaFn`], host code that enqueues GPU work itself) and
//! [`CudaTaskContext`].
//! **Does not own**: building, launching and waiting (`backend::cuda`), the device
//! and its streams (`weft_vendors::cuda`).

use crate::data::Shape;
use std::sync::Arc;
use weft_vendors::Buffer;
use weft_vendors::cuda::{CudaDevice, LaunchDims};

/// Grid and block sizes of a CUDA launch, from the shapes of the task's buffers and its
/// argument blob.
pub type LaunchDimsFn = Arc<dyn Fn(&[Shape], &[u8]) -> LaunchDims + Send + Sync>;

/// Host code run on a CUDA worker's thread (see [`CudaTaskContext`]).
pub type CudaFn = Arc<dyn Fn(&CudaTaskContext<'_>) -> std::result::Result<(), String> + Send + Sync>;

/// A codelet's CUDA implementation: one kernel, or host code.
#[derive(Clone)]
pub enum CudaCode {
    Kernel(Arc<CudaImpl>),
    Fn(CudaFn),
}

/// A codelet's CUDA kernel: CUDA C source and the `extern "C" __global__` function to launch.
///
/// The kernel's parameters are, in order: one device pointer per task buffer (the replica
/// on the GPU, packed: a matrix's leading dimension is its `nx` there), then the task's
/// argument blob split into by-value arguments of `arg_sizes` bytes each (an empty
/// `arg_sizes` passes a non-empty blob as one argument, e.g. a struct) — the OpenCL
/// convention. The launch is `dims(shapes, args)` if given, else a 1-D launch of blocks of
/// 256 threads covering every element of buffer 0 (rounded up to whole blocks: the kernel
/// must check its bounds, e.g. with the element count passed as an argument). Modules are
/// built with NVRTC once per GPU (`options` are NVRTC options, e.g. `--use_fast_math`) and
/// cached in memory.
#[derive(Clone)]
pub struct CudaImpl {
    pub source: String,
    pub kernel: String,
    pub options: String,
    pub arg_sizes: Vec<usize>,
    pub dims: Option<LaunchDimsFn>,
}

impl CudaImpl {
    pub fn new(source: impl Into<String>, kernel: impl Into<String>) -> CudaImpl {
        CudaImpl { source: source.into(), kernel: kernel.into(), options: String::new(), arg_sizes: Vec::new(), dims: None }
    }
    pub fn options(mut self, o: impl Into<String>) -> Self {
        self.options = o.into();
        self
    }
    pub fn arg_sizes(mut self, sizes: &[usize]) -> Self {
        self.arg_sizes = sizes.to_vec();
        self
    }
    pub fn dims(mut self, f: impl Fn(&[Shape], &[u8]) -> LaunchDims + Send + Sync + 'static) -> Self {
        self.dims = Some(Arc::new(f));
        self
    }
}

/// The default launch: every element of buffer 0, 256 threads per block.
pub(crate) fn default_dims(shapes: &[Shape]) -> LaunchDims {
    let n = shapes.first().map_or(1, |s| s.dims().iter().product::<usize>());
    LaunchDims::for_elements(n, 256)
}

/// What CUDA host code (`CodeletBuilder::cuda_fn`) gets: the GPU and the task's buffers on it.
///
/// The buffers are the task's replicas on this GPU, valid for the task's access modes
/// until the driver has waited for the work enqueued here: after the function returns,
/// the driver waits for everything on the GPU's compute stream ([`CudaDevice::fence`]), so
/// enqueue work on that stream only — through [`CudaDevice::cublas`] (a handle bound to
/// it) or [`CudaDevice::compute_stream`] — and do not wait for it yourself.
pub struct CudaTaskContext<'a> {
    pub(crate) device: &'a CudaDevice,
    pub(crate) buffers: &'a [Buffer],
    pub(crate) shapes: &'a [Shape],
    pub(crate) args: &'a [u8],
    pub(crate) worker: usize,
}

impl<'a> CudaTaskContext<'a> {
    pub fn device(&self) -> &'a CudaDevice {
        self.device
    }
    /// Buffer `i` of the task on the GPU (its device address and length in bytes), packed.
    pub fn buffer(&self, i: usize) -> Buffer {
        self.buffers[i]
    }
    /// The device address of buffer `i` (a `CUdeviceptr`), for cuBLAS and kernel arguments.
    pub fn device_ptr(&self, i: usize) -> u64 {
        self.buffers[i].addr as u64
    }
    pub fn nbuffers(&self) -> usize {
        self.buffers.len()
    }
    /// The shape of buffer `i` (on the GPU its layout is packed).
    pub fn shape(&self, i: usize) -> Shape {
        self.shapes[i]
    }
    pub fn args(&self) -> &[u8] {
        self.args
    }
    /// The argument blob read as one `T`.
    pub fn arg<T: bytemuck::Pod>(&self) -> T {
        bytemuck::pod_read_unaligned(&self.args[..std::mem::size_of::<T>()])
    }
    pub fn worker(&self) -> usize {
        self.worker
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Arch, Codelet};

    #[test]
    fn default_launch_covers_buffer_zero() {
        assert_eq!(default_dims(&[Shape::Vector { nx: 1000, elem: 4 }]).grid, (4, 1, 1));
        assert_eq!(default_dims(&[Shape::Matrix { nx: 16, ny: 32, elem: 4 }]).grid, (2, 1, 1));
        assert_eq!(default_dims(&[]).grid, (1, 1, 1));
    }

    #[test]
    fn cuda_codelets_run_on_cuda_workers_only() {
        let k = Codelet::builder("k").cuda("extern \"C\" __global__ void k() {}", "k").build();
        assert_eq!(k.arch_mask(), Arch::Cuda.bit());
        let f = Codelet::builder("f").cuda_fn(|_| Ok(())).cpu(|_| Ok(())).build();
        assert_eq!(f.arch_mask(), Arch::Cuda.bit() | Arch::Cpu.bit());
        assert!(f.implementation(Arch::Cuda).is_none());
        // The last CUDA implementation given wins.
        let both = Codelet::builder("b").cuda("", "k").cuda_fn(|_| Ok(())).build();
        assert!(matches!(both.cuda, Some(CudaCode::Fn(_))));
        assert_eq!(Arch::Cuda.name(), "cuda");
        assert_eq!(Arch::ALL.len(), 4);
    }
}
