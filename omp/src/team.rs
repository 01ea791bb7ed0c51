//! Teams: fork/join of parallel regions on Weft's CPU workers, the per-thread OpenMP state
//! ([`Ctx`]), barriers and the thread pool.
//!
//! **Owns**: which threads form a team, the team's barriers, its ring of worksharing slots
//! and the per-thread contexts. **Does not own**: what a worksharing construct does with its
//! slot (ws.rs), the environment (env.rs).
//!
//! # Threads
//! The encountering thread is thread 0. The other members come from a pool of [`Slot`]s: one
//! per core CPU worker (recruited by posting a job to the worker, `Runtime::post_job`) and
//! then, when more threads are needed than free CPU workers exist (nested teams,
//! `num_threads` above the core count), extra OS threads owned by this crate, created on
//! demand and kept (with `OMP_STACKSIZE` above the workers' stack size, only these).
//! A slot belongs to at most one team at a time (`claimed`, set and cleared
//! by the team's primary thread). After a region a member waits "docked" for its next
//! assignment, spinning for the spin budget (sys.rs); then a core worker sleeps on its
//! slot's futex for at most [`LINGER`] and its job returns (the worker goes back to Weft's
//! tasks), and an OS thread sleeps on its slot's futex.
//!
//! Slot states: DETACHED (no job running / OS thread asleep) → ASSIGNED (the primary wrote
//! the assignment, then swapped the state; if it was DETACHED it posts a job or wakes the
//! thread; if it was SLEEPING it wakes the thread) → RUNNING (the member took the
//! assignment) → DOCKED (the member finished: its swap, then its count in the team's
//! `docked`, which the primary waits for before it assigns the slot again) → SLEEPING (a
//! core worker's, CAS from DOCKED after the spin) →
//! DOCKED (CAS from SLEEPING after the sleep) → DETACHED (CAS from DOCKED); each CAS fails
//! if the slot was assigned meanwhile. A docked, sleeping or detached member of a region
//! not joined yet may be assigned again, HELP (CAS by `Team::recruit`), to run tasks queued
//! after it docked; then it runs (HELPING) and docks again. The primary sleeping at its
//! join on a member not docked adds [`WAITER`] to the member's state.
//!
//! # The join
//! A member's share ends when its body has returned and the team has no task pending: it
//! docks then (no barrier at the end), and the primary's join waits for each member to
//! have docked and for every task to be complete, running tasks meanwhile: a gather, with
//! no release (the next fork is one). A member that docked while the region goes on is
//! recruited again when a task is queued (`Team::nudge`), as libomp's workers run tasks in
//! the fork barrier while they wait for the next region.
//!
//! # Lifetime
//! A team is owned by its primary thread, boxed in the thread's stack of regions
//! ([`PRIMARY`], one entry per nesting depth, with the primary's context), and kept there
//! for the thread's next region at that depth; a box is never moved (the stack's buffer
//! may be, not what its boxes point to). Members reach the team through a [`TeamRef`] (a
//! plain shared reference: no count to bump per fork). A member's last access to the team
//! is its count in `docked`, after its slot says DOCKED; the primary waits for all of them
//! (`Team::over`) before it changes the team again: its only `&mut Team` are the fork's
//! set-up, before any member is told of the team, and the join's, after they all docked.
//! Team boxes are never freed (a thread's stack of regions is leaked with it), so a
//! member's wake-up of the primary after its count, on its own slot, touches no team.

use crate::abi::gomp::reduction::Descriptor;
use crate::env::{self, SCHED_MONOTONIC};
use crate::outlined::Outlined;
use crate::sys::{self, futex_wake, spin_until};
use crate::task::{self, Group, TeamTasks};
use crate::watch::{Asleep, Site, State, Waits};
use crate::ws::{RING, WorkShare};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use weft_core::Runtime;

/// Initializes worksharing slot 0 of a new team of the given size (combined constructs).
pub type Setup<'a> = &'a dyn Fn(&WorkShare, u32);

pub use crate::outlined::Body;

/// The per-task ICVs (OpenMP 5.1 §2.4): copied from the parent at each fork.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Icv {
    pub nthreads: u32,
    pub nthreads_idx: u32,
    pub dynamic: bool,
    pub run_sched: i32,
    pub run_chunk: i32,
    pub max_active_levels: u32,
    pub bind: u8,
    pub bind_idx: u32,
    /// thread-limit-var (u32::MAX: none).
    pub thread_limit: u32,
    /// def-allocator-var (0: omp_null_allocator, i.e. OMP_ALLOCATOR's or the default).
    pub def_alloc: usize,
    /// (team number, number of teams) of the host `teams` construct the task is in ((0, 1)
    /// outside any): inherited by the regions a team forks, so that `omp_get_team_num` and
    /// `distribute` loops inside them see their team.
    pub teams: (i32, i32),
}

impl Icv {
    fn initial() -> Icv {
        let e = env::env();
        Icv {
            nthreads: e.nthreads[0],
            nthreads_idx: 0,
            dynamic: e.dynamic,
            run_sched: e.run_sched,
            run_chunk: e.run_chunk,
            max_active_levels: e.max_active_levels,
            bind: e.bind[0],
            bind_idx: 0,
            thread_limit: e.thread_limit,
            def_alloc: 0,
            teams: (0, 1),
        }
    }

    /// The ICVs of the implicit tasks of a region forked by a task with these.
    fn child(&self) -> Icv {
        let e = env::env();
        let mut c = *self;
        if (self.nthreads_idx as usize) + 1 < e.nthreads.len() {
            c.nthreads_idx += 1;
            c.nthreads = e.nthreads[c.nthreads_idx as usize];
        }
        if (self.bind_idx as usize) + 1 < e.bind.len() {
            c.bind_idx += 1;
            c.bind = e.bind[c.bind_idx as usize];
        }
        c
    }
}

/// One thread's state inside one team (an implicit task). Only its thread writes it;
/// other threads read `team` and `tid` of ancestors (fixed while the child region runs).
pub struct Ctx {
    pub team: *const Team,
    pub tid: u32,
    pub icv: Icv,
    /// Worksharing constructs this thread has entered in this team.
    pub ws_gen: u64,
    /// Single constructs this thread has encountered (libgomp's scheme).
    pub single_count: u64,
    /// The loop or sections construct this thread is in (its slot in the team's ring), and
    /// its generation.
    pub ws: Option<usize>,
    pub ws_cur_gen: u64,
    pub static_trip: u64,
    /// The chunk [a, b) of the current loop this thread holds, and whether it still has to
    /// pass the ordered turn on.
    pub chunk: (u64, u64),
    pub ordered_pending: bool,
    /// The doacross table of the loop this thread is in (ws.rs), taken from its slot once.
    pub doacross: Option<Arc<crate::ws::Doacross>>,
    /// The task this thread runs: its implicit task, or an explicit one (task.rs).
    pub task: task::Cur,
    /// This thread's own end of its deque in `team`, lent by the team for the length of the
    /// context (task.rs, [`task::OwnDeque`]): given back when the share ends.
    pub deque: task::OwnDeque,
    /// Where this thread's task bodies count in the statistics (`WEFT_STATS`), looked up
    /// once (None until the runtime has started: a root context may come first).
    pub counter: Option<weft_core::Counter<'static>>,
    /// Task bodies run in this context and not yet added to `counter` (task.rs
    /// `count_task`: added when the context ends, or at once in a root context).
    pub tasks_run: u64,
    /// The worksharing construct this thread is in, when tracing: its start and name
    /// (`ws::trace_begin`, `ws::trace_end`).
    pub ws_trace: Option<(std::time::Instant, &'static str)>,
}

impl Ctx {
    /// A context in `team` (whose implicit tasks start in `group`), holding the thread's
    /// deque in it until [`Ctx::end`], counting in `counter` (the calling thread's, if known:
    /// looked up otherwise).
    #[inline]
    fn new(team: &Team, group: Option<Arc<Group>>, tid: u32, icv: Icv, counter: Option<weft_core::Counter<'static>>) -> Ctx {
        Ctx {
            team,
            deque: team.tasks.lend(tid),
            tid,
            icv,
            ws_gen: 0,
            single_count: 0,
            ws: None,
            ws_cur_gen: 0,
            static_trip: 0,
            chunk: (0, 0),
            ordered_pending: false,
            doacross: None,
            task: task::Cur::implicit(group),
            counter: counter.or_else(|| started_runtime().map(|rt| rt.counter())),
            tasks_run: 0,
            ws_trace: None,
        }
    }

