//! Codelets and tasks.
//!
//! **Owns**: codelets (one computation, one implementation per kind of worker), tasks (a
//! codelet applied to data accesses, with an argument blob, priority, tag, explicit
//! dependencies and a completion callback), task completion and waiting.
//! **Does not own**: when a task runs (`sched`), where its data is (`data`).
//!
//! A task is one `Arc<TaskInner>` allocation (accesses and dependencies are stored inline
//! up to small counts); its argument blob and callback add one allocation each when given.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub(crate) mod deps;
pub(crate) mod tags;

use crate::data::{DataHandle, View};
use crate::error::{Error, Result};
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, Condvar, Mutex, lock};
use smallvec::SmallVec;
use std::sync::OnceLock;

#[cfg(feature = "cuda")]
pub use cuda::{CudaCode, CudaFn, CudaImpl, CudaTaskContext, LaunchDimsFn};

/// How a task accesses a data handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    R,
    W,
    RW,
    /// Temporary per-task memory of the handle's shape; no dependencies, content undefined.
    Scratch,
    /// Commutative, associative accumulation: each worker accumulates privately; contributions
    /// are reduced into the handle at its next non-REDUX access.
    Redux,
    /// Read-write access whose tasks may run in any order, one at a time.
    Commute,
}

impl AccessMode {
    pub fn reads(self) -> bool {
        matches!(self, AccessMode::R | AccessMode::RW | AccessMode::Commute)
    }
    pub fn writes(self) -> bool {
        matches!(self, AccessMode::W | AccessMode::RW | AccessMode::Commute)
    }
}

/// Kinds of workers, i.e. kinds of implementations a codelet can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    Cpu = 0,
    /// The simulated device of `weft_vendors::null`; runs CPU-style code on its own memory.
    Null = 1,
    /// An OpenCL device, driven by its own worker thread; runs OpenCL C kernels.
    OpenCl = 2,
    /// A CUDA GPU, driven by its own worker thread; runs CUDA C kernels (NVRTC) or host
    /// code that enqueues work on the GPU (`CodeletBuilder::cuda_fn`, e.g. cuBLAS calls).
    Cuda = 3,
}

impl Arch {
    pub const ALL: [Arch; 4] = [Arch::Cpu, Arch::Null, Arch::OpenCl, Arch::Cuda];
    pub fn bit(self) -> u8 {
        1 << self as u8
    }
    pub fn name(self) -> &'static str {
        match self {
            Arch::Cpu => "cpu",
            Arch::Null => "null",
            Arch::OpenCl => "opencl",
            Arch::Cuda => "cuda",
        }
    }
}

/// Why a task did not complete successfully.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("task '{task}' failed: {msg}")]
    Failed { task: String, msg: String },
    #[error("cancelled because a task it depends on failed: {0}")]
    Cancelled(Box<TaskError>),
    #[error("could not prepare data: {0}")]
    Data(String),
}

/// The context a task implementation runs in.
pub struct TaskContext<'a> {
    pub(crate) views: &'a [View],
    pub(crate) args: &'a [u8],
    pub(crate) worker: usize,
    pub(crate) arch: Arch,
}

impl<'a> TaskContext<'a> {
    /// Buffer `i` of the task, in the order its accesses were given.
    pub fn buffer(&self, i: usize) -> &View {
        &self.views[i]
    }
    pub fn nbuffers(&self) -> usize {
        self.views.len()
    }
    pub fn args(&self) -> &[u8] {
        self.args
    }
    /// The argument blob read as one `T`.
    pub fn arg<T: bytemuck::Pod>(&self) -> T {
        bytemuck::pod_read_unaligned(&self.args[..std::mem::size_of::<T>()])
    }
    /// Shortcut: buffer `i` as a slice.
    pub fn vector<T: bytemuck::Pod>(&self, i: usize) -> &[T] {
        self.views[i].slice()
    }
    /// Shortcut: buffer `i` as a mutable slice.
    #[allow(clippy::mut_from_ref)]
    pub fn vector_mut<T: bytemuck::Pod>(&self, i: usize) -> &mut [T] {
        self.views[i].slice_mut()
    }
    pub fn worker(&self) -> usize {
        self.worker
    }
    pub fn arch(&self) -> Arch {
        self.arch
    }
}

