//! A task's data as `GOMP_task` and `GOMP_taskloop` pass it (`data`, `cpyfn`, `arg_size`,
//! `arg_align`), the event handle a `detach` clause gives the program, a taskloop task's
//! bounds in its data's first two words, and the storage a task keeps its copy in.
//!
//! **Owns**: every read and write of those bytes: [`TaskData`] (the compiler's block and
//! how to copy it), [`Storage`] (a task's own copy: inline up to [`INLINE`] bytes, else an
//! aligned heap block kept across reuses), [`Detach`] (where the event handle goes).
//! **Does not own**: when a task is created, copied or run (task.rs). The kmp layer hands
//! its task blocks over in the same shape (abi/kmp/task.rs: its copy function moves the
//! shareds pointer along).
//!
//! # Invariants
//! A [`TaskData`] is made only by its `unsafe` constructors, whose contract is what GCC
//! guarantees for the creating call: `data` readable for `arg_size` bytes (writable in its
//! first two words for a taskloop), `cpyfn` copying from it into `arg_size` bytes at
//! `arg_align`. A [`Storage`] prepared for a [`TaskData`] has room for it at its alignment
//! ([`Storage::prepare`]); [`Storage::fill`] copies only into such room, before its task
//! is published.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ffi::{c_long, c_void};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// The compiler's copy function for firstprivate data (`cpyfn(dst, src)`).
pub type CpyFn = unsafe extern "C" fn(*mut c_void, *mut c_void);

/// Task data up to this many bytes (aligned to at most 16) lives in the task's own
/// allocation: GCC's usual data, and a kmp task block (header, `kmp_task_t`, a few privates
/// and shareds), so that neither needs a heap block of its own.
pub const INLINE: usize = 128;

/// A task's data as the compiler passes it to the creating call.
#[derive(Clone, Copy)]
pub struct TaskData {
    src: *mut c_void,
    cpyfn: Option<CpyFn>,
    size: usize,
    /// At least 1 (made a power of two where a layout needs it: [`TaskData::layout`]).
    align: usize,
    /// The block starts with a taskloop task's (start, end) pair.
    bounds: bool,
}

impl TaskData {
    /// `GOMP_task`'s data (`arg_size` and `arg_align` as GCC passes them: a negative size
    /// counts as none, an alignment under 1 as 1, one not a power of two as the next).
    ///
    /// # Safety
    /// For as long as the value is used: `src` is readable for `arg_size` bytes (null only
    /// with a size of 0 and no `cpyfn`), and `cpyfn`, if given, copies the data from `src`
    /// into `arg_size` bytes aligned to `arg_align` (GCC's firstprivate copy).
    #[inline]
    pub unsafe fn new(src: *mut c_void, cpyfn: Option<CpyFn>, arg_size: c_long, arg_align: c_long) -> TaskData {
        TaskData { src, cpyfn, size: arg_size.max(0) as usize, align: arg_align.max(1) as usize, bounds: false }
    }

    /// `GOMP_taskloop`'s data: as [`TaskData::new`], and the block starts with the loop's
    /// (start, end) pair, which each task's copy gets its own range in.
    ///
    /// # Safety
    /// As [`TaskData::new`]; besides, `src` is writable in its first 16 bytes, 8-byte
    /// aligned, and `arg_size` is at least 16 (GCC's taskloop data).
    pub unsafe fn taskloop(src: *mut c_void, cpyfn: Option<CpyFn>, arg_size: c_long, arg_align: c_long) -> TaskData {
        // SAFETY: per the contract.
        let d = unsafe { TaskData::new(src, cpyfn, arg_size, arg_align) };
        if src.is_null() || d.size < 16 || !(src as usize).is_multiple_of(8) {
            eprintln!("weft-omp: GOMP_taskloop data of {} bytes at {src:?} has no room for its bounds; aborting", d.size);
            std::process::abort();
        }
        TaskData { bounds: true, ..d }
    }

    /// The compiler's own block (a task run at once without a copy function runs on it).
    #[inline]
    pub fn src(&self) -> *mut c_void {
        self.src
    }

    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    #[inline]
    pub fn has_cpyfn(&self) -> bool {
        self.cpyfn.is_some()
    }

    /// The heap layout a copy needs: none when it fits a task's inline room (16-byte
    /// aligned, which serves any smaller alignment).
    #[inline]
    pub fn layout(&self) -> Option<Layout> {
        if self.size <= INLINE && self.align <= 16 { None } else { Some(self.heap_layout()) }
    }

