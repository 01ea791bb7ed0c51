//! The ICD contract: the dispatch table every Weft object starts with, the tables of live
//! objects that validate handles, and the prefixed entry points `libweft_icd.so` forwards to.
//!
//! **Owns**: object identity and API reference counts. A handle is the address of the
//! [`Header`] of an [`Obj`] (held in an `Arc`); the table of its kind maps it to the
//! object, holding the API's reference (with the count `clRetain*`/`clRelease*` change),
//! so a handle is valid exactly while it is in that table. Weft's own internals (a queue's events, a kernel's program) hold further
//! `Arc`s, so an object released by the application lives until nothing uses it.
//! **Invariants**: the first word behind every handle is `&DISPATCH`, forever; every one of the 149
//! slots is filled ([`entry_points`] names each slot once, checked by a test), because
//! the ICD loader calls slots without checking them.

use super::cl::*;
use super::{ClResult, context, event, image, kernel, memory, platform, program, queue, sampler, stubs, svm};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ops::Deref;
use std::sync::{Arc, LazyLock, Mutex};
use weft_vendors::opencl::sys::{SLOT_COUNT, SLOT_NAMES};

/// `struct _cl_icd_dispatch`: one function pointer per slot, in `cl_icd.h` order.
#[repr(C)]
pub struct Dispatch(pub [*const c_void; SLOT_COUNT]);
// SAFETY: the table is immutable after construction and holds only code addresses.
unsafe impl Sync for Dispatch {}
// SAFETY: as above.
unsafe impl Send for Dispatch {}

/// What a handle points to: the dispatch pointer (the loader reads it). Headers live in
/// a pool and are never freed, so the loader can read the first word of a released or
/// stale handle without touching freed memory; a released header is reused only after
/// [`QUARANTINE`] other releases, so a stale handle is reported invalid unless that many
/// objects were released after it.
#[repr(C)]
pub struct Header {
    dispatch: &'static Dispatch,
}

/// Released headers waiting before reuse.
pub const QUARANTINE: usize = 1 << 16;

struct HeaderPool {
    free: std::collections::VecDeque<usize>,
}

static HEADERS: Mutex<HeaderPool> = Mutex::new(HeaderPool { free: std::collections::VecDeque::new() });

fn new_header() -> usize {
    let mut pool = HEADERS.lock().unwrap_or_else(|e| e.into_inner());
    if pool.free.len() > QUARANTINE
        && let Some(h) = pool.free.pop_front()
    {
        return h;
    }
    drop(pool);
    // Never freed (see `Header`).
    Box::into_raw(Box::new(Header { dispatch: &DISPATCH })) as usize
}

/// Every Weft CL object: its handle (a [`Header`]) and its state.
pub struct Obj<T> {
    handle: usize,
    inner: T,
}

impl<T> Drop for Obj<T> {
    fn drop(&mut self) {
        HEADERS.lock().unwrap_or_else(|e| e.into_inner()).free.push_back(self.handle);
    }
}

impl<T> Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

/// The live objects of one kind, each with its API reference count.
pub struct Registry<T> {
    live: Mutex<Live<T>>,
}

/// Address → (object, API reference count).
type Live<T> = HashMap<usize, (Arc<Obj<T>>, u32), weft_core::hash::BuildAddrHasher>;

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry { live: Mutex::new(HashMap::default()) }
    }
}

/// An object kind the application holds handles to.
pub trait ClObject: Sized + Send + Sync + 'static {
    /// The code for "not a valid object of this kind".
    const INVALID: cl_int;
    fn registry() -> &'static Registry<Self>;
}

#[macro_export]
#[doc(hidden)]
macro_rules! cl_object {
    ($t:ty, $code:expr) => {
        impl $crate::api::icd::ClObject for $t {
            const INVALID: $crate::api::cl::cl_int = $code;
            fn registry() -> &'static $crate::api::icd::Registry<Self> {
                static R: std::sync::LazyLock<$crate::api::icd::Registry<$t>> = std::sync::LazyLock::new(Default::default);
                &R
            }
        }
    };
}

fn lock<T>(r: &Registry<T>) -> std::sync::MutexGuard<'_, Live<T>> {
    r.live.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new object (not yet handed to the application).
