//! Tiled Cholesky factorisation `A = L·Lᵀ` (lower, right-looking) in double or single
//! precision, as in StarPU's `examples/cholesky` (whose `cholesky_implicit` is this
//! program in single precision): for each step `k`, POTRF factors the diagonal tile, TRSM
//! solves the tiles below it, and SYRK/GEMM update the trailing matrix. Tasks only name the
//! tiles they read (R) and update (RW): Weft infers every dependency from those accesses.
//!
//! `cargo run --release --example cholesky -- [n] [tile] [--f32]` (defaults: n = 1536,
//! tile = 256, f64; `n` must be a multiple of `tile`). `WEFT_NCPU` and `WEFT_NOPENCL`
//! choose the workers.
//!
//! Every codelet has CPU, OpenCL and CUDA implementations: on CPU workers faer (OpenBLAS
//! with the `openblas` feature), in place on the tiles, single-threaded (SYRK updates the
//! lower triangle only); on OpenCL devices,
//! OpenCL C built for the precision (`-DREAL=float|double`): GEMM and SYRK (all but
//! `O(n³/t)` of the flops) register-blocked kernels updating whole tiles, TRSM a
//! work-item per row, POTRF one work-item per tile; on CUDA GPUs cuBLAS (GEMM, TRSM) and
//! cuSOLVER (POTRF) in the `S` or `D` variant. Only lower triangles are ever read. The
//! matrix is random symmetric plus `n·I` (so positive definite), column-major with its
//! leading dimension padded to an odd number of cache lines, and the result is checked
//! on the host in f64: `‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F` below 1e-10 (f64) or 1e-4 (f32).
//!
//! The clock covers submitting the tasks, waiting for them and bringing the matrix home
//! (`unpartition`); GFLOP/s count `n³/3` flops, as StarPU's. The first run on a machine
//! also builds the OpenCL program inside it (cached on disk under `WEFT_HOME` for the next
//! runs).

mod common;

use common::Real;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, Par};
use std::time::Instant;
use weft_core::perfmodel::PerfModel;
use weft_core::{AccessMode, Codelet, Filter, OpenClImpl, Runtime, Shape, TaskBuilder};

/// `C −= A·Bᵀ` (GEMM) and `C −= A·Aᵀ` (SYRK, both triangles) on packed column-major
/// tiles of `REAL` (a build option): `A` is `m×k`, `B` `n×k`, `C` `m×n`. The blocked
/// kernels compute 8 rows × 4 columns of C per work-item (`m % 8 == 0`, `n % 4 == 0`);
/// the `_simple` ones one element.
const CHOLESKY_CL: &str = r#"
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define CAT(t, n) t##n
#define VEC(t, n) CAT(t, n)
#define REAL8 VEC(REAL, 8)

inline void gemm_nt(__global const REAL *A, __global const REAL *B, __global REAL *C,
                    int m, int n, int k) {
    int i = get_global_id(0) * 8, j = get_global_id(1) * 4;
    REAL8 c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (int p = 0; p < k; p++) {
        REAL8 av = vload8(0, A + i + p * m);
        const __global REAL *bp = B + j + p * n;
        c0 = fma(av, (REAL8)(bp[0]), c0); c1 = fma(av, (REAL8)(bp[1]), c1);
        c2 = fma(av, (REAL8)(bp[2]), c2); c3 = fma(av, (REAL8)(bp[3]), c3);
    }
    __global REAL *c = C + i + j * m;
    vstore8(vload8(0, c) - c0, 0, c);
    vstore8(vload8(0, c + m) - c1, 0, c + m);
    vstore8(vload8(0, c + 2 * m) - c2, 0, c + 2 * m);
    vstore8(vload8(0, c + 3 * m) - c3, 0, c + 3 * m);
}

inline void gemm_nt_simple(__global const REAL *A, __global const REAL *B, __global REAL *C,
                           int m, int n, int k) {
    int i = get_global_id(0), j = get_global_id(1);
    REAL s = 0;
    for (int p = 0; p < k; p++) s += A[i + p * m] * B[j + p * n];
    C[i + j * m] -= s;
}

__kernel void gemm(__global const REAL *A, __global const REAL *B, __global REAL *C,
                   int m, int n, int k) { gemm_nt(A, B, C, m, n, k); }
__kernel void syrk(__global const REAL *A, __global REAL *C, int m, int k) { gemm_nt(A, A, C, m, m, k); }
__kernel void gemm_simple(__global const REAL *A, __global const REAL *B, __global REAL *C,
                          int m, int n, int k) { gemm_nt_simple(A, B, C, m, n, k); }
