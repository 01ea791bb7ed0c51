//! The OpenCL ICD through the real ICD loader: a vendors directory holding only
//! `weft.icd` (naming a freshly built `libweft_icd.so`), `OCL_ICD_VENDORS` pointing at it,
//! and real programs: `clinfo`, and the C programs of `tests/icd/` compiled with gcc
//! against `-lOpenCL` (ocl-icd). Weft's platform stands on the system's OpenCL vendors
//! (PoCL here, `POCL_DEVICES="basic basic"`: two devices).
//!
//! `libweft_icd.so` is built here with one `rustc` call (the shim depends on `std` only)
//! next to a link to the libweft.so cargo built with this test. A missing gcc, clinfo,
//! OpenCL loader or OpenCL device is a skip that says what is missing, never a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod common;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The vendors directory (with weft.icd), built once; `Err` says why the tests skip.
fn vendors() -> &'static Result<PathBuf, String> {
    static V: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    V.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("icd");
        let vendors = dir.join("vendors");
        std::fs::create_dir_all(&vendors).map_err(|e| e.to_string())?;
        let lib = dir.join("libweft.so");
        let _ = std::fs::remove_file(&lib);
        std::os::unix::fs::symlink(common::lib_dir().join("libweft.so"), &lib).map_err(|e| e.to_string())?;
        let shim = dir.join("libweft_icd.so");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let out = Command::new(rustc)
            .args(["--edition", "2024", "--crate-type", "cdylib", "--crate-name", "weft_icd", "-O"])
            .arg(Path::new(ROOT).join("icd/shim/src/lib.rs"))
            .arg("-o")
            .arg(&shim)
            .output()
            .map_err(|e| format!("rustc: {e}"))?;
        assert!(out.status.success(), "building libweft_icd.so failed:\n{}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(vendors.join("weft.icd"), format!("{}\n", shim.display())).map_err(|e| e.to_string())?;
        let system_vendors = std::fs::read_dir("/etc/OpenCL/vendors")
            .map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "icd")).count())
            .unwrap_or(0);
        if system_vendors == 0 {
            return Err("no OpenCL vendor in /etc/OpenCL/vendors (Debian: pocl-opencl-icd)".into());
        }
        Ok(vendors)
    })
}

macro_rules! vendors_or_skip {
    () => {
        match vendors() {
            Ok(v) => v.clone(),
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        }
    };
}

/// Run `cmd` against Weft's vendors directory, killing it after `secs`.
fn run(cmd: Command, vendors: &Path, secs: u64) -> Output {
    run_on(cmd, vendors, "basic basic", secs)
}

/// [`run`] on PoCL's `devices` (`POCL_DEVICES`). Models and the bus measurement go to a
/// `WEFT_HOME` under the target folder unless the caller chose one: a test run never writes
/// into the user's `~/.cache/weft`.
fn run_on(mut cmd: Command, vendors: &Path, devices: &str, secs: u64) -> Output {
    if !cmd.get_envs().any(|(k, _)| k == "WEFT_HOME") {
        cmd.env("WEFT_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("icd-weft-home"));
    }
    cmd.env("OCL_ICD_VENDORS", vendors)
        .env("POCL_DEVICES", devices)
        .env_remove("WEFT_OCL_VENDORS")
        .env_remove("WEFT_NOPENCL")
        .env_remove("WEFT_SCHED");
    common::output_within(&mut cmd, secs, "the program")
}

/// A test program run on PoCL's `devices` with `env` set: its stdout, once it exited with
/// success and printed "all ok" last (`what` names the run in a failure).
fn run_all_ok(exe: &Path, vendors: &Path, devices: &str, env: &[(&str, &str)], what: &str) -> String {
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied());
    let out = run_on(cmd, vendors, devices, 300);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{what}:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.ends_with("all ok\n"), "{what}:\n{stdout}");
    stdout
}

/// Compile `tests/icd/<name>.c` against the ICD loader; None (skip) without gcc or loader.
fn compile(name: &str) -> Option<PathBuf> {
    compile_with(name, &[])
}

