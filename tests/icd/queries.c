/* OpenCL 3.0 property queries on every Weft device, as the CTS's api suite makes them:
 * CL_MEM_PROPERTIES (nothing for clCreateBuffer or a null list, the list as given
 * otherwise; an unknown property is CL_INVALID_PROPERTY), CL_QUEUE_PROPERTIES_ARRAY
 * likewise, CL_QUEUE_SIZE on a host queue (CL_INVALID_COMMAND_QUEUE) and
 * CL_QUEUE_DEVICE_DEFAULT (none); and a program rebuilt right after its kernel's release,
 * while a launch of that kernel still waits (only the application's kernel objects
 * block a rebuild); CL_MEM_HOST_* flags refuse the host accesses they forbid. The
 * unified device's limits are its devices' smallest and its
 * floating-point capabilities what they all have. Prints "device N: queries ok",
 * "unified limits ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void one_device(cl_device_id dev) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    size_t sz = 1;
    cl_mem plain = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(err);
    CHECK(clGetMemObjectInfo(plain, CL_MEM_PROPERTIES, 0, NULL, &sz));
    EXPECT(sz == 0);
    cl_mem null_props = clCreateBufferWithProperties(ctx, NULL, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(err);
    CHECK(clGetMemObjectInfo(null_props, CL_MEM_PROPERTIES, 0, NULL, &sz));
    EXPECT(sz == 0);
    cl_mem_properties empty[] = {0}, got[4] = {7, 7, 7, 7};
    cl_mem with_props = clCreateBufferWithProperties(ctx, empty, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(err);
    CHECK(clGetMemObjectInfo(with_props, CL_MEM_PROPERTIES, sizeof got, got, &sz));
    EXPECT(sz == sizeof(cl_mem_properties) && got[0] == 0);
    cl_mem_properties bogus[] = {0x7777, 1, 0};
    EXPECT(clCreateBufferWithProperties(ctx, bogus, CL_MEM_READ_WRITE, 64, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_PROPERTY);

    cl_command_queue q0 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    CHECK(clGetCommandQueueInfo(q0, CL_QUEUE_PROPERTIES_ARRAY, 0, NULL, &sz));
    EXPECT(sz == 0);
    cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0}, qgot[4] = {7, 7, 7, 7};
    cl_command_queue q1 = clCreateCommandQueueWithProperties(ctx, dev, qp, &err);
    CHECK(err);
    CHECK(clGetCommandQueueInfo(q1, CL_QUEUE_PROPERTIES_ARRAY, sizeof qgot, qgot, &sz));
    EXPECT(sz == 3 * sizeof(cl_queue_properties));
    EXPECT(qgot[0] == CL_QUEUE_PROPERTIES && qgot[1] == CL_QUEUE_PROFILING_ENABLE && qgot[2] == 0);
    cl_uint qsize;
    EXPECT_CODE(CL_INVALID_COMMAND_QUEUE, clGetCommandQueueInfo(q1, CL_QUEUE_SIZE, sizeof qsize, &qsize, NULL));
    cl_command_queue dq = (cl_command_queue)1;
    CHECK(clGetCommandQueueInfo(q1, CL_QUEUE_DEVICE_DEFAULT, sizeof dq, &dq, NULL));
    EXPECT(dq == NULL);

    /* Rebuild right after releasing the kernel, its launch still waiting. */
    const char *src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }\n";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "inc", &err);
    CHECK(err);
    EXPECT_CODE(CL_INVALID_OPERATION, clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    CHECK(clSetKernelArg(k, 0, sizeof plain, &plain));
    size_t g = 16;
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    CHECK(clEnqueueNDRangeKernel(q0, k, 1, NULL, &g, NULL, 1, &gate, NULL));
    CHECK(clReleaseKernel(k));
    CHECK(clBuildProgram(prog, 1, &dev, "-DREBUILT", NULL, NULL));
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q0));
    CHECK(clReleaseEvent(gate));
    /* Program queries of 2.x/3.0 features Weft's devices lack. */
    cl_bool present = CL_TRUE;
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT, sizeof present, &present, NULL));
    EXPECT(present == CL_FALSE);
    present = CL_TRUE;
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT, sizeof present, &present, NULL));
    EXPECT(present == CL_FALSE);
    size_t globals = 1;
    CHECK(clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE, sizeof globals, &globals, NULL));
    EXPECT(globals == 0);
    CHECK(clReleaseProgram(prog));

    /* Image formats a kernel may read and write; a 2-D image of a buffer is refused as the
     * optional feature it is (the device reports pitch alignment 0). */
    cl_uint nformats = 0;
    CHECK(clGetSupportedImageFormats(ctx, CL_MEM_KERNEL_READ_AND_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &nformats));
    CHECK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE3D, 0, NULL, &nformats));
    cl_uint pitch_align = 1;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE_PITCH_ALIGNMENT, sizeof pitch_align, &pitch_align, NULL));
    if (pitch_align == 0) {
        cl_image_format fmt = {CL_RGBA, CL_UNORM_INT8};
        cl_image_desc desc = {0};
        desc.image_type = CL_MEM_OBJECT_IMAGE2D;
        desc.image_width = 4;
        desc.image_height = 4;
        desc.mem_object = plain;
        EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err) == NULL);
        EXPECT(err == CL_INVALID_OPERATION);
    }

    /* CL_MEM_HOST_* flags: the host may not do what they forbid (sub-buffers inherit). */
    char bytes[64] = {0};
    cl_mem ro = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_READ_ONLY, 64, NULL, &err);
    CHECK(err);
    cl_mem wo = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_WRITE_ONLY, 64, NULL, &err);
    CHECK(err);
    cl_mem na = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, 64, NULL, &err);
    CHECK(err);
    EXPECT_CODE(CL_INVALID_OPERATION, clEnqueueWriteBuffer(q0, ro, CL_TRUE, 0, 8, bytes, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q0, ro, CL_TRUE, 0, 8, bytes, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_OPERATION, clEnqueueReadBuffer(q0, wo, CL_TRUE, 0, 8, bytes, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(q0, wo, CL_TRUE, 0, 8, bytes, 0, NULL, NULL));
    EXPECT(clEnqueueMapBuffer(q0, na, CL_TRUE, CL_MAP_WRITE, 0, 8, 0, NULL, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    EXPECT(clEnqueueMapBuffer(q0, wo, CL_TRUE, CL_MAP_READ, 0, 8, 0, NULL, NULL, &err) == NULL && err == CL_INVALID_OPERATION);
    cl_buffer_region half = {0, 32};
    cl_mem sub = clCreateSubBuffer(wo, 0, CL_BUFFER_CREATE_TYPE_REGION, &half, &err);
    CHECK(err);
    size_t zero3[3] = {0, 0, 0}, reg3[3] = {8, 1, 1};
    EXPECT_CODE(CL_INVALID_OPERATION,
                clEnqueueReadBufferRect(q0, sub, CL_TRUE, zero3, zero3, reg3, 0, 0, 0, 0, bytes, 0, NULL, NULL));
    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(ro));
    CHECK(clReleaseMemObject(wo));
    CHECK(clReleaseMemObject(na));

    CHECK(clReleaseCommandQueue(q0));
    CHECK(clReleaseCommandQueue(q1));
    CHECK(clReleaseMemObject(plain));
    CHECK(clReleaseMemObject(null_props));
    CHECK(clReleaseMemObject(with_props));
    CHECK(clReleaseContext(ctx));
}

static cl_ulong info_u(cl_device_id d, cl_device_info param, size_t width) {
    cl_ulong v = 0;
    cl_uint v4 = 0;
    if (width == 4) {
        CHECK(clGetDeviceInfo(d, param, 4, &v4, NULL));
        return v4;
    }
    CHECK(clGetDeviceInfo(d, param, 8, &v, NULL));
    return v;
}

/* Device 0 is the unified device, 1.. the real ones. */
static void unified_limits(const cl_device_id *devs, cl_uint nd) {
    const cl_device_info mins8[] = {CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_MAX_PARAMETER_SIZE,
                                    CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, CL_DEVICE_LOCAL_MEM_SIZE,
                                    CL_DEVICE_MAX_MEM_ALLOC_SIZE};
    const cl_device_info mins4[] = {CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT,
                                    CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE, CL_DEVICE_MAX_CONSTANT_ARGS};
    const cl_device_info ands8[] = {CL_DEVICE_SINGLE_FP_CONFIG, CL_DEVICE_DOUBLE_FP_CONFIG};
    for (size_t k = 0; k < sizeof mins8 / sizeof *mins8 + sizeof mins4 / sizeof *mins4; k++) {
        int wide = k < sizeof mins8 / sizeof *mins8;
        cl_device_info param = wide ? mins8[k] : mins4[k - sizeof mins8 / sizeof *mins8];
        cl_ulong m = (cl_ulong)-1;
        for (cl_uint d = 1; d < nd; d++) {
            cl_ulong v = info_u(devs[d], param, wide ? 8 : 4);
            if (v < m) m = v;
        }
        if (info_u(devs[0], param, wide ? 8 : 4) != m) {
            fprintf(stderr, "FAIL: unified device's 0x%x = %llu, smallest of its devices %llu\n", (unsigned)param,
                    (unsigned long long)info_u(devs[0], param, wide ? 8 : 4), (unsigned long long)m);
            exit(1);
        }
    }
    for (size_t k = 0; k < sizeof ands8 / sizeof *ands8; k++) {
        cl_ulong a = (cl_ulong)-1;
        for (cl_uint d = 1; d < nd; d++) a &= info_u(devs[d], ands8[k], 8);
        EXPECT(info_u(devs[0], ands8[k], 8) == a);
    }
    size_t uni[3] = {0}, sizes[3];
    CHECK(clGetDeviceInfo(devs[0], CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof uni, uni, NULL));
    for (cl_uint d = 1; d < nd; d++) {
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, NULL));
        for (int j = 0; j < 3; j++) EXPECT(uni[j] <= sizes[j]);
    }
    printf("unified limits ok\n");
}

