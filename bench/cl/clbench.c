/* OpenCL front-end benchmark for issue 4: the same unmodified OpenCL program measured on
 * whichever platform it is pointed at (PoCL direct, Weft through the ICD loader, SOCL), so
 * run.sh can report ratios from one run.
 *
 *   clbench PLATFORM-SUBSTRING [DEVICE-INDEX]
 *
 * picks the first platform whose name contains PLATFORM-SUBSTRING (case-sensitive) and its
 * device DEVICE-INDEX (default 0), then measures, each checked:
 *   tiny   10,000 tiny kernels on an in-order queue, then clFinish: microseconds per kernel
 *   write  64 MiB clEnqueueWriteBuffer (blocking): GB/s (best of 5)
 *   read   64 MiB clEnqueueReadBuffer (blocking): GB/s (best of 5)
 *   sgemm  N=1024 register-blocked SGEMM (examples/kernels/sgemm_f8.cl): GFLOP/s (best of 5)
 * and prints one `RESULT platform=... tiny_us=... tiny_enqueue_us=... write_gbs=... read_gbs=... sgemm_gflops=...`
 * line whose `check=` says `ok` or names the first wrong result (the run goes on, so a wrong
 * platform's figures still show; the exit status is then 1). An OpenCL error exits at once
 * with status 1, naming the call. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cl_int e_ = (x);                                                               \
        if (e_ != CL_SUCCESS) { fprintf(stderr, "%s: error %d (line %d)\n", #x, e_, __LINE__); exit(1); } \
    } while (0)
#define CHECKED(var, call)                                                             \
    do {                                                                               \
        cl_int e_ = CL_SUCCESS;                                                        \
        var = call;                                                                    \
        if (e_ != CL_SUCCESS || !var) { fprintf(stderr, "%s: error %d (line %d)\n", #call, e_, __LINE__); exit(1); } \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(1); }
    s[n] = 0;
    fclose(f);
    return s;
}

static cl_program build(cl_context ctx, cl_device_id dev, const char *src) {
    cl_program p;
    CHECKED(p, clCreateProgramWithSource(ctx, 1, &src, NULL, &e_));
    if (clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "clBuildProgram failed:\n%s\n", log);
        exit(1);
    }
    return p;
}

/* The first failed check (the run goes on so every figure is printed; exit status 1). */
static char failed[256];
#define FAIL(...) do { if (!failed[0]) snprintf(failed, sizeof failed, __VA_ARGS__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

