/* A team with more threads than the process has CPUs runs unbound, as the program's own
 * threads and libgomp's do (OMP_PROC_BIND unset). Weft's CPU workers are bound one per CPU
 * (WEFT_NCPU=2 here); bound in such a team, a worker whose CPU another program's busy
 * thread shares waits for that CPU a time slice at a time, and its whole team with it
 * (libgomp's for-14.c at 3 threads on 2 cores beside a busy loop: 5.4 s, against 0.04 s).
 * Teams of n+1 and n threads alternate: every member of the larger teams must have the
 * process's whole mask (the workers are bound again in between, in the smaller teams,
 * which this program does not check: whether a worker is bound there is Weft's choice). */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>
#include <sched.h>

int main(void) {
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    int n = CPU_COUNT(&all);
    if (n < 2) {
        printf("oversubscribed OK (skipped: one CPU)\n");
        return 0;
    }
    int bound = 0, members = 0;
    for (int rep = 0; rep < 6; rep++) {
        int size = rep % 2 == 0 ? n + 1 : n;
#pragma omp parallel num_threads(size) reduction(+ : bound, members)
        {
            CHECK(omp_get_num_threads() == size);
            cpu_set_t mine;
            CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
            if (size > n) {
                members++;
                bound += !CPU_EQUAL(&mine, &all);
            }
        }
    }
    if (bound) {
        printf("%d of %d threads of teams larger than the %d CPUs ran bound\n", bound, members, n);
        return 1;
    }
    printf("oversubscribed OK\n");
    return 0;
}
