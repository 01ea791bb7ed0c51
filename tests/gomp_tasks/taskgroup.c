/* taskgroup waits for its tasks and their descendants (taskwait only for children);
 * cancel taskgroup (OMP_CANCELLATION=true) discards the group's tasks not yet started;
 * task reductions: taskgroup task_reduction + in_reduction tasks, and taskloop reduction. */
#include "check.h"
#include <omp.h>

static int grandchildren;

int main(void) {
    CHECK(omp_get_cancellation()); /* the test runs with OMP_CANCELLATION=true */
    int done = 0;
    long sum = 0, loop_sum = 0;
    int ran = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp taskgroup
        {
            for (int i = 0; i < 8; i++) {
#pragma omp task shared(done)
                {
#pragma omp task
                    {
                        pause_us(1000);
#pragma omp atomic
                        grandchildren++;
                    }
#pragma omp atomic
                    done++;
                }
            }
        }
        CHECK(done == 8 && grandchildren == 8);

        /* cancellation: the first task cancels the group; the tasks created after it ran
         * are discarded before they start (or stop at their cancellation point). */
#pragma omp taskgroup
        {
#pragma omp task shared(ran)
            {
#pragma omp atomic
                ran++;
#pragma omp cancel taskgroup
            }
            /* Wait until it completed, so the group is cancelled (waiting only for `ran`
             * left a window between its increment and the cancel, in which a task created
             * here could start and run: seen once in CI-like runs under load). */
#pragma omp taskwait
            for (int i = 0; i < 1000; i++) {
#pragma omp task shared(ran)
                {
#pragma omp cancellation point taskgroup
                    pause_us(10);
#pragma omp atomic
                    ran++;
                }
            }
        }
        CHECK(ran == 1);

#pragma omp taskgroup task_reduction(+: sum)
        {
            for (int i = 1; i <= 100; i++) {
#pragma omp task in_reduction(+: sum) firstprivate(i)
                sum += i;
            }
        }
        CHECK(sum == 5050);

#pragma omp taskloop reduction(+: loop_sum) grainsize(7)
        for (int i = 1; i <= 1000; i++) loop_sum += i;
        CHECK(loop_sum == 500500);
    }
    printf("taskgroup: ok (%d of 1001 cancellable tasks ran)\n", ran);
    return 0;
}
