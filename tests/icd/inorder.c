/* Many tiny kernels on in-order queues without profiling (the path where Weft's device
 * driver launches kernels in batches, learning their completion from one marker per
 * batch): the counts come out exact, events complete with their callbacks, waiting on an
 * event in the middle of a stream returns, a user event holds its command back, and a
 * buffer incremented alternately by two devices' queues (linked by events) stays coherent,
 * and arguments changed between launches (buffers taking turns, a value, a buffer released
 * and another made in its place) reach each launch (the driver skips setting a buffer
 * argument its vendor kernel already holds).
 * Run by tests/icd.rs with POCL_DEVICES="basic basic" (devices: unified, real 1, real 2). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const char *SRC = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }\n"
                         "__kernel void add(__global int *a, int v) { a[get_global_id(0)] += v; }\n";

static int hits;
static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *user) {
    (void)e;
    if (status == CL_COMPLETE) __atomic_add_fetch((int *)user, 1, __ATOMIC_SEQ_CST);
}

static int read_int(cl_command_queue q, cl_mem b) {
    int v = -1;
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL));
    return v;
}

int main(void) {
    cl_device_id ds[16];
    cl_uint nd = weft_devices(weft_platform(), ds, 16);
    EXPECT(nd >= 2);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, nd, ds, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "inc", &err);
    CHECK(err);
    size_t one = 1;

    /* Each device alone: 3000 kernels, an event taken in the middle and waited for while
     * the rest are still queued, then the count. */
    for (cl_uint d = 0; d < nd; d++) {
        cl_command_queue q = clCreateCommandQueue(ctx, ds[d], 0, &err);
        CHECK(err);
        int zero = 0;
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &err);
        CHECK(err);
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        cl_event mid = NULL, last = NULL;
        for (int i = 0; i < 3000; i++)
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, i == 1500 ? &mid : i == 2999 ? &last : NULL));
        CHECK(clSetEventCallback(last, CL_COMPLETE, on_complete, &hits));
        CHECK(clWaitForEvents(1, &mid));
        cl_int st;
        CHECK(clGetEventInfo(mid, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        EXPECT(st == CL_COMPLETE);
        CHECK(clFinish(q));
        CHECK(clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        EXPECT(st == CL_COMPLETE);
        EXPECT(read_int(q, b) == 3000);
        EXPECT(__atomic_load_n(&hits, __ATOMIC_SEQ_CST) == (int)d + 1);

        /* A user event holds its kernel (and the ones after it, in order) back. */
        cl_event gate = clCreateUserEvent(ctx, &err);
        CHECK(err);
        cl_event gated;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 1, &gate, &gated));
        for (int i = 0; i < 10; i++) CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(clFlush(q));
        struct timespec ms20 = {0, 20 * 1000 * 1000};
        nanosleep(&ms20, NULL);
        CHECK(clGetEventInfo(gated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        EXPECT(st > CL_COMPLETE);
        CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
        EXPECT(read_int(q, b) == 3011);
        CHECK(clGetEventInfo(gated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        EXPECT(st == CL_COMPLETE);
        printf("device %u: in-order stream ok\n", d);
        cl_event evs[] = {mid, last, gate, gated};
        for (size_t i = 0; i < 4; i++) CHECK(clReleaseEvent(evs[i]));
        CHECK(clReleaseMemObject(b));
        CHECK(clReleaseCommandQueue(q));
    }

    /* One buffer, two real devices' queues taking turns (each turn waits for the other
     * queue's last kernel): the data follows the kernels from device to device. */
    if (nd >= 3) {
        cl_command_queue q1 = clCreateCommandQueue(ctx, ds[1], 0, &err);
        CHECK(err);
        cl_command_queue q2 = clCreateCommandQueue(ctx, ds[2], 0, &err);
        CHECK(err);
        int zero = 0;
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &err);
        CHECK(err);
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        cl_event prev = NULL;
        for (int turn = 0; turn < 20; turn++) {
            cl_command_queue q = turn % 2 ? q2 : q1;
            cl_event e = NULL;
            for (int i = 0; i < 200; i++)
                CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, i == 0 && prev ? 1 : 0, i == 0 && prev ? &prev : NULL,
                                             i == 199 ? &e : NULL));
            if (prev) CHECK(clReleaseEvent(prev));
            prev = e;
        }
        CHECK(clWaitForEvents(1, &prev));
        CHECK(clReleaseEvent(prev));
        EXPECT(read_int(q1, b) == 20 * 200);
        printf("two devices: coherent ok\n");
        CHECK(clReleaseMemObject(b));
        CHECK(clReleaseCommandQueue(q1));
        CHECK(clReleaseCommandQueue(q2));
    }
    /* Arguments changing between launches on each device's queue. */
    cl_kernel add = clCreateKernel(prog, "add", &err);
    CHECK(err);
    for (cl_uint d = 0; d < nd; d++) {
        cl_command_queue q = clCreateCommandQueue(ctx, ds[d], 0, &err);
        CHECK(err);
        int zero = 0, want[3] = {0, 0, 0};
        cl_mem bs[3];
        for (int j = 0; j < 3; j++) {
            bs[j] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &err);
            CHECK(err);
        }
        int cur = 0, v = 1; /* what arguments 0 and 1 hold */
        CHECK(clSetKernelArg(add, 0, sizeof bs[0], &bs[0]));
        for (int i = 0; i < 600; i++) {
            if (i % 4 == 0) {
                v = i % 5 + 1;
                CHECK(clSetKernelArg(add, 1, sizeof v, &v));
            }
            if (i % 3 == 0 || i % 7 == 0) {
                cur = i % 7 < 4 ? 0 : i % 7 < 6 ? 1 : 2;
                CHECK(clSetKernelArg(add, 0, sizeof bs[cur], &bs[cur]));
            }
            CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &one, NULL, 0, NULL, NULL));
            want[cur] += v;
            if (i == 300) {
                /* Replace buffer 2 (its handle, maybe its vendor buffer's address, reused). */
                CHECK(clFinish(q));
                EXPECT(read_int(q, bs[2]) == want[2]);
                CHECK(clReleaseMemObject(bs[2]));
                bs[2] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &err);
                CHECK(err);
                want[2] = 0;
                cur = 2;
                CHECK(clSetKernelArg(add, 0, sizeof bs[2], &bs[2]));
            }
        }
        CHECK(clFinish(q));
        for (int j = 0; j < 3; j++) {
            EXPECT(read_int(q, bs[j]) == want[j]);
            CHECK(clReleaseMemObject(bs[j]));
        }
        printf("device %u: changing arguments ok\n", d);
        CHECK(clReleaseCommandQueue(q));
    }
    CHECK(clReleaseKernel(add));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    printf("all ok\n");
    return 0;
}
