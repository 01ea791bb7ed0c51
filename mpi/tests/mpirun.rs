//! weft-mpi under `mpirun`, at 1, 2 and 4 ranks (4 oversubscribe a 2-core machine): the
//! examples' results equal the sequential computation, random flows equal their
//! sequential execution, and faults stop every rank with a clear message instead of
//! hanging. The programs are this crate's examples, which `cargo test` builds first.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/mpirun-<hash> → target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("test executable");
    let p = exe.parent().and_then(|d| d.parent()).expect("target directory").join("examples").join(name);
    assert!(p.exists(), "{} is not built: run the tests with `cargo test -p weft-mpi`, which builds the examples", p.display());
    p
}

/// `common::mpirun` on one of this crate's examples, ranks unbound (4 ranks oversubscribe
/// 2 cores), printing their statistics.
fn mpirun(np: usize, program: &str, args: &[&str], limit: Duration) -> Output {
    let env = [("WEFT_BIND", "0"), ("WEFT_MPI_STATS", "1"), ("RUST_BACKTRACE", "0")];
    common::mpirun(np, &example(program), args, &env, limit)
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn assert_ok(o: &Output, want: &str) {
    let (out, err) = text(o);
    assert!(o.status.success() && out.contains(want), "status {:?}, expected '{want}'\nstdout:\n{out}\nstderr:\n{err}", o.status);
}

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn distributed_cholesky_equals_the_sequential_one_at_1_2_and_4_ranks() {
    for np in [1, 2, 4] {
        let o = mpirun(np, "mpi_cholesky", &["384", "64", "--check"], LIMIT);
        assert_ok(&o, "equal to the sequential computation bit for bit");
        let (_, err) = text(&o);
        // Every rank reports what it sent (WEFT_MPI_STATS); with several ranks tiles did travel.
        assert_eq!(err.matches("weft-mpi rank ").count(), np, "{err}");
        if np > 1 {
            assert!(!err.contains("rank 0: sent 0 bytes"), "rank 0 sent nothing at {np} ranks:\n{err}");
        }
    }
}

#[test]
fn distributed_single_precision_cholesky_equals_the_sequential_one_at_2_ranks() {
    assert_ok(&mpirun(2, "mpi_cholesky", &["256", "64", "--f32", "--check"], LIMIT), "equal to the sequential computation bit for bit");
}

#[test]
fn distributed_stencil_equals_the_sequential_iterations_at_1_2_and_4_ranks() {
    for np in [1, 2, 4] {
        assert_ok(&mpirun(np, "mpi_stencil", &["128", "9", "--check"], LIMIT), "equal to the sequential iterations bit for bit");
    }
}

/// The property test across ranks: random flows (owners, reads, writes, writes away from
/// the owner, REDUX contributions, migrations, cache flushes) equal their sequential
/// execution.
#[test]
fn random_flows_equal_their_sequential_execution() {
    for seed in 1..=8u64 {
        let np = if seed % 2 == 0 { 4 } else { 2 };
        assert_ok(&mpirun(np, "mpi_random_flow", &[&seed.to_string()], LIMIT), "equal to the sequential execution");
    }
}

#[test]
fn ranks_whose_flows_differ_are_stopped_naming_the_first_different_call() {
    let o = mpirun(4, "mpi_random_flow", &["3", "--diverge"], LIMIT);
    let (_, err) = text(&o);
    assert!(!o.status.success(), "diverging flows ran to completion:\n{err}");
    assert!(err.contains("task flows differ at call #") && err.contains("submitted task '"), "no divergence message:\n{err}");
}

#[test]
fn a_rank_that_dies_stops_the_others() {
    for mode in ["--die", "--panic"] {
        let start = Instant::now();
        let o = mpirun(4, "mpi_random_flow", &["5", mode], LIMIT);
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{mode}: the job succeeded without a rank:\n{err}");
        assert!(start.elapsed() < Duration::from_secs(60), "{mode}: the others took {:?} to stop", start.elapsed());
        if mode == "--panic" {
            assert!(err.contains("rank 1 panicked; stopping every rank"), "{mode}: no message naming the rank:\n{err}");
        }
    }
}

#[test]
fn data_used_after_unregister_is_an_error_not_a_hang() {
    let o = mpirun(2, "mpi_random_flow", &["2", "--unregistered"], LIMIT);
    assert_ok(&o, "using unregistered data: the data of tag 0 was unregistered");
}
