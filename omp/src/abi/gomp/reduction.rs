//! Task reductions' descriptors: GCC's layout (libgomp's task.c documents it), behind a
//! small safe view. A chain is an array of descriptors the compiler emits per construct
//! (`taskgroup task_reduction`, `parallel`/`for`/`sections`/`scope` with `reduction(task,
//! …)`, `taskloop reduction`); each is these words:
//!
//! - `d[0]` reductions in this descriptor; `d[1]` bytes of one thread's private block;
//! - `d[2]` the blocks' alignment on entry, then (set here) the base of all threads' blocks;
//! - `d[3]` allocator (unused); `d[4]` the next descriptor of the same construct (0: last;
//!   set here to the enclosing registration once linked);
//! - `d[5]` (set here) the registration's lookup table, on its first descriptor;
//! - `d[6]` (set here) the end of the blocks;
//! - then per reduction three words: the original's address, its offset in a block, and
//!   (set here) its descriptor.
//!
//! Thread `id`'s private copy of a reduction lives at `base + id * block + offset`. The
//! core (task.rs, team.rs, ws.rs) sees only [`Descriptor`] (a chain as the compiler passed
//! it), [`Registration`] (a linked chain with its lookup table) and [`Slot`] (where a
//! taskgroup keeps one); only this module reads or writes the words.

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use weft_core::hash::BuildAddrHasher;

// Word indices of a descriptor, then of a reduction's three words.
const COUNT: usize = 0;
const BLOCK: usize = 1;
const BASE: usize = 2;
const NEXT: usize = 4;
const MAP: usize = 5;
const END: usize = 6;
const ITEMS: usize = 7;
const ITEM_WORDS: usize = 3;
const ORIG: usize = 0;
const OFFSET: usize = 1;
const OWNER: usize = 2;

/// A registration's lookup table: original address to its reduction.
type Map = HashMap<usize, Item, BuildAddrHasher>;

/// One descriptor of a compiler chain (the first one names the chain).
///
/// Invariant (made by [`Descriptor::from_raw`]'s caller): it points at `7 + 3 * d[0]`
/// readable and writable words laid out as the module doc says, whose `d[4]` is 0 or the
/// next such descriptor, and they stay alive while the view (or a copy) is used; threads
/// write a descriptor's words only as the constructs' protocols allow (the thread that
/// allocates before publishing, each thread linking its own chain).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor(NonNull<usize>);

// SAFETY: the invariant above holds across threads (the constructs' protocols say which
// thread writes which words when); a team's threads share the chain of the thread that
// allocated the blocks (ws.rs keeps it in a worksharing slot for them).
unsafe impl Send for Descriptor {}

/// One reduction of a descriptor: its three words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Item(NonNull<usize>);

impl Descriptor {
    /// The chain starting at `p` (None for null).
    ///
    /// # Safety
    /// `p` is null or a compiler reduction descriptor chain meeting the type's invariant
    /// until the construct ends (its unregistration).
    pub unsafe fn from_raw(p: *mut usize) -> Option<Descriptor> {
        NonNull::new(p).map(Descriptor)
    }

    /// The reductions pointer of a `taskloop reduction`'s data, which starts `{ start, end,
    /// reductions }`.
    ///
    /// # Safety
    /// `data` is the data GCC passes to GOMP_taskloop with GOMP_TASK_FLAG_REDUCTION, and its
    /// third word is a chain as for [`Descriptor::from_raw`].
    pub unsafe fn from_taskloop_data(data: *const c_void) -> Option<Descriptor> {
        // SAFETY: per the contract the data's third pointer-sized word is the chain.
        let p = unsafe { *(data as *const *mut usize).add(2) };
        // SAFETY: per the contract.
        unsafe { Descriptor::from_raw(p) }
    }

    /// The reductions pointer of a `parallel reduction(task, …)`'s data, its first word.
    ///
    /// # Safety
    /// `data` is the data GCC passes to GOMP_parallel_reductions, its first word a chain as
    /// for [`Descriptor::from_raw`].
    pub unsafe fn from_parallel_data(data: *const c_void) -> Option<Descriptor> {
        // SAFETY: per the contract.
        unsafe { Descriptor::from_raw(*(data as *const *mut usize)) }
    }

