/* Tiled Cholesky and tiled SGEMM in OpenCL C, single precision, each tile its own cl_mem,
 * kernels enqueued on one queue with event wait lists for the dependencies (the last
 * command writing each tile): an out-of-order queue may run any kernels whose tiles are
 * ready at the same time, on any device it stands for. Shared by bench/cl/cholesky.c (the
 * benchmark) and tests/icd/cholesky.c (unified device against one real device).
 *
 * Tiles are nb×nb, column-major, packed; tile (i, j) of the lower triangle is tiles[i*t+j]
 * (t = n/nb; nb a multiple of 8). The kernels are examples/cholesky.rs's: GEMM and SYRK
 * register-blocked (8 rows × 4 columns of a tile per work-item: PoCL runs these ~20x
 * faster than naive ones), TRSM 8 rows per work-item (theirs: one), POTRF one work-item
 * per tile.
 * Include after <CL/cl.h>, with a CHECK(x) macro defined. */
#ifndef WEFT_BENCH_CL_TILES_H
#define WEFT_BENCH_CL_TILES_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *TILES_SRC =
    "#define REAL float\n"
    "#define REAL8 float8\n"
    "inline void gemm_nt(__global const REAL *A, __global const REAL *B, __global REAL *C,\n"
    "                    int m, int n, int k) {\n"
    "    int i = get_global_id(0) * 8, j = get_global_id(1) * 4;\n"
    "    REAL8 c0 = 0, c1 = 0, c2 = 0, c3 = 0;\n"
    "    for (int p = 0; p < k; p++) {\n"
    "        REAL8 av = vload8(0, A + i + p * m);\n"
    "        const __global REAL *bp = B + j + p * n;\n"
    "        c0 = fma(av, (REAL8)(bp[0]), c0); c1 = fma(av, (REAL8)(bp[1]), c1);\n"
    "        c2 = fma(av, (REAL8)(bp[2]), c2); c3 = fma(av, (REAL8)(bp[3]), c3);\n"
    "    }\n"
    "    __global REAL *c = C + i + j * m;\n"
    "    vstore8(vload8(0, c) - c0, 0, c);\n"
    "    vstore8(vload8(0, c + m) - c1, 0, c + m);\n"
    "    vstore8(vload8(0, c + 2 * m) - c2, 0, c + 2 * m);\n"
    "    vstore8(vload8(0, c + 3 * m) - c3, 0, c + 3 * m);\n"
    "}\n"
    "/* C -= A*B^T (A m×k, B n×k, C m×n) and C -= A*A^T (both triangles). */\n"
    "__kernel void gemm(__global const REAL *A, __global const REAL *B, __global REAL *C,\n"
    "                   int m, int n, int k) { gemm_nt(A, B, C, m, n, k); }\n"
    "__kernel void syrk(__global const REAL *A, __global REAL *C, int m, int k) { gemm_nt(A, A, C, m, m, k); }\n"
    "/* POTRF of an nb×nb tile by one work-item, left-looking; a pivot that is not positive\n"
    " * becomes NaN, which the check reports. */\n"
    "__kernel void potrf(__global REAL *A, int nb) {\n"
    "    for (int j = 0; j < nb; j++) {\n"
    "        for (int p = 0; p < j; p++) {\n"
    "            REAL l = A[j + p * nb];\n"
    "            for (int i = j; i < nb; i++) A[i + j * nb] -= A[i + p * nb] * l;\n"
    "        }\n"
    "        REAL d = A[j + j * nb];\n"
    "        d = d > 0 ? sqrt(d) : NAN;\n"
    "        A[j + j * nb] = d;\n"
    "        for (int i = j + 1; i < nb; i++) A[i + j * nb] /= d;\n"
    "    }\n"
    "}\n"
    "/* TRSM: B = B*L^-T (B m×n, L n×n), 8 rows of B per work-item (m % 8 == 0): rows are\n"
    " * independent; a row per work-item (examples/cholesky.rs's) runs ~8x slower on PoCL. */\n"
    "__kernel void trsm(__global const REAL *L, __global REAL *B, int m, int n) {\n"
    "    int i = get_global_id(0) * 8;\n"
    "    for (int j = 0; j < n; j++) {\n"
    "        REAL8 x = vload8(0, B + i + j * m);\n"
    "        for (int p = 0; p < j; p++) x = fma(-vload8(0, B + i + p * m), (REAL8)(L[j + p * n]), x);\n"
    "        vstore8(x / L[j + j * n], 0, B + i + j * m);\n"
    "    }\n"
    "}\n";

