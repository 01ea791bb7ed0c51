/* The omp_* API and the environment (run with OMP_NUM_THREADS=3,2 OMP_SCHEDULE=guided,5
 * OMP_DYNAMIC=bogus OMP_THREAD_LIMIT=8): ICVs from the environment, nested lists, wtime,
 * allocators. */
#include <omp.h>
#include <stdint.h>
#include "check.h"

int main(void) {
    CHECK(omp_get_max_threads() == 3);
    CHECK(omp_get_max_active_levels() > 1); /* a list in OMP_NUM_THREADS enables nesting */
    omp_sched_t k; int c;
    omp_get_schedule(&k, &c);
    CHECK(k == omp_sched_guided && c == 5);
    CHECK(omp_get_dynamic() == 0); /* the bogus value fell back to the default */
    CHECK(omp_get_thread_limit() == 8);
    CHECK(omp_get_num_procs() >= 1);
    int inner = 0;
#pragma omp parallel
    {
        CHECK(omp_get_num_threads() == 3 && omp_get_max_threads() == 2);
#pragma omp parallel
        {
#pragma omp atomic
            inner++;
        }
    }
    CHECK(inner == 6);
    double t0 = omp_get_wtime(), t1 = omp_get_wtime();
    CHECK(t1 >= t0 && omp_get_wtick() > 0);
    omp_alloctrait_t tr[] = {{omp_atk_alignment, 64}, {omp_atk_pool_size, 1024}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 3, tr);
    CHECK(a != omp_null_allocator);
    void *p = omp_alloc(100, a);
    CHECK(p && ((uintptr_t)p & 63) == 0);
    CHECK(omp_alloc(2000, a) == NULL);
    omp_free(p, a);
    omp_destroy_allocator(a);
    int *q = omp_calloc(10, sizeof(int), omp_default_mem_alloc);
    for (int i = 0; i < 10; i++) CHECK(q[i] == 0);
    omp_free(q, omp_default_mem_alloc);
    /* Pausing: fine outside regions, an error inside one or for a device that does not exist;
     * regions still run afterwards. */
    CHECK(omp_pause_resource(omp_pause_soft, omp_get_initial_device()) == 0);
    CHECK(omp_pause_resource(omp_pause_hard, 5) != 0);
    int inside = 0, n = 0;
#pragma omp parallel num_threads(2) reduction(+ : n)
    {
        n++;
#pragma omp master
        inside = omp_pause_resource_all(omp_pause_soft);
    }
    CHECK(inside != 0 && n == 2);
    CHECK(omp_pause_resource_all(omp_pause_hard) == 0);
    printf("api OK\n");
    return 0;
}
