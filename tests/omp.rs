//! The OpenMP runtime from gcc-built programs: compile `tests/omp/*.c` with `gcc -fopenmp`
//! and run them with libweft.so standing in for libgomp.so.1 (a `libgomp.so.1` symlink on
//! LD_LIBRARY_PATH, so libgomp itself is never loaded and a missing entry point fails to
//! load instead of running in libgomp), plus one run through LD_PRELOAD. The programs check
//! their results themselves and print "<name> OK".
//!
//! A missing C compiler is a skip, never a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
#[path = "common/omp_misuse.rs"]
mod omp_misuse;
#[path = "common/omp_stats.rs"]
mod omp_stats;
#[path = "common/omp_trace.rs"]
mod omp_trace;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The libweft.so built with this test.
fn lib() -> PathBuf {
    common::lib_dir().join("libweft.so")
}

fn standin() -> PathBuf {
    common::stand_in(&out_dir(), &lib())
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    std::fs::create_dir_all(&d).expect("create the output directory");
    d
}

fn compile(cc: &str, name: &str) -> PathBuf {
    let exe = common::unique_exe(&out_dir(), name);
    let out = Command::new(cc)
        .current_dir(ROOT)
        .args(["-fopenmp", "-O2", "-Wall"])
        .arg(format!("tests/omp/{name}.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "{cc} failed on {name}.c:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn run(exe: &Path, env: &[(&str, &str)], preload: bool) -> Output {
    run_cmd(Command::new(exe), exe, env, preload)
}

/// [`run`] as `cmd` (`exe` or a command that runs it).
fn run_cmd(mut cmd: Command, exe: &Path, env: &[(&str, &str)], preload: bool) -> Output {
    if preload {
        cmd.env("LD_PRELOAD", lib());
    } else {
        cmd.env("LD_LIBRARY_PATH", standin());
    }
    for v in ["OMP_NUM_THREADS", "OMP_SCHEDULE", "OMP_DYNAMIC", "OMP_WAIT_POLICY", "OMP_CANCELLATION", "OMP_DISPLAY_ENV", "OMP_STACKSIZE"] {
        cmd.env_remove(v);
    }
    cmd.env("WEFT_NCPU", "2").env("WEFT_NOPENCL", "0").env("WEFT_NCUDA", "0").envs(env.iter().copied());
    common::output_within(&mut cmd, 120, &exe.display().to_string())
}

/// Compile `tests/omp/<name>.c`, run it, and check it passed; returns stderr.
fn check(name: &str, env: &[(&str, &str)], preload: bool) -> Option<String> {
    check_with(name, env, preload, false)
}

/// [`check`], on one CPU if `one_cpu` (skipped without taskset).
fn check_with(name: &str, env: &[(&str, &str)], preload: bool, one_cpu: bool) -> Option<String> {
    let Some(cc) = common::compiler() else {
        println!("skipped: no C compiler (gcc or $CC)");
        return None;
    };
    let exe = compile(&cc, name);
    let cmd = common::command(&exe, one_cpu)?;
    let out = run_cmd(cmd, &exe, env, preload);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.contains(&format!("{name} OK")), "{name}: unexpected output:\n{stdout}\nstderr:\n{stderr}");
    Some(stderr)
}

#[test]
fn parallel_regions_nesting_and_extra_threads() {
    check("parallel", &[], false);
}

#[test]
fn parallel_regions_through_ld_preload() {
    check("parallel", &[], true);
}

#[test]
fn worksharing_loops_ordered_doacross_sections() {
    check("loops", &[("OMP_SCHEDULE", "dynamic,2")], false);
}

#[test]
fn barriers_critical_atomic_locks_single() {
    check("sync", &[], false);
    // Sleeping instead of spinning gives the same results.
    check("sync", &[("OMP_WAIT_POLICY", "passive")], false);
}

/// More threads than processors (3 threads on one CPU): a waiting thread yields its processor
/// to the threads it waits for rather than spinning it away, or sleeps; regions, barriers,
/// locks, ordered loops and worksharing give the same results under each wait policy.
#[test]
fn more_threads_than_processors() {
    for policy in [None, Some("active"), Some("passive")] {
        let mut env = vec![("OMP_NUM_THREADS", "3"), ("OMP_SCHEDULE", "dynamic,2")];
        env.extend(policy.map(|p| ("OMP_WAIT_POLICY", p)));
        for name in ["parallel", "sync", "loops"] {
            check_with(name, &env, false, true);
        }
    }
}

/// A team with more threads than processors runs unbound, as libgomp's does: a worker bound
/// to a processor that another program's busy thread shares holds up its team.
#[test]
fn oversubscribed_teams_run_unbound() {
    check("oversubscribed", &[], false);
}

/// Tasks queued after the other thread reached the end of the region (by the primary, then
/// by the member): all run before the region ends, some on the thread that was at the end.
#[test]
fn tasks_queued_late_run_before_the_end_on_every_thread() {
    check("late_tasks", &[], false);
    check("late_tasks", &[("OMP_WAIT_POLICY", "passive")], false);
}

#[test]
fn cancellation() {
    check("cancel", &[("OMP_CANCELLATION", "true")], false);
}

#[test]
fn api_and_environment() {
    let env = [("OMP_NUM_THREADS", "3,2"), ("OMP_SCHEDULE", "guided,5"), ("OMP_DYNAMIC", "bogus"), ("OMP_THREAD_LIMIT", "8")];
    if let Some(stderr) = check("api", &env, false) {
        assert!(stderr.contains("OMP_DYNAMIC"), "a bad value gets a warning naming the variable:\n{stderr}");
    }
}

#[test]
fn display_env() {
    if let Some(stderr) = check(
        "api",
        &[("OMP_NUM_THREADS", "3,2"), ("OMP_SCHEDULE", "guided,5"), ("OMP_THREAD_LIMIT", "8"), ("OMP_DISPLAY_ENV", "true")],
        false,
    ) {
        assert!(stderr.contains("OPENMP DISPLAY ENVIRONMENT BEGIN") && stderr.contains("OMP_NUM_THREADS = '3,2'"), "{stderr}");
    }
}

#[test]
fn omp_stacksize_is_honoured() {
    // Default stacks (the workers' 8 MiB), then a size above the workers'.
    check("stack", &[], false);
    check("stack", &[("OMP_STACKSIZE", "16M")], false);
}

#[test]
fn misuse_gets_a_message_and_is_ignored() {
    if let Some(stderr) = check("misuse", &[], false) {
        for what in [
            "omp_unset_lock",
            "omp_unset_nest_lock",
            "omp_set_schedule",
            "omp_set_num_threads(-3)",
            "omp_set_num_threads(0)",
            "omp_set_max_active_levels(-1)",
        ] {
            assert!(stderr.contains(what), "no message about {what}:\n{stderr}");
        }
    }
}

/// Fulfilling a detach event twice aborts with a message naming the call, after the first
/// fulfil completed the task (the program got that far).
#[test]
fn fulfilling_an_event_twice_aborts_with_a_message() {
    let Some(cc) = common::compiler() else {
        println!("skipped: no C compiler (gcc or $CC)");
        return;
    };
    let exe = compile(&cc, "fulfill_twice");
    let out = run(&exe, &[], false);
    omp_misuse::assert_fulfilled_twice("gcc", &out);
}

/// Destroying a lock that is locked, and unsetting one that another thread holds: a line
/// naming the call, and the lock left as it was (the program's later calls on it work).
#[test]
fn lock_misuse_gets_a_message_and_leaves_the_lock_as_it_was() {
    if let Some(stderr) = check("lock_misuse", &[], false) {
        for what in omp_misuse::LOCK_MISUSE {
            assert!(stderr.contains(what), "no message `{what}`:\n{stderr}");
        }
        assert_eq!(stderr.lines().count(), 4, "one line per misuse:\n{stderr}");
    }
}

/// A barrier only one thread of a team reaches (thread 0, then thread 1; and under
/// `OMP_WAIT_POLICY=active`): its waiter says which threads are where and the program
/// aborts, where libgomp hangs.
#[test]
fn a_barrier_not_every_thread_reaches_is_diagnosed() {
    let Some(cc) = common::compiler() else {
        println!("skipped: no C compiler (gcc or $CC)");
        return;
    };
    let exe = compile(&cc, "barrier_mismatch");
    // Under the active wait policy the waiter never sleeps: it looks while spinning.
    for (which, env) in [("0", None), ("1", None), ("0", Some(("OMP_WAIT_POLICY", "active"))), ("1", Some(("OMP_WAIT_POLICY", "active")))] {
        let mut cmd = Command::new(&exe);
        cmd.arg(which);
        let out = run_cmd(cmd, &exe, &Vec::from_iter(env), false);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("mismatched") && !stdout.contains("not reached"), "thread {which}:\n{stdout}\n{stderr}");
        assert!(!out.status.success(), "thread {which}: went on:\n{stdout}\n{stderr}");
        // Thread 1 at the end has docked (left); thread 0 at the end waits at its join.
        let other = if which == "0" { "thread 1 has left the parallel region" } else { "thread 0 at the end of the parallel region" };
        for what in [
            format!("thread {which} of a team of 2 waits at a barrier, a barrier the other threads can no longer reach"),
            other.to_string(),
            "the team's threads met different barriers".to_string(),
        ] {
            assert!(stderr.contains(&what), "thread {which}: no message `{what}`:\n{stderr}");
        }
    }
}

/// `WEFT_OMP_BARRIER_REPORT`: a conforming program's thread waiting at a barrier past the
/// time asked for reports once where the team's threads are, and the program runs on as
/// before; without the variable, nothing is printed.
#[test]
fn a_long_barrier_wait_is_reported_when_asked() {
    if let Some(stderr) = check("barrier_report", &[("WEFT_OMP_BARRIER_REPORT", "1")], false) {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("WEFT_OMP_BARRIER_REPORT")).collect();
        assert_eq!(lines.len(), 1, "one report:\n{stderr}");
        assert!(lines[0].contains("thread 0 of a team of 2 has waited") && lines[0].contains("thread 0 at a barrier"), "{stderr}");
        assert!(lines[0].contains("thread 1 is not asleep at a barrier"), "{stderr}");
    }
    if let Some(stderr) = check("barrier_report", &[], false) {
        assert!(stderr.is_empty(), "a report nobody asked for:\n{stderr}");
    }
}

