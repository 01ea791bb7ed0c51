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
//!
//! The compiler's item arrays are decoded once ([`items`]) from [`TaskredInput`] or
//! [`TaskRedInput`], laid out as clang lays them (the tests build them word by word), into
//! `ItemDesc`s; the private copies are this module's own memory (`Item`: whole cache lines,
//! freed with the reduction), and finding a thread's copy and combining them are safe
//! methods of `Copies`. What stays raw: reading the arrays, calling the compiler's
//! functions, and the handles the compiler gives back to `get_th_data`.

use super::Ident;
use crate::abi::guard;
use crate::team::ctx;
use std::cell::{RefCell, UnsafeCell};
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The compiler's initializer with the original item (`init(priv, orig)`).
type InitOrig = unsafe extern "C" fn(*mut c_void, *mut c_void);
/// The older layout's initializer, and every finalizer (`f(priv)`).
type OnPriv = unsafe extern "C" fn(*mut c_void);
/// The combiner (`comb(shared, priv)`).
type Comb = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// `kmp_taskred_input_t` as clang 14 lays it out (LLVM's kmp.h), one word per field:
/// `{ void *reduce_shar; void *reduce_orig; size_t reduce_size; void *reduce_init;
/// void *reduce_fini; void *reduce_comb; kmp_taskred_flags_t flags; }` (the flags a 32-bit
/// bit field, `lazy_priv` its lowest bit; padded to 56 bytes). Only read from the
/// compiler's arrays ([`items`]), never made here.
#[repr(C)]
pub struct TaskredInput {
    shar: *mut c_void,
    orig: *mut c_void,
    size: usize,
    init: Option<InitOrig>,
    fini: Option<OnPriv>,
    comb: Option<Comb>,
    flags: u32,
}

/// `kmp_task_red_input_t`, the layout before OpenMP 5.0's `taskred`: no original item, and
/// the initializer takes only the private copy: `{ void *reduce_shar; size_t reduce_size;
/// void *reduce_init; void *reduce_fini; void *reduce_comb; kmp_task_red_flags_t flags; }`
/// (48 bytes).
#[repr(C)]
pub struct TaskRedInput {
    shar: *mut c_void,
    size: usize,
    init: Option<OnPriv>,
    fini: Option<OnPriv>,
    comb: Option<Comb>,
    flags: u32,
}

/// How an item's private copies are initialized.
#[derive(Clone, Copy, Debug)]
enum Init {
    /// Left zeroed.
    Zero,
    /// `init(priv, orig)`.
    WithOrig(InitOrig, *mut c_void),
    /// `init(priv)` (the older layout).
    Priv(OnPriv),
}

/// One reduction item as either layout describes it.
///
/// Invariant: made only by decoding the compiler's array ([`items`]), so its functions are
/// the compiler's for this item and its addresses the item's: calling them on a private
/// copy of `size` bytes (and the shared item) is what the compiler asked for.
#[derive(Debug)]
struct ItemDesc {
    shar: *mut c_void,
    size: usize,
    init: Init,
    fini: Option<OnPriv>,
    comb: Option<Comb>,
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
/// `data` holds `num` items of layout `I` as the compiler wrote them (or `num` is 0).
unsafe fn items<I: Input>(num: i32, data: *const I) -> Vec<ItemDesc> {
    // SAFETY: per the contract.
    (0..num.max(0) as usize).map(|i| unsafe { &*data.add(i) }.desc()).collect()
}

const CACHE_LINE: usize = 64;

/// A cache line of a private copy.
#[repr(C, align(64))]
struct Line([u8; CACHE_LINE]);

/// One item's private copies: `nth` of `size` bytes each (a whole number of cache lines,
/// so no two threads' copies share one), zeroed, then initialized by the compiler's code.
struct Item {
    /// The copies' bytes, written by the tasks through the addresses [`Item::copy`] gives.
    lines: Box<[UnsafeCell<Line>]>,
    size: usize,
    fini: Option<OnPriv>,
    comb: Option<Comb>,
}

impl Item {
    /// Copies of `d` for `nth` threads, each initialized by the compiler's initializer.
    fn new(d: &ItemDesc, nth: usize) -> Item {
        let size = d.size.max(1).next_multiple_of(CACHE_LINE);
        let lines = (0..nth * size / CACHE_LINE).map(|_| UnsafeCell::new(Line([0; CACHE_LINE]))).collect();
        let it = Item { lines, size, fini: d.fini, comb: d.comb };
        for j in 0..nth {
            let p = it.copy(j);
            // SAFETY: the compiler's initializer for this item (`ItemDesc`'s invariant) on
            // copy j, `size` bytes of ours that nothing else uses yet, with the original.
            match d.init {
                Init::Zero => {}
                Init::WithOrig(init, orig) => unsafe { init(p, orig) },
                Init::Priv(init) => unsafe { init(p) },
            }
        }
        it
    }