struct tiles {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel potrf, trsm, syrk, gemm;
    int nb;
    size_t kernels; /* kernels enqueued by the last run */
};

/* Builds the program for `dev` and creates the four kernels. */
static void tiles_init(struct tiles *tl, cl_context ctx, cl_command_queue q, cl_device_id dev, int nb) {
    cl_int err;
    memset(tl, 0, sizeof *tl);
    tl->ctx = ctx;
    tl->q = q;
    tl->nb = nb;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &TILES_SRC, NULL, &err);
    CHECK(err);
    if (clBuildProgram(prog, 1, &dev, "-cl-fast-relaxed-math", NULL, NULL) != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "build failed:\n%s\n", log);
        exit(1);
    }
    tl->potrf = clCreateKernel(prog, "potrf", &err);
    CHECK(err);
    tl->trsm = clCreateKernel(prog, "trsm", &err);
    CHECK(err);
    tl->syrk = clCreateKernel(prog, "syrk", &err);
    CHECK(err);
    tl->gemm = clCreateKernel(prog, "gemm", &err);
    CHECK(err);
    CHECK(clReleaseProgram(prog));
}

static void tiles_release(struct tiles *tl) {
    CHECK(clReleaseKernel(tl->potrf));
    CHECK(clReleaseKernel(tl->trsm));
    CHECK(clReleaseKernel(tl->syrk));
    CHECK(clReleaseKernel(tl->gemm));
}

/* Enqueues `k` on nd-range `g` (local size left to the implementation) after the
 * commands of `deps` (NULL entries skipped); the new event replaces *out's. */
static void tiles_launch(struct tiles *tl, cl_kernel k, cl_uint dims, const size_t *g, cl_event *deps, int ndeps,
                         cl_event *out) {
    cl_event wait[4];
    cl_uint nw = 0;
    for (int d = 0; d < ndeps; d++)
        if (deps[d]) wait[nw++] = deps[d];
    cl_event ev;
    CHECK(clEnqueueNDRangeKernel(tl->q, k, dims, NULL, g, NULL, nw, nw ? wait : NULL, &ev));
    if (*out) CHECK(clReleaseEvent(*out));
    *out = ev;
    tl->kernels++;
}

/* One tile's buffer per entry of `bufs` (count of them), written from `host` (count×nb²
 * floats) without blocking; its event into `ev`. With lower_t > 0, only the tiles (i, j)
 * with i >= j of a lower_t×lower_t matrix of tiles. */
