/* ScaLAPACK's pdpotrf, the peer of Weft's distributed Cholesky (weft-mpi's example) in
 * bench/mpi/run.sh: f64, lower, on a 2-D block-cyclic matrix over a P×Q BLACS grid.
 *
 *   mpicc -O2 bench/mpi/pdpotrf.c -o pdpotrf -lscalapack-openmpi
 *   OPENBLAS_NUM_THREADS=1 mpirun -np R ./pdpotrf N NB
 *
 * Needs libscalapack-openmpi-dev (ScaLAPACK with BLACS and PBLAS, on Open MPI; its BLAS
 * and LAPACK are the system's libblas.so.3/liblapack.so.3, OpenBLAS when installed).
 *
 * The grid is P×Q with P the largest divisor of R not above √R (1×1, 1×2, 2×2, 2×3...),
 * row-major; the matrix is N×N in NB×NB blocks dealt block-cyclically over it. Element
 * (i, j) is a hash of (min(i,j), max(i,j)) in [-1, 1), plus N on the diagonal: symmetric,
 * diagonally dominant, so positive definite (eigenvalues within N ± N), like
 * examples/cholesky's matrix. Every rank fills its own blocks; nothing is scattered.
 *
 * One untimed pdpotrf on a copy first (BLACS's buffers, OpenBLAS's start-up, pages), then
 * a barrier and the clock (MPI_Wtime) around one pdpotrf("L"); the time is the slowest
 * rank's. Prints from rank 0
 *   pdpotrf: n N nb NB ranks R (grid PxQ): T s, G GFLOP/s
 * with N³/3 flops, as Weft's examples and StarPU's count.
 *
 * Check: b = A·x0 (x0 = 1), x = pdpotrs(L, b), then the scaled residual
 * ‖A·x − b‖∞ / (‖A‖∞·‖x‖∞·N·ε) (pass below 16, LAPACK's testers' threshold) and
 * ‖x − x0‖∞ (A is well conditioned, so x must be close to 1). Prints
 *   check: residual R, max |x - 1| E: correct
 * or `... : WRONG` and exits 1.
 *
 * Communication: the program defines MPI_Send, MPI_Isend, MPI_Rsend, MPI_Sendrecv,
 * MPI_Bcast, MPI_Reduce and MPI_Allreduce (every sending call libscalapack-openmpi makes),
 * which count and forward to PMPI_*; being in the executable they take the place of Open
 * MPI's for ScaLAPACK's calls. Only calls inside the timed pdpotrf count. With
 * PDPOTRF_STATS=1 every rank prints
 *   pdpotrf rank R: sent B bytes in M messages
 * (the format of weft-mpi's WEFT_MPI_STATS=1). Point-to-point sends count exactly (bytes
 * are MPI_Type_size × count: data, not extent). A collective counts as a flat tree: its
 * root sends the buffer to each other member (size − 1 messages), the others send nothing
 * for a Bcast and once for a Reduce; an Allreduce as a Reduce then a Bcast. Totals over the
 * ranks are then what a tree of any shape moves; the share per rank is the flat tree's. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS's C interface (in libscalapack-openmpi). */
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int icontxt, int what, int *val);
void Cblacs_gridinit(int *icontxt, char *order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int icontxt);
void Cblacs_exit(int notdone);

/* ScaLAPACK (Fortran: the trailing size_t are the hidden lengths of the character
 * arguments) and PBLAS (C behind a Fortran-style name: no hidden lengths). */
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
               const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca,
              int *info, size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb, const int *descb, int *info,
              size_t uplo_len);
double pdlange_(const char *norm, const int *m, const int *n, const double *a, const int *ia, const int *ja,
                const int *desca, double *work, size_t norm_len);
void pdgemv_(const char *trans, const int *m, const int *n, const double *alpha, const double *a, const int *ia,
             const int *ja, const int *desca, const double *x, const int *ix, const int *jx, const int *descx,
             const int *incx, const double *beta, double *y, const int *iy, const int *jy, const int *descy,
             const int *incy);

/* ---- Counting the bytes ScaLAPACK sends ---- */

static int counting;
static unsigned long long sent_bytes, sent_msgs;

static void count(int n, MPI_Datatype t, unsigned long long times) {
    int size = 0;
    if (!counting || times == 0)
        return;
    PMPI_Type_size(t, &size);
    sent_bytes += (unsigned long long)n * (unsigned long long)size * times;
    sent_msgs += times;
}

