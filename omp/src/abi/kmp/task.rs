//! Explicit tasks: `__kmpc_omp_task_alloc` and `__kmpc_omp_task(_with_deps)`, taskwait,
//! taskloop (each task a copy of the pattern task with its bounds, spawned as any task),
//! taskgroup, `if(0)` tasks. A task goes to `task::spawn`, as `GOMP_task`'s does.
//!
//! The ABI's quirk: the runtime allocates the task (`kmp_task_t`: shareds pointer, entry
//! routine, part id, destructor and priority words, then the compiler's privates; the
//! shareds block after it) and the compiler fills it in before handing it back. We allocate
//! [`Header`] + task + shareds in one block and hand it to `task::spawn` as the task's
//! data, plain bytes as GCC's (no copy function): the body trampoline points a copy's
//! `shareds` at the copy's own shareds (their offset is in the header), then calls
//! `routine(gtid, task)`. A task run at once runs on the block itself.
//!
//! The block is where the runtime's task will keep its data when it fits there (its
//! [`Home`]): a task box's inline room, lent by `task::lend_box`, so that a deferred task
//! is that box, its data not copied, and no block changes hands (this is on the creating
//! thread's path of every task). Else (a larger task) a block of ours, the thread's last
//! freed one when large enough, else `malloc`'s, whose data `spawn` copies; it is freed
//! (kept for the thread's next task) once `spawn` returned. Whatever does not make a
//! deferred task of a lent box (a task run at once, a taskloop's pattern, an `if(0)` task,
//! one with a detach clause) gives the box back once done with it: to `task`, or kept with
//! the thread's blocks for its next task ([`free`]).
//!
//! An `if(0)` task is run by the compiler's own code between `__kmpc_omp_task_begin_if0`
//! and `__kmpc_omp_task_complete_if0`: it runs as part of the encountering task (its
//! children count as the encountering task's; a taskwait in it waits for those too).

use super::Ident;
use super::fork::gtid;
use crate::abi::gomp::data::{Detach, INLINE, TaskData};
use crate::abi::guard;
use crate::task::{self, Spawn};
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_long, c_void};
use std::mem::MaybeUninit;
use weft_core::AccessMode;

/// kmp_tasking_flags_t bits clang sets.
const KMP_FINAL: i32 = 0x2;
const KMP_DESTRUCTORS: i32 = 0x8;
const KMP_PRIORITY: i32 = 0x20;

/// `kmp_int32 (*)(kmp_int32 gtid, kmp_task_t *task)`.
pub type Routine = unsafe extern "C" fn(i32, *mut KmpTask) -> i32;

/// The head of `kmp_task_t` (the compiler's privates follow).
#[repr(C)]
pub struct KmpTask {
    shareds: *mut c_void,
    routine: Routine,
    part_id: i32,
    /// Destructor thunk (`KMP_DESTRUCTORS`).
    data1: usize,
    /// Priority (`KMP_PRIORITY`), in the low 32 bits.
    data2: usize,
}

/// Ours, before the task: the whole block's size, where the shareds are, the allocation
/// flags, where the block lives, the detach event's cell (0: no detach clause) and the task
/// construct's `ident_t*` (for traces). A multiple of 16 bytes, so the task keeps the
/// block's 16-byte alignment (32 bytes, with or without `loc`).
#[repr(C, align(16))]
struct Header {
    /// The block's bytes from the header on (at most `u32::MAX`: [`__kmpc_omp_task_alloc`]).
    size: u32,
    /// The shareds' offset from the task (0: none). A copy of the block gets its `shareds`
    /// pointer from it when its body starts ([`body`]), so that the block is copied as plain
    /// bytes, as GCC's data is.
    shareds: u32,
    flags: i32,
    /// [`RUNNING`], [`REQUEUED`], [`SAVED`].
    state: u16,
    /// Written by [`__kmpc_omp_task_alloc`] and by [`copy`] (a taskloop's tasks are
    /// copies in blocks of ours), read by [`free`] and [`submit`]; the byte copy a runtime
    /// task keeps of a block (its data) carries its original's, never read.
    home: Home,
    event: usize,
    loc: usize,
}

/// Where a task block lives ([`Header::home`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u16)]
enum Home {
    /// A block of `block_cap(size)` bytes from `malloc`, freed to the thread's [`BLOCKS`].
    Block,
    /// A task box's inline room (`task::lend_box`), given back to `task` (spawned as the
    /// box, or given back).
    Lent,
}

/// The block is a task whose routine is running (a spawned copy, or an `if(0)` task).
const RUNNING: u16 = 1;
/// The block is an `if(0)` task's, and the top of the thread's [`IF0`] stack holds what
/// its creator had.
const SAVED: u16 = 4;
/// Its untied routine returned at a scheduling point and asked to be continued: clang's
/// untied task is a state machine over `part_id` that calls `__kmpc_omp_task` on itself and
/// returns; the next call of the routine resumes after that point. We continue it at once,
/// on the same thread (any thread may resume an untied task, and the point is only a
/// scheduling point).
const REQUEUED: u16 = 2;

const HEAD: usize = std::mem::size_of::<Header>();

/// What the creator of an `if(0)` task had, given back when it completes: its ICVs (an
/// `if(0)` task has its own data environment, libgomp.c/icv-1.c), its identity (the `if(0)`
/// task is a task of its own, which does not own its creator's nestable locks,
/// libgomp.c/lock-2.c) and, when tracing, when the `if(0)` task began (for its trace slice).
#[derive(Clone, Copy)]
struct If0Saved {
    /// The `if(0)` task's block (its address), whose completion takes this back.
    task: usize,
    icv: crate::team::Icv,
    id: usize,
    traced: Option<std::time::Instant>,
}

/// The [`If0Saved`] of the `if(0)` tasks running on this thread, the innermost on top: the
/// compiler runs an `if(0)` task's routine between its begin and complete calls on the
/// encountering thread, so the tasks it (or anything the thread runs meanwhile) begins
/// complete first. (Not in the task's block: a lent box's room has no space left for it.)
/// The first [`IF0_INLINE`] in place (no borrow flag, no growth, no destructor to
/// register: recursive code under a cutoff begins and completes an `if(0)` task per call),
/// deeper ones in [`IF0_DEEP`].
struct If0Stack {
    /// How many are saved (`slots[..n]` written, up to `IF0_INLINE` of them).
    n: Cell<usize>,
    /// Only this thread reaches them, through `push` and `pop_into`, which hold no
    /// reference into them past their own copy in or out.
    slots: UnsafeCell<[MaybeUninit<If0Saved>; IF0_INLINE]>,
}

const IF0_INLINE: usize = 32;

thread_local! {
    static IF0: If0Stack = const { If0Stack { n: Cell::new(0), slots: UnsafeCell::new([const { MaybeUninit::uninit() }; IF0_INLINE]) } };
    /// [`If0Stack`]'s past `IF0_INLINE`, the innermost last.
    static IF0_DEEP: std::cell::RefCell<Vec<If0Saved>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The calling thread's [`IF0`], taken out of `with` so that what is done with it is inline
/// in the caller (in a closure, `with` and the copy of an `If0Saved` into it were a call of
/// its own).
#[inline(always)]
fn if0_stack() -> &'static If0Stack {
    // SAFETY: the thread's own, which lives as long as the thread (no destructor: `IF0`
    // is never torn down before the thread's memory is), and the reference stays on it.
    IF0.with(|s| unsafe { &*(s as *const If0Stack) })
}

