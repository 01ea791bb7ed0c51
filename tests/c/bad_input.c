/* Bad input to the C API: every call must return the documented error code with a
 * message, never crash or hang. Run by tests/c_api.rs; prints "bad_input: N checks passed". */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <weft.h>

static int checks, failures;

/* `call` must return `code`; a failure must leave a message containing `needle`. */
#define EXPECT_MSG(call, code, needle)                                                     \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        const char *msg_ = weft_last_error();                                              \
        checks++;                                                                          \
        if (rc_ != (code)) {                                                               \
            fprintf(stderr, "line %d: %s returned %d (%s), expected %d\n", __LINE__,       \
                    #call, rc_, msg_, (int)(code));                                        \
            failures++;                                                                    \
        } else if ((code) != 0 && (msg_ == NULL || msg_[0] == '\0' ||                      \
                                   strstr(msg_, (needle)) == NULL)) {                      \
            fprintf(stderr, "line %d: %s: message \"%s\" lacks \"%s\"\n", __LINE__, #call, \
                    msg_ ? msg_ : "(null)", (needle));                                     \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)
#define EXPECT(call, code) EXPECT_MSG(call, code, "")
#define TRUE(cond)                                                                         \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "line %d: %s is false (last error: %s)\n", __LINE__, #cond,     \
                    weft_last_error());                                                    \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static int inc(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    int *v = WEFT_VECTOR_GET_PTR(buffers[0]);
    for (size_t i = 0; i < WEFT_VECTOR_GET_NX(buffers[0]); i++)
        v[i] += 1;
    return 0;
}

static int fails(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
    return 7;
}

/* Waiting from inside a task would deadlock: the API must say so. */
static int inner_wait_rc = 1;
static int waits_inside(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
    inner_wait_rc = weft_task_wait_for_all();
    return 0;
}

static struct weft_codelet inc_cl = {.name = "inc", .cpu_func = inc, .nbuffers = 1, .modes = {WEFT_RW}};
static struct weft_codelet nofunc_cl = {.name = "nofunc", .cpu_func = NULL, .nbuffers = 1, .modes = {WEFT_RW}};
static struct weft_codelet nomode_cl = {.name = "nomode", .cpu_func = inc, .nbuffers = 1};
static struct weft_codelet toomany_cl = {.name = "toomany", .cpu_func = inc, .nbuffers = WEFT_NMAXBUFS + 1};
static struct weft_codelet fails_cl = {.name = "fails", .cpu_func = fails, .nbuffers = 1, .modes = {WEFT_RW}};
static struct weft_codelet waits_cl = {.name = "waits", .cpu_func = waits_inside, .nbuffers = 0};