    pub fn as_ptr(self) -> *mut usize {
        self.0.as_ptr()
    }

    fn word(self, i: usize) -> usize {
        // SAFETY: the invariant: the header's 7 words, or an item's below 7 + 3 * d[0]
        // (`item` checks the index).
        unsafe { *self.0.as_ptr().add(i) }
    }

    fn set(self, i: usize, v: usize) {
        // SAFETY: as in `word`; the words are writable and this thread may write them.
        unsafe { *self.0.as_ptr().add(i) = v }
    }

    /// No blocks (a `taskloop reduction` without iterations): the base reads 0 for the
    /// compiler's code after it, as libgomp leaves it.
    pub fn set_no_blocks(self) {
        self.set(BASE, 0);
    }

    /// Reductions in this descriptor.
    pub fn count(self) -> usize {
        self.word(COUNT)
    }

    /// Bytes of one thread's private block.
    pub fn block_size(self) -> usize {
        self.word(BLOCK)
    }

    /// The base of the threads' blocks (the alignment before [`Descriptor::alloc`]).
    pub fn base(self) -> usize {
        self.word(BASE)
    }

    /// The end of the threads' blocks (once allocated).
    pub fn end(self) -> usize {
        self.word(END)
    }

    /// The next descriptor: of the same construct, or once linked the enclosing
    /// registration's first.
    pub fn next(self) -> Option<Descriptor> {
        // The invariant covers the chain: d[4] is 0 or a descriptor.
        NonNull::new(self.word(NEXT) as *mut usize).map(Descriptor)
    }

    /// The descriptors of this construct (stops at the last one even once linked).
    fn own(self) -> impl Iterator<Item = Descriptor> {
        let mut d = Some(self);
        std::iter::from_fn(move || {
            let cur = d?;
            // Once linked, the last one's d[4] is the enclosing registration: a new lookup
            // table starts there.
            d = cur.next().filter(|n| n.word(MAP) == 0);
            Some(cur)
        })
    }

    fn item(self, j: usize) -> Item {
        assert!(j < self.count(), "reduction {j} of a descriptor of {}", self.count());
        // SAFETY: inside the descriptor's 7 + 3 * d[0] words (the invariant).
        Item(unsafe { NonNull::new_unchecked(self.0.as_ptr().add(ITEMS + j * ITEM_WORDS)) })
    }

    /// (original address, offset in a block) of reduction `j`.
    pub fn reduction(self, j: usize) -> (usize, usize) {
        let it = self.item(j);
        (it.word(ORIG), it.word(OFFSET))
    }

    /// Thread `id`'s private copy at `offset` in this descriptor's blocks.
    pub fn private(self, id: usize, offset: usize) -> usize {
        self.base() + id * self.block_size() + offset
    }

    /// Allocate zeroed private blocks for `nthreads` in every descriptor of the chain:
    /// base and end replace the alignment word and `d[6]`. Aborts when memory runs out.
    pub fn alloc(self, nthreads: u32) {
        let mut d = Some(self);
        while let Some(x) = d {
            let sz = x.block_size() * nthreads as usize;
            // posix_memalign: freed with free(), which needs no layout (the alignment word
            // is overwritten with the base).
            let align = x.base().max(8).next_power_of_two();
            let mut p: *mut c_void = std::ptr::null_mut();
            // SAFETY: a valid out pointer; the alignment a power of two of at least 8.
            if unsafe { libc::posix_memalign(&mut p, align, sz.max(1)) } != 0 {
                eprintln!("weft-omp: cannot allocate {sz} bytes for task reductions; aborting");
                std::process::abort();
            }
            // SAFETY: the allocation just made, of at least that many bytes.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, sz.max(1)) };
            x.set(BASE, p as usize);
            x.set(END, p as usize + sz);
            d = x.next();
        }
    }

