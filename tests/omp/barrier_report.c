/* A conforming program whose thread 0 waits at a barrier for about 2 s while thread 1 works:
 * with WEFT_OMP_BARRIER_REPORT=1 the wait past 1 s gets one report of where the team's
 * threads are, and the program's behaviour and result are unchanged. */
#include <omp.h>
#include <unistd.h>
#include "check.h"

int main(void) {
    int sum = 0;
#pragma omp parallel num_threads(2) reduction(+ : sum)
    {
        if (omp_get_thread_num() == 1) usleep(2500 * 1000);
#pragma omp barrier
        sum += 1;
    }
    CHECK(sum == 2);
    printf("barrier_report OK\n");
    return 0;
}
