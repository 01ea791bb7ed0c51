//! The OpenCL backend: every OpenCL device as a driver worker's [`KernelBackend`].
//!
//! **Owns**: discovering the devices ([`devices`]), per-device driver state (the device,
//! the kernels built for it by codelet id), and turning a task into a kernel launch (the
//! argument blob split into by-value arguments, the work size) or a call of the codelet's
//! custom launch (`OpenClImpl::custom`, the ICD's commands).
//! **Does not own**: acquiring the task's buffers and retiring it (`worker::driver`),
//! building programs (`weft_vendors::opencl`, with its `ProgramCache`, one per runtime and
//! shared by its devices), the batches themselves (`OpenClDevice::launch_batched`).
#![allow(unsafe_code)] // setting kernel arguments and launching (the vendor API's contract)

use super::{DeviceLaunch, KernelBackend, Kernels, split_args};
use crate::config::Config;
use crate::task::{Arch, OpenClLaunch, TaskError};
use std::sync::Arc;
use weft_vendors::opencl::{Kernel, OpenClDevice, ProgramCache};
use weft_vendors::{Completion, Device};

/// One OpenCL device's driver state.
pub(crate) struct OpenClBackend {
    pub dev: Arc<OpenClDevice>,
    /// Its index among the OpenCL devices (the worker's name).
    index: usize,
    kernels: Kernels<Kernel>,
    /// Programs built for the runtime's OpenCL devices (memory and disk cache).
    programs: Arc<ProgramCache>,
    /// A device of type CPU: it computes on the machine's cores.
    host_cores: bool,
    on_cpus: bool,
    mem_limit: Option<usize>,
}

/// The OpenCL devices the runtime drives (`Config::nopencl` of them at most).
pub(crate) fn devices(config: &Config, left_out: &mut Vec<String>) -> Vec<Box<dyn KernelBackend>> {
    let found = match config.nopencl {
        Some(0) => Vec::new(),
        n => {
            let d = weft_vendors::opencl::discover();
            left_out.extend(d.skipped.into_iter().map(|s| format!("OpenCL: {s}")));
            d.devices.into_iter().take(n.unwrap_or(usize::MAX)).collect()
        }
    };
    let programs = Arc::new(ProgramCache::new(config.kernel_cache.clone()));
    found
        .into_iter()
        .enumerate()
        .map(|(index, dev)| {
            // OpenCL devices of type CPU (PoCL's) compute on the cores the CPU workers use:
            // unless asked (`opencl_on_cpus`) they run only tasks without a CPU
            // implementation, and take no core from the CPU workers (they are idle whenever
            // those are busy).
            let host_cores = dev.device_type() & weft_vendors::opencl::sys::CL_DEVICE_TYPE_CPU != 0;
            let on_cpus = host_cores && !config.opencl_on_cpus;
            Box::new(OpenClBackend {
                dev: Arc::new(dev),
                index,
                kernels: Kernels::new(),
                programs: programs.clone(),
                host_cores,
                on_cpus,
                mem_limit: config.opencl_mem_limit,
            }) as Box<dyn KernelBackend>
        })
        .collect()
}

impl KernelBackend for OpenClBackend {
    fn arch(&self) -> Arch {
        Arch::OpenCl
    }

    fn name(&self) -> String {
        format!("opencl{}", self.index)
    }

    fn perf_arch(&self) -> String {
        format!("opencl:{}", self.dev.name())
    }

    fn spins(&self) -> bool {
        self.dev.polls()
    }

    fn on_cpus(&self) -> bool {
        self.on_cpus
    }

    fn host_cores(&self) -> bool {
        self.host_cores
    }

    fn device(&self) -> Arc<dyn Device> {
        self.dev.clone()
    }

    fn mem_limit(&self) -> Option<usize> {
        self.mem_limit
    }

    fn launch(&self, l: &DeviceLaunch<'_>) -> Result<Completion, TaskError> {
        let (c, t) = (l.codelet, l.task);
        let imp = c.opencl.as_ref().expect("invariant: scheduled on an OpenCL worker only with an OpenCL implementation");
        let fail = |msg: String| l.fail(msg);
        if let Some(f) = &imp.launch {
            let cl = OpenClLaunch {
                device: &self.dev,
                worker: l.worker,
                buffers: l.buffers,
                args: &t.args,
                payload: t.payload.as_deref(),
                batch: l.batch,
            };
            return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&cl))) {
                Ok(r) => r.map_err(fail),
                Err(_) => Err(fail("the launch function panicked".into())),
            };
        }
        let values = split_args(&t.args, &imp.arg_sizes).map_err(fail)?;
        let shapes = l.shapes();
        let global = match &imp.global {
            Some(f) => f(&shapes, &t.args),
            None => default_global(&shapes),
        };
        self.kernels.with(
            c,
            || {
                self.dev
                    .build_program(&self.programs, &imp.source, &imp.options)
                    .and_then(|p| self.dev.create_kernel(&p, &imp.kernel))
                    .map_err(|e| fail(e.to_string()))
            },
            |kernel| {
                // SAFETY: every buffer is a replica acquired (allocated, valid, pinned) on
                // this device's node for the task's access mode, and stays so until
                // release_on_device, which `retire` calls after the launch's completion
                // fired. Arguments are captured at enqueue: setting them for the next task
                // does not touch this launch.
                unsafe { kernel.set_task_args(l.buffers, &values) }.map_err(|e| fail(format!("setting kernel arguments: {e}")))?;
                // SAFETY: as above: the arguments stay live and unaliased until the launch
                // completes.
                unsafe { self.dev.launch(kernel, &global, imp.local.as_deref()) }.map_err(|e| fail(e.to_string()))
            },
        )
    }

    fn close_batch(&self) {
        self.dev.close_batch();
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The default work size: the dimensions of buffer 0, without trailing ones.
pub(crate) fn default_global(shapes: &[crate::data::Shape]) -> Vec<usize> {
    let Some(s) = shapes.first() else { return vec![1] };
    let mut d = s.dims().to_vec();
    while d.len() > 1 && d[d.len() - 1] == 1 {
        d.pop();
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Shape;

    #[test]
    fn default_work_size_follows_buffer_zero() {
        assert_eq!(default_global(&[Shape::Vector { nx: 10, elem: 4 }]), vec![10]);
        assert_eq!(default_global(&[Shape::Matrix { nx: 3, ny: 5, elem: 4 }]), vec![3, 5]);
        assert_eq!(default_global(&[Shape::Block { nx: 2, ny: 1, nz: 4, elem: 4 }]), vec![2, 1, 4]);
        assert_eq!(default_global(&[]), vec![1]);
    }
}
