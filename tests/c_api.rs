//! The C API from C: compile the examples in `examples/c` and the bad-input program in
//! `tests/c` with gcc (or `$CC`) against `include/weft.h` and the freshly built libweft.so,
//! run them with two CPU workers, and check their exit status and output.
//!
//! libweft.so is the cdylib of this package: cargo builds it, next to this test's
//! executable (`target/<profile>/deps/`), whenever it builds the test. A missing C compiler
//! is a skip, never a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Compile `src` (relative to the repository root) into an executable named `name`.
fn compile(cc: &str, src: &str, name: &str) -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_api");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let exe = out_dir.join(name);
    let lib = common::lib_dir();
    let out = Command::new(cc)
        .current_dir(ROOT)
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", "-Iinclude"])
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", lib.display()))
        .arg("-lweft")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "{cc} failed on {src}:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Run `exe` with two CPU workers, killing it if it hangs.
fn run(exe: &Path) -> Output {
    run_with(exe, &[])
}

/// `run` with extra environment variables.
fn run_with(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied())
        .env("WEFT_NCPU", "2")
        // The C API on CPU workers: no OpenCL or CUDA device joins in, whatever is installed.
        .env("WEFT_NOPENCL", "0")
        .env("WEFT_NCUDA", "0")
        .env_remove("WEFT_SCHED")
        .env_remove("WEFT_NNULL");
    common::output_within(&mut cmd, 120, &exe.display().to_string())
}

/// Compile and run; check exit status 0 and return stdout.
fn compile_and_run(src: &str, name: &str) -> Option<String> {
    let Some(cc) = common::compiler() else {
        println!("skipped: gcc not found");
        return None;
    };
    let exe = compile(&cc, src, name);
    let out = run(&exe);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    Some(stdout)
}

#[test]
fn vector_scale_example_runs() {
    let Some(out) = compile_and_run("examples/c/vector_scale.c", "vector_scale") else {
        return;
    };
    assert!(out.contains("vector_scale: 100000 elements scaled by 3.14: ok"), "{out}");
}

#[test]
fn tiled_example_runs_on_every_worker() {
    let Some(out) = compile_and_run("examples/c/tiled.c", "tiled") else {
        return;
    };
    assert!(out.contains("tiled: 64 tasks on 16 tiles"), "{out}");
    // One line per worker (WEFT_NCPU=2), and the counts add up to the tasks submitted.
    let counts: Vec<u64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("worker "))
        .map(|l| l.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("bad worker line: {l}")))
        .collect();
    assert_eq!(counts.len(), 2, "{out}");
    assert_eq!(counts.iter().sum::<u64>(), 64, "{out}");
}

#[test]
fn bad_input_gets_error_codes_and_messages() {
    let Some(out) = compile_and_run("tests/c/bad_input.c", "bad_input") else {
        return;
    };
    assert!(out.contains("checks passed"), "{out}");
}

#[test]
fn application_threads_share_the_runtime() {
    let Some(out) = compile_and_run("tests/c/threads.c", "threads") else {
        return;
    };
    assert!(out.contains("threads: ok"), "{out}");
}

#[test]
fn a_runtime_never_shut_down_reports_its_statistics_at_exit() {
    let Some(cc) = common::compiler() else {
        println!("skipped: gcc not found");
        return;
    };
    let exe = compile(&cc, "tests/c/stats_at_exit.c", "stats_at_exit");
    let home = common::fresh_home("c_api_home");
    let out = run_with(&exe, &[("WEFT_STATS", "1"), ("WEFT_HOME", home.to_str().expect("a UTF-8 path"))]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {}: {stderr}", out.status);
    assert!(stderr.contains("weft: statistics at exit"), "{stderr}");
    let tasks: u64 = stderr
        .lines()
        .filter(|l| l.starts_with("worker "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|&w| w == "tasks").unwrap_or_else(|| panic!("no task count: {l}"));
            f[at + 1].parse::<u64>().unwrap_or_else(|_| panic!("bad task count: {l}"))
        })
        .sum();
    assert_eq!(tasks, 10, "{stderr}");
    // The codelet's model, measured on the CPU workers, was saved at exit.
    let model = std::fs::read_to_string(home.join("models/c_api_nothing.model")).unwrap_or_else(|e| panic!("model file: {e}"));
    assert!(model.contains("c_api_nothing") && model.contains("cpu"), "{model}");
    let _ = std::fs::remove_dir_all(&home);
    // Without WEFT_STATS nothing is printed.
    let quiet = run(&exe);
    assert!(quiet.status.success() && quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));
}

#[test]
fn model_callbacks_choose_footprint_and_size() {
    let Some(cc) = common::compiler() else {
        println!("skipped: gcc not found");
        return;
    };
    let exe = compile(&cc, "tests/c/model_callbacks.c", "model_callbacks");
    let home = common::fresh_home("c_api_model_home");
    let out = run_with(&exe, &[("WEFT_HOME", home.to_str().expect("a UTF-8 path"))]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "exit {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.contains("model_callbacks: ok"), "{stdout}");
    assert!(stdout.contains("bad kind: ") && stdout.contains("model_kind is 7"), "{stdout}");
    let model = std::fs::read_to_string(home.join("models/c_api_model_callbacks.model")).unwrap_or_else(|e| panic!("model file: {e}"));
    // `entry footprint size ...`: one entry per argument, at the size the callback gave; the
    // NaN size of k = 3 fell back to the data's bytes (16 doubles).
    let entries: Vec<(String, String)> = model
        .lines()
        .filter_map(|l| l.strip_prefix("entry "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let want = [("00000001", "1000.0"), ("00000002", "2000.0"), ("00000003", "128.0")];
    assert_eq!(entries, want.map(|(a, b)| (a.to_string(), b.to_string())), "{model}");
    let _ = std::fs::remove_dir_all(&home);
}
