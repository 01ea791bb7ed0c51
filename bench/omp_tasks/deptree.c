/* Recursive tasks with depend clauses: each call makes two children that write `a` and `b`
 * and a third that reads both and adds them, then waits (a task tree ordered by sibling
 * dependencies, as divide-and-conquer code written with depend clauses is). Every task is
 * tiny: this measures what a dependent task costs to create, order and finish, and a
 * waiting thread's search for the tasks it may run. Checked: the sum is 2^depth.
 * Usage: deptree [depth] (default 16: 196,605 tasks). */
#include "common.h"
#include <omp.h>
#include <stdlib.h>

static long tree(int d) {
    if (d == 0) return 1;
    long a = 0, b = 0, s = 0;
#pragma omp task depend(out: a) shared(a) firstprivate(d)
    a = tree(d - 1);
#pragma omp task depend(out: b) shared(b) firstprivate(d)
    b = tree(d - 1);
#pragma omp task depend(in: a, b) shared(a, b, s)
    s = a + b;
#pragma omp taskwait
    return s;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 16;
    long r = 0;
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    r = tree(depth);
    double t = now() - t0;
    char extra[64];
    snprintf(extra, sizeof extra, "depth=%d tasks=%ld", depth, 3 * ((1L << depth) - 1));
    return report("deptree", t, r == (1L << depth), extra);
}
