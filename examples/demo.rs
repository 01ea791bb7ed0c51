//! Weft's main demo (for now): a tiled matrix multiplication C += A·B on every worker of the
//! machine, checked against a plain triple loop, printing how many tasks each worker ran.
//!
//! `cargo run --release --example demo -- [n] [tiles]` (defaults: n = 768, 4×4 tiles).
//! Every OpenCL device found (PoCL here; `WEFT_NOPENCL` limits them) joins in with an
//! OpenCL C kernel, and with `WEFT_NNULL=1` a simulated device too: tiles travel between
//! memory nodes, and the result is still checked.

mod common;

use faer::linalg::matmul::matmul;
use faer::{Accum, Par};
use std::time::Instant;
use weft_core::perfmodel::PerfModel;
use weft_core::{AccessMode, Codelet, Filter, OpenClImpl, Runtime, Shape, TaskBuilder};

/// The same tile product in OpenCL C: one work-item per element of C. Tiles are packed on
/// devices (leading dimension = rows); m, n, k come as by-value arguments.
const GEMM_CL: &str = r#"
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void gemm(__global const double *a, __global const double *b, __global double *c,
                   uint m, uint n, uint k) {
    size_t i = get_global_id(0), j = get_global_id(1);
    double s = c[i + j * m];
    for (uint l = 0; l < k; l++) s += a[i + l * m] * b[l + j * k];
    c[i + j * m] = s;
}
"#;

/// C[i,j] += sum_k A[i,k] B[k,j] on column-major tiles, with faer (single-threaded).
fn gemm_tile(ctx: &weft_core::TaskContext<'_>) -> Result<(), String> {
    let (a, b) = (common::mat::<f64>(ctx.buffer(0)), common::mat::<f64>(ctx.buffer(1)));
    matmul(common::mat_mut::<f64>(ctx.buffer(2)), Accum::Add, a, b, 1.0, Par::Seq);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(768);
    let t = args.get(1).copied().unwrap_or(4);
    let rt = Runtime::from_env()?;
    println!("Weft demo: C += A·B, {n}×{n} doubles in {t}×{t} tiles, policy '{}'", rt.policy_name());
    for w in rt.workers() {
        println!("  worker {:>2}: {:<8} memory node {}{}", w.id, w.name, w.node, w.pu.map(|p| format!(", core {p}")).unwrap_or_default());
    }

    let a: Vec<f64> = (0..n * n).map(|x| ((x * 7) % 13) as f64 - 6.0).collect();
    let b: Vec<f64> = (0..n * n).map(|x| ((x * 5) % 11) as f64 - 5.0).collect();
    let expect = {
        let mut c = vec![0.0f64; n * n];
        for j in 0..n {
            for k in 0..n {
                let bkj = b[k + j * n];
                for i in 0..n {
                    c[i + j * n] += a[i + k * n] * bkj;
                }
            }
        }
        c
    };

    let ha = rt.register_matrix(a, n, n, n)?;
    let hb = rt.register_matrix(b, n, n, n)?;
    let hc = rt.register_matrix(vec![0.0f64; n * n], n, n, n)?;
    let ta = ha.partition(Filter::MatrixTiles { px: t, py: t })?;
    let tb = hb.partition(Filter::MatrixTiles { px: t, py: t })?;
    let tc = hc.partition(Filter::MatrixTiles { px: t, py: t })?;
    let gemm_cl = OpenClImpl::new(GEMM_CL, "gemm").arg_sizes(&[4, 4, 4]).global(|shapes, _| match shapes[2] {
        Shape::Matrix { nx, ny, .. } => vec![nx, ny],
        _ => vec![1],
    });
    let gemm = Codelet::builder("gemm").cpu_and_null(gemm_tile).opencl_impl(gemm_cl).nbuffers(3).model(PerfModel::new("demo_gemm")).build();

    let start = Instant::now();
    for i in 0..t {
        for j in 0..t {
            for k in 0..t {
                let dims = |h: &weft_core::DataHandle| match h.shape() {
                    Shape::Matrix { nx, ny, .. } => (nx as u32, ny as u32),
                    _ => (0, 0),
                };
                let ((m, kk), (_, nn)) = (dims(&ta[i + t * k]), dims(&tb[k + t * j]));
                rt.submit(
                    TaskBuilder::new(&gemm)
                        .access(&ta[i + t * k], AccessMode::R)
                        .access(&tb[k + t * j], AccessMode::R)
                        .access(&tc[i + t * j], AccessMode::RW)
                        .arg([m, nn, kk]),
                )?;
            }
        }
    }
    rt.wait_for_all()?;
    let secs = start.elapsed().as_secs_f64();
    drop((ta, tb, tc));
    let c = hc.into_vec::<f64>()?;
    ha.unregister()?;
    hb.unregister()?;

    let per = rt.tasks_per_worker();
    println!("{} tasks in {:.3} s ({:.2} GFLOP/s)", per.iter().sum::<u64>(), secs, 2.0 * (n as f64).powi(3) / secs / 1e9);
    for (w, count) in rt.workers().iter().zip(&per) {
        println!("  {:<8} ran {:>4} tasks", w.name, count);
    }
    let bad = c.iter().zip(&expect).filter(|(x, y)| x != y).count();
    if bad == 0 {
        println!("result: correct ({} elements checked)", c.len());
        Ok(())
    } else {
        Err(format!("result: {bad} wrong elements").into())
    }
}
