/* Synchronization from clang: single (nowait, copyprivate), master, masked, critical
 * (unnamed, named, with a hint), barrier, reductions of several kinds (and the method the
 * runtime picks for them: libomp's atomic one in teams of up to 4 when the compiler
 * generated it, else the critical one), atomic, flush, and simple and nestable locks,
 * LLVM's 8-byte omp_nest_lock_t with a canary after it (Weft must write no more than 8
 * bytes into it). */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

/* libomp's ident_t and the reduction entry points, called directly below. */
typedef struct {
    int reserved_1, flags, reserved_2, reserved_3;
    const char *psource;
} ident_t;
int __kmpc_reduce_nowait(ident_t *, int, int, size_t, void *, void (*)(void *, void *), int *);
void __kmpc_end_reduce_nowait(ident_t *, int, int *);
int __kmpc_reduce(ident_t *, int, int, size_t, void *, void (*)(void *, void *), int *);
void __kmpc_end_reduce(ident_t *, int, int *);
/* KMP_IDENT_KMPC, and KMP_IDENT_ATOMIC_REDUCE: the compiler generated the atomic method. */
static ident_t with_atomic = {0, 0x2 | 0x10, 0, 0, ";sync.c;main;1;1;;"};
static ident_t without_atomic = {0, 0x2, 0, 0, ";sync.c;main;1;1;;"};
static void combine(void *a, void *b) { (void)a, (void)b; }

/* In a team of `n`: the method each thread gets for `loc`, all alike (the lock word must
 * be held exactly under the critical method), and whether the blocking form's end, its
 * barrier included, leaves the lock free. Returns the method. */
static int reduce_method(int n, ident_t *loc) {
    static int lck[8];
    int method = -1, differ = 0;
#pragma omp parallel num_threads(n)
    {
        CHECK(omp_get_num_threads() == n);
        int m = __kmpc_reduce_nowait(loc, 0, 1, 8, NULL, combine, lck);
        CHECK(m == 1 || m == 2);
        if (m == 1) {
            CHECK(__atomic_load_n(&lck[0], __ATOMIC_RELAXED) != 0);
            __kmpc_end_reduce_nowait(loc, 0, lck);
        }
#pragma omp critical
        {
            if (method != -1 && method != m) differ = 1;
            method = m;
        }
#pragma omp barrier
        CHECK(__atomic_load_n(&lck[0], __ATOMIC_RELAXED) == 0);
        /* No thread takes the lock again before all have looked at it. */
#pragma omp barrier
        int b = __kmpc_reduce(loc, 0, 1, 8, NULL, combine, lck);
        CHECK(b == m);
        __kmpc_end_reduce(loc, 0, lck);
        CHECK(__atomic_load_n(&lck[0], __ATOMIC_RELAXED) == 0);
    }
    CHECK(!differ);
    return method;
}

int main(void) {
    served_by_weft();
    int singles = 0, masters = 0, masked = 0, crit = 0, named = 0, hinted = 0, bad = 0;
    int phase[4] = {0};
#pragma omp parallel num_threads(4)
    {
        for (int r = 0; r < 50; r++) {
            /* Atomic: a `single nowait` body may run while the next `single`'s does. */
#pragma omp single
            {
#pragma omp atomic
                singles++;
            }
#pragma omp single nowait
            {
#pragma omp atomic
                singles++;
            }
        }
#pragma omp master
        masters++;
#pragma omp masked filter(1)
        masked += omp_get_thread_num();
        for (int r = 0; r < 1000; r++) {
#pragma omp critical
            crit++;
#pragma omp critical(other)
            named++;
#pragma omp critical(hinted) hint(omp_sync_hint_contended)
            hinted++;
        }
        /* Everyone's phase 1 is written before anyone reads it. */
        phase[omp_get_thread_num()] = 1;
#pragma omp barrier
        for (int i = 0; i < 4; i++)
            if (phase[i] != 1) {
#pragma omp atomic
                bad++;
            }
#pragma omp barrier
#pragma omp flush
    }
    CHECK(singles == 100 && masters == 1 && masked == 1);
    CHECK(crit == 4000 && named == 4000 && hinted == 4000 && bad == 0);

    /* copyprivate: every thread gets the value the single thread read. */
    int got[4] = {0};
#pragma omp parallel num_threads(4)
    {
        int v;
#pragma omp single copyprivate(v)
        v = 42 + omp_get_thread_num() * 0;
        got[omp_get_thread_num()] = v;
    }
    for (int i = 0; i < 4; i++) CHECK(got[i] == 42);

    /* Reductions: several variables and operators in one clause, and the blocking form
     * (a loop without nowait). */
    long sum = 0;
    double prod = 1;
    int mx = -1, mn = 1 << 30, land = 1;
#pragma omp parallel num_threads(4) reduction(+ : sum) reduction(* : prod) reduction(max : mx) reduction(min : mn) reduction(&& : land)
    {
        int me = omp_get_thread_num();
        sum += me + 1;
        prod *= 2;
        mx = me > mx ? me : mx;
        mn = me < mn ? me : mn;
        land = land && (me < 4);
    }
    CHECK(sum == 10 && prod == 16 && mx == 3 && mn == 0 && land == 1);
    long total = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp for reduction(+ : total)
        for (int i = 1; i <= 100; i++) total += i;
        CHECK(total == 5050); /* the loop's barrier comes after the combination */
    }
    struct {
        omp_nest_lock_t l;
        unsigned long canary;
    } guarded = {.canary = 0x5eedfaceUL};
    CHECK(sizeof(omp_nest_lock_t) == 8);
    omp_init_nest_lock(&guarded.l);
    int held = 0;
#pragma omp parallel num_threads(4)
    {
        for (int i = 0; i < 100; i++) {
            omp_set_nest_lock(&guarded.l);
            omp_set_nest_lock(&guarded.l);
            held++;
            CHECK(omp_test_nest_lock(&guarded.l) == 3);
            omp_unset_nest_lock(&guarded.l);
            omp_unset_nest_lock(&guarded.l);
            omp_unset_nest_lock(&guarded.l);
        }
    }
    omp_destroy_nest_lock(&guarded.l);
    CHECK(held == 400 && guarded.canary == 0x5eedfaceUL);
    omp_lock_t simple;
    omp_init_lock(&simple);
    int counted = 0;
#pragma omp parallel num_threads(3)
    for (int i = 0; i < 100; i++) {
        omp_set_lock(&simple);
        counted++;
        omp_unset_lock(&simple);
    }
    omp_destroy_lock(&simple);
    CHECK(counted == 300);
    /* The methods: atomic in teams of 2 and 4 when generated, critical otherwise. */
    CHECK(reduce_method(2, &with_atomic) == 2);
    CHECK(reduce_method(4, &with_atomic) == 2);
    CHECK(reduce_method(2, &without_atomic) == 1);
    CHECK(reduce_method(6, &with_atomic) == 1);
    /* Clang's code for both methods, blocking and not, in a team past the cutoff. */
    long big = 0, bigfor = 0;
#pragma omp parallel num_threads(6) reduction(+ : big)
    {
        big += omp_get_thread_num() + 1;
#pragma omp for reduction(+ : bigfor)
        for (int i = 1; i <= 100; i++) bigfor += i;
    }
    CHECK(big == 21 && bigfor == 5050);
    printf("sync OK\n");
    return 0;
}
