/* An in-order queue on Weft's unified device keeps its order and still spreads over the
 * real devices (issue 33, item 3).
 *
 * 1. Spread: a long kernel on real device D (its own in-order queue, flushed), then two
 *    shorter kernels on an in-order queue of the unified device, for D = each real device
 *    in turn. The unified queue's kernels must end before the long one: they ran on the
 *    other device while D was busy. An in-order unified queue kept on one device fails
 *    one of the two rounds (its kernels wait behind the long one).
 * 2. Order: on one in-order unified queue, a chain whose steps only the queue orders: a
 *    kernel writes b1 from b0, a non-blocking read copies b1 into host array h, a
 *    non-blocking write copies h into b0 (the runtime sees no dependency between the read
 *    and the write: they share only the application's memory), six times; then a marker,
 *    a kernel held back by a user event, a fill and a copy. Meanwhile another host thread
 *    keeps real device 0 busy with long kernels, so the chain's kernels move between the
 *    devices. The results equal the sequential computation on the host.
 * Prints "spread ok", "order ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum { N = 64, STEPS = 6 };

static const char *SRC =
    SPIN_SRC
    "__kernel void advance(__global uint *dst, __global const uint *src, uint c, int iters, uint mask) {\n"
    "  size_t i = get_global_id(0);\n"
    "  uint y = src[i];\n"
    "  for (int k = 0; k < iters; k++) { y = y * 1664525u + 1013904223u + (y >> 13); }\n"
    "  dst[i] = src[i] * 3u + c + (y & mask);\n"
    "}\n";

static cl_context ctx;
static cl_program prog;
static cl_device_id devs[8];

/* Run `spin` with `iters` and `seed` on `q` into a fresh buffer; its event in `ev`. */
static cl_mem spin(cl_command_queue q, int iters, cl_uint seed, cl_event *ev) {
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    CHECK(err);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof iters, &iters));
    CHECK(clSetKernelArg(k, 2, sizeof seed, &seed));
    size_t g = 4;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &g, 0, NULL, ev));
    CHECK(clReleaseKernel(k));
    return out;
}

static void check_spin(cl_command_queue q, cl_mem out, int iters, cl_uint seed) {
    cl_uint got[4];
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (cl_uint i = 0; i < 4; i++) EXPECT(got[i] == spin_expected(iters, seed, i));
    CHECK(clReleaseMemObject(out));
}

static cl_ulong end_of(cl_event e) {
    cl_ulong t;
    CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL));
    return t;
}

static int long_iters;

/* Part 2's other host thread: long kernels on real device 0 until told to stop. */
static volatile int stop;
static void *keep_busy(void *arg) {
    (void)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[1], NULL, &err);
    CHECK(err);
    for (cl_uint r = 0; !stop && r < 40; r++) {
        cl_mem out = spin(q, long_iters / 4, 100 + r, NULL);
        check_spin(q, out, long_iters / 4, 100 + r);
    }
    CHECK(clReleaseCommandQueue(q));
    return NULL;
}