static void tiles_write(struct tiles *tl, cl_mem *bufs, int count, const float *host, cl_event *ev, int lower_t) {
    size_t bytes = (size_t)tl->nb * (size_t)tl->nb * sizeof(float);
    for (int i = 0; i < count; i++) {
        if (lower_t > 0 && i / lower_t < i % lower_t) continue;
        if (!bufs[i]) {
            cl_int err;
            bufs[i] = clCreateBuffer(tl->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
            CHECK(err);
        }
        if (ev[i]) CHECK(clReleaseEvent(ev[i]));
        ev[i] = NULL;
        CHECK(clEnqueueWriteBuffer(tl->q, bufs[i], CL_FALSE, 0, bytes, host + (size_t)i * tl->nb * tl->nb, 0, NULL, &ev[i]));
    }
}

/* Reads the tiles back (after their last writers) into `host` and waits for all. */
static void tiles_read(struct tiles *tl, cl_mem *bufs, int count, float *host, cl_event *ev) {
    size_t bytes = (size_t)tl->nb * (size_t)tl->nb * sizeof(float);
    for (int i = 0; i < count; i++) {
        if (!bufs[i]) continue;
        CHECK(clEnqueueReadBuffer(tl->q, bufs[i], CL_FALSE, 0, bytes, host + (size_t)i * tl->nb * tl->nb, ev[i] ? 1 : 0,
                                  ev[i] ? &ev[i] : NULL, NULL));
    }
    CHECK(clFinish(tl->q));
    for (int i = 0; i < count; i++) {
        if (ev[i]) CHECK(clReleaseEvent(ev[i]));
        ev[i] = NULL;
    }
}

/* Right-looking tiled Cholesky of the t×t tiles in `bufs` (lower triangle; ev[i*t+j] the
 * last writer of each, updated): for each step k POTRF(k,k), TRSM(i,k) below it, then
 * SYRK(i,i) and GEMM(i,j) on the trailing matrix. Every kernel waits only for the last
 * writers of the tiles it reads and writes: tiles are read only after their last write. */
static void tiles_cholesky(struct tiles *tl, cl_mem *bufs, cl_event *ev, int t) {
    int nb = tl->nb;
    size_t one = 1, rows = (size_t)nb / 8, blocked[2] = {(size_t)nb / 8, (size_t)nb / 4};
    tl->kernels = 0;
#define T(i, j) ((i) * t + (j))
    for (int k = 0; k < t; k++) {
        CHECK(clSetKernelArg(tl->potrf, 0, sizeof(cl_mem), &bufs[T(k, k)]));
        CHECK(clSetKernelArg(tl->potrf, 1, sizeof(int), &nb));
        tiles_launch(tl, tl->potrf, 1, &one, NULL, 0, &ev[T(k, k)]);
        for (int i = k + 1; i < t; i++) {
            CHECK(clSetKernelArg(tl->trsm, 0, sizeof(cl_mem), &bufs[T(k, k)]));
            CHECK(clSetKernelArg(tl->trsm, 1, sizeof(cl_mem), &bufs[T(i, k)]));
            CHECK(clSetKernelArg(tl->trsm, 2, sizeof(int), &nb));
            CHECK(clSetKernelArg(tl->trsm, 3, sizeof(int), &nb));
            cl_event deps[2] = {ev[T(k, k)], ev[T(i, k)]};
            tiles_launch(tl, tl->trsm, 1, &rows, deps, 2, &ev[T(i, k)]);
        }
        for (int i = k + 1; i < t; i++) {
            CHECK(clSetKernelArg(tl->syrk, 0, sizeof(cl_mem), &bufs[T(i, k)]));
            CHECK(clSetKernelArg(tl->syrk, 1, sizeof(cl_mem), &bufs[T(i, i)]));
            CHECK(clSetKernelArg(tl->syrk, 2, sizeof(int), &nb));
            CHECK(clSetKernelArg(tl->syrk, 3, sizeof(int), &nb));
            cl_event deps[2] = {ev[T(i, k)], ev[T(i, i)]};
            tiles_launch(tl, tl->syrk, 2, blocked, deps, 2, &ev[T(i, i)]);
            for (int j = k + 1; j < i; j++) {
                CHECK(clSetKernelArg(tl->gemm, 0, sizeof(cl_mem), &bufs[T(i, k)]));
                CHECK(clSetKernelArg(tl->gemm, 1, sizeof(cl_mem), &bufs[T(j, k)]));
                CHECK(clSetKernelArg(tl->gemm, 2, sizeof(cl_mem), &bufs[T(i, j)]));
                CHECK(clSetKernelArg(tl->gemm, 3, sizeof(int), &nb));
                CHECK(clSetKernelArg(tl->gemm, 4, sizeof(int), &nb));
                CHECK(clSetKernelArg(tl->gemm, 5, sizeof(int), &nb));
                cl_event deps[3] = {ev[T(i, k)], ev[T(j, k)], ev[T(i, j)]};
                tiles_launch(tl, tl->gemm, 2, blocked, deps, 3, &ev[T(i, j)]);
            }
        }
    }
    CHECK(clFlush(tl->q));
#undef T
}

/* Tiled C -= A·Bᵀ: A, B and C t×t tiles each (C(i,j) -= Σ_p A(i,p)·B(j,p)ᵀ), the GEMMs
 * on one C tile chained, those on different C tiles independent. */
static void tiles_sgemm(struct tiles *tl, cl_mem *a, cl_mem *b, cl_mem *c, cl_event *eva, cl_event *evb, cl_event *evc,
                        int t) {
    int nb = tl->nb;
    size_t blocked[2] = {(size_t)nb / 8, (size_t)nb / 4};
    tl->kernels = 0;
    for (int p = 0; p < t; p++)
        for (int i = 0; i < t; i++)
            for (int j = 0; j < t; j++) {
                CHECK(clSetKernelArg(tl->gemm, 0, sizeof(cl_mem), &a[i * t + p]));
                CHECK(clSetKernelArg(tl->gemm, 1, sizeof(cl_mem), &b[j * t + p]));
                CHECK(clSetKernelArg(tl->gemm, 2, sizeof(cl_mem), &c[i * t + j]));
                CHECK(clSetKernelArg(tl->gemm, 3, sizeof(int), &nb));
                CHECK(clSetKernelArg(tl->gemm, 4, sizeof(int), &nb));
                CHECK(clSetKernelArg(tl->gemm, 5, sizeof(int), &nb));
                cl_event deps[3] = {eva[i * t + p], evb[j * t + p], evc[i * t + j]};
                tiles_launch(tl, tl->gemm, 2, blocked, deps, 3, &evc[i * t + j]);
            }
    CHECK(clFlush(tl->q));
}

/* Host side: the n×n column-major matrix `m` to and from t×t packed tiles (all of them). */
static void tiles_pack(const float *m, float *tiles, int n, int nb) {
    int t = n / nb;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++)
            for (int c = 0; c < nb; c++)
                for (int r = 0; r < nb; r++)
                    tiles[((size_t)(i * t + j) * nb + c) * nb + r] = m[(size_t)(j * nb + c) * n + i * nb + r];
}

