/* Shared virtual memory through the ICD loader: the platform reports OpenCL 3.0, SVM on
 * the unified device and the first real device only; clSVMAlloc, fill, map, a kernel
 * taking an SVM pointer (and one taking a USE_HOST_PTR buffer over SVM memory, released
 * before the SVM is read; then pyopencl's test_coarse_grain_svm on several queues, both
 * orders), memcpy, fine-grained access (or, where the device offers coarse-grained SVM
 * only, the same between maps), exec info, clEnqueueSVMFree, and bad inputs (each must
 * return its code), and clSetContextDestructorCallback. Prints one line per check; exits
 * non-zero on the first failure. Run by tests/icd.rs on PoCL's basic and pthread devices,
 * also with WEFT_SVM_COARSE=1; scripts/gpu-checks.sh runs it over NVIDIA's coarse-grained
 * SVM. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static const char *SRC = "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }\n";

static int freed;
static void CL_CALLBACK on_free(cl_command_queue q, cl_uint n, void *ptrs[], void *user) {
    cl_context ctx;
    if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL) == CL_SUCCESS)
        for (cl_uint i = 0; i < n; i++) clSVMFree(ctx, ptrs[i]);
    *(int *)user = (int)n;
}

enum { N = 3000 };

/* clSetContextDestructorCallback (OpenCL 3.0): callbacks run in reverse order of
 * registration, only once the context's last reference and every object made from it are
 * gone. */
static int destructor_order[2], destructor_calls;
static void CL_CALLBACK on_destroy(cl_context c, void *user) {
    (void)c;
    int k = __atomic_fetch_add(&destructor_calls, 1, __ATOMIC_SEQ_CST);
    if (k < 2) destructor_order[k] = (int)(long)user;
}

static void context_destructors(cl_device_id dev) {
    cl_int err;
    __atomic_store_n(&destructor_calls, 0, __ATOMIC_SEQ_CST);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    EXPECT_CODE(CL_INVALID_CONTEXT, clSetContextDestructorCallback(NULL, on_destroy, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clSetContextDestructorCallback(ctx, NULL, NULL));
    CHECK(clSetContextDestructorCallback(ctx, on_destroy, (void *)1L));
    CHECK(clSetContextDestructorCallback(ctx, on_destroy, (void *)2L));
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    int data[64] = {0};
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &err);
    CHECK(err);
    cl_event ev;
    CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, sizeof data, data, 0, NULL, &ev));
    CHECK(clFinish(q));
    CHECK(clReleaseContext(ctx)); /* the queue, buffer and event still hold it */
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    EXPECT(__atomic_load_n(&destructor_calls, __ATOMIC_SEQ_CST) == 0);
    CHECK(clReleaseEvent(ev));
    for (int i = 0; i < 500 && __atomic_load_n(&destructor_calls, __ATOMIC_SEQ_CST) < 2; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    EXPECT(__atomic_load_n(&destructor_calls, __ATOMIC_SEQ_CST) == 2);
    EXPECT(destructor_order[0] == 2 && destructor_order[1] == 1);
    printf("context destructor callbacks ok\n");
}

/* pyopencl's test_coarse_grain_svm: a coarse-grained allocation doubled by a kernel taking
 * the SVM pointer, then by another kernel object taking a USE_HOST_PTR buffer over it
 * (released right after), then mapped: both kernels' writes show. Weft launches a kernel
 * right behind the one before it on the same device without waiting for it, so the
 * second kernel must not copy the buffer's data from the SVM memory before the first
 * kernel ran (`held`: both are queued behind a user event first, so both are waiting when
 * the first is launched). `reverse`: the buffer's kernel first, the SVM kernel second
 * with the buffer still alive: the SVM kernel must see the buffer kernel's writes. */
static void svm_and_buffer_views(cl_context ctx, cl_command_queue q, cl_program prog, int held, int reverse) {
    cl_int err;
    size_t n = N;
    float *s = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * sizeof(float), 64);
    EXPECT(s != NULL);
    float zero = 0.0f;
    CHECK(clEnqueueSVMMemFill(q, s, &zero, sizeof zero, N * sizeof(float), 0, NULL, NULL));
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, s, N * sizeof(float), 0, NULL, NULL));
    for (int i = 0; i < N; i++) {
        EXPECT(s[i] == 0.0f);
        s[i] = 17.0f + (float)(i % 7);
    }
    CHECK(clEnqueueSVMUnmap(q, s, 0, NULL, NULL));
    cl_kernel ks = clCreateKernel(prog, "twice", &err);
    CHECK(err);
    cl_kernel kb = clCreateKernel(prog, "twice", &err);
    CHECK(err);
    CHECK(clSetKernelArgSVMPointer(ks, 0, s));
    cl_event gate = NULL;
    if (held) {
        gate = clCreateUserEvent(ctx, &err);
        CHECK(err);
    }
    if (!reverse) CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &n, NULL, held, held ? &gate : NULL, NULL));
    cl_mem view = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof(float), s, &err);
    CHECK(err);
    CHECK(clSetKernelArg(kb, 0, sizeof view, &view));
    CHECK(clEnqueueNDRangeKernel(q, kb, 1, NULL, &n, NULL, reverse && held, reverse && held ? &gate : NULL, NULL));
    if (reverse) CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &n, NULL, 0, NULL, NULL));
    if (!reverse) CHECK(clReleaseMemObject(view));
    if (held) CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, s, N * sizeof(float), 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += s[i] != 4.0f * (17.0f + (float)(i % 7));
    if (bad)
        fprintf(stderr, "svm and buffer (queue %p, held %d, reverse %d): %d of %d wrong, s[0] = %g (expected %g)\n",
                (void *)q, held, reverse, bad, N, s[0], 68.0);
    EXPECT(bad == 0);
    CHECK(clEnqueueSVMUnmap(q, s, 0, NULL, NULL));
    if (reverse) CHECK(clReleaseMemObject(view));
    CHECK(clFinish(q));
    if (gate) CHECK(clReleaseEvent(gate));
    CHECK(clReleaseKernel(ks));
    CHECK(clReleaseKernel(kb));
    clSVMFree(ctx, s);
}

