//! Task reductions: `__kmpc_taskred_init` (a taskgroup's `task_reduction` clause; the older
//! `__kmpc_task_reduction_init` takes the items in the older layout),
//! `__kmpc_task_reduction_get_th_data` (a participating task's private copy) and the
//! `reduction(task, ...)` modifier of parallel and worksharing constructs
//! (`__kmpc_taskred_modifier_init`, or `__kmpc_task_reduction_modifier_init` with the older
//! layout; `__kmpc_task_reduction_modifier_fini`).
//!
//! As in libomp: each item gets one private copy per team thread (its size rounded up to a
//! cache line), made at the init with the compiler's `init(priv, orig)`; a task's copy is
//! its thread's; the taskgroup's end combines every copy into the shared item with
//! `comb(shared, priv)` and runs `fini(priv)`. In a team of one, tasks use the items
//! themselves. Under the modifier the team's threads share the copies (the first thread to
//! arrive makes them); each thread's taskgroup ends when its own tasks are done, and the
//! last thread to end it combines the copies into its own item (then the construct's
//! ordinary reduction combines the threads' items).
//!
//! Unlike the rest of the runtime, the reduction state is this ABI's own: GCC's task
//! reductions are combined by the compiler's code, not by runtime callbacks.

use super::Ident;
use crate::abi::guard;
use crate::team::ctx;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// `kmp_taskred_input_t`.
#[repr(C)]
pub struct TaskredInput {
    shar: *mut c_void,
    orig: *mut c_void,
    size: usize,
    init: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    fini: Option<unsafe extern "C" fn(*mut c_void)>,
    comb: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    flags: u32,
}

/// `kmp_task_red_input_t`, the layout before OpenMP 5.0's `taskred`: no original item, and
/// the initializer takes only the private copy.
#[repr(C)]
pub struct TaskRedInput {
    shar: *mut c_void,
    size: usize,
    init: Option<unsafe extern "C" fn(*mut c_void)>,
    fini: Option<unsafe extern "C" fn(*mut c_void)>,
    comb: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    flags: u32,
}

/// How an item's private copies are initialized.
#[derive(Clone, Copy)]
enum Init {
    /// Left zeroed.
    Zero,
    /// `init(priv, orig)`.
    WithOrig(unsafe extern "C" fn(*mut c_void, *mut c_void), *mut c_void),
    /// `init(priv)` (the older layout).
    Priv(unsafe extern "C" fn(*mut c_void)),
}

/// One reduction item as either layout describes it.
struct ItemDesc {
    shar: *mut c_void,
    size: usize,
    init: Init,
    fini: Option<unsafe extern "C" fn(*mut c_void)>,
    comb: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
}

/// The compiler's item array in either layout.
trait Input {
    fn desc(&self) -> ItemDesc;
}

impl Input for TaskredInput {
    fn desc(&self) -> ItemDesc {
        // An item without an original (`orig` null) initializes from the shared one.
        let orig = if self.orig.is_null() { self.shar } else { self.orig };
        let init = self.init.map_or(Init::Zero, |f| Init::WithOrig(f, orig));
        ItemDesc { shar: self.shar, size: self.size, init, fini: self.fini, comb: self.comb }
    }
}

impl Input for TaskRedInput {
    fn desc(&self) -> ItemDesc {
        ItemDesc { shar: self.shar, size: self.size, init: self.init.map_or(Init::Zero, Init::Priv), fini: self.fini, comb: self.comb }
    }
}

/// The items of the compiler's array `data` of `num`.
///
/// # Safety
/// `data` holds `num` items of layout `I` (or `num` is 0).
unsafe fn items<I: Input>(num: i32, data: *const I) -> Vec<ItemDesc> {
    // SAFETY: per the contract.
    (0..num.max(0) as usize).map(|i| unsafe { &*data.add(i) }.desc()).collect()
}

const CACHE_LINE: usize = 64;

/// One item's private copies, `nth` of `size` bytes from `privs`.
struct Item {
    privs: *mut u8,
    size: usize,
    fini: Option<unsafe extern "C" fn(*mut c_void)>,
    comb: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
}

/// The copies of one reduction, shared by the taskgroups that use them (one, or one per
/// team thread under the modifier).
struct Copies {
    items: Vec<Item>,
    nth: usize,
    /// Taskgroups not ended yet; the last to end combines.
    open: AtomicU32,
}