__kernel void syrk_simple(__global const REAL *A, __global REAL *C, int m, int k) {
    gemm_nt_simple(A, A, C, m, m, k);
}

/* POTRF of an nb×nb tile by one work-item, left-looking; a pivot that is not positive
 * becomes NaN, which the final check reports. */
__kernel void potrf(__global REAL *A, int nb) {
    for (int j = 0; j < nb; j++) {
        for (int p = 0; p < j; p++) {
            REAL l = A[j + p * nb];
            for (int i = j; i < nb; i++) A[i + j * nb] -= A[i + p * nb] * l;
        }
        REAL d = A[j + j * nb];
        d = d > 0 ? sqrt(d) : NAN;
        A[j + j * nb] = d;
        for (int i = j + 1; i < nb; i++) A[i + j * nb] /= d;
    }
}

/* TRSM: B = B·L⁻ᵀ, one work-item per row of B (m×n; L n×n): rows are independent. */
__kernel void trsm(__global const REAL *L, __global REAL *B, int m, int n) {
    int i = get_global_id(0);
    for (int j = 0; j < n; j++) {
        REAL x = B[i + j * m];
        for (int p = 0; p < j; p++) x -= B[i + p * m] * L[j + p * n];
        B[i + j * m] = x / L[j + j * n];
    }
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: cholesky [n] [tile] [--f32]";
    let (mut sizes, mut single) = (Vec::new(), false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--f32" => single = true,
            _ => sizes.push(a.parse::<usize>().map_err(|_| format!("{usage}: unexpected '{a}'"))?),
        }
    }
    let n = sizes.first().copied().unwrap_or(1536);
    let tile = sizes.get(1).copied().unwrap_or(256);
    if n == 0 || tile == 0 || !n.is_multiple_of(tile) || sizes.len() > 2 {
        return Err(format!("{usage}: n ({n}) must be a positive multiple of tile ({tile})").into());
    }
    let rt = Runtime::from_env()?;
    if single { run::<f32>(&rt, n, tile) } else { run::<f64>(&rt, n, tile) }
}

/// Elements between the starts of two columns of an `n`-order matrix of `elem`-byte
/// elements: `n` rounded up to whole 64-byte lines, plus one line when that makes an even
/// number of lines. With a power-of-two column stride (every `n` the benchmarks use) a
/// tile's columns fall into a few cache sets and evict each other; an odd number of lines
/// spreads them over all sets (LAPACK users pad `lda` for the same reason).
fn leading_dimension(n: usize, elem: usize) -> usize {
    let per_line = (64 / elem).max(1);
    let lines = n.div_ceil(per_line);
    (lines + 1 - lines % 2) * per_line
}

