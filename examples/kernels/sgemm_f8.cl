/* Register-blocked SGEMM for PoCL (float8): one work-item computes 16 rows x 4 columns
 * of C. Column-major packed tiles: A is m x k, B k x n, C m x n; C = beta*C + A*B.
 * Used by examples/sgemm.rs and bench/src/bin/sgemm_opencl.rs. */
__kernel void sgemm(__global const float *A, __global const float *B, __global float *C,
                    int m, int n, int k, float beta) {
    int i = get_global_id(0) * 16;
    int j = get_global_id(1) * 4;
    const __global float *a = A + i;
    const __global float *b0 = B + j * k;
    const __global float *b1 = b0 + k;
    const __global float *b2 = b1 + k;
    const __global float *b3 = b2 + k;
    float8 c0 = 0, c1 = 0, c2 = 0, c3 = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    for (int p = 0; p < k; p++) {
        float8 av = vload8(0, a + p * m);
        float8 aw = vload8(1, a + p * m);
        float s0 = b0[p], s1 = b1[p], s2 = b2[p], s3 = b3[p];
        c0 = fma(av, (float8)(s0), c0); c1 = fma(av, (float8)(s1), c1);
        c2 = fma(av, (float8)(s2), c2); c3 = fma(av, (float8)(s3), c3);
        d0 = fma(aw, (float8)(s0), d0); d1 = fma(aw, (float8)(s1), d1);
        d2 = fma(aw, (float8)(s2), d2); d3 = fma(aw, (float8)(s3), d3);
    }
    __global float *c = C + i + j * m;
    if (beta != 0.0f) {
        c0 += beta * vload8(0, c);         d0 += beta * vload8(1, c);
        c1 += beta * vload8(0, c + m);     d1 += beta * vload8(1, c + m);
        c2 += beta * vload8(0, c + 2 * m); d2 += beta * vload8(1, c + 2 * m);
        c3 += beta * vload8(0, c + 3 * m); d3 += beta * vload8(1, c + 3 * m);
    }
    vstore8(c0, 0, c);         vstore8(d0, 1, c);
    vstore8(c1, 0, c + m);     vstore8(d1, 1, c + m);
    vstore8(c2, 0, c + 2 * m); vstore8(d2, 1, c + 2 * m);
    vstore8(c3, 0, c + 3 * m); vstore8(d3, 1, c + 3 * m);
}