/// [`compile`] with extra compiler flags.
fn compile_with(name: &str, flags: &[&str]) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let exe = common::unique_exe(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("icd"), name);
    let out = Command::new(&cc)
        .current_dir(ROOT)
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .args(flags)
        .arg(format!("tests/icd/{name}.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-lOpenCL")
        .output();
    match out {
        Err(e) => {
            println!("skipped: {cc}: {e}");
            None
        }
        Ok(o) if !o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            // Only a missing header or library skips: an error in the program itself names
            // CL/cl.h too (its notes point at declarations there) and must fail.
            if err.contains("CL/cl.h: No such file") || err.contains("cannot find -lOpenCL") {
                println!("skipped: no OpenCL headers or loader (Debian: opencl-headers ocl-icd-opencl-dev):\n{err}");
                return None;
            }
            panic!("{cc} failed on {name}.c:\n{err}");
        }
        Ok(_) => Some(exe),
    }
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn clinfo_shows_the_weft_platform_and_its_devices_without_errors() {
    let v = vendors_or_skip!();
    if Command::new("clinfo").arg("--version").output().is_err() {
        println!("skipped: clinfo not installed");
        return;
    }
    let out = run(Command::new("clinfo"), &v, 120);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "clinfo failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Number of platforms                               1"), "{stdout}");
    assert!(stdout.contains("Platform Name                                   Weft"), "{stdout}");
    assert!(stdout.contains("Number of devices                                 3"), "{stdout}");
    assert!(stdout.contains("Weft (all 2 devices)"), "{stdout}");
    assert!(stdout.contains("(via Weft, device 2)"), "{stdout}");
    let lower = stdout.to_lowercase();
    for bad in ["invalid", "failed", "error:", "<error"] {
        assert!(!lower.contains(bad), "clinfo printed {bad:?}:\n{stdout}");
    }
}

#[test]
fn a_c_program_runs_kernels_buffers_and_events_on_every_weft_device() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("basic") else { return };
    let home = common::fresh_home("icd_home");
    let stdout = run_all_ok(&exe, &v, "basic basic", &[("WEFT_HOME", home.to_str().expect("a UTF-8 path"))], "basic");
    assert!(stdout.contains("Weft platform: 3 devices"), "{stdout}");
    // Every kernel got a performance model of its own, measured on the devices and saved
    // at exit: `cl-<hash of source and options>-<kernel>.model`.
    let models: Vec<String> = std::fs::read_dir(home.join("models"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let saxpy = models
        .iter()
        .find(|m| m.starts_with("cl-") && m.ends_with("-saxpy.model"))
        .unwrap_or_else(|| panic!("no saxpy model in {models:?}"));
    let text = std::fs::read_to_string(home.join("models").join(saxpy)).unwrap_or_default();
    assert!(text.contains("opencl:"), "{text}");
    let _ = std::fs::remove_dir_all(&home);
    for d in 0..3 {
        // (This line also names the device.)
        assert!(stdout.contains(&format!("device {d} (")) && stdout.contains("saxpy ok"), "device {d}: saxpy ok:\n{stdout}");
    }
    each_device_reports(
        &stdout,
        &["map/square ok", "fill/copy/rect/local ok", "sub-buffer/binary ok", "large buffer ok", "user event/marker/callback ok"],
    );
}

/// Each of the 3 Weft devices printed `device N: <line>` for every line of `lines`.
fn each_device_reports(stdout: &str, lines: &[&str]) {
    for d in 0..3 {
        for line in lines {
            assert!(stdout.contains(&format!("device {d}: {line}")), "device {d}: {line}:\n{stdout}");
        }
    }
}

/// Streams of tiny kernels on in-order queues without profiling, the path where a device
/// driver launches kernels in batches with one marker each (see `tests/icd/inorder.c`):
/// exact counts, events and callbacks, a wait in mid-stream, a user event holding its
/// command back, one buffer taking turns between two devices, and arguments changed
/// between launches (the driver sets only the buffer arguments that changed).
#[test]
fn in_order_streams_of_tiny_kernels_keep_order_events_and_coherence() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("inorder") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "basic devices");
    each_device_reports(&stdout, &["in-order stream ok", "changing arguments ok"]);
    assert!(stdout.contains("two devices: coherent ok"), "{stdout}");
    // Again on PoCL's multi-threaded device, whose commands run on its own threads, not
    // inside the enqueuing call: a read launched right behind kernels still running must
    // wait for them (it once did not, on the transfer queue). A few rounds: it is a race.
    // Then with completions found by polling event status instead of event callbacks:
    // the default for GPUs (vendors/src/opencl/queue.rs, `Poller`), forced here on PoCL's
    // CPU devices so that the path runs without a GPU; both device kinds.
    let pthread_rounds = (0..5).map(|round| ("pthread", &[][..], format!("pthread device, round {round}")));
    let polling = ["basic basic", "pthread"].map(|d| (d, &[("WEFT_OCL_POLL", "1")][..], format!("polling, {d}")));
    for (devices, env, what) in pthread_rounds.chain(polling) {
        let stdout = run_all_ok(&exe, &v, devices, env, &what);
        assert!(stdout.contains("device 1: in-order stream ok"), "{what}:\n{stdout}");
    }
}

