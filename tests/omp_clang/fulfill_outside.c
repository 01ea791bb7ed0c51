/* tests/omp/fulfill_outside.c built by clang: events of detached tasks
 * (__kmpc_task_allow_completion_event) fulfilled by a thread outside every team. */
#define _GNU_SOURCE
#include "served.h"
#define SERVED() served_by_weft()
#include "../omp/fulfill_outside.c"
