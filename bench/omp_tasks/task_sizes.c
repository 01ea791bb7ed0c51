/* Tasks of a chosen size: one thread creates `n` tasks (inside `single`), each `w`
 * dependent multiply-adds long (about 1.1 ns each here), and the team runs them; the clock
 * covers creation and the implicit barrier. Where deferring a task starts to pay depends on
 * its size: a runtime should run the tiny ones where they are made and spread the rest.
 * Each task counts itself, so the check sees every one ran exactly once.
 * Usage: task_sizes [n] [w]   (e.g. PROGS="task_sizes:1000000:0 task_sizes:95230:200") */
#include "common.h"
#include <stdlib.h>

__attribute__((noinline)) static long work(long w, long x) {
    for (long i = 0; i < w; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long w = argc > 2 ? atol(argv[2]) : 0;
    long ran = 0, odd = 0;
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    for (long i = 0; i < n; i++) {
#pragma omp task shared(ran, odd) firstprivate(i)
        {
            long r = work(w, i);
#pragma omp atomic
            ran++;
#pragma omp atomic
            odd += r & 1;
        }
    }
    double t = now() - t0;
    char extra[96];
    snprintf(extra, sizeof extra, "n=%ld w=%ld ns_per_task=%.1f odd=%ld", n, w, 1e9 * t / (double)n, odd);
    return report("task_sizes", t, ran == n, extra);
}