/// `CL_MEM_USE_HOST_PTR` memory freed right after the last release, or even before it (see
/// `tests/icd/host_ptr.c`), under AddressSanitizer: Weft gives the region up by the time
/// that release returns (or the last pending command shows complete) and never touches it
/// afterwards; a non-blocking read's destination likewise. On two `basic` devices (data
/// moves between devices and home) and on PoCL's threaded device.
#[test]
fn use_host_ptr_memory_is_never_written_after_the_program_may_free_it() {
    let v = vendors_or_skip!();
    let Some(exe) = compile_with("host_ptr", &["-fsanitize=address", "-fno-omit-frame-pointer"]) else { return };
    // Leaks of PoCL's and the loader's are not this test's business; Rust installs its own
    // alternate signal stack on its threads, which ASan would otherwise unmap as its own.
    let env = [("ASAN_OPTIONS", "detect_leaks=0:use_sigaltstack=0")];
    for (devices, n) in [("basic basic", 3), ("pthread", 2)] {
        let stdout = run_all_ok(&exe, &v, devices, &env, devices);
        for d in 0..n {
            assert!(stdout.contains(&format!("device {d}: host_ptr ok")), "{devices}: device {d}:\n{stdout}");
        }
    }
}

/// OpenCL 3.0 property queries the CTS's api suite makes (see `tests/icd/queries.c`):
/// memory and queue property lists as given, device-queue queries on a host queue, and the
/// unified device's limits: the smallest of its devices'.
#[test]
fn property_queries_return_the_lists_as_given() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("queries") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "queries");
    each_device_reports(&stdout, &["queries ok"]);
    // Two different PoCL devices under the unified one: its limits are the smaller ones.
    // ... and with SOCL's NULL-device convention asked for.
    let stdout = run_all_ok(&exe, &v, "basic pthread", &[("WEFT_SOCL_NULL_DEVICE", "1")], "queries over basic and pthread");
    assert!(stdout.contains("unified limits ok") && stdout.contains("null device queue ok"), "{stdout}");
}

/// Two real devices run kernels at the same time when one host thread drives both (see
/// `tests/icd/overlap.c`): their kernels' profiling intervals overlap, on `basic` devices
/// (which run a kernel inside the thread that flushes it) and on `pthread` ones.
#[test]
fn kernels_on_two_devices_overlap_in_time() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("overlap") else { return };
    for devices in ["basic basic", "pthread pthread"] {
        let stdout = run_all_ok(&exe, &v, devices, &[], devices);
        assert!(stdout.contains("overlap ok"), "{devices}:\n{stdout}");
    }
}

