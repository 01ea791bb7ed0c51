/* Scale a vector of floats by a factor, in one task: the "hello world" of StarPU
 * (examples/basic_examples/vector_scal.c) written against Weft's C API.
 *
 * Build and run against libweft.so (cargo build -p weft):
 *   gcc -I include examples/c/vector_scale.c -L target/debug -lweft \
 *       -Wl,-rpath,target/debug -o vector_scale && WEFT_NCPU=2 ./vector_scale
 */
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define NX 100000

/* The CPU implementation: buffers[0] is the vector, cl_arg a copy of the factor. */
static int scal_cpu(void *buffers[], void *cl_arg)
{
    float factor = *(const float *)cl_arg;
    float *v = WEFT_VECTOR_GET_PTR(buffers[0]);
    size_t n = WEFT_VECTOR_GET_NX(buffers[0]);
    for (size_t i = 0; i < n; i++)
        v[i] *= factor;
    return 0;
}

static struct weft_codelet scal_cl = {
    .name = "vector_scale",
    .cpu_func = scal_cpu,
    .nbuffers = 1,
    .modes = { WEFT_RW },
};

#define CHECK(call)                                                              \
    do {                                                                         \
        int rc_ = (call);                                                        \
        if (rc_ != 0) {                                                          \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, weft_strerror(rc_),  \
                    weft_last_error());                                          \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void)
{
    static float vector[NX];
    for (size_t i = 0; i < NX; i++)
        vector[i] = (float)i;
    float factor = 3.14f;

    CHECK(weft_init());

    weft_data_handle h;
    CHECK(weft_vector_data_register(&h, vector, NX, sizeof(vector[0])));

    struct weft_task *task = weft_task_create(&scal_cl);
    if (!task) {
        fprintf(stderr, "weft_task_create failed: %s\n", weft_last_error());
        return 1;
    }
    CHECK(weft_task_set_handle(task, 0, h));
    CHECK(weft_task_set_arg(task, &factor, sizeof(factor)));
    CHECK(weft_task_submit(task)); /* detached: the runtime frees it */

    /* Waits for the task and writes the result back into `vector`. */
    CHECK(weft_data_unregister(h));
    weft_shutdown();

    for (size_t i = 0; i < NX; i++) {
        float expected = (float)i * factor;
        if (vector[i] != expected) {
            fprintf(stderr, "vector[%zu] = %f, expected %f\n", i, vector[i], expected);
            return 1;
        }
    }
    printf("vector_scale: %d elements scaled by %.2f: ok\n", NX, factor);
    return 0;
}
