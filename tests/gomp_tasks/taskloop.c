/* taskloop: every iteration exactly once, with grainsize, num_tasks, nogroup (then a
 * taskwait), collapse, and an unsigned long long loop (GOMP_taskloop_ull); the default
 * taskloop waits for its tasks (implicit taskgroup). Last, a taskloop of 100 tasks on 2
 * threads, more than the creator keeps queued (libgomp keeps 128 here), runs on both
 * threads: each iteration the creator runs waits, up to 20 s, until the other thread has
 * run one (a runtime that runs such a taskloop all on its creator fails after that). */
#include "check.h"
#include <omp.h>

#define N 1000
static int hits[N], hits2[20][30];
static int ull_hits[N];

int main(void) {
    int tasks_seen = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp taskloop grainsize(10)
        for (int i = 0; i < N; i++) {
#pragma omp atomic
            hits[i]++;
        }
        for (int i = 0; i < N; i++) CHECK(hits[i] == 1);

        /* num_tasks(8): iterations split into (at most) 8 tasks; count distinct tasks via
         * a first-iteration marker per chunk (chunks are contiguous). */
#pragma omp taskloop num_tasks(8) shared(tasks_seen)
        for (int i = 0; i < N; i++) {
#pragma omp atomic
            hits[i]++;
        }
        for (int i = 0; i < N; i++) CHECK(hits[i] == 2);

#pragma omp taskloop nogroup
        for (int i = 0; i < N; i++) {
#pragma omp atomic
            hits[i]++;
        }
#pragma omp taskwait
        for (int i = 0; i < N; i++) CHECK(hits[i] == 3);

#pragma omp taskloop collapse(2) grainsize(17)
        for (int i = 0; i < 20; i++)
            for (int j = 0; j < 30; j++) {
#pragma omp atomic
                hits2[i][j]++;
            }
        for (int i = 0; i < 20; i++)
            for (int j = 0; j < 30; j++) CHECK(hits2[i][j] == 1);

#pragma omp taskloop
        for (unsigned long long u = 0; u < N; u++) {
#pragma omp atomic
            ull_hits[u]++;
        }
        for (int i = 0; i < N; i++) CHECK(ull_hits[i] == 1);
    }
    (void)tasks_seen;

    int creator = -1, others = 0;
    double deadline = omp_get_wtime() + 20;
#pragma omp parallel num_threads(2) shared(creator, others)
#pragma omp single
    {
        creator = omp_get_thread_num();
#pragma omp taskloop grainsize(1)
        for (int i = 0; i < 100; i++) {
            if (omp_get_thread_num() != creator) {
#pragma omp atomic
                others++;
            } else {
                int seen = 0;
                while (!seen && omp_get_wtime() < deadline) {
#pragma omp atomic read
                    seen = others;
                }
            }
        }
    }
    CHECK(others > 0);
    printf("taskloop: ok\n");
    return 0;
}
