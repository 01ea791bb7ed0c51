//! Bandwidth of 64 MiB writes and reads, and the round trip of a tiny kernel, through
//! `Device::copy`/`OpenClDevice::launch` (completion by event callback) and through the
//! same OpenCL calls made raw (`result` layer, `clFinish`), side by side on one device.
//!
//! `POCL_DEVICES=basic cargo run --release -p weft-vendors --example opencl_bandwidth`

use std::time::{Duration, Instant};
use weft_vendors::opencl::{self, ProgramCache, result as r};
use weft_vendors::{Device, Endpoint, Rect};

fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("reps > 0")
}

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn main() {
    let devs = opencl::devices();
    let Some(dev) = devs.first() else {
        println!("skipped: no OpenCL platform");
        return;
    };
    println!("device: {} [{}]", dev.name(), dev.platform_name());
    let len = 64 << 20;
    let reps: usize = std::env::var("REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let mut host: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let buf = dev.alloc(len).expect("alloc");
    // The raw calls use the same buffer, so only the submission path differs.
    let raw = opencl::memory::raw_mem(buf);
    let q = dev.queue().as_raw();

    let w = best(reps, || {
        // SAFETY: `host` and `buf` live until the wait returns.
        unsafe { dev.copy(Endpoint::Host(host.as_mut_ptr()), Endpoint::Device(buf, 0), Rect::linear(len)) }.unwrap().wait().unwrap()
    });
    let rd = best(reps, || {
        // SAFETY: `host` and `buf` live until the wait returns.
        unsafe { dev.copy(Endpoint::Device(buf, 0), Endpoint::Host(host.as_mut_ptr()), Rect::linear(len)) }.unwrap().wait().unwrap()
    });
    // SAFETY: the same calls, raw: queue and buffer are live, `host` outlives clFinish.
    let raw_w = best(reps, || unsafe {
        let ev = r::enqueue_write_buffer(q, raw, 0, len, host.as_ptr().cast(), &[]).unwrap();
        r::finish(q).unwrap();
        r::release_event(ev).unwrap();
    });
    // SAFETY: as above.
    let raw_rd = best(reps, || unsafe {
        let ev = r::enqueue_read_buffer(q, raw, 0, len, host.as_mut_ptr().cast(), &[]).unwrap();
        r::finish(q).unwrap();
        r::release_event(ev).unwrap();
    });
    println!("64 MiB write: Device::copy {:.2} GB/s, raw {:.2} GB/s", gbps(len, w), gbps(len, raw_w));
    println!("64 MiB read:  Device::copy {:.2} GB/s, raw {:.2} GB/s", gbps(len, rd), gbps(len, raw_rd));

    let cache = ProgramCache::new(None);
    let p = dev.build_program(&cache, "__kernel void tiny(__global int *x) { if (get_global_id(0) == 0) x[0] += 1; }", "").expect("build");
    let mut k = dev.create_kernel(&p, "tiny").expect("kernel");
    // SAFETY: `buf` outlives every launch (freed at the end, after finishing).
    unsafe { k.set_arg_buffer(0, buf) }.unwrap();
    let n = 2000;
    let api = best(3, || {
        for _ in 0..n {
            // SAFETY: as above.
            unsafe { dev.launch(&k, &[1], None) }.unwrap().wait().unwrap();
        }
    });
    let raw_rt = best(3, || {
        for _ in 0..n {
            // SAFETY: queue and kernel are live; `buf` outlives the launch.
            unsafe {
                let ev = r::enqueue_nd_range_kernel(q, k.as_raw(), None, &[1], None).unwrap();
                r::finish(q).unwrap();
                r::release_event(ev).unwrap();
            }
        }
    });
    let api_batch = best(3, || {
        // SAFETY: as above.
        let done: Vec<_> = (0..n).map(|_| unsafe { dev.launch(&k, &[1], None) }.unwrap()).collect();
        done.iter().for_each(|c| c.wait().unwrap());
    });
    let raw_batch = best(3, || {
        for _ in 0..n {
            // SAFETY: as above.
            unsafe { r::release_event(r::enqueue_nd_range_kernel(q, k.as_raw(), None, &[1], None).unwrap()).unwrap() };
        }
        // SAFETY: the queue is live.
        unsafe { r::finish(q) }.unwrap();
    });
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!("tiny kernel, enqueue + wait each: launch+Completion {:.1} us, raw enqueue+clFinish {:.1} us", us(api), us(raw_rt));
    println!("tiny kernel, {n} enqueued then waited: launch+Completion {:.1} us/kernel, raw {:.1} us/kernel", us(api_batch), us(raw_batch));
    dev.finish().unwrap();
    dev.free(buf);
}
