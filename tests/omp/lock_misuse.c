/* Locks misused (non-conforming, OpenMP 5.2 §18.9): destroying a lock that is locked, and
 * unsetting a lock another thread holds. Each call gets a line on stderr naming it and is
 * ignored: the lock stays as it was, so the program's later correct calls still work.
 * Built by gcc (tests/omp.rs) and by clang (tests/omp_clang.rs: omp_lock_t is 8 bytes
 * there, omp_nest_lock_t 8 instead of 16). */
#include <omp.h>
#include "check.h"

int main(void) {
    omp_lock_t l;
    omp_init_lock(&l);
    omp_set_lock(&l);
    omp_destroy_lock(&l); /* locked: message, left locked */
    CHECK(!omp_test_lock(&l));
    /* Another thread unsets it: message, still locked. */
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) omp_unset_lock(&l);
    CHECK(!omp_test_lock(&l));
    omp_unset_lock(&l);
    CHECK(omp_test_lock(&l));
    omp_unset_lock(&l);
    omp_destroy_lock(&l);

    omp_nest_lock_t n;
    omp_init_nest_lock(&n);
    omp_set_nest_lock(&n);
    omp_set_nest_lock(&n);
    omp_destroy_nest_lock(&n); /* held: message, left held (its memory not freed) */
    CHECK(omp_test_nest_lock(&n) == 3);
    int others = -1;
#pragma omp parallel num_threads(2) shared(others)
    if (omp_get_thread_num() == 1) {
        omp_unset_nest_lock(&n); /* not the holder: message, still held */
        others = omp_test_nest_lock(&n);
    }
    CHECK(others == 0);
    omp_unset_nest_lock(&n);
    omp_unset_nest_lock(&n);
    omp_unset_nest_lock(&n);
    CHECK(omp_test_nest_lock(&n) == 1);
    omp_unset_nest_lock(&n);
    omp_destroy_nest_lock(&n);
    printf("lock_misuse OK\n");
    return 0;
}
