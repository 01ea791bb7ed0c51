/* An ordinary OpenCL program (nothing Weft-specific): 32 independent SAXPY-like kernels over
 * their own buffers, enqueued on one out-of-order queue of the first device of the chosen
 * platform, then read back and checked on the host.
 *
 * Run it on any OpenCL platform; on Weft's, the first device is the unified device that
 * stands for the whole machine, so the runtime places each kernel on a real device:
 *   gcc examples/opencl/saxpy_tiles.c -lOpenCL -o saxpy_tiles
 *   OCL_ICD_VENDORS=<dir with weft.icd> WEFT_STATS=1 ./saxpy_tiles Weft
 * Usage: saxpy_tiles [platform-name-substring] (default: the first platform). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        cl_int e_ = (x);                                                           \
        if (e_ != CL_SUCCESS) {                                                    \
            fprintf(stderr, "%s failed: %d (line %d)\n", #x, e_, __LINE__);        \
            return 1;                                                              \
        }                                                                          \
    } while (0)

#define NK 32
#define N (1 << 16)
#define ITERS 200

static const char *SRC =
    "__kernel void saxpy_iter(__global float *y, __global const float *x, float a, int iters) {\n"
    "    size_t i = get_global_id(0);\n"
    "    float v = y[i];\n"
    "    for (int k = 0; k < iters; k++) v = a * x[i] + 0.5f * v;\n"
    "    y[i] = v;\n"
    "}\n";

int main(int argc, char **argv) {
    const char *want = argc > 1 ? argv[1] : NULL;
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(0, NULL, &np));
    if (np == 0) { fprintf(stderr, "no OpenCL platform\n"); return 1; }
    cl_platform_id ps[16], plat = NULL;
    CHECK(clGetPlatformIDs(np < 16 ? np : 16, ps, NULL));
    char name[256] = "";
    for (cl_uint i = 0; i < np && i < 16 && !plat; i++) {
        CHECK(clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL));
        if (!want || strstr(name, want)) plat = ps[i];
    }
    if (!plat) { fprintf(stderr, "no platform named like '%s'\n", want); return 1; }
    cl_device_id dev;
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    char dname[256] = "";
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL));
    printf("platform: %s\ndevice:   %s\n", name, dname);

    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (err == CL_INVALID_VALUE || err == CL_INVALID_QUEUE_PROPERTIES) /* no out-of-order queues: in order then */
        q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "build failed:\n%s\n", log);
        return 1;
    }

    static float x[N], y[NK][N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 100) * 0.01f;
    cl_mem bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    CHECK(err);
    cl_mem by[NK];
    cl_kernel k[NK];
    cl_event done[NK];
    for (int t = 0; t < NK; t++) {
        for (int i = 0; i < N; i++) y[t][i] = (float)t;
        by[t] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y[t], y[t], &err);
        CHECK(err);
        k[t] = clCreateKernel(prog, "saxpy_iter", &err);
        CHECK(err);
        float a = 1.0f + (float)t;
        int iters = ITERS;
        CHECK(clSetKernelArg(k[t], 0, sizeof(cl_mem), &by[t]));
        CHECK(clSetKernelArg(k[t], 1, sizeof(cl_mem), &bx));
        CHECK(clSetKernelArg(k[t], 2, sizeof a, &a));
        CHECK(clSetKernelArg(k[t], 3, sizeof iters, &iters));
        size_t global = N;
        CHECK(clEnqueueNDRangeKernel(q, k[t], 1, NULL, &global, NULL, 0, NULL, &done[t]));
    }
    for (int t = 0; t < NK; t++)
        CHECK(clEnqueueReadBuffer(q, by[t], CL_FALSE, 0, sizeof y[t], y[t], 1, &done[t], NULL));
    CHECK(clFinish(q));

    int bad = 0;
    for (int t = 0; t < NK && !bad; t++)
        for (int i = 0; i < N; i++) {
            float v = (float)t, a = 1.0f + (float)t;
            for (int s = 0; s < ITERS; s++) v = a * x[i] + 0.5f * v;
            float d = v - y[t][i];
            if (d > 1e-3f * (1.0f + v) || d < -1e-3f * (1.0f + v)) {
                fprintf(stderr, "kernel %d, y[%d] = %g, want %g\n", t, i, y[t][i], v);
                bad = 1;
                break;
            }
        }
    for (int t = 0; t < NK; t++) {
        clReleaseEvent(done[t]);
        clReleaseKernel(k[t]);
        clReleaseMemObject(by[t]);
    }
    clReleaseMemObject(bx);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    if (bad) return 1;
    printf("saxpy_tiles: %d kernels of %d elements: results correct\n", NK, N);
    return 0;
}
