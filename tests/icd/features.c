/* What the Weft platform and its devices report is what Weft implements (issue 32, item 4),
 * so that conformance tests and pyopencl take the right paths.
 *
 * For every device (the unified one and each real one, as Weft lists them):
 * 1. Extensions: CL_DEVICE_EXTENSIONS and CL_DEVICE_EXTENSIONS_WITH_VERSION name the same
 *    extensions; each is either one whose entry points clGetExtensionFunctionAddress-
 *    ForPlatform returns (every one of them, non-NULL), or one known to need none (it only
 *    changes OpenCL C, or adds device queries); an extension in neither table fails, so a
 *    new one must be classified here. The platform's extensions are every device's.
 * 2. Optional features: each OpenCL C feature macro (CL_DEVICE_OPENCL_C_FEATURES) agrees
 *    with its device query (pipes, device-side enqueue, sub-groups, program-scope
 *    globals, generic address space, work-group collectives, images, fp64); every OpenCL
 *    C version in CL_DEVICE_OPENCL_C_ALL_VERSIONS is at most 3.0; what a device reports
 *    absent, Weft refuses with the specification's error: pipes (clCreatePipe), sub-groups
 *    (clGetKernelSubGroupInfo), on-device queues, IL programs (clCreateProgramWithIL, with
 *    no IL version and an empty CL_DEVICE_ILS_WITH_VERSION).
 * 3. The unified device reports no more than each real device: its extensions and
 *    feature macros are among every real device's, its OpenCL C versions are those every
 *    real device lists (each once), and it names no physical device
 *    (no cl_khr_pci_bus_info or cl_khr_device_uuid).
 * Prints "features ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Extensions with entry points, and those entry points (NULL-terminated). */
static const char *const WITH_ENTRY_POINTS[][6] = {
    {"cl_khr_icd", "clIcdGetPlatformIDsKHR", NULL},
    {"cl_khr_il_program", "clCreateProgramWithILKHR", NULL},
    {"cl_khr_create_command_queue", "clCreateCommandQueueWithPropertiesKHR", NULL},
    {"cl_khr_subgroups", "clGetKernelSubGroupInfoKHR", NULL},
    {"cl_khr_terminate_context", "clTerminateContextKHR", NULL},
    {"cl_khr_suggested_local_work_size", "clGetKernelSuggestedLocalWorkSizeKHR", NULL},
    {"cl_khr_command_buffer", "clCreateCommandBufferKHR", "clFinalizeCommandBufferKHR", NULL},
    {"cl_khr_semaphore", "clCreateSemaphoreWithPropertiesKHR", NULL},
    {"cl_khr_external_memory", "clEnqueueAcquireExternalMemObjectsKHR", NULL},
    {"cl_khr_gl_sharing", "clGetGLContextInfoKHR", NULL},
    {"cl_khr_gl_event", "clCreateEventFromGLsyncKHR", NULL},
    {"cl_ext_device_fission", "clCreateSubDevicesEXT", NULL},
    {"cl_nv_create_buffer", "clCreateBufferNV", NULL},
    {"cl_amd_copy_buffer_p2p", "clEnqueueCopyBufferP2PAMD", NULL},
    {"cl_ext_image_requirements_info", "clGetImageRequirementsInfoEXT", NULL},
    {"cl_intel_unified_shared_memory", "clHostMemAllocINTEL", NULL},
};

/* Extensions that add no entry point (OpenCL C only, or device queries). */
static const char *const WITHOUT_ENTRY_POINTS[] = {
    "cl_khr_byte_addressable_store", "cl_khr_fp16", "cl_khr_fp64", "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics", "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics",
    "cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics", "cl_khr_3d_image_writes", "cl_khr_depth_images",
    "cl_khr_srgb_image_writes", "cl_khr_select_fprounding_mode", "cl_khr_extended_versioning", "cl_khr_device_uuid",
    "cl_khr_pci_bus_info", "cl_khr_integer_dot_product", "cl_khr_expect_assume", "cl_khr_extended_async_copies",
    "cl_khr_extended_bit_ops", "cl_khr_kernel_clock", "cl_khr_work_group_uniform_arithmetic",
    "cl_khr_async_work_group_copy_fence", "cl_ext_atomic_counters_32", "cl_ext_atomic_counters_64",
    "cl_ext_float_atomics", "cl_ext_cxx_for_opencl", "cl_nv_compiler_options", "cl_nv_pragma_unroll",
    "cl_nv_device_attribute_query", "cl_amd_media_ops", "cl_amd_media_ops2", "cl_amd_printf", "cl_amd_fp64",
    "cl_amd_vec3", "cl_amd_device_attribute_query", "cl_weft_placement",
};

static cl_platform_id plat;

static int has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