pub fn new_obj<T>(inner: T) -> Arc<Obj<T>> {
    Arc::new(Obj { handle: new_header(), inner })
}

/// The handle of `o`.
pub fn handle_of<T>(o: &Arc<Obj<T>>) -> Handle {
    o.handle as Handle
}

/// Hand `o` to the application: its handle, with one API reference.
pub fn publish<T: ClObject>(o: &Arc<Obj<T>>) -> Handle {
    let h = handle_of(o);
    lock(T::registry()).entry(h as usize).and_modify(|e| e.1 += 1).or_insert_with(|| (o.clone(), 1));
    h
}

/// The live object behind `h`, or the kind's `CL_INVALID_*` code.
pub fn get<T: ClObject>(h: Handle) -> ClResult<Arc<Obj<T>>> {
    if h.is_null() {
        return Err(T::INVALID);
    }
    lock(T::registry()).get(&(h as usize)).map(|e| e.0.clone()).ok_or(T::INVALID)
}

/// Whether `h` is a live object of kind `T`.
pub fn is<T: ClObject>(h: Handle) -> bool {
    !h.is_null() && lock(T::registry()).contains_key(&(h as usize))
}

/// `clRetain*`.
pub fn retain<T: ClObject>(h: Handle) -> ClResult<()> {
    let mut live = lock(T::registry());
    let e = live.get_mut(&(h as usize)).ok_or(T::INVALID)?;
    e.1 = e.1.checked_add(1).ok_or(CL_OUT_OF_RESOURCES)?;
    Ok(())
}

/// `clRelease*`: the object, if that was the last API reference (its handle is dead now).
pub fn release<T: ClObject>(h: Handle) -> ClResult<Option<Arc<Obj<T>>>> {
    let mut live = lock(T::registry());
    let e = live.get_mut(&(h as usize)).ok_or(T::INVALID)?;
    e.1 -= 1;
    if e.1 == 0 { Ok(live.remove(&(h as usize)).map(|e| e.0)) } else { Ok(None) }
}

/// The API reference count of `o` (`CL_*_REFERENCE_COUNT`).
pub fn refcount_of<T: ClObject>(o: &Arc<Obj<T>>) -> cl_uint {
    refcount::<T>(handle_of(o))
}

/// The API reference count (`CL_*_REFERENCE_COUNT`).
pub fn refcount<T: ClObject>(h: Handle) -> cl_uint {
    lock(T::registry()).get(&(h as usize)).map_or(0, |e| e.1)
}

macro_rules! entry_points {
    ($($name:ident => $f:path,)*) => {
        /// Every dispatch slot's function, by name.
        pub fn entry_points() -> Vec<(&'static str, *const c_void)> {
            vec![$((stringify!($name), $f as *const c_void),)*]
        }
    };
}

