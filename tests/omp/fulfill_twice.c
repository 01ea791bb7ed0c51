/* omp_fulfill_event on an event already fulfilled (undefined behaviour: the task's
 * completion would run twice): Weft aborts with a message naming the call rather than
 * freeing the task twice. Prints "fulfilled once" before the second call. */
#include <omp.h>
#include <stdio.h>

int main(void) {
    omp_event_handle_t ev;
    int done = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
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
