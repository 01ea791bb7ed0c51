//! Distributed 2-D Jacobi stencil on weft-mpi: an `n×n` grid of doubles (fixed edges) in
//! row blocks spread round-robin over the ranks; each iteration updates every block from
//! itself and its neighbours' boundary rows (`new = ¼(up + down + left + right)`), then
//! copies out its own boundary rows. Only those rows travel between ranks: each block's
//! first and last rows are distributed handles of their own, owned with the block.
//!
//! `mpirun -np 4 target/release/examples/mpi_stencil [n] [iterations] [--check]` (defaults
//! 1024 and 50; two blocks per rank). `--check` gathers the grid on rank 0 and compares it
//! with the same iterations run sequentially there, bit for bit.

use std::sync::Arc;
use std::time::Instant;
use weft_core::{AccessMode, Codelet, Shape};
use weft_mpi::{DistHandle, MpiRuntime, MpiTask};

fn initial(r: usize, c: usize, n: usize) -> f64 {
    // Hot top edge, cold elsewhere, and some structure inside.
    if r == 0 {
        100.0
    } else if r == n - 1 || c == 0 || c == n - 1 {
        0.0
    } else {
        ((r * 7 + c * 13) % 17) as f64
    }
}

/// One Jacobi sweep of rows `rows` of the grid `cur` (row-major `n` wide) into `next`;
/// `up`/`down` are the rows just above and below the range (unused at the grid's edges).
fn sweep(cur: &[f64], next: &mut [f64], up: Option<&[f64]>, down: Option<&[f64]>, first_row: usize, n: usize) {
    let rows = cur.len() / n;
    for i in 0..rows {
        let g = first_row + i;
        for c in 0..n {
            let x = cur[i * n + c];
            next[i * n + c] = if g == 0 || g == n - 1 || c == 0 || c == n - 1 {
                x
            } else {
                let above = if i == 0 { up.expect("row above")[c] } else { cur[(i - 1) * n + c] };
                let below = if i + 1 == rows { down.expect("row below")[c] } else { cur[(i + 1) * n + c] };
                0.25 * (above + below + cur[i * n + c - 1] + cur[i * n + c + 1])
            };
        }
    }
}

struct Block {
    data: [DistHandle; 2],
    top: DistHandle,
    bottom: DistHandle,
}