    /// The end of a member's share in `team` (the context's: checked): its implicit task
    /// ends (task.rs) and its deque goes back to the team, before the thread's last access
    /// to the team. (A primary's context stays in its region record: [`Ctx::renew`].)
    /// Inlined: a call would copy the whole context to pass it.
    #[inline(always)]
    fn end(mut self, team: &Team) {
        task::end_implicit(&mut self);
        team.tasks.give_back(self.deque);
    }

    /// Make this context (of a region that ended: `join`) what [`Ctx::new`] would make, in
    /// place, keeping its counter (the same thread's) and its deque: a primary's context is
    /// renewed at each fork rather than built and moved into its box, and the team at its
    /// depth is the same box each time, so thread 0's deque stays lent to it (empty between
    /// regions) rather than going back and out again.
    fn renew(&mut self, team: &Team, group: Option<Arc<Group>>, tid: u32, icv: &Icv) {
        debug_assert!(self.tasks_run == 0 && self.task.group.is_none(), "invariant: the context's region ended");
        debug_assert!(self.deque.is_of(&team.tasks, tid), "invariant: a renewed context keeps its team's deque");
        // Every field named (no `..`): a field added to `Ctx` must be renewed here too, as
        // `new` must set it.
        let Ctx {
            team: c_team,
            tid: c_tid,
            icv: c_icv,
            ws_gen,
            single_count,
            ws,
            ws_cur_gen,
            static_trip,
            chunk,
            ordered_pending,
            doacross,
            task,
            deque: _,
            counter,
            tasks_run: _,
            ws_trace,
        } = self;
        *c_team = team;
        *c_tid = tid;
        *c_icv = *icv;
        *ws_gen = 0;
        *single_count = 0;
        *ws = None;
        *ws_cur_gen = 0;
        *static_trip = 0;
        *chunk = (0, 0);
        *ordered_pending = false;
        *doacross = None;
        task.renew_implicit(group);
        if counter.is_none() {
            *counter = started_runtime().map(|rt| rt.counter());
        }
        *ws_trace = None;
    }

    /// The team, as a task created here holds it.
    pub fn team_ref(&self) -> TeamRef {
        TeamRef(std::ptr::NonNull::from(self.team()))
    }

    pub fn team<'a>(&self) -> &'a Team {
        // SAFETY: a context's team outlives it (the team's primary keeps it alive until
        // every member has left, and a root team is never freed).
        unsafe { &*self.team }
    }
}

thread_local! {
    static CUR: Cell<*mut Ctx> = const { Cell::new(std::ptr::null_mut()) };
    /// The regions this thread is the primary of: taken by `fork` and `join` while they
    /// change them (made on first use and leaked, as contexts are: thread-exit destructors
    /// could still run OpenMP code).
    static PRIMARY: Cell<Option<&'static mut Primary>> = const { Cell::new(None) };
    /// The core worker a team of this primary thread takes last (`claim`), once decided.
    static PRIMARY_CPU_WORKER: Cell<Option<Option<usize>>> = const { Cell::new(None) };
}

/// A region the calling thread is the primary of (between `fork` and `join`), or was at
/// this depth: its team, the thread's context in it (boxed: `CUR` points into it while it
/// is current; None until the first region at this depth, renewed at each later fork) and
/// the context to make current again at the join.
struct Region {
    team: Box<Team>,
    ctx: Box<Option<Ctx>>,
    parent: *mut Ctx,
}

/// A thread's regions as a primary by nesting depth: those below `depth` are running
/// (innermost last), the others are kept for the next region at their depth (nothing is
/// allocated, moved or freed per region).
struct Primary {
    regions: Vec<Region>,
    depth: usize,
    /// The core worker the thread is, if any (a thread's stays the same).
    worker: Option<usize>,
}

/// The calling thread's current context, as a handle: the one way the rest of the crate
/// reaches a [`Ctx`] (task.rs passes it down its calls rather than looking up the thread
/// local again: in a shared library each lookup is a call).
///
/// # Invariant
/// This is the argument every access below relies on; no other module dereferences a
/// context.
/// - **Alive.** A handle is made only here, from `CUR`, so it points to a context of the
///   calling thread. A context lives while it is current or the parent of one that is (a
///   member's on `run_member`'s stack until it returns; a primary's in its team until
///   `join`, which makes the parent current again; a root one for ever), and a handle is
///   used only within the runtime call that took it, during which its context stays
///   current or such a parent. Nothing stores a handle (it is not `Send`, and no type of
///   this crate holds one).
/// - **One borrow at a time.** Only the owning thread touches a context's fields (other
///   threads read an ancestor's `team` and `tid`, fixed while the child region runs,
///   through the raw `Team::parent`). [`CtxRef::get`] and [`CtxRef::with`] lend it for the
///   length of a closure that neither runs a task or region body nor reaches the context
///   again (a debug build checks the second).
#[derive(Clone, Copy)]
pub struct CtxRef {
    p: std::ptr::NonNull<Ctx>,
    /// Not `Send` nor `Sync`: a context is its thread's.
    _thread: std::marker::PhantomData<*mut Ctx>,
}

#[cfg(debug_assertions)]
thread_local! {
    /// A context is lent by [`CtxRef::with`] or [`CtxRef::get`] (the debug check of "one
    /// borrow at a time").
    static LENT: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread's context lent while it lives (debug builds).
struct Lend;

impl Lend {
    #[inline]
    fn new() -> Lend {
        #[cfg(debug_assertions)]
        assert!(!LENT.replace(true), "invariant: a context is lent once at a time");
        Lend
    }
}

impl Drop for Lend {
    #[inline]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        LENT.set(false);
    }
}

impl CtxRef {
    /// The calling thread's context (an initial thread gets a root context and a team of
    /// one on first use; both live as long as the process).
    #[inline]
    pub fn cur() -> CtxRef {
        CtxRef::cur_if_any().unwrap_or_else(root_ctx)
    }

    /// The calling thread's context if it has one (no root context is made for a thread
    /// that never used OpenMP).
    #[inline]
    pub fn cur_if_any() -> Option<CtxRef> {
        let p = std::ptr::NonNull::new(CUR.with(|c| c.get()))?;
        Some(CtxRef { p, _thread: std::marker::PhantomData })
    }

    /// Read the context.
    #[inline]
    pub fn get<R>(self, f: impl FnOnce(&Ctx) -> R) -> R {
        let _lend = Lend::new();
        // SAFETY: alive and lent once (the type's invariant).
        f(unsafe { self.p.as_ref() })
    }

    /// Change the context.
    #[inline]
    pub fn with<R>(self, f: impl FnOnce(&mut Ctx) -> R) -> R {
        let _lend = Lend::new();
        // SAFETY: alive and lent once (the type's invariant).
        f(unsafe { &mut *self.p.as_ptr() })
    }

    /// The context's team (which outlives it).
    #[inline]
    pub fn team<'a>(self) -> &'a Team {
        self.get(|c| c.team())
    }

