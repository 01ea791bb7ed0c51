//! The runtime: one pool of workers, one scheduler, one set of memory nodes, one table of
//! data handles and tags.
//!
//! **Owns**: submission (validation, dependency registration, readiness), task execution
//! on a worker (data acquisition, the implementation call, release), completion (releasing
//! successors, tags, callbacks, cancellation of dependents), waiting, and shutdown.
//!
//! Hot path: submitting a task with no data takes no lock shared by all threads (one
//! atomic increment of the in-flight count, then a lock-free queue push); a task with data
//! locks only its handles' trees. No lock is held while a task runs.

use crate::config::Config;
use crate::data::registry::Registry;
use crate::data::{DataHandle, View};
use crate::error::{Error, Result};
use crate::memory::MemoryNode;
use crate::sched::{self, Policy, PolicyKind, SchedCtx, Target, WorkerDesc};
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, Condvar, Mutex, lock};
use crate::task::tags::{BindError, Tags};
use crate::task::{AccessMode, Arch, TaskBuilder, TaskContext, TaskError, TaskHandle, TaskInner, TaskKind, TaskRef, TaskState, deps};
use crate::topology::Topology;
use crate::worker::sleep::Sleep;
use crate::worker::{self, WorkerInfo};
use crossbeam_utils::CachePadded;
use smallvec::SmallVec;
use std::collections::HashSet;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::Duration;
use weft_vendors::Device;
use weft_vendors::host::HostDevice;
use weft_vendors::null::NullDevice;

static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

#[derive(Default)]
pub(crate) struct WorkerStats {
    /// Tasks run: core's, and those whose work a front end ran itself on this thread
    /// ([`Counter::task`]: OpenMP explicit tasks).
    pub tasks: AtomicU64,
    /// Jobs run (`post_job`, counted when they start), and the further units of work a
    /// job reported ([`Counter::job`]: an OpenMP docking job runs a team member's
    /// share of region after region).
    pub jobs: AtomicU64,
    /// Device drivers: task starts put off while their data came home from another device.
    pub deferred: AtomicU64,
    /// Device drivers: tasks whose work ran on the device and succeeded (kernel launches;
    /// `tasks` also counts those that needed no device work).
    pub launches: AtomicU64,
    pub busy: AtomicBool,
    /// Time spent in tasks (whole `execute` calls, data acquisition included; a device:
    /// its tasks' kernels, one after another), ns. Measured only under `WEFT_STATS`;
    /// jobs are not timed.
    pub busy_ns: AtomicU64,
    /// A device driver: when its last retired task completed, ns since the runtime started
    /// (a device runs its tasks in order, so the next one started no earlier).
    pub last_done_ns: AtomicU64,
    /// A device driver: its tasks in flight (launched, not retired), and since when its
    /// oldest one has had the device (ns since the runtime started): what the placement of
    /// in-order followers reads (`RuntimeInner::place_follower`). Relaxed: a load estimate.
    pub inflight: AtomicUsize,
    pub head_ns: AtomicU64,
    /// The performance models (their handles' addresses) this worker has measured a task of:
    /// a model's first task on a worker is a warm-up (`RuntimeInner::measured`).
    pub warmed: Mutex<SmallVec<[usize; 8]>>,
    /// A device worker's last measured task was a warm-up: the next one's duration may hold
    /// part of its one-time costs (`RuntimeInner::measured`).
    pub after_warm_up: AtomicBool,
}

/// Predictions against measurements, per (model, worker kind), for `WEFT_STATS`.
#[derive(Default, Clone)]
pub(crate) struct PerfStat {
    pub model: String,
    pub arch: String,
    /// Tasks measured, and of those, predicted by a calibrated model.
    pub measured: u64,
    pub predicted: u64,
    pub sum_measured: f64,
    /// Over the predicted tasks only.
    pub sum_pred: f64,
    pub sum_pred_measured: f64,
    pub sum_abs_err: f64,
    /// Warm-ups (a model's first task on each worker) among the predicted tasks, and the
    /// sum of their relative errors: left out of `sum_abs_err`, reported beside it.
    pub warm_ups: u64,
    pub sum_abs_err_warm_ups: f64,
}

/// Where a thread's work counts in the statistics ([`Runtime::counter`]): work a front end
/// runs itself, outside core's scheduling, counted where it runs. One relaxed increment each.
#[derive(Clone, Copy)]
pub struct Counter<'a>(&'a WorkerStats);

