/* Where a kernel ran, and the device's own profiling times (issue 33, item 5).
 *
 * 1. The extension: the platform and every device report cl_weft_placement (and in the
 *    _WITH_VERSION lists, version 1.0.0).
 * 2. Unified device: rounds of 16 independent kernels on an out-of-order profiling queue
 *    (until both real devices ran some, at most 8 rounds). Every kernel's event names
 *    (CL_EVENT_DEVICE_WEFT) one of the platform's real devices, never the unified one;
 *    both appear; its five times are non-zero and ordered (QUEUED <= SUBMIT <= START <= END
 *    <= COMPLETE), in Weft's clock (the host's CLOCK_MONOTONIC_RAW, docs/opencl.md): START
 *    and END lie between clGetDeviceAndHostTimer readings taken before the round was
 *    enqueued and after it finished, themselves between CLOCK_MONOTONIC_RAW readings (and
 *    each device's timer equals the host's). Kernels one real device ran do not overlap in time: Weft's kernel queue
 *    on a device is in order, and the device's own START/END say so. Times taken on the
 *    host around each launch would overlap on PoCL's "pthread" devices, where Weft commits
 *    a kernel behind one still running (tests/icd.rs runs this on "basic" and "pthread").
 * 3. Host-side commands (a write, a fill, a marker) name no device (NULL) and still have
 *    ordered times; a user event names none either. A read of data that only a device
 *    holds runs as the vendor's read there: it names the device the kernel that wrote the
 *    data ran on, and starts after that kernel's end. A kernel taking an image (vendor
 *    copies and the kernel, one command) names its device and has ordered times.
 * 4. A real device's profiling queue: its kernels name that device, times ordered, and
 *    consecutive kernels on it do not overlap.
 * 5. Bad input: a size too small for a cl_device_id is CL_INVALID_VALUE; the timers'
 *    NULL pointers and bad device; a non-zero host timer resolution.
 * Prints "device commands N" (how many commands it enqueued that run on a device: what
 * WEFT_STATS counts as launches), "placement ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../include/CL/cl_weft.h"
#include "check.h"

enum { ROUND = 16, ROUNDS = 8 };

static const char *SRC =
    SPIN_SRC
    "__kernel void pix(__read_only image2d_t im, __global uint *out) {\n"
    "  int i = (int)get_global_id(0);\n"
    "  uint4 p = read_imageui(im, (int2)(i, 0));\n"
    "  out[i] = p.x + p.y + p.z + p.w;\n"
    "}\n";

static cl_ulong raw_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    return (cl_ulong)t.tv_sec * 1000000000ull + (cl_ulong)t.tv_nsec;
}

static void times_of(cl_event e, cl_ulong t[5]) {
    static const cl_profiling_info P[5] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                           CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END,
                                           CL_PROFILING_COMMAND_COMPLETE};
    for (int i = 0; i < 5; i++) CHECK(clGetEventProfilingInfo(e, P[i], sizeof t[i], &t[i], NULL));
    for (int i = 0; i < 5; i++) EXPECT(t[i] != 0);
    for (int i = 0; i < 4; i++) {
        if (t[i] > t[i + 1]) {
            fprintf(stderr, "FAIL: profiling times out of order: %llu %llu %llu %llu %llu\n", (unsigned long long)t[0],
                    (unsigned long long)t[1], (unsigned long long)t[2], (unsigned long long)t[3],
                    (unsigned long long)t[4]);
            exit(1);
        }
    }
}

static cl_device_id ran_on(cl_event e) {
    cl_device_id d = (cl_device_id)1;
    size_t n = 0;
    CHECK(clGetEventInfo(e, CL_EVENT_DEVICE_WEFT, sizeof d, &d, &n));
    EXPECT(n == sizeof d);
    return d;
}

static int has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

/* Does `versions` (a cl_name_version array of `bytes`) hold `name` at 1.0.0? */
static int has_version(const cl_name_version *versions, size_t bytes, const char *name) {
    for (size_t i = 0; i < bytes / sizeof *versions; i++)
        if (strcmp(versions[i].name, name) == 0) return versions[i].version == CL_MAKE_VERSION(1, 0, 0);
    return 0;
}

static cl_context ctx;
static cl_program prog;

/* Enqueue `spin` into `out` on `q`; its event. */
static cl_event spin(cl_command_queue q, cl_mem out, int iters, cl_uint seed) {
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof iters, &iters));
    CHECK(clSetKernelArg(k, 2, sizeof seed, &seed));
    size_t g = 4;
    cl_event e;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &g, 0, NULL, &e));
    CHECK(clReleaseKernel(k));
    return e;
}

