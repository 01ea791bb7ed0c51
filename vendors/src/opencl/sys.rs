//! Raw OpenCL bindings: the few types and constants Weft uses, and the ICD dispatch table.
//!
//! **Owns**: the C ABI only. Nothing here is linked: every function is reached through
//! a vendor's dispatch table (or, for the two ICD entry points, through `dlsym`), so the
//! crate never depends on `libOpenCL.so` at link time.
//! **Invariants**: [`cl_icd_dispatch`] mirrors `struct _cl_icd_dispatch` of Khronos'
//! `CL/cl_icd.h` (Debian `opencl-headers` 3.0~2023.02.06) slot for slot: 149 pointer-sized
//! slots, the same count ocl-icd 2.3.1 assumes. The unit test `layout_matches_cl_icd_h`
//! compiles a C program against the installed header and compares every slot's offset
//! and every constant below. Slots Weft does not call are typed [`Unused`]; give one a
//! real signature (copied from `cl_icd.h`) before calling it.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, clippy::upper_case_acronyms)]

use std::ffi::{c_char, c_void};

pub type cl_int = i32;
pub type cl_uint = u32;
pub type cl_ulong = u64;
pub type cl_bool = cl_uint;
pub type cl_bitfield = cl_ulong;
pub type cl_device_type = cl_bitfield;
pub type cl_platform_info = cl_uint;
pub type cl_device_info = cl_uint;
pub type cl_command_queue_properties = cl_bitfield;
pub type cl_context_properties = isize;
pub type cl_mem_flags = cl_bitfield;
pub type cl_program_info = cl_uint;
pub type cl_program_build_info = cl_uint;
pub type cl_build_status = cl_int;
pub type cl_kernel_info = cl_uint;
pub type cl_event_info = cl_uint;

macro_rules! opaque {
    ($($obj:ident => $handle:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $obj {
            _private: [u8; 0],
        }
        pub type $handle = *mut $obj;
    )*};
}
opaque! {
    _cl_platform_id => cl_platform_id,
    _cl_device_id => cl_device_id,
    _cl_context => cl_context,
    _cl_command_queue => cl_command_queue,
    _cl_mem => cl_mem,
    _cl_program => cl_program,
    _cl_kernel => cl_kernel,
    _cl_event => cl_event,
    _cl_sampler => cl_sampler,
}

/// `cl_image_format`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct cl_image_format {
    pub image_channel_order: cl_uint,
    pub image_channel_data_type: cl_uint,
}

/// `cl_image_desc` (OpenCL 1.2; `mem_object` is `buffer` in older headers).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cl_image_desc {
    pub image_type: cl_uint,
    pub image_width: usize,
    pub image_height: usize,
    pub image_depth: usize,
    pub image_array_size: usize,
    pub image_row_pitch: usize,
    pub image_slice_pitch: usize,
    pub num_mip_levels: cl_uint,
    pub num_samples: cl_uint,
    pub mem_object: cl_mem,
}

pub type ContextNotify = unsafe extern "C" fn(errinfo: *const c_char, private_info: *const c_void, cb: usize, user_data: *mut c_void);
pub type BuildNotify = unsafe extern "C" fn(program: cl_program, user_data: *mut c_void);
pub type EventNotify = unsafe extern "C" fn(event: cl_event, event_command_status: cl_int, user_data: *mut c_void);

/// `clGetExtensionFunctionAddress`, looked up with `dlsym` in a vendor library.
pub type clGetExtensionFunctionAddress_fn = unsafe extern "C" fn(func_name: *const c_char) -> *mut c_void;
/// `clIcdGetPlatformIDsKHR` (cl_khr_icd), obtained through `clGetExtensionFunctionAddress`.
pub type clIcdGetPlatformIDsKHR_fn =
    unsafe extern "C" fn(num_entries: cl_uint, platforms: *mut cl_platform_id, num_platforms: *mut cl_uint) -> cl_int;

/// A dispatch slot Weft never calls (its real signature is in `cl_icd.h`).
pub type Unused = Option<unsafe extern "C" fn()>;

macro_rules! slot_type {
    () => { Unused };
    (fn($($arg:ty),* $(,)?) -> $ret:ty) => { Option<unsafe extern "C" fn($($arg),*) -> $ret> };
}

