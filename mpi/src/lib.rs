//! weft-mpi: Weft across machines, in StarPU-MPI's model.
//!
//! Every rank runs the same program and submits the same sequential task flow. Each piece
//! of distributed data is registered on every rank with an owner rank and a tag
//! ([`MpiRuntime::register`]); a task runs on the rank that owns the data it writes (or
//! where [`MpiTask::on_rank`] says) and the others only record what it does to the data.
//! Inputs owned elsewhere are sent by their owner and received before the task, without
//! blocking any worker (a progress thread makes every MPI call), and a received copy stays
//! cached until its owner writes the data again. Inside a rank, tasks run on that rank's
//! [`Runtime`] as any other (its workers, devices, policy).
//!
//! ```no_run
//! use weft_core::{AccessMode, Codelet, Runtime};
//! use weft_mpi::{MpiRuntime, MpiTask};
//! let mpi = MpiRuntime::new(Runtime::from_env().unwrap()).unwrap();
//! // One value per rank, owned by that rank; all ranks register all of them.
//! let parts: Vec<_> = (0..mpi.size())
//!     .map(|r| mpi.register(mpi.runtime().register_variable(r as f64).unwrap(), r, r as i64).unwrap())
//!     .collect();
//! let add = Codelet::builder("add").cpu(|ctx| {
//!     let b: f64 = ctx.buffer(1).value();
//!     ctx.buffer(0).set_value(ctx.buffer(0).value::<f64>() + b);
//!     Ok(())
//! }).build();
//! for r in 1..mpi.size() as usize {
//!     // Runs on rank 0 (the owner of parts[0]), which receives parts[r] from rank r.
//!     mpi.task_insert(MpiTask::new(&add).access(&parts[0], AccessMode::RW).access(&parts[r], AccessMode::R)).unwrap();
//! }
//! mpi.wait_for_all().unwrap();
//! ```
//!
//! Variables: `WEFT_MPI_CHECK=1` checks that all ranks submit the same flow (an all-reduce
//! per call; a difference stops every rank naming the call), `WEFT_MPI_CACHE=0` resends
//! data for every task that reads it, `WEFT_MPI_STATS=1` prints each rank's sent bytes and
//! messages at shutdown, `WEFT_MPI_POLL_US` (default 20) is how long the progress thread
//! sleeps between tests of pending requests.
//!
//! # C API
//!
//! `include/weft_mpi.h` (generated from [`capi`]) declares weft-mpi's C API, on top of core's
//! (`weft.h`, which it includes); `libweft_mpi.so` exports both, so an MPI C program links
//! `-lweft_mpi` only. It uses the runtime, data handles and tasks of core's C API:
//!
//! - `weft_mpi_init()` after `weft_init()` (`WEFT_ENOTINIT` otherwise), `weft_mpi_shutdown()`
//!   before `weft_shutdown()`; `weft_mpi_rank()`, `weft_mpi_size()`;
//! - `weft_mpi_data_register(handle, tag, owner)`, `weft_mpi_data_unregister(handle)`: every
//!   rank registers every handle with the runtime first, the owner with its data, the others
//!   with a buffer of the same shape that serves as their cache;
//! - `weft_mpi_task_insert(task)`, `weft_mpi_task_insert_on(task, rank)`: a task built with
//!   `weft_task_create` and its setters, consumed on success (as `weft_task_submit` consumes
//!   a detached task), the caller's still on error; a handle not given to
//!   `weft_mpi_data_register` is `WEFT_EUNREGISTERED` ("used before weft_mpi_data_register");
//! - `weft_mpi_get_data_on_rank(handle, rank)`, `weft_mpi_set_owner(handle, rank)`,
//!   `weft_mpi_cache_flush(handle)`, `weft_mpi_wait_for_all()`, `weft_mpi_barrier()`,
//!   `weft_mpi_abort(msg, code)`.
//!
//! Errors are core's `weft_error` codes, described by `weft_last_error()`.
#![deny(unsafe_code)]

pub mod capi;
mod engine;
mod ffi;

pub use engine::Stats;
use engine::{Engine, Op};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use weft_core::{AccessMode, Codelet, DataHandle, Runtime, Shape, TaskBuilder, TaskHandle};