/// An in-order queue on the unified device keeps its order and still spreads (see
/// `tests/icd/follow.c`): beside a long kernel on either real device, its kernels run on
/// the other one and end first (a queue kept on one device fails one of the two rounds);
/// a chain whose steps only the queue orders (a read into host memory, then a write from
/// it; a user event; a marker; fill and copy), its kernels moving between the devices
/// while another thread keeps one busy, gives the sequential result. Again with every
/// in-order successor waiting for its predecessor's completion and placed anew
/// (`WEFT_BACK_TO_BACK_US=0`).
#[test]
fn in_order_unified_queues_keep_their_order_and_spread_over_the_devices() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("follow") else { return };
    // A home of each run's own: the program's spin kernels of very different lengths share
    // one footprint (their iteration count is an argument), so a `spin` model calibrated
    // by other programs' runs (overlap.c, placement.c share the kernel) predicts them all
    // alike and can make a long kernel's device look free; the placement under test is
    // the one a fresh model gets.
    for (i, back_to_back) in ["1000", "0"].into_iter().enumerate() {
        let home = common::fresh_home(&format!("icd_follow_{i}"));
        let env = [("WEFT_BACK_TO_BACK_US", back_to_back), ("WEFT_HOME", home.to_str().expect("a UTF-8 path"))];
        let stdout = run_all_ok(&exe, &v, "basic basic", &env, &format!("{env:?}"));
        assert!(stdout.contains("spread ok") && stdout.contains("order ok"), "{env:?}:\n{stdout}");
    }
}

/// Where a kernel ran (`cl_weft_placement`, see `tests/icd/placement.c`): every device and
/// the platform report the extension; kernels of an out-of-order profiling queue on the
/// unified device each name one of the platform's real devices, both of them in the end;
/// their times are ordered, in Weft's clock (the host's `CLOCK_MONOTONIC_RAW`, which PoCL's
/// devices count in) and do not overlap on one device; host-side commands, markers and user
/// events name none; a real device's queue names that device. On PoCL's `pthread` devices,
/// which run a kernel while Weft already commits the next one behind it, times taken on
/// the host around each launch overlap: the no-overlap check fails unless the times are
/// the device's.
#[test]
fn events_name_the_real_device_that_ran_them_with_its_own_times() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("placement") else { return };
    for devices in ["basic basic", "pthread pthread"] {
        let stdout = run_all_ok(&exe, &v, devices, &[], devices);
        assert!(stdout.contains("placement ok"), "{devices}:\n{stdout}");
    }
    // WEFT_STATS: each device's driver line counts the commands it ran (launches: kernels,
    // and the read of data only that device held), and together they are the program's.
    let mut cmd = Command::new(&exe);
    cmd.env("WEFT_STATS", "1");
    let out = run(cmd, &v, 300);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success() && stdout.ends_with("all ok\n"), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let commands: u64 =
        stdout.lines().find_map(|l| l.strip_prefix("device commands ")).and_then(|n| n.parse().ok()).expect("a command count");
    let launches: Vec<u64> = stderr
        .lines()
        .filter(|l| l.starts_with("worker ") && l.contains(" opencl"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|&w| w == "launches").unwrap_or_else(|| panic!("no launches in {l:?}"));
            f[at + 1].parse().unwrap_or_else(|_| panic!("bad launches in {l:?}"))
        })
        .collect();
    assert_eq!(launches.len(), 2, "two device drivers:\n{stderr}");
    assert!(launches.iter().all(|&n| n > 0), "{stderr}");
    assert_eq!(launches.iter().sum::<u64>(), commands, "{stderr}");
}

/// What the platform and every device report is what Weft implements (see
/// `tests/icd/features.c`): each reported extension has its entry points or needs none;
/// feature macros agree with their device queries; what is reported absent is refused
/// with the specification's error (pipes, sub-groups, on-device queues, IL programs); the
/// unified device reports no more than each real device and names no physical device.
#[test]
fn reported_extensions_and_features_are_what_weft_implements() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("features") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "features");
    assert!(stdout.contains("features ok"), "{stdout}");
}

/// Tiled Cholesky (1024 in tiles of 128) and tiled SGEMM in OpenCL C, each tile its own
/// buffer and the dependencies event wait lists (see `tests/icd/cholesky.c`, kernels and
/// algorithms from `bench/cl/tiles.h`): on one out-of-order queue of the unified device
/// over two `basic` devices, whose kernels Weft spreads over both, the results are those
/// of one real device, element for element, and check on the host. No timing here
/// (`bench/cl/cholesky.sh` measures the speedup).
#[test]
fn tiled_cholesky_and_sgemm_on_the_unified_device_match_one_real_device() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("cholesky") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "cholesky");
    assert!(stdout.contains("cholesky ok") && stdout.contains("sgemm ok"), "{stdout}");
}

