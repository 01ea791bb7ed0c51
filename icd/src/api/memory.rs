//! Buffers: each `cl_mem` is one core data handle of raw bytes, registered on host memory
//! that is its home: the application's for `CL_MEM_USE_HOST_PTR`, else an allocation of
//! Weft's (128-byte aligned). Core keeps the replicas on the devices coherent; a command
//! that touches the buffer is a task accessing the handle.
//!
//! **Invariants**: the handle is unregistered (which waits for its tasks and writes the
//! data home) before the home allocation is freed; both happen on a thread of their own
//! once nothing references the buffer, because the last reference may be dropped inside
//! a task, where core refuses to wait.
//!
//! **The application's memory is given back before it may be freed.** A program frees a
//! `CL_MEM_USE_HOST_PTR` region as soon as its last release of the object (sub-buffers
//! included) has returned and the commands it enqueued on it have completed, and some
//! free it even before that last release (the CTS's buffers suite reassigns a wrapper
//! after freeing). So Weft moves the handle's home into memory of its own
//! ([`DataHandle::detach_home`]) at the later of those two moments: inside that last
//! release when no command on it is pending, else inside the completion of the last
//! pending command, before its event (or `clFinish`) shows it complete; the data is not
//! written back there (OpenCL defines the region's content only through maps and reads,
//! and PoCL and rusticl do not write it at release either). After that nothing of Weft's
//! reads or writes the region ([`HostClaim`]). The exception is a region inside an SVM
//! allocation, which is Weft's own memory and freed only by `clSVMFree` (which waits for
//! it): the data goes home there first, where the program reads it through the SVM
//! pointer (pyopencl's `as_buffer`).

use super::cl::*;
use super::context::Context;
use super::icd::{self, Obj, new_obj, publish};
use super::{ClResult, Info, cl_entrypoint, entry::retain_release, info_ptr, info_val};
use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use weft_core::data::{DataHandle, Shape};
use weft_core::task::TaskBuilder;

pub type MemNotify = unsafe extern "C" fn(Handle, *mut c_void);

/// Alignment of Weft-allocated buffer homes (and so of mapped pointers).
pub const HOME_ALIGN: usize = 128;

/// Memory Weft allocated for a buffer's home.
pub(super) struct HostAlloc {
    pub(super) ptr: *mut u8,
    layout: Layout,
}
// SAFETY: a plain allocation, owned by one `Mem`; accessed through core's data handle.
unsafe impl Send for HostAlloc {}
// SAFETY: as above; `HostAlloc` itself only frees.
unsafe impl Sync for HostAlloc {}

