//! Fallible, still-raw OpenCL calls: one function per entry point, each returning
//! `Result<_, ClError>`, each reaching the vendor through the dispatch table of its first
//! object argument (exactly what the ocl-icd loader does).
//!
//! **Owns**: the size/value dance of `clGet*Info`, turning `errcode_ret` and null results
//! into errors, and null dispatch tables or slots into [`ClError`]s instead of crashes.
//! **Does not own**: lifetimes (see `safe`); these functions neither retain nor release
//! unless their name says so.
//!
//! # Safety (of every `unsafe fn` here)
//! Every handle argument must be null or a live object of an ICD-compliant vendor (its
//! first word points to a `cl_icd_dispatch` that outlives the call; vendors are never
//! unloaded, see `loader`). Pointers and lengths passed through must satisfy the OpenCL
//! specification of the call. A null handle or table is reported as the call's
//! `CL_INVALID_*` code; a vendor that is not ICD-compliant cannot be detected.

use super::sys::*;
use std::ffi::{CStr, c_void};
use std::fmt;
use std::ptr::{null, null_mut};

/// Not an OpenCL code: the vendor broke the ICD contract (missing dispatch slot, success
/// with a null object, inconsistent sizes). Far from every code Khronos assigned.
pub const WEFT_BAD_VENDOR: cl_int = -10_000;

/// An OpenCL error code; `Display` shows its name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClError(pub cl_int);

impl ClError {
    pub fn name(self) -> &'static str {
        super::conv::error_name(self.0)
    }
}

impl fmt::Display for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl fmt::Debug for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ClError {}

pub type ClResult<T> = Result<T, ClError>;

/// Object kinds that carry a dispatch table, with the code for "not a valid one".
pub trait Object {
    const INVALID: cl_int;
}
macro_rules! objects {
    ($($obj:ident => $code:ident),* $(,)?) => {$(impl Object for $obj { const INVALID: cl_int = $code; })*};
}
objects! {
    _cl_platform_id => CL_INVALID_PLATFORM,
    _cl_device_id => CL_INVALID_DEVICE,
    _cl_context => CL_INVALID_CONTEXT,
    _cl_command_queue => CL_INVALID_COMMAND_QUEUE,
    _cl_mem => CL_INVALID_MEM_OBJECT,
    _cl_program => CL_INVALID_PROGRAM,
    _cl_kernel => CL_INVALID_KERNEL,
    _cl_event => CL_INVALID_EVENT,
    _cl_sampler => CL_INVALID_SAMPLER,
}

/// The dispatch table of `obj`.
///
/// # Safety
/// `obj` is null or a live object of an ICD-compliant vendor.
pub unsafe fn dispatch<'a, O: Object>(obj: *mut O) -> ClResult<&'a cl_icd_dispatch> {
    if obj.is_null() {
        return Err(ClError(O::INVALID));
    }
    // SAFETY: a live ICD object starts with a pointer to its vendor's dispatch table.
    let table = unsafe { *obj.cast::<*const cl_icd_dispatch>() };
    if table.is_null() {
        return Err(ClError(O::INVALID));
    }
    // SAFETY: the table lives as long as the vendor library, which is never unloaded.
    Ok(unsafe { &*table })
}

/// Call slot `$slot` of `$obj`'s dispatch table; a null slot is `WEFT_BAD_VENDOR`.
macro_rules! cl_call {
    ($obj:expr => $slot:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: the enclosing `unsafe fn`'s caller guarantees `$obj` is null or live
        // (module doc, "Safety").
        // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch($obj) }?;
        let f = table.$slot.ok_or(ClError(WEFT_BAD_VENDOR))?;
        // SAFETY: the slot has the signature of `cl_icd.h` (checked by sys's layout test);
        // the caller guarantees the arguments meet the call's specification.
        unsafe { f($($arg),*) }
    }};
}

fn check(code: cl_int) -> ClResult<()> {
    if code == CL_SUCCESS { Ok(()) } else { Err(ClError(code)) }
}

