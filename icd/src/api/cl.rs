//! OpenCL 1.2 constants the entry points need beyond `weft_vendors::opencl::sys` (values
//! from Khronos' `CL/cl.h`; `tests/icd` compiles C against the real header).
#![allow(dead_code)]

pub use weft_vendors::opencl::sys::{
    CL_BUILD_ERROR, CL_BUILD_NONE, CL_BUILD_PROGRAM_FAILURE, CL_BUILD_SUCCESS, CL_COMPLETE, CL_DEVICE_NOT_FOUND,
    CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, CL_FALSE, CL_INVALID_ARG_INDEX, CL_INVALID_ARG_SIZE, CL_INVALID_ARG_VALUE,
    CL_INVALID_BINARY, CL_INVALID_BUFFER_SIZE, CL_INVALID_BUILD_OPTIONS, CL_INVALID_COMMAND_QUEUE, CL_INVALID_COMPILER_OPTIONS,
    CL_INVALID_CONTEXT, CL_INVALID_DEVICE, CL_INVALID_DEVICE_TYPE, CL_INVALID_EVENT, CL_INVALID_EVENT_WAIT_LIST, CL_INVALID_GL_OBJECT,
    CL_INVALID_GLOBAL_OFFSET, CL_INVALID_GLOBAL_WORK_SIZE, CL_INVALID_HOST_PTR, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, CL_INVALID_IMAGE_SIZE,
    CL_INVALID_KERNEL, CL_INVALID_KERNEL_ARGS, CL_INVALID_KERNEL_DEFINITION, CL_INVALID_KERNEL_NAME, CL_INVALID_LINKER_OPTIONS,
    CL_INVALID_MEM_OBJECT, CL_INVALID_OPERATION, CL_INVALID_PLATFORM, CL_INVALID_PROGRAM, CL_INVALID_PROGRAM_EXECUTABLE,
    CL_INVALID_PROPERTY, CL_INVALID_QUEUE_PROPERTIES, CL_INVALID_SAMPLER, CL_INVALID_VALUE, CL_INVALID_WORK_DIMENSION,
    CL_INVALID_WORK_GROUP_SIZE, CL_INVALID_WORK_ITEM_SIZE, CL_KERNEL_ARG_INFO_NOT_AVAILABLE, CL_MEM_COPY_OVERLAP,
    CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_MISALIGNED_SUB_BUFFER_OFFSET, CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES,
    CL_PLATFORM_NOT_FOUND_KHR, CL_PROFILING_INFO_NOT_AVAILABLE, CL_SUCCESS, CL_TRUE,
};
pub use weft_vendors::opencl::sys::{cl_bitfield, cl_bool, cl_int, cl_uint, cl_ulong};

pub type Handle = *mut std::ffi::c_void;

// Platform info.
pub const CL_PLATFORM_PROFILE: cl_uint = 0x0900;
pub const CL_PLATFORM_VERSION: cl_uint = 0x0901;
pub const CL_PLATFORM_NAME: cl_uint = 0x0902;
pub const CL_PLATFORM_VENDOR: cl_uint = 0x0903;
pub const CL_PLATFORM_EXTENSIONS: cl_uint = 0x0904;
pub const CL_PLATFORM_ICD_SUFFIX_KHR: cl_uint = 0x0920;

// Device types.
pub const CL_DEVICE_TYPE_DEFAULT: cl_bitfield = 1;
pub const CL_DEVICE_TYPE_CPU: cl_bitfield = 2;
pub const CL_DEVICE_TYPE_GPU: cl_bitfield = 4;
pub const CL_DEVICE_TYPE_ACCELERATOR: cl_bitfield = 8;
pub const CL_DEVICE_TYPE_CUSTOM: cl_bitfield = 16;
pub const CL_DEVICE_TYPE_ALL: cl_bitfield = 0xFFFF_FFFF;

