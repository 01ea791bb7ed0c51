//! CUDA GPUs as memory nodes and workers. Without a CUDA driver (or without a GPU) each
//! GPU test prints `skipped: no CUDA driver`; tests that need NVRTC or cuBLAS on top say so
//! when those libraries are missing. The tests without a GPU check what a machine without
//! one must do: discover nothing, without panicking, and keep CUDA-only codelets off it.
//!
//! Its own `main` sets `WEFT_LIMIT_CUDA_MEM` before any thread exists (the eviction test
//! reads it through `Config::from_env`), runs the tests in order, and prints
//! `N passed, N failed`.

use std::sync::Arc;
use weft_core::cuda::LaunchDims;
use weft_core::*;

/// `v[i] += x` for `i < n`; the default launch rounds up to whole blocks.
const ADD: &str = r#"
extern "C" __global__ void add(float *v, float x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += x;
}
"#;

/// The `WEFT_LIMIT_CUDA_MEM` the eviction test runs under, MiB.
const LIMIT_MIB: usize = 1;

fn config(ncpu: usize) -> Config {
    Config { ncpu: Some(ncpu), ncuda: None, sched: PolicyKind::Eager, spin_us: 5, ..Config::default() }
}

fn cuda_workers(rt: &Runtime) -> Vec<usize> {
    rt.workers().iter().filter(|w| w.arch == Arch::Cuda).map(|w| w.id).collect()
}

/// `rt` if it has a CUDA worker; else prints the skip line.
fn with_gpu(rt: Runtime) -> Option<Runtime> {
    if cuda_workers(&rt).is_empty() {
        println!("skipped: no CUDA driver");
        return None;
    }
    Some(rt)
}

fn add_args(x: f32, n: usize) -> Vec<u8> {
    [x.to_ne_bytes(), (n as u32).to_ne_bytes()].concat()
}

fn add_codelet() -> Arc<Codelet> {
    Codelet::builder("add")
        .cuda_impl(CudaImpl::new(ADD, "add").arg_sizes(&[4, 4]))
        .cpu(|ctx| {
            let x: f32 = ctx.arg();
            ctx.vector_mut::<f32>(0).iter_mut().for_each(|v| *v += x);
            Ok(())
        })
        .build()
}

fn a_machine_without_gpu_discovers_none_and_cuda_only_codelets_are_refused() {
    let rt = Runtime::new(config(1)).unwrap();
    assert!(rt.workers().iter().all(|w| matches!(w.arch, Arch::Cpu | Arch::Cuda)));
    assert_eq!(rt.workers().iter().filter(|w| w.arch == Arch::Cpu).count(), 1);
    let gpus = cuda_workers(&rt).len();
    if gpus == 0 {
        assert!(weft_core::cuda::devices().is_empty());
    }
    // CUDA workers each have their own memory node.
    for w in cuda_workers(&rt) {
        let node = rt.workers()[w].node;
        assert!(node > 0 && rt.memory_nodes()[node].id == node);
    }
    // A CUDA-only codelet: no implementation without a GPU; with one, REDUX keeps it off.
    let only = Codelet::builder("only-cuda").cuda_fn(|_| Ok(())).build();
    let v = rt.register_vector(vec![0.0f32; 8]).unwrap();
    let r = rt.submit(TaskBuilder::new(&only).access(&v, AccessMode::Redux));
    assert!(matches!(r, Err(Error::NoImplementation(_))), "{r:?}");
    if gpus == 0 {
        let r = rt.submit(TaskBuilder::new(&only).access(&v, AccessMode::RW));
        assert!(matches!(r, Err(Error::NoImplementation(_))), "{r:?}");
    }
    // A codelet with a CPU implementation too runs on the CPU.
    rt.submit(TaskBuilder::new(&add_codelet()).access(&v, AccessMode::RW).args(&add_args(1.0, 8))).unwrap();
    assert_eq!(v.into_vec::<f32>().unwrap(), vec![1.0f32; 8]);
    // `Config::default()` uses no GPU.
    let rt = Runtime::new(Config { ncpu: Some(1), ..Config::default() }).unwrap();
    assert!(cuda_workers(&rt).is_empty());
}

