/* Shared bits of the OpenMP task benchmarks: a wall clock, a warm-up, and the result line
 * that run.sh parses ("RESULT name=... seconds=... check=ok|FAILED"). */
#ifndef WEFT_BENCH_OMP_TASKS_COMMON_H
#define WEFT_BENCH_OMP_TASKS_COMMON_H
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

static inline int report(const char *name, double seconds, int ok, const char *extra) {
    printf("RESULT name=%s seconds=%.6f check=%s %s\n", name, seconds, ok ? "ok" : "FAILED", extra ? extra : "");
    return ok ? 0 : 1;
}
#endif