    /// The context's address (a task's identity when it has no other: nestable locks).
    pub fn addr(self) -> usize {
        self.p.as_ptr() as usize
    }
}

/// The calling thread's current context ([`CtxRef::cur`]).
#[inline]
pub fn cur() -> CtxRef {
    CtxRef::cur()
}

/// [`CtxRef::cur_if_any`].
#[inline]
pub fn cur_if_any() -> Option<CtxRef> {
    CtxRef::cur_if_any()
}

#[cold]
fn root_ctx() -> CtxRef {
    let icv = Icv::initial();
    // Leaked on purpose, with its context: the initial thread's context lives as long as the
    // thread may call into OpenMP (thread-exit destructors could still run OpenMP code).
    let team: &'static mut Team = Box::leak(Team::new(1));
    team.reset(1, 0, 0, None, None, &icv);
    team.places = crate::places::root();
    let c = Box::into_raw(Box::new(Ctx::new(team, None, 0, icv, None)));
    CUR.with(|x| x.set(c));
    CtxRef::cur_if_any().expect("invariant: the root context was just made current")
}

/// The calling thread's context, as a reference.
#[inline]
pub fn ctx<'a>() -> &'a mut Ctx {
    // SAFETY: the context is alive ([`CtxRef`]'s invariant); only the owning thread mutates
    // its contexts, and no caller holds two of these references at once (each GOMP entry
    // point takes one).
    unsafe { &mut *cur().p.as_ptr() }
}

/// The calling thread's number in its team (read through the raw context: a caller up the
/// stack may hold the [`ctx`] reference).
fn my_tid() -> u32 {
    // SAFETY: the calling thread's context, read only.
    unsafe { (*cur().p.as_ptr()).tid }
}

/// A centralized barrier: a counter and a generation word (sense reversal by generation).
pub struct Barrier {
    arrived: CachePadded<AtomicU32>,
    generation: CachePadded<AtomicU32>,
    sleepers: AtomicU32,
    n: AtomicU32,
}

impl Barrier {
    fn new() -> Barrier {
        Barrier {
            arrived: CachePadded::new(AtomicU32::new(0)),
            generation: CachePadded::new(AtomicU32::new(0)),
            sleepers: AtomicU32::new(0),
            n: AtomicU32::new(1),
        }
    }

    /// Wait for the whole team and all its tasks; a waiting thread runs queued tasks. With
    /// `cancel`, return `true` early once it is set. `site` names the barrier in the
    /// diagnostics of a waiter that sleeps (watch.rs).
    fn wait(&self, team: &Team, cancel: Option<&AtomicBool>, site: Site) -> bool {
        let n = self.n.load(Ordering::Relaxed);
        if n == 1 {
            task::drain(cur());
            return cancel.is_some_and(|c| c.load(Ordering::Acquire));
        }
        // Read the generation before arriving: it cannot move on until we have arrived.
        let g = self.generation.load(Ordering::Acquire);
        // AcqRel: the last arriver sees every member's writes before the barrier, and
        // publishes them all with its Release store of the generation.
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == n {
            // The last arriver releases the team once no task is left (the others help).
            task::drain(cur());
            self.arrived.store(0, Ordering::Relaxed);
            // SeqCst: pairs with the sleepers' count-then-check (sys::wait_change).
            self.generation.store(g.wrapping_add(1), Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                futex_wake(&self.generation, i32::MAX);
            }
            return cancel.is_some_and(|c| c.load(Ordering::Acquire));
        }
        // Wait for the generation to move on; queued tasks wake us (Team::nudge) to run them.
        // Only a waiter about to sleep gets to `tick`: the diagnostics (watch.rs).
        // Under OMP_WAIT_POLICY=active a waiter never sleeps: it ticks every 2^20 looks of
        // its spin instead (a few milliseconds).
        let asleep = Asleep::default();
        let tick = || self.tick(team, g, site, &asleep);
        let active = sys::SPIN_NS.load(Ordering::Relaxed) == u64::MAX;
        let looks = Cell::new(0u32);
        let spun_long = || {
            looks.set(looks.get().wrapping_add(1));
            if looks.get().is_multiple_of(1 << 20) {
                tick();
            }
            false
        };
        let r = loop {
            let stop = || cancel.is_some_and(|c| c.load(Ordering::Acquire));
            let busy = team.tasks.pending() > 0;
            let poll = team.tasks.poller();
            let (spin, exact) = (|| stop() || poll() || (active && spun_long()), || stop() || team.tasks.queued_for_sleeper());
            sys::wait_change_with(&self.generation, g, &self.sleepers, &spin, &exact, busy, Some(&tick));
            if self.generation.load(Ordering::Acquire) != g {
                break stop();
            }
            if stop() {
                break true;
            }
            let c = cur();
            while task::run_one(c) {}
        };
        if asleep.get().is_some() {
            team.waits.set(my_tid(), Site::None);
        }
        r
    }

    /// Diagnostics of a waiter about to sleep, and after each timed-out sleep, at this
    /// barrier's generation `g` (watch.rs; `asleep`: the waiter's record, `Waits::slept`).
    #[cold]
    fn tick(&self, team: &Team, g: u32, site: Site, asleep: &Asleep) {
        let tid = my_tid();
        let slept = team.waits.slept(tid, site, asleep);
        // Whether a thread is past every barrier of the region: a member that docked (its
        // body returned), or the primary at its join. (Read before the generation: a
        // barrier that thread was the last to arrive at has moved on by then.)
        let gone = team.any_left() || team.waits.primary_at_end();
        if self.generation.load(Ordering::Acquire) != g || team.cancelled.load(Ordering::Acquire) {
            return;
        }
        team.waits.tick(tid, team.n, site, slept, gone, &|t| team.member_state(t));
    }

    /// Release every waiter (after a cancellation, which the caller has set): the
    /// generation moves on, so a waiter about to sleep on it cannot miss this (a wake-up
    /// alone could come between its check of the flag and its sleep, and be lost: seen as
    /// a hang in libgomp's cancel-parallel-2.c under load). Waiters return "cancelled"; a
    /// late arriver sees the flag.
    pub fn wake_all(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.generation, i32::MAX);
    }
}

/// A team: the threads of one parallel region.
pub struct Team {
    pub n: u32,
    pub level: u32,
    pub active_level: u32,
    /// The encountering thread's team and thread number (ancestor queries); none for a
    /// root team.
    up: Option<(TeamRef, u32)>,
    body: Option<Outlined>,
    pub child_icv: Icv,
    pub bar: Barrier,
    /// The barrier used by cancellable barriers (a cancelled region abandons it).
    pub cbar: Barrier,
    pub single: CachePadded<AtomicU64>,
    pub cancelled: AtomicBool,
    pub copyprivate: AtomicPtr<c_void>,
    pub ring: Box<[WorkShare]>,
    /// Explicit tasks bound to this team.
    pub tasks: TeamTasks,
    /// The taskgroup the implicit tasks start in (a parallel region with task reductions).
    pub group: Option<Arc<Group>>,
    /// Which threads sleep at which barrier, for the diagnostics (watch.rs).
    pub waits: Waits,
    /// Members docked in this region, less those recruited since (the join's gather).
    docked: CachePadded<AtomicU32>,
    members: Vec<&'static Slot>,
    own_slot: Option<&'static Slot>,
    /// How many ring slots the last region may have used (all of them for a new team).
    dirty: usize,
    /// When the primary forked it, if the runtime records a trace (`WEFT_TRACE`): the
    /// primary's share of the region is a span from then to the join.
    traced_from: Option<std::time::Instant>,
    /// The binding policy the team was formed with (places.rs).
    pub bind: u8,
    /// Each implicit task's place and place partition, by thread number (empty without a
    /// place list).
    pub places: Vec<crate::places::Assign>,
}

/// Write `v` to `f` unless it is there already. A team's primary sets its team up this way:
/// a store takes the line from the members' caches even when it writes what was there, and
/// they read the team's fields at each region (x86 has no store that leaves a line alone
/// when the value does not change).
#[inline]
fn set<T: PartialEq>(f: &mut T, v: T) {
    if *f != v {
        *f = v;
    }
}

