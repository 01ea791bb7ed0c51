/* Parallel regions from clang: num_threads, thread numbers, many shared variables (the
 * microtask's arguments beyond those passed in registers), if(0) (serialized regions),
 * nesting, proc_bind. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int main(void) {
    served_by_weft();
    CHECK(omp_get_num_threads() == 1 && omp_get_thread_num() == 0 && omp_get_level() == 0);
    for (int n = 1; n <= 5; n++) {
        int seen[8] = {0}, nth = -1;
#pragma omp parallel num_threads(n)
        {
#pragma omp atomic
            seen[omp_get_thread_num()]++;
            if (omp_get_thread_num() == 0) nth = omp_get_num_threads();
            CHECK(omp_get_level() == 1 && omp_in_parallel() == (n > 1));
        }
        CHECK(nth == n);
        for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
    }
    /* 1 to 9 shared variables (plus `sum`): microtask arguments after the two ids, in
     * registers and on the stack, odd and even numbers of them on the stack. */
    long a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, k = 9, sum = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp atomic
        sum += a;
    }
    CHECK(sum == 3);
    sum = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp atomic
        sum += a + b + c + d;
    }
    CHECK(sum == 30);
    sum = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic
        sum += a + b + c + d + e;
    }
    CHECK(sum == 30);
    sum = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic
        sum += a + b + c + d + e + f;
    }
    CHECK(sum == 42);
    sum = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp atomic
        sum += a + b + c + d + e + f + g + h + k;
    }
    CHECK(sum == 135);
    /* if(0): the compiler runs the region itself between serialized_parallel calls. */
    int cnt = 0, off = 0;
#pragma omp parallel num_threads(4) if (off)
    {
        cnt++;
        CHECK(omp_get_num_threads() == 1 && omp_get_thread_num() == 0 && omp_get_level() == 1);
    }
    CHECK(cnt == 1 && omp_get_level() == 0);
    /* The pushed num_threads does not leak into the next region. */
    int nth = 0;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 0) nth = omp_get_num_threads();
    CHECK(nth == 2);
    omp_set_num_threads(3);
#pragma omp parallel
    if (omp_get_thread_num() == 0) nth = omp_get_num_threads();
    CHECK(nth == 3);
    /* Nested: inactive by default, then active; a serialized region inside a team. */
    int inner[4] = {0};
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
#pragma omp parallel num_threads(2)
        {
            CHECK(omp_get_level() == 2 && omp_get_active_level() == 1 && omp_get_num_threads() == 1);
            inner[me]++;
        }
#pragma omp parallel num_threads(2) if (off)
        CHECK(omp_get_level() == 2 && omp_get_ancestor_thread_num(1) == me);
    }
    CHECK(inner[0] == 1 && inner[1] == 1);
    omp_set_max_active_levels(2);
    int count = 0;
#pragma omp parallel num_threads(2) proc_bind(close)
    {
#pragma omp parallel num_threads(2)
        {
            CHECK(omp_get_level() == 2 && omp_get_active_level() == 2 && omp_get_num_threads() == 2);
#pragma omp atomic
            count++;
        }
    }
    CHECK(count == 4);
    printf("parallel OK\n");
    return 0;
}
