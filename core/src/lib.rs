//! Weft's core: a task runtime for heterogeneous machines (StarPU-like).
//!
//! Codelets have one implementation per kind of worker; tasks apply a codelet to data
//! handles with access modes, and the runtime orders them by sequential consistency per
//! handle, keeps the handles' replicas coherent across memory nodes (MSI), and schedules
//! ready tasks on CPU workers and device drivers with a pluggable policy.
//!
//! ```
//! use weft_core::{AccessMode, Codelet, Config, Runtime, TaskBuilder};
//! let rt = Runtime::new(Config { ncpu: Some(2), ..Config::default() }).unwrap();
//! let v = rt.register_vector(vec![1.0f32; 1000]).unwrap();
//! let scal = Codelet::builder("scal").cpu(|ctx| {
//!     let f: f32 = ctx.arg();
//!     ctx.vector_mut::<f32>(0).iter_mut().for_each(|x| *x *= f);
//!     Ok(())
//! }).nbuffers(1).build();
//! rt.submit(TaskBuilder::new(&scal).access(&v, AccessMode::RW).arg(3.0f32)).unwrap();
//! assert_eq!(v.into_vec::<f32>().unwrap()[999], 3.0);
//! ```
#![deny(unsafe_code)]
#![warn(unsafe_op_in_unsafe_fn)]

pub(crate) mod backend;
pub mod capi;
pub mod config;
pub mod data;
pub mod error;
pub mod hash;
pub mod memory;
pub mod perfmodel;
pub mod runtime;
pub mod sched;
pub(crate) mod sync;
pub mod task;
pub mod topology;
pub(crate) mod trace;
pub mod worker;

pub use config::Config;
pub use data::{AcquireGuard, DataHandle, Filter, PendingAcquire, ReplicaState, Shape, Strides, View};
pub use error::{Error, Result};
pub use runtime::{Counter, Runtime};
pub use sched::{HeteroprioOrders, PolicyKind};
#[cfg(feature = "opencl")]
pub use task::OpenClLaunch;
pub use task::{
    AccessMode, Arch, Codelet, External, ExternalWork, OpenClImpl, OpenClLaunchFn, Payload, Predecessors, Spent, Tag, TaskBuilder,
    TaskContext, TaskError, TaskHandle, TaskPayload,
};
#[cfg(feature = "cuda")]
pub use task::{CudaCode, CudaFn, CudaImpl, CudaTaskContext, LaunchDimsFn};
pub use trace::FrontSpan;
/// The CUDA backend (devices, `LaunchDims`, cuBLAS through `cuda::cudarc`), for CUDA codelets.
#[cfg(feature = "cuda")]
pub use weft_vendors::cuda;
pub use worker::WorkerInfo;
pub use worker::jobs::JobFn;

/// Stack size of worker threads: 8 MiB, what glibc gives a thread by default (the usual
/// RLIMIT_STACK), since CPU workers also run OpenMP team members' code.
pub const WORKER_STACK: usize = 8 << 20;

/// How many tasks an OpenCL or CUDA driver keeps launched and not yet retired: the next
/// tasks' preparation and transfers overlap the running kernels, and tasks pinned to the
/// driver that follow one another (an OpenCL in-order queue) are launched back to back.
pub const DRIVER_WINDOW: usize = 8;

/// A task expected to run at least this long on a device (µs, by its performance model)
/// does not let its in-order successors be launched right behind it on that device's queue
/// (`TaskBuilder::on_worker` chains, `TaskBuilder::set_follow` ones): they wait for its
/// completion, so a device never commits to a queue's long kernels ahead of other work
/// (a thread on the unified device beside threads on the real ones got 1.46x one device
/// with whole chains committed, bench/RESULTS.md, issue 33), and a follower is placed
/// anew. Below it, the completion-to-launch gap (tens of µs) would cost more than a
/// placement gains; a task without a calibrated prediction counts as short. Such a long
/// in-order task is also launched on its own, not in the device's batch, so its
/// completion shows when it ends. `WEFT_BACK_TO_BACK_US` sets it (`Config::back_to_back_us`).
pub const BACK_TO_BACK_US: f64 = 1000.0;

/// [`DRIVER_WINDOW`] for tasks pinned to the driver (`TaskBuilder::on_worker`, what an
/// OpenCL in-order queue's commands are): no other worker could run them, and a device fed
/// a few tiny kernels at a time runs dry and sleeps between them. 256 rather than 64 was
/// faster on tiny kernels (commit f9f609b; bench/RESULTS.md, "Figures behind code
/// comments"). Each task in the window holds pins on its buffers, which a full node
/// reclaims by retiring the window (`Start::Busy`).
pub const DRIVER_WINDOW_PINNED: usize = 256;
