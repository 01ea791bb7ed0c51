/* Tiled Cholesky (lower, right-looking) with `depend` clauses on the tiles, as in KASTORS
 * dpotrf: POTRF, TRSM, SYRK and GEMM tasks ordered only by their in/inout tiles. Tile
 * kernels are plain C (compiled with -O3), the same for every runtime. The result is
 * checked on two random vectors x: ||L·(Lᵀ·x) − A·x|| / (||A||_F·||x||) < 1e-10, in O(n²)
 * (the whole L·Lᵀ took seconds a run at n = 2048, most of a benchmark's time on a 16-core
 * machine). A wrong tile changes L·(Lᵀ·x) in whole rows. Usage: cholesky [n] [tile]
 * (2048, 128). */
#include "common.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int NB; /* tile order */

/* Tiles are column-major NB×NB blocks; A[i][j] for i >= j (lower). */
static void potrf(double *a) {
    for (int j = 0; j < NB; j++) {
        for (int p = 0; p < j; p++)
            for (int i = j; i < NB; i++) a[i + j * NB] -= a[i + p * NB] * a[j + p * NB];
        double d = sqrt(a[j + j * NB]);
        a[j + j * NB] = d;
        for (int i = j + 1; i < NB; i++) a[i + j * NB] /= d;
    }
}

/* B = B·L⁻ᵀ */
static void trsm(const double *l, double *b) {
    for (int j = 0; j < NB; j++) {
        for (int p = 0; p < j; p++) {
            double ljp = l[j + p * NB];
            for (int i = 0; i < NB; i++) b[i + j * NB] -= b[i + p * NB] * ljp;
        }
        double d = l[j + j * NB];
        for (int i = 0; i < NB; i++) b[i + j * NB] /= d;
    }
}

/* C -= A·Bᵀ */
static void gemm(const double *a, const double *b, double *c) {
    for (int j = 0; j < NB; j++)
        for (int p = 0; p < NB; p++) {
            double bjp = b[j + p * NB];
            for (int i = 0; i < NB; i++) c[i + j * NB] -= a[i + p * NB] * bjp;
        }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    NB = argc > 2 ? atoi(argv[2]) : 128;
    if (n % NB) { fprintf(stderr, "n must be a multiple of the tile\n"); return 2; }
    int T = n / NB;
    double **A = malloc(sizeof(double *) * T * T);
    double *full = malloc(sizeof(double) * n * n);
    srand(42);
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            double x = (double)rand() / RAND_MAX + (i == j ? n : 0);
            full[i + j * n] = full[j + i * n] = x;
        }
    for (int tj = 0; tj < T; tj++)
        for (int ti = 0; ti < T; ti++) {
            double *t = malloc(sizeof(double) * NB * NB);
            for (int j = 0; j < NB; j++) memcpy(t + j * NB, full + (tj * NB + j) * n + ti * NB, sizeof(double) * NB);
            A[ti + tj * T] = t;
        }
#define TILE(i, j) A[(i) + (j) * T]
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    for (int k = 0; k < T; k++) {
        double *akk = TILE(k, k);
#pragma omp task depend(inout: akk[0]) firstprivate(akk)
        KT(potrf(akk));
        for (int i = k + 1; i < T; i++) {
            double *aik = TILE(i, k);
#pragma omp task depend(in: akk[0]) depend(inout: aik[0]) firstprivate(akk, aik)
            KT(trsm(akk, aik));
        }
        for (int i = k + 1; i < T; i++) {
            double *aik = TILE(i, k);
            for (int j = k + 1; j < i; j++) {
                double *ajk = TILE(j, k), *aij = TILE(i, j);
#pragma omp task depend(in: aik[0], ajk[0]) depend(inout: aij[0]) firstprivate(aik, ajk, aij)
                KT(gemm(aik, ajk, aij));
            }
            double *aii = TILE(i, i);
#pragma omp task depend(in: aik[0]) depend(inout: aii[0]) firstprivate(aik, aii)
            KT(gemm(aik, aik, aii)); /* SYRK, both triangles */
        }
    }
    double t = now() - t0;
    double outside = kt_outside_ms(t, omp_get_max_threads());
    /* Residual on random vectors: y = Lᵀ·x, z = L·y, against A·x (`full` is symmetric). */
#define L(i, j) TILE((i) / NB, (j) / NB)[((i) % NB) + ((j) % NB) * NB]
    double anorm = 0, res = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) anorm += full[i + j * n] * full[i + j * n];
    anorm = sqrt(anorm);
    double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n);
    for (int v = 0; v < 2; v++) {
        double xx = 0, dd = 0;
        for (int i = 0; i < n; i++) {
            x[i] = (double)rand() / RAND_MAX - 0.5;
            xx += x[i] * x[i];
        }
        for (int j = 0; j < n; j++) { /* y_j = Σ_{i ≥ j} L(i, j)·x_i */
            double s = 0;
            for (int i = j; i < n; i++) s += L(i, j) * x[i];
            y[j] = s;
        }
        for (int i = 0; i < n; i++) { /* z_i = Σ_{j ≤ i} L(i, j)·y_j, minus (A·x)_i */
            double s = 0;
            for (int j = 0; j <= i; j++) s += L(i, j) * y[j];
            for (int j = 0; j < n; j++) s -= full[i + j * n] * x[j];
            dd += s * s;
        }
        double r = sqrt(dd) / (anorm * sqrt(xx));
        if (!(r <= res)) res = r; /* the larger, and NaN sticks */
    }
    free(x);
    free(y);
    char extra[128];
    snprintf(extra, sizeof extra, "n=%d tile=%d gflops=%.2f residual=%.1e outside_ms=%.2f", n, NB, (double)n * n * n / 3.0 / t * 1e-9, res, outside);
    return report("cholesky", t, res < 1e-10, extra);
}
