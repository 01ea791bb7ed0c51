/* Cancellation (run with OMP_CANCELLATION=true): cancel parallel and cancel for. */
#include <omp.h>
#include "check.h"

int main(void) {
    CHECK(omp_get_cancellation());
    int after = 0;
#pragma omp parallel num_threads(3)
    {
        if (omp_get_thread_num() == 0) {
#pragma omp cancel parallel
        }
#pragma omp barrier
#pragma omp atomic
        after++;
    }
    CHECK(after < 3);
    int done = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp for schedule(dynamic)
        for (int i = 0; i < 100000; i++) {
            if (i == 10) {
#pragma omp cancel for
            }
#pragma omp cancellation point for
#pragma omp atomic
            done++;
        }
    }
    CHECK(done < 100000);
    printf("cancel OK\n");
    return 0;
}
