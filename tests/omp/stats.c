/* What WEFT_STATS=1 counts (tests/omp.rs, stats_count_team_shares_and_tasks_where_they_ran):
 * parallel regions and explicit tasks, each share and task body noting whether it ran on one
 * of Weft's CPU workers (an OS thread named weft-cpuN) or on another thread (the initial
 * thread, an OpenMP thread of Weft's own). Prints the four counts on stderr, next to the
 * statistics' per-worker and "other threads" lines, for the test to compare. */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>
#include <string.h>
#include <sys/prctl.h>

static int on_worker(void) {
    static __thread int known = -1;
    if (known < 0) {
        char name[16] = {0};
        CHECK(prctl(PR_GET_NAME, name) == 0);
        known = strncmp(name, "weft-cpu", 8) == 0;
    }
    return known;
}

static long jobs[2], tasks[2]; /* [0]: other threads, [1]: workers */

static void task_ran(void) {
#pragma omp atomic
    tasks[on_worker()]++;
}

int main(void) {
    for (int r = 0; r < 5; r++) {
#pragma omp parallel
        {
#pragma omp atomic
            jobs[on_worker()]++;
        }
    }
    /* A team of one is a region too: its share is the initial thread's. */
#pragma omp parallel num_threads(1)
    {
#pragma omp atomic
        jobs[on_worker()]++;
    }
    /* Every thread creates tasks: deferred ones (run by any thread of the team), ones
     * ordered by core (depend clauses: external tasks), and an undeferred one, which its
     * creator runs (so that workers run some tasks whatever the others steal). */
    int ntasks = 0;
#pragma omp parallel reduction(+ : ntasks)
    {
#pragma omp atomic
        jobs[on_worker()]++;
        long x = 0, y = 0;
        for (int i = 0; i < 5; i++) {
#pragma omp task
            task_ran();
#pragma omp task depend(inout : x) shared(x)
            {
                x++;
                task_ran();
            }
#pragma omp task depend(in : x) depend(out : y) shared(x, y)
            {
                y = x;
                task_ran();
            }
            ntasks += 3;
        }
#pragma omp task if (0)
        task_ran();
        ntasks++;
#pragma omp taskwait
        CHECK(x == 5 && y == 5);
    }
    CHECK(tasks[0] + tasks[1] == ntasks);
    fprintf(stderr, "ran: worker jobs %ld other jobs %ld worker tasks %ld other tasks %ld\n", jobs[1], jobs[0], tasks[1], tasks[0]);
    printf("stats OK\n");
    return 0;
}
