/* A tiled computation: two N x N matrices of doubles (with padded columns) are partitioned
 * into T x T tiles, and each tile goes through a chain of dependent tasks
 *
 *     init A_ij (W)  ->  fill B_ij (W)  ->  A_ij += alpha * B_ij (RW, R)  ->  A_ij *= 2 (RW)
 *
 * which the runtime orders by sequential consistency per tile, while the tiles run in
 * parallel on every worker. Then A is gathered, checked, and the number of tasks each
 * worker ran is printed.
 *
 *   gcc -I include examples/c/tiled.c -L target/debug -lweft -Wl,-rpath,target/debug \
 *       -o tiled && WEFT_NCPU=4 ./tiled
 */
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define N 512
#define LD (N + 3) /* padded columns: tiles must respect the leading dimension */
#define T 4        /* T x T tiles */
#define PAD -7.0   /* the padding must stay untouched */

struct origin {
    size_t x0, y0; /* the tile's first element in the whole matrix */
};

/* A(x, y) = x + y * N, for the tile whose origin is cl_arg. */
static int init_a(void *buffers[], void *cl_arg)
{
    const struct origin *o = cl_arg;
    double *a = WEFT_MATRIX_GET_PTR(buffers[0]);
    size_t nx = WEFT_MATRIX_GET_NX(buffers[0]), ny = WEFT_MATRIX_GET_NY(buffers[0]);
    size_t ld = WEFT_MATRIX_GET_LD(buffers[0]);
    for (size_t j = 0; j < ny; j++)
        for (size_t i = 0; i < nx; i++)
            a[i + j * ld] = (double)(o->x0 + i) + (double)((o->y0 + j) * N);
    return 0;
}

static int fill_b(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    double *b = WEFT_MATRIX_GET_PTR(buffers[0]);
    size_t nx = WEFT_MATRIX_GET_NX(buffers[0]), ny = WEFT_MATRIX_GET_NY(buffers[0]);
    size_t ld = WEFT_MATRIX_GET_LD(buffers[0]);
    for (size_t j = 0; j < ny; j++)
        for (size_t i = 0; i < nx; i++)
            b[i + j * ld] = 1.0;
    return 0;
}

/* A += alpha * B */
static int axpy(void *buffers[], void *cl_arg)
{
    double alpha = *(const double *)cl_arg;
    double *a = WEFT_MATRIX_GET_PTR(buffers[0]);
    const double *b = WEFT_MATRIX_GET_PTR(buffers[1]);
    size_t nx = WEFT_MATRIX_GET_NX(buffers[0]), ny = WEFT_MATRIX_GET_NY(buffers[0]);
    size_t lda = WEFT_MATRIX_GET_LD(buffers[0]), ldb = WEFT_MATRIX_GET_LD(buffers[1]);
    for (size_t j = 0; j < ny; j++)
        for (size_t i = 0; i < nx; i++)
            a[i + j * lda] += alpha * b[i + j * ldb];
    return 0;
}

static int twice(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    double *a = WEFT_MATRIX_GET_PTR(buffers[0]);
    size_t nx = WEFT_MATRIX_GET_NX(buffers[0]), ny = WEFT_MATRIX_GET_NY(buffers[0]);
    size_t ld = WEFT_MATRIX_GET_LD(buffers[0]);
    for (size_t j = 0; j < ny; j++)
        for (size_t i = 0; i < nx; i++)
            a[i + j * ld] *= 2.0;
    return 0;
}

static struct weft_codelet init_cl = {.name = "init_a", .cpu_func = init_a, .nbuffers = 1, .modes = {WEFT_W}};
static struct weft_codelet fill_cl = {.name = "fill_b", .cpu_func = fill_b, .nbuffers = 1, .modes = {WEFT_W}};
static struct weft_codelet axpy_cl = {.name = "axpy", .cpu_func = axpy, .nbuffers = 2, .modes = {WEFT_RW, WEFT_R}};
static struct weft_codelet twice_cl = {.name = "twice", .cpu_func = twice, .nbuffers = 1, .modes = {WEFT_RW}};