/* The extension `name` is one Weft can report: its entry points are there, or it has none. */
static void check_extension(const char *name) {
    for (size_t i = 0; i < sizeof WITH_ENTRY_POINTS / sizeof *WITH_ENTRY_POINTS; i++) {
        if (strcmp(WITH_ENTRY_POINTS[i][0], name) != 0) continue;
        for (int j = 1; WITH_ENTRY_POINTS[i][j]; j++) {
            if (!clGetExtensionFunctionAddressForPlatform(plat, WITH_ENTRY_POINTS[i][j])) {
                fprintf(stderr, "FAIL: %s is reported, but %s is not available\n", name, WITH_ENTRY_POINTS[i][j]);
                exit(1);
            }
        }
        return;
    }
    for (size_t i = 0; i < sizeof WITHOUT_ENTRY_POINTS / sizeof *WITHOUT_ENTRY_POINTS; i++)
        if (strcmp(WITHOUT_ENTRY_POINTS[i], name) == 0) return;
    fprintf(stderr, "FAIL: %s is reported; classify it in features.c (entry points or none)\n", name);
    exit(1);
}

/* The names of a cl_name_version query, space-separated, into `out`. */
static void names_of(cl_device_id d, cl_device_info param, char *out, size_t cap) {
    static cl_name_version v[512];
    size_t bytes = 0;
    CHECK(clGetDeviceInfo(d, param, sizeof v, v, &bytes));
    EXPECT(bytes % sizeof *v == 0);
    out[0] = '\0';
    for (size_t i = 0; i < bytes / sizeof *v; i++) {
        EXPECT(strlen(out) + strlen(v[i].name) + 2 < cap);
        if (out[0]) strcat(out, " ");
        strcat(out, v[i].name);
    }
}

/* `src` into `dst` of `cap` bytes (EXPECTed to fit). */
static void copy_to(char *dst, const char *src, size_t cap) {
    size_t n = strlen(src);
    EXPECT(n < cap);
    memcpy(dst, src, n + 1);
}

static cl_ulong u64_of(cl_device_id d, cl_device_info p) {
    cl_ulong v = 0;
    CHECK(clGetDeviceInfo(d, p, sizeof v, &v, NULL));
    return v;
}

static cl_uint u32_of(cl_device_id d, cl_device_info p) {
    cl_uint v = 0;
    CHECK(clGetDeviceInfo(d, p, sizeof v, &v, NULL));
    return v;
}

static size_t size_of(cl_device_id d, cl_device_info p) {
    size_t v = 0;
    CHECK(clGetDeviceInfo(d, p, sizeof v, &v, NULL));
    return v;
}

/* Feature macro `name` is in `features` exactly when `supported`. */
static void agrees(const char *features, const char *name, int supported, cl_uint dev) {
    if (has_word(features, name) != !!supported) {
        fprintf(stderr, "FAIL: device %u: feature %s %s, but its query says %s\n", dev, name,
                has_word(features, name) ? "reported" : "absent", supported ? "supported" : "unsupported");
        exit(1);
    }
}

static char ext[8][8192], feat[8][8192];
/* Each device's OpenCL C versions (CL_DEVICE_OPENCL_C_ALL_VERSIONS). */
static cl_version cvers[8][64];
static size_t ncvers[8];

