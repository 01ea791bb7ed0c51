/* Deep recursion: fib(30) with a task per call and no cutoff (about 1.6 million tasks, each
 * waiting for its two children). */
#include "check.h"
#include <omp.h>

static long fib(int n) {
    if (n < 2) return n;
    long x, y;
#pragma omp task shared(x)
    x = fib(n - 1);
#pragma omp task shared(y)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

int main(void) {
    long r = 0;
#pragma omp parallel
#pragma omp single
    r = fib(30);
    CHECK(r == 832040);
    printf("fib: ok\n");
    return 0;
}