/// What weft-mpi reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("MPI: {0}")]
    Mpi(String),
    #[error(transparent)]
    Core(#[from] weft_core::Error),
    #[error("rank {rank} does not exist: there are {size} ranks")]
    NoSuchRank { rank: i32, size: i32 },
    #[error("tag {tag} is outside 0..={max} (half of MPI_TAG_UB)")]
    BadTag { tag: i64, max: i32 },
    #[error("tag {0} is already registered; each distributed handle needs its own tag")]
    DuplicateTag(i64),
    #[error("the data of tag {0} was unregistered; register it again before using it")]
    Unregistered(i64),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn env_flag(name: &str, default: bool) -> Result<bool> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) => match v.as_str() {
            "1" => Ok(true),
            "0" | "" => Ok(false),
            _ => Err(Error::Invalid(format!("{name}={v}: expected 0 or 1"))),
        },
    }
}

/// The variables weft-mpi reads (see the crate's documentation).
#[derive(Clone, Debug)]
pub struct MpiConfig {
    pub check: bool,
    pub cache: bool,
    pub stats: bool,
    pub poll_us: u64,
}

impl MpiConfig {
    pub fn from_env() -> Result<MpiConfig> {
        let poll_us = match std::env::var("WEFT_MPI_POLL_US") {
            Err(_) => 20,
            Ok(v) => v.parse().map_err(|_| Error::Invalid(format!("WEFT_MPI_POLL_US={v}: expected microseconds")))?,
        };
        Ok(MpiConfig {
            check: env_flag("WEFT_MPI_CHECK", false)?,
            cache: env_flag("WEFT_MPI_CACHE", true)?,
            stats: env_flag("WEFT_MPI_STATS", false)?,
            poll_us,
        })
    }
}

/// What every rank knows of one distributed handle: the same on all ranks, since all of
/// them apply the same task flow to it.
struct State {
    /// This rank's data: the owner's master copy, elsewhere a cache.
    local: DataHandle,
    owner: i32,
    /// Per rank: its `local` holds the current value.
    valid: Vec<bool>,
    /// Ranks other than the owner holding REDUX contributions not yet reduced into the
    /// owner's copy.
    contributors: Vec<bool>,
    redux: Option<(Arc<Codelet>, Arc<Codelet>)>,
    registered: bool,
}

impl State {
    /// After a write (or a flush): only the owner's copy holds the current value.
    fn only_owner_valid(&mut self) {
        let owner = self.owner as usize;
        self.valid.iter_mut().enumerate().for_each(|(r, v)| *v = r == owner);
    }
}

struct DistInner {
    tag: i64,
    shape: Shape,
    state: Mutex<State>,
}

/// A piece of data distributed over the ranks ([`MpiRuntime::register`]). Clones refer to
/// the same data.
#[derive(Clone)]
pub struct DistHandle(Arc<DistInner>);

impl DistHandle {
    pub fn tag(&self) -> i64 {
        self.0.tag
    }
    pub fn owner(&self) -> i32 {
        lock(&self.0.state).owner
    }
    /// This rank's copy: the data itself on its owner, a cache elsewhere (valid only where
    /// the task flow brought the current value; [`MpiRuntime::get_data_on_rank`]).
    pub fn local(&self) -> DataHandle {
        lock(&self.0.state).local.clone()
    }
}

impl std::fmt::Debug for DistHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DistHandle(tag {})", self.0.tag)
    }
}

/// A task of the distributed flow ([`MpiRuntime::task_insert`]).
pub struct MpiTask {
    codelet: Arc<Codelet>,
    accesses: Vec<(DistHandle, AccessMode)>,
    args: Vec<u8>,
    priority: i32,
    rank: Option<i32>,
}

