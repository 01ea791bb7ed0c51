//! Explicit tasks (OpenMP 5.1 §2.12): creation, queues, waiting, taskgroups, detach,
//! dependencies and task reductions.
//!
//! **Owns**: what a task is here ([`TaskBox`]), the team's ready queues ([`TeamTasks`]),
//! the calling thread's current task ([`Cur`], kept in its `Ctx`), and every wait for tasks
//! (taskwait, taskgroup end, barriers, undeferred tasks waiting for their dependencies),
//! and the dependencies between siblings that `depend` clauses make ([`DepMap`], [`Link`]):
//! as libgomp, a map per parent task from depend address to the children that a later
//! sibling naming it waits for, and per task its successors and a count of the
//! predecessors it still waits for. Core's dependency machinery (data handles, trees,
//! phase lists) is not involved: an OpenMP task's dependencies are only on its siblings'
//! addresses, and a submission there cost the creating thread several times libgomp's
//! whole `GOMP_task` (bench/RESULTS.md, 2026-11-29).
//!
//! # Work first
//! Creation takes no lock shared by the team: a task is at most one allocation (its data
//! inline up to [`INLINE`](crate::abi::gomp::data::INLINE) bytes, abi/gomp/data.rs; a task with depend clauses or bigger data reuses a
//! finished task's box, from its thread's cache or a lock-free pool); a task with depend
//! clauses takes one uncontended lock per incomplete predecessor. A task without
//! dependencies goes on the creating thread's own deque (LIFO for its owner, stolen FIFO by
//! the others); one with dependencies joins the team's FIFO queue once core says they are
//! met, in the order tasks become ready, as in libgomp, except that the first task a
//! finishing task releases goes to its thread's own deque when that is empty (`ready`).
//! Past 8 queued tasks per thread, and in final or if(0) tasks, new tasks run at once in
//! the creating thread (libgomp's throttle), so a loop creating a million tasks never holds
//! more than a few hundred.
//!
//! # Who runs tasks
//! Team threads only (task reductions index private copies by thread number): at
//! barriers, taskwait, taskgroup end and while an undeferred task waits for its
//! dependencies. A team's barrier completes only when the team has no task left.
//!
//! # Lifetimes
//! A task holds its parent's child counter ([`Node`]) and its taskgroup ([`Group`]) shared
//! (`Arc`: either may outlive the task that made it), and its team as a [`TeamRef`] (a
//! team's region ends only once its pending count is zero, and that decrement is among a
//! finishing task's last accesses: team.rs argues it; a thread that completes a task in
//! `omp_fulfill_event` may be no member of the team, so it is counted in the team's
//! `fulfilling` until its last access, which the team's primary waits for). The calling thread's context comes
//! as a [`CtxRef`], lent for one step at a time (team.rs argues that too). A task's data,
//! its copy and its detach event handle are read and written in abi/gomp/data.rs
//! ([`TaskData`], [`Storage`], [`Detach`]); a task body is called through
//! [`OutlinedTask`]; the unsafe code left here makes those values (each argues why the body
//! goes with that data and runs once there), fills a new box's copy, takes back an
//! event's reference and lends a box's data room to the kmp layer ([`lend_box`]). A thread's own deque is its context's ([`OwnDeque`], lent by the team
//! for the thread's share): only that thread can reach it.

use crate::abi::gomp::data::{Detach, INLINE, Storage, TaskData};
use crate::abi::gomp::reduction::{self, Descriptor};
use crate::env::env;
use crate::outlined::OutlinedTask;
use crate::sys;
use crate::team::{self, Body, Ctx, CtxRef, Icv, Team, TeamRef, cur};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;
use crossbeam_utils::atomic::AtomicCell;
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weft_core::AccessMode;

/// The clauses of a task that change how it is created, as each ABI's layer decodes them
/// from its own flags (abi/gomp/flags.rs, abi/kmp/task.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskFlags {
    /// `final(true)`.
    pub final_: bool,
    /// Depend clauses ([`Spawn::deps`]; possibly none left after decoding).
    pub depend: bool,
    /// A `priority` clause ([`Spawn::priority`]).
    pub priority: bool,
    /// A `detach` clause ([`Spawn::detach`]).
    pub detach: bool,
}

/// GOMP_taskloop's clauses beyond a task's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskloopFlags {
    /// The loop counts up (the unsigned form says so; the signed one by its step).
    pub up: bool,
    /// `num_tasks` is a `grainsize` (else a number of tasks).
    pub grainsize: bool,
    /// `strict` on `grainsize` or `num_tasks`.
    pub strict: bool,
    /// The `if` clause's value.
    pub if_: bool,
    /// `nogroup`.
    pub nogroup: bool,
    /// A `reduction` clause: the data carries the reduction descriptor.
    pub reduction: bool,
}

/// Tasks queued on the creating thread's deque, per thread of the team, past which new
/// tasks run at once. libgomp counts 64 per thread over the team; fewer makes a creator
/// that thieves keep up with run most tasks inline, which is cheaper than queueing them
/// (tasks_million at 2 threads: 64 gave 1.4× libgomp's time, 16 about 0.9×, 8 0.66×), and
/// 8 per thread is still enough for every thief to find work. Tasks waiting for their
/// dependencies are not queued and do not count, else a graph would run serially.
const THROTTLE: usize = 8;

/// Tasks queued or running (not those waiting for a predecessor), per thread of the team,
/// past which a new task with depend clauses waits for its dependencies and runs at once:
/// libgomp's rule (`team->task_count > 64 * team->nthreads` in GOMP_task; a task with
/// unmet dependencies returns before it is counted). Counting the blocked tasks too, as
/// before, held the creator on about half of the 816-task Cholesky's tasks, and each
/// creation after such a hold met cold caches (bench/RESULTS.md, 2026-11-29, session 30).
const DEPEND_THROTTLE: usize = 64;
/// Tasks not complete (blocked ones included), per thread of the team, past which the depend
/// throttle holds the creator too: a loop creating a million dependent tasks keeps a bounded
/// number of them (libgomp's creator runs ahead of a graph without bound).
const DEPEND_CAP: usize = 1024;

/// How often a blind wait (one whose scope leaves queued tasks alone) looks for tasks it
/// may run while it spins: every this many turns of the spin, about 1-5 µs ([`wait_until`]).
const BLIND_RETRY: u32 = 64;

/// A task's count of incomplete child tasks (what taskwait waits for). Created with its
/// first deferred child; the children hold it, so it outlives a parent that ends first.
#[derive(Default)]
pub struct Node {
    children: AtomicUsize,
}

/// A taskgroup: its tasks and their descendants not yet complete. Shared by the task that
/// opened it (its context's current group), the groups opened inside it and its tasks.
pub struct Group {
    pending: AtomicUsize,
    pub cancelled: AtomicBool,
    outer: Option<Arc<Group>>,
    /// The task reductions registered in it (GOMP_taskgroup_reduction_register), or the
    /// enclosing group's.
    pub reductions: reduction::Slot,
    /// Opened by a worksharing construct with task reductions (cancellation looks past it).
    pub workshare: bool,
}

/// A new group inside `outer` (whose task reductions it sees until it registers its own).
pub fn new_group(outer: Option<Arc<Group>>, workshare: bool) -> Arc<Group> {
    let red = outer.as_ref().and_then(|o| o.reductions.load(Ordering::Relaxed));
    Arc::new(Group {
        pending: AtomicUsize::new(0),
        cancelled: AtomicBool::new(false),
        outer,
        reductions: reduction::Slot::new(red),
        workshare,
    })
}

/// Sibling scope: for each depend address named by a task's children, the children that a
/// later sibling naming it must wait for (libgomp's per-parent hash table of addresses).
/// Only the parent's thread touches it (children are created by their parent's thread);
/// the tasks it holds are complete or not, which it reads from their [`Link`]s.
#[derive(Default)]
struct DepMap {
    map: HashMap<usize, Entry, weft_core::hash::BuildAddrHasher>,
    /// The size at which a new address first sweeps out the entries whose tasks are all
    /// complete ([`DepMap::sweep`]).
    sweep_at: usize,
}

/// One address of a [`DepMap`]: its last writer (`out`, `inout`, `mutexinoutset`,
/// `inoutset`: every mode but `in`) and the readers (`in`) created since. `mutexinoutset`
/// and `inoutset` tasks are ordered among themselves in creation order, as libgomp orders
/// them: a correct order (their set-mates may run in any order, but not together), only
/// less parallel. A new reader waits for the writer; a
/// new writer waits for the readers (each of which waited for the writer or found it
/// complete), or for the writer when there are none, and then replaces them all.
#[derive(Default)]
struct Entry {
    out: Option<Arc<TaskBox>>,
    ins: smallvec::SmallVec<[Arc<TaskBox>; 2]>,
}

impl Entry {
    /// No task of the entry is still to complete: a later sibling has nothing to wait for.
    fn idle(&self) -> bool {
        self.out.as_ref().is_none_or(|t| t.link.done()) && self.ins.iter().all(|t| t.link.done())
    }

    /// Drop the entry's tasks (each box back to its thread's cache if this was its last
    /// reference: [`recycle`]).
    #[inline]
    fn clear(&mut self) {
        if let Some(t) = self.out.take() {
            recycle(t);
        }
        self.clear_ins();
    }

    /// Drop the readers ([`Entry::clear`]'s second half). The empty list, a writer's usual
    /// case, is told without a `drain` (its setup and drop were most of a writer's 47
    /// instructions of `clear`).
    #[inline(always)]
    fn clear_ins(&mut self) {
        if !self.ins.is_empty() {
            self.drain_ins();
        }
    }

    #[inline(never)]
    fn drain_ins(&mut self) {
        for t in self.ins.drain(..) {
            recycle(t);
        }
    }
}

/// A task's place in its siblings' dependency graph: whether it is complete, the later
/// siblings waiting for it, and how many of its own predecessors it still waits for. Only
/// tasks with depend clauses are ever in a [`DepMap`], and so only they have successors.
#[derive(Default)]
struct Link {
    /// Set once the task is complete, under `succ`'s lock (so a creator that finds it false
    /// under the lock knows its push will be seen by the completion).
    done: AtomicBool,
    /// Siblings created while it was incomplete that wait for it; taken by its completion.
    succ: crate::lock::Locked<smallvec::SmallVec<[Arc<TaskBox>; 4]>>,
    /// Predecessors not yet complete, plus [`LINKING`] while its creator links it; the
    /// decrement that brings it to zero makes the task ready.
    waiting: AtomicUsize,
}

/// What [`Link::waiting`] starts from while a task's creator links it to its predecessors:
/// a predecessor completing meanwhile cannot bring the count to zero. The creator takes it
/// off again in one step, less the edges it made ([`link_deps`]).
const LINKING: usize = usize::MAX / 2;

impl Link {
    #[inline]
    fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Make `t` wait for the task owning this link, unless that one is complete; whether it
    /// does. An edge already made for `t` (a predecessor named through two addresses) is
    /// not made twice: only `t`'s creator pushes `t`, so it would be the last one pushed.
    fn add_successor(&self, t: &Arc<TaskBox>) -> bool {
        if self.done() {
            return false;
        }
        let mut succ = self.succ.lock();
        if self.done.load(Ordering::Relaxed) || succ.last().is_some_and(|l| Arc::ptr_eq(l, t)) {
            return false;
        }
        succ.push(t.clone());
        true
    }

    /// The task is complete: mark it so and make ready the successors it was the last
    /// predecessor of.
    fn complete(&self) {
        let succ = {
            let mut succ = self.succ.lock();
            self.done.store(true, Ordering::Release);
            std::mem::take(&mut *succ)
        };
        for s in succ {
            if s.link.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
                s.team.get().tasks.blocked.fetch_sub(1, Ordering::Relaxed);
                s.ready();
            }
        }
    }
}

/// The predecessors of an access of `mode` to the address of `e` (see [`Entry`]), given to
/// `pred`; then, if `t` is given, `t` recorded as the address's newest reader or writer.
fn access(e: &mut Entry, mode: AccessMode, t: Option<&Arc<TaskBox>>, pred: &mut impl FnMut(&Arc<TaskBox>)) {
    // A complete writer orders nothing more (its readers found it complete or waited for
    // it): its box can go back for a new task.
    if e.out.as_ref().is_some_and(|w| w.link.done())
        && let Some(w) = e.out.take()
    {
        recycle(w);
    }
    // A reader waits for the writer; a writer for the readers since the writer, or for the
    // writer when there are none. (One call site: `pred` inlines.)
    let preds = if mode == AccessMode::R || e.ins.is_empty() { e.out.as_slice() } else { e.ins.as_slice() };
    preds.iter().for_each(&mut *pred);
    let Some(t) = t else { return };
    if mode == AccessMode::R {
        // Readers accumulate between writers: when the list is full the complete ones go,
        // and it grows only if that left it over half full (so each look is paid for by as
        // many new readers, however many stay in flight).
        if e.ins.len() == e.ins.capacity() {
            // The incomplete ones moved to the front of one slice, the rest cut off: each
            // `SmallVec` length, index and removal tells its inline and heap cases apart.
            let s = e.ins.as_mut_slice();
            let mut keep = 0;
            for i in 0..s.len() {
                if !s[i].link.done() {
                    s.swap(keep, i);
                    keep += 1;
                }
            }
            if keep < s.len() {
                for t in e.ins.drain(keep..) {
                    recycle(t);
                }
            }
            if keep > e.ins.capacity() / 2 {
                e.ins.reserve(e.ins.capacity());
            }
        }
        e.ins.push(t.clone());
    } else {
        // The new writer replaces the old one and the readers.
        if let Some(w) = e.out.replace(t.clone()) {
            recycle(w);
        }
        e.clear_ins();
    }
}

/// The smallest map [`DepMap::sweep`] looks through.
const SWEEP_MIN: usize = 256;

/// The largest reader list (in places) whose buffer an ended task's map keeps for the next
/// task ([`DepMap::retire`]).
const INS_KEEP: usize = 64;

/// The most child counters and dependency maps a thread keeps for its next tasks
/// ([`NODES`], [`MAPS`]): as many as tasks that create children end on it one inside
/// another (a task ending inside a wait of its creator's).
const SPARE_OBJECTS: usize = 16;

/// The largest map (in places) kept for another task: a larger one is freed (a task that
/// named thousands of addresses would otherwise keep their memory on the thread).
const MAP_KEEP_CAPACITY: usize = 64;

thread_local! {
    /// Child counters of ended tasks that no child holds any more, for the next tasks to
    /// create children on this thread (each task that does needs one).
    static NODES: std::cell::RefCell<Vec<Arc<Node>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Empty dependency maps of ended tasks, their tables kept, for the next tasks on this
    /// thread to create children with depend clauses. Boxed as a task's context holds them
    /// (taking and giving one back moves a pointer, not the map).
    #[allow(clippy::vec_box)]
    static MAPS: std::cell::RefCell<Vec<Box<DepMap>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A thread's list of spare objects ([`NODES`], [`MAPS`], [`BOXES`]).
type Spares<T> = std::thread::LocalKey<std::cell::RefCell<Vec<T>>>;

/// One of the calling thread's spares in `list`, if it has one.
#[inline]
fn take_spare<T: 'static>(list: &'static Spares<T>) -> Option<T> {
    list.try_with(|l| l.borrow_mut().pop()).ok().flatten()
}

