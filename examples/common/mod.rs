//! Host kernels shared by the `sgemm` and `cholesky` examples: a register-blocked GEMM on
//! column-major matrices (StarPU's layout: `nx` contiguous, columns `ld` apart), generic over
//! `f32`/`f64`, and the small helpers both examples need.
//!
//! Hand-written rather than `faer` (issue 3's default candidate): faer 0.24.4 and its
//! dependencies take 97 s to build in debug (189 s in release) on this 2-core machine, over
//! the ~90 s budget the examples were given. It is faster: on one core, f32 tiles of
//! 256/512 run at 98/91 GFLOP/s with faer, 43/54 with this kernel, 17/18 with a plain
//! column-axpy loop (f64 `A·Bᵀ` here: 21). The kernel computes `MR × 6` blocks of C in
//! registers from a packed panel of B (AVX2 and FMA when the CPU has them, detected at run
//! time; plain SSE2 code otherwise), with the `k` loop cut in panels of `KC`.

#![allow(dead_code)]

use std::ops::{Add, Mul, Sub};

/// The element types of the examples.
pub trait Real:
    bytemuck::Pod + Default + PartialEq + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Send + Sync + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// `a·b + c`, fused into one instruction where the caller is compiled with FMA.
    fn mul_add(a: Self, b: Self, c: Self) -> Self;
}
impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}
impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    #[inline(always)]
    fn mul_add(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// A read-only operand with arbitrary strides: element `(i, j)` at `data[i * rs + j * cs]`
/// (column-major: `rs = 1, cs = ld`; its transpose: `rs = ld, cs = 1`).
#[derive(Clone, Copy)]
pub struct Op<'a, T> {
    pub data: &'a [T],
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T> Op<'a, T> {
    pub fn n(data: &'a [T], ld: usize) -> Self {
        Op { data, rs: 1, cs: ld }
    }
    pub fn t(data: &'a [T], ld: usize) -> Self {
        Op { data, rs: ld, cs: 1 }
    }
}

/// Columns of C per register block.
const NR: usize = 6;
/// Depth of one panel of the `k` loop.
const KC: usize = 256;

/// `C = beta·C + alpha·A·B`: C is `m×n` (column-major, `ldc`), A `m×k` column-major (`lda`),
/// B `k×n` with any strides. `beta = 0` overwrites C without reading it. `MR` rows of C per
/// register block (16 for f32, 8 for f64: 12 AVX accumulators).
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: Real, const MR: usize>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: Op<'_, T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for (just checked).
        unsafe { gemm_avx2::<T, MR>(m, n, k, alpha, a, lda, b, beta, c, ldc) };
        return;
    }
    gemm_body::<T, MR, false>(m, n, k, alpha, a, lda, b, beta, c, ldc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_avx2<T: Real, const MR: usize>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: Op<'_, T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    gemm_body::<T, MR, true>(m, n, k, alpha, a, lda, b, beta, c, ldc)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_body<T: Real, const MR: usize, const FMA: bool>(
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: Op<'_, T>,
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        scale(m, n, beta, c, ldc);
        return;
    }
    let mut bpack: Vec<[T; NR]> = Vec::with_capacity(KC);
    let mut p0 = 0;
    while p0 < k {
        let kc = KC.min(k - p0);
        // Only the first panel applies beta; the later ones accumulate.
        let beta = if p0 == 0 { beta } else { T::ONE };
        let mut j = 0;
        while j < n {
            let nr = NR.min(n - j);
            let bj = &b.data[p0 * b.rs + j * b.cs..];
            if nr == NR {
                // B's panel packed row by row: the register block reads it contiguously.
                bpack.clear();
                bpack.extend((0..kc).map(|p| std::array::from_fn(|q| bj[p * b.rs + q * b.cs])));
            }
            let mut i = 0;
            while i < m {
                let mr = MR.min(m - i);
                let ai = &a[i + p0 * lda..];
                let ci = &mut c[i + j * ldc..];
                if mr == MR && nr == NR {
                    micro::<T, MR, FMA>(alpha, ai, lda, &bpack, beta, ci, ldc);
                } else {
                    edge(mr, nr, kc, alpha, ai, lda, Op { data: bj, ..b }, beta, ci, ldc);
                }
                i += MR;
            }
            j += NR;
        }
        p0 += kc;
    }
}

