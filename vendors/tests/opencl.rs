//! The OpenCL backend against real vendors: PoCL in CI (`scripts/setup.sh` installs
//! `pocl-opencl-icd`), two single-core "basic" devices.
//!
//! This file has its own `main` (`harness = false`, run by `libtest-mimic`): PoCL reads
//! `POCL_DEVICES` once, when first used, and setting an environment variable is only sound
//! while the process has one thread, so `main` sets it before any test thread starts.
//! Tests that need another environment (`OCL_ICD_VENDORS`) re-run this binary as a child
//! process.
//!
//! Without any OpenCL vendor every test prints `skipped: no OpenCL platform` and passes.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use weft_vendors::opencl::{self, OpenClDevice, OpenClError, ProgramCache};
use weft_vendors::{Buffer, Device, DeviceKind, Endpoint, Rect};

type TestFn = fn() -> Result<(), Failed>;

/// Set in a child process: which child role to play.
const CHILD: &str = "WEFT_OPENCL_TEST_CHILD";

fn main() {
    if let Ok(role) = std::env::var(CHILD) {
        child(&role);
        return;
    }
    // SAFETY: no other thread exists yet (libtest-mimic starts its threads in `run`).
    unsafe { std::env::set_var("POCL_DEVICES", "basic basic") };
    let args = Arguments::from_args();
    let tests: Vec<(&str, TestFn)> = vec![
        ("discovery_finds_two_devices", discovery_finds_two_devices),
        ("empty_vendor_dir_means_no_devices", empty_vendor_dir_means_no_devices),
        ("concurrent_first_discoveries_all_find_the_devices", concurrent_first_discoveries_all_find_the_devices),
        ("alloc_is_zeroed_and_round_trips", alloc_is_zeroed_and_round_trips),
        ("rect_copies", rect_copies),
        ("vector_add_kernel", vector_add_kernel),
        ("build_failure_carries_the_log", build_failure_carries_the_log),
        ("disk_cache_is_hit_on_second_build", disk_cache_is_hit_on_second_build),
        ("disk_cache_never_loads_what_others_could_write", disk_cache_never_loads_what_others_could_write),
        ("device_to_device_through_host", device_to_device_through_host),
        ("one_driver_thread_per_device", one_driver_thread_per_device),
        ("two_threads_share_one_device", two_threads_share_one_device),
        ("a_cpu_vendors_threads_run_nicer_than_weft", a_cpu_vendors_threads_run_nicer_than_weft),
    ];
    let trials = tests.into_iter().map(|(name, f)| Trial::test(name, f)).collect();
    libtest_mimic::run(&args, trials).exit();
}

fn child(role: &str) {
    match role {
        "count-devices" => {
            let d = opencl::discover();
            println!("devices: {}", d.devices.len());
            for s in d.skipped {
                println!("skipped: {s}");
            }
        }
        "concurrent-discover" => {
            // Every thread's discovery is the process's first use of the vendors.
            let n = 8;
            let start = std::sync::Barrier::new(n);
            let counts: Vec<usize> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..n)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            opencl::discover().devices.len()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().expect("discovery thread")).collect()
            });
            println!("counts: {counts:?}");
        }
        "thread-nice" => {
            let d = opencl::discover();
            let pocl = d.devices.iter().filter(|d| d.platform_name().contains("Portable Computing Language")).count();
            println!("pocl-devices {pocl}");
            println!("self {}", nice_of("/proc/thread-self"));
            let list = || -> Vec<(String, i32)> {
                let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten();
                tasks
                    .map(|t| {
                        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                        (comm.trim().replace(' ', "_"), nice_of(&t.path().to_string_lossy()))
                    })
                    .collect()
            };
            // A new thread names itself once it runs: give the poller up to 2 s to show.
            let mut threads = list();
            for _ in 0..200 {
                if threads.iter().any(|(c, _)| c.starts_with("weft")) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
                threads = list();
            }
            for (comm, nice) in threads {
                println!("thread {comm} {nice}");
            }
            drop(d);
        }
        _ => panic!("unknown child role {role}"),
    }
}

