//! Entry points Weft does not implement: each returns the error the specification gives
//! for a platform without the feature (no GL/D3D/EGL sharing,
//! pipes, IL programs, sub-devices, native kernels), so that a program calling one gets
//! a code, never a crash. Listed in README.md ("OpenCL ICD", coverage table).
//!
//! The stubs take every argument as a `usize`: all of them are pointers or integers of
//! at most 64 bits, passed in general registers or 8-byte stack slots on the C ABIs Weft
//! targets (x86-64 System V, AArch64 Linux), so the stub reads `errcode_ret` where the
//! caller put it. They never dereference anything else.
#![allow(clippy::too_many_arguments)]

use super::cl::*;
use std::ptr::null_mut;

macro_rules! stub_code {
    ($($name:ident($($a:ident),*) => $code:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: not supported, returns `", stringify!($code), "`.")]
        pub extern "C" fn $name($(_: $a),*) -> cl_int {
            $code
        }
    )*};
}

macro_rules! stub_obj {
    ($($name:ident($($a:ident),*) => $code:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: not supported, null with `", stringify!($code), "` in `errcode_ret`.")]
        ///
        /// # Safety
        /// `errcode_ret` is null or writable (the entry point's contract).
        pub unsafe extern "C" fn $name($(_: $a,)* errcode_ret: *mut cl_int) -> Handle {
            if !errcode_ret.is_null() {
                // SAFETY: the caller's contract.
                unsafe { errcode_ret.write_unaligned($code) };
            }
            null_mut()
        }
    )*};
}

type U = usize;

stub_code! {
    clUnsupported() => CL_INVALID_OPERATION;
    clSetCommandQueueProperty(U, U, U, U) => CL_INVALID_OPERATION;
    clUnloadCompiler() => CL_SUCCESS;
    clUnloadPlatformCompiler(U) => CL_SUCCESS;
    clEnqueueNativeKernel(U, U, U, U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clGetGLObjectInfo(U, U, U) => CL_INVALID_MEM_OBJECT;
    clGetGLTextureInfo(U, U, U, U, U) => CL_INVALID_MEM_OBJECT;
    clEnqueueAcquireGLObjects(U, U, U, U, U, U) => CL_INVALID_CONTEXT;
    clEnqueueReleaseGLObjects(U, U, U, U, U, U) => CL_INVALID_CONTEXT;
    clGetGLContextInfoKHR(U, U, U, U, U) => CL_INVALID_OPERATION;
    clGetDeviceIDsFromD3D10KHR(U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueAcquireD3D10ObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueReleaseD3D10ObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clCreateSubDevicesEXT(U, U, U, U, U) => CL_INVALID_OPERATION;
    clCreateSubDevices(U, U, U, U, U) => CL_INVALID_VALUE;
    clGetDeviceIDsFromD3D11KHR(U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueAcquireD3D11ObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueReleaseD3D11ObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clGetDeviceIDsFromDX9MediaAdapterKHR(U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueAcquireDX9MediaSurfacesKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueReleaseDX9MediaSurfacesKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueAcquireEGLObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clEnqueueReleaseEGLObjectsKHR(U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clGetPipeInfo(U, U, U, U, U) => CL_INVALID_MEM_OBJECT;
    clGetKernelSubGroupInfoKHR(U, U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clGetKernelSubGroupInfo(U, U, U, U, U, U, U, U) => CL_INVALID_OPERATION;
    clSetDefaultDeviceCommandQueue(U, U, U) => CL_INVALID_OPERATION;
    clSetProgramReleaseCallback(U, U, U) => CL_INVALID_OPERATION;
    clSetProgramSpecializationConstant(U, U, U, U) => CL_INVALID_OPERATION;
}

stub_obj! {
    clCreateFromGLBuffer(U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromGLTexture2D(U, U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromGLTexture3D(U, U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromGLTexture(U, U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromGLRenderbuffer(U, U, U) => CL_INVALID_CONTEXT;
    clCreateEventFromGLsyncKHR(U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D10BufferKHR(U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D10Texture2DKHR(U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D10Texture3DKHR(U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D11BufferKHR(U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D11Texture2DKHR(U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromD3D11Texture3DKHR(U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromDX9MediaSurfaceKHR(U, U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateFromEGLImageKHR(U, U, U, U, U) => CL_INVALID_CONTEXT;
    clCreateEventFromEGLSyncKHR(U, U, U) => CL_INVALID_CONTEXT;
    clCreateProgramWithBuiltInKernels(U, U, U, U) => CL_INVALID_VALUE;
    clCreateProgramWithIL(U, U, U) => CL_INVALID_OPERATION;
    clCreatePipe(U, U, U, U, U) => CL_INVALID_OPERATION;
}
