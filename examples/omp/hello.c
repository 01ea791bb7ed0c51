/* An unmodified OpenMP program: which threads ran what, a reduction, and tasks with depend
 * clauses. Build with `gcc -fopenmp` and run on
 * Weft with LD_PRELOAD=libweft.so (or with libweft.so standing in for libgomp.so.1). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

/* The OS thread's name: Weft's CPU workers and its extra OpenMP threads are named. */
static const char *thread_name(char *buf, int n) {
    FILE *f = fopen("/proc/thread-self/comm", "r");
    if (!f || !fgets(buf, n, f)) snprintf(buf, n, "?");
    if (f) fclose(f);
    for (char *p = buf; *p; p++)
        if (*p == '\n') *p = 0;
    return buf;
}

int main(void) {
    long sum = 0;
#pragma omp parallel
    {
#pragma omp critical
    {
        char name[64];
        printf("hello from thread %d of %d (OS thread %d, \"%s\")\n", omp_get_thread_num(), omp_get_num_threads(), (int)gettid(),
               thread_name(name, sizeof name));
    }
    }
#pragma omp parallel for reduction(+ : sum) schedule(dynamic, 64)
    for (long i = 1; i <= 100000; i++)
        sum += i;
    printf("sum 1..100000 = %ld (expected 5000050000)\n", sum);

    /* Explicit tasks with depend clauses: Weft orders them through the data handles of
     * the addresses (as it orders OpenCL commands), and the team's threads run them. */
    int x = 0, y = 0, z = 0, ran_on[4];
#pragma omp parallel num_threads(2)
#pragma omp single
    {
#pragma omp task depend(out: x) shared(x, ran_on)
        { x = 20; ran_on[0] = omp_get_thread_num(); }
#pragma omp task depend(in: x) depend(out: y) shared(x, y, ran_on)
        { y = x + 1; ran_on[1] = omp_get_thread_num(); }
#pragma omp task depend(in: x) depend(out: z) shared(x, z, ran_on)
        { z = x + 2; ran_on[2] = omp_get_thread_num(); }
#pragma omp task depend(in: y, z) depend(inout: x) shared(x, y, z, ran_on)
        { x = y + z; ran_on[3] = omp_get_thread_num(); }
#pragma omp taskwait
    }
    printf("tasks with depend: x = %d (expected 43); they ran on threads %d, %d, %d, %d\n", x, ran_on[0], ran_on[1], ran_on[2],
           ran_on[3]);
    return sum == 5000050000L && x == 43 ? 0 : 1;
}