/// A thread's nice value from `DIR/stat` (`/proc/self/task/TID` or `/proc/thread-self`).
fn nice_of(dir: &str) -> i32 {
    let stat = std::fs::read_to_string(format!("{dir}/stat")).expect("reading a thread's stat");
    // Field 19; the name (field 2) may hold spaces, so count from its closing parenthesis.
    let rest = &stat[stat.rfind(')').expect("stat has a name") + 2..];
    rest.split(' ').nth(16).and_then(|f| f.parse().ok()).expect("stat's nice field")
}

/// Devices shared by the tests (discovered once, like core would).
fn devices() -> &'static [OpenClDevice] {
    static DEVICES: OnceLock<Vec<OpenClDevice>> = OnceLock::new();
    DEVICES.get_or_init(opencl::devices)
}

/// The devices, or `None` after printing the skip line.
fn need_devices(n: usize) -> Option<&'static [OpenClDevice]> {
    let d = devices();
    if d.is_empty() {
        println!("skipped: no OpenCL platform");
        return None;
    }
    if d.len() < n {
        println!("skipped: needs {n} OpenCL devices, found {}", d.len());
        return None;
    }
    Some(d)
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-opencl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("creating a temporary directory");
    d
}

fn write(dev: &OpenClDevice, buf: Buffer, off: usize, data: &[u8]) {
    // SAFETY: `data` outlives the wait; `buf` is the device's own and large enough.
    let c = unsafe { dev.copy(Endpoint::Host(data.as_ptr().cast_mut()), Endpoint::Device(buf, off), Rect::linear(data.len())) };
    c.expect("enqueue write").wait().expect("write");
}

fn read(dev: &OpenClDevice, buf: Buffer, off: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0xAAu8; len];
    // SAFETY: `out` outlives the wait; `buf` is the device's own and large enough.
    let c = unsafe { dev.copy(Endpoint::Device(buf, off), Endpoint::Host(out.as_mut_ptr()), Rect::linear(len)) };
    c.expect("enqueue read").wait().expect("read");
    out
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn discovery_finds_two_devices() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    for d in devs {
        println!("{} [{}] via {}: {:?} bytes", d.name(), d.platform_name(), d.vendor_library(), d.memory_size());
        assert_eq!(d.kind(), DeviceKind::OpenCl);
        assert!(!d.name().is_empty());
        assert!(d.memory_size().is_some_and(|m| m > 0));
        assert!(d.host_ptr(Buffer { addr: 1, len: 1 }).is_none());
    }
    let pocl = devs.iter().filter(|d| d.platform_name().contains("Portable Computing Language")).count();
    if pocl > 0 {
        assert!(pocl >= 2, "POCL_DEVICES=\"basic basic\" should give two PoCL devices, got {pocl}");
    }
    Ok(())
}

fn empty_vendor_dir_means_no_devices() -> Result<(), Failed> {
    // Runs with or without OpenCL: nothing to discover is not an error.
    let dir = tmpdir("empty-vendors");
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).env(CHILD, "count-devices").env("OCL_ICD_VENDORS", &dir).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    std::fs::remove_dir_all(&dir)?;
    assert!(out.status.success(), "child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.trim(), "devices: 0");
    Ok(())
}

/// Runtimes created at once (tests, an application's threads) discover at once: each must
/// find every device. PoCL initialises its devices in the first `clGetDeviceIDs` and tells
/// a concurrent caller there are none (see `opencl::loader`'s doc); each child process
/// here starts eight first discoveries together.
fn concurrent_first_discoveries_all_find_the_devices() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let expected = devs.len();
    let exe = std::env::current_exe()?;
    for round in 0..5 {
        let out = Command::new(&exe).env(CHILD, "concurrent-discover").env("POCL_DEVICES", "basic basic").output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        let want = format!("counts: {:?}", vec![expected; 8]);
        assert_eq!(text.trim(), want, "round {round}: a concurrent discovery missed devices");
    }
    Ok(())
}