// Device info (the ones Weft answers itself; the rest are forwarded).
pub const CL_DEVICE_TYPE: cl_uint = 0x1000;
pub const CL_DEVICE_MAX_COMPUTE_UNITS: cl_uint = 0x1002;
pub const CL_DEVICE_MAX_WORK_GROUP_SIZE: cl_uint = 0x1004;
pub const CL_DEVICE_MAX_WORK_ITEM_SIZES: cl_uint = 0x1005;
pub const CL_DEVICE_MAX_MEM_ALLOC_SIZE: cl_uint = 0x1010;
pub const CL_DEVICE_IMAGE_SUPPORT: cl_uint = 0x1016;
pub const CL_DEVICE_MEM_BASE_ADDR_ALIGN: cl_uint = 0x1019;
pub const CL_DEVICE_GLOBAL_MEM_SIZE: cl_uint = 0x101F;
pub const CL_DEVICE_QUEUE_PROPERTIES: cl_uint = 0x102A;
pub const CL_DEVICE_NAME: cl_uint = 0x102B;
pub const CL_DEVICE_VENDOR: cl_uint = 0x102C;
pub const CL_DRIVER_VERSION: cl_uint = 0x102D;
pub const CL_DEVICE_PROFILE: cl_uint = 0x102E;
pub const CL_DEVICE_VERSION: cl_uint = 0x102F;
pub const CL_DEVICE_EXTENSIONS: cl_uint = 0x1030;
pub const CL_DEVICE_PLATFORM: cl_uint = 0x1031;
pub const CL_DEVICE_OPENCL_C_VERSION: cl_uint = 0x103D;
pub const CL_DEVICE_LINKER_AVAILABLE: cl_uint = 0x103E;
pub const CL_DEVICE_BUILT_IN_KERNELS: cl_uint = 0x103F;
pub const CL_DEVICE_PARENT_DEVICE: cl_uint = 0x1042;
pub const CL_DEVICE_PARTITION_MAX_SUB_DEVICES: cl_uint = 0x1043;
pub const CL_DEVICE_PARTITION_PROPERTIES: cl_uint = 0x1044;
pub const CL_DEVICE_PARTITION_AFFINITY_DOMAIN: cl_uint = 0x1045;
pub const CL_DEVICE_PARTITION_TYPE: cl_uint = 0x1046;
pub const CL_DEVICE_REFERENCE_COUNT: cl_uint = 0x1047;
pub const CL_DEVICE_PREFERRED_INTEROP_USER_SYNC: cl_uint = 0x1048;
// OpenCL 2.0+ queries a 1.2 device does not answer.
pub const CL_DEVICE_QUEUE_ON_HOST_PROPERTIES: cl_uint = 0x102A;
pub const CL_DEVICE_SVM_CAPABILITIES: cl_uint = 0x1053;

// Queue properties.
pub const CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE: cl_bitfield = 1;
pub const CL_QUEUE_PROFILING_ENABLE: cl_bitfield = 2;
pub const CL_QUEUE_PROPERTIES: cl_uint = 0x1093;
pub const CL_QUEUE_CONTEXT: cl_uint = 0x1090;
pub const CL_QUEUE_DEVICE: cl_uint = 0x1091;
pub const CL_QUEUE_REFERENCE_COUNT: cl_uint = 0x1092;
pub const CL_QUEUE_SIZE: cl_uint = 0x1094;

// Context.
pub const CL_CONTEXT_REFERENCE_COUNT: cl_uint = 0x1080;
pub const CL_CONTEXT_DEVICES: cl_uint = 0x1081;
pub const CL_CONTEXT_PROPERTIES: cl_uint = 0x1082;
pub const CL_CONTEXT_NUM_DEVICES: cl_uint = 0x1083;
pub const CL_CONTEXT_PLATFORM: isize = 0x1084;
pub const CL_CONTEXT_INTEROP_USER_SYNC: isize = 0x1085;

