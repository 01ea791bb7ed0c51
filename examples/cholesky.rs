//! Tiled Cholesky factorisation `A = L·Lᵀ` (f64, lower, right-looking), as in StarPU's
//! `examples/cholesky`: for each step `k`, POTRF factors the diagonal tile, TRSM solves
//! the tiles below it, and SYRK/GEMM update the trailing matrix. Tasks only name the tiles
//! they read (R) and update (RW): Weft infers every dependency from those accesses.
//!
//! `cargo run --release --example cholesky -- [n] [tile]` (defaults: n = 1536, tile = 256;
//! `n` must be a multiple of `tile`). `WEFT_NCPU` and `WEFT_NOPENCL` choose the workers.
//!
//! Every codelet has CPU, OpenCL and CUDA implementations: GEMM and SYRK (all but
//! `O(n³/t)` of the flops) register-blocked OpenCL kernels and cuBLAS; TRSM a work-item per
//! row and cuBLAS; POTRF one work-item per tile and cuSOLVER. The matrix is random
//! symmetric plus `n·I` (so positive definite), and the result is checked on the host:
//! `‖L·Lᵀ − A‖_F / ‖A‖_F < 1e-10`.
//!
//! The clock covers submitting the tasks, waiting for them and bringing the matrix home
//! (`unpartition`); GFLOP/s count `n³/3` flops. The first run on a machine also builds the
//! OpenCL program inside it (cached on disk under `WEFT_HOME` for the next runs).

mod common;

use common::{Op, Rng, gemm};
use std::time::Instant;
use weft_core::{AccessMode, Codelet, Filter, OpenClImpl, Runtime, Shape, TaskBuilder, TaskContext};

/// `C −= A·Bᵀ` (GEMM) and `C −= A·Aᵀ` (SYRK, both triangles) on packed column-major
/// tiles: `A` is `m×k`, `B` `n×k`, `C` `m×n`. The blocked kernels compute 8 rows × 4
/// columns of C per work-item (`m % 8 == 0`, `n % 4 == 0`); the `_simple` ones one element.
const CHOLESKY_CL: &str = r#"
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
inline void gemm_nt(__global const double *A, __global const double *B, __global double *C,
                    int m, int n, int k) {
    int i = get_global_id(0) * 8, j = get_global_id(1) * 4;
    double8 c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (int p = 0; p < k; p++) {
        double8 av = vload8(0, A + i + p * m);
        const __global double *bp = B + j + p * n;
        c0 = fma(av, (double8)(bp[0]), c0); c1 = fma(av, (double8)(bp[1]), c1);
        c2 = fma(av, (double8)(bp[2]), c2); c3 = fma(av, (double8)(bp[3]), c3);
    }
    __global double *c = C + i + j * m;
    vstore8(vload8(0, c) - c0, 0, c);
    vstore8(vload8(0, c + m) - c1, 0, c + m);
    vstore8(vload8(0, c + 2 * m) - c2, 0, c + 2 * m);
    vstore8(vload8(0, c + 3 * m) - c3, 0, c + 3 * m);
}

inline void gemm_nt_simple(__global const double *A, __global const double *B, __global double *C,
                           int m, int n, int k) {
    int i = get_global_id(0), j = get_global_id(1);
    double s = 0.0;
    for (int p = 0; p < k; p++) s += A[i + p * m] * B[j + p * n];
    C[i + j * m] -= s;
}

__kernel void dgemm(__global const double *A, __global const double *B, __global double *C,
                    int m, int n, int k) { gemm_nt(A, B, C, m, n, k); }
__kernel void dsyrk(__global const double *A, __global double *C, int m, int k) { gemm_nt(A, A, C, m, m, k); }
__kernel void dgemm_simple(__global const double *A, __global const double *B, __global double *C,
                           int m, int n, int k) { gemm_nt_simple(A, B, C, m, n, k); }
__kernel void dsyrk_simple(__global const double *A, __global double *C, int m, int k) {
    gemm_nt_simple(A, A, C, m, m, k);
}

/* POTRF of an nb×nb tile by one work-item, left-looking as the CPU version; a pivot that is
 * not positive becomes NaN, which the final check reports. */
__kernel void dpotrf(__global double *A, int nb) {
    for (int j = 0; j < nb; j++) {
        for (int p = 0; p < j; p++) {
            double l = A[j + p * nb];
            for (int i = j; i < nb; i++) A[i + j * nb] -= A[i + p * nb] * l;
        }
        double d = A[j + j * nb];
        d = d > 0.0 ? sqrt(d) : NAN;
        A[j + j * nb] = d;
        for (int i = j + 1; i < nb; i++) A[i + j * nb] /= d;
    }
}