/// Separate compilation (see `tests/icd/compile_link.c`): clCompileProgram with a header
/// compiles with the vendor's compiler (a compile error is reported there, with its log),
/// and clLinkProgram links the compiled objects with the vendor's linker, so two objects'
/// file-local functions of one name stay apart; the linked kernel's results are checked on
/// every Weft device.
#[test]
fn compile_and_link_use_the_vendors_compiler_and_linker_on_every_device() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("compile_link") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "compile_link");
    each_device_reports(&stdout, &["compile/link ok"]);
}

/// clCompileProgram's header names and the directory they are written to (see
/// `tests/icd/headers.c`): names leaving it are CL_INVALID_VALUE, subdirectories work, links
/// planted under predictable names redirect nothing, and the directory is gone after the
/// build, failed or not.
#[test]
fn compile_headers_stay_in_a_private_directory_removed_after_the_build() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("headers") else { return };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("icd");
    // The header directory is written by links from sources: forced here, PoCL's linker
    // needing none (WEFT_OCL_LINK_FROM_SOURCE).
    let env = [("TMPDIR", tmp.to_str().expect("a UTF-8 path")), ("WEFT_OCL_LINK_FROM_SOURCE", "1")];
    let stdout = run_all_ok(&exe, &v, "basic basic", &env, "headers");
    each_device_reports(&stdout, &["headers ok"]);
}

/// Random call sequences with one fault each (see `tests/icd/bad_input.c`): the exact
/// CL_INVALID_* codes, no crash, no hang, and the reference data intact. Seeds and steps
/// from `WEFT_ICD_FUZZ_SEEDS` (e.g. `1-200`) and `WEFT_ICD_FUZZ_STEPS`.
#[test]
fn random_bad_calls_get_their_error_codes_without_crash_hang_or_corruption() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("bad_input") else { return };
    let seeds = std::env::var("WEFT_ICD_FUZZ_SEEDS").unwrap_or_else(|_| "1-3".into());
    let (lo, hi) = seeds.split_once('-').map_or((1, 3), |(a, b)| (a.parse().unwrap_or(1), b.parse().unwrap_or(3)));
    let steps = std::env::var("WEFT_ICD_FUZZ_STEPS").unwrap_or_else(|_| "800".into());
    for seed in lo..=hi {
        let mut cmd = Command::new(&exe);
        cmd.arg(seed.to_string()).arg(&steps);
        let out = run(cmd, &v, 300);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success() && stdout.starts_with("ok "), "seed {seed} ({:?}):\n{stdout}\n{stderr}", out.status);
    }
}

/// StarPU's SOCL examples that use only standard OpenCL (Debian `starpu-examples`):
/// `clinfo` lists Weft's devices; `mansched` runs its kernel on every device of the first
/// platform and prints the result, checked here (1024 values of 9 per device).
#[test]
fn socl_examples_run_on_weft_with_their_output_checked() {
    let v = vendors_or_skip!();
    let dir = Path::new("/usr/lib/x86_64-linux-gnu/starpu/examples/socl");
    if !dir.join("mansched").is_file() {
        println!("skipped: SOCL examples not installed (Debian: starpu-examples)");
        return;
    }
    let out = run(Command::new(dir.join("clinfo")), &v, 120);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Weft (all 2 devices)") && stdout.contains("(via Weft, device 2)"), "{stdout}");
    let out = run(Command::new(dir.join("mansched")), &v, 300);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let data: Vec<&str> = lines.windows(2).filter(|w| w[0] == "Data...").map(|w| w[1]).collect();
    assert_eq!(data.len(), 3, "one run per Weft device:\n{stdout}");
    for d in data {
        let values: Vec<&str> = d.split_whitespace().collect();
        assert!(values.len() == 1024 && values.iter().all(|x| *x == "9.000000"), "{d}");
    }
}

