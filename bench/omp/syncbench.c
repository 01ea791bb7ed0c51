/* EPCC-style synchronisation overheads (after EPCC syncbench): for each construct, the time
 * per instance minus the time of the same delay without the construct, in microseconds;
 * median over OUTER samples. Build with gcc -fopenmp -O2; run with OMP_NUM_THREADS=2 under
 * each runtime (bench/omp/run.sh). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTER 21
static int inner = 4096;
static int delay_len = 50;
static omp_lock_t lock;

static void delay(int n) {
    volatile int a = 0;
    for (int i = 0; i < n; i++) a += i;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*test_fn)(void);
static double median_time(test_fn f) {
    double t[OUTER];
    f(); /* warm up */
    for (int k = 0; k < OUTER; k++) {
        double s = omp_get_wtime();
        f();
        t[k] = omp_get_wtime() - s;
    }
    qsort(t, OUTER, sizeof t[0], cmp);
    return t[OUTER / 2];
}

static void ref(void) { for (int j = 0; j < inner; j++) delay(delay_len); }
static void ref_shared(void) {
    /* critical, lock, ordered: the delays of all threads run one after the other. */
    for (int j = 0; j < inner; j++) delay(delay_len);
}
static void t_parallel(void) {
    for (int j = 0; j < inner; j++) {
#pragma omp parallel
        delay(delay_len);
    }
}
static void t_for(void) {
#pragma omp parallel
    for (int j = 0; j < inner; j++) {
#pragma omp for
        for (int i = 0; i < omp_get_num_threads(); i++) delay(delay_len);
    }
}
static void t_parallel_for(void) {
    int n = omp_get_max_threads();
    for (int j = 0; j < inner; j++) {
#pragma omp parallel for
        for (int i = 0; i < n; i++) delay(delay_len);
    }
}
static void t_barrier(void) {
#pragma omp parallel
    for (int j = 0; j < inner; j++) {
        delay(delay_len);
#pragma omp barrier
    }
}
static void t_single(void) {
#pragma omp parallel
    for (int j = 0; j < inner; j++) {
#pragma omp single
        delay(delay_len);
    }
}
static void t_critical(void) {
#pragma omp parallel
    for (int j = 0; j < inner / omp_get_num_threads(); j++) {
#pragma omp critical
        delay(delay_len);
    }
}
static void t_lock(void) {
#pragma omp parallel
    for (int j = 0; j < inner / omp_get_num_threads(); j++) {
        omp_set_lock(&lock);
        delay(delay_len);
        omp_unset_lock(&lock);
    }
}
static void t_ordered(void) {
#pragma omp parallel for ordered schedule(static, 1)
    for (int j = 0; j < inner; j++) {
#pragma omp ordered
        delay(delay_len);
    }
}
static double atomic_x;
static void t_atomic(void) {
#pragma omp parallel
    for (int j = 0; j < inner / omp_get_num_threads(); j++) {
        delay(delay_len);
#pragma omp atomic
        atomic_x += 1.0;
    }
}
static void ref_atomic(void) {
    int n = omp_get_max_threads();
    for (int j = 0; j < inner / n; j++) delay(delay_len);
}
static void t_reduction(void) {
    int sum = 0;
    for (int j = 0; j < inner; j++) {
#pragma omp parallel reduction(+ : sum)
        {
            delay(delay_len);
            sum += 1;
        }
    }
    if (sum != inner * omp_get_max_threads()) { fprintf(stderr, "reduction wrong: %d\n", sum); exit(1); }
}

int main(int argc, char **argv) {
    if (argc > 1) inner = atoi(argv[1]);
    omp_init_lock(&lock);
    struct { const char *name; test_fn f, r; } tests[] = {
        {"PARALLEL", t_parallel, ref}, {"FOR", t_for, ref}, {"PARALLEL_FOR", t_parallel_for, ref},
        {"BARRIER", t_barrier, ref}, {"SINGLE", t_single, ref}, {"CRITICAL", t_critical, ref_shared},
        {"LOCK", t_lock, ref_shared}, {"ORDERED", t_ordered, ref_shared}, {"ATOMIC", t_atomic, ref_atomic},
        {"REDUCTION", t_reduction, ref},
    };
    const char *only = getenv("ONLY");
    for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only && !strstr(only, tests[i].name)) continue;
        double r = median_time(tests[i].r), t = median_time(tests[i].f);
        /* per construct instance; CRITICAL/LOCK/ATOMIC run inner instances in all. */
        printf("%s %.4f\n", tests[i].name, (t - r) / inner * 1e6);
        fflush(stdout);
    }
    return 0;
}