/// Keep `v` among the calling thread's spares in `list` if it holds fewer than `max`; else
/// `v` comes back (dropped instead while the thread exits).
#[inline]
fn put_spare<T: 'static>(list: &'static Spares<T>, v: T, max: usize) -> Option<T> {
    list.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.len() < max {
            l.push(v);
            None
        } else {
            Some(v)
        }
    })
    .ok()
    .flatten()
}

/// A child counter for the calling thread's task: a spare one if the thread has one.
fn new_node() -> Arc<Node> {
    take_spare(&NODES).unwrap_or_default()
}

/// A dependency map for the calling thread's task: a spare one if the thread has one.
fn new_map() -> Box<DepMap> {
    take_spare(&MAPS).unwrap_or_default()
}

/// A task's context ended: its map lets go of its children ([`DepMap::retire`]), and
/// the map and its child counter go to the thread's spares when nothing else holds them
/// (recursive code: one of each per task that creates children, allocated and freed again
/// each time, was a third of deptree's calls to malloc and free). Inline for the common
/// case of neither (a task run at once that created no child).
#[inline]
fn end_task(node: Option<Arc<Node>>, deps: Option<Box<DepMap>>) {
    if node.is_some() || deps.is_some() {
        end_task_slow(node, deps);
    }
}

/// An implicit task ends (after its region's last barrier, so the tasks it created are
/// complete, and its thread runs no more of them in this context): its map and its child
/// counter go to the thread's spares as an explicit task's do, for the next region's tasks,
/// and the task bodies its thread ran go to the statistics ([`count_task`]).
pub fn end_implicit(cx: &mut Ctx) {
    flush_counts(cx);
    end_task(cx.task.node.take(), cx.task.deps.take());
}

#[inline(never)]
fn end_task_slow(node: Option<Arc<Node>>, deps: Option<Box<DepMap>>) {
    if let Some(mut d) = deps {
        d.retire();
        if d.map.capacity() <= MAP_KEEP_CAPACITY {
            // (Freed if the thread has enough.)
            let _ = put_spare(&MAPS, d, SPARE_OBJECTS);
        }
    }
    if let Some(mut n) = node
        && Arc::get_mut(&mut n).is_some()
    {
        // No child holds it: each took its reference after counting itself in and gives it
        // back after counting itself out, so the count is back to 0.
        debug_assert_eq!(n.children.load(Ordering::Relaxed), 0);
        let _ = put_spare(&NODES, n, SPARE_OBJECTS);
    }
}

impl DepMap {
    /// The end of the task whose children this map ordered: no sibling will name its
    /// addresses again, so it lets go of their tasks (boxes whose last reference it held go
    /// back to the thread's cache). Called where a task's context ends, not from a `Drop`
    /// (with one, every task's end got slower: fib 1.2× the time).
    ///
    /// An entry whose reader list grew past its inline places stays, empty, with that list's
    /// buffer (up to [`INS_KEEP`] places): the map's next task (the next region's, for an
    /// implicit task's map) that names the address again finds room for as many readers
    /// without growing the list step by step, each step a reallocation (an address only
    /// read, whose readers pile up until the region ends, cost 4 of them per region and
    /// address at 25 readers). Empty entries order nothing; a sweep takes them out as any
    /// idle entry ([`DepMap::sweep`]).
    #[inline(never)]
    fn retire(&mut self) {
        self.map.retain(|_, e| {
            e.clear();
            e.ins.spilled() && e.ins.capacity() <= INS_KEEP
        });
        self.sweep_at = (2 * self.map.len()).max(SWEEP_MIN);
    }

    /// The entry of `addr`, a new one if no earlier sibling named it.
    #[inline]
    fn entry(&mut self, addr: usize) -> &mut Entry {
        if self.map.len() >= self.sweep_at && !self.map.contains_key(&addr) {
            self.sweep();
        }
        self.map.entry(addr).or_default()
    }

    /// Take out the entries whose tasks are all complete: a later sibling naming the
    /// address has nothing to wait for. A task creating children over ever new addresses (a
    /// wavefront) then keeps a map the size of its tasks in flight, not of all the addresses
    /// it named. Sweeps come at doubling sizes, so each new address costs a bounded share
    /// of them.
    fn sweep(&mut self) {
        self.map.retain(|_, e| {
            let idle = e.idle();
            if idle {
                e.clear();
            }
            !idle
        });
        self.sweep_at = (2 * self.map.len()).max(SWEEP_MIN);
    }
}

/// The task a thread is running, as its later constructs see it.
pub struct Cur {
    /// Identifies the task (owner of nestable locks): its box's address; 0 for an implicit task.
    pub id: usize,
    node: Option<Arc<Node>>,
    pub group: Option<Arc<Group>>,
    pub final_: bool,
    deps: Option<Box<DepMap>>,
    /// How long its children take ([`Sizes`]).
    tiny: Sizes,
}

impl Cur {
    pub fn implicit(group: Option<Arc<Group>>) -> Cur {
        Cur { id: 0, node: None, group, final_: false, deps: None, tiny: Sizes::new() }
    }

    /// Make an implicit task that ended ([`end_implicit`]: it holds no node nor map) what
    /// [`Cur::implicit`] makes, in place (a primary's context, renewed at each fork).
    pub fn renew_implicit(&mut self, group: Option<Arc<Group>>) {
        debug_assert!(self.node.is_none() && self.deps.is_none(), "invariant: the implicit task ended");
        self.id = 0;
        self.group = group;
        self.final_ = false;
        self.tiny = Sizes::new();
    }
}

/// The measured size of the children a task creates: some of the children that could be
/// deferred (every [`Sizes::PROBE`]th at first) run at once instead, timed, into a moving
/// average. While that says they are tiny (under [`TINY_NS`]), the creator defers only one
/// in [`TINY_DEFER`] of them, and only with its deque empty: a thief that takes a task this
/// small spends more on moving it between cores than the task is worth, and slows the
/// creator with it (a million empty tasks at 2 threads: 77-125 ms deferring up to the
/// throttle, 21 ms like this, 15 ms on one thread). Probes come every
/// [`Sizes::PROBE_TINY`]th child while the children are tiny, so that after a change to
/// larger ones at most that many run at once unmeasured.
/// A child run at once (`run_inline`) counts its own children in its creator's `Sizes`:
/// giving it its own costs fib(30) 8%, as `run_inline` is its hottest path.
///
/// Each probe at or over the tiny bound doubles the distance to the next, up to
/// [`Sizes::PROBE_MAX`]: a creator that ran every 32nd of many large children itself would,
/// with dozens of thieves waiting, be the one holding them up (64 threads, 4096 tasks of
/// 1 ms: 300 ms against 76).
#[derive(Clone, Copy)]
struct Sizes {
    avg_ns: u32,
    n: u32,
    /// Children from one probe to the next outside the tiny regime (a power of two).
    every: u32,
}

/// What a creating thread does with a child it may defer ([`choose`]).
enum Choice {
    Defer,
    Run,
    /// Run it at once, timed ([`Sizes::record`]).
    Probe,
}

impl Sizes {
    const PROBE: u32 = 32;
    const PROBE_TINY: u32 = 16;
    const PROBE_MAX: u32 = 1024;
    const fn new() -> Sizes {
        Sizes { avg_ns: u32::MAX, n: 0, every: Self::PROBE }
    }

    /// The next child's fate, given how many tasks the creator has queued on its own deque
    /// and the throttle's bound for it.
    #[inline]
    fn choose(&mut self, queued: usize, bound: usize) -> Choice {
        self.n = self.n.wrapping_add(1);
        if self.avg_ns < TINY_NS {
            // More often while tiny: a larger child runs at once until a probe sees it.
            if self.n.is_multiple_of(Self::PROBE_TINY) {
                Choice::Probe
            } else if queued == 0 && self.n.is_multiple_of(TINY_DEFER) {
                Choice::Defer
            } else {
                Choice::Run
            }
        } else if self.n.is_multiple_of(self.every) {
            Choice::Probe
        } else if queued <= bound {
            Choice::Defer
        } else {
            Choice::Run
        }
    }

    fn record(&mut self, ns: u32) {
        // A child far over the bound ends the tiny regime at once.
        self.avg_ns = if self.avg_ns == u32::MAX || ns >= 8 * TINY_NS { ns } else { self.avg_ns - self.avg_ns / 8 + ns / 8 };
        self.every = if ns < TINY_NS { Self::PROBE } else { (self.every * 2).min(Self::PROBE_MAX) };
    }
}

/// Children under this many nanoseconds (as timed, clock reads included) count as tiny
/// ([`Sizes`]). Tasks of a million-task loop at 2 threads, by body size: about 50 ns, 26 ms
/// deferring fewer against 55 ms; about 110 ns, 27 against 38 ms; about 230 ns, level; at
/// 450 ns and more, deferring up to the throttle wins. The timing includes the runtime's own
/// path to run the child, several times slower in a debug build (unoptimized, with the
/// context's lend checks): there the bound is raised so that the same children count as
/// tiny as in a release build (tests/gomp_tasks `sizes` runs on the debug library).
const TINY_NS: u32 = if cfg!(debug_assertions) { 1000 } else { 200 };
/// While children are tiny, one in this many may be deferred ([`Sizes`]).
const TINY_DEFER: u32 = 64;

const DETACH_BODY_DONE: u32 = 1;
const DETACH_FULFILLED: u32 = 2;

/// A task that is not run at once: its body, its data and where to report completion.
pub struct TaskBox {
    body: Body,
    /// Its copy of its data (kept, with any heap block, when the box is reused).
    store: Storage,
    parent: Option<Arc<Node>>,
    group: Option<Arc<Group>>,
    team: TeamRef,
    final_: bool,
    priority: i32,
    /// The data environment ICVs it starts with (its creator's).
    icv: Icv,
    /// Counted in the team, its group and its parent (a queued task); false for an
    /// undeferred task that only needed a completion event.
    counted: bool,
    /// Its place among its siblings' dependencies (used when `linked`).
    link: Link,
    /// Recorded in its parent's [`DepMap`] (it has depend clauses): its completion releases
    /// the siblings waiting for it.
    linked: bool,
    detach: AtomicU32,
    has_detach: bool,
    /// Back to [`POOL`] once finished (see [`new_task`]).
    pooled: bool,
}

impl TaskBox {
    /// A task with dependencies whose predecessors are all complete (on the thread that
    /// completed the last one, or on its creator's if none was left): it joins a queue.
    fn ready(self: Arc<Self>) {
        let team = self.team.get();
        // The first task that a finishing task releases stays with the thread that ran it
        // (its own deque, which is empty then): that thread's next task, with the data it
        // just wrote still in its cache, and no trip through the team's queue. A task ready
        // on a thread of its team outside such a release (mostly: ready when its creator
        // makes it) goes to that thread's deque, as a task without depend clauses does: the
        // creator runs its newest first (as libgomp's taskwait), thieves its oldest. In the
        // team's queue, a waiting creator took and put back every task it may not run
        // (recursive code with depend clauses: the siblings of each ancestor) at each look.
        // Every other task, released second, joins the team's FIFO queue, so tasks run in
        // about the order they became ready: sending every released task to the releaser's
        // deque (LIFO, libomp's way) left the graph's older, wider work waiting.
        // The first released also stays when the thread is waiting for it (its deque not
        // empty: a taskwait or a taskgroup's end whose scope admits it). No other thread may
        // run it then, but one at a barrier; in the team's queue, the waiter found it only by
        // taking and putting back every task ahead of it.
        // Measured (deptree, Cholesky, SparseLU; commits ab4c4a1, 319fcd1, 8771db3):
        // bench/RESULTS.md, "Figures behind code comments".
        // (A task of another team, one this thread is not in now, goes to that team's queue:
        // the thread's own deques are its contexts', one per team it is in.)
        let queued = match team::cur_if_any() {
            Some(c) => c.get(|cx| {
                if !self.team.is(cx.team()) {
                    return Err(self);
                }
                let release = RELEASING.with(|r| r.get());
                let keep = match release {
                    Release::None => true,
                    Release::First => cx.deque.len() == 0 || WAITING.with(|w| w.get().keeps(&self)),
                    Release::Later => false,
                };
                if !keep {
                    return Err(self);
                }
                if release == Release::First {
                    RELEASING.with(|r| r.set(Release::Later));
                }
                team.tasks.push(&cx.deque, self);
                Ok(())
            }),
            None => Err(self),
        };
        if let Err(t) = queued {
            team.tasks.push_ready(t);
        }
        team.nudge();
    }
}

/// Where this thread is in a completion ([`RELEASING`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Not completing a task.
    None,
    /// Completing one; no task it released has stayed on this thread's deque yet.
    First,
    /// Completing one; a task it released stayed.
    Later,
}

thread_local! {
    /// Set while this thread completes a task in [`finish`]: the tasks made ready meanwhile
    /// (`ready`) are that task's successors.
    static RELEASING: std::cell::Cell<Release> = const { std::cell::Cell::new(Release::None) };
    /// The scope of the innermost wait this thread is in ([`wait_until`]; `Any` outside
    /// one, or at a barrier).
    static WAITING: std::cell::Cell<Scope> = const { std::cell::Cell::new(Scope::Any) };
}

/// A thread-local cell set for a scope: the value it had comes back when this drops, however
/// the scope ends (a panic caught at the C boundary must not leave the thread's state set).
struct SetFor<T: Copy + 'static> {
    cell: &'static std::thread::LocalKey<std::cell::Cell<T>>,
    old: T,
}

impl<T: Copy + 'static> SetFor<T> {
    fn new(cell: &'static std::thread::LocalKey<std::cell::Cell<T>>, v: T) -> SetFor<T> {
        SetFor { cell, old: cell.replace(v) }
    }
}

impl<T: Copy + 'static> Drop for SetFor<T> {
    fn drop(&mut self) {
        self.cell.set(self.old);
    }
}

/// Run `f` (a completion) with [`RELEASING`] set; put back however `f` ends.
fn releasing<R>(f: impl FnOnce() -> R) -> R {
    let _releasing = SetFor::new(&RELEASING, Release::First);
    f()
}

impl TaskBox {
    fn data(&self) -> *mut c_void {
        self.store.ptr()
    }
}