/* A NULL device: CL_INVALID_DEVICE, as the specification says, unless SOCL's convention
 * is asked for (WEFT_SOCL_NULL_DEVICE=1): then a queue over the context's devices, here
 * the real ones, running kernels there. */
static void null_device(const cl_device_id *devs, cl_uint nd) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, nd - 1, devs + 1, NULL, NULL, &err);
    CHECK(err);
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, NULL, ooo, &err);
    const char *socl = getenv("WEFT_SOCL_NULL_DEVICE");
    if (!socl || strcmp(socl, "1") != 0) {
        EXPECT(q == NULL && err == CL_INVALID_DEVICE);
        CHECK(clReleaseContext(ctx));
        return;
    }
    CHECK(err);
    const char *src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }\n";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "inc", &err);
    CHECK(err);
    int data[64] = {0};
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof m, &m));
    size_t g = 64;
    for (int i = 0; i < 4; i++) CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL));
    for (int i = 0; i < 64; i++) EXPECT(data[i] == 4);
    CHECK(clReleaseMemObject(m));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("null device queue ok\n");
}

int main(void) {
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft_platform(), devs, 8);
    unified_limits(devs, nd);
    null_device(devs, nd);
    for (cl_uint d = 0; d < nd; d++) {
        one_device(devs[d]);
        printf("device %u: queries ok\n", d);
    }
    printf("all ok\n");
    return 0;
}
