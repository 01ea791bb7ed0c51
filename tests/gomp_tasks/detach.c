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

    int d = 0, sum = 0, got = 0, plain = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        omp_event_handle_t e;
#pragma omp task detach(e) depend(out: d) shared(d)
        d = 1;
        for (int i = 0; i < 1000; i++) {
#pragma omp task depend(in: d) shared(d, sum)
            {
#pragma omp atomic
                sum += d;
            }
        }
        omp_fulfill_event(e);
    }
    CHECK(sum == 1000);
#pragma omp parallel num_threads(1)
#pragma omp single
    {
        omp_event_handle_t e;
#pragma omp task detach(e) depend(out: d) shared(d)
        d = 2;
        for (int i = 0; i < 20; i++) {
#pragma omp task shared(plain)
            plain++;
        }
#pragma omp task depend(in: d) shared(d, got)
        got = d;
        omp_fulfill_event(e);
    }
    alarm(0);
    CHECK(plain == 20);
    CHECK(got == 2);
    printf("detach: ok\n");
    return 0;
}
