/* The __kmpc_atomic_* entry points, called as a compiler built for libomp calls them (clang
 * 14 itself inlines host atomics or calls libatomic): concurrent updates of each kind lose
 * nothing — integer, float and complex updates, capture, reverse, swap, read/write, a
 * double right-hand side, a misaligned target (the lock), the generic N-byte forms,
 * atomic compare, and atomic_start/end. */
#define _GNU_SOURCE
#include <complex.h>
#include <omp.h>
#include <stdbool.h>
#include "served.h"

typedef struct { float re, im; } cmplx32;
int __kmpc_global_thread_num(void *);
void __kmpc_atomic_fixed4_add(void *, int, int *, int);
int __kmpc_atomic_fixed4_add_cpt(void *, int, int *, int, int);
void __kmpc_atomic_fixed8_sub_rev(void *, int, long *, long);
void __kmpc_atomic_fixed2_add(void *, int, short *, short);
char __kmpc_atomic_fixed1_max_cpt(void *, int, char *, char, int);
void __kmpc_atomic_fixed4u_div(void *, int, unsigned *, unsigned);
void __kmpc_atomic_float8_add(void *, int, double *, double);
double __kmpc_atomic_float8_mul_cpt(void *, int, double *, double, int);
void __kmpc_atomic_float4_add_float8(void *, int, float *, double);
void __kmpc_atomic_fixed4_mul_float8(void *, int, int *, double);
float __kmpc_atomic_float4_min_cpt(void *, int, float *, float, int);
void __kmpc_atomic_cmplx8_add(void *, int, double _Complex *, double _Complex);
double _Complex __kmpc_atomic_cmplx8_mul_cpt(void *, int, double _Complex *, double _Complex, int);
void __kmpc_atomic_cmplx4_add_cpt(void *, int, float _Complex *, float _Complex, float _Complex *, int);
float _Complex __kmpc_atomic_cmplx4_rd(void *, int, float _Complex *);
long __kmpc_atomic_fixed8_swp(void *, int, long *, long);
long __kmpc_atomic_fixed8_rd(void *, int, long *);
void __kmpc_atomic_fixed8_wr(void *, int, long *, long);
void __kmpc_atomic_8(void *, int, void *, void *, void (*)(void *, void *, void *));
void __kmpc_atomic_16(void *, int, void *, void *, void (*)(void *, void *, void *));
bool __kmpc_atomic_bool_4_cas(void *, int, int *, int, int);
long __kmpc_atomic_val_8_cas(void *, int, long *, long, long);
void __kmpc_atomic_start(void);
void __kmpc_atomic_end(void);

struct pair {
    long a, b;
};

/* The compiler's update functions for the generic forms: out = x op rhs. */
static void add_double(void *out, void *x, void *rhs) { *(double *)out = *(double *)x + *(double *)rhs; }
static void add_pair(void *out, void *x, void *rhs) {
    struct pair *o = out, *a = x, *b = rhs;
    o->a = a->a + b->a;
    o->b = a->b + b->b;
}

#define N 20000