/// A task's team, as its task holds it (task.rs): a shared reference whose lifetime the
/// fork/join protocol bounds, not the borrow checker.
///
/// # Invariant
/// A team outlives the tasks bound to it. Its primary reuses or frees the team only after its
/// join found the region over (`Team::over`): no task left (`TeamTasks::pending` is zero),
/// and every member docked.
/// A task reaches its team only until its completion has counted it out (`task::finish`), and
/// the threads that complete tasks are the team's members, or a thread fulfilling a detached
/// task's event (`task::fulfill`), which may be no member: it counts itself in the team's
/// `TeamTasks::fulfilling` while its task is still counted, out after its last access, and
/// the primary waits for that count to be zero as for its members to leave.
///
/// A member reaches its team the same way, from its slot (`run_member`): the primary's
/// `join` waits for every member to dock (`Team::over`) before it changes or drops the
/// team.
///
/// A nested team holds its primary's team the same way (`Team::ancestor`): the nested region
/// runs inside its primary's share of the outer one, so the outer team outlives it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TeamRef(std::ptr::NonNull<Team>);

// SAFETY: a shared reference to a `Sync` team (the invariant above bounds its lifetime).
unsafe impl Send for TeamRef {}
// SAFETY: as above.
unsafe impl Sync for TeamRef {}

impl TeamRef {
    /// The team (alive: the invariant above).
    #[inline]
    pub fn get<'a>(self) -> &'a Team {
        // SAFETY: the invariant above.
        unsafe { self.0.as_ref() }
    }

    /// Whether this is `t`.
    #[inline]
    pub fn is(self, t: &Team) -> bool {
        std::ptr::eq(self.0.as_ptr(), t)
    }
}

impl Team {
    fn new(n: u32) -> Box<Team> {
        Box::new(Team::unboxed(n))
    }

    fn unboxed(n: u32) -> Team {
        Team {
            n,
            level: 0,
            active_level: 0,
            up: None,
            body: None,
            child_icv: Icv::initial(),
            bar: Barrier::new(),
            cbar: Barrier::new(),
            single: CachePadded::new(AtomicU64::new(0)),
            cancelled: AtomicBool::new(false),
            copyprivate: AtomicPtr::new(std::ptr::null_mut()),
            ring: (0..RING).map(|i| WorkShare::new(i as u64)).collect(),
            tasks: TeamTasks::new(),
            group: None,
            waits: Waits::default(),
            docked: CachePadded::new(AtomicU32::new(0)),
            members: Vec::new(),
            own_slot: None,
            dirty: RING,
            traced_from: None,
            bind: 0,
            places: Vec::new(),
        }
    }

    fn reset(&mut self, n: u32, level: u32, active_level: u32, up: Option<(TeamRef, u32)>, body: Option<Outlined>, icv: &Icv) {
        // Each field is written only if it changes (`set`): the members keep the lines they
        // read from the team's last region, and a loop of regions of one size changes none.
        set(&mut self.n, n);
        set(&mut self.level, level);
        set(&mut self.active_level, active_level);
        set(&mut self.up, up);
        set(&mut self.body, body);
        set(&mut self.child_icv, *icv);
        for b in [&mut self.bar, &mut self.cbar] {
            set(b.n.get_mut(), n);
            set(b.arrived.get_mut(), 0);
        }
        set(self.single.get_mut(), 0);
        set(self.cancelled.get_mut(), false);
        set(self.docked.get_mut(), 0);
        self.tasks.reset(n);
        self.waits.reset(n);
        if self.group.is_some() {
            self.group = None;
        }
        // Only the slots the previous region used need resetting.
        for (i, w) in self.ring.iter().enumerate().take(self.dirty) {
            w.reset(i as u64);
        }
        set(&mut self.dirty, 0);
        // (`members` keeps the last region's, unclaimed, for `claim` to try first.)
        if self.own_slot.is_some() {
            self.own_slot = None;
        }
        set(&mut self.bind, icv.bind);
    }

    /// A barrier of the whole team (its tasks complete before it ends).
    pub fn barrier(&self) {
        let traced = crate::ws::trace_barrier();
        self.bar.wait(self, None, Site::Barrier);
        crate::trace::end(traced, "omp barrier");
    }

    /// Where thread `tid` is as far as the team knows, for the diagnostics (watch.rs): a
    /// member whose slot no longer runs this team's share has left (or not started).
    fn member_state(&self, tid: u32) -> State {
        if tid == 0 {
            return State::Running;
        }
        let Some(s) = self.members.get(tid as usize - 1) else { return State::Running };
        // Acquire: pairs with `assign`'s Release store; every slot's state read below is then
        // this region's.
        if !self.waits.members_told.load(Ordering::Acquire) {
            return State::NotStarted;
        }
        if !std::ptr::eq(s.link.team.load(Ordering::Relaxed), self) {
            return State::Left;
        }
        // (A member recruited to help with tasks has left the region's barriers behind.)
        match s.link.state.load(Ordering::Acquire) & STATE {
            ASSIGNED => State::NotStarted,
            RUNNING => State::Running,
            _ => State::Left,
        }
    }

    /// Whether a member has left the region (its slot no longer runs this team's share).
    fn any_left(&self) -> bool {
        (1..self.n).any(|t| self.member_state(t) == State::Left)
    }

    /// Whether the region is over: no task of the team pending, no thread completing one
    /// from `omp_fulfill_event` still at it, every member docked (its last access to the
    /// team done). Read in that order, each with Acquire: a thread that recruits a docked
    /// member (`recruit`) is a member not docked, the primary, or a fulfiller; it lowers
    /// `docked` before the member can run, and the member's tasks complete (`pending`)
    /// after that, a fulfiller leaves (`fulfilling`) after it: whoever sees those
    /// counts at zero then sees `docked` lowered, until the member docks again.
    fn over(&self, members: u32) -> bool {
        self.tasks.pending() == 0 && self.tasks.fulfillers() == 0 && self.docked.load(Ordering::Acquire) == members
    }

    /// The join, for the primary: run the team's tasks until the region is over
    /// ([`Team::over`]). Sleeps on a member's slot that is not docked yet (`WAITER`), or,
    /// with tasks pending, for at most a millisecond at a time (queued tasks wake no one
    /// here).
    fn gather(&self) {
        let members = self.members.len() as u32;
        if self.over(members) {
            return;
        }
        let c = cur();
        let asleep = Asleep::default();
        let active = sys::SPIN_NS.load(Ordering::Relaxed) == u64::MAX;
        let looks = Cell::new(0u32);
        let spun_long = || {
            looks.set(looks.get().wrapping_add(1));
            if looks.get().is_multiple_of(1 << 20) {
                self.join_tick(&asleep);
            }
            false
        };
        let slice = Cell::new(std::time::Duration::from_millis(1));
        loop {
            if self.over(members) {
                break;
            }
            if task::run_one(c) {
                continue;
            }
            let busy = self.tasks.pending() > 0;
            let poll = self.tasks.poller();
            let done = || self.over(members) || poll() || (active && spun_long());
            if if busy { sys::spin_until_tasks(done) } else { sys::spin_until(done) } {
                continue;
            }
            self.join_tick(&asleep);
            // Nothing left to do but members recruited and not started (a core worker
            // recruited after its job had returned may first finish a Weft task): take
            // those assignments back rather than wait for them.
            if self.tasks.pending() == 0 && self.tasks.fulfillers() == 0 && self.unrecruit() {
                continue;
            }
            const MS: std::time::Duration = std::time::Duration::from_millis(1);
            // A member not docked yet: sleep until it docks (it wakes us), a millisecond at
            // most with tasks pending, else a slice (the diagnostics look between slices).
            let waiter = self.members.iter().find_map(|s| {
                let st = s.link.state.load(Ordering::Acquire);
                if is_docked(st) {
                    return None;
                }
                let w = st | WAITER;
                (st & WAITER != 0 || s.link.state.compare_exchange(st, w, Ordering::AcqRel, Ordering::Acquire).is_ok()).then_some((s, w))
            });
            let t0 = sys::sleep_start();
            match waiter {
                Some((s, w)) if busy => sys::futex_wait_timeout(&s.link.state, w, MS),
                Some((s, w)) => {
                    sys::futex_wait_timeout(&s.link.state, w, slice.get());
                    slice.set(crate::watch::next_slice(slice.get()));
                }
                // Every member docked, and either one is about to count itself (it docks,
                // then counts), or tasks are pending that no member may run now (the
                // others wait for a predecessor or an event): look again in a while.
                None if busy => self.tasks.sleep_briefly(|| self.tasks.pending() > 0 && !self.tasks.queued()),
                None => std::thread::yield_now(),
            }
            sys::sleep_end(t0);
        }
        if asleep.get().is_some() {
            self.waits.set(0, Site::None);
        }
    }

