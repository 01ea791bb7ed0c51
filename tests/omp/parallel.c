/* Parallel regions: team sizes, thread numbers, nesting, levels, if/num_threads clauses,
 * more threads than cores (extra OS threads), and that libgomp itself is not loaded. */
#include <omp.h>
#include <string.h>
#include "check.h"

static void no_libgomp(void) {
    if (getenv("LD_PRELOAD")) return; /* preloading keeps libgomp.so.1 loaded, unused */
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    CHECK(f);
    while (fgets(line, sizeof line, f)) CHECK(!strstr(line, "libgomp.so.1.0.0"));
    fclose(f);
}

int main(void) {
    no_libgomp();
    CHECK(omp_get_num_threads() == 1 && omp_get_thread_num() == 0 && !omp_in_parallel() && omp_get_level() == 0);
    for (int n = 1; n <= 9; n++) {
        int seen[16] = {0}, nth = -1;
#pragma omp parallel num_threads(n)
        {
#pragma omp atomic
            seen[omp_get_thread_num()]++;
            if (omp_get_thread_num() == 0) nth = omp_get_num_threads();
            CHECK(omp_get_level() == 1 && omp_get_active_level() == (n > 1) && omp_in_parallel() == (n > 1));
        }
        CHECK(nth == n);
        for (int i = 0; i < n; i++) CHECK(seen[i] == 1);
    }
    int cnt = 0;
#pragma omp parallel num_threads(4) if (0)
    {
#pragma omp atomic
        cnt++;
        CHECK(omp_get_num_threads() == 1);
    }
    CHECK(cnt == 1);
    /* Nested: inactive by default (max-active-levels 1), active once allowed. */
#pragma omp parallel num_threads(2)
    {
#pragma omp parallel num_threads(2)
        CHECK(omp_get_num_threads() == 1 && omp_get_level() == 2 && omp_get_active_level() == 1);
    }
    omp_set_max_active_levels(3);
    int inner[2][3];
    memset(inner, 0, sizeof inner);
#pragma omp parallel num_threads(2)
    {
        int o = omp_get_thread_num();
#pragma omp parallel num_threads(3)
        {
            CHECK(omp_get_num_threads() == 3 && omp_get_level() == 2 && omp_get_active_level() == 2);
            CHECK(omp_get_ancestor_thread_num(1) == o && omp_get_ancestor_thread_num(0) == 0);
            CHECK(omp_get_team_size(1) == 2 && omp_get_team_size(2) == 3 && omp_get_team_size(3) == -1);
#pragma omp atomic
            inner[o][omp_get_thread_num()]++;
        }
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK(inner[i][j] == 1);
    /* Many regions in a row (the pool's reuse path). */
    long total = 0;
    for (int r = 0; r < 20000; r++) {
#pragma omp parallel num_threads(2) reduction(+ : total)
        total += omp_get_thread_num() + 1;
    }
    CHECK(total == 20000L * 3);
    omp_set_num_threads(3);
    CHECK(omp_get_max_threads() == 3);
#pragma omp parallel
    CHECK(omp_get_num_threads() == 3);
    printf("parallel OK\n");
    return 0;
}