impl HostAlloc {
    pub(super) fn zeroed(size: usize) -> ClResult<HostAlloc> {
        let layout = Layout::from_size_align(size, HOME_ALIGN).map_err(|_| CL_INVALID_BUFFER_SIZE)?;
        // SAFETY: `size > 0` (checked by the caller), so the layout is not zero-sized.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() { Err(CL_MEM_OBJECT_ALLOCATION_FAILURE) } else { Ok(HostAlloc { ptr, layout }) }
    }
}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated by `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

pub struct Mem {
    pub context: Arc<Obj<Context>>,
    pub flags: cl_bitfield,
    pub size: usize,
    /// The application's pointer (`CL_MEM_USE_HOST_PTR`), else 0.
    pub host_ptr: usize,
    /// The home's address (where maps point).
    pub base: usize,
    handle: Option<DataHandle>,
    owned: Option<HostAlloc>,
    pub map_count: AtomicU32,
    /// Mapped ranges: (address, length).
    pub maps: Mutex<Vec<(usize, usize)>>,
    destructors: Mutex<Vec<(MemNotify, usize)>>,
    /// The handle value the application knew, for destructor callbacks.
    pub raw: Mutex<usize>,
    /// For a sub-buffer: its parent and its offset there. A sub-buffer is a view: its
    /// commands access the parent's data handle, at `offset`.
    pub parent: Option<Arc<Obj<Mem>>>,
    pub offset: usize,
    /// For an image: its format, shape and home layout (see `image.rs`); `None` for buffers.
    pub image: Option<super::image::ImageInfo>,
    /// A root object over the application's memory (`CL_MEM_USE_HOST_PTR`): when it is
    /// given back. Sub-buffers count in their root's.
    claim: Option<Arc<HostClaim>>,
    /// The properties list given to `clCreate{Buffer,Image}WithProperties`, when not null
    /// (`CL_MEM_PROPERTIES` returns it as given).
    pub properties: std::sync::OnceLock<Vec<u64>>,
}
crate::cl_object!(Mem, CL_INVALID_MEM_OBJECT);

/// When the application's memory under a `CL_MEM_USE_HOST_PTR` object is given back (see
/// the module doc): once no API reference to the object or its sub-buffers is left and no
/// command on it is pending, whichever comes last.
pub(super) struct HostClaim {
    handle: DataHandle,
    /// The region: (address, size).
    host: (usize, usize),
    st: Mutex<ClaimState>,
}

struct ClaimState {
    /// Commands on the object submitted and not yet completed.
    pending: usize,
    /// API references to the object and its sub-buffers, as objects: the root counts one
    /// until its count reaches 0, each live sub-buffer one.
    app_refs: usize,
    given_back: bool,
}

/// The claims of live objects, by data handle id: a command finds those of its buffers.
static CLAIMS: LazyLock<Mutex<HashMap<u64, Arc<HostClaim>>>> = LazyLock::new(Default::default);
/// `CLAIMS.len()`, read without the lock: a command of a program with no such object
/// pays one load.
static NCLAIMS: AtomicUsize = AtomicUsize::new(0);

/// The claims of a command's buffers, each counting the command as pending.
pub(super) type Claims = smallvec::SmallVec<[Arc<HostClaim>; 1]>;

impl HostClaim {
    fn new(handle: &DataHandle, host: (usize, usize)) -> Arc<HostClaim> {
        let c =
            Arc::new(HostClaim { handle: handle.clone(), host, st: Mutex::new(ClaimState { pending: 0, app_refs: 1, given_back: false }) });
        lock_claims().insert(handle.id(), c.clone());
        NCLAIMS.fetch_add(1, Ordering::Release);
        c
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ClaimState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more object (a sub-buffer) the application holds.
    fn app_retain(&self) {
        self.state().app_refs += 1;
    }

    /// The application released the last API reference of the root or of a sub-buffer.
    fn app_release(&self) {
        let mut st = self.state();
        st.app_refs -= 1;
        self.give_back_if_done(st);
    }

    fn give_back_if_done(&self, mut st: std::sync::MutexGuard<'_, ClaimState>) {
        if st.app_refs > 0 || st.pending > 0 || st.given_back {
            return;
        }
        st.given_back = true;
        // Under the claim's lock: a command submitted meanwhile (through a kernel argument
        // the program left set) waits here rather than find the home half moved.
        let svm = self.host.1 > 0 && super::svm::in_svm(self.host.0, self.host.0 + self.host.1);
        if let Err(e) = self.handle.detach_home(svm) {
            eprintln!("weft: giving a CL_MEM_USE_HOST_PTR region back: {e}");
        }
    }
}

fn lock_claims() -> std::sync::MutexGuard<'static, HashMap<u64, Arc<HostClaim>>> {
    CLAIMS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The claims on the data `b` accesses, each counting one more pending command: the
/// command must call [`claims_done`] when it completes, before its event shows it.
pub(super) fn claims_of(b: &TaskBuilder) -> Claims {
    let mut out = Claims::new();
    if NCLAIMS.load(Ordering::Acquire) == 0 {
        return out;
    }
    let map = lock_claims();
    for h in b.handles() {
        if let Some(c) = map.get(&h.id())
            && !out.iter().any(|x| Arc::ptr_eq(x, c))
        {
            c.state().pending += 1;
            out.push(c.clone());
        }
    }
    out
}

/// A command counted by [`claims_of`] completed (or was never submitted).
pub(super) fn claims_done(claims: &Claims) {
    for c in claims {
        let mut st = c.state();
        st.pending -= 1;
        c.give_back_if_done(st);
    }
}

impl Mem {
    /// A new root memory object (buffer or image) over `base`, published.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn publish_new(
        context: Arc<Obj<Context>>,
        flags: cl_bitfield,
        size: usize,
        host_ptr: usize,
        base: usize,
        handle: DataHandle,
        owned: Option<HostAlloc>,
        image: Option<super::image::ImageInfo>,
    ) -> Handle {
        let claim = (flags & CL_MEM_USE_HOST_PTR != 0).then(|| HostClaim::new(&handle, (host_ptr, size)));
        let m = new_obj(Mem {
            context,
            flags,
            size,
            host_ptr,
            base,
            claim,
            properties: std::sync::OnceLock::new(),
            handle: Some(handle),
            owned,
            map_count: AtomicU32::new(0),
            maps: Mutex::new(Vec::new()),
            destructors: Mutex::new(Vec::new()),
            raw: Mutex::new(0),
            parent: None,
            offset: 0,
            image,
        });
        let h = publish(&m);
        *m.raw.lock().unwrap_or_else(|e| e.into_inner()) = h as usize;
        h
    }

    /// A new view of root object `parent` (a sub-buffer, or with `image` a 1-D image
    /// buffer): `size` bytes at `offset`, accessing the parent's data handle; published.
    pub(super) fn publish_view(
        parent: &Arc<Obj<Mem>>,
        flags: cl_bitfield,
        size: usize,
        offset: usize,
        image: Option<super::image::ImageInfo>,
    ) -> Handle {
        let m = new_obj(Mem {
            context: parent.context.clone(),
            flags,
            size,
            host_ptr: if parent.host_ptr != 0 { parent.host_ptr + offset } else { 0 },
            base: parent.base + offset,
            handle: None,
            owned: None,
            map_count: AtomicU32::new(0),
            maps: Mutex::new(Vec::new()),
            destructors: Mutex::new(Vec::new()),
            raw: Mutex::new(0),
            parent: Some(parent.clone()),
            offset,
            image,
            claim: None,
            properties: std::sync::OnceLock::new(),
        });
        if let Some(c) = &parent.claim {
            c.app_retain();
        }
        let h = publish(&m);
        *m.raw.lock().unwrap_or_else(|e| e.into_inner()) = h as usize;
        h
    }

    pub fn handle(&self) -> &DataHandle {
        match &self.parent {
            Some(p) => p.handle(),
            None => self.handle.as_ref().expect("invariant: a live buffer has its handle"),
        }
    }

    /// Whether `offset..offset + size` of this buffer is the whole data handle.
    pub fn whole(&self, offset: usize, size: usize) -> bool {
        self.parent.is_none() && offset == 0 && size == self.size
    }
}

/// Whether the host may read (`read`) or write (`write`) `m`, as its `CL_MEM_HOST_*` flags
/// say: "CL_INVALID_OPERATION if clEnqueueReadBuffer is called on buffer which has been
/// created with CL_MEM_HOST_WRITE_ONLY or CL_MEM_HOST_NO_ACCESS" (and likewise for writes,
/// rect forms, maps and images).
pub fn host_access(m: &Mem, read: bool, write: bool) -> ClResult<()> {
    let no_read = m.flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS) != 0;
    let no_write = m.flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) != 0;
    if (read && no_read) || (write && no_write) { Err(CL_INVALID_OPERATION) } else { Ok(()) }
}

/// [`host_access`] for a map with `map_flags`.
pub fn host_map(m: &Mem, map_flags: cl_bitfield) -> ClResult<()> {
    host_access(m, map_flags & CL_MAP_READ != 0, map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0)
}

/// The root buffer of `m` (itself, or a sub-buffer's parent).
pub fn root(m: &Arc<Obj<Mem>>) -> Arc<Obj<Mem>> {
    m.parent.clone().unwrap_or_else(|| m.clone())
}

impl Drop for Mem {
    fn drop(&mut self) {
        let handle = self.handle.take();
        let owned = self.owned.take();
        let destructors = std::mem::take(&mut *self.destructors.lock().unwrap_or_else(|e| e.into_inner()));
        let raw = *self.raw.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = self.claim.take()
            && lock_claims().remove(&c.handle.id()).is_some()
        {
            NCLAIMS.fetch_sub(1, Ordering::Release);
        }
        // A buffer over SVM memory: SVM commands wait for its data to be home (svm.rs).
        let svm_release = if self.host_ptr != 0 && self.parent.is_none() {
            super::svm::releasing(self.host_ptr, self.host_ptr + self.size)
        } else {
            None
        };
        let finish = move || {
            if let Some(h) = handle
                && let Err(e) = h.unregister()
            {
                eprintln!("weft: releasing an OpenCL buffer: {e}");
            }
            drop(owned);
            if let Some(l) = &svm_release {
                super::svm::released(l);
            }
            call_destructors(destructors, raw);
        };
        if std::thread::Builder::new().name("weft-cl-release".into()).spawn(finish).is_err() {
            eprintln!("weft: could not start a thread to release an OpenCL buffer; its memory is leaked");
        }
    }
}

/// Destructor callbacks of a freed object (buffer, context), in reverse order of
/// registration, with the handle the application knew; a panic in one is contained.
pub(super) fn call_destructors(list: Vec<(MemNotify, usize)>, raw: usize) {
    for (f, user) in list.into_iter().rev() {
        // SAFETY: the application registered `f` with `user` for this object.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { f(raw as Handle, user as *mut c_void) }));
    }
}

const KNOWN_FLAGS: cl_bitfield = CL_MEM_READ_WRITE
    | CL_MEM_WRITE_ONLY
    | CL_MEM_READ_ONLY
    | CL_MEM_USE_HOST_PTR
    | CL_MEM_ALLOC_HOST_PTR
    | CL_MEM_COPY_HOST_PTR
    | CL_MEM_HOST_WRITE_ONLY
    | CL_MEM_HOST_READ_ONLY
    | CL_MEM_HOST_NO_ACCESS;

/// Check buffer flags (shared with sub-buffers): `CL_INVALID_VALUE` on unknown or
/// mutually exclusive bits.
pub fn check_flags(flags: cl_bitfield) -> ClResult<()> {
    let access = flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY);
    let host = flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS);
    // CL_INVALID_VALUE if values specified in flags are not valid as defined in the table.
    if flags & !KNOWN_FLAGS != 0
        || access.count_ones() > 1
        || host.count_ones() > 1
        || (flags & CL_MEM_USE_HOST_PTR != 0 && flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0)
    {
        return Err(CL_INVALID_VALUE);
    }
    Ok(())
}

/// # Safety
/// `host_ptr` as clCreateBuffer requires; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateBuffer)]
unsafe fn create_buffer(context: Handle, flags: cl_bitfield, size: usize, host_ptr: *mut c_void) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    check_flags(flags)?;
    let flags = if flags & (CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY) == 0 { flags | CL_MEM_READ_WRITE } else { flags };
    // CL_INVALID_BUFFER_SIZE if size is 0 [or] greater than CL_DEVICE_MAX_MEM_ALLOC_SIZE.
    let max = c.platform.real.iter().filter_map(|(_, d)| d.max_alloc_size()).min().unwrap_or(usize::MAX);
    if size == 0 || size > max {
        return Err(CL_INVALID_BUFFER_SIZE);
    }
    let uses = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0;
    // CL_INVALID_HOST_PTR if host_ptr is NULL and CL_MEM_USE_HOST_PTR or CL_MEM_COPY_HOST_PTR
    // are set in flags or if host_ptr is not NULL but CL_MEM_COPY_HOST_PTR or
    // CL_MEM_USE_HOST_PTR are not set in flags.
    if host_ptr.is_null() == uses {
        return Err(CL_INVALID_HOST_PTR);
    }
    let (base, owned) = if flags & CL_MEM_USE_HOST_PTR != 0 {
        (host_ptr.cast::<u8>(), None)
    } else {
        let a = HostAlloc::zeroed(size)?;
        if flags & CL_MEM_COPY_HOST_PTR != 0 {
            // SAFETY: the application's host_ptr is readable for `size` bytes (clCreateBuffer's
            // contract); `a` is a fresh allocation of `size` bytes.
            unsafe { weft_vendors::copy_host(host_ptr.cast::<u8>(), a.ptr, size) };
        }
        (a.ptr, Some(a))
    };
    let shape = Shape::Bytes { size };
    // SAFETY: `base` is valid for `size` bytes until the handle is unregistered (module
    // invariant: `Mem::drop` unregisters before freeing; the application keeps a
    // USE_HOST_PTR region alive while the buffer lives, as OpenCL requires).
    let handle = unsafe { c.platform.rt.register_raw(base, shape, shape.packed()) }.map_err(|_| CL_OUT_OF_RESOURCES)?;
    let host = if flags & CL_MEM_USE_HOST_PTR != 0 { host_ptr as usize } else { 0 };
    let h = Mem::publish_new(c.clone(), flags, size, host, base as usize, handle, owned, None);
    if host != 0 && super::svm::in_svm(host, host + size) {
        super::svm::note_view(&icd::get::<Mem>(h)?, host, host + size);
    }
    Ok(h)
}

/// A sub-buffer: a view of `origin..origin + size` of a (root) buffer.
///
/// # Safety
/// `info` null or a `cl_buffer_region`; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateSubBuffer)]
unsafe fn create_sub_buffer(buffer: Handle, flags: cl_bitfield, kind: cl_uint, info: *const c_void) -> ClResult<Handle> {
    let parent = icd::get::<Mem>(buffer)?;
    // CL_INVALID_MEM_OBJECT if buffer is not a valid buffer object or is a sub-buffer object.
    if parent.parent.is_some() || parent.image.is_some() {
        return Err(CL_INVALID_MEM_OBJECT);
    }
    check_flags(flags)?;
    // CL_INVALID_VALUE if [...] flags specifies CL_MEM_USE_HOST_PTR, CL_MEM_ALLOC_HOST_PTR or
    // CL_MEM_COPY_HOST_PTR; or buffer was created with CL_MEM_WRITE_ONLY and flags specifies
    // CL_MEM_READ_WRITE or CL_MEM_READ_ONLY, [...]
    let access = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
    if flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0
        || (parent.flags & CL_MEM_WRITE_ONLY != 0 && flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY) != 0)
        || (parent.flags & CL_MEM_READ_ONLY != 0 && flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY) != 0)
    {
        return Err(CL_INVALID_VALUE);
    }
    // CL_INVALID_VALUE if value specified in buffer_create_type is not valid [or]
    // buffer_create_info is NULL.
    if kind != CL_BUFFER_CREATE_TYPE_REGION || info.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `info` is a `cl_buffer_region` (two `usize`s).
    let region = unsafe { super::slice(info.cast::<usize>(), 2) }?;
    let (origin, size) = (region[0], region[1]);
    // CL_INVALID_BUFFER_SIZE if the size field of the cl_buffer_region structure is 0.
    if size == 0 {
        return Err(CL_INVALID_BUFFER_SIZE);
    }
    // CL_INVALID_VALUE if the region specified by the cl_buffer_region structure passed in
    // buffer_create_info is out of bounds in buffer.
    if origin.checked_add(size).is_none_or(|e| e > parent.size) {
        return Err(CL_INVALID_VALUE);
    }
    // CL_MISALIGNED_SUB_BUFFER_OFFSET if there are no devices in context associated with
    // buffer for which the origin field of the cl_buffer_region structure passed in
    // buffer_create_info is aligned to the CL_DEVICE_MEM_BASE_ADDR_ALIGN value.
    if origin % parent.context.platform.base_align() != 0 {
        return Err(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    }
    let inherited = if flags & access == 0 { parent.flags & access } else { flags & access };
    let host = if flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) == 0 {
        parent.flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
    } else {
        flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
    };
    let flags = inherited | host | (parent.flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR));
    Ok(Mem::publish_view(&parent, flags, size, origin, None))
}

/// The properties of `clCreate{Buffer,Image}WithProperties`: Weft supports none, so a list
/// is its terminator alone; `Ok(None)` for a null list.
///
/// # Safety
/// `properties` null or a 0-terminated list.
pub(super) unsafe fn no_properties(properties: *const u64) -> ClResult<Option<Vec<u64>>> {
    if properties.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    // CL_INVALID_PROPERTY if a property name in properties is not a supported property name.
    if unsafe { properties.read_unaligned() } != 0 {
        return Err(CL_INVALID_PROPERTY);
    }
    Ok(Some(vec![0]))
}

/// Record `props` (from [`no_properties`]) on the new object `h`.
pub(super) fn set_properties(h: Handle, props: Option<Vec<u64>>) -> ClResult<Handle> {
    if let Some(p) = props {
        let _ = icd::get::<Mem>(h)?.properties.set(p);
    }
    Ok(h)
}

/// # Safety
/// As `clCreateBuffer`; `properties` is null or a 0-terminated list.
#[cl_entrypoint(clCreateBufferWithProperties)]
unsafe fn create_buffer_with_properties(
    context: Handle,
    properties: *const u64,
    flags: cl_bitfield,
    size: usize,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    // SAFETY: the caller's contract: `properties` null or a 0-terminated list.
    let props = unsafe { no_properties(properties) }?;
    // SAFETY: the caller's contract (clCreateBuffer's).
    set_properties(unsafe { create_buffer(context, flags, size, host_ptr) }?, props)
}

retain_release!(Mem, clRetainMemObject => retain_mem_object);

#[cl_entrypoint(clReleaseMemObject)]
fn release_mem_object(mem: Handle) -> ClResult<()> {
    if let Some(m) = icd::release::<Mem>(mem)?
        && let Some(c) = &root(&m).claim
    {
        c.app_release();
    }
    Ok(())
}

/// # Safety
/// `f` callable with `user_data` from any thread.
#[cl_entrypoint(clSetMemObjectDestructorCallback)]
unsafe fn set_mem_object_destructor_callback(m: Arc<Obj<Mem>>, f: Option<MemNotify>, user_data: *mut c_void) -> ClResult<()> {
    // CL_INVALID_VALUE if pfn_notify is NULL.
    let f = f.ok_or(CL_INVALID_VALUE)?;
    m.destructors.lock().unwrap_or_else(|e| e.into_inner()).push((f, user_data as usize));
    Ok(())
}

#[cl_entrypoint(clGetMemObjectInfo)]
fn get_mem_object_info(m: Arc<Obj<Mem>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_MEM_TYPE => info_val(m.image.as_ref().map_or(CL_MEM_OBJECT_BUFFER, |i| i.kind)),
        CL_MEM_FLAGS => info_val(m.flags),
        CL_MEM_SIZE => info_val(m.size),
        CL_MEM_HOST_PTR => info_val(m.host_ptr),
        CL_MEM_MAP_COUNT => info_val(m.map_count.load(Ordering::Relaxed)),
        CL_MEM_REFERENCE_COUNT => info_val(icd::refcount_of(&m)),
        CL_MEM_CONTEXT => info_ptr(icd::handle_of(&m.context)),
        CL_MEM_ASSOCIATED_MEMOBJECT => info_ptr(m.parent.as_ref().map_or(std::ptr::null(), |p| icd::handle_of(p).cast_const())),
        CL_MEM_OFFSET => info_val(m.offset),
        // CL_MEM_USES_SVM_POINTER
        0x1109 => info_val::<cl_bool>((m.host_ptr != 0 && super::svm::in_svm(m.host_ptr, m.host_ptr + m.size)) as cl_bool),
        // CL_MEM_PROPERTIES: as given, or nothing when none were.
        0x110A => m.properties.get().map_or_else(Vec::new, |p| p.iter().flat_map(|v| v.to_ne_bytes()).collect()),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}
