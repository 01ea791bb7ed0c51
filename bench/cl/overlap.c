/* Do two devices run kernels at the same time? Issue 33's benchmark: NK independent
 * compute-bound kernels (each about the same duration), results checked, run the ways a
 * program can give an OpenCL implementation several devices.
 *
 *   overlap PLATFORM-SUBSTRING MODE [ITERS]
 *
 * MODE:
 *   one       one in-order queue on the platform's first device (the reference);
 *   ooo       one out-of-order queue on the first device (Weft: its unified device);
 *   null      one out-of-order queue on the NULL device (SOCL's queue over all devices);
 *   perdev    one host thread, an in-order queue per device other than the first when the
 *             platform has more than two (Weft: the real devices), kernels dealt round robin;
 *   threads   a host thread per such device, an in-order queue each;
 *   all       a host thread per device of the platform, the first included.
 * ITERS sets each kernel's length (default 4,000,000 loop steps per work item).
 * Prints `RESULT platform=... mode=... devices=N kernels=NK seconds=S check=ok|...`. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                                       \
    do {                                                                                               \
        cl_int e_ = (x);                                                                               \
        if (e_ != CL_SUCCESS) {                                                                        \
            fprintf(stderr, "%s: error %d (line %d)\n", #x, e_, __LINE__);                             \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

enum { NK = 16, ITEMS = 4 };

static const char *SRC =
    "__kernel void spin(__global uint *out, int iters, uint seed) {\n"
    "  uint i = (uint)get_global_id(0), y = seed * 16u + i;\n"
    "  for (int k = 0; k < iters; k++) { y = y * 1664525u + 1013904223u + (y >> 13); }\n"
    "  out[i] = y;\n"
    "}\n";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static cl_uint expected(int iters, cl_uint seed, cl_uint i) {
    cl_uint y = seed * 16u + i;
    for (int k = 0; k < iters; k++) y = y * 1664525u + 1013904223u + (y >> 13);
    return y;
}

static cl_context ctx;
static cl_kernel kernels[NK];
static cl_mem bufs[NK];
static int iters = 4000000;

struct job {
    cl_device_id dev;
    int first, step;
};

static void launch(cl_command_queue q, int j) {
    cl_uint seed = (cl_uint)j;
    size_t n = ITEMS;
    CHECK(clSetKernelArg(kernels[j], 0, sizeof(cl_mem), &bufs[j]));
    CHECK(clSetKernelArg(kernels[j], 1, sizeof(int), &iters));
    CHECK(clSetKernelArg(kernels[j], 2, sizeof(cl_uint), &seed));
    CHECK(clEnqueueNDRangeKernel(q, kernels[j], 1, NULL, &n, &n, 0, NULL, NULL));
}

static void *drive(void *arg) {
    struct job *jb = arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, jb->dev, 0, &err);
    CHECK(err);
    for (int j = jb->first; j < NK; j += jb->step) launch(q, j);
    CHECK(clFinish(q));
    CHECK(clReleaseCommandQueue(q));
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: overlap PLATFORM-SUBSTRING one|ooo|null|perdev|threads|all [ITERS]\n");
        return 2;
    }
    const char *mode = argv[2];
    if (argc > 3) iters = atoi(argv[3]);
    cl_platform_id ps[16], plat = NULL;
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, ps, &np));
    char name[256];
    for (cl_uint i = 0; i < np && !plat; i++) {
        CHECK(clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL));
        if (strstr(name, argv[1])) plat = ps[i];
    }
    if (!plat) {
        fprintf(stderr, "no platform named like '%s'\n", argv[1]);
        return 1;
    }
    cl_device_id devs[16];
    cl_uint nd = 0;
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 16, devs, &nd));
    cl_int err;
    ctx = clCreateContext(NULL, nd, devs, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, nd, devs, NULL, NULL, NULL));
    for (int j = 0; j < NK; j++) {
        kernels[j] = clCreateKernel(prog, "spin", &err);
        CHECK(err);
        bufs[j] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ITEMS * sizeof(cl_uint), NULL, &err);
        CHECK(err);
    }
    /* The devices a program would drive one by one: the real ones behind Weft's first. */
    cl_uint first_real = nd > 2 ? 1 : 0;
    cl_uint nreal = nd - first_real;
    double t0 = now();
    int used = 1;
    if (!strcmp(mode, "one") || !strcmp(mode, "ooo") || !strcmp(mode, "null")) {
        cl_command_queue q = clCreateCommandQueue(ctx, !strcmp(mode, "null") ? NULL : devs[0],
                                                  strcmp(mode, "one") ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
        CHECK(err);
        for (int j = 0; j < NK; j++) launch(q, j);
        CHECK(clFinish(q));
        CHECK(clReleaseCommandQueue(q));
    } else if (!strcmp(mode, "perdev")) {
        cl_command_queue qs[16];
        for (cl_uint d = 0; d < nreal; d++) {
            qs[d] = clCreateCommandQueue(ctx, devs[first_real + d], 0, &err);
            CHECK(err);
        }
        for (int j = 0; j < NK; j++) launch(qs[j % nreal], j);
        for (cl_uint d = 0; d < nreal; d++) CHECK(clFlush(qs[d]));
        for (cl_uint d = 0; d < nreal; d++) {
            CHECK(clFinish(qs[d]));
            CHECK(clReleaseCommandQueue(qs[d]));
        }
        used = (int)nreal;
    } else if (!strcmp(mode, "threads") || !strcmp(mode, "all")) {
        cl_uint from = !strcmp(mode, "all") ? 0 : first_real, n = nd - from;
        pthread_t th[16];
        struct job jobs[16];
        for (cl_uint d = 0; d < n; d++) {
            jobs[d] = (struct job){devs[from + d], (int)d, (int)n};
            pthread_create(&th[d], NULL, drive, &jobs[d]);
        }
        for (cl_uint d = 0; d < n; d++) pthread_join(th[d], NULL);
        used = (int)n;
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        return 2;
    }
    double secs = now() - t0;
    const char *check = "ok";
    for (int j = 0; j < NK; j++) {
        cl_uint out[ITEMS];
        cl_command_queue q = clCreateCommandQueue(ctx, devs[0], 0, &err);
        CHECK(err);
        CHECK(clEnqueueReadBuffer(q, bufs[j], CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
        CHECK(clReleaseCommandQueue(q));
        for (size_t i = 0; i < ITEMS; i++)
            if (out[i] != expected(iters, (cl_uint)j, (cl_uint)i)) check = "wrong";
    }
    printf("RESULT platform=%s mode=%s devices=%d kernels=%d seconds=%.3f check=%s\n", name, mode, used, NK, secs, check);
    return strcmp(check, "ok") != 0;
}
