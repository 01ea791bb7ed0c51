//! Shared virtual memory (OpenCL 2.0 coarse- and fine-grained buffer SVM).
//!
//! **Owns**: `clSVMAlloc`/`clSVMFree`, the `clEnqueueSVM*` commands, the table of live
//! allocations, and the ordering between SVM commands and the release of buffers that
//! use SVM memory as their host pointer.
//! **Does not own**: SVM kernel arguments (`kernel.rs` sets them and pins the kernel).
//!
//! Design: an SVM pointer is valid only in the context that allocated it, and Weft has one
//! vendor context per real device, so every SVM allocation is made in the context of the
//! **first real device** (the "SVM device"), always fine-grained when that device offers
//! it (a superset of coarse-grained behaviour: the host may touch the memory at any
//! synchronisation point, so map and unmap are ordering points only). SVM is reported on
//! the SVM device and on the unified device (not on the other real devices); a kernel
//! taking an SVM pointer runs on the SVM device. SVM data is not a core data handle: it
//! is not moved between devices, and commands on it (memcpy, fill, map, free) are host
//! tasks ordered by their queue and wait lists like any command.
//!
//! A device with coarse-grained SVM only (NVIDIA's) keeps the host's view of an allocation
//! apart from the device's until a map or unmap. Weft keeps every coarse-grained
//! allocation **mapped for the host** except while a kernel using it runs: the kernel's
//! launch unmaps the allocations it takes, runs, and maps them again, all on the device's
//! in-order queue under one completion ([`coarse_allocations`], kernel.rs). Every host-side
//! access (SVM commands, buffers over SVM memory, the application between its own map and
//! unmap) then sees current data, and the application's `clEnqueueSVMMap`/`Unmap` stay
//! ordering points. It costs a copy each way per kernel on such a device.
//! NVIDIA's `clSVMAlloc` and `clSVMFree` are not safe beside another thread's enqueue or
//! flush on the same context (measured on an H100, pyopencl's
//! `test_arrays_with_svm_allocators`: an allocation made while a driver thread launched a
//! kernel came back null 10 times in 10, and a rerun lost the context with error -9999).
//! Weft makes both calls under the device's submission lock (20 in 20 then passed).
//! `WEFT_SVM_COARSE=1` allocates coarse-grained even where fine-grained is offered (how
//! the tests reach this path on PoCL).
//!
//! pyopencl wraps SVM memory in `CL_MEM_USE_HOST_PTR` buffers ("views"): a core data
//! handle whose home is the SVM memory, which kernels taking the SVM pointer read and
//! write behind core's back. Coherence between the two:
//! - A view's newest data may sit on a device until the view is released, and the release
//!   writes it home on a thread of its own (`memory.rs`). So a view registers its release
//!   here ([`releasing`]), and the next SVM command or kernel touching that memory first
//!   waits for the write-back (a gate task before it), as does freeing the memory.
//! - While a view lives, host-side SVM commands access its data handle (core brings its
//!   data home first), and so does the gate before a kernel taking the SVM pointer
//!   ([`kernel_waits`]; `RW`, so the view is fetched again after that kernel).
//! - A kernel taking a view waits for the *completion* of the commands before it (a gate
//!   task again): core would launch it right behind a kernel taking the SVM pointer on the
//!   same device and fetch the view's data from the SVM memory before that kernel ran.

use super::cl::*;
use super::context::Context;
use super::event::{Event, EventState, hand_out};
use super::icd::{self, Obj};
use super::memory::Mem;
use super::platform::DeviceKind;
use super::queue::{Cmd, Queue, finish_command, host_codelet, submit};
use super::{ClResult, cl_entrypoint, is_true, slice};
use std::ffi::c_void;
use std::sync::{Arc, Condvar, LazyLock, Mutex, Weak};
use weft_core::task::{AccessMode, TaskBuilder};
use weft_vendors::opencl::result as vr;

