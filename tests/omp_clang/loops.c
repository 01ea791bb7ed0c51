/* Worksharing loops from clang: static (blocks and chunks), dynamic, guided and runtime
 * schedules over int, unsigned, long long and unsigned long long counters, with reductions
 * and lastprivate, counting down, nowait, and ordered. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

#define N 1000

int main(void) {
    served_by_weft();
    static int hits[N];
    long s;
    int last;
#define RESET()                                         \
    do {                                                \
        memset(hits, 0, sizeof hits);                   \
        s = 0;                                          \
        last = -1;                                      \
    } while (0)
#define VERIFY()                                        \
    do {                                                \
        for (int i = 0; i < N; i++) CHECK(hits[i] == 1); \
        CHECK(s == (long)N * (N - 1) / 2);              \
    } while (0)

    RESET();
#pragma omp parallel for num_threads(3) reduction(+ : s) lastprivate(last)
    for (int i = 0; i < N; i++) { hits[i]++; s += i; last = i; }
    VERIFY();
    CHECK(last == N - 1);

    RESET();
#pragma omp parallel for num_threads(3) schedule(static, 7) reduction(+ : s) lastprivate(last)
    for (unsigned i = 0; i < N; i++) { hits[i]++; s += i; last = i; }
    VERIFY();
    CHECK(last == N - 1);

    RESET();
#pragma omp parallel for num_threads(3) schedule(dynamic, 3) reduction(+ : s) lastprivate(last)
    for (long long i = 0; i < N; i++) { hits[i]++; s += i; last = i; }
    VERIFY();
    CHECK(last == N - 1);

    RESET();
#pragma omp parallel for num_threads(4) schedule(guided) reduction(+ : s)
    for (unsigned long long i = 0; i < N; i++) { hits[i]++; s += i; }
    VERIFY();

    RESET();
#pragma omp parallel for num_threads(3) schedule(runtime) reduction(+ : s)
    for (int i = N - 1; i >= 0; i--) { hits[i]++; s += i; }
    VERIFY();

    /* Steps of 3 counting down; a loop too short for the team. */
    RESET();
#pragma omp parallel for num_threads(4) schedule(dynamic) reduction(+ : s)
    for (int i = N - 1; i >= 0; i -= 3) { hits[i]++; s += i; }
    for (int i = 0; i < N; i++) CHECK(hits[i] == ((N - 1 - i) % 3 == 0));
    RESET();
#pragma omp parallel for num_threads(4) reduction(+ : s)
    for (int i = 0; i < 2; i++) { hits[i]++; s += i; }
    CHECK(hits[0] == 1 && hits[1] == 1 && hits[2] == 0 && s == 1);

    /* Two nowait loops in one region, then a barrier; a reduction over the region. */
    RESET();
    long t = 0;
#pragma omp parallel num_threads(3) reduction(+ : t)
    {
#pragma omp for schedule(dynamic, 5) nowait
        for (int i = 0; i < N / 2; i++) hits[i]++;
#pragma omp for schedule(static) nowait
        for (int i = N / 2; i < N; i++) hits[i]++;
#pragma omp barrier
        t += 1;
    }
    for (int i = 0; i < N; i++) CHECK(hits[i] == 1);
    CHECK(t == 3);

    /* Ordered: the ordered parts run in iteration order. */
    int order[N], pos = 0;
#pragma omp parallel for num_threads(3) schedule(dynamic, 2) ordered
    for (int i = 0; i < N; i++) {
#pragma omp ordered
        order[pos++] = i;
    }
    CHECK(pos == N);
    for (int i = 0; i < N; i++) CHECK(order[i] == i);
    pos = 0;
#pragma omp parallel for num_threads(3) schedule(static) ordered
    for (long long i = 0; i < 100; i++) {
#pragma omp ordered
        order[pos++] = (int)i;
    }
    for (int i = 0; i < 100; i++) CHECK(order[i] == i);
    printf("loops OK\n");
    return 0;
}
