/* The task reduction entry points with the layout before OpenMP 5.0's (kmp_task_red_input_t:
 * no original item, a one-argument initializer), as older compilers call them:
 * __kmpc_task_reduction_init in a taskgroup, __kmpc_task_reduction_modifier_init/_fini on a
 * parallel region, each with tasks that add to __kmpc_task_reduction_get_th_data's copy. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

typedef struct {
    void *shar;
    size_t size;
    void (*init)(void *);
    void (*fini)(void *);
    void (*comb)(void *, void *);
    unsigned flags;
} task_red_input;
int __kmpc_global_thread_num(void *);
void *__kmpc_task_reduction_init(int, int, task_red_input *);
void *__kmpc_task_reduction_modifier_init(void *, int, int, int, task_red_input *);
void __kmpc_task_reduction_modifier_fini(void *, int, int);
void *__kmpc_task_reduction_get_th_data(int, void *, void *);

static int inits;
static void init_sum(void *p) {
    *(long *)p = 0;
#pragma omp atomic
    inits++;
}
static void init_prod(void *p) { *(double *)p = 1; }
static void comb_sum(void *a, void *b) { *(long *)a += *(long *)b; }
static void comb_prod(void *a, void *b) { *(double *)a *= *(double *)b; }

int main(void) {
    served_by_weft();
    omp_set_dynamic(0);
    long s = 5;
    double p = 1;
#pragma omp parallel num_threads(3)
#pragma omp single
#pragma omp taskgroup
    {
        int g = __kmpc_global_thread_num(NULL);
        task_red_input in[2] = {{&s, sizeof s, init_sum, NULL, comb_sum, 0}, {&p, sizeof p, init_prod, NULL, comb_prod, 0}};
        void *tg = __kmpc_task_reduction_init(g, 2, in);
        for (int i = 1; i <= 100; i++) {
#pragma omp task firstprivate(tg, i)
            {
                int gt = __kmpc_global_thread_num(NULL);
                *(long *)__kmpc_task_reduction_get_th_data(gt, tg, &s) += i;
                if (i <= 10) *(double *)__kmpc_task_reduction_get_th_data(gt, NULL, &p) *= 2;
            }
        }
    }
    CHECK(s == 5 + 5050);
    CHECK(p == 1024);
    CHECK(inits == 3); /* one copy per team thread */

    /* The modifier form: the team's threads share the copies. */
    long total = 0;
#pragma omp parallel num_threads(2)
    {
        int g = __kmpc_global_thread_num(NULL);
        long mine = 0;
        task_red_input in = {&mine, sizeof mine, init_sum, NULL, comb_sum, 0};
        void *h = __kmpc_task_reduction_modifier_init(NULL, g, 0, 1, &in);
        for (int i = 1; i <= 10; i++) {
#pragma omp task firstprivate(h, i) shared(mine)
            *(long *)__kmpc_task_reduction_get_th_data(__kmpc_global_thread_num(NULL), h, &mine) += i;
        }
        __kmpc_task_reduction_modifier_fini(NULL, g, 0);
#pragma omp atomic
        total += mine;
    }
    CHECK(total == 2 * 55);
    printf("taskred_old OK\n");
    return 0;
}
