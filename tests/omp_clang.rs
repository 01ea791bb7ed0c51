//! The OpenMP runtime from clang-built programs (LLVM's `__kmpc_*` ABI): compile
//! `tests/omp_clang/*.c` with `clang -fopenmp` and run them with libweft.so standing in for
//! `libomp.so.5` (a symlink on LD_LIBRARY_PATH: LLVM's libomp is never loaded, and a missing
//! entry point or version node fails to load) and through LD_PRELOAD (libomp is loaded but
//! unused). Each program first checks that its `__kmpc_fork_call` reference is bound to the
//! library defining Weft's C API (and, as the stand-in, that no libomp is mapped), then checks
//! its results and prints "<name> OK".
//!
//! Only a missing clang is a skip ("skipped: clang not found"), never a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod common;
#[path = "common/omp_misuse.rs"]
mod omp_misuse;
#[path = "common/omp_stats.rs"]
mod omp_stats;
#[path = "common/omp_trace.rs"]
mod omp_trace;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn lib() -> PathBuf {
    common::lib_dir().join("libweft.so")
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp_clang");
    std::fs::create_dir_all(&d).expect("create the output directory");
    d
}

fn standin() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| common::stand_in_as(&out_dir(), &lib(), "libomp.so.5")).clone()
}

/// `$CLANG`, else `clang`, else `clang-14` (Debian 12 installs only the versioned name).
fn clang() -> Option<String> {
    let names = std::env::var("CLANG").map(|c| vec![c]).unwrap_or_else(|_| vec!["clang".into(), "clang-14".into()]);
    names.into_iter().find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Extra clang flags a program needs.
fn flags(name: &str) -> &'static [&'static str] {
    match name {
        // threadprivate through the runtime (__kmpc_threadprivate_cached), not TLS.
        "threadprivate" | "threadprivate_ctor" => &["-fnoopenmp-use-tls"],
        // Source locations in the runtime calls (clang passes ";unknown;unknown;0;0;;" without).
        "traced" => &["-g"],
        // `for simd` loops whose `ordered simd` regions keep them from being vectorized.
        "ordered" => &["-Wno-pass-failed"],
        _ => &[],
    }
}

/// The C++ driver beside the C one (`clang-14` → `clang++-14`).
fn cxx(cc: &str) -> String {
    match cc.rfind("clang") {
        Some(i) => format!("{}clang++{}", &cc[..i], &cc[i + 5..]),
        None => cc.to_string(),
    }
}