    /// Take back the HELP assignments no member has taken yet (its CAS to HELPING fails
    /// then): whether one was.
    #[cold]
    fn unrecruit(&self) -> bool {
        let mut any = false;
        for s in &self.members {
            let st = s.link.state.load(Ordering::Acquire);
            if st & STATE == HELP && s.link.state.compare_exchange(st, DOCKED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                // (The recruiter lowered the count: it is the member's again.)
                self.docked.fetch_add(1, Ordering::AcqRel);
                any = true;
            }
        }
        any
    }

    /// Diagnostics of a primary waiting at its join (watch.rs): it records where it is (a
    /// member asleep at a barrier then knows its wait cannot end: `Barrier::tick`, which
    /// also knows whether that barrier completed meanwhile) and reports a long wait.
    #[cold]
    fn join_tick(&self, asleep: &Asleep) {
        let slept = self.waits.slept(0, Site::End, asleep);
        self.waits.tick(0, self.n, Site::End, slept, false, &|t| self.member_state(t));
    }

    /// A task was queued while a member had docked: assign one such member again, to help
    /// run the team's tasks (HELP: no body; it docks again once none is pending). Only
    /// once every member has its assignment (before, a slot may be docked from the team's
    /// last region). Called by a thread of the region (a member not docked, the primary)
    /// or by a fulfiller of a task of the team: see [`Team::over`] for why `docked` is
    /// lowered before the slot changes.
    #[cold]
    fn recruit(&self) {
        if !self.waits.members_told.load(Ordering::Acquire) {
            return;
        }
        for s in &self.members {
            let st = s.link.state.load(Ordering::Acquire);
            if !is_docked(st) {
                continue;
            }
            self.docked.fetch_sub(1, Ordering::AcqRel);
            // AcqRel: publishes the lowered count to the member, which reads its slot with
            // Acquire before it touches the team.
            if s.link.state.compare_exchange(st, HELP, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                wake_slot(s, st);
                return;
            }
            self.docked.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A cancellable barrier: true when the region was cancelled.
    pub fn cbarrier(&self) -> bool {
        let traced = crate::ws::trace_barrier();
        let r = self.cbar.wait(self, Some(&self.cancelled), Site::Cancellable);
        crate::trace::end(traced, "omp barrier");
        r
    }

    /// A task was queued: wake a thread sleeping at a barrier to run it, or recruit a
    /// member that has docked.
    pub fn nudge(&self) {
        // (notify's SeqCst fence also orders the push before the sleeper counts below.)
        self.tasks.notify();
        for b in [&self.bar, &self.cbar] {
            // SeqCst: pairs with the sleeper's count-then-check of `queued` (wait_change).
            if b.sleepers.load(Ordering::SeqCst) > 0 {
                futex_wake(&b.generation, 1);
            }
        }
        // (A member that saw no task pending just before this one was counted in, and has
        // not counted itself docked yet, is missed: the task runs on the others.)
        if self.docked.load(Ordering::Relaxed) != 0 {
            self.recruit();
        }
    }

    /// The thread number of this team's ancestor at `level` (omp_get_ancestor_thread_num).
    pub fn ancestor(&self, tid: u32, level: u32) -> Option<(u32, u32)> {
        let mut tm = self;
        let mut id = tid;
        loop {
            if tm.level == level {
                return Some((id, tm.n));
            }
            let (up, up_tid) = tm.up.filter(|_| tm.level > level)?;
            // (An ancestor team outlives the teams nested in it: `TeamRef`.)
            id = up_tid;
            tm = up.get();
        }
    }
}

// ---------------------------------------------------------------------------------------
// The pool.

const DETACHED: u32 = 0;
const DOCKED: u32 = 1;
const ASSIGNED: u32 = 2;
const RUNNING: u32 = 3;
const SLEEPING: u32 = 4;
/// Assigned again after it docked, to help with tasks of the same region: no body to run
/// (`Team::recruit`).
const HELP: u32 = 5;
/// Running a share assigned HELP.
const HELPING: u32 = 6;
/// The state's bits; above them, [`WAITER`].
const STATE: u32 = 0xff;
/// Set by a primary about to sleep at its join on a member not docked yet (ASSIGNED,
/// HELP, RUNNING or HELPING): the member wakes it when it docks. The member's own change
/// from ASSIGNED or HELP keeps it (`dock`); its swap to DOCKED clears it (and so does the
/// primary's own taking back of a HELP, `Team::unrecruit`: it waits on no slot then).
const WAITER: u32 = 0x100;

/// Whether a slot's state is one a member leaves only for a new assignment: it runs
/// nothing of any team.
fn is_docked(state: u32) -> bool {
    matches!(state & STATE, DOCKED | SLEEPING | DETACHED)
}

/// How long a docked core worker sleeps on its slot, after its spin, before its job returns
/// to core: short, as Weft's tasks for that worker wait meanwhile, but long enough to catch
/// the next region of a program that forks in a loop, which then costs a futex wake-up
/// rather than a job posted to core and core's idle loop on the worker (under
/// `OMP_WAIT_POLICY=passive` too: a sleep does not take the processor).
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

pub struct Slot {
    /// What the primary writes to assign the slot and the member reads to take it, and the
    /// member's state: one cache line, so that an assignment reaches the member in one
    /// transfer of it.
    link: CachePadded<Link>,
    /// Written by primaries only (claim, join): kept off the member's line.
    claimed: AtomicBool,
    worker: Option<usize>,
    index: usize,
}

struct Link {
    state: AtomicU32,
    team: AtomicPtr<Team>,
    tid: AtomicU32,
}

const MAX_SLOTS: usize = 4096;

struct Pool {
    rt: Option<Arc<Runtime>>,
    /// Published once each (below `len`), never freed.
    slots: Box<[OnceLock<&'static Slot>]>,
    len: AtomicUsize,
    grow: Mutex<()>,
    /// Members recruited over all teams (for OMP_THREAD_LIMIT).
    extra: AtomicU32,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Start (or join) the process's Weft runtime. Unless the environment says how many OpenCL
/// and CUDA devices to use, a process that has not loaded the OpenCL (or CUDA) library gets
/// none: a plain OpenMP program then starts in about a millisecond instead of paying device
/// discovery (PoCL loads LLVM: ~35 ms and ~70 MiB), and its tasks have no use for them. A
/// program that also uses OpenCL links libOpenCL, so Weft's ICD finds its devices there.
pub fn start_runtime() -> Result<Arc<weft_core::Runtime>, weft_core::Error> {
    weft_core::capi::shared_runtime_with(|c| {
        // Workers on the CPUs the process had when the library was loaded, not those of
        // the thread that happens to start the runtime (a program may bind its initial
        // thread before its first parallel region).
        if c.cpus.is_none() {
            c.cpus = Some(crate::env::env().cpus.iter().map(|&c| c as usize).collect());
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        if c.nopencl.is_none() && !maps.contains("/libOpenCL.so") {
            c.nopencl = Some(0);
        }
        if c.ncuda.is_none() && !maps.contains("/libcuda.so") {
            c.ncuda = Some(0);
        }
    })
}

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let rt = match start_runtime() {
            Ok(rt) => Some(rt),
            Err(e) => {
                eprintln!("weft-omp: the Weft runtime did not start ({e}); OpenMP teams use threads of their own");
                None
            }
        };
        let p = Pool {
            rt,
            slots: (0..MAX_SLOTS).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
            grow: Mutex::new(()),
            extra: AtomicU32::new(0),
        };
        // Core workers have `WORKER_STACK` (8 MiB) stacks: a program that asks for bigger
        // OpenMP stacks gets threads of our own, made with its size.
        let core_stack = weft_core::WORKER_STACK;
        let workers_fit = env::env().stacksize.is_none_or(|s| s <= core_stack);
        if let Some(rt) = p.rt.as_ref().filter(|_| workers_fit) {
            for w in rt.workers().iter().filter(|w| w.arch == weft_core::Arch::Cpu) {
                let i = p.len.load(Ordering::Relaxed);
                let _ = p.slots[i].set(new_slot(Some(w.id), i, false));
                p.len.store(i + 1, Ordering::Release);
            }
        }
        crate::trace::set(p.rt.as_ref().is_some_and(|rt| rt.tracing()));
        p
    })
}

/// A new slot, leaked: slots live as long as the process.
fn new_slot(worker: Option<usize>, index: usize, claimed: bool) -> &'static Slot {
    Box::leak(Box::new(Slot {
        link: CachePadded::new(Link {
            state: AtomicU32::new(DETACHED),
            team: AtomicPtr::new(std::ptr::null_mut()),
            tid: AtomicU32::new(0),
        }),
        claimed: AtomicBool::new(claimed),
        worker,
        index,
    }))
}

fn slot(i: usize) -> &'static Slot {
    // (Set before `len` passed `i`, with Release: this Acquire load of `len` or an earlier
    // one saw it.)
    pool().slots[i].get().expect("invariant: slots below len are published")
}