impl MpiTask {
    pub fn new(codelet: &Arc<Codelet>) -> MpiTask {
        MpiTask { codelet: codelet.clone(), accesses: Vec::new(), args: Vec::new(), priority: 0, rank: None }
    }
    pub fn access(mut self, h: &DistHandle, mode: AccessMode) -> Self {
        self.accesses.push((h.clone(), mode));
        self
    }
    pub fn arg<T: bytemuck::Pod>(mut self, v: T) -> Self {
        self.args = bytemuck::bytes_of(&v).to_vec();
        self
    }
    pub fn args(mut self, bytes: &[u8]) -> Self {
        self.args = bytes.to_vec();
        self
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    /// Run on `rank` whatever owns the data (StarPU-MPI's `STARPU_EXECUTE_ON_NODE`); data it
    /// writes that another rank owns goes back to its owner afterwards.
    pub fn on_rank(mut self, rank: i32) -> Self {
        self.rank = Some(rank);
        self
    }
}

struct Flow {
    /// Calls so far (registrations, tasks, waits...): the checking mode's sequence number.
    seq: u64,
    tags: HashMap<i64, std::sync::Weak<DistInner>>,
}

/// The runtime an [`MpiRuntime`] runs tasks on: its own, or one it shares with others
/// (the C API's, [`MpiRuntime::with_shared_runtime`]).
enum Rt {
    Owned(Runtime),
    Shared(Box<dyn Deref<Target = Runtime> + Send + Sync>),
}

impl Deref for Rt {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        match self {
            Rt::Owned(rt) => rt,
            Rt::Shared(rt) => rt,
        }
    }
}

/// The distributed runtime of one rank: a [`Runtime`] plus MPI.
pub struct MpiRuntime {
    // Dropped first (after `Drop::drop` waited for its tasks): an owned runtime stops, a
    // shared one is released, before MPI is finalized (`_universe`, last).
    rt: Rt,
    engine: Arc<Engine>,
    progress: Option<std::thread::JoinHandle<()>>,
    rank: i32,
    size: i32,
    tag_ub: i32,
    config: MpiConfig,
    flow: Mutex<Flow>,
    // Dropped last: finalizes MPI when weft-mpi initialised it.
    _universe: Option<mpi::environment::Universe>,
}

impl MpiRuntime {
    /// Start MPI (unless the program already did, with at least `MPI_THREAD_SERIALIZED`)
    /// and the progress thread, around `rt`, configured from the environment. Once it has
    /// started, the program calls MPI itself only if it initialised MPI with
    /// `MPI_THREAD_MULTIPLE`.
    pub fn new(rt: Runtime) -> Result<MpiRuntime> {
        MpiRuntime::with_config(rt, MpiConfig::from_env()?)
    }

    pub fn with_config(rt: Runtime, config: MpiConfig) -> Result<MpiRuntime> {
        MpiRuntime::start(Rt::Owned(rt), config)
    }

    /// [`MpiRuntime::with_config`] on a runtime it does not own: `rt` (e.g. the C API's
    /// runtime, `weft_core::capi::share_runtime`) is dropped once this runtime has waited for
    /// its tasks and stopped communicating, before MPI is finalized; whoever else holds the
    /// runtime keeps it running.
    pub fn with_shared_runtime(rt: impl Deref<Target = Runtime> + Send + Sync + 'static, config: MpiConfig) -> Result<MpiRuntime> {
        MpiRuntime::start(Rt::Shared(Box::new(rt)), config)
    }

    fn start(rt: Rt, config: MpiConfig) -> Result<MpiRuntime> {
        if mpi::environment::is_finalized() {
            // MPI_Initialized stays true after MPI_Finalize, and no MPI call is allowed then.
            return Err(Error::Mpi("MPI was finalized (e.g. by a previous MpiRuntime); it cannot start again in this process".into()));
        }
        let universe = if mpi::environment::is_initialized() {
            None
        } else {
            let (u, _) = mpi::initialize_with_threading(mpi::Threading::Serialized)
                .ok_or_else(|| Error::Mpi("MPI could not be initialised".into()))?;
            Some(u)
        };
        let (ok, level) = ffi::thread_level_ok();
        if !ok {
            return Err(Error::Mpi(format!(
                "weft-mpi needs MPI_THREAD_SERIALIZED or more (its progress thread makes the MPI calls); MPI was \
                 initialised with thread level {level}"
            )));
        }
        let comm = ffi::dup_world();
        let check_comm = ffi::dup_world();
        let (rank, size) = ffi::rank_size(comm);
        let tag_ub = ffi::tag_ub(comm);
        let engine = Arc::new(Engine::new(comm, check_comm, rank, std::time::Duration::from_micros(config.poll_us)));
        let e = engine.clone();
        let progress = std::thread::Builder::new()
            .name(format!("weft-mpi progress {rank}"))
            .spawn(move || e.run())
            .map_err(|e| Error::Invalid(format!("cannot start the progress thread: {e}")))?;
        Ok(MpiRuntime {
            rt,
            engine,
            progress: Some(progress),
            rank,
            size,
            tag_ub,
            config,
            flow: Mutex::new(Flow { seq: 0, tags: HashMap::new() }),
            _universe: universe,
        })
    }