// SAFETY: the copies are written by the tasks of the taskgroups, each thread its own copy
// (by thread number), and read only by the thread that combines them after every one of
// those tasks is complete (taskgroup ends, `open`'s AcqRel).
unsafe impl Send for Copies {}
// SAFETY: as above.
unsafe impl Sync for Copies {}

impl Drop for Copies {
    fn drop(&mut self) {
        for it in &self.items {
            // SAFETY: allocated with calloc by `make`, used by nobody now.
            unsafe { libc::free(it.privs as *mut c_void) };
        }
    }
}

/// A taskgroup's reduction as one thread sees it: the copies and this thread's items.
pub struct Taskred {
    copies: Arc<Copies>,
    shars: Vec<usize>,
    /// The enclosing taskgroup's reduction on this thread (null: none).
    parent: *const Taskred,
}

thread_local! {
    /// The calling thread's open kmp taskgroups, innermost last, with their reductions.
    static GROUPS: RefCell<Vec<Option<Box<Taskred>>>> = const { RefCell::new(Vec::new()) };
}

/// The copies for the items `descs`, made and initialized.
///
/// # Safety
/// `descs` come from the compiler's item array: sizes, functions and items valid.
unsafe fn make(descs: &[ItemDesc], nth: usize, open: u32) -> Copies {
    let mut items = Vec::with_capacity(descs.len());
    for d in descs {
        let size = d.size.max(1).next_multiple_of(CACHE_LINE);
        // SAFETY: plain allocation; checked below.
        let privs = unsafe { libc::calloc(nth, size) } as *mut u8;
        if privs.is_null() {
            eprintln!("weft-omp: cannot allocate {nth} task reduction copies of {size} bytes; aborting");
            std::process::abort();
        }
        for j in 0..nth {
            let p = privs.wrapping_add(j * size) as *mut c_void;
            // SAFETY: the compiler's initializer on copy j (inside the allocation), with the
            // original item.
            match d.init {
                Init::Zero => {}
                Init::WithOrig(init, orig) => unsafe { init(p, orig) },
                Init::Priv(init) => unsafe { init(p) },
            }
        }
        items.push(Item { privs, size, fini: d.fini, comb: d.comb });
    }
    Copies { items, nth, open: AtomicU32::new(open) }
}

fn shars(descs: &[ItemDesc]) -> Vec<usize> {
    descs.iter().map(|d| d.shar as usize).collect()
}

/// Attach `copies` to the calling thread's innermost taskgroup; its handle.
fn attach(copies: Arc<Copies>, shars: Vec<usize>) -> *mut c_void {
    GROUPS.with(|g| {
        let mut g = g.borrow_mut();
        let parent = g.iter().rev().find_map(|t| t.as_deref()).map_or(std::ptr::null(), |t| t as *const Taskred);
        let red = Box::new(Taskred { copies, shars, parent });
        let h = &*red as *const Taskred as *mut c_void;
        match g.last_mut() {
            Some(top) => *top = Some(red),
            // Outside any taskgroup (not valid OpenMP): kept until the thread's next end.
            None => g.push(Some(red)),
        }
        h
    })
}

/// The start of a kmp taskgroup (`__kmpc_taskgroup`).
pub(crate) fn group_start() {
    GROUPS.with(|g| g.borrow_mut().push(None));
    crate::task::taskgroup_start(false);
}

/// The end of a kmp taskgroup (`__kmpc_end_taskgroup`): its tasks complete, then its
/// reduction combined (by the last of the threads sharing it).
pub(crate) fn group_end() {
    crate::task::taskgroup_end();
    let Some(red) = GROUPS.with(|g| g.borrow_mut().pop()).flatten() else { return };
    // AcqRel: the other threads' taskgroups ended (their tasks' writes to the copies)
    // before the last one combines.
    if red.copies.open.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    let c = &red.copies;
    for (it, &shar) in c.items.iter().zip(&red.shars) {
        for j in 0..c.nth {
            // SAFETY: copy j of the item, initialized by `make`; every task that used it is
            // complete; the compiler's combiner and finalizer for the item.
            unsafe {
                let p = it.privs.add(j * it.size) as *mut c_void;
                if let Some(comb) = it.comb {
                    comb(shar as *mut c_void, p);
                }
                if let Some(fini) = it.fini {
                    fini(p);
                }
            }
        }
    }
}

