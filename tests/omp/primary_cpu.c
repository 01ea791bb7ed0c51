/* A team's primary thread does not share its CPU with a member of its team. Weft's CPU
 * workers are bound one per CPU (WEFT_NCPU=2 here: CPUs 0 and 1), and the worker bound to
 * the CPU the primary runs on joins its team only when no other is free; before, a team of
 * two always took worker 0, which then shared CPU 0 with a primary running there until the
 * OS moved one of them (a region forked that way took 1.5 ms instead of 1.06 on 2 cores,
 * 4-8 ms instead of 2.7-3.1 on 16). The primary puts itself on each CPU in turn (binds,
 * then unbinds: it stays there until the OS moves it) and forks a team of two; the member
 * must not be bound to the CPU the primary runs on. A primary that the OS moved in between
 * is not counted. */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>
#include <sched.h>

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
        CPU_SET(rep % 2, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
        CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
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
        if (member < 0) { /* a member not bound to one CPU (binding unavailable here) */
            unbound++;
            continue;
        }
        if (primary != rep % 2) continue; /* the OS moved the primary meanwhile */
        counted++;
        if (member == primary) shared++;
    }
    printf("primary and member on one CPU in %d of %d forks (%d members unbound)\n", shared, counted, unbound);
    CHECK(shared <= 2);
    printf("primary_cpu OK\n");
    return 0;
}
