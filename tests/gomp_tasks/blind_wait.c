/* A thread waiting in a taskwait while tasks it may not run are queued (a blind wait: a
 * queued task does not mean there is work for it) still finds a child that becomes ready
 * meanwhile on another thread. Thread X runs T (if(0)); T's child A runs on the other
 * thread Y, queues a task G that is not T's child (G has a body: GCC drops an empty task)
 * and sleeps: X is waiting by then, seeing G queued. When A ends, Y releases D and C. Y
 * runs D, which spins until C has run; C is queued (on the team's queue) and only X can
 * run it. With OMP_WAIT_POLICY=active a waiter that never looked again would spin until D
 * gave up (after 10 s) and fail the test; a passive one would find C only when its spin
 * ran out. Three rounds. */
#include "check.h"
#include <omp.h>

static volatile int a_started, c_ran;
static int gave_up, g_ran;

static void wait_for(volatile int *flag, long max_us) {
    double t0 = omp_get_wtime();
    while (!*flag && (omp_get_wtime() - t0) * 1e6 < max_us) {
    }
}

static void round_(void) {
    a_started = c_ran = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        int x = 0;
#pragma omp task if(0) shared(x)
        {
#pragma omp task depend(out: x) shared(x)
            {
#pragma omp task
                {
#pragma omp atomic
                    g_ran++;
                }
                a_started = 1;
                pause_us(50000);
                x = 1;
            }
            /* A must be taken by the other thread, not run here at the taskwait. */
            wait_for(&a_started, 10000000);
            CHECK(a_started);
#pragma omp task depend(in: x) shared(x)
            {
                wait_for(&c_ran, 10000000);
                if (!c_ran)
                    gave_up = 1;
            }
#pragma omp task depend(in: x) shared(x)
            {
                CHECK(x == 1);
                c_ran = 1;
            }
#pragma omp taskwait
        }
    }
}

int main(void) {
    for (int i = 0; i < 3; i++) {
        round_();
        CHECK(!gave_up);
        CHECK(g_ran == i + 1);
    }
    printf("blind_wait: ok\n");
    return 0;
}
