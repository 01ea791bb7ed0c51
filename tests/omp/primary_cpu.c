/* A team's primary thread does not share its CPU with a member of its team. Weft's CPU
 * workers are bound one per CPU (WEFT_NCPU=2 here: CPUs 0 and 1), and the worker bound to
 * the CPU the primary ran on at its first fork joins its teams only when no other is free
 * (decided once, so that thread numbers keep their threads from region to region, as
 * threadprivate data needs). Before, a team of two always took worker 0, which then shared
 * CPU 0 with a primary running there until the OS moved one of them (a region forked that
 * way took 1.5 ms instead of 1.06 on 2 cores, 4-8 ms instead of 2.7-3.1 on 16). The
 * primary puts itself on CPU 0 before each fork (binds, then unbinds: it stays there
 * until the OS moves it; bound throughout the first) and forks a team of two; the member
 * must not be bound to the CPU the primary runs on. A primary that the OS moved in between
 * is not counted. Then: threadprivate data persists from region to region while the
 * primary moves. */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>
#include <sched.h>

static int tp = -1;
#pragma omp threadprivate(tp)

int main(void) {
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    if (!CPU_ISSET(0, &all) || !CPU_ISSET(1, &all)) {
        printf("primary_cpu OK (skipped: CPUs 0 and 1 are not both available)\n");
        return 0;
    }
    int shared = 0, counted = 0, unbound = 0;
    for (int rep = 0; rep < 20; rep++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
        /* The first fork (which starts the runtime) stays bound: the OS cannot move the
         * primary while the runtime starts its workers, before the team is formed. */
        if (rep > 0) CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
        int primary = -1, member = -1;
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                primary = sched_getcpu();
            } else {
                cpu_set_t mine;
                CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
                if (CPU_COUNT(&mine) == 1)
                    for (int c = 0; c < CPU_SETSIZE; c++)
                        if (CPU_ISSET(c, &mine)) member = c;
            }
        }
        if (rep == 0) CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
        if (member < 0) { /* a member not bound to one CPU (binding unavailable here) */
            unbound++;
            continue;
        }
        if (primary != 0) continue; /* the OS moved the primary meanwhile */
        counted++;
        if (member == primary) shared++;
    }
    printf("primary and member on one CPU in %d of %d forks (%d members unbound)\n", shared, counted, unbound);
    CHECK(shared <= 2);

    /* Thread numbers keep their threads from region to region (threadprivate data persists
     * across regions of one size, OpenMP 5.1 §2.21.2), with more threads than workers (OS
     * threads join after the workers) and the primary moved between CPUs in between. */
    omp_set_dynamic(0);
    for (int rep = 0; rep < 6; rep++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(rep % 2, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
        CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
        int lost = 0;
#pragma omp parallel num_threads(6) reduction(+ : lost)
        {
            if (rep > 0 && tp != omp_get_thread_num()) lost++;
            tp = omp_get_thread_num();
        }
        CHECK(lost == 0);
    }
    printf("primary_cpu OK\n");
    return 0;
}
