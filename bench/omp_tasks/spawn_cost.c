/* An LD_PRELOAD interposer that times every GOMP_task call made inside a parallel region:
 * what creating a task costs the creating thread, under whichever runtime serves
 * GOMP_task next in the lookup order (libgomp, LLVM's libomp, Weft). For a clang-built
 * program (the kmp ABI) a task is two calls, __kmpc_omp_task_alloc then
 * __kmpc_omp_task_with_deps or __kmpc_omp_task: one sample is their sum. Calls that took
 * over 100 µs are counted apart: they ran a task body (an undeferred or throttled task).
 * At exit it prints `SPAWN_COST calls=… mean_us=… median_us=… p90_us=… over100us=…`.
 * Used by spawn_cost.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*gomp_task_fn)(void (*)(void *), void *, void (*)(void *, void *), long, long, _Bool, unsigned, void **, int,
                             void *);
static gomp_task_fn real_task;
#define MAX_SAMPLES (1 << 20)
static uint32_t *samples; /* ns, calls under 100 µs */
static uint64_t nsamples, over;
static uint64_t total_ns;
static uint64_t alloc_ns; /* the last __kmpc_omp_task_alloc's, added to its task's sample */
/* Inside GOMP_task: libomp's GOMP_task calls its own kmp entry points, not to be counted twice. */
static __thread int in_gomp;

static uint64_t ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sample(uint64_t d) {
    /* Only one thread creates tasks in the benchmarks this is used with (a single
     * construct); the counters are not shared-safe beyond that. */
    if (d >= 100000) {
        over++;
        return;
    }
    if (!samples) samples = malloc(sizeof(uint32_t) * MAX_SAMPLES);
    if (samples && nsamples < MAX_SAMPLES) samples[nsamples] = (uint32_t)d;
    nsamples++;
    total_ns += d;
}

void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align, _Bool if_clause,
               unsigned flags, void **depend, int priority, void *detach) {
    if (!real_task) real_task = (gomp_task_fn)dlsym(RTLD_NEXT, "GOMP_task");
    if (!omp_in_parallel()) {
        real_task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
        return;
    }
    uint64_t t0 = ns();
    in_gomp = 1;
    real_task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
    in_gomp = 0;
    sample(ns() - t0);
}

/* The kmp ABI (clang). The task structures are opaque here. */
typedef void *(*kmp_alloc_fn)(void *, int, int, size_t, size_t, void *);
typedef int (*kmp_deps_fn)(void *, int, void *, int, void *, int, void *);
typedef int (*kmp_task_fn)(void *, int, void *);
static kmp_alloc_fn real_alloc;
static kmp_deps_fn real_with_deps;
static kmp_task_fn real_kmp_task;

void *__kmpc_omp_task_alloc(void *loc, int gtid, int flags, size_t sizeof_task, size_t sizeof_shareds, void *routine) {
    if (!real_alloc) real_alloc = (kmp_alloc_fn)dlsym(RTLD_NEXT, "__kmpc_omp_task_alloc");
    uint64_t t0 = ns();
    void *t = real_alloc(loc, gtid, flags, sizeof_task, sizeof_shareds, routine);
    alloc_ns = ns() - t0;
    return t;
}

int __kmpc_omp_task_with_deps(void *loc, int gtid, void *task, int ndeps, void *deps, int nnoalias, void *noalias) {
    if (!real_with_deps) real_with_deps = (kmp_deps_fn)dlsym(RTLD_NEXT, "__kmpc_omp_task_with_deps");
    if (in_gomp || !omp_in_parallel()) return real_with_deps(loc, gtid, task, ndeps, deps, nnoalias, noalias);
    uint64_t t0 = ns();
    int r = real_with_deps(loc, gtid, task, ndeps, deps, nnoalias, noalias);
    sample(ns() - t0 + alloc_ns);
    return r;
}

int __kmpc_omp_task(void *loc, int gtid, void *task) {
    if (!real_kmp_task) real_kmp_task = (kmp_task_fn)dlsym(RTLD_NEXT, "__kmpc_omp_task");
    if (in_gomp || !omp_in_parallel()) return real_kmp_task(loc, gtid, task);
    uint64_t t0 = ns();
    int r = real_kmp_task(loc, gtid, task);
    sample(ns() - t0 + alloc_ns);
    return r;
}

static int cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void) {
    uint64_t n = nsamples < MAX_SAMPLES ? nsamples : MAX_SAMPLES;
    double med = 0, p90 = 0;
    if (samples && n) {
        qsort(samples, n, sizeof(uint32_t), cmp);
        med = samples[n / 2] / 1e3;
        p90 = samples[n * 9 / 10] / 1e3;
    }
    fprintf(stderr, "SPAWN_COST calls=%llu mean_us=%.3f median_us=%.3f p90_us=%.3f over100us=%llu\n",
            (unsigned long long)nsamples, nsamples ? total_ns / 1e3 / nsamples : 0.0, med, p90, (unsigned long long)over);
}
