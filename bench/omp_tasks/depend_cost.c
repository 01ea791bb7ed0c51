/* Instruction counts of creating tasks with depend clauses (callgrind; see bench/RESULTS.md,
 * 2026-11-29): R regions, in each one thread creates N tasks, each inout on one of 4
 * addresses and in on one of 4 others (4 chains). Under callgrind, GOMP_task's (or
 * __kmpc_omp_task_alloc plus __kmpc_omp_task_with_deps') inclusive count over the calls is
 * the creating thread's cost per task; N under the depend throttle keeps them all deferred.
 * Usage: depend_cost [R=200] [N=100] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int R = argc > 1 ? atoi(argv[1]) : 200, N = argc > 2 ? atoi(argv[2]) : 100;
    long x[8] = {0};
    for (int r = 0; r < R; r++) {
#pragma omp parallel
#pragma omp single
        for (int i = 0; i < N; i++) {
#pragma omp task depend(inout: x[i % 4]) depend(in: x[4 + i % 4]) shared(x)
            x[i % 4] += x[4 + i % 4] + 1;
        }
    }
    printf("%ld\n", x[0] + x[1] + x[2] + x[3]);
    return 0;
}
