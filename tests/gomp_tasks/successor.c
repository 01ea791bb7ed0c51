/* Where a released task runs. A task whose last predecessor just finished runs next on the
 * thread that ran that predecessor, before older ready tasks; the tasks it releases after
 * the first, and tasks ready when created, keep the order they became ready in.
 * Thread 0 creates, in this order,
 *   A (inout x), Z1, Z2 (inout on addresses of their own: ready at once), B (in x), C (in x)
 * and runs them all in its taskwait, while thread 1 waits in the program's own code (no
 * scheduling point: it cannot take any). B and C wait for A. Weft (omp/src/task.rs, `ready`):
 * A, B, Z1, Z2, C. GNU libgomp runs a taskwait's children newest first. Every runtime runs
 * every task once, B and C after A; the Weft order is checked only on Weft (it exports
 * weft_data_acquire). */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>
#include <omp.h>
#include <sched.h>
#include <string.h>

static int x, y1, y2; /* only their addresses matter */

int main(void) {
    char order[8] = {0};
    int n = 0, done = 0, nth = 0;
#pragma omp parallel num_threads(2) shared(order, n, done, nth)
    {
        if (omp_get_thread_num() == 0) {
            nth = omp_get_num_threads();
#pragma omp task depend(inout: x)
            order[n++] = 'A';
#pragma omp task depend(inout: y1)
            order[n++] = '1';
#pragma omp task depend(inout: y2)
            order[n++] = '2';
#pragma omp task depend(in: x)
            order[n++] = 'B';
#pragma omp task depend(in: x)
            order[n++] = 'C';
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
    printf("order %s (%d threads)\n", order, nth);
    CHECK(n == 5);
    char *a = strchr(order, 'A'), *b = strchr(order, 'B'), *c = strchr(order, 'C');
    CHECK(a && b && c && a < b && a < c);
    char s[8];
    memcpy(s, order, sizeof s);
    for (int i = 0; i < 5; i++) /* every task exactly once */
        for (int j = i + 1; j < 5; j++)
            if (s[j] < s[i]) { char t = s[i]; s[i] = s[j]; s[j] = t; }
    CHECK(strcmp(s, "12ABC") == 0);
    if (nth == 2 && dlsym(RTLD_DEFAULT, "weft_data_acquire")) CHECK(strcmp(order, "AB12C") == 0);
    printf("successor: ok\n");
    return 0;
}