fn scale<T: Real>(m: usize, n: usize, beta: T, c: &mut [T], ldc: usize) {
    for j in 0..n {
        for x in &mut c[j * ldc..j * ldc + m] {
            *x = if beta == T::ZERO { T::ZERO } else { beta * *x };
        }
    }
}

/// One full `MR × NR` block of C, accumulated in registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn micro<T: Real, const MR: usize, const FMA: bool>(alpha: T, a: &[T], lda: usize, b: &[[T; NR]], beta: T, c: &mut [T], ldc: usize) {
    let mut acc = [[T::ZERO; MR]; NR];
    for (p, bp) in b.iter().enumerate() {
        let ap: &[T; MR] = a[p * lda..p * lda + MR].try_into().expect("invariant: MR rows");
        for (accq, &bq) in acc.iter_mut().zip(bp) {
            for r in 0..MR {
                accq[r] = if FMA { T::mul_add(ap[r], bq, accq[r]) } else { accq[r] + ap[r] * bq };
            }
        }
    }
    for (q, accq) in acc.iter().enumerate() {
        let cq: &mut [T; MR] = (&mut c[q * ldc..q * ldc + MR]).try_into().expect("invariant: MR rows");
        if beta == T::ZERO {
            for r in 0..MR {
                cq[r] = alpha * accq[r];
            }
        } else {
            for r in 0..MR {
                cq[r] = beta * cq[r] + alpha * accq[r];
            }
        }
    }
}

/// A partial block at the bottom or right edge of C.
#[allow(clippy::too_many_arguments)]
fn edge<T: Real>(mr: usize, nr: usize, kc: usize, alpha: T, a: &[T], lda: usize, b: Op<'_, T>, beta: T, c: &mut [T], ldc: usize) {
    for q in 0..nr {
        for r in 0..mr {
            let mut s = T::ZERO;
            for p in 0..kc {
                s = s + a[r + p * lda] * b.data[p * b.rs + q * b.cs];
            }
            let x = &mut c[r + q * ldc];
            *x = if beta == T::ZERO { alpha * s } else { beta * *x + alpha * s };
        }
    }
}

/// A deterministic pseudo-random stream in [-1, 1) (xorshift).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// Print the runtime's workers (the integration test reads the `opencl` lines).
pub fn print_workers(rt: &weft_core::Runtime) {
    for w in rt.workers() {
        println!("  worker {:>2}: {:<8} memory node {}{}", w.id, w.name, w.node, w.pu.map(|p| format!(", core {p}")).unwrap_or_default());
    }
}

/// Print how many tasks each worker ran, and the rate.
pub fn print_stats(rt: &weft_core::Runtime, flops: f64, secs: f64) {
    let per = rt.tasks_per_worker();
    println!("{} tasks in {:.3} s ({:.2} GFLOP/s)", per.iter().sum::<u64>(), secs, flops / secs / 1e9);
    for (w, count) in rt.workers().iter().zip(&per) {
        println!("  {:<8} ran {:>5} tasks", w.name, count);
    }
}

/// A copy of a task's matrix buffer, packed (leading dimension = rows), and its rows and
/// columns. Host kernels work on packed copies: a tile's `View` hands out its columns one
/// at a time (a slice spanning all of them would overlap the tiles of other tasks), and the
/// copy costs `O(nb²)` next to the kernels' `O(nb³)`.
pub fn load<T: Real>(v: &weft_core::View) -> (Vec<T>, usize, usize) {
    let m = v.matrix::<T>();
    let mut out = Vec::with_capacity(m.nx * m.ny);
    for j in 0..m.ny {
        out.extend_from_slice(m.col(j));
    }
    (out, m.nx, m.ny)
}