fn main() {
    let usage = "usage: stencil [n] [iterations] [--check]";
    let (mut nums, mut check) = (Vec::new(), false);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            _ => nums.push(a.parse::<usize>().unwrap_or_else(|_| fail(&format!("{usage}: unexpected '{a}'")))),
        }
    }
    let n = nums.first().copied().unwrap_or(1024);
    let iters = nums.get(1).copied().unwrap_or(50);
    let rt = weft_core::Runtime::from_env().unwrap_or_else(|e| fail(&format!("cannot start the runtime: {e}")));
    let mpi = MpiRuntime::new(rt).unwrap_or_else(|e| fail(&format!("cannot start weft-mpi: {e}")));
    let nblocks = 2 * mpi.size() as usize;
    if n < 3 || !n.is_multiple_of(nblocks) || nums.len() > 2 {
        mpi.abort(&format!("{usage}: n ({n}) must be a multiple of the number of blocks ({nblocks}, two per rank)"), 2);
    }
    if let Err(e) = run(&mpi, n, iters, nblocks, check) {
        mpi.abort(&e, 1);
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

fn run(mpi: &MpiRuntime, n: usize, iters: usize, nblocks: usize, check: bool) -> Result<(), String> {
    let rows = n / nblocks;
    let e = |e: weft_mpi::Error| e.to_string();
    let owner = |b: usize| (b % mpi.size() as usize) as i32;
    let block_shape = Shape::Vector { nx: rows * n, elem: 8 };
    let row_shape = Shape::Vector { nx: n, elem: 8 };
    let mut blocks = Vec::new();
    for b in 0..nblocks {
        let grid = |b: usize| (0..rows * n).map(|k| initial(b * rows + k / n, k % n, n)).collect::<Vec<f64>>();
        let row = |r: usize| (0..n).map(|c| initial(r, c, n)).collect::<Vec<f64>>();
        let tag = (b * 4) as i64;
        blocks.push(Block {
            data: [
                mpi.register_with(block_shape, owner(b), tag, |rt| rt.register_vector(grid(b))).map_err(e)?,
                mpi.register_with(block_shape, owner(b), tag + 1, |rt| rt.register_vector(grid(b))).map_err(e)?,
            ],
            top: mpi.register_with(row_shape, owner(b), tag + 2, |rt| rt.register_vector(row(b * rows))).map_err(e)?,
            bottom: mpi.register_with(row_shape, owner(b), tag + 3, |rt| rt.register_vector(row(b * rows + rows - 1))).map_err(e)?,
        });
    }
    // Buffers: 0 next block (W), 1 current block, then the row above and the row below
    // when they exist; args: first row, n, and which neighbours were given.
    let update: Arc<Codelet> = Codelet::builder("jacobi")
        .cpu(|ctx| {
            let (first, n, has_up, has_down): (u64, u64, u32, u32) = {
                let a = ctx.args();
                let w = |i: usize| u64::from_ne_bytes(a[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                (w(0), w(1), (w(2) & 1) as u32, (w(2) >> 1) as u32)
            };
            let mut k = 2;
            let up = (has_up == 1).then(|| {
                k += 1;
                ctx.vector::<f64>(k - 1)
            });
            let down = (has_down == 1).then(|| ctx.vector::<f64>(k));
            sweep(ctx.vector::<f64>(1), ctx.vector_mut::<f64>(0), up, down, first as usize, n as usize);
            Ok(())
        })
        .build();
    let extract: Arc<Codelet> = Codelet::builder("boundary_rows")
        .cpu(|ctx| {
            let block = ctx.vector::<f64>(2);
            let n = ctx.buffer(0).shape().dims()[0];
            ctx.vector_mut::<f64>(0).copy_from_slice(&block[..n]);
            ctx.vector_mut::<f64>(1).copy_from_slice(&block[block.len() - n..]);
            Ok(())
        })
        .build();
    mpi.barrier();
    let start = Instant::now();
    for it in 0..iters {
        let (cur, next) = (it % 2, (it + 1) % 2);
        for (b, blk) in blocks.iter().enumerate() {
            let mut t = MpiTask::new(&update).access(&blk.data[next], AccessMode::W).access(&blk.data[cur], AccessMode::R);
            let (has_up, has_down) = (b > 0, b + 1 < nblocks);
            if has_up {
                t = t.access(&blocks[b - 1].bottom, AccessMode::R);
            }
            if has_down {
                t = t.access(&blocks[b + 1].top, AccessMode::R);
            }
            let args: Vec<u8> = [(b * rows) as u64, n as u64, u64::from(has_up) | (u64::from(has_down) << 1)]
                .iter()
                .flat_map(|w| w.to_ne_bytes())
                .collect();
            mpi.task_insert(t.args(&args)).map_err(e)?;
        }
        for blk in &blocks {
            mpi.task_insert(
                MpiTask::new(&extract)
                    .access(&blk.top, AccessMode::W)
                    .access(&blk.bottom, AccessMode::W)
                    .access(&blk.data[next], AccessMode::R),
            )
            .map_err(e)?;
        }
    }
    mpi.wait_for_all().map_err(e)?;
    let secs = start.elapsed().as_secs_f64();
    if mpi.rank() == 0 {
        println!(
            "weft-mpi stencil: {n}×{n} grid, {iters} iterations, {nblocks} blocks over {} ranks: {secs:.3} s, {:.1} Mpoint/s",
            mpi.size(),
            (n * n * iters) as f64 / secs / 1e6
        );
    }
    if check {
        let last = iters % 2;
        for blk in &blocks {
            mpi.get_data_on_rank(&blk.data[last], 0).map_err(e)?;
        }
        mpi.wait_for_all().map_err(e)?;
        if mpi.rank() == 0 {
            let mut cur: Vec<f64> = (0..n * n).map(|k| initial(k / n, k % n, n)).collect();
            let mut next = cur.clone();
            for _ in 0..iters {
                sweep(&cur, &mut next, None, None, 0, n);
                std::mem::swap(&mut cur, &mut next);
            }
            let got: Vec<f64> =
                blocks.iter().flat_map(|blk| blk.data[last].local().read_to_vec::<f64>().expect("gathered block")).collect();
            let differ = got.iter().zip(&cur).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            if differ > 0 {
                return Err(format!("result: {differ} grid points differ from the sequential iterations"));
            }
            println!("result: correct, equal to the sequential iterations bit for bit");
        }
    }
    Ok(())
}
