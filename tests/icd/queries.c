/* OpenCL 3.0 property queries on every Weft device, as the CTS's api suite makes them:
 * CL_MEM_PROPERTIES (nothing for clCreateBuffer or a null list, the list as given
 * otherwise; an unknown property is CL_INVALID_PROPERTY), CL_QUEUE_PROPERTIES_ARRAY
 * likewise, CL_QUEUE_SIZE on a host queue (CL_INVALID_COMMAND_QUEUE) and
 * CL_QUEUE_DEVICE_DEFAULT (none); and a program rebuilt right after its kernel's release,
 * while a launch of that kernel still waits (only the application's kernel objects
 * block a rebuild). Prints "device N: queries ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

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
    CHECK(clReleaseProgram(prog));

    CHECK(clReleaseCommandQueue(q0));
    CHECK(clReleaseCommandQueue(q1));
    CHECK(clReleaseMemObject(plain));
    CHECK(clReleaseMemObject(null_props));
    CHECK(clReleaseMemObject(with_props));
    CHECK(clReleaseContext(ctx));
}

int main(void) {
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft_platform(), devs, 8);
    for (cl_uint d = 0; d < nd; d++) {
        one_device(devs[d]);
        printf("device %u: queries ok\n", d);
    }
    printf("all ok\n");
    return 0;
}
