//! Runs the `sgemm` and `cholesky` (f64 and f32) examples at small sizes: on two CPU
//! workers, then on two CPU workers and two PoCL devices (`POCL_DEVICES="basic basic"`,
//! skipped when no OpenCL device is found). Each run must report a correct result (the
//! examples check theirs).
//!
//! The examples are compiled into this test as modules and their `run` called with
//! runtimes configured here, so `cargo test --test examples` needs no example binaries
//! (and the settings do not depend on the caller's `WEFT_*` variables).

// Both examples include `examples/common/mod.rs`: two copies of it here, as in the examples.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../examples/cholesky.rs"]
mod cholesky;
#[allow(dead_code)]
#[path = "../examples/sgemm.rs"]
mod sgemm;

use std::sync::{Once, OnceLock};
use weft::{Arch, Config, Runtime};

type Example = fn(&Runtime, usize, usize) -> Result<(), Box<dyn std::error::Error>>;

/// Two PoCL devices, unless the caller chose devices. Set once, before any runtime of this
/// process looks for OpenCL devices (every test calls this first).
fn pocl_devices() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("POCL_DEVICES").is_none() {
            // SAFETY: no other thread reads the environment meanwhile: every test calls
            // this first, and `Once` holds them until it returns.
            unsafe { std::env::set_var("POCL_DEVICES", "basic basic") };
        }
    });
}

fn runtime(ncpu: usize, nopencl: usize) -> Runtime {
    pocl_devices();
    let base = Config::from_env().expect("config");
    // PoCL's devices are of type CPU: beside CPU workers they take the examples' kernels only when asked.
    Runtime::new(Config { ncpu: Some(ncpu), nopencl: Some(nopencl), nnull: 0, opencl_on_cpus: true, ..base }).expect("runtime")
}

/// Whether Weft finds an OpenCL device here (asked once, of a runtime with one CPU worker,
/// so that the answer does not depend on the runtime a test asks for).
fn opencl_found() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| runtime(1, 2).workers().iter().any(|w| w.arch == Arch::OpenCl))
}

/// Run `example` at each `(n, tile)` on a fresh runtime of `ncpu` CPU workers and up to
/// `nopencl` OpenCL devices (none found here: skipped). Every runtime asked for devices
/// must have one: a runtime that finds none while another found some is a failure.
fn check(name: &str, example: Example, sizes: &[(usize, usize)], ncpu: usize, nopencl: usize) {
    if nopencl > 0 && !opencl_found() {
        eprintln!("{name}: no OpenCL device found; OpenCL run skipped");
        return;
    }
    for &(n, tile) in sizes {
        let rt = runtime(ncpu, nopencl);
        if nopencl > 0 {
            assert!(rt.workers().iter().any(|w| w.arch == Arch::OpenCl), "{name}: this runtime found no OpenCL device");
        }
        if let Err(e) = example(&rt, n, tile) {
            panic!("{name} n = {n}, tile = {tile}, {ncpu} CPU workers, {nopencl} OpenCL devices: {e}");
        }
    }
}

#[test]
fn sgemm_cpu() {
    check("sgemm", sgemm::run, &[(192, 64), (96, 24)], 2, 0);
}

/// Tiles of 64: the register-blocked OpenCL kernel; of 24: the simple one. Then on the
/// OpenCL devices alone, so that both kernels surely run.
#[test]
fn sgemm_cpu_and_opencl() {
    check("sgemm", sgemm::run, &[(192, 64), (96, 24)], 2, 2);
    check("sgemm", sgemm::run, &[(192, 64), (96, 24)], 0, 2);
}

#[test]
fn cholesky_cpu() {
    check("cholesky", cholesky::run::<f64>, &[(192, 48), (100, 20)], 2, 0);
}

/// Tiles of 48: the blocked OpenCL kernels; of 20: the simple ones. Then on the OpenCL
/// devices alone, so that every OpenCL kernel (POTRF and TRSM too) surely runs.
#[test]
fn cholesky_cpu_and_opencl() {
    check("cholesky", cholesky::run::<f64>, &[(192, 48), (100, 20)], 2, 2);
    check("cholesky", cholesky::run::<f64>, &[(192, 48), (100, 20)], 0, 2);
}

/// Single precision: faer's `f32` kernels, and the OpenCL program built with `-DREAL=float`.
#[test]
fn cholesky_f32() {
    check("cholesky f32", cholesky::run::<f32>, &[(192, 48), (100, 20)], 2, 0);
    check("cholesky f32", cholesky::run::<f32>, &[(192, 48), (100, 20)], 2, 2);
    check("cholesky f32", cholesky::run::<f32>, &[(192, 48), (100, 20)], 0, 2);
}
