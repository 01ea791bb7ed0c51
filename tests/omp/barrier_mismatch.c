/* A barrier only one thread of a team reaches (non-conforming: "each barrier region must be
 * encountered by all threads in a team or by none at all"): thread N (argv[1], default 0).
 * The other thread goes on to the end of the region (under Weft a member docks there, the
 * primary waits at its join), and thread N waits at its barrier for a thread that will not
 * come. libgomp hangs without a word; Weft says which threads are where and aborts. Prints
 * "mismatched" before the region. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int which = argc > 1 ? atoi(argv[1]) : 0;
    printf("mismatched\n");
    fflush(stdout);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == which) {
#pragma omp barrier
        }
    }
    printf("barrier_mismatch (not reached under Weft)\n");
    return 0;
}
