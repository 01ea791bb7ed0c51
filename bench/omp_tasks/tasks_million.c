/* Spawning and running a million empty tasks: one thread creates them (inside `single`),
 * the team runs them; the clock covers creation and the implicit barrier. Each task
 * bumps a counter so the check sees every one ran exactly once. Usage: tasks_million [n] */
#include "common.h"
#include <omp.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long ran = 0;
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    for (long i = 0; i < n; i++) {
#pragma omp task shared(ran)
        {
#pragma omp atomic
            ran++;
        }
    }
    double t = now() - t0;
    char extra[64];
    snprintf(extra, sizeof extra, "ns_per_task=%.1f", 1e9 * t / (double)n);
    return report("tasks_million", t, ran == n, extra);
}
