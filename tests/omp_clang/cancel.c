/* Cancellation from clang (__kmpc_cancel, __kmpc_cancellationpoint, __kmpc_cancel_barrier);
 * run with OMP_CANCELLATION=true. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int main(void) {
    served_by_weft();
    CHECK(omp_get_cancellation());

    /* A cancelled region: the barrier is a cancellation point, nobody passes it into the
     * code after. */
    int after = 0;
#pragma omp parallel num_threads(4)
    {
        if (omp_get_thread_num() == 0) {
#pragma omp cancel parallel
        }
#pragma omp barrier
#pragma omp atomic
        after++;
    }
    CHECK(after == 0);

    /* A cancelled loop ends at once for the cancelling thread; the region goes on. */
    int ran = 0, region_after = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp for schedule(dynamic)
        for (int i = 0; i < 1000; i++) {
            if (i == 0) {
#pragma omp cancel for
            }
#pragma omp cancellation point for
#pragma omp atomic
            ran++;
        }
#pragma omp atomic
        region_after++;
    }
    CHECK(ran < 1000);
    CHECK(region_after == 2);

    /* A cancelled taskgroup: tasks not started yet are discarded. */
    int tasks_ran = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskgroup
    {
#pragma omp task
        {
#pragma omp cancel taskgroup
        }
#pragma omp taskwait
        for (int i = 0; i < 100; i++) {
#pragma omp task shared(tasks_ran)
            {
#pragma omp atomic
                tasks_ran++;
            }
        }
    }
    CHECK(tasks_ran == 0);
    printf("cancel OK\n");
    return 0;
}