impl If0Stack {
    #[inline(always)]
    fn push(&self, s: If0Saved) {
        let n = self.n.get();
        if n < IF0_INLINE {
            // SAFETY: a slot of this thread's stack, which nothing else reads or writes
            // meanwhile (the field's comment).
            unsafe { (*self.slots.get())[n].write(s) };
        } else {
            push_deep(s);
        }
        self.n.set(n + 1);
    }

    /// Give the creator of the `if(0)` task `t`, the innermost one begun on this thread, what
    /// it had (into `c`, its context); when traced, when `t` began.
    #[inline(always)]
    fn pop_into(&self, t: usize, c: &mut crate::team::Ctx) -> Option<std::time::Instant> {
        let n = self.n.get().checked_sub(1).expect("invariant: an if(0) task completes once, after it began");
        self.n.set(n);
        if n >= IF0_INLINE {
            return pop_deep_into(t, c);
        }
        // SAFETY: `slots[..n + 1]` are written (the field's invariant); the reference is
        // dropped before anything can push again.
        let s = unsafe { (*self.slots.get())[n].assume_init_ref() };
        s.give_back(t, c)
    }
}

impl If0Saved {
    #[inline(always)]
    fn give_back(&self, t: usize, c: &mut crate::team::Ctx) -> Option<std::time::Instant> {
        assert_eq!(self.task, t, "invariant: if(0) tasks complete innermost first");
        c.icv = self.icv;
        c.task.id = self.id;
        self.traced
    }
}

#[cold]
#[inline(never)]
fn push_deep(s: If0Saved) {
    IF0_DEEP.with_borrow_mut(|v| v.push(s));
}

#[cold]
#[inline(never)]
fn pop_deep_into(t: usize, c: &mut crate::team::Ctx) -> Option<std::time::Instant> {
    IF0_DEEP.with_borrow_mut(|v| v.pop().expect("invariant: an if(0) task completes once, after it began").give_back(t, c))
}

/// The bytes a task block of `size` bytes (its header's) is allocated with: rounded up to
/// a power of two, at least 256, so that the task types of one program mostly share a
/// size and a cached block fits the next task whatever its type (recursive code with
/// depend clauses alternates types of different sizes: `deptree` took a new block for a
/// third of its tasks, the cached one being too small).
const fn block_cap(size: usize) -> usize {
    if size < 256 { 256 } else { size.next_power_of_two() }
}

/// # Safety
/// `t` is a task from [`__kmpc_omp_task_alloc`] (or a copy of its block).
unsafe fn header(t: *mut KmpTask) -> *mut Header {
    // SAFETY: per the contract, the header is right before the task.
    unsafe { (t as *mut u8).sub(HEAD) as *mut Header }
}

/// The task's data for `task::spawn`: the whole block.
fn spawn_of(t: *mut KmpTask, depend: bool) -> Spawn {
    // SAFETY: `t` came from __kmpc_omp_task_alloc (the callers' contracts).
    let h = unsafe { &*header(t) };
    // SAFETY: as above; the compiler wrote the priority before handing the task over.
    let priority = unsafe { (*t).data2 as u32 as i32 };
    let flags = task::TaskFlags { final_: h.flags & KMP_FINAL != 0, depend, priority: h.flags & KMP_PRIORITY != 0, detach: h.event != 0 };
    // SAFETY: the whole block (header, task, privates, shareds: `h.size` bytes, 16-byte
    // aligned), copied as plain bytes (the copy's body points its `shareds` at its own).
    let data = unsafe { TaskData::new(h as *const Header as *mut c_void, None, h.size as c_long, 16) };
    // SAFETY: the block's event cell (or none), writable while the task is created; task::spawn
    // writes the task's event handle into it.
    let detach = unsafe { Detach::cell(h.event as *mut usize) };
    Spawn { body, data, if_clause: true, flags, deps: task::Deps::new(), priority, detach, deferred: false }
}

/// Copy a task block (`src`: its header) to `dst`, its `shareds` pointing at the copy's.
///
/// # Safety
/// `src` is a block from [`__kmpc_omp_task_alloc`] (or a copy of one); `dst` has room for
/// its size, 16-byte aligned, and does not overlap it.
unsafe fn copy(dst: *mut u8, src: *const u8) {
    // SAFETY: per the contract.
    unsafe {
        let size = (*(src as *const Header)).size as usize;
        std::ptr::copy_nonoverlapping(src, dst, size);
        (*(dst as *mut Header)).home = Home::Block;
        point_shareds(dst as *mut Header);
    }
}

/// Point the block's task's `shareds` at the block's own shareds (a copy's still points at
/// its original's).
///
/// # Safety
/// `h` is a task block's header (of one from [`__kmpc_omp_task_alloc`] or a copy of one),
/// nothing else using the block.
#[inline(always)]
unsafe fn point_shareds(h: *mut Header) {
    // SAFETY: per the contract: the task follows the header, the shareds are at their
    // offset from it, inside the block.
    unsafe {
        let off = (*h).shareds as usize;
        if off != 0 {
            let t = (h as *mut u8).add(HEAD) as *mut KmpTask;
            (*t).shareds = (t as *mut u8).add(off) as *mut c_void;
        }
    }
}

/// Call the task's routine until it does not ask to be continued ([`REQUEUED`]).
///
/// # Safety
/// `t` is a task block's task, filled in by the compiler.
unsafe fn run_routine(t: *mut KmpTask, g: i32) {
    // SAFETY: per the contract; the header is only touched by the thread running the task.
    unsafe {
        let h = header(t);
        (*h).state = RUNNING;
        loop {
            ((*t).routine)(g, t);
            if (*h).state & REQUEUED == 0 {
                break;
            }
            (*h).state = RUNNING;
        }
        (*h).state = 0;
    }
}

/// The task's body, on its copy of the block (or the block itself, for a task run at once):
/// `routine(gtid, task)`, its `shareds` pointed at the copy's first, then the destructor
/// thunk if the compiler gave one.
unsafe extern "C" fn body(data: *mut c_void) {
    // SAFETY: `data` is a task block or a byte copy of one, which this task alone uses.
    unsafe {
        point_shareds(data as *mut Header);
        let h = &*(data as *const Header);
        let t = (data as *mut u8).add(HEAD) as *mut KmpTask;
        let g = gtid();
        run_routine(t, g);
        if h.flags & KMP_DESTRUCTORS != 0 && (*t).data1 != 0 {
            let d: Routine = std::mem::transmute::<usize, Routine>((*t).data1);
            d(g, t);
        }
        // Last: the task runner records the body's trace slice right after we return.
        crate::trace::note_task_ident(h.loc);
    }
}

