/* Ping-pong between ranks 0 and 1: the per-message latency (half a round trip of 8 bytes)
 * and the bandwidth (half a round trip of SIZE bytes) that bench/RESULTS.md's projection
 * of the distributed Cholesky to more nodes starts from.
 * Build: mpicc -O2 bench/mpi/pingpong.c -o pingpong; run: mpirun -np 2 ./pingpong [SIZE]. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double half_round_trip(int rank, char *buf, int bytes, int reps) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / reps / 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int big = argc > 1 ? atoi(argv[1]) : 2 << 20;
    if (size < 2 || big <= 0) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 pingpong [SIZE > 0]\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = calloc((size_t)big, 1);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    half_round_trip(rank, buf, 8, 100); /* warm-up */
    double lat = half_round_trip(rank, buf, 8, 2000);
    half_round_trip(rank, buf, big, 3);
    double t = half_round_trip(rank, buf, big, 20);
    if (rank == 0) printf("latency %.2f us, %d bytes in %.1f us: %.2f GB/s\n", lat * 1e6, big, t * 1e6, big / (t - lat) / 1e9);
    free(buf);
    MPI_Finalize();
    return 0;
}
