/* Host teams from clang (__kmpc_fork_teams, __kmpc_push_num_teams): team numbers, a
 * distribute loop split over the teams, parallel regions inside teams, a reduction over
 * the teams, thread_limit. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int main(void) {
    served_by_weft();
    int seen[4] = {0}, nteams = 0;
#pragma omp teams num_teams(4)
    {
        if (omp_get_team_num() == 0) nteams = omp_get_num_teams();
        seen[omp_get_team_num()]++;
    }
    /* At most the number asked for (libomp makes no more than the cores). */
    CHECK(nteams >= 1 && nteams <= 4);
    for (int i = 0; i < 4; i++) CHECK(seen[i] == (i < nteams));

    /* Each iteration once, over all teams. */
    int hits[1000] = {0};
#pragma omp teams num_teams(3)
#pragma omp distribute
    for (int i = 0; i < 1000; i++) hits[i]++;
    for (int i = 0; i < 1000; i++) CHECK(hits[i] == 1);

    /* distribute with a chunk size, then a parallel loop in each team. */
    long sum = 0;
#pragma omp teams num_teams(2) reduction(+ : sum)
#pragma omp distribute parallel for dist_schedule(static, 7) reduction(+ : sum)
    for (int i = 1; i <= 500; i++) sum += i;
    CHECK(sum == 500 * 501 / 2);

    int limit = 0, inner = 0;
#pragma omp teams num_teams(2) thread_limit(2)
    {
        if (omp_get_team_num() == 1) limit = omp_get_thread_limit();
#pragma omp parallel
        {
#pragma omp atomic
            inner++;
        }
    }
    CHECK(limit == 2);
    CHECK(inner >= 2 && inner <= 4);
    printf("teams OK\n");
    return 0;
}