/* TRSM: B = B·L⁻ᵀ, one work-item per row of B (m×n; L n×n): rows are independent. */
__kernel void dtrsm(__global const double *L, __global double *B, int m, int n) {
    int i = get_global_id(0);
    for (int j = 0; j < n; j++) {
        double x = B[i + j * m];
        for (int p = 0; p < j; p++) x -= B[i + p * m] * L[j + p * n];
        B[i + j * m] = x / L[j + j * n];
    }
}
"#;

/// POTRF: the diagonal tile, in place, by columns (left-looking); its upper triangle is
/// left as it was (only the lower one is ever read).
fn potrf_cpu(ctx: &TaskContext<'_>) -> Result<(), String> {
    common::update::<f64, _>(ctx.buffer(0), true, |a, nb, _| {
        for j in 0..nb {
            let (done, rest) = a.split_at_mut(j * nb);
            let col = &mut rest[j..nb];
            for p in 0..j {
                let l = done[j + p * nb];
                for (x, y) in col.iter_mut().zip(&done[j + p * nb..(p + 1) * nb]) {
                    *x -= y * l;
                }
            }
            // Not `d <= 0.0`: a NaN must fail too.
            let d = col[0];
            let positive = d > 0.0;
            if !positive {
                return Err(format!("matrix not positive definite (pivot {d} in a diagonal tile, column {j})"));
            }
            let d = d.sqrt();
            col[0] = d;
            for x in &mut col[1..] {
                *x /= d;
            }
        }
        Ok(())
    })
}

/// TRSM: `X = B·L⁻ᵀ` in place of `B` (the tile below the diagonal), `L` the factored
/// diagonal tile: column `j` of `X` is `(B(:,j) − Σ_{p<j} X(:,p)·L(j,p)) / L(j,j)`.
fn trsm_cpu(ctx: &TaskContext<'_>) -> Result<(), String> {
    let (l, nb, _) = common::load::<f64>(ctx.buffer(0));
    common::update::<f64, _>(ctx.buffer(1), true, |b, m, n| {
        for j in 0..n {
            let (done, rest) = b.split_at_mut(j * m);
            let col = &mut rest[..m];
            for p in 0..j {
                let ljp = l[j + p * nb];
                for (x, y) in col.iter_mut().zip(&done[p * m..(p + 1) * m]) {
                    *x -= y * ljp;
                }
            }
            let d = l[j + j * nb];
            for x in col.iter_mut() {
                *x /= d;
            }
        }
    });
    Ok(())
}

/// SYRK: `C −= A·Aᵀ` on a diagonal tile (both triangles: the kernel is a GEMM).
fn syrk_cpu(ctx: &TaskContext<'_>) -> Result<(), String> {
    let (a, m, k) = common::load::<f64>(ctx.buffer(0));
    common::update::<f64, _>(ctx.buffer(1), true, |c, _, _| gemm::<f64, 8>(m, m, k, -1.0, &a, m, Op::t(&a, m), 1.0, c, m));
    Ok(())
}

/// GEMM: `C −= A·Bᵀ`.
fn gemm_cpu(ctx: &TaskContext<'_>) -> Result<(), String> {
    let (a, m, k) = common::load::<f64>(ctx.buffer(0));
    let (b, n, _) = common::load::<f64>(ctx.buffer(1));
    common::update::<f64, _>(ctx.buffer(2), true, |c, _, _| gemm::<f64, 8>(m, n, k, -1.0, &a, m, Op::t(&b, n), 1.0, c, m));
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(1536);
    let tile = args.get(1).copied().unwrap_or(256);
    if n == 0 || tile == 0 || !n.is_multiple_of(tile) {
        return Err(format!("usage: cholesky [n] [tile]: n ({n}) must be a positive multiple of tile ({tile})").into());
    }
    run(&Runtime::from_env()?, n, tile)
}

