/* Tasks of a chosen size: one thread creates `n` tasks (inside `single`), each `w`
 * dependent multiply-adds long (about 1.1 ns each here), and the team runs them; the clock
 * covers creation and the implicit barrier. Where deferring a task starts to pay depends on
 * its size: a runtime should run the tiny ones where they are made and spread the rest.
 * A third argument makes each task also sleep that many microseconds: tasks that take time
 * but no CPU, so that a team of many more threads than this machine's cores can show
 * whether its creator holds up waiting threads (OMP_NUM_THREADS=64, 4096 tasks of 1 ms:
 * ideal 64 ms). Each task counts itself, so the check sees every one ran exactly once.
 * Usage: task_sizes [n] [w] [sleep_us]   (e.g. PROGS="task_sizes:1000000:0") */
#include "common.h"
#include <stdlib.h>

__attribute__((noinline)) static long work(long w, long x) {
    for (long i = 0; i < w; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long w = argc > 2 ? atol(argv[2]) : 0;
    long sleep_us = argc > 3 ? atol(argv[3]) : 0;
    long ran = 0, odd = 0;
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    for (long i = 0; i < n; i++) {
#pragma omp task shared(ran, odd) firstprivate(i)
        {
            long r = work(w, i);
            if (sleep_us > 0) {
                struct timespec ts = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
                nanosleep(&ts, NULL);
            }
#pragma omp atomic
            ran++;
#pragma omp atomic
            odd += r & 1;
        }
    }
    double t = now() - t0;
    char extra[128];
    snprintf(extra, sizeof extra, "n=%ld w=%ld sleep_us=%ld ns_per_task=%.1f odd=%ld", n, w, sleep_us, 1e9 * t / (double)n, odd);
    return report("task_sizes", t, ran == n, extra);
}