/// A taskgroup's `task_reduction` over `descs`; its handle.
fn init(descs: &[ItemDesc]) -> *mut c_void {
    let nth = ctx().team().n as usize;
    if nth == 1 {
        return std::ptr::null_mut();
    }
    // SAFETY: `descs` come from the compiler's array (the entry points' contract).
    let copies = unsafe { make(descs, nth, 1) };
    attach(Arc::new(copies), shars(descs))
}

/// `task_reduction(...)` of the calling thread's innermost taskgroup; its handle.
///
/// # Safety
/// `data` holds `num` of the compiler's `kmp_taskred_input_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_taskred_init(_gtid: i32, num: i32, data: *mut TaskredInput) -> *mut c_void {
    // SAFETY: per the contract.
    let descs = unsafe { items(num, data) };
    guard("__kmpc_taskred_init", || init(&descs))
}

/// As [`__kmpc_taskred_init`], with the older item layout.
///
/// # Safety
/// `data` holds `num` of the compiler's `kmp_task_red_input_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_task_reduction_init(_gtid: i32, num: i32, data: *mut TaskRedInput) -> *mut c_void {
    // SAFETY: per the contract.
    let descs = unsafe { items(num, data) };
    guard("__kmpc_task_reduction_init", || init(&descs))
}

/// The calling thread's copy of the item `data` (the shared item, or any thread's copy of
/// it) in the reduction `tg` (null: the calling thread's innermost) or one enclosing it.
///
/// # Safety
/// `tg` is null or a handle from this module whose taskgroup has not ended.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_task_reduction_get_th_data(_gtid: i32, tg: *mut c_void, data: *mut c_void) -> *mut c_void {
    guard("__kmpc_task_reduction_get_th_data", || {
        let c = ctx();
        if c.team().n == 1 {
            return data;
        }
        let tid = c.tid as usize;
        let mut t = tg as *const Taskred;
        if t.is_null() {
            t = GROUPS.with(|g| g.borrow().iter().rev().find_map(|t| t.as_deref()).map_or(std::ptr::null(), |t| t as *const Taskred));
        }
        let d = data as usize;
        while !t.is_null() {
            // SAFETY: per the contract; enclosing taskgroups end after the inner ones.
            let r = unsafe { &*t };
            for (it, &shar) in r.copies.items.iter().zip(&r.shars) {
                let (lo, hi) = (it.privs as usize, it.privs as usize + r.copies.nth * it.size);
                if (d == shar || (lo..hi).contains(&d)) && tid < r.copies.nth {
                    return (lo + tid * it.size) as *mut c_void;
                }
            }
            t = r.parent;
        }
        eprintln!("weft-omp: __kmpc_task_reduction_get_th_data: {data:?} is not a task reduction item; using it as is");
        data
    })
}

/// `reduction(task, ...)` on a parallel (`is_ws` 0) or worksharing construct: a taskgroup
/// whose reduction copies the team's threads share.
fn modifier_init(is_ws: i32, descs: &[ItemDesc]) -> *mut c_void {
    group_start();
    let nth = ctx().team().n as usize;
    if nth == 1 {
        return init(descs);
    }
    let kind = if is_ws != 0 { super::SHARED_TASKRED_WS } else { super::SHARED_TASKRED };
    // SAFETY: `descs` come from the compiler's array (the first thread's items initialize
    // the copies).
    let copies = super::team_shared(kind, |n| unsafe { make(descs, n as usize, n) });
    attach(copies, shars(descs))
}

/// # Safety
/// As [`__kmpc_taskred_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_taskred_modifier_init(
    _loc: Ident,
    _gtid: i32,
    is_ws: i32,
    num: i32,
    data: *mut TaskredInput,
) -> *mut c_void {
    // SAFETY: per the contract.
    let descs = unsafe { items(num, data) };
    guard("__kmpc_taskred_modifier_init", || modifier_init(is_ws, &descs))
}

/// # Safety
/// As [`__kmpc_task_reduction_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_task_reduction_modifier_init(
    _loc: Ident,
    _gtid: i32,
    is_ws: i32,
    num: i32,
    data: *mut TaskRedInput,
) -> *mut c_void {
    // SAFETY: per the contract.
    let descs = unsafe { items(num, data) };
    guard("__kmpc_task_reduction_modifier_init", || modifier_init(is_ws, &descs))
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_modifier_fini(_loc: Ident, _gtid: i32, _is_ws: i32) {
    guard("__kmpc_task_reduction_modifier_fini", group_end)
}