int main(int argc, char **argv) {
    long_iters = argc > 1 ? atoi(argv[1]) : 40000000;
    int short_iters = long_iters / 5;
    cl_uint nd = weft_devices(weft_platform(), devs, 8);
    EXPECT(nd >= 3); /* the unified device and two real ones */
    cl_int err;
    ctx = clCreateContext(NULL, 3, devs, NULL, NULL, &err);
    CHECK(err);
    prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 3, devs, NULL, NULL, NULL));
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};

    /* Warm up each real device (the first launch builds its work-group function). */
    for (int d = 1; d <= 2; d++) {
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[d], NULL, &err);
        CHECK(err);
        check_spin(q, spin(q, 1000, 7, NULL), 1000, 7);
        CHECK(clReleaseCommandQueue(q));
    }

    /* 1. Spread. */
    for (int busy = 1; busy <= 2; busy++) {
        cl_command_queue qr = clCreateCommandQueueWithProperties(ctx, devs[busy], props, &err);
        CHECK(err);
        cl_command_queue qu = clCreateCommandQueueWithProperties(ctx, devs[0], props, &err);
        CHECK(err);
        cl_event er, eu[2];
        cl_mem lo = spin(qr, long_iters, 1, &er);
        CHECK(clFlush(qr));
        cl_mem so[2];
        for (int j = 0; j < 2; j++) so[j] = spin(qu, short_iters, 2 + (cl_uint)j, &eu[j]);
        CHECK(clFinish(qu));
        CHECK(clFinish(qr));
        cl_ulong long_end = end_of(er), unified_end = end_of(eu[1]);
        printf("busy device %d: unified queue's kernels ended %.3f s %s the long kernel\n", busy,
               (double)(unified_end > long_end ? unified_end - long_end : long_end - unified_end) * 1e-9,
               unified_end > long_end ? "after" : "before");
        if (unified_end >= long_end) {
            fprintf(stderr, "FAIL: the unified in-order queue's kernels waited for busy device %d\n", busy);
            return 1;
        }
        check_spin(qr, lo, long_iters, 1);
        for (int j = 0; j < 2; j++) check_spin(qu, so[j], short_iters, 2 + (cl_uint)j);
        CHECK(clReleaseEvent(er));
        for (int j = 0; j < 2; j++) CHECK(clReleaseEvent(eu[j]));
        CHECK(clReleaseCommandQueue(qr));
        CHECK(clReleaseCommandQueue(qu));
    }
    printf("spread ok\n");

    /* 2. Order. */
    pthread_t th;
    EXPECT(pthread_create(&th, NULL, keep_busy, NULL) == 0);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[0], NULL, &err);
    CHECK(err);
    cl_kernel k = clCreateKernel(prog, "advance", &err);
    CHECK(err);
    cl_mem b0 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_mem b1 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_mem b2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_uint h[N], want[N], out[N], filled[N];
    for (cl_uint i = 0; i < N; i++) h[i] = want[i] = i;
    CHECK(clEnqueueWriteBuffer(q, b0, CL_FALSE, 0, sizeof h, h, 0, NULL, NULL));
    size_t g = N;
    int work = short_iters / 64;
    cl_uint mask = 0; /* keeps the loop's work: the compiler cannot drop it */
    for (cl_uint s = 0; s < STEPS; s++) {
        CHECK(clSetKernelArg(k, 0, sizeof b1, &b1));
        CHECK(clSetKernelArg(k, 1, sizeof b0, &b0));
        CHECK(clSetKernelArg(k, 2, sizeof s, &s));
        CHECK(clSetKernelArg(k, 3, sizeof work, &work));
        CHECK(clSetKernelArg(k, 4, sizeof mask, &mask));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        /* Only the queue's order puts the write after the read (both use h). */
        CHECK(clEnqueueReadBuffer(q, b1, CL_FALSE, 0, sizeof h, h, 0, NULL, NULL));
        CHECK(clEnqueueWriteBuffer(q, b0, CL_FALSE, 0, sizeof h, h, 0, NULL, NULL));
        for (cl_uint i = 0; i < N; i++) want[i] = want[i] * 3u + s;
    }
    cl_event marker;
    CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &marker));
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    cl_uint last = 100;
    CHECK(clSetKernelArg(k, 0, sizeof b1, &b1));
    CHECK(clSetKernelArg(k, 1, sizeof b0, &b0));
    CHECK(clSetKernelArg(k, 2, sizeof last, &last));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &gate, NULL));
    for (cl_uint i = 0; i < N; i++) want[i] = want[i] * 3u + last;
    CHECK(clEnqueueReadBuffer(q, b1, CL_FALSE, 0, sizeof out, out, 0, NULL, NULL));
    cl_uint pattern = 0xabcd;
    CHECK(clEnqueueFillBuffer(q, b2, &pattern, sizeof pattern, 0, sizeof filled, 0, NULL, NULL));
    CHECK(clEnqueueCopyBuffer(q, b1, b2, 0, 0, N / 2 * sizeof(cl_uint), 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, b2, CL_FALSE, 0, sizeof filled, filled, 0, NULL, NULL));
    cl_int status;
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q));
    CHECK(clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    EXPECT(status == CL_COMPLETE);
    for (cl_uint i = 0; i < N; i++) {
        if (out[i] != want[i]) {
            fprintf(stderr, "FAIL: element %u is %u, sequentially %u\n", i, out[i], want[i]);
            return 1;
        }
        EXPECT(filled[i] == (i < N / 2 ? want[i] : pattern));
    }
    stop = 1;
    EXPECT(pthread_join(th, NULL) == 0);
    printf("order ok\n");
    CHECK(clReleaseEvent(marker));
    CHECK(clReleaseEvent(gate));
    CHECK(clReleaseMemObject(b0));
    CHECK(clReleaseMemObject(b1));
    CHECK(clReleaseMemObject(b2));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    printf("all ok\n");
    return 0;
}
