/* Misuse gets a message on stderr and the behaviour the spec gives (the call is ignored). */
#include <omp.h>
#include "check.h"

int main(void) {
    omp_lock_t l;
    omp_init_lock(&l);
    omp_unset_lock(&l); /* not locked */
    CHECK(omp_test_lock(&l));
    omp_unset_lock(&l);
    omp_nest_lock_t n;
    omp_init_nest_lock(&n);
    omp_unset_nest_lock(&n); /* not held */
    CHECK(omp_test_nest_lock(&n) == 1);
    omp_unset_nest_lock(&n);
    omp_set_schedule((omp_sched_t)99, 1); /* unknown kind */
    omp_sched_t k;
    int c;
    omp_get_schedule(&k, &c);
    CHECK(k != (omp_sched_t)99);
    int before = omp_get_max_threads();
    omp_set_num_threads(-3); /* ignored */
    omp_set_num_threads(0); /* ignored */
    CHECK(omp_get_max_threads() == before);
    int levels = omp_get_max_active_levels();
    omp_set_max_active_levels(-1); /* ignored */
    CHECK(omp_get_max_active_levels() == levels);
    printf("misuse OK\n");
    return 0;
}
