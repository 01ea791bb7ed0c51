/* Worksharing loops: every schedule (static, dynamic, guided, runtime, auto, nonmonotonic),
 * long and unsigned long long forms, negative steps, collapse, ordered, doacross. Every
 * iteration runs exactly once. */
#include <omp.h>
#include <string.h>
#include "check.h"

#define N 1000
static int hits[N];

static void reset(void) { memset(hits, 0, sizeof hits); }
static void once(void) {
    for (int i = 0; i < N; i++) CHECK(hits[i] == 1);
}

int main(void) {
#define LOOP(sched)                                              \
    reset();                                                     \
    _Pragma("omp parallel num_threads(3)")                       \
    {                                                            \
        _Pragma(sched) for (int i = 0; i < N; i++)               \
        {                                                        \
            _Pragma("omp atomic") hits[i]++;                     \
        }                                                        \
    }                                                            \
    once();
    LOOP("omp for schedule(static)")
    LOOP("omp for schedule(static, 7)")
    LOOP("omp for schedule(dynamic)")
    LOOP("omp for schedule(dynamic, 13)")
    LOOP("omp for schedule(guided)")
    LOOP("omp for schedule(guided, 5)")
    LOOP("omp for schedule(runtime)")
    LOOP("omp for schedule(auto)")
    LOOP("omp for schedule(nonmonotonic: dynamic, 3)")
    LOOP("omp for schedule(monotonic: guided)")
    LOOP("omp for schedule(dynamic) nowait")
    omp_set_schedule(omp_sched_guided, 4);
    LOOP("omp for schedule(runtime)")
    omp_sched_t k; int c;
    omp_get_schedule(&k, &c);
    CHECK(k == omp_sched_guided && c == 4);

    /* Negative step, long bounds. */
    reset();
#pragma omp parallel for schedule(dynamic, 4) num_threads(2)
    for (long i = N - 1; i >= 0; i -= 1) {
#pragma omp atomic
        hits[i]++;
    }
    once();
    /* unsigned long long near the top of the range. */
    unsigned long long base = ~0ULL - N;
    reset();
#pragma omp parallel for schedule(guided, 3) num_threads(2)
    for (unsigned long long u = base; u < base + N; u++) {
#pragma omp atomic
        hits[u - base]++;
    }
    once();
    reset();
#pragma omp parallel for schedule(dynamic) num_threads(2)
    for (unsigned long long u = base + N; u > base; u -= 2) {
#pragma omp atomic
        hits[u - base - 1]++;
    }
    for (int i = 0; i < N; i++) CHECK(hits[i] == (i % 2 == 1));
    /* collapse + lastprivate + reduction. */
    long sum = 0; int last = -1;
#pragma omp parallel for collapse(2) reduction(+ : sum) lastprivate(last) schedule(runtime) num_threads(3)
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 25; j++) {
            sum += i * 25 + j;
            last = i * 25 + j;
        }
    CHECK(sum == 999L * 1000 / 2 && last == 999);
    /* ordered: the ordered parts run in iteration order. */
    for (int s = 0; s < 3; s++) {
        int next = 0;
#pragma omp parallel num_threads(3)
        {
            if (s == 0) {
#pragma omp for ordered schedule(static, 1)
                for (int i = 0; i < N; i++) {
#pragma omp ordered
                    { CHECK(next == i); next++; }
                }
            } else if (s == 1) {
#pragma omp for ordered schedule(dynamic, 3)
                for (int i = 0; i < N; i++) {
#pragma omp ordered
                    { CHECK(next == i); next++; }
                }
            } else {
#pragma omp for ordered schedule(guided)
                for (int i = 0; i < N; i++) {
#pragma omp ordered
                    { CHECK(next == i); next++; }
                }
            }
        }
        CHECK(next == N);
    }
    /* doacross: a wavefront, a[i][j] from a[i-1][j] and a[i][j-1]. */
    static int a[64][64];
    memset(a, 0, sizeof a);
#pragma omp parallel for ordered(2) schedule(static, 1) num_threads(3)
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++) {
#pragma omp ordered depend(sink : i - 1, j) depend(sink : i, j - 1)
            a[i][j] = (i ? a[i - 1][j] : 0) + (j ? a[i][j - 1] : 0) + 1;
#pragma omp ordered depend(source)
        }
    /* a[i][j] = C(i+j+2, i+1) - 1 */
    CHECK(a[0][0] == 1 && a[1][1] == 5 && a[2][2] == 19 && a[3][3] == 69);
    /* sections */
    int secs[4] = {0};
#pragma omp parallel sections num_threads(3)
    {
#pragma omp section
        secs[0]++;
#pragma omp section
        secs[1]++;
#pragma omp section
        secs[2]++;
#pragma omp section
        secs[3]++;
    }
    for (int i = 0; i < 4; i++) CHECK(secs[i] == 1);
    printf("loops OK\n");
    return 0;
}