int main(void) {
    served_by_weft();
    int i4 = 0, mul = 1, seen_dup = 0, cas = 0;
    static char captured[4 * N];
    long l8 = 0, swapped = 0, rev = 0;
    short s2 = 0;
    char c1 = -100;
    unsigned u4 = 1u << 31;
    double d8 = 0, prod = 1, gen = 0;
    float f4 = 0, fmin = 1e30f;
    double _Complex z8 = 0, zp = 1;
    float _Complex z4 = 0;
    /* A misaligned int: updated under the lock. */
    static char buf[16] __attribute__((aligned(8)));
    int *px = (int *)(buf + 1);
    struct pair pr = {0, 0};
    long double ld = 0;
    int nth = 0;
#pragma omp parallel num_threads(4)
    {
        int g = __kmpc_global_thread_num(NULL);
#pragma omp single
        nth = omp_get_num_threads();
        for (int k = 0; k < N; k++) {
            __kmpc_atomic_fixed4_add(NULL, g, &i4, 1);
            int v = __kmpc_atomic_fixed4_add_cpt(NULL, g, &mul, 1, 0);
            /* Every old value is seen by exactly one update. */
            if (v - 1 < 4 * N) {
                if (captured[v - 1]) seen_dup = 1;
                captured[v - 1] = 1;
            }
            __kmpc_atomic_fixed2_add(NULL, g, &s2, 1);
            __kmpc_atomic_float8_add(NULL, g, &d8, 0.5);
            __kmpc_atomic_float4_add_float8(NULL, g, &f4, 1.0);
            __kmpc_atomic_cmplx8_add(NULL, g, &z8, 1.0 + 2.0 * I);
            float _Complex old4;
            __kmpc_atomic_cmplx4_add_cpt(NULL, g, &z4, 1.0f - 1.0f * I, &old4, 0);
            __kmpc_atomic_fixed4_add(NULL, g, px, 2);
            double one = 1.0;
            __kmpc_atomic_8(NULL, g, &gen, &one, add_double);
            struct pair inc = {1, 3};
            __kmpc_atomic_16(NULL, g, &pr, &inc, add_pair);
            __kmpc_atomic_fixed8_sub_rev(NULL, g, &rev, 0); /* rev = 0 - rev */
            for (;;) {
                int cur = cas;
                if (__kmpc_atomic_bool_4_cas(NULL, g, &cas, cur, cur + 1)) break;
            }
            for (;;) {
                long cur = __kmpc_atomic_fixed8_rd(NULL, g, &l8);
                if (__kmpc_atomic_val_8_cas(NULL, g, &l8, cur, cur + 3) == cur) break;
            }
            __kmpc_atomic_start();
            ld += 1.0L;
            __kmpc_atomic_end();
        }
        int t = omp_get_thread_num();
        __kmpc_atomic_fixed1_max_cpt(NULL, g, &c1, (char)(10 + t), 1);
        __kmpc_atomic_float4_min_cpt(NULL, g, &fmin, (float)(5 - t), 1);
#pragma omp barrier
        if (t < 3) __kmpc_atomic_float8_mul_cpt(NULL, g, &prod, 2.0, 1);
        __kmpc_atomic_cmplx8_mul_cpt(NULL, g, &zp, 1.0 * I, 1); /* four quarter turns */
        long mine = __kmpc_atomic_fixed8_swp(NULL, g, &swapped, t + 1);
#pragma omp atomic
        rev += mine; /* the swapped-out values: 0 and three of 1..4 */
    }
    long total = nth * (long)N;
    CHECK(nth == 4);
    CHECK(i4 == total && !seen_dup && mul == total + 1);
    for (long k = 0; k < total; k++) CHECK(captured[k]);
    CHECK(s2 == (short)total);
    CHECK(d8 == total * 0.5 && gen == total);
    CHECK(f4 == (float)total);
    CHECK(creal(z8) == total && cimag(z8) == 2 * total);
    float _Complex z4r = __kmpc_atomic_cmplx4_rd(NULL, 0, &z4);
    CHECK(crealf(z4r) == total && cimagf(z4r) == -total);
    CHECK(*px == 2 * total);
    CHECK(pr.a == total && pr.b == 3 * total);
    CHECK(cas == total && l8 == 3 * total && ld == total);
    CHECK(c1 == 13 && fmin == 2.0f);
    CHECK(prod == 8.0);
    CHECK(creal(zp) == 1.0 && cimag(zp) == 0.0);
    /* rev: 0 - 0 ... stays 0, plus the swapped-out values 0 and three of 1..4 (the last
     * swapper's own value stays in `swapped`). */
    CHECK(rev + swapped == 1 + 2 + 3 + 4);
    __kmpc_atomic_fixed8_wr(NULL, 0, &l8, 7);
    CHECK(l8 == 7);
    int m = 7;
    __kmpc_atomic_fixed4_mul_float8(NULL, 0, &m, 1.5);
    CHECK(m == 10);
    __kmpc_atomic_fixed4u_div(NULL, 0, &u4, 2);
    CHECK(u4 == 1u << 30);
    printf("atomic OK\n");
    return 0;
}