    /// Copy `j`'s address (`j` below the thread count it was made for).
    fn copy(&self, j: usize) -> *mut c_void {
        debug_assert!((j + 1) * self.size <= self.lines.len() * CACHE_LINE);
        // (A cell's contents may be written through this pointer: `UnsafeCell`.)
        UnsafeCell::raw_get(self.lines.as_ptr()).cast::<u8>().wrapping_add(j * self.size).cast()
    }

    /// The addresses of all the copies.
    fn span(&self) -> std::ops::Range<usize> {
        let lo = self.lines.as_ptr() as usize;
        lo..lo + self.lines.len() * CACHE_LINE
    }
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
unsafe impl Sync for Copies {}

impl Copies {
    /// The copies for the items `descs`, made and initialized, for `open` taskgroups.
    fn new(descs: &[ItemDesc], nth: usize, open: u32) -> Copies {
        Copies { items: descs.iter().map(|d| Item::new(d, nth)).collect(), nth, open: AtomicU32::new(open) }
    }

    /// Thread `tid`'s copy of the item whose shared address is `shars[i]`, for `d`: that
    /// shared address, or the address of any thread's copy of it.
    fn lookup(&self, shars: &[usize], d: usize, tid: usize) -> Option<*mut c_void> {
        if tid >= self.nth {
            return None;
        }
        self.items.iter().zip(shars).find(|(it, s)| d == **s || it.span().contains(&d)).map(|(it, _)| it.copy(tid))
    }

