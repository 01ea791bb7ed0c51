//! What the integration tests that run gcc-built programs against the freshly built
//! libweft.so share (`mod common;` in each): finding the library, the C compiler, and a
//! `libgomp.so.1` stand-in directory.
#![allow(dead_code)] // each test uses some of it

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An empty directory of this test process's own under the target folder, for a program's
/// `WEFT_HOME` (`tag` tells the tests apart): what a run saves there starts from nothing.
pub fn fresh_home(tag: &str) -> PathBuf {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    home
}

/// The directory holding the libweft.so built with this test: cargo builds the package's
/// cdylib next to the test executable (`target/<profile>/deps`) or one level up.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable is in a directory");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        if dir.join("libweft.so").is_file() {
            return dir.to_path_buf();
        }
    }
    panic!("libweft.so not found next to {}: build the `weft` package (cargo build -p weft)", exe.display());
}

/// The C compiler (`$CC`, else gcc), or None: the caller skips, naming what is missing.
pub fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let ok = Command::new(&cc).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    ok.then_some(cc)
}

/// A directory under `dir` holding `libgomp.so.1` → `lib`, made once per process and put in
/// place atomically (a new link renamed over the old one): tests run in parallel, and a
/// program of another test may be loading the link right now.
pub fn stand_in(dir: &Path, lib: &Path) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| stand_in_as(dir, lib, "libgomp.so.1")).clone()
}

/// A directory under `dir` holding the link `name` → `lib` (`libomp.so.5` for clang-built
/// programs), put in place atomically as for [`stand_in`]; call it once per process.
pub fn stand_in_as(dir: &Path, lib: &Path, name: &str) -> PathBuf {
    let d = dir.join("standin");
    std::fs::create_dir_all(&d).expect("create the stand-in directory");
    let tmp = d.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(lib, &tmp).unwrap_or_else(|e| panic!("link {name} to the runtime: {e}"));
    std::fs::rename(&tmp, d.join(name)).unwrap_or_else(|e| panic!("put the {name} link in place: {e}"));
    d
}

/// A path for an executable built from `name` under `dir`, new at each call: two tests may
/// build the same program at once, and running a file another gcc is still writing fails
/// ("Text file busy").
pub fn unique_exe(dir: &Path, name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    dir.join(format!("{name}-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
}

/// Run `cmd` with its output captured, killing it if it has not ended within `secs`: a
/// hang then fails the test with `what` and whatever the program printed.
pub fn output_within(cmd: &mut Command, secs: u64, what: &str) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().expect("wait for the program").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect the output");
            panic!(
                "{what} hung; killed. stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect the output")
}

/// The command that runs `exe`: by itself, or on one CPU if `one_cpu` ([`on_one_cpu`]);
/// None, with the reason printed as a skip, if taskset is missing.
pub fn command(exe: &Path, one_cpu: bool) -> Option<Command> {
    if !one_cpu {
        return Some(Command::new(exe));
    }
    let cmd = on_one_cpu(exe);
    if cmd.is_none() {
        println!("skipped: taskset (util-linux) not found");
    }
    cmd
}

/// `exe` run by `taskset` on one CPU this process may use (the first it is allowed), for runs
/// with more threads than processors on any machine; None if taskset is missing.
pub fn on_one_cpu(exe: &Path) -> Option<Command> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?.trim();
    let first: String = list.chars().take_while(char::is_ascii_digit).collect();
    let ok = Command::new("taskset").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    (ok && !first.is_empty()).then(|| {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", &first]).arg(exe);
        cmd
    })
}