macro_rules! dispatch_table {
    ($($name:ident: [$($sig:tt)*];)*) => {
        /// `struct _cl_icd_dispatch` of `CL/cl_icd.h`: the table every object of an
        /// ICD-compliant vendor points to with its first word.
        #[repr(C)]
        pub struct cl_icd_dispatch {
            $(pub $name: slot_type!($($sig)*),)*
        }

        /// Slot names, in table order.
        pub const SLOT_NAMES: &[&str] = &[$(stringify!($name)),*];

        /// Byte offset of every slot, in table order (for the layout test).
        pub fn slot_offsets() -> Vec<usize> {
            vec![$(std::mem::offset_of!(cl_icd_dispatch, $name)),*]
        }
    };
}

/// Slots in `struct _cl_icd_dispatch` (OpenCL 3.0 headers, and ocl-icd 2.3.1).
pub const SLOT_COUNT: usize = 149;

dispatch_table! {
    clGetPlatformIDs: [];
    clGetPlatformInfo: [fn(cl_platform_id, cl_platform_info, usize, *mut c_void, *mut usize) -> cl_int];
    clGetDeviceIDs: [fn(cl_platform_id, cl_device_type, cl_uint, *mut cl_device_id, *mut cl_uint) -> cl_int];
    clGetDeviceInfo: [fn(cl_device_id, cl_device_info, usize, *mut c_void, *mut usize) -> cl_int];
    clCreateContext: [fn(*const cl_context_properties, cl_uint, *const cl_device_id, Option<ContextNotify>, *mut c_void, *mut cl_int) -> cl_context];
    clCreateContextFromType: [];
    clRetainContext: [fn(cl_context) -> cl_int];
    clReleaseContext: [fn(cl_context) -> cl_int];
    clGetContextInfo: [];
    clCreateCommandQueue: [fn(cl_context, cl_device_id, cl_command_queue_properties, *mut cl_int) -> cl_command_queue];
    clRetainCommandQueue: [fn(cl_command_queue) -> cl_int];
    clReleaseCommandQueue: [fn(cl_command_queue) -> cl_int];
    clGetCommandQueueInfo: [];
    clSetCommandQueueProperty: [];
    clCreateBuffer: [fn(cl_context, cl_mem_flags, usize, *mut c_void, *mut cl_int) -> cl_mem];
    clCreateImage2D: [];
    clCreateImage3D: [];
    clRetainMemObject: [fn(cl_mem) -> cl_int];
    clReleaseMemObject: [fn(cl_mem) -> cl_int];
    clGetSupportedImageFormats: [fn(cl_context, cl_mem_flags, cl_uint, cl_uint, *mut cl_image_format, *mut cl_uint) -> cl_int];
    clGetMemObjectInfo: [];
    clGetImageInfo: [];
    clCreateSampler: [fn(cl_context, cl_bool, cl_uint, cl_uint, *mut cl_int) -> cl_sampler];
    clRetainSampler: [fn(cl_sampler) -> cl_int];
    clReleaseSampler: [fn(cl_sampler) -> cl_int];
    clGetSamplerInfo: [];
    clCreateProgramWithSource: [fn(cl_context, cl_uint, *const *const c_char, *const usize, *mut cl_int) -> cl_program];
    clCreateProgramWithBinary: [fn(cl_context, cl_uint, *const cl_device_id, *const usize, *const *const u8, *mut cl_int, *mut cl_int) -> cl_program];
    clRetainProgram: [fn(cl_program) -> cl_int];
    clReleaseProgram: [fn(cl_program) -> cl_int];
    clBuildProgram: [fn(cl_program, cl_uint, *const cl_device_id, *const c_char, Option<BuildNotify>, *mut c_void) -> cl_int];
    clUnloadCompiler: [];
    clGetProgramInfo: [fn(cl_program, cl_program_info, usize, *mut c_void, *mut usize) -> cl_int];
    clGetProgramBuildInfo: [fn(cl_program, cl_device_id, cl_program_build_info, usize, *mut c_void, *mut usize) -> cl_int];
    clCreateKernel: [fn(cl_program, *const c_char, *mut cl_int) -> cl_kernel];
    clCreateKernelsInProgram: [];
    clRetainKernel: [fn(cl_kernel) -> cl_int];
    clReleaseKernel: [fn(cl_kernel) -> cl_int];
    clSetKernelArg: [fn(cl_kernel, cl_uint, usize, *const c_void) -> cl_int];
    clGetKernelInfo: [fn(cl_kernel, cl_kernel_info, usize, *mut c_void, *mut usize) -> cl_int];
    clGetKernelWorkGroupInfo: [fn(cl_kernel, cl_device_id, cl_uint, usize, *mut c_void, *mut usize) -> cl_int];
    clWaitForEvents: [fn(cl_uint, *const cl_event) -> cl_int];
    clGetEventInfo: [fn(cl_event, cl_event_info, usize, *mut c_void, *mut usize) -> cl_int];
    clRetainEvent: [fn(cl_event) -> cl_int];
    clReleaseEvent: [fn(cl_event) -> cl_int];
    clGetEventProfilingInfo: [fn(cl_event, cl_uint, usize, *mut c_void, *mut usize) -> cl_int];
    clFlush: [fn(cl_command_queue) -> cl_int];
    clFinish: [fn(cl_command_queue) -> cl_int];
    clEnqueueReadBuffer: [fn(cl_command_queue, cl_mem, cl_bool, usize, usize, *mut c_void, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueWriteBuffer: [fn(cl_command_queue, cl_mem, cl_bool, usize, usize, *const c_void, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueCopyBuffer: [fn(cl_command_queue, cl_mem, cl_mem, usize, usize, usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueReadImage: [];
    clEnqueueWriteImage: [];
    clEnqueueCopyImage: [];
    clEnqueueCopyImageToBuffer: [fn(cl_command_queue, cl_mem, cl_mem, *const usize, *const usize, usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueCopyBufferToImage: [fn(cl_command_queue, cl_mem, cl_mem, usize, *const usize, *const usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueMapBuffer: [];
    clEnqueueMapImage: [];
    clEnqueueUnmapMemObject: [];
    clEnqueueNDRangeKernel: [fn(cl_command_queue, cl_kernel, cl_uint, *const usize, *const usize, *const usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueTask: [];
    clEnqueueNativeKernel: [];
    clEnqueueMarker: [];
    clEnqueueWaitForEvents: [];
    clEnqueueBarrier: [];
    clGetExtensionFunctionAddress: [fn(*const c_char) -> *mut c_void];
    clCreateFromGLBuffer: [];
    clCreateFromGLTexture2D: [];
    clCreateFromGLTexture3D: [];
    clCreateFromGLRenderbuffer: [];
    clGetGLObjectInfo: [];
    clGetGLTextureInfo: [];
    clEnqueueAcquireGLObjects: [];
    clEnqueueReleaseGLObjects: [];
    clGetGLContextInfoKHR: [];
    clGetDeviceIDsFromD3D10KHR: [];
    clCreateFromD3D10BufferKHR: [];
    clCreateFromD3D10Texture2DKHR: [];
    clCreateFromD3D10Texture3DKHR: [];
    clEnqueueAcquireD3D10ObjectsKHR: [];
    clEnqueueReleaseD3D10ObjectsKHR: [];
    clSetEventCallback: [fn(cl_event, cl_int, Option<EventNotify>, *mut c_void) -> cl_int];
    clCreateSubBuffer: [fn(cl_mem, cl_mem_flags, cl_uint, *const c_void, *mut cl_int) -> cl_mem];
    clSetMemObjectDestructorCallback: [];
    clCreateUserEvent: [];
    clSetUserEventStatus: [];
    clEnqueueReadBufferRect: [fn(cl_command_queue, cl_mem, cl_bool, *const usize, *const usize, *const usize, usize, usize, usize, usize, *mut c_void, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueWriteBufferRect: [fn(cl_command_queue, cl_mem, cl_bool, *const usize, *const usize, *const usize, usize, usize, usize, usize, *const c_void, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueCopyBufferRect: [fn(cl_command_queue, cl_mem, cl_mem, *const usize, *const usize, *const usize, usize, usize, usize, usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clCreateSubDevicesEXT: [];
    clRetainDeviceEXT: [];
    clReleaseDeviceEXT: [];
    clCreateEventFromGLsyncKHR: [];
    clCreateSubDevices: [];
    clRetainDevice: [];
    clReleaseDevice: [];
    clCreateImage: [fn(cl_context, cl_mem_flags, *const cl_image_format, *const cl_image_desc, *mut c_void, *mut cl_int) -> cl_mem];
    clCreateProgramWithBuiltInKernels: [];
    clCompileProgram: [fn(cl_program, cl_uint, *const cl_device_id, *const c_char, cl_uint, *const cl_program, *const *const c_char, Option<BuildNotify>, *mut c_void) -> cl_int];
    clLinkProgram: [fn(cl_context, cl_uint, *const cl_device_id, *const c_char, cl_uint, *const cl_program, Option<BuildNotify>, *mut c_void, *mut cl_int) -> cl_program];
    clUnloadPlatformCompiler: [];
    clGetKernelArgInfo: [fn(cl_kernel, cl_uint, cl_uint, usize, *mut c_void, *mut usize) -> cl_int];
    clEnqueueFillBuffer: [fn(cl_command_queue, cl_mem, *const c_void, usize, usize, usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueFillImage: [];
    clEnqueueMigrateMemObjects: [];
    clEnqueueMarkerWithWaitList: [fn(cl_command_queue, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueBarrierWithWaitList: [];
    clGetExtensionFunctionAddressForPlatform: [];
    clCreateFromGLTexture: [];
    clGetDeviceIDsFromD3D11KHR: [];
    clCreateFromD3D11BufferKHR: [];
    clCreateFromD3D11Texture2DKHR: [];
    clCreateFromD3D11Texture3DKHR: [];
    clCreateFromDX9MediaSurfaceKHR: [];
    clEnqueueAcquireD3D11ObjectsKHR: [];
    clEnqueueReleaseD3D11ObjectsKHR: [];
    clGetDeviceIDsFromDX9MediaAdapterKHR: [];
    clEnqueueAcquireDX9MediaSurfacesKHR: [];
    clEnqueueReleaseDX9MediaSurfacesKHR: [];
    clCreateFromEGLImageKHR: [];
    clEnqueueAcquireEGLObjectsKHR: [];
    clEnqueueReleaseEGLObjectsKHR: [];
    clCreateEventFromEGLSyncKHR: [];
    clCreateCommandQueueWithProperties: [];
    clCreatePipe: [];
    clGetPipeInfo: [];
    clSVMAlloc: [fn(cl_context, cl_bitfield, usize, cl_uint) -> *mut c_void];
    clSVMFree: [fn(cl_context, *mut c_void) -> ()];
    clEnqueueSVMFree: [];
    clEnqueueSVMMemcpy: [];
    clEnqueueSVMMemFill: [];
    clEnqueueSVMMap: [fn(cl_command_queue, cl_bool, cl_bitfield, *mut c_void, usize, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clEnqueueSVMUnmap: [fn(cl_command_queue, *mut c_void, cl_uint, *const cl_event, *mut cl_event) -> cl_int];
    clCreateSamplerWithProperties: [];
    clSetKernelArgSVMPointer: [fn(cl_kernel, cl_uint, *const c_void) -> cl_int];
    clSetKernelExecInfo: [fn(cl_kernel, cl_uint, usize, *const c_void) -> cl_int];
    clGetKernelSubGroupInfoKHR: [];
    clCloneKernel: [];
    clCreateProgramWithIL: [];
    clEnqueueSVMMigrateMem: [];
    clGetDeviceAndHostTimer: [];
    clGetHostTimer: [];
    clGetKernelSubGroupInfo: [];
    clSetDefaultDeviceCommandQueue: [];
    clSetProgramReleaseCallback: [];
    clSetProgramSpecializationConstant: [];
    clCreateBufferWithProperties: [];
    clCreateImageWithProperties: [];
    clSetContextDestructorCallback: [];
}

const _: () = assert!(SLOT_NAMES.len() == SLOT_COUNT);
const _: () = assert!(std::mem::size_of::<cl_icd_dispatch>() == SLOT_COUNT * std::mem::size_of::<usize>());

macro_rules! constants {
    ($($ty:ty { $($name:ident = $value:expr,)* })*) => {
        $($(pub const $name: $ty = $value;)*)*

        /// Every constant as (name, value), for the layout test.
        pub const CONSTANTS: &[(&str, i64)] = &[$($((stringify!($name), $value as i64),)*)*];
    };
}

constants! {
    cl_int {
        CL_SUCCESS = 0,
        CL_DEVICE_NOT_FOUND = -1,
        CL_DEVICE_NOT_AVAILABLE = -2,
        CL_COMPILER_NOT_AVAILABLE = -3,
        CL_MEM_OBJECT_ALLOCATION_FAILURE = -4,
        CL_OUT_OF_RESOURCES = -5,
        CL_OUT_OF_HOST_MEMORY = -6,
        CL_PROFILING_INFO_NOT_AVAILABLE = -7,
        CL_MEM_COPY_OVERLAP = -8,
        CL_IMAGE_FORMAT_MISMATCH = -9,
        CL_IMAGE_FORMAT_NOT_SUPPORTED = -10,
        CL_BUILD_PROGRAM_FAILURE = -11,
        CL_MAP_FAILURE = -12,
        CL_MISALIGNED_SUB_BUFFER_OFFSET = -13,
        CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST = -14,
        CL_COMPILE_PROGRAM_FAILURE = -15,
        CL_LINKER_NOT_AVAILABLE = -16,
        CL_LINK_PROGRAM_FAILURE = -17,
        CL_DEVICE_PARTITION_FAILED = -18,
        CL_KERNEL_ARG_INFO_NOT_AVAILABLE = -19,
        CL_INVALID_VALUE = -30,
        CL_INVALID_DEVICE_TYPE = -31,
        CL_INVALID_PLATFORM = -32,
        CL_INVALID_DEVICE = -33,
        CL_INVALID_CONTEXT = -34,
        CL_INVALID_QUEUE_PROPERTIES = -35,
        CL_INVALID_COMMAND_QUEUE = -36,
        CL_INVALID_HOST_PTR = -37,
        CL_INVALID_MEM_OBJECT = -38,
        CL_INVALID_IMAGE_FORMAT_DESCRIPTOR = -39,
        CL_INVALID_IMAGE_SIZE = -40,
        CL_INVALID_SAMPLER = -41,
        CL_INVALID_BINARY = -42,
        CL_INVALID_BUILD_OPTIONS = -43,
        CL_INVALID_PROGRAM = -44,
        CL_INVALID_PROGRAM_EXECUTABLE = -45,
        CL_INVALID_KERNEL_NAME = -46,
        CL_INVALID_KERNEL_DEFINITION = -47,
        CL_INVALID_KERNEL = -48,
        CL_INVALID_ARG_INDEX = -49,
        CL_INVALID_ARG_VALUE = -50,
        CL_INVALID_ARG_SIZE = -51,
        CL_INVALID_KERNEL_ARGS = -52,
        CL_INVALID_WORK_DIMENSION = -53,
        CL_INVALID_WORK_GROUP_SIZE = -54,
        CL_INVALID_WORK_ITEM_SIZE = -55,
        CL_INVALID_GLOBAL_OFFSET = -56,
        CL_INVALID_EVENT_WAIT_LIST = -57,
        CL_INVALID_EVENT = -58,
        CL_INVALID_OPERATION = -59,
        CL_INVALID_GL_OBJECT = -60,
        CL_INVALID_BUFFER_SIZE = -61,
        CL_INVALID_MIP_LEVEL = -62,
        CL_INVALID_GLOBAL_WORK_SIZE = -63,
        CL_INVALID_PROPERTY = -64,
        CL_INVALID_IMAGE_DESCRIPTOR = -65,
        CL_INVALID_COMPILER_OPTIONS = -66,
        CL_INVALID_LINKER_OPTIONS = -67,
        CL_INVALID_DEVICE_PARTITION_COUNT = -68,
        CL_INVALID_PIPE_SIZE = -69,
        CL_INVALID_DEVICE_QUEUE = -70,
        CL_INVALID_SPEC_ID = -71,
        CL_MAX_SIZE_RESTRICTION_EXCEEDED = -72,
        CL_PLATFORM_NOT_FOUND_KHR = -1001,
        CL_BUILD_NONE = -1,
        CL_BUILD_ERROR = -2,
        CL_BUILD_IN_PROGRESS = -3,
        CL_BUILD_SUCCESS = 0,
        CL_COMPLETE = 0,
    }
    cl_bool {
        CL_FALSE = 0,
        CL_TRUE = 1,
    }
    cl_uint {
        CL_PLATFORM_PROFILE = 0x0900,
        CL_PLATFORM_VERSION = 0x0901,
        CL_PLATFORM_NAME = 0x0902,
        CL_PLATFORM_VENDOR = 0x0903,
        CL_PLATFORM_EXTENSIONS = 0x0904,
        CL_PLATFORM_ICD_SUFFIX_KHR = 0x0920,
        CL_DEVICE_TYPE = 0x1000,
        CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
        CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004,
        CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010,
        CL_DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019,
        CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F,
        CL_DEVICE_AVAILABLE = 0x1027,
        CL_DEVICE_NAME = 0x102B,
        CL_DEVICE_VENDOR = 0x102C,
        CL_DRIVER_VERSION = 0x102D,
        CL_DEVICE_VERSION = 0x102F,
        CL_DEVICE_EXTENSIONS = 0x1030,
        CL_PROGRAM_NUM_DEVICES = 0x1162,
        CL_PROGRAM_BINARY_SIZES = 0x1165,
        CL_PROGRAM_BINARIES = 0x1166,
        CL_PROGRAM_BUILD_STATUS = 0x1181,
        CL_PROGRAM_BUILD_LOG = 0x1183,
        CL_KERNEL_FUNCTION_NAME = 0x1190,
        CL_KERNEL_NUM_ARGS = 0x1191,
        CL_EVENT_COMMAND_EXECUTION_STATUS = 0x11D3,
        CL_PROFILING_COMMAND_QUEUED = 0x1280,
        CL_PROFILING_COMMAND_SUBMIT = 0x1281,
        CL_PROFILING_COMMAND_START = 0x1282,
        CL_PROFILING_COMMAND_END = 0x1283,
        CL_PROFILING_COMMAND_COMPLETE = 0x1284,
    }
    cl_bitfield {
        CL_DEVICE_TYPE_DEFAULT = 1 << 0,
        CL_DEVICE_TYPE_CPU = 1 << 1,
        CL_DEVICE_TYPE_GPU = 1 << 2,
        CL_DEVICE_TYPE_ACCELERATOR = 1 << 3,
        CL_DEVICE_TYPE_CUSTOM = 1 << 4,
        CL_DEVICE_TYPE_ALL = 0xFFFF_FFFF,
        CL_MEM_READ_WRITE = 1 << 0,
        CL_QUEUE_PROFILING_ENABLE = 1 << 1,
    }
    cl_context_properties {
        CL_CONTEXT_PLATFORM = 0x1084,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;
    use std::process::Command;

    /// Compile a C program against the installed `CL/cl_icd.h` that prints every slot's
    /// offset and every constant, and compare with this module. Skips (passing) when gcc
    /// or the header is missing.
    #[test]
    fn layout_matches_cl_icd_h() {
        let header = std::path::Path::new("/usr/include/CL/cl_icd.h");
        if !header.exists() {
            println!("skipped: {} not found (Debian package opencl-headers)", header.display());
            return;
        }
        let mut c = String::from(
            "#define CL_TARGET_OPENCL_VERSION 300\n#include <CL/cl_icd.h>\n#include <CL/cl_ext.h>\n\
             #include <stddef.h>\n#include <stdio.h>\nint main(void) {\n\
             printf(\"size %zu\\n\", sizeof(cl_icd_dispatch));\n",
        );
        for name in SLOT_NAMES {
            writeln!(c, "printf(\"slot {name} %zu\\n\", offsetof(cl_icd_dispatch, {name}));").unwrap();
        }
        for (name, _) in CONSTANTS {
            writeln!(c, "printf(\"const {name} %lld\\n\", (long long)({name}));").unwrap();
        }
        c.push_str("return 0;\n}\n");
        let dir = std::env::temp_dir().join(format!("weft-cl-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, exe) = (dir.join("layout.c"), dir.join("layout"));
        std::fs::write(&src, c).unwrap();
        let built = match Command::new("gcc").arg("-o").arg(&exe).arg(&src).output() {
            Ok(o) => o,
            Err(e) => {
                println!("skipped: gcc not runnable: {e}");
                return;
            }
        };
        assert!(built.status.success(), "gcc failed:\n{}", String::from_utf8_lossy(&built.stderr));
        let out = Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(out.stdout).unwrap();
        let mut expect = format!("size {}\n", std::mem::size_of::<cl_icd_dispatch>());
        for (name, off) in SLOT_NAMES.iter().zip(slot_offsets()) {
            writeln!(expect, "slot {name} {off}").unwrap();
        }
        for (name, value) in CONSTANTS {
            writeln!(expect, "const {name} {value}").unwrap();
        }
        assert_eq!(text, expect);
    }
}