/// A new task block: `sizeof_task` bytes of task (privates included) and `sizeof_shareds`
/// of shareds, which `task->shareds` points to. As libomp's, the privates and shareds are
/// not initialised (the compiler writes what the task reads); the task's own words are.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_task_alloc(
    loc: Ident,
    _gtid: i32,
    flags: i32,
    sizeof_task: usize,
    sizeof_shareds: usize,
    routine: Routine,
) -> *mut KmpTask {
    guard("__kmpc_omp_task_alloc", || {
        if (sizeof_task | sizeof_shareds) < INLINE {
            let task_size = task_size(sizeof_task);
            if HEAD + task_size + sizeof_shareds <= INLINE {
                // The thread's last room given back, else a finished box's room. Rooms come
                // back from tasks not deferred, `if(0)` ones above all, within the creating
                // thread's calls: recursive code under a cutoff takes and gives back one per
                // call, with no trip through the box cache. (Asked first: a deferred task's
                // creator, which finds none, pays one look.)
                let p = match BLOCKS.with(|b| b.pop_where(true)) {
                    Some((p, _)) => p,
                    None => task::lend_box(),
                };
                // SAFETY: a lent room of `INLINE` bytes, 16-byte aligned, ours until given
                // back.
                return unsafe { init(p, Home::Lent, loc as usize, flags, task_size, sizeof_shareds, routine) };
            }
        }
        // (Sizes a compiler gives; anything larger, which `Header` cannot hold, goes to
        // `alloc_new` and is refused there.)
        let mut small = std::ptr::null_mut();
        if (sizeof_task | sizeof_shareds) < SIZE_LIMIT
            && let Some((p, have)) = BLOCKS.with(|b| b.pop_where(false))
        {
            let task_size = task_size(sizeof_task);
            if have >= block_cap(HEAD + task_size + sizeof_shareds) {
                // SAFETY: a cached block with room for the task, as `init` needs.
                return unsafe { init(p, Home::Block, loc as usize, flags, task_size, sizeof_shareds, routine) };
            }
            small = p;
        }
        // SAFETY: `small` is null or a block taken from the cache.
        unsafe { alloc_new(small, loc as usize, flags, sizeof_task, sizeof_shareds, routine) }
    })
}

/// Both of a task's sizes are under this ([`__kmpc_omp_task_alloc`]), so that its block's
/// size fits [`Header::size`].
const SIZE_LIMIT: usize = 1 << 30;

/// The task's own bytes (`kmp_task_t` and the privates), rounded up so that the shareds
/// after them are 16-byte aligned.
#[inline(always)]
fn task_size(sizeof_task: usize) -> usize {
    sizeof_task.max(std::mem::size_of::<KmpTask>()).next_multiple_of(16)
}

/// [`__kmpc_omp_task_alloc`] with a new block (`small`, a cached block too small for the
/// task, freed first), out of line (and not unwinding: `extern "C"`), so that the entry's
/// usual path makes no call and saves no registers.
///
/// # Safety
/// `small` is null or a block from `malloc` that nothing else uses.
#[cold]
#[inline(never)]
unsafe extern "C" fn alloc_new(
    small: *mut u8,
    loc: usize,
    flags: i32,
    sizeof_task: usize,
    sizeof_shareds: usize,
    routine: Routine,
) -> *mut KmpTask {
    // SAFETY: per the contract.
    unsafe { libc::free(small as *mut c_void) };
    if (sizeof_task | sizeof_shareds) >= SIZE_LIMIT {
        eprintln!("weft-omp: a task of {sizeof_task} bytes with {sizeof_shareds} bytes of shareds is too large; aborting");
        std::process::abort();
    }
    let task_size = task_size(sizeof_task);
    let p = new_block(block_cap(HEAD + task_size + sizeof_shareds));
    // SAFETY: a new block with room for the task.
    unsafe { init(p, Home::Block, loc, flags, task_size, sizeof_shareds, routine) }
}

/// Write a task's header and own words into block `p`, which lives at `home`.
///
/// # Safety
/// `p` has `HEAD + task_size + sizeof_shareds` bytes (`block_cap` of them for a
/// [`Home::Block`], a lent room for a [`Home::Lent`]), 16-byte aligned, which nothing else
/// uses; both sizes are under [`SIZE_LIMIT`].
#[inline(always)]
unsafe fn init(p: *mut u8, home: Home, loc: usize, flags: i32, task_size: usize, sizeof_shareds: usize, routine: Routine) -> *mut KmpTask {
    let size = HEAD + task_size + sizeof_shareds;
    // SAFETY: per the contract: room for the header, the task and the shareds, 16-byte
    // aligned.
    unsafe {
        let shareds = if sizeof_shareds > 0 { task_size as u32 } else { 0 };
        (p as *mut Header).write(Header { size: size as u32, shareds, flags, state: 0, home, event: 0, loc });
        let t = p.add(HEAD) as *mut KmpTask;
        let sp = if sizeof_shareds > 0 { p.add(HEAD + task_size) as *mut c_void } else { std::ptr::null_mut() };
        t.write(KmpTask { shareds: sp, routine, part_id: 0, data1: 0, data2: 0 });
        t
    }
}

/// The task blocks last freed on this thread, with their sizes, for the next ones
/// allocated, the last freed on top: a deferred task's block is copied into the runtime's
/// task and freed within the call that hands it over (`__kmpc_omp_task_with_deps`,
/// `__kmpc_omp_task`), so a thread creating tasks in a loop takes back the block it just
/// gave, instead of a `malloc` and a `free` per task (a third of the creating thread's
/// instructions for a task with depend clauses); an `if(0)` task's block lives while its
/// routine runs, and the routine's own `if(0)` tasks (recursive code under a cutoff) take
/// and give back theirs inside that, last in first out, so a few blocks serve a recursion
/// as deep as the cache is long.
/// The lent rooms of tasks that were not deferred (`if(0)` tasks above all) come back here
/// too, marked [`LENT_ROOM`], for the thread's next task that fits one: as a block, with no
/// trip through `task`'s box cache.
/// A stack in cells (no borrow flag, no growth: this is on every task's path). No `Drop`
/// either, so that taking a block needs no check of the thread-local's state (nor a call to
/// register its destructor): [`BlocksOwner`] frees what is left when the thread exits.
struct Blocks {
    /// How many of `slots` hold a block (the top is `slots[n - 1]`).
    n: Cell<usize>,
    /// (block, its capacity, or [`LENT_ROOM`]).
    slots: [Cell<(*mut u8, usize)>; CACHED_BLOCKS],
    /// Whether [`BLOCKS_OWNER`]'s destructor is registered ([`OWNED`]), not yet
    /// ([`UNOWNED`]) or has run ([`EXITING`]: nothing is kept any more).
    owner: Cell<u8>,
}

const UNOWNED: u8 = 0;
const OWNED: u8 = 1;
const EXITING: u8 = 2;

/// How many freed blocks a thread keeps ([`Blocks`]).
const CACHED_BLOCKS: usize = 16;

/// The capacity [`Blocks`] records for a lent room (`task::lend_box`): not a block of ours,
/// given back to `task` when not used.
const LENT_ROOM: usize = 0;