// Memory.
pub const CL_MEM_READ_WRITE: cl_bitfield = 1 << 0;
pub const CL_MEM_WRITE_ONLY: cl_bitfield = 1 << 1;
pub const CL_MEM_READ_ONLY: cl_bitfield = 1 << 2;
pub const CL_MEM_USE_HOST_PTR: cl_bitfield = 1 << 3;
pub const CL_MEM_ALLOC_HOST_PTR: cl_bitfield = 1 << 4;
pub const CL_MEM_COPY_HOST_PTR: cl_bitfield = 1 << 5;
pub const CL_MEM_HOST_WRITE_ONLY: cl_bitfield = 1 << 7;
pub const CL_MEM_HOST_READ_ONLY: cl_bitfield = 1 << 8;
pub const CL_MEM_HOST_NO_ACCESS: cl_bitfield = 1 << 9;
pub const CL_MEM_TYPE: cl_uint = 0x1100;
pub const CL_MEM_FLAGS: cl_uint = 0x1101;
pub const CL_MEM_SIZE: cl_uint = 0x1102;
pub const CL_MEM_HOST_PTR: cl_uint = 0x1103;
pub const CL_MEM_MAP_COUNT: cl_uint = 0x1104;
pub const CL_MEM_REFERENCE_COUNT: cl_uint = 0x1105;
pub const CL_MEM_CONTEXT: cl_uint = 0x1106;
pub const CL_MEM_ASSOCIATED_MEMOBJECT: cl_uint = 0x1107;
pub const CL_MEM_OFFSET: cl_uint = 0x1108;
pub const CL_MEM_OBJECT_BUFFER: cl_uint = 0x10F0;
pub const CL_MAP_READ: cl_bitfield = 1;
pub const CL_MAP_WRITE: cl_bitfield = 2;
pub const CL_MAP_WRITE_INVALIDATE_REGION: cl_bitfield = 4;
pub const CL_BUFFER_CREATE_TYPE_REGION: cl_uint = 0x1220;
pub const CL_MIGRATE_MEM_OBJECT_HOST: cl_bitfield = 1;
pub const CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED: cl_bitfield = 2;

// Programs.
pub const CL_PROGRAM_REFERENCE_COUNT: cl_uint = 0x1160;
pub const CL_PROGRAM_CONTEXT: cl_uint = 0x1161;
pub const CL_PROGRAM_NUM_DEVICES: cl_uint = 0x1162;
pub const CL_PROGRAM_DEVICES: cl_uint = 0x1163;
pub const CL_PROGRAM_SOURCE: cl_uint = 0x1164;
pub const CL_PROGRAM_BINARY_SIZES: cl_uint = 0x1165;
pub const CL_PROGRAM_BINARIES: cl_uint = 0x1166;
pub const CL_PROGRAM_NUM_KERNELS: cl_uint = 0x1167;
pub const CL_PROGRAM_KERNEL_NAMES: cl_uint = 0x1168;
pub const CL_PROGRAM_BUILD_STATUS: cl_uint = 0x1181;
pub const CL_PROGRAM_BUILD_OPTIONS: cl_uint = 0x1182;
pub const CL_PROGRAM_BUILD_LOG: cl_uint = 0x1183;
pub const CL_PROGRAM_BINARY_TYPE: cl_uint = 0x1184;
pub const CL_PROGRAM_BINARY_TYPE_NONE: cl_uint = 0;
pub const CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT: cl_uint = 1;
pub const CL_PROGRAM_BINARY_TYPE_EXECUTABLE: cl_uint = 4;

