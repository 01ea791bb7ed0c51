//! A random distributed task flow checked against its sequential execution: what the
//! tests run at 2 and 4 ranks (`tests/mpirun.rs`), and a way to try weft-mpi's corners.
//!
//! `mpirun -np 4 target/debug/examples/mpi_random_flow SEED [MODE]`: from `SEED` every rank
//! draws the same handles (vectors of four u64, random owners; some with a reduction) and
//! the same tasks (read-modify-write, overwrite, REDUX contributions, some forced onto a
//! rank, with data migrations, redistributions and cache flushes between them), runs them, gathers every
//! handle on rank 0 and compares it with the same flow run sequentially (wrapping integer
//! arithmetic: equal means equal). Modes, for the fault tests: `--diverge` (rank 1 skips a
//! task), `--die` (rank 1 exits halfway), `--panic` (rank 1 panics halfway),
//! `--unregistered` (a task names data after `unregister`: an error, printed).

// Element-wise arithmetic on [u64; 4] reads best with an index.
#![allow(clippy::needless_range_loop)]

use std::sync::Arc;
use weft_core::{AccessMode, Codelet, Runtime, Shape};
use weft_mpi::{DistHandle, MpiRuntime, MpiTask};

type V = [u64; 4];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

enum Step {
    /// `target = target·3 + Σ sources + id`.
    Mix {
        target: usize,
        sources: Vec<usize>,
        rank: Option<i32>,
    },
    /// `target = source·5 + id`, target written without being read.
    Overwrite {
        target: usize,
        source: usize,
        rank: Option<i32>,
    },
    /// `acc += source + id` through a REDUX access.
    Contribute {
        acc: usize,
        source: usize,
        rank: Option<i32>,
    },
    SetOwner {
        h: usize,
        rank: i32,
    },
    /// Every handle to the next rank (`redistribute`).
    Rotate,
    Flush {
        h: usize,
    },
}

fn draw(seed: u64, size: i32) -> (Vec<(i32, bool)>, Vec<Step>) {
    // splitmix64 of the seed, so that nearby seeds draw unrelated flows.
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let mut g = Rng(z ^ (z >> 31));
    let nh = 6 + g.below(6);
    // (owner, has a reduction): the first two have one.
    let handles: Vec<(i32, bool)> = (0..nh).map(|i| (g.below(size as usize) as i32, i < 2)).collect();
    let mut steps = Vec::new();
    for _ in 0..40 + g.below(40) {
        let rank = if g.below(5) == 0 { Some(g.below(size as usize) as i32) } else { None };
        let pick = |g: &mut Rng, not: &[usize]| loop {
            let h = g.below(nh);
            if !not.contains(&h) {
                break h;
            }
        };
        steps.push(match g.below(20) {
            0 => Step::SetOwner { h: g.below(nh), rank: g.below(size as usize) as i32 },
            1 if g.below(3) == 0 => Step::Rotate,
            1 => Step::Flush { h: g.below(nh) },
            2..=4 => {
                let acc = g.below(2);
                Step::Contribute { acc, source: pick(&mut g, &[0, 1]), rank }
            }
            5..=7 => {
                let target = g.below(nh);
                Step::Overwrite { target, source: pick(&mut g, &[target]), rank }
            }
            _ => {
                let target = g.below(nh);
                let mut sources = vec![pick(&mut g, &[target])];
                if g.below(2) == 0 {
                    let s = pick(&mut g, &[target, sources[0]]);
                    sources.push(s);
                }
                Step::Mix { target, sources, rank }
            }
        });
    }
    (handles, steps)
}

fn initial(h: usize) -> V {
    std::array::from_fn(|k| (h * 1000 + k) as u64)
}

fn sequential(nh: usize, steps: &[Step]) -> Vec<V> {
    let mut v: Vec<V> = (0..nh).map(initial).collect();
    for (id, s) in steps.iter().enumerate() {
        let id = id as u64;
        match s {
            Step::Mix { target, sources, .. } => {
                let mut t = v[*target];
                for k in 0..4 {
                    t[k] = t[k].wrapping_mul(3).wrapping_add(sources.iter().fold(0u64, |a, &s| a.wrapping_add(v[s][k]))).wrapping_add(id);
                }
                v[*target] = t;
            }
            Step::Overwrite { target, source, .. } => v[*target] = std::array::from_fn(|k| v[*source][k].wrapping_mul(5).wrapping_add(id)),
            Step::Contribute { acc, source, .. } => {
                for k in 0..4 {
                    v[*acc][k] = v[*acc][k].wrapping_add(v[*source][k]).wrapping_add(id);
                }
            }
            Step::SetOwner { .. } | Step::Flush { .. } | Step::Rotate => {}
        }
    }
    v
}