/// PoCL's `pthread` device computes on threads it starts when it loads: those run
/// `WEFT_VENDOR_NICE` (default 5) nicer than the thread that discovered the devices, which
/// keeps its own niceness, as do Weft's threads (the poller, with `WEFT_OCL_POLL=1`);
/// `WEFT_VENDOR_NICE=0` leaves them all alike (see `opencl::on_niced_thread` for why).
fn a_cpu_vendors_threads_run_nicer_than_weft() -> Result<(), Failed> {
    let base = nice_of("/proc/thread-self");
    if base >= 19 {
        println!("skipped: this process already runs at nice {base}");
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    for (setting, want) in [(None, (base + 5).min(19)), (Some("3"), (base + 3).min(19)), (Some("0"), base)] {
        let mut cmd = Command::new(&exe);
        cmd.env(CHILD, "thread-nice").env("POCL_DEVICES", "pthread").env("WEFT_OCL_POLL", "1");
        match setting {
            Some(v) => cmd.env("WEFT_VENDOR_NICE", v),
            None => cmd.env_remove("WEFT_VENDOR_NICE"),
        };
        let out = cmd.output()?;
        let setting = setting.unwrap_or("unset");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        if text.contains("pocl-devices 0") {
            println!("skipped: no PoCL pthread device");
            return Ok(());
        }
        let field = |line: &str| line.rsplit(' ').next().and_then(|n| n.parse::<i32>().ok()).expect("a nice value");
        let me = text.lines().find(|l| l.starts_with("self ")).map(field).expect("the child's own line");
        assert_eq!(me, base, "WEFT_VENDOR_NICE={setting}: the discovering thread's niceness changed:\n{text}");
        let threads: Vec<(&str, i32)> =
            text.lines().filter_map(|l| l.strip_prefix("thread ")).map(|l| (l.split(' ').next().unwrap_or(""), field(l))).collect();
        let weft: Vec<_> = threads.iter().filter(|(c, _)| c.starts_with("weft")).collect();
        assert!(!weft.is_empty(), "WEFT_OCL_POLL=1 should start a poller thread:\n{text}");
        assert!(weft.iter().all(|&&(_, n)| n == base), "Weft's threads must keep the caller's niceness:\n{text}");
        let vendor = threads.iter().filter(|(c, _)| !c.starts_with("weft")).filter(|&&(_, n)| n != base).count();
        if want == base {
            assert_eq!(vendor, 0, "WEFT_VENDOR_NICE=0 must leave every thread alone:\n{text}");
        } else {
            assert!(vendor > 0, "WEFT_VENDOR_NICE={setting}: no thread of PoCL's runs nicer:\n{text}");
            assert!(
                threads.iter().all(|&(_, n)| n == base || n == want),
                "WEFT_VENDOR_NICE={setting}: PoCL's threads should run at nice {want}:\n{text}"
            );
        }
    }
    Ok(())
}

fn alloc_is_zeroed_and_round_trips() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    for dev in devs {
        let len = (1 << 20) + 3;
        let buf = dev.alloc(len)?;
        // Other tests share the device: the count is at least ours.
        assert!(dev.allocated() >= len);
        assert!(read(dev, buf, 0, len).iter().all(|&b| b == 0), "alloc must zero-fill");
        let data = pattern(len, 7);
        write(dev, buf, 0, &data);
        assert_eq!(read(dev, buf, 0, len), data);
        // Offsets on both sides.
        write(dev, buf, 1000, &[1, 2, 3]);
        assert_eq!(read(dev, buf, 999, 5), [data[999], 1, 2, 3, data[1003]]);
        // An empty buffer and an empty copy are fine.
        let empty = dev.alloc(0)?;
        assert_eq!(read(dev, empty, 0, 0), Vec::<u8>::new());
        dev.free(empty);
        dev.free(buf);
    }
    Ok(())
}