impl Counter<'_> {
    /// One task whose work the thread ran itself: an external task's body, or a front end's
    /// own task (an OpenMP explicit task). Counted where the work ran, not where the task
    /// was completed (a detached OpenMP task completes where its event is fulfilled).
    #[inline]
    pub fn task(self) {
        self.0.tasks.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` such tasks at once (a front end that counts its tasks on the thread and adds
    /// them when it is done with them: one increment instead of one per task).
    #[inline]
    pub fn tasks(self, n: u64) {
        self.0.tasks.fetch_add(n, Ordering::Relaxed);
    }

    /// One unit of a job's kind of work beyond the jobs posted to the thread (those count
    /// themselves when they start): an OpenMP team member's share of a parallel region
    /// served by a docking job that already ran one, or one run by a thread that is not a
    /// worker (an OpenMP primary thread, an OpenMP thread of the front end's own).
    #[inline]
    pub fn job(self) {
        self.0.jobs.fetch_add(1, Ordering::Relaxed);
    }

    /// A job posted to the thread, counted when it started, that ran no unit of its kind of
    /// work after all (an OpenMP docking job posted to help with a region's tasks, whose
    /// region had none left by the time it ran): taken out of the count.
    #[inline]
    pub fn not_a_job(self) {
        self.0.jobs.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The tasks that did not complete successfully since `wait_for_all` last reported them.
#[derive(Default)]
struct Failures {
    failed: usize,
    cancelled: usize,
    /// The first task that failed (not merely cancelled), else the first cancelled one.
    first: Option<TaskError>,
}

impl Failures {
    fn record(&mut self, e: &TaskError) {
        let cancelled = matches!(e, TaskError::Cancelled(_));
        if cancelled {
            self.cancelled += 1;
        } else {
            self.failed += 1;
        }
        if self.first.is_none() || (!cancelled && self.failed == 1) {
            self.first = Some(e.clone());
        }
    }

    /// The report of what was recorded, if anything was, and an empty record.
    fn take(&mut self) -> Option<Error> {
        let f = std::mem::take(self);
        f.first.map(|first| Error::TasksFailed { failed: f.failed, cancelled: f.cancelled, first })
    }
}

/// Commute accesses: a task runs only while no other task holds one of its handles in
/// COMMUTE mode (StarPU's default arbiter).
#[derive(Default)]
pub(crate) struct Arbiter {
    busy: HashSet<u64>,
    waiting: Vec<TaskRef>,
}

fn commute_ids(t: &TaskInner) -> impl Iterator<Item = u64> + '_ {
    t.accesses.iter().filter(|a| a.mode == AccessMode::Commute).map(|a| a.handle.id())
}

pub(crate) struct RuntimeInner {
    pub id: u64,
    pub config: Config,
    pub topology: Topology,
    pub nodes: Arc<[Arc<MemoryNode>]>,
    pub null_devices: Vec<Arc<NullDevice>>,
    /// Why discovery left out a vendor, platform or device ([`Runtime::devices_left_out`]).
    pub left_out: Vec<String>,
    pub workers: Vec<WorkerInfo>,
    pub present_archs: u8,
    pub policy: Box<dyn Policy>,
    pub sleep: Sleep,
    pub tags: Tags,
    pub registry: Registry,
    pub arbiter: Mutex<Arbiter>,
    pub stats: Vec<CachePadded<WorkerStats>>,
    pub(crate) perf_stats: Mutex<Vec<PerfStat>>,
    /// The bus model and model settings, when the policy places by models.
    pub(crate) models: Option<Arc<crate::sched::ModelCtx>>,
    /// `$WEFT_HOME/models`: where codelets' performance models are kept.
    pub(crate) model_dir: Option<std::path::PathBuf>,
    /// When the runtime started: the clock of `WorkerStats`' times.
    pub(crate) epoch: std::time::Instant,
    /// Tasks with a CPU implementation leave OpenCL out of their mask: every OpenCL worker
    /// shares the CPU workers' cores (`WorkerInfo::shares_cores`).
    strip_opencl: bool,
    /// What threads that are not workers of this runtime ran ([`Runtime::counter`]: an
    /// OpenMP program's initial thread, its OpenMP threads).
    pub other: CachePadded<WorkerStats>,
    inflight: CachePadded<AtomicUsize>,
    waiting: AtomicUsize,
    wait_lock: Mutex<()>,
    /// Tasks that failed or were cancelled since the last `wait_for_all` reported them.
    failures: Mutex<Failures>,
    wait_cv: Condvar,
    pub shutdown: AtomicBool,
    next_task: CachePadded<AtomicU64>,
    pub(crate) next_handle: AtomicU64,
    /// Per worker: tasks submitted for that worker only (`TaskBuilder::on_worker`).
    pub(crate) pinned: Vec<crossbeam_deque::Injector<TaskRef>>,
    /// Per device driver: followers placed on it (`TaskBuilder::set_follow`), taken before
    /// its pinned tasks (`RuntimeInner::pop`).
    pub(crate) followers: Vec<crossbeam_deque::Injector<TaskRef>>,
    /// Per worker: jobs posted to it (`Runtime::post_job`).
    pub(crate) jobs: crate::worker::jobs::Mailboxes,
    /// Per worker: the backend of its device, for device driver workers (`crate::backend`).
    pub(crate) backends: Vec<Option<Box<dyn crate::backend::KernelBackend>>>,
    /// The execution trace (`WEFT_TRACE`): `None` unless asked for, and every event site
    /// checks it first (one load; no clock read when it is `None`).
    pub(crate) trace: Option<Arc<crate::trace::Tracer>>,
}

/// A Weft runtime. Dropping it waits for submitted tasks and stops the workers.
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
    threads: Vec<JoinHandle<()>>,
}

impl Runtime {
    /// A runtime configured from the environment (`config` lists the variables).
    pub fn from_env() -> Result<Runtime> {
        Runtime::new(Config::from_env()?)
    }

    pub fn new(config: Config) -> Result<Runtime> {
        let topology = Topology::detect_within(config.cpus.as_deref());
        // Large host copies (a clEnqueueReadBuffer into the application's memory, a CUDA
        // staging pack) are split over up to 8 cores, a bound worker's helpers on the cores
        // after its own.
        weft_vendors::set_host_copy(weft_vendors::HostCopy {
            threads: topology.npus().min(8),
            placement: Some(std::sync::Arc::new(topology.clone())),
        });
        // Every device of every backend, each to be driven by a worker of its own.
        let (devices, left_out) = crate::backend::discover(&config);
        // Devices that compute on the CPU workers' cores (PoCL's) take no core from them.
        let nshared = devices.iter().filter(|d| d.on_cpus()).count();
        let ndrivers = config.nnull + devices.len() - nshared;
        // One CPU worker fewer per device driver thread, as StarPU does, unless WEFT_NCPU says.
        let ncpu = config.ncpu.unwrap_or_else(|| topology.npus().saturating_sub(ndrivers).max(1));

        let host: Arc<dyn Device> = Arc::new(HostDevice);
        let mut nodes = vec![Arc::new(MemoryNode::new(0, host, config.cpu_mem_limit))];
        let mut null_devices = Vec::new();
        let mut workers = Vec::new();
        for i in 0..ncpu {
            workers.push(WorkerInfo {
                id: i,
                arch: Arch::Cpu,
                node: 0,
                pu: Some(topology.pus[i % topology.npus()]),
                name: format!("cpu{i}"),
                spins: false,
                // (Per worker when the cores do not run at one speed: config.rs.)
                perf_arch: if config.homogeneous_cpu { "cpu".into() } else { format!("cpu{i}") },
                shares_cores: false,
            });
        }
        for d in 0..config.nnull {
            let dev = Arc::new(NullDevice::new(d));
            let node = nodes.len();
            nodes.push(Arc::new(MemoryNode::new(node, dev.clone() as Arc<dyn Device>, config.null_mem_limit)));
            null_devices.push(dev);
            let id = workers.len();
            workers.push(WorkerInfo {
                id,
                arch: Arch::Null,
                node,
                pu: None,
                name: format!("null{d}"),
                spins: false,
                perf_arch: "null".into(),
                shares_cores: false,
            });
        }
        let mut backends: Vec<Option<Box<dyn crate::backend::KernelBackend>>> = workers.iter().map(|_| None).collect();
        // A device that computes on a core of its own (an OpenCL CPU device asked to run
        // codelets beside the CPU workers) has its driver, which runs or feeds its kernels,
        // bound to the cores after the CPU workers': left to migrate, it landed on a CPU
        // worker's core at times and the two took turns.
        let mut own_cores = topology.pus.iter().copied().skip(ncpu);
        for dev in devices {
            let node = nodes.len();
            nodes.push(Arc::new(MemoryNode::new(node, dev.device(), dev.mem_limit())));
            let id = workers.len();
            let pu = (dev.host_cores() && !dev.on_cpus()).then(|| own_cores.next()).flatten();
            workers.push(WorkerInfo {
                id,
                arch: dev.arch(),
                node,
                pu,
                name: dev.name(),
                spins: dev.spins(),
                perf_arch: dev.perf_arch(),
                shares_cores: dev.on_cpus() && ncpu > 0,
            });
            backends.push(Some(dev));
        }
        let present_archs = workers.iter().fold(0, |m, w| m | w.arch.bit());
        let nworkers = workers.len();
        if nworkers == 0 {
            return Err(Error::Config("WEFT_NCPU=0 and no device: no worker could run a task".into()));
        }
        // Devices that only take what CPU workers cannot run do not make the machine
        // heterogeneous for the choice of the default policy.
        let kinds = workers.iter().filter(|w| !w.shares_cores).fold(0, |m, w| m | w.arch.bit());
        let model_dir = config.home.as_ref().map(|h| h.join("models"));
        // One clock for the statistics, the measured durations and the policies' expected ends.
        let epoch = std::time::Instant::now();
        let kind = config.sched.resolve(kinds);
        let models = kind.uses_models().then(|| {
            let bus = crate::perfmodel::bus::BusModel::load_or_measure(
                &nodes,
                config.home.as_ref().map(|h| h.join("bus")).as_deref(),
                config.bus_calibrate,
            );
            Arc::new(crate::sched::ModelCtx {
                bus,
                dir: model_dir.clone(),
                calibrate: config.calibrate,
                alpha: config.sched_alpha,
                beta: config.sched_beta,
                locality: config.sched_locality,
                heteroprio: config.heteroprio.clone(),
                epoch,
                prefetch: (kind != PolicyKind::Heteroprio && nodes.len() > 1).then(|| {
                    // Each device node's thread next to its driver where that is bound; host
                    // memory's next to the first bound driver.
                    let driver_pu = |n: usize| workers.iter().find(|w| w.node == n && w.arch != Arch::Cpu).and_then(|w| w.pu);
                    let first = (1..nodes.len()).find_map(driver_pu);
                    let pus: Vec<Option<usize>> = (0..nodes.len())
                        .map(|n| {
                            if !config.bind {
                                None
                            } else if n == 0 {
                                first
                            } else {
                                driver_pu(n)
                            }
                        })
                        .collect();
                    crate::sched::prefetch::Prefetcher::new(&nodes, &pus, &topology)
                }),
            })
        });
        let ctx = SchedCtx {
            workers: workers
                .iter()
                .map(|w| WorkerDesc {
                    id: w.id,
                    arch: w.arch,
                    node: w.node,
                    pu: w.pu.map(|_| w.id % topology.npus()),
                    speed: 1.0,
                    perf_arch: w.perf_arch.clone(),
                    shares_cores: w.shares_cores,
                })
                .collect(),
            topology: topology.clone(),
            models: models.clone(),
        };
        // Tasks with a CPU implementation leave out OpenCL when every OpenCL worker shares
        // the CPU workers' cores (else the policies check `shares_cores` per worker).
        let ocl: Vec<&WorkerInfo> = workers.iter().filter(|w| w.arch == Arch::OpenCl).collect();
        let strip_opencl = !ocl.is_empty() && ocl.iter().all(|w| w.shares_cores);
        let policy = sched::create(kind, ctx);
        let trace = config.trace.clone().map(|path| {
            let tr = Arc::new(crate::trace::Tracer::new(
                path,
                epoch,
                trace_tracks(&workers),
                nodes.iter().map(|n| n.device.name().to_string()).collect(),
            ));
            for n in &nodes {
                let _ = n.trace.set(tr.clone());
            }
            tr
        });
        let inner = Arc::new(RuntimeInner {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            sleep: Sleep::new(workers.iter().map(|w| w.arch).collect()),
            stats: workers.iter().map(|_| CachePadded::new(WorkerStats::default())).collect(),
            perf_stats: Mutex::new(Vec::new()),
            models,
            model_dir,
            epoch,
            strip_opencl,
            other: CachePadded::new(WorkerStats::default()),
            config,
            topology,
            nodes: nodes.into(),
            null_devices,
            left_out,
            workers,
            present_archs,
            policy,
            tags: Tags::default(),
            registry: Registry::default(),
            arbiter: Mutex::new(Arbiter::default()),
            inflight: CachePadded::new(AtomicUsize::new(0)),
            waiting: AtomicUsize::new(0),
            wait_lock: Mutex::new(()),
            failures: Mutex::new(Failures::default()),
            wait_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            next_task: CachePadded::new(AtomicU64::new(1)),
            next_handle: AtomicU64::new(1),
            pinned: (0..nworkers).map(|_| crossbeam_deque::Injector::new()).collect(),
            followers: (0..nworkers).map(|_| crossbeam_deque::Injector::new()).collect(),
            jobs: crate::worker::jobs::Mailboxes::new(nworkers),
            backends,
            trace,
        });
        let mut threads = Vec::new();
        for w in 0..inner.workers.len() {
            let rt = inner.clone();
            let h = std::thread::Builder::new()
                .name(format!("weft-{}", inner.workers[w].name))
                // What glibc gives a thread by default (the usual RLIMIT_STACK): CPU workers run
                // OpenMP team members' code, which libgomp runs on threads of that size.
                .stack_size(crate::WORKER_STACK)
                .spawn(move || worker::run(rt, w))
                .map_err(|e| Error::Config(format!("cannot start worker thread: {e}")))?;
            inner.sleep.set_thread(w, h.thread().clone());
            threads.push(h);
        }
        Ok(Runtime { inner, threads })
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The workers, in id order.
    pub fn workers(&self) -> &[WorkerInfo] {
        &self.inner.workers
    }

    pub fn policy_name(&self) -> &'static str {
        self.inner.policy.name()
    }

    /// Memory nodes: 0 is host RAM, then one per device.
    pub fn memory_nodes(&self) -> &[Arc<MemoryNode>] {
        &self.inner.nodes
    }

    /// Why this runtime's device discovery left out a vendor, platform or device (a
    /// library that did not open, a platform that lists none, no CUDA driver), a line each,
    /// prefixed by the backend's name; only backends the configuration let look for
    /// devices (not `WEFT_NOPENCL=0`, `WEFT_NCUDA=0`). What `weft machine` shows under
    /// "left out".
    pub fn devices_left_out(&self) -> &[String] {
        &self.inner.left_out
    }

    /// Tasks each worker has run so far.
    pub fn tasks_per_worker(&self) -> Vec<u64> {
        self.inner.stats.iter().map(|s| s.tasks.load(Ordering::Relaxed)).collect()
    }

    /// Submit a task; it runs once its dependencies are met.
    pub fn submit(&self, b: TaskBuilder) -> Result<TaskHandle> {
        let mut b = b;
        self.submit_from(&mut b)
    }

    /// [`Runtime::submit`] from a builder the caller keeps (a front end's per-command path:
    /// the builder, a few hundred bytes, is not moved down the calls). `b` is consumed
    /// whatever the outcome: what it holds afterwards is unspecified; drop it.
    pub fn submit_from(&self, b: &mut TaskBuilder) -> Result<TaskHandle> {
        let t = self.inner.submit_task(b, None)?;
        Ok(TaskHandle(t, self.inner.clone()))
    }

    /// Submit a task whose work the caller runs itself (an OpenMP task with `depend`
    /// clauses): `b` gives its accesses (no codelet; dependency-only handles such as
    /// `alloc(Shape::Bytes { size: 1 })` are enough), explicit predecessors, tag and
    /// priority. Once its dependencies are met, `ready` is called (on the thread that met
    /// the last one: keep it short, e.g. queue the work) with a token to pass to
    /// [`Runtime::complete_external`] when the work is done. Nothing is acquired for it:
    /// the accesses order it with every other task of the handles, no data moves.
    pub fn submit_external(&self, b: TaskBuilder, ready: impl FnOnce(crate::task::External) + Send + 'static) -> Result<TaskHandle> {
        self.submit_external_work(b, crate::task::ready_fn(ready))
    }

    /// [`Runtime::submit_external`] with the work as an object of the front end's (its own
    /// task, told through [`ExternalWork::ready`](crate::ExternalWork::ready)): no allocation
    /// beyond core's task.
    pub fn submit_external_work(&self, b: TaskBuilder, work: Arc<dyn crate::task::ExternalWork>) -> Result<TaskHandle> {
        if b.codelet.is_some() {
            return Err(Error::Unsupported("an external task has no codelet".into()));
        }
        let t = self.inner.submit_external(b, work)?;
        Ok(TaskHandle(t, self.inner.clone()))
    }

    /// The work of an external task is done: release its successors. The completed task
    /// comes back for a later task to reuse its memory (or to drop), without its data
    /// handles: a front end holding it must not keep them shared (see
    /// [`DataHandle::reuse_if_unshared`](crate::DataHandle::reuse_if_unshared)).
    pub fn complete_external(&self, e: crate::task::External) -> crate::task::Spent {
        let mut t = e.0;
        self.inner.complete(&t, Ok(()), worker::current(self.inner.id));
        // Nobody else refers to it once its successors are released and its handles' lists
        // have forgotten it (the usual case); else they go when it does.
        if let Some(inner) = Arc::get_mut(&mut t) {
            inner.accesses.clear();
        }
        crate::task::Spent(t)
    }

    /// The unfinished tasks that a task with `b`'s accesses would wait for, found without
    /// submitting one. For work the caller runs itself that ends before anything else is
    /// submitted on these handles (an OpenMP task run at once): no later task can need to
    /// wait for it, so it needs no task of its own. `Error::Unsupported` where only a
    /// submission orders it right: COMMUTE and REDUX accesses (the arbiter, a reduction), a
    /// handle in its REDUX phase, tags.
    pub fn predecessors(&self, b: &TaskBuilder) -> Result<crate::task::Predecessors> {
        self.inner.predecessors(b)
    }

    /// [`Runtime::predecessors`] of accesses alone, with borrowed handles: a front end that
    /// keeps its handles (OpenMP's per-address map) looks them up without a builder, whose
    /// accesses would each take and give back a reference to a handle that other threads'
    /// tasks hold too.
    pub fn predecessors_of(&self, accesses: &[(&DataHandle, AccessMode)]) -> Result<crate::task::Predecessors> {
        let mut preds = deps::Preds::new();
        self.inner.access_predecessors(accesses, &mut preds)?;
        Ok(crate::task::Predecessors(preds))
    }

    /// Wait until every submitted task has completed.
    ///
    /// [`Error::TasksFailed`] when tasks failed or were cancelled since the previous call
    /// (whether or not their handles reported it too): the count, and the first failure.
    /// The record is then cleared, so each failure is reported once here.
    pub fn wait_for_all(&self) -> Result<()> {
        self.inner.wait_for_all()
    }

    /// Declare tag `t` done from the application (StarPU's `starpu_tag_notify_from_apps`).
    pub fn tag_notify(&self, t: crate::task::Tag) -> Result<()> {
        let ready = self.inner.tags.notify(t)?;
        for r in ready {
            self.inner.make_ready(r, None, true);
        }
        Ok(())
    }

    /// Forget a completed tag so that it can be reused.
    pub fn tag_remove(&self, t: crate::task::Tag) -> Result<()> {
        self.inner.tags.remove(t)
    }

    /// The handle registered at host address `addr`, or whose data contains it.
    pub fn lookup(&self, addr: usize) -> Option<DataHandle> {
        self.inner.registry.exact(addr).or_else(|| self.inner.registry.containing(addr))
    }

    /// A per-worker and per-node summary (what `WEFT_STATS=1` prints at shutdown): tasks,
    /// jobs, busy and idle time per worker (and a device driver's launches: its kernels); per model and kind of worker, the mean
    /// predicted and measured durations; bytes moved per pair of memory nodes.
    pub fn stats_report(&self) -> String {
        let inner = &self.inner;
        let wall = inner.epoch.elapsed().as_secs_f64();
        let mut s = format!("policy {}, {:.3} s since start\n", inner.policy.name(), wall);
        for (w, st) in inner.workers.iter().zip(&inner.stats) {
            let busy = st.busy_ns.load(Ordering::Relaxed) as f64 / 1e9;
            s += &format!(
                "worker {:>2} {:<8} node {} tasks {:>8} jobs {:>8} deferred {:>6} busy {:>8.3} s idle {:>8.3} s",
                w.id,
                w.name,
                w.node,
                st.tasks.load(Ordering::Relaxed),
                st.jobs.load(Ordering::Relaxed),
                st.deferred.load(Ordering::Relaxed),
                busy,
                (wall - busy).max(0.0),
            );
            // A device's kernels, and its memory node's traffic (its node line below).
            if w.arch != Arch::Cpu {
                s += &format!(" launches {:>8}", st.launches.load(Ordering::Relaxed));
            }
            s += "\n";
        }
        for p in lock(&inner.perf_stats).iter() {
            let mean = |sum: f64, n: u64| if n == 0 { 0.0 } else { sum / n as f64 };
            s += &format!(
                "model {} on {}: {} measured, mean {:.1} us; {} predicted: mean predicted {:.1} us, measured {:.1} us, mean abs error {:.1}%",
                p.model,
                p.arch,
                p.measured,
                mean(p.sum_measured, p.measured),
                p.predicted,
                mean(p.sum_pred, p.predicted),
                mean(p.sum_pred_measured, p.predicted),
                100.0 * mean(p.sum_abs_err, p.predicted),
            );
            if p.warm_ups > 0 {
                // A first task on a worker, predicted: left out above, and shown.
                let n = p.predicted + p.warm_ups;
                s += &format!(
                    "; {} warm-ups left out (mean abs error {:.1}%; {:.1}% with them)",
                    p.warm_ups,
                    100.0 * mean(p.sum_abs_err_warm_ups, p.warm_ups),
                    100.0 * mean(p.sum_abs_err + p.sum_abs_err_warm_ups, n),
                );
            }
            s += "\n";
        }
        let other = (inner.other.tasks.load(Ordering::Relaxed), inner.other.jobs.load(Ordering::Relaxed));
        if other != (0, 0) {
            s += &format!("{:<26}tasks {:>8} jobs {:>8}\n", "other threads", other.0, other.1);
        }
        for n in inner.nodes.iter() {
            s += &format!(
                "node {} {:<5} used {} B, received {} B, evictions {}\n",
                n.id,
                n.device.name(),
                n.used(),
                n.bytes_in(),
                n.evictions()
            );
        }
        for dst in inner.nodes.iter() {
            for src in inner.nodes.iter().filter(|src| src.id != dst.id) {
                let b = dst.bytes_from(src.id);
                if b > 0 {
                    s += &format!("bytes node {} -> node {}: {}\n", src.id, dst.id, b);
                }
            }
        }
        for d in &inner.null_devices {
            s += &format!("device {}: {} B copied, {} B allocated\n", d.name(), d.copied(), d.allocated());
        }
        if let Some(m) = &inner.models {
            if let Some(p) = &m.prefetch {
                s += &format!("prefetched {} B ahead of their tasks\n", p.bytes.load(Ordering::Relaxed));
            }
            s += &m.bus.report();
        }
        s
    }

    /// The performance model of `codelet` as this runtime keeps it (its file under
    /// `$WEFT_HOME/models`), if the codelet has one.
    pub fn model(&self, codelet: &crate::task::Codelet) -> Option<Arc<crate::perfmodel::ModelHandle>> {
        codelet.model_handle(self.inner.model_dir.as_deref(), self.inner.config.calibrate)
    }

    /// Bytes moved from memory node `src` to node `dst` so far.
    pub fn bytes_moved(&self, src: usize, dst: usize) -> u64 {
        self.inner.nodes.get(dst).map_or(0, |n| n.bytes_from(src))
    }

    /// Run `f(arg)` on CPU worker `w`, before the tasks it has not started yet: how front ends
    /// whose work comes as threads (OpenMP teams) borrow the runtime's workers. The job may
    /// run as long as it needs; meanwhile the worker runs no tasks except through
    /// [`Runtime::help`]. Jobs posted to one worker run in order.
    pub fn post_job(&self, w: usize, f: crate::worker::jobs::JobFn, arg: usize) -> Result<()> {
        match self.inner.workers.get(w) {
            Some(i) if i.arch == Arch::Cpu => {}
            Some(i) => {
                return Err(Error::Unsupported(format!("worker {w} ({}) is not a CPU worker: jobs run on CPU workers only", i.name)));
            }
            None => return Err(Error::Unsupported(format!("no worker {w}: the runtime has {}", self.inner.workers.len()))),
        }
        self.inner.jobs.post(w, f, arg);
        if worker::current(self.inner.id) != Some(w) {
            self.inner.sleep.wake(Target::Worker(w));
        }
        Ok(())
    }

    /// The OpenCL devices the runtime drives, with their driver workers (for `on_worker`).
    #[cfg(feature = "opencl")]
    pub fn opencl_devices(&self) -> Vec<(usize, Arc<weft_vendors::opencl::OpenClDevice>)> {
        let opencl = |b: &Option<Box<dyn crate::backend::KernelBackend>>| {
            b.as_ref().and_then(|b| b.as_any().downcast_ref::<crate::backend::opencl::OpenClBackend>()).map(|b| b.dev.clone())
        };
        self.inner.backends.iter().enumerate().filter_map(|(w, b)| opencl(b).map(|d| (w, d))).collect()
    }

    /// The worker the calling thread is, if it is one of this runtime's.
    pub fn current_worker(&self) -> Option<usize> {
        worker::current(self.inner.id)
    }

    /// Where the calling thread's work counts in the statistics (`WEFT_STATS`): its worker's
    /// line, or, for a thread that is not a worker of this runtime, the "other threads" line.
    /// A front end that counts often (an OpenMP task at a time) looks it up once per thread
    /// and keeps it; it is meant for the calling thread only.
    pub fn counter(&self) -> Counter<'_> {
        Counter(match worker::current(self.inner.id) {
            Some(w) => &self.inner.stats[w],
            None => &self.inner.other,
        })
    }

    /// [`Counter::task`] on the calling thread's [`Runtime::counter`].
    pub fn count_task(&self) {
        self.counter().task();
    }

    /// [`Counter::job`] on the calling thread's [`Runtime::counter`].
    pub fn count_job(&self) {
        self.counter().job();
    }

    /// Whether the runtime records a trace (`WEFT_TRACE`): a front end then times the work
    /// it runs itself and records it with [`Runtime::trace_span`].
    pub fn tracing(&self) -> bool {
        self.inner.trace.is_some()
    }

    /// Record in the trace a span of work named `name` that the calling thread ran from
    /// `start` until now, outside core's tasks (an OpenMP team member's share of a parallel
    /// region): on its worker's track, or "other threads". Nothing when not tracing.
    pub fn trace_span(&self, name: &'static str, start: std::time::Instant) {
        self.trace_front_end(&crate::FrontSpan { name, ..Default::default() }, start);
    }

    /// [`Runtime::trace_span`] with what the span says beyond its name: a task's body
    /// (counted as a task, with its dependencies' arrows when `core_task` is given), its
    /// source location.
    pub fn trace_front_end(&self, span: &crate::FrontSpan, start: std::time::Instant) {
        if let Some(tr) = &self.inner.trace {
            tr.span(worker::current(self.inner.id), span, start, std::time::Instant::now());
        }
    }

    /// Run one ready task on the calling worker, if the calling thread is a worker of this
    /// runtime and one is ready for it: what a thread waiting inside a job (an OpenMP barrier
    /// or taskwait) does meanwhile. Returns whether a task ran.
    pub fn help(&self) -> bool {
        let Some(w) = worker::current(self.inner.id) else { return false };
        match self.inner.pop(w) {
            Some(t) => {
                self.inner.execute(w, t);
                true
            }
            None => false,
        }
    }

    /// Write the execution trace recorded so far to `Config::trace` (`WEFT_TRACE`), if the
    /// runtime records one: what shutdown does, and the C API's exit hook for the front
    /// ends' shared runtime, which is never shut down. A path that cannot be written is a
    /// warning on stderr.
    pub fn write_trace(&self) {
        if let Some(t) = &self.inner.trace {
            t.write();
        }
    }

    pub(crate) fn inner(&self) -> &Arc<RuntimeInner> {
        &self.inner
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Failed tasks were the application's to see (their handles, `wait_for_all`); only
        // tasks that can never run hold up the shutdown.
        if let Err(e @ Error::Stalled(_)) = self.inner.wait_for_all() {
            eprintln!("weft: shutting down with unfinished tasks: {e}");
            for t in self.inner.tags.cancel_unbound() {
                self.inner.make_ready(t, None, true);
            }
            let _ = self.inner.wait_for_all();
        }
        if self.inner.config.stats {
            eprint!("{}", self.stats_report());
        }
        crate::perfmodel::save_all();
        self.inner.shutdown.store(true, Ordering::SeqCst);
        self.inner.sleep.wake_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // After the workers stopped: their last idle spans are in.
        self.write_trace();
    }
}

impl RuntimeInner {
    fn new_task(&self, kind: TaskKind, b: &mut TaskBuilder, arch_mask: u8) -> TaskRef {
        let has_commute = b.accesses.iter().any(|a| a.mode == AccessMode::Commute);
        let flat = b.accesses.iter().all(|a| !a.handle.0.tree.partitioned.load(Ordering::Acquire));
        let follow = b.follow && b.worker.is_none() && matches!(kind, TaskKind::Codelet(_));
        let t = TaskInner {
            id: self.next_task.fetch_add(1, Ordering::Relaxed),
            kind,
            accesses: std::mem::take(&mut b.accesses),
            args: std::mem::take(&mut b.args),
            payload: b.payload.take(),
            priority: b.priority,
            tag: b.tag,
            dep_tags: std::mem::take(&mut b.dep_tags),
            arch_mask,
            worker: b.worker,
            follow,
            placed: AtomicUsize::new(usize::MAX),
            has_commute,
            flat,
            has_callback: b.callback.is_some(),
            callback: Mutex::new(b.callback.take()),
            pending: AtomicUsize::new(1),
            done: crate::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(TaskState {
                done: false,
                waiters: 0,
                result: None,
                successors: SmallVec::new(),
                launched_on: None,
                back_to_back: false,
            }),
            cv: Condvar::new(),
            poison: OnceLock::new(),
            perf_key: b.perf_key.take().map(OnceLock::from).unwrap_or_default(),
        };
        // A completed task nobody else refers to (no successor, handle list or waiter): its
        // memory, with no allocation (and no free on the thread that completed it).
        if let Some(crate::task::Spent(mut old)) = b.reuse.take()
            && let Some(slot) = Arc::get_mut(&mut old)
        {
            *slot = t;
            return old;
        }
        Arc::new(t)
    }

    /// Validate, register dependencies and make the task ready when it has none left.
    /// `special`: an acquisition or an external task (their accesses need no codelet; they are
    /// never scheduled on a worker).
    pub(crate) fn submit_task(&self, b: &mut TaskBuilder, special: Option<TaskKind>) -> Result<TaskRef> {
        if self.shutdown.load(Ordering::Relaxed) {
            return Err(Error::ShutDown);
        }
        let (kind, mut mask) = match (&b.codelet, special) {
            (_, Some(k)) => {
                b.worker = None;
                (k, self.present_archs)
            }
            (Some(c), None) => (TaskKind::Codelet(c.clone()), b.validate(self.present_archs)?),
            (None, None) => (TaskKind::Empty, b.validate(self.present_archs)?),
        };
        if self.strip_opencl && b.worker.is_none() && mask & Arch::Cpu.bit() != 0 {
            mask &= !Arch::OpenCl.bit();
        }
        if b.accesses.iter().any(|a| a.mode == AccessMode::Redux) {
            // REDUX contributions live in host memory: only host-code workers take part.
            mask &= !(Arch::OpenCl.bit() | Arch::Cuda.bit());
            if mask == 0 {
                let name = b.codelet.as_ref().map_or("?", |c| c.name()).to_string();
                return Err(Error::NoImplementation(format!("{name} (REDUX accesses need a CPU or null-device implementation)")));
            }
        }
        if let Some(w) = b.worker {
            // The chosen worker must exist and have an implementation.
            match self.workers.get(w) {
                None => return Err(Error::Config(format!("no worker {w}: this runtime has {}", self.workers.len()))),
                Some(info) if mask & info.arch.bit() == 0 => {
                    let name = b.codelet.as_ref().map_or("?", |c| c.name()).to_string();
                    return Err(Error::NoImplementation(format!("{name} on worker {w} ({})", info.arch.name())));
                }
                _ => mask = self.workers[w].arch.bit(),
            }
        }
        if let Some(t) = b.tag
            && b.dep_tags.contains(&t)
        {
            return Err(Error::DependencyCycle(t));
        }
        self.own_handles(b.accesses.iter().map(|a| &a.handle))?;
        let task = self.new_task(kind, b, mask);
        // Counted before any dependency can release the task, so wait_for_all cannot miss it.
        self.inflight.fetch_add(1, Ordering::AcqRel);
        let extra = match self.register(&task, b) {
            Ok(extra) => extra,
            Err(e) => {
                self.finish_inflight();
                return Err(e);
            }
        };
        for r in extra {
            self.release_submission(r);
        }
        self.release_submission(task.clone());
        Ok(task)
    }

    fn submit_external(&self, b: TaskBuilder, ready: Arc<dyn crate::task::ExternalWork>) -> Result<TaskRef> {
        if let Some(bad) = b.accesses.iter().find(|a| matches!(a.mode, AccessMode::Redux | AccessMode::Scratch)) {
            return Err(Error::Unsupported(format!("{:?} access in an external task (it holds no data)", bad.mode)));
        }
        let mut b = b;
        self.submit_task(&mut b, Some(TaskKind::External(Mutex::new(Some(ready)))))
    }

    /// Drop the submission guard of `pending`.
    fn release_submission(&self, t: TaskRef) {
        if t.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.make_ready(t, worker::current(self.id), true);
        }
    }

    /// Register `task`'s dependencies. Returns internal tasks (reductions) created on the way,
    /// still holding their submission guard.
    fn register(&self, task: &TaskRef, b: &TaskBuilder) -> Result<Vec<TaskRef>> {
        let mut extra = Vec::new();
        let mut preds: deps::Preds = b.after.iter().cloned().collect();
        if task.accesses.is_empty() {
            if task.tag.is_some() {
                self.bind_tag(task, &preds)?;
            }
        } else {
            let mut trees = deps::LockedTrees::new(task.accesses.iter().map(|a| &a.handle));
            // Validate everything before changing anything.
            for a in &task.accesses {
                let e = &trees.of(&a.handle).entries[a.handle.0.idx];
                if !e.alive {
                    return Err(Error::Unregistered(a.handle.id()));
                }
                if matches!(a.mode, AccessMode::Redux | AccessMode::Commute) && (e.parent.is_some() || !e.children.is_empty()) {
                    return Err(Error::Unsupported(format!("{:?} access to a partitioned handle or a child", a.mode)));
                }
                if a.mode == AccessMode::Redux && e.redux.is_none() {
                    return Err(Error::NoReductionMethods(a.handle.id()));
                }
                if a.mode == AccessMode::Redux && self.present_archs & Arch::Cpu.bit() == 0 {
                    return Err(Error::Unsupported("REDUX needs a CPU worker for its reduction".into()));
                }
            }
            if task.tag.is_some() {
                // Predecessors without changing state: a tag cycle must leave nothing behind.
                let mut peek = preds.clone();
                for a in &task.accesses {
                    let st = trees.of(&a.handle);
                    let idx = a.handle.0.idx;
                    if st.entries[idx].deps.phase == crate::data::Phase::Redux && a.mode != AccessMode::Redux {
                        peek.extend(deps::live(&st.entries[idx].deps.cur));
                    }
                    deps::access_preds(st, idx, a.mode, None, &mut peek);
                }
                self.bind_tag(task, &peek)?;
            }
            for a in &task.accesses {
                let st = trees.of(&a.handle);
                let idx = a.handle.0.idx;
                if st.entries[idx].deps.phase == crate::data::Phase::Redux && a.mode != AccessMode::Redux {
                    // The REDUX phase ends: reduce its contributions before this access.
                    let mut rb = TaskBuilder::empty().access(&a.handle, AccessMode::RW);
                    let red = self.new_task(TaskKind::Reduction, &mut rb, Arch::Cpu.bit());
                    self.inflight.fetch_add(1, Ordering::AcqRel);
                    let mut rp = deps::Preds::new();
                    red.accesses[0].set_slot(deps::access_preds(st, idx, AccessMode::RW, Some(&red), &mut rp));
                    for p in rp {
                        if p.add_successor(&red)
                            && let Some(tr) = &self.trace
                        {
                            tr.dependency(p.id, red.id);
                        }
                    }
                    extra.push(red);
                }
                a.set_slot(deps::access_preds(st, idx, a.mode, Some(task), &mut preds));
            }
        }
        // One edge per predecessor: an explicit dependency that is also a data dependency (an
        // in-order queue's previous command writing the same buffer) would otherwise lock the
        // predecessor, count and release the successor twice.
        if preds.len() > 1 {
            preds.sort_unstable_by_key(|p| std::ptr::from_ref::<TaskInner>(p) as usize);
            preds.dedup_by(|a, b| Arc::ptr_eq(a, b));
        }
        for p in &preds {
            if p.add_successor(task)
                && let Some(tr) = &self.trace
            {
                tr.dependency(p.id, task.id);
            }
        }
        for &t in &task.dep_tags {
            self.tags.depend(task, t);
        }
        Ok(extra)
    }

    /// Every one of `handles` is one of this runtime's.
    fn own_handles<'a>(&self, mut handles: impl Iterator<Item = &'a DataHandle>) -> Result<()> {
        if handles.any(|h| h.0.rt.id != self.id) {
            return Err(Error::InvalidData("handle belongs to another runtime".into()));
        }
        Ok(())
    }

    /// See [`Runtime::predecessors`].
    fn predecessors(&self, b: &TaskBuilder) -> Result<crate::task::Predecessors> {
        if b.tag.is_some() || !b.dep_tags.is_empty() {
            return Err(Error::Unsupported("a tagged task's predecessors need its submission".into()));
        }
        let accesses: SmallVec<[(&DataHandle, AccessMode); 4]> = b.accesses.iter().map(|a| (&a.handle, a.mode)).collect();
        let mut preds: deps::Preds = b.after.iter().filter(|t| !t.is_done()).cloned().collect();
        self.access_predecessors(&accesses, &mut preds)?;
        Ok(crate::task::Predecessors(preds))
    }

    /// See [`Runtime::predecessors_of`]; adds them to `preds`.
    fn access_predecessors(&self, accesses: &[(&DataHandle, AccessMode)], preds: &mut deps::Preds) -> Result<()> {
        if let Some((_, bad)) = accesses.iter().find(|(_, m)| matches!(m, AccessMode::Commute | AccessMode::Redux)) {
            return Err(Error::Unsupported(format!("{bad:?} accesses are ordered by their submission only")));
        }
        self.own_handles(accesses.iter().map(|(h, _)| *h))?;
        let mut trees = deps::LockedTrees::new(accesses.iter().map(|(h, _)| *h));
        for &(h, mode) in accesses {
            let st = trees.of(h);
            let idx = h.0.idx;
            if !st.entries[idx].alive {
                return Err(Error::Unregistered(h.id()));
            }
            if st.entries[idx].deps.phase == crate::data::Phase::Redux {
                return Err(Error::Unsupported("a handle in its REDUX phase is reduced by a submitted task first".into()));
            }
            deps::access_preds(st, idx, mode, None, preds);
        }
        Ok(())
    }

    /// Give the task its tag. `preds` are its data and explicit predecessors; the carriers of
    /// the tags it waits on are predecessors too, for the cycle check when one is possible.
    fn bind_tag(&self, task: &TaskRef, preds: &[TaskRef]) -> Result<()> {
        let t = task.tag.expect("invariant: called for tagged tasks");
        match self.tags.bind(task, t, preds, false) {
            Ok(()) => return Ok(()),
            Err(BindError::Fail(e)) => return Err(e),
            Err(BindError::NeedsCycleCheck) => {}
        }
        let mut all = preds.to_vec();
        all.extend(task.dep_tags.iter().filter_map(|&d| self.tags.carrier(d)));
        match self.tags.bind(task, t, &all, true) {
            Ok(()) => Ok(()),
            Err(BindError::Fail(e)) => Err(e),
            Err(BindError::NeedsCycleCheck) => unreachable!("checked bind never asks again"),
        }
    }

    /// All dependencies of `t` are met: queue it (or hand it to its waiting application thread).
    pub(crate) fn make_ready(&self, t: TaskRef, from: Option<usize>, wake: bool) {
        if let TaskKind::Acquire(sig) = &t.kind {
            let armed = {
                let mut then = lock(&sig.then);
                match std::mem::replace(&mut *then, crate::task::Then::Fired) {
                    crate::task::Then::Armed(f) => Some(f),
                    _ => None,
                }
            };
            match armed {
                // An asynchronous acquisition: its front end is told on this thread.
                Some(f) => {
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
                        eprintln!("weft: an asynchronous acquisition's callback panicked");
                    }
                }
                None => {
                    *lock(&sig.ready) = true;
                    sig.cv.notify_all();
                }
            }
            return;
        }
        if t.has_commute && t.poison.get().is_none() {
            let mut arb = lock(&self.arbiter);
            if commute_ids(&t).any(|id| arb.busy.contains(&id)) {
                arb.waiting.push(t);
                return;
            }
            arb.busy.extend(commute_ids(&t));
        }
        self.dispatch(t, from, wake);
    }

    /// Queue a ready task (past commute arbitration), or hand an external one to its front end.
    fn dispatch(&self, t: TaskRef, from: Option<usize>, wake: bool) {
        if let TaskKind::External(f) = &t.kind {
            let f = lock(f).take();
            if let Some(f) = f {
                let token = crate::task::External(t.clone());
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || f.ready(token))).is_err() {
                    eprintln!("weft: the ready function of external task {} panicked; completing it", t.id);
                    self.complete(&t, Ok(()), from);
                }
            }
            return;
        }
        // Not `wake`: the pushing worker looks for work next, so it needs no help if it can run `t`.
        let (k, queue) = match t.worker {
            Some(k) => (Some(k), &self.pinned),
            None if t.follow => (self.place_follower(&t), &self.followers),
            None => (None, &self.pinned),
        };
        if let Some(k) = k {
            queue[k].push(t);
            if from != Some(k) {
                self.sleep.wake(Target::Worker(k));
            }
            return;
        }
        let self_serve = !wake && from.is_some_and(|w| t.arch_mask & self.workers[w].arch.bit() != 0);
        let target = self.policy.push(t, from);
        match target {
            Target::Worker(k) if Some(k) == from => {}
            Target::Any(_) if self_serve => {}
            _ => self.sleep.wake(target),
        }
    }

    /// The device driver a ready follower (`TaskBuilder::set_follow`) runs on: where it was
    /// placed, else where it is expected to finish first. A driver's expected end is when
    /// its oldest task in flight got the device plus, for each task in flight or pinned to
    /// it, the follower's own prediction there (its in-order neighbours are mostly its
    /// like), then the follower's; without a calibrated prediction everywhere, the fewest
    /// such tasks, then the oldest start. Not the policy's queues: the other drivers'
    /// in-order queues (pinned tasks) are what it competes with, and the policy never
    /// sees those (issue 33: a thread per device of the platform). `None`: no device driver
    /// can run it, and the policy places it.
    fn place_follower(&self, t: &TaskInner) -> Option<usize> {
        if let Some(w) = t.placed_on() {
            return Some(w);
        }
        let now = self.epoch.elapsed().as_nanos() as f64 / 1e3;
        let model = match &t.kind {
            TaskKind::Codelet(c) => c.model_handle(self.model_dir.as_deref(), self.config.calibrate),
            _ => None,
        };
        let (fp, size) = t.perf_key();
        let mut best: Option<((f64, f64), usize)> = None;
        let mut best_load: Option<((usize, u64), usize)> = None;
        let mut calibrated = model.is_some();
        for (k, info) in self.workers.iter().enumerate() {
            if self.backends[k].is_none() || t.arch_mask & info.arch.bit() == 0 || info.shares_cores && t.arch_mask & Arch::Cpu.bit() != 0 {
                continue;
            }
            let load = self.stats[k].inflight.load(Ordering::Relaxed) + self.pinned[k].len() + self.followers[k].len();
            let head = self.stats[k].head_ns.load(Ordering::Relaxed);
            if best_load.is_none_or(|(l, _)| (load, head) < l) {
                best_load = Some(((load, head), k));
            }
            let p = match model.as_ref().map(|m| m.predict(&info.perf_arch, fp, size)) {
                Some(crate::perfmodel::Prediction::Calibrated(p)) => p,
                _ => {
                    calibrated = false;
                    continue;
                }
            };
            let start = if load == 0 { now } else { (head as f64 / 1e3 + load as f64 * p).max(now) };
            if best.is_none_or(|(e, _)| (start + p, load as f64) < e) {
                best = Some(((start + p, load as f64), k));
            }
        }
        let chosen = match (calibrated, best, best_load) {
            (true, Some((_, k)), _) | (_, _, Some((_, k))) => k,
            _ => return None,
        };
        // Another placement may have won meanwhile (a predecessor launching): keep its choice.
        Some(if t.place_on(chosen) { chosen } else { t.placed_on().unwrap_or(chosen) })
    }

    /// Run `t` on worker `w`.
    pub(crate) fn execute(&self, w: usize, t: TaskRef) {
        let stats = &self.stats[w];
        stats.busy.store(true, Ordering::Relaxed);
        // Two clock reads per task are a tenth of a tiny task's cost: only when asked.
        // Traced: tasks a device driver runs here (poisoned, no codelet) are left out of its
        // track, which shows its device's kernels (`finish_in_flight`).
        let trace = self.trace.as_deref().filter(|_| self.backends[w].is_none());
        // One branch when neither is on. The trace has its own clock (cheaper: a TSC read),
        // apart from the statistics' instants.
        let clocks =
            (self.config.stats || trace.is_some()).then(|| (self.config.stats.then(std::time::Instant::now), trace.map(|tr| tr.now())));
        let mut measured = None;
        let result = match t.poison.get() {
            Some(e) => Err((**e).clone()),
            None => match &t.kind {
                TaskKind::Codelet(c) if self.backends[w].is_some() => self.run_on_device(w, &t, c),
                TaskKind::Codelet(c) => self.run_codelet(w, &t, c, &mut measured),
                TaskKind::Reduction => self.run_reduction(w, &t),
                TaskKind::Empty => Ok(()),
                TaskKind::Acquire(_) | TaskKind::External(_) => unreachable!("acquisitions and external tasks are not scheduled"),
            },
        };
        stats.tasks.fetch_add(1, Ordering::Relaxed);
        if let Some((start, traced_from)) = clocks {
            if let Some(s) = start {
                stats.busy_ns.fetch_add(s.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            if let (Some(tr), Some(from)) = (trace, traced_from) {
                self.trace_task(tr, w, &t, crate::trace::Stamps::Ticks(from, tr.now()), measured);
            }
        }
        if t.worker.is_none() && t.placed_on().is_none() {
            self.policy.done(w, &t);
        }
        self.complete(&t, result, Some(w));
        stats.busy.store(false, Ordering::Relaxed);
    }

    /// Record `t`, run on worker `w` from `start` to `end`, in trace `tr`; `measured`: its
    /// implementation's (or kernel's) duration, µs. Cold and out of line: the untraced
    /// path through `execute` stays as it was.
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_task(&self, tr: &crate::trace::Tracer, w: usize, t: &TaskInner, at: crate::trace::Stamps, measured: Option<f64>) {
        // The footprint costs a lock per handle the first time: only for a codelet with a
        // model (whose policy or sampling computes it anyway), or if something already did.
        let mut footprint = t.perf_key.get().map(|k| k.0);
        let (codelet, predicted) = match &t.kind {
            TaskKind::Codelet(c) => {
                if c.model.is_some() {
                    footprint = Some(t.perf_key().0);
                }
                // (Only a codelet with a model has a handle: the lookup is skipped without.)
                let predicted =
                    c.model.as_ref().and_then(|_| c.model_handle(self.model_dir.as_deref(), self.config.calibrate)).and_then(|m| {
                        let (fp, size) = t.perf_key();
                        match m.predict(&self.workers[w].perf_arch, fp, size) {
                            crate::perfmodel::Prediction::Calibrated(p) => Some(p),
                            crate::perfmodel::Prediction::Uncalibrated => None,
                        }
                    });
                (c.id, predicted)
            }
            _ => (0, None),
        };
        let e = crate::trace::TaskEvent { task: t.id, codelet, name: t.name(), footprint, predicted_us: predicted, measured_us: measured };
        tr.task(Some(w), at, &e, t.accesses.iter().map(|a| a.handle.id()));
    }

    /// The model of `t`'s codelet, if it has one and wants a sample of `t` on worker `w`.
    pub(crate) fn sampling(&self, w: usize, t: &TaskInner) -> Option<Arc<crate::perfmodel::ModelHandle>> {
        let TaskKind::Codelet(c) = &t.kind else { return None };
        let m = c.model_handle(self.model_dir.as_deref(), self.config.calibrate)?;
        let (fp, _) = t.perf_key();
        // Wanted for the model, or for the statistics of its predictions.
        (self.config.stats || m.wants_sample(&self.workers[w].perf_arch, fp)).then_some(m)
    }

    /// `t` took `us` µs on worker `w`: feed its model and the statistics.
    ///
    /// A model's first measured task on each worker is a warm-up and does not reach the
    /// model: its code, and the tile it reads, are cold then. Cholesky's tile kernels ran
    /// 20-45% longer the first time on each CPU worker than their medians (2048/256, 2 CPU
    /// workers), and POTRF has 8 tasks a run: two warm-ups put 7% into its mean error.
    /// On a device the task measured after a warm-up does not reach its model either: a
    /// device runs its tasks in flight one after another and a kernel's first launch
    /// builds it there, and that one-time cost can land on the task behind it (on a PoCL
    /// device the first SYRK's 2-4 ms showed up in the POTRF after it, 5 times its length).
    pub(crate) fn measured(&self, w: usize, t: &TaskInner, m: &crate::perfmodel::ModelHandle, us: f64) {
        let arch = &self.workers[w].perf_arch;
        let (fp, size) = t.perf_key();
        let pred = match m.predict(arch, fp, size) {
            crate::perfmodel::Prediction::Calibrated(p) => Some(p),
            crate::perfmodel::Prediction::Uncalibrated => None,
        };
        let warm_up = {
            // Per model, whichever kind: the handles of its kinds share one warm-up.
            let key = m.id();
            let mut seen = lock(&self.stats[w].warmed);
            let first = !seen.contains(&key);
            if first {
                seen.push(key);
            }
            // Relaxed: read and written by the worker's own driver thread only.
            let after = self.workers[w].arch != Arch::Cpu && self.stats[w].after_warm_up.swap(first, Ordering::Relaxed);
            first || after
        };
        if !warm_up {
            m.record(arch, fp, size, us);
        }
        if !self.config.stats {
            return;
        }
        let mut ps = lock(&self.perf_stats);
        let i = match ps.iter().position(|p| p.model == m.name() && p.arch == *arch) {
            Some(i) => i,
            None => {
                ps.push(PerfStat { model: m.name().to_string(), arch: arch.clone(), ..PerfStat::default() });
                ps.len() - 1
            }
        };
        let p = &mut ps[i];
        p.measured += 1;
        p.sum_measured += us;
        if let Some(pred) = pred {
            let err = (pred - us).abs() / us.max(1e-3);
            if warm_up {
                p.warm_ups += 1;
                p.sum_abs_err_warm_ups += err;
            } else {
                p.predicted += 1;
                p.sum_pred += pred;
                p.sum_pred_measured += us;
                p.sum_abs_err += err;
            }
        }
    }

    /// `measured`: set to the implementation's duration (µs) when it was timed.
    fn run_codelet(&self, w: usize, t: &TaskRef, c: &crate::task::Codelet, measured: &mut Option<f64>) -> Result<(), TaskError> {
        let info = &self.workers[w];
        let f = c.implementation(info.arch).expect("invariant: scheduled on a worker with an implementation");
        let views: SmallVec<[View; 3]> = SmallVec::new();
        let scratch: SmallVec<[(usize, weft_vendors::Buffer); 1]> = SmallVec::new();
        let mut state = (views, scratch);
        let acquired = retry_while_busy(
            &mut state,
            |(views, scratch)| self.acquire_all(w, t, views, scratch),
            |(views, scratch)| {
                self.release_all(w, t, views.len(), std::mem::take(scratch));
                views.clear();
            },
        );
        let (views, scratch) = state;
        let result = match acquired {
            Err(e) => Err(TaskError::Data(e.to_string())),
            Ok(()) => {
                let ctx = TaskContext { views: &views, args: &t.args, worker: w, arch: info.arch };
                let model = self.sampling(w, t);
                let slow = info.arch == Arch::Null && self.config.null_slowdown > 1.0;
                // Traced, the implementation of a codelet with a model is timed apart from its
                // data's acquisition (`measured_us`).
                let traced = self.trace.is_some() && c.model.is_some();
                let start = (model.is_some() || slow || traced).then(std::time::Instant::now);
                let r = call_implementation(f, &ctx, c.name());
                if let Some(start) = start {
                    if slow {
                        std::thread::sleep(start.elapsed().mul_f64(self.config.null_slowdown - 1.0));
                    }
                    let us = start.elapsed().as_secs_f64() * 1e6;
                    *measured = Some(us);
                    if let Some(m) = model
                        && r.is_ok()
                    {
                        self.measured(w, t, &m, us);
                    }
                }
                r
            }
        };
        self.release_all(w, t, views.len(), scratch);
        result
    }

    /// Acquire `t`'s buffers on worker `w`'s node, in access order; on error, what was
    /// acquired is released by `release_all` (it counts `views`).
    fn acquire_all(
        &self,
        w: usize,
        t: &TaskRef,
        views: &mut SmallVec<[View; 3]>,
        scratch: &mut SmallVec<[(usize, weft_vendors::Buffer); 1]>,
    ) -> Result<()> {
        let node = self.workers[w].node;
        for a in &t.accesses {
            let h = &a.handle.0;
            let view = match a.mode {
                AccessMode::Scratch => {
                    let shape = h.tree.lock().entries[h.idx].shape;
                    let len = shape.span(shape.packed());
                    let buf = self.nodes[node].alloc_raw(len)?;
                    scratch.push((node, buf));
                    let p = self.nodes[node]
                        .device
                        .host_ptr(buf)
                        .ok_or_else(|| Error::Unsupported("scratch on a device CPU code cannot address".into()))?;
                    crate::data::handle::view(p, shape, shape.packed(), a.mode)
                }
                AccessMode::Redux => {
                    let shape = h.tree.lock().entries[h.idx].shape;
                    let p = crate::data::handle::redux_contribution(self, h, w)?;
                    crate::data::handle::view(p, shape, shape.packed(), a.mode)
                }
                mode => crate::data::handle::acquire_view(h, node, mode)?,
            };
            views.push(view);
        }
        Ok(())
    }

    fn release_all(&self, w: usize, t: &TaskRef, n: usize, scratch: SmallVec<[(usize, weft_vendors::Buffer); 1]>) {
        let node = self.workers[w].node;
        for a in t.accesses.iter().take(n) {
            if matches!(a.mode, AccessMode::Scratch | AccessMode::Redux) {
                continue;
            }
            a.handle.0.tree.lock().release(a.handle.0.idx, node);
        }
        for (n, b) in scratch {
            self.nodes[n].release(b);
        }
    }

    fn run_reduction(&self, w: usize, t: &TaskRef) -> Result<(), TaskError> {
        let h = &t.accesses[0].handle.0;
        crate::data::handle::reduce(self, h, w).map_err(|e| TaskError::Data(e.to_string()))
    }

    /// `t` finished with `result` (on worker `from`, or on an application thread).
    pub(crate) fn complete(&self, t: &TaskRef, result: Result<(), TaskError>, from: Option<usize>) {
        if let Err(e) = &result {
            lock(&self.failures).record(e);
        }
        if t.has_commute && t.poison.get().is_none() {
            let ready = {
                let mut arb = lock(&self.arbiter);
                for id in commute_ids(t) {
                    arb.busy.remove(&id);
                }
                let mut ready = Vec::new();
                let mut i = 0;
                while i < arb.waiting.len() {
                    let cand = &arb.waiting[i];
                    if commute_ids(cand).all(|id| !arb.busy.contains(&id)) {
                        let cand = arb.waiting.remove(i);
                        let ids: Vec<u64> = commute_ids(&cand).collect();
                        arb.busy.extend(ids);
                        ready.push(cand);
                    } else {
                        i += 1;
                    }
                }
                ready
            };
            for r in ready {
                self.dispatch(r, from, true);
            }
        }
        if t.has_callback
            && let Some(cb) = lock(&t.callback).take()
        {
            let r = result.clone();
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || cb(r))).is_err() {
                eprintln!("weft: the completion callback of task '{}' panicked", t.name());
            }
        }
        if let Some(p) = &t.payload
            && std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.completed(&result))).is_err()
        {
            eprintln!("weft: the payload of task '{}' panicked on completion", t.name());
        }
        let (succs, waiters) = {
            let mut st = lock(&t.state);
            st.done = true;
            // Under the lock, after `result`: `is_done` readers see the same as a locker.
            t.done.store(true, Ordering::Release);
            st.result = Some(result.clone().map_err(Box::new));
            (std::mem::take(&mut st.successors), st.waiters)
        };
        if waiters > 0 {
            t.cv.notify_all();
        }
        // Out of its handles' phase lists: only they (and a tag) hold weak references, all
        // made while it was registered, so a count of none (its handles moved on) locks
        // nothing.
        if Arc::weak_count(t) > 0 {
            for a in t.accesses.iter().filter(|a| a.mode != AccessMode::Scratch) {
                let slot = a.slot.load(Ordering::Relaxed);
                deps::forget(&mut a.handle.0.tree.lock(), a.handle.0.idx, Arc::as_ptr(t), slot);
            }
        }
        let mut first = true;
        for s in succs {
            if let Err(e) = &result {
                let _ = s.poison.set(Box::new(TaskError::Cancelled(Box::new(e.clone()))));
            }
            if s.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                // The first released successor is left for this worker: no wake-up needed.
                self.make_ready(s, from, !(first && from.is_some()));
                first = false;
            }
        }
        self.finish_inflight();
    }

    fn finish_inflight(&self) {
        if self.inflight.fetch_sub(1, Ordering::SeqCst) == 1 && self.waiting.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.wait_lock);
            self.wait_cv.notify_all();
        }
    }

    fn progress(&self) -> u64 {
        self.stats.iter().chain([&self.other]).map(|s| s.tasks.load(Ordering::Relaxed)).sum()
    }

    /// Whether the remaining tasks can never run: they wait on tags nobody carries and
    /// nothing else is going on. Checked only after a quiet period.
    fn stalled(&self, last_progress: &mut u64) -> Option<Vec<u64>> {
        let p = self.progress();
        let quiet = p == *last_progress;
        *last_progress = p;
        if !quiet
            || !self.policy.is_empty()
            || self.pinned.iter().chain(&self.followers).any(|q| !q.is_empty())
            || self.stats.iter().any(|s| s.busy.load(Ordering::Relaxed))
        {
            return None;
        }
        let tags = self.tags.unbound_with_waiters();
        if tags.is_empty() { None } else { Some(tags) }
    }

    /// Run a job posted to worker `w`, if any (counted as busy for stall detection).
    pub(crate) fn run_job(&self, w: usize) -> bool {
        if !self.jobs.has_work(w) {
            return false;
        }
        self.stats[w].busy.store(true, Ordering::Relaxed);
        let ran = self.jobs.run_one(w, &self.stats[w].jobs);
        self.stats[w].busy.store(false, Ordering::Relaxed);
        ran
    }

    /// A task for worker `w`: one submitted for it alone first, then the policy's choice.
    pub(crate) fn pop(&self, w: usize) -> Option<TaskRef> {
        if let Some(t) = self.pop_follower(w) {
            return Some(t);
        }
        if !self.pinned[w].is_empty()
            && let Some(t) = crate::sched::steal_one(&self.pinned[w])
        {
            return Some(t);
        }
        self.policy.pop(w, &|target| self.sleep.wake(target))
    }

    /// A task pinned to worker `w` (`TaskBuilder::on_worker`) or a follower placed there,
    /// if one is queued.
    pub(crate) fn pop_pinned(&self, w: usize) -> Option<TaskRef> {
        if let Some(t) = self.pop_follower(w) {
            return Some(t);
        }
        if self.pinned[w].is_empty() { None } else { crate::sched::steal_one(&self.pinned[w]) }
    }

    /// A follower placed on driver `w`: before its pinned tasks. An in-order queue on the
    /// unified device has one ready kernel at most, which waited for its predecessor's
    /// completion; behind a real queue's kernel made ready at the same moment, the unified
    /// queue lost a kernel's time at about every other step (issue 33, a thread per device
    /// of the platform: 1.77x one device with the two queues in FIFO order).
    fn pop_follower(&self, w: usize) -> Option<TaskRef> {
        if self.followers[w].is_empty() { None } else { crate::sched::steal_one(&self.followers[w]) }
    }

    pub(crate) fn wait_for_all(&self) -> Result<()> {
        if worker::current(self.id).is_some() {
            return Err(Error::WouldDeadlock);
        }
        let mut g = lock(&self.wait_lock);
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut last = u64::MAX;
        let r = loop {
            if self.inflight.load(Ordering::SeqCst) == 0 {
                break lock(&self.failures).take().map_or(Ok(()), Err);
            }
            let (ng, to) = self.wait_cv.wait_timeout(g, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner());
            g = ng;
            if to.timed_out()
                && let Some(tags) = self.stalled(&mut last)
            {
                break Err(Error::Stalled(tags));
            }
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Spin, yielding the core, until `t` completes, for at most `Config::wait_spin_us` and
    /// only while it may run on a worker that spins (a GPU's driver): never in a runtime
    /// without one, and no longer once `t` is launched on another kind. Whether `t` is done.
    /// A waiter that sleeps instead wakes tens of µs after the completion (in a VM), and a
    /// GPU's short kernels pay that on every wait (`worker/README.md`).
    pub(crate) fn spin_wait(&self, t: &TaskInner) -> bool {
        if t.is_done() {
            return true;
        }
        if self.config.wait_spin_us == 0 || !self.workers.iter().any(|w| w.spins) {
            return false;
        }
        let limit = Duration::from_micros(self.config.wait_spin_us);
        let start = std::time::Instant::now();
        for i in 1u32.. {
            std::thread::yield_now();
            if t.is_done() {
                return true;
            }
            if i.is_multiple_of(16) && (start.elapsed() >= limit || lock(&t.state).launched_on.is_some_and(|w| !self.workers[w].spins)) {
                break;
            }
        }
        false
    }

    pub(crate) fn wait_task(&self, t: &TaskRef) -> Result<()> {
        if worker::current(self.id).is_some() && !t.is_done() {
            return Err(Error::WouldDeadlock);
        }
        self.spin_wait(t);
        let mut st = lock(&t.state);
        let mut last = u64::MAX;
        loop {
            if st.done {
                return match st.result.clone().expect("invariant: done tasks have a result") {
                    Ok(()) => Ok(()),
                    Err(e) => Err(Error::Task(*e)),
                };
            }
            st.waiters += 1;
            let (ns, to) = t.cv.wait_timeout(st, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner());
            st = ns;
            st.waiters -= 1;
            if to.timed_out() {
                drop(st);
                if let Some(tags) = self.stalled(&mut last) {
                    return Err(Error::Stalled(tags));
                }
                st = lock(&t.state);
            }
        }
    }
}

/// The trace's track names of `workers`: "cpu 0", "null 1", "opencl 0 (device name)".
fn trace_tracks(workers: &[WorkerInfo]) -> Vec<crate::trace::Track> {
    let mut seen: Vec<Arch> = Vec::new();
    workers
        .iter()
        .map(|w| {
            let k = seen.iter().filter(|&&a| a == w.arch).count();
            seen.push(w.arch);
            let name = match w.perf_arch.split_once(':') {
                Some((_, dev)) => format!("{} {k} ({dev})", w.arch.name()),
                None => format!("{} {k}", w.arch.name()),
            };
            crate::trace::Track { name }
        })
        .collect()
}

/// Run `acquire` on `state` until it stops failing with `MemoryBusy` (a full memory node
/// whose replicas are in use right now), calling `undo` between attempts so that the task
/// holds nothing while it waits. Gives up as out of memory after about two seconds.
pub(crate) fn retry_while_busy<S, T>(state: &mut S, acquire: impl Fn(&mut S) -> Result<T>, undo: impl Fn(&mut S)) -> Result<T> {
    let mut attempt = 0u32;
    loop {
        match acquire(state) {
            Err(Error::MemoryBusy(node)) => {
                undo(state);
                attempt += 1;
                if attempt > 2000 {
                    return Err(Error::OutOfMemory { node, bytes: 0 });
                }
                std::thread::sleep(Duration::from_micros(20 * u64::from(attempt.min(50))));
            }
            r => return r,
        }
    }
}

/// Call a task implementation; a panic becomes the task's error.
pub(crate) fn call_implementation(f: &crate::task::ImplFn, ctx: &TaskContext<'_>, name: &str) -> Result<(), TaskError> {
    call_guarded(|| f(ctx), name)
}

/// Call application code for task `name`; an error or a panic becomes the task's error.
pub(crate) fn call_guarded(f: impl FnOnce() -> std::result::Result<(), String>, name: &str) -> Result<(), TaskError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(msg)) => Err(TaskError::Failed { task: name.to_string(), msg }),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panicked".into());
            Err(TaskError::Failed { task: name.to_string(), msg: format!("panicked: {msg}") })
        }
    }
}