    /// Link this chain (its blocks allocated, or shared with `orig`'s, a chain of the same
    /// shape) in front of `old`, with a lookup table covering both.
    pub fn link(self, old: Option<Registration>, orig: Option<Descriptor>) -> Registration {
        let mut map = old.and_then(|o| o.map().cloned()).unwrap_or_default();
        let (mut d, mut orig) = (self, orig);
        loop {
            if let Some(o) = orig {
                d.set(BASE, o.base());
                d.set(END, o.end());
            }
            d.set(MAP, 0);
            for j in 0..d.count() {
                let it = d.item(j);
                it.set(OWNER, d.as_ptr() as usize);
                map.insert(it.word(ORIG), it);
            }
            match d.next() {
                None => {
                    d.set(NEXT, old.map_or(0, |o| o.0.as_ptr() as usize));
                    break;
                }
                Some(n) => d = n,
            }
            // Only while ours goes on: the first thread may be linking its last one.
            orig = orig.and_then(|o| o.next());
        }
        // On the first descriptor (libgomp puts it on the last; the compiler emits one).
        self.set(MAP, Box::into_raw(Box::new(map)) as usize);
        Registration(self)
    }
}

impl Item {
    fn word(self, i: usize) -> usize {
        // SAFETY: one of the item's three words, inside its descriptor (`Descriptor::item`).
        unsafe { *self.0.as_ptr().add(i) }
    }

    fn set(self, i: usize, v: usize) {
        // SAFETY: as in `word`; written only by the thread linking the chain.
        unsafe { *self.0.as_ptr().add(i) = v }
    }

    /// The descriptor holding it (set when linked).
    fn owner(self) -> Descriptor {
        // SAFETY: linked items' owner word is their descriptor (`Descriptor::link`).
        Descriptor(unsafe { NonNull::new_unchecked(self.word(OWNER) as *mut usize) })
    }
}

/// A linked chain: its first descriptor holds the lookup table of its reductions and of
/// those of the registrations it encloses. Only [`Descriptor::link`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration(Descriptor);

impl Registration {
    /// The registration `d` heads.
    ///
    /// # Safety
    /// `d` was linked ([`Descriptor::link`]) and its lookup table not freed.
    pub unsafe fn from_linked(d: Descriptor) -> Registration {
        Registration(d)
    }

    pub fn first(self) -> Descriptor {
        self.0
    }

    /// The lookup table (None once freed).
    fn map<'a>(self) -> Option<&'a Map> {
        // SAFETY: d[5] of a registration's first descriptor is the table `link` leaked,
        // alive until `free_map` clears the word (whose contract says no copy is used after).
        unsafe { (self.0.word(MAP) as *const Map).as_ref() }
    }

    /// Thread `id`'s copy of the reduction at `addr` (an original's address, or an address
    /// inside some thread's private block, as an earlier remap gave), and the original's
    /// address (None when no reduction starts at that offset).
    pub fn remap(self, addr: usize, id: usize) -> Option<(usize, Option<usize>)> {
        if let Some(&it) = self.map().and_then(|m| m.get(&addr)) {
            return Some((it.owner().private(id, it.word(OFFSET)), Some(it.word(ORIG))));
        }
        let mut d = Some(self.0);
        while let Some(x) = d {
            if (x.base()..x.end()).contains(&addr) {
                let off = (addr - x.base()) % x.block_size();
                let orig = (0..x.count()).map(|j| x.item(j)).find(|it| it.word(OFFSET) == off);
                return Some((x.private(id, off), orig.map(|it| it.word(ORIG))));
            }
            d = x.next();
        }
        None
    }

    /// Free the lookup table only (a thread sharing another's blocks).
    ///
    /// # Safety
    /// No copy of this registration is used after (the enclosing one is untouched).
    pub unsafe fn free_map(self) {
        let m = self.0.word(MAP) as *mut Map;
        if !m.is_null() {
            // SAFETY: the table `link` leaked (the invariant), freed once: the word is cleared.
            drop(unsafe { Box::from_raw(m) });
            self.0.set(MAP, 0);
        }
    }

    /// Free the private blocks of this construct's descriptors and the lookup table.
    ///
    /// # Safety
    /// As [`Registration::free_map`]; the blocks are this registration's own (allocated by
    /// [`Descriptor::alloc`] on this chain, not shared with another's), their results
    /// combined and no longer used.
    pub unsafe fn unregister(self) {
        let own: Vec<Descriptor> = self.0.own().collect();
        // SAFETY: per the contract.
        unsafe { self.free_map() };
        for d in own {
            // SAFETY: posix_memalign's allocation (`alloc`), freed once per construct.
            unsafe { libc::free(d.base() as *mut c_void) };
        }
    }
}

