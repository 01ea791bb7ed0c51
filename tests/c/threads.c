/* Several application threads use the C API at once: each registers its own vector,
 * submits tasks of a shared codelet, and reads its vector back through an acquisition,
 * while all threads also add into one shared counter with a COMMUTE access.
 * Run by tests/c_api.rs; prints "threads: ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

#define NTHREADS 4
#define NX 1000
#define ROUNDS 50

static int add_one(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    long *v = WEFT_VECTOR_GET_PTR(buffers[0]);
    for (size_t i = 0; i < WEFT_VECTOR_GET_NX(buffers[0]); i++)
        v[i] += 1;
    return 0;
}

static int bump(void *buffers[], void *cl_arg)
{
    long *c = WEFT_VARIABLE_GET_PTR(buffers[0]);
    *c += *(const long *)cl_arg;
    return 0;
}

static struct weft_codelet add_cl = {.name = "add_one", .cpu_func = add_one, .nbuffers = 1, .modes = {WEFT_RW}};
static struct weft_codelet bump_cl = {.name = "bump", .cpu_func = bump, .nbuffers = 1, .modes = {WEFT_RW | WEFT_COMMUTE}};

static weft_data_handle counter;

/* Messages are per thread: report them from the thread that failed. */
static void *fail(long id, const char *what)
{
    fprintf(stderr, "thread %ld: %s: %s\n", id, what, weft_last_error());
    return (void *)1;
}

static void *worker(void *arg)
{
    long id = (long)(size_t)arg;
    long *v = calloc(NX, sizeof(long));
    weft_data_handle h;
    if (!v || weft_vector_data_register(&h, v, NX, sizeof(long)) != 0)
        return fail(id, "register");
    for (int r = 0; r < ROUNDS; r++) {
        struct weft_task *t = weft_task_create(&add_cl);
        if (weft_task_set_handle(t, 0, h) || weft_task_submit(t))
            return fail(id, "add_one");
        t = weft_task_create(&bump_cl);
        if (weft_task_set_handle(t, 0, counter) || weft_task_set_arg(t, &id, sizeof(id)) ||
            weft_task_submit(t))
            return fail(id, "bump");
    }
    if (weft_data_acquire(h, WEFT_R) != 0)
        return fail(id, "acquire");
    int ok = v[0] == ROUNDS && v[NX - 1] == ROUNDS;
    weft_data_release(h);
    if (weft_data_unregister(h) != 0)
        return fail(id, "unregister");
    if (!ok)
        fprintf(stderr, "thread %ld: v[0] = %ld, expected %d\n", id, v[0], ROUNDS);
    free(v);
    return ok ? NULL : (void *)1;
}

int main(void)
{
    static long count;
    if (weft_init() != 0 || weft_variable_data_register(&counter, &count, sizeof(count)) != 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return 1;
    }
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(size_t)(i + 1));
    int bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        if (r)
            bad = 1;
    }
    if (weft_data_unregister(counter) != 0)
        bad = 1;
    weft_shutdown();
    long want = 0;
    for (long i = 1; i <= NTHREADS; i++)
        want += i * ROUNDS;
    if (count != want) {
        fprintf(stderr, "counter = %ld, expected %ld\n", count, want);
        bad = 1;
    }
    if (bad)
        return 1;
    printf("threads: ok\n");
    return 0;
}