    /// Combine every copy into its shared item and finalize it (the last taskgroup's end:
    /// every task that used the copies is complete).
    fn combine(&self, shars: &[usize]) {
        for (it, &shar) in self.items.iter().zip(shars) {
            for j in 0..self.nth {
                let p = it.copy(j);
                // SAFETY: the compiler's combiner and finalizer for the item (`ItemDesc`'s
                // invariant) on copy j, initialized by `Item::new`, which no task uses any more.
                unsafe {
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
}

/// A taskgroup's reduction as one thread sees it: the copies and this thread's items.
pub struct Taskred {
    copies: Arc<Copies>,
    shars: Vec<usize>,
    /// The enclosing taskgroup's reduction on this thread.
    parent: Option<Arc<Taskred>>,
}

impl Taskred {
    /// The copy of `data` for thread `tid` in this reduction or an enclosing one.
    fn find(&self, data: *mut c_void, tid: usize) -> Option<*mut c_void> {
        let mut r = Some(self);
        while let Some(t) = r {
            if let Some(p) = t.copies.lookup(&t.shars, data as usize, tid) {
                return Some(p);
            }
            r = t.parent.as_deref();
        }
        None
    }
}

thread_local! {
    /// The calling thread's open kmp taskgroups, innermost last, with their reductions.
    /// (Shared: an inner taskgroup's reduction holds its enclosing one, `Taskred::parent`.)
    static GROUPS: RefCell<Vec<Option<Arc<Taskred>>>> = const { RefCell::new(Vec::new()) };
}

fn shars(descs: &[ItemDesc]) -> Vec<usize> {
    descs.iter().map(|d| d.shar as usize).collect()
}

/// Attach `copies` to the calling thread's innermost taskgroup; its handle.
fn attach(copies: Arc<Copies>, shars: Vec<usize>) -> *mut c_void {
    GROUPS.with(|g| {
        let mut g = g.borrow_mut();
        let parent = g.iter().rev().find_map(|t| t.clone());
        let red = Arc::new(Taskred { copies, shars, parent });
        let h = Arc::as_ptr(&red) as *mut c_void;
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
    red.copies.combine(&red.shars);
}

/// A taskgroup's `task_reduction` over `descs`; its handle.
fn init(descs: &[ItemDesc]) -> *mut c_void {
    let nth = ctx().team().n as usize;
    if nth == 1 {
        return std::ptr::null_mut();
    }
    attach(Arc::new(Copies::new(descs, nth, 1)), shars(descs))
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
        let found = if tg.is_null() {
            GROUPS.with(|g| g.borrow().iter().rev().find_map(|t| t.as_deref()).and_then(|t| t.find(data, tid)))
        } else {
            // SAFETY: per the contract, a live taskgroup's `Taskred` (an `Arc`'s, which its
            // thread's GROUPS holds until the taskgroup ends).
            unsafe { &*(tg as *const Taskred) }.find(data, tid)
        };
        if let Some(p) = found {
            return p;
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
    // (The first thread's items initialize the copies.)
    let copies = super::team_shared(kind, |n| Copies::new(descs, n as usize, n));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The structures are clang's word for word: every field at its word, the flags last.
    #[test]
    fn layouts_are_clangs() {
        assert_eq!(size_of::<TaskredInput>(), 7 * 8);
        let at = [
            offset_of!(TaskredInput, shar),
            offset_of!(TaskredInput, orig),
            offset_of!(TaskredInput, size),
            offset_of!(TaskredInput, init),
            offset_of!(TaskredInput, fini),
            offset_of!(TaskredInput, comb),
            offset_of!(TaskredInput, flags),
        ];
        assert_eq!(at, [0, 8, 16, 24, 32, 40, 48]);
        assert_eq!(size_of::<TaskRedInput>(), 6 * 8);
        let at = [
            offset_of!(TaskRedInput, shar),
            offset_of!(TaskRedInput, size),
            offset_of!(TaskRedInput, init),
            offset_of!(TaskRedInput, fini),
            offset_of!(TaskRedInput, comb),
            offset_of!(TaskRedInput, flags),
        ];
        assert_eq!(at, [0, 8, 16, 24, 32, 40]);
    }

    /// `init(priv, orig)`: the copy starts as the original plus 100 (u64 items).
    unsafe extern "C" fn init_orig(p: *mut c_void, orig: *mut c_void) {
        // SAFETY: the tests' u64 items and copies.
        unsafe { *(p as *mut u64) = *(orig as *const u64) + 100 };
    }

    /// `init(priv)` of the older layout: the copy starts at 7.
    unsafe extern "C" fn init_priv(p: *mut c_void) {
        // SAFETY: as above.
        unsafe { *(p as *mut u64) = 7 };
    }

    /// `comb(shared, priv)`: a sum.
    unsafe extern "C" fn comb_add(s: *mut c_void, p: *mut c_void) {
        // SAFETY: as above.
        unsafe { *(s as *mut u64) += *(p as *const u64) };
    }

    static mut FINIS: usize = 0;

    /// `fini(priv)`: counts its calls and poisons the copy.
    unsafe extern "C" fn fini_count(p: *mut c_void) {
        // SAFETY: as above; the tests that count run one at a time on this static's thread.
        unsafe {
            FINIS += 1;
            *(p as *mut u64) = u64::MAX;
        }
    }

    const I_ORIG: InitOrig = init_orig;
    const I_PRIV: OnPriv = init_priv;
    const FINI: OnPriv = fini_count;
    const COMB: Comb = comb_add;

    /// A decoded item's finalizer and combiner, as addresses.
    fn fc(d: &ItemDesc) -> (usize, usize) {
        (d.fini.map_or(0, |f| f as usize), d.comb.map_or(0, |f| f as usize))
    }

    /// Two `kmp_taskred_input_t` items as clang writes them, word by word: one with an
    /// original, initializer, finalizer and combiner; one with neither original (it
    /// initializes from the shared item) nor initializer (zeroed copies), `lazy_priv` set.
    #[test]
    fn taskred_items_decode() {
        let (mut a, mut a_orig, mut b) = (1u64, 2u64, 3u64);
        let words: [usize; 14] = [
            (&raw mut a) as usize,
            (&raw mut a_orig) as usize,
            8,
            I_ORIG as usize,
            FINI as usize,
            COMB as usize,
            0,
            (&raw mut b) as usize,
            0,
            12,
            0,
            0,
            COMB as usize,
            1,
        ];
        // SAFETY: two items in clang's layout (the test above checks it).
        let d = unsafe { items(2, words.as_ptr() as *const TaskredInput) };
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].shar, d[0].size), ((&raw mut a).cast(), 8));
        match d[0].init {
            Init::WithOrig(f, orig) => assert_eq!((f as usize, orig), (I_ORIG as usize, (&raw mut a_orig).cast())),
            other => panic!("item 0's initializer decoded as {other:?}"),
        }
        assert_eq!(fc(&d[0]), (FINI as usize, COMB as usize));
        assert_eq!((d[1].shar, d[1].size), ((&raw mut b).cast(), 12));
        assert!(matches!(d[1].init, Init::Zero), "{:?}", d[1].init);
        assert_eq!(fc(&d[1]), (0, COMB as usize));
        // With an initializer and no original, the shared item is the original.
        let mut w = words;
        w[7 + 3] = I_ORIG as usize;
        // SAFETY: as above.
        let d = unsafe { items(2, w.as_ptr() as *const TaskredInput) };
        assert!(matches!(d[1].init, Init::WithOrig(_, o) if o == (&raw mut b).cast()), "{:?}", d[1].init);
        // SAFETY: no items (the pointer is not read).
        assert!(unsafe { items::<TaskredInput>(-1, std::ptr::null()) }.is_empty());
    }

    /// A `kmp_task_red_input_t` item (the older layout), word by word: its initializer
    /// takes the copy alone.
    #[test]
    fn task_red_items_decode() {
        let mut a = 5u64;
        let words: [usize; 6] = [(&raw mut a) as usize, 8, I_PRIV as usize, 0, COMB as usize, 0];
        // SAFETY: one item in clang's older layout.
        let d = unsafe { items(1, words.as_ptr() as *const TaskRedInput) };
        assert_eq!((d[0].shar, d[0].size), ((&raw mut a).cast(), 8));
        assert!(matches!(d[0].init, Init::Priv(f) if f as usize == I_PRIV as usize), "{:?}", d[0].init);
        assert_eq!(fc(&d[0]), (0, COMB as usize));
    }

    /// Copies are made per thread, cache-line apart and initialized by the compiler's code;
    /// a thread finds its copy from the shared item or from any thread's copy; the end
    /// combines every copy into the shared item and finalizes each.
    #[test]
    fn copies_initialize_look_up_and_combine() {
        let (mut a, mut a_orig) = (1u64, 10u64);
        let words: [usize; 7] = [(&raw mut a) as usize, (&raw mut a_orig) as usize, 8, I_ORIG as usize, FINI as usize, COMB as usize, 0];
        // SAFETY: one item in clang's layout.
        let d = unsafe { items(1, words.as_ptr() as *const TaskredInput) };
        let c = Copies::new(&d, 3, 1);
        let shars = [(&raw mut a) as usize];
        let p: Vec<*mut c_void> = (0..3).map(|t| c.lookup(&shars, shars[0], t).unwrap()).collect();
        for (t, &q) in p.iter().enumerate() {
            assert!((q as usize).is_multiple_of(CACHE_LINE), "copy {t} not on a cache line");
            // SAFETY: copy t, initialized.
            assert_eq!(unsafe { *(q as *const u64) }, 110, "copy {t} not initialized from the original");
        }
        assert!(p.windows(2).all(|w| w[1] as usize - w[0] as usize == CACHE_LINE));
        // Any thread's copy (or an address inside one) leads to the caller's.
        assert_eq!(c.lookup(&shars, p[2] as usize + 4, 1), Some(p[1]));
        assert_eq!(c.lookup(&shars, 0x10, 1), None, "an unrelated address matched");
        assert_eq!(c.lookup(&shars, shars[0], 3), None, "a thread past the team matched");
        for (t, &q) in p.iter().enumerate() {
            // SAFETY: each thread's copy, as a task of that thread would add to it.
            unsafe { *(q as *mut u64) += t as u64 };
        }
        // SAFETY: this test's thread alone counts.
        let before = unsafe { FINIS };
        c.combine(&shars);
        assert_eq!(a, 1 + 110 + 111 + 112);
        // SAFETY: as above.
        assert_eq!(unsafe { FINIS } - before, 3);
    }

    /// `get_th_data` looks an item up in the named taskgroup's reduction, then in the
    /// enclosing ones (each holds its parent).
    #[test]
    fn lookup_walks_enclosing_reductions() {
        let (mut a, mut a_orig, mut b, mut b_orig) = (1u64, 10u64, 2u64, 20u64);
        let item = |shar: *mut u64, orig: *mut u64| [shar as usize, orig as usize, 8, I_ORIG as usize, 0, COMB as usize, 0];
        let (wa, wb) = (item(&raw mut a, &raw mut a_orig), item(&raw mut b, &raw mut b_orig));
        // SAFETY: one item each, in clang's layout.
        let (da, db) = unsafe { (items(1, wa.as_ptr() as *const TaskredInput), items(1, wb.as_ptr() as *const TaskredInput)) };
        let outer = Arc::new(Taskred { copies: Arc::new(Copies::new(&da, 2, 1)), shars: shars(&da), parent: None });
        let inner = Taskred { copies: Arc::new(Copies::new(&db, 2, 1)), shars: shars(&db), parent: Some(outer.clone()) };
        let (pa, pb) = (inner.find((&raw mut a).cast(), 1), inner.find((&raw mut b).cast(), 1));
        assert_eq!(pa, outer.copies.lookup(&outer.shars, outer.shars[0], 1), "the enclosing reduction's copy");
        assert_eq!(pb, inner.copies.lookup(&inner.shars, inner.shars[0], 1), "the inner reduction's copy");
        assert!(pa.is_some() && pb.is_some() && pa != pb);
        assert_eq!(outer.find((&raw mut b).cast(), 1), None, "an inner item from the enclosing reduction");
        assert_eq!(inner.find(std::ptr::without_provenance_mut(0x10), 0), None, "an unrelated address matched");
    }
}