fn codelet(name: &str, f: impl Fn(&weft_core::TaskContext<'_>) -> Result<(), String> + Send + Sync + 'static) -> Arc<Codelet> {
    Codelet::builder(name).cpu(f).build()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        eprintln!("usage: mpi_random_flow SEED [--diverge|--die|--panic|--unregistered]");
        std::process::exit(2)
    });
    let mode = args.next().unwrap_or_default();
    let mpi = MpiRuntime::new(Runtime::from_env().expect("runtime")).unwrap_or_else(|e| {
        eprintln!("cannot start weft-mpi: {e}");
        std::process::exit(2)
    });
    let me = mpi.rank();
    let (handles, steps) = draw(seed, mpi.size());

    // Each codelet reads its sources first, then writes buffer 0.
    let mix = codelet("mix", |ctx| {
        let id: u64 = ctx.arg();
        let sums: V = std::array::from_fn(|k| (1..ctx.nbuffers()).fold(0u64, |a, b| a.wrapping_add(ctx.buffer(b).slice::<u64>()[k])));
        let t = ctx.buffer(0).slice_mut::<u64>();
        for k in 0..4 {
            t[k] = t[k].wrapping_mul(3).wrapping_add(sums[k]).wrapping_add(id);
        }
        Ok(())
    });
    let overwrite = codelet("overwrite", |ctx| {
        let id: u64 = ctx.arg();
        let s: V = std::array::from_fn(|k| ctx.buffer(1).slice::<u64>()[k]);
        let t = ctx.buffer(0).slice_mut::<u64>();
        for k in 0..4 {
            t[k] = s[k].wrapping_mul(5).wrapping_add(id);
        }
        Ok(())
    });
    let contribute = codelet("contribute", |ctx| {
        let id: u64 = ctx.arg();
        let s: V = std::array::from_fn(|k| ctx.buffer(1).slice::<u64>()[k]);
        let t = ctx.buffer(0).slice_mut::<u64>();
        for k in 0..4 {
            t[k] = t[k].wrapping_add(s[k]).wrapping_add(id);
        }
        Ok(())
    });
    let zero = codelet("zero", |ctx| {
        ctx.buffer(0).slice_mut::<u64>().fill(0);
        Ok(())
    });
    let add = codelet("add", |ctx| {
        let s: V = std::array::from_fn(|k| ctx.buffer(1).slice::<u64>()[k]);
        let t = ctx.buffer(0).slice_mut::<u64>();
        for k in 0..4 {
            t[k] = t[k].wrapping_add(s[k]);
        }
        Ok(())
    });

    let shape = Shape::Vector { nx: 4, elem: 8 };
    let hs: Vec<DistHandle> = handles
        .iter()
        .enumerate()
        .map(|(i, &(owner, redux))| {
            let h = mpi.register_with(shape, owner, i as i64, |rt| rt.register_vector(initial(i).to_vec())).expect("register");
            if redux {
                mpi.set_reduction(&h, &zero, &add).expect("set_reduction");
            }
            h
        })
        .collect();

    let half = steps.len() / 2;
    for (id, s) in steps.iter().enumerate() {
        if me == 1 && id == half {
            match mode.as_str() {
                "--diverge" => continue,
                "--die" => std::process::exit(3),
                "--panic" => panic!("rank 1 panics on purpose halfway through the flow"),
                _ => {}
            }
        }
        let with_rank = |t: MpiTask, r: &Option<i32>| if let Some(r) = r { t.on_rank(*r) } else { t };
        let r = match s {
            Step::Mix { target, sources, rank } => {
                let mut t = MpiTask::new(&mix).access(&hs[*target], AccessMode::RW).arg(id as u64);
                for &src in sources {
                    t = t.access(&hs[src], AccessMode::R);
                }
                mpi.task_insert(with_rank(t, rank)).map(drop)
            }
            Step::Overwrite { target, source, rank } => mpi
                .task_insert(with_rank(
                    MpiTask::new(&overwrite).access(&hs[*target], AccessMode::W).access(&hs[*source], AccessMode::R).arg(id as u64),
                    rank,
                ))
                .map(drop),
            Step::Contribute { acc, source, rank } => mpi
                .task_insert(with_rank(
                    MpiTask::new(&contribute).access(&hs[*acc], AccessMode::Redux).access(&hs[*source], AccessMode::R).arg(id as u64),
                    rank,
                ))
                .map(drop),
            Step::SetOwner { h, rank } => mpi.set_owner(&hs[*h], *rank),
            Step::Flush { h } => mpi.cache_flush(&hs[*h]),
            Step::Rotate => mpi.redistribute(&hs, |_, h| (h.owner() + 1) % mpi.size()),
        };
        if let Err(e) = r {
            mpi.abort(&format!("step {id}: {e}"), 1);
        }
    }
    if mode == "--unregistered" {
        mpi.unregister(&hs[0]).expect("unregister");
        match mpi.task_insert(MpiTask::new(&mix).access(&hs[0], AccessMode::RW).access(&hs[1], AccessMode::R).arg(0u64)) {
            Err(e) => println!("rank {me}: using unregistered data: {e}"),
            Ok(_) => mpi.abort("a task on unregistered data was accepted", 1),
        }
        mpi.wait_for_all().unwrap_or_else(|e| mpi.abort(&e.to_string(), 1));
        return;
    }
    for h in &hs {
        mpi.get_data_on_rank(h, 0).unwrap_or_else(|e| mpi.abort(&e.to_string(), 1));
    }
    mpi.wait_for_all().unwrap_or_else(|e| mpi.abort(&e.to_string(), 1));
    if me == 0 {
        let want = sequential(hs.len(), &steps);
        for (i, h) in hs.iter().enumerate() {
            let got = h.local().read_to_vec::<u64>().expect("gathered");
            if got != want[i] {
                mpi.abort(&format!("seed {seed}: handle {i} (owner {}) is {got:?}, the sequential flow gives {:?}", h.owner(), want[i]), 1);
            }
        }
        let s = mpi.stats();
        println!(
            "random flow {seed}: {} steps on {} handles over {} ranks: equal to the sequential execution (rank 0 sent {} messages)",
            steps.len(),
            hs.len(),
            mpi.size(),
            s.sent_messages
        );
    }
}
