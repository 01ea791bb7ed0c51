/* Task reductions on worksharing constructs and parallel regions (reduction with the
 * `task` modifier): tasks created inside them contribute through in_reduction, to
 * private copies indexed by the executing thread; a user-defined reduction with an
 * initializer checks that every private copy starts initialized. */
#include "check.h"
#include <omp.h>

struct acc { long sum; long init; };
#pragma omp declare reduction(add: struct acc: omp_out.sum += omp_in.sum) initializer(omp_priv = (struct acc){0, 77})

int main(void) {
    long par = 0, loop = 0, sec = 0, scoped = 0;
    struct acc u = { 0, 77 };
    int bad_init = 0;
#pragma omp parallel num_threads(3) reduction(task, +: par)
    {
#pragma omp single
        for (int i = 1; i <= 100; i++) {
#pragma omp task in_reduction(+: par) firstprivate(i)
            par += i;
        }
#pragma omp for reduction(task, +: loop)
        for (int i = 0; i < 60; i++) {
#pragma omp task in_reduction(+: loop) firstprivate(i)
            loop += 2 * i;
        }
#pragma omp sections reduction(task, +: sec)
        {
#pragma omp section
            {
#pragma omp task in_reduction(+: sec)
                sec += 10;
            }
#pragma omp section
            {
#pragma omp task in_reduction(+: sec)
                sec += 32;
            }
        }
#pragma omp scope reduction(task, +: scoped)
        {
#pragma omp task in_reduction(+: scoped)
            scoped += 1;
        }
#pragma omp single
        {
#pragma omp taskgroup task_reduction(add: u)
            for (int i = 0; i < 50; i++) {
#pragma omp task in_reduction(add: u) firstprivate(i) shared(bad_init)
                {
                    if (u.init != 77) {
#pragma omp atomic write
                        bad_init = 1;
                    }
                    u.sum += i;
                }
            }
        }
    }
    CHECK(par == 5050);
    CHECK(loop == 2 * (59 * 60 / 2));
    CHECK(sec == 42);
    CHECK(scoped == 3); /* one task per thread of the team of 3 */
    CHECK(!bad_init && u.sum == 49 * 50 / 2 && u.init == 77);
    printf("ws_reductions: ok\n");
    return 0;
}