    #[inline(never)]
    fn heap_layout(&self) -> Layout {
        let align = self.align.next_power_of_two();
        Layout::from_size_align(self.size.max(1), align).unwrap_or_else(|_| {
            eprintln!("weft-omp: task data of {} bytes aligned to {} is not possible; aborting", self.size, self.align);
            std::process::abort()
        })
    }

    /// Write a taskloop task's range into the compiler's own block (every task run at once
    /// on it, one after another, as libgomp does).
    pub fn set_bounds_in_place(&self, r: (u64, u64)) {
        assert!(self.bounds, "invariant: bounds only in a taskloop's data");
        // SAFETY: a taskloop's block is writable in its first two aligned words
        // (`TaskData::taskloop`).
        unsafe { write_bounds(self.src, r) };
    }
}

/// Write (start, end) over the first two words at `p`.
///
/// # Safety
/// `p` is writable for 16 bytes, 8-byte aligned, and nothing else uses them meanwhile.
unsafe fn write_bounds(p: *mut c_void, (a, b): (u64, u64)) {
    // SAFETY: per the contract.
    unsafe {
        let w = p as *mut u64;
        w.write(a);
        w.add(1).write(b);
    }
}

/// An aligned heap block for data over a task's inline room (kept when its task's box is
/// reused, and grown only when a new task needs more).
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: plain bytes, owned; who writes them when is `Storage`'s business.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

impl Block {
    fn new(layout: Layout) -> Block {
        // SAFETY: a layout of non-zero size (`TaskData::layout`).
        let p = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(p) else { std::alloc::handle_alloc_error(layout) };
        Block { ptr, layout }
    }

