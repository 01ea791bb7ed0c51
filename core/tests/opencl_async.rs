//! Device-to-device traffic on OpenCL devices that run commands on their own threads
//! (PoCL "pthread": `POCL_DEVICES="pthread pthread"`), so copies really are asynchronous: a
//! driver whose task needs data that only another device holds starts the copy home and runs
//! other tasks meanwhile (the task is *deferred*), then copies home → device once it landed.
//! Its own `main` sets `POCL_DEVICES` before any thread exists; without OpenCL it prints
//! `skipped: no OpenCL platform`.

use std::sync::Arc;
use weft_core::*;

const ADD: &str = "__kernel void add(__global float *v, float x) { v[get_global_id(0)] += x; }";
const PEEK: &str = "__kernel void peek(__global const float *v, __global float *out) { \
    size_t n = get_global_size(0); if (get_global_id(0) == 0) { out[0] = v[0]; out[1] = v[n - 1]; } }";

fn main() {
    // SAFETY: no other thread exists yet.
    unsafe { std::env::set_var("POCL_DEVICES", "pthread pthread") };
    let dir = std::env::temp_dir().join(format!("weft-kernels-async-{}", std::process::id()));
    let r = std::panic::catch_unwind(|| data_hops_between_asynchronous_devices_are_deferred_not_waited_for(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    match r {
        Ok(true) => println!("test data_hops_between_asynchronous_devices_are_deferred_not_waited_for ... ok\n\n1 passed, 0 failed"),
        Ok(false) => println!("skipped: no OpenCL platform with two devices"),
        Err(_) => {
            println!("test data_hops_between_asynchronous_devices_are_deferred_not_waited_for ... FAILED\n\n0 passed, 1 failed");
            std::process::exit(1);
        }
    }
}

/// Blocks of 4 MiB bounce between devices A and B: after an RW kernel on one device, a
/// read-only kernel on the other (its data only on the first device: a device-to-device hop
/// through host) races a CPU task reading the same block (which needs it home too). Every
/// value read must be the sequential one, and the drivers must have put task starts off
/// instead of waiting for copies (deferred > 0 in the statistics).
fn data_hops_between_asynchronous_devices_are_deferred_not_waited_for(dir: &std::path::Path) -> bool {
    let rt = match Runtime::new(Config {
        ncpu: Some(1),
        nopencl: Some(2),
        ncuda: Some(0),
        kernel_cache: Some(dir.to_path_buf()),
        // PoCL's devices are of type CPU: let them run what has a CPU implementation too.
        opencl_on_cpus: true,
        ..Config::default()
    }) {
        Ok(rt) => rt,
        Err(_) => return false,
    };
    let ocl: Vec<usize> = rt.workers().iter().filter(|w| w.arch == Arch::OpenCl).map(|w| w.id).collect();
    if ocl.len() < 2 {
        return false;
    }
    let cpu = rt.workers().iter().find(|w| w.arch == Arch::Cpu).unwrap().id;
    let add = Codelet::builder("add").opencl(ADD, "add").build();
    let peek = Codelet::builder("peek").opencl(PEEK, "peek").build();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let read = Codelet::builder("read")
        .cpu(move |ctx| {
            let v = ctx.vector::<f32>(0);
            s.lock().unwrap().push((ctx.arg::<u32>(), v[0], v[v.len() - 1]));
            Ok(())
        })
        .build();
    const N: usize = 1 << 20;
    let blocks: Vec<DataHandle> = (0..4).map(|b| rt.register_vector(vec![b as f32; N]).unwrap()).collect();
    let hops = 12u32;
    let mut peeks = Vec::new();
    for hop in 0..hops {
        for (b, h) in blocks.iter().enumerate() {
            let (dev, other) = (ocl[(hop as usize + b) % 2], ocl[(hop as usize + b + 1) % 2]);
            rt.submit(TaskBuilder::new(&add).access(h, AccessMode::RW).arg(1.0f32).on_worker(dev)).unwrap();
            let out = rt.register_vector(vec![0.0f32; 2]).unwrap();
            rt.submit(TaskBuilder::new(&peek).access(h, AccessMode::R).access(&out, AccessMode::W).on_worker(other)).unwrap();
            rt.submit(TaskBuilder::new(&read).access(h, AccessMode::R).arg(hop * 16 + b as u32).on_worker(cpu)).unwrap();
            peeks.push((hop, b, out));
        }
    }
    rt.wait_for_all().unwrap();
    for (hop, b, out) in peeks {
        let want = b as f32 + (hop + 1) as f32;
        assert_eq!(out.into_vec::<f32>().unwrap(), vec![want, want], "the device read of block {b} after hop {hop}");
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|x| x.0);
    assert_eq!(seen.len(), (hops * 4) as usize);
    for (tag, first, last) in seen {
        let (hop, b) = (tag / 16, tag % 16);
        let want = b as f32 + (hop + 1) as f32;
        assert!(first == want && last == want, "block {b} after hop {hop}: {first}, {last}, want {want}");
    }
    for (b, h) in blocks.into_iter().enumerate() {
        let v = h.into_vec::<f32>().unwrap();
        assert!(v.iter().all(|&x| x == b as f32 + hops as f32), "block {b} at the end: {}", v[0]);
    }
    let report = rt.stats_report();
    let deferred: u64 = report
        .lines()
        .filter(|l| l.starts_with("worker "))
        .filter_map(|l| l.split_whitespace().skip_while(|w| *w != "deferred").nth(1).and_then(|n| n.parse::<u64>().ok()))
        .sum();
    assert!(deferred > 0, "no task start was deferred for a copy home:\n{report}");
    println!("{report}");
    true
}
