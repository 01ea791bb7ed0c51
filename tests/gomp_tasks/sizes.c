/* The creator's deferral follows its tasks' size. Two threads; one creates.
 * 1. 200,000 tiny tasks: moving each to the other core costs more than running it, so the
 *    creator runs most of them itself (Weft: all but about one in 64; its earlier builds
 *    let the other thread take 22-47%, libgomp about 30% in one run of five).
 * 2. Then 48 tasks of 2 ms each: deferring pays again, and the other thread runs some of
 *    them (a runtime that kept running them at once would leave it idle).
 * Every task runs exactly once. */
#include "check.h"
#include <omp.h>

int main(void) {
    enum { TINY = 200000, BIG = 48 };
    long ran[2] = {0, 0}, big_ran[2] = {0, 0};
    int creator = -1, nth = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        creator = omp_get_thread_num();
        nth = omp_get_num_threads();
        for (long i = 0; i < TINY; i++) {
#pragma omp task shared(ran)
            {
#pragma omp atomic
                ran[omp_get_thread_num()]++;
            }
        }
        for (int i = 0; i < BIG; i++) {
#pragma omp task shared(big_ran)
            {
                pause_us(2000);
#pragma omp atomic
                big_ran[omp_get_thread_num()]++;
            }
        }
    }
    CHECK(nth == 2);
    CHECK(ran[0] + ran[1] == TINY);
    CHECK(big_ran[0] + big_ran[1] == BIG);
    printf("tiny tasks on the creator: %ld of %d; 2 ms tasks on the other thread: %ld of %d\n", ran[creator], TINY,
           big_ran[1 - creator], BIG);
    CHECK(ran[creator] >= TINY * 8 / 10);
    CHECK(big_ran[1 - creator] >= BIG / 6);
    printf("sizes: ok\n");
    return 0;
}