pub type ImplFn = Arc<dyn Fn(&TaskContext<'_>) -> std::result::Result<(), String> + Send + Sync>;

/// Work size of an OpenCL launch, from the shapes of the task's buffers and its argument blob.
pub type WorkSizeFn = Arc<dyn Fn(&[crate::data::Shape], &[u8]) -> Vec<usize> + Send + Sync>;

/// A codelet's OpenCL implementation: OpenCL C source and the kernel to launch.
///
/// The kernel's parameters are, in order: one `__global` pointer per task buffer (the
/// replica on the device, packed: a matrix's leading dimension is its `nx` there), then the
/// task's argument blob split into by-value arguments of `arg_sizes` bytes each (an empty
/// `arg_sizes` passes a non-empty blob as one argument, e.g. a struct). The global work
/// size is `global(shapes, args)` if given, else the dimensions of buffer 0 (`[nx]`,
/// `[nx, ny]` or `[nx, ny, nz]`). Programs are built once per device and cached, also on
/// disk (`WEFT_HOME/kernels`).
///
/// A front end that enqueues its own kernels (the OpenCL ICD: the application set the
/// arguments) gives a launch function instead ([`OpenClImpl::custom`]).
#[derive(Clone)]
pub struct OpenClImpl {
    pub source: String,
    pub kernel: String,
    pub options: String,
    pub arg_sizes: Vec<usize>,
    pub global: Option<WorkSizeFn>,
    pub local: Option<Vec<usize>>,
    /// Set by [`OpenClImpl::custom`]: launches instead of source, kernel and work sizes.
    pub launch: Option<OpenClLaunchFn>,
}

/// What a custom OpenCL launch is given: the device its driver drives (its context and
/// queue), and the task's buffers as replicas valid on that device for the task's access
/// modes, in access order (`Buffer::addr` is the `cl_mem`), pinned until the returned
/// completion is complete.
#[cfg(feature = "opencl")]
pub struct OpenClLaunch<'a> {
    pub device: &'a Arc<weft_vendors::opencl::OpenClDevice>,
    pub worker: usize,
    pub buffers: &'a [weft_vendors::Buffer],
    pub args: &'a [u8],
    /// The task's payload ([`TaskBuilder::payload`]), if it has one.
    pub payload: Option<&'a dyn TaskPayload>,
    /// Whether the launch may join the device's open batch
    /// (`OpenClDevice::launch_batched`): the driver closes the batch before it waits.
    pub batch: bool,
}

/// A custom OpenCL launch: enqueue on `device`'s queue and return the completion of the last
/// command. `OpenClDevice`'s own enqueueing methods (`launch`, copies) take the device's
/// submission lock themselves; raw enqueues through the dispatch table must hold
/// `device.lock_submissions()` (not re-entrant: never around the device's own methods); an `Err` fails the task with that message.
#[cfg(feature = "opencl")]
pub type OpenClLaunchFn = Arc<dyn Fn(&OpenClLaunch<'_>) -> std::result::Result<weft_vendors::Completion, String> + Send + Sync>;
#[cfg(not(feature = "opencl"))]
pub type OpenClLaunchFn = Arc<dyn Fn() + Send + Sync>;

impl OpenClImpl {
    /// An implementation that runs `f` on the driver of the device the task is placed on.
    #[cfg(feature = "opencl")]
    pub fn custom(
        f: impl Fn(&OpenClLaunch<'_>) -> std::result::Result<weft_vendors::Completion, String> + Send + Sync + 'static,
    ) -> OpenClImpl {
        OpenClImpl { launch: Some(Arc::new(f)), ..OpenClImpl::new("", "") }
    }

    pub fn new(source: impl Into<String>, kernel: impl Into<String>) -> OpenClImpl {
        OpenClImpl {
            source: source.into(),
            kernel: kernel.into(),
            options: String::new(),
            arg_sizes: Vec::new(),
            global: None,
            local: None,
            launch: None,
        }
    }
    pub fn options(mut self, o: impl Into<String>) -> Self {
        self.options = o.into();
        self
    }
    pub fn arg_sizes(mut self, sizes: &[usize]) -> Self {
        self.arg_sizes = sizes.to_vec();
        self
    }
    pub fn global(mut self, f: impl Fn(&[crate::data::Shape], &[u8]) -> Vec<usize> + Send + Sync + 'static) -> Self {
        self.global = Some(Arc::new(f));
        self
    }
    pub fn local(mut self, l: &[usize]) -> Self {
        self.local = Some(l.to_vec());
        self
    }
}

static NEXT_CODELET: AtomicU64 = AtomicU64::new(1);

/// One computation with an implementation per kind of worker.
pub struct Codelet {
    /// Unique per codelet (device drivers cache built kernels by it).
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) impls: [Option<ImplFn>; 2],
    pub(crate) opencl: Option<Arc<OpenClImpl>>,
    #[cfg(feature = "cuda")]
    pub(crate) cuda: Option<CudaCode>,
    pub(crate) nbuffers: Option<usize>,
    pub(crate) modes: Option<Vec<AccessMode>>,
    pub(crate) model: Option<crate::perfmodel::PerfModel>,
    /// The model's handle in the process's registry, once looked up, with the directory it
    /// was looked up for (a runtime with another `WEFT_HOME` looks it up each time).
    pub(crate) model_handle: OnceLock<(Option<std::path::PathBuf>, Arc<crate::perfmodel::ModelHandle>)>,
}

impl std::fmt::Debug for Codelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codelet").field("name", &self.name).field("nbuffers", &self.nbuffers).finish()
    }
}