/// A new OS thread's slot, claimed for the caller.
fn spawn_slot() -> &'static Slot {
    let p = pool();
    let _g = p.grow.lock().unwrap_or_else(|e| e.into_inner());
    let i = p.len.load(Ordering::Relaxed);
    if i >= MAX_SLOTS {
        eprintln!("weft-omp: more than {MAX_SLOTS} OpenMP threads requested; aborting");
        std::process::abort();
    }
    let s = new_slot(None, i, true);
    let _ = p.slots[i].set(s);
    p.len.store(i + 1, Ordering::Release);
    let stack = env::env().stacksize.unwrap_or(8 << 20);
    let r = std::thread::Builder::new().name(format!("weft-omp-{i}")).stack_size(stack).spawn(move || {
        crate::places::init_own_thread();
        loop {
            while s.link.state.load(Ordering::Acquire) == DETACHED {
                sys::futex_wait(&s.link.state, DETACHED);
            }
            dock(s, false);
        }
    });
    if let Err(e) = r {
        eprintln!("weft-omp: cannot create an OpenMP thread ({e}); aborting");
        std::process::abort();
    }
    s
}

/// A member's life: run assignments until detached. Returns when the slot goes DETACHED.
/// Each share run counts as a job in the statistics (`WEFT_STATS`), except the first one when
/// `counted` (a core worker's docking job: core counted it when it started the job); a
/// share that only helps with tasks is none, and a docking job not posted for a share is
/// taken out of the count.
fn dock(s: &'static Slot, mut counted: bool) {
    // (The thread's statistics line, looked up once: the same for each share it runs.)
    let mut counter = None;
    // Acquire: pairs with the primary's swap to ASSIGNED after writing the assignment (or a
    // recruiter's CAS to HELP).
    let assigned = || matches!(s.link.state.load(Ordering::Acquire) & STATE, ASSIGNED | HELP);
    // A docking job posted to help with tasks, or whose recruit was taken back before it
    // ran, is no share: out of core's count at once (not when it returns, which may be
    // after the program's statistics were printed at exit).
    if counted && s.link.state.load(Ordering::Acquire) & STATE != ASSIGNED {
        if let Some(rt) = started_runtime() {
            rt.counter().not_a_job();
        }
        counted = false;
    }
    loop {
        if !assigned() {
            if spin_until(assigned) || (s.worker.is_some() && linger(s)) {
                continue;
            }
            match s.link.state.compare_exchange(DOCKED, DETACHED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(_) => continue,
            }
        }
        // Take the assignment: to RUNNING or HELPING, keeping a waiting primary's WAITER
        // bit. (A CAS: the primary may take back a HELP not taken yet, `Team::gather`.)
        let cur = s.link.state.load(Ordering::Acquire);
        let st = cur & STATE;
        let help = st == HELP;
        let to = (cur & !STATE) | if help { HELPING } else { RUNNING };
        if !matches!(st, ASSIGNED | HELP) || s.link.state.compare_exchange(cur, to, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        let team = std::ptr::NonNull::new(s.link.team.load(Ordering::Relaxed)).map(TeamRef);
        let tid = s.link.tid.load(Ordering::Relaxed);
        if counter.is_none() {
            counter = started_runtime().map(|rt| rt.counter());
        }
        // (A share that only helps with tasks is not counted: the region's share was.)
        if !help
            && !std::mem::take(&mut counted)
            && let Some(k) = counter
        {
            k.job();
        }
        // (The primary keeps the team as it is until we have docked: `TeamRef`.)
        run_member(s, team.expect("invariant: an assigned slot has a team"), tid, counter, help);
    }
}

/// Sleep on a docked slot for at most [`LINGER`]: whether it was assigned meanwhile (else it
/// is DOCKED again).
fn linger(s: &Slot) -> bool {
    if s.link.state.compare_exchange(DOCKED, SLEEPING, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return true;
    }
    // (An early return, spurious or a signal's, only ends the linger early.)
    sys::futex_wait_timeout(&s.link.state, SLEEPING, LINGER);
    s.link.state.compare_exchange(SLEEPING, DOCKED, Ordering::AcqRel, Ordering::Acquire).is_err()
}

fn dock_job(i: usize) {
    dock(slot(i), true);
    // The worker goes back to core: undo any binding to an OpenMP place.
    crate::places::leave();
}

/// Run one member's share of a region on slot `s`, or with `help` only the team's tasks
/// (`Team::recruit`), then dock (`team` is kept as it is until the member has: [`TeamRef`]).
fn run_member(s: &Slot, team: TeamRef, tid: u32, counter: Option<weft_core::Counter<'static>>, help: bool) {
    let t = team.get();
    let prev = CUR.with(|c| c.get());
    // The share starts before the combined construct's slice inside it.
    let traced = runtime().filter(|rt| rt.tracing() && !help).map(|rt| (rt, std::time::Instant::now()));
    let mut c = Ctx::new(t, t.group.clone(), tid, t.child_icv, counter);
    if !help && t.ring[0].preinit() {
        c.ws_gen = 1;
        c.ws = Some(0);
        c.ws_cur_gen = 0;
        crate::ws::trace_begin(&mut c, "omp for");
    }
    CUR.with(|x| x.set(&mut c));
    if !help {
        crate::places::enter_member(t.places.get(tid as usize), sys::oversubscribed());
        if let Some(body) = t.body {
            body.call();
        }
    }
    // The end: run the team's tasks until none is pending (no barrier: the primary's join
    // gathers the members; a task queued after we docked recruits a docked member again).
    let traced_end = crate::ws::trace_barrier();
    task::drain(cur());
    crate::trace::end(traced_end, "omp barrier");
    if let Some((rt, from)) = traced {
        rt.trace_span("omp parallel", from);
    }
    CUR.with(|x| x.set(prev));
    c.end(t);
    // Docked, then counted: the slot says so before the count lets the primary assign it
    // again (a recruiter may take it back in between: it lowered the count first).
    let was = s.link.state.swap(DOCKED, Ordering::Release);
    // Release: our last access to the team (`Team::over`).
    t.docked.fetch_add(1, Ordering::Release);
    if was & WAITER != 0 {
        // (Our own slot: it outlives every team.)
        futex_wake(&s.link.state, 1);
    }
}

/// How many threads a region asking for `req` (0: no clause) gets (OpenMP 5.1 §2.6.1).
fn team_size(parent: &Ctx, req: u32, if_clause: bool) -> u32 {
    if !if_clause {
        return 1;
    }
    let pt = parent.team();
    let active = pt.active_level;
    if active >= parent.icv.max_active_levels {
        return 1;
    }
    let mut n = if req > 0 { req } else { parent.icv.nthreads }.max(1);
    let e = env::env();
    if parent.icv.dynamic {
        n = n.min(e.nprocs.max(1));
    }
    // Reserve the members now, atomically: two threads forking at once must not both take
    // the last threads OMP_THREAD_LIMIT allows (the contention group counts the initial
    // thread, hence `limit - 1` members at most). `join` gives them back.
    let want = n - 1;
    let mut got = want;
    let limit = parent.icv.thread_limit;
    // Relaxed: a counter; no data is published through it.
    let _ = pool().extra.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        got = if limit == u32::MAX { want } else { want.min((limit - 1).saturating_sub(used)) };
        Some(used + got)
    });
    got + 1
}