static const char *TINY = "__kernel void tiny(__global int *a) { a[get_global_id(0)] += 1; }";

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: clbench PLATFORM-SUBSTRING [DEVICE-INDEX] [sgemm.cl]\n"); return 2; }
    const char *want = argv[1];
    cl_uint di = argc > 2 ? (cl_uint)atoi(argv[2]) : 0;
    const char *kpath = argc > 3 ? argv[3] : "examples/kernels/sgemm_f8.cl";

    cl_uint np = 0;
    CHECK(clGetPlatformIDs(0, NULL, &np));
    cl_platform_id *ps = calloc(np, sizeof *ps), plat = NULL;
    CHECK(clGetPlatformIDs(np, ps, NULL));
    char pname[256] = "";
    for (cl_uint i = 0; i < np && !plat; i++) {
        CHECK(clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof pname, pname, NULL));
        if (strstr(pname, want)) plat = ps[i];
    }
    if (!plat) { fprintf(stderr, "no platform named like '%s' among %u\n", want, np); return 1; }
    cl_uint nd = 0;
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &nd));
    if (di >= nd) { fprintf(stderr, "platform '%s' has %u devices, no device %u\n", pname, nd, di); return 1; }
    cl_device_id *ds = calloc(nd, sizeof *ds);
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, nd, ds, NULL));
    cl_device_id dev = ds[di];
    char dname[256] = "";
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL));
    fprintf(stderr, "platform '%s', device %u '%s'\n", pname, di, dname);

    cl_context ctx;
    CHECKED(ctx, clCreateContext(NULL, 1, &dev, NULL, NULL, &e_));
    cl_command_queue q;
    CHECKED(q, clCreateCommandQueue(ctx, dev, 0, &e_));

    /* tiny kernels (CLBENCH_TINY=N: only this part, N kernels, for profiling) */
    const char *only = getenv("CLBENCH_TINY");
    const int NT = only ? atoi(only) : 10000;
    cl_program tp = build(ctx, dev, TINY);
    cl_kernel tk;
    CHECKED(tk, clCreateKernel(tp, "tiny", &e_));
    int zero = 0;
    cl_mem tb;
    CHECKED(tb, clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &e_));
    CHECK(clSetKernelArg(tk, 0, sizeof tb, &tb));
    size_t one = 1;
    CHECK(clEnqueueNDRangeKernel(q, tk, 1, NULL, &one, NULL, 0, NULL, NULL)); /* warm up */
    CHECK(clFinish(q));
    double t0 = now();
    for (int i = 0; i < NT; i++) CHECK(clEnqueueNDRangeKernel(q, tk, 1, NULL, &one, NULL, 0, NULL, NULL));
    /* The application thread's share of the time: what remains is spent waiting in
     * clFinish for the runtime's own threads. */
    double enq_us = (now() - t0) * 1e6 / NT;
    CHECK(clFinish(q));
    double tiny_us = (now() - t0) * 1e6 / NT;
    int got = 0;
    CHECK(clEnqueueReadBuffer(q, tb, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL));
    if (got != NT + 1) FAIL("tiny:counter_%d_want_%d", got, NT + 1);
    if (only) {
        printf("RESULT platform=%s tiny_us=%.3f tiny_enqueue_us=%.3f check=%s\n", want, tiny_us, enq_us,
               failed[0] ? failed : "ok");
        return failed[0] ? 1 : 0;
    }

    /* bandwidth */
    const size_t BYTES = 64u << 20;
    unsigned char *h = malloc(BYTES), *back = malloc(BYTES);
    for (size_t i = 0; i < BYTES; i++) h[i] = (unsigned char)(i * 7 + 3);
    memset(back, 0, BYTES);
    cl_mem big;
    CHECKED(big, clCreateBuffer(ctx, CL_MEM_READ_WRITE, BYTES, NULL, &e_));
    double wbest = 1e30, rbest = 1e30;
    for (int r = 0; r < 5; r++) {
        t0 = now();
        CHECK(clEnqueueWriteBuffer(q, big, CL_TRUE, 0, BYTES, h, 0, NULL, NULL));
        double w = now() - t0;
        t0 = now();
        CHECK(clEnqueueReadBuffer(q, big, CL_TRUE, 0, BYTES, back, 0, NULL, NULL));
        double rd = now() - t0;
        if (w < wbest) wbest = w;
        if (rd < rbest) rbest = rd;
    }
    if (memcmp(h, back, BYTES)) FAIL("bandwidth:data_read_back_differs");

    /* SGEMM */
    const int N = 1024;
    char *src = read_file(kpath);
    cl_program sp = build(ctx, dev, src);
    cl_kernel sk;
    CHECKED(sk, clCreateKernel(sp, "sgemm", &e_));
    float *A = malloc(sizeof(float) * N * N), *B = malloc(sizeof(float) * N * N), *C = malloc(sizeof(float) * N * N);
    srand(1);
    for (int i = 0; i < N * N; i++) { A[i] = (float)rand() / RAND_MAX - 0.5f; B[i] = (float)rand() / RAND_MAX - 0.5f; }
    cl_mem ba, bb, bc;
    CHECKED(ba, clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N * N, A, &e_));
    CHECKED(bb, clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N * N, B, &e_));
    CHECKED(bc, clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * N * N, NULL, &e_));
    int n = N;
    float beta = 0.0f;
    CHECK(clSetKernelArg(sk, 0, sizeof ba, &ba));
    CHECK(clSetKernelArg(sk, 1, sizeof bb, &bb));
    CHECK(clSetKernelArg(sk, 2, sizeof bc, &bc));
    CHECK(clSetKernelArg(sk, 3, sizeof n, &n));
    CHECK(clSetKernelArg(sk, 4, sizeof n, &n));
    CHECK(clSetKernelArg(sk, 5, sizeof n, &n));
    CHECK(clSetKernelArg(sk, 6, sizeof beta, &beta));
    size_t global[2] = { (size_t)N / 16, (size_t)N / 4 };
    double sbest = 1e30;
    for (int r = 0; r < 6; r++) {
        t0 = now();
        CHECK(clEnqueueNDRangeKernel(q, sk, 2, NULL, global, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        double s = now() - t0;
        if (r > 0 && s < sbest) sbest = s; /* round 0 warms up */
    }
    CHECK(clEnqueueReadBuffer(q, bc, CL_TRUE, 0, sizeof(float) * N * N, C, 0, NULL, NULL));
    /* Spot-check 64 elements against a double-precision dot product. */
    for (int t = 0; t < 64; t++) {
        int i = (t * 131) % N, j = (t * 71) % N;
        double s = 0;
        for (int p = 0; p < N; p++) s += (double)A[i + p * N] * B[p + j * N];
        if (!(fabs(s - C[i + j * N]) <= 1e-3 * (1 + fabs(s)))) {
            FAIL("sgemm:C[%d,%d]=%g_want_%g", i, j, C[i + j * N], s);
            break;
        }
    }
    printf("RESULT platform=%s tiny_us=%.3f tiny_enqueue_us=%.3f write_gbs=%.2f read_gbs=%.2f sgemm_gflops=%.2f check=%s\n", want, tiny_us,
           enq_us, BYTES / wbest * 1e-9, BYTES / rbest * 1e-9, 2.0 * N * N * N / sbest * 1e-9, failed[0] ? failed : "ok");
    return failed[0] ? 1 : 0;
}
