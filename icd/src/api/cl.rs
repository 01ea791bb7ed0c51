//! OpenCL 1.2 constants the entry points need beyond `weft_vendors::opencl::sys` (values
//! from Khronos' `CL/cl.h`; `tests/icd` compiles C against the real header).
#![allow(dead_code)]

pub use weft_vendors::opencl::sys::{
    CL_BUILD_ERROR, CL_BUILD_NONE, CL_BUILD_PROGRAM_FAILURE, CL_BUILD_SUCCESS, CL_COMPILE_PROGRAM_FAILURE, CL_COMPLETE,
    CL_DEVICE_NOT_FOUND, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, CL_FALSE, CL_INVALID_ARG_INDEX, CL_INVALID_ARG_SIZE,
    CL_INVALID_ARG_VALUE, CL_INVALID_BINARY, CL_INVALID_BUFFER_SIZE, CL_INVALID_BUILD_OPTIONS, CL_INVALID_COMMAND_QUEUE,
    CL_INVALID_COMPILER_OPTIONS, CL_INVALID_CONTEXT, CL_INVALID_DEVICE, CL_INVALID_DEVICE_TYPE, CL_INVALID_EVENT,
    CL_INVALID_EVENT_WAIT_LIST, CL_INVALID_GL_OBJECT, CL_INVALID_GLOBAL_OFFSET, CL_INVALID_GLOBAL_WORK_SIZE, CL_INVALID_HOST_PTR,
    CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, CL_INVALID_IMAGE_SIZE, CL_INVALID_KERNEL, CL_INVALID_KERNEL_ARGS, CL_INVALID_KERNEL_DEFINITION,
    CL_INVALID_KERNEL_NAME, CL_INVALID_LINKER_OPTIONS, CL_INVALID_MEM_OBJECT, CL_INVALID_OPERATION, CL_INVALID_PLATFORM,
    CL_INVALID_PROGRAM, CL_INVALID_PROGRAM_EXECUTABLE, CL_INVALID_PROPERTY, CL_INVALID_QUEUE_PROPERTIES, CL_INVALID_SAMPLER,
    CL_INVALID_VALUE, CL_INVALID_WORK_DIMENSION, CL_INVALID_WORK_GROUP_SIZE, CL_INVALID_WORK_ITEM_SIZE, CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
    CL_MEM_COPY_OVERLAP, CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_MISALIGNED_SUB_BUFFER_OFFSET, CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES,
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
pub const CL_MEM_KERNEL_READ_AND_WRITE: cl_bitfield = 1 << 12;
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
pub const CL_PROGRAM_BINARY_TYPE_LIBRARY: cl_uint = 2;
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

// Weft's own extension, cl_weft_placement (include/CL/cl_weft.h, docs/opencl.md): values
// outside every range the Khronos registry hands out (its blocks end below 0x20000), so no
// registered enum can collide.
pub const CL_WEFT_PLACEMENT_EXTENSION_NAME: &str = "cl_weft_placement";
pub const CL_EVENT_DEVICE_WEFT: cl_uint = 0x57EF_0001;

// Images (OpenCL 1.2).
pub use weft_vendors::opencl::sys::{
    CL_IMAGE_FORMAT_MISMATCH, CL_IMAGE_FORMAT_NOT_SUPPORTED, CL_INVALID_IMAGE_DESCRIPTOR, cl_image_desc, cl_image_format,
};
pub const CL_MEM_OBJECT_IMAGE2D: cl_uint = 0x10F1;
pub const CL_MEM_OBJECT_IMAGE3D: cl_uint = 0x10F2;
pub const CL_MEM_OBJECT_IMAGE2D_ARRAY: cl_uint = 0x10F3;
pub const CL_MEM_OBJECT_IMAGE1D: cl_uint = 0x10F4;
pub const CL_MEM_OBJECT_IMAGE1D_ARRAY: cl_uint = 0x10F5;
pub const CL_MEM_OBJECT_IMAGE1D_BUFFER: cl_uint = 0x10F6;
pub const CL_IMAGE_FORMAT: cl_uint = 0x1110;
pub const CL_IMAGE_ELEMENT_SIZE: cl_uint = 0x1111;
pub const CL_IMAGE_ROW_PITCH: cl_uint = 0x1112;
pub const CL_IMAGE_SLICE_PITCH: cl_uint = 0x1113;
pub const CL_IMAGE_WIDTH: cl_uint = 0x1114;
pub const CL_IMAGE_HEIGHT: cl_uint = 0x1115;
pub const CL_IMAGE_DEPTH: cl_uint = 0x1116;
pub const CL_IMAGE_ARRAY_SIZE: cl_uint = 0x1117;
pub const CL_IMAGE_BUFFER: cl_uint = 0x1118;
pub const CL_IMAGE_NUM_MIP_LEVELS: cl_uint = 0x1119;
pub const CL_IMAGE_NUM_SAMPLES: cl_uint = 0x111A;
pub const CL_R: cl_uint = 0x10B0;
pub const CL_A: cl_uint = 0x10B1;
pub const CL_RG: cl_uint = 0x10B2;
pub const CL_RA: cl_uint = 0x10B3;
pub const CL_RGB: cl_uint = 0x10B4;
pub const CL_RGBA: cl_uint = 0x10B5;
pub const CL_BGRA: cl_uint = 0x10B6;
pub const CL_ARGB: cl_uint = 0x10B7;
pub const CL_INTENSITY: cl_uint = 0x10B8;
pub const CL_LUMINANCE: cl_uint = 0x10B9;
pub const CL_RX: cl_uint = 0x10BA;
pub const CL_RGX: cl_uint = 0x10BB;
pub const CL_RGBX: cl_uint = 0x10BC;
pub const CL_ABGR: cl_uint = 0x10C3;
pub const CL_SNORM_INT8: cl_uint = 0x10D0;
pub const CL_SNORM_INT16: cl_uint = 0x10D1;
pub const CL_UNORM_INT8: cl_uint = 0x10D2;
pub const CL_UNORM_INT16: cl_uint = 0x10D3;
pub const CL_UNORM_SHORT_565: cl_uint = 0x10D4;
pub const CL_UNORM_SHORT_555: cl_uint = 0x10D5;
pub const CL_UNORM_INT_101010: cl_uint = 0x10D6;
pub const CL_SIGNED_INT8: cl_uint = 0x10D7;
pub const CL_SIGNED_INT16: cl_uint = 0x10D8;
pub const CL_SIGNED_INT32: cl_uint = 0x10D9;
pub const CL_UNSIGNED_INT8: cl_uint = 0x10DA;
pub const CL_UNSIGNED_INT16: cl_uint = 0x10DB;
pub const CL_UNSIGNED_INT32: cl_uint = 0x10DC;
pub const CL_HALF_FLOAT: cl_uint = 0x10DD;
pub const CL_FLOAT: cl_uint = 0x10DE;
pub const CL_COMMAND_READ_IMAGE: cl_uint = 0x11F6;
pub const CL_COMMAND_WRITE_IMAGE: cl_uint = 0x11F7;
pub const CL_COMMAND_COPY_IMAGE: cl_uint = 0x11F8;
pub const CL_COMMAND_COPY_IMAGE_TO_BUFFER: cl_uint = 0x11F9;
pub const CL_COMMAND_COPY_BUFFER_TO_IMAGE: cl_uint = 0x11FA;
pub const CL_COMMAND_MAP_IMAGE: cl_uint = 0x11FC;
pub const CL_COMMAND_FILL_IMAGE: cl_uint = 0x1208;
pub const CL_KERNEL_ARG_ACCESS_READ_ONLY: cl_uint = 0x11A0;
pub const CL_DEVICE_IMAGE2D_MAX_WIDTH: cl_uint = 0x1011;
pub const CL_DEVICE_IMAGE2D_MAX_HEIGHT: cl_uint = 0x1012;
pub const CL_DEVICE_IMAGE3D_MAX_WIDTH: cl_uint = 0x1013;
pub const CL_DEVICE_IMAGE3D_MAX_HEIGHT: cl_uint = 0x1014;
pub const CL_DEVICE_IMAGE3D_MAX_DEPTH: cl_uint = 0x1015;
pub const CL_DEVICE_IMAGE_MAX_BUFFER_SIZE: cl_uint = 0x1040;
pub const CL_DEVICE_IMAGE_MAX_ARRAY_SIZE: cl_uint = 0x1041;

// Samplers.
pub const CL_ADDRESS_NONE: cl_uint = 0x1130;
pub const CL_ADDRESS_MIRRORED_REPEAT: cl_uint = 0x1134;
pub const CL_FILTER_NEAREST: cl_uint = 0x1140;
pub const CL_FILTER_LINEAR: cl_uint = 0x1141;
pub const CL_SAMPLER_REFERENCE_COUNT: cl_uint = 0x1150;
pub const CL_SAMPLER_CONTEXT: cl_uint = 0x1151;
pub const CL_SAMPLER_NORMALIZED_COORDS: cl_uint = 0x1152;
pub const CL_SAMPLER_ADDRESSING_MODE: cl_uint = 0x1153;
pub const CL_SAMPLER_FILTER_MODE: cl_uint = 0x1154;
pub const CL_SAMPLER_PROPERTIES: cl_uint = 0x1158;