/// A thread's own end of its deque in one team: pushes and LIFO pops, only by the thread
/// whose context ([`Ctx::deque`]) holds it. The team keeps the deque's `Stealer`, through
/// which its other threads take the oldest tasks, and the end itself between regions: it
/// lends it to thread `tid` when the thread's share starts ([`TeamTasks::lend`], in
/// `Ctx::new`) and has it back when the share ends ([`TeamTasks::give_back`]). A `Worker`
/// is not `Sync`: no other thread can reach it while a context holds it, and a thread's
/// deques in an outer team and in a team nested in it are two ends in two contexts, so
/// the inner team's threads (which steal only through the inner team's stealers) never
/// take the outer team's tasks.
pub struct OwnDeque {
    w: OwnerEnd,
    /// The `TeamTasks` it belongs to (its address: a team is boxed and never moves) and
    /// its thread number there, checked when it goes back.
    home: usize,
    tid: u32,
}

/// A deque's owner end, boxed so that the team's cell holding it between shares is one
/// pointer.
type OwnerEnd = Box<Worker<Arc<TaskBox>>>;

impl OwnDeque {
    /// Tasks queued on it (the owner's view: no fence, unlike a stealer's).
    #[inline]
    pub fn len(&self) -> usize {
        self.w.len()
    }

    /// Whether this is thread `tid`'s deque of `tasks`.
    pub fn is_of(&self, tasks: &TeamTasks, tid: u32) -> bool {
        self.home == tasks.addr() && self.tid == tid
    }
}

/// Tasks with a priority: a FIFO queue per level, highest level first, and no lock. A lock
/// around one heap, as before, was a lock shared by every creating thread (issue 6: none on
/// creation). Up to [`PRIO_LEVELS`] levels are exact; with a larger
/// `OMP_MAX_TASK_PRIORITY`, neighbouring priorities share a level (priority is a hint).
/// Made at the team's first task with a priority: a program without any pays nothing.
struct PrioQueues {
    levels: Box<[Injector<Arc<TaskBox>>]>,
    /// `OMP_MAX_TASK_PRIORITY` (the top of the range the levels cover).
    max: i32,
    /// Bit `l`: level `l` may hold tasks (set after each push, cleared by a taker that found
    /// the level empty, which then looks again: a push is never missed).
    mask: AtomicU64,
}

/// Priority levels with a queue each (bits of `PrioQueues::mask`).
const PRIO_LEVELS: usize = 64;

impl PrioQueues {
    fn new(max_priority: i32) -> PrioQueues {
        let n = (max_priority.max(1) as usize + 1).min(PRIO_LEVELS);
        PrioQueues { levels: (0..n).map(|_| Injector::new()).collect(), max: max_priority, mask: AtomicU64::new(0) }
    }

    /// The level of priority `p` (0..=`max`).
    fn level(&self, p: i32) -> usize {
        let top = self.levels.len() - 1;
        if self.max as usize <= top { p as usize } else { (p as u64 * top as u64 / self.max as u64) as usize }
    }

    fn push(&self, t: Arc<TaskBox>) {
        let level = self.level(t.priority);
        self.levels[level].push(t);
        // SeqCst: after the push; pairs with the taker's clear-then-look in `take`.
        self.mask.fetch_or(1 << level, Ordering::SeqCst);
    }

    fn queued(&self) -> bool {
        self.mask.load(Ordering::Relaxed) != 0
    }

    /// The oldest task of the highest level that `admits` allows (none at once when no
    /// level may hold one). Tasks it does not allow go
    /// back to the end of their level (as `pop_in` does with the team's queue).
    fn take(&self, admits: impl Fn(&TaskBox) -> bool) -> Option<Arc<TaskBox>> {
        let mut m = self.mask.load(Ordering::Acquire);
        while m != 0 {
            let l = 63 - m.leading_zeros() as usize;
            m &= !(1 << l);
            let q = &self.levels[l];
            // Each task at most once: the ones put back are not looked at again.
            let mut tries = q.len().max(1);
            while tries > 0 {
                match q.steal() {
                    Steal::Success(t) if admits(&t) => return Some(t),
                    Steal::Success(t) => {
                        q.push(t);
                        tries -= 1;
                    }
                    Steal::Retry => {}
                    Steal::Empty => {
                        self.mask.fetch_and(!(1 << l), Ordering::SeqCst);
                        // A push between the steal and the clear set the bit before the
                        // clear: look again, and set it back for what is there.
                        if !q.is_empty() {
                            self.mask.fetch_or(1 << l, Ordering::SeqCst);
                            continue;
                        }
                        break;
                    }
                }
            }
        }
        None
    }
}

/// A team's tasks: those not complete, and those ready to run.
pub struct TeamTasks {
    /// Futex word of threads waiting for tasks in `wait_until`, and how many sleep on it.
    wake: CachePadded<AtomicU32>,
    sleepers: AtomicU32,
    pending: CachePadded<AtomicUsize>,
    /// Tasks with depend clauses waiting for a predecessor (among `pending`): the depend
    /// throttle leaves them out, as libgomp's `task_count` does.
    blocked: CachePadded<AtomicUsize>,
    /// Counted tasks with a detach clause not complete (their events may be fulfilled only by
    /// code their creator has yet to run: see [`TeamTasks::over_depend_throttle`]).
    detached: AtomicUsize,
    /// Threads in `omp_fulfill_event` completing a task of this team ([`fulfill`]): they
    /// may be no member of it (any thread may fulfil an event), and they still touch the
    /// team after counting their task out (`notify`), when the region may already be over.
    /// The primary reuses or frees the team only once none is left ([`Self::fulfillers`]).
    fulfilling: AtomicUsize,
    /// Tasks released by core once their dependencies were met (from any thread).
    ready: Injector<Arc<TaskBox>>,
    prio: std::sync::OnceLock<PrioQueues>,
    /// Each thread's deque, by thread number, as the other threads steal from it.
    stealers: Vec<Stealer<Arc<TaskBox>>>,
    /// Each deque's owner end while no thread holds it ([`OwnDeque`]): all of them between
    /// regions, none of the first `n` during one. Touched twice per thread and region.
    /// (Lent and given back by every member in every region: one atomic exchange each way,
    /// no lock.)
    owners: Vec<AtomicCell<Option<OwnerEnd>>>,
}

// The owner ends' cells are one pointer each, exchanged by one atomic instruction (no lock).
const _: () = assert!(AtomicCell::<Option<OwnerEnd>>::is_lock_free());

// Shared by the team's threads, `Send` and `Sync` by its fields' types alone (no `unsafe
// impl`: the owner ends of the deques are in the threads' contexts, or in an `AtomicCell`).
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<TeamTasks>();
};

impl TeamTasks {
    pub fn new() -> TeamTasks {
        TeamTasks {
            wake: CachePadded::new(AtomicU32::new(0)),
            sleepers: AtomicU32::new(0),
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            detached: AtomicUsize::new(0),
            fulfilling: AtomicUsize::new(0),
            ready: Injector::new(),
            prio: std::sync::OnceLock::new(),
            stealers: Vec::new(),
            owners: Vec::new(),
        }
    }

    /// Room for `n` threads (only while no thread uses the team: every member's deque is
    /// home; thread 0's may stay lent to the primary's context, renewed from one region to
    /// the next in the same team: team.rs `Ctx::renew`).
    pub fn reset(&mut self, n: u32) {
        debug_assert!(
            self.owners.iter().skip(1).all(|o| {
                let w = o.take();
                let home = w.is_some();
                o.store(w);
                home
            }),
            "invariant: every member's deque is back between regions"
        );
        while self.stealers.len() < n as usize {
            let w = Worker::new_lifo();
            self.stealers.push(w.stealer());
            self.owners.push(AtomicCell::new(Some(Box::new(w))));
        }
    }

    /// The identity an [`OwnDeque`] holds of its team's tasks (a team is boxed and never
    /// moves).
    #[inline]
    fn addr(&self) -> usize {
        self as *const TeamTasks as usize
    }

    /// Thread `tid`'s own end of its deque, for its context in the team while its share
    /// runs (`Ctx::new`). Each end is lent once until it is given back: a second lend is a
    /// broken invariant and panics.
    #[inline]
    pub fn lend(&self, tid: u32) -> OwnDeque {
        let w = self.owners.get(tid as usize).and_then(AtomicCell::take);
        let w = w.expect("invariant: a thread of the team borrows its deque once per share");
        OwnDeque { w, home: self.addr(), tid }
    }

    /// Take back a deque lent by [`lend`](Self::lend) (the share that held it has ended:
    /// its tasks are all complete, so it is empty).
    pub fn give_back(&self, d: OwnDeque) {
        assert_eq!(d.home, self.addr(), "invariant: a deque goes back to the team that lent it");
        debug_assert!(d.w.is_empty(), "invariant: a share ends with its deque empty");
        self.owners[d.tid as usize].store(Some(d.w));
    }

