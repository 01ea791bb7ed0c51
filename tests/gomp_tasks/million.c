/* A million tasks in flight from one creating thread, each carrying 256 bytes of
 * firstprivate data: all run exactly once, and the process stays within 1 GiB of resident
 * memory (a runtime must throttle or run tasks to keep creation from exhausting memory;
 * libgomp runs new tasks at once past 64 queued per thread). */
#include "check.h"
#include <omp.h>
#include <string.h>
#include <sys/resource.h>

struct payload { long v[32]; };

int main(void) {
    const long n = 1000000;
    long sum = 0;
#pragma omp parallel
#pragma omp single
    for (long i = 0; i < n; i++) {
        struct payload p;
        memset(&p, 0, sizeof p);
        p.v[i % 32] = i;
#pragma omp task firstprivate(p, i) shared(sum)
        {
#pragma omp atomic
            sum += p.v[i % 32];
        }
    }
    CHECK(sum == n * (n - 1) / 2);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    CHECK(ru.ru_maxrss < 1024L * 1024); /* KiB */
    printf("million: ok (max RSS %ld MiB)\n", ru.ru_maxrss / 1024);
    return 0;
}
