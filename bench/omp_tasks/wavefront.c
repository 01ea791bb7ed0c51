/* A 2-D wavefront with `depend` clauses: block (i, j) reads (i-1, j) and (i, j-1) and
 * updates itself, created row by row by one thread, so each new task depends on the one
 * created just before it. Every block runs `w` dependent multiply-adds (about 3 µs at the
 * default 2,000). Parallelism grows along the anti-diagonals (up to `n` blocks at once),
 * but only for a runtime whose creator runs far enough ahead of the tasks in flight.
 * Checked bit for bit against a sequential run (the same operations in an order the
 * dependencies allow). Usage: wavefront [n] [w] (defaults 200 and 2000). */
#include "common.h"
#include <omp.h>
#include <stdlib.h>

static double work(double x, int w) {
    for (int k = 0; k < w; k++) x = x * 1.0000001 + 1e-9;
    return x;
}

static double cell(const double *g, int n, int i, int j, int w) {
    double up = i ? g[(i - 1) * n + j] : 0, left = j ? g[i * n + j - 1] : 0;
    return work(up + left + 1.0 / (1 + i + j), w);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200, w = argc > 2 ? atoi(argv[2]) : 2000;
    double *g = calloc((size_t)n * n, sizeof(double)), *ref = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) ref[i * n + j] = cell(ref, n, i, j, w);
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            /* The first row and column name themselves for the missing neighbour. */
            double *c = &g[i * n + j], *up = i ? c - n : c, *left = j ? c - 1 : c;
#pragma omp task depend(in: up[0], left[0]) depend(inout: c[0]) firstprivate(i, j)
            g[i * n + j] = cell(g, n, i, j, w);
        }
    double t = now() - t0;
    int ok = 1;
    for (long k = 0; k < (long)n * n; k++) ok &= g[k] == ref[k];
    char extra[64];
    snprintf(extra, sizeof extra, "n=%d w=%d tasks=%d", n, w, n * n);
    return report("wavefront", t, ok, extra);
}