/* Completion callback: counts the tasks that completed (runs on workers). */
static unsigned long completed;
static void count_completed(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&completed, 1, __ATOMIC_RELAXED);
}

#define CHECK(call)                                                              \
    do {                                                                         \
        int rc_ = (call);                                                        \
        if (rc_ != 0) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__,   \
                    #call, weft_strerror(rc_), weft_last_error());               \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void submit(struct weft_codelet *cl, weft_data_handle h0, weft_data_handle h1,
                   const void *arg, size_t arg_size)
{
    struct weft_task *t = weft_task_create(cl);
    if (!t) {
        fprintf(stderr, "weft_task_create: %s\n", weft_last_error());
        exit(1);
    }
    CHECK(weft_task_set_handle(t, 0, h0));
    if (h1)
        CHECK(weft_task_set_handle(t, 1, h1));
    if (arg)
        CHECK(weft_task_set_arg(t, arg, arg_size));
    CHECK(weft_task_set_callback(t, count_completed, NULL));
    CHECK(weft_task_submit(t));
}

int main(void)
{
    double *a = malloc(sizeof(double) * LD * N);
    double *b = malloc(sizeof(double) * LD * N);
    if (!a || !b)
        return 1;
    for (size_t k = 0; k < (size_t)LD * N; k++)
        a[k] = b[k] = PAD;
    const double alpha = 0.5;

    CHECK(weft_init());
    weft_data_handle ha, hb, ta[T * T], tb[T * T];
    CHECK(weft_matrix_data_register(&ha, a, LD, N, N, sizeof(double)));
    CHECK(weft_matrix_data_register(&hb, b, LD, N, N, sizeof(double)));
    CHECK(weft_data_partition(ha, WEFT_FILTER_MATRIX_TILES, T, T, ta));
    CHECK(weft_data_partition(hb, WEFT_FILTER_MATRIX_TILES, T, T, tb));

    /* Tile (i, j) is child i + T * j; with N divisible by T each is N/T x N/T. */
    int ntasks = 0;
    for (size_t j = 0; j < T; j++)
        for (size_t i = 0; i < T; i++) {
            size_t t = i + T * j;
            struct origin o = {i * (N / T), j * (N / T)};
            submit(&init_cl, ta[t], NULL, &o, sizeof(o));
            submit(&fill_cl, tb[t], NULL, NULL, 0);
            submit(&axpy_cl, ta[t], tb[t], &alpha, sizeof(alpha));
            submit(&twice_cl, ta[t], NULL, NULL, 0);
            ntasks += 4;
        }

    CHECK(weft_task_wait_for_all());
    CHECK(weft_data_unpartition(ha)); /* the tile handles are freed */
    CHECK(weft_data_unpartition(hb));

    /* Read A through an acquisition while it is still registered. */
    CHECK(weft_data_acquire(ha, WEFT_R));
    int bad = 0;
    for (size_t y = 0; y < N && !bad; y++)
        for (size_t x = 0; x < LD; x++) {
            double want = x < N ? 2.0 * ((double)x + (double)(y * N) + alpha) : PAD;
            if (a[x + y * LD] != want) {
                fprintf(stderr, "A(%zu, %zu) = %g, expected %g\n", x, y, a[x + y * LD], want);
                bad = 1;
                break;
            }
        }
    CHECK(weft_data_release(ha));
    CHECK(weft_data_unregister(ha));
    CHECK(weft_data_unregister(hb));

    unsigned nworkers = weft_worker_count();
    unsigned long long total = 0;
    for (unsigned w = 0; w < nworkers; w++) {
        unsigned long long n = weft_worker_task_count(w);
        printf("worker %u ran %llu tasks\n", w, n);
        total += n;
    }
    weft_shutdown();
    free(a);
    free(b);

    if (bad)
        return 1;
    if (total != (unsigned long long)ntasks || completed != (unsigned long)ntasks) {
        fprintf(stderr, "%d tasks submitted, %llu run by workers, %lu callbacks\n", ntasks,
                total, completed);
        return 1;
    }
    printf("tiled: %d tasks on %d tiles of a %dx%d matrix: ok\n", ntasks, T * T, N, N);
    return 0;
}