impl Blocks {
    /// The top of the stack, if any and if `take` accepts it.
    #[inline(always)]
    fn pop_if(&self, take: impl Fn((*mut u8, usize)) -> bool) -> Option<(*mut u8, usize)> {
        let n = self.n.get().checked_sub(1)?;
        let b = self.slots.get(n)?.get();
        if !take(b) {
            return None;
        }
        self.n.set(n);
        Some(b)
    }

    #[inline(always)]
    fn pop(&self) -> Option<(*mut u8, usize)> {
        self.pop_if(|_| true)
    }

    /// [`Blocks::pop`] if the top is a lent room (`lent`) or a block (not).
    #[inline(always)]
    fn pop_where(&self, lent: bool) -> Option<(*mut u8, usize)> {
        self.pop_if(|b| (b.1 == LENT_ROOM) == lent)
    }

    /// Keeps the block if there is room and the thread is not exiting; false if not.
    fn push(&self, b: (*mut u8, usize)) -> bool {
        let n = self.n.get();
        // The first block kept makes sure the owner will free the cache (its destructor is
        // registered by that first access), once per thread; after it ran (the thread is
        // exiting), nothing is kept.
        if self.owner.get() != OWNED && !self.own() {
            return false;
        }
        let Some(slot) = self.slots.get(n) else { return false };
        slot.set(b);
        self.n.set(n + 1);
        true
    }
}

impl Blocks {
    /// Register [`BLOCKS_OWNER`]'s destructor if not done: whether blocks may be kept.
    #[cold]
    fn own(&self) -> bool {
        if self.owner.get() == UNOWNED && BLOCKS_OWNER.try_with(|_| ()).is_ok() {
            self.owner.set(OWNED);
        }
        self.owner.get() == OWNED
    }
}

/// Frees the blocks [`BLOCKS`] holds when the thread exits.
struct BlocksOwner;

impl Drop for BlocksOwner {
    fn drop(&mut self) {
        BLOCKS.with(|b| {
            b.owner.set(EXITING);
            while let Some((p, cap)) = b.pop() {
                if cap == LENT_ROOM {
                    // SAFETY: a lent room the cache held, given back once.
                    unsafe { task::give_back_lent(p) };
                } else {
                    // SAFETY: a block from malloc, owned by the cache.
                    unsafe { libc::free(p as *mut c_void) };
                }
            }
        })
    }
}

thread_local! {
    static BLOCKS: Blocks = const {
        Blocks { n: Cell::new(0), slots: [const { Cell::new((std::ptr::null_mut(), 0)) }; CACHED_BLOCKS], owner: Cell::new(UNOWNED) }
    };
    static BLOCKS_OWNER: BlocksOwner = const { BlocksOwner };
}

/// A new block of `cap` bytes, 16-byte aligned.
fn new_block(cap: usize) -> *mut u8 {
    // SAFETY: plain allocation (glibc's malloc aligns to 16).
    let p = unsafe { libc::malloc(cap) as *mut u8 };
    if p.is_null() {
        eprintln!("weft-omp: cannot allocate a task of {cap} bytes; aborting");
        std::process::abort();
    }
    p
}

/// Give a task's block back: a lent room to its box (kept for a next task), else ours.
///
/// # Safety
/// `t` is from [`__kmpc_omp_task_alloc`] (or a taskloop's copy of one), not spawned as its
/// box, not used after.
unsafe fn free(t: *mut KmpTask) {
    // SAFETY: per the contract: the header is in the block.
    let (p, home, size) = unsafe { (header(t) as *mut u8, (*header(t)).home, (*header(t)).size as usize) };
    if home == Home::Lent {
        // Kept for the thread's next task while the cache has room, else given back.
        if !BLOCKS.with(|b| b.push((p, LENT_ROOM))) {
            // SAFETY: a lent room (per the contract, given back once: here), unused from now.
            unsafe { task::give_back_lent(p) };
        }
        return;
    }
    // The block has `block_cap(size)` bytes.
    let size = block_cap(size);
    // Kept for the thread's next tasks while the cache has room, else (or while the
    // thread exits) freed at once.
    let kept = BLOCKS.with(|b| b.push((p, size)));
    if !kept {
        // SAFETY: a block from malloc that nothing uses any more.
        unsafe { libc::free(p as *mut c_void) };
    }
}

/// # Safety
/// `t` is a task from [`__kmpc_omp_task_alloc`], filled in by the compiler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task(_loc: Ident, _gtid: i32, t: *mut KmpTask) -> i32 {
    guard("__kmpc_omp_task", || {
        // SAFETY: per the contract.
        let h = unsafe { &mut *header(t) };
        if h.state & RUNNING != 0 {
            // An untied task continuing itself: `run_routine` calls it again.
            h.state |= REQUEUED;
            return;
        }
        // SAFETY: per the contract.
        unsafe { submit::<false>(t, &spawn_of(t, false)) };
    });
    0
}

/// Spawn `s`, the task `t`'s (`spawn_of`, its depend clauses added: `DEPEND`), and let go
/// of the block: a lent room goes with its box (the box, if the task is deferred), else
/// `spawn` copied the block (or ran the task on it) and the block is freed.
///
/// # Safety
/// `t` is a task from [`__kmpc_omp_task_alloc`], filled in by the compiler, not used after;
/// `s.flags.depend` is `DEPEND`.
#[inline(always)]
unsafe fn submit<const DEPEND: bool>(t: *mut KmpTask, s: &Spawn) {
    // SAFETY: per the contract: the header is before the task; a lent room holds the whole
    // block (`s.data`, `spawn_of`: no copy function), which nothing else uses; a task with
    // a detach clause (its event written only in a new box, `spawn`) copies it instead.
    unsafe {
        if (*header(t)).home == Home::Lent && !s.flags.detach {
            task::spawn_lent::<DEPEND>(s);
        } else {
            spawn_copied(t, s);
        }
    }
}

/// [`submit`]'s other way, out of line (a larger task's, or a detached one's): `spawn`
/// copies the block (or runs the task on it), which is freed after.
///
/// # Safety
/// As [`submit`].
#[cold]
#[inline(never)]
unsafe fn spawn_copied(t: *mut KmpTask, s: &Spawn) {
    // SAFETY: per the contract.
    unsafe {
        task::spawn(s);
        free(t);
    }
}

/// `kmp_depend_info`: an address, a length and the kind bits (in 1, out 2, mutexinoutset
/// 4, inoutset 8).
#[repr(C)]
pub struct DependInfo {
    addr: usize,
    len: usize,
    flags: u8,
}

/// The access of a `kmp_depend_info` by its flags' four kind bits: `out`, `inout` and
/// `inoutset` as writers (inoutset ordered as out, as for GOMP's), `mutexinoutset`, `in`,
/// in that order of precedence; none for flags naming none of these (left out). A table:
/// one load per item where the bits were tested one by one.
const KIND_MODES: [Option<AccessMode>; 16] = {
    let mut t = [None; 16];
    let mut f = 1;
    while f < 16 {
        t[f] = Some(if f & (2 | 8) != 0 {
            AccessMode::RW
        } else if f & 4 != 0 {
            AccessMode::Commute
        } else {
            AccessMode::R
        });
        f += 1;
    }
    t
};