/// The example in precision `T` on `rt`'s workers (`tests/examples.rs` calls it with its
/// own runtimes).
pub fn run<T: Real>(rt: &Runtime, n: usize, nb: usize) -> Result<(), Box<dyn std::error::Error>> {
    let t = n / nb;
    #[cfg(feature = "openblas")]
    let kernels = {
        common::openblas::single_threaded();
        "OpenBLAS"
    };
    #[cfg(not(feature = "openblas"))]
    let kernels = "faer";
    println!("Weft cholesky: A = L·Lᵀ, {n}×{n} {}s in {t}×{t} tiles of {nb}, policy '{}', CPU kernels {kernels}", T::CL, rt.policy_name());
    common::print_workers(rt);

    // Random symmetric, plus n·I: strictly diagonally dominant, so positive definite.
    let ld = leading_dimension(n, size_of::<T>());
    let mut rng = common::Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut a0 = vec![T::from_f64(0.0); ld * n];
    for j in 0..n {
        for i in j..n {
            let x = T::from_f64(rng.next_f64() + if i == j { n as f64 } else { 0.0 });
            a0[i + j * ld] = x;
            a0[j + i * ld] = x;
        }
    }

    let ha = rt.register_matrix(a0.clone(), n, n, ld)?;
    let tiles = ha.partition(Filter::MatrixTiles { px: t, py: t })?;
    let at = |i: usize, j: usize| &tiles[i + t * j];

    let blocked = nb.is_multiple_of(8);
    let options = format!("-DREAL={}", T::CL);
    let cl = |name: &str| {
        let kernel = if !blocked && matches!(name, "gemm" | "syrk") { format!("{name}_simple") } else { name.to_string() };
        OpenClImpl::new(CHOLESKY_CL, kernel).options(options.clone())
    };
    let global = move |c: &Shape| {
        let [m, n, _] = c.dims();
        if blocked { vec![m / 8, n / 4] } else { vec![m, n] }
    };
    let gemm_cl = cl("gemm").arg_sizes(&[4, 4, 4]).global(move |s, _| global(&s[2]));
    let syrk_cl = cl("syrk").arg_sizes(&[4, 4]).global(move |s, _| global(&s[1]));
    // CUDA implementations use cuBLAS (GEMM with Bᵀ for both GEMM and SYRK, which updates
    // both triangles there; TRSM) and cuSOLVER (POTRF). POTRF on OpenCL is one work-item
    // per tile: correct everywhere, fast nowhere; it is O(nb³/3) per step against the
    // O(t·nb³) of the updates. (CUDA's was too, an NVRTC kernel: on an H100 it made the
    // GPU alone take 15.5 s for n = 4096 in tiles of 512, 1.5 GFLOP/s.)
    let potrf_cl = cl("potrf").arg_sizes(&[4]).global(|_, _| vec![1]);
    let trsm_cl = cl("trsm").arg_sizes(&[4, 4]).global(|s, _| vec![s[1].dims()[0]]);
    let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
    let potrf = Codelet::builder("potrf")
        .cpu(common::tiles::potrf::<T>)
        .opencl_impl(potrf_cl)
        .cuda_fn(common::cublas::potrf_lower::<T>)
        .modes(&[AccessMode::RW])
        .model(PerfModel::new("cholesky_potrf"))
        .build();
    let trsm = Codelet::builder("trsm")
        .cpu(common::tiles::trsm::<T>)
        .opencl_impl(trsm_cl)
        .cuda_fn(common::cublas::trsm_right_lower_t::<T>)
        .modes(&[AccessMode::R, AccessMode::RW])
        .model(PerfModel::new("cholesky_trsm"))
        .build();
    let syrk = Codelet::builder("syrk")
        .cpu(common::tiles::syrk::<T>)
        .opencl_impl(syrk_cl)
        .cuda_fn(move |ctx| common::cublas::gemm(ctx, [0, 0, 1], true, minus_one, one))
        .modes(&[AccessMode::R, AccessMode::RW])
        .model(PerfModel::new("cholesky_syrk"))
        .build();
    let gemm = Codelet::builder("gemm")
        .cpu(common::tiles::gemm::<T>)
        .opencl_impl(gemm_cl)
        .cuda_fn(move |ctx| common::cublas::gemm(ctx, [0, 1, 2], true, minus_one, one))
        .modes(&[AccessMode::R, AccessMode::R, AccessMode::RW])
        .model(PerfModel::new("cholesky_gemm"))
        .build();

    let b = nb as u32;
    let start = Instant::now();
    for k in 0..t {
        // Every POTRF above any other task: it runs right after the update of its tile, on
        // a warm tile, not behind the previous step's other updates. Then the next panel
        // (its TRSMs and the updates it needs first) above the rest of a step, whose
        // updates keep their submission order among equals: consecutive ones share an
        // operand tile.
        let prio = |base: usize| (2 * (t - k) + base) as i32;
        rt.submit(TaskBuilder::new(&potrf).access(at(k, k), AccessMode::RW).arg(b).priority((2 * t + 2) as i32))?;
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
                    TaskBuilder::new(&gemm)
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
    let l = ha.into_vec::<T>()?;

    common::print_stats(rt, (n as f64).powi(3) / 3.0, secs);
    // ‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F in f64, L the lower triangle of the result (the
    // lower triangles hold all of A, which is symmetric, and of L·Lᵀ).
    let lower = |m: &[T]| Mat::<f64>::from_fn(n, n, |i, j| if i >= j { m[i + j * ld].to_f64() } else { 0.0 });
    let (l, a0) = (lower(&l), lower(&a0));
    let mut r = -&a0;
    let tril = BlockStructure::TriangularLower;
    triangular::matmul(r.as_mut(), tril, Accum::Add, l.as_ref(), tril, l.transpose(), BlockStructure::TriangularUpper, 1.0, Par::Seq);
    let err = r.norm_l2() / a0.norm_l2();
    // f32 keeps 24 bits: its rounding errors, summed over n terms, are ~1e-6 here.
    let tolerance = if size_of::<T>() == 4 { 1e-4 } else { 1e-10 };
    if err < tolerance {
        println!("result: correct (‖L·Lᵀ − A‖/‖A‖ = {err:.2e})");
        Ok(())
    } else {
        Err(format!("result: wrong, ‖L·Lᵀ − A‖/‖A‖ = {err:.2e} (tolerance {tolerance:.0e})").into())
    }
}
