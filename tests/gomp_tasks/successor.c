/* Where a ready task runs. A task whose last predecessor just finished runs next on the
 * thread that ran that predecessor (when that thread has nothing else queued), before older
 * ready tasks in the team's queue; the tasks it releases after the first join that queue.
 * Tasks ready when created go to their creator's deque, as tasks without depend clauses
 * do: their creator runs the newest first.
 * Thread 0 creates, in this order,
 *   A (inout x), B (in x, inout y), C (in x), E (in y),
 *   Z1, Z2 (inout on addresses of their own: ready at once)
 * and runs them all in its taskwait, while thread 1 waits in the program's own code (no
 * scheduling point: it cannot take any). B and C wait for A, E for B. Weft (omp/src/task.rs,
 * `ready`): Z2, Z1, A, then B (A's first release; C, the second, is queued), then E (B's
 * release) before the older C. Every runtime runs every task once, in an order the
 * dependencies allow; the Weft order is checked only on Weft (it exports weft_data_acquire).
 * Then the first released task stays on the releasing thread's deque also when that deque
 * holds other tasks, if the thread waits for it: thread 0 creates D, A (inout x), F, C
 * (in x), and in its taskwait runs F, A, then C (A's release) before the older D. */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>
#include <omp.h>
#include <sched.h>
#include <string.h>

static int x, y, z1, z2; /* only their addresses matter */

/* Thread 0 creates `make`'s tasks and runs them in its taskwait, thread 1 waiting outside
 * any scheduling point; returns the number of threads. */
static int on_thread_0(void (*make)(void)) {
    int done = 0, nth = 0;
#pragma omp parallel num_threads(2) shared(done, nth)
    {
        if (omp_get_thread_num() == 0) {
            nth = omp_get_num_threads();
            make();
#pragma omp taskwait
#pragma omp atomic write
            done = 1;
        } else {
            int d = 0;
            while (!d) {
#pragma omp atomic read
                d = done;
                sched_yield();
            }
        }
    }
    return nth;
}

static char order[8], order2[8];
static int n, n2;

static void make_released(void) {
#pragma omp task depend(inout: x)
    order[n++] = 'A';
#pragma omp task depend(in: x) depend(inout: y)
    order[n++] = 'B';
#pragma omp task depend(in: x)
    order[n++] = 'C';
#pragma omp task depend(in: y)
    order[n++] = 'E';
#pragma omp task depend(inout: z1)
    order[n++] = '1';
#pragma omp task depend(inout: z2)
    order[n++] = '2';
}

static void make_waited(void) {
#pragma omp task
    order2[n2++] = 'D';
#pragma omp task depend(inout: x)
    order2[n2++] = 'A';
#pragma omp task
    order2[n2++] = 'F';
#pragma omp task depend(in: x)
    order2[n2++] = 'C';
}

int main(void) {
    int weft = dlsym(RTLD_DEFAULT, "weft_data_acquire") != NULL;
    int nth = on_thread_0(make_released);
    printf("order %s (%d threads)\n", order, nth);
    CHECK(n == 6);
    char *a = strchr(order, 'A'), *b = strchr(order, 'B'), *c = strchr(order, 'C'), *e = strchr(order, 'E');
    CHECK(a && b && c && e && a < b && a < c && b < e);
    char s[8];
    memcpy(s, order, sizeof s);
    for (int i = 0; i < 6; i++) /* every task exactly once */
        for (int j = i + 1; j < 6; j++)
            if (s[j] < s[i]) { char t = s[i]; s[i] = s[j]; s[j] = t; }
    CHECK(strcmp(s, "12ABCE") == 0);
    if (nth == 2 && weft) CHECK(strcmp(order, "21ABEC") == 0);
    nth = on_thread_0(make_waited);
    printf("order %s (%d threads)\n", order2, nth);
    CHECK(n2 == 4);
    char *a2 = strchr(order2, 'A'), *c2 = strchr(order2, 'C');
    CHECK(a2 && c2 && strchr(order2, 'D') && strchr(order2, 'F') && a2 < c2);
    if (nth == 2 && weft) CHECK(strcmp(order2, "FACD") == 0);
    printf("successor: ok\n");
    return 0;
}
