/* A million tasks in flight from one creating thread, each carrying 256 bytes of
 * firstprivate data: all run exactly once, and the process stays within 256 MiB of resident
 * memory (a runtime must throttle or run tasks to keep creation from exhausting memory;
 * libgomp runs new tasks at once past 64 queued per thread). Then a million tasks with
 * depend clauses, which wait for their predecessors rather than sit in a queue: the same
 * bound holds, and each address's tasks run in creation order. (libgomp does not count
 * tasks waiting for dependencies in its throttle, GCC 12's task.c returns before counting
 * them, yet stays within the bound here: 54 MiB on 2 threads.) */
#include "check.h"
#include <omp.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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

    /* Chains on 1000 addresses; each task also reads the next address. A task appends
     * its index to its address's running check value: in order iff last[k] grows. */
    enum { K = 1000 };
    static long last[K], val[K], bad;
    for (int k = 0; k < K; k++) last[k] = -1;
#pragma omp parallel
#pragma omp single
    {
    /* A gate on every address holds them all back for a while: a runtime that does not
     * throttle tasks waiting for dependencies piles up hundreds of thousands meanwhile. */
#pragma omp task depend(iterator(int j = 0:K), out: val[j])
    usleep(300000);
    for (long i = 0; i < n; i++) {
        struct payload p;
        memset(&p, 0, sizeof p);
        p.v[0] = i;
#pragma omp task firstprivate(p) depend(inout: val[i % K]) depend(in: val[(i + 1) % K])
        {
            long k = p.v[0] % K;
            if (last[k] >= p.v[0]) {
#pragma omp atomic
                bad++;
            }
            last[k] = p.v[0];
            val[k] += p.v[0];
        }
    }
    }
    CHECK(bad == 0);
    long total = 0;
    for (int k = 0; k < K; k++) total += val[k];
    CHECK(total == n * (n - 1) / 2);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    CHECK(ru.ru_maxrss < 256L * 1024); /* KiB */
    printf("million: ok (max RSS %ld MiB)\n", ru.ru_maxrss / 1024);
    return 0;
}