    pub fn rank(&self) -> i32 {
        self.rank
    }
    pub fn size(&self) -> i32 {
        self.size
    }
    /// This rank's runtime (register local data with it; tasks outside the distributed flow
    /// may run on it too).
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    fn check_rank(&self, rank: i32) -> Result<()> {
        if rank < 0 || rank >= self.size { Err(Error::NoSuchRank { rank, size: self.size }) } else { Ok(()) }
    }

    /// The checking mode: post this call's description for comparison across ranks.
    fn record(&self, flow: &mut Flow, desc: impl FnOnce() -> String) {
        flow.seq += 1;
        if self.config.check {
            let desc = desc();
            self.engine.push(Op::Check { value: weft_core::hash::Fnv::hash(desc.as_bytes()), seq: flow.seq, desc });
        }
    }

    /// Register `local` as the distributed data of `tag`, owned by `owner`. Every rank
    /// registers every distributed handle, in the same order, with the same shape: the
    /// owner with the data, the others with storage of that shape (e.g. `Runtime::alloc`,
    /// which takes no memory until a copy arrives) that weft-mpi uses as their cache.
    pub fn register(&self, local: DataHandle, owner: i32, tag: i64) -> Result<DistHandle> {
        self.check_rank(owner)?;
        // Each tag uses two MPI tags: its data's and its REDUX contributions'.
        let max = (self.tag_ub - 1) / 2;
        if tag < 0 || tag > i64::from(max) {
            return Err(Error::BadTag { tag, max });
        }
        let mut flow = lock(&self.flow);
        if flow.tags.get(&tag).is_some_and(|w| w.strong_count() > 0) {
            return Err(Error::DuplicateTag(tag));
        }
        let shape = local.shape();
        self.record(&mut flow, || format!("register(tag {tag}, owner {owner}, {shape:?})"));
        let mut valid = vec![false; self.size as usize];
        valid[owner as usize] = true;
        let n = self.size as usize;
        let inner = Arc::new(DistInner {
            tag,
            shape,
            state: Mutex::new(State { local, owner, valid, contributors: vec![false; n], redux: None, registered: true }),
        });
        flow.tags.insert(tag, Arc::downgrade(&inner));
        Ok(DistHandle(inner))
    }

    /// [`MpiRuntime::register`] for data that only its owner has: `init` builds it on the
    /// owner; the other ranks get lazily allocated storage of `shape`.
    pub fn register_with(
        &self,
        shape: Shape,
        owner: i32,
        tag: i64,
        init: impl FnOnce(&Runtime) -> weft_core::Result<DataHandle>,
    ) -> Result<DistHandle> {
        self.check_rank(owner)?;
        let local = if owner == self.rank {
            let h = init(self.runtime())?;
            if h.shape() != shape {
                return Err(Error::Invalid(format!("tag {tag}: the owner's data has shape {:?}, registered as {shape:?}", h.shape())));
            }
            h
        } else {
            self.rt.alloc(shape)?
        };
        self.register(local, owner, tag)
    }

    /// Forget the data of `h`'s tag on every rank (collective, in the flow like a task). The
    /// owner's copy stays valid in `h.local()`; the tag may be registered again.
    pub fn unregister(&self, h: &DistHandle) -> Result<()> {
        let mut flow = lock(&self.flow);
        let mut st = self.state(h)?;
        self.record(&mut flow, || format!("unregister(tag {})", h.0.tag));
        self.flush_redux(h, &mut st)?;
        st.registered = false;
        flow.tags.remove(&h.0.tag);
        Ok(())
    }

