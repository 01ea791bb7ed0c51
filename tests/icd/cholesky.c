/* Tiled Cholesky and tiled SGEMM in OpenCL C on one out-of-order queue of Weft's unified
 * device give the results one real device gives (issue 33). The kernels and the tiled
 * algorithms are bench/cl/tiles.h's (each tile its own cl_mem, dependencies as event wait
 * lists): on the unified device Weft may run ready kernels on any real device, moving
 * tiles between them; on Weft's device 1 they all run there. Each run is checked on the
 * host (Cholesky: ‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F; SGEMM: max error against a double
 * reference) and the two runs' results are compared element by element. Also on an
 * in-order queue of the unified device (its wait lists then redundant).
 * Arguments: N NB for the Cholesky (default 1024 128); the SGEMM is 512 in tiles of 128.
 * Prints "cholesky ok", "sgemm ok" and "all ok" last. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "../../bench/cl/tiles.h"

/* Runs the tiled Cholesky (sgemm = 0) or SGEMM of the n×n inputs on a queue of `dev`;
 * the n×n result (column-major) into `res`. */
static void run(cl_device_id dev, cl_command_queue_properties props, int sgemm, int n, int nb, const float *a,
                const float *b, const float *c, float *res) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, qprops, &err);
    CHECK(err);
    struct tiles tl;
    tiles_init(&tl, ctx, q, dev, nb);
    int t = n / nb;
    size_t nt = (size_t)t * t, elems = (size_t)n * n;
    float *ta = malloc(elems * sizeof(float)), *tb = malloc(elems * sizeof(float)), *tc = malloc(elems * sizeof(float));
    cl_mem *m = calloc(3 * nt, sizeof(cl_mem));
    cl_event *ev = calloc(3 * nt, sizeof(cl_event));
    EXPECT(ta && tb && tc && m && ev);
    tiles_pack(a, ta, n, nb);
    if (sgemm) {
        tiles_pack(b, tb, n, nb);
        tiles_pack(c, tc, n, nb);
        tiles_write(&tl, m, (int)nt, ta, ev, 0);
        tiles_write(&tl, m + nt, (int)nt, tb, ev + nt, 0);
        tiles_write(&tl, m + 2 * nt, (int)nt, tc, ev + 2 * nt, 0);
        tiles_sgemm(&tl, m, m + nt, m + 2 * nt, ev, ev + nt, ev + 2 * nt, t);
        tiles_read(&tl, m + 2 * nt, (int)nt, tc, ev + 2 * nt);
        tiles_unpack(tc, res, n, nb);
        EXPECT(tl.kernels == nt * (size_t)t);
    } else {
        tiles_write(&tl, m, (int)nt, ta, ev, t);
        tiles_cholesky(&tl, m, ev, t);
        tiles_read(&tl, m, (int)nt, ta, ev);
        tiles_unpack(ta, res, n, nb);
        EXPECT(tl.kernels == (size_t)t + (size_t)t * (t - 1) + (size_t)t * (t - 1) * (t - 2) / 6);
    }
    CHECK(clFinish(q));
    for (size_t i = 0; i < 3 * nt; i++) {
        if (ev[i]) CHECK(clReleaseEvent(ev[i]));
        if (m[i]) CHECK(clReleaseMemObject(m[i]));
    }
    tiles_release(&tl);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    free(ta);
    free(tb);
    free(tc);
    free(m);
    free(ev);
}

/* max |x − y| / max |y| over the lower triangle (lower) or all of two n×n matrices. */
static double difference(const float *x, const float *y, int n, int lower) {
    double d = 0, big = 0;
    for (int j = 0; j < n; j++)
        for (int i = lower ? j : 0; i < n; i++) {
            double e = fabs((double)x[(size_t)j * n + i] - y[(size_t)j * n + i]);
            if (e > d || e != e) d = e;
            if (fabs(y[(size_t)j * n + i]) > big) big = fabs(y[(size_t)j * n + i]);
        }
    return d / big;
}

int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[1]) : 1024, nb = argc > 2 ? atoi(argv[2]) : 128;
    EXPECT(n > 0 && nb > 0 && nb % 8 == 0 && n % nb == 0);
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft_platform(), devs, 8);
    EXPECT(nd >= 3); /* the unified device and two real ones */
    size_t elems = (size_t)n * n;
    float *a = malloc(elems * sizeof(float)), *unified = malloc(elems * sizeof(float));
    float *inorder = malloc(elems * sizeof(float)), *one = malloc(elems * sizeof(float));
    EXPECT(a && unified && inorder && one);

    /* Cholesky: the unified device's out-of-order and in-order queues against device 1. */
    tiles_spd(a, n, 12345u);
    run(devs[0], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0, n, nb, a, NULL, NULL, unified);
    run(devs[0], 0, 0, n, nb, a, NULL, NULL, inorder);
    run(devs[1], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0, n, nb, a, NULL, NULL, one);
    double r_unified = tiles_residual(unified, a, n), r_inorder = tiles_residual(inorder, a, n);
    double r_one = tiles_residual(one, a, n);
    double d_unified = difference(unified, one, n, 1), d_inorder = difference(inorder, one, n, 1);
    printf("cholesky %d/%d: residual unified %.2e, in order %.2e, device 1 %.2e; factors differ by %.2e, %.2e\n", n, nb,
           r_unified, r_inorder, r_one, d_unified, d_inorder);
    EXPECT(r_one < 1e-5 && r_unified < 1e-5 && r_inorder < 1e-5);
    EXPECT(d_unified < 1e-5 && d_inorder < 1e-5);
    printf("cholesky ok\n");

    /* SGEMM C -= A·Bᵀ, 512 in tiles of 128: unified (out of order) against device 1 and a
     * double reference. */
    int m = 512, mb = 128;
    float *sa = malloc((size_t)m * m * sizeof(float)), *sb = malloc((size_t)m * m * sizeof(float));
    float *sc = malloc((size_t)m * m * sizeof(float)), *ref = malloc((size_t)m * m * sizeof(float));
    EXPECT(sa && sb && sc && ref);
    unsigned s = 777u;
    for (size_t i = 0; i < (size_t)m * m; i++) {
        s = s * 1664525u + 1013904223u;
        sa[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
        s = s * 1664525u + 1013904223u;
        sb[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
        s = s * 1664525u + 1013904223u;
        sc[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) {
            double x = sc[(size_t)j * m + i];
            for (int p = 0; p < m; p++) x -= (double)sa[(size_t)p * m + i] * sb[(size_t)p * m + j];
            ref[(size_t)j * m + i] = (float)x;
        }
    run(devs[0], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 1, m, mb, sa, sb, sc, unified);
    run(devs[1], CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 1, m, mb, sa, sb, sc, one);
    double e_unified = difference(unified, ref, m, 0), e_one = difference(one, ref, m, 0);
    double d = difference(unified, one, m, 0);
    printf("sgemm %d/%d: error unified %.2e, device 1 %.2e; results differ by %.2e\n", m, mb, e_unified, e_one, d);
    EXPECT(e_unified < 1e-5 && e_one < 1e-5 && d < 1e-6);
    printf("sgemm ok\n");
    free(a);
    free(unified);
    free(inorder);
    free(one);
    free(sa);
    free(sb);
    free(sc);
    free(ref);
    printf("all ok\n");
    return 0;
}
