//! The CUDA driver: running a task's CUDA implementation on the GPU its worker drives.
//!
//! **Owns**: per-driver state (the GPU, the kernels built for it by codelet id), turning a
//! task into a kernel launch (buffers acquired on the GPU's memory node, the argument blob
//! split into by-value arguments as for OpenCL, the launch dimensions) or into a call of
//! the codelet's CUDA host code, and waiting for the GPU work.
//! **Does not own**: coherence (`data::coherence` makes the replicas valid and pins them;
//! it waits for each copy's completion inside acquisition), compiling and caching modules
//! (`weft_vendors::cuda`, with its `KernelCache`).
//!
//! Ordering: the GPU's copy streams and its compute stream are not ordered with each
//! other, so a kernel may start only after the copies of its inputs completed. That holds
//! because acquisition returns only once every copy it issued has completed. Likewise the
//! task's buffers are released (and may then be copied out or evicted) only after the
//! launch, or the compute-stream fence after CUDA host code, has completed.
//!
//! As for OpenCL, the launch is waited for before the next task.
#![allow(unsafe_code)] // launching kernels (the vendor API's contract)

use crate::data::Shape;
use crate::runtime::{RuntimeInner, call_guarded};
use crate::sync::{Mutex, lock};
use crate::task::cuda::{CudaCode, CudaFn, CudaImpl, CudaTaskContext, default_dims};
use crate::task::{Codelet, TaskError, TaskRef};
use crate::worker::driver::split_args;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;
use weft_vendors::cuda::{CudaDevice, CudaKernel};
use weft_vendors::{Buffer, Completion};

pub(crate) struct CudaDriver {
    pub dev: Arc<CudaDevice>,
    /// Kernels built for this GPU, by codelet id. Only this driver's worker uses them.
    pub kernels: Mutex<HashMap<u64, CudaKernel>>,
}

impl CudaDriver {
    pub fn new(dev: Arc<CudaDevice>) -> CudaDriver {
        CudaDriver { dev, kernels: Mutex::new(HashMap::new()) }
    }
}

impl RuntimeInner {
    /// Run `t`'s CUDA implementation on driver worker `w`.
    /// Launch `t`'s CUDA implementation on the acquired `bufs`, without waiting.
    pub(crate) fn start_cuda(&self, w: usize, t: &TaskRef, c: &Codelet, bufs: &[Buffer]) -> Result<Completion, TaskError> {
        let code = c.cuda.as_ref().expect("invariant: scheduled on a CUDA worker only with a CUDA implementation");
        let drv = self.cuda_drivers[w].as_ref().expect("invariant: CUDA workers have a driver");
        match code {
            // cudarc panics on some driver failures (a missing symbol); the backend guards
            // most calls, and this keeps any other panic from killing the worker thread.
            CudaCode::Kernel(imp) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.launch_cuda(drv, c, imp, t, bufs)))
                .unwrap_or_else(|_| Err(TaskError::Failed { task: c.name.clone(), msg: "panicked inside the CUDA backend".into() })),
            CudaCode::Fn(f) => self.call_cuda_fn(w, drv, c, f, t, bufs),
        }
    }

    fn launch_cuda(&self, drv: &CudaDriver, c: &Codelet, imp: &CudaImpl, t: &TaskRef, bufs: &[Buffer]) -> Result<Completion, TaskError> {
        let fail = |msg: String| TaskError::Failed { task: c.name.clone(), msg };
        let values = split_args(&t.args, &imp.arg_sizes).map_err(fail)?;
        let shapes: SmallVec<[Shape; 3]> = t.accesses.iter().map(|a| a.handle.shape()).collect();
        let dims = match &imp.dims {
            Some(f) => f(&shapes, &t.args),
            None => default_dims(&shapes),
        };
        let mut kernels = lock(&drv.kernels);
        let kernel = match kernels.entry(c.id) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let k = drv
                    .dev
                    .build_module(&self.cuda_kernels, &imp.source, &imp.options)
                    .and_then(|m| drv.dev.kernel(&m, &imp.kernel))
                    .map_err(|e| fail(e.to_string()))?;
                v.insert(k)
            }
        };
        // SAFETY: every buffer is a replica acquired (allocated, valid, pinned) on this GPU's
        // node for the task's access mode; acquisition waited for the copies that filled
        // them; they stay so until release_on_device, which `retire` calls after the launch's
        // completion fired. The by-value arguments are the blob split by the codelet's
        // declared sizes (the codelet's contract with its kernel's parameters).
        unsafe { drv.dev.launch(kernel, dims, bufs, &values) }.map_err(|e| fail(e.to_string()))
    }

    /// Call the codelet's CUDA host code; its completion is a fence after the GPU work it
    /// enqueued.
    fn call_cuda_fn(
        &self,
        w: usize,
        drv: &CudaDriver,
        c: &Codelet,
        f: &CudaFn,
        t: &TaskRef,
        bufs: &[Buffer],
    ) -> Result<Completion, TaskError> {
        let fail = |msg: String| TaskError::Failed { task: c.name.clone(), msg };
        let shapes: SmallVec<[Shape; 3]> = t.accesses.iter().map(|a| a.handle.shape()).collect();
        let ctx = CudaTaskContext { device: &drv.dev, buffers: bufs, shapes: &shapes, args: &t.args, worker: w };
        let called = call_guarded(|| f(&ctx), c.name());
        let fence = drv.dev.fence().map_err(|e| fail(format!("fencing its GPU work: {e}")));
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
