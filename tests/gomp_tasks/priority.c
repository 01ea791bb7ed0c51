/* Priorities (OMP_MAX_TASK_PRIORITY=7, as the harness sets). On one thread, tasks ready
 * when created and run in a taskwait run highest priority first: 40 tasks, depend(in) on
 * one address (all ready at once), priorities (5i) mod 8. A runtime may run tasks as it
 * creates them (LLVM's libomp does on one thread); the order is checked when none ran
 * before the taskwait, as in libgomp's own priority.c, and Weft must defer them (their
 * depend clauses keep them off its run-at-once path). Weft keeps creation order within a
 * priority above 0 (one team-wide queue per priority), and runs priority-0 tasks as tasks
 * without a priority, newest first on their creator; libgomp runs a taskwait's children
 * newest first, so that part is checked on Weft only (it exports weft_data_acquire). Then two threads create 4000 tasks with
 * priorities 0-7, some with depend clauses, and every one runs exactly once. */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>
#include <omp.h>

#define N 40
#define M 2000
static int gate, cells[M]; /* gate: only its address matters */
static int ran[2 * M];

int main(void) {
    int order[N], n = 0, early = 0;
    CHECK(omp_get_max_task_priority() == 7);
#pragma omp parallel num_threads(1)
#pragma omp single
    {
        for (int i = 0; i < N; i++) {
#pragma omp task depend(in: gate) priority((5 * i) % 8) firstprivate(i) shared(order, n)
            order[n++] = i;
        }
        early = n;
#pragma omp taskwait
    }
    CHECK(n == N);
    int weft = dlsym(RTLD_DEFAULT, "weft_data_acquire") != NULL;
    CHECK(early == 0 || !weft);
    for (int k = 1; k < N && early == 0; k++) {
        int a = order[k - 1], b = order[k];
        CHECK((5 * a) % 8 >= (5 * b) % 8);
        if (weft && (5 * a) % 8 == (5 * b) % 8) CHECK((5 * a) % 8 == 0 ? a > b : a < b);
    }

#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        for (int i = 0; i < M; i++) {
            int k = me * M + i;
            if (i % 3 == 0) {
#pragma omp task priority(i % 8) depend(inout: cells[i % 64]) firstprivate(k)
                {
#pragma omp atomic
                    ran[k]++;
                }
            } else {
#pragma omp task priority(i % 8) firstprivate(k)
                {
#pragma omp atomic
                    ran[k]++;
                }
            }
        }
    }
    for (int k = 0; k < 2 * M; k++) CHECK(ran[k] == 1);
    printf("priority: ok\n");
    return 0;
}