entry_points! {
    clGetPlatformIDs => platform::clGetPlatformIDs,
    clGetPlatformInfo => platform::clGetPlatformInfo,
    clGetDeviceIDs => platform::clGetDeviceIDs,
    clGetDeviceInfo => platform::clGetDeviceInfo,
    clCreateContext => context::clCreateContext,
    clCreateContextFromType => context::clCreateContextFromType,
    clRetainContext => context::clRetainContext,
    clReleaseContext => context::clReleaseContext,
    clGetContextInfo => context::clGetContextInfo,
    clCreateCommandQueue => queue::clCreateCommandQueue,
    clRetainCommandQueue => queue::clRetainCommandQueue,
    clReleaseCommandQueue => queue::clReleaseCommandQueue,
    clGetCommandQueueInfo => queue::clGetCommandQueueInfo,
    clSetCommandQueueProperty => stubs::clSetCommandQueueProperty,
    clCreateBuffer => memory::clCreateBuffer,
    clCreateImage2D => image::clCreateImage2D,
    clCreateImage3D => image::clCreateImage3D,
    clRetainMemObject => memory::clRetainMemObject,
    clReleaseMemObject => memory::clReleaseMemObject,
    clGetSupportedImageFormats => image::clGetSupportedImageFormats,
    clGetMemObjectInfo => memory::clGetMemObjectInfo,
    clGetImageInfo => image::clGetImageInfo,
    clCreateSampler => sampler::clCreateSampler,
    clRetainSampler => sampler::clRetainSampler,
    clReleaseSampler => sampler::clReleaseSampler,
    clGetSamplerInfo => sampler::clGetSamplerInfo,
    clCreateProgramWithSource => program::clCreateProgramWithSource,
    clCreateProgramWithBinary => program::clCreateProgramWithBinary,
    clRetainProgram => program::clRetainProgram,
    clReleaseProgram => program::clReleaseProgram,
    clBuildProgram => program::clBuildProgram,
    clUnloadCompiler => stubs::clUnloadCompiler,
    clGetProgramInfo => program::clGetProgramInfo,
    clGetProgramBuildInfo => program::clGetProgramBuildInfo,
    clCreateKernel => kernel::clCreateKernel,
    clCreateKernelsInProgram => kernel::clCreateKernelsInProgram,
    clRetainKernel => kernel::clRetainKernel,
    clReleaseKernel => kernel::clReleaseKernel,
    clSetKernelArg => kernel::clSetKernelArg,
    clGetKernelInfo => kernel::clGetKernelInfo,
    clGetKernelWorkGroupInfo => kernel::clGetKernelWorkGroupInfo,
    clWaitForEvents => event::clWaitForEvents,
    clGetEventInfo => event::clGetEventInfo,
    clRetainEvent => event::clRetainEvent,
    clReleaseEvent => event::clReleaseEvent,
    clGetEventProfilingInfo => event::clGetEventProfilingInfo,
    clFlush => queue::clFlush,
    clFinish => queue::clFinish,
    clEnqueueReadBuffer => queue::clEnqueueReadBuffer,
    clEnqueueWriteBuffer => queue::clEnqueueWriteBuffer,
    clEnqueueCopyBuffer => queue::clEnqueueCopyBuffer,
    clEnqueueReadImage => image::clEnqueueReadImage,
    clEnqueueWriteImage => image::clEnqueueWriteImage,
    clEnqueueCopyImage => image::clEnqueueCopyImage,
    clEnqueueCopyImageToBuffer => image::clEnqueueCopyImageToBuffer,
    clEnqueueCopyBufferToImage => image::clEnqueueCopyBufferToImage,
    clEnqueueMapBuffer => queue::clEnqueueMapBuffer,
    clEnqueueMapImage => image::clEnqueueMapImage,
    clEnqueueUnmapMemObject => queue::clEnqueueUnmapMemObject,
    clEnqueueNDRangeKernel => kernel::clEnqueueNDRangeKernel,
    clEnqueueTask => kernel::clEnqueueTask,
    clEnqueueNativeKernel => stubs::clEnqueueNativeKernel,
    clEnqueueMarker => queue::clEnqueueMarker,
    clEnqueueWaitForEvents => queue::clEnqueueWaitForEvents,
    clEnqueueBarrier => queue::clEnqueueBarrier,
    clGetExtensionFunctionAddress => platform::clGetExtensionFunctionAddress,
    clCreateFromGLBuffer => stubs::clCreateFromGLBuffer,
    clCreateFromGLTexture2D => stubs::clCreateFromGLTexture2D,
    clCreateFromGLTexture3D => stubs::clCreateFromGLTexture3D,
    clCreateFromGLRenderbuffer => stubs::clCreateFromGLRenderbuffer,
    clGetGLObjectInfo => stubs::clGetGLObjectInfo,
    clGetGLTextureInfo => stubs::clGetGLTextureInfo,
    clEnqueueAcquireGLObjects => stubs::clEnqueueAcquireGLObjects,
    clEnqueueReleaseGLObjects => stubs::clEnqueueReleaseGLObjects,
    clGetGLContextInfoKHR => stubs::clGetGLContextInfoKHR,
    clGetDeviceIDsFromD3D10KHR => stubs::clGetDeviceIDsFromD3D10KHR,
    clCreateFromD3D10BufferKHR => stubs::clCreateFromD3D10BufferKHR,
    clCreateFromD3D10Texture2DKHR => stubs::clCreateFromD3D10Texture2DKHR,
    clCreateFromD3D10Texture3DKHR => stubs::clCreateFromD3D10Texture3DKHR,
    clEnqueueAcquireD3D10ObjectsKHR => stubs::clEnqueueAcquireD3D10ObjectsKHR,
    clEnqueueReleaseD3D10ObjectsKHR => stubs::clEnqueueReleaseD3D10ObjectsKHR,
    clSetEventCallback => event::clSetEventCallback,
    clCreateSubBuffer => memory::clCreateSubBuffer,
    clSetMemObjectDestructorCallback => memory::clSetMemObjectDestructorCallback,
    clCreateUserEvent => event::clCreateUserEvent,
    clSetUserEventStatus => event::clSetUserEventStatus,
    clEnqueueReadBufferRect => queue::clEnqueueReadBufferRect,
    clEnqueueWriteBufferRect => queue::clEnqueueWriteBufferRect,
    clEnqueueCopyBufferRect => queue::clEnqueueCopyBufferRect,
    clCreateSubDevicesEXT => stubs::clCreateSubDevicesEXT,
    clRetainDeviceEXT => platform::clRetainDevice,
    clReleaseDeviceEXT => platform::clReleaseDevice,
    clCreateEventFromGLsyncKHR => stubs::clCreateEventFromGLsyncKHR,
    clCreateSubDevices => stubs::clCreateSubDevices,
    clRetainDevice => platform::clRetainDevice,
    clReleaseDevice => platform::clReleaseDevice,
    clCreateImage => image::clCreateImage,
    clCreateProgramWithBuiltInKernels => stubs::clCreateProgramWithBuiltInKernels,
    clCompileProgram => program::clCompileProgram,
    clLinkProgram => program::clLinkProgram,
    clUnloadPlatformCompiler => stubs::clUnloadPlatformCompiler,
    clGetKernelArgInfo => kernel::clGetKernelArgInfo,
    clEnqueueFillBuffer => queue::clEnqueueFillBuffer,
    clEnqueueFillImage => image::clEnqueueFillImage,
    clEnqueueMigrateMemObjects => queue::clEnqueueMigrateMemObjects,
    clEnqueueMarkerWithWaitList => queue::clEnqueueMarkerWithWaitList,
    clEnqueueBarrierWithWaitList => queue::clEnqueueBarrierWithWaitList,
    clGetExtensionFunctionAddressForPlatform => platform::clGetExtensionFunctionAddressForPlatform,
    clCreateFromGLTexture => stubs::clCreateFromGLTexture,
    clGetDeviceIDsFromD3D11KHR => stubs::clGetDeviceIDsFromD3D11KHR,
    clCreateFromD3D11BufferKHR => stubs::clCreateFromD3D11BufferKHR,
    clCreateFromD3D11Texture2DKHR => stubs::clCreateFromD3D11Texture2DKHR,
    clCreateFromD3D11Texture3DKHR => stubs::clCreateFromD3D11Texture3DKHR,
    clCreateFromDX9MediaSurfaceKHR => stubs::clCreateFromDX9MediaSurfaceKHR,
    clEnqueueAcquireD3D11ObjectsKHR => stubs::clEnqueueAcquireD3D11ObjectsKHR,
    clEnqueueReleaseD3D11ObjectsKHR => stubs::clEnqueueReleaseD3D11ObjectsKHR,
    clGetDeviceIDsFromDX9MediaAdapterKHR => stubs::clGetDeviceIDsFromDX9MediaAdapterKHR,
    clEnqueueAcquireDX9MediaSurfacesKHR => stubs::clEnqueueAcquireDX9MediaSurfacesKHR,
    clEnqueueReleaseDX9MediaSurfacesKHR => stubs::clEnqueueReleaseDX9MediaSurfacesKHR,
    clCreateFromEGLImageKHR => stubs::clCreateFromEGLImageKHR,
    clEnqueueAcquireEGLObjectsKHR => stubs::clEnqueueAcquireEGLObjectsKHR,
    clEnqueueReleaseEGLObjectsKHR => stubs::clEnqueueReleaseEGLObjectsKHR,
    clCreateEventFromEGLSyncKHR => stubs::clCreateEventFromEGLSyncKHR,
    clCreateCommandQueueWithProperties => queue::clCreateCommandQueueWithProperties,
    clCreatePipe => stubs::clCreatePipe,
    clGetPipeInfo => stubs::clGetPipeInfo,
    clSVMAlloc => svm::clSVMAlloc,
    clSVMFree => svm::clSVMFree,
    clEnqueueSVMFree => svm::clEnqueueSVMFree,
    clEnqueueSVMMemcpy => svm::clEnqueueSVMMemcpy,
    clEnqueueSVMMemFill => svm::clEnqueueSVMMemFill,
    clEnqueueSVMMap => svm::clEnqueueSVMMap,
    clEnqueueSVMUnmap => svm::clEnqueueSVMUnmap,
    clCreateSamplerWithProperties => sampler::clCreateSamplerWithProperties,
    clSetKernelArgSVMPointer => kernel::clSetKernelArgSVMPointer,
    clSetKernelExecInfo => kernel::clSetKernelExecInfo,
    clGetKernelSubGroupInfoKHR => stubs::clGetKernelSubGroupInfoKHR,
    clCloneKernel => kernel::clCloneKernel,
    clCreateProgramWithIL => stubs::clCreateProgramWithIL,
    clEnqueueSVMMigrateMem => svm::clEnqueueSVMMigrateMem,
    clGetDeviceAndHostTimer => platform::clGetDeviceAndHostTimer,
    clGetHostTimer => platform::clGetHostTimer,
    clGetKernelSubGroupInfo => stubs::clGetKernelSubGroupInfo,
    clSetDefaultDeviceCommandQueue => stubs::clSetDefaultDeviceCommandQueue,
    clSetProgramReleaseCallback => stubs::clSetProgramReleaseCallback,
    clSetProgramSpecializationConstant => stubs::clSetProgramSpecializationConstant,
    clCreateBufferWithProperties => memory::clCreateBufferWithProperties,
    clCreateImageWithProperties => image::clCreateImageWithProperties,
    clSetContextDestructorCallback => context::clSetContextDestructorCallback,
}