fn rect_copies() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let dev = &devs[0];
    // A 3x4 tile of a 10-wide, 6-high host matrix, at (row 1, column 2), into a packed
    // device buffer at byte 5.
    let host = pattern(60, 1);
    let buf = dev.alloc(64)?;
    let tile = Rect { region: [3, 4, 1], src_pitch: [10, 60], dst_pitch: [3, 12] };
    // SAFETY: `host` and `buf` cover the rectangle and outlive the wait.
    unsafe { dev.copy(Endpoint::Host(host.as_ptr().add(12).cast_mut()), Endpoint::Device(buf, 5), tile) }?.wait()?;
    let expect: Vec<u8> = (1..5).flat_map(|r| host[r * 10 + 2..r * 10 + 5].to_vec()).collect();
    assert_eq!(read(dev, buf, 5, 12), expect);

    // Back out, strided on the host side, 3-D with a slice pitch that is not a multiple of
    // the row pitch (split per slice): 2 slices of 2 rows of 2 bytes.
    let back_rect = Rect { region: [2, 2, 2], src_pitch: [3, 6], dst_pitch: [5, 11] };
    let mut back = vec![0u8; 22];
    // SAFETY: as above.
    unsafe { dev.copy(Endpoint::Device(buf, 5), Endpoint::Host(back.as_mut_ptr()), back_rect) }?.wait()?;
    let mut want = vec![0u8; 22];
    // SAFETY: both vectors cover the rectangle.
    unsafe { weft_vendors::copy_rect_host(expect.as_ptr(), want.as_mut_ptr(), back_rect) };
    assert_eq!(back, want);

    // Device to device on one device, strided both sides.
    let other = dev.alloc(64)?;
    let d2d = Rect { region: [2, 3, 1], src_pitch: [3, 9], dst_pitch: [4, 12] };
    // SAFETY: both buffers are this device's and cover the rectangle.
    unsafe { dev.copy(Endpoint::Device(buf, 5), Endpoint::Device(other, 1), d2d) }?.wait()?;
    let got = read(dev, other, 0, 64);
    let mut want = vec![0u8; 64];
    // SAFETY: both vectors cover the rectangle.
    unsafe { weft_vendors::copy_rect_host(expect.as_ptr(), want.as_mut_ptr().add(1), d2d) };
    assert_eq!(got, want);
    dev.free(other);
    dev.free(buf);
    Ok(())
}

const VADD: &str = r#"
__kernel void vadd(__global const float *a, __global const float *b, __global float *c,
                   uint n, float scale) {
    size_t i = get_global_id(0);
    if (i < n) c[i] = scale * (a[i] + b[i]);
}
"#;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn bytes_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Run `vadd` from `program` on `dev` and check the result.
fn run_vadd(dev: &OpenClDevice, program: &opencl::Program) -> Result<(), Failed> {
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let bufs = [dev.alloc(4 * n)?, dev.alloc(4 * n)?, dev.alloc(4 * n)?];
    write(dev, bufs[0], 0, &f32_bytes(&a));
    write(dev, bufs[1], 0, &f32_bytes(&b));
    let mut k = dev.create_kernel(program, "vadd")?;
    assert_eq!(k.num_args()?, 5);
    // SAFETY: the buffers are this device's and are freed only after the wait.
    unsafe { k.set_task_args(&bufs, &[&(n as u32).to_ne_bytes(), &0.5f32.to_ne_bytes()]) }?;
    // SAFETY: as above.
    unsafe { dev.launch(&k, &[1024], None) }?.wait()?;
    let c = bytes_f32(&read(dev, bufs[2], 0, 4 * n));
    for i in 0..n {
        assert_eq!(c[i], 0.5 * (a[i] + b[i]), "c[{i}]");
    }
    for b in bufs {
        dev.free(b);
    }
    Ok(())
}

