//! Weft's main demo (for now): a tiled matrix multiplication C += A·B on every worker of the
//! machine, checked against a plain triple loop, printing how many tasks each worker ran.
//!
//! `cargo run --release --example demo -- [n] [tiles]` (defaults: n = 768, 4×4 tiles).
//! With `WEFT_NNULL=1` a simulated device joins in, with its own memory: tiles travel to
//! it and back, and the result is still checked.

use std::time::Instant;
use weft_core::{AccessMode, Codelet, Filter, Runtime, TaskBuilder};

/// C[i,j] += sum_k A[i,k] B[k,j] on column-major tiles, four output columns at a time.
fn gemm_tile(ctx: &weft_core::TaskContext<'_>) -> Result<(), String> {
    let a = ctx.buffer(0).matrix::<f64>();
    let b = ctx.buffer(1).matrix::<f64>();
    let mut c = ctx.buffer(2).matrix_mut::<f64>();
    for j in 0..c.ny {
        let cj = c.col_mut(j);
        for k in 0..a.ny {
            let bkj = b.get(k, j);
            for (ci, ai) in cj.iter_mut().zip(a.col(k)) {
                *ci += ai * bkj;
            }
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(768);
    let t = args.get(1).copied().unwrap_or(4);
    let rt = Runtime::from_env()?;
    println!("Weft demo: C += A·B, {n}×{n} doubles in {t}×{t} tiles, policy '{}'", rt.policy_name());
    for w in rt.workers() {
        println!("  worker {:>2}: {:<6} memory node {}{}", w.id, w.name, w.node, w.pu.map(|p| format!(", core {p}")).unwrap_or_default());
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
    let gemm = Codelet::builder("gemm").cpu_and_null(gemm_tile).nbuffers(3).build();

    let start = Instant::now();
    for i in 0..t {
        for j in 0..t {
            for k in 0..t {
                rt.submit(
                    TaskBuilder::new(&gemm)
                        .access(&ta[i + t * k], AccessMode::R)
                        .access(&tb[k + t * j], AccessMode::R)
                        .access(&tc[i + t * j], AccessMode::RW),
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
        println!("  {:<6} ran {:>4} tasks", w.name, count);
    }
    let bad = c.iter().zip(&expect).filter(|(x, y)| x != y).count();
    if bad == 0 {
        println!("result: correct ({} elements checked)", c.len());
        Ok(())
    } else {
        Err(format!("result: {bad} wrong elements").into())
    }
}