    /// Wake the threads sleeping in `wait_until` (a task was queued or finished).
    pub fn notify(&self) {
        // SeqCst fence: the change we made (a push, a decrement) before the read of the
        // count; pairs with the sleepers' count-then-check.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.wake.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake(&self.wake, i32::MAX);
        }
    }

    /// How many threads are in `omp_fulfill_event` completing a task of this team
    /// ([`fulfill`]); Acquire: pairs with each one's Release decrement, its last access.
    pub fn fulfillers(&self) -> usize {
        self.fulfilling.load(Ordering::Acquire)
    }

    /// Sleep until a task is queued or finishes ([`Self::notify`]), for a millisecond at
    /// most, unless `stay` no longer holds once this thread counts as a sleeper.
    pub fn sleep_briefly(&self, stay: impl Fn() -> bool) {
        let seen = self.wake.load(Ordering::SeqCst);
        // SeqCst: we count ourselves, then re-check; a notifier changes the state, then
        // reads the count (one of us sees the other). The timeout bounds any miss.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if stay() {
            sys::futex_wait_timeout(&self.wake, seen, std::time::Duration::from_millis(1));
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Tasks created and not complete.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Whether a team of `n` threads has more tasks queued or running than the depend
    /// throttle allows ([`DEPEND_THROTTLE`]), or more not complete than [`DEPEND_CAP`].
    /// Never while a detached task is incomplete: the tasks waiting for it may wait for an `omp_fulfill_event` that only the creator's
    /// continuation calls, and a creator held until they run would wait forever (libgomp
    /// counts only tasks ready or running, so it creates on).
    fn over_depend_throttle(&self, n: u32) -> bool {
        let pending = self.pending();
        // Relaxed: a hint (the two counts are read one after the other, so tasks that change
        // state in between make it off by as many); a stale count only moves the moment the
        // creator is held. `blocked` never goes below zero: a task's increment in link_deps
        // happens before the releasing decrement (through `waiting`'s AcqRel updates).
        let ready = pending.saturating_sub(self.blocked.load(Ordering::Relaxed));
        (ready > DEPEND_THROTTLE * n as usize || pending > DEPEND_CAP * n as usize) && self.detached.load(Ordering::Acquire) == 0
    }

    /// Whether some task is queued and not taken (a hint for waiting threads; no shared
    /// counter is kept, so creating and taking tasks touch only their deques).
    pub fn queued(&self) -> bool {
        self.prio.get().is_some_and(PrioQueues::queued) || !self.ready.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// [`queued`](Self::queued) for a thread about to sleep until a task is queued, which
    /// wakes it after the push (`Team::nudge`): a queued task is counted in `pending` from
    /// before its push, so with none pending the queues are not looked at. (SeqCst: the
    /// sleeper raised its sleeper count, SeqCst, before this; a creator's increment comes
    /// before the SeqCst fence after which it reads that count (`notify`): either the creator
    /// sees the sleeper and wakes it, or this load sees the increment.)
    pub fn queued_for_sleeper(&self) -> bool {
        self.pending.load(Ordering::SeqCst) > 0 && self.queued()
    }

    /// [`queued`](Self::queued) for a spinning waiter: looks at the queues only every 16th
    /// call. Each look pulls the creators' deque ends into this core's cache, and a creator
    /// that finds them gone on every task it makes runs at half speed.
    pub fn poller(&self) -> impl Fn() -> bool + '_ {
        let n = std::cell::Cell::new(0u32);
        move || {
            n.set(n.get().wrapping_add(1));
            n.get().is_multiple_of(16) && self.queued()
        }
    }

    /// Queue `t` on the calling thread's own deque `own` (in this team: its context's).
    #[inline]
    fn push(&self, own: &OwnDeque, t: Arc<TaskBox>) {
        debug_assert_eq!(own.home, self.addr());
        if let Some(t) = self.push_prio(t) {
            own.w.push(t);
        }
    }

    /// Queue `t` on the team's queue (from any thread).
    fn push_ready(&self, t: Arc<TaskBox>) {
        if let Some(t) = self.push_prio(t) {
            self.ready.push(t);
        }
    }

    /// A task with a priority goes to its level's queue; others are handed back.
    fn push_prio(&self, t: Arc<TaskBox>) -> Option<Arc<TaskBox>> {
        if t.priority == 0 {
            return Some(t);
        }
        self.prio.get_or_init(|| PrioQueues::new(env().max_task_priority)).push(t);
        None
    }

    /// A task for the calling thread, whose own deque (in this team) is `own`: one with a
    /// priority, else its own newest, else the team's queue's oldest, else another
    /// thread's oldest.
    fn pop(&self, own: &OwnDeque) -> Option<Arc<TaskBox>> {
        debug_assert_eq!(own.home, self.addr());
        if let Some(q) = self.prio.get()
            && let Some(t) = q.take(|_| true)
        {
            return Some(t);
        }
        if let Some(t) = own.w.pop() {
            return Some(t);
        }
        let me = own.tid as usize;
        loop {
            let mut retry = false;
            match self.ready.steal() {
                Steal::Success(t) => return Some(t),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let n = self.stealers.len();
            for k in 1..n {
                match self.stealers[(me + k) % n].steal() {
                    Steal::Success(t) => return Some(t),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }
}

impl TeamTasks {
    /// [`pop`](Self::pop) for a thread whose current task is suspended in a wait: only a
    /// task that `scope` admits (the tied-task scheduling constraint). The others stay
    /// queued: the own deque keeps its order, stolen ones go to the team's queue.
    fn pop_in(&self, own: &OwnDeque, scope: Scope) -> Option<Arc<TaskBox>> {
        if let Scope::Any = scope {
            return self.pop(own);
        }
        debug_assert_eq!(own.home, self.addr());
        if let Some(q) = self.prio.get()
            && let Some(t) = q.take(|t| scope.admits(t))
        {
            return Some(t);
        }
        // The waiting task's children are usually the newest, on top.
        let mut others: smallvec::SmallVec<[Arc<TaskBox>; 8]> = smallvec::SmallVec::new();
        let mut found = None;
        while let Some(t) = own.w.pop() {
            if scope.admits(&t) {
                found = Some(t);
                break;
            }
            others.push(t);
        }
        for t in others.into_iter().rev() {
            own.w.push(t);
        }
        if found.is_some() {
            return found;
        }
        let mut tries = self.ready.len() + self.stealers.len();
        while tries > 0 {
            tries -= 1;
            match self.ready.steal() {
                Steal::Success(t) if scope.admits(&t) => return Some(t),
                Steal::Success(t) => self.ready.push(t),
                Steal::Retry => {}
                Steal::Empty => break,
            }
        }
        let n = self.stealers.len();
        for k in 1..n {
            if let Steal::Success(t) = self.stealers[(own.tid as usize + k) % n].steal() {
                if scope.admits(&t) {
                    return Some(t);
                }
                self.ready.push(t);
            }
        }
        None
    }
}

/// Which queued tasks a waiting thread may run (OpenMP's task scheduling constraint: while
/// a tied task is suspended, only its descendants; as libgomp, a taskwait or an undeferred
/// task's wait runs the waiting task's children, a taskgroup's end the tasks of the group).
/// A thread at a barrier runs any task of its team.
#[derive(Clone, Copy)]
enum Scope {
    Any,
    /// Children of the task whose child counter this is (compared, never dereferenced).
    Children(*const Node),
    /// Tasks of this taskgroup or of a group nested in it, and children of the task
    /// (whose child counter is the second field) ending the group: their predecessors may
    /// be its earlier children outside the group. (Compared, never dereferenced.)
    Group(*const Group, *const Node),
}

impl Scope {
    /// Whether a task released on a thread waiting with this scope stays on that thread's
    /// deque ([`TaskBox::ready`]): a wait that may run it, not a barrier's.
    fn keeps(self, t: &TaskBox) -> bool {
        !matches!(self, Scope::Any) && self.admits(t)
    }

    fn admits(self, t: &TaskBox) -> bool {
        match self {
            Scope::Any => true,
            Scope::Children(n) => t.parent.as_ref().is_some_and(|p| std::ptr::eq(Arc::as_ptr(p), n)),
            Scope::Group(g, n) => {
                if Scope::Children(n).admits(t) {
                    return true;
                }
                let mut x = t.group.as_deref();
                while let Some(gr) = x {
                    if std::ptr::eq(gr, g) {
                        return true;
                    }
                    x = gr.outer.as_deref();
                }
                false
            }
        }
    }

    /// The children of the calling thread's current task.
    fn children(c: CtxRef) -> Scope {
        Scope::Children(Scope::node(c))
    }

    /// The child counter of the calling thread's current task (null: no child was ever
    /// deferred, so none can be queued).
    fn node(c: CtxRef) -> *const Node {
        c.get(|cx| cx.task.node.as_ref().map_or(std::ptr::null(), Arc::as_ptr))
    }
}

impl Default for TeamTasks {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Count a task body the calling thread is about to run, for the statistics (`WEFT_STATS`):
/// on its core worker's line, or "other threads". Every explicit task counts where its body
/// runs (once; not a cancelled one), whatever completes it (a detached task's completion
/// may come from elsewhere). Inside a region the count is kept in the context and added to
/// the line when the thread's implicit task ends ([`end_implicit`]): a statistics line is
/// an atomic shared with other threads ("other threads"), and a locked increment on every
/// undeferred task was most of what such a task cost beyond libgomp's (recursive code
/// with an `if` cutoff). Outside any region (a root context, which never ends) it is added
/// at once. Tasks run before the runtime started (orphaned ones, in a program that has not
/// forked yet) are not counted: there are no statistics yet.
#[inline]
fn count_task(c: CtxRef) {
    c.with(count_task_in)
}

/// [`count_task`] on the lent context (also for the bodies the compiler runs itself: kmp's
/// `if(0)` tasks).
#[inline]
pub fn count_task_in(cx: &mut Ctx) {
    cx.tasks_run += 1;
    if cx.team().level == 0 {
        flush_counts(cx);
    }
}

/// Add the task bodies counted in `cx` ([`count_task`]) to its thread's statistics line.
#[inline(never)]
fn flush_counts(cx: &mut Ctx) {
    if cx.tasks_run == 0 {
        return;
    }
    if cx.counter.is_none() {
        cx.counter = team::started_runtime().map(|rt| rt.counter());
    }
    if let Some(k) = cx.counter {
        k.tasks(cx.tasks_run);
    }
    cx.tasks_run = 0;
}

// ---------------------------------------------------------------------------------------
// Running and finishing.

/// Run one queued task of the calling thread's team, if there is one (at a barrier: any).
pub fn run_one(c: CtxRef) -> bool {
    run_one_in(c, Scope::Any)
}

fn run_one_in(c: CtxRef, scope: Scope) -> bool {
    match c.get(|cx| cx.team().tasks.pop_in(&cx.deque, scope)) {
        Some(t) => {
            execute(c, t);
            true
        }
        None => false,
    }
}

/// Run queued tasks that `scope` admits until `done()` holds, pausing politely while the
/// tasks that could make it hold run on other threads.
fn wait_until(c: CtxRef, scope: Scope, done: impl Fn() -> bool) {
    let tasks = &c.team().tasks;
    let _waiting = SetFor::new(&WAITING, scope);
    while !done() {
        if run_one_in(c, scope) {
            continue;
        }
        // Nothing to run: the tasks that matter run elsewhere. Spin (the wait policy's
        // budget), then sleep until a task is queued or one finishes (`notify`). Queued
        // tasks this wait may not run do not end the spin or prevent the sleep. Such a
        // blind wait looks for its tasks again every [`BLIND_RETRY`]th turn of the spin
        // (running one it finds): a task it may run can be queued while it spins, on the
        // team's queue or on the deque of the thread that released it, and nothing would
        // tell it (recursive tasks with depend clauses at 2 threads: 560 such waits each
        // spun out the 300 µs budget, 0.27 s in all; 0.09 s with the looks).
        let blind = !matches!(scope, Scope::Any) && tasks.queued();
        let poll = tasks.poller();
        let turns = std::cell::Cell::new(0u32);
        let found = || {
            turns.set(turns.get().wrapping_add(1));
            turns.get().is_multiple_of(BLIND_RETRY) && run_one_in(c, scope)
        };
        if sys::spin_until_tasks(|| done() || (!blind && poll()) || (blind && found())) {
            continue;
        }
        tasks.sleep_briefly(|| !done() && (blind || !tasks.queued()));
    }
}

/// Every task of the team complete (a barrier's last arriver, a team of one).
pub fn drain(c: CtxRef) {
    let team = c.team();
    if team.tasks.pending() > 0 {
        wait_until(c, Scope::Any, || team.tasks.pending() == 0);
    }
}

fn execute(c: CtxRef, t: Arc<TaskBox>) {
    let team = t.team.get();
    let skip = (env().cancellation && team.cancelled.load(Ordering::Acquire))
        || t.group.as_ref().is_some_and(|g| g.cancelled.load(Ordering::Acquire));
    if !skip {
        run_body(c, &t);
    }
    body_done(t);
}

/// Run an undeferred task's body on `data` as the calling thread's current task: no task
/// object, only the context's task fields and ICVs swapped around the call.
#[inline]
fn run_inline(c: CtxRef, body: OutlinedTask, final_: bool) {
    run_inline_as(c, body, final_, false)
}

/// [`run_inline`]; `depend`: the task had depend clauses (for its trace slice).
#[inline]
fn run_inline_as(c: CtxRef, body: OutlinedTask, final_: bool, depend: bool) {
    let frame = 0u8;
    // Only the fields a task changes are swapped (its group is its creator's).
    let (id, fin, node, deps, icv) = c.with(|cx| {
        let t = &mut cx.task;
        let saved = (t.id, t.final_, t.node.take(), t.deps.take(), cx.icv);
        // A unique identity while the body runs (lock ownership): this frame's address.
        t.id = &frame as *const u8 as usize;
        t.final_ = final_;
        saved
    });
    count_task(c);
    let traced = crate::trace::start();
    body.call();
    crate::trace::task_end(traced, depend, None);
    let ended = c.with(|cx| {
        cx.icv = icv;
        let t = &mut cx.task;
        t.id = id;
        t.final_ = fin;
        (std::mem::replace(&mut t.node, node), std::mem::replace(&mut t.deps, deps))
    });
    end_task(ended.0, ended.1);
}

/// What GOMP_task does with a task that has nothing but its body to handle (no
/// dependencies, copy function or detach): [`undeferred`]'s answer.
pub enum Now {
    /// Run the body now, on the caller's data, as this thread's task (if(0), final, an
    /// orphaned task, the throttle or the children's size: [`choose`]); with its `final`.
    Run(CtxRef, bool),
    /// As `Run`, timed into the creator's [`Sizes`].
    Probe(CtxRef, bool),
    /// Defer it (the general path).
    Defer,
}

/// Whether GOMP_task's common case runs its task at once ([`Now`]). The caller runs the body
/// ([`run_now`]): deciding before the call, the entry point's general path needs none of its
/// arguments kept across a body's call.
#[inline]
pub fn undeferred(if_clause: bool, final_flag: bool) -> Now {
    let c = cur();
    let (team, final_, may) = c.get(|cx| {
        let team = cx.team();
        (team, final_flag || cx.task.final_, deferrable(cx, team, if_clause))
    });
    if !may {
        return Now::Run(c, final_);
    }
    match choose(c, team) {
        Choice::Defer => Now::Defer,
        Choice::Run => Now::Run(c, final_),
        Choice::Probe => Now::Probe(c, final_),
    }
}

/// Run `body` as [`undeferred`] said (not `Defer`).
#[inline]
pub fn run_now(now: Now, body: OutlinedTask) {
    match now {
        Now::Run(c, final_) => run_inline(c, body, final_),
        Now::Probe(c, final_) => probe_inline(c, body, final_),
        Now::Defer => debug_assert!(false, "invariant: a task to defer is not run now"),
    }
}

/// [`run_inline`], timed.
#[inline(never)]
fn probe_inline(c: CtxRef, body: OutlinedTask, final_: bool) {
    timed(c, || run_inline(c, body, final_))
}

/// Whether the calling thread defers a child it may defer (no if(0), final or depend
/// clause; in a parallel region): the throttle, or the children's size ([`Sizes`]).
#[inline]
fn choose(c: CtxRef, team: &Team) -> Choice {
    c.with(|cx| choose_in(cx, team))
}

/// [`choose`] on the lent context.
#[inline]
fn choose_in(cx: &mut Ctx, team: &Team) -> Choice {
    let (queued, bound) = (cx.deque.len(), THROTTLE * team.n as usize);
    if team.n == 1 {
        // No other thread to take a child: sizes would change nothing but cost the probes.
        return if queued <= bound { Choice::Defer } else { Choice::Run };
    }
    cx.task.tiny.choose(queued, bound)
}

/// Run a child at once through `run`, timing it into the calling thread's task's [`Sizes`].
fn timed(c: CtxRef, run: impl FnOnce()) {
    let t0 = std::time::Instant::now();
    run();
    let ns = t0.elapsed().as_nanos().min(u32::MAX as u128) as u32;
    c.with(|cx| cx.task.tiny.record(ns));
}

/// Run `t`'s body on its own copy of its data, as the calling thread's current task: the
/// task's one run (`execute`, on a task taken from a queue, or `run_undeferred`, on a box
/// it made and queued nowhere).
fn run_body(c: CtxRef, t: &TaskBox) {
    // SAFETY: `t.body` is the compiler's body for copies of the data it came with (`spawn`'s
    // or `taskloop`'s contract; `make_task` records it and fills `t.store` with such a copy,
    // together, before anyone else can reach the box), and this is its one call on that
    // copy: a box is queued at most once per fill (pushed by its creator, or by `ready`
    // once its last predecessor completes; taken from a queue by one thread, and those put
    // back are moved, not copied), and its callers run it once.
    let body = unsafe { OutlinedTask::new(t.body, t.data()) };
    let mine =
        Cur { id: t as *const TaskBox as usize, node: None, group: t.group.clone(), final_: t.final_, deps: None, tiny: Sizes::new() };
    let (saved, icv) = c.with(|cx| (std::mem::replace(&mut cx.task, mine), std::mem::replace(&mut cx.icv, t.icv)));
    count_task(c);
    let traced = crate::trace::start();
    body.call();
    // (OpenMP dependencies are siblings' links, not core tasks: no core task to name.)
    crate::trace::task_end(traced, t.linked, None);
    let ended = c.with(|cx| {
        cx.icv = icv;
        std::mem::replace(&mut cx.task, saved)
    });
    end_task(ended.node, ended.deps);
}

fn body_done(t: Arc<TaskBox>) {
    if t.has_detach && t.detach.fetch_or(DETACH_BODY_DONE, Ordering::AcqRel) & DETACH_FULFILLED == 0 {
        // Completes when the event is fulfilled.
        return;
    }
    finish(t);
}

fn finish(t: Arc<TaskBox>) {
    if t.linked {
        releasing(|| t.link.complete());
    }
    if !t.counted {
        return;
    }
    if let Some(p) = &t.parent {
        p.children.fetch_sub(1, Ordering::AcqRel);
    }
    if let Some(g) = &t.group {
        g.pending.fetch_sub(1, Ordering::AcqRel);
    }
    let tasks = &t.team.get().tasks;
    if t.has_detach {
        tasks.detached.fetch_sub(1, Ordering::AcqRel);
    }
    tasks.pending.fetch_sub(1, Ordering::SeqCst);
    tasks.notify();
    recycle(t);
}

// ---------------------------------------------------------------------------------------
// Creation.

/// A task's depend clauses, decoded by its ABI's layer: (address, mode), one entry per
/// address ([`Deps::add`]), read as a slice. Up to four addresses (a task's usual few) are
/// held in a plain array and a count, which the decoders fill in place in the [`Spawn`]
/// that [`spawn`] borrows: nothing is copied after decoding, and adding an address or
/// reading the slice tests the count once (a `SmallVec` tells its inline and heap cases
/// apart at each push, lookup and read, and was built from a gathered array by copying it).
pub struct Deps {
    /// How many entries: `inline[..len]` while at most [`Deps::INLINE`], else all of
    /// `more`.
    len: usize,
    /// Written up to `len` (up to [`Deps::INLINE`]) only: a new `Deps` (one per task
    /// created) does not write the rest.
    inline: [MaybeUninit<(usize, AccessMode)>; Deps::INLINE],
    /// Every entry once there are more than [`Deps::INLINE`] (empty until then).
    more: Vec<(usize, AccessMode)>,
}

impl Deps {
    /// The addresses held without allocating.
    const INLINE: usize = 4;

    pub const fn new() -> Deps {
        Deps { len: 0, inline: [MaybeUninit::uninit(); Deps::INLINE], more: Vec::new() }
    }

    /// The first `n` inline entries.
    ///
    /// # Safety
    /// They are written (`n` is at most `len`, or at most the count `extend` keeps).
    #[inline(always)]
    unsafe fn inline(&self, n: usize) -> &[(usize, AccessMode)] {
        // SAFETY: per the contract; `MaybeUninit<T>` has `T`'s layout.
        unsafe { &*(&self.inline[..n] as *const [MaybeUninit<(usize, AccessMode)>] as *const [(usize, AccessMode)]) }
    }

    /// [`Deps::inline`], to change.
    ///
    /// # Safety
    /// As [`Deps::inline`].
    #[inline(always)]
    unsafe fn inline_mut(&mut self, n: usize) -> &mut [(usize, AccessMode)] {
        // SAFETY: as `inline`.
        unsafe { &mut *(&mut self.inline[..n] as *mut [MaybeUninit<(usize, AccessMode)>] as *mut [(usize, AccessMode)]) }
    }

    /// Add a depend clause's item: one access per address, the strongest of the modes asked
    /// for (writers over mutexinoutset over readers).
    #[inline]
    pub fn add(&mut self, addr: usize, m: AccessMode) {
        let len = self.len;
        if len < Deps::INLINE {
            // SAFETY: the first `len` are written.
            if let Some(e) = unsafe { self.inline_mut(len) }.iter_mut().find(|e| e.0 == addr) {
                merge_mode(e, m);
            } else {
                self.inline[len].write((addr, m));
                self.len = len + 1;
            }
        } else {
            self.add_more(addr, m);
        }
    }

    /// [`Deps::add`] with the inline entries full: past them, they all move to `more`.
    #[cold]
    #[inline(never)]
    fn add_more(&mut self, addr: usize, m: AccessMode) {
        // SAFETY: the first `len` are written.
        let entries = if self.len <= Deps::INLINE { unsafe { self.inline_mut(self.len) } } else { &mut self.more[..] };
        if let Some(e) = entries.iter_mut().find(|e| e.0 == addr) {
            merge_mode(e, m);
            return;
        }
        if self.len == Deps::INLINE {
            self.more.reserve(2 * Deps::INLINE);
            // SAFETY: all `INLINE` are written.
            let all: [(usize, AccessMode); Deps::INLINE] = unsafe { std::mem::transmute(self.inline) };
            self.more.extend_from_slice(&all);
        }
        self.more.push((addr, m));
        self.len = self.more.len();
    }

    /// [`Extend::extend`] past the inline entries.
    #[cold]
    #[inline(never)]
    fn extend_more(&mut self, addr: usize, m: AccessMode, rest: impl Iterator<Item = (usize, AccessMode)>) {
        self.add_more(addr, m);
        for (addr, m) in rest {
            self.add(addr, m);
        }
    }
}

impl Extend<(usize, AccessMode)> for Deps {
    /// [`Deps::add`] for each item, the count kept in a register while they fit inline (the
    /// decoder's loop then neither reloads nor stores it per item).
    #[inline]
    fn extend<I: IntoIterator<Item = (usize, AccessMode)>>(&mut self, items: I) {
        let mut items = items.into_iter();
        let mut len = self.len;
        if len >= Deps::INLINE {
            for (addr, m) in items {
                self.add_more(addr, m);
            }
            return;
        }
        while let Some((addr, m)) = items.next() {
            // SAFETY: the first `len` are written (each one before `len` counts it).
            if let Some(e) = unsafe { self.inline_mut(len) }.iter_mut().find(|e| e.0 == addr) {
                merge_mode(e, m);
            } else if len < Deps::INLINE {
                self.inline[len].write((addr, m));
                len += 1;
            } else {
                self.len = len;
                self.extend_more(addr, m, items);
                return;
            }
        }
        self.len = len;
    }
}

impl Default for Deps {
    fn default() -> Deps {
        Deps::new()
    }
}

impl std::ops::Deref for Deps {
    type Target = [(usize, AccessMode)];

    #[inline]
    fn deref(&self) -> &[(usize, AccessMode)] {
        // SAFETY: the first `len` are written.
        if self.len <= Deps::INLINE { unsafe { self.inline(self.len) } } else { &self.more }
    }
}

/// A repeated address keeps the strongest of its modes ([`Deps::add`]).
#[inline]
fn merge_mode(e: &mut (usize, AccessMode), m: AccessMode) {
    let rank = |m: AccessMode| match m {
        AccessMode::R => 0,
        AccessMode::Commute => 1,
        _ => 2,
    };
    if rank(m) > rank(e.1) {
        e.1 = m;
    }
}

/// Record `t` (a new child of the calling thread's task) in the map for `deps` and make it
/// wait for its predecessors; it is made ready here if none is left incomplete (as libgomp's
/// gomp_task_handle_depend: a hash lookup per address, an edge per predecessor, nothing
/// allocated but the entries' growth). `deps` names each address once ([`Deps::add`]): a
/// second access would find `t` itself recorded and wait for it.
fn link_deps(c: CtxRef, t: &Arc<TaskBox>, deps: &[(usize, AccessMode)]) {
    // Nobody else knows `t` yet: the counter starts high, so that predecessors completing
    // while it is linked cannot make it ready early; then the edges not made come off.
    t.link.waiting.store(LINKING, Ordering::Relaxed);
    let mut edges = 0;
    // (The map is the calling task's, which only its thread touches.)
    c.with(|cx| {
        let map = cx.task.deps.get_or_insert_with(new_map);
        for &(addr, mode) in deps {
            access(map.entry(addr), mode, Some(t), &mut |p| {
                if p.link.add_successor(t) {
                    edges += 1;
                }
            });
        }
    });
    // Counted as blocked before the predecessors can release it (their decrement of
    // `blocked` then never comes first); taken back if none is left.
    let tasks = &t.team.get().tasks.blocked;
    if edges > 0 {
        tasks.fetch_add(1, Ordering::Relaxed);
    }
    if t.link.waiting.fetch_sub(LINKING - edges, Ordering::AcqRel) == LINKING - edges {
        if edges > 0 {
            tasks.fetch_sub(1, Ordering::Relaxed);
        }
        t.clone().ready();
    }
}

/// The incomplete earlier siblings that a child with `deps` would wait for (recording the
/// child `t`, if given, as the addresses' newest reader or writer).
fn preds_of(c: CtxRef, t: Option<&Arc<TaskBox>>, deps: &[(usize, AccessMode)]) -> Preds {
    let mut preds = Preds::new();
    c.with(|cx| {
        if t.is_none() && cx.task.deps.is_none() {
            // No child has named an address yet (and a lookup needs no map).
            return;
        }
        let map = cx.task.deps.get_or_insert_with(new_map);
        for &(addr, mode) in deps {
            let e = match (t, map.map.get_mut(&addr)) {
                (None, Some(e)) => e,
                // An address no earlier sibling named has no predecessor.
                (None, None) => continue,
                (Some(_), _) => map.entry(addr),
            };
            access(e, mode, t, &mut |p| {
                if !p.link.done() && !preds.iter().any(|q| Arc::ptr_eq(q, p)) {
                    preds.push(p.clone());
                }
            });
        }
    });
    preds
}

/// Predecessors a waiting task holds (inline up to a few).
type Preds = smallvec::SmallVec<[Arc<TaskBox>; 4]>;

fn all_done(preds: &Preds) -> bool {
    preds.iter().all(|p| p.link.done())
}

/// Wait (running other tasks) until the calling task's earlier siblings that `deps` names
/// are done, for work that ends before the calling task creates another child (a task run
/// at once, `taskwait depend`): no later sibling can have to wait for that work, so it is
/// not recorded, only its predecessors looked up (as libgomp's
/// gomp_task_maybe_wait_for_dependencies).
fn wait_for_preds(c: CtxRef, deps: &[(usize, AccessMode)]) {
    match wait_for_preds_or(c, deps, || false) {
        Waited::Done => {}
        Waited::Room => unreachable!("invariant: no room to wait for"),
    }
}

/// How [`wait_for_preds_or`] ended.
enum Waited {
    /// The predecessors are done.
    Done,
    /// `room` held first: the predecessors may still run.
    Room,
}

/// [`wait_for_preds`], ending early when `room()` holds (looked at while waiting): a
/// creator held by the depend throttle waits for whichever comes first, room under the
/// throttle (the task is then deferred after all) or its own predecessors (it runs at once).
fn wait_for_preds_or(c: CtxRef, deps: &[(usize, AccessMode)], room: impl Fn() -> bool) -> Waited {
    if deps.is_empty() {
        return Waited::Done;
    }
    let preds = preds_of(c, None, deps);
    if !all_done(&preds) {
        wait_until(c, Scope::children(c), || all_done(&preds) || room());
        if !all_done(&preds) {
            return Waited::Room;
        }
    }
    Waited::Done
}

/// Everything GOMP_task gets, its data, flags and depend array decoded.
pub struct Spawn {
    pub body: Body,
    /// Its data and how to copy it.
    pub data: TaskData,
    pub if_clause: bool,
    pub flags: TaskFlags,
    /// Its depend clauses (with `flags.depend` only), decoded in place.
    pub deps: Deps,
    pub priority: i32,
    /// Where the task's event handle goes (a detach clause).
    pub detach: Option<Detach>,
    /// The creator already chose to defer it ([`undeferred`] said [`Now::Defer`]): [`spawn`]
    /// does not ask [`choose`] again (a second answer could differ, and each question
    /// advances the creator's probe count).
    pub deferred: bool,
}

/// Whether the runtime, not the program, decides if a new task of the calling thread runs
/// at once: not if(0), not in a final task, in a parallel region (else undeferred or
/// included).
#[inline]
fn deferrable(c: &Ctx, team: &Team, if_clause: bool) -> bool {
    if_clause && !c.task.final_ && team.level != 0
}

/// Whether a new task of the calling thread runs at once (undeferred or included).
fn runs_now(c: &Ctx, team: &Team, s: &Spawn, extra: usize) -> bool {
    !deferrable(c, team, s.if_clause) || throttled(c, team, s, extra)
}

/// Whether a throttle holds a deferrable new task of the calling thread.
#[inline]
fn throttled(c: &Ctx, team: &Team, s: &Spawn, extra: usize) -> bool {
    c.deque.len() + extra > THROTTLE * team.n as usize || (s.flags.depend && team.tasks.over_depend_throttle(team.n))
}

/// Whether new tasks are not to be created: the region or the taskgroup was cancelled.
fn cancelled(c: &Ctx) -> bool {
    if !env().cancellation {
        return false;
    }
    if c.team().cancelled.load(Ordering::Acquire) {
        return true;
    }
    group_for_cancel(c.task.group.as_ref()).is_some_and(|g| g.cancelled.load(Ordering::Acquire))
}

/// The taskgroup a cancel construct names: a worksharing construct's own group does not count.
fn group_for_cancel(g: Option<&Arc<Group>>) -> Option<&Arc<Group>> {
    match g {
        Some(g) if g.workshare && g.outer.is_some() => g.outer.as_ref(),
        g => g,
    }
}

/// GOMP_task. `s` is borrowed so that its creator can decode the depend clauses into
/// `s.deps` where they stay: passed by value, a `Spawn` written to before the call is
/// copied whole into the argument.
///
/// # Safety
/// `s.body` is the compiler's body for a copy of `s.data` (it is called on one).
pub unsafe fn spawn(s: &Spawn) {
    // SAFETY: per the contract; no lent box.
    unsafe { spawn_in::<false, false>(s, std::ptr::null_mut()) }
}

/// [`spawn`] of a task whose data is already in the room of a box from [`lend_box`]: a
/// deferred task is that box, its data not copied; else the box is kept for a next task
/// once `spawn` is done with the data. Inline in its callers (the kmp entries: a call and
/// a frame fewer on every task's path), each with its own `DEPEND`: whether the task has
/// depend clauses (`s.flags.depend`, known where it is called), which makes each copy's
/// closures of their own types, each inlined (one closure shared by both copies was
/// called out of line).
///
/// # Safety
/// As [`spawn`]; `s.data` is `s.data.src()`'s `s.data.size()` bytes, the room of a box
/// from [`lend_box`] that nothing else uses (not given back, not spawned), without a copy
/// function; the task has no detach clause, and depend clauses exactly with `DEPEND`.
#[inline(always)]
pub unsafe fn spawn_lent<const DEPEND: bool>(s: &Spawn) {
    debug_assert!(s.data.size() <= INLINE && !s.data.has_cpyfn() && !s.flags.detach && s.flags.depend == DEPEND);
    // SAFETY: per the contract, the room of a box `lend_box` let go of, which it owns now.
    let mut lent = Some(unsafe { lent_box(s.data.src()) });
    // SAFETY: per the contract; the box holds the data, as `make_task` takes it.
    unsafe { spawn_in::<true, DEPEND>(s, &mut lent) };
    if let Some(t) = lent {
        keep_box(t);
    }
}

/// [`spawn`], with (`LENT`) a box that holds the data already (`*lent`), which a deferred
/// task takes; `DEPEND`: the task is known to have depend clauses. Constants, so that
/// [`spawn`]'s copy has nothing of the lent box (it had a few instructions of it as a
/// value), and each copy's closures are of their own types, each inlined into its one
/// caller (one closure shared by two was called out of line).
///
/// # Safety
/// As [`spawn`]; with `LENT`, `lent` is valid, and its box, if any, holds `s.data` in its
/// storage, which nothing else uses; with `DEPEND`, `s.flags.depend` is set.
#[inline(always)]
unsafe fn spawn_in<const LENT: bool, const DEPEND: bool>(s: &Spawn, lent: *mut Option<Arc<TaskBox>>) {
    let c = cur();
    let deps: &[(usize, AccessMode)] = if DEPEND || s.flags.depend { &s.deps } else { &[] };
    let detach = s.flags.detach && s.detach.is_some();
    let Some((final_, deferrable, choice)) = c.with(|cx| {
        if cancelled(cx) {
            return None;
        }
        let team = cx.team();
        let deferrable = deferrable(cx, team, s.if_clause);
        let choice = if deferrable && s.deferred {
            Choice::Defer
        } else if deferrable && deps.is_empty() && !detach {
            choose_in(cx, team)
        } else if !deferrable || throttled(cx, team, s, 0) {
            Choice::Run
        } else {
            Choice::Defer
        };
        Some((cx.task.final_ || s.flags.final_, deferrable, choice))
    }) else {
        return;
    };
    let priority = if s.flags.priority { s.priority.clamp(0, env().max_task_priority) } else { 0 };
    match choice {
        Choice::Defer => {}
        Choice::Probe => return timed(c, || run_undeferred(c, s, final_, priority, detach)),
        Choice::Run if detach && deferrable => {
            // Throttled: run it here, but as the deferred task it could have been, complete
            // when its event is fulfilled. Waiting for that here, as for if(0), would hang a
            // creator that fulfils the events itself after creating the tasks (as libgomp
            // does past its throttle).
            let t = new_task(c, s, final_, priority, true, true, !deps.is_empty(), None);
            // Recorded for its later siblings (it completes at the fulfil, after they may
            // have been created), its predecessors waited for here, not linked.
            let preds = preds_of(c, Some(&t), deps);
            if !all_done(&preds) {
                wait_until(c, Scope::children(c), || all_done(&preds));
            }
            return execute(c, t);
        }
        Choice::Run => {
            // Held by a throttle (a deferrable task with depend clauses while the creator's
            // deque is full or the team has too many tasks not complete): wait for the
            // task's predecessors as for any task run at once, but defer it after all once
            // the throttles let it. Waiting for the predecessors alone drained the team each
            // time on a graph whose new task depends on the newest ones (a wavefront created
            // row by row: one thread ran the chain's tail while the others waited), and
            // waited forever for a predecessor that waits for an event the creator fulfils
            // later.
            // (A detached deferrable task took the arm above; without depend clauses there
            // is nothing to wait for.)
            match c.team().level {
                0 => {}
                _ if deferrable => match wait_for_preds_or(c, deps, || c.get(|cx| !runs_now(cx, cx.team(), s, 0))) {
                    Waited::Done => {}
                    Waited::Room => return defer(c, s, final_, priority, detach, deps),
                },
                _ => wait_for_preds(c, deps),
            }
            run_undeferred(c, s, final_, priority, detach);
            return;
        }
    }
    // SAFETY: valid with `LENT` (the contract). (Its box is taken here only: known to be
    // there, the path of a new box is left out of the lent copy.)
    let lent = if LENT { Some(unsafe { (*lent).take() }.expect("invariant: a lent box is taken once")) } else { None };
    defer_inline::<LENT>(c, s, final_, priority, detach, deps, lent);
}

/// Queue a new task (once its predecessors are complete, if it has depend clauses).
#[inline(never)]
fn defer(c: CtxRef, s: &Spawn, final_: bool, priority: i32, detach: bool, deps: &[(usize, AccessMode)]) {
    defer_inline::<false>(c, s, final_, priority, detach, deps, None)
}

/// [`defer`], inline in [`spawn`]'s usual path (as [`make_task`] in it); with `LENT`,
/// `lent` is a box holding the data already ([`spawn_in`]).
#[inline(always)]
fn defer_inline<const LENT: bool>(
    c: CtxRef,
    s: &Spawn,
    final_: bool,
    priority: i32,
    detach: bool,
    deps: &[(usize, AccessMode)],
    lent: Option<Arc<TaskBox>>,
) {
    let t = make_task::<LENT>(c, s, final_, priority, detach, true, !deps.is_empty(), None, lent);
    if deps.is_empty() {
        let team = c.get(|cx| {
            let team = cx.team();
            team.tasks.push(&cx.deque, t);
            team
        });
        team.nudge();
        return;
    }
    link_deps(c, &t, deps);
}

/// Finished boxes of tasks with depend clauses (a box whose last reference a parent's map
/// drops goes back on the creating thread, for its next child) and of those with data over
/// [`INLINE`](crate::abi::gomp::data::INLINE) bytes (the data block stays with the box): a new such task takes one instead
/// of allocating. Lock-free and bounded: a task finished when
/// the pool is full is freed.
static POOL: std::sync::OnceLock<ArrayQueue<Arc<TaskBox>>> = std::sync::OnceLock::new();
const POOL_CAPACITY: usize = 1024;

fn pool() -> &'static ArrayQueue<Arc<TaskBox>> {
    POOL.get_or_init(|| ArrayQueue::new(POOL_CAPACITY))
}

/// The most finished boxes a thread keeps for its own next tasks ([`BOXES`]) before it
/// gives them to [`POOL`].
const LOCAL_BOXES: usize = 64;

thread_local! {
    /// Finished boxes this thread keeps: [`POOL`]'s two ends are shared by every thread, and
    /// at 2 threads taking and giving back there was 6.5% of recursive code's time with
    /// depend clauses (each thread mostly finishes the tasks it made).
    static BOXES: std::cell::RefCell<Vec<Arc<TaskBox>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A finished box for a new task: the thread's own first, else one from [`POOL`]. (Inline
/// in both its callers, [`make_task`] and [`lend_box`], each on a task's path.)
#[inline(always)]
fn take_box() -> Option<Arc<TaskBox>> {
    take_spare(&BOXES).or_else(|| pool().pop())
}

/// Give a finished task's box back (the thread's own, else [`POOL`]) if it is a pooled one
/// and nobody else holds it.
#[inline]
fn recycle(t: Arc<TaskBox>) {
    // (A shared box, the usual case when its task finishes while its parent's map still
    // names it, is told by a load: `get_mut` would write the count's line.)
    if t.pooled && Arc::strong_count(&t) == 1 {
        keep_box(t);
    }
}

#[inline(never)]
fn keep_box(mut t: Arc<TaskBox>) {
    let Some(b) = Arc::get_mut(&mut t) else { return };
    // (Its completion emptied its successor list. Its group goes when the box is reused.)
    b.parent = None;
    if let Some(t) = put_spare(&BOXES, t, LOCAL_BOXES) {
        // Full: freed here.
        let _ = pool().push(t);
    }
}

/// Where a box's inline data room is, from the box (as `Arc::into_raw` gives it).
const ROOM: usize = std::mem::offset_of!(TaskBox, store) + Storage::INLINE_OFFSET;

/// A finished (or new) box lent out for its data room: [`INLINE`] bytes, 16-byte aligned,
/// which the caller writes a task's data into and then hands back, either to
/// [`spawn_lent`] (a deferred task is the box itself: its data needs no copy) or to
/// [`give_back_lent`]. The kmp ABI's task allocation: clang writes the task into the
/// runtime's memory before handing it over (abi/kmp/task.rs).
///
/// Inline: the thread's own last box taken with no call; [`lend_other_box`] otherwise.
#[inline(always)]
pub(crate) fn lend_box() -> *mut u8 {
    // (`None` has an arm of its own: folded into the last one, the code LLVM inlines into
    // `make_task`'s callers, `GOMP_task` among them, came out longer.)
    match take_spare(&BOXES) {
        Some(t) if !t.store.has_heap() => lend(t),
        None => lend_other_box(None),
        t => lend_other_box(t),
    }
}

/// [`lend_box`] of `t` (none: one from [`POOL`], else a new one) after its room is made the
/// inline one.
#[cold]
#[inline(never)]
fn lend_other_box(t: Option<Arc<TaskBox>>) -> *mut u8 {
    let mut t = t.or_else(|| pool().pop()).unwrap_or_else(blank_box);
    if t.store.has_heap() {
        // The room is the inline one: what `store.ptr()` gives when the storage has no
        // heap block (a box's reused task takes its data there, the body gets it there).
        Arc::get_mut(&mut t).expect("invariant: a pooled box has no other reference").store.drop_heap();
    }
    lend(t)
}

/// Let go of `t`, its storage without a heap block: its room.
#[inline(always)]
fn lend(t: Arc<TaskBox>) -> *mut u8 {
    debug_assert!(!t.store.has_heap());
    let p = Arc::into_raw(t);
    // SAFETY: the box's inline room, inside its allocation (`ROOM`); the pointer keeps the
    // whole box's provenance, as `lent_box` needs to come back to it.
    unsafe { p.byte_add(ROOM) as *mut u8 }
}

/// The box [`lend_box`] lent with `room`.
///
/// # Safety
/// `room` came from [`lend_box`], and this is the one call that takes its box back.
unsafe fn lent_box(room: *mut c_void) -> Arc<TaskBox> {
    // SAFETY: per the contract: `lend_box` let go of the box with `into_raw` and gave its
    // room's address, `ROOM` bytes in.
    unsafe { Arc::from_raw(room.byte_sub(ROOM) as *const TaskBox) }
}

/// Take back a box [`lend_box`] lent (`room`), whose task was not spawned with it, for a
/// next task.
///
/// # Safety
/// As [`lent_box`]; nothing uses the room any more.
pub(crate) unsafe fn give_back_lent(room: *mut u8) {
    // SAFETY: per the contract.
    keep_box(unsafe { lent_box(room as *mut c_void) });
}

/// A box for [`lend_box`] when the thread has none to reuse: pooled, as the boxes of a
/// task with depend clauses, so that lent boxes come back for the next tasks; its fields
/// are written when it holds a task ([`make_task`]).
#[cold]
#[inline(never)]
fn blank_box() -> Arc<TaskBox> {
    unsafe extern "C" fn no_body(_: *mut c_void) {}
    let (team, icv) = cur().get(|cx| (cx.team_ref(), cx.icv));
    Arc::new(TaskBox {
        body: no_body,
        store: Storage::new(),
        parent: None,
        group: None,
        team,
        final_: false,
        priority: 0,
        icv,
        counted: false,
        link: Link::default(),
        linked: false,
        detach: AtomicU32::new(0),
        has_detach: false,
        pooled: true,
    })
}

/// A task object with its data copied; `counted`: queued (counted in team, group, parent);
/// `deps`: it has depend clauses; `bounds`: a taskloop task's range, written over its
/// copy's first two words.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn new_task(
    c: CtxRef,
    s: &Spawn,
    final_: bool,
    priority: i32,
    detach: bool,
    counted: bool,
    deps: bool,
    bounds: Option<(u64, u64)>,
) -> Arc<TaskBox> {
    make_task::<false>(c, s, final_, priority, detach, counted, deps, bounds, None)
}

/// [`new_task`], inline in [`defer`] (the deferred task's path: the call, its register
/// saves and the arguments' passing were about 25 instructions of a task's, issue 34).
/// With `LENT`, the task is `lent`, a box that holds its data already ([`spawn_lent`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn make_task<const LENT: bool>(
    c: CtxRef,
    s: &Spawn,
    final_: bool,
    priority: i32,
    detach: bool,
    counted: bool,
    deps: bool,
    bounds: Option<(u64, u64)>,
    lent: Option<Arc<TaskBox>>,
) -> Arc<TaskBox> {
    // Detached tasks are not pooled: their box's address is the event handle. (A lent box
    // holds no detached task: `spawn_lent`.)
    debug_assert!(lent.is_some() == LENT, "invariant: a box is lent exactly with LENT");
    let pooled = counted && !detach && (deps || LENT || s.data.layout().is_some());
    // (With `LENT`, the lent box and nothing else: `take_box` is not in that copy.)
    let reused = if LENT {
        lent
    } else if pooled {
        take_box()
    } else {
        None
    };
    let (parent, group, team, icv) = c.with(|cx| {
        let parent = if counted {
            let n = cx.task.node.get_or_insert_with(new_node);
            n.children.fetch_add(1, Ordering::Relaxed);
            Some(n.clone())
        } else {
            None
        };
        (parent, cx.task.group.clone(), cx.team_ref(), cx.icv)
    });
    if counted {
        if let Some(g) = &group {
            g.pending.fetch_add(1, Ordering::Relaxed);
        }
        let tasks = &team.get().tasks;
        tasks.pending.fetch_add(1, Ordering::AcqRel);
        if detach {
            tasks.detached.fetch_add(1, Ordering::AcqRel);
        }
    }
    match reused {
        Some(mut a) => {
            let b = Arc::get_mut(&mut a).expect("invariant: a pooled box has no other reference");
            // Field by field, not a new value dropped over the old: the data is copied into
            // the storage it has (its heap block kept if large enough), and the link's lock
            // and successor list are reused (empty: the completion took the list).
            debug_assert!(b.link.succ.get_mut().is_empty());
            b.body = s.body;
            b.parent = parent;
            b.group = group;
            b.team = team;
            b.final_ = final_;
            b.priority = priority;
            b.icv = icv;
            b.counted = counted;
            *b.link.done.get_mut() = false;
            b.linked = deps;
            *b.detach.get_mut() = 0;
            b.has_detach = detach;
            b.pooled = pooled;
            if LENT {
                debug_assert!(b.store.ptr() == s.data.src() && bounds.is_none(), "invariant: a lent box holds its task's data");
            } else {
                // The copy function runs as the creating task (as in libgomp).
                b.store.fill_mut(&s.data, bounds);
            }
            a
        }
        None => {
            let mut store = Storage::new();
            store.prepare(&s.data);
            let t = Arc::new(TaskBox {
                body: s.body,
                store,
                parent,
                group,
                team,
                final_,
                priority,
                icv,
                counted,
                link: Link::default(),
                linked: deps,
                detach: AtomicU32::new(0),
                has_detach: detach,
                pooled,
            });
            if detach && let Some(ev) = &s.detach {
                // Before the copy: the event handle variable is in the data (firstprivate).
                // The extra reference is given back by omp_fulfill_event.
                let h = Arc::into_raw(t.clone()) as usize;
                give_event(h);
                ev.publish(h, &s.data);
            }
            // SAFETY: prepared for the data above; the task is not queued or linked yet, so
            // this thread is the only one to use its storage. (Copied in place, not before
            // the box is made: a copy function may keep its destination's address, as a
            // C++ object's copy constructor may.)
            unsafe { t.store.fill(&s.data, bounds) };
            t
        }
    }
}

/// Run a task at once in the creating thread (if(0), final, throttled, orphaned).
fn run_undeferred(c: CtxRef, s: &Spawn, final_: bool, priority: i32, detach: bool) {
    if detach {
        // The event needs an object that outlives the body: a task box, run here.
        let t = new_task(c, s, final_, priority, true, false, false, None);
        run_body(c, &t);
        let done = t.clone();
        if t.detach.fetch_or(DETACH_BODY_DONE, Ordering::AcqRel) & DETACH_FULFILLED == 0 {
            wait_until(c, Scope::children(c), || done.detach.load(Ordering::Acquire) & DETACH_FULFILLED != 0);
        }
        return;
    }
    if s.data.has_cpyfn() {
        // Firstprivate copies with constructors: a private copy, as for a deferred task.
        run_on_copy(c, s, &mut Storage::new(), final_, None);
    } else {
        // SAFETY: `spawn`'s contract: the body is the compiler's for its data.
        run_inline_as(c, unsafe { OutlinedTask::new(s.body, s.data.src()) }, final_, s.flags.depend);
    }
}

/// Run `s`'s body here, as the calling thread's current task, on a private copy of its
/// data made in `own` (the compiler's copy function runs, as for a deferred task), with
/// `bounds` written over the copy's first two words (a taskloop task's range).
fn run_on_copy(c: CtxRef, s: &Spawn, own: &mut Storage, final_: bool, bounds: Option<(u64, u64)>) {
    own.fill_mut(&s.data, bounds);
    // SAFETY: `spawn`'s (or `taskloop`'s) contract: the body is the compiler's for a copy
    // of its data, which `own` now holds.
    run_inline_as(c, unsafe { OutlinedTask::new(s.body, own.ptr()) }, final_, s.flags.depend);
}

/// The event handles given to the program and not fulfilled yet (detach clauses are rare:
/// one lock per event): a second `omp_fulfill_event` of one, or of a value that never was
/// one, is told apart without touching the task, which the first may have freed.
static EVENTS: Mutex<Option<HashSet<usize, weft_core::hash::BuildAddrHasher>>> = Mutex::new(None);

/// `h` is an event handle now in the program's hands.
pub(crate) fn give_event(h: usize) {
    lock(&EVENTS).get_or_insert_with(HashSet::default).insert(h);
}

/// `omp_fulfill_event(h)` for an event given out and not fulfilled: it is fulfilled now.
/// Anything else (fulfilled before, never an event) aborts with a message: a second
/// fulfilment would complete a task that may be gone.
pub(crate) fn take_event(h: usize) {
    if !lock(&EVENTS).as_mut().is_some_and(|e| e.remove(&h)) {
        eprintln!("weft-omp: omp_fulfill_event: {h:#x} is not an event waiting to be fulfilled (fulfilled already?); aborting");
        std::process::abort();
    }
}

/// omp_fulfill_event.
///
/// # Safety
/// `ev` is 0 or a value the program got as an event handle (one not given out, or
/// fulfilled before, aborts with a message).
pub unsafe fn fulfill(ev: usize) {
    if ev == 0 {
        eprintln!("weft-omp: omp_fulfill_event called with a null event; ignored");
        return;
    }
    // Each event once (aborts otherwise, before the handle is used).
    take_event(ev);
    // SAFETY: per the contract, checked above: the reference given out with the handle.
    let t = unsafe { Arc::from_raw(ev as *const TaskBox) };
    let prev = t.detach.fetch_or(DETACH_FULFILLED, Ordering::AcqRel);
    debug_assert_eq!(prev & DETACH_FULFILLED, 0, "invariant: an event is taken once");
    // An undeferred task's creator waits for the flag itself and ends the task there.
    if t.counted && prev & DETACH_BODY_DONE != 0 {
        // This thread may be no member of the task's team, which may then end its region,
        // and be reused or freed, as soon as `finish` counts the task out; `finish` still
        // wakes the team's sleepers after that. So we are counted in the team first, while
        // it is surely alive and the task's (the task is counted: its region cannot end),
        // and `join` waits for us to be out before the team is reused or freed.
        let tasks = &t.team.get().tasks;
        // Relaxed: `finish`'s decrement of the pending count (a release, followed only by
        // read-modify-writes of it) comes after this in our order, and the join's gather
        // ends only once a load (Acquire) finds that count zero, so its later load of this
        // counter sees this increment or a later change (team.rs `Team::over`).
        tasks.fulfilling.fetch_add(1, Ordering::Relaxed);
        finish(t);
        // Release: our last access to the team (pairs with `TeamTasks::fulfillers`' Acquire).
        tasks.fulfilling.fetch_sub(1, Ordering::Release);
    }
}

// ---------------------------------------------------------------------------------------
// Waiting.

/// GOMP_taskwait: the calling task's children are complete. Inline in the ABI's entry
/// points for the usual case of no child pending (a task that never deferred one has no
/// counter), which takes no reference to the counter and sets up no wait.
#[inline]
pub fn taskwait() {
    let c = cur();
    // Acquire: pairs with each child's release of its count (`finish`): what the children
    // wrote is visible once the count is seen at zero, here as after a wait.
    if c.get(|cx| cx.task.node.as_ref().is_some_and(|n| n.children.load(Ordering::Acquire) > 0)) {
        taskwait_children(c);
    }
}

/// [`taskwait`] with children pending.
#[inline(never)]
fn taskwait_children(c: CtxRef) {
    let node = c.get(|cx| cx.task.node.clone());
    if let Some(n) = node {
        wait_until(c, Scope::Children(Arc::as_ptr(&n)), || n.children.load(Ordering::Acquire) == 0);
    }
}

/// `taskwait depend(...)`: the earlier siblings the clauses name are complete.
pub fn taskwait_depend(deps: &[(usize, AccessMode)]) {
    let c = cur();
    if c.team().level == 0 {
        return;
    }
    wait_for_preds(c, deps);
}

pub fn taskgroup_start(workshare: bool) {
    cur().with(|cx| cx.task.group = Some(new_group(cx.task.group.take(), workshare)));
}

pub fn taskgroup_end() {
    let c = cur();
    let Some(g) = c.get(|cx| cx.task.group.clone()) else {
        eprintln!("weft-omp: GOMP_taskgroup_end without a taskgroup; ignored");
        return;
    };
    if g.pending.load(Ordering::Acquire) > 0 {
        wait_until(c, Scope::Group(Arc::as_ptr(&g), Scope::node(c)), || g.pending.load(Ordering::Acquire) == 0);
    }
    // The tasks still holding the group (complete ones, in their parents' maps) let go of
    // it when their boxes do.
    c.with(|cx| cx.task.group = g.outer.clone());
}

/// GOMP_cancel(taskgroup).
pub fn cancel_taskgroup() -> bool {
    cur().get(|cx| {
        if let Some(g) = group_for_cancel(cx.task.group.as_ref()) {
            g.cancelled.store(true, Ordering::Release);
        }
    });
    true
}

/// GOMP_cancellation_point(taskgroup).
pub fn taskgroup_cancelled() -> bool {
    cur().get(cancelled)
}

/// omp_in_final.
pub fn in_final() -> bool {
    cur().get(|cx| cx.task.final_)
}

// ---------------------------------------------------------------------------------------
// Taskloop.

/// `n` iterations in `num_tasks` tasks as libgomp splits them: the first `n % num_tasks`
/// tasks get one iteration more. Returns (the first tasks' step, the step after task
/// `nfirst`, nfirst); without a remainder every task has the same step and `nfirst` is `n`
/// (never reached).
fn even_split(n: u64, num_tasks: u64, step: u64) -> (u64, u64, u64) {
    let (div, m) = (n / num_tasks, n % num_tasks);
    let each = div.wrapping_mul(step);
    if m == 0 { (each, step, n) } else { (each.wrapping_add(step), each, m - 1) }
}

/// GOMP_taskloop and GOMP_taskloop_ull: split [start, end) by `step` into tasks whose data
/// begins with their own (start, end) pair. `signed`: the long form (else unsigned long long).
///
/// # Safety
/// `s.body` is the compiler's body for `s.data` with a task's bounds written in (it is
/// called on copies, or on the data itself).
#[allow(clippy::too_many_arguments)]
pub unsafe fn taskloop(
    s: Spawn,
    lf: TaskloopFlags,
    red: Option<Descriptor>,
    num_tasks: u64,
    start: u64,
    end: u64,
    step: u64,
    signed: bool,
) {
    let c = cur();
    let team = c.team();
    let flags = s.flags;
    let early = || {
        if let Some(r) = red
            && !lf.nogroup
        {
            r.set_no_blocks();
        }
    };
    if env().cancellation && team.cancelled.load(Ordering::Acquire) {
        return early();
    }
    let n: u64 = if signed {
        let (st, en, sp) = (start as i64 as i128, end as i64 as i128, step as i64 as i128);
        if (sp > 0 && st >= en) || (sp < 0 && st <= en) || sp == 0 {
            return early();
        }
        let adj = if sp > 0 { sp - 1 } else { sp + 1 };
        ((en - st + adj) / sp) as u64
    } else if lf.up {
        if start >= end || step == 0 {
            return early();
        }
        (end - start).div_ceil(step)
    } else {
        if start <= end || step == 0 {
            return early();
        }
        let neg = step.wrapping_neg();
        (start - end).div_ceil(neg)
    };
    let mut task_step = step;
    let mut nfirst_task_step = step;
    let mut nfirst = n;
    let mut num_tasks = num_tasks;
    if lf.grainsize {
        let grainsize = num_tasks.max(1);
        num_tasks = n / grainsize;
        if lf.strict {
            let m = n % grainsize;
            task_step = grainsize.wrapping_mul(step);
            if m != 0 {
                num_tasks += 1;
                nfirst_task_step = m.wrapping_mul(step);
                if num_tasks == 1 {
                    task_step = nfirst_task_step;
                } else {
                    nfirst = num_tasks - 2;
                }
            }
        } else if num_tasks <= 1 {
            num_tasks = 1;
            task_step = end.wrapping_sub(start);
        } else if num_tasks >= grainsize {
            let mul = num_tasks * grainsize;
            task_step = grainsize.wrapping_mul(step);
            if mul != n {
                nfirst_task_step = task_step;
                task_step = task_step.wrapping_add(step);
                nfirst = n - mul - 1;
            }
        } else {
            (task_step, nfirst_task_step, nfirst) = even_split(n, num_tasks, step);
        }
    } else {
        if num_tasks == 0 {
            num_tasks = u64::from(team.n);
        }
        if num_tasks >= n {
            num_tasks = n;
        } else {
            (task_step, nfirst_task_step, nfirst) = even_split(n, num_tasks, step);
        }
    }
    if lf.nogroup {
        if c.get(cancelled) {
            return;
        }
    } else {
        taskgroup_start(false);
        if let Some(r) = red {
            reduction_register(r);
        }
    }
    let sp = Spawn { flags: TaskFlags { depend: false, ..flags }, deps: Deps::new(), detach: None, ..s };
    let (final_, now) = c.get(|cx| (cx.task.final_ || flags.final_, !deferrable(cx, team, lf.if_)));
    let priority = if flags.priority { sp.priority.clamp(0, env().max_task_priority) } else { 0 };
    // All at once when none may be deferred (if(0), final, outside a region). Otherwise each
    // task on its own, as for GOMP_task: deferred while the creator's deque has room, else
    // run here (libgomp runs the whole loop at once when its tasks would pass its throttle,
    // 64 per thread, so a taskloop of more tasks than that ran on one thread; here, with 8
    // per thread, so did one of more than 16 tasks on 2 threads).
    let slots = THROTTLE * team.n as usize;
    // Room for the private copies of the data of tasks run here (`run_on_copy`).
    let mut own = Storage::new();
    let mut start = start;
    for i in 0..num_tasks {
        let (a, b) = (start, start.wrapping_add(task_step));
        start = b;
        if i == nfirst {
            task_step = nfirst_task_step;
        }
        if now && !sp.data.has_cpyfn() {
            // All undeferred: the compiler's data itself, bounds written in (as libgomp does).
            sp.data.set_bounds_in_place((a, b));
            // SAFETY: `taskloop`'s contract: the body is the compiler's for its data.
            run_inline(c, unsafe { OutlinedTask::new(sp.body, sp.data.src()) }, final_);
        } else if now || c.get(|cx| cx.deque.len()) >= slots {
            // A copy function must make a private copy, and so must a task run here between
            // deferred ones.
            run_on_copy(c, &sp, &mut own, final_, Some((a, b)));
        } else {
            let t = new_task(c, &sp, final_, priority, false, true, false, Some((a, b)));
            c.get(|cx| team.tasks.push(&cx.deque, t));
            team.nudge();
        }
    }
    if !lf.nogroup {
        taskgroup_end();
    }
}

// ---------------------------------------------------------------------------------------
// Task reductions: the compiler's descriptors are decoded in abi/gomp/reduction.rs; here
// which taskgroup holds a registration.

/// GOMP_taskgroup_reduction_register: the current taskgroup's reductions.
pub fn reduction_register(data: Descriptor) {
    let c = cur();
    if c.get(|cx| cx.task.group.is_none()) {
        taskgroup_start(false);
    }
    c.get(|cx| {
        let Some(g) = &cx.task.group else { unreachable!("invariant: a taskgroup was just opened") };
        let old = g.reductions.load(Ordering::Relaxed);
        data.alloc(cx.team().n);
        g.reductions.store(data.link(old, None), Ordering::Release);
    })
}

/// Register `data` as the reductions of the new group `g` of a team of `n` (a parallel
/// region's implicit tasks share one registration).
pub fn reduction_register_in(g: &Group, data: Descriptor, n: u32) {
    data.alloc(n);
    g.reductions.store(data.link(None, None), Ordering::Release);
}

/// A worksharing construct's reductions for a thread that did not allocate them: share
/// the blocks of the first thread's descriptors `orig`.
pub fn reduction_register_shared(data: Descriptor, orig: Descriptor) {
    cur().get(|cx| {
        // (ws.rs opened the construct's group just before.)
        let Some(g) = &cx.task.group else { unreachable!("invariant: a worksharing construct's reductions have its taskgroup") };
        let old = g.reductions.load(Ordering::Relaxed);
        g.reductions.store(data.link(old, Some(orig)), Ordering::Release);
    })
}

/// GOMP_task_reduction_remap: `ptrs` holds `cnt` addresses (originals, or addresses in
/// private blocks) replaced by the calling thread's copies, then `ptrs.len() - cnt`
/// (at most `cnt`) entries receiving the first ones' originals.
pub fn reduction_remap(ptrs: &mut [*mut c_void], cnt: usize) {
    let (reg, id) = cur().get(|cx| (cx.task.group.as_ref().and_then(|g| g.reductions.load(Ordering::Acquire)), cx.tid as usize));
    let Some(reg) = reg else {
        eprintln!("weft-omp: GOMP_task_reduction_remap outside a taskgroup with task reductions; aborting");
        std::process::abort();
    };
    let cntorig = ptrs.len() - cnt;
    for i in 0..cnt {
        let addr = ptrs[i] as usize;
        match reg.remap(addr, id) {
            Some((private, orig)) => {
                ptrs[i] = private as *mut c_void;
                if i < cntorig {
                    let Some(orig) = orig else {
                        eprintln!("weft-omp: no task reduction matches {addr:#x}; aborting");
                        std::process::abort();
                    };
                    ptrs[cnt + i] = orig as *mut c_void;
                }
            }
            None => {
                eprintln!("weft-omp: no task reduction matches {addr:#x}; aborting");
                std::process::abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Priorities up to the level count have a level each; larger ranges share levels in
    /// order, the highest priority on the highest level.
    #[test]
    fn priority_levels() {
        let q = PrioQueues::new(7);
        assert_eq!(q.levels.len(), 8);
        assert!((0..=7).all(|p| q.level(p) == p as usize));
        let q = PrioQueues::new(1000);
        assert_eq!(q.levels.len(), PRIO_LEVELS);
        let levels: Vec<usize> = (0..=1000).map(|p| q.level(p)).collect();
        assert!(levels.windows(2).all(|w| w[0] <= w[1]), "levels out of priority order");
        assert_eq!((levels[0], levels[1000]), (0, PRIO_LEVELS - 1));
        let q = PrioQueues::new(i32::MAX);
        assert_eq!(q.level(i32::MAX), PRIO_LEVELS - 1);
    }

    /// One entry per address, the strongest mode, in the order first named: inline, at the
    /// fourth address, and past it, added one by one or as a list.
    #[test]
    fn deps_merge_repeated_addresses() {
        use AccessMode::{Commute, R, RW};
        let mut d = Deps::new();
        assert!(d.is_empty());
        for (addr, m) in [(1, R), (2, Commute), (1, Commute), (3, R), (4, RW), (2, R), (4, R)] {
            d.add(addr, m);
        }
        assert_eq!(&d[..], [(1, Commute), (2, Commute), (3, R), (4, RW)]);
        d.add(3, RW);
        d.add(5, R);
        d.add(1, RW);
        d.add(5, Commute);
        assert_eq!(&d[..], [(1, RW), (2, Commute), (3, RW), (4, RW), (5, Commute)]);
        d.extend([(6, R), (2, RW), (6, R)]);
        assert_eq!(&d[..], [(1, RW), (2, RW), (3, RW), (4, RW), (5, Commute), (6, R)]);

        let mut e = Deps::new();
        e.extend([(1, R), (2, R), (1, RW)]);
        e.extend([(3, Commute), (4, R), (3, R), (5, R), (4, Commute), (5, RW)]);
        assert_eq!(&e[..], [(1, RW), (2, R), (3, Commute), (4, Commute), (5, RW)]);
    }

    fn spares() -> (usize, usize) {
        (NODES.with(|n| n.borrow().len()), MAPS.with(|m| m.borrow().len()))
    }

    /// An ended task's child counter is kept for the next task only when no child holds it
    /// any more, its map only while small, and a thread keeps a bounded number of each.
    #[test]
    fn ended_tasks_leave_their_counter_and_map_only_when_free() {
        let node = new_node();
        let child = node.clone();
        end_task(Some(node), Some(new_map()));
        assert_eq!(spares(), (0, 1), "a counter a child still holds was kept");
        end_task(Some(child), None);
        assert_eq!(spares(), (1, 1));
        let (node, map) = (new_node(), new_map());
        assert_eq!(spares(), (0, 0), "the spares were not taken");
        end_task(Some(node), Some(map));
        let mut big: Box<DepMap> = Box::default();
        big.map.reserve(4 * MAP_KEEP_CAPACITY);
        end_task(None, Some(big));
        assert_eq!(spares(), (1, 1), "a large map was kept");
        for _ in 0..2 * SPARE_OBJECTS {
            end_task(Some(Arc::default()), Some(Box::default()));
        }
        assert_eq!(spares(), (SPARE_OBJECTS, SPARE_OBJECTS));
    }

    /// A box lent for its room has no heap block (a task's body gets its data where the room
    /// is), and the room leads back to the box.
    #[test]
    fn a_lent_boxs_room_is_its_inline_storage() {
        let mut t = blank_box();
        let mut big = [0u8; 2 * INLINE];
        // SAFETY: a readable block of its size.
        let d = unsafe { TaskData::new(big.as_mut_ptr().cast(), None, big.len() as std::ffi::c_long, 16) };
        Arc::get_mut(&mut t).unwrap().store.prepare(&d);
        assert!(t.store.has_heap());
        let addr = Arc::as_ptr(&t) as usize;
        keep_box(t);
        let room = lend_box();
        // SAFETY: from lend_box, taken back once.
        let back = unsafe { lent_box(room.cast()) };
        assert_eq!(Arc::as_ptr(&back) as usize, addr, "the room did not lead back to its box");
        assert!(!back.store.has_heap(), "a lent box kept its heap block");
        assert_eq!(back.store.ptr(), room.cast(), "the room is not where the box's task finds its data");
        assert!((room as usize).is_multiple_of(16));
        keep_box(back);
    }

    unsafe extern "C" fn nothing(_: *mut c_void) {}

    /// GOMP_task of `body` as GCC calls it for a task with no data, copy function, depend
    /// clause or event (deferrable, no flags).
    fn gomp_task_without_data(body: Body) {
        // SAFETY: a body that ignores its data (none: size 0); no copy function, depend
        // clause or event.
        unsafe {
            crate::abi::task::GOMP_task(body, std::ptr::null_mut(), None, 0, 1, true, 0, std::ptr::null_mut(), 0, std::ptr::null_mut())
        };
    }

    static ASKED: AtomicU32 = AtomicU32::new(0);

    /// Ten children GOMP_task may defer, from thread 0 of a team of two: how often it asked
    /// for their fate ([`Sizes::choose`]).
    unsafe extern "C" fn ten_children(_: *mut c_void) {
        if cur().get(|cx| cx.tid) != 0 {
            return;
        }
        let n0 = cur().get(|cx| cx.task.tiny.n);
        for _ in 0..10 {
            gomp_task_without_data(nothing);
        }
        ASKED.store(cur().get(|cx| cx.task.tiny.n) - n0, Ordering::Relaxed);
        taskwait();
    }

    /// A child is asked its fate once, whether GOMP_task's path for tasks without depend
    /// clauses or the general one defers it.
    #[test]
    fn each_child_is_asked_its_fate_once() {
        // SAFETY: `ten_children` ignores its data.
        let body = unsafe { crate::outlined::Outlined::new(ten_children, std::ptr::null_mut()) };
        crate::team::parallel(body, 2, 0, None);
        assert_eq!(ASKED.load(Ordering::Relaxed), 10);
    }

    /// A deque is lent to one context at a time, and goes back only to the team that lent
    /// it.
    #[test]
    fn a_deque_is_lent_once_and_goes_back_home() {
        let (mut a, mut b) = (TeamTasks::new(), TeamTasks::new());
        a.reset(2);
        b.reset(2);
        let d = a.lend(1);
        assert_eq!(d.tid, 1);
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.lend(1)));
        assert!(again.is_err(), "a deque was lent twice");
        let d = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.give_back(d))) {
            Ok(()) => panic!("a deque went back to another team"),
            // (The deque went down with the refused call: lend a fresh pair.)
            Err(_) => {
                let mut c = TeamTasks::new();
                c.reset(1);
                c.lend(0)
            }
        };
        drop(d);
        let d0 = a.lend(0);
        a.give_back(d0);
        let d0 = a.lend(0);
        assert_eq!(d0.home, a.addr());
        a.give_back(d0);
    }

    static OUTER_RAN: AtomicU32 = AtomicU32::new(0);
    static INNER_SAW: AtomicU32 = AtomicU32::new(0);
    static INNER_THREADS: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C" fn outer_task(_: *mut c_void) {
        OUTER_RAN.fetch_add(1, Ordering::Relaxed);
    }

    /// Each thread of the inner team: none of its team's queues holds the outer team's task,
    /// and it finds nothing to run.
    unsafe extern "C" fn inner_body(_: *mut c_void) {
        let c = cur();
        INNER_THREADS.fetch_add(1, Ordering::Relaxed);
        if c.team().tasks.queued() || run_one(c) {
            INNER_SAW.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Thread 0 of a team of one: a deferred task on its deque, then a nested team of two
    /// while the task is still queued.
    unsafe extern "C" fn outer_body(_: *mut c_void) {
        gomp_task_without_data(outer_task);
        assert_eq!(cur().get(|cx| cx.deque.len()), 1, "the task was not deferred");
        // SAFETY: `inner_body` ignores its data.
        let body = unsafe { crate::outlined::Outlined::new(inner_body, std::ptr::null_mut()) };
        crate::team::parallel(body, 2, 0, None);
        assert_eq!(cur().get(|cx| cx.team().n), 1);
        assert_eq!(OUTER_RAN.load(Ordering::Relaxed), 0, "the inner team ran the outer team's task");
        taskwait();
    }

    /// A thread's deque in a team and its deque in a team nested in it are apart: the inner
    /// team's threads (the nested region's primary included) neither see nor run a task
    /// queued in the outer team, which its own thread runs after the nested region.
    #[test]
    fn an_inner_team_does_not_take_the_outer_teams_tasks() {
        // SAFETY: `outer_body` ignores its data.
        let body = unsafe { crate::outlined::Outlined::new(outer_body, std::ptr::null_mut()) };
        crate::team::parallel(body, 1, 0, None);
        assert_eq!(INNER_THREADS.load(Ordering::Relaxed), 2, "the nested team is not of two threads");
        assert_eq!(INNER_SAW.load(Ordering::Relaxed), 0, "an inner thread saw the outer team's task");
        assert_eq!(OUTER_RAN.load(Ordering::Relaxed), 1);
    }

    static mut RAN: [u32; 8] = [0; 8];
    static mut ORDER: Vec<usize> = Vec::new();

    /// Task `i` of [`graph_body`]: appends its number to the order the team of one ran them in.
    unsafe extern "C" fn node_body(data: *mut c_void) {
        // SAFETY: a team of one thread runs the tasks one at a time; the data is the task's
        // number, copied in.
        unsafe {
            let i = *(data as *const usize);
            RAN[i] += 1;
            (*std::ptr::addr_of_mut!(ORDER)).push(i);
        }
    }

    /// A child of the calling task with data `i` and these depend clauses (as GCC makes it),
    /// run by [`node_body`].
    fn child(i: usize, deps: &[(usize, AccessMode)]) {
        child_with(node_body, i, deps);
    }

    /// A body that records nothing: for tests other than [`depend_clauses_order_siblings`],
    /// which owns [`RAN`] and [`ORDER`] (tests run on threads of their own at once).
    unsafe extern "C" fn quiet_body(_: *mut c_void) {}

    /// [`child`] with its body.
    fn child_with(body: Body, i: usize, deps: &[(usize, AccessMode)]) {
        let mut data = i;
        let mut d = Deps::new();
        for &(addr, mode) in deps {
            d.add(addr, mode);
        }
        let s = Spawn {
            body,
            // SAFETY: 8 readable bytes, copied before `spawn` returns.
            data: unsafe { TaskData::new((&raw mut data).cast(), None, 8, 8) },
            if_clause: true,
            flags: TaskFlags { depend: true, ..TaskFlags::default() },
            deps: d,
            priority: 0,
            detach: None,
            deferred: false,
        };
        // SAFETY: a task as GCC makes it, its data copied at creation.
        unsafe { spawn(&s) };
    }

    /// On one thread, each task becomes ready when its creator makes it or when its last
    /// predecessor completes, and the thread runs its newest ready task first (its deque):
    /// the order it ran them in shows which task waited for which.
    unsafe extern "C" fn graph_body(_: *mut c_void) {
        let (a, b) = (0x1000usize, 0x2000usize);
        use AccessMode::{R, RW};
        // How many predecessors the newest writer (or reader) of `addr` waits for: nothing
        // runs while the thread creates, so none has completed.
        let entry = |addr: usize, f: fn(&Entry) -> usize| cur().get(|cx| f(&cx.task.deps.as_ref().unwrap().map[&addr]));
        let writer_waits = |addr: usize| entry(addr, |e| e.out.as_ref().unwrap().link.waiting.load(Ordering::Relaxed));
        let reader_waits = |addr: usize| entry(addr, |e| e.ins.last().unwrap().link.waiting.load(Ordering::Relaxed));
        child(0, &[(a, RW)]); // ready
        assert_eq!(writer_waits(a), 0);
        child(1, &[(a, R)]); // waits for 0
        assert_eq!(reader_waits(a), 1);
        child(2, &[(a, R), (b, R)]); // waits for 0 (b: nobody before)
        assert_eq!(reader_waits(b), 1);
        child(3, &[(a, RW)]); // waits for 1 and 2
        assert_eq!(writer_waits(a), 2, "a writer waits for the readers since the last writer");
        child(4, &[(b, RW)]); // waits for 2 (b's reader)
        assert_eq!(writer_waits(b), 1);
        child(5, &[(a, R), (a, RW)]); // one access, the strongest: waits for 3 only
        assert_eq!(writer_waits(a), 1);
        // `taskwait depend(in: b)` returns once 4, the writer of b, is complete (the wait may
        // run other children too).
        taskwait_depend(&[(b, R)]);
        // SAFETY: as in `node_body`.
        let ran: Vec<usize> = unsafe { (*std::ptr::addr_of!(ORDER)).clone() };
        assert!(ran.contains(&4), "taskwait depend(in: b) returned before task 4 ran: {ran:?}");
    }

    /// The address [`reuse_first`] and [`reuse_second`] name.
    const READ_ONLY: usize = 0x3000;

    /// The capacity of the reader list of [`READ_ONLY`] in the calling task's map, if it
    /// has an entry.
    fn read_only_capacity() -> Option<usize> {
        cur().get(|cx| cx.task.deps.as_ref().and_then(|d| d.map.get(&READ_ONLY)).map(|e| e.ins.capacity()))
    }

    /// First region: readers of [`READ_ONLY`] (under the throttle, so each is recorded),
    /// more than its list holds inline.
    unsafe extern "C" fn reuse_first(_: *mut c_void) {
        for i in 0..6 {
            child_with(quiet_body, i, &[(READ_ONLY, AccessMode::R)]);
        }
        assert!(read_only_capacity().unwrap() >= 6);
    }

    /// Second region, its implicit task taking the map the first one's ended with: the
    /// entry is there, empty, its buffer kept; a writer finds nothing to wait for.
    unsafe extern "C" fn reuse_second(_: *mut c_void) {
        child_with(quiet_body, 0, &[(0x4000, AccessMode::R)]);
        assert!(read_only_capacity().is_some_and(|c| c >= 6), "the reader list's buffer was not kept");
        child_with(quiet_body, 1, &[(READ_ONLY, AccessMode::RW)]);
        let waits =
            cur().get(|cx| cx.task.deps.as_ref().unwrap().map[&READ_ONLY].out.as_ref().unwrap().link.waiting.load(Ordering::Relaxed));
        assert_eq!(waits, 0, "a writer waited for a reader of an ended task");
    }

    /// An ended task's map keeps an address's grown reader list, empty (nothing of the
    /// task it ordered is left to wait for), for the next task that takes the map.
    #[test]
    fn an_ended_maps_reader_lists_keep_their_buffers_empty() {
        for body in [reuse_first, reuse_second] {
            // SAFETY: the bodies ignore their data.
            let body = unsafe { crate::outlined::Outlined::new(body, std::ptr::null_mut()) };
            crate::team::parallel(body, 1, 0, None);
        }
    }

    /// Siblings' depend clauses order them as OpenMP says (in after out, out after every in
    /// since the last out, nothing between readers), a task named twice by one successor
    /// releases it once, and every task runs once.
    #[test]
    fn depend_clauses_order_siblings() {
        // SAFETY: no other test uses these; the team of one is done with them after `parallel`.
        unsafe {
            RAN = [0; 8];
            (*std::ptr::addr_of_mut!(ORDER)).clear();
        }
        // SAFETY: `graph_body` ignores its data.
        let body = unsafe { crate::outlined::Outlined::new(graph_body, std::ptr::null_mut()) };
        crate::team::parallel(body, 1, 0, None);
        // SAFETY: the region's tasks are complete.
        let (ran, order) = unsafe { (RAN, (*std::ptr::addr_of!(ORDER)).clone()) };
        assert_eq!(&ran[..6], &[1; 6], "each task runs once (order {order:?})");
        let at = |i: usize| order.iter().position(|&x| x == i).unwrap();
        for (before, after) in [(0, 1), (0, 2), (1, 3), (2, 3), (2, 4), (3, 5)] {
            assert!(at(before) < at(after), "task {after} ran before its predecessor {before}: {order:?}");
        }
    }
}