/// A created object: `errcode_ret` first, then a null object despite success.
fn check_obj<T>(obj: *mut T, err: cl_int) -> ClResult<*mut T> {
    check(err)?;
    if obj.is_null() { Err(ClError(WEFT_BAD_VENDOR)) } else { Ok(obj) }
}

/// The `clGet*Info` dance: ask the size, then the value.
fn info_bytes(mut query: impl FnMut(usize, *mut c_void, *mut usize) -> cl_int) -> ClResult<Vec<u8>> {
    let mut size = 0usize;
    check(query(0, null_mut(), &mut size))?;
    let mut buf = vec![0u8; size];
    if size > 0 {
        check(query(size, buf.as_mut_ptr().cast(), null_mut()))?;
    }
    Ok(buf)
}

/// A `char[]` info value as a string (trailing NULs dropped, invalid UTF-8 replaced).
pub fn bytes_to_string(mut b: Vec<u8>) -> String {
    while b.last() == Some(&0) {
        b.pop();
    }
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A scalar info value (`cl_uint`, `cl_ulong`, `size_t`, …) from its bytes.
pub fn bytes_to_u64(b: &[u8]) -> ClResult<u64> {
    match b.len() {
        4 => Ok(u32::from_ne_bytes(b.try_into().expect("4 bytes")) as u64),
        8 => Ok(u64::from_ne_bytes(b.try_into().expect("8 bytes"))),
        _ => Err(ClError(WEFT_BAD_VENDOR)),
    }
}

fn wait_list(events: &[cl_event]) -> (cl_uint, *const cl_event) {
    if events.is_empty() { (0, null()) } else { (events.len() as cl_uint, events.as_ptr()) }
}

// ---- platforms and devices ----

/// Platforms of one vendor, through its `clIcdGetPlatformIDsKHR`.
///
/// # Safety
/// `f` is the vendor's `clIcdGetPlatformIDsKHR`.
pub unsafe fn icd_get_platform_ids(f: clIcdGetPlatformIDsKHR_fn) -> ClResult<Vec<cl_platform_id>> {
    let mut n: cl_uint = 0;
    // SAFETY: the count-only form of the call; `n` is writable.
    match unsafe { f(0, null_mut(), &mut n) } {
        CL_SUCCESS => {}
        CL_PLATFORM_NOT_FOUND_KHR => return Ok(Vec::new()),
        e => return Err(ClError(e)),
    }
    let mut ids = vec![null_mut(); n as usize];
    if n > 0 {
        // SAFETY: `ids` has room for `n` handles.
        check(unsafe { f(n, ids.as_mut_ptr(), &mut n) })?;
        ids.truncate(n as usize);
    }
    Ok(ids)
}

/// # Safety
/// See the module doc.
pub unsafe fn get_platform_info(p: cl_platform_id, param: cl_platform_info) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(p) }?;
    let f = table.clGetPlatformInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: `p` is live (caller); the dance passes a buffer of the size it reports.
    info_bytes(|n, v, r| unsafe { f(p, param, n, v, r) })
}

/// Devices of `device_type` on a platform; none is an empty list, not an error.
///
/// # Safety
/// See the module doc.
pub unsafe fn get_device_ids(p: cl_platform_id, device_type: cl_device_type) -> ClResult<Vec<cl_device_id>> {
    let mut n: cl_uint = 0;
    match cl_call!(p => clGetDeviceIDs(p, device_type, 0, null_mut(), &mut n)) {
        CL_SUCCESS => {}
        CL_DEVICE_NOT_FOUND => return Ok(Vec::new()),
        e => return Err(ClError(e)),
    }
    let mut ids = vec![null_mut(); n as usize];
    if n > 0 {
        check(cl_call!(p => clGetDeviceIDs(p, device_type, n, ids.as_mut_ptr(), &mut n)))?;
        ids.truncate(n as usize);
    }
    Ok(ids)
}

/// # Safety
/// See the module doc.
pub unsafe fn get_device_info(d: cl_device_id, param: cl_device_info) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(d) }?;
    let f = table.clGetDeviceInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(d, param, n, v, r) })
}

