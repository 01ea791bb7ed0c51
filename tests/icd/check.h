/* Shared by the ICD tests' C programs (include after <CL/cl.h>): CHECK a call returns
 * CL_SUCCESS, EXPECT a condition, EXPECT_CODE a call returns the given code; the first
 * failure prints where and exits 1. */
#ifndef WEFT_ICD_TEST_CHECK_H
#define WEFT_ICD_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

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
#endif
