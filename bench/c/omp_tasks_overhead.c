/* The OpenMP peer of Weft's tasks_overhead: the same task graphs written with OpenMP
 * tasks and `depend` clauses, printing the same lines on stderr, so that
 * bench/run_tasks_overhead.sh can compare Weft with GNU libgomp (and later with Weft's
 * own libgomp ABI through LD_PRELOAD).
 *
 *   -i ntasks   number of tasks (default 65536)
 *   -m mode     chain (depend(inout) on one variable, default), fanout (root out, the
 *               others in, a sink inout), independent (no depend clause)
 *
 * One thread creates the tasks inside `single`; the others run them at the barrier.
 * Submission ends when the creating loop ends (libgomp runs tasks itself when too many
 * are queued, so part of the execution may fall in it); execution ends at `taskwait`.
 * Threads: OMP_NUM_THREADS. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The empty task body, opaque to the compiler so that it cannot drop the task. */
__attribute__((noinline)) static void dummy(void)
{
	__asm__ volatile("" ::: "memory");
}

static void usage(const char *prog)
{
	fprintf(stderr, "Usage: %s [-i ntasks] [-m chain|fanout|independent] [-h]\n", prog);
	exit(EXIT_FAILURE);
}

int main(int argc, char **argv)
{
	long ntasks = 65536;
	const char *mode = "chain";
	int c;
	while ((c = getopt(argc, argv, "i:m:h")) != -1)
		switch (c) {
		case 'i': ntasks = atol(optarg); break;
		case 'm': mode = optarg; break;
		default: usage(argv[0]);
		}
	int chain = !strcmp(mode, "chain"), fanout = !strcmp(mode, "fanout");
	if (!chain && !fanout && strcmp(mode, "independent"))
		usage(argv[0]);
	if (ntasks < (fanout ? 3 : 1))
		usage(argv[0]);

	static float x[16];
	(void)x;
	double start = 0, end_submit = 0, end_exec = 0;
	fprintf(stderr, "#tasks : %ld\n#mode : %s\n#threads : %d\n", ntasks, mode,
		omp_get_max_threads());
#pragma omp parallel
#pragma omp single
	{
		start = omp_get_wtime();
		if (chain) {
			for (long i = 0; i < ntasks; i++) {
#pragma omp task depend(inout: x[0])
				dummy();
			}
		} else if (fanout) {
#pragma omp task depend(out: x[0])
			dummy();
			for (long i = 2; i < ntasks; i++) {
#pragma omp task depend(in: x[0])
				dummy();
			}
#pragma omp task depend(inout: x[0])
			dummy();
		} else {
			for (long i = 0; i < ntasks; i++) {
#pragma omp task
				dummy();
			}
		}
		end_submit = omp_get_wtime();
#pragma omp taskwait
		end_exec = omp_get_wtime();
	}
	double submit = (end_submit - start) * 1e6, exec = (end_exec - end_submit) * 1e6;
	fprintf(stderr, "Total submit: %f secs\n", submit / 1e6);
	fprintf(stderr, "Per task submit: %f usecs\n", submit / ntasks);
	fprintf(stderr, "\n");
	fprintf(stderr, "Total execution: %f secs\n", exec / 1e6);
	fprintf(stderr, "Per task execution: %f usecs\n", exec / ntasks);
	fprintf(stderr, "\n");
	fprintf(stderr, "Total: %f secs\n", (submit + exec) / 1e6);
	fprintf(stderr, "Per task: %f usecs\n", (submit + exec) / ntasks);
	return 0;
}