fn vector_add_kernel() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let cache = ProgramCache::new(None);
    for dev in devs {
        let p = dev.build_program(&cache, VADD, "-cl-std=CL1.2")?;
        run_vadd(dev, &p)?;
    }
    // A second request for the same program on the same device is a memory hit.
    let again = devs[0].build_program(&cache, VADD, "-cl-std=CL1.2")?;
    assert_eq!(cache.stats().memory_hits, 1);
    // Launching with arguments unset is an error, not a crash.
    let k = devs[0].create_kernel(&again, "vadd")?;
    // SAFETY: no buffer arguments are set; the launch is refused.
    let refused = unsafe { devs[0].launch(&k, &[16], None) };
    assert!(refused.as_ref().is_err_and(|e| e.to_string().contains("CL_INVALID_KERNEL_ARGS")), "{refused:?}");
    let err = devs[0].create_kernel(&again, "no_such_kernel").unwrap_err();
    assert!(matches!(err, OpenClError::Kernel { .. }), "{err}");
    assert!(err.to_string().contains("CL_INVALID_KERNEL_NAME"), "{err}");
    Ok(())
}

fn build_failure_carries_the_log() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let cache = ProgramCache::new(None);
    let bad = "__kernel void broken(__global float *x) { x[0] = undeclared_identifier_xyz; }";
    match devs[0].build_program(&cache, bad, "") {
        Err(e @ OpenClError::Build { .. }) => {
            let text = e.to_string();
            assert!(text.contains("CL_BUILD_PROGRAM_FAILURE"), "{text}");
            assert!(text.contains("undeclared_identifier_xyz"), "the build log should name the culprit:\n{text}");
        }
        Err(e) => panic!("expected a build error, got {e}"),
        Ok(_) => panic!("a broken kernel built"),
    }
    assert_eq!(cache.stats().source_builds, 0);
    Ok(())
}

fn disk_cache_is_hit_on_second_build() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let dev = &devs[0];
    let dir = tmpdir("kcache");
    let source = format!("// disk cache test\n{VADD}");
    let first = ProgramCache::new(Some(dir.clone()));
    let p = dev.build_program(&first, &source, "")?;
    drop(p);
    let file = first.file_for(dev.identity(), "", &source).expect("a cache with a directory names files");
    let s = first.stats();
    if s.disk_writes == 0 {
        println!("skipped: {} offers no program binaries", dev.name());
        return Ok(());
    }
    assert_eq!((s.source_builds, s.disk_writes, s.disk_hits), (1, 1, 0));
    assert!(file.exists(), "{} should exist", file.display());

    // A new cache (a new process, in effect) finds the binary on disk.
    let second = ProgramCache::new(Some(dir.clone()));
    let p = dev.build_program(&second, &source, "")?;
    assert_eq!(second.stats(), opencl::CacheStats { source_builds: 0, memory_hits: 0, disk_hits: 1, disk_writes: 0 });
    run_vadd(dev, &p)?;

    // A corrupt file is a miss and gets rebuilt, not an error.
    std::fs::write(&file, b"WEFTCLBIN1\ngarbage")?;
    let third = ProgramCache::new(Some(dir.clone()));
    let p = dev.build_program(&third, &source, "")?;
    assert_eq!((third.stats().source_builds, third.stats().disk_hits), (1, 0));
    run_vadd(dev, &p)?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// A cached binary that another user could have written (a world- or group-writable file,
