/* The device memory routines on a runtime without offload devices: the host (the initial
 * device) is a device whose memory is the heap, copies between host pointers work, and a
 * device that does not exist makes the routine fail (NULL, 0 or nonzero) with a message on
 * stderr naming it (Weft) rather than the program failing to load. libgomp without offload
 * plugins behaves the same, without the messages. */
#include <limits.h>
#include <omp.h>
#include <string.h>
#include "check.h"

int main(void) {
    int host = omp_get_initial_device();
    CHECK(omp_get_num_devices() == 0);
    int *p = omp_target_alloc(16 * sizeof(int), host);
    CHECK(p != NULL);
    for (int i = 0; i < 16; i++) p[i] = i;
    CHECK(omp_target_is_present(p, host));
    CHECK(omp_target_is_present(NULL, host));

    /* memcpy with offsets: q[4..8) = p[2..6) */
    int q[16] = {0};
    CHECK(omp_target_memcpy(q, p, 4 * sizeof(int), 4 * sizeof(int), 2 * sizeof(int), host, host) == 0);
    for (int i = 0; i < 16; i++) CHECK(q[i] == (i >= 4 && i < 8 ? i - 2 : 0));

    /* memcpy_rect: the 2x3 block at (1, 2) of a 4x5 array to (0, 1) of a 3x4 one */
    int a[4][5], b[3][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) a[i][j] = 10 * i + j;
    memset(b, 0, sizeof b);
    size_t vol[2] = {2, 3}, doff[2] = {0, 1}, soff[2] = {1, 2}, ddim[2] = {3, 4}, sdim[2] = {4, 5};
    CHECK(omp_target_memcpy_rect(b, a, sizeof(int), 2, vol, doff, soff, ddim, sdim, host, host) == 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            int want = (i < 2 && j >= 1 && j < 4) ? 10 * (i + 1) + (j - 1 + 2) : 0;
            CHECK(b[i][j] == want);
        }
    CHECK(omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, host, host) == INT_MAX);

    /* Associating host memory needs a device. */
    CHECK(omp_target_associate_ptr(q, p, sizeof q, 0, host) != 0);
    CHECK(omp_target_disassociate_ptr(q, host) != 0);
    omp_target_free(p, host);
    omp_target_free(NULL, host);

    /* A device that does not exist. */
    CHECK(omp_target_alloc(64, 5) == NULL);
    CHECK(!omp_target_is_present(q, 5));
    CHECK(omp_target_memcpy(q, a, 4, 0, 0, 5, host) != 0);
    printf("target OK\n");
    return 0;
}