/// SOCL's `basic` and `testmap` find their platform by its vendor, "Inria", and build
/// kernels that differ by `SOCL_DEVICE_TYPE_*`: with SOCL's conventions asked for
/// (`WEFT_SOCL=1`) they run on Weft's unified device; the CPU variant (PoCL's devices) of
/// their kernel gives 1024 values of 16, as under SOCL itself. Without it they find no
/// platform (the vendor is honest by default).
#[test]
fn socl_programs_that_look_for_socl_run_with_weft_socl() {
    let v = vendors_or_skip!();
    let dir = Path::new("/usr/lib/x86_64-linux-gnu/starpu/examples/socl");
    if !dir.join("testmap").is_file() {
        println!("skipped: SOCL examples not installed (Debian: starpu-examples)");
        return;
    }
    for name in ["basic", "testmap"] {
        let out = run(Command::new(dir.join(name)), &v, 120);
        let (stdout, stderr) = text(&out);
        assert!(stdout.contains("SOCL platform not found"), "{name} without WEFT_SOCL:\n{stdout}\n{stderr}");
        let mut cmd = Command::new(dir.join(name));
        cmd.env("WEFT_SOCL", "1");
        let out = run(cmd, &v, 300);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{name}:\n{stdout}\n{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let data: Vec<&str> = lines.windows(2).filter(|w| w[0] == "Data...").map(|w| w[1]).collect();
        assert_eq!(data.len(), 1, "{name}:\n{stdout}");
        let values: Vec<&str> = data[0].split_whitespace().collect();
        assert!(values.len() == 1024 && values.iter().all(|x| *x == "16.000000"), "{name}: {}", data[0]);
    }
}

/// One runtime per process (DESIGN.md "Packaging"): with libweft.so preloaded (as an
/// OpenMP program would), the shim the loader opens finds that copy, so one set of
/// workers serves both, and `WEFT_STATS=1` prints one report.
#[test]
fn a_preloaded_libweft_is_the_one_the_icd_uses() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("basic") else { return };
    let mut cmd = Command::new(&exe);
    cmd.env("LD_PRELOAD", common::lib_dir().join("libweft.so")).env("WEFT_STATS", "1");
    let out = run(cmd, &v, 300);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success() && stdout.ends_with("all ok\n"), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches("statistics at exit").count(), 1, "{stderr}");
}

#[test]
fn a_c_program_uses_images_and_samplers_on_every_weft_device() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("images") else { return };
    let stdout = run_all_ok(&exe, &v, "basic basic", &[], "images");
    for d in [0, 1, 2, 12] {
        assert!(stdout.contains(&format!("device {d}: images ok")), "device {d}:\n{stdout}");
    }
    each_device_reports(&stdout, &["image buffers ok"]);
}

#[test]
fn a_c_program_uses_shared_virtual_memory_on_the_weft_platform() {
    let v = vendors_or_skip!();
    let Some(exe) = compile("svm") else { return };
    // PoCL's fine-grained allocations, then coarse-grained ones (as on NVIDIA): mapped for
    // the host between kernels, unmapped around each kernel taking them (svm.rs). On
    // PoCL's basic devices, which run a kernel in the thread that flushes it, and on its
    // pthread ones, which run it later, as a GPU does (a kernel launched right behind
    // another one then finds it still running: issue 32).
    let coarse = &[("WEFT_SVM_COARSE", "1")][..];
    let runs = [
        ("basic basic", &[][..], "svm", "fine-grained svm ok"),
        ("basic basic", coarse, "svm, coarse-grained", "coarse-grained svm ok"),
        ("pthread pthread", &[][..], "svm, pthread", "fine-grained svm ok"),
        ("pthread pthread", coarse, "svm, pthread, coarse-grained", "coarse-grained svm ok"),
    ];
    for (devices, env, run, grain) in runs {
        let stdout = run_all_ok(&exe, &v, devices, env, run);
        for what in [
            "svm capabilities ok",
            "svm kernels, maps and copies ok",
            "svm kernel and buffer over svm ok",
            grain,
            "svm bad inputs ok",
            "clone kernel ok",
        ] {
            assert!(stdout.contains(what), "{what} ({run}):\n{stdout}");
        }
    }
}
