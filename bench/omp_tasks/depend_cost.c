/* Instruction counts of creating tasks with depend clauses (callgrind; see bench/RESULTS.md):
 * R regions, in each one thread creates N tasks over 8 addresses, in one of four shapes:
 *   0 (default)  inout on one of 4 addresses and in on one of 4 others, which are only read
 *                (4 chains; the read-only addresses collect every task as a reader)
 *   1            inout on one of 4 addresses (4 chains, one depend item)
 *   2            inout on one of 4 addresses and inout on one of 4 others (two items, both
 *                written: every task waits for the last writer of each)
 *   3            in on one of 8 read-only addresses and out on one of 8 others
 * Under callgrind, GOMP_task's (or __kmpc_omp_task_alloc plus __kmpc_omp_task_with_deps')
 * inclusive count over the calls is the creating thread's cost per task; N under the depend
 * throttle keeps them all deferred.
 * Usage: depend_cost [R=200] [N=100] [SHAPE=0] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int R = argc > 1 ? atoi(argv[1]) : 200, N = argc > 2 ? atoi(argv[2]) : 100;
    int shape = argc > 3 ? atoi(argv[3]) : 0;
    if (shape < 0 || shape > 3) {
        fprintf(stderr, "depend_cost: SHAPE must be 0, 1, 2 or 3, not %d\n", shape);
        return 2;
    }
    long x[8] = {0}, y[8] = {0};
    for (int r = 0; r < R; r++) {
#pragma omp parallel
#pragma omp single
        for (int i = 0; i < N; i++) {
            switch (shape) {
            case 0:
#pragma omp task depend(inout: x[i % 4]) depend(in: x[4 + i % 4]) shared(x)
                x[i % 4] += x[4 + i % 4] + 1;
                break;
            case 1:
#pragma omp task depend(inout: x[i % 4]) shared(x)
                x[i % 4] += 1;
                break;
            case 2:
#pragma omp task depend(inout: x[i % 4]) depend(inout: x[4 + i % 4]) shared(x)
                x[i % 4] += x[4 + i % 4]++ + 1;
                break;
            case 3:
#pragma omp task depend(in: x[i % 8]) depend(out: y[i % 8]) shared(x, y)
                y[i % 8] = x[i % 8] + i;
                break;
            }
        }
    }
    printf("%ld\n", x[0] + x[1] + x[2] + x[3] + x[4] + y[0]);
    return 0;
}
