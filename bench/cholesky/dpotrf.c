/* LAPACK's dpotrf on the matrix examples/cholesky factors: the peer of Weft's f64
 * Cholesky in bench/cholesky/run.sh.
 *
 *   gcc -O2 bench/cholesky/dpotrf.c -o dpotrf -lopenblas
 *   OPENBLAS_NUM_THREADS=2 ./dpotrf [n [lda]]  (default 2048, and the example's lda)
 *
 * The matrix is the example's: random symmetric from the same xorshift stream, plus n·I
 * (positive definite), column-major, with the example's leading dimension (n rounded up to
 * an odd number of 64-byte lines, examples/cholesky.rs) unless `lda` is given. One
 * untimed factorisation of a copy first (OpenBLAS starts its threads, the pages are
 * touched), then the clock covers one dpotrf ("L").
 * Prints `dpotrf n=N lda=L: S s (G GFLOP/s)` with n³/3 flops, as the example and StarPU do. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fortran LAPACK (in libopenblas); the trailing argument is the hidden length of `uplo`. */
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);

static uint64_t state;

/* examples/common's Rng::next_f64: xorshift, 53 bits, in [-1, 1). */
static double next_f64(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return ((double)(state >> 11) / (double)(1ULL << 53)) * 2.0 - 1.0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int factor(double *a, int n, int lda) {
    int info = 0;
    dpotrf_("L", &n, a, &lda, &info, 1);
    return info;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    int lines = (n + 7) / 8, lda = argc > 2 ? atoi(argv[2]) : (lines + 1 - lines % 2) * 8;
    if (n <= 0 || lda < n) {
        fprintf(stderr, "usage: dpotrf [n [lda >= n]]\n");
        return 2;
    }
    size_t nn = (size_t)lda * n;
    double *a0 = malloc(nn * sizeof *a0), *a = malloc(nn * sizeof *a);
    if (!a0 || !a) {
        fprintf(stderr, "dpotrf: out of memory\n");
        return 1;
    }
    state = 0x9e3779b97f4a7c15ULL | 1;
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            double x = next_f64() + (i == j ? n : 0.0);
            a0[i + (size_t)j * lda] = x;
            a0[j + (size_t)i * lda] = x;
        }
    memcpy(a, a0, nn * sizeof *a);
    int info = factor(a, n, lda);
    memcpy(a, a0, nn * sizeof *a);
    double t0 = now();
    info |= factor(a, n, lda);
    double secs = now() - t0;
    if (info != 0) {
        fprintf(stderr, "dpotrf: info = %d\n", info);
        return 1;
    }
    printf("dpotrf n=%d lda=%d: %.6f s (%.2f GFLOP/s)\n", n, lda, secs, (double)n * n * n / 3.0 / secs / 1e9);
    free(a);
    free(a0);
    return 0;
}
