/* A program that starts the runtime and never shuts it down (as programs run through the
 * OpenMP or OpenCL front ends do): with WEFT_STATS=1 the runtime's statistics are printed
 * when the process exits, and the performance model its codelet names is saved then.
 * Submits 10 tasks, waits for them, returns from main. */
#include <stdio.h>
#include <weft.h>

static int nothing(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
    return 0;
}

static struct weft_codelet cl = { .name = "nothing", .cpu_func = nothing, .nbuffers = 0, .model = "c_api_nothing" };

int main(void)
{
    if (weft_init() != 0)
        return 1;
    for (int i = 0; i < 10; i++) {
        struct weft_task *t = weft_task_create(&cl);
        if (!t || weft_task_submit(t) != 0) {
            fprintf(stderr, "submitting: %s\n", weft_last_error());
            return 1;
        }
    }
    if (weft_task_wait_for_all() != 0)
        return 1;
    printf("stats_at_exit: submitted 10 tasks\n");
    return 0;
}