static int comm_size(MPI_Comm c) {
    int s = 1;
    PMPI_Comm_size(c, &s);
    return s;
}

static int comm_rank(MPI_Comm c) {
    int r = 0;
    PMPI_Comm_rank(c, &r);
    return r;
}

int MPI_Send(const void *buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
    count(n, t, 1);
    return PMPI_Send(buf, n, t, dest, tag, c);
}

int MPI_Isend(const void *buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request *r) {
    count(n, t, 1);
    return PMPI_Isend(buf, n, t, dest, tag, c, r);
}

int MPI_Rsend(const void *buf, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
    count(n, t, 1);
    return PMPI_Rsend(buf, n, t, dest, tag, c);
}

int MPI_Sendrecv(const void *sbuf, int sn, MPI_Datatype st, int dest, int stag, void *rbuf, int rn,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *s) {
    count(sn, st, 1);
    return PMPI_Sendrecv(sbuf, sn, st, dest, stag, rbuf, rn, rt, src, rtag, c, s);
}

int MPI_Bcast(void *buf, int n, MPI_Datatype t, int root, MPI_Comm c) {
    if (comm_rank(c) == root)
        count(n, t, (unsigned long long)comm_size(c) - 1);
    return PMPI_Bcast(buf, n, t, root, c);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
    if (comm_rank(c) != root)
        count(n, t, 1);
    return PMPI_Reduce(sbuf, rbuf, n, t, op, root, c);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    count(n, t, comm_rank(c) == 0 ? (unsigned long long)comm_size(c) - 1 : 1);
    return PMPI_Allreduce(sbuf, rbuf, n, t, op, c);
}

/* ---- The matrix ---- */

