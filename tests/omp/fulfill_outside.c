/* Detached tasks whose events a thread outside every team fulfils (a pthread of the
 * program's own), many times over: in nested teams (the inner team of the outer primary
 * is made and freed with each outer region, the other outer thread's reused), in a
 * team reused region after region, and with the task's creator waiting in a taskwait. The
 * region's end (or the taskwait) must wait for the fulfilment, and the fulfilling thread
 * must not touch a team that its task's region has left (a freed or reused team: run under
 * valgrind to see such an access). Also built by clang (tests/omp_clang/fulfill_outside.c). */
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include "check.h"

#ifndef SERVED
#define SERVED()
#endif

#define REPS 1500
#define SLOTS 3

/* Events handed to the fulfilling thread, one mailbox per creator (0: empty). */
static atomic_uintptr_t mailbox[SLOTS];
static atomic_int stop;
static volatile int sink;

static void *fulfiller(void *arg) {
    (void)arg;
    unsigned n = 0;
    while (!atomic_load(&stop)) {
        int idle = 1;
        for (int i = 0; i < SLOTS; i++) {
            uintptr_t e = atomic_exchange(&mailbox[i], 0);
            if (e) {
                /* Now and then late, so that the team is already waiting. */
                for (unsigned k = 0; k < (n++ % 7) * 500; k++) sink += k;
                omp_fulfill_event((omp_event_handle_t)e);
                idle = 0;
            }
        }
        if (idle) sched_yield();
    }
    return NULL;
}

static void post(int slot, omp_event_handle_t ev) {
    uintptr_t e = (uintptr_t)ev;
    CHECK(e != 0);
    uintptr_t empty = 0;
    while (!atomic_compare_exchange_weak(&mailbox[slot], &empty, e)) {
        empty = 0;
        sched_yield();
    }
}

/* One detached task in a team; the region's end waits for its event. */
static void in_team(int slot, int *done) {
#pragma omp single
    {
        omp_event_handle_t ev;
#pragma omp task detach(ev) shared(done)
        *done = 1;
        post(slot, ev);
    }
}

int main(void) {
    SERVED();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, fulfiller, NULL) == 0);
    omp_set_max_active_levels(2);
    for (int r = 0; r < REPS; r++) {
        int done[SLOTS] = {0, 0, 0};
        /* Nested teams: each outer thread's inner region has a detached task. */
#pragma omp parallel num_threads(2) shared(done)
        {
            int o = omp_get_thread_num();
#pragma omp parallel num_threads(2) shared(done)
            in_team(o, &done[o]);
            CHECK(done[o] == 1);
        }
        /* Only the outer primary's inner team has one: its region, the outer one and the
         * freeing of that inner team (replaced in the primary's cache) may all end while
         * the fulfilling thread is still in omp_fulfill_event. */
        done[0] = 0;
#pragma omp parallel num_threads(2) shared(done)
        if (omp_get_thread_num() == 0) {
#pragma omp parallel num_threads(2) shared(done)
            in_team(0, &done[0]);
            CHECK(done[0] == 1);
        }
        /* One team, reused from region to region. */
#pragma omp parallel num_threads(2) shared(done)
        in_team(2, &done[2]);
        CHECK(done[2] == 1);
        /* A taskwait waits for the event too. */
        int waited = 0;
#pragma omp parallel num_threads(2) shared(waited)
#pragma omp single
        {
            omp_event_handle_t ev;
            int mine = 0;
#pragma omp task detach(ev) shared(mine)
            mine = 1;
            post(2, ev);
#pragma omp taskwait
            CHECK(mine == 1);
            waited = 1;
        }
        CHECK(waited == 1);
    }
    atomic_store(&stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    printf("fulfill_outside OK\n");
    return 0;
}
