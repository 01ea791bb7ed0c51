//! Kernel backends: the one interface through which a device driver worker reaches its
//! device (wgpu-hal's object-safe `dynamic/` layer over its per-backend `Api`s; STYLE.md §2).
//!
//! **Owns**: the [`KernelBackend`] trait, the list of backends compiled in ([`discover`]),
//! and what backends share: the kernel table by codelet id ([`Kernels`]), the argument
//! blob's split into by-value arguments ([`split_args`]). One file per backend
//! (`opencl.rs`, `cuda.rs`) holds its discovery (`devices`), its driver state (the device,
//! its kernels by codelet id) and its launch: reading the codelet's implementation for its
//! arch, building (or finding) the kernel, setting its arguments and launching it, or
//! calling the codelet's own launch (`OpenClImpl::custom`, `CodeletBuilder::cuda_fn`).
//! **Does not own**: the driver's loop, its window of tasks in flight and their retirement
//! (`worker::driver`, `worker::run_driver`), acquiring the task's buffers on the device's
//! node and releasing them (`data::coherence` through `worker::driver`), which worker runs
//! what (`sched`), the devices' memory and copies (`weft_vendors`' `Device`), building and
//! caching programs (`weft_vendors`).
//!
//! A backend is one object per device, held by its driver worker (`RuntimeInner::backends`).
//! The runtime gives each a memory node ([`KernelBackend::device`], with
//! [`KernelBackend::mem_limit`]) and a worker described by it ([`KernelBackend::arch`],
//! `name`, `perf_arch`, `spins`, `on_cpus`). Adding a backend: a file here with a
//! `devices(&Config) -> Vec<Box<dyn KernelBackend>>` and an `impl KernelBackend`, one line
//! in the `backends!` list below, an [`Arch`] and the codelet's implementation for it
//! (`task`); the scheduler and the driver stay as they are.
// Without a device backend compiled in, nothing launches: the shared parts go unused.
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(dead_code))]

use crate::config::Config;
use crate::sync::{Mutex, lock};
use crate::task::{Arch, Codelet, TaskError, TaskRef};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;
use weft_vendors::{Buffer, Completion, Device};

/// One line per backend: its Cargo feature and module, in the order their devices become
/// workers (and memory nodes) after the CPU workers and null devices.
macro_rules! backends {
    ($($feature:literal => $module:ident),* $(,)?) => {
        $(#[cfg(feature = $feature)] pub(crate) mod $module;)*

        /// Every device of every backend compiled in (each backend's `devices`), as driver
        /// objects, in backend order; and why each backend left out a vendor, platform or
        /// device (a line each, prefixed by the backend's name: [`Runtime::devices_left_out`]).
        ///
        /// [`Runtime::devices_left_out`]: crate::Runtime::devices_left_out
        pub(crate) fn discover(config: &Config) -> (Vec<Box<dyn KernelBackend>>, Vec<String>) {
            #[allow(unused_mut)] // without any device backend
            let mut all: Vec<Box<dyn KernelBackend>> = Vec::new();
            #[allow(unused_mut)]
            let mut left_out: Vec<String> = Vec::new();
            $(#[cfg(feature = $feature)] all.extend($module::devices(config, &mut left_out));)*
            let _ = config;
            (all, left_out)
        }
    };
}

backends! {
    "opencl" => opencl,
    "cuda" => cuda,
}

/// What a backend launches: a codelet task on buffers acquired on the device's node.
pub(crate) struct DeviceLaunch<'a> {
    /// The driver worker.
    pub worker: usize,
    pub task: &'a TaskRef,
    /// The task's codelet: the backend reads its implementation for [`KernelBackend::arch`].
    pub codelet: &'a Codelet,
    /// The task's replicas on the device's node, in access order, valid for the task's
    /// access modes and pinned until the returned completion is complete and the driver
    /// retired the task.
    pub buffers: &'a [Buffer],
    /// The launch may join the device's open batch (closed by
    /// [`KernelBackend::close_batch`] before the driver waits for anything it launched).
    /// Only OpenCL batches.
    #[cfg_attr(not(feature = "opencl"), allow(dead_code))]
    pub batch: bool,
}

impl DeviceLaunch<'_> {
    /// A failure of this task with `msg`.
    pub fn fail(&self, msg: String) -> TaskError {
        TaskError::Failed { task: self.codelet.name.clone(), msg }
    }

    /// The shapes of the task's buffers, in access order.
    pub fn shapes(&self) -> SmallVec<[crate::data::Shape; 3]> {
        self.task.accesses.iter().map(|a| a.handle.shape()).collect()
    }
}