fn data_is_right_across_gpu_host_and_gpu() {
    let Some(rt) = with_gpu(Runtime::new(config(1)).unwrap()) else { return };
    let gpus = cuda_workers(&rt);
    let cpu = rt.workers().iter().find(|w| w.arch == Arch::Cpu).unwrap().id;
    let (a, b) = (gpus[0], *gpus.last().unwrap());
    let n = 4099; // not a multiple of the block size
    let v = rt.register_vector((0..n).map(|i| i as f32).collect::<Vec<f32>>()).unwrap();
    let add = add_codelet();
    // GPU A, host, GPU B (A again with one GPU), host, GPU A: every hop needs the newest data.
    let hops = [a, cpu, b, cpu, a];
    for (k, w) in hops.into_iter().enumerate() {
        rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW).args(&add_args(10.0 * (k + 1) as f32, n)).on_worker(w)).unwrap();
    }
    let out = v.into_vec::<f32>().unwrap();
    assert!(out.iter().enumerate().all(|(i, &x)| x == i as f32 + 150.0), "{:?} … {:?}", &out[..4], &out[n - 4..]);
    let per = rt.tasks_per_worker();
    assert_eq!(per[cpu], 2);
    assert_eq!(gpus.iter().map(|&g| per[g]).sum::<u64>(), 3);
}

fn a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents() {
    let Some(rt) = with_gpu(Runtime::new(config(1)).unwrap()) else { return };
    if !weft_core::cuda::nvrtc_present() {
        println!("skipped: no NVRTC (libnvrtc.so)");
        return;
    }
    let gpu = cuda_workers(&rt)[0];
    let v = rt.register_vector(vec![0.0f32; 64]).unwrap();
    let bad = Codelet::builder("bad").cuda(r#"extern "C" __global__ void bad(float *v) { v[0] = undeclared_thing; }"#, "bad").build();
    let add = add_codelet();
    let t = rt.submit(TaskBuilder::new(&bad).access(&v, AccessMode::RW)).unwrap();
    let dep = rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW).args(&add_args(1.0, 64))).unwrap();
    let e = t.wait().unwrap_err().to_string();
    assert!(e.contains("undeclared_thing"), "the NVRTC log should reach the submitter: {e}");
    assert!(matches!(dep.wait(), Err(Error::Task(TaskError::Cancelled(_)))));
    // A kernel name that does not exist, and a blob that does not match the arguments.
    let missing = Codelet::builder("missing").cuda(ADD, "nope").build();
    let e = rt.submit(TaskBuilder::new(&missing).access(&v, AccessMode::RW)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let add_only = Codelet::builder("add-cuda").cuda_impl(CudaImpl::new(ADD, "add").arg_sizes(&[4, 4])).build();
    let e = rt.submit(TaskBuilder::new(&add_only).access(&v, AccessMode::RW).arg([1u32; 3]).on_worker(gpu)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("12 bytes"), "{e}");
    // Nothing is stuck: the handle still works, with explicit launch dimensions too.
    let add_dims = Codelet::builder("add-dims")
        .cuda_impl(CudaImpl::new(ADD, "add").arg_sizes(&[4, 4]).dims(|_, _| LaunchDims::for_elements(64, 32)))
        .build();
    rt.submit(TaskBuilder::new(&add_only).access(&v, AccessMode::RW).args(&add_args(2.0, 64))).unwrap().wait().unwrap();
    rt.submit(TaskBuilder::new(&add_dims).access(&v, AccessMode::RW).args(&add_args(0.5, 64))).unwrap().wait().unwrap();
    assert_eq!(v.into_vec::<f32>().unwrap(), vec![2.5f32; 64]);
}

fn a_cuda_fn_codelet_runs_cublas_sgemm() {
    let Some(rt) = with_gpu(Runtime::new(config(1)).unwrap()) else { return };
    if !weft_core::cuda::cublas_present() {
        println!("skipped: no cuBLAS (libcublas.so)");
        return;
    }
    let gpu = cuda_workers(&rt)[0];
    // Column-major: A is m×k, B is k×n, C is m×n (a matrix's nx is its row count).
    let (m, n, k) = (5usize, 3usize, 4usize);
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5).collect();
    let c0: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    let (alpha, beta) = (1.5f32, 0.5f32);
    let mut want = c0.clone();
    for j in 0..n {
        for i in 0..m {
            let dot: f32 = (0..k).map(|p| a[i + p * m] * b[p + j * k]).sum();
            want[i + j * m] = alpha * dot + beta * c0[i + j * m];
        }
    }
    let ha = rt.register_matrix(a, m, k, m).unwrap();
    let hb = rt.register_matrix(b, k, n, k).unwrap();
    let hc = rt.register_matrix(c0, m, n, m).unwrap();
    let sgemm = Codelet::builder("sgemm")
        .cuda_fn(|ctx| {
            use weft_core::cuda::cudarc::cublas::{result, sys};
            let (Shape::Matrix { nx: m, ny: k, .. }, Shape::Matrix { ny: n, .. }) = (ctx.shape(0), ctx.shape(1)) else {
                return Err("matrices expected".into());
            };
            let [alpha, beta]: [f32; 2] = ctx.arg();
            let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
            let (m, n, k) = (m as i32, n as i32, k as i32);
            // SAFETY: the three buffers are this task's packed replicas on this GPU (leading
            // dimensions m, k, m), valid until the driver's fence after this call completes;
            // alpha and beta are host values read during the call (host pointer mode).
            unsafe {
                result::sgemm(
                    *blas.handle(),
                    sys::cublasOperation_t::CUBLAS_OP_N,
                    sys::cublasOperation_t::CUBLAS_OP_N,
                    m,
                    n,
                    k,
                    &alpha,
                    ctx.device_ptr(0) as *const f32,
                    m,
                    ctx.device_ptr(1) as *const f32,
                    k,
                    &beta,
                    ctx.device_ptr(2) as *mut f32,
                    m,
                )
            }
            .map_err(|e| format!("cublasSgemm: {e:?}"))
        })
        .modes(&[AccessMode::R, AccessMode::R, AccessMode::RW])
        .build();
    rt.submit(TaskBuilder::new(&sgemm).handle(&ha).handle(&hb).handle(&hc).arg([alpha, beta]).on_worker(gpu)).unwrap().wait().unwrap();
    let got = hc.into_vec::<f32>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "C[{i}] = {g}, want {w}");
    }
    // A failing cuda_fn fails its task (after the driver waited for the GPU).
    let fails = Codelet::builder("fails").cuda_fn(|_| Err("no luck".into())).build();
    let v = rt.register_vector(vec![0u8; 16]).unwrap();
    let e = rt.submit(TaskBuilder::new(&fails).access(&v, AccessMode::RW)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("no luck"), "{e}");
}