/// `tests/omp_clang/<name>.c`, or `<name>.cpp` built with the C++ driver, or else the
/// gcc-built tests' `tests/omp/<name>.c`.
fn compile(cc: &str, name: &str) -> PathBuf {
    let exe = common::unique_exe(&out_dir(), name);
    let here = |f: String| Path::new(ROOT).join(&f).exists().then_some(f);
    let (cc, src) = match (here(format!("tests/omp_clang/{name}.cpp")), here(format!("tests/omp_clang/{name}.c"))) {
        (Some(cpp), _) => (cxx(cc), cpp),
        (None, Some(c)) => (cc.to_string(), c),
        (None, None) => (cc.to_string(), format!("tests/omp/{name}.c")),
    };
    let out = Command::new(&cc)
        .current_dir(ROOT)
        .args(["-fopenmp", "-O2", "-Wall", "-Werror"])
        .args(flags(name))
        .arg(src)
        .args(["-ldl", "-o"])
        .arg(&exe)
        .output()
        .expect("run clang");
    assert!(out.status.success(), "{cc} failed on {name}:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Compile `tests/omp_clang/<name>.c`, then run it as the stand-in's program and under
/// LD_PRELOAD; both runs must pass. Returns each run's stderr (None: clang is missing).
fn check(name: &str, env: &[(&str, &str)]) -> Option<Vec<String>> {
    let outs = run_both(name, &[], env)?;
    for (how, out) in &outs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains(&format!("{name} OK")),
            "{name} ({how}) failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
    }
    Some(outs.into_iter().map(|(_, o)| String::from_utf8_lossy(&o.stderr).into_owned()).collect())
}

/// Compile `name` ([`compile`]) and run it with `args` as the stand-in's program and under
/// LD_PRELOAD: (how, output) of each run; None (a skip printed) without clang.
fn run_both(name: &str, args: &[&str], env: &[(&str, &str)]) -> Option<Vec<(&'static str, std::process::Output)>> {
    let Some(cc) = clang() else {
        println!("skipped: clang not found");
        return None;
    };
    let exe = compile(&cc, name);
    let mut outs = Vec::new();
    for preload in [false, true] {
        let mut cmd = Command::new(&exe);
        if preload {
            cmd.env("LD_PRELOAD", lib()).env_remove("LD_LIBRARY_PATH");
        } else {
            cmd.env("LD_LIBRARY_PATH", standin()).env_remove("LD_PRELOAD");
        }
        for v in [
            "OMP_NUM_THREADS",
            "OMP_SCHEDULE",
            "OMP_DYNAMIC",
            "OMP_WAIT_POLICY",
            "OMP_MAX_ACTIVE_LEVELS",
            "OMP_PROC_BIND",
            "OMP_CANCELLATION",
        ] {
            cmd.env_remove(v);
        }
        cmd.env("WEFT_NCPU", "2").env("WEFT_NOPENCL", "0").env("WEFT_NCUDA", "0").envs(env.iter().copied());
        let how = if preload { "LD_PRELOAD" } else { "libomp.so.5 stand-in" };
        cmd.args(args);
        outs.push((how, common::output_within(&mut cmd, 120, &format!("{name} ({how})"))));
    }
    Some(outs)
}

/// `WEFT_STATS` counts each team member's share and each task body where it ran, as the
/// program counted them (tests/omp/stats.c, built by clang): `if(0)` tasks too, whose bodies
/// the compiler's own code runs between `__kmpc_omp_task_begin_if0` and `_complete_if0`.
#[test]
fn stats_count_team_shares_and_tasks_where_they_ran() {
    let Some(stderrs) = check("stats", &[("OMP_NUM_THREADS", "4"), ("WEFT_STATS", "1")]) else { return };
    for stderr in stderrs {
        omp_stats::assert_counts_as_the_program(&stderr);
    }
}

#[test]
fn parallel_regions_serialized_and_nested() {
    check("parallel", &[]);
}

#[test]
fn static_dynamic_guided_runtime_and_ordered_loops() {
    check("loops", &[("OMP_SCHEDULE", "dynamic,2")]);
    check("loops", &[("OMP_SCHEDULE", "guided"), ("OMP_WAIT_POLICY", "passive")]);
}

/// Ordered regions in iteration order: `ordered threads simd` (which clang 14 emits no
/// runtime call for) and iterations that skip their ordered region, on every schedule and
/// the 4/4u/8/8u dispatch entry points.
#[test]
fn ordered_loops_keep_iteration_order() {
    check("ordered", &[]);
}

#[test]
fn single_master_critical_barrier_reductions() {
    check("sync", &[]);
}

/// Tasks queued after the other thread reached the end of the region: all run, some on it.
#[test]
fn tasks_queued_late() {
    check("late_tasks", &[]);
}

#[test]
fn tasks() {
    check("tasks", &[]);
}

#[test]
fn host_teams_and_distribute() {
    check("teams", &[]);
}

#[test]
fn cancellation() {
    check("cancel", &[("OMP_CANCELLATION", "true")]);
}

#[test]
fn detach_untied_and_if0_tasks() {
    check("detach", &[]);
}

/// tests/omp/fulfill_outside.c through the kmp ABI's detach events.
#[test]
fn events_fulfilled_outside_the_team() {
    check("fulfill_outside", &[]);
}

#[test]
fn taskloop() {
    check("taskloop", &[]);
}

#[test]
fn task_reductions() {
    check("taskred", &[]);
}

#[test]
fn doacross_loops() {
    check("doacross", &[]);
}

#[test]
fn threadprivate_without_tls() {
    check("threadprivate", &[]);
}

/// C++ objects: registered constructor and destructor (clang++ beside clang).
#[test]
fn threadprivate_constructors_and_destructors() {
    check("threadprivate_ctor", &[]);
}

/// The `__kmpc_atomic_*` family, called directly (clang 14 never calls it for host code).
#[test]
fn runtime_atomics() {
    check("atomic", &[]);
}

/// Their `long double` and `_Complex long double` forms (x87 values on the stack).
#[test]
fn runtime_atomics_long_double() {
    check("atomic10", &[]);
}

/// `__kmpc_dist_for_static_init_*`, `__kmpc_dist_dispatch_init_*`, `__kmpc_team_static_init_*`,
/// called directly (clang 14 splits `distribute parallel for` instead).
#[test]
fn distribute_parallel_for_entry_points() {
    check("dist", &[]);
}

/// `__kmpc_task_reduction_init` and `__kmpc_task_reduction_modifier_init` (the layout before
/// OpenMP 5.0's), called directly.
#[test]
fn task_reductions_older_layout() {
    check("taskred_old", &[]);
}

/// Misuse from clang-built programs, as from gcc-built ones (tests/omp.rs; the programs are
/// the gcc tests' own): fulfilling a detach event twice aborts with a message after the
/// first fulfil completed the task.
#[test]
fn fulfilling_an_event_twice_aborts_with_a_message() {
    for (how, out) in run_both("fulfill_twice", &[], &[]).unwrap_or_default() {
        omp_misuse::assert_fulfilled_twice(how, &out);
    }
}

/// Destroying a held lock, unsetting one another thread holds (clang's `omp_lock_t` is 8
/// bytes, its `omp_nest_lock_t` 8): a line each, the lock left as it was.
#[test]
fn lock_misuse_gets_a_message_and_leaves_the_lock_as_it_was() {
    for stderr in check("lock_misuse", &[]).unwrap_or_default() {
        for what in omp_misuse::LOCK_MISUSE {
            assert!(stderr.contains(what), "no message `{what}`:\n{stderr}");
        }
    }
}

/// A barrier only one thread reaches: diagnosed and aborted, as from gcc-built programs.
#[test]
fn a_barrier_not_every_thread_reaches_is_diagnosed() {
    for which in ["0", "1"] {
        for (how, out) in run_both("barrier_mismatch", &[which], &[]).unwrap_or_default() {
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(!out.status.success() && !stdout.contains("not reached"), "{how}, thread {which}: went on:\n{stdout}\n{stderr}");
            assert!(stderr.contains("a barrier the other threads can no longer reach"), "{how}, thread {which}: no message:\n{stderr}");
        }
    }
}

/// The stand-in loads without the dynamic linker complaining about versions, and LLVM's
/// libomp is not loaded.
#[test]
fn the_stand_in_loads_without_libomp() {
    let Some(cc) = clang() else {
        println!("skipped: clang not found");
        return;
    };
    let exe = compile(&cc, "parallel");
    let mut cmd = Command::new(&exe);
    cmd.env("LD_LIBRARY_PATH", standin()).env("LD_DEBUG", "files").env("WEFT_NCPU", "2").env("WEFT_NOPENCL", "0").env("WEFT_NCUDA", "0");
    let out = common::output_within(&mut cmd, 120, "parallel (LD_DEBUG=files)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no version information") && !stderr.contains("not found"), "{stderr}");
    assert!(!stderr.contains("libomp-14.so") && !stderr.contains("llvm-14"), "LLVM's libomp was loaded:\n{stderr}");
}

