/* if(0) runs the task undeferred (done when the construct ends); final(1) makes it and its
 * descendants final (omp_in_final, included tasks run at once); mergeable and untied tasks
 * run and see their data; priority is accepted and omp_get_max_task_priority follows
 * OMP_MAX_TASK_PRIORITY (the test runs with OMP_MAX_TASK_PRIORITY=7). */
#include "check.h"
#include <omp.h>

int main(void) {
    CHECK(omp_get_max_task_priority() == 7);
    int a = 0, in_final = 0, child_final = 0, child_done_inline = 0, m = 0, u = 0, prio_sum = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp task if(0) shared(a)
        { pause_us(5000); a = 1; }
        CHECK(a == 1); /* undeferred: finished before the encountering task goes on */

#pragma omp task final(1) shared(in_final, child_final, child_done_inline)
        {
            in_final = omp_in_final();
            int c = 0;
#pragma omp task shared(child_final, c)
            {
                child_final = omp_in_final();
                c = 1;
            }
            child_done_inline = c; /* included task: already done here */
        }
#pragma omp task mergeable shared(m)
        m = 1;
#pragma omp task untied shared(u)
        {
            u = 1;
#pragma omp taskyield
            u = 2;
        }
        for (int p = 0; p < 8; p++) {
#pragma omp task priority(p) firstprivate(p) shared(prio_sum)
            {
#pragma omp atomic
                prio_sum += p;
            }
        }
#pragma omp taskwait
    }
    CHECK(in_final == 1 && child_final == 1 && child_done_inline == 1);
    CHECK(m == 1 && u == 2);
    CHECK(prio_sum == 28);
    CHECK(!omp_in_final());
    printf("clauses: ok\n");
    return 0;
}