/// Run `f(tile, rows, cols)` on a packed copy of a writable matrix buffer, then write the
/// copy back. `read`: start from the buffer's content (else from zeros: mode W).
pub fn update<T: Real, R>(v: &weft_core::View, read: bool, f: impl FnOnce(&mut [T], usize, usize) -> R) -> R {
    let mut m = v.matrix_mut::<T>();
    let (nx, ny) = (m.nx, m.ny);
    let mut buf = Vec::with_capacity(nx * ny);
    if read {
        for j in 0..ny {
            buf.extend_from_slice(m.col(j));
        }
    } else {
        buf.resize(nx * ny, T::ZERO);
    }
    let r = f(&mut buf, nx, ny);
    for j in 0..ny {
        m.col_mut(j).copy_from_slice(&buf[j * nx..(j + 1) * nx]);
    }
    r
}

/// CUDA implementations through cuBLAS (the examples' codelets on CUDA workers). Buffers on
/// a GPU are packed column-major replicas: a matrix's leading dimension there is its rows.
#[allow(dead_code)] // each example uses some of them
pub mod cublas {
    use weft_core::CudaTaskContext;
    use weft_core::Shape;
    use weft_core::cuda::cudarc::cublas::sys;

    fn dims(ctx: &CudaTaskContext<'_>, i: usize) -> Result<(i32, i32), String> {
        match ctx.shape(i) {
            Shape::Matrix { nx, ny, .. } => Ok((nx as i32, ny as i32)),
            s => Err(format!("buffer {i}: a matrix expected, got {s:?}")),
        }
    }

    fn check(what: &str, s: sys::cublasStatus_t) -> Result<(), String> {
        if s == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS { Ok(()) } else { Err(format!("{what}: {s:?}")) }
    }

    fn op(t: bool) -> sys::cublasOperation_t {
        if t { sys::cublasOperation_t::CUBLAS_OP_T } else { sys::cublasOperation_t::CUBLAS_OP_N }
    }

    /// `C = alpha·A·op(B) + beta·C` in f32 on buffers 0 (A, m×k), 1 (B) and 2 (C, m×n).
    pub fn sgemm(ctx: &CudaTaskContext<'_>, trans_b: bool, alpha: f32, beta: f32) -> Result<(), String> {
        let ((m, k), (c_rows, n)) = (dims(ctx, 0)?, dims(ctx, 2)?);
        let ldb = dims(ctx, 1)?.0;
        if c_rows != m {
            return Err(format!("C has {c_rows} rows, A {m}"));
        }
        let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
        // SAFETY: the buffers are this task's packed replicas on this GPU (leading dimensions
        // their row counts), valid until the driver's fence after this call completes;
        // alpha and beta are host values read during the call (host pointer mode).
        let s = unsafe {
            sys::cublasSgemm_v2(
                *blas.handle(),
                op(false),
                op(trans_b),
                m,
                n,
                k,
                &alpha,
                ctx.device_ptr(0) as *const f32,
                m,
                ctx.device_ptr(1) as *const f32,
                ldb,
                &beta,
                ctx.device_ptr(2) as *mut f32,
                m,
            )
        };
        check("cublasSgemm", s)
    }

