/* Shared by the OpenMP task tests: CHECK prints the failed condition and exits 1. */
#ifndef WEFT_GOMP_TASKS_CHECK_H
#define WEFT_GOMP_TASKS_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(c)                                                                    \
    do {                                                                            \
        if (!(c)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

/* Sleep `us` microseconds: widens the windows in which a wrong order would show. */
static inline void pause_us(long us) {
    struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&t, NULL);
}
#endif
