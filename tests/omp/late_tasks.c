/* Tasks queued after other threads of the team reached the end of the region. Under Weft a
 * member whose body returned with no task pending docks at once (the end of a region is no
 * barrier for it; the primary's join waits for it and for every task): such tasks must
 * still all run before the region ends, and a docked member comes back to run some (it is
 * recruited when a task is queued), as threads waiting at libgomp's end barrier do. */
#include <omp.h>
#include <unistd.h>
#include "check.h"

enum { N = 100 };

/* The tasks one thread of two creates once the other has had 20 ms to reach the end:
 * returns how many of them ran on each thread. */
static void late(int creator, int ran_on[2], int *done) {
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == creator) {
            usleep(20 * 1000);
            for (int i = 0; i < N; i++) {
#pragma omp task shared(ran_on, done)
                {
                    usleep(1000);
#pragma omp atomic
                    ran_on[omp_get_thread_num()]++;
#pragma omp atomic
                    (*done)++;
                }
            }
        }
    }
}

int main(void) {
    for (int creator = 0; creator < 2; creator++) {
        int ran_on[2] = {0, 0}, done = 0;
        late(creator, ran_on, &done);
        /* Every task ran before the region ended... */
        CHECK(done == N);
        CHECK(ran_on[0] + ran_on[1] == N);
        /* ...and not all on their creator: the other thread, at the end of the region
         * meanwhile, ran some (100 tasks of 1 ms each: it has the time). */
        CHECK(ran_on[1 - creator] > 0);
    }
    printf("late_tasks OK\n");
    return 0;
}