// Kernels.
pub const CL_KERNEL_FUNCTION_NAME: cl_uint = 0x1190;
pub const CL_KERNEL_NUM_ARGS: cl_uint = 0x1191;
pub const CL_KERNEL_REFERENCE_COUNT: cl_uint = 0x1192;
pub const CL_KERNEL_CONTEXT: cl_uint = 0x1193;
pub const CL_KERNEL_PROGRAM: cl_uint = 0x1194;
pub const CL_KERNEL_ATTRIBUTES: cl_uint = 0x1195;
pub const CL_KERNEL_ARG_ADDRESS_QUALIFIER: cl_uint = 0x1196;
pub const CL_KERNEL_ARG_ACCESS_QUALIFIER: cl_uint = 0x1197;
pub const CL_KERNEL_ARG_TYPE_NAME: cl_uint = 0x1198;
pub const CL_KERNEL_ARG_TYPE_QUALIFIER: cl_uint = 0x1199;
pub const CL_KERNEL_ARG_NAME: cl_uint = 0x119A;
pub const CL_KERNEL_ARG_ADDRESS_GLOBAL: cl_uint = 0x119B;
pub const CL_KERNEL_ARG_ADDRESS_LOCAL: cl_uint = 0x119C;
pub const CL_KERNEL_ARG_ADDRESS_CONSTANT: cl_uint = 0x119D;
pub const CL_KERNEL_ARG_ADDRESS_PRIVATE: cl_uint = 0x119E;
pub const CL_KERNEL_ARG_TYPE_CONST: cl_bitfield = 1;
pub const CL_KERNEL_WORK_GROUP_SIZE: cl_uint = 0x11B0;

// Events and commands.
pub const CL_EVENT_COMMAND_QUEUE: cl_uint = 0x11D0;
pub const CL_EVENT_COMMAND_TYPE: cl_uint = 0x11D1;
pub const CL_EVENT_REFERENCE_COUNT: cl_uint = 0x11D2;
pub const CL_EVENT_COMMAND_EXECUTION_STATUS: cl_uint = 0x11D3;
pub const CL_EVENT_CONTEXT: cl_uint = 0x11D4;
pub const CL_RUNNING: cl_int = 1;
pub const CL_SUBMITTED: cl_int = 2;
pub const CL_QUEUED: cl_int = 3;
pub const CL_COMMAND_NDRANGE_KERNEL: cl_uint = 0x11F0;
pub const CL_COMMAND_TASK: cl_uint = 0x11F1;
pub const CL_COMMAND_NATIVE_KERNEL: cl_uint = 0x11F2;
pub const CL_COMMAND_READ_BUFFER: cl_uint = 0x11F3;
pub const CL_COMMAND_WRITE_BUFFER: cl_uint = 0x11F4;
pub const CL_COMMAND_COPY_BUFFER: cl_uint = 0x11F5;
pub const CL_COMMAND_MAP_BUFFER: cl_uint = 0x11FB;
pub const CL_COMMAND_UNMAP_MEM_OBJECT: cl_uint = 0x11FD;
pub const CL_COMMAND_MARKER: cl_uint = 0x11FE;
pub const CL_COMMAND_READ_BUFFER_RECT: cl_uint = 0x1201;
pub const CL_COMMAND_WRITE_BUFFER_RECT: cl_uint = 0x1202;
pub const CL_COMMAND_COPY_BUFFER_RECT: cl_uint = 0x1203;
pub const CL_COMMAND_USER: cl_uint = 0x1204;
pub const CL_COMMAND_BARRIER: cl_uint = 0x1205;
pub const CL_COMMAND_MIGRATE_MEM_OBJECTS: cl_uint = 0x1206;
pub const CL_COMMAND_FILL_BUFFER: cl_uint = 0x1207;
pub const CL_PROFILING_COMMAND_QUEUED: cl_uint = 0x1280;
pub const CL_PROFILING_COMMAND_SUBMIT: cl_uint = 0x1281;
pub const CL_PROFILING_COMMAND_START: cl_uint = 0x1282;
pub const CL_PROFILING_COMMAND_END: cl_uint = 0x1283;
pub const CL_PROFILING_COMMAND_COMPLETE: cl_uint = 0x1284;
