//! Task reductions: `__kmpc_taskred_init` (a taskgroup's `task_reduction` clause),
//! `__kmpc_task_reduction_get_th_data` (a participating task's private copy) and the
//! `reduction(task, ...)` modifier of parallel and worksharing constructs
//! (`__kmpc_taskred_modifier_init`, `__kmpc_task_reduction_modifier_fini`).
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

/// The copies for `data`'s items, made and initialized.
///
/// # Safety
/// `data` holds `num` of the compiler's `kmp_taskred_input_t`.
unsafe fn make(num: usize, data: *const TaskredInput, nth: usize, open: u32) -> Copies {
    let mut items = Vec::with_capacity(num);
    for i in 0..num {
        // SAFETY: per the contract.
        let d = unsafe { &*data.add(i) };
        let size = d.size.max(1).next_multiple_of(CACHE_LINE);
        // SAFETY: plain allocation; checked below.
        let privs = unsafe { libc::calloc(nth, size) } as *mut u8;
        if privs.is_null() {
            eprintln!("weft-omp: cannot allocate {nth} task reduction copies of {size} bytes; aborting");
            std::process::abort();
        }
        let orig = if d.orig.is_null() { d.shar } else { d.orig };
        if let Some(init) = d.init {
            for j in 0..nth {
                // SAFETY: the compiler's initializer on copy j, with the original item.
                unsafe { init(privs.add(j * size) as *mut c_void, orig) };
            }
        }
        items.push(Item { privs, size, fini: d.fini, comb: d.comb });
    }
    Copies { items, nth, open: AtomicU32::new(open) }
}

/// # Safety
/// As [`make`].
unsafe fn shars(num: usize, data: *const TaskredInput) -> Vec<usize> {
    // SAFETY: per the contract.
    (0..num).map(|i| unsafe { (*data.add(i)).shar as usize }).collect()
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

/// `task_reduction(...)` of the calling thread's innermost taskgroup; its handle.
///
/// # Safety
/// `data` holds `num` of the compiler's `kmp_taskred_input_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_taskred_init(_gtid: i32, num: i32, data: *mut TaskredInput) -> *mut c_void {
    guard("__kmpc_taskred_init", || {
        let nth = ctx().team().n as usize;
        let num = num.max(0) as usize;
        if nth == 1 {
            return std::ptr::null_mut();
        }
        // SAFETY: per the contract.
        let (copies, shars) = unsafe { (make(num, data, nth, 1), shars(num, data)) };
        attach(Arc::new(copies), shars)
    })
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
///
/// # Safety
/// As [`__kmpc_taskred_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_taskred_modifier_init(
    _loc: Ident,
    gtid: i32,
    is_ws: i32,
    num: i32,
    data: *mut TaskredInput,
) -> *mut c_void {
    guard("__kmpc_taskred_modifier_init", || {
        group_start();
        let team = ctx().team();
        let nth = team.n as usize;
        if nth == 1 {
            // SAFETY: per the contract.
            return unsafe { __kmpc_taskred_init(gtid, num, data) };
        }
        let num = num.max(0) as usize;
        let kind = if is_ws != 0 { super::SHARED_TASKRED_WS } else { super::SHARED_TASKRED };
        // SAFETY: per the contract (the first thread's items initialize the copies).
        let copies = super::team_shared(kind, |n| unsafe { make(num, data, n as usize, n) });
        // SAFETY: per the contract.
        attach(copies, unsafe { shars(num, data) })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_task_reduction_modifier_fini(_loc: Ident, _gtid: i32, _is_ws: i32) {
    guard("__kmpc_task_reduction_modifier_fini", group_end)
}
