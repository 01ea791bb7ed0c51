/* Task reductions from clang: taskgroup task_reduction with in_reduction tasks
 * (__kmpc_taskred_init, __kmpc_task_reduction_get_th_data), nested taskgroups, a taskloop
 * reduction, and the task modifier on parallel and for (__kmpc_taskred_modifier_init). */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int main(void) {
    served_by_weft();
    long s = 0;
    double p = 1;
#pragma omp parallel num_threads(3)
#pragma omp single
#pragma omp taskgroup task_reduction(+ : s) task_reduction(* : p)
    {
        for (int i = 1; i <= 100; i++) {
#pragma omp task in_reduction(+ : s) in_reduction(* : p)
            {
                s += i;
                if (i <= 10) p *= 2;
            }
        }
    }
    CHECK(s == 5050);
    CHECK(p == 1024);

    /* An inner taskgroup's tasks reduce into the outer one's item too. */
    long o = 0, in = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskgroup task_reduction(+ : o)
    {
#pragma omp task in_reduction(+ : o)
        o += 1;
#pragma omp taskgroup task_reduction(+ : in)
        {
            for (int i = 0; i < 10; i++) {
#pragma omp task in_reduction(+ : o) in_reduction(+ : in)
                {
                    o += 2;
                    in += 1;
                }
            }
        }
        CHECK(in == 10);
    }
    CHECK(o == 21);

    long t = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp taskloop reduction(+ : t) grainsize(7)
    for (int i = 0; i < 100; i++) t += i;
    CHECK(t == 4950);

    /* reduction(task, ...): the implicit tasks' and the explicit tasks' contributions. */
    long m = 0;
#pragma omp parallel num_threads(3) reduction(task, + : m)
    {
        m += 1;
#pragma omp task in_reduction(+ : m)
        m += 10;
    }
    CHECK(m == 33);
    long w = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp for reduction(task, + : w)
        for (int i = 0; i < 10; i++) {
#pragma omp task in_reduction(+ : w)
            w += i;
        }
    }
    CHECK(w == 45);
    printf("taskred OK\n");
    return 0;
}