/// The example on `rt`'s workers (`tests/examples.rs` calls it with its own runtimes).
pub fn run(rt: &Runtime, n: usize, nb: usize) -> Result<(), Box<dyn std::error::Error>> {
    let t = n / nb;
    println!("Weft cholesky: A = L·Lᵀ, {n}×{n} doubles in {t}×{t} tiles of {nb}, policy '{}'", rt.policy_name());
    common::print_workers(rt);

    // Random symmetric, plus n·I: strictly diagonally dominant, so positive definite.
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut a0 = vec![0f64; n * n];
    for j in 0..n {
        for i in j..n {
            let x = rng.next_f64() + if i == j { n as f64 } else { 0.0 };
            a0[i + j * n] = x;
            a0[j + i * n] = x;
        }
    }

    let ha = rt.register_matrix(a0.clone(), n, n, n)?;
    let tiles = ha.partition(Filter::MatrixTiles { px: t, py: t })?;
    let at = |i: usize, j: usize| &tiles[i + t * j];

    let blocked = nb.is_multiple_of(8);
    let kernel = |name: &str| if blocked { name.to_string() } else { format!("{name}_simple") };
    let global = move |c: &Shape| {
        let [m, n, _] = c.dims();
        if blocked { vec![m / 8, n / 4] } else { vec![m, n] }
    };
    let gemm_cl = OpenClImpl::new(CHOLESKY_CL, kernel("dgemm")).arg_sizes(&[4, 4, 4]).global(move |s, _| global(&s[2]));
    let syrk_cl = OpenClImpl::new(CHOLESKY_CL, kernel("dsyrk")).arg_sizes(&[4, 4]).global(move |s, _| global(&s[1]));
    // CUDA implementations use cuBLAS (GEMM with Bᵀ for both GEMM and SYRK, which updates
    // both triangles here; TRSM) and cuSOLVER (POTRF). POTRF on OpenCL is one work-item
    // per tile: correct everywhere, fast nowhere; it is O(nb³/3) per step against the
    // O(t·nb³) of the updates. (CUDA's was too, an NVRTC kernel: on an H100 it made the
    // GPU alone take 15.5 s for n = 4096 in tiles of 512, 1.5 GFLOP/s.)
    let potrf_cl = OpenClImpl::new(CHOLESKY_CL, "dpotrf").arg_sizes(&[4]).global(|_, _| vec![1]);
    let trsm_cl = OpenClImpl::new(CHOLESKY_CL, "dtrsm").arg_sizes(&[4, 4]).global(|s, _| vec![s[1].dims()[0]]);
    let potrf = Codelet::builder("potrf")
        .cpu(potrf_cpu)
        .opencl_impl(potrf_cl)
        .cuda_fn(common::cublas::dpotrf_lower)
        .modes(&[AccessMode::RW])
        .build();
    let trsm = Codelet::builder("trsm")
        .cpu(trsm_cpu)
        .opencl_impl(trsm_cl)
        .cuda_fn(common::cublas::dtrsm_right_lower_t)
        .modes(&[AccessMode::R, AccessMode::RW])
        .build();
    let syrk = Codelet::builder("syrk")
        .cpu(syrk_cpu)
        .opencl_impl(syrk_cl)
        .cuda_fn(|ctx| common::cublas::dgemm(ctx, [0, 0, 1], true, -1.0, 1.0))
        .modes(&[AccessMode::R, AccessMode::RW])
        .build();
    let dgemm = Codelet::builder("gemm")
        .cpu(gemm_cpu)
        .opencl_impl(gemm_cl)
        .cuda_fn(|ctx| common::cublas::dgemm(ctx, [0, 1, 2], true, -1.0, 1.0))
        .modes(&[AccessMode::R, AccessMode::R, AccessMode::RW])
        .build();

    let b = nb as u32;
    let start = Instant::now();
    for k in 0..t {
        // Priorities as in StarPU's example: the critical path (the next panel) first.
        let prio = |base: usize| (2 * (t - k) + base) as i32;
        rt.submit(TaskBuilder::new(&potrf).access(at(k, k), AccessMode::RW).arg(b).priority(prio(2)))?;
        for i in k + 1..t {
            rt.submit(
                TaskBuilder::new(&trsm).access(at(k, k), AccessMode::R).access(at(i, k), AccessMode::RW).arg([b, b]).priority(prio(1)),
            )?;
        }
        for i in k + 1..t {
            let next = if i == k + 1 { 1 } else { 0 };
            rt.submit(
                TaskBuilder::new(&syrk).access(at(i, k), AccessMode::R).access(at(i, i), AccessMode::RW).arg([b, b]).priority(prio(next)),
            )?;
            for j in k + 1..i {
                rt.submit(
                    TaskBuilder::new(&dgemm)
                        .access(at(i, k), AccessMode::R)
                        .access(at(j, k), AccessMode::R)
                        .access(at(i, j), AccessMode::RW)
                        .arg([b, b, b])
                        .priority(prio(if j == k + 1 { 1 } else { 0 })),
                )?;
            }
        }
    }
    rt.wait_for_all()?;
    ha.unpartition()?;
    let secs = start.elapsed().as_secs_f64();
    drop(tiles);
    let mut l = ha.into_vec::<f64>()?;

    common::print_stats(rt, (n as f64).powi(3) / 3.0, secs);
    // ‖L·Lᵀ − A‖_F / ‖A‖_F with L the lower triangle of the result.
    for j in 0..n {
        l[j * n..j * n + j].fill(0.0);
    }
    let mut llt = vec![0f64; n * n];
    gemm::<f64, 8>(n, n, n, 1.0, &l, n, Op::t(&l, n), 0.0, &mut llt, n);
    let diff = llt.iter().zip(&a0).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
    let norm = a0.iter().map(|x| x * x).sum::<f64>().sqrt();
    let err = diff / norm;
    if err < 1e-10 {
        println!("result: correct (‖L·Lᵀ − A‖/‖A‖ = {err:.2e})");
        Ok(())
    } else {
        Err(format!("result: wrong, ‖L·Lᵀ − A‖/‖A‖ = {err:.2e}").into())
    }
}