/// or any file in a directory others can write) is never loaded: the program is built from
/// source. The file is then replaced by one only the owner can write; the directory is left
/// alone (nothing is written into it). The owner check itself cannot be exercised without
/// a second user; `weft_vendors::fsutil`'s unit tests cover the rule.
fn disk_cache_never_loads_what_others_could_write() -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let dev = &devs[0];
    let dir = tmpdir("kcache-trust").join("kernels");
    let source = format!("// disk cache trust test\n{VADD}");
    let first = ProgramCache::new(Some(dir.clone()));
    drop(dev.build_program(&first, &source, "")?);
    if first.stats().disk_writes == 0 {
        println!("skipped: {} offers no program binaries", dev.name());
        return Ok(());
    }
    let file = first.file_for(dev.identity(), "", &source).expect("a cache with a directory names files");
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o7777);
    assert_eq!(mode(&dir)?, 0o700, "the cache directory is created private");
    assert_eq!(mode(&file)?, 0o600);
    let fresh_build = |what: &str| -> Result<opencl::CacheStats, Failed> {
        let c = ProgramCache::new(Some(dir.clone()));
        let p = dev.build_program(&c, &source, "")?;
        run_vadd(dev, &p)?;
        let s = c.stats();
        assert_eq!((s.source_builds, s.disk_hits), (1, 0), "{what}: built from source, not loaded");
        Ok(s)
    };

    for m in [0o666, 0o620] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m))?;
        let s = fresh_build(&format!("a file of mode {m:o}"))?;
        assert_eq!(s.disk_writes, 1);
        assert_eq!(mode(&file)?, 0o600, "the rebuilt binary replaces the file others could write");
    }
    // A symbolic link in place of the file is not followed.
    let elsewhere = dir.with_file_name("elsewhere.clbin");
    std::fs::rename(&file, &elsewhere)?;
    std::os::unix::fs::symlink(&elsewhere, &file)?;
    fresh_build("a symbolic link")?;
    assert!(!std::fs::symlink_metadata(&file)?.file_type().is_symlink(), "the link is replaced by a file");

    // The untouched file loads again, but not from a directory others can write.
    let c = ProgramCache::new(Some(dir.clone()));
    drop(dev.build_program(&c, &source, "")?);
    assert_eq!(c.stats().disk_hits, 1, "a private file in a private directory is used");
    let written = std::fs::read(&file)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
    let s = fresh_build("a world-writable directory")?;
    assert_eq!(s.disk_writes, 0, "nothing is written into a directory others can write");
    assert_eq!(std::fs::read(&file)?, written);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770))?;
    fresh_build("a group-writable directory")?;
    std::fs::remove_dir_all(dir.parent().expect("tmpdir/kernels"))?;
    Ok(())
}

fn device_to_device_through_host() -> Result<(), Failed> {
    let Some(devs) = need_devices(2) else { return Ok(()) };
    let (a, b) = (&devs[0], &devs[1]);
    let len = 256 * 1024;
    let data = pattern(len, 42);
    let (ba, bb) = (a.alloc(len)?, b.alloc(len)?);
    write(a, ba, 0, &data);
    // What core does between two device nodes: stage through host memory.
    let staging = read(a, ba, 0, len);
    write(b, bb, 0, &staging);
    assert_eq!(read(b, bb, 0, len), data);
    a.free(ba);
    b.free(bb);
    Ok(())
}

fn one_driver_thread_per_device() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    // Each device driven by its own thread, many copies in flight before any wait.
    std::thread::scope(|s| {
        for (i, dev) in devs.iter().enumerate() {
            s.spawn(move || {
                let len = 4096;
                let buf = dev.alloc(len * 16).unwrap();
                let srcs: Vec<Vec<u8>> = (0..16).map(|j| pattern(len, (i * 16 + j) as u8)).collect();
                let done: Vec<_> = srcs
                    .iter()
                    .enumerate()
                    .map(|(j, s)| {
                        // SAFETY: `srcs` outlives the waits below; disjoint destinations.
                        unsafe { dev.copy(Endpoint::Host(s.as_ptr().cast_mut()), Endpoint::Device(buf, j * len), Rect::linear(len)) }
                            .unwrap()
                    })
                    .collect();
                for c in done {
                    c.wait().unwrap();
                }
                assert_eq!(read(dev, buf, 0, len * 16), srcs.concat());
                dev.free(buf);
            });
        }
    });
    Ok(())
}

fn two_threads_share_one_device() -> Result<(), Failed> {
    let Some(devs) = need_devices(1) else { return Ok(()) };
    let dev = &devs[0];
    // Two threads allocating, writing and reading on one device at once: with PoCL 3.1
    // "basic" this deadlocks unless submissions are serialized (see device.rs).
    std::thread::scope(|s| {
        for t in 0..2u8 {
            s.spawn(move || {
                for i in 0..40u8 {
                    let len = 64 * 1024;
                    let buf = dev.alloc(len).unwrap();
                    let data = pattern(len, t.wrapping_mul(64).wrapping_add(i));
                    write(dev, buf, 0, &data);
                    assert_eq!(read(dev, buf, 0, len), data);
                    dev.free(buf);
                }
            });
        }
    });
    Ok(())
}