/* Kernels that device `d` ran (their times in `t`, `n` of them) do not overlap. */
static void no_overlap(cl_ulong (*t)[5], const cl_device_id *on, int n, cl_device_id d) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && on[i] == d && on[j] == d && t[i][2] < t[j][2] && t[i][3] > t[j][2]) {
                fprintf(stderr, "FAIL: kernels %d and %d overlap on one device: [%llu, %llu] and [%llu, %llu]\n", i,
                        j, (unsigned long long)t[i][2], (unsigned long long)t[i][3], (unsigned long long)t[j][2],
                        (unsigned long long)t[j][3]);
                exit(1);
            }
}

int main(void) {
    cl_platform_id p = weft_platform();
    cl_device_id devs[8];
    cl_uint nd = weft_devices(p, devs, 8);
    EXPECT(nd >= 3); /* the unified device and two real ones */
    cl_int err;

    /* 1. The extension. */
    char ext[4096];
    CHECK(clGetPlatformInfo(p, CL_PLATFORM_EXTENSIONS, sizeof ext, ext, NULL));
    EXPECT(has_word(ext, CL_WEFT_PLACEMENT_EXTENSION_NAME));
    cl_name_version vs[256];
    size_t bytes;
    CHECK(clGetPlatformInfo(p, CL_PLATFORM_EXTENSIONS_WITH_VERSION, sizeof vs, vs, &bytes));
    EXPECT(has_version(vs, bytes, "cl_khr_icd") && has_version(vs, bytes, CL_WEFT_PLACEMENT_EXTENSION_NAME));
    for (cl_uint d = 0; d < nd; d++) {
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL));
        EXPECT(has_word(ext, CL_WEFT_PLACEMENT_EXTENSION_NAME));
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_EXTENSIONS_WITH_VERSION, sizeof vs, vs, &bytes));
        EXPECT(has_version(vs, bytes, CL_WEFT_PLACEMENT_EXTENSION_NAME));
    }

    ctx = clCreateContext(NULL, 3, devs, NULL, NULL, &err);
    CHECK(err);
    prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 3, devs, NULL, NULL, NULL));
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_queue_properties inorder[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_mem out[ROUND];
    for (int i = 0; i < ROUND; i++) {
        out[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_uint), NULL, &err);
        CHECK(err);
    }

    /* 2. The unified device. */
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[0], ooo, &err);
    CHECK(err);
    int seen[2] = {0, 0}, device_commands = 0;
    for (int r = 0; r < ROUNDS && !(seen[0] && seen[1]); r++) {
        device_commands += ROUND;
        cl_event ev[ROUND];
        cl_ulong t[ROUND][5];
        cl_device_id on[ROUND];
        cl_ulong before = raw_now(), dev_before, host_before, dev_after, host_after;
        CHECK(clGetDeviceAndHostTimer(devs[1 + (cl_uint)r % 2], &dev_before, &host_before));
        for (int i = 0; i < ROUND; i++) ev[i] = spin(q, out[i], 200000, (cl_uint)(r * ROUND + i));
        CHECK(clFinish(q));
        CHECK(clGetDeviceAndHostTimer(devs[0], &dev_after, &host_after));
        cl_ulong after = raw_now();
        /* Every Weft device's timer is the platform's profiling clock, the host's. */
        EXPECT(dev_before == host_before && dev_after == host_after);
        EXPECT(before <= dev_before && dev_before <= dev_after && dev_after <= after);
        for (int i = 0; i < ROUND; i++) {
            times_of(ev[i], t[i]);
            if (t[i][2] < dev_before || t[i][3] > dev_after) {
                fprintf(stderr, "FAIL: kernel %d ran [%llu, %llu], not within [%llu, %llu] of CLOCK_MONOTONIC_RAW\n", i,
                        (unsigned long long)t[i][2], (unsigned long long)t[i][3], (unsigned long long)before,
                        (unsigned long long)after);
                return 1;
            }
            on[i] = ran_on(ev[i]);
            EXPECT(on[i] == devs[1] || on[i] == devs[2]);
            seen[on[i] == devs[2]]++;
            CHECK(clReleaseEvent(ev[i]));
        }
        no_overlap(t, on, ROUND, devs[1]);
        no_overlap(t, on, ROUND, devs[2]);
        printf("round %d: %d kernels on real device 1, %d on real device 2 so far\n", r, seen[0], seen[1]);
    }
    EXPECT(seen[0] > 0 && seen[1] > 0);

    /* 3. Host-side commands and user events. */
    cl_uint h[4] = {1, 2, 3, 4}, pattern = 7;
    cl_event hw, hf, hm;
    CHECK(clEnqueueWriteBuffer(q, out[0], CL_FALSE, 0, sizeof h, h, 0, NULL, &hw));
    CHECK(clEnqueueFillBuffer(q, out[1], &pattern, sizeof pattern, 0, sizeof h, 0, NULL, &hf));
    CHECK(clEnqueueMarkerWithWaitList(q, 0, NULL, &hm));
    CHECK(clFinish(q));
    cl_event host[3] = {hw, hf, hm};
    for (int i = 0; i < 3; i++) {
        cl_ulong t[5];
        times_of(host[i], t);
        EXPECT(ran_on(host[i]) == NULL);
        CHECK(clReleaseEvent(host[i]));
    }
    /* A read of data only a device holds (a kernel wrote it, and it completed) is the
     * vendor's read on that device, after the kernel there. */
    cl_event ek = spin(q, out[2], 1000, 5), er;
    CHECK(clFinish(q));
    cl_uint got[4];
    CHECK(clEnqueueReadBuffer(q, out[2], CL_TRUE, 0, sizeof got, got, 0, NULL, &er));
    device_commands += 2;
    for (cl_uint i = 0; i < 4; i++) EXPECT(got[i] == spin_expected(1000, 5, i));
    EXPECT(ran_on(er) == ran_on(ek) && ran_on(er) != NULL);
    cl_ulong tk[5], tr[5];
    times_of(ek, tk);
    times_of(er, tr);
    EXPECT(tr[2] >= tk[3]);
    CHECK(clReleaseEvent(ek));
    CHECK(clReleaseEvent(er));
    /* A kernel taking an image runs as several vendor commands (the copy into the device's
     * vendor image, then the kernel): one command, on one device, its times ordered. */
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {0};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = 4;
    desc.image_height = 1;
    cl_uchar px[16];
    for (int i = 0; i < 16; i++) px[i] = (cl_uchar)i;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc, px, &err);
    CHECK(err);
    cl_mem sums = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_kernel pk = clCreateKernel(prog, "pix", &err);
    CHECK(err);
    CHECK(clSetKernelArg(pk, 0, sizeof img, &img));
    CHECK(clSetKernelArg(pk, 1, sizeof sums, &sums));
    size_t four = 4;
    cl_event ep;
    CHECK(clEnqueueNDRangeKernel(q, pk, 1, NULL, &four, NULL, 0, NULL, &ep));
    CHECK(clFinish(q));
    CHECK(clEnqueueReadBuffer(q, sums, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    device_commands += 2;
    for (cl_uint i = 0; i < 4; i++) EXPECT(got[i] == 16 * i + 6);
    cl_device_id pd = ran_on(ep);
    EXPECT(pd == devs[1] || pd == devs[2]);
    times_of(ep, tk);
    CHECK(clReleaseEvent(ep));
    CHECK(clReleaseKernel(pk));
    CHECK(clReleaseMemObject(sums));
    CHECK(clReleaseMemObject(img));
    cl_event user = clCreateUserEvent(ctx, &err);
    CHECK(err);
    EXPECT(ran_on(user) == NULL);
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    EXPECT(ran_on(user) == NULL);
    CHECK(clReleaseEvent(user));

    /* 4. A real device's queue. */
    for (int d = 1; d <= 2; d++) {
        cl_command_queue qr = clCreateCommandQueueWithProperties(ctx, devs[d], inorder, &err);
        CHECK(err);
        cl_event ev[4];
        cl_ulong t[4][5];
        cl_device_id on[4];
        for (int i = 0; i < 4; i++) ev[i] = spin(qr, out[i], 100000, (cl_uint)i);
        device_commands += 4;
        CHECK(clFinish(qr));
        for (int i = 0; i < 4; i++) {
            times_of(ev[i], t[i]);
            on[i] = ran_on(ev[i]);
            EXPECT(on[i] == devs[d]);
            if (i > 0) EXPECT(t[i][2] >= t[i - 1][3]);
            CHECK(clReleaseEvent(ev[i]));
        }
        no_overlap(t, on, 4, devs[d]);
        CHECK(clReleaseCommandQueue(qr));
    }

    /* 5. Bad input, and the timers. */
    cl_ulong ts, resolution = 0;
    EXPECT_CODE(CL_INVALID_VALUE, clGetDeviceAndHostTimer(devs[0], &ts, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clGetDeviceAndHostTimer(devs[0], NULL, &ts));
    EXPECT_CODE(CL_INVALID_VALUE, clGetHostTimer(devs[0], NULL));
    EXPECT_CODE(CL_INVALID_DEVICE, clGetHostTimer((cl_device_id)q, &ts));
    CHECK(clGetHostTimer(devs[2], &ts));
    EXPECT(ts != 0);
    CHECK(clGetPlatformInfo(p, CL_PLATFORM_HOST_TIMER_RESOLUTION, sizeof resolution, &resolution, NULL));
    EXPECT(resolution != 0);
    cl_event e = spin(q, out[0], 10, 1);
    device_commands++;
    CHECK(clWaitForEvents(1, &e));
    cl_device_id d;
    EXPECT_CODE(CL_INVALID_VALUE, clGetEventInfo(e, CL_EVENT_DEVICE_WEFT, sizeof d - 1, &d, NULL));
    CHECK(clReleaseEvent(e));

    for (int i = 0; i < ROUND; i++) CHECK(clReleaseMemObject(out[i]));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    printf("device commands %d\nplacement ok\nall ok\n", device_commands);
    return 0;
}