impl Codelet {
    pub fn builder(name: impl Into<String>) -> CodeletBuilder {
        CodeletBuilder {
            c: Codelet {
                id: NEXT_CODELET.fetch_add(1, Ordering::Relaxed),
                name: name.into(),
                impls: [None, None],
                opencl: None,
                #[cfg(feature = "cuda")]
                cuda: None,
                nbuffers: None,
                modes: None,
                model: None,
                model_handle: OnceLock::new(),
            },
        }
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its performance model, if it has one.
    pub fn model(&self) -> Option<&crate::perfmodel::PerfModel> {
        self.model.as_ref()
    }
    /// The model's handle for files in `dir` (`$WEFT_HOME/models`; `None`: in memory).
    pub(crate) fn model_handle(
        &self,
        dir: Option<&std::path::Path>,
        calibrate: crate::perfmodel::Calibrate,
    ) -> Option<Arc<crate::perfmodel::ModelHandle>> {
        let m = self.model.as_ref()?;
        let (d, h) = self
            .model_handle
            .get_or_init(|| (dir.map(std::path::Path::to_path_buf), crate::perfmodel::models_in(dir, &m.name, calibrate, m.kind)));
        // Bytes, not `Path`'s component-wise equality: a device driver asks twice per launch
        // (sampling, back-to-back launches), and parsing both paths' components each time
        // was ~400 instructions a tiny kernel (callgrind, bench/RESULTS.md, issue 33). Two
        // spellings of one directory only cost a lookup.
        if d.as_deref().map(std::path::Path::as_os_str) == dir.map(std::path::Path::as_os_str) {
            return Some(h.clone());
        }
        Some(crate::perfmodel::models_in(dir, &m.name, calibrate, m.kind))
    }
    pub(crate) fn arch_mask(&self) -> u8 {
        let host = [Arch::Cpu, Arch::Null].iter().filter(|a| self.impls[**a as usize].is_some()).fold(0, |m, a| m | a.bit());
        let opencl = if self.opencl.is_some() { Arch::OpenCl.bit() } else { 0 };
        #[cfg(feature = "cuda")]
        let cuda = if self.cuda.is_some() { Arch::Cuda.bit() } else { 0 };
        #[cfg(not(feature = "cuda"))]
        let cuda = 0;
        host | opencl | cuda
    }
    /// The host-code implementation for CPU workers or null devices.
    pub(crate) fn implementation(&self, a: Arch) -> Option<&ImplFn> {
        match a {
            Arch::Cpu | Arch::Null => self.impls[a as usize].as_ref(),
            Arch::OpenCl | Arch::Cuda => None,
        }
    }
}

pub struct CodeletBuilder {
    c: Codelet,
}

impl CodeletBuilder {
    /// The CPU implementation.
    pub fn cpu(mut self, f: impl Fn(&TaskContext<'_>) -> std::result::Result<(), String> + Send + Sync + 'static) -> Self {
        self.c.impls[Arch::Cpu as usize] = Some(Arc::new(f));
        self
    }
    /// The implementation for null (simulated) devices.
    pub fn null(mut self, f: impl Fn(&TaskContext<'_>) -> std::result::Result<(), String> + Send + Sync + 'static) -> Self {
        self.c.impls[Arch::Null as usize] = Some(Arc::new(f));
        self
    }
    /// The same host-code implementation for CPU workers and null devices.
    pub fn cpu_and_null(mut self, f: impl Fn(&TaskContext<'_>) -> std::result::Result<(), String> + Send + Sync + 'static) -> Self {
        let f: ImplFn = Arc::new(f);
        self.c.impls[Arch::Cpu as usize] = Some(f.clone());
        self.c.impls[Arch::Null as usize] = Some(f);
        self
    }
    /// Set a host-code implementation (CPU or null device) from a shared function object.
    pub fn implementation(mut self, arch: Arch, f: ImplFn) -> Self {
        assert!(arch != Arch::OpenCl, "OpenCL implementations are kernels: use CodeletBuilder::opencl");
        assert!(arch != Arch::Cuda, "CUDA implementations are kernels or GPU code: use CodeletBuilder::cuda or cuda_fn");
        self.c.impls[arch as usize] = Some(f);
        self
    }
    /// The OpenCL implementation: `kernel` in OpenCL C `source` (see [`OpenClImpl`]).
    pub fn opencl(self, source: impl Into<String>, kernel: impl Into<String>) -> Self {
        self.opencl_impl(OpenClImpl::new(source, kernel))
    }
    pub fn opencl_impl(mut self, imp: OpenClImpl) -> Self {
        self.c.opencl = Some(Arc::new(imp));
        self
    }
    /// The CUDA implementation: `kernel` in CUDA C `source` (see [`CudaImpl`]).
    #[cfg(feature = "cuda")]
    pub fn cuda(self, source: impl Into<String>, kernel: impl Into<String>) -> Self {
        self.cuda_impl(CudaImpl::new(source, kernel))
    }
    /// The CUDA implementation as a kernel with options (replaces a `cuda_fn`).
    #[cfg(feature = "cuda")]
    pub fn cuda_impl(mut self, imp: CudaImpl) -> Self {
        self.c.cuda = Some(CudaCode::Kernel(Arc::new(imp)));
        self
    }
    /// The CUDA implementation as host code that enqueues GPU work on the task's device
    /// buffers (cuBLAS calls, several launches); see [`CudaTaskContext`]. Replaces a kernel
    /// given with `cuda`/`cuda_impl`.
    #[cfg(feature = "cuda")]
    pub fn cuda_fn(mut self, f: impl Fn(&CudaTaskContext<'_>) -> std::result::Result<(), String> + Send + Sync + 'static) -> Self {
        self.c.cuda = Some(CudaCode::Fn(Arc::new(f)));
        self
    }
    /// A performance model (StarPU's `starpu_perfmodel`): the runtime measures every task
    /// of the codelet on each kind of worker, and the model-driven policies place tasks by
    /// what it predicts. Codelets sharing a model name share its measurements.
    pub fn model(mut self, m: crate::perfmodel::PerfModel) -> Self {
        self.c.model = Some(m);
        self
    }
    /// Declare how many buffers each task of this codelet accesses (checked at submission).
    pub fn nbuffers(mut self, n: usize) -> Self {
        self.c.nbuffers = Some(n);
        self
    }
    /// Declare the access modes (and so the buffer count); tasks may then give handles only.
    pub fn modes(mut self, modes: &[AccessMode]) -> Self {
        self.c.nbuffers = Some(modes.len());
        self.c.modes = Some(modes.to_vec());
        self
    }
    pub fn build(self) -> Arc<Codelet> {
        Arc::new(self.c)
    }
}

/// Tags name tasks before they exist (StarPU's `starpu_tag_t`).
pub type Tag = u64;

pub(crate) type TaskRef = Arc<TaskInner>;

pub(crate) enum TaskKind {
    Codelet(Arc<Codelet>),
    /// Reduce the contributions of a REDUX phase into the handle.
    Reduction,
    /// An application thread's acquisition of data (`DataHandle::acquire`).
    Acquire(Arc<AcquireSignal>),
    /// No work: only dependencies (e.g. tag-only synchronisation).
    Empty,
    /// Work a front end runs itself: called once, when the dependencies are met
    /// ([`Runtime::submit_external`](crate::Runtime::submit_external)).
    External(Mutex<Option<Arc<dyn ExternalWork>>>),
}

/// The work of an external task, told when it may start ([`Runtime::submit_external`](crate::Runtime::submit_external)).
/// A front end implements it on its own task object, so that submitting costs no
/// allocation beyond core's task.
pub trait ExternalWork: Send + Sync {
    /// The dependencies are met: run the work (or queue it), then hand `token` to
    /// [`Runtime::complete_external`](crate::Runtime::complete_external). Called once, on
    /// the thread that met the last dependency: keep it short.
    fn ready(self: Arc<Self>, token: External);
}

/// A closure as [`ExternalWork`].
struct ReadyFn<F>(Mutex<Option<F>>);

impl<F: FnOnce(External) + Send + 'static> ExternalWork for ReadyFn<F> {
    fn ready(self: Arc<Self>, token: External) {
        let f = lock(&self.0).take();
        if let Some(f) = f {
            f(token);
        }
    }
}

/// Wrap a closure as [`ExternalWork`].
pub fn ready_fn(f: impl FnOnce(External) + Send + 'static) -> Arc<dyn ExternalWork> {
    Arc::new(ReadyFn(Mutex::new(Some(f))))
}

/// An external task whose dependencies are met: the front end runs its work (on any thread,
/// at any time) and then hands it back with [`Runtime::complete_external`](crate::Runtime::complete_external),
/// which releases its successors. The task holds no data: its accesses order it, nothing
/// is acquired or transferred for it.
pub struct External(pub(crate) TaskRef);

impl External {
    pub fn id(&self) -> u64 {
        self.0.id
    }
}

/// Signals the application thread that its acquisition may proceed, then waits for release.
#[derive(Default)]
pub(crate) struct AcquireSignal {
    pub ready: Mutex<bool>,
    pub cv: Condvar,
    /// For an asynchronous acquisition (`DataHandle::acquire_async`): what to call when the
    /// dependencies are met, instead of waking a waiting thread.
    pub then: Mutex<Then>,
}

/// Who tells an asynchronous acquisition's front end that it may proceed: the submitting
/// thread, when the dependencies were met before `submit_task` returned, or the thread that
/// meets the last one.
#[derive(Default)]
pub(crate) enum Then {
    /// A blocking acquisition, or an asynchronous one whose submission has not returned.
    #[default]
    Waiting,
    /// Submitted: call this when ready.
    Armed(Box<dyn FnOnce() + Send>),
    /// Ready before being armed: the submitter calls the front end itself.
    Fired,
}

pub(crate) struct Access {
    pub handle: DataHandle,
    pub mode: AccessMode,
    /// Where registering put the task in the handle's current phase list (`deps::forget`
    /// looks there first; the place stays valid when the list becomes the previous phase).
    pub slot: crate::sync::atomic::AtomicU32,
}

impl Clone for Access {
    /// A copy for another task: not registered yet, so no place.
    fn clone(&self) -> Access {
        Access::new(self.handle.clone(), self.mode)
    }
}

impl Access {
    /// `slot` of an access not (or not yet) in a phase list.
    const NO_SLOT: u32 = u32::MAX;

    pub(crate) fn new(handle: DataHandle, mode: AccessMode) -> Access {
        Access { handle, mode, slot: crate::sync::atomic::AtomicU32::new(Self::NO_SLOT) }
    }

    /// Record where registering put the task (`deps::access_preds`'s answer).
    pub(crate) fn set_slot(&self, at: Option<u32>) {
        self.slot.store(at.unwrap_or(Self::NO_SLOT), crate::sync::atomic::Ordering::Relaxed);
    }
}

pub(crate) type Callback = Box<dyn FnOnce(std::result::Result<(), TaskError>) + Send>;

/// Per-task data a front end hands its implementation ([`TaskBuilder::payload`]). It also
/// hears of the task's completion, like a callback ([`TaskBuilder::callback`]) but without
/// an allocation of its own: a front end that needs both puts them in one object.
pub trait TaskPayload: std::any::Any + Send + Sync {
    /// Called once when the task completes, with its result, right after its callback (if
    /// any) and before `wait` returns. Must not panic (a panic is caught and reported).
    fn completed(&self, _result: &std::result::Result<(), TaskError>) {}
}

/// A task's payload, shared.
pub type Payload = Arc<dyn TaskPayload>;

pub(crate) struct TaskState {
    pub done: bool,
    /// Threads blocked in `wait` (completion signals the condvar only when there are some).
    pub waiters: u32,
    /// Boxed: most tasks succeed, and the task struct stays small.
    pub result: Option<std::result::Result<(), Box<TaskError>>>,
    pub successors: SmallVec<[TaskRef; 2]>,
    /// The device driver worker whose in-order queue the task was launched on, while it has
    /// not completed: with `back_to_back`, a successor pinned to that worker (or an
    /// in-order follower, [`TaskInner::follow`], placed there) needs no dependency on it
    /// (see `add_successor` and `RuntimeInner::launched`).
    pub launched_on: Option<usize>,
    /// False for an in-order task expected to run [`crate::BACK_TO_BACK_US`] or more: its
    /// successors wait for its completion, so that a device does not commit to a queue's
    /// long kernels ahead of other work, and a follower is placed anew.
    pub back_to_back: bool,
}

pub(crate) struct TaskInner {
    pub id: u64,
    pub kind: TaskKind,
    pub accesses: SmallVec<[Access; 3]>,
    /// Inline up to 24 bytes: most argument blobs cost no allocation.
    pub args: SmallVec<[u8; 24]>,
    /// Per-task data for the implementation ([`TaskBuilder::payload`]).
    #[cfg_attr(not(feature = "opencl"), allow(dead_code))]
    pub payload: Option<Payload>,
    pub priority: i32,
    pub tag: Option<Tag>,
    pub dep_tags: SmallVec<[Tag; 1]>,
    pub arch_mask: u8,
    /// The worker the task must run on, if the submitter chose one.
    pub worker: Option<usize>,
    /// An in-order command whose device is chosen when it is ready
    /// ([`TaskBuilder::set_follow`]): an OpenCL in-order queue's kernel on the unified device.
    pub follow: bool,
    /// Where a follower was placed (`usize::MAX`: not yet): set once, by the first
    /// predecessor that lets it run right behind itself or by the placement when it is ready.
    pub placed: AtomicUsize,
    pub has_commute: bool,
    /// None of its handles is in a partitioned tree (its acquisitions write no relatives
    /// back), so it may be launched right behind a predecessor on the same in-order device.
    pub flat: bool,
    /// Whether it was given a callback: completion locks `callback` only then (a kernel
    /// launch has none).
    pub has_callback: bool,
    pub callback: Mutex<Option<Callback>>,
    /// Unresolved dependencies, plus one held by submission until registration finishes.
    pub pending: AtomicUsize,
    /// `state.done`, readable without the lock (set under it): an OpenCL queue prunes its
    /// finished commands on every enqueue, and locking each task's state there contended
    /// with the driver completing it.
    pub done: crate::sync::atomic::AtomicBool,
    pub state: Mutex<TaskState>,
    pub cv: Condvar,
    /// The failure of a dependency, if any: the task is cancelled instead of run.
    pub poison: OnceLock<Box<TaskError>>,
    /// (footprint, size) in its codelet's performance model: given by the submitter
    /// ([`TaskBuilder::footprint`]) or computed from its data shapes on first use.
    pub perf_key: OnceLock<(u32, f64)>,
}

impl TaskInner {
    /// (footprint, size) of this task in its codelet's model.
    pub fn perf_key(&self) -> (u32, f64) {
        *self.perf_key.get_or_init(|| {
            let shapes: SmallVec<[crate::data::Shape; 4]> = self.accesses.iter().map(|a| a.handle.shape()).collect();
            match &self.kind {
                TaskKind::Codelet(c) => match &c.model {
                    Some(m) => m.key(&shapes, &self.args),
                    None => crate::perfmodel::default_key(&shapes),
                },
                _ => (0, 0.0),
            }
        })
    }

    pub fn name(&self) -> &str {
        match &self.kind {
            TaskKind::Codelet(c) => &c.name,
            TaskKind::Reduction => "reduction",
            TaskKind::Acquire(_) => "acquire",
            TaskKind::Empty => "empty",
            TaskKind::External(_) => "external",
        }
    }

    /// Make `succ` depend on `self`. Returns whether a dependency was added (false: done).
    pub fn add_successor(self: &Arc<Self>, succ: &TaskRef) -> bool {
        if Arc::ptr_eq(self, succ) {
            return false;
        }
        let mut st = lock(&self.state);
        if st.done {
            // Finished, even with an error: no dependency. Cancellation reaches the tasks that
            // were waiting when a task failed, not those submitted after the application
            // could see the failure (else one failed writer would cancel a handle's tasks forever).
            return false;
        }
        if let Some(w) = st.launched_on
            && st.back_to_back
            && succ.flat
            && (succ.worker == Some(w) || succ.place_on(w))
        {
            // Launched on the in-order queue of the worker the successor is pinned or placed
            // to: the successor is launched after it, so the device runs them in order.
            return false;
        }
        // Relaxed: the count is only read by the RMW that resolves it; the successor list's
        // mutex orders this increment before the predecessor's completion decrements it.
        succ.pending.fetch_add(1, Ordering::Relaxed);
        st.successors.push(succ.clone());
        true
    }

    /// The worker a follower was placed on, if it was.
    pub fn placed_on(&self) -> Option<usize> {
        // Relaxed: read by the thread that dispatches or runs the task, after the
        // dependency count's AcqRel resolution that follows every store (`place_on`).
        let w = self.placed.load(Ordering::Relaxed);
        (w != usize::MAX).then_some(w)
    }

    /// Place a follower on worker `w` unless it was placed elsewhere: whether it is on `w`.
    /// A task that is not a follower stays unplaced.
    pub fn place_on(&self, w: usize) -> bool {
        // AcqRel: one placement wins; a loser sees the winner's choice.
        self.follow
            && match self.placed.compare_exchange(usize::MAX, w, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => true,
                Err(k) => k == w,
            }
    }

    pub fn is_done(&self) -> bool {
        // Acquire: pairs with the Release store in `RuntimeInner::complete`, so what the
        // completion wrote before (result, callbacks' effects) is visible.
        self.done.load(Ordering::Acquire)
    }
}

/// A submitted task: wait for it, or depend on it.
#[derive(Clone)]
pub struct TaskHandle(pub(crate) TaskRef, pub(crate) Arc<crate::runtime::RuntimeInner>);

impl TaskHandle {
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }
    /// Spin a while for the task to complete, where that pays (a task for a GPU, see
    /// `Config::wait_spin_us`), before a wait of the caller's own that sleeps. Whether it
    /// is done.
    pub fn spin_wait(&self) -> bool {
        self.1.spin_wait(&self.0)
    }
    /// Block until the task completed; its error if it failed or was cancelled.
    pub fn wait(&self) -> Result<()> {
        self.1.wait_task(&self.0)
    }
    /// Block until the task completed, whatever its result and however long: no deadlock
    /// or stall detection (a front end whose own wait has none, like OpenCL's `clFinish`
    /// on a command gated by a user event). Its callback and payload have run by then.
    pub fn wait_done(&self) {
        self.1.spin_wait(&self.0);
        let mut st = lock(&self.0.state);
        while !st.done {
            st.waiters += 1;
            st = self.0.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            st.waiters -= 1;
        }
    }
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Task#{}({})", self.0.id, self.0.name())
    }
}

/// Everything needed to submit a task.
pub struct TaskBuilder {
    pub(crate) codelet: Option<Arc<Codelet>>,
    pub(crate) accesses: SmallVec<[Access; 3]>,
    pub(crate) args: SmallVec<[u8; 24]>,
    pub(crate) payload: Option<Payload>,
    pub(crate) priority: i32,
    pub(crate) tag: Option<Tag>,
    pub(crate) dep_tags: SmallVec<[Tag; 1]>,
    pub(crate) after: SmallVec<[TaskRef; 2]>,
    pub(crate) callback: Option<Callback>,
    pub(crate) worker: Option<usize>,
    pub(crate) follow: bool,
    /// A completed task whose memory the new one may take ([`TaskBuilder::reuse`]).
    pub(crate) reuse: Option<Spent>,
    /// (footprint, size) in the codelet's model, if the submitter gives them.
    pub(crate) perf_key: Option<(u32, f64)>,
}

/// A completed external task, kept by the front end so that a later task can take its
/// memory ([`Runtime::complete_external`](crate::Runtime::complete_external),
/// [`TaskBuilder::reuse`]): a front end that pools its own task objects keeps one with
/// each, and creating a task then costs no allocation while the old one is held by nobody
/// else. Holding it keeps the completed task's memory and what the task still refers to
/// (its data handles among them) until it is reused or dropped: a front end keeps a bounded
/// number.
pub struct Spent(pub(crate) TaskRef);

/// Tasks some work waits for ([`Runtime::predecessors`](crate::Runtime::predecessors)).
pub struct Predecessors(pub(crate) deps::Preds);

impl Predecessors {
    /// Whether every one of them has completed.
    pub fn done(&self) -> bool {
        self.0.iter().all(|t| t.is_done())
    }
    /// How many there were when they were looked up.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl TaskBuilder {
    /// A task running `codelet`.
    pub fn new(codelet: &Arc<Codelet>) -> TaskBuilder {
        TaskBuilder { codelet: Some(codelet.clone()), ..Self::empty() }
    }
    /// A task with no work: it only carries dependencies, a tag or a callback.
    pub fn empty() -> TaskBuilder {
        TaskBuilder {
            codelet: None,
            accesses: SmallVec::new(),
            args: SmallVec::new(),
            payload: None,
            priority: 0,
            tag: None,
            dep_tags: SmallVec::new(),
            after: SmallVec::new(),
            callback: None,
            worker: None,
            follow: false,
            reuse: None,
            perf_key: None,
        }
    }
    /// The task's footprint and size in its codelet's performance model, instead of what
    /// the model computes from the data shapes: a front end whose tasks of one codelet
    /// differ by more than their data (an OpenCL kernel's global work size) says so here.
    pub fn footprint(mut self, footprint: u32, size: f64) -> Self {
        self.set_footprint(footprint, size);
        self
    }
    /// [`TaskBuilder::footprint`] in place.
    pub fn set_footprint(&mut self, footprint: u32, size: f64) -> &mut Self {
        self.perf_key = Some((footprint, size));
        self
    }
    /// Build the task in `spent`'s memory if nothing else refers to that completed task any
    /// more (else in new memory, and `spent` goes).
    pub fn reuse(&mut self, spent: Spent) -> &mut Self {
        self.reuse = Some(spent);
        self
    }
    /// Access `h` with `mode`; buffers are numbered in the order accesses are added.
    pub fn access(mut self, h: &DataHandle, mode: AccessMode) -> Self {
        self.add_access(h, mode);
        self
    }
    /// [`TaskBuilder::access`] in place (a front end adding accesses in a loop moves the
    /// builder only once).
    pub fn add_access(&mut self, h: &DataHandle, mode: AccessMode) -> &mut Self {
        self.accesses.push(Access::new(h.clone(), mode));
        self
    }
    /// The handles the task accesses so far, in access order.
    pub fn handles(&self) -> impl Iterator<Item = &DataHandle> {
        self.accesses.iter().map(|a| &a.handle)
    }
    /// Access `h` with the codelet's declared mode for the next buffer (see `Codelet::modes`).
    pub fn handle(self, h: &DataHandle) -> Self {
        let i = self.accesses.len();
        let mode = self.codelet.as_ref().and_then(|c| c.modes.as_ref()).and_then(|m| m.get(i).copied()).unwrap_or(AccessMode::RW);
        self.access(h, mode)
    }
    pub fn args(mut self, bytes: &[u8]) -> Self {
        self.args = SmallVec::from_slice(bytes);
        self
    }
    /// Data for the implementation that is not plain bytes (a custom OpenCL launch reads it
    /// from [`OpenClLaunch::payload`]): one codelet can then serve every task, with what
    /// differs between them here, instead of one codelet (and closure) per task.
    pub fn payload(mut self, p: Payload) -> Self {
        self.set_payload(p);
        self
    }
    /// A plain value as argument blob (read back with `TaskContext::arg`).
    pub fn arg<T: bytemuck::Pod>(self, v: T) -> Self {
        self.args(bytemuck::bytes_of(&v))
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    pub fn tag(mut self, t: Tag) -> Self {
        self.tag = Some(t);
        self
    }
    /// Run after the task carrying tag `t` (which may not exist yet).
    pub fn after_tag(mut self, t: Tag) -> Self {
        self.dep_tags.push(t);
        self
    }
    /// Run after `task`.
    pub fn after(mut self, task: &TaskHandle) -> Self {
        self.add_after(task);
        self
    }
    /// [`TaskBuilder::after`] in place. The builder is a few hundred bytes: each by-value
    /// step copies it twice, which a front end's per-command path (OpenCL's tiny kernels)
    /// notices; these `&mut` forms copy nothing.
    pub fn add_after(&mut self, task: &TaskHandle) -> &mut Self {
        self.after.push(task.0.clone());
        self
    }
    /// Run on worker `w` only (StarPU's `execute_on_a_specific_worker`), whatever the policy.
    pub fn on_worker(mut self, w: usize) -> Self {
        self.set_worker(w);
        self
    }
    /// [`TaskBuilder::on_worker`] in place.
    pub fn set_worker(&mut self, w: usize) -> &mut Self {
        self.worker = Some(w);
        self
    }
    /// An in-order command whose device is chosen when it is ready (an OpenCL in-order
    /// queue's kernel on the unified device): it runs on the device driver where it is
    /// expected to finish first, given the drivers' loads (tasks in flight and pinned to
    /// them, and the model's prediction for it), or right behind its in-order predecessor
    /// on that one's device when the predecessor is short (under [`crate::BACK_TO_BACK_US`]).
    /// Its order comes from its `after` edges as for any task; ignored with
    /// [`TaskBuilder::on_worker`].
    pub fn set_follow(&mut self) -> &mut Self {
        self.follow = true;
        self
    }
    /// [`TaskBuilder::payload`] in place.
    pub fn set_payload(&mut self, p: Payload) -> &mut Self {
        self.payload = Some(p);
        self
    }
    /// Call `f` with the task's result when it completes (before `wait` returns).
    pub fn callback(mut self, f: impl FnOnce(std::result::Result<(), TaskError>) + Send + 'static) -> Self {
        self.set_callback(f);
        self
    }
    /// [`TaskBuilder::callback`] in place.
    pub fn set_callback(&mut self, f: impl FnOnce(std::result::Result<(), TaskError>) + Send + 'static) -> &mut Self {
        self.callback = Some(Box::new(f));
        self
    }

    pub(crate) fn validate(&self, present_archs: u8) -> Result<u8> {
        let mask = match &self.codelet {
            Some(c) => {
                if let Some(n) = c.nbuffers
                    && n != self.accesses.len()
                {
                    return Err(Error::BufferCount { codelet: c.name.clone(), declared: n, given: self.accesses.len() });
                }
                let m = c.arch_mask() & present_archs;
                if m == 0 {
                    return Err(Error::NoImplementation(c.name.clone()));
                }
                m
            }
            None => {
                if !self.accesses.is_empty() {
                    return Err(Error::NoImplementation("(task without codelet accessing data)".into()));
                }
                present_archs
            }
        };
        Ok(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Runtime, Shape};

    /// A completed external task held by nobody else lends its memory to the next task
    /// built with `reuse`; one still referred to does not, and keeps its state.
    #[test]
    fn a_spent_task_is_reused_only_when_nothing_else_holds_it() {
        let rt = Runtime::new(Config { ncpu: Some(1), ..Config::default() }).unwrap();
        let h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<External>();
        let submit = |spent: Option<Spent>| {
            let tx = tx.clone();
            let mut b = TaskBuilder::empty().access(&h, AccessMode::RW);
            if let Some(s) = spent {
                b.reuse(s);
            }
            rt.submit_external(b, move |e| tx.send(e).unwrap()).unwrap()
        };
        let first = submit(None);
        let at = Arc::as_ptr(&first.0);
        drop(first);
        let spent = rt.complete_external(rx.recv().unwrap());
        // Nothing else holds it: the second task is built in its memory.
        let second = submit(Some(spent));
        assert_eq!(Arc::as_ptr(&second.0), at, "the spent task's memory was not reused");
        assert!(!second.is_done());
        let spent = rt.complete_external(rx.recv().unwrap());
        assert!(second.is_done());
        // Still held (by `second`): a third task gets new memory, and the second stays done.
        let third = submit(Some(spent));
        assert_ne!(Arc::as_ptr(&third.0), at);
        assert!(second.is_done() && !third.is_done());
        drop(rt.complete_external(rx.recv().unwrap()));
        rt.wait_for_all().unwrap();
        assert!(third.is_done());
    }
}
