/* Recursive Fibonacci with a task per call above a cutoff (`if` clause: below it the
 * task is undeferred, run at once by the creating thread), as in BOTS fib.
 * Usage: fib [n] [cutoff] (defaults 30 and 15). */
#include "common.h"
#include <omp.h>
#include <stdlib.h>

static long fib(int n, int cutoff) {
    if (n < 2) return n;
    long x, y;
#pragma omp task shared(x) firstprivate(n) if(n > cutoff)
    x = fib(n - 1, cutoff);
#pragma omp task shared(y) firstprivate(n) if(n > cutoff)
    y = fib(n - 2, cutoff);
#pragma omp taskwait
    return x + y;
}

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 30;
    int cutoff = argc > 2 ? atoi(argv[2]) : 15;
    long r = 0;
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    r = fib(n, cutoff);
    double t = now() - t0;
    char extra[64];
    snprintf(extra, sizeof extra, "n=%d cutoff=%d", n, cutoff);
    return report("fib", t, r == fib_seq(n), extra);
}
