/* The tied-task scheduling constraint (OpenMP 5.1 §2.12.6): a thread whose task is
 * suspended in a taskwait or at the end of a taskgroup runs only tasks that may run there
 * (libgomp: the waiting task's children, the group's tasks), never an unrelated one. So a
 * task holding a lock across a taskwait cannot find its own thread blocked on that lock by
 * another task. Priority 1 puts the other lock holders ahead of the child in every queue:
 * a runtime that let the waiting thread take any queued task would take one of them and
 * deadlock, which the watchdog turns into a failure. Run on 1 and on 2 threads. */
#include "check.h"
#include <omp.h>
#include <signal.h>
#include <unistd.h>

static omp_lock_t lock;
static int children, inside;

static void watchdog(int sig) {
    (void)sig;
    static const char m[] = "tsc: deadlock (a waiting thread ran a task it may not run)\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
    _exit(1);
}

static void run(int nthreads) {
    const int n = 20;
    children = 0;
#pragma omp parallel num_threads(nthreads)
#pragma omp single
    for (int i = 0; i < n; i++) {
#pragma omp task priority(1) firstprivate(i)
        {
            omp_set_lock(&lock);
            CHECK(++inside == 1);
            if (i % 2) {
#pragma omp task
                {
#pragma omp atomic
                    children++;
                }
#pragma omp taskwait
            } else {
#pragma omp taskgroup
                {
#pragma omp task
                    {
#pragma omp atomic
                        children++;
                    }
                }
            }
            inside--;
            omp_unset_lock(&lock);
        }
    }
    CHECK(children == n);
}

int main(void) {
    signal(SIGALRM, watchdog);
    alarm(30);
    omp_init_lock(&lock);
    run(1);
    run(2);
    omp_destroy_lock(&lock);
    printf("tsc: ok\n");
    return 0;
}
