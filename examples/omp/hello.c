/* An unmodified OpenMP program: which threads ran what. Build with `gcc -fopenmp` and run on
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
    return sum == 5000050000L ? 0 : 1;
}
