/* SparseLU with `depend` clauses (BOTS sparselu's matrix and kernels, the task-dependency
 * form of KASTORS): LU of a sparse block matrix, fill-in blocks allocated by the creating
 * thread, LU0/FWD/BDIV/BMOD tasks ordered by their in/inout blocks only. Every block's
 * updates then happen in the sequential order, so the result is checked bit for bit
 * against a sequential run. Usage: sparselu [blocks] [block order] (defaults 50, 64).
 * With SPARSELU_REF_DIR set, the sequential result is kept there (one file per size) and
 * later runs read it: at 16 threads the sequential run took 15 times the parallel one. */
#include "common.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int NB, BS;

/* A zeroed block, its pages touched here, in the creating thread, as BOTS's
 * allocate_clean_block does by writing its zeros. calloc's fresh pages would be first
 * touched inside the BMOD tasks instead, which then time the kernel's page-fault path more
 * than the runtimes: on the 16-core H100 VM, 16 threads faulting on neighbouring blocks
 * contended for a page-table lock (25-30% of all time in some runs, under every runtime,
 * in others none). */
static float *new_block(void) {
    float *p = calloc((size_t)BS * BS, sizeof(float));
    if (!p) abort();
    for (size_t i = 0; i < (size_t)BS * BS; i += 256) ((volatile float *)p)[i] = 0.0f;
    return p;
}

/* The reference file for this size under SPARSELU_REF_DIR, or NULL without one. Each block:
 * a byte (1: present), then its BS·BS floats if present. */
static FILE *ref_file(const char *mode) {
    const char *dir = getenv("SPARSELU_REF_DIR");
    if (!dir || !*dir) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/sparselu-%d-%d.ref", dir, NB, BS);
    return fopen(path, mode);
}

/* Read the reference into S (blocks allocated here); 0 if there is none or it is short. */
static int load_ref(float **S) {
    FILE *f = ref_file("rb");
    if (!f) return 0;
    int ok = 1;
    for (int i = 0; i < NB * NB && ok; i++) {
        int c = fgetc(f);
        if (c == 1) {
            S[i] = new_block();
            ok = fread(S[i], sizeof(float), (size_t)BS * BS, f) == (size_t)BS * BS;
        } else ok = c == 0;
    }
    fclose(f);
    return ok;
}

static void save_ref(float **S) {
    FILE *f = ref_file("wb");
    if (!f) return;
    for (int i = 0; i < NB * NB; i++) {
        fputc(S[i] != NULL, f);
        if (S[i]) fwrite(S[i], sizeof(float), (size_t)BS * BS, f);
    }
    fclose(f);
}

static void genmat(float **M) {
    int init_val = 1325;
    for (int ii = 0; ii < NB; ii++)
        for (int jj = 0; jj < NB; jj++) {
            int null_entry = 0;
            if (ii < jj && ii % 3 != 0) null_entry = 1;
            if (ii > jj && jj % 3 != 0) null_entry = 1;
            if (ii % 2 == 1) null_entry = 1;
            if (jj % 2 == 1) null_entry = 1;
            if (ii == jj || ii == jj - 1 || ii - 1 == jj) null_entry = 0;
            if (null_entry) { M[ii * NB + jj] = NULL; continue; }
            float *p = M[ii * NB + jj] = new_block();
            for (int i = 0; i < BS * BS; i++) {
                init_val = (3125 * init_val) % 65536;
                p[i] = (float)((init_val - 32768.0) / 16384.0);
            }
        }
}

static void lu0(float *d) {
    for (int k = 0; k < BS; k++)
        for (int i = k + 1; i < BS; i++) {
            d[i * BS + k] /= d[k * BS + k];
            for (int j = k + 1; j < BS; j++) d[i * BS + j] -= d[i * BS + k] * d[k * BS + j];
        }
}
static void fwd(const float *d, float *col) {
    for (int k = 0; k < BS; k++)
        for (int i = k + 1; i < BS; i++)
            for (int j = 0; j < BS; j++) col[i * BS + j] -= d[i * BS + k] * col[k * BS + j];
}
static void bdiv(const float *d, float *row) {
    for (int i = 0; i < BS; i++)
        for (int k = 0; k < BS; k++) {
            row[i * BS + k] /= d[k * BS + k];
            for (int j = k + 1; j < BS; j++) row[i * BS + j] -= row[i * BS + k] * d[k * BS + j];
        }
}
static void bmod(const float *row, const float *col, float *inner) {
    for (int i = 0; i < BS; i++)
        for (int j = 0; j < BS; j++) {
            float s = inner[i * BS + j];
            for (int k = 0; k < BS; k++) s -= row[i * BS + k] * col[k * BS + j];
            inner[i * BS + j] = s;
        }
}

static void sparselu(float **M, int tasks) {
#define B(i, j) M[(i) * NB + (j)]
    for (int kk = 0; kk < NB; kk++) {
        float *dk = B(kk, kk);
#pragma omp task depend(inout: dk[0]) firstprivate(dk) if(tasks)
        KT(lu0(dk));
        for (int jj = kk + 1; jj < NB; jj++)
            if (B(kk, jj)) {
                float *c = B(kk, jj);
#pragma omp task depend(in: dk[0]) depend(inout: c[0]) firstprivate(dk, c) if(tasks)
                KT(fwd(dk, c));
            }
        for (int ii = kk + 1; ii < NB; ii++)
            if (B(ii, kk)) {
                float *r = B(ii, kk);
#pragma omp task depend(in: dk[0]) depend(inout: r[0]) firstprivate(dk, r) if(tasks)
                KT(bdiv(dk, r));
            }
        for (int ii = kk + 1; ii < NB; ii++)
            if (B(ii, kk))
                for (int jj = kk + 1; jj < NB; jj++)
                    if (B(kk, jj)) {
                        if (!B(ii, jj)) B(ii, jj) = new_block();
                        float *r = B(ii, kk), *c = B(kk, jj), *in = B(ii, jj);
#pragma omp task depend(in: r[0], c[0]) depend(inout: in[0]) firstprivate(r, c, in) if(tasks)
                        KT(bmod(r, c, in));
                    }
    }
#pragma omp taskwait
}

int main(int argc, char **argv) {
    NB = argc > 1 ? atoi(argv[1]) : 50;
    BS = argc > 2 ? atoi(argv[2]) : 64;
    float **M = calloc((size_t)NB * NB, sizeof(float *)), **S = calloc((size_t)NB * NB, sizeof(float *));
    genmat(M);
    int have_ref = load_ref(S);
    if (!have_ref) {
        for (int i = 0; i < NB * NB; i++) free(S[i]), S[i] = NULL;
        genmat(S);
    }
    warmup();
    double t0 = now();
#pragma omp parallel
#pragma omp single
    sparselu(M, 1);
    double t = now() - t0;
    double outside = kt_outside_ms(t, omp_get_max_threads());
    if (!have_ref) {
        sparselu(S, 0); /* outside any parallel region: the reference */
        save_ref(S);
    }
    int ok = 1;
    for (int i = 0; i < NB * NB && ok; i++)
        if ((M[i] == NULL) != (S[i] == NULL) || (M[i] && memcmp(M[i], S[i], sizeof(float) * BS * BS))) ok = 0;
    char extra[96];
    snprintf(extra, sizeof extra, "blocks=%d bs=%d outside_ms=%.2f", NB, BS, outside);
    return report("sparselu", t, ok, extra);
}
