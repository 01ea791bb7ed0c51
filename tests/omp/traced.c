/* What WEFT_TRACE records of an OpenMP program (tests/omp.rs and, built by clang through
 * tests/omp_clang/traced.c, tests/omp_clang.rs; checked by tests/common/omp_trace.rs):
 * - a region of two threads with a dynamic loop, then a single construct whose thread
 *   creates explicit tasks (PAIRS with depend clauses, PAIRS without), an if(0) task and a
 *   taskloop of 4 tasks; then, in the same region, critical sections (thread t enters
 *   2 + t of them, one named: the counts tell the two threads' tracks apart), master,
 *   masked filter(1), a static loop, an ordered loop, a doacross loop and sections;
 * - a host teams construct of NTEAMS teams with a distribute loop;
 * - a combined parallel sections region of two threads.
 * Prints on stderr how many task bodies ran and how many had depend clauses (for as many
 * "omp task" slices), and per thread what it ran, for the test to find on its track. */
#define _GNU_SOURCE
#include "check.h"
#include <omp.h>

#define N 2000
#define PAIRS 24
#define LOOP_TASKS 4
#define ORD 7
#define DOA 9
#define NTEAMS 3

static double a[N];
static int ran, ran_dep, loop_iters;
static int crit, ord_next, doa[DOA], sections_ran, dist[30];
/* Per thread number: critical sections entered, ordered blocks run, doacross iterations
 * run (and whether iteration 1 was one: its sink, iteration 0, is outside the loop, and gcc
 * makes no wait call for it), whether it ran the master and the masked block. */
static int ncrit[2], nord[2], ndoa[2], ndoa_first[2], nmaster[2], nmasked[2];

int main(void) {
    int chain = 0;
#pragma omp parallel num_threads(2)
    {
        CHECK(omp_get_num_threads() == 2);
        int me = omp_get_thread_num();
#pragma omp for schedule(dynamic, 16)
        for (int i = 0; i < N; i++) a[i] = i * 0.5;
#pragma omp single
        {
            for (int k = 0; k < PAIRS; k++) {
#pragma omp task depend(inout : chain) shared(chain)
                {
                    chain++;
#pragma omp atomic
                    ran_dep++;
                }
#pragma omp task
                {
#pragma omp atomic
                    ran++;
                }
            }
            /* Undeferred: run by its creator (clang: between __kmpc_omp_task_begin_if0
             * and __kmpc_omp_task_complete_if0, the compiler calling the body itself). */
#pragma omp task if (0)
            {
#pragma omp atomic
                ran++;
            }
#pragma omp taskloop num_tasks(LOOP_TASKS)
            for (int i = 0; i < 400; i++) {
#pragma omp atomic
                loop_iters++;
            }
        }
        for (int k = 0; k < 1 + me; k++) {
#pragma omp critical
            crit++;
        }
#pragma omp critical(traced_name)
        crit++;
        ncrit[me] = 2 + me;
        /* gcc inlines both as a test of omp_get_thread_num(): no runtime call to see. */
#pragma omp master
        nmaster[me]++;
#pragma omp masked filter(1)
        nmasked[me]++;
        /* gcc computes a static loop's share itself: no runtime call to see. */
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) a[i] += 1.0;
#pragma omp for ordered schedule(static, 1)
        for (int i = 0; i < ORD; i++) {
#pragma omp ordered
            {
                CHECK(ord_next == i);
                ord_next++;
                nord[me]++;
            }
        }
#pragma omp for ordered(1) schedule(static, 1)
        for (int i = 1; i < DOA; i++) {
#pragma omp ordered depend(sink : i - 1)
            doa[i] = doa[i - 1] + 1;
            ndoa[me]++;
            ndoa_first[me] += i == 1;
#pragma omp ordered depend(source)
        }
#pragma omp sections
        {
#pragma omp section
            {
#pragma omp atomic
                sections_ran++;
            }
#pragma omp section
            {
#pragma omp atomic
                sections_ran++;
            }
        }
    }
#pragma omp teams num_teams(NTEAMS)
    {
        CHECK(omp_get_num_teams() == NTEAMS);
#pragma omp distribute
        for (int i = 0; i < 30; i++) dist[i] = omp_get_team_num() + 1;
    }
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
        {
#pragma omp atomic
            sections_ran++;
        }
#pragma omp section
        {
#pragma omp atomic
            sections_ran++;
        }
    }
    CHECK(chain == PAIRS && ran == PAIRS + 1 && ran_dep == PAIRS && loop_iters == 400);
    for (int i = 0; i < N; i++) CHECK(a[i] == i * 0.5 + 1.0);
    CHECK(crit == 5 && ord_next == ORD && doa[DOA - 1] == DOA - 1 && sections_ran == 4);
    CHECK(nmaster[0] == 1 && nmaster[1] == 0 && nmasked[0] == 0 && nmasked[1] == 1);
    for (int i = 0; i < 30; i++) CHECK(dist[i] > 0);
    fprintf(stderr, "traced: tasks %d depend %d\n", ran + ran_dep + LOOP_TASKS, ran_dep);
    for (int t = 0; t < 2; t++)
        fprintf(stderr, "traced thread %d: critical %d ordered %d doacross %d first %d master %d masked %d\n", t, ncrit[t], nord[t],
                ndoa[t], ndoa_first[t], nmaster[t], nmasked[t]);
    fprintf(stderr, "traced teams: %d\n", NTEAMS);
    printf("traced OK\n");
    return 0;
}
