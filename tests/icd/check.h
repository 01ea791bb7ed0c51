/* Shared by the ICD tests' C programs (include after <CL/cl.h>): CHECK a call returns
 * CL_SUCCESS, EXPECT a condition, EXPECT_CODE a call returns the given code; the first
 * failure prints where and exits 1. weft_platform and weft_devices find the platform
 * named "Weft" and its devices. */
#ifndef WEFT_ICD_TEST_CHECK_H
#define WEFT_ICD_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                         \
    do {                                                                                 \
        cl_int e_ = (x);                                                                 \
        if (e_ != CL_SUCCESS) {                                                          \
            fprintf(stderr, "FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #x, e_);       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define EXPECT(c)                                                                        \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define EXPECT_CODE(code, x)                                                             \
    do {                                                                                 \
        cl_int e_ = (x);                                                                 \
        if (e_ != (code)) {                                                              \
            fprintf(stderr, "FAIL %s:%d: %s = %d, expected %s\n", __FILE__, __LINE__, #x, \
                    e_, #code);                                                          \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* The platform named "Weft" (EXPECTed among the first 16). */
static inline cl_platform_id weft_platform(void) {
    cl_platform_id ps[16], weft = NULL;
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, ps, &np));
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char name[64];
        CHECK(clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL));
        if (strcmp(name, "Weft") == 0) weft = ps[i];
    }
    EXPECT(weft != NULL);
    return weft;
}

/* Up to `max` devices of `platform` into `ds`; how many. */
static inline cl_uint weft_devices(cl_platform_id platform, cl_device_id *ds, cl_uint max) {
    cl_uint nd = 0;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, max, ds, &nd));
    return nd < max ? nd : max;
}

/* A compute-bound kernel of known result: `spin` runs ITERS steps of a generator per work
 * item from (SEED, id); spin_expected is what out[i] must hold. SPIN_SRC opens a program's
 * source (string concatenation adds the program's own kernels). */
#define SPIN_SRC                                                                         \
    "__kernel void spin(__global uint *out, int iters, uint seed) {\n"                    \
    "  uint i = (uint)get_global_id(0), y = seed * 16u + i;\n"                            \
    "  for (int k = 0; k < iters; k++) { y = y * 1664525u + 1013904223u + (y >> 13); }\n" \
    "  out[i] = y;\n"                                                                     \
    "}\n"
static inline cl_uint spin_expected(int iters, cl_uint seed, cl_uint i) {
    cl_uint y = seed * 16u + i;
    for (int k = 0; k < iters; k++) y = y * 1664525u + 1013904223u + (y >> 13);
    return y;
}

#endif
