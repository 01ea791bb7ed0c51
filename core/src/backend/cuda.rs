//! The CUDA backend: every NVIDIA GPU as a driver worker's [`KernelBackend`].
//!
//! **Owns**: discovering the GPUs ([`devices`]), per-GPU driver state (the GPU, the
//! kernels built for it by codelet id), and turning a task into a kernel launch (the
//! argument blob split into by-value arguments as for OpenCL, the launch dimensions) or
//! into a call of the codelet's CUDA host code (`CodeletBuilder::cuda_fn`).
//! **Does not own**: acquiring the task's buffers and retiring it (`worker::driver`;
//! `data::coherence` waits for each copy's completion inside acquisition), compiling and
//! caching modules (`weft_vendors::cuda`, with its `KernelCache`, one per runtime and
//! shared by its GPUs).
//!
//! Ordering: the GPU's copy streams and its compute stream are not ordered with each
//! other, so a kernel may start only after the copies of its inputs completed. That holds
//! because acquisition returns only once every copy it issued has completed. Likewise the
//! task's buffers are released (and may then be copied out or evicted) only after the
//! launch, or the compute-stream fence after CUDA host code, has completed.
#![allow(unsafe_code)] // launching kernels (the vendor API's contract)

use super::{DeviceLaunch, KernelBackend, Kernels, split_args};
use crate::config::Config;
use crate::runtime::call_guarded;
use crate::task::cuda::{CudaCode, CudaFn, CudaImpl, CudaTaskContext, default_dims};
use crate::task::{Arch, TaskError};
use std::sync::Arc;
use weft_vendors::cuda::{CudaDevice, CudaKernel, KernelCache};
use weft_vendors::{Completion, Device};

/// One GPU's driver state.
pub(crate) struct CudaBackend {
    dev: Arc<CudaDevice>,
    /// Its index among the GPUs (the worker's name).
    index: usize,
    kernels: Kernels<CudaKernel>,
    /// Modules built for the runtime's GPUs (PTX by source, modules per context; memory only).
    modules: Arc<KernelCache>,
    mem_limit: Option<usize>,
}

/// The GPUs the runtime drives (`Config::ncuda` of them at most).
pub(crate) fn devices(config: &Config, left_out: &mut Vec<String>) -> Vec<Box<dyn KernelBackend>> {
    let found = match config.ncuda {
        Some(0) => Vec::new(),
        n => {
            let d = weft_vendors::cuda::discover();
            left_out.extend(d.skipped.into_iter().map(|s| format!("CUDA: {s}")));
            d.devices.into_iter().take(n.unwrap_or(usize::MAX)).collect()
        }
    };
    let modules = Arc::new(KernelCache::new());
    found
        .into_iter()
        .enumerate()
        .map(|(index, dev)| {
            // Without a limit, leave 1/16 of the GPU to what the runtime does not count
            // (context, modules, cuBLAS workspaces): a failing cuMemAlloc does not evict.
            let mem_limit = config.cuda_mem_limit.or_else(|| dev.memory_size().map(|m| m - m / 16));
            Box::new(CudaBackend { dev: Arc::new(dev), index, kernels: Kernels::new(), modules: modules.clone(), mem_limit })
                as Box<dyn KernelBackend>
        })
        .collect()
}

impl KernelBackend for CudaBackend {
    fn arch(&self) -> Arch {
        Arch::Cuda
    }

    fn name(&self) -> String {
        format!("cuda{}", self.index)
    }

    fn perf_arch(&self) -> String {
        format!("cuda:{}", self.dev.name())
    }

    fn spins(&self) -> bool {
        true
    }

    fn device(&self) -> Arc<dyn Device> {
        self.dev.clone()
    }

    fn mem_limit(&self) -> Option<usize> {
        self.mem_limit
    }

    fn launch(&self, l: &DeviceLaunch<'_>) -> Result<Completion, TaskError> {
        let code = l.codelet.cuda.as_ref().expect("invariant: scheduled on a CUDA worker only with a CUDA implementation");
        match code {
            // cudarc panics on some driver failures (a missing symbol); the backend guards
            // most calls, and this keeps any other panic from killing the worker thread.
            CudaCode::Kernel(imp) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.launch_kernel(imp, l)))
                .unwrap_or_else(|_| Err(l.fail("panicked inside the CUDA backend".into()))),
            CudaCode::Fn(f) => self.call_fn(f, l),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl CudaBackend {
    fn launch_kernel(&self, imp: &CudaImpl, l: &DeviceLaunch<'_>) -> Result<Completion, TaskError> {
        let t = l.task;
        let fail = |msg: String| l.fail(msg);
        let values = split_args(&t.args, &imp.arg_sizes).map_err(fail)?;
        let shapes = l.shapes();
        let dims = match &imp.dims {
            Some(f) => f(&shapes, &t.args),
            None => default_dims(&shapes),
        };
        self.kernels.with(
            l.codelet,
            || {
                self.dev
                    .build_module(&self.modules, &imp.source, &imp.options)
                    .and_then(|m| self.dev.kernel(&m, &imp.kernel))
                    .map_err(|e| fail(e.to_string()))
            },
            |kernel| {
                // SAFETY: every buffer is a replica acquired (allocated, valid, pinned) on
                // this GPU's node for the task's access mode; acquisition waited for the
                // copies that filled them; they stay so until release_on_device, which
                // `retire` calls after the launch's completion fired. The by-value arguments
                // are the blob split by the codelet's declared sizes (the codelet's contract
                // with its kernel's parameters).
                unsafe { self.dev.launch(kernel, dims, l.buffers, &values) }.map_err(|e| fail(e.to_string()))
            },
        )
    }

    /// Call the codelet's CUDA host code; its completion is a fence after the GPU work it
    /// enqueued.
    fn call_fn(&self, f: &CudaFn, l: &DeviceLaunch<'_>) -> Result<Completion, TaskError> {
        let shapes = l.shapes();
        let ctx = CudaTaskContext { device: &self.dev, buffers: l.buffers, shapes: &shapes, args: &l.task.args, worker: l.worker };
        let called = call_guarded(|| f(&ctx), l.codelet.name());
        let fence = self.dev.fence().map_err(|e| l.fail(format!("fencing its GPU work: {e}")));
        match called {
            Ok(()) => fence,
            Err(e) => {
                // Even after an error the code may have enqueued work on the buffers: wait
                // for it before they are released.
                if let Ok(f) = fence {
                    let _ = f.wait();
                }
                Err(e)
            }
        }
    }
}