/// A device driver's device, behind one object-safe interface: how a driver worker builds
/// and launches a codelet's kernels there, and what the runtime needs to know to make the
/// device a memory node and a worker.
pub(crate) trait KernelBackend: Send + Sync {
    /// The kind of implementation this device runs (the worker's `Arch`).
    fn arch(&self) -> Arch;
    /// The worker's name (`"opencl0"`, `"cuda1"`).
    fn name(&self) -> String;
    /// The worker's key in performance models (`"opencl:<device name>"`, `"cuda:<device name>"`).
    fn perf_arch(&self) -> String;
    /// The device computes off this machine's cores: its driver and threads waiting for its
    /// work spin a while before they sleep (`WorkerInfo::spins`).
    fn spins(&self) -> bool;
    /// The device computes on the cores the CPU workers use (an OpenCL CPU device without
    /// `Config::opencl_on_cpus`): it takes no core from them, and with CPU workers it runs
    /// only tasks without a CPU implementation (`WorkerInfo::shares_cores`).
    fn on_cpus(&self) -> bool {
        false
    }
    /// The device computes on this machine's cores (an OpenCL device of type CPU), whether
    /// or not it shares them with the CPU workers.
    fn host_cores(&self) -> bool {
        false
    }
    /// The device's memory, for its memory node.
    fn device(&self) -> Arc<dyn Device>;
    /// The memory node's limit in bytes (`None`: the device's size).
    fn mem_limit(&self) -> Option<usize>;
    /// Launch `l`'s codelet on this device without waiting: find its kernel for this device
    /// (built on first use and kept by codelet id, [`Kernels`]), set its arguments (the
    /// buffers, then the argument blob's values) and enqueue it, or run the codelet's own
    /// launch code. Returns the completion of the device work, after which the buffers may
    /// be released. Called by the driver worker only.
    fn launch(&self, l: &DeviceLaunch<'_>) -> Result<Completion, TaskError>;
    /// Close the device's open batch of launches ([`DeviceLaunch::batch`]), if any: the
    /// driver calls it before it waits for a task in flight.
    fn close_batch(&self) {}
    /// The backend's own type, for the runtime's typed accessors (`Runtime::opencl_devices`).
    #[cfg_attr(not(feature = "opencl"), allow(dead_code))]
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Kernels built for one device, by codelet id. Only its driver's worker uses them.
pub(crate) struct Kernels<K>(Mutex<HashMap<u64, K>>);

impl<K> Kernels<K> {
    pub fn new() -> Kernels<K> {
        Kernels(Mutex::new(HashMap::new()))
    }

    /// Run `f` on codelet `c`'s kernel, built by `build` first if this device has none yet.
    pub fn with<R>(
        &self,
        c: &Codelet,
        build: impl FnOnce() -> Result<K, TaskError>,
        f: impl FnOnce(&mut K) -> Result<R, TaskError>,
    ) -> Result<R, TaskError> {
        let mut kernels = lock(&self.0);
        let kernel = match kernels.entry(c.id) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(build()?),
        };
        f(kernel)
    }
}

/// Split the argument blob into the kernel's by-value arguments.
pub(crate) fn split_args<'a>(args: &'a [u8], sizes: &[usize]) -> Result<SmallVec<[&'a [u8]; 4]>, String> {
    if sizes.is_empty() {
        return Ok(if args.is_empty() { SmallVec::new() } else { SmallVec::from_slice(&[args]) });
    }
    let total: usize = sizes.iter().sum();
    if total != args.len() {
        return Err(format!("the argument blob has {} bytes but the kernel's by-value arguments take {total}", args.len()));
    }
    let mut out = SmallVec::new();
    let mut at = 0;
    for &n in sizes {
        out.push(&args[at..at + n]);
        at += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_blobs_split_by_declared_sizes() {
        let blob = [1u8, 2, 3, 4, 5, 6];
        assert_eq!(split_args(&blob, &[4, 2]).unwrap().as_slice(), &[&blob[..4], &blob[4..]]);
        assert_eq!(split_args(&blob, &[]).unwrap().as_slice(), &[&blob[..]]);
        assert!(split_args(&[], &[]).unwrap().is_empty());
        assert!(split_args(&blob, &[4]).unwrap_err().contains("6 bytes"));
    }
}
