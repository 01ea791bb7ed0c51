//! weft-mpi's C API from C: compile `tests/c/dist_sum.c` with `mpicc` against
//! `include/weft_mpi.h` (which includes `weft.h`) and the freshly built libweft_mpi.so, run
//! it under `mpirun` at 1 and 2 ranks, and check what every rank reports: a value computed
//! from data that travelled between ranks, a task run away from its data's owner, a
//! migration, and a task on a handle never given to `weft_mpi_data_register` refused with
//! an error instead of a hang.
//!
//! libweft_mpi.so is this package's cdylib: cargo builds it, next to this test's executable
//! (`target/<profile>/deps/`), whenever it builds the test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The directory holding libweft_mpi.so: `target/<profile>/deps` (this test's) or its parent.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable is in a directory");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        if dir.join("libweft_mpi.so").is_file() {
            return dir.to_path_buf();
        }
    }
    panic!("libweft_mpi.so not found next to {}: build the weft-mpi package (cargo test -p weft-mpi)", exe.display());
}

fn compile(src: &str, name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("mpi/ is in the repository");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi_c_api");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let exe = out_dir.join(name);
    let lib = lib_dir();
    let out = Command::new("mpicc")
        .current_dir(root)
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-Iinclude"])
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-lweft_mpi")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("run mpicc (Debian: libopenmpi-dev; scripts/setup.sh installs it)");
    assert!(out.status.success(), "mpicc failed on {src}:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn mpirun(np: usize, exe: &Path, args: &[&str], limit: Duration) -> Output {
    common::mpirun(np, exe, args, &[("LD_LIBRARY_PATH", lib_dir().to_str().expect("a UTF-8 path"))], limit)
}

/// Run the distributed sum and check every rank's report.
fn check_sum(exe: &Path, np: usize, args: &[&str]) {
    {
        let o = mpirun(np, exe, args, Duration::from_secs(120));
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        let ctx = format!("np {np} {args:?}, status {:?}\nstdout:\n{out}\nstderr:\n{err}", o.status);
        assert!(o.status.success(), "{ctx}");
        for r in 0..np {
            assert!(out.contains(&format!("rank {r} of {np}: ok")), "rank {r} did not finish: {ctx}");
            assert!(
                out.contains(&format!("rank {r}: unregistered handle refused: weft_mpi_task_insert: buffer 0 of task 'scale'")),
                "rank {r}: {ctx}"
            );
        }
        let want = 1000 * np * (np + 1) + 1000;
        assert!(out.contains(&format!("rank 0: sum = {want}.0, expected {want}.0")), "{ctx}");
    }
}

#[test]
fn distributed_sum_in_c_at_1_and_2_ranks() {
    let exe = compile("mpi/tests/c/dist_sum.c", "dist_sum-sum");
    check_sum(&exe, 1, &[]);
    check_sum(&exe, 2, &[]);
}

/// weft_shutdown before weft_mpi_shutdown: weft-mpi's reference keeps the runtime until
/// weft_mpi_shutdown, which stops it (before MPI is finalized).
#[test]
fn weft_shutdown_before_weft_mpi_shutdown_still_ends_cleanly() {
    let exe = compile("mpi/tests/c/dist_sum.c", "dist_sum-order");
    check_sum(&exe, 2, &["--shutdown-first"]);
}

#[test]
fn weft_mpi_abort_stops_every_rank() {
    let exe = compile("mpi/tests/c/dist_sum.c", "dist_sum-abort");
    let start = Instant::now();
    let o = mpirun(2, &exe, &["--abort"], Duration::from_secs(120));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the job succeeded:\n{err}");
    assert!(err.contains("weft-mpi: rank 1: stopping on purpose"), "no message naming the rank:\n{err}");
    assert!(!err.contains("passed the barrier"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(60), "the other rank took {:?} to stop", start.elapsed());
}