int main(void) {
    plat = weft_platform();
    cl_device_id devs[8];
    cl_uint nd = weft_devices(plat, devs, 8);
    EXPECT(nd >= 2);
    char pext[4096];
    CHECK(clGetPlatformInfo(plat, CL_PLATFORM_EXTENSIONS, sizeof pext, pext, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, nd, devs, NULL, NULL, &err);
    CHECK(err);

    for (cl_uint d = 0; d < nd; d++) {
        /* 1. Extensions. */
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_EXTENSIONS, sizeof ext[d], ext[d], NULL));
        char with_version[8192];
        names_of(devs[d], CL_DEVICE_EXTENSIONS_WITH_VERSION, with_version, sizeof with_version);
        char copy[8192];
        copy_to(copy, ext[d], sizeof copy);
        size_t listed = 0;
        for (char *save, *e = strtok_r(copy, " ", &save); e; e = strtok_r(NULL, " ", &save)) {
            check_extension(e);
            EXPECT(has_word(with_version, e));
            listed++;
        }
        size_t versioned = 0;
        for (char *save, *e = strtok_r(with_version, " ", &save); e; e = strtok_r(NULL, " ", &save)) versioned++;
        EXPECT(listed == versioned);
        copy_to(copy, pext, sizeof copy);
        for (char *save, *e = strtok_r(copy, " ", &save); e; e = strtok_r(NULL, " ", &save)) {
            check_extension(e);
            /* cl_khr_icd is the platform's own. */
            if (strcmp(e, "cl_khr_icd") != 0) EXPECT(has_word(ext[d], e));
        }

        /* 2. Optional features against their queries. */
        names_of(devs[d], CL_DEVICE_OPENCL_C_FEATURES, feat[d], sizeof feat[d]);
        cl_bool pipes = 0, generic = 0, collectives = 0, images = 0;
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_PIPE_SUPPORT, sizeof pipes, &pipes, NULL));
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT, sizeof generic, &generic, NULL));
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT, sizeof collectives,
                              &collectives, NULL));
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
        agrees(feat[d], "__opencl_c_pipes", pipes, d);
        agrees(feat[d], "__opencl_c_device_enqueue", u64_of(devs[d], CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES) != 0, d);
        agrees(feat[d], "__opencl_c_subgroups", u32_of(devs[d], CL_DEVICE_MAX_NUM_SUB_GROUPS) != 0, d);
        agrees(feat[d], "__opencl_c_program_scope_global_variables",
               size_of(devs[d], CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE) != 0, d);
        agrees(feat[d], "__opencl_c_generic_address_space", generic, d);
        agrees(feat[d], "__opencl_c_work_group_collective_functions", collectives, d);
        agrees(feat[d], "__opencl_c_images", images, d);
        agrees(feat[d], "__opencl_c_fp64", has_word(ext[d], "cl_khr_fp64"), d);
        static cl_name_version cv[64];
        size_t bytes = 0;
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_OPENCL_C_ALL_VERSIONS, sizeof cv, cv, &bytes));
        EXPECT(bytes >= sizeof *cv);
        ncvers[d] = bytes / sizeof *cv;
        for (size_t i = 0; i < ncvers[d]; i++) {
            EXPECT(cv[i].version <= CL_MAKE_VERSION(3, 0, 0));
            for (size_t j = 0; j < i; j++) EXPECT(cv[j].version != cv[i].version); /* each once */
            cvers[d][i] = cv[i].version;
        }

        /* The refusals behind "unsupported". */
        char il[256] = "x";
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_IL_VERSION, sizeof il, il, NULL));
        size_t ils = 1;
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_ILS_WITH_VERSION, 0, NULL, &ils));
        EXPECT(il[0] == '\0' && ils == 0);
        if (!pipes) EXPECT_CODE(CL_INVALID_OPERATION, (clCreatePipe(ctx, 0, 4, 16, NULL, &err), err));
        cl_queue_properties on_device[] = {CL_QUEUE_PROPERTIES,
                                           CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[d], on_device, &err);
        EXPECT(q == NULL && err == CL_INVALID_QUEUE_PROPERTIES);
    }
    static const unsigned char spirv[] = {0x03, 0x02, 0x23, 0x07};
    EXPECT_CODE(CL_INVALID_OPERATION, (clCreateProgramWithIL(ctx, spirv, sizeof spirv, &err), err));
    const char *src = "__kernel void k(__global int *a) { a[0] = 1; }";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, nd, devs, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "k", &err);
    CHECK(err);
    size_t local = 1, out = 0;
    EXPECT_CODE(CL_INVALID_OPERATION, clGetKernelSubGroupInfo(k, devs[0], CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                                              sizeof local, &local, sizeof out, &out, NULL));

    /* 3. The unified device (devs[0]) reports no more than each real one, and compiles
     * every OpenCL C version all of them compile. */
    for (size_t i = 0; nd > 1 && i < ncvers[1]; i++) {
        int everywhere = 1, unified = 0;
        for (cl_uint d = 2; d < nd; d++) {
            int here = 0;
            for (size_t j = 0; j < ncvers[d]; j++) here |= cvers[d][j] == cvers[1][i];
            everywhere &= here;
        }
        for (size_t j = 0; j < ncvers[0]; j++) unified |= cvers[0][j] == cvers[1][i];
        EXPECT(unified == everywhere);
    }
    for (cl_uint d = 1; d < nd; d++) {
        char copy[8192];
        copy_to(copy, ext[0], sizeof copy);
        for (char *save, *e = strtok_r(copy, " ", &save); e; e = strtok_r(NULL, " ", &save)) EXPECT(has_word(ext[d], e));
        copy_to(copy, feat[0], sizeof copy);
        for (char *save, *e = strtok_r(copy, " ", &save); e; e = strtok_r(NULL, " ", &save)) EXPECT(has_word(feat[d], e));
    }
    if (nd > 2) {
        EXPECT(!has_word(ext[0], "cl_khr_pci_bus_info") && !has_word(ext[0], "cl_khr_device_uuid"));
        EXPECT(!has_word(feat[0], "__opencl_c_program_scope_global_variables"));
    }

    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    printf("features ok\nall ok\n");
    return 0;
}
