/* CL_MEM_USE_HOST_PTR memory is the program's: once its last release of the object has
 * returned and its commands on the object have completed, the program frees it at once
 * (as most programs do; the CTS even frees before its last release), and Weft must never
 * write there again. Built with AddressSanitizer by tests/icd.rs: a late write into freed
 * memory aborts the run. Results are checked through reads and maps, the ways OpenCL
 * defines the region's content. On every Weft device:
 *   - release after clFinish, free at once (many rounds, so a late write would land);
 *   - free first, release after (the CTS's buffers suite does);
 *   - release while the kernel waits on a user event, then set it, clFinish, free;
 *   - a sub-buffer: release the parent first, then the sub-buffer;
 *   - release from the kernel's event callback, free once the callback returned;
 *   - a non-blocking read into malloc'd memory, freed right after its event completes;
 *   - map and unmap, then release and free.
 * Prints "device N: host_ptr ok" per device and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *SRC = "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }\n";

enum { N = 4096, ROUNDS = 12 };

static float *filled(void) {
    float *p = malloc(N * sizeof *p);
    EXPECT(p != NULL);
    for (int i = 0; i < N; i++) p[i] = (float)i;
    return p;
}

static int doubled(const float *p, size_t n, float times) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (float)i * times) return 0;
    return 1;
}

static void run_twice(cl_command_queue q, cl_kernel k, cl_mem m, size_t n, cl_uint nwait, const cl_event *wait,
                      cl_event *ev) {
    CHECK(clSetKernelArg(k, 0, sizeof m, &m));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, nwait, wait, ev));
}

struct cb_state {
    cl_mem m;
    volatile int done;
};

static void CL_CALLBACK release_in_callback(cl_event e, cl_int status, void *user) {
    (void)e;
    struct cb_state *s = user;
    if (status == CL_COMPLETE && clReleaseMemObject(s->m) == CL_SUCCESS) __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
    else __atomic_store_n(&s->done, 2, __ATOMIC_SEQ_CST);
}

static void one_device(cl_context ctx, cl_command_queue q, cl_kernel k) {
    cl_int err;
    /* Release after clFinish, free at once. */
    for (int r = 0; r < ROUNDS; r++) {
        float *p = filled();
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof *p, p, &err);
        CHECK(err);
        run_twice(q, k, m, N, 0, NULL, NULL);
        float *got = malloc(N * sizeof *got);
        EXPECT(got != NULL);
        CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, N * sizeof *got, got, 0, NULL, NULL));
        EXPECT(doubled(got, N, 2.0f));
        free(got);
        if (r % 2) {
            CHECK(clReleaseMemObject(m));
            free(p);
        } else {
            free(p);
            CHECK(clReleaseMemObject(m));
        }
    }
    /* Released while its kernel waits on a user event. */
    {
        float *p = filled();
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof *p, p, &err);
        CHECK(err);
        cl_event gate = clCreateUserEvent(ctx, &err);
        CHECK(err);
        run_twice(q, k, m, N, 1, &gate, NULL);
        run_twice(q, k, m, N, 0, NULL, NULL);
        CHECK(clReleaseMemObject(m));
        CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
        CHECK(clFinish(q));
        free(p);
        CHECK(clReleaseEvent(gate));
    }
    /* A sub-buffer outlives its parent's last release. */
    {
        float *p = filled();
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof *p, p, &err);
        CHECK(err);
        cl_buffer_region reg = {0, N / 2 * sizeof(float)};
        cl_mem sub = clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
        CHECK(err);
        run_twice(q, k, m, N, 0, NULL, NULL);
        CHECK(clReleaseMemObject(m));
        run_twice(q, k, sub, N / 2, 0, NULL, NULL);
        float got[N / 2];
        CHECK(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        EXPECT(doubled(got, N / 2, 4.0f));
        CHECK(clReleaseMemObject(sub));
        free(p);
    }
    /* Released from the kernel's completion callback. */
    {
        float *p = filled();
        struct cb_state s = {0};
        s.m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof *p, p, &err);
        CHECK(err);
        cl_event ev;
        run_twice(q, k, s.m, N, 0, NULL, &ev);
        CHECK(clSetEventCallback(ev, CL_COMPLETE, release_in_callback, &s));
        CHECK(clFinish(q));
        while (__atomic_load_n(&s.done, __ATOMIC_SEQ_CST) == 0) {
        }
        EXPECT(s.done == 1);
        free(p);
        CHECK(clReleaseEvent(ev));
    }
    /* A non-blocking read into memory freed right after its event completes. */
    for (int r = 0; r < ROUNDS; r++) {
        float *src = filled();
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof *src, src, &err);
        CHECK(err);
        run_twice(q, k, m, N, 0, NULL, NULL);
        float *dst = malloc(N * sizeof *dst);
        EXPECT(dst != NULL);
        cl_event ev;
        CHECK(clEnqueueReadBuffer(q, m, CL_FALSE, 0, N * sizeof *dst, dst, 0, NULL, &ev));
        CHECK(clWaitForEvents(1, &ev));
        EXPECT(doubled(dst, N, 2.0f));
        free(dst);
        CHECK(clReleaseEvent(ev));
        CHECK(clReleaseMemObject(m));
        free(src);
    }
    /* Map and unmap, then release and free. */
    {
        float *p = filled();
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof *p, p, &err);
        CHECK(err);
        run_twice(q, k, m, N, 0, NULL, NULL);
        float *mp = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, N * sizeof *p, 0, NULL, NULL, &err);
        CHECK(err);
        EXPECT(doubled(mp, N, 2.0f));
        for (int i = 0; i < N; i++) mp[i] += 1.0f;
        CHECK(clEnqueueUnmapMemObject(q, m, mp, 0, NULL, NULL));
        run_twice(q, k, m, N, 0, NULL, NULL);
        mp = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ, 0, N * sizeof *p, 0, NULL, NULL, &err);
        CHECK(err);
        EXPECT(mp == p); /* a USE_HOST_PTR buffer maps at its region */
        for (int i = 0; i < N; i++) EXPECT(p[i] == ((float)i * 2.0f + 1.0f) * 2.0f);
        CHECK(clEnqueueUnmapMemObject(q, m, mp, 0, NULL, NULL));
        CHECK(clFinish(q));
        CHECK(clReleaseMemObject(m));
        free(p);
    }
}

int main(void) {
    cl_platform_id plat = weft_platform();
    cl_device_id devs[8];
    cl_uint nd = weft_devices(plat, devs, 8);
    for (cl_uint d = 0; d < nd; d++) {
        cl_int err;
        cl_context ctx = clCreateContext(NULL, 1, &devs[d], NULL, NULL, &err);
        CHECK(err);
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[d], NULL, &err);
        CHECK(err);
        cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
        CHECK(err);
        CHECK(clBuildProgram(prog, 1, &devs[d], NULL, NULL, NULL));
        cl_kernel k = clCreateKernel(prog, "twice", &err);
        CHECK(err);
        one_device(ctx, q, k);
        printf("device %u: host_ptr ok\n", d);
        CHECK(clReleaseKernel(k));
        CHECK(clReleaseProgram(prog));
        CHECK(clReleaseCommandQueue(q));
        CHECK(clReleaseContext(ctx));
    }
    printf("all ok\n");
    return 0;
}