int main(void)
{
    int v[16] = {0}, other = 0;
    weft_data_handle h = NULL, out = (weft_data_handle)&other;

    /* --- before weft_init ---------------------------------------------------------- */
    EXPECT_MSG(weft_task_wait_for_all(), WEFT_ENOTINIT, "weft_init");
    EXPECT(weft_vector_data_register(&h, v, 16, sizeof(int)), WEFT_ENOTINIT);
    TRUE(weft_worker_count() == 0);

    EXPECT(weft_init(), 0);
    TRUE(weft_worker_count() >= 1);
    TRUE(weft_worker_task_count(100000) == 0);

    /* --- registration: NULL pointers and zero sizes --------------------------------- */
    EXPECT_MSG(weft_vector_data_register(NULL, v, 16, sizeof(int)), WEFT_EINVAL, "out");
    EXPECT_MSG(weft_vector_data_register(&out, NULL, 16, sizeof(int)), WEFT_EINVAL, "ptr");
    TRUE(out == NULL);
    EXPECT_MSG(weft_vector_data_register(&out, v, 0, sizeof(int)), WEFT_EINVAL, "nx");
    EXPECT_MSG(weft_vector_data_register(&out, v, 16, 0), WEFT_EINVAL, "elemsize");
    EXPECT_MSG(weft_matrix_data_register(&out, v, 2, 4, 4, sizeof(int)), WEFT_EINVAL, "ld");
    EXPECT_MSG(weft_matrix_data_register(&out, v, 4, 4, 0, sizeof(int)), WEFT_EINVAL, "ny");
    EXPECT_MSG(weft_block_data_register(&out, v, 2, 4, 2, 2, 0, sizeof(int)), WEFT_EINVAL, "nz");
    EXPECT_MSG(weft_variable_data_register(&out, &other, 0), WEFT_EINVAL, "size");
    EXPECT_MSG(weft_vector_data_register(&out, v, SIZE_MAX / 2, 4), WEFT_EINVAL, "overflow");

    EXPECT(weft_vector_data_register(&h, v, 16, sizeof(int)), 0);
    TRUE(h != NULL);
    TRUE(weft_data_get_size(h) == sizeof(v));

    /* --- NULL and bogus handles ----------------------------------------------------- */
    uint64_t junk[8] = {0};
    weft_data_handle bogus = (weft_data_handle)junk;
    EXPECT_MSG(weft_data_unregister(NULL), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_data_acquire(NULL, WEFT_R), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_data_release(NULL), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_data_unregister(bogus), WEFT_EINVAL, "not a valid");
    EXPECT_MSG(weft_data_acquire(bogus, WEFT_RW), WEFT_EINVAL, "not a valid");
    TRUE(weft_data_get_size(NULL) == 0);
    TRUE(weft_data_get_local_ptr(h) == NULL);

    /* --- lookup ----------------------------------------------------------------------- */
    TRUE(weft_data_lookup(v) == h);
    TRUE(weft_data_lookup(&v[10]) == h);
    TRUE(weft_data_lookup(NULL) == NULL);
    TRUE(weft_data_lookup(junk) == NULL);

    /* --- acquire/release misuse ------------------------------------------------------- */
    EXPECT_MSG(weft_data_acquire(h, 42), WEFT_EINVAL, "mode");
    EXPECT_MSG(weft_data_acquire(h, WEFT_SCRATCH), WEFT_EINVAL, "mode");
    EXPECT_MSG(weft_data_release(h), WEFT_EINVAL, "not acquired");
    EXPECT(weft_data_acquire(h, WEFT_RW), 0);
    TRUE(weft_data_get_local_ptr(h) == (void *)v);
    EXPECT_MSG(weft_data_acquire(h, WEFT_R), WEFT_EDEADLK, "release");
    EXPECT_MSG(weft_data_unregister(h), WEFT_EDEADLK, "release");
    EXPECT(weft_data_release(h), 0);
    EXPECT(weft_data_acquire(h, WEFT_R), 0);
    EXPECT(weft_data_acquire(h, WEFT_R), 0); /* two readers on one thread are fine */
    EXPECT(weft_data_release(h), 0);
    EXPECT(weft_data_release(h), 0);

    /* --- partitioning misuse ---------------------------------------------------------- */
    weft_data_handle parts[4];
    EXPECT_MSG(weft_data_partition(h, 99, 2, 0, parts), WEFT_EINVAL, "filter");
    EXPECT_MSG(weft_data_partition(h, WEFT_FILTER_VECTOR_BLOCK, 2, 0, NULL), WEFT_EINVAL, "children");
    EXPECT_MSG(weft_data_partition(h, WEFT_FILTER_VECTOR_BLOCK, 0, 0, parts), WEFT_EINVAL, "0 parts");
    EXPECT_MSG(weft_data_partition(h, WEFT_FILTER_VECTOR_BLOCK, 2, 2, parts), WEFT_EINVAL, "nparts_y");
    EXPECT_MSG(weft_data_partition(h, WEFT_FILTER_MATRIX_TILES, 2, 2, parts), WEFT_EINVAL, "Vector");
    EXPECT(weft_data_partition(h, WEFT_FILTER_VECTOR_BLOCK, 4, 0, parts), 0);
    EXPECT_MSG(weft_data_unregister(parts[0]), WEFT_ENOTSUP, "unpartition");
    /* holding a child: the parent cannot be acquired nor unpartitioned by this thread */
    EXPECT(weft_data_acquire(parts[1], WEFT_RW), 0);
    EXPECT_MSG(weft_data_acquire(h, WEFT_R), WEFT_EDEADLK, "release");
    EXPECT_MSG(weft_data_unpartition(h), WEFT_EDEADLK, "release");
    EXPECT_MSG(weft_data_unregister(h), WEFT_EDEADLK, "release");
    EXPECT(weft_data_release(parts[1]), 0);
    /* and the other way round */
    EXPECT(weft_data_acquire(h, WEFT_R), 0);
    EXPECT(weft_data_acquire(parts[2], WEFT_R), 0);
    EXPECT_MSG(weft_data_acquire(parts[3], WEFT_W), WEFT_EDEADLK, "release");
    EXPECT(weft_data_release(parts[2]), 0);
    EXPECT(weft_data_release(h), 0);
    EXPECT(weft_data_unpartition(h), 0);

    /* --- tasks: NULL task, arguments --------------------------------------------------- */
    EXPECT_MSG(weft_task_submit(NULL), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_task_set_arg(NULL, &other, 4), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_task_wait(NULL), WEFT_EINVAL, "NULL");
    weft_task_destroy(NULL); /* ignored */

    struct weft_task *t = weft_task_create(&inc_cl);
    TRUE(t != NULL);
    EXPECT_MSG(weft_task_set_arg(t, NULL, 4), WEFT_EINVAL, "arg");
    EXPECT_MSG(weft_task_set_handle(t, 0, NULL), WEFT_EINVAL, "NULL");
    EXPECT_MSG(weft_task_set_handle(t, 0, bogus), WEFT_EINVAL, "not a valid");
    EXPECT_MSG(weft_task_set_handle_mode(t, 0, h, 1234), WEFT_EINVAL, "mode");
    /* one kind of object for another */
    EXPECT_MSG(weft_data_acquire((weft_data_handle)t, WEFT_R), WEFT_EINVAL, "not a valid");
    EXPECT_MSG(weft_task_submit((struct weft_task *)h), WEFT_EINVAL, "not a valid");
    /* too many buffers */
    EXPECT_MSG(weft_task_set_handle(t, 1, h), WEFT_EBUFCOUNT, "inc");
    EXPECT_MSG(weft_task_set_handle_mode(t, 3, h, WEFT_R), WEFT_EBUFCOUNT, "inc");
    /* too few buffers */
    EXPECT_MSG(weft_task_submit(t), WEFT_EBUFCOUNT, "inc");
    EXPECT_MSG(weft_task_wait(t), WEFT_EINVAL, "not submitted");
    weft_task_destroy(t);

    /* NULL cpu_func: no worker can run it */
    t = weft_task_create(&nofunc_cl);
    EXPECT(weft_task_set_handle(t, 0, h), 0);
    EXPECT_MSG(weft_task_submit(t), WEFT_ENODEV, "nofunc");
    EXPECT_MSG(weft_task_submit_sync(t), WEFT_ENODEV, "cpu_func");
    weft_task_destroy(t);

    /* no mode declared for buffer 0 */
    t = weft_task_create(&nomode_cl);
    EXPECT(weft_task_set_handle(t, 0, h), 0);
    EXPECT_MSG(weft_task_submit(t), WEFT_EINVAL, "modes[0]");
    /* fixed by an explicit mode, then submitted for real */
    EXPECT(weft_task_set_handle_mode(t, 0, h, WEFT_RW), 0);
    EXPECT(weft_task_submit_sync(t), 0);

    /* nbuffers above WEFT_NMAXBUFS */
    t = weft_task_create(&toomany_cl);
    EXPECT_MSG(weft_task_submit(t), WEFT_EINVAL, "nbuffers");
    weft_task_destroy(t);

    /* a task without codelet cannot access data */
    t = weft_task_create(NULL);
    EXPECT_MSG(weft_task_set_handle(t, 0, h), WEFT_EINVAL, "codelet");
    EXPECT(weft_task_submit(t), 0);

    /* --- tags ----------------------------------------------------------------------------- */
    t = weft_task_create(NULL);
    weft_tag_t self = 5;
    EXPECT(weft_task_set_tag(t, 5), 0);
    EXPECT_MSG(weft_task_declare_deps_tags(t, 1, NULL), WEFT_EINVAL, "tags");
    EXPECT(weft_task_declare_deps_tags(t, 1, &self), 0);
    EXPECT_MSG(weft_task_submit(t), WEFT_ECYCLE, "tag 5");
    weft_task_destroy(t);

    /* --- a failing task: its error reaches the waiter, its dependents are cancelled ------ */
    int w[4] = {0};
    weft_data_handle hw;
    EXPECT(weft_vector_data_register(&hw, w, 4, sizeof(int)), 0);
    /* The failing task waits for a tag released below, so its dependent is registered
     * before it fails (a task submitted after a failure is not cancelled by it). */
    weft_tag_t gate = 4242;
    t = weft_task_create(&fails_cl);
    EXPECT(weft_task_set_handle(t, 0, hw), 0);
    EXPECT(weft_task_set_detach(t, 0), 0);
    EXPECT(weft_task_declare_deps_tags(t, 1, &gate), 0);
    EXPECT(weft_task_submit(t), 0);
    EXPECT_MSG(weft_task_submit(t), WEFT_EINVAL, "already submitted");
    struct weft_task *dep = weft_task_create(&inc_cl);
    EXPECT(weft_task_set_handle(dep, 0, hw), 0);
    EXPECT(weft_task_set_detach(dep, 0), 0);
    EXPECT(weft_task_declare_deps(dep, 1, &t), 0);
    EXPECT(weft_task_submit(dep), 0);
    EXPECT(weft_tag_notify_from_apps(gate), 0);
    EXPECT_MSG(weft_task_wait(t), WEFT_ETASK, "returned 7");
    EXPECT_MSG(weft_task_wait(dep), WEFT_ETASK, "cancelled");
    /* wait_for_all reports them too, once */
    EXPECT_MSG(weft_task_wait_for_all(), WEFT_ETASK, "1 task(s) failed and 1 were cancelled");
    EXPECT(weft_task_wait_for_all(), 0);
    EXPECT(weft_data_unregister(hw), 0);
    TRUE(w[0] == 0 && w[3] == 0);

    /* --- waiting from inside a task --------------------------------------------------------- */
    t = weft_task_create(&waits_cl);
    EXPECT(weft_task_submit_sync(t), 0);
    TRUE(inner_wait_rc == WEFT_EDEADLK);

    /* --- strerror ------------------------------------------------------------------------------ */
    TRUE(strcmp(weft_strerror(WEFT_EINVAL), "invalid argument") == 0);
    TRUE(weft_strerror(12345) != NULL);

    /* --- nested init, and a handle left registered at shutdown ----------------------------- */
    EXPECT(weft_init(), 0);
    weft_shutdown(); /* inner: the runtime keeps running */
    EXPECT(weft_task_wait_for_all(), 0);

    t = weft_task_create(&inc_cl);
    EXPECT(weft_task_set_handle(t, 0, h), 0);
    EXPECT(weft_task_submit(t), 0);
    weft_shutdown(); /* writes v back (with a warning), h stays to be freed */
    EXPECT(weft_task_wait_for_all(), WEFT_ENOTINIT);
    /* v: +1 by the nomode task, +1 by the task just submitted */
    TRUE(v[0] == 2 && v[15] == 2);
    EXPECT(weft_data_unregister(h), 0);

    if (failures) {
        fprintf(stderr, "bad_input: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("bad_input: %d checks passed\n", checks);
    return 0;
}
