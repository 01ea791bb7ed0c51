/* omp_fulfill_event on an event already fulfilled (undefined behaviour: the task's
 * completion would run twice): Weft aborts with a message naming the call rather than
 * freeing the task twice. Prints "fulfilled once" before the second call. Built by gcc
 * (tests/omp.rs) and by clang (tests/omp_clang.rs). */
#include <omp.h>
#include <stdio.h>

int main(void) {
    int done = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        /* Declared here: clang 14 warns of a shared one as read uninitialized by detach(). */
        omp_event_handle_t ev;
#pragma omp task detach(ev) shared(done)
        done = 1;
        omp_fulfill_event(ev);
#pragma omp taskwait
        printf("fulfilled once\n");
        fflush(stdout);
        omp_fulfill_event(ev);
    }
    printf("fulfill_twice OK (not reached under Weft)\n");
    return done ? 0 : 1;
}
