//! Distributed tiled Cholesky factorisation `A = L·Lᵀ` (lower, right-looking, double
//! precision, or single with `--f32`, StarPU-MPI's) on weft-mpi, as StarPU-MPI's `mpi_cholesky`: the `t×t` tiles of the lower
//! triangle are spread over the ranks 2-D block-cyclically on a `P×Q` grid (`P·Q` ranks,
//! `P ≤ Q` as square as possible; tile `(i, j)` on rank `(i mod P)·Q + (j mod Q)`); every
//! rank submits the same tasks, each runs where the tile it updates lives, and tiles move
//! between ranks as the tasks need them.
//!
//! `mpirun -np 4 target/release/examples/mpi_cholesky [n] [tile] [--f32] [--check]` (defaults n = 2048,
//! tile = 256). Each rank generates the tiles it owns (a symmetric matrix plus `n·I`, the
//! same whatever the number of ranks). `--check` gathers `L` on rank 0 and compares it with
//! the same tile algorithm run there sequentially, bit for bit, and checks
//! `‖tril(L·Lᵀ − A)‖_F / ‖tril(A)‖_F` below 1e-10 (1e-4 in single precision). The clock covers submitting and waiting
//! for the tasks; GFLOP/s count `n³/3` flops, as StarPU's. Rank 0 prints the results.

#[path = "../../examples/common/mod.rs"]
mod common;

use common::Real;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, Par};
use std::sync::Arc;
use std::time::Instant;
use weft_core::perfmodel::PerfModel;
use weft_core::{AccessMode, Codelet, Runtime, Shape, TaskBuilder};
use weft_mpi::{DistHandle, MpiRuntime, MpiTask};

/// Element `(r, c)` of the matrix (global indices): symmetric, pseudo-random in [0, 1)
/// off the diagonal, plus `n` on it, so positive definite; computable by any rank alone.
fn element(r: usize, c: usize, n: usize) -> f64 {
    let (a, b) = (r.max(c) as u64, r.min(c) as u64);
    let mut x = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f) ^ 0x1656_67b1_9e37_79f9;
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 + if r == c { n as f64 } else { 0.0 }
}

fn tile_data<T: Real>(i: usize, j: usize, nb: usize, n: usize) -> Vec<T> {
    (0..nb * nb).map(|k| T::from_f64(element(i * nb + k % nb, j * nb + k / nb, n))).collect()
}

/// The `P×Q` process grid: `P` the largest divisor of `size` not above its square root.
fn grid(size: usize) -> (usize, usize) {
    let p = (1..=size).take_while(|p| p * p <= size).filter(|p| size.is_multiple_of(*p)).last().unwrap_or(1);
    (p, size / p)
}

struct Codelets {
    potrf: Arc<Codelet>,
    trsm: Arc<Codelet>,
    syrk: Arc<Codelet>,
    gemm: Arc<Codelet>,
}

fn codelets<T: Real>() -> Codelets {
    let cl = |name: &str, f: fn(&weft_core::TaskContext<'_>) -> Result<(), String>, modes: &[AccessMode]| {
        Codelet::builder(name).cpu(f).modes(modes).model(PerfModel::new(format!("cholesky_{name}"))).build()
    };
    use AccessMode::{R, RW};
    Codelets {
        potrf: cl("potrf", common::tiles::potrf::<T>, &[RW]),
        trsm: cl("trsm", common::tiles::trsm::<T>, &[R, RW]),
        syrk: cl("syrk", common::tiles::syrk::<T>, &[R, RW]),
        gemm: cl("gemm", common::tiles::gemm::<T>, &[R, R, RW]),
    }
}

