/* A 4 MiB local array in every team thread: run without OMP_STACKSIZE, the team threads
 * (Weft's CPU workers, 8 MiB stacks like glibc's default threads) hold it; run with
 * OMP_STACKSIZE=16M, the runtime gives threads of that size (its own threads when the
 * workers' stacks are smaller). */
#include <omp.h>
#include <string.h>
#include "check.h"

static int use(volatile char *p, size_t n) {
    memset((char *)p, omp_get_thread_num() + 1, n);
    return p[0] + p[n - 1];
}

int main(void) {
    int sum = 0;
#pragma omp parallel num_threads(3) reduction(+ : sum)
    {
        volatile char big[4 << 20];
        sum += use(big, sizeof big);
    }
    CHECK(sum == 2 * (1 + 2 + 3));
    printf("stack OK\n");
    return 0;
}
