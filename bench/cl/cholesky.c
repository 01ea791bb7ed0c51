/* Tiled Cholesky (and tiled SGEMM) in OpenCL C on one queue of one device (issue 33): the
 * kernels of bench/cl/tiles.h, each tile its own cl_mem, enqueued in right-looking order
 * with event wait lists for the dependencies. On Weft's unified device (its device 0) an
 * out-of-order queue lets Weft run ready kernels on every real device at once; on a real
 * device (Weft's 1, 2, ... or PoCL's own) they run one after the other.
 *
 *   cholesky PLATFORM-SUBSTRING DEVICE-INDEX [N] [NB] [MODE] [REPS]
 *
 * N (default 1024) a multiple of NB (default 128, a multiple of 8). MODE: ooo (default;
 * one out-of-order queue), inorder (one in-order queue, same wait lists), sgemm (tiled
 * C -= A·Bᵀ on an out-of-order queue, n×n). One untimed warm-up run (PoCL compiles each
 * kernel for its launch sizes on first use; Weft builds on each device it places a kernel
 * on), then REPS (default 1) timed runs; the median is printed. The clock covers writing
 * the tiles, the kernels and reading the tiles back. The result is checked in double on
 * the host: Cholesky ‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F < 1e-4; SGEMM max |C − C_ref| /
 * max |C_ref| < 1e-4. GFLOP/s count n³/3 (Cholesky) or 2n³ (SGEMM).
 * Prints `RESULT platform=... device=... mode=... n=N nb=NB kernels=K seconds=S gflops=G
 * residual=R check=ok|wrong`; with FACTOR_OUT=path also writes the result (n×n floats,
 * column-major) there. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
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

#include "tiles.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cholesky PLATFORM-SUBSTRING DEVICE-INDEX [N] [NB] [ooo|inorder|sgemm] [REPS]\n");
        return 2;
    }
    int dev_index = atoi(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 1024, nb = argc > 4 ? atoi(argv[4]) : 128;
    const char *mode = argc > 5 ? argv[5] : "ooo";
    int reps = argc > 6 ? atoi(argv[6]) : 1;
    int sgemm = !strcmp(mode, "sgemm");
    if (n <= 0 || nb <= 0 || nb % 8 || n % nb || reps < 1 || (!sgemm && strcmp(mode, "ooo") && strcmp(mode, "inorder"))) {
        fprintf(stderr, "bad arguments: N a multiple of NB, NB of 8; MODE ooo, inorder or sgemm; REPS >= 1\n");
        return 2;
    }
    int t = n / nb;
    cl_platform_id ps[16], plat = NULL;
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, ps, &np));
    char name[256];
    for (cl_uint i = 0; i < np && i < 16 && !plat; i++) {
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
    if (dev_index < 0 || (cl_uint)dev_index >= nd) {
        fprintf(stderr, "platform '%s' has %u devices\n", name, nd);
        return 1;
    }
    cl_device_id dev = devs[dev_index];
    char dname[256];
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueue(ctx, dev, strcmp(mode, "inorder") ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
    CHECK(err);
    struct tiles tl;
    tiles_init(&tl, ctx, q, dev, nb);

    size_t nt = (size_t)t * t, elems = (size_t)n * n;
    float *a = malloc(elems * sizeof(float)), *b = malloc(elems * sizeof(float)), *c = malloc(elems * sizeof(float));
    float *ta = malloc(elems * sizeof(float)), *tb = malloc(elems * sizeof(float)), *tc = malloc(elems * sizeof(float));
    float *out = calloc(elems, sizeof(float)); /* (upper tiles of a Cholesky stay 0) */
    cl_mem *ma = calloc(nt, sizeof(cl_mem)), *mb = calloc(nt, sizeof(cl_mem)), *mc = calloc(nt, sizeof(cl_mem));
    cl_event *ea = calloc(nt, sizeof(cl_event)), *eb = calloc(nt, sizeof(cl_event)), *ec = calloc(nt, sizeof(cl_event));
    if (!a || !b || !c || !ta || !tb || !tc || !out || !ma || !mb || !mc || !ea || !eb || !ec) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (sgemm) {
        unsigned s = 12345u;
        for (size_t i = 0; i < elems; i++) {
            s = s * 1664525u + 1013904223u;
            a[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
            s = s * 1664525u + 1013904223u;
            b[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
            s = s * 1664525u + 1013904223u;
            c[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
        }
        tiles_pack(a, ta, n, nb);
        tiles_pack(b, tb, n, nb);
        tiles_pack(c, tc, n, nb);
    } else {
        tiles_spd(a, n, 12345u);
        tiles_pack(a, ta, n, nb);
    }

    double times[64];
    if (reps > 64) reps = 64;
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        if (sgemm) {
            tiles_write(&tl, ma, (int)nt, ta, ea, 0);
            tiles_write(&tl, mb, (int)nt, tb, eb, 0);
            tiles_write(&tl, mc, (int)nt, tc, ec, 0);
            tiles_sgemm(&tl, ma, mb, mc, ea, eb, ec, t);
            tiles_read(&tl, mc, (int)nt, out, ec);
            for (size_t i = 0; i < nt; i++) {
                CHECK(clReleaseEvent(ea[i]));
                CHECK(clReleaseEvent(eb[i]));
                ea[i] = eb[i] = NULL;
            }
        } else {
            tiles_write(&tl, ma, (int)nt, ta, ea, t);
            tiles_cholesky(&tl, ma, ea, t);
            tiles_read(&tl, ma, (int)nt, out, ea);
        }
        if (r >= 0) times[r] = now() - t0;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp);
    double secs = times[reps / 2];

    double residual;
    float *res = malloc(elems * sizeof(float));
    if (!res) return 1;
    tiles_unpack(out, res, n, nb);
    if (sgemm) {
        double maxref = 0, maxdiff = 0;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                double s = c[(size_t)j * n + i];
                for (int p = 0; p < n; p++) s -= (double)a[(size_t)p * n + i] * b[(size_t)p * n + j];
                double d = fabs(s - res[(size_t)j * n + i]);
                if (d > maxdiff || d != d) maxdiff = d;
                if (fabs(s) > maxref) maxref = fabs(s);
            }
        residual = maxdiff / maxref;
    } else {
        residual = tiles_residual(res, a, n);
    }
    const char *check = residual < 1e-4 ? "ok" : "wrong";
    const char *path = getenv("FACTOR_OUT");
    if (path && *path) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(res, sizeof(float), elems, f) != elems || fclose(f)) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
    }
    double flops = sgemm ? 2.0 * n * (double)n * n : (double)n * n * n / 3.0;
    printf("RESULT platform=%s device=%d mode=%s n=%d nb=%d kernels=%zu seconds=%.3f gflops=%.2f residual=%.2e check=%s\n",
           name, dev_index, mode, n, nb, tl.kernels, secs, flops / secs * 1e-9, residual, check);
    fprintf(stderr, "(device: %s)\n", dname);
    for (size_t i = 0; i < nt; i++) {
        if (ma[i]) CHECK(clReleaseMemObject(ma[i]));
        if (mb[i]) CHECK(clReleaseMemObject(mb[i]));
        if (mc[i]) CHECK(clReleaseMemObject(mc[i]));
    }
    tiles_release(&tl);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return strcmp(check, "ok") != 0;
}
