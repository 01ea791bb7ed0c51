/* An unmodified-style OpenCL 1.2 host program, built against the ICD loader (-lOpenCL):
 * finds the Weft platform, and on every device it lists (the unified one and each real
 * one) runs kernels over buffers, with reads, writes, copies, fills, rect copies, maps,
 * events, user events, markers, profiling and the program/kernel queries. Prints one
 * line per check; exits non-zero on the first failure. Run by tests/icd.rs. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *SRC =
    "__kernel void saxpy(__global float *y, __global const float *x, float a) {\n"
    "  size_t i = get_global_id(0); y[i] = a * x[i] + y[i];\n"
    "}\n"
    "__kernel void square(__global int *v) { size_t i = get_global_id(0); v[i] = v[i] * v[i]; }\n"
    "__kernel void local_sum(__global const int *in, __global int *out, __local int *tmp) {\n"
    "  size_t l = get_local_id(0), g = get_group_id(0), n = get_local_size(0);\n"
    "  tmp[l] = in[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (l == 0) { int s = 0; for (size_t k = 0; k < n; k++) s += tmp[k]; out[g] = s; }\n"
    "}\n";

static int callback_hits;
static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *user) {
    (void)e;
    if (status == CL_COMPLETE) __atomic_add_fetch((int *)user, 1, __ATOMIC_SEQ_CST);
}

static void run_on(cl_platform_id platform, cl_device_id dev, int index) {
    char name[256];
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL));
    cl_platform_id p2;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof p2, &p2, NULL));
    EXPECT(p2 == platform);
    /* One device type, never DEFAULT (the unified device takes its devices' type). */
    cl_device_type type;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL));
    EXPECT(type == CL_DEVICE_TYPE_CPU || type == CL_DEVICE_TYPE_GPU || type == CL_DEVICE_TYPE_ACCELERATOR ||
           type == CL_DEVICE_TYPE_CUSTOM);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL));
    cl_build_status bs;
    CHECK(clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
    EXPECT(bs == CL_BUILD_SUCCESS);
    size_t nk;
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL));
    EXPECT(nk == 3);

    /* saxpy: y = 2x + y over 1M floats, written, run, read back. */
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
    cl_mem bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, N * sizeof(float), x, &err);
    CHECK(err);
    cl_mem by = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    CHECK(err);
    cl_event wrote;
    CHECK(clEnqueueWriteBuffer(q, by, CL_FALSE, 0, N * sizeof(float), y, 0, NULL, &wrote));
    cl_kernel k = clCreateKernel(prog, "saxpy", &err);
    CHECK(err);
    float a = 2.0f;
    CHECK(clSetKernelArg(k, 0, sizeof by, &by));
    CHECK(clSetKernelArg(k, 1, sizeof bx, &bx));
    CHECK(clSetKernelArg(k, 2, sizeof a, &a));
    size_t global = N, local = 64;
    cl_event ran;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 1, &wrote, &ran));
    CHECK(clSetEventCallback(ran, CL_COMPLETE, on_complete, &callback_hits));
    /* Run it twice: in order, so y = 2x + (2x + 1). */
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    float *res = calloc(N, sizeof *res);
    CHECK(clEnqueueReadBuffer(q, by, CL_TRUE, 0, N * sizeof(float), res, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(res[i] == 4.0f * i + 1.0f);
    free(res);
    cl_int st;
    CHECK(clGetEventInfo(ran, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    EXPECT(st == CL_COMPLETE);
    cl_ulong t0, t1;
    CHECK(clGetEventProfilingInfo(ran, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    CHECK(clGetEventProfilingInfo(ran, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    EXPECT(t1 >= t0 && t0 > 0);
    /* A zero-sized or NULL range (OpenCL 2.1+) succeeds and completes its event, touching nothing. */
    size_t zero = 0;
    cl_event none_ran;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &zero, NULL, 0, NULL, &none_ran));
    CHECK(clWaitForEvents(1, &none_ran));
    cl_command_type ct;
    CHECK(clGetEventInfo(none_ran, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL));
    EXPECT(ct == CL_COMMAND_NDRANGE_KERNEL);
    CHECK(clReleaseEvent(none_ran));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, NULL, NULL, 0, NULL, &none_ran));
    CHECK(clWaitForEvents(1, &none_ran));
    CHECK(clReleaseEvent(none_ran));
    printf("device %d (%s): saxpy ok\n", index, name);

    /* Map for writing, unmap, square on the device, map for reading. */
    enum { M = 4096 };
    cl_mem bv = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, M * sizeof(int), NULL, &err);
    CHECK(err);
    int *m = clEnqueueMapBuffer(q, bv, CL_TRUE, CL_MAP_WRITE, 0, M * sizeof(int), 0, NULL, NULL, &err);
    CHECK(err);
    for (int i = 0; i < M; i++) m[i] = i;
    CHECK(clEnqueueUnmapMemObject(q, bv, m, 0, NULL, NULL));
    cl_kernel sq = clCreateKernel(prog, "square", &err);
    CHECK(err);
    CHECK(clSetKernelArg(sq, 0, sizeof bv, &bv));
    size_t gm = M;
    CHECK(clEnqueueNDRangeKernel(q, sq, 1, NULL, &gm, NULL, 0, NULL, NULL));
    m = clEnqueueMapBuffer(q, bv, CL_TRUE, CL_MAP_READ, 0, M * sizeof(int), 0, NULL, NULL, &err);
    CHECK(err);
    for (int i = 0; i < M; i++) EXPECT(m[i] == i * i);
    CHECK(clEnqueueUnmapMemObject(q, bv, m, 0, NULL, NULL));
    printf("device %d: map/square ok\n", index);

    /* Fill, copy, rect read, local memory. */
    cl_mem bc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, M * sizeof(int), NULL, &err);
    CHECK(err);
    int seven = 7;
    CHECK(clEnqueueFillBuffer(q, bc, &seven, sizeof seven, 0, M * sizeof(int), 0, NULL, NULL));
    CHECK(clEnqueueCopyBuffer(q, bv, bc, 0, 16 * sizeof(int), 16 * sizeof(int), 0, NULL, NULL));
    int c[64];
    CHECK(clEnqueueReadBuffer(q, bc, CL_TRUE, 0, sizeof c, c, 0, NULL, NULL));
    for (int i = 0; i < 64; i++) EXPECT(c[i] == ((i >= 16 && i < 32) ? (i - 16) * (i - 16) : 7));
    /* A 4x3 rectangle at (column 2, row 1) of the buffer seen as rows of 64 ints. */
    size_t bo[3] = {2 * sizeof(int), 1, 0}, ho[3] = {0, 0, 0}, reg[3] = {4 * sizeof(int), 3, 1};
    int r[12];
    CHECK(clEnqueueReadBufferRect(q, bv, CL_TRUE, bo, ho, reg, 64 * sizeof(int), 0, 4 * sizeof(int), 0, r, 0, NULL, NULL));
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 4; i++) EXPECT(r[j * 4 + i] == (64 * (j + 1) + 2 + i) * (64 * (j + 1) + 2 + i));
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, 64 * sizeof(int), NULL, &err);
    CHECK(err);
    cl_kernel ls = clCreateKernel(prog, "local_sum", &err);
    CHECK(err);
    CHECK(clSetKernelArg(ls, 0, sizeof bc, &bc));
    CHECK(clSetKernelArg(ls, 1, sizeof out, &out));
    CHECK(clSetKernelArg(ls, 2, 64 * sizeof(int), NULL));
    size_t g2 = M, l2 = 64;
    CHECK(clEnqueueNDRangeKernel(q, ls, 1, NULL, &g2, &l2, 0, NULL, NULL));
    int sums[64];
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof sums, sums, 0, NULL, NULL));
    int expect0 = 0;
    for (int i = 0; i < 64; i++) expect0 += (i >= 16 && i < 32) ? (i - 16) * (i - 16) : 7;
    EXPECT(sums[0] == expect0 && sums[1] == 64 * 7);
    printf("device %d: fill/copy/rect/local ok\n", index);

    /* A sub-buffer (the middle third of a buffer of 7s) squared by a kernel: the parent
     * sees it. Its offset is the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128
     * bytes): PoCL asks 128 bytes, NVIDIA 512, and an offset the device does not allow is
     * CL_MISALIGNED_SUB_BUFFER_OFFSET. */
    cl_uint align_bits = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    size_t al = align_bits / 8 < 128 ? 128 : align_bits / 8, ni = al / sizeof(int);
    int *whole = malloc(3 * al);
    for (size_t i = 0; i < 3 * ni; i++) whole[i] = 7;
    cl_mem parent = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 3 * al, whole, &err);
    CHECK(err);
    cl_buffer_region region = {al, al};
    cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    CHECK(err);
    CHECK(clSetKernelArg(sq, 0, sizeof sub, &sub));
    CHECK(clEnqueueNDRangeKernel(q, sq, 1, NULL, &ni, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, parent, CL_TRUE, 0, 3 * al, whole, 0, NULL, NULL));
    for (size_t i = 0; i < 3 * ni; i++) EXPECT(whole[i] == (i >= ni && i < 2 * ni ? 49 : 7));
    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(parent));
    free(whole);
    /* The program's binary builds again (Weft's binaries carry the source). */
    size_t bsize;
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL));
    unsigned char *bin = malloc(bsize);
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
    cl_int bstatus;
    cl_program again = clCreateProgramWithBinary(ctx, 1, &dev, &bsize, (const unsigned char **)&bin, &bstatus, &err);
    CHECK(err);
    CHECK(bstatus);
    CHECK(clBuildProgram(again, 0, NULL, NULL, NULL, NULL));
    cl_kernel k2 = clCreateKernel(again, "square", &err);
    CHECK(err);
    CHECK(clReleaseKernel(k2));
    CHECK(clReleaseProgram(again));
    free(bin);
    printf("device %d: sub-buffer/binary ok\n", index);

    /* A large buffer (host copies this big are split over threads): made from host memory,
     * written at an offset, squared by a kernel, read back at an offset; not a whole number
     * of pages. */
    {
        const size_t nb = (9u << 20) / sizeof(int) + 3, off = 1000;
        int *big = malloc(nb * sizeof(int)), *back = malloc(nb * sizeof(int));
        for (size_t i = 0; i < nb; i++) big[i] = (int)(i % 40000) - 20000;
        cl_mem bb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nb * sizeof(int), big, &err);
        CHECK(err);
        CHECK(clEnqueueReadBuffer(q, bb, CL_TRUE, 0, nb * sizeof(int), back, 0, NULL, NULL));
        EXPECT(memcmp(back, big, nb * sizeof(int)) == 0);
        for (size_t i = 0; i < nb; i++) big[i] = (int)(i % 30011);
        CHECK(clEnqueueWriteBuffer(q, bb, CL_TRUE, off * sizeof(int), (nb - off) * sizeof(int), big + off, 0, NULL, NULL));
        CHECK(clSetKernelArg(sq, 0, sizeof bb, &bb));
        CHECK(clEnqueueNDRangeKernel(q, sq, 1, NULL, &nb, NULL, 0, NULL, NULL));
        memset(back, 0, nb * sizeof(int));
        CHECK(clEnqueueReadBuffer(q, bb, CL_TRUE, off * sizeof(int), (nb - off) * sizeof(int), back + off, 0, NULL, NULL));
        for (size_t i = 0; i < off; i++) EXPECT(back[i] == 0);
        for (size_t i = off; i < nb; i++) EXPECT(back[i] == big[i] * big[i]);
        CHECK(clReleaseMemObject(bb));
        free(big);
        free(back);
        printf("device %d: large buffer ok\n", index);
    }

    /* A user event gates a write; a marker follows everything. */
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    int one = 1;
    cl_event gated;
    CHECK(clEnqueueWriteBuffer(q, bc, CL_FALSE, 0, sizeof one, &one, 1, &gate, &gated));
    CHECK(clGetEventInfo(gated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    EXPECT(st > CL_COMPLETE);
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    cl_event marker;
    CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &marker));
    CHECK(clWaitForEvents(1, &marker));
    CHECK(clGetEventInfo(gated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    EXPECT(st == CL_COMPLETE);
    CHECK(clFinish(q));
    EXPECT(__atomic_load_n(&callback_hits, __ATOMIC_SEQ_CST) == index + 1);
    printf("device %d: user event/marker/callback ok\n", index);

    cl_mem objs[] = {bx, by, bv, bc, out};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) CHECK(clReleaseMemObject(objs[i]));
    cl_event evs[] = {wrote, ran, gate, gated, marker};
    for (size_t i = 0; i < sizeof evs / sizeof *evs; i++) CHECK(clReleaseEvent(evs[i]));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseKernel(sq));
    CHECK(clReleaseKernel(ls));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    free(x);
    free(y);
}

int main(void) {
    cl_platform_id weft = weft_platform();
    cl_device_id ds[16];
    cl_uint nd = weft_devices(weft, ds, 16);
    printf("Weft platform: %u devices\n", nd);
    for (cl_uint i = 0; i < nd; i++) run_on(weft, ds[i], (int)i);
    printf("all ok\n");
    return 0;
}