/// Start a region: build the team, recruit its members and make the calling thread its
/// thread 0. `setup` initializes worksharing slot 0 for the combined constructs.
pub fn fork(body: Option<Outlined>, req: u32, flags: u32, if_clause: bool, setup: Option<Setup>) {
    fork_with(body, req, flags, if_clause, setup, None);
}

/// [`fork`], with the task reductions of a `parallel reduction(task, …)` (if any):
/// their blocks are allocated for the team's size and its implicit tasks start in a
/// taskgroup holding them. Returns the team's size.
pub fn fork_with(
    body: Option<Outlined>,
    req: u32,
    flags: u32,
    if_clause: bool,
    setup: Option<Setup>,
    reductions: Option<Descriptor>,
) -> u32 {
    // (Nothing in `fork_in` forks or joins: the thread's regions stay borrowed until the
    // team is set up and its members are told.)
    let p = PRIMARY.take().unwrap_or_else(|| {
        let worker = runtime().and_then(|rt| rt.current_worker());
        Box::leak(Box::new(Primary { regions: Vec::new(), depth: 0, worker }))
    });
    let n = fork_in(p, body, req, flags, if_clause, setup, reductions);
    PRIMARY.set(Some(p));
    n
}

#[allow(clippy::too_many_arguments)]
fn fork_in(
    p: &mut Primary,
    body: Option<Outlined>,
    req: u32,
    flags: u32,
    if_clause: bool,
    setup: Option<Setup>,
    reductions: Option<Descriptor>,
) -> u32 {
    let parent = cur();
    let (n, bind, icv, pt, up) = parent.get(|pc| {
        let n = team_size(pc, req, if_clause);
        // As libgomp: a proc_bind clause counts only where bind-var is not false; the
        // child's bind-var is the next OMP_PROC_BIND list entry, or else the team's policy.
        let clause = (flags & 7) as u8;
        let bind = if pc.icv.bind != env::BIND_FALSE && clause != env::BIND_FALSE { clause } else { pc.icv.bind };
        let mut icv = pc.icv.child();
        if icv.bind_idx == pc.icv.bind_idx {
            icv.bind = bind;
        }
        (n, bind, icv, pc.team(), (pc.team_ref(), pc.tid))
    });
    let ptr = {
        let d = p.depth;
        if d == p.regions.len() {
            p.regions.push(Region { team: Team::new(n), ctx: Box::new(None), parent: std::ptr::null_mut() });
        }
        p.depth = d + 1;
        let r = &mut p.regions[d];
        r.parent = parent.p.as_ptr();
        // The set-up, before any member sees the team.
        let t = &mut *r.team;
        t.reset(n, pt.level + 1, pt.active_level + u32::from(n > 1), Some(up), body, &icv);
        set(&mut t.bind, bind);
        match pt.places.get(up.1 as usize) {
            Some(&a) => crate::places::assign(a, bind, n, &mut t.places),
            None if t.places.is_empty() => {}
            None => t.places.clear(),
        }
        if let Some(s) = setup {
            s(&t.ring[0], n);
        }
        if let Some(r) = reductions {
            let g = task::new_group(None, false);
            task::reduction_register_in(&g, r, n);
            t.group = Some(g);
        }
        if n > 1 {
            claim(t, p.worker);
        } else if !t.members.is_empty() {
            t.members.clear();
        }
        if let Some(rt) = runtime() {
            set(&mut t.traced_from, rt.tracing().then(std::time::Instant::now));
        }
        let t: &Team = &r.team;
        if n > 1 {
            assign(t);
        }
        let c = match r.ctx.as_mut() {
            Some(c) => {
                c.renew(t, t.group.clone(), 0, &icv);
                c
            }
            None => r.ctx.insert(Ctx::new(t, t.group.clone(), 0, icv, None)),
        };
        // The primary's share (thread 0's implicit task) counts as a job of the thread
        // running it: the initial thread's on the statistics' "other threads" line.
        if let Some(k) = c.counter {
            k.job();
        }
        if t.ring[0].preinit() {
            c.ws_gen = 1;
            c.ws = Some(0);
            crate::ws::trace_begin(c, "omp for");
        }
        // (The context's box stays put until the join; `CUR` points into it meanwhile.)
        c as *mut Ctx
    };
    CUR.with(|x| x.set(ptr));
    n
}

/// The CPU worker bound to the CPU the calling thread runs on (when workers are bound).
fn worker_on_my_cpu(p: &Pool) -> Option<usize> {
    let rt = p.rt.as_ref().filter(|rt| rt.config().bind)?;
    let cpu = sys::current_cpu()?;
    rt.workers().iter().find(|w| w.arch == weft_core::Arch::Cpu && w.pu == Some(cpu)).map(|w| w.id)
}

/// Claim the members of a new team (before any of them sees it: [`assign`]); `me_worker`:
/// the core worker the calling thread is, if any. `t.members` holds the previous region's
/// members (none claimed).
fn claim(t: &mut Team, me_worker: Option<usize>) {
    let need = (t.n - 1) as usize;
    // The previous region's members again, in the same order, when they are as many and
    // all free (the common case: a loop of regions of one size), without the search below:
    // the same thread numbers then go to the same threads, as the search itself ensures.
    if me_worker.is_none() && t.members.len() == need && claim_all(&t.members) {
        sys::BUSY.fetch_add(t.n as i64, Ordering::Relaxed);
        return;
    }
    t.members.clear();
    let p = pool();
    // A core worker forking outside any team holds its own slot, so that no team posts it
    // a job it could only run after this region.
    if let Some(w) = me_worker {
        let len = p.len.load(Ordering::Acquire);
        if let Some(s) = (0..len).map(slot).find(|s| s.worker == Some(w))
            && s.claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            t.own_slot = Some(s);
        }
    }
    let len = p.len.load(Ordering::Acquire);
    // The core worker bound to the CPU the primary runs on comes after the other workers:
    // until the OS moved the primary elsewhere, the two would share that CPU. It is decided
    // at the thread's first fork and kept: the same thread numbers must go to the same
    // threads from region to region, else threadprivate data would not persist (copyin-1.c
    // of libgomp's testsuite) when the primary has moved since.
    let shared = if me_worker.is_none() {
        PRIMARY_CPU_WORKER.with(|c| {
            let w = c.get().unwrap_or_else(|| worker_on_my_cpu(p));
            c.set(Some(w));
            w
        })
    } else {
        None
    };
    // The other workers, then that one, then the OS threads (whose slots come after the
    // workers' and are only ever appended): the same order at every fork.
    let workers = (0..len).filter(|&i| slot(i).worker.is_some_and(|w| Some(w) != shared));
    let last = shared.and_then(|w| (0..len).find(|&i| slot(i).worker == Some(w)));
    let threads = (0..len).filter(|&i| slot(i).worker.is_none());
    for i in workers.chain(last).chain(threads) {
        if t.members.len() == need {
            break;
        }
        let s = slot(i);
        if !s.claimed.load(Ordering::Relaxed) && s.claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            t.members.push(s);
        }
    }
    while t.members.len() < need {
        t.members.push(spawn_slot());
    }
    sys::BUSY.fetch_add(t.n as i64, Ordering::Relaxed);
}

