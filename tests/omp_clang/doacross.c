/* Doacross loops from clang (__kmpc_doacross_init/wait/post/fini): a wavefront over two
 * dimensions where each iteration needs its upper and left neighbours, under static and
 * dynamic schedules and with a negative step. */
#define _GNU_SOURCE
#include <omp.h>
#include "served.h"

#define N 64
static int a[N][N];

int main(void) {
    served_by_weft();
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) a[i][j] = 0;
        int bad = 0;
#pragma omp parallel num_threads(4) reduction(+ : bad)
        {
            if (round == 0) {
#pragma omp for ordered(2) schedule(static, 1)
                for (int i = 0; i < N; i++)
                    for (int j = 0; j < N; j++) {
#pragma omp ordered depend(sink : i - 1, j) depend(sink : i, j - 1)
                        int up = i ? a[i - 1][j] : 0, left = j ? a[i][j - 1] : 0;
                        bad += (i && !up) || (j && !left);
                        a[i][j] = 1 + (up > left ? up : left);
#pragma omp ordered depend(source)
                    }
            } else {
#pragma omp for ordered(2) schedule(dynamic)
                for (int i = N - 1; i >= 0; i--)
                    for (int j = 0; j < N; j++) {
#pragma omp ordered depend(sink : i + 1, j) depend(sink : i, j - 1)
                        int up = i < N - 1 ? a[i + 1][j] : 0, left = j ? a[i][j - 1] : 0;
                        bad += (i < N - 1 && !up) || (j && !left);
                        a[i][j] = 1 + (up > left ? up : left);
#pragma omp ordered depend(source)
                    }
            }
        }
        CHECK(bad == 0);
        CHECK(round == 0 ? a[N - 1][N - 1] == 2 * N - 1 : a[0][N - 1] == 2 * N - 1);
    }
    printf("doacross OK\n");
    return 0;
}
