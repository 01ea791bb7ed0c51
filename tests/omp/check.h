/* Shared by the OpenMP test programs: CHECK aborts with the failing line. */
#include <stdio.h>
#include <stdlib.h>
#define CHECK(c)                                                                      \
    do {                                                                              \
        if (!(c)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);    \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)