    fn fits(&self, l: Layout) -> bool {
        self.layout.size() >= l.size() && self.layout.align() >= l.align()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `Block::new`.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A task's inline room, 16-byte aligned, not initialised (a task's copy is written before
/// its body reads it; zeroing it cost every new task box a store per 16 bytes).
#[repr(C, align(16))]
struct Inline(MaybeUninit<[u8; INLINE]>);

/// A task's own copy of its data: inline up to [`INLINE`] bytes at 16-byte alignment, else a
/// heap block. Its bytes are written only by [`Storage::fill`] (before the task is
/// published) and then belong to the task's body.
pub struct Storage {
    inline: UnsafeCell<Inline>,
    heap: Option<Block>,
}

// SAFETY: the bytes are written by `fill`, whose contract excludes any other user, and
// afterwards only through the pointer handed to the task's body, which runs on one thread.
unsafe impl Sync for Storage {}

impl Default for Storage {
    fn default() -> Self {
        Storage::new()
    }
}

impl Storage {
    /// Where the inline room is in a `Storage` (what [`ptr`](Self::ptr) gives without a
    /// heap block).
    pub const INLINE_OFFSET: usize = std::mem::offset_of!(Storage, inline);

    pub const fn new() -> Storage {
        Storage { inline: UnsafeCell::new(Inline(MaybeUninit::uninit())), heap: None }
    }

    #[inline]
    pub fn has_heap(&self) -> bool {
        self.heap.is_some()
    }

    /// Free the heap block, if any: [`ptr`](Self::ptr) is the inline room then.
    pub fn drop_heap(&mut self) {
        self.heap = None;
    }

    /// Make room for `d`'s copy: inline, the heap block kept from an earlier task if it is
    /// large and aligned enough, else a new one.
    #[inline]
    pub fn prepare(&mut self, d: &TaskData) {
        match d.layout() {
            Some(l) if self.heap.as_ref().is_some_and(|b| b.fits(l)) => {}
            Some(l) => self.heap = Some(Block::new(l)),
            None => {}
        }
    }

    /// Where the copy is (what the task's body gets).
    #[inline]
    pub fn ptr(&self) -> *mut c_void {
        match &self.heap {
            Some(b) => b.ptr.as_ptr() as *mut c_void,
            None => self.inline.get() as *mut c_void,
        }
    }

    /// Whether `d`'s copy fits where [`ptr`](Self::ptr) points.
    fn has_room(&self, d: &TaskData) -> bool {
        match (d.layout(), &self.heap) {
            (None, _) => true,
            (Some(l), Some(b)) => b.fits(l),
            (Some(_), None) => false,
        }
    }

    /// Copy `d` here (with the compiler's copy function if it gave one: it runs on the
    /// calling thread, as the creating task, as in libgomp), then write `bounds` over the
    /// copy's first two words (a taskloop task's range).
    ///
    /// # Safety
    /// The storage was [prepared](Self::prepare) for `d` (a debug build checks it), and no
    /// other thread reads or writes it during the call (the task is not published yet, or
    /// the storage is the caller's own).
    #[inline]
    pub unsafe fn fill(&self, d: &TaskData, bounds: Option<(u64, u64)>) {
        debug_assert!(self.has_room(d), "invariant: storage prepared for the data");
        let dst = self.ptr();
        // SAFETY: `dst` has room for `d.size` bytes at `d.align` (prepared); `d.src`
        // is readable for them and `cpyfn` copies them (`TaskData`'s constructors); no one
        // else uses `dst` (the contract).
        unsafe {
            match d.cpyfn {
                Some(f) => f(dst, d.src),
                None if d.size > 0 => std::ptr::copy_nonoverlapping(d.src as *const u8, dst as *mut u8, d.size),
                None => {}
            }
        }
        if let Some(r) = bounds {
            assert!(d.bounds, "invariant: bounds only in a taskloop's data");
            // SAFETY: a taskloop's data is at least 16 bytes (`TaskData::taskloop`), its copy
            // here 8-byte aligned at least; no one else uses it (the contract).
            unsafe { write_bounds(dst, r) };
        }
    }

    /// [`prepare`](Self::prepare) and [`fill`](Self::fill) storage the caller holds
    /// exclusively.
    #[inline]
    pub fn fill_mut(&mut self, d: &TaskData, bounds: Option<(u64, u64)>) {
        self.prepare(d);
        // SAFETY: prepared just now; `&mut self`: nobody else uses it.
        unsafe { self.fill(d, bounds) };
    }
}

/// Where a `detach` clause's event handle goes: the clause's variable and, in GCC's layout,
/// also the task's copy of it, the first word of the task's data.
#[derive(Clone, Copy)]
pub struct Detach {
    cell: NonNull<usize>,
    in_data: bool,
}

impl Detach {
    /// GOMP_task's `detach` argument (none when null): the event handle variable, whose
    /// firstprivate copy is the data's first word.
    ///
    /// # Safety
    /// `cell` is null or GCC's event handle variable, writable while the creating call
    /// runs; `data` (the same call's) then starts with an 8-byte aligned word to write.
    #[inline]
    pub unsafe fn gomp(cell: *mut c_void, data: &TaskData) -> Option<Detach> {
        let cell = NonNull::new(cell as *mut usize)?;
        Some(Detach { cell, in_data: !data.src.is_null() && data.size >= 8 })
    }

    /// A cell of another ABI's (kmp: the event cell in its task block), written alone.
    ///
    /// # Safety
    /// `cell` is null or writable while the creating call runs.
    #[inline]
    pub unsafe fn cell(cell: *mut usize) -> Option<Detach> {
        Some(Detach { cell: NonNull::new(cell)?, in_data: false })
    }

    /// Give the program the event handle `h`: in the clause's variable, and in GCC's
    /// layout in the data's first word too (before the data is copied for the task).
    pub fn publish(&self, h: usize, data: &TaskData) {
        // SAFETY: writable during the creating call (the constructors' contracts); the
        // data's first word when `in_data` (`Detach::gomp`).
        unsafe {
            self.cell.as_ptr().write(h);
            if self.in_data {
                (data.src as *mut usize).write(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &Storage, n: usize) -> Vec<u64> {
        // SAFETY: the test's own storage, filled with at least `n` words.
        (0..n).map(|i| unsafe { *(s.ptr() as *const u64).add(i) }).collect()
    }

    /// GCC's arguments: a negative size is none, an alignment under 1 or not a power of two
    /// is made one; small data goes inline, large or over-aligned data to the heap.
    #[test]
    fn sizes_and_alignments_decode() {
        let mut x = [0u64; 2];
        // SAFETY: a readable block of 16 bytes.
        let d = unsafe { TaskData::new(x.as_mut_ptr().cast(), None, -5, 0) };
        assert_eq!((d.size(), d.align, d.layout()), (0, 1, None));
        // SAFETY: as above (the size is only decoded here).
        let d = unsafe { TaskData::new(x.as_mut_ptr().cast(), None, 129, 3) };
        assert_eq!(d.size(), 129);
        assert_eq!(d.layout(), Some(Layout::from_size_align(129, 4).unwrap()));
        // SAFETY: as above.
        let d = unsafe { TaskData::new(x.as_mut_ptr().cast(), None, INLINE as c_long, 16) };
        assert_eq!(d.layout(), None, "data of the inline room's size at 16 is not inline");
        // SAFETY: as above.
        let d = unsafe { TaskData::new(x.as_mut_ptr().cast(), None, 16, 32) };
        assert_eq!(d.layout(), Some(Layout::from_size_align(16, 32).unwrap()), "over-aligned data is not inline");
    }

    /// A copy is the source's bytes, at the alignment asked for; a heap block is kept for a
    /// smaller next task and replaced for a larger one.
    #[test]
    fn copies_land_aligned_and_blocks_are_reused() {
        let mut src: Vec<u64> = (0..32).collect();
        let mut s = Storage::new();
        // SAFETY: `src` holds 256 readable bytes.
        let small = unsafe { TaskData::new(src.as_mut_ptr().cast(), None, 24, 8) };
        s.fill_mut(&small, None);
        assert!(s.heap.is_none() && s.ptr() == s.inline.get().cast());
        assert!((s.ptr() as usize).is_multiple_of(16), "the inline room is not 16-byte aligned");
        assert_eq!(words(&s, 3), [0, 1, 2]);
        // SAFETY: as above.
        let big = unsafe { TaskData::new(src.as_mut_ptr().cast(), None, 200, 64) };
        s.fill_mut(&big, None);
        assert!((s.ptr() as usize).is_multiple_of(64));
        assert_eq!(words(&s, 25), (0..25).collect::<Vec<_>>());
        let kept = s.ptr();
        // SAFETY: as above.
        let mid = unsafe { TaskData::new(src.as_mut_ptr().cast(), None, 100, 16) };
        s.fill_mut(&mid, None);
        assert_eq!(s.ptr(), kept, "a block large enough was not reused");
        // SAFETY: as above.
        let bigger = unsafe { TaskData::new(src.as_mut_ptr().cast(), None, 256, 128) };
        s.fill_mut(&bigger, None);
        assert!((s.ptr() as usize).is_multiple_of(128));
        assert_eq!(words(&s, 32), src);
    }

    static mut COPIED: usize = 0;

    /// A copy function (as GCC's for a firstprivate C++ object): doubles each word and
    /// records the destination.
    unsafe extern "C" fn doubling(dst: *mut c_void, src: *mut c_void) {
        // SAFETY: the test's 3-word blocks.
        unsafe {
            for i in 0..3 {
                *(dst as *mut u64).add(i) = 2 * *(src as *const u64).add(i);
            }
            COPIED = dst as usize;
        }
    }

    /// The copy function runs into the task's own storage (its destination is where the
    /// body will find the data), not into a temporary.
    #[test]
    fn copy_function_writes_in_place() {
        let mut src = [1u64, 2, 3];
        // SAFETY: 24 readable bytes; `doubling` copies them.
        let d = unsafe { TaskData::new(src.as_mut_ptr().cast(), Some(doubling), 24, 8) };
        let mut s = Storage::new();
        s.fill_mut(&d, None);
        assert_eq!(words(&s, 3), [2, 4, 6]);
        // SAFETY: written by the copy above, on this thread.
        assert_eq!(unsafe { COPIED }, s.ptr() as usize);
    }

    /// A taskloop task's range goes over the first two words of its copy, or of the
    /// compiler's block for a task run on it; the rest of the data is untouched.
    #[test]
    fn taskloop_bounds_are_the_first_two_words() {
        let mut src = [0u64, 0, 7];
        // SAFETY: 24 bytes, writable, aligned, starting with the bounds.
        let d = unsafe { TaskData::taskloop(src.as_mut_ptr().cast(), None, 24, 8) };
        let mut s = Storage::new();
        s.fill_mut(&d, Some((10, 20)));
        assert_eq!(words(&s, 3), [10, 20, 7]);
        assert_eq!(src, [0, 0, 7], "the compiler's block changed");
        d.set_bounds_in_place((3, 4));
        assert_eq!(src, [3, 4, 7]);
    }

    /// GCC's detach: the handle goes to the clause's variable and to the data's first word
    /// (the task's firstprivate copy of it); another ABI's cell gets it alone.
    #[test]
    fn detach_handles_are_written_where_gcc_reads_them() {
        let mut var = 0usize;
        let mut data = [0usize, 5];
        // SAFETY: 16 readable bytes.
        let d = unsafe { TaskData::new(data.as_mut_ptr().cast(), None, 16, 8) };
        // SAFETY: a writable variable; the data starts with a writable word.
        let ev = unsafe { Detach::gomp((&raw mut var).cast(), &d) }.unwrap();
        ev.publish(0xabc0, &d);
        assert_eq!((var, data), (0xabc0, [0xabc0, 5]));
        // SAFETY: no cell.
        assert!(unsafe { Detach::gomp(std::ptr::null_mut(), &d) }.is_none());
        let mut cell = 0usize;
        // SAFETY: a writable cell.
        let ev = unsafe { Detach::cell(&raw mut cell) }.unwrap();
        ev.publish(0x50, &d);
        assert_eq!((cell, data), (0x50, [0xabc0, 5]));
    }
}