static void tiles_unpack(const float *tiles, float *m, int n, int nb) {
    int t = n / nb;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++)
            for (int c = 0; c < nb; c++)
                for (int r = 0; r < nb; r++)
                    m[(size_t)(j * nb + c) * n + i * nb + r] = tiles[((size_t)(i * t + j) * nb + c) * nb + r];
}

/* A random symmetric positive definite n×n matrix (column-major): symmetric entries in
 * [-0.5, 0.5) plus n on the diagonal. */
static void tiles_spd(float *a, int n, unsigned seed) {
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            float v = (float)(seed >> 8) / 16777216.0f - 0.5f;
            if (i == j) v += (float)n;
            a[(size_t)j * n + i] = a[(size_t)i * n + j] = v;
        }
}

/* √x by Newton's method (x >= 0; NaN stays NaN): no libm to link. */
static double tiles_sqrt(double x) {
    if (!(x > 0)) return x;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++) {
        double next = 0.5 * (r + x / r);
        if (next >= r) break;
        r = next;
    }
    return r;
}

/* ‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F in double, L the lower triangle of `l`; above n = 512,
 * over a regular sample of about 512×512 of the entries (every s-th row and column): the
 * full check is O(n³) on the host, longer than the factorisation. */
static double tiles_residual(const float *l, const float *a, int n) {
    double num = 0, den = 0;
    int s = n > 512 ? n / 512 : 1;
    for (int j = 0; j < n; j += s)
        for (int i = j; i < n; i += s) {
            double s = 0;
            for (int p = 0; p <= j; p++) s += (double)l[(size_t)p * n + i] * (double)l[(size_t)p * n + j];
            double d = s - (double)a[(size_t)j * n + i];
            num += d * d;
            den += (double)a[(size_t)j * n + i] * a[(size_t)j * n + i];
        }
    return tiles_sqrt(num / den);
}
#endif
