/* tests/omp/traced.c built by clang (the kmp ABI): its tasks carry their source location. */
#include "../omp/traced.c"