fn main() {
    let usage = "usage: mpi_cholesky [n] [tile] [--f32] [--check]";
    let (mut sizes, mut check, mut single) = (Vec::new(), false, false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            "--f32" => single = true,
            _ => match a.parse::<usize>() {
                Ok(v) => sizes.push(v),
                Err(_) => fail(&format!("{usage}: unexpected '{a}'")),
            },
        }
    }
    let n = sizes.first().copied().unwrap_or(2048);
    let nb = sizes.get(1).copied().unwrap_or(256);
    if n == 0 || nb == 0 || !n.is_multiple_of(nb) || sizes.len() > 2 {
        fail(&format!("{usage}: n ({n}) must be a positive multiple of tile ({nb})"));
    }
    let rt = Runtime::from_env().unwrap_or_else(|e| fail(&format!("cannot start the runtime: {e}")));
    let mpi = MpiRuntime::new(rt).unwrap_or_else(|e| fail(&format!("cannot start weft-mpi: {e}")));
    let r = if single { run::<f32>(&mpi, n, nb, check) } else { run::<f64>(&mpi, n, nb, check) };
    if let Err(e) = r {
        mpi.abort(&e, 1);
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

fn run<T: Real>(mpi: &MpiRuntime, n: usize, nb: usize, check: bool) -> Result<(), String> {
    let t = n / nb;
    let (p, q) = grid(mpi.size() as usize);
    let me = mpi.rank();
    if me == 0 {
        println!(
            "weft-mpi cholesky: {n}×{n} {}s in {t}×{t} tiles of {nb}, {} ranks on a {p}×{q} grid, {} worker(s) per rank",
            T::CL,
            mpi.size(),
            mpi.runtime().workers().len()
        );
    }
    let owner = |i: usize, j: usize| ((i % p) * q + (j % q)) as i32;
    let shape = Shape::Matrix { nx: nb, ny: nb, elem: size_of::<T>() };
    let mut tiles: Vec<Option<DistHandle>> = vec![None; t * t];
    for j in 0..t {
        for i in j..t {
            let h = mpi
                .register_with(shape, owner(i, j), (i * t + j) as i64, |rt| rt.register_matrix(tile_data::<T>(i, j, nb, n), nb, nb, nb))
                .map_err(|e| e.to_string())?;
            tiles[i * t + j] = Some(h);
        }
    }
    let at = |i: usize, j: usize| tiles[i * t + j].as_ref().expect("lower-triangle tile");
    let cl = codelets::<T>();
    mpi.barrier();
    let start = Instant::now();
    submit(mpi, &cl, t, nb, at).map_err(|e| e.to_string())?;
    mpi.wait_for_all().map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let gflops = (n as f64).powi(3) / 3.0 / secs / 1e9;
    if me == 0 {
        println!("time: {secs:.3} s, {gflops:.2} GFLOP/s");
    }
    if check {
        for j in 0..t {
            for i in j..t {
                mpi.get_data_on_rank(at(i, j), 0).map_err(|e| e.to_string())?;
            }
        }
        mpi.wait_for_all().map_err(|e| e.to_string())?;
        if me == 0 {
            verify::<T>(&cl, n, nb, |i, j| at(i, j).local().read_to_vec::<T>().expect("gathered tile"))?;
        }
    }
    Ok(())
}

/// Submit the factorisation: the same flow on every rank.
fn submit<'a>(mpi: &MpiRuntime, cl: &Codelets, t: usize, nb: usize, at: impl Fn(usize, usize) -> &'a DistHandle) -> weft_mpi::Result<()> {
    use AccessMode::{R, RW};
    let b = nb as u32;
    for k in 0..t {
        // Priorities as in StarPU's example: the critical path (the next panel) first.
        let prio = |base: usize| (2 * (t - k) + base) as i32;
        mpi.task_insert(MpiTask::new(&cl.potrf).access(at(k, k), RW).arg(b).priority(prio(2)))?;
        for i in k + 1..t {
            mpi.task_insert(MpiTask::new(&cl.trsm).access(at(k, k), R).access(at(i, k), RW).arg([b, b]).priority(prio(1)))?;
        }
        for i in k + 1..t {
            let next = if i == k + 1 { 1 } else { 0 };
            mpi.task_insert(MpiTask::new(&cl.syrk).access(at(i, k), R).access(at(i, i), RW).arg([b, b]).priority(prio(next)))?;
            for j in k + 1..i {
                mpi.task_insert(
                    MpiTask::new(&cl.gemm)
                        .access(at(i, k), R)
                        .access(at(j, k), R)
                        .access(at(i, j), RW)
                        .arg([b, b, b])
                        .priority(prio(if j == k + 1 { 1 } else { 0 })),
                )?;
            }
        }
    }
    Ok(())
}

