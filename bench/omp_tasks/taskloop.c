/* Taskloops from one thread: `reps` taskloops of `tasks` tasks over `n` doubles, each
 * iteration a scale-and-add and a `reduction(+)` over the results (a taskloop reduction:
 * GOMP_taskgroup_reduction_register and in_reduction per task). Checked against the same
 * arithmetic run sequentially, within the reassociation a reduction allows. Usage:
 * taskloop [n] [tasks] [reps] (defaults 1,000,000, 100 and 200: 100 tasks of ~30 µs). */
#include "common.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long tasks = argc > 2 ? atol(argv[2]) : 100;
    int reps = argc > 3 ? atoi(argv[3]) : 200;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) x[i] = y[i] = (double)i;
    double want = 0;
    for (int r = 0; r < reps; r++)
        for (long i = 0; i < n; i++) {
            y[i] = y[i] * 0.5 + 1.0;
            want += y[i];
        }
    warmup();
    double s = 0, t0 = now();
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < reps; r++) {
#pragma omp taskloop num_tasks(tasks) reduction(+: s)
        for (long i = 0; i < n; i++) {
            x[i] = x[i] * 0.5 + 1.0;
            s += x[i];
        }
    }
    double t = now() - t0;
    int ok = fabs(s - want) <= 1e-9 * want;
    for (long i = 0; i < n; i++) ok &= x[i] == y[i];
    char extra[64];
    snprintf(extra, sizeof extra, "n=%ld tasks=%ld reps=%d", n, tasks, reps);
    return report("taskloop", t, ok, extra);
}
