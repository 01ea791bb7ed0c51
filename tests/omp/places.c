/* Places and binding: what omp_get_place_num and the partition queries answer under the
 * OMP_PLACES / OMP_PROC_BIND the test sets (EXPECT names the case), and that each thread
 * runs inside its place. The expected answers are libgomp's (its team.c algorithm). */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

/* The calling thread runs only on CPUs of place p. */
static void check_bound(int p) {
    int n = omp_get_place_num_procs(p), ids[64];
    CHECK(n > 0 && n <= 64);
    omp_get_place_proc_ids(p, ids);
    cpu_set_t s;
    CHECK(pthread_getaffinity_np(pthread_self(), sizeof s, &s) == 0);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &s)) continue;
        int in = 0;
        for (int i = 0; i < n; i++) in |= ids[i] == c;
        CHECK(in);
    }
}

static void check_partition(int off, int len) {
    int ids[64];
    CHECK(omp_get_partition_num_places() == len);
    omp_get_partition_place_nums(ids);
    for (int i = 0; i < len; i++) CHECK(ids[i] == off + i);
}

int main(void) {
    const char *e = getenv("EXPECT");
    CHECK(e != NULL);
    omp_set_dynamic(0);
    omp_set_max_active_levels(4);
    if (strcmp(e, "four") == 0) {
        /* OMP_PLACES={0}:4:0 (four places on CPU 0), OMP_PROC_BIND unset: binding is on. */
        CHECK(omp_get_num_places() == 4);
        CHECK(omp_get_proc_bind() == omp_proc_bind_true);
        CHECK(omp_get_place_num() == 0);
        check_bound(0);
        check_partition(0, 4);
        int seen[4] = {0};
#pragma omp parallel num_threads(4)
        {
            int t = omp_get_thread_num();
            /* true = close: one thread per place, in order. */
            CHECK(omp_get_place_num() == t);
            check_partition(0, 4);
            check_bound(t);
#pragma omp atomic
            seen[t]++;
#pragma omp barrier
            if (t == 1) {
#pragma omp parallel num_threads(3) proc_bind(spread)
                {
                    /* spread from place 1 of 4, T = 3: subpartitions {0,1},{2},{3}. */
                    int u = omp_get_thread_num();
                    int place[3] = {1, 2, 3}, off[3] = {0, 2, 3}, len[3] = {2, 1, 1};
                    CHECK(omp_get_proc_bind() == omp_proc_bind_spread);
                    CHECK(omp_get_place_num() == place[u]);
                    check_partition(off[u], len[u]);
                    check_bound(place[u]);
                }
            }
        }
        for (int i = 0; i < 4; i++) CHECK(seen[i] == 1);
#pragma omp parallel num_threads(3) proc_bind(master)
        {
            CHECK(omp_get_place_num() == 0);
            check_partition(0, 4);
            check_bound(0);
        }
#pragma omp parallel num_threads(6) proc_bind(close)
        {
            /* T = 6 > P = 4 with T mod P != 0: round robin over the places (libgomp). */
            int t = omp_get_thread_num(), place[6] = {0, 1, 2, 3, 0, 1};
            CHECK(omp_get_place_num() == place[t]);
            check_bound(place[t]);
        }
    } else if (strcmp(e, "list") == 0) {
        /* OMP_PLACES="{0},{0}:2:0,!{0},{0}" OMP_PROC_BIND=spread,close: places {0},{0},{0}
         * after one exclusion; the list applies per level. */
        CHECK(omp_get_num_places() == 3);
        CHECK(omp_get_place_num_procs(1) == 1);
        CHECK(omp_get_place_num_procs(3) == 0);
        CHECK(omp_get_proc_bind() == omp_proc_bind_spread);
#pragma omp parallel num_threads(3)
        {
            int t = omp_get_thread_num();
            CHECK(omp_get_proc_bind() == omp_proc_bind_close);
            CHECK(omp_get_place_num() == t);
            check_partition(t, 1);
#pragma omp parallel num_threads(2)
            {
                /* close inside a one-place partition: both threads on the primary's place. */
                CHECK(omp_get_place_num() == t);
                check_partition(t, 1);
            }
        }
    } else if (strcmp(e, "false") == 0) {
        /* OMP_PROC_BIND=false drops the places, and the proc_bind clause is ignored. */
        CHECK(omp_get_num_places() == 0);
        CHECK(omp_get_place_num() == -1);
        CHECK(omp_get_partition_num_places() == 0);
#pragma omp parallel num_threads(2) proc_bind(spread)
        {
            CHECK(omp_get_proc_bind() == omp_proc_bind_false);
            CHECK(omp_get_place_num() == -1);
        }
    } else if (strcmp(e, "threads") == 0) {
        /* OMP_PROC_BIND=close without OMP_PLACES: one place per hardware thread. */
        int n = omp_get_num_places();
        CHECK(n >= 1);
        for (int i = 0; i < n; i++) CHECK(omp_get_place_num_procs(i) == 1);
#pragma omp parallel num_threads(2)
        {
            int p = omp_get_place_num();
            CHECK(p == (n >= 2 ? omp_get_thread_num() : 0));
            check_bound(p);
        }
    } else if (strcmp(e, "eight") == 0) {
        /* Under tests/omp/fake_cpus.c (8 CPUs), OMP_PLACES="{0}:8" OMP_PROC_BIND=spread,close:
         * libgomp's affinity-1.c cases. */
        CHECK(omp_get_num_places() == 8);
        check_bound(0);
#pragma omp parallel num_threads(4)
        {
            /* spread, T = 4, P = 8: places 0,2,4,6 with partitions of two places. */
            int t = omp_get_thread_num();
            CHECK(omp_get_place_num() == 2 * t);
            check_partition(2 * t, 2);
            check_bound(2 * t);
#pragma omp barrier
            if (t == 3) {
#pragma omp parallel num_threads(6)
                {
                    /* close inside {6,7}, T = 6: three threads per place. */
                    int u = omp_get_thread_num();
                    CHECK(omp_get_place_num() == 6 + u / 3);
                    check_bound(6 + u / 3);
                }
#pragma omp parallel num_threads(5) proc_bind(spread)
                {
                    /* spread inside {6,7}, T = 5 > P = 2: threads {0,1,4} on 6, {2,3} on 7,
                     * each in a one-place partition. */
                    int u = omp_get_thread_num(), p = u == 4 ? 6 : 6 + u / 2;
                    CHECK(omp_get_place_num() == p);
                    check_partition(p, 1);
                    check_bound(p);
                }
            }
        }
#pragma omp parallel num_threads(5) proc_bind(spread)
        {
            /* T = 5, P = 8: partitions of 2, 2, 2, 1, 1 places. */
            int t = omp_get_thread_num(), p = t < 3 ? 2 * t : 3 + t;
            CHECK(omp_get_place_num() == p);
            check_partition(p, t < 3 ? 2 : 1);
            check_bound(p);
        }
        /* Threads that served a bound region are bound again for the next one. */
#pragma omp parallel num_threads(3) proc_bind(master)
        check_bound(0);
    } else {
        CHECK(!"unknown EXPECT");
    }
    printf("places OK\n");
    return 0;
}
