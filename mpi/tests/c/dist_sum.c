/* weft-mpi's C API under mpirun (mpi/tests/c_api.rs runs it at 1 and 2 ranks): a
 * distributed sum in StarPU-MPI's model.
 *
 * Rank r owns a vector x[r] of N doubles holding r + 1; every rank registers every vector
 * (the non-owners with a buffer of their own, their cache) and the scalar `sum`, owned by
 * rank 0. The flow, submitted identically by every rank:
 *   1. x[r] *= 2 on each owner (owner computes);
 *   2. sum += Σ x[r][i] for each r, on rank 0 (the owner of sum): x[r] travels from r to 0;
 *   3. x[last] *= 3 on rank 0 (weft_mpi_task_insert_on): the result goes back to its owner;
 *   4. sum migrates to the last rank (weft_mpi_set_owner), which adds 1000 to it there;
 *      weft_mpi_get_data_on_rank brings it back to rank 0.
 * Plus the errors: weft_mpi_init before weft_init, and a task on a handle that was never
 * given to weft_mpi_data_register (refused, never a hang). With `--abort`, the last rank
 * calls weft_mpi_abort while the others wait for it in a barrier; with `--shutdown-first`,
 * weft_shutdown comes before weft_mpi_shutdown.
 *
 * Build: mpicc -std=c11 -I include mpi/tests/c/dist_sum.c -L target/debug -lweft_mpi
 * Run:   WEFT_NCPU=1 mpirun -np 2 --oversubscribe ./dist_sum
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft_mpi.h>

#define N 1000
#define MAX_RANKS 8

static int rank = -1;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        if (rc_ != 0) {                                                                   \
            fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, weft_strerror(rc_), \
                    weft_last_error());                                                   \
            if (rank >= 0)                                                                \
                weft_mpi_abort("a call failed", 1);                                       \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

static int scale_cpu(void *buffers[], void *cl_arg)
{
    double f = *(const double *)cl_arg;
    double *v = WEFT_VECTOR_GET_PTR(buffers[0]);
    size_t n = WEFT_VECTOR_GET_NX(buffers[0]);
    for (size_t i = 0; i < n; i++)
        v[i] *= f;
    return 0;
}

static int accumulate_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    double *s = WEFT_VARIABLE_GET_PTR(buffers[0]);
    const double *v = WEFT_VECTOR_GET_PTR(buffers[1]);
    size_t n = WEFT_VECTOR_GET_NX(buffers[1]);
    for (size_t i = 0; i < n; i++)
        *s += v[i];
    return 0;
}

static int add_cpu(void *buffers[], void *cl_arg)
{
    *(double *)WEFT_VARIABLE_GET_PTR(buffers[0]) += *(const double *)cl_arg;
    return 0;
}

static struct weft_codelet scale_cl = { .name = "scale", .cpu_func = scale_cpu, .nbuffers = 1, .modes = { WEFT_RW } };
static struct weft_codelet accumulate_cl = {
    .name = "accumulate", .cpu_func = accumulate_cpu, .nbuffers = 2, .modes = { WEFT_RW, WEFT_R }
};
static struct weft_codelet add_cl = { .name = "add", .cpu_func = add_cpu, .nbuffers = 1, .modes = { WEFT_RW } };

/* A task of `cl` on handles h[0..n) (the codelet's modes) with a double argument. */
static struct weft_task *task(struct weft_codelet *cl, weft_data_handle *h, unsigned n, double arg)
{
    struct weft_task *t = weft_task_create(cl);
    if (!t)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (weft_task_set_handle(t, i, h[i]) != 0)
            return NULL;
    if (weft_task_set_arg(t, &arg, sizeof arg) != 0)
        return NULL;
    return t;
}

#define TASK(var, ...)                                                                    \
    struct weft_task *var = task(__VA_ARGS__);                                            \
    if (!var) {                                                                           \
        fprintf(stderr, "rank %d: building a task failed: %s\n", rank, weft_last_error()); \
        weft_mpi_abort("task", 1);                                                        \
    }

