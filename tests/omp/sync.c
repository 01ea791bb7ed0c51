/* Synchronisation: barrier, critical (anonymous and named), atomic (also through
 * GOMP_atomic_start for types without a native atomic), locks, nestable locks, single,
 * copyprivate, masked. */
#include <omp.h>
#include "check.h"

int main(void) {
    int phase[8] = {0};
#pragma omp parallel num_threads(4)
    {
        int t = omp_get_thread_num();
        for (int r = 0; r < 1000; r++) {
            phase[t] = r;
#pragma omp barrier
            for (int u = 0; u < 4; u++) CHECK(phase[u] == r);
#pragma omp barrier
        }
    }
    long c1 = 0, c2 = 0;
    long double ld = 0;
    omp_lock_t l;
    omp_init_lock(&l);
    long c3 = 0;
#pragma omp parallel num_threads(3)
    for (int i = 0; i < 10000; i++) {
#pragma omp critical
        c1++;
#pragma omp critical(named)
        c2 += 2;
#pragma omp atomic
        ld += 1.0L;
        omp_set_lock(&l);
        c3++;
        omp_unset_lock(&l);
    }
    CHECK(c1 == 30000 && c2 == 60000 && ld == 30000.0L && c3 == 30000);
    CHECK(omp_test_lock(&l));
    CHECK(!omp_test_lock(&l));
    omp_unset_lock(&l);
    omp_destroy_lock(&l);
    omp_nest_lock_t nl;
    omp_init_nest_lock(&nl);
    CHECK(omp_test_nest_lock(&nl) == 1 && omp_test_nest_lock(&nl) == 2);
    omp_unset_nest_lock(&nl);
    omp_unset_nest_lock(&nl);
    long c4 = 0;
#pragma omp parallel num_threads(3)
    for (int i = 0; i < 1000; i++) {
        omp_set_nest_lock(&nl);
        omp_set_nest_lock(&nl);
        c4++;
        omp_unset_nest_lock(&nl);
        omp_unset_nest_lock(&nl);
    }
    CHECK(c4 == 3000);
    omp_destroy_nest_lock(&nl);
    int singles = 0, masked = 0;
#pragma omp parallel num_threads(3)
    for (int i = 0; i < 500; i++) {
#pragma omp single
        singles++;
#pragma omp single nowait
        {
#pragma omp atomic
            singles++;
        }
#pragma omp masked
        masked++;
#pragma omp barrier
    }
    CHECK(singles == 1000 && masked == 500);
    int bad = 0;
#pragma omp parallel num_threads(3)
    for (int i = 0; i < 200; i++) {
        int v;
#pragma omp single copyprivate(v)
        v = i * 7;
        if (v != i * 7) {
#pragma omp atomic
            bad++;
        }
    }
    CHECK(bad == 0);
    printf("sync OK\n");
    return 0;
}