/// Add one list's `kmp_depend_info`s to `deps` ([`KIND_MODES`]; a repeated address takes
/// the strongest, [`task::Deps::add`]).
#[inline]
fn add_list(deps: &mut task::Deps, list: &[DependInfo]) {
    for d in list {
        if let Some(m) = KIND_MODES[usize::from(d.flags & 0xf)] {
            deps.add(d.addr, m);
        }
    }
}

/// Add the depend lists' items to `deps` ([`add_list`]). Inline in its callers, as GCC's
/// [`decode`](crate::abi::gomp::depend::decode): a call of its own saves and restores
/// registers the caller has already saved, for a loop of a few items.
///
/// # Safety
/// Each list is null or holds its count of `kmp_depend_info`.
#[inline(always)]
unsafe fn depend_lists(deps: &mut task::Deps, n: i32, list: *const DependInfo, n_noalias: i32, noalias: *const DependInfo) {
    /// # Safety
    /// As [`depend_lists`]'s, for one list.
    unsafe fn slice<'a>(n: i32, l: *const DependInfo) -> &'a [DependInfo] {
        if n > 0 && !l.is_null() {
            // SAFETY: per the contract.
            unsafe { std::slice::from_raw_parts(l, n as usize) }
        } else {
            &[]
        }
    }
    // SAFETY: per the contract.
    add_list(deps, unsafe { slice(n, list) });
    // SAFETY: per the contract.
    add_list(deps, unsafe { slice(n_noalias, noalias) });
}

/// # Safety
/// As [`__kmpc_omp_task`]; the lists as [`depend_lists`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task_with_deps(
    _loc: Ident,
    _gtid: i32,
    t: *mut KmpTask,
    ndeps: i32,
    dep_list: *const DependInfo,
    ndeps_noalias: i32,
    noalias: *const DependInfo,
) -> i32 {
    guard("__kmpc_omp_task_with_deps", || {
        let mut s = spawn_of(t, true);
        // SAFETY: per the contract.
        unsafe { depend_lists(&mut s.deps, ndeps, dep_list, ndeps_noalias, noalias) };
        // SAFETY: as __kmpc_omp_task; `spawn_of(t, true)`.
        unsafe { submit::<true>(t, &s) };
    });
    0
}

/// Wait for the earlier sibling tasks the lists name (an `if(0)` task's or `taskwait`'s
/// depend clauses), as `GOMP_taskwait_depend`.
///
/// # Safety
/// As [`depend_lists`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_wait_deps(
    _loc: Ident,
    _gtid: i32,
    ndeps: i32,
    dep_list: *const DependInfo,
    ndeps_noalias: i32,
    noalias: *const DependInfo,
) {
    guard("__kmpc_omp_wait_deps", || {
        let mut deps = task::Deps::new();
        // SAFETY: per the contract.
        unsafe { depend_lists(&mut deps, ndeps, dep_list, ndeps_noalias, noalias) };
        task::taskwait_depend(&deps)
    })
}

/// `detach(evt)`: the event handle the compiler stores in `evt` before the task is
/// spawned, so before task::spawn makes the task's own handle: a cell that spawn fills in,
/// given out with its low bit set (task handles are aligned pointers), which
/// `omp_fulfill_event` passes to [`event_task`].
///
/// # Safety
/// `t` is a task from [`__kmpc_omp_task_alloc`], not spawned yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_task_allow_completion_event(_loc: Ident, _gtid: i32, t: *mut KmpTask) -> *mut c_void {
    guard("__kmpc_task_allow_completion_event", || {
        // SAFETY: per the contract.
        let h = unsafe { &mut *header(t) };
        if h.event == 0 {
            h.event = Box::into_raw(Box::new(0usize)) as usize;
            task::give_event(h.event | 1);
        }
        (h.event | 1) as *mut c_void
    })
}

/// The task handle behind an event handle of [`__kmpc_task_allow_completion_event`] (0 when
/// the task was never spawned); frees the cell: an event is fulfilled once.
pub(crate) fn event_task(ev: usize) -> usize {
    // SAFETY: an odd handle is a cell of __kmpc_task_allow_completion_event, not freed yet
    // (omp_fulfill_event checked it against the events given out); spawn wrote the task handle into it before the task
    // could run, and the program synchronizes its fulfilling with the task's creation.
    let h = unsafe { *Box::from_raw((ev & !1) as *mut usize) };
    if h == 0 {
        eprintln!("weft-omp: omp_fulfill_event: event {ev:#x} belongs to a task that was not created");
    }
    h
}

/// An `if(0)` task: the compiler calls its routine itself next (see the module doc).
///
/// # Safety
/// `t` is a task from [`__kmpc_omp_task_alloc`], filled in by the compiler.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task_begin_if0(_loc: Ident, _gtid: i32, t: *mut KmpTask) {
    guard("__kmpc_omp_task_begin_if0", || {
        let c = crate::team::ctx();
        if0_stack().push(If0Saved { task: t as usize, icv: c.icv, id: c.task.id, traced: crate::trace::start() });
        // SAFETY: per the contract.
        unsafe { (*header(t)).state = RUNNING | SAVED };
        // The task block's address identifies the task while the compiler runs its routine
        // (the block lives until `__kmpc_omp_task_complete_if0`, which gives the creator
        // its identity back).
        c.task.id = t as usize;
        // The compiler runs the body itself, next: counted here, as GOMP's run at once.
        task::count_task_in(c);
    })
}

