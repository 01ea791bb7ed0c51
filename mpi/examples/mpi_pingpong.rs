//! weft-mpi's cost per hop: two ranks pass data back and forth through the task flow (a
//! task on rank 0 updates `x` from `y`, one on rank 1 updates `y` from `x`, so each task
//! waits for the other rank's last one and a transfer). Time per hop = MPI's latency and
//! transfer time plus weft-mpi's own (acquisition, progress thread, task start); compare
//! with `bench/mpi/pingpong.c`, MPI's alone. What bench/RESULTS.md's projection starts from.
//!
//! `mpirun -np 2 target/release/examples/mpi_pingpong [bytes] [hops]` (defaults 8, 2000).

use weft_core::{AccessMode, Codelet, Runtime, Shape};
use weft_mpi::{MpiRuntime, MpiTask};

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let bytes = args.next().unwrap_or(Ok(8)).unwrap_or(8).max(8);
    let hops = args.next().unwrap_or(Ok(2000)).unwrap_or(2000).max(2);
    let mpi = MpiRuntime::new(Runtime::from_env().expect("runtime")).expect("weft-mpi");
    if mpi.size() < 2 {
        mpi.abort("mpi_pingpong needs 2 ranks", 2);
    }
    let shape = Shape::Vector { nx: bytes / 8, elem: 8 };
    let x = mpi.register_with(shape, 0, 0, |rt| rt.register_vector(vec![0u64; bytes / 8])).expect("x");
    let y = mpi.register_with(shape, 1, 1, |rt| rt.register_vector(vec![0u64; bytes / 8])).expect("y");
    let step = Codelet::builder("step")
        .cpu(|ctx| {
            let from = ctx.vector::<u64>(1)[0];
            ctx.vector_mut::<u64>(0)[0] = from + 1;
            Ok(())
        })
        .build();
    let run = |n: usize| {
        for i in 0..n / 2 {
            let _ = i;
            mpi.task_insert(MpiTask::new(&step).access(&x, AccessMode::RW).access(&y, AccessMode::R)).expect("task");
            mpi.task_insert(MpiTask::new(&step).access(&y, AccessMode::RW).access(&x, AccessMode::R)).expect("task");
        }
        mpi.wait_for_all().expect("wait");
    };
    run(20);
    let start = std::time::Instant::now();
    run(hops);
    let us = start.elapsed().as_secs_f64() * 1e6 / hops as f64;
    if mpi.rank() == 0 {
        println!("weft-mpi ping-pong: {bytes} bytes: {us:.1} us per hop ({hops} hops)");
    }
}