/// The names `nm -D` lists as defined in `lib`.
fn exports(lib: &Path) -> Option<std::collections::BTreeSet<String>> {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().filter_map(|l| l.split_whitespace().nth(2)).map(|n| n.split('@').next().unwrap_or(n).to_string()).collect())
}

/// Every `__kmpc_atomic_*` LLVM's libomp exports, Weft exports too (a program built for
/// libomp by any compiler finds its atomics), and the other entry points this crate adds for
/// compilers other than clang 14.
#[test]
fn the_library_exports_libomps_atomics() {
    let Some(cc) = clang() else {
        println!("skipped: clang not found");
        return;
    };
    let Ok(out) = Command::new(&cc).arg("-print-file-name=libomp.so.5").output() else {
        println!("skipped: {cc} does not say where libomp is");
        return;
    };
    let libomp = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let (Some(theirs), Some(ours)) = (libomp.is_absolute().then(|| exports(&libomp)).flatten(), exports(&lib())) else {
        println!("skipped: nm or LLVM's libomp.so.5 not found");
        return;
    };
    let missing: Vec<&String> = theirs.iter().filter(|n| n.starts_with("__kmpc_atomic_") && !ours.contains(*n)).collect();
    assert!(theirs.iter().any(|n| n.starts_with("__kmpc_atomic_")), "{} exports no atomics", libomp.display());
    assert!(missing.is_empty(), "libomp's atomics Weft does not export: {missing:?}");
    for n in [
        "__kmpc_dist_for_static_init_4",
        "__kmpc_dist_dispatch_init_8u",
        "__kmpc_team_static_init_8",
        "__kmpc_task_reduction_init",
        "__kmpc_task_reduction_modifier_init",
        "__kmpc_threadprivate",
        "__kmpc_threadprivate_register_vec",
        "__kmpc_omp_reg_task_with_affinity",
    ] {
        assert!(ours.contains(n), "{n} is not exported");
    }
}

#[test]
fn the_library_defines_libomps_version_node() {
    let Ok(out) = Command::new("objdump").arg("-p").arg(lib()).output() else {
        println!("skipped: objdump not found");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.split_whitespace().last() == Some("VERSION")), "version node VERSION missing:\n{text}");
}

/// `WEFT_TRACE` shows a clang-built program's explicit tasks (a slice per task body that
/// ran, with whether it had depend clauses and its source line) and constructs (those of
/// the gcc test, plus master, masked, static loops and distribute, which gcc inlines) on
/// the threads that ran them, inside their region shares (tests/omp/traced.c built by
/// clang; tests/common/omp_trace.rs says what is checked).
#[test]
fn a_trace_shows_explicit_tasks_and_worksharing_constructs() {
    let Some(cc) = clang() else {
        println!("skipped: clang not found");
        return;
    };
    let exe = compile(&cc, "traced");
    let path = out_dir().join(format!("traced-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut cmd = Command::new(&exe);
    cmd.env("LD_LIBRARY_PATH", standin()).env_remove("LD_PRELOAD").env_remove("OMP_NUM_THREADS");
    cmd.env("WEFT_NCPU", "2").env("WEFT_NOPENCL", "0").env("WEFT_NCUDA", "0").env("WEFT_TRACE", &path);
    let out = common::output_within(&mut cmd, 120, "traced");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("traced OK"), "traced failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no trace at {}: {e}\n{stderr}", path.display()));
    omp_trace::check(&text, &stderr, true);
    let _ = std::fs::remove_file(&path);
}
