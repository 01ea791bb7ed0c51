/* C++ threadprivate objects without TLS (clang++ -fnoopenmp-use-tls:
 * __kmpc_threadprivate_register with a constructor and a destructor, then
 * __kmpc_threadprivate_cached): each other thread's copy is made by the constructor (not
 * copied from the object), persists between regions, and is destroyed once, before the
 * program's static objects; the initial thread's copy is the object itself. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <omp.h>
#include <atomic>
#include "served.h"

static std::atomic<int> ctors{0}, dtors{0};

struct Counter {
    int v;
    Counter() : v(10) { ctors++; }
    ~Counter() { dtors++; }
};

static Counter obj;
#pragma omp threadprivate(obj)

/* Runs at exit after Weft has destroyed the copies (registered before Weft's handler, which
 * the first copy registers) and before `obj` is destroyed (registered after its
 * constructor ran). */
static void at_exit() {
    int made = ctors.load(), gone = dtors.load();
    if (made >= 2 && gone == made - 1)
        printf("threadprivate_ctor OK\n");
    else
        fprintf(stderr, "%d constructed, %d destroyed: expected every copy but the object destroyed\n", made, gone);
}

int main() {
    served_by_weft();
    omp_set_dynamic(0);
    CHECK(ctors == 1);
    atexit(at_exit);
    obj.v = 99;
    int fresh[4] = {0};
#pragma omp parallel num_threads(4)
    {
        int t = omp_get_thread_num();
        fresh[t] = t == 0 ? obj.v == 99 : obj.v == 10;
        obj.v = 100 + t;
    }
    for (int t = 0; t < 4; t++) CHECK(fresh[t]);
    CHECK(obj.v == 100);
    int kept[4] = {0};
#pragma omp parallel num_threads(4)
    {
        int t = omp_get_thread_num();
        kept[t] = obj.v >= 100 && obj.v < 104;
    }
    for (int t = 0; t < 4; t++) CHECK(kept[t]);
    /* Each thread but the initial one constructed one copy. */
    CHECK(ctors >= 2 && dtors == 0);
    return 0;
}
