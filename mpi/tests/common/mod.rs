//! What weft-mpi's tests share: running a program under `mpirun` with a time limit.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// `mpirun -np N exe args` with one CPU worker per rank and no device (ranks share the
/// machine's cores), flow checking on, and `env` on top; killed (and the test failed)
/// after `limit`.
pub fn mpirun(np: usize, exe: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new("mpirun");
    if is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "-np", &np.to_string()])
        .arg(exe)
        .args(args)
        .env("WEFT_NCPU", "1")
        .env("WEFT_NOPENCL", "0")
        .env("WEFT_NCUDA", "0")
        .env("WEFT_MPI_CHECK", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env_remove("WEFT_SCHED")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mpirun (Debian: openmpi-bin; scripts/setup.sh installs it)");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait for mpirun").is_some() {
            return child.wait_with_output().expect("mpirun output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("mpirun output");
            panic!(
                "mpirun -np {np} {} {args:?} still running after {limit:?} (a hang)\nstdout:\n{}\nstderr:\n{}",
                exe.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
