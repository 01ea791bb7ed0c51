//! Tiled SGEMM `C = A·B` (f32) on every worker of the machine: CPU workers run faer's
//! GEMM in place on the tiles (single-threaded), OpenCL devices the `float8`
//! register-blocked kernel of `bench/src/bin/sgemm_opencl.rs`, CUDA GPUs cuBLAS.
//!
//! `cargo run --release --example sgemm -- [n] [tile]` (defaults: n = 1024, tile = 256; `n`
//! must be a multiple of `tile`). `WEFT_NCPU` and `WEFT_NOPENCL` choose the workers, e.g.
//! `POCL_DEVICES="basic basic" WEFT_NOPENCL=2` for two PoCL devices.
//!
//! Task `(i, j, k)` computes `C(i,j) = beta·C(i,j) + A(i,k)·B(k,j)` with `beta = 0` for
//! `k = 0` (the tile is only written, mode W) and 1 after (mode RW): `T³` tasks, ordered on
//! each tile of C by their implicit dependencies. The result is checked with Freivalds'
//! test: `C·x` against `A·(B·x)` for a random `x`, each element within the rounding bound
//! of an `n`-term f32 dot product (O(n²) on the host, so large `n` stay cheap to check).
//!
//! The clock covers submitting the tasks, waiting for them and bringing C home
//! (`unpartition`). The first run on a machine also builds the OpenCL program inside it
//! (Weft caches built programs on disk, under `WEFT_HOME`, for the next runs).

mod common;

use common::Rng;
use faer::linalg::matmul::matmul;
use faer::{Accum, Par};
use std::time::Instant;
use weft_core::perfmodel::PerfModel;
use weft_core::{AccessMode, Codelet, Filter, OpenClImpl, Runtime, TaskBuilder};

/// Column-major tiles, packed (leading dimension = rows): `A` is `m×k`, `B` `k×n`, `C`
/// `m×n`. `sgemm` (from `bench/src/bin/sgemm_opencl.rs`): one work-item computes rows
/// `16·gid0 ..+16` and columns `4·gid1 ..+4` of `C`, so `m % 16 == 0` and `n % 4 == 0`.
/// `sgemm_simple`: one work-item per element of C, for the tile sizes that do not divide.
const SGEMM_CL: &str = concat!(
    include_str!("kernels/sgemm_f8.cl"),
    r#"
__kernel void sgemm_simple(__global const float *A, __global const float *B, __global float *C,
                           int m, int n, int k, float beta) {
    int i = get_global_id(0), j = get_global_id(1);
    float s = 0.0f;
    for (int p = 0; p < k; p++) s += A[i + p * m] * B[p + j * k];
    C[i + j * m] = (beta != 0.0f ? beta * C[i + j * m] : 0.0f) + s;
}
"#
);
/// Rows and columns of C per work-item of `sgemm`.
const RB: usize = 16;
const CB: usize = 4;

/// The task's by-value arguments: tile sizes `m, n, k` and `beta` (as its bits), which the
/// OpenCL kernels receive as `int, int, int, float`.
type Args = [u32; 4];

/// The CPU implementation: the same product with faer. `beta` is 0 (the tile is only
/// written) or 1.
fn sgemm_cpu(ctx: &weft_core::TaskContext<'_>) -> Result<(), String> {
    let [_, _, _, beta] = ctx.arg::<Args>();
    let accum = match f32::from_bits(beta) {
        0.0 => Accum::Replace,
        1.0 => Accum::Add,
        b => return Err(format!("beta = {b}: only 0 and 1 are implemented on CPUs")),
    };
    let (a, b) = (common::mat::<f32>(ctx.buffer(0)), common::mat::<f32>(ctx.buffer(1)));
    matmul(common::mat_mut::<f32>(ctx.buffer(2)), accum, a, b, 1.0, Par::Seq);
    Ok(())
}

/// The CUDA implementation: cuBLAS.
fn sgemm_cuda(ctx: &weft_core::CudaTaskContext<'_>) -> Result<(), String> {
    let [_, _, _, beta] = ctx.arg::<Args>();
    common::cublas::gemm(ctx, [0, 1, 2], false, 1.0, f32::from_bits(beta))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(1024);
    let tile = args.get(1).copied().unwrap_or(256);
    if n == 0 || tile == 0 || !n.is_multiple_of(tile) {
        return Err(format!("usage: sgemm [n] [tile]: n ({n}) must be a positive multiple of tile ({tile})").into());
    }
    run(&Runtime::from_env()?, n, tile)
}