fn eviction_under_a_small_cuda_memory_limit_gives_right_results() {
    // 2 MiB of floats in 16 blocks on GPUs limited to 1 MiB each: blocks are evicted
    // (written back first) and fetched again.
    let env = Config::from_env().unwrap();
    assert_eq!(env.cuda_mem_limit, Some(LIMIT_MIB << 20));
    let rt = Runtime::new(Config { ncpu: Some(0), ncuda: env.ncuda, cuda_mem_limit: env.cuda_mem_limit, nopencl: Some(0), ..config(0) });
    // Without a GPU, WEFT_NCPU=0 leaves no worker at all.
    let Ok(rt) = rt else {
        println!("skipped: no CUDA driver");
        return;
    };
    let Some(rt) = with_gpu(rt) else { return };
    let n = 1 << 19;
    let v = rt.register_vector(vec![1.0f32; n]).unwrap();
    let blocks = v.partition(Filter::VectorBlock { parts: 16 }).unwrap();
    let add = Codelet::builder("add-cuda").cuda_impl(CudaImpl::new(ADD, "add").arg_sizes(&[4, 4])).build();
    for round in 0..3 {
        for b in &blocks {
            rt.submit(TaskBuilder::new(&add).access(b, AccessMode::RW).args(&add_args(1.0 + round as f32, n / 16))).unwrap();
        }
    }
    rt.wait_for_all().unwrap();
    let gpu_nodes: Vec<usize> = cuda_workers(&rt).iter().map(|&w| rt.workers()[w].node).collect();
    let evictions: usize = gpu_nodes.iter().map(|&i| rt.memory_nodes()[i].evictions()).sum();
    assert!(evictions > 0, "no eviction");
    assert!(gpu_nodes.iter().all(|&i| rt.memory_nodes()[i].used() <= LIMIT_MIB << 20));
    drop(blocks);
    assert!(v.into_vec::<f32>().unwrap().iter().all(|&x| x == 7.0));
}

fn main() {
    // SAFETY: no other thread exists yet.
    unsafe { std::env::set_var("WEFT_LIMIT_CUDA_MEM", LIMIT_MIB.to_string()) };
    type Test = (&'static str, fn());
    let tests: [Test; 5] = [
        (
            "a_machine_without_gpu_discovers_none_and_cuda_only_codelets_are_refused",
            a_machine_without_gpu_discovers_none_and_cuda_only_codelets_are_refused,
        ),
        ("data_is_right_across_gpu_host_and_gpu", data_is_right_across_gpu_host_and_gpu),
        (
            "a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents",
            a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents,
        ),
        ("a_cuda_fn_codelet_runs_cublas_sgemm", a_cuda_fn_codelet_runs_cublas_sgemm),
        ("eviction_under_a_small_cuda_memory_limit_gives_right_results", eviction_under_a_small_cuda_memory_limit_gives_right_results),
    ];
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, f) in tests {
        if !filter.is_empty() && !filter.iter().any(|p| name.contains(p.as_str())) {
            continue;
        }
        let r = std::panic::catch_unwind(f);
        println!("test {name} ... {}", if r.is_ok() { "ok" } else { "FAILED" });
        if r.is_ok() { passed += 1 } else { failed += 1 }
    }
    println!("\n{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
