/* Ordered loops: every ordered region runs in iteration order, whatever the schedule, the
 * loop variable's type (the dispatch entry points' 4/4u/8/8u forms) and whether an
 * iteration runs its ordered region or skips it.
 *
 * `ordered threads simd` is the form clang 14 emits no __kmpc_ordered/__kmpc_end_ordered
 * for (only __kmpc_dispatch_fini after each iteration, as for any ordered loop): the
 * runtime learns of no ordered region and must still keep them in order (libgomp's
 * ordered-5.c). The work before each region varies, so that without ordering a later
 * iteration's region would often come first. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

#define N 96
#define REPS 200

static volatile int sink;

/* Some work, more for some iterations than others. */
static void work(long i) {
    for (int k = 0; k < (int)((i * 7919) % 13) * 40; k++) sink += k;
}

static int seq[N], pos;

static void reset(void) {
    pos = 0;
    for (int i = 0; i < N; i++) seq[i] = -1;
}

/* The ordered regions ran for `want` iterations (those with i % every == 0) in order. */
static void check_seq(int every, const char *what) {
    int k = 0;
    for (int i = 0; i < N; i++)
        if (i % every == 0) {
            if (k >= pos || seq[k] != i) {
                fprintf(stderr, "%s: region %d was iteration %d, not %d\n", what, k, k < pos ? seq[k] : -1, i);
                exit(1);
            }
            k++;
        }
    CHECK(pos == k);
}

#define RECORD(i)                                                                         \
    do {                                                                              \
        int p_ = pos;                                                                 \
        work(i);                                                                      \
        seq[p_] = (int)(i);                                                           \
        pos = p_ + 1;                                                                 \
    } while (0)

#define PRAGMA(...) _Pragma(#__VA_ARGS__)

/* `ordered threads simd` in `for simd ordered` loops (no runtime call marks the region). */
#define SIMD_LOOP(T, NAME, ...)                                                         \
    static void simd_##NAME(void) {                                                   \
        reset();                                                                      \
        PRAGMA(omp parallel for simd ordered schedule(__VA_ARGS__) num_threads(4))      \
        for (T i = 0; i < N; i++) {                                                   \
            work(N - i);                                                              \
            _Pragma("omp ordered threads simd")                                        \
            RECORD(i);                                                                \
        }                                                                             \
        check_seq(1, "ordered threads simd, " #T ", schedule(" #__VA_ARGS__ ")");     \
    }

/* Plain `ordered` regions, run by every third iteration only: the skipped ones still
 * pass the turn on. */
#define SOME_LOOP(T, NAME, ...)                                                         \
    static void some_##NAME(void) {                                                   \
        reset();                                                                      \
        PRAGMA(omp parallel for ordered schedule(__VA_ARGS__) num_threads(4))           \
        for (T i = 0; i < N; i++) {                                                   \
            work(N - i);                                                              \
            if (i % 3 == 0) {                                                         \
                _Pragma("omp ordered")                                                 \
                RECORD(i);                                                            \
            }                                                                         \
        }                                                                             \
        check_seq(3, "every third ordered, " #T ", schedule(" #__VA_ARGS__ ")");      \
    }

SIMD_LOOP(int, static, static)
SIMD_LOOP(int, static1, static, 1)
SIMD_LOOP(unsigned, dynamic, dynamic)
SIMD_LOOP(long, guided, guided)
SIMD_LOOP(unsigned long long, dynamic3, dynamic, 3)
SOME_LOOP(int, static1, static, 1)
SOME_LOOP(unsigned, static, static)
SOME_LOOP(long, dynamic, dynamic)
SOME_LOOP(unsigned long long, guided2, guided, 2)

int main(void) {
    served_by_weft();
    for (int r = 0; r < REPS; r++) {
        simd_static();
        simd_static1();
        simd_dynamic();
        simd_guided();
        simd_dynamic3();
        some_static1();
        some_static();
        some_dynamic();
        some_guided2();
    }
    /* An ordered loop none of whose iterations runs its ordered region. */
    int count = 0;
#pragma omp parallel for ordered schedule(dynamic) num_threads(4) reduction(+ : count)
    for (int i = 0; i < N; i++) {
        if (i < 0) {
#pragma omp ordered
            sink = i;
        }
        count++;
    }
    CHECK(count == N);
    printf("ordered OK\n");
    return 0;
}