/// Give the claimed members their assignment in `t` (which they reach as a [`TeamRef`]).
fn assign(t: &Team) {
    let team = t as *const Team as *mut Team;
    for (k, s) in t.members.iter().enumerate() {
        s.link.team.store(team, Ordering::Relaxed);
        s.link.tid.store(k as u32 + 1, Ordering::Relaxed);
        // AcqRel: publishes the assignment (and the team's reset) to the member.
        let prev = s.link.state.swap(ASSIGNED, Ordering::AcqRel);
        wake_slot(s, prev);
    }
    // Release: after every swap above (the diagnostics' `Team::member_state`, and
    // `Team::recruit`).
    t.waits.members_told.store(true, Ordering::Release);
}

/// A slot was just assigned, from state `prev`: get its thread to look (wake it if it
/// sleeps on the slot; if it is detached, post a core worker its docking job, or wake the
/// OS thread).
fn wake_slot(s: &'static Slot, prev: u32) {
    if prev == SLEEPING {
        futex_wake(&s.link.state, 1);
    } else if prev == DETACHED {
        match (s.worker, pool().rt.as_ref()) {
            (Some(w), Some(rt)) => {
                let f: weft_core::JobFn = job_fn();
                if let Err(e) = rt.post_job(w, f, s.index) {
                    eprintln!("weft-omp: cannot recruit worker {w} ({e}); aborting");
                    std::process::abort();
                }
            }
            _ => futex_wake(&s.link.state, 1),
        }
    }
}

/// Claim every slot of `slots`, or none (releasing those it took): whether it did.
fn claim_all(slots: &[&'static Slot]) -> bool {
    for (k, s) in slots.iter().enumerate() {
        if s.claimed.load(Ordering::Relaxed) || s.claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            for s in &slots[..k] {
                s.claimed.store(false, Ordering::Release);
            }
            return false;
        }
    }
    true
}

fn job_fn() -> weft_core::JobFn {
    static F: OnceLock<weft_core::JobFn> = OnceLock::new();
    F.get_or_init(|| Arc::new(dock_job)).clone()
}

/// End the region the calling thread is thread 0 of: run the team's tasks until the region is
/// over (every task complete, every member docked: `Team::gather`).
pub fn join() {
    let c = ctx();
    let t = c.team();
    if t.up.is_none() {
        eprintln!("weft-omp: GOMP_parallel_end called outside a parallel region; ignored");
        return;
    }
    let traced = crate::ws::trace_barrier();
    // (While oversubscribed the wait yields at once, to a member that may share this
    // processor: libgomp's for-15.c, 3 threads on 2 cores.)
    t.gather();
    crate::trace::end(traced, "omp barrier");
    if let (Some(from), Some(rt)) = (t.traced_from, runtime()) {
        rt.trace_span("omp parallel", from);
    }
    let members = t.members.len() as u32;
    for s in t.members.iter().chain(t.own_slot.iter()) {
        s.claimed.store(false, Ordering::Release);
    }
    if members > 0 {
        pool().extra.fetch_sub(members, Ordering::Relaxed);
        sys::BUSY.fetch_sub(t.n as i64, Ordering::Relaxed);
    }
    let cancelled = t.cancelled.load(Ordering::Relaxed);
    let mine: *const Ctx = c;
    {
        // (A team of a region that is not the root one is the primary's innermost.)
        let Some(p) = PRIMARY.take() else { return };
        let Some(d) = p.depth.checked_sub(1) else {
            PRIMARY.set(Some(p));
            return;
        };
        p.depth = d;
        let r = &mut p.regions[d];
        debug_assert!(r.ctx.as_ref().as_ref().is_some_and(|r| std::ptr::eq(r, mine)), "invariant: the joining thread is the primary");
        CUR.with(|x| x.set(r.parent));
        // No member references the team any more: it is the primary's alone again.
        let t = &mut *r.team;
        // Every task of the region is complete (the gather): the group's last users.
        // (Written only if they change: `set`.)
        if t.group.is_some() {
            t.group = None;
        }
        if let Some(c) = r.ctx.as_mut() {
            // Every thread entered the same constructs as thread 0, unless the region was
            // cancelled.
            set(&mut t.dirty, if cancelled { RING } else { (c.ws_gen as usize).min(RING) });
            task::end_implicit(c);
            debug_assert!(c.deque.len() == 0, "invariant: a share ends with its deque empty");
            // What the context holds of the region goes now, not at the next fork (which
            // renews the rest; its deque, empty now, stays with it for this team's next region).
            c.task.group = None;
            c.doacross = None;
        }
        PRIMARY.set(Some(p));
    }
}

/// The shared runtime the teams borrow workers from (None: it did not start).
pub fn runtime() -> Option<&'static Arc<Runtime>> {
    pool().rt.as_ref()
}

/// [`runtime`], without starting it (None: not started yet, or it did not start).
pub fn started_runtime() -> Option<&'static Arc<Runtime>> {
    POOL.get()?.rt.as_ref()
}

/// A whole region: fork, run thread 0's share, join.
pub fn parallel(body: Outlined, req: u32, flags: u32, setup: Option<Setup>) {
    fork(Some(body), req, flags, true, setup);
    body.call();
    join();
}

/// The run-sched ICV, decoded (kind without the monotonic bit, chunk).
pub fn run_sched() -> (i32, i32) {
    let c = ctx();
    (c.icv.run_sched & !SCHED_MONOTONIC, c.icv.run_chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A team of two whose member's slot no thread serves (as a detached core worker's,
    /// whose new docking job waits behind a Weft task), in `state`, counted docked if it is.
    fn team_with_idle_member(state: u32) -> (Team, &'static Slot) {
        let mut t = Team::unboxed(2);
        let s = new_slot(None, usize::MAX, true);
        s.link.state.store(state, Ordering::Relaxed);
        t.members.push(s);
        *t.docked.get_mut() = u32::from(is_docked(state));
        (t, s)
    }

    /// Recruitment's bookkeeping: a docked member is assigned HELP and no longer counted
    /// docked; a HELP no thread has taken is taken back at the join and counted again, so
    /// the region ends without waiting for that thread.
    #[test]
    fn a_recruit_no_thread_took_is_taken_back() {
        let (t, s) = team_with_idle_member(DETACHED);
        // Before every member has its assignment, a docked slot may be the last region's.
        t.recruit();
        assert_eq!(s.link.state.load(Ordering::Relaxed), DETACHED, "recruited before the members were told");
        t.waits.members_told.store(true, Ordering::Relaxed);
        assert!(t.over(1));
        t.recruit();
        assert_eq!(s.link.state.load(Ordering::Relaxed), HELP);
        assert!(!t.over(1), "a recruited member counts as not docked");
        assert!(t.unrecruit());
        assert_eq!(s.link.state.load(Ordering::Relaxed), DOCKED);
        assert!(t.over(1));
        assert!(!t.unrecruit(), "nothing left to take back");
    }

    /// A member running (its share, or a HELP it took), or waited on by the primary, is
    /// neither recruited nor taken back.
    #[test]
    fn running_members_are_left_alone() {
        for state in [RUNNING, HELPING | WAITER, ASSIGNED | WAITER] {
            let (t, s) = team_with_idle_member(state);
            t.waits.members_told.store(true, Ordering::Relaxed);
            t.recruit();
            assert!(!t.unrecruit());
            assert_eq!(s.link.state.load(Ordering::Relaxed), state);
            assert!(!t.over(1), "state {state:#x} counted docked");
        }
    }
}
