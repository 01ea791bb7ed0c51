/* detach: a task with detach(ev) completes only when omp_fulfill_event(ev) is called
 * (here by another task, later); its dependents and the taskwait wait until then.
 * Then, on one thread, a creator that fulfils its 40 detached tasks' events itself after
 * creating them all: more than the runtime keeps queued, so it runs some at once, and
 * must not wait there for events only the creator's continuation fulfils (libgomp hangs
 * so past its throttle of 64; Weft's is 8 per thread). Last, tasks that depend on a
 * detached task whose event the creator fulfils after creating them: 1,000 of them (more
 * than a throttle of tasks not complete allows: libgomp does not count tasks waiting for
 * their dependencies), and on one thread one after 20 queued tasks (more than the creator
 * keeps queued): a creator held by a throttle must not wait there for the event. */
#include "check.h"
#include <omp.h>
#include <unistd.h>

/* On `threads` threads, a detached task whose event the creator fulfils only after creating
 * `plain` independent tasks and then `dependents` tasks that depend on it. Checks that the
 * independent ones all ran; returns how many dependents saw the detached task's write. */
static int fulfil_after(int threads, int plain, int dependents) {
    int d = 0, saw = 0, ran = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
    {
        omp_event_handle_t e;
#pragma omp task detach(e) depend(out: d) shared(d)
        d = 1;
        for (int i = 0; i < plain; i++) {
#pragma omp task shared(ran)
            {
#pragma omp atomic
                ran++;
            }
        }
        for (int i = 0; i < dependents; i++) {
#pragma omp task depend(in: d) shared(d, saw)
            {
#pragma omp atomic
                saw += d;
            }
        }
        omp_fulfill_event(e);
    }
    CHECK(ran == plain);
    return saw;
}

int main(void) {
    int x = 0, seen = -1, fulfilled = 0;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
        omp_event_handle_t ev;
#pragma omp task detach(ev) depend(out: x) shared(x)
        x = 1; /* the body ends at once; the task completes at the fulfill */
#pragma omp task depend(in: x) shared(x, seen, fulfilled)
        {
            int f;
#pragma omp atomic read
            f = fulfilled;
            seen = f ? x : -2; /* -2: ran before the event was fulfilled */
        }
#pragma omp task firstprivate(ev) shared(fulfilled)
        {
            pause_us(20000);
#pragma omp atomic write
            fulfilled = 1;
            omp_fulfill_event(ev);
        }
#pragma omp taskwait
        CHECK(fulfilled == 1);
    }
    CHECK(seen == 1);

    enum { N = 40 };
    omp_event_handle_t evs[N];
    int ran[N] = {0}, late = 0;
    alarm(30); /* a hang fails here rather than at the harness's timeout */
#pragma omp parallel num_threads(1)
#pragma omp single
    {
        for (int i = 0; i < N; i++) {
            omp_event_handle_t e;
#pragma omp task detach(e) shared(ran)
            ran[i] = 1;
            evs[i] = e;
        }
        for (int i = 0; i < N; i++) omp_fulfill_event(evs[i]);
#pragma omp taskwait
        late = 1;
    }
    for (int i = 0; i < N; i++) CHECK(ran[i] == 1);
    CHECK(late == 1);

    CHECK(fulfil_after(2, 0, 1000) == 1000);
    CHECK(fulfil_after(1, 20, 1) == 1);
    alarm(0);
    printf("detach: ok\n");
    return 0;
}