int main(void) {
    cl_platform_id weft = weft_platform();
    char version[64];
    CHECK(clGetPlatformInfo(weft, CL_PLATFORM_VERSION, sizeof version, version, NULL));
    EXPECT(strncmp(version, "OpenCL 3.0", 10) == 0);
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft, devs, 8);
    EXPECT(nd >= 3);
    cl_device_svm_capabilities caps[3];
    for (int i = 0; i < 3; i++) CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_SVM_CAPABILITIES, sizeof caps[i], &caps[i], NULL));
    EXPECT(caps[0] & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER);
    EXPECT(caps[1] == caps[0]);
    EXPECT(caps[2] == 0);
    cl_version nv;
    CHECK(clGetDeviceInfo(devs[0], CL_DEVICE_NUMERIC_VERSION, sizeof nv, &nv, NULL));
    EXPECT(CL_VERSION_MAJOR(nv) == 3);
    cl_bool pipes;
    CHECK(clGetDeviceInfo(devs[0], CL_DEVICE_PIPE_SUPPORT, sizeof pipes, &pipes, NULL));
    EXPECT(pipes == CL_FALSE);
    printf("svm capabilities ok\n");

    cl_int err;
    cl_context ctx = clCreateContext(NULL, nd, devs, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[0], NULL, &err);
    CHECK(err);
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, devs[2], NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "twice", &err);
    CHECK(err);

    float *a = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * sizeof(float), 64);
    EXPECT(a != NULL && ((size_t)a & 63) == 0);
    float zero = 0.0f;
    CHECK(clEnqueueSVMMemFill(q, a, &zero, sizeof zero, N * sizeof(float), 0, NULL, NULL));
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_WRITE, a, N * sizeof(float), 0, NULL, NULL));
    for (int i = 0; i < N; i++) {
        EXPECT(a[i] == 0.0f);
        a[i] = (float)i;
    }
    CHECK(clEnqueueSVMUnmap(q, a, 0, NULL, NULL));
    CHECK(clSetKernelArgSVMPointer(k, 0, a));
    size_t n = N;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    /* A USE_HOST_PTR buffer over the same memory, released right after its kernel: the SVM
     * map must see the kernel's result. */
    cl_mem view = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof(float), a, &err);
    CHECK(err);
    cl_bool uses;
    CHECK(clGetMemObjectInfo(view, CL_MEM_USES_SVM_POINTER, sizeof uses, &uses, NULL));
    EXPECT(uses == CL_TRUE);
    CHECK(clSetKernelArg(k, 0, sizeof view, &view));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clReleaseMemObject(view));
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, a, N * sizeof(float), 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(a[i] == 4.0f * i);
    CHECK(clEnqueueSVMUnmap(q, a, 0, NULL, NULL));
    float host[N];
    CHECK(clEnqueueSVMMemcpy(q, CL_TRUE, host, a, sizeof host, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(host[i] == 4.0f * i);
    printf("svm kernels, maps and copies ok\n");

    /* pyopencl's test_coarse_grain_svm, on the unified device (in-order queues take turns
     * at the real devices for kernels without SVM: two more, so that the buffer's kernel
     * runs on each) and on the SVM device. */
    {
        cl_command_queue qs[4] = {q, NULL, NULL, NULL};
        for (int i = 1; i < 4; i++) {
            qs[i] = clCreateCommandQueueWithProperties(ctx, devs[i < 3 ? 0 : 1], NULL, &err);
            CHECK(err);
        }
        for (int v = 0; v < 4; v++)
            for (int round = 0; round < 3; round++)
                for (int i = 0; i < 4; i++) svm_and_buffer_views(ctx, qs[i], prog, v & 1, v >> 1);
        for (int i = 1; i < 4; i++) CHECK(clReleaseCommandQueue(qs[i]));
    }
    printf("svm kernel and buffer over svm ok\n");

    /* Fine-grained: the host reads after the kernel without a map. A device with
     * coarse-grained SVM only (NVIDIA's, or WEFT_SVM_COARSE=1) refuses such an allocation;
     * the same steps then run on a coarse-grained one, between maps. */
    int fine = (caps[0] & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
    if (!fine) EXPECT(clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, 64, 0) == NULL);
    float *f = clSVMAlloc(ctx, CL_MEM_READ_WRITE | (fine ? CL_MEM_SVM_FINE_GRAIN_BUFFER : 0), N * sizeof(float), 0);
    EXPECT(f != NULL);
    if (!fine) CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_WRITE, f, N * sizeof(float), 0, NULL, NULL));
    for (int i = 0; i < N; i++) f[i] = 1.5f;
    if (!fine) CHECK(clEnqueueSVMUnmap(q, f, 0, NULL, NULL));
    CHECK(clSetKernelArgSVMPointer(k, 0, f));
    CHECK(clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof a, &a));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    if (!fine) CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, f, N * sizeof(float), 0, NULL, NULL));
    CHECK(clFinish(q));
    for (int i = 0; i < N; i++) EXPECT(f[i] == 3.0f);
    if (!fine) CHECK(clEnqueueSVMUnmap(q, f, 0, NULL, NULL));
    printf("%s svm ok\n", fine ? "fine-grained" : "coarse-grained");

    /* clCloneKernel: the clone keeps the arguments; changing one leaves the other alone. */
    cl_kernel k2 = clCloneKernel(k, &err);
    CHECK(err);
    CHECK(clSetKernelArgSVMPointer(k, 0, a));
    CHECK(clEnqueueNDRangeKernel(q, k2, 1, NULL, &n, NULL, 0, NULL, NULL));
    if (!fine) CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, f, N * sizeof(float), 0, NULL, NULL));
    CHECK(clFinish(q));
    for (int i = 0; i < N; i++) EXPECT(f[i] == 6.0f);
    if (!fine) CHECK(clEnqueueSVMUnmap(q, f, 0, NULL, NULL));
    CHECK(clReleaseKernel(k2));
    EXPECT(clCloneKernel(NULL, &err) == NULL && err == CL_INVALID_KERNEL);
    printf("clone kernel ok\n");

    /* Bad inputs. */
    EXPECT(clSVMAlloc(ctx, CL_MEM_READ_WRITE, 0, 0) == NULL);
    EXPECT(clSVMAlloc(ctx, CL_MEM_READ_WRITE, 64, 3) == NULL);
    EXPECT(clSVMAlloc(ctx, CL_MEM_SVM_ATOMICS, 64, 0) == NULL);
    EXPECT(clSVMAlloc(ctx, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 64, 0) == NULL);
    EXPECT(clSVMAlloc(NULL, CL_MEM_READ_WRITE, 64, 0) == NULL);
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMMemFill(q, a, &zero, 3, 12, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMMemFill(q, a, &zero, 4, 6, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMMemFill(q, NULL, &zero, 4, 8, 0, NULL, NULL));
    EXPECT_CODE(CL_MEM_COPY_OVERLAP, clEnqueueSVMMemcpy(q, CL_TRUE, a + 1, a, 16, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMMemcpy(q, CL_TRUE, NULL, a, 16, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, a, 0, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMUnmap(q, NULL, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_COMMAND_QUEUE, clEnqueueSVMMap(NULL, CL_TRUE, CL_MAP_READ, a, 4, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_ARG_VALUE, clSetKernelArgSVMPointer(k, 0, host));
    EXPECT_CODE(CL_INVALID_ARG_INDEX, clSetKernelArgSVMPointer(k, 1, a));
    EXPECT_CODE(CL_INVALID_KERNEL, clSetKernelArgSVMPointer(NULL, 0, a));
    EXPECT_CODE(CL_INVALID_VALUE, clSetKernelExecInfo(k, 0x1234, sizeof a, &a));
    cl_bool yes = CL_TRUE;
    EXPECT_CODE(CL_INVALID_OPERATION, clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM, sizeof yes, &yes));
    EXPECT_CODE(CL_INVALID_VALUE, clSetKernelExecInfo(k, CL_KERNEL_EXEC_INFO_SVM_PTRS, 3, &a));
    CHECK(clSetKernelArgSVMPointer(k, 0, a));
    /* The second real device has no SVM: a kernel using SVM cannot run there. */
    EXPECT_CODE(CL_INVALID_OPERATION, clEnqueueNDRangeKernel(q2, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueSVMFree(q, 1, NULL, NULL, NULL, 0, NULL, NULL));
    printf("svm bad inputs ok\n");

    void *ptrs[2] = {a, f};
    CHECK(clEnqueueSVMFree(q, 2, ptrs, on_free, &freed, 0, NULL, NULL));
    CHECK(clFinish(q));
    EXPECT(freed == 2);
    void *g = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 256, 0);
    EXPECT(g != NULL);
    CHECK(clEnqueueSVMFree(q, 1, &g, NULL, NULL, 0, NULL, NULL));
    CHECK(clFinish(q));
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q2);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    context_destructors(devs[0]);
    context_destructors(devs[2]);
    printf("all ok\n");
    return 0;
}
