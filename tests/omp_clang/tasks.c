/* Explicit tasks from clang: firstprivate data and shared variables, recursive tasks with
 * taskwait, taskgroup, depend clauses (a chain, readers after a writer, taskwait depend),
 * if(0), final, priority, affinity (a hint: __kmpc_omp_reg_task_with_affinity); an if(0)
 * task does not own its creator's nestable lock. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

static long fib(int n) {
    if (n < 2) return n;
    long a, b;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

int main(void) {
    served_by_weft();
    long f = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    f = fib(20);
    CHECK(f == 6765);

    /* Firstprivate copies are taken at creation; 200 tasks, each adds its own value. */
    int done[200] = {0};
    long sum = 0;
#pragma omp parallel num_threads(4)
    {
#pragma omp single
        for (int i = 0; i < 200; i++) {
            double big[8] = {i, i, i, i, i, i, i, i}; /* privates beyond a few words */
#pragma omp task firstprivate(i, big) shared(done, sum)
            {
                done[i] += (int)big[7] == i;
#pragma omp atomic
                sum += i;
            }
        }
    }
    for (int i = 0; i < 200; i++) CHECK(done[i] == 1);
    CHECK(sum == 199 * 200 / 2);

    /* Taskgroup: all its tasks (and their children) are complete at its end. */
    int cnt = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    {
#pragma omp taskgroup
        {
            for (int i = 0; i < 10; i++) {
#pragma omp task shared(cnt)
                {
#pragma omp task shared(cnt)
                    {
#pragma omp atomic
                        cnt++;
                    }
#pragma omp atomic
                    cnt++;
                }
            }
        }
        CHECK(cnt == 20);
    }

    /* Depend: a chain of writers runs in order; readers see the last write. */
    int x = 0, order[64], pos = 0, seen[8] = {0};
#pragma omp parallel num_threads(3)
#pragma omp single
    {
        for (int i = 0; i < 32; i++) {
#pragma omp task depend(inout : x) shared(x, order, pos) firstprivate(i)
            {
                CHECK(x == i);
                x++;
                order[pos++] = i;
            }
        }
        for (int r = 0; r < 8; r++) {
#pragma omp task depend(in : x) shared(x, seen) firstprivate(r)
            seen[r] = x;
        }
#pragma omp task depend(out : x) shared(x)
        x = 100;
#pragma omp taskwait depend(in : x)
        CHECK(x == 100);
#pragma omp taskwait
    }
    CHECK(x == 100 && pos == 32);
    for (int i = 0; i < 32; i++) CHECK(order[i] == i);
    for (int r = 0; r < 8; r++) CHECK(seen[r] == 32);

    /* if(0) (after its dependencies), final, priority. */
    int y = 0, z = 0, fin = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task depend(out : y) shared(y)
        y = 1;
#pragma omp task if (0) depend(in : y) shared(y, z)
        z = y + 1;
        CHECK(z == 2);
#pragma omp task final(1) shared(fin)
        fin = omp_in_final();
#pragma omp task priority(3) shared(z)
        z += 10;
#pragma omp taskwait
    }
    CHECK(z == 12 && fin == 1);
    /* A nestable lock belongs to a task: an if(0) task is another one. */
    omp_nest_lock_t nl;
    omp_init_nest_lock(&nl);
    int tested = -1;
#pragma omp parallel num_threads(1)
    {
        CHECK(omp_test_nest_lock(&nl) == 1);
#pragma omp task if (0) shared(nl, tested)
        tested = omp_test_nest_lock(&nl);
        CHECK(omp_test_nest_lock(&nl) == 2);
        omp_unset_nest_lock(&nl);
        omp_unset_nest_lock(&nl);
    }
    CHECK(tested == 0);
    omp_destroy_nest_lock(&nl);

    /* affinity: the task still runs, once. */
    int near[16] = {0};
#pragma omp parallel num_threads(2)
#pragma omp single
    for (int i = 0; i < 16; i++) {
#pragma omp task affinity(near[i]) firstprivate(i) shared(near)
        near[i]++;
    }
    for (int i = 0; i < 16; i++) CHECK(near[i] == 1);
    printf("tasks OK\n");
    return 0;
}