    /// `C = alpha·A·op(B) + beta·C` in f64 on buffers `ia` (A, m×k), `ib` (B) and `ic` (C, m×n).
    pub fn dgemm(ctx: &CudaTaskContext<'_>, [ia, ib, ic]: [usize; 3], trans_b: bool, alpha: f64, beta: f64) -> Result<(), String> {
        let ((m, k), (c_rows, n)) = (dims(ctx, ia)?, dims(ctx, ic)?);
        let ldb = dims(ctx, ib)?.0;
        if c_rows != m {
            return Err(format!("C has {c_rows} rows, A {m}"));
        }
        let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
        // SAFETY: as in `sgemm`.
        let s = unsafe {
            sys::cublasDgemm_v2(
                *blas.handle(),
                op(false),
                op(trans_b),
                m,
                n,
                k,
                &alpha,
                ctx.device_ptr(ia) as *const f64,
                m,
                ctx.device_ptr(ib) as *const f64,
                ldb,
                &beta,
                ctx.device_ptr(ic) as *mut f64,
                m,
            )
        };
        check("cublasDgemm", s)
    }

    /// `A = L·Lᵀ` in f64 (cuSOLVER `dpotrf`, lower): buffer 0 is `A` (n×n), its lower
    /// triangle replaced by `L`. A handle and workspace per call, on the GPU's compute
    /// stream; waits for the call (it reads back cuSOLVER's `info`).
    pub fn dpotrf_lower(ctx: &CudaTaskContext<'_>) -> Result<(), String> {
        use weft_core::cuda::cudarc::cusolver::{DnHandle, sys as solver};
        use weft_core::cuda::cudarc::driver::DevicePtrMut;
        let (n, cols) = dims(ctx, 0)?;
        if n != cols {
            return Err(format!("POTRF of a {n}×{cols} tile"));
        }
        let err = |e: &dyn std::fmt::Debug| format!("{e:?}");
        let stream = ctx.device().compute_stream().clone();
        let dn = DnHandle::new(stream.clone()).map_err(|e| err(&e))?;
        let lower = solver::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let ok = |what: &str, s: solver::cusolverStatus_t| {
            if s == solver::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS { Ok(()) } else { Err(format!("{what}: {s:?}")) }
        };
        let a = ctx.device_ptr(0) as *mut f64;
        let mut lwork = 0i32;
        // SAFETY: `a` is this task's packed n×n replica on this GPU (leading dimension n),
        // valid until the driver's fence after this call; lwork is a host int.
        ok("cusolverDnDpotrf_bufferSize", unsafe { solver::cusolverDnDpotrf_bufferSize(dn.cu(), lower, n, a, n, &mut lwork) })?;
        let mut work = stream.alloc_zeros::<f64>(lwork.max(1) as usize).map_err(|e| err(&e))?;
        let mut info = stream.alloc_zeros::<i32>(1).map_err(|e| err(&e))?;
        {
            let (pw, _rw) = work.device_ptr_mut(&stream);
            let (pi, _ri) = info.device_ptr_mut(&stream);
            // SAFETY: as above; the workspace has the size cuSOLVER asked for and info is
            // one device int, both kept alive by the guards until the call is enqueued.
            ok("cusolverDnDpotrf", unsafe { solver::cusolverDnDpotrf(dn.cu(), lower, n, a, n, pw as *mut f64, lwork, pi as *mut i32) })?;
        }
        let info = stream.clone_dtoh(&info).map_err(|e| err(&e))?;
        match info.first() {
            Some(0) => Ok(()),
            i => Err(format!("cusolverDnDpotrf: info = {i:?} (not positive definite)")),
        }
    }

    /// `B = B·L⁻ᵀ` in f64: buffer 0 is the lower triangular `L` (n×n), buffer 1 `B` (m×n).
    pub fn dtrsm_right_lower_t(ctx: &CudaTaskContext<'_>) -> Result<(), String> {
        let ((nl, _), (m, n)) = (dims(ctx, 0)?, dims(ctx, 1)?);
        let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
        let one = 1.0f64;
        // SAFETY: as in `sgemm`.
        let s = unsafe {
            sys::cublasDtrsm_v2(
                *blas.handle(),
                sys::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                op(true),
                sys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                m,
                n,
                &one,
                ctx.device_ptr(0) as *const f64,
                nl,
                ctx.device_ptr(1) as *mut f64,
                m,
            )
        };
        check("cublasDtrsm", s)
    }
}
