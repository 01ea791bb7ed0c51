/* distribute parallel for through the entry points that compilers other than clang 14 call
 * for it (clang splits it into a distribute loop and a parallel loop): every thread of every
 * host team calls __kmpc_dist_for_static_init_* (static, chunked) or
 * __kmpc_dist_dispatch_init_* (dynamic), and __kmpc_team_static_init_* hands the teams
 * their dist_schedule chunks. Also: omp_get_team_num inside a parallel region in a team. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

int __kmpc_global_thread_num(void *);
void __kmpc_dist_for_static_init_4(void *, int, int, int *, int *, int *, int *, int *, int, int);
void __kmpc_dist_for_static_init_8u(void *, int, int, int *, unsigned long *, unsigned long *, unsigned long *, long *, long, long);
void __kmpc_for_static_fini(void *, int);
void __kmpc_dist_dispatch_init_4(void *, int, int, int *, int, int, int, int);
int __kmpc_dispatch_next_4(void *, int, int *, int *, int *, int *);
void __kmpc_team_static_init_8(void *, int, int *, long *, long *, long *, long, long);

#define N 1000
static int hits[N], lasts;

static void check_hits(int times) {
    for (int i = 0; i < N; i++) CHECK(hits[i] == times);
    CHECK(lasts == 1);
    for (int i = 0; i < N; i++) hits[i] = 0;
    lasts = 0;
}

int main(void) {
    served_by_weft();
    omp_set_dynamic(0);
    int nteams = 0, team_ok = 1;
    /* Static: the team's block, then the thread's block of it. */
#pragma omp teams num_teams(3)
#pragma omp parallel num_threads(2)
    {
        int g = __kmpc_global_thread_num(NULL);
        int last = 0, lb = 0, ub = N - 1, ubd = 0, st = 0;
        __kmpc_dist_for_static_init_4(NULL, g, 34, &last, &lb, &ub, &ubd, &st, 1, 0);
        if (ub > ubd) ub = ubd;
        for (int i = lb; i <= ub; i++) {
#pragma omp atomic
            hits[i]++;
        }
        __kmpc_for_static_fini(NULL, g);
#pragma omp atomic
        lasts += last;
        /* The team number reaches the parallel region (at most 3 teams: libomp makes no
         * more than the cores). */
        if (omp_get_team_num() == 0 && omp_get_thread_num() == 0) nteams = omp_get_num_teams();
        if (omp_get_team_num() >= omp_get_num_teams() || omp_get_num_teams() > 3) team_ok = 0;
    }
    CHECK(team_ok && nteams >= 1);
    check_hits(1);

    /* Static with a chunk of 7 (unsigned 64-bit, counting by 2 over 2N). */
#pragma omp teams num_teams(2)
#pragma omp parallel num_threads(3)
    {
        int g = __kmpc_global_thread_num(NULL);
        int last = 0;
        unsigned long lb = 0, ub = 2 * N - 2, ubd = 0;
        long st = 0;
        __kmpc_dist_for_static_init_8u(NULL, g, 33, &last, &lb, &ub, &ubd, &st, 2, 7);
        for (; lb <= ubd; lb += st, ub += st) {
            unsigned long hi = ub < ubd ? ub : ubd;
            for (unsigned long i = lb; i <= hi; i += 2) {
#pragma omp atomic
                hits[i / 2]++;
            }
        }
#pragma omp atomic
        lasts += last;
    }
    check_hits(1);

    /* Dynamic over each team's block. */
    int team_nums[3] = {0};
#pragma omp teams num_teams(3)
#pragma omp parallel num_threads(2)
    {
        int g = __kmpc_global_thread_num(NULL);
        int last = 0, lb, ub, st, team_last = 0;
        __kmpc_dist_dispatch_init_4(NULL, g, 35, &team_last, 0, N - 1, 1, 3);
        while (__kmpc_dispatch_next_4(NULL, g, &last, &lb, &ub, &st)) {
            for (int i = lb; i <= ub; i++) {
#pragma omp atomic
                hits[i]++;
            }
        }
        if (omp_get_thread_num() == 0) {
#pragma omp atomic
            lasts += team_last;
        }
#pragma omp atomic
        team_nums[omp_get_team_num()]++;
    }
    check_hits(1);
    for (int t = 0; t < 3; t++) CHECK((team_nums[t] > 0) == (t < nteams));

    /* dist_schedule(static, 16): each team walks its chunks. */
#pragma omp teams num_teams(4)
    {
        int g = __kmpc_global_thread_num(NULL);
        int last = 0;
        long lb = 0, ub = N - 1, st = 0;
        __kmpc_team_static_init_8(NULL, g, &last, &lb, &ub, &st, 1, 16);
        for (; lb <= N - 1; lb += st, ub += st)
            for (long i = lb; i <= ub && i <= N - 1; i++) __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        /* (omp atomic may not nest directly in teams.) */
        __atomic_fetch_add(&lasts, last, __ATOMIC_RELAXED);
    }
    check_hits(1);
    printf("dist OK\n");
    return 0;
}