pub const CL_MEM_SVM_FINE_GRAIN_BUFFER: cl_bitfield = 1 << 10;
pub const CL_MEM_SVM_ATOMICS: cl_bitfield = 1 << 11;
pub const CL_DEVICE_SVM_COARSE_GRAIN_BUFFER: cl_bitfield = 1;
pub const CL_DEVICE_SVM_FINE_GRAIN_BUFFER: cl_bitfield = 2;
pub const CL_DEVICE_SVM_FINE_GRAIN_SYSTEM: cl_bitfield = 4;
pub const CL_DEVICE_SVM_ATOMICS: cl_bitfield = 8;
const CL_COMMAND_SVM_FREE: cl_uint = 0x1209;
const CL_COMMAND_SVM_MEMCPY: cl_uint = 0x120A;
const CL_COMMAND_SVM_MEMFILL: cl_uint = 0x120B;
const CL_COMMAND_SVM_MAP: cl_uint = 0x120C;
const CL_COMMAND_SVM_UNMAP: cl_uint = 0x120D;
const CL_COMMAND_SVM_MIGRATE_MEM: cl_uint = 0x120E;

/// A latch: set once, waited on by many.
#[derive(Default)]
pub struct Latch {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    pub fn set(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*d {
            d = self.cv.wait(d).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A live allocation.
#[derive(Clone, Copy)]
struct Alloc {
    at: usize,
    size: usize,
    /// Coarse-grained: mapped for the host between kernels.
    coarse: bool,
}

#[derive(Default)]
struct Table {
    allocs: Vec<Alloc>,
    /// Buffers whose host memory lies in an allocation: (start, end, buffer).
    views: Vec<(usize, usize, Weak<Obj<Mem>>)>,
    /// Releases of such buffers still writing their data home: (start, end, done).
    releases: Vec<(usize, usize, Arc<Latch>)>,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Default::default);

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl Table {
    /// The allocation holding `p`.
    fn holding(&self, p: usize) -> Option<Alloc> {
        self.allocs.iter().copied().find(|a| p >= a.at && p < a.at + a.size.max(1))
    }

    /// Whether `start..end` overlaps an allocation.
    fn overlapping(&self, start: usize, end: usize) -> bool {
        self.allocs.iter().any(|a| overlaps((start, end), (a.at, a.at + a.size)))
    }
}

/// The allocation holding `p`, as (address, size).
pub fn allocation_of(p: usize) -> Option<(usize, usize)> {
    table().holding(p).map(|a| (a.at, a.size))
}

/// Whether `start..end` overlaps an SVM allocation.
pub fn in_svm(start: usize, end: usize) -> bool {
    table().overlapping(start, end)
}

/// Note a buffer whose host memory (`start..end`) lies in SVM memory.
pub fn note_view(m: &Arc<Obj<Mem>>, start: usize, end: usize) {
    table().views.push((start, end, Arc::downgrade(m)));
}

/// A buffer over SVM memory (`start..end`) is being released: the latch to set once its
/// data is home. `None` when the range is not SVM memory.
pub fn releasing(start: usize, end: usize) -> Option<Arc<Latch>> {
    let mut t = table();
    if !t.overlapping(start, end) {
        return None;
    }
    let l = Arc::new(Latch::default());
    t.releases.push((start, end, l.clone()));
    t.views.retain(|v| v.2.strong_count() > 0);
    Some(l)
}

/// The release of `l` is over.
pub fn released(l: &Arc<Latch>) {
    table().releases.retain(|r| !Arc::ptr_eq(&r.2, l));
    l.set();
}

/// Live buffers over `start..end`, and pending releases there.
fn around(start: usize, end: usize) -> (Vec<Arc<Obj<Mem>>>, Vec<Arc<Latch>>) {
    let t = table();
    let views = t.views.iter().filter(|v| overlaps((v.0, v.1), (start, end))).filter_map(|v| v.2.upgrade()).collect();
    let rel = t.releases.iter().filter(|r| overlaps((r.0, r.1), (start, end))).map(|r| r.2.clone()).collect();
    (views, rel)
}

/// Coarse-grained allocations (address, size) holding any of `ptrs`, each once: what a
/// kernel taking those SVM pointers must unmap before it runs and map again after.
pub fn coarse_allocations(ptrs: impl IntoIterator<Item = usize>) -> Vec<(usize, usize)> {
    let t = table();
    let mut v: Vec<(usize, usize)> = Vec::new();
    for p in ptrs {
        if let Some(a) = t.holding(p)
            && a.coarse
            && !v.iter().any(|x| x.0 == a.at)
        {
            v.push((a.at, a.size));
        }
    }
    v
}

/// Whether SVM allocations are coarse-grained though the device offers fine-grained
/// (`WEFT_SVM_COARSE=1`).
fn force_coarse() -> bool {
    static F: LazyLock<bool> = LazyLock::new(|| std::env::var("WEFT_SVM_COARSE").is_ok_and(|v| v == "1"));
    *F
}

/// A raw command for `OpenClDevice::enqueue_raw`.
pub type RawCmd = Box<dyn FnOnce(weft_vendors::opencl::sys::cl_command_queue) -> vr::ClResult<weft_vendors::opencl::sys::cl_event>>;

/// The command mapping coarse-grained allocation `p..p + size` for the host (its state
/// between kernels). Enqueue it only on the SVM device's queue (`enqueue_raw`'s contract).
pub fn map_for_host(p: usize, size: usize) -> RawCmd {
    // SAFETY: `p..p + size` is an allocation of the context of the queue it is enqueued on
    // (the caller's contract above).
    Box::new(move |q| unsafe { vr::enqueue_svm_map(q, CL_MAP_READ | CL_MAP_WRITE, p as *mut c_void, size) })
}

/// The command unmapping coarse-grained allocation `p` for the device, mapped by
/// [`map_for_host`] before; the same contract.
pub fn unmap_for_device(p: usize) -> RawCmd {
    // SAFETY: as above, and mapped by an earlier `map_for_host`.
    Box::new(move |q| unsafe { vr::enqueue_svm_unmap(q, p as *mut c_void) })
}

/// Map (`map`) or unmap a coarse-grained allocation for the host on `dev`'s queue and
/// wait for it.
fn host_map(dev: &weft_vendors::opencl::OpenClDevice, p: usize, size: usize, map: bool) -> Result<(), String> {
    let cmd = if map { map_for_host(p, size) } else { unmap_for_device(p) };
    // SAFETY: `dev` is the SVM device, whose context holds the allocation; the command
    // touches only it, and it lives until the command completes (we wait for it).
    let done =
        unsafe { dev.enqueue_raw(if map { "clEnqueueSVMMap" } else { "clEnqueueSVMUnmap" }, vec![cmd]) }.map_err(|e| e.to_string())?;
    done.wait().map_err(|e| e.to_string())
}

/// The real device SVM allocations belong to, if it offers SVM.
fn svm_device(c: &Context) -> Option<usize> {
    let dev0 = DeviceKind::Real(0);
    if !(c.has(DeviceKind::Unified) || c.has(dev0)) {
        return None;
    }
    (vendor_caps(&c.platform.real.first()?.1) & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0).then_some(0)
}

/// The SVM capabilities of a vendor device.
pub fn vendor_caps(dev: &weft_vendors::opencl::OpenClDevice) -> cl_bitfield {
    super::platform::forward(dev, CL_DEVICE_SVM_CAPABILITIES)
        .ok()
        .and_then(|b| b.get(..8).and_then(|s| s.try_into().ok()).map(u64::from_ne_bytes))
        .unwrap_or(0)
}

/// `CL_DEVICE_SVM_CAPABILITIES` of a Weft device: the SVM device's (without system SVM) on
/// the unified device and the SVM device, none elsewhere.
pub fn device_caps(p: &super::platform::Platform, kind: DeviceKind) -> cl_bitfield {
    match kind {
        DeviceKind::Unified | DeviceKind::Real(0) => {
            let forced = if force_coarse() { CL_DEVICE_SVM_FINE_GRAIN_BUFFER | CL_DEVICE_SVM_ATOMICS } else { 0 };
            p.real.first().map_or(0, |d| vendor_caps(&d.1)) & !CL_DEVICE_SVM_FINE_GRAIN_SYSTEM & !forced
        }
        DeviceKind::Real(_) => 0,
    }
}

fn alloc(context: Handle, flags: cl_bitfield, size: usize, alignment: cl_uint) -> Option<*mut c_void> {
    let c = icd::get::<Context>(context).ok()?;
    let access = flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY);
    let known = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS;
    // NULL if [...] values specified in flags are not valid, size is 0 or greater than
    // CL_DEVICE_MAX_MEM_ALLOC_SIZE, alignment is not a power of two or the OpenCL
    // implementation cannot support the specified alignment, or CL_MEM_SVM_ATOMICS is
    // specified without CL_MEM_SVM_FINE_GRAIN_BUFFER.
    if flags & !known != 0
        || access.count_ones() > 1
        || size == 0
        || (alignment != 0 && !alignment.is_power_of_two())
        || (flags & CL_MEM_SVM_ATOMICS != 0 && flags & CL_MEM_SVM_FINE_GRAIN_BUFFER == 0)
    {
        return None;
    }
    let i = svm_device(&c)?;
    let dev = &c.platform.real[i].1;
    if dev.max_alloc_size().is_some_and(|m| size > m) {
        return None;
    }
    let caps = device_caps(c.platform, DeviceKind::Real(i));
    // Fine-grained whenever the device can: host accesses then need no map.
    let mut vflags = access | (flags & CL_MEM_SVM_ATOMICS);
    let fine = caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER != 0;
    if fine {
        vflags |= CL_MEM_SVM_FINE_GRAIN_BUFFER;
    } else if flags & CL_MEM_SVM_FINE_GRAIN_BUFFER != 0 {
        return None;
    }
    if flags & CL_MEM_SVM_ATOMICS != 0 && caps & CL_DEVICE_SVM_ATOMICS == 0 {
        return None;
    }
    let p = {
        // Under the submission lock: NVIDIA's clSVMAlloc and clSVMFree, called while another
        // thread enqueues or flushes on the same context, fail or break the context (see the
        // module doc).
        let _submitting = dev.lock_submissions();
        // SAFETY: the device's context is live.
        unsafe { vr::svm_alloc(dev.context().as_raw(), vflags, size, alignment) }.unwrap_or(std::ptr::null_mut())
    };
    if p.is_null() {
        // Arguments the spec refuses were refused above: this is the device's own failure,
        // which the application may not check for (pyopencl's SVMAllocator does not).
        eprintln!("weft: clSVMAlloc: the device's clSVMAlloc failed for {size} bytes (flags {vflags:#x}, alignment {alignment})");
        return None;
    }
    if !fine && let Err(e) = host_map(dev, p as usize, size, true) {
        eprintln!("weft: clSVMAlloc: mapping the coarse-grained allocation for the host failed: {e}");
        // SAFETY: just allocated, used by nothing.
        unsafe { vendor_free(dev, p) };
        return None;
    }
    table().allocs.push(Alloc { at: p as usize, size, coarse: !fine });
    Some(p)
}

/// # Safety
/// No pointer arguments.
#[cl_entrypoint(clSVMAlloc)]
fn svm_alloc(context: Handle, flags: cl_bitfield, size: usize, alignment: cl_uint) -> *mut c_void {
    alloc(context, flags, size, alignment).unwrap_or(std::ptr::null_mut())
}

/// The device's `clSVMFree`, under its submission lock as in [`alloc`].
///
/// # Safety
/// `p` came from the device's `clSVMAlloc` and no command uses it any more.
unsafe fn vendor_free(dev: &weft_vendors::opencl::OpenClDevice, p: *mut c_void) {
    let _submitting = dev.lock_submissions();
    // SAFETY: the caller's contract.
    let _ = unsafe { vr::svm_free(dev.context().as_raw(), p) };
}

/// Free an allocation (nothing for pointers Weft did not hand out).
fn free(c: &Context, p: usize) {
    let known = {
        let mut t = table();
        t.allocs.iter().position(|a| a.at == p).map(|i| t.allocs.swap_remove(i))
    };
    if let Some(a) = known
        && let Some(dev) = c.platform.real.first()
    {
        // A buffer over this allocation released before (as OpenCL requires) may still be
        // writing its data home (memory.rs): the memory outlives that write. (After the
        // removal above, no later release waits: the buffer must not outlive the memory.)
        for l in around(p, p + a.size).1 {
            l.wait();
        }
        if a.coarse
            && let Err(e) = host_map(&dev.1, p, a.size, false)
        {
            eprintln!("weft: clSVMFree: unmapping the coarse-grained allocation failed: {e}");
        }
        // SAFETY: `p` came from clSVMAlloc on this device's context; the application no
        // longer uses it (clSVMFree's contract).
        unsafe { vendor_free(&dev.1, p as *mut c_void) };
    }
}

/// # Safety
/// `p` null or an SVM pointer of `context` that no command uses any more.
#[cl_entrypoint(clSVMFree)]
unsafe fn svm_free(context: Handle, p: *mut c_void) {
    if let Ok(c) = icd::get::<Context>(context)
        && !p.is_null()
    {
        free(&c, p as usize);
    }
}

/// The wait list of an SVM command touching `ranges`: `waits`, plus a gate command (a host
/// task waiting for the write-back of released buffers over those ranges) when any is
/// pending.
fn gated(q: &Arc<Obj<Queue>>, mut waits: Vec<Arc<Obj<Event>>>, ranges: &[(usize, usize)]) -> ClResult<Vec<Arc<Obj<Event>>>> {
    let pending: Vec<Arc<Latch>> = ranges.iter().flat_map(|&(s, e)| around(s, e).1).collect();
    if pending.is_empty() {
        return Ok(waits);
    }
    let state = EventState::new_queued();
    let c = host_codelet("weft-svm-gate", &state, move |_| {
        for l in &pending {
            l.wait();
        }
    });
    let e = submit(q, &waits, CL_COMMAND_MARKER, state, TaskBuilder::new(&c), false)?;
    waits.push(e);
    Ok(waits)
}

/// An SVM command run as a host task over `views` (start, end, written): behind the gate
/// for buffers released over those ranges ([`gated`]), accessing the live buffers over them
/// ([`with_views`]), then `body`.
///
/// # Safety
/// `event` is null or writable; the ranges stay valid until the command completes.
#[allow(clippy::too_many_arguments)]
unsafe fn svm_command(
    q: &Arc<Obj<Queue>>,
    waits: Vec<Arc<Obj<Event>>>,
    name: &str,
    command: cl_uint,
    views: &[(usize, usize, bool)],
    body: impl Fn(&[usize]) + Send + Sync + 'static,
    blocking: bool,
    event: *mut Handle,
) -> ClResult<()> {
    let ranges: Vec<(usize, usize)> = views.iter().map(|&(s, e, _)| (s, e)).collect();
    let waits = gated(q, waits, &ranges)?;
    let state = EventState::new_queued();
    let c = host_codelet(name, &state, body);
    let b = with_views(TaskBuilder::new(&c), views);
    // SAFETY: the caller's contract.
    unsafe { finish_command(q, &waits, command, state, b, blocking, event) }
}

/// Access the data handles of live buffers over `ranges` (`write`: `RW`, else `R`), so core
/// brings their data home before the command.
fn with_views(mut b: TaskBuilder, ranges: &[(usize, usize, bool)]) -> TaskBuilder {
    let mut seen: Vec<(Arc<Obj<Mem>>, bool)> = Vec::new();
    for &(s, e, w) in ranges {
        for m in around(s, e).0 {
            let m = super::memory::root(&m);
            match seen.iter_mut().find(|x| Arc::ptr_eq(&x.0, &m)) {
                Some(x) => x.1 |= w,
                None => seen.push((m, w)),
            }
        }
    }
    for (m, w) in &seen {
        b = b.access(m.handle(), if *w { AccessMode::RW } else { AccessMode::R });
    }
    b
}

/// # Safety
/// OpenCL's contract for clEnqueueSVMMemcpy.
#[cl_entrypoint(clEnqueueSVMMemcpy)]
unsafe fn enqueue_svm_memcpy(cmd: Cmd, blocking: cl_bool, dst: *mut c_void, src: *const c_void, size: usize) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let (d, s) = (dst as usize, src as usize);
    // CL_INVALID_VALUE if dst_ptr or src_ptr is NULL; CL_MEM_COPY_OVERLAP if the values
    // specified for dst_ptr, src_ptr and size result in an overlapping copy.
    if d == 0 || s == 0 {
        return Err(CL_INVALID_VALUE);
    }
    if overlaps((d, d.saturating_add(size)), (s, s.saturating_add(size))) {
        return Err(CL_MEM_COPY_OVERLAP);
    }
    let views = [(s, s + size, false), (d, d + size, true)];
    let copy = move |_: &[usize]| {
        // SAFETY: both ranges are valid for `size` bytes until the command completes
        // (the application's contract).
        unsafe { weft_vendors::copy_host(s as *const u8, d as *mut u8, size) }
    };
    // SAFETY: the caller's contract.
    unsafe { svm_command(&qq, waits, "clEnqueueSVMMemcpy", CL_COMMAND_SVM_MEMCPY, &views, copy, is_true(blocking), event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueSVMMemFill.
#[cl_entrypoint(clEnqueueSVMMemFill)]
unsafe fn enqueue_svm_mem_fill(cmd: Cmd, ptr: *mut c_void, pattern: *const c_void, pattern_size: usize, size: usize) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let p = ptr as usize;
    // CL_INVALID_VALUE if svm_ptr is NULL [or] not aligned to pattern_size, pattern is
    // NULL, pattern_size is 0 or not one of {1, 2, 4, 8, ..., 128}, or size is not a
    // multiple of pattern_size.
    if p == 0
        || !pattern_size.is_power_of_two()
        || pattern_size > 128
        || !p.is_multiple_of(pattern_size)
        || !size.is_multiple_of(pattern_size)
    {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `pattern_size` readable bytes.
    let pat = unsafe { slice(pattern.cast::<u8>(), pattern_size) }?.to_vec();
    let fill = move |_: &[usize]| {
        for off in (0..size).step_by(pat.len()) {
            // SAFETY: `p..p + size` is writable until the command completes (the
            // application's contract).
            unsafe { std::ptr::copy_nonoverlapping(pat.as_ptr(), (p + off) as *mut u8, pat.len()) };
        }
    };
    // SAFETY: the caller's contract.
    unsafe { svm_command(&qq, waits, "clEnqueueSVMMemFill", CL_COMMAND_SVM_MEMFILL, &[(p, p + size, true)], fill, false, event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueSVMMap.
#[cl_entrypoint(clEnqueueSVMMap)]
unsafe fn enqueue_svm_map(cmd: Cmd, blocking: cl_bool, flags: cl_bitfield, ptr: *mut c_void, size: usize) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    let p = ptr as usize;
    // CL_INVALID_VALUE if svm_ptr is NULL, size is 0, or values specified in map_flags
    // are not valid.
    if p == 0 || size == 0 || flags & !(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 {
        return Err(CL_INVALID_VALUE);
    }
    let w = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0;
    // SAFETY: the caller's contract.
    unsafe { svm_command(&qq, waits, "clEnqueueSVMMap", CL_COMMAND_SVM_MAP, &[(p, p + size, w)], |_| {}, is_true(blocking), event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueSVMUnmap.
#[cl_entrypoint(clEnqueueSVMUnmap)]
unsafe fn enqueue_svm_unmap(cmd: Cmd, ptr: *mut c_void) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    // CL_INVALID_VALUE if svm_ptr is NULL.
    if ptr.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_SVM_UNMAP, EventState::new_queued(), TaskBuilder::empty(), false, event) }
}

pub type SvmFreeNotify = unsafe extern "C" fn(Handle, cl_uint, *mut *mut c_void, *mut c_void);

/// # Safety
/// OpenCL's contract for clEnqueueSVMFree.
#[cl_entrypoint(clEnqueueSVMFree)]
unsafe fn enqueue_svm_free(
    cmd: Cmd,
    num: cl_uint,
    ptrs: *mut *mut c_void,
    notify: Option<SvmFreeNotify>,
    user: *mut c_void,
) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    // CL_INVALID_VALUE if num_svm_pointers is 0 and svm_pointers is non-NULL, or if
    // svm_pointers is NULL and num_svm_pointers is not 0.
    if (num == 0) != ptrs.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `num` pointers.
    let list_: Vec<usize> = unsafe { slice(ptrs.cast_const(), num as usize) }?.iter().map(|&p| p as usize).collect();
    // After the write-back of buffers released over the memory (`free` would wait for
    // it on a worker).
    let ranges: Vec<(usize, usize)> = list_.iter().filter_map(|&p| allocation_of(p)).map(|(a, n)| (a, a + n)).collect();
    let waits = gated(&qq, waits, &ranges)?;
    let raw_list = ptrs as usize;
    let (qh, user) = (icd::handle_of(&qq) as usize, user as usize);
    let ctx = qq.context.clone();
    let state = EventState::new_queued();
    let c = host_codelet("clEnqueueSVMFree", &state, move |_| match notify {
        // SAFETY: the application's callback, with the arguments it expects.
        Some(f) => unsafe { f(qh as Handle, num, raw_list as *mut *mut c_void, user as *mut c_void) },
        None => list_.iter().filter(|&&p| p != 0).for_each(|&p| free(&ctx, p)),
    });
    // SAFETY: the caller's contract.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_SVM_FREE, state, TaskBuilder::new(&c), false, event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueSVMMigrateMem.
#[cl_entrypoint(clEnqueueSVMMigrateMem)]
unsafe fn enqueue_svm_migrate_mem(
    cmd: Cmd,
    num: cl_uint,
    ptrs: *const *const c_void,
    sizes: *const usize,
    flags: cl_bitfield,
) -> ClResult<()> {
    let Cmd { q: qq, waits, event } = cmd;
    // CL_INVALID_VALUE if num_svm_pointers is zero or svm_pointers is NULL.
    if num == 0 || ptrs.is_null() || flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0 {
        return Err(CL_INVALID_VALUE);
    }
    let _ = sizes;
    // A hint only: the SVM data never moves.
    let e = submit(&qq, &waits, CL_COMMAND_SVM_MIGRATE_MEM, EventState::new_queued(), TaskBuilder::empty(), false)?;
    // SAFETY: the caller's contract.
    unsafe { hand_out(&e, event) };
    Ok(())
}

/// The wait list of a kernel launch on `q` after `waits` that takes SVM pointers `ptrs`
/// and buffers over SVM memory `views` (root buffers): `waits`, plus a gate when one is
/// needed. The gate is a host task after `waits` (and an in-order queue's previous
/// command) that waits for the write-back of released buffers over the memory the kernel
/// touches, and accesses (`RW`) the live buffers over that memory other than the kernel's
/// own, so that core brings their data home (into the SVM memory) before the kernel and
/// fetches it again after.
///
/// A kernel taking a buffer over SVM memory always gets a gate, for its predecessors'
/// *completion*: core launches a task pinned to a device right behind its predecessor on
/// that device's in-order queue, without waiting for it (`RuntimeInner::launched`), and
/// then fetches the task's buffers from their homes on another queue. Core orders that
/// fetch after every task writing the buffer's handle, but a kernel taking the SVM pointer
/// writes the buffer's home behind core's back: fetched early, the buffer held the data
/// from before that kernel, and its write-back then overwrote that kernel's results
/// (pyopencl's `test_coarse_grain_svm`: 34 where 68 was due, issue 32). The gate runs on a
/// CPU worker, so it starts only once every predecessor has completed, and the kernel only
/// after the gate. It costs a host task per launch taking such a buffer.
pub fn kernel_waits(
    q: &Arc<Obj<Queue>>,
    waits: &[Arc<Obj<Event>>],
    ptrs: &[usize],
    views: &[Arc<Obj<Mem>>],
) -> ClResult<Vec<Arc<Obj<Event>>>> {
    let mut ranges: Vec<(usize, usize)> = ptrs.iter().filter_map(|&p| allocation_of(p)).map(|(a, n)| (a, a + n)).collect();
    ranges.extend(views.iter().map(|m| (m.host_ptr, m.host_ptr + m.size)));
    let mut home: Vec<Arc<Obj<Mem>>> = Vec::new();
    let mut pending: Vec<Arc<Latch>> = Vec::new();
    for &(s, e) in &ranges {
        let (live, rel) = around(s, e);
        for m in live {
            let m = super::memory::root(&m);
            if !views.iter().chain(home.iter()).any(|x| Arc::ptr_eq(x, &m)) {
                home.push(m);
            }
        }
        pending.extend(rel);
    }
    // An out-of-order queue's kernel without a wait list follows no command (but its
    // queue's last barrier, an empty task, which completes after what it follows).
    let barrier = !views.is_empty() && (q.in_order() || !waits.is_empty());
    if pending.is_empty() && home.is_empty() && !barrier {
        return Ok(waits.to_vec());
    }
    let state = EventState::new_queued();
    let c = host_codelet("weft-svm-gate", &state, move |_| {
        for l in &pending {
            l.wait();
        }
    });
    let mut b = TaskBuilder::new(&c);
    for m in &home {
        b = b.access(m.handle(), AccessMode::RW);
    }
    let e = submit(q, waits, CL_COMMAND_MARKER, state, b, false)?;
    let mut w = waits.to_vec();
    w.push(e);
    Ok(w)
}
