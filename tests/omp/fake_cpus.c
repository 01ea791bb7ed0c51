/* Preloaded under tests/omp/places.c (EXPECT=eight): the process sees 8 CPUs whatever the
 * machine has. Affinity calls on the calling thread set and read a per-thread fake mask
 * (all 8 until set) and never touch the real one, so placement over 8 places can be checked
 * on a 2-core machine. Built with gcc -shared by tests/omp.rs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NFAKE 8
static __thread int has;
static __thread cpu_set_t mask;

static void get(size_t size, cpu_set_t *set) {
    memset(set, 0, size);
    for (int i = 0; i < NFAKE; i++)
        if (!has || CPU_ISSET(i, &mask)) CPU_SET_S(i, size, set);
}

static int put(size_t size, const cpu_set_t *set) {
    cpu_set_t m;
    CPU_ZERO(&m);
    int any = 0;
    for (int i = 0; i < NFAKE && i < (int)(8 * size); i++)
        if (CPU_ISSET_S(i, size, set)) {
            CPU_SET(i, &m);
            any = 1;
        }
    if (!any) return -1;
    mask = m;
    has = 1;
    return 0;
}

static int self(pid_t pid) { return pid == 0 || pid == (pid_t)syscall(SYS_gettid); }

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set) {
    if (self(pid)) {
        get(size, set);
        return 0;
    }
    int (*real)(pid_t, size_t, cpu_set_t *) = (int (*)(pid_t, size_t, cpu_set_t *))dlsym(RTLD_NEXT, "sched_getaffinity");
    return real(pid, size, set);
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set) { return self(pid) ? put(size, set) : 0; }

int pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set) {
    (void)t;
    get(size, set);
    return 0;
}

int pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set) {
    if (pthread_equal(t, pthread_self())) return put(size, set) ? 22 : 0;
    return 0;
}
