/* Shared bits of the OpenMP task benchmarks: a wall clock, a warm-up, and the result line
 * that run.sh parses ("RESULT name=... seconds=... check=ok|FAILED"). */
#ifndef WEFT_BENCH_OMP_TASKS_COMMON_H
#define WEFT_BENCH_OMP_TASKS_COMMON_H
#include <omp.h>
#include <stdio.h>
#include <time.h>

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One parallel region before the clock starts: every runtime creates its threads (and
 * Weft starts its worker pool) on the first region; the benchmarks time steady state,
 * as EPCC does. start-up is measured on its own (run.sh, "startup"). */
static inline void warmup(void) {
    int sink = 0;
#pragma omp parallel
    {
#pragma omp atomic
        sink++;
    }
    (void)sink;
}

/* Time inside the task kernels, per thread (Cholesky, SparseLU): `threads x wall - kernel
 * time` is what the runtime cost those threads (creating, scheduling, waiting), a steadier
 * measure than the wall time when all runtimes keep both cores ~99% busy. */
#define KT_MAX_THREADS 256
static struct { double s; char pad[56]; } kt_busy[KT_MAX_THREADS] __attribute__((unused)); /* a line each */
#define KT(call)                                                              \
    do {                                                                      \
        double kt_t0_ = now();                                                \
        call;                                                                 \
        int kt_i_ = omp_get_thread_num();                                     \
        if (kt_i_ < KT_MAX_THREADS) kt_busy[kt_i_].s += now() - kt_t0_;       \
    } while (0)
/* Milliseconds of the region's threads outside kernels: nthreads x wall - kernel time. */
static inline double kt_outside_ms(double wall, int nthreads) {
    double busy = 0;
    for (int i = 0; i < KT_MAX_THREADS; i++) busy += kt_busy[i].s;
    return (nthreads * wall - busy) * 1e3;
}

static inline int report(const char *name, double seconds, int ok, const char *extra) {
    printf("RESULT name=%s seconds=%.6f check=%s %s\n", name, seconds, ok ? "ok" : "FAILED", extra ? extra : "");
    return ok ? 0 : 1;
}
#endif