/// The device memory routines serve the host (programs calling them load and run), and
/// a device number that does not exist gets one line naming the routine and the number.
/// Detached tasks' events fulfilled by a thread outside every team, in nested and reused
/// teams: the regions wait for them, and the fulfilling thread's last access to the team
/// comes before the team is reused or freed.
#[test]
fn events_fulfilled_outside_the_team() {
    check("fulfill_outside", &[], false);
}

#[test]
fn target_memory_routines_serve_the_host_and_name_a_missing_device() {
    if let Some(stderr) = check("target", &[], false) {
        for what in ["omp_target_alloc: device 5", "omp_target_is_present: device 5", "omp_target_memcpy: device 5"] {
            assert!(stderr.contains(what), "no message `{what}`:\n{stderr}");
        }
        assert_eq!(stderr.lines().count(), 3, "one line per failing call:\n{stderr}");
    }
}

#[test]
fn the_library_defines_libgomps_version_nodes() {
    let out = Command::new("objdump").arg("-p").arg(lib()).output();
    let Ok(out) = out else {
        println!("skipped: objdump not found");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    for node in ["OMP_1.0", "OMP_3.0", "OMP_5.1", "GOMP_1.0", "GOMP_4.0", "GOMP_4.5", "GOMP_5.0", "GOMP_5.0.1", "GOMP_5.1"] {
        assert!(text.lines().any(|l| l.split_whitespace().last() == Some(node)), "version node {node} missing:\n{text}");
    }
}

#[test]
fn the_stand_in_loads_without_version_warnings() {
    let Some(cc) = common::compiler() else {
        println!("skipped: no C compiler (gcc or $CC)");
        return;
    };
    let exe = compile(&cc, "parallel");
    let out = run(&exe, &[("LD_DEBUG", "files")], false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no version information"), "{stderr}");
    assert!(!stderr.contains("libgomp.so.1.0.0"), "the system libgomp was loaded:\n{stderr}");
}

/// The demo's program (examples/omp/hello.c): a team of 4, a reduction, and tasks with
/// depend clauses whose result shows their order.
#[test]
fn the_demo_program_on_weft() {
    let Some(cc) = common::compiler() else {
        println!("skipped: no C compiler (gcc or $CC)");
        return;
    };
    let exe = common::unique_exe(&out_dir(), "hello");
    let out = Command::new(&cc)
        .current_dir(ROOT)
        .args(["-fopenmp", "-O2", "-Wall", "examples/omp/hello.c", "-o"])
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "{cc} failed on hello.c:\n{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&exe, &[("OMP_NUM_THREADS", "4")], false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && stdout.contains("hello from thread 3 of 4")
            && stdout.contains("sum 1..100000 = 5000050000")
            && stdout.contains("tasks with depend: x = 43"),
        "hello on Weft ({}):\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn places_and_thread_binding() {
    // Places that exist on any machine: several on CPU 0.
    check("places", &[("EXPECT", "four"), ("OMP_PLACES", "{0}:4:0")], false);
    check("places", &[("EXPECT", "list"), ("OMP_PLACES", "{0},{0}:2:0,!{0},{0}"), ("OMP_PROC_BIND", "spread,close")], false);
    check("places", &[("EXPECT", "false"), ("OMP_PLACES", "{0}:4:0"), ("OMP_PROC_BIND", "false")], false);
    check("places", &[("EXPECT", "threads"), ("OMP_PROC_BIND", "close")], false);
    // Eight places on eight CPUs, faked by a preloaded shim (tests/omp/fake_cpus.c) so that
    // spread and close have room on any machine; the bindings are checked through the shim.
    let Some(cc) = common::compiler() else { return };
    let shim = common::unique_exe(&out_dir(), "fake_cpus").with_extension("so");
    let out = Command::new(&cc)
        .current_dir(ROOT)
        .args(["-O2", "-Wall", "-shared", "-fPIC", "tests/omp/fake_cpus.c", "-ldl", "-o"])
        .arg(&shim)
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "{cc} failed on fake_cpus.c:\n{}", String::from_utf8_lossy(&out.stderr));
    let shim = shim.to_str().expect("a UTF-8 path");
    check("places", &[("EXPECT", "eight"), ("OMP_PLACES", "{0}:8"), ("OMP_PROC_BIND", "spread,close"), ("LD_PRELOAD", shim)], false);
}

/// The core worker bound to the primary thread's CPU is the last to join its team.
#[test]
fn a_team_leaves_out_the_worker_on_the_primarys_cpu() {
    check("primary_cpu", &[], false);
}

/// `WEFT_STATS=1` counts, per worker, the team shares (jobs) and explicit task bodies
/// (tasks) it ran, and what other threads ran (the initial thread, an OpenMP thread of our
/// own) on an "other threads" line: each exactly as the program saw them run (a docking job
/// serves region after region, and is still running when the statistics are printed at
/// exit; OpenMP tasks are run by the front end, never by core's `execute`).
#[test]
fn stats_count_team_shares_and_tasks_where_they_ran() {
    // 4 threads on 2 workers: the initial thread, both workers and an OpenMP thread.
    let Some(stderr) = check("stats", &[("OMP_NUM_THREADS", "4"), ("WEFT_STATS", "1")], false) else { return };
    omp_stats::assert_counts_as_the_program(&stderr);
}

/// `WEFT_TRACE` shows OpenMP parallel regions: a span per team member's share, on the track
/// of the thread that ran it (a CPU worker's, or "other threads"), as many as the program
/// counted on each (tests/omp/stats.c).
#[test]
fn a_trace_shows_each_team_members_share_on_its_threads_track() {
    let path = out_dir().join(format!("omp-trace-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let Some(stderr) = check("stats", &[("OMP_NUM_THREADS", "4"), ("WEFT_TRACE", path.to_str().unwrap())], false) else { return };
    let ran = stderr.lines().find(|l| l.starts_with("ran:")).unwrap_or_else(|| panic!("no counts printed:\n{stderr}"));
    let want: Vec<u64> = ran.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no trace at {}: {e}\n{stderr}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let name_of = |tid: &serde_json::Value| -> String {
        let m = events.iter().find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1 && e["tid"] == *tid).unwrap();
        m["args"]["name"].as_str().unwrap().to_string()
    };
    let (mut on_workers, mut elsewhere) = (0, 0);
    // (Worksharing and barrier slices share the category: tests/common/omp_trace.rs.)
    for e in events.iter().filter(|e| e["name"] == "omp parallel") {
        assert_eq!((&e["cat"], &e["ph"]), (&serde_json::Value::from("omp"), &serde_json::Value::from("X")), "{e}");
        if name_of(&e["tid"]).starts_with("cpu ") { on_workers += 1 } else { elsewhere += 1 }
    }
    assert_eq!(
        (on_workers, elsewhere),
        (want[0], want[1]),
        "omp parallel spans (on workers, elsewhere) against the shares counted:\n{stderr}"
    );
    let _ = std::fs::remove_file(&path);
}

/// `WEFT_TRACE` shows a gcc-built program's explicit tasks (a slice per task body that ran,
/// with whether it had depend clauses) and constructs (loop shares, single, taskloop,
/// sections and a combined parallel sections, critical, ordered and doacross waits and
/// posts, teams, barrier waits) on the threads that ran them, inside their region shares
/// (tests/omp/traced.c; tests/common/omp_trace.rs says what is checked).
#[test]
fn a_trace_shows_explicit_tasks_and_worksharing_constructs() {
    let path = out_dir().join(format!("omp-tasks-trace-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let Some(stderr) = check("traced", &[("WEFT_TRACE", path.to_str().unwrap())], false) else { return };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no trace at {}: {e}\n{stderr}", path.display()));
    omp_trace::check(&text, &stderr, false);
    let _ = std::fs::remove_file(&path);
}