/// # Safety
/// `t` is the task [`__kmpc_omp_task_begin_if0`] got.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_omp_task_complete_if0(loc: Ident, gtid: i32, t: *mut KmpTask) {
    guard("__kmpc_omp_task_complete_if0", || {
        // SAFETY: per the contract; the compiler ran the routine once and no longer uses
        // the task.
        let state = unsafe {
            let state = (*header(t)).state;
            if state & REQUEUED != 0 {
                // An untied routine that stopped at a scheduling point: run the rest (any
                // `if(0)` task it begins completes in it, above this one on `IF0`).
                run_routine(t, gtid);
            }
            free(t);
            state
        };
        if state & SAVED != 0 {
            // The begin call that set SAVED pushed the innermost `If0Saved` on `IF0`.
            let traced = if0_stack().pop_into(t as usize, crate::team::ctx());
            // The compiler ran the body itself: its slice ends here (its depend clauses, if
            // any, went to __kmpc_omp_wait_deps: not known here).
            if traced.is_some() {
                crate::trace::note_task_ident(loc as usize);
                crate::trace::task_end(traced, false, None);
            }
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_taskwait(_loc: Ident, _gtid: i32) -> i32 {
    guard("__kmpc_omp_taskwait", task::taskwait);
    0
}

/// The `affinity` clause of the task `_t` (clang 14 registers it before `__kmpc_omp_task`):
/// a hint about where the task's data lives, which OpenMP lets the runtime ignore; Weft's
/// scheduler places tasks by its own policy. 0: accepted.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_reg_task_with_affinity(
    _loc: Ident,
    _gtid: i32,
    _t: *mut KmpTask,
    _naffins: i32,
    _affin_list: *mut c_void,
) -> i32 {
    0
}

/// A scheduling point where nothing needs to happen (as `GOMP_taskyield`).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_omp_taskyield(_loc: Ident, _gtid: i32, _end_part: i32) -> i32 {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_taskgroup(_loc: Ident, _gtid: i32) {
    guard("__kmpc_taskgroup", super::taskred::group_start)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_taskgroup(_loc: Ident, _gtid: i32) {
    guard("__kmpc_end_taskgroup", super::taskred::group_end)
}

/// `void task_dup(kmp_task_t *dst, kmp_task_t *src, kmp_int32 lastpriv)`: firstprivate
/// construction and the lastprivate flag of a taskloop task.
pub type TaskDup = unsafe extern "C" fn(*mut KmpTask, *mut KmpTask, i32);

/// A taskloop's division: `(number of tasks, iterations per task, how many of the first
/// tasks get one more, the last task's count under `strict`)`, as libomp divides
/// (`__kmp_taskloop`): sched 0 none (num_tasks = 10 per thread), 1 grainsize, 2 num_tasks.
pub(crate) fn taskloop_division(tc: u64, sched: i32, grain: u64, strict: bool, nthreads: u32) -> (u64, u64, u64, Option<u64>) {
    let grain = if sched == 0 { 10 * nthreads.max(1) as u64 } else { grain.max(1) };
    if sched == 1 {
        if grain > tc {
            (1, tc, 0, None)
        } else if strict {
            let n = tc.div_ceil(grain);
            (n, grain, 0, Some(tc - grain * (n - 1)))
        } else {
            let n = tc / grain;
            (n, tc / n, tc % n, None)
        }
    } else if grain > tc {
        (tc, 1, 0, None)
    } else {
        (grain, tc / grain, tc % grain, None)
    }
}

/// `taskloop`: the pattern task `t` (bounds at `*lb..=*ub`, inside it, by `st`) becomes
/// tasks over slices of the iterations, each a copy of it with its own bounds, made ready
/// by `dup` and spawned as `__kmpc_omp_task` spawns; in a taskgroup unless `nogroup`.
///
/// # Safety
/// As `__kmpc_taskloop`'s arguments from the compiler: `lb`/`ub` point into `t`.
#[allow(clippy::too_many_arguments)]
unsafe fn taskloop(
    t: *mut KmpTask,
    if_val: i32,
    lb: *mut u64,
    ub: *mut u64,
    st: i64,
    nogroup: i32,
    sched: i32,
    grain: u64,
    strict: bool,
    dup: Option<TaskDup>,
) {
    if nogroup == 0 {
        super::taskred::group_start();
    }
    // SAFETY: per the contract.
    let (lower, upper) = unsafe { (*lb, *ub) };
    let tc = if st == 1 {
        upper.wrapping_sub(lower).wrapping_add(1)
    } else if st < 0 {
        lower.wrapping_sub(upper) / st.unsigned_abs() + 1
    } else {
        upper.wrapping_sub(lower) / st.max(1) as u64 + 1
    };
    let empty = if st < 0 { lower < upper } else { lower > upper };
    if !empty && tc > 0 {
        let (n, grain, extras, last) = taskloop_division(tc, sched, grain, strict, crate::team::ctx().team().n);
        // SAFETY: per the contract.
        let (lb_off, ub_off, size) = unsafe { (lb as usize - t as usize, ub as usize - t as usize, (*header(t)).size as usize) };
        let mut lo = lower;
        for i in 0..n {
            let count = match last {
                Some(l) if i == n - 1 => l,
                _ => grain + u64::from(i < extras),
            };
            let hi = lo.wrapping_add((st as u64).wrapping_mul(count - 1));
            // SAFETY: a copy of the pattern's block into a new one of `block_cap` of the
            // header's size, its `shareds` pointing at its own (for `dup`); the bounds are
            // u64 words inside the task at the pattern's offsets; `dup` is the compiler's for
            // this task type.
            unsafe {
                let p = new_block(block_cap(size));
                copy(p, header(t) as *const u8);
                let nt = p.add(HEAD) as *mut KmpTask;
                *((nt as *mut u8).add(lb_off) as *mut u64) = lo;
                *((nt as *mut u8).add(ub_off) as *mut u64) = hi;
                if let Some(dup) = dup {
                    dup(nt, t, i32::from(i == n - 1));
                }
                let mut s = spawn_of(nt, false);
                s.if_clause = if_val != 0;
                task::spawn(&s);
                free(nt);
            }
            lo = hi.wrapping_add(st as u64);
        }
    }
    // SAFETY: the pattern is never run; its privates' destructors (if any) run here.
    unsafe {
        if (*header(t)).flags & KMP_DESTRUCTORS != 0 && (*t).data1 != 0 {
            let d: Routine = std::mem::transmute::<usize, Routine>((*t).data1);
            d(gtid(), t);
        }
        free(t);
    }
    if nogroup == 0 {
        super::taskred::group_end();
    }
}

/// # Safety
/// The compiler's arguments (see [`taskloop`]).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __kmpc_taskloop(
    _loc: Ident,
    _gtid: i32,
    t: *mut KmpTask,
    if_val: i32,
    lb: *mut u64,
    ub: *mut u64,
    st: i64,
    nogroup: i32,
    sched: i32,
    grainsize: u64,
    task_dup: Option<TaskDup>,
) {
    guard("__kmpc_taskloop", || {
        let traced = crate::trace::start();
        // SAFETY: per the contract.
        unsafe { taskloop(t, if_val, lb, ub, st, nogroup, sched, grainsize, false, task_dup) };
        crate::trace::end(traced, "omp taskloop");
    })
}

/// OpenMP 5.1's taskloop: `modifier` is `strict` on grainsize/num_tasks.
///
/// # Safety
/// As [`__kmpc_taskloop`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __kmpc_taskloop_5(
    _loc: Ident,
    _gtid: i32,
    t: *mut KmpTask,
    if_val: i32,
    lb: *mut u64,
    ub: *mut u64,
    st: i64,
    nogroup: i32,
    sched: i32,
    grainsize: u64,
    modifier: i32,
    task_dup: Option<TaskDup>,
) {
    guard("__kmpc_taskloop_5", || {
        let traced = crate::trace::start();
        // SAFETY: per the contract.
        unsafe { taskloop(t, if_val, lb, ub, st, nogroup, sched, grainsize, modifier != 0, task_dup) };
        crate::trace::end(traced, "omp taskloop");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn routine(_: i32, _: *mut KmpTask) -> i32 {
        0
    }

    /// A task too large for a task box's room: a block of ours.
    const LARGE: usize = INLINE;

    /// A task block freed on a thread comes back for its next task when large enough, with
    /// its header and the task's own words written afresh (the privates are the compiler's
    /// to write, as with libomp); a larger one is a new block.
    #[test]
    fn a_freed_task_block_is_reused() {
        let alloc = |task: usize, shareds: usize| __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, task, shareds, routine);
        let t = alloc(LARGE + 64, 32);
        // SAFETY: the block has the header, 64 bytes of task and 32 of shareds.
        let (block, size) = unsafe { (header(t) as *mut u8, (*header(t)).size) };
        // SAFETY: as above: dirty everything, as a task's body and the runtime would.
        unsafe { std::ptr::write_bytes(block, 0xff, size as usize) };
        // SAFETY: from __kmpc_omp_task_alloc, not used after. `free` reads the block's size
        // and home from the header, dirtied: both written back first (0xff is no `Home` at
        // all: reading it was undefined, and a release build took the block for a lent
        // room; the runtime itself never dirties them).
        unsafe {
            (*header(t)).size = size;
            (*header(t)).home = Home::Block;
            free(t)
        };
        let t2 = alloc(LARGE + 48, 16);
        // SAFETY: the new block's header and task.
        let (block2, h, task) = unsafe { (header(t2) as *mut u8, &*header(t2), &*t2) };
        assert_eq!(block2, block, "the freed block was not reused");
        assert_eq!(
            (h.size as usize, h.shareds as usize, h.flags, h.state, h.home, h.event),
            (HEAD + LARGE + 48 + 16, LARGE + 48, 0, 0, Home::Block, 0),
            "a reused block's header was not written afresh"
        );
        assert_eq!((task.part_id, task.data1, task.data2), (0, 0, 0), "a reused block's task words were not reset");
        assert_eq!(task.shareds as usize, t2 as usize + LARGE + 48, "the shareds do not follow the task");
        // SAFETY: as above.
        unsafe { free(t2) };
        let t3 = alloc(64 * 1024, 0);
        // SAFETY: the new block's header.
        assert_ne!(unsafe { header(t3) as *mut u8 }, block, "a block too small was reused");
        // SAFETY: as above.
        unsafe { free(t3) };
    }

    /// Blocks freed while others are live (an `if(0)` task's routine making `if(0)` tasks of
    /// its own) all come back, the last freed first, up to the cache's length.
    #[test]
    fn nested_task_blocks_are_reused() {
        let alloc = || __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, LARGE + 64, 16, routine);
        let block = |t: *mut KmpTask| {
            // SAFETY: `t` came from __kmpc_omp_task_alloc.
            unsafe { header(t) as usize }
        };
        // Deeper than one: `fib`'s tasks under its cutoff nest about 15 deep.
        let depth = 8;
        const { assert!(CACHED_BLOCKS >= 8) };
        let outer: Vec<_> = (0..depth).map(|_| alloc()).collect();
        let addrs: Vec<_> = outer.iter().map(|&t| block(t)).collect();
        for &t in outer.iter().rev() {
            // SAFETY: from __kmpc_omp_task_alloc, not used after.
            unsafe { free(t) };
        }
        // All kept (not freed to malloc, which might hand the same addresses back).
        let kept: Vec<_> = BLOCKS.with(|b| b.slots[..b.n.get()].iter().rev().map(|c| c.get().0 as usize).collect());
        assert_eq!(kept, addrs, "the thread did not keep every block of the nest");
        let again: Vec<_> = (0..depth).map(|_| alloc()).collect();
        let got: Vec<_> = again.iter().map(|&t| block(t)).collect();
        assert_eq!(got, addrs, "the blocks of a nest were not all reused, innermost last");
        for &t in again.iter().rev() {
            // SAFETY: as above.
            unsafe { free(t) };
        }
    }

    /// A block freed by a task of one type serves the next task of a somewhat larger type
    /// (recursive code with depend clauses alternates them).
    #[test]
    fn a_block_serves_tasks_of_other_sizes() {
        let small = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, LARGE, 8, routine);
        // SAFETY: from __kmpc_omp_task_alloc.
        let block = unsafe { header(small) as usize };
        // SAFETY: as above, not used after.
        unsafe { free(small) };
        // 16 bytes more of shareds: a block of exactly the small task's size could not
        // hold it, nor could malloc hand that block back for it.
        let larger = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, LARGE, 24, routine);
        // SAFETY: from __kmpc_omp_task_alloc.
        assert_eq!(unsafe { header(larger) as usize }, block, "the larger task did not reuse the block");
        // SAFETY: as above.
        unsafe { free(larger) };
    }

    /// A task that fits a task box's room is made there, 16-byte aligned, its shareds after
    /// it; given back, the box serves the thread's next such task. A task one byte too large
    /// for the room is a block of ours.
    #[test]
    fn a_small_task_is_made_in_a_lent_box() {
        let alloc = |task: usize, shareds: usize| __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, task, shareds, routine);
        let t = alloc(48, 8);
        // SAFETY: from __kmpc_omp_task_alloc.
        let (h, task) = unsafe { (&*header(t), &*t) };
        assert_eq!((h.home, h.size as usize, h.state), (Home::Lent, HEAD + 48 + 8, 0));
        assert!((t as usize).is_multiple_of(16), "the task is not 16-byte aligned");
        assert_eq!(task.shareds as usize, t as usize + 48, "the shareds do not follow the task");
        let room = h as *const Header as usize;
        // SAFETY: from __kmpc_omp_task_alloc, not spawned, not used after.
        unsafe { free(t) };
        let t2 = alloc(64, 0);
        // SAFETY: from __kmpc_omp_task_alloc.
        let h2 = unsafe { &*header(t2) };
        assert_eq!((h2.home, h2 as *const Header as usize), (Home::Lent, room), "the box given back did not serve the next task");
        // SAFETY: the new task's own words.
        assert!(unsafe { (*t2).shareds }.is_null(), "a task without shareds points at some");
        // SAFETY: as above.
        unsafe { free(t2) };
        let exact = alloc(INLINE - HEAD - 48, 48);
        let over = alloc(INLINE - HEAD - 48, 49);
        // SAFETY: from __kmpc_omp_task_alloc.
        let homes = unsafe { ((*header(exact)).home, (*header(over)).home) };
        assert_eq!(homes, (Home::Lent, Home::Block));
        // SAFETY: as above.
        unsafe { (free(over), free(exact)) };
    }

    static RAN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A task run at once (outside a parallel region) runs once on its lent room, whose box
    /// then serves the thread's next task.
    #[test]
    fn a_task_run_at_once_gives_its_box_back() {
        unsafe extern "C" fn count(_: i32, t: *mut KmpTask) -> i32 {
            // SAFETY: the task's shareds: one word, the address of the counter.
            let c = unsafe { &*(*((*t).shareds as *const *const std::sync::atomic::AtomicUsize)) };
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            0
        }
        let t = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, 48, 8, count);
        // SAFETY: from __kmpc_omp_task_alloc, its shareds one word; spawned once.
        let room = unsafe {
            *((*t).shareds as *mut *const std::sync::atomic::AtomicUsize) = &RAN;
            let room = header(t) as usize;
            __kmpc_omp_task(std::ptr::null(), 0, t);
            room
        };
        assert_eq!(RAN.load(std::sync::atomic::Ordering::Relaxed), 1);
        let t2 = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, 48, 8, routine);
        // SAFETY: from __kmpc_omp_task_alloc.
        assert_eq!(unsafe { header(t2) as usize }, room, "the box of a task run at once was not given back");
        // SAFETY: not spawned, not used after.
        unsafe { free(t2) };
    }

    /// Nested `if(0)` tasks each give their creator its identity back, innermost first, from
    /// the thread's stack.
    #[test]
    fn nested_if0_tasks_restore_their_creators() {
        let c = crate::team::ctx();
        let id = c.task.id;
        let outer = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, 48, 8, routine);
        let inner = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, 48, 8, routine);
        // SAFETY: tasks from __kmpc_omp_task_alloc, begun and completed once each, nested,
        // the compiler's way.
        unsafe {
            __kmpc_omp_task_begin_if0(std::ptr::null(), 0, outer);
            assert_eq!(crate::team::ctx().task.id, outer as usize);
            __kmpc_omp_task_begin_if0(std::ptr::null(), 0, inner);
            assert_eq!(crate::team::ctx().task.id, inner as usize);
            __kmpc_omp_task_complete_if0(std::ptr::null(), 0, inner);
            assert_eq!(crate::team::ctx().task.id, outer as usize, "the inner task did not give the outer its identity back");
            __kmpc_omp_task_complete_if0(std::ptr::null(), 0, outer);
        }
        assert_eq!(crate::team::ctx().task.id, id, "the outer task did not give its creator its identity back");
        assert_eq!(IF0.with(|s| s.n.get()), 0, "an if(0) task's saved state was left on the stack");
    }

    /// `if(0)` tasks nested deeper than the thread's cells hold (recursive code under a
    /// cutoff) give their creators their identities back all the way out.
    #[test]
    fn deeply_nested_if0_tasks_restore_their_creators() {
        let id = crate::team::ctx().task.id;
        let depth = IF0_INLINE + 8;
        let mut nest = Vec::new();
        for _ in 0..depth {
            let t = __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, 48, 8, routine);
            // SAFETY: a task from __kmpc_omp_task_alloc, begun once.
            unsafe { __kmpc_omp_task_begin_if0(std::ptr::null(), 0, t) };
            nest.push(t);
        }
        while let Some(t) = nest.pop() {
            // SAFETY: the innermost task begun and not completed.
            unsafe { __kmpc_omp_task_complete_if0(std::ptr::null(), 0, t) };
            let creator = nest.last().map_or(id, |&o| o as usize);
            assert_eq!(
                crate::team::ctx().task.id,
                creator,
                "an if(0) task at depth {} did not give its creator its identity back",
                nest.len()
            );
        }
        assert_eq!(IF0.with(|s| s.n.get()), 0);
        assert!(IF0_DEEP.with_borrow(Vec::is_empty));
    }

    /// A lent room given back by a task that was not deferred serves the thread's next small
    /// task, and only that: a larger task takes a block of its own, and leaves the room.
    #[test]
    fn a_kept_room_serves_a_small_task_not_a_large_one() {
        let alloc = |task: usize, shareds: usize| __kmpc_omp_task_alloc(std::ptr::null(), 0, 0, task, shareds, routine);
        let small = alloc(48, 8);
        // SAFETY: from __kmpc_omp_task_alloc.
        let room = unsafe { header(small) as usize };
        // SAFETY: not spawned, not used after.
        unsafe { free(small) };
        assert_eq!(BLOCKS.with(|b| b.slots[b.n.get() - 1].get()), (room as *mut u8, LENT_ROOM), "the room was not kept");
        let large = alloc(LARGE + 64, 0);
        // SAFETY: from __kmpc_omp_task_alloc.
        let (at, home) = unsafe { (header(large) as usize, (*header(large)).home) };
        assert_eq!(home, Home::Block);
        assert_ne!(at, room, "a large task took a lent room as its block");
        let again = alloc(48, 8);
        // SAFETY: from __kmpc_omp_task_alloc.
        assert_eq!(unsafe { header(again) as usize }, room, "the kept room did not serve the next small task");
        // SAFETY: as above.
        unsafe { (free(again), free(large)) };
    }

    #[test]
    fn depend_lists_decoded() {
        use AccessMode::{Commute, R, RW};
        /// The lists of (address, flags) decoded, as the compiler passes them.
        fn decode(list: &[(usize, u8)], noalias: &[(usize, u8)]) -> Vec<(usize, AccessMode)> {
            let infos = |l: &[(usize, u8)]| l.iter().map(|&(addr, flags)| DependInfo { addr, len: 8, flags }).collect::<Vec<_>>();
            let (a, b) = (infos(list), infos(noalias));
            let mut deps = task::Deps::new();
            // SAFETY: each list holds its count of entries (an empty one's pointer unread).
            unsafe { depend_lists(&mut deps, a.len() as i32, a.as_ptr(), b.len() as i32, b.as_ptr()) };
            deps.to_vec()
        }
        // in a, out b, inout c, mutexinoutset d, inoutset e: past the four held inline.
        let got = decode(&[(0xa, 1), (0xb, 2), (0xc, 3), (0xd, 4), (0xe, 8)], &[]);
        assert_eq!(got, vec![(0xa, R), (0xb, RW), (0xc, RW), (0xd, Commute), (0xe, RW)]);
        assert!(decode(&[], &[]).is_empty());
        // A repeated address takes the strongest; unknown flags are left out.
        assert_eq!(decode(&[(0xa, 1), (0xa, 4), (0xb, 0)], &[]), vec![(0xa, Commute)]);
        assert_eq!(decode(&[(0xa, 4), (0xa, 1)], &[]), vec![(0xa, Commute)]);
        // The noalias list after the first, merged with it, inline and past four.
        assert_eq!(decode(&[(0xa, 1)], &[(0xb, 1), (0xa, 2)]), vec![(0xa, RW), (0xb, R)]);
        let got = decode(&[(0xa, 1), (0xb, 1), (0xc, 1), (0xd, 1)], &[(0xe, 1), (0xb, 4), (0xe, 2), (0xf, 0), (0xa, 1)]);
        assert_eq!(got, vec![(0xa, R), (0xb, Commute), (0xc, R), (0xd, R), (0xe, RW)]);
    }

    #[test]
    fn taskloop_divisions_as_libomps() {
        // No clause: 10 tasks per thread, or one per iteration when fewer.
        assert_eq!(taskloop_division(100, 0, 0, false, 2), (20, 5, 0, None));
        assert_eq!(taskloop_division(7, 0, 0, false, 2), (7, 1, 0, None));
        // grainsize(3) over 10: 3 tasks of 3, the first one more; strict: 4 tasks, the last of 1.
        assert_eq!(taskloop_division(10, 1, 3, false, 2), (3, 3, 1, None));
        assert_eq!(taskloop_division(10, 1, 3, true, 2), (4, 3, 0, Some(1)));
        assert_eq!(taskloop_division(2, 1, 3, false, 2), (1, 2, 0, None));
        // num_tasks(4) over 10: 4 tasks of 2, the first two one more.
        assert_eq!(taskloop_division(10, 2, 4, false, 2), (4, 2, 2, None));
    }
}
