//! The peers of the tiled DGEMM and Cholesky examples on a CUDA GPU (issue 3): cuBLAS
//! `dgemm` and cuSOLVER `dpotrf` called directly on GPU 0, whole matrices already on the
//! GPU, best of 3 runs. Run beside `WEFT_NCUDA=1 cargo run --release --example cholesky`
//! (and the DGEMM of `examples/demo.rs`) on the same machine to compare GFLOP/s.
//!
//! `cuda_peers [n]` (default 8192). Without a CUDA driver it prints
//! `skipped: no CUDA driver` and exits 0.

use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys as solver;
use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
use std::time::Instant;
use weft_core::cuda::cudarc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    if !weft_core::cuda::driver_present() {
        println!("skipped: no CUDA driver");
        return Ok(());
    }
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8192);
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    println!("GPU 0: {}; n = {n}", ctx.name()?);

    // A random matrix, and a symmetric positive definite one (random symmetric + n·I).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let a: Vec<f64> = (0..n * n).map(|_| next()).collect();
    let mut spd = vec![0f64; n * n];
    for j in 0..n {
        for i in j..n {
            let x = next() + if i == j { n as f64 } else { 0.0 };
            spd[i + j * n] = x;
            spd[j + i * n] = x;
        }
    }
    let da = stream.clone_htod(&a)?;
    let mut dc = stream.alloc_zeros::<f64>(n * n)?;
    let ni = i32::try_from(n)?;

    let handle = cudarc::cublas::CudaBlas::new(stream.clone())?;
    let mut best = f64::MAX;
    for _ in 0..3 {
        stream.synchronize()?;
        let t0 = Instant::now();
        {
            let (pa, _ra) = da.device_ptr(&stream);
            let (pc, _rc) = dc.device_ptr_mut(&stream);
            let (one, zero) = (1.0f64, 0.0f64);
            // SAFETY: A and C are n×n device matrices of this context (leading dimension
            // n); alpha and beta are host values (host pointer mode); the guards keep the
            // buffers' stream order until the call is enqueued.
            let s = unsafe {
                blas::cublasDgemm_v2(
                    *handle.handle(),
                    blas::cublasOperation_t::CUBLAS_OP_N,
                    blas::cublasOperation_t::CUBLAS_OP_T,
                    ni,
                    ni,
                    ni,
                    &one,
                    pa as *const f64,
                    ni,
                    pa as *const f64,
                    ni,
                    &zero,
                    pc as *mut f64,
                    ni,
                )
            };
            if s != blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                return Err(format!("cublasDgemm: {s:?}").into());
            }
        }
        stream.synchronize()?;
        best = best.min(t0.elapsed().as_secs_f64());
    }
    println!("cuBLAS dgemm  : {:8.1} GFLOP/s ({:.3} s)", 2.0 * (n as f64).powi(3) / best * 1e-9, best);

    let dn = cudarc::cusolver::DnHandle::new(stream.clone())?;
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut dm = stream.clone_htod(&spd)?;
        let mut info = stream.alloc_zeros::<i32>(1)?;
        let lower = solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let mut lwork = 0i32;
        {
            let (pm, _rm) = dm.device_ptr_mut(&stream);
            // SAFETY: M is an n×n device matrix (leading dimension n); lwork a host int.
            let s = unsafe { solver::cusolverDnDpotrf_bufferSize(dn.cu(), lower, ni, pm as *mut f64, ni, &mut lwork) };
            if s != solver::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                return Err(format!("cusolverDnDpotrf_bufferSize: {s:?}").into());
            }
        }
        let mut work = stream.alloc_zeros::<f64>(usize::try_from(lwork)?.max(1))?;
        stream.synchronize()?;
        let t0 = Instant::now();
        {
            let (pm, _rm) = dm.device_ptr_mut(&stream);
            let (pw, _rw) = work.device_ptr_mut(&stream);
            let (pi, _ri) = info.device_ptr_mut(&stream);
            // SAFETY: as above; the workspace has the size cuSOLVER asked for; info is one
            // device int.
            let s = unsafe { solver::cusolverDnDpotrf(dn.cu(), lower, ni, pm as *mut f64, ni, pw as *mut f64, lwork, pi as *mut i32) };
            if s != solver::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                return Err(format!("cusolverDnDpotrf: {s:?}").into());
            }
        }
        stream.synchronize()?;
        best = best.min(t0.elapsed().as_secs_f64());
        let info = stream.clone_dtoh(&info)?;
        if info[0] != 0 {
            return Err(format!("cusolverDnDpotrf: info = {}", info[0]).into());
        }
    }
    println!("cuSOLVER dpotrf: {:8.1} GFLOP/s ({:.3} s)", (n as f64).powi(3) / 3.0 / best * 1e-9, best);
    Ok(())
}
