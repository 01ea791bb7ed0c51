/* Two real devices behind Weft run kernels at the same time (issue 33): one host thread,
 * an in-order queue with profiling on each real device, one long kernel on each; the two
 * commands' [start, end] intervals (CL_PROFILING_COMMAND_START/END) must overlap. A
 * device whose launch another device's driver or a runtime lock holds back starts its
 * kernel only after the other one ended. (Weft's START is taken when its driver launches
 * the kernel, before the vendor call: a lock inside the vendor calls would not show
 * here.) Results are checked. Argument: loop steps per work item (default 20,000,000).
 * Prints "overlap ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static const char *SRC =
    SPIN_SRC;

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20000000;
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft_platform(), devs, 8);
    EXPECT(nd >= 3); /* the unified device and two real ones */
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 2, devs + 1, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 2, devs + 1, NULL, NULL, NULL));
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q[2];
    cl_kernel k[2];
    cl_mem out[2];
    cl_event ev[2];
    for (int d = 0; d < 2; d++) {
        q[d] = clCreateCommandQueueWithProperties(ctx, devs[1 + d], props, &err);
        CHECK(err);
        k[d] = clCreateKernel(prog, "spin", &err);
        CHECK(err);
        out[d] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_uint), NULL, &err);
        CHECK(err);
        cl_uint seed = (cl_uint)d;
        CHECK(clSetKernelArg(k[d], 0, sizeof out[d], &out[d]));
        CHECK(clSetKernelArg(k[d], 1, sizeof iters, &iters));
        CHECK(clSetKernelArg(k[d], 2, sizeof seed, &seed));
    }
    /* Warm up (the first launch on a device builds its work-group function). */
    size_t g = 4;
    for (int d = 0; d < 2; d++) CHECK(clEnqueueNDRangeKernel(q[d], k[d], 1, NULL, &g, &g, 0, NULL, NULL));
    for (int d = 0; d < 2; d++) CHECK(clFinish(q[d]));
    for (int d = 0; d < 2; d++) {
        CHECK(clEnqueueNDRangeKernel(q[d], k[d], 1, NULL, &g, &g, 0, NULL, &ev[d]));
        CHECK(clFlush(q[d]));
    }
    CHECK(clWaitForEvents(2, ev));
    cl_ulong start[2], end[2];
    for (int d = 0; d < 2; d++) {
        CHECK(clGetEventProfilingInfo(ev[d], CL_PROFILING_COMMAND_START, sizeof start[d], &start[d], NULL));
        CHECK(clGetEventProfilingInfo(ev[d], CL_PROFILING_COMMAND_END, sizeof end[d], &end[d], NULL));
        EXPECT(end[d] > start[d]);
        cl_uint got[4];
        CHECK(clEnqueueReadBuffer(q[d], out[d], CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (cl_uint i = 0; i < 4; i++) EXPECT(got[i] == spin_expected(iters, (cl_uint)d, i));
    }
    printf("device 1: %.3f-%.3f s, device 2: %.3f-%.3f s\n", 0.0, (double)(end[0] - start[0]) * 1e-9,
           ((double)start[1] - (double)start[0]) * 1e-9, ((double)end[1] - (double)start[0]) * 1e-9);
    if (!(start[1] < end[0] && start[0] < end[1])) {
        fprintf(stderr, "FAIL: the two devices' kernels did not overlap\n");
        return 1;
    }
    printf("overlap ok\n");
    for (int d = 0; d < 2; d++) {
        CHECK(clReleaseEvent(ev[d]));
        CHECK(clReleaseMemObject(out[d]));
        CHECK(clReleaseKernel(k[d]));
        CHECK(clReleaseCommandQueue(q[d]));
    }
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    printf("all ok\n");
    return 0;
}