/// Rank 0: the same tile algorithm run sequentially on one worker must give the same bits,
/// and `L·Lᵀ` must be `A`.
fn verify<T: Real>(cl: &Codelets, n: usize, nb: usize, gathered: impl Fn(usize, usize) -> Vec<T>) -> Result<(), String> {
    use AccessMode::{R, RW};
    let t = n / nb;
    let rt = Runtime::new(weft_core::Config { ncpu: Some(1), nopencl: Some(0), ..Default::default() }).map_err(|e| e.to_string())?;
    let mut hs = vec![None; t * t];
    for j in 0..t {
        for i in j..t {
            hs[i * t + j] = Some(rt.register_matrix(tile_data::<T>(i, j, nb, n), nb, nb, nb).map_err(|e| e.to_string())?);
        }
    }
    let at = |i: usize, j: usize| hs[i * t + j].as_ref().expect("lower-triangle tile");
    let b = nb as u32;
    let go = |tb: TaskBuilder| rt.submit(tb).map(|_| ()).map_err(|e| e.to_string());
    for k in 0..t {
        go(TaskBuilder::new(&cl.potrf).access(at(k, k), RW).arg(b))?;
        for i in k + 1..t {
            go(TaskBuilder::new(&cl.trsm).access(at(k, k), R).access(at(i, k), RW).arg([b, b]))?;
        }
        for i in k + 1..t {
            go(TaskBuilder::new(&cl.syrk).access(at(i, k), R).access(at(i, i), RW).arg([b, b]))?;
            for j in k + 1..i {
                go(TaskBuilder::new(&cl.gemm).access(at(i, k), R).access(at(j, k), R).access(at(i, j), RW).arg([b, b, b]))?;
            }
        }
    }
    rt.wait_for_all().map_err(|e| e.to_string())?;
    let (mut l, mut a) = (Mat::<f64>::zeros(n, n), Mat::<f64>::zeros(n, n));
    let mut differ = 0usize;
    for j in 0..t {
        for i in j..t {
            let (got, want) = (gathered(i, j), at(i, j).read_to_vec::<T>().map_err(|e| e.to_string())?);
            for c in 0..nb {
                for r in 0..nb {
                    let (gr, gc) = (i * nb + r, j * nb + c);
                    if gr < gc {
                        continue;
                    }
                    let x = got[r + c * nb];
                    differ += usize::from(bytemuck::bytes_of(&x) != bytemuck::bytes_of(&want[r + c * nb]));
                    l[(gr, gc)] = x.to_f64();
                    a[(gr, gc)] = T::from_f64(element(gr, gc, n)).to_f64();
                }
            }
        }
    }
    if differ > 0 {
        return Err(format!("result: {differ} elements of L differ from the sequential computation's"));
    }
    let mut r = -&a;
    let tril = BlockStructure::TriangularLower;
    triangular::matmul(r.as_mut(), tril, Accum::Add, l.as_ref(), tril, l.transpose(), BlockStructure::TriangularUpper, 1.0, Par::Seq);
    let err = r.norm_l2() / a.norm_l2();
    // f32 keeps 24 bits: its rounding errors, summed over n terms, are ~1e-6 here.
    let tolerance = if size_of::<T>() == 4 { 1e-4 } else { 1e-10 };
    if err < tolerance {
        println!("result: correct, equal to the sequential computation bit for bit (‖L·Lᵀ − A‖/‖A‖ = {err:.2e})");
        Ok(())
    } else {
        Err(format!("result: wrong, ‖L·Lᵀ − A‖/‖A‖ = {err:.2e}"))
    }
}