/// Where a taskgroup keeps its registration (or the enclosing group's).
#[derive(Debug, Default)]
pub struct Slot(AtomicPtr<usize>);

impl Slot {
    pub fn new(r: Option<Registration>) -> Slot {
        Slot(AtomicPtr::new(r.map_or(std::ptr::null_mut(), |r| r.0.as_ptr())))
    }

    pub fn load(&self, o: Ordering) -> Option<Registration> {
        // Only `store` writes it, with a registration's first descriptor.
        NonNull::new(self.0.load(o)).map(|p| Registration(Descriptor(p)))
    }

    pub fn store(&self, r: Registration, o: Ordering) {
        self.0.store(r.0.as_ptr(), o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor of reductions at these (original address, offset) pairs, laid out as
    /// GCC emits it: count, block size, alignment, allocator, next (0), two runtime words,
    /// then three words per reduction (the third the runtime's).
    fn desc(block: usize, align: usize, items: &[(usize, usize)]) -> Vec<usize> {
        let mut v = vec![items.len(), block, align, 0, 0, 0, 0];
        for &(orig, off) in items {
            v.extend([orig, off, 0]);
        }
        v
    }

    /// Two descriptors of one construct chained through d[4], as GCC does for more
    /// reductions than one descriptor holds (the test owns the storage).
    fn chain(a: &mut [usize], b: &mut [usize]) -> Descriptor {
        a[NEXT] = b.as_mut_ptr() as usize;
        // SAFETY: both live for the test, laid out as `desc` makes them.
        unsafe { Descriptor::from_raw(a.as_mut_ptr()) }.unwrap()
    }

    const X: usize = 0x1000;
    const Y: usize = 0x2000;
    const Z: usize = 0x3000;

    #[test]
    fn decodes_the_layout() {
        let (mut a, mut b) = (desc(24, 16, &[(X, 0), (Y, 8)]), desc(8, 8, &[(Z, 0)]));
        let d = chain(&mut a, &mut b);
        assert_eq!((d.count(), d.block_size(), d.base()), (2, 24, 16));
        assert_eq!((d.reduction(0), d.reduction(1)), ((X, 0), (Y, 8)));
        let n = d.next().unwrap();
        assert_eq!(n.as_ptr(), b.as_mut_ptr());
        assert_eq!((n.count(), n.reduction(0)), (1, (Z, 0)));
        assert!(n.next().is_none());
        // SAFETY: null is allowed.
        assert!(unsafe { Descriptor::from_raw(std::ptr::null_mut()) }.is_none());
    }

    #[test]
    #[should_panic]
    fn a_reduction_past_the_count_is_refused() {
        let mut a = desc(8, 8, &[(X, 0)]);
        // SAFETY: lives for the test.
        unsafe { Descriptor::from_raw(a.as_mut_ptr()) }.unwrap().reduction(1);
    }

    #[test]
    fn taskloop_and_parallel_data_carry_the_chain() {
        let mut a = desc(8, 8, &[(X, 0)]);
        let data = [5usize, 9, a.as_mut_ptr() as usize, 77];
        // SAFETY: { start, end, reductions } as GCC lays it out, the chain alive.
        let d = unsafe { Descriptor::from_taskloop_data(data.as_ptr().cast()) }.unwrap();
        assert_eq!(d.as_ptr(), a.as_mut_ptr());
        let data = [a.as_mut_ptr() as usize, 1];
        // SAFETY: { reductions, … } as GCC lays out a parallel region's data.
        let d = unsafe { Descriptor::from_parallel_data(data.as_ptr().cast()) }.unwrap();
        assert_eq!(d.as_ptr(), a.as_mut_ptr());
    }

    /// Allocation gives each descriptor zeroed, aligned blocks for every thread; linking
    /// maps each original to thread `id`'s copy, an address inside a block back to the same
    /// reduction in `id`'s block, and unregistering frees what was allocated.
    #[test]
    fn register_remap_unregister() {
        let (mut a, mut b) = (desc(24, 64, &[(X, 0), (Y, 16)]), desc(8, 8, &[(Z, 0)]));
        let d = chain(&mut a, &mut b);
        d.alloc(3);
        for x in [d, d.next().unwrap()] {
            assert_eq!(x.end() - x.base(), 3 * x.block_size());
            // SAFETY: the blocks just allocated.
            let bytes = unsafe { std::slice::from_raw_parts(x.base() as *const u8, x.end() - x.base()) };
            assert!(bytes.iter().all(|&b| b == 0), "blocks not zeroed");
        }
        assert_eq!(d.base() % 64, 0, "the alignment word was not honoured");
        let r = d.link(None, None);
        assert_eq!(r.first(), d);
        let (base_a, base_b) = (d.base(), d.next().unwrap().base());
        assert_eq!(r.remap(X, 2), Some((base_a + 2 * 24, Some(X))));
        assert_eq!(r.remap(Y, 1), Some((base_a + 24 + 16, Some(Y))));
        assert_eq!(r.remap(Z, 0), Some((base_b, Some(Z))));
        // Thread 1's copy of Y, remapped for thread 2.
        assert_eq!(r.remap(base_a + 24 + 16, 2), Some((base_a + 48 + 16, Some(Y))));
        // Inside a block but at no reduction's start: a private address, no original.
        assert_eq!(r.remap(base_a + 24 + 4, 0), Some((base_a + 4, None)));
        assert_eq!(r.remap(0x9999, 0), None);
        // The last descriptor now links to the enclosing registration (none).
        assert!(d.next().unwrap().next().is_none());
        // SAFETY: nothing uses the registration after.
        unsafe { r.unregister() };
        assert_eq!(a[MAP], 0, "the lookup table stayed");
    }

    /// A nested registration sees the enclosing one's reductions; its unregistration frees
    /// only its own blocks and leaves the enclosing one working.
    #[test]
    fn nested_registrations() {
        let mut outer = desc(8, 8, &[(X, 0)]);
        let mut inner = desc(16, 8, &[(Y, 8)]);
        // SAFETY: both live for the test.
        let (o, i) = unsafe { (Descriptor::from_raw(outer.as_mut_ptr()).unwrap(), Descriptor::from_raw(inner.as_mut_ptr()).unwrap()) };
        o.alloc(2);
        let ro = o.link(None, None);
        i.alloc(2);
        let ri = i.link(Some(ro), None);
        assert_eq!(i.next(), Some(o), "the inner chain goes on to the enclosing one");
        assert_eq!(ri.remap(X, 1), Some((o.base() + 8, Some(X))));
        assert_eq!(ri.remap(Y, 1), Some((i.base() + 16 + 8, Some(Y))));
        // An address in the enclosing blocks, found past the inner chain.
        assert_eq!(ri.remap(o.base() + 8, 0), Some((o.base(), Some(X))));
        // SAFETY: nothing uses the inner registration after.
        unsafe { ri.unregister() };
        assert_eq!(ro.remap(X, 1), Some((o.base() + 8, Some(X))));
        assert_eq!(ro.remap(Y, 1), None);
        // SAFETY: nor the outer one.
        unsafe { ro.unregister() };
    }

    /// A worksharing construct's other threads link their own chains onto the first
    /// thread's blocks; a slot hands registrations over.
    #[test]
    fn shared_blocks_and_slots() {
        let (mut a, mut b) = (desc(8, 8, &[(X, 0)]), desc(8, 8, &[(Y, 0)]));
        let (mut a2, mut b2) = (a.clone(), b.clone());
        let first = chain(&mut a, &mut b);
        let other = chain(&mut a2, &mut b2);
        first.alloc(2);
        let r1 = first.link(None, Some(first));
        let r2 = other.link(None, Some(first));
        assert_eq!((other.base(), other.end()), (first.base(), first.end()));
        assert_eq!(other.next().unwrap().base(), first.next().unwrap().base());
        assert_eq!(r2.remap(Y, 1), r1.remap(Y, 1));
        let s = Slot::default();
        assert_eq!(s.load(Ordering::Relaxed), None);
        s.store(r2, Ordering::Release);
        assert_eq!(s.load(Ordering::Acquire), Some(r2));
        assert_eq!(Slot::new(Some(r1)).load(Ordering::Relaxed), Some(r1));
        // SAFETY: nothing uses them after; the blocks are the first thread's.
        unsafe {
            r2.free_map();
            r1.unregister();
        }
    }
}
