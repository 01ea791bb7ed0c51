//! OpenMP explicit tasks (issue 6) on Weft: gcc-built programs in `tests/gomp_tasks`, each
//! checking one family of clauses, run with libweft.so standing in for `libgomp.so.1` (a
//! symbolic link on `LD_LIBRARY_PATH`, so the system libgomp is never loaded and a missing
//! entry point fails loudly). Every program also passes under GNU libgomp.
//!
//! `GOMP_TASKS_RUNTIME=/usr/lib/x86_64-linux-gnu/libgomp.so.1 cargo test --test gomp_tasks`
//! runs them on another runtime instead (checking the tests themselves).
//!
//! A runtime without `GOMP_task` fails every test; a missing gcc or nm is a skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Why the tests cannot run here, if they cannot.
fn skip_reason(lib: &Path) -> Option<String> {
    if !Command::new("gcc").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
        return Some("gcc not found".into());
    }
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output();
    match nm {
        Ok(o) if o.status.success() => {
            let syms = String::from_utf8_lossy(&o.stdout);
            assert!(
                syms.lines().any(|l| l.split_whitespace().last().is_some_and(|s| s == "GOMP_task" || s.starts_with("GOMP_task@"))),
                "{} does not export GOMP_task",
                lib.display()
            );
            None
        }
        _ => Some("nm (binutils) not found".into()),
    }
}

/// Compile `tests/gomp_tasks/<name>.c` and run it on Weft; check it prints `<name>: ok`.
fn run(name: &str) {
    run_with(name, &[]);
}

/// [`run`] with `env` set as well.
fn run_with(name: &str, env: &[(&str, &str)]) {
    run_in(name, env, false);
}

/// [`run_with`], on one CPU if `one_cpu` (skipped without taskset).
fn run_in(name: &str, env: &[(&str, &str)], one_cpu: bool) {
    let lib = match std::env::var_os("GOMP_TASKS_RUNTIME") {
        Some(other) => PathBuf::from(other),
        None => common::lib_dir().join("libweft.so"),
    };
    if let Some(why) = skip_reason(&lib) {
        println!("skipped: {why}");
        return;
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gomp_tasks");
    let stand_in = common::stand_in(&out_dir, &lib);
    let exe = common::unique_exe(&out_dir, name);
    let cc = Command::new("gcc")
        .current_dir(ROOT)
        .args(["-O1", "-fopenmp", "-Wall", "-Werror"])
        .arg(format!("tests/gomp_tasks/{name}.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run gcc");
    assert!(cc.status.success(), "gcc failed on {name}.c:\n{}", String::from_utf8_lossy(&cc.stderr));
    let Some(mut cmd) = common::command(&exe, one_cpu) else { return };
    cmd.env("LD_LIBRARY_PATH", &stand_in)
        .env("OMP_CANCELLATION", "true")
        .env("OMP_MAX_TASK_PRIORITY", "7")
        .env("WEFT_NOPENCL", "0")
        .env("WEFT_NCUDA", "0")
        .envs(env.iter().copied());
    let out = common::output_within(&mut cmd, 120, name);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains(&format!("{name}: ok")),
        "{name} on Weft: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

#[test]
fn depend_orders_siblings_by_address() {
    run("depend");
}

#[test]
fn mutexinoutset_depobj_and_taskwait_depend() {
    run("depend_sets");
}

#[test]
fn taskgroups_cancellation_and_task_reductions() {
    run("taskgroup");
}

#[test]
fn taskloop_runs_every_iteration_once() {
    run("taskloop");
}

#[test]
fn task_reductions_on_parallel_worksharing_and_scope() {
    run("ws_reductions");
}

#[test]
fn detached_tasks_complete_when_fulfilled() {
    run("detach");
}

#[test]
fn if_final_mergeable_untied_and_priority() {
    run("clauses");
}

#[test]
fn priorities_order_ready_tasks_and_every_task_runs_once() {
    run("priority");
}

#[test]
fn fib_30_with_a_task_per_call() {
    run("fib");
}

/// Also a million tasks with depend clauses: those waiting for dependencies are throttled too.
#[test]
fn a_million_tasks_in_flight_stay_within_memory() {
    run("million");
}

/// Tiny tasks mostly run on their creator; 2 ms tasks after them are deferred again and
/// spread over the team.
#[test]
fn the_creator_defers_by_the_size_of_its_tasks() {
    run("sizes");
}

#[test]
fn a_waiting_thread_runs_only_tasks_the_scheduling_constraint_allows() {
    run("tsc");
}

/// The first task a finishing task releases runs next on that task's thread, ahead of
/// older ready tasks (also of the thread's own, when it waits for the task); the rest keep
/// the order they became ready in.
#[test]
fn a_released_task_runs_next_on_the_releasing_thread() {
    run("successor");
}

/// A thread waiting for its task's children while tasks it may not run are queued finds a
/// child queued meanwhile by another thread (with an endless spin budget, a wait that did
/// not look again would never end).
#[test]
fn a_blind_wait_finds_a_child_queued_while_it_spins() {
    run_with("blind_wait", &[("OMP_WAIT_POLICY", "active")]);
}

/// More threads than processors (3 threads on one CPU): waiting threads yield their processor
/// rather than spinning it away; dependencies, taskgroups, detached tasks and recursion give
/// the same results.
#[test]
fn tasks_on_more_threads_than_processors() {
    for name in ["depend", "depend_sets", "taskgroup", "detach", "fib", "taskloop"] {
        run_in(name, &[("OMP_NUM_THREADS", "3")], true);
    }
}
