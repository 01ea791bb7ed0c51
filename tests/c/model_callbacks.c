/* A codelet whose performance model has its own footprint and size functions and the
 * non-linear regression kind: tasks of one shape are told apart by their argument `k`
 * (footprint k), and their size is 1000*k, but for k = 3 where the size function returns
 * NaN and the default (bytes of the task's data) is used. The test reads the model file
 * saved at shutdown. A codelet with an unknown model kind fails submission with
 * WEFT_EINVAL. */
#include <math.h>
#include <stdio.h>
#include <weft.h>

#define N 16

static int work(void *buffers[], void *cl_arg)
{
    double *v = (double *)WEFT_VECTOR_GET_PTR(buffers[0]);
    int k = *(const int *)cl_arg;
    for (size_t i = 0; i < WEFT_VECTOR_GET_NX(buffers[0]); i++)
        v[i] += k;
    return 0;
}

static int arg_of(const void *cl_arg, size_t size)
{
    return cl_arg && size == sizeof(int) ? *(const int *)cl_arg : -1;
}

static uint32_t footprint(const struct weft_buffer *buffers, size_t nbuffers, const void *cl_arg, size_t size)
{
    /* Only the shapes are known: no pointer. */
    if (nbuffers != 1 || buffers[0].ptr || buffers[0].nx != N || buffers[0].elemsize != sizeof(double))
        return 0xbad;
    return (uint32_t)arg_of(cl_arg, size);
}

static double size_of_task(const struct weft_buffer *buffers, size_t nbuffers, const void *cl_arg, size_t size)
{
    (void)buffers;
    (void)nbuffers;
    int k = arg_of(cl_arg, size);
    return k == 3 ? NAN : 1000.0 * k;
}

static struct weft_codelet cl = {
    .name = "model_callbacks",
    .cpu_func = work,
    .nbuffers = 1,
    .modes = { WEFT_RW },
    .model = "c_api_model_callbacks",
    .model_kind = WEFT_NL_REGRESSION_BASED,
    .model_size = size_of_task,
    .model_footprint = footprint,
};

static struct weft_codelet bad_kind = { .name = "bad_kind", .cpu_func = work, .nbuffers = 1, .modes = { WEFT_RW }, .model = "c_api_bad_kind", .model_kind = 7 };

int main(void)
{
    static double v[N];
    weft_data_handle h;
    if (weft_init() != 0 || weft_vector_data_register(&h, v, N, sizeof(double)) != 0)
        return 1;
    for (int round = 0; round < 12; round++) {
        for (int k = 1; k <= 3; k++) {
            struct weft_task *t = weft_task_create(&cl);
            if (!t || weft_task_set_handle(t, 0, h) != 0 || weft_task_set_arg(t, &k, sizeof k) != 0 || weft_task_submit(t) != 0) {
                fprintf(stderr, "submitting: %s\n", weft_last_error());
                return 1;
            }
        }
    }
    struct weft_task *t = weft_task_create(&bad_kind);
    int k = 1;
    if (!t || weft_task_set_handle(t, 0, h) != 0 || weft_task_set_arg(t, &k, sizeof k) != 0)
        return 1;
    int rc = weft_task_submit(t);
    if (rc != WEFT_EINVAL) {
        fprintf(stderr, "a bad model kind was accepted (%d)\n", rc);
        return 1;
    }
    printf("bad kind: %s\n", weft_last_error());
    weft_task_destroy(t);
    if (weft_task_wait_for_all() != 0 || weft_data_unregister(h) != 0)
        return 1;
    weft_shutdown();
    /* Every task added 1, 2 and 3 to each element 12 times. */
    if (v[0] != 72.0) {
        fprintf(stderr, "v[0] = %f\n", v[0]);
        return 1;
    }
    printf("model_callbacks: ok\n");
    return 0;
}