/* splitmix64's finaliser. */
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A(i, j), global 0-based indices. */
static double element(int n, int i, int j) {
    uint64_t lo = (uint64_t)(i < j ? i : j), hi = (uint64_t)(i < j ? j : i);
    double x = (double)(mix(lo * 0x9e3779b97f4a7c15ULL + hi + 1) >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
    return i == j ? x + n : x;
}

/* Global index of local index l (0-based) along a dimension dealt in blocks of nb over np
 * processes, on process p (the first block on process 0). */
static int global_index(int l, int nb, int p, int np) {
    return (l / nb * np + p) * nb + l % nb;
}

static void die(const char *msg) {
    fprintf(stderr, "pdpotrf: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    char *end1 = NULL, *end2 = NULL;
    long ln = argc == 3 ? strtol(argv[1], &end1, 10) : 0, lnb = argc == 3 ? strtol(argv[2], &end2, 10) : 0;
    if (argc != 3 || *end1 || *end2 || ln <= 0 || lnb <= 0 || ln > 1000000 || lnb > ln) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np R pdpotrf N NB   (N > 0, 0 < NB <= N)\n");
        MPI_Finalize();
        return 2;
    }
    int n = (int)ln, nb = (int)lnb;
    const char *stats_env = getenv("PDPOTRF_STATS");
    int stats = stats_env && *stats_env && strcmp(stats_env, "0") != 0;

    /* The grid: as square as possible, P <= Q. */
    int nprow = 1;
    for (int p = 1; p * p <= nranks; p++)
        if (nranks % p == 0)
            nprow = p;
    int npcol = nranks / nprow;
    int me, nprocs, ctxt, myrow, mycol;
    Cblacs_pinfo(&me, &nprocs);
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    if (myrow < 0 || mycol < 0)
        die("this rank is not in the BLACS grid");

    const int zero = 0, one = 1;
    int mloc = numroc_(&n, &nb, &myrow, &zero, &nprow);
    int nloc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = mloc > 1 ? mloc : 1, info;
    int desca[9], descv[9];
    descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    if (info != 0)
        die("descinit (matrix) failed");
    /* Vectors: N×1, blocks of NB rows, the column on process column 0. */
    descinit_(descv, &n, &one, &nb, &one, &zero, &zero, &ctxt, &lld, &info);
    if (info != 0)
        die("descinit (vector) failed");

    size_t elems = (size_t)lld * (size_t)(nloc > 0 ? nloc : 1);
    double *a0 = malloc(elems * sizeof *a0), *a = malloc(elems * sizeof *a);
    double *x = calloc((size_t)lld, sizeof *x), *b = calloc((size_t)lld, sizeof *b),
           *r = calloc((size_t)lld, sizeof *r);
    if (!a0 || !a || !x || !b || !r)
        die("out of memory");
    for (int jl = 0; jl < nloc; jl++) {
        int j = global_index(jl, nb, mycol, npcol);
        for (int il = 0; il < mloc; il++)
            a0[il + (size_t)jl * lld] = element(n, global_index(il, nb, myrow, nprow), j);
    }

    /* Untimed factorisation of a copy. */
    memcpy(a, a0, elems * sizeof *a);
    pdpotrf_("L", &n, a, &one, &one, desca, &info, 1);
    if (info != 0)
        die("warm-up pdpotrf failed");

    memcpy(a, a0, elems * sizeof *a);
    MPI_Barrier(MPI_COMM_WORLD);
    counting = 1;
    double t0 = MPI_Wtime();
    pdpotrf_("L", &n, a, &one, &one, desca, &info, 1);
    double mine = MPI_Wtime() - t0;
    counting = 0;
    double secs;
    MPI_Allreduce(&mine, &secs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int worst;
    MPI_Allreduce(&info, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
        if (rank == 0)
            fprintf(stderr, "pdpotrf: info = %d (not positive definite?)\n", worst);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (stats) {
        /* In rank order, one line each, through rank 0. */
        unsigned long long mine2[2] = {sent_bytes, sent_msgs};
        unsigned long long *all = rank == 0 ? malloc(2 * sizeof *all * (size_t)nranks) : NULL;
        MPI_Gather(mine2, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int i = 0; i < nranks; i++)
                printf("pdpotrf rank %d: sent %llu bytes in %llu messages\n", i, all[2 * i], all[2 * i + 1]);
            free(all);
        }
    }
    if (rank == 0)
        printf("pdpotrf: n %d nb %d ranks %d (grid %dx%d): %.6f s, %.2f GFLOP/s\n", n, nb, nranks, nprow, npcol, secs,
               (double)n * n * n / 3.0 / secs / 1e9);

    /* Check: x0 = 1, b = A·x0, x = A⁻¹b through the factor, r = A·x − b. */
    if (mycol == 0)
        for (int il = 0; il < mloc; il++)
            x[il] = 1.0;
    const double done = 1.0, dzero = 0.0, dminus = -1.0;
    pdgemv_("N", &n, &n, &done, a0, &one, &one, desca, x, &one, &one, descv, &one, &dzero, b, &one, &one, descv,
            &one);
    memcpy(x, b, (size_t)lld * sizeof *x);
    memcpy(r, b, (size_t)lld * sizeof *r);
    pdpotrs_("L", &n, &one, a, &one, &one, desca, x, &one, &one, descv, &info, 1);
    if (info != 0)
        die("pdpotrs failed");
    pdgemv_("N", &n, &n, &done, a0, &one, &one, desca, x, &one, &one, descv, &one, &dminus, r, &one, &one, descv,
            &one);
    double *work = malloc((size_t)(mloc > nloc ? mloc : nloc) * sizeof *work + sizeof *work);
    if (!work)
        die("out of memory");
    double anorm = pdlange_("I", &n, &n, a0, &one, &one, desca, work, 1);
    double xnorm = pdlange_("I", &n, &one, x, &one, &one, descv, work, 1);
    double rnorm = pdlange_("I", &n, &one, r, &one, &one, descv, work, 1);
    double err = 0.0;
    if (mycol == 0)
        for (int il = 0; il < mloc; il++)
            err = fmax(err, fabs(x[il] - 1.0));
    double maxerr;
    MPI_Allreduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double resid = rnorm / (anorm * xnorm * n * 2.220446049250313e-16);
    int ok = resid < 16.0 && maxerr < 1e-8;
    if (rank == 0)
        printf("check: residual %.3g, max |x - 1| %.3g: %s\n", resid, maxerr, ok ? "correct" : "WRONG");

    free(work);
    free(r);
    free(b);
    free(x);
    free(a);
    free(a0);
    Cblacs_gridexit(ctxt);
    Cblacs_exit(1);
    MPI_Finalize();
    return ok ? 0 : 1;
}
