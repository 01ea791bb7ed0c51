/* threadprivate without TLS (built with -fnoopenmp-use-tls: __kmpc_threadprivate_cached):
 * each thread's copy starts from the variable's value, persists between regions, and the
 * initial thread's copy is the variable itself; copyin. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

static int counter = 7;
static double vec[4] = {1, 2, 3, 4};
#pragma omp threadprivate(counter, vec)

int main(void) {
    served_by_weft();
    omp_set_dynamic(0);
    int seen[4] = {0};
#pragma omp parallel num_threads(4)
    {
        int t = omp_get_thread_num();
        seen[t] = counter == 7 && vec[3] == 4;
        counter = 100 + t;
        vec[0] = t;
    }
    for (int t = 0; t < 4; t++) CHECK(seen[t]);
    /* The initial thread's copy is the variable. */
    CHECK(counter == 100 && vec[0] == 0);
    int kept[4] = {0};
#pragma omp parallel num_threads(4)
    {
        int t = omp_get_thread_num();
        /* Workers keep their copies between regions of the same size (OpenMP's condition
         * for persistence); whoever is thread t has a value from the region before. */
        kept[t] = counter >= 100 && counter < 104 && vec[0] == counter - 100;
    }
    CHECK(kept[0]);
    counter = 42;
#pragma omp parallel num_threads(3) copyin(counter)
    {
        CHECK(counter == 42);
    }
    printf("threadprivate OK\n");
    return 0;
}
