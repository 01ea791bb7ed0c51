/* Detach events (__kmpc_task_allow_completion_event, omp_fulfill_event), untied tasks
 * (their routine re-submits itself with __kmpc_omp_task at scheduling points), and an
 * if(0) task's own ICVs. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

static int untied_sum(int n) {
    int s = 0;
    for (int i = 0; i < n; i++) {
#pragma omp task shared(s)
        {
#pragma omp atomic
            s += 1;
        }
#pragma omp taskyield
    }
#pragma omp taskwait
    return s;
}

int main(void) {
    served_by_weft();
    /* A detached task completes when its event is fulfilled: by a later task, and the
     * taskwait waits for it. */
    int x = 0, y = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
        omp_event_handle_t ev;
#pragma omp task detach(ev) shared(x)
        x = 1;
#pragma omp task firstprivate(ev) shared(y)
        {
            y = 1;
            omp_fulfill_event(ev);
        }
#pragma omp taskwait
        CHECK(x == 1 && y == 1);
    }
    /* Every thread's events, fulfilled by the tasks that follow (as task-detach-5.c). */
    int a = 0, b = 0;
#pragma omp parallel num_threads(4)
    {
        omp_event_handle_t e1, e2;
#pragma omp task detach(e1) untied
        {
#pragma omp atomic
            a++;
        }
#pragma omp task detach(e2) firstprivate(e1) untied
        {
            omp_fulfill_event(e1);
        }
#pragma omp task firstprivate(e2)
        {
#pragma omp atomic
            b++;
            omp_fulfill_event(e2);
        }
    }
    CHECK(a == 4 && b == 4);

    /* Untied tasks with scheduling points inside. */
    int u = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task untied shared(u)
        u = untied_sum(50);
    }
    CHECK(u == 50);

    /* An if(0) task's omp_set_num_threads stays in it. */
    omp_set_num_threads(4);
#pragma omp task if (0)
    {
        omp_set_num_threads(3);
        CHECK(omp_get_max_threads() == 3);
    }
    CHECK(omp_get_max_threads() == 4);
    /* Nested if(0) tasks: each gives its creator's ICVs back when it completes. */
#pragma omp task if (0)
    {
        omp_set_num_threads(5);
#pragma omp task if (0)
        {
            CHECK(omp_get_max_threads() == 5);
            omp_set_num_threads(6);
#pragma omp task if (0)
            omp_set_num_threads(7);
            CHECK(omp_get_max_threads() == 6);
        }
        CHECK(omp_get_max_threads() == 5);
    }
    CHECK(omp_get_max_threads() == 4);
    printf("detach OK\n");
    return 0;
}