    fn state<'a>(&self, h: &'a DistHandle) -> Result<MutexGuard<'a, State>> {
        let st = lock(&h.0.state);
        if !st.registered {
            return Err(Error::Unregistered(h.0.tag));
        }
        Ok(st)
    }

    /// Set the codelets a REDUX access of `h` uses, on every rank: `init` (one buffer, W)
    /// writes the neutral value, `reduce` (RW, R) accumulates the second buffer into the
    /// first. Contributions made on other ranks are reduced into the owner's copy, in rank
    /// order, before the next access that is not REDUX.
    pub fn set_reduction(&self, h: &DistHandle, init: &Arc<Codelet>, reduce: &Arc<Codelet>) -> Result<()> {
        let mut st = self.state(h)?;
        st.local.set_reduction(init, reduce)?;
        st.redux = Some((init.clone(), reduce.clone()));
        Ok(())
    }

    /// Move `h`'s current value from rank `from` to rank `to` into `into` (`to`'s copy, or
    /// a temporary), as part of the flow: the send waits for the writers before it on
    /// `from`, the receive for the readers of `into` before it on `to`.
    fn transfer(&self, h: &DistHandle, from_local: &DataHandle, from: i32, to: i32, into: &DataHandle) -> Result<()> {
        self.transfer_tagged(h, from_local, from, to, into, false)
    }

    /// [`MpiRuntime::transfer`], on the tag of REDUX contributions when `contribution`.
    /// Each receive on one tag from one rank must be posted in flow order (the engine's
    /// invariant): receives into `h`'s own copy are, being ordered by its dependencies, but
    /// a contribution lands in a fresh temporary, ready at once, so it has a tag of its own.
    fn transfer_tagged(
        &self,
        h: &DistHandle,
        from_local: &DataHandle,
        from: i32,
        to: i32,
        into: &DataHandle,
        contribution: bool,
    ) -> Result<()> {
        let tag = (h.0.tag * 2 + i64::from(contribution)) as i32;
        let engine = &self.engine;
        if self.rank == from {
            let e = engine.clone();
            from_local.acquire_async(AccessMode::R, move |acq| e.push(Op::Send { acq, dest: to, tag }))?;
        }
        if self.rank == to {
            let e = engine.clone();
            into.acquire_async(AccessMode::W, move |acq| e.push(Op::Recv { acq, src: from, tag }))?;
        }
        Ok(())
    }

    /// Make rank `to`'s copy of `h` current, sending it from the owner if it is not.
    fn ensure_valid(&self, h: &DistHandle, st: &mut State, to: i32) -> Result<()> {
        if st.valid[to as usize] {
            return Ok(());
        }
        let local = st.local.clone();
        self.transfer(h, &local, st.owner, to, &local)?;
        st.valid[to as usize] = true;
        Ok(())
    }

    /// Reduce the contributions other ranks hold into the owner's copy.
    fn flush_redux(&self, h: &DistHandle, st: &mut State) -> Result<()> {
        if !st.contributors.iter().any(|&c| c) {
            return Ok(());
        }
        let (_, reduce) = st.redux.clone().ok_or_else(|| Error::Invalid(format!("tag {}: REDUX without set_reduction", h.0.tag)))?;
        let owner = st.owner;
        for c in 0..self.size {
            if !std::mem::take(&mut st.contributors[c as usize]) {
                continue;
            }
            if self.rank == owner {
                let tmp = self.rt.alloc(h.0.shape)?;
                self.transfer_tagged(h, &st.local, c, owner, &tmp, true)?;
                self.rt.submit(TaskBuilder::new(&reduce).access(&st.local, AccessMode::RW).access(&tmp, AccessMode::R))?;
            } else if self.rank == c {
                let local = st.local.clone();
                self.transfer_tagged(h, &local, c, owner, &local, true)?;
            }
        }
        st.only_owner_valid();
        Ok(())
    }

    /// Submit a task of the distributed flow. Every rank calls it with the same task; it
    /// runs on one of them (the returned handle is there), and the others send it the data
    /// it reads that they own, or only record what it writes. The rank is `on_rank` if
    /// given, else the owner of the first data it writes (W, RW), else the owner of the
    /// largest data it reads; REDUX accesses do not choose it.
    pub fn task_insert(&self, t: MpiTask) -> Result<Option<TaskHandle>> {
        if let Some(r) = t.rank {
            self.check_rank(r)?;
        }
        let mut flow = lock(&self.flow);
        // Validate every handle before changing any state.
        let mut states = Vec::with_capacity(t.accesses.len());
        for (h, _) in &t.accesses {
            if t.accesses.iter().take(states.len()).any(|(o, _)| Arc::ptr_eq(&o.0, &h.0)) {
                return Err(Error::Invalid(format!("task '{}' names the data of tag {} twice", t.codelet.name(), h.0.tag)));
            }
            states.push(self.state(h)?);
        }
        self.record(&mut flow, || {
            let acc: Vec<String> = t.accesses.iter().map(|(h, m)| format!("{}:{m:?}", h.0.tag)).collect();
            format!("task '{}' on [{}]{}", t.codelet.name(), acc.join(", "), t.rank.map(|r| format!(" on rank {r}")).unwrap_or_default())
        });
        let writes = |m: AccessMode| matches!(m, AccessMode::W | AccessMode::RW | AccessMode::Commute);
        let exec = t.rank.unwrap_or_else(|| {
            let written = t.accesses.iter().zip(&states).find(|((_, m), _)| writes(*m));
            match written {
                Some((_, st)) => st.owner,
                None => t
                    .accesses
                    .iter()
                    .zip(&states)
                    .filter(|((_, m), _)| m.reads() && *m != AccessMode::Redux)
                    .max_by_key(|((h, _), st)| (h.0.shape.size(), std::cmp::Reverse(st.owner)))
                    .map_or(0, |(_, st)| st.owner),
            }
        });
        let mut b = TaskBuilder::new(&t.codelet).args(&t.args).priority(t.priority);
        for ((h, mode), st) in t.accesses.iter().zip(states.iter_mut()) {
            let mode = *mode;
            match mode {
                AccessMode::Scratch => {}
                AccessMode::Redux => {
                    let (init, _) =
                        st.redux.clone().ok_or_else(|| Error::Invalid(format!("tag {}: REDUX access without set_reduction", h.0.tag)))?;
                    if exec != st.owner && !st.contributors[exec as usize] {
                        // The executing rank starts its contribution from the neutral value.
                        st.contributors[exec as usize] = true;
                        if self.rank == exec {
                            self.rt.submit(TaskBuilder::new(&init).access(&st.local, AccessMode::W))?;
                        }
                    }
                    st.only_owner_valid();
                }
                _ => {
                    self.flush_redux(h, st)?;
                    if mode.reads() {
                        self.ensure_valid(h, st, exec)?;
                    }
                }
            }
            if self.rank == exec {
                b.add_access(&st.local, mode);
            }
        }
        let handle = if self.rank == exec {
            // A failed task leaves data the other ranks may be waiting for unwritten: stop
            // them all rather than let them wait forever.
            let (rank, name) = (self.rank, t.codelet.name().to_string());
            b = b.callback(move |r| {
                if let Err(e) = r {
                    ffi::abort_world(&format!("weft-mpi: rank {rank}: task '{name}' failed: {e}"), 1);
                }
            });
            Some(self.rt.submit(b)?)
        } else {
            None
        };
        for ((h, mode), st) in t.accesses.iter().zip(states.iter_mut()) {
            let owner = st.owner;
            if writes(*mode) {
                st.only_owner_valid();
                if exec != owner {
                    // Written away from its owner: the new value goes home, and stays cached
                    // where it was computed.
                    let local = st.local.clone();
                    self.transfer(h, &local, exec, owner, &local)?;
                    st.valid[exec as usize] = true;
                }
            }
            if !self.config.cache {
                st.only_owner_valid();
            }
        }
        Ok(handle)
    }

    /// Make rank `rank`'s copy of `h` current (StarPU-MPI's `get_data_on_node`), e.g. to
    /// gather results on rank 0. Every rank calls it.
    pub fn get_data_on_rank(&self, h: &DistHandle, rank: i32) -> Result<()> {
        self.check_rank(rank)?;
        let mut flow = lock(&self.flow);
        let mut st = self.state(h)?;
        self.record(&mut flow, || format!("get_data_on_rank(tag {}, {rank})", h.0.tag));
        self.flush_redux(h, &mut st)?;
        self.ensure_valid(h, &mut st, rank)
    }

    /// Make `rank` the owner of `h` (data migration), sending it the current value if its
    /// copy is not current. Every rank calls it.
    pub fn set_owner(&self, h: &DistHandle, rank: i32) -> Result<()> {
        self.check_rank(rank)?;
        let mut flow = lock(&self.flow);
        let mut st = self.state(h)?;
        self.record(&mut flow, || format!("set_owner(tag {}, {rank})", h.0.tag));
        self.flush_redux(h, &mut st)?;
        self.ensure_valid(h, &mut st, rank)?;
        st.owner = rank;
        Ok(())
    }

    /// Give each handle of `handles` the owner `owner(i, handle)` (a new distribution,
    /// e.g. from one block-cyclic grid to another): [`MpiRuntime::set_owner`] for each, so
    /// data moves only where its new owner's copy is stale. Every rank calls it.
    pub fn redistribute(&self, handles: &[DistHandle], owner: impl Fn(usize, &DistHandle) -> i32) -> Result<()> {
        for (i, h) in handles.iter().enumerate() {
            self.set_owner(h, owner(i, h))?;
        }
        Ok(())
    }

    /// Forget the cached copies of `h` on the ranks that do not own it (StarPU-MPI's
    /// `cache_flush`): the next task reading it elsewhere receives it again. (The cache's
    /// memory stays: a receive still waiting to be posted into it must keep its place in
    /// the order of receives on its tag.) Every rank calls it.
    pub fn cache_flush(&self, h: &DistHandle) -> Result<()> {
        let mut flow = lock(&self.flow);
        let mut st = self.state(h)?;
        self.record(&mut flow, || format!("cache_flush(tag {})", h.0.tag));
        self.flush_redux(h, &mut st)?;
        st.only_owner_valid();
        Ok(())
    }

    /// Wait for every task and transfer of this rank's share of the flow, then for all
    /// ranks to get there (a barrier). Every rank calls it.
    pub fn wait_for_all(&self) -> Result<()> {
        {
            let mut flow = lock(&self.flow);
            self.record(&mut flow, || "wait_for_all".into());
        }
        if self.config.check {
            // A rank whose flow differs stops every rank here, before anyone waits for a
            // message that will never come.
            self.engine.wait_checks();
        }
        self.rt.wait_for_all()?;
        self.engine.barrier();
        Ok(())
    }

    /// A collective barrier that does not wait for tasks.
    pub fn barrier(&self) {
        self.engine.barrier();
    }

    /// Stop every rank (MPI_Abort) after printing `msg`: what a rank does on an error it
    /// cannot recover from, so that the others do not wait for it forever.
    pub fn abort(&self, msg: &str, code: i32) -> ! {
        ffi::abort_world(&format!("weft-mpi: rank {}: {msg}", self.rank), code)
    }
}

impl Drop for MpiRuntime {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The other ranks may be waiting for this one's messages: stop them all.
            ffi::abort_world(&format!("weft-mpi: rank {} panicked; stopping every rank", self.rank), 1);
        }
        if let Err(e) = self.rt.wait_for_all() {
            ffi::abort_world(&format!("weft-mpi: rank {}: {e}", self.rank), 1);
        }
        self.engine.barrier();
        if self.config.stats {
            let s = self.engine.stats();
            let line = format!(
                "weft-mpi rank {}: sent {} bytes in {} messages, received {} bytes in {} messages\n",
                self.rank, s.sent_bytes, s.sent_messages, s.received_bytes, s.received_messages
            );
            // One write: mpirun merges the ranks' stderr, and a line written in pieces can
            // be cut by another rank's.
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        }
        self.engine.stop();
        if let Some(t) = self.progress.take() {
            let _ = t.join();
        }
        // Then the fields drop in order: the runtime's threads end before MPI does
        // (`universe`, last).
    }
}
