/* What WEFT_TRACE records of an OpenMP program (tests/omp.rs and, built by clang through
 * tests/omp_clang/traced.c, tests/omp_clang.rs; checked by tests/common/omp_trace.rs): a
 * region of two threads with a dynamic loop, then a single construct whose thread creates
 * explicit tasks (PAIRS with depend clauses, PAIRS without), an if(0) task and a taskloop
 * of 4 tasks. Prints on stderr how many task bodies ran and how many had depend clauses,
 * for the test to find as many "omp task" slices. */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>

#define N 2000
#define PAIRS 24
#define LOOP_TASKS 4

static double a[N];
static int ran, ran_dep, loop_iters;

int main(void) {
    int chain = 0;
#pragma omp parallel num_threads(2)
    {
        CHECK(omp_get_num_threads() == 2);
#pragma omp for schedule(dynamic, 16)
        for (int i = 0; i < N; i++) a[i] = i * 0.5;
#pragma omp single
        {
            for (int k = 0; k < PAIRS; k++) {
#pragma omp task depend(inout : chain) shared(chain)
                {
                    chain++;
#pragma omp atomic
                    ran_dep++;
                }
#pragma omp task
                {
#pragma omp atomic
                    ran++;
                }
            }
            /* Undeferred: run by its creator (clang: between __kmpc_omp_task_begin_if0
             * and __kmpc_omp_task_complete_if0, the compiler calling the body itself). */
#pragma omp task if (0)
            {
#pragma omp atomic
                ran++;
            }
#pragma omp taskloop num_tasks(LOOP_TASKS)
            for (int i = 0; i < 400; i++) {
#pragma omp atomic
                loop_iters++;
            }
        }
    }
    CHECK(chain == PAIRS && ran == PAIRS + 1 && ran_dep == PAIRS && loop_iters == 400);
    for (int i = 0; i < N; i++) CHECK(a[i] == i * 0.5);
    fprintf(stderr, "traced: tasks %d depend %d\n", ran + ran_dep + LOOP_TASKS, ran_dep);
    printf("traced OK\n");
    return 0;
}
