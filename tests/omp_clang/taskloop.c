/* taskloop from clang (__kmpc_taskloop): every iteration once, grainsize and num_tasks
 * divisions as libomp makes them, firstprivate and lastprivate, negative steps, nogroup,
 * if(0). */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int main(void) {
    served_by_weft();
    int hits[1000] = {0};
#pragma omp parallel num_threads(3)
#pragma omp single
#pragma omp taskloop
    for (int i = 0; i < 1000; i++) hits[i]++;
    for (int i = 0; i < 1000; i++) CHECK(hits[i] == 1);

    /* grainsize(3) over 10 iterations: 3 tasks of 4, 3, 3 iterations; num_tasks(4) over
     * 10: 4 tasks of 3, 3, 2, 2. A firstprivate variable is per task: it tags each
     * iteration with its task's first iteration. */
    int g[10] = {0}, nt[10] = {0};
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        int tag = -1;
#pragma omp taskloop grainsize(3) firstprivate(tag) shared(g)
        for (int i = 0; i < 10; i++) {
            if (tag < 0) tag = i;
            g[i] = tag;
        }
        tag = -1;
#pragma omp taskloop num_tasks(4) firstprivate(tag) shared(nt)
        for (int i = 0; i < 10; i++) {
            if (tag < 0) tag = i;
            nt[i] = tag;
        }
    }
    const int g_want[10] = {0, 0, 0, 0, 4, 4, 4, 7, 7, 7}, nt_want[10] = {0, 0, 0, 3, 3, 3, 6, 6, 8, 8};
    for (int i = 0; i < 10; i++) CHECK(g[i] == g_want[i] && nt[i] == nt_want[i]);

    /* firstprivate copies, lastprivate from the last iteration, a negative step. */
    int base = 100, last = -1;
    long sum = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskloop firstprivate(base) lastprivate(last) num_tasks(5) shared(sum)
    for (int i = 50; i > 0; i -= 2) {
#pragma omp atomic
        sum += base + i;
        last = i;
    }
    CHECK(last == 2);
    CHECK(sum == 25 * 100 + 25 * 26);

    /* nogroup: the taskwait after it waits for the tasks. */
    int ng = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp taskloop nogroup shared(ng)
        for (int i = 0; i < 40; i++) {
#pragma omp atomic
            ng++;
        }
#pragma omp taskwait
        CHECK(ng == 40);
    }

    /* if(0): the tasks run at once, in the creating thread. */
    int me = -1, others = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        me = omp_get_thread_num();
#pragma omp taskloop if (0) shared(others)
        for (int i = 0; i < 20; i++)
            if (omp_get_thread_num() != me) {
#pragma omp atomic
                others++;
            }
    }
    CHECK(others == 0);
    printf("taskloop OK\n");
    return 0;
}