// ---- contexts and queues ----

/// A context on `devices` (all of `platform`), dispatched through the first device as the
/// loader does.
///
/// # Safety
/// See the module doc; `devices` is non-empty.
pub unsafe fn create_context(platform: cl_platform_id, devices: &[cl_device_id]) -> ClResult<cl_context> {
    let first = *devices.first().ok_or(ClError(CL_INVALID_VALUE))?;
    let props = [CL_CONTEXT_PLATFORM, platform as cl_context_properties, 0];
    let mut err = CL_SUCCESS;
    let ctx = cl_call!(first => clCreateContext(props.as_ptr(), devices.len() as cl_uint, devices.as_ptr(), None, null_mut(), &mut err));
    check_obj(ctx, err)
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_context(c: cl_context) -> ClResult<()> {
    check(cl_call!(c => clRetainContext(c)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_context(c: cl_context) -> ClResult<()> {
    check(cl_call!(c => clReleaseContext(c)))
}

/// # Safety
/// See the module doc.
pub unsafe fn create_command_queue(c: cl_context, d: cl_device_id, props: cl_command_queue_properties) -> ClResult<cl_command_queue> {
    let mut err = CL_SUCCESS;
    let q = cl_call!(c => clCreateCommandQueue(c, d, props, &mut err));
    check_obj(q, err)
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_command_queue(q: cl_command_queue) -> ClResult<()> {
    check(cl_call!(q => clRetainCommandQueue(q)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_command_queue(q: cl_command_queue) -> ClResult<()> {
    check(cl_call!(q => clReleaseCommandQueue(q)))
}

/// # Safety
/// See the module doc.
pub unsafe fn flush(q: cl_command_queue) -> ClResult<()> {
    check(cl_call!(q => clFlush(q)))
}

/// # Safety
/// See the module doc.
pub unsafe fn finish(q: cl_command_queue) -> ClResult<()> {
    check(cl_call!(q => clFinish(q)))
}

// ---- memory objects ----

/// # Safety
/// See the module doc; `host_ptr` as `flags` require.
pub unsafe fn create_buffer(c: cl_context, flags: cl_mem_flags, size: usize, host_ptr: *mut c_void) -> ClResult<cl_mem> {
    let mut err = CL_SUCCESS;
    let m = cl_call!(c => clCreateBuffer(c, flags, size, host_ptr, &mut err));
    check_obj(m, err)
}

/// A sub-buffer of `m` covering `origin..origin + size` (`CL_BUFFER_CREATE_TYPE_REGION`).
///
/// # Safety
/// See the module doc.
pub unsafe fn create_sub_buffer(m: cl_mem, flags: cl_mem_flags, origin: usize, size: usize) -> ClResult<cl_mem> {
    const CL_BUFFER_CREATE_TYPE_REGION: cl_uint = 0x1220;
    let region = [origin, size];
    let mut err = CL_SUCCESS;
    let sub = cl_call!(m => clCreateSubBuffer(m, flags, CL_BUFFER_CREATE_TYPE_REGION, region.as_ptr().cast(), &mut err));
    check_obj(sub, err)
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_mem_object(m: cl_mem) -> ClResult<()> {
    check(cl_call!(m => clRetainMemObject(m)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_mem_object(m: cl_mem) -> ClResult<()> {
    check(cl_call!(m => clReleaseMemObject(m)))
}

/// An image of `c` (no host pointer: Weft fills it by copies).
///
/// # Safety
/// See the module doc.
pub unsafe fn create_image(c: cl_context, flags: cl_mem_flags, format: &cl_image_format, desc: &cl_image_desc) -> ClResult<cl_mem> {
    let mut err = CL_SUCCESS;
    let m = cl_call!(c => clCreateImage(c, flags, format, desc, null_mut(), &mut err));
    check_obj(m, err)
}

/// The image formats `c` supports for `flags` and `image_type`.
///
/// # Safety
/// See the module doc.
pub unsafe fn get_supported_image_formats(c: cl_context, flags: cl_mem_flags, image_type: cl_uint) -> ClResult<Vec<cl_image_format>> {
    let mut n: cl_uint = 0;
    check(cl_call!(c => clGetSupportedImageFormats(c, flags, image_type, 0, null_mut(), &mut n)))?;
    let mut v = vec![cl_image_format::default(); n as usize];
    if n > 0 {
        check(cl_call!(c => clGetSupportedImageFormats(c, flags, image_type, n, v.as_mut_ptr(), null_mut())))?;
    }
    Ok(v)
}

/// # Safety
/// See the module doc.
pub unsafe fn create_sampler(c: cl_context, normalized: bool, addressing: cl_uint, filter: cl_uint) -> ClResult<cl_sampler> {
    let mut err = CL_SUCCESS;
    let s = cl_call!(c => clCreateSampler(c, normalized as cl_bool, addressing, filter, &mut err));
    check_obj(s, err)
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_sampler(s: cl_sampler) -> ClResult<()> {
    check(cl_call!(s => clRetainSampler(s)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_sampler(s: cl_sampler) -> ClResult<()> {
    check(cl_call!(s => clReleaseSampler(s)))
}

/// Shared virtual memory of `c` (null when the vendor refuses).
///
/// # Safety
/// See the module doc.
pub unsafe fn svm_alloc(c: cl_context, flags: cl_bitfield, size: usize, alignment: cl_uint) -> ClResult<*mut c_void> {
    Ok(cl_call!(c => clSVMAlloc(c, flags, size, alignment)))
}

/// # Safety
/// See the module doc; `p` came from [`svm_alloc`] on `c` and nothing uses it any more.
pub unsafe fn svm_free(c: cl_context, p: *mut c_void) -> ClResult<()> {
    cl_call!(c => clSVMFree(c, p));
    Ok(())
}

/// # Safety
/// See the module doc; `p` is null or within an SVM allocation of the kernel's context.
pub unsafe fn set_kernel_arg_svm_pointer(k: cl_kernel, index: cl_uint, p: *const c_void) -> ClResult<()> {
    check(cl_call!(k => clSetKernelArgSVMPointer(k, index, p)))
}

/// # Safety
/// See the module doc; `value` readable for `size` bytes, as `param` requires.
pub unsafe fn set_kernel_exec_info(k: cl_kernel, param: cl_uint, size: usize, value: *const c_void) -> ClResult<()> {
    check(cl_call!(k => clSetKernelExecInfo(k, param, size, value)))
}

// ---- enqueued commands (all non-blocking; each returns its event) ----

/// Map `size` bytes of coarse-grained SVM memory at `p` for host access (`flags`:
/// `CL_MAP_READ` / `CL_MAP_WRITE`), non-blocking: the host may touch it once the returned
/// event completes.
///
/// # Safety
/// See the module doc; `p..p + size` lies in an SVM allocation of the queue's context.
pub unsafe fn enqueue_svm_map(q: cl_command_queue, flags: cl_bitfield, p: *mut c_void, size: usize) -> ClResult<cl_event> {
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueSVMMap(q, 0, flags, p, size, 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// Unmap SVM memory mapped by [`enqueue_svm_map`]: the device sees the host's writes once
/// the returned event completes.
///
/// # Safety
/// See the module doc; `p` was mapped on this queue's context.
pub unsafe fn enqueue_svm_unmap(q: cl_command_queue, p: *mut c_void) -> ClResult<cl_event> {
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueSVMUnmap(q, p, 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// Copy `region` (pixels) of buffer `src` from `offset` (tightly packed) into image `dst`.
///
/// # Safety
/// See the module doc.
pub unsafe fn enqueue_copy_buffer_to_image(
    q: cl_command_queue,
    src: cl_mem,
    dst: cl_mem,
    offset: usize,
    region: &[usize; 3],
) -> ClResult<cl_event> {
    let origin = [0usize; 3];
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueCopyBufferToImage(q, src, dst, offset, origin.as_ptr(), region.as_ptr(), 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// Copy `region` (pixels) of image `src` into buffer `dst` at `offset` (tightly packed).
///
/// # Safety
/// See the module doc.
pub unsafe fn enqueue_copy_image_to_buffer(
    q: cl_command_queue,
    src: cl_mem,
    dst: cl_mem,
    region: &[usize; 3],
    offset: usize,
) -> ClResult<cl_event> {
    let origin = [0usize; 3];
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueCopyImageToBuffer(q, src, dst, origin.as_ptr(), region.as_ptr(), offset, 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc; `ptr` is writable for `size` bytes until the event completes.
pub unsafe fn enqueue_read_buffer(
    q: cl_command_queue,
    m: cl_mem,
    offset: usize,
    size: usize,
    ptr: *mut c_void,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueReadBuffer(q, m, CL_FALSE, offset, size, ptr, n, w, &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc; `ptr` is readable for `size` bytes until the event completes.
pub unsafe fn enqueue_write_buffer(
    q: cl_command_queue,
    m: cl_mem,
    offset: usize,
    size: usize,
    ptr: *const c_void,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueWriteBuffer(q, m, CL_FALSE, offset, size, ptr, n, w, &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc.
pub unsafe fn enqueue_copy_buffer(
    q: cl_command_queue,
    src: cl_mem,
    dst: cl_mem,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueCopyBuffer(q, src, dst, src_offset, dst_offset, size, n, w, &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// Origins, region and pitches of a `*BufferRect` call, in bytes: `a` is the buffer side
/// (or the source of a buffer-to-buffer copy), `b` the host side (or the destination).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RectArgs {
    pub a_origin: [usize; 3],
    pub b_origin: [usize; 3],
    pub region: [usize; 3],
    pub a_pitch: [usize; 2],
    pub b_pitch: [usize; 2],
}

/// # Safety
/// See the module doc; `ptr` is writable over the host rectangle until the event completes.
pub unsafe fn enqueue_read_buffer_rect(
    q: cl_command_queue,
    m: cl_mem,
    r: &RectArgs,
    ptr: *mut c_void,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueReadBufferRect(
        q, m, CL_FALSE, r.a_origin.as_ptr(), r.b_origin.as_ptr(), r.region.as_ptr(),
        r.a_pitch[0], r.a_pitch[1], r.b_pitch[0], r.b_pitch[1], ptr, n, w, &mut ev
    )))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc; `ptr` is readable over the host rectangle until the event completes.
pub unsafe fn enqueue_write_buffer_rect(
    q: cl_command_queue,
    m: cl_mem,
    r: &RectArgs,
    ptr: *const c_void,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueWriteBufferRect(
        q, m, CL_FALSE, r.a_origin.as_ptr(), r.b_origin.as_ptr(), r.region.as_ptr(),
        r.a_pitch[0], r.a_pitch[1], r.b_pitch[0], r.b_pitch[1], ptr, n, w, &mut ev
    )))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc.
pub unsafe fn enqueue_copy_buffer_rect(
    q: cl_command_queue,
    src: cl_mem,
    dst: cl_mem,
    r: &RectArgs,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueCopyBufferRect(
        q, src, dst, r.a_origin.as_ptr(), r.b_origin.as_ptr(), r.region.as_ptr(),
        r.a_pitch[0], r.a_pitch[1], r.b_pitch[0], r.b_pitch[1], n, w, &mut ev
    )))?;
    check_obj(ev, CL_SUCCESS)
}

/// # Safety
/// See the module doc.
pub unsafe fn enqueue_fill_buffer(
    q: cl_command_queue,
    m: cl_mem,
    pattern: &[u8],
    offset: usize,
    size: usize,
    wait: &[cl_event],
) -> ClResult<cl_event> {
    let (n, w) = wait_list(wait);
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueFillBuffer(q, m, pattern.as_ptr().cast(), pattern.len(), offset, size, n, w, &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// An NDRange's dimensions: 1 to 3, with the offset and local size (if given) as many.
fn work_dims(offset: Option<&[usize]>, global: &[usize], local: Option<&[usize]>) -> ClResult<()> {
    let n = global.len();
    if n == 0 || n > 3 || local.is_some_and(|l| l.len() != n) || offset.is_some_and(|o| o.len() != n) {
        return Err(ClError(CL_INVALID_WORK_DIMENSION));
    }
    Ok(())
}

/// Launch `k` over `global` from `offset` (`None`: zero), in work-groups of `local` (`None`:
/// the vendor's choice); `offset` and `local` have as many dimensions as `global`.
///
/// # Safety
/// See the module doc; every memory object set as an argument of `k` stays alive until
/// the event completes.
pub unsafe fn enqueue_nd_range_kernel(
    q: cl_command_queue,
    k: cl_kernel,
    offset: Option<&[usize]>,
    global: &[usize],
    local: Option<&[usize]>,
) -> ClResult<cl_event> {
    work_dims(offset, global, local)?;
    let mut ev = null_mut();
    let local = local.map_or(null(), |l| l.as_ptr());
    let offset = offset.map_or(null(), |o| o.as_ptr());
    check(cl_call!(q => clEnqueueNDRangeKernel(q, k, global.len() as cl_uint, offset, global.as_ptr(), local, 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

/// As [`enqueue_nd_range_kernel`], asking for no event (the command's completion is
/// learnt from a later command of the same in-order queue, e.g. a marker).
///
/// # Safety
/// As [`enqueue_nd_range_kernel`].
pub unsafe fn enqueue_nd_range_kernel_no_event(
    q: cl_command_queue,
    k: cl_kernel,
    offset: Option<&[usize]>,
    global: &[usize],
    local: Option<&[usize]>,
) -> ClResult<()> {
    work_dims(offset, global, local)?;
    let local = local.map_or(null(), |l| l.as_ptr());
    let offset = offset.map_or(null(), |o| o.as_ptr());
    check(cl_call!(q => clEnqueueNDRangeKernel(q, k, global.len() as cl_uint, offset, global.as_ptr(), local, 0, null(), null_mut())))
}

/// A marker after every command already in `q` (in order); its event.
///
/// # Safety
/// See the module doc.
pub unsafe fn enqueue_marker(q: cl_command_queue) -> ClResult<cl_event> {
    let mut ev = null_mut();
    check(cl_call!(q => clEnqueueMarkerWithWaitList(q, 0, null(), &mut ev)))?;
    check_obj(ev, CL_SUCCESS)
}

// ---- programs and kernels ----

/// # Safety
/// See the module doc.
pub unsafe fn create_program_with_source(c: cl_context, source: &str) -> ClResult<cl_program> {
    let strings = [source.as_ptr().cast()];
    let lengths = [source.len()];
    let mut err = CL_SUCCESS;
    let p = cl_call!(c => clCreateProgramWithSource(c, 1, strings.as_ptr(), lengths.as_ptr(), &mut err));
    check_obj(p, err)
}

/// A program for one device from a binary that `get_program_binary` returned.
///
/// # Safety
/// See the module doc.
pub unsafe fn create_program_with_binary(c: cl_context, d: cl_device_id, binary: &[u8]) -> ClResult<cl_program> {
    let devices = [d];
    let lengths = [binary.len()];
    let binaries = [binary.as_ptr()];
    let mut status = CL_SUCCESS;
    let mut err = CL_SUCCESS;
    let p = cl_call!(c => clCreateProgramWithBinary(c, 1, devices.as_ptr(), lengths.as_ptr(), binaries.as_ptr(), &mut status, &mut err));
    let p = check_obj(p, err)?;
    if status != CL_SUCCESS {
        // SAFETY: `p` was just created and is released once.
        let _ = unsafe { release_program(p) };
        return Err(ClError(status));
    }
    Ok(p)
}

/// Build synchronously (no callback) for `devices`.
///
/// # Safety
/// See the module doc.
pub unsafe fn build_program(p: cl_program, devices: &[cl_device_id], options: &CStr) -> ClResult<()> {
    check(cl_call!(p => clBuildProgram(p, devices.len() as cl_uint, devices.as_ptr(), options.as_ptr(), None, null_mut())))
}

/// Compile synchronously (no callback) for `devices`, with `headers` (programs holding
/// their source) included under `names`.
///
/// # Safety
/// See the module doc; `headers` and `names` have the same length.
pub unsafe fn compile_program(
    p: cl_program,
    devices: &[cl_device_id],
    options: &CStr,
    headers: &[cl_program],
    names: &[&CStr],
) -> ClResult<()> {
    let names: Vec<*const std::ffi::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let (hp, np) = if headers.is_empty() { (null(), null()) } else { (headers.as_ptr(), names.as_ptr()) };
    check(
        cl_call!(p => clCompileProgram(p, devices.len() as cl_uint, devices.as_ptr(), options.as_ptr(), headers.len() as cl_uint, hp, np, None, null_mut())),
    )
}

/// Link compiled programs of context `c` for `devices` (synchronously). On failure, the
/// error and the program the vendor returned anyway, if any (its build log says why).
///
/// # Safety
/// See the module doc; `inputs` are programs of `c`.
pub unsafe fn link_program(
    c: cl_context,
    devices: &[cl_device_id],
    options: &CStr,
    inputs: &[cl_program],
) -> Result<cl_program, (ClError, Option<cl_program>)> {
    let mut err = CL_SUCCESS;
    let mut link = || -> ClResult<cl_program> {
        Ok(
            cl_call!(c => clLinkProgram(c, devices.len() as cl_uint, devices.as_ptr(), options.as_ptr(), inputs.len() as cl_uint, inputs.as_ptr(), None, null_mut(), &mut err)),
        )
    };
    let p = link().map_err(|e| (e, None))?;
    match (err, p.is_null()) {
        (CL_SUCCESS, false) => Ok(p),
        (CL_SUCCESS, true) => Err((ClError(WEFT_BAD_VENDOR), None)),
        (e, null) => Err((ClError(e), (!null).then_some(p))),
    }
}

/// # Safety
/// See the module doc.
pub unsafe fn get_program_info(p: cl_program, param: cl_program_info) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(p) }?;
    let f = table.clGetProgramInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(p, param, n, v, r) })
}

/// # Safety
/// See the module doc.
pub unsafe fn get_program_build_info(p: cl_program, d: cl_device_id, param: cl_program_build_info) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(p) }?;
    let f = table.clGetProgramBuildInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(p, d, param, n, v, r) })
}

/// The binary of a program built for exactly one device (`CL_PROGRAM_BINARIES`); empty if
/// the vendor offers none.
///
/// # Safety
/// See the module doc.
pub unsafe fn get_program_binary(p: cl_program) -> ClResult<Vec<u8>> {
    // SAFETY: forwarded contract.
    let ndev = bytes_to_u64(&unsafe { get_program_info(p, CL_PROGRAM_NUM_DEVICES) }?)?;
    if ndev != 1 {
        return Err(ClError(CL_INVALID_PROGRAM));
    }
    // SAFETY: forwarded contract.
    let sizes = unsafe { get_program_info(p, CL_PROGRAM_BINARY_SIZES) }?;
    let size = bytes_to_u64(&sizes)? as usize;
    if size == 0 {
        return Ok(Vec::new());
    }
    let mut bin = vec![0u8; size];
    let ptrs = [bin.as_mut_ptr()];
    let ptr_bytes = std::mem::size_of_val(&ptrs);
    check(cl_call!(p => clGetProgramInfo(p, CL_PROGRAM_BINARIES, ptr_bytes, ptrs.as_ptr() as *mut c_void, null_mut())))?;
    Ok(bin)
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_program(p: cl_program) -> ClResult<()> {
    check(cl_call!(p => clRetainProgram(p)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_program(p: cl_program) -> ClResult<()> {
    check(cl_call!(p => clReleaseProgram(p)))
}

/// # Safety
/// See the module doc.
pub unsafe fn create_kernel(p: cl_program, name: &CStr) -> ClResult<cl_kernel> {
    let mut err = CL_SUCCESS;
    let k = cl_call!(p => clCreateKernel(p, name.as_ptr(), &mut err));
    check_obj(k, err)
}

/// # Safety
/// See the module doc; `value` is null or readable for `size` bytes, as the argument's
/// type requires (a `cl_mem` of the kernel's context for buffer arguments).
pub unsafe fn set_kernel_arg(k: cl_kernel, index: cl_uint, size: usize, value: *const c_void) -> ClResult<()> {
    check(cl_call!(k => clSetKernelArg(k, index, size, value)))
}

/// # Safety
/// See the module doc.
pub unsafe fn get_kernel_info(k: cl_kernel, param: cl_kernel_info) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(k) }?;
    let f = table.clGetKernelInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(k, param, n, v, r) })
}

/// `clGetKernelArgInfo` (`CL_KERNEL_ARG_INFO_NOT_AVAILABLE` when the vendor kept none).
///
/// # Safety
/// See the module doc.
pub unsafe fn get_kernel_arg_info(k: cl_kernel, index: cl_uint, param: cl_uint) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(k) }?;
    let f = table.clGetKernelArgInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(k, index, param, n, v, r) })
}

/// `clGetKernelWorkGroupInfo` for device `d` (of the kernel's program).
///
/// # Safety
/// See the module doc.
pub unsafe fn get_kernel_work_group_info(k: cl_kernel, d: cl_device_id, param: cl_uint) -> ClResult<Vec<u8>> {
    // SAFETY: the caller guarantees the handle is null or live (module doc).
    let table = unsafe { dispatch(k) }?;
    let f = table.clGetKernelWorkGroupInfo.ok_or(ClError(WEFT_BAD_VENDOR))?;
    // SAFETY: as in `get_platform_info`.
    info_bytes(|n, v, r| unsafe { f(k, d, param, n, v, r) })
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_kernel(k: cl_kernel) -> ClResult<()> {
    check(cl_call!(k => clRetainKernel(k)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_kernel(k: cl_kernel) -> ClResult<()> {
    check(cl_call!(k => clReleaseKernel(k)))
}

// ---- events ----

/// Blocks until every event completes (dispatched through the first).
///
/// # Safety
/// See the module doc.
pub unsafe fn wait_for_events(events: &[cl_event]) -> ClResult<()> {
    let Some(&first) = events.first() else { return Ok(()) };
    check(cl_call!(first => clWaitForEvents(events.len() as cl_uint, events.as_ptr())))
}

/// `CL_EVENT_COMMAND_EXECUTION_STATUS`: `CL_COMPLETE`, a later stage, or an error code.
///
/// # Safety
/// See the module doc.
pub unsafe fn get_event_status(e: cl_event) -> ClResult<cl_int> {
    let mut status: cl_int = 0;
    check(cl_call!(e => clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, size_of::<cl_int>(), (&raw mut status).cast(), null_mut())))?;
    Ok(status)
}

/// One of an event's `CL_PROFILING_COMMAND_*` times (the device's clock, nanoseconds).
///
/// # Safety
/// See the module doc.
pub unsafe fn get_event_profiling_info(e: cl_event, param: cl_uint) -> ClResult<u64> {
    let mut t: u64 = 0;
    check(cl_call!(e => clGetEventProfilingInfo(e, param, size_of::<u64>(), (&raw mut t).cast(), null_mut())))?;
    Ok(t)
}

/// # Safety
/// See the module doc; `callback` may run on any thread (including this one, before this
/// function returns) and must accept `user_data`.
pub unsafe fn set_event_callback(e: cl_event, status: cl_int, callback: EventNotify, user_data: *mut c_void) -> ClResult<()> {
    check(cl_call!(e => clSetEventCallback(e, status, Some(callback), user_data)))
}

/// # Safety
/// See the module doc.
pub unsafe fn retain_event(e: cl_event) -> ClResult<()> {
    check(cl_call!(e => clRetainEvent(e)))
}

/// # Safety
/// See the module doc; gives up one reference.
pub unsafe fn release_event(e: cl_event) -> ClResult<()> {
    check(cl_call!(e => clReleaseEvent(e)))
}