int main(int argc, char **argv)
{
    /* weft-mpi runs on the runtime of weft_init: not before. */
    int rc = weft_mpi_init();
    if (rc != WEFT_ENOTINIT || weft_mpi_rank() != WEFT_ENOTINIT) {
        fprintf(stderr, "weft_mpi_init before weft_init returned %d, not WEFT_ENOTINIT\n", rc);
        return 1;
    }
    CHECK(weft_init());
    CHECK(weft_mpi_init());
    rank = weft_mpi_rank();
    int size = weft_mpi_size();
    if (size < 1 || size > MAX_RANKS || rank < 0 || rank >= size) {
        fprintf(stderr, "rank %d of %d?\n", rank, size);
        return 1;
    }
    int last = size - 1;

    /* `--abort`: the last rank stops every rank while the others wait in a barrier. */
    if (argc > 1 && strcmp(argv[1], "--abort") == 0) {
        if (rank == last)
            weft_mpi_abort("stopping on purpose", 3);
        weft_mpi_barrier();
        fprintf(stderr, "rank %d: passed the barrier of an aborted job\n", rank);
        return 1;
    }

    /* Every rank registers every vector: the owner its data, the others their cache. */
    static double x[MAX_RANKS][N];
    weft_data_handle hx[MAX_RANKS];
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < N; i++)
            x[r][i] = r == rank ? r + 1 : -1.0; /* -1: a cache never written */
        CHECK(weft_vector_data_register(&hx[r], x[r], N, sizeof(double)));
        CHECK(weft_mpi_data_register(hx[r], r, r));
    }
    double sum = 0.0;
    weft_data_handle hsum;
    CHECK(weft_variable_data_register(&hsum, &sum, sizeof sum));
    CHECK(weft_mpi_data_register(hsum, size, 0));

    /* 1. Owner computes. */
    for (int r = 0; r < size; r++) {
        TASK(t, &scale_cl, &hx[r], 1, 2.0);
        CHECK(weft_mpi_task_insert(t)); /* consumed: not touched again */
    }
    /* 2. On rank 0, receiving each x[r] from its owner. */
    for (int r = 0; r < size; r++) {
        weft_data_handle h[2] = { hsum, hx[r] };
        TASK(t, &accumulate_cl, h, 2, 0.0);
        CHECK(weft_mpi_task_insert(t));
    }
    /* 3. Written away from its owner: goes home afterwards. */
    {
        TASK(t, &scale_cl, &hx[last], 1, 3.0);
        CHECK(weft_mpi_task_insert_on(t, 0));
    }
    for (int r = 0; r < size; r++)
        CHECK(weft_mpi_cache_flush(hx[r]));
    /* 4. Migration there and back. */
    CHECK(weft_mpi_set_owner(hsum, last));
    {
        TASK(t, &add_cl, &hsum, 1, 1000.0);
        CHECK(weft_mpi_task_insert(t));
    }
    CHECK(weft_mpi_get_data_on_rank(hsum, 0));

    /* A handle the runtime knows but weft-mpi does not: refused, and the task stays ours. */
    double y[N];
    weft_data_handle hy;
    CHECK(weft_vector_data_register(&hy, y, N, sizeof(double)));
    {
        TASK(t, &scale_cl, &hy, 1, 2.0);
        rc = weft_mpi_task_insert(t);
        if (rc != WEFT_EUNREGISTERED || !strstr(weft_last_error(), "used before weft_mpi_data_register")) {
            fprintf(stderr, "rank %d: a task on an unregistered handle returned %d (%s)\n", rank, rc, weft_last_error());
            weft_mpi_abort("unregistered handle accepted", 1);
        }
        printf("rank %d: unregistered handle refused: %s\n", rank, weft_last_error());
        weft_task_destroy(t);
    }
    CHECK(weft_data_unregister(hy));

    CHECK(weft_mpi_wait_for_all());

    int failures = 0;
    double want_sum = (double)N * size * (size + 1) + 1000.0; /* Σ_r 2 (r + 1) N, plus 1000 */
    if (rank == 0) {
        CHECK(weft_data_acquire(hsum, WEFT_R));
        if (sum != want_sum) {
            fprintf(stderr, "rank 0: sum = %.1f, expected %.1f\n", sum, want_sum);
            failures++;
        }
        CHECK(weft_data_release(hsum));
        printf("rank 0: sum = %.1f, expected %.1f\n", sum, want_sum);
    }
    if (rank == last) {
        CHECK(weft_data_acquire(hx[last], WEFT_R));
        double want = 6.0 * size;
        for (int i = 0; i < N; i++)
            if (x[last][i] != want) {
                fprintf(stderr, "rank %d: x[%d][%d] = %.1f, expected %.1f\n", rank, last, i, x[last][i], want);
                failures++;
                break;
            }
        CHECK(weft_data_release(hx[last]));
    }

    for (int r = 0; r < size; r++) {
        CHECK(weft_mpi_data_unregister(hx[r]));
        CHECK(weft_data_unregister(hx[r]));
    }
    CHECK(weft_mpi_data_unregister(hsum));
    if (weft_mpi_data_unregister(hsum) != WEFT_EUNREGISTERED) {
        fprintf(stderr, "rank %d: unregistering twice did not give WEFT_EUNREGISTERED\n", rank);
        failures++;
    }
    CHECK(weft_data_unregister(hsum));
    /* The documented order is weft_mpi_shutdown, then weft_shutdown. With
     * `--shutdown-first` the program calls them the other way round: weft-mpi's reference
     * keeps the runtime running until weft_mpi_shutdown, which then stops it. */
    int shutdown_first = argc > 1 && strcmp(argv[1], "--shutdown-first") == 0;
    if (shutdown_first) {
        weft_shutdown();
        CHECK(weft_task_wait_for_all()); /* still running */
    }
    CHECK(weft_mpi_shutdown());
    if (!shutdown_first)
        weft_shutdown();
    if (weft_task_wait_for_all() != WEFT_ENOTINIT) {
        fprintf(stderr, "rank %d: the runtime still runs after both shutdowns\n", rank);
        failures++;
    }
    /* MPI cannot start again once finalized: an error, not a crash. */
    CHECK(weft_init());
    rc = weft_mpi_init();
    if (rc != WEFT_ENOTSUP || !strstr(weft_last_error(), "finalized")) {
        fprintf(stderr, "rank %d: weft_mpi_init after weft_mpi_shutdown returned %d (%s)\n", rank, rc, weft_last_error());
        failures++;
    }
    weft_shutdown();
    if (failures)
        return 1;
    printf("rank %d of %d: ok\n", rank, size);
    return 0;
}