/// Weft's dispatch table, slot by slot from [`entry_points`]. A slot no entry names (none,
/// by the test below) gets a function returning `CL_INVALID_OPERATION`, never null.
pub static DISPATCH: LazyLock<Dispatch> = LazyLock::new(|| {
    let entries: HashMap<&str, *const c_void> = entry_points().into_iter().collect();
    let mut slots = [stubs::clUnsupported as *const c_void; SLOT_COUNT];
    for (slot, name) in slots.iter_mut().zip(SLOT_NAMES) {
        if let Some(&f) = entries.get(name) {
            *slot = f;
        }
    }
    Dispatch(slots)
});

/// `clGetExtensionFunctionAddress`'s answer: the ICD entry point, and the slots by name
/// (for `clGetExtensionFunctionAddressForPlatform` callers that ask for core functions).
pub fn function_address(name: &str) -> *mut c_void {
    match name {
        "clIcdGetPlatformIDsKHR" => platform::clIcdGetPlatformIDsKHR as *mut c_void,
        "clGetPlatformInfo" | "clGetDeviceIDs" | "clGetDeviceInfo" => {
            entry_points().into_iter().find(|e| e.0 == name).map_or(std::ptr::null_mut(), |e| e.1.cast_mut())
        }
        _ => std::ptr::null_mut(),
    }
}

/// `libweft_icd.so` forwards its `clIcdGetPlatformIDsKHR` here (DESIGN.md "Packaging").
///
/// # Safety
/// As `clIcdGetPlatformIDsKHR` (cl_khr_icd).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_clIcdGetPlatformIDsKHR(num_entries: cl_uint, platforms: *mut Handle, num_platforms: *mut cl_uint) -> cl_int {
    // SAFETY: forwarded contract.
    unsafe { platform::clIcdGetPlatformIDsKHR(num_entries, platforms, num_platforms) }
}

/// `libweft_icd.so` forwards its `clGetExtensionFunctionAddress` here.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_clGetExtensionFunctionAddress(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { platform::clGetExtensionFunctionAddress(name) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_named_once_and_filled() {
        let entries = entry_points();
        assert_eq!(entries.len(), SLOT_COUNT);
        for name in SLOT_NAMES {
            assert_eq!(entries.iter().filter(|e| e.0 == *name).count(), 1, "{name}");
        }
        assert!(DISPATCH.0.iter().all(|p| !p.is_null()));
        assert!(!DISPATCH.0.contains(&(stubs::clUnsupported as *const c_void)));
    }
}