/// The example on `rt`'s workers (`tests/examples.rs` calls it with its own runtimes).
pub fn run(rt: &Runtime, n: usize, tile: usize) -> Result<(), Box<dyn std::error::Error>> {
    let t = n / tile;
    println!("Weft sgemm: C = A·B, {n}×{n} floats in {t}×{t} tiles of {tile}, policy '{}'", rt.policy_name());
    common::print_workers(rt);

    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let a: Vec<f32> = (0..n * n).map(|_| rng.next_f64() as f32).collect();
    let b: Vec<f32> = (0..n * n).map(|_| rng.next_f64() as f32).collect();
    let x: Vec<f64> = (0..n).map(|_| rng.next_f64()).collect();
    // A·(B·x) in f64, and |A|·(|B|·|x|): the scale of each element's rounding error.
    let (ab_x, scale) = {
        let mat_vec = |m: &[f32], v: &[f64], abs: bool| {
            let mut out = vec![0f64; n];
            for (j, &vj) in v.iter().enumerate() {
                for (o, &mij) in out.iter_mut().zip(&m[j * n..(j + 1) * n]) {
                    *o += if abs { f64::from(mij).abs() * vj.abs() } else { f64::from(mij) * vj };
                }
            }
            out
        };
        (mat_vec(&a, &mat_vec(&b, &x, false), false), mat_vec(&a, &mat_vec(&b, &x, true), true))
    };

    let ha = rt.register_matrix(a, n, n, n)?;
    let hb = rt.register_matrix(b, n, n, n)?;
    // NaN: the first task on each tile of C only writes it, so none of this may show through.
    let hc = rt.register_matrix(vec![f32::NAN; n * n], n, n, n)?;
    let tiles = Filter::MatrixTiles { px: t, py: t };
    let (ta, tb, tc) = (ha.partition(tiles)?, hb.partition(tiles)?, hc.partition(tiles)?);

    let blocked = tile.is_multiple_of(RB) && tile.is_multiple_of(CB);
    let cl = OpenClImpl::new(SGEMM_CL, if blocked { "sgemm" } else { "sgemm_simple" }).arg_sizes(&[4, 4, 4, 4]).global(move |shapes, _| {
        let [m, n, _] = shapes[2].dims();
        if blocked { vec![m / RB, n / CB] } else { vec![m, n] }
    });
    let codelet =
        Codelet::builder("sgemm").cpu(sgemm_cpu).opencl_impl(cl).cuda_fn(sgemm_cuda).nbuffers(3).model(PerfModel::new("sgemm")).build();

    let start = Instant::now();
    for j in 0..t {
        for i in 0..t {
            for k in 0..t {
                let (mode, beta) = if k == 0 { (AccessMode::W, 0.0f32) } else { (AccessMode::RW, 1.0) };
                let ts = tile as u32;
                rt.submit(
                    TaskBuilder::new(&codelet)
                        .access(&ta[i + t * k], AccessMode::R)
                        .access(&tb[k + t * j], AccessMode::R)
                        .access(&tc[i + t * j], mode)
                        .arg::<Args>([ts, ts, ts, beta.to_bits()]),
                )?;
            }
        }
    }
    rt.wait_for_all()?;
    hc.unpartition()?;
    let secs = start.elapsed().as_secs_f64();
    drop((ta, tb, tc));
    ha.unpartition()?;
    hb.unpartition()?;
    let c = hc.into_vec::<f32>()?;
    drop((ha, hb));

    common::print_stats(rt, 2.0 * (n as f64).powi(3), secs);
    let bound = 2.0 * n as f64 * f64::from(f32::EPSILON);
    let mut bad = 0;
    for i in 0..n {
        let cx: f64 = (0..n).map(|j| f64::from(c[i + j * n]) * x[j]).sum();
        // Written so that a NaN fails too.
        let ok = (cx - ab_x[i]).abs() <= bound * scale[i] + 1e-30;
        if !ok {
            if bad < 3 {
                eprintln!("(C·x)[{i}] = {cx}, A·(B·x) = {}, tolerance {:e}", ab_x[i], bound * scale[i]);
            }
            bad += 1;
        }
    }
    if bad == 0 {
        println!("result: correct (Freivalds' test, {n} rows of C·x within {bound:.1e}·|A|·|B|·|x|)");
        Ok(())
    } else {
        Err(format!("result: {bad} of {n} rows of C·x wrong").into())
    }
}
