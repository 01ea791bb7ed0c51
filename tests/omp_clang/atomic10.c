/* The long double and _Complex long double forms of __kmpc_atomic_* (x87 values passed in
 * memory, returned on the x87 stack), called as a compiler built for libomp calls them:
 * concurrent updates lose nothing, and each operation gives what C's own gives. */
#define _GNU_SOURCE
#include <complex.h>
#include <math.h>
#include <omp.h>
#include "served.h"

typedef long double ld;
typedef _Complex long double cld;
int __kmpc_global_thread_num(void *);
void __kmpc_atomic_float10_add(void *, int, ld *, ld);
ld __kmpc_atomic_float10_add_cpt(void *, int, ld *, ld, int);
void __kmpc_atomic_float10_sub(void *, int, ld *, ld);
void __kmpc_atomic_float10_mul(void *, int, ld *, ld);
void __kmpc_atomic_float10_div(void *, int, ld *, ld);
void __kmpc_atomic_float10_div_rev(void *, int, ld *, ld);
ld __kmpc_atomic_float10_sub_cpt_rev(void *, int, ld *, ld, int);
ld __kmpc_atomic_float10_max_cpt(void *, int, ld *, ld, int);
void __kmpc_atomic_float10_min(void *, int, ld *, ld);
ld __kmpc_atomic_float10_rd(void *, int, ld *);
void __kmpc_atomic_float10_wr(void *, int, ld *, ld);
ld __kmpc_atomic_float10_swp(void *, int, ld *, ld);
void __kmpc_atomic_cmplx10_add(void *, int, cld *, cld);
cld __kmpc_atomic_cmplx10_mul_cpt(void *, int, cld *, cld, int);
void __kmpc_atomic_cmplx10_div(void *, int, cld *, cld);
cld __kmpc_atomic_cmplx10_div_cpt_rev(void *, int, cld *, cld, int);
cld __kmpc_atomic_cmplx10_sub_cpt(void *, int, cld *, cld, int);
cld __kmpc_atomic_cmplx10_rd(void *, int, cld *);
void __kmpc_atomic_cmplx10_wr(void *, int, cld *, cld);
cld __kmpc_atomic_cmplx10_swp(void *, int, cld *, cld);

#define N 20000

int main(void) {
    served_by_weft();
    ld sum = 0, big = 0;
    cld z = 0;
    int nth = 0, dup = 0;
    static char seen[4 * N];
#pragma omp parallel num_threads(4)
    {
        int g = __kmpc_global_thread_num(NULL);
#pragma omp single
        nth = omp_get_num_threads();
        for (int k = 0; k < N; k++) {
            __kmpc_atomic_float10_add(NULL, g, &sum, 0.25L);
            /* Old values 0, 1, ..., each seen once (exact in 64 mantissa bits). */
            long old = (long)__kmpc_atomic_float10_add_cpt(NULL, g, &big, 1.0L, 0);
            if (seen[old]) dup = 1;
            seen[old] = 1;
            __kmpc_atomic_cmplx10_add(NULL, g, &z, 1.0L - 2.0L * I);
        }
#pragma omp barrier
        __kmpc_atomic_float10_max_cpt(NULL, g, &big, 1e30L, 1);
    }
    CHECK(nth == 4 && !dup);
    CHECK(sum == nth * N * 0.25L);
    CHECK(big == 1e30L);
    CHECK(creall(z) == nth * N && cimagl(z) == -2.0L * nth * N);

    /* Each operation as C computes it (volatile: no constant folding). */
    volatile ld a = 7.0L, b = 3.0L;
    ld x = a;
    __kmpc_atomic_float10_div(NULL, 0, &x, b);
    CHECK(x == a / b && x != (double)a / (double)b);
    x = a;
    __kmpc_atomic_float10_div_rev(NULL, 0, &x, b);
    CHECK(x == b / a);
    x = a;
    CHECK(__kmpc_atomic_float10_sub_cpt_rev(NULL, 0, &x, b, 1) == b - a && x == b - a);
    CHECK(__kmpc_atomic_float10_sub_cpt_rev(NULL, 0, &x, b, 0) == b - a && x == b - (b - a));
    x = a;
    __kmpc_atomic_float10_sub(NULL, 0, &x, b);
    __kmpc_atomic_float10_mul(NULL, 0, &x, b);
    CHECK(x == (a - b) * b);
    __kmpc_atomic_float10_min(NULL, 0, &x, -1.0L);
    CHECK(x == -1.0L);
    __kmpc_atomic_float10_min(NULL, 0, &x, NAN);
    CHECK(x == -1.0L);
    __kmpc_atomic_float10_wr(NULL, 0, &x, a);
    CHECK(__kmpc_atomic_float10_rd(NULL, 0, &x) == a);
    CHECK(__kmpc_atomic_float10_swp(NULL, 0, &x, b) == a && x == b);

    volatile cld p = 1.5L + 2.0L * I, q = -0.5L + 3.0L * I;
    cld w = p;
    cld got = __kmpc_atomic_cmplx10_mul_cpt(NULL, 0, &w, q, 1);
    CHECK(got == p * q && w == p * q);
    w = p;
    __kmpc_atomic_cmplx10_div(NULL, 0, &w, q);
    CHECK(w == p / q);
    w = p;
    got = __kmpc_atomic_cmplx10_div_cpt_rev(NULL, 0, &w, q, 0);
    CHECK(got == p && w == q / p);
    w = p;
    got = __kmpc_atomic_cmplx10_sub_cpt(NULL, 0, &w, q, 1);
    CHECK(got == p - q && w == p - q);
    __kmpc_atomic_cmplx10_wr(NULL, 0, &w, q);
    CHECK(__kmpc_atomic_cmplx10_rd(NULL, 0, &w) == q);
    CHECK(__kmpc_atomic_cmplx10_swp(NULL, 0, &w, p) == q && w == p);
    printf("atomic10 OK\n");
    return 0;
}
