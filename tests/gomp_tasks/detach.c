/* detach: a task with detach(ev) completes only when omp_fulfill_event(ev) is called
 * (here by another task, later); its dependents and the taskwait wait until then. */
#include "check.h"
#include <omp.h>

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
    printf("detach: ok\n");
    return 0;
}
