//! What the examples share: their element types, in-place faer views of a task's matrix
//! buffers (column-major, StarPU's layout: `nx` contiguous elements per column, columns
//! `ld` apart), a random stream, printing, and the CUDA implementations (cuBLAS,
//! cuSOLVER).
//!
//! CPU implementations call faer (GEMM, SYRK, TRSM, POTRF) on those views with
//! `Par::Seq`: a CPU worker runs one task at a time on its own core, so the parallelism is
//! the runtime's, between tasks, as with StarPU's sequential BLAS. Built with the
//! `openblas` feature (`cargo build --features openblas`, needs libopenblas-dev), they call
//! OpenBLAS's instead, single-threaded: the kernels StarPU's example and LAPACK's `dpotrf`
//! run, so that a comparison with them compares runtimes, not kernel libraries.

// Each example uses some of these.
#![allow(dead_code)]

use faer::{MatMut, MatRef};
use weft_core::View;

/// The element types of the examples: `f32` and `f64`.
pub trait Real: bytemuck::Pod + faer::traits::RealField + cublas::Routines + openblas::Routines + Send + Sync + 'static {
    /// The OpenCL C name of the type (kernels are built with `-DREAL=` it).
    const CL: &'static str;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}
impl Real for f32 {
    const CL: &'static str = "float";
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl Real for f64 {
    const CL: &'static str = "double";
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// A task's matrix buffer as a faer matrix, in place.
pub fn mat<T: Real>(v: &View) -> MatRef<'_, T> {
    // Checks the element type and alignment, and marks the buffer borrowed for the task.
    let m = v.matrix::<T>();
    // SAFETY: the replica holds `nx` initialised elements per column, `ny` columns `ld`
    // apart, valid and unwritten for the view's lifetime (View's invariant); faer touches
    // only those elements, never the rows between `nx` and `ld` (other tiles' data).
    unsafe { MatRef::from_raw_parts(v.as_ptr() as *const T, m.nx, m.ny, 1, m.ld as isize) }
}

/// A task's writable matrix buffer as a faer matrix, in place.
pub fn mat_mut<T: Real>(v: &View) -> MatMut<'_, T> {
    // As in `mat`, and panics unless the mode is writable and no other view of the buffer
    // was taken; the borrow flag stays set, so none can be taken after.
    let m = v.matrix_mut::<T>();
    // SAFETY: as in `mat`; the borrow flag makes this the buffer's only view.
    unsafe { MatMut::from_raw_parts_mut(v.as_ptr() as *mut T, m.nx, m.ny, 1, m.ld as isize) }
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

/// CUDA implementations through cuBLAS and cuSOLVER (the examples' codelets on CUDA
/// workers), generic over the precision: [`Routines`] names the `S` or `D` routine for
/// each. Buffers on a GPU are packed column-major replicas: a matrix's leading dimension
/// there is its rows.
pub mod cublas {
    use std::ffi::c_int;
    use weft_core::CudaTaskContext;
    use weft_core::Shape;
    use weft_core::cuda::cudarc::cublas::sys;
    use weft_core::cuda::cudarc::cusolver::sys as solver;
    use weft_core::cuda::cudarc::driver::{DeviceRepr, ValidAsZeroBits};

    type Gemm<T> = unsafe fn(
        sys::cublasHandle_t,
        sys::cublasOperation_t,
        sys::cublasOperation_t,
        c_int,
        c_int,
        c_int,
        *const T,
        *const T,
        c_int,
        *const T,
        c_int,
        *const T,
        *mut T,
        c_int,
    ) -> sys::cublasStatus_t;
    type Trsm<T> = unsafe fn(
        sys::cublasHandle_t,
        sys::cublasSideMode_t,
        sys::cublasFillMode_t,
        sys::cublasOperation_t,
        sys::cublasDiagType_t,
        c_int,
        c_int,
        *const T,
        *const T,
        c_int,
        *mut T,
        c_int,
    ) -> sys::cublasStatus_t;
    type PotrfBufferSize<T> =
        unsafe fn(solver::cusolverDnHandle_t, solver::cublasFillMode_t, c_int, *mut T, c_int, *mut c_int) -> solver::cusolverStatus_t;
    type Potrf<T> = unsafe fn(
        solver::cusolverDnHandle_t,
        solver::cublasFillMode_t,
        c_int,
        *mut T,
        c_int,
        *mut T,
        c_int,
        *mut c_int,
    ) -> solver::cusolverStatus_t;

    /// The routines of one precision, with the same arguments for both.
    pub trait Routines: DeviceRepr + ValidAsZeroBits {
        /// `S` or `D`, for messages.
        const P: char;
        const GEMM: Gemm<Self>;
        const TRSM: Trsm<Self>;
        const POTRF_BUFFER_SIZE: PotrfBufferSize<Self>;
        const POTRF: Potrf<Self>;
    }
    impl Routines for f32 {
        const P: char = 'S';
        const GEMM: Gemm<f32> = sys::cublasSgemm_v2;
        const TRSM: Trsm<f32> = sys::cublasStrsm_v2;
        const POTRF_BUFFER_SIZE: PotrfBufferSize<f32> = solver::cusolverDnSpotrf_bufferSize;
        const POTRF: Potrf<f32> = solver::cusolverDnSpotrf;
    }
    impl Routines for f64 {
        const P: char = 'D';
        const GEMM: Gemm<f64> = sys::cublasDgemm_v2;
        const TRSM: Trsm<f64> = sys::cublasDtrsm_v2;
        const POTRF_BUFFER_SIZE: PotrfBufferSize<f64> = solver::cusolverDnDpotrf_bufferSize;
        const POTRF: Potrf<f64> = solver::cusolverDnDpotrf;
    }

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

    /// `C = alpha·A·op(B) + beta·C` on buffers `ia` (A, m×k), `ib` (B) and `ic` (C, m×n).
    pub fn gemm<T: super::Real>(
        ctx: &CudaTaskContext<'_>,
        [ia, ib, ic]: [usize; 3],
        trans_b: bool,
        alpha: T,
        beta: T,
    ) -> Result<(), String> {
        let ((m, k), (c_rows, n)) = (dims(ctx, ia)?, dims(ctx, ic)?);
        let ldb = dims(ctx, ib)?.0;
        if c_rows != m {
            return Err(format!("C has {c_rows} rows, A {m}"));
        }
        let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
        // SAFETY: the buffers are this task's packed replicas on this GPU (leading dimensions
        // their row counts), valid until the driver's fence after this call completes;
        // alpha and beta are host values read during the call (host pointer mode).
        let s = unsafe {
            T::GEMM(
                *blas.handle(),
                op(false),
                op(trans_b),
                m,
                n,
                k,
                &alpha,
                ctx.device_ptr(ia) as *const T,
                m,
                ctx.device_ptr(ib) as *const T,
                ldb,
                &beta,
                ctx.device_ptr(ic) as *mut T,
                m,
            )
        };
        check(&format!("cublas{}gemm", T::P), s)
    }

    /// `A = L·Lᵀ` (cuSOLVER `potrf`, lower): buffer 0 is `A` (n×n), its lower triangle
    /// replaced by `L`. A handle and workspace per call, on the GPU's compute stream; waits
    /// for the call (it reads back cuSOLVER's `info`).
    pub fn potrf_lower<T: super::Real>(ctx: &CudaTaskContext<'_>) -> Result<(), String> {
        use weft_core::cuda::cudarc::cusolver::DnHandle;
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
            if s == solver::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS { Ok(()) } else { Err(format!("cusolverDn{}{what}: {s:?}", T::P)) }
        };
        let a = ctx.device_ptr(0) as *mut T;
        let mut lwork = 0i32;
        // SAFETY: `a` is this task's packed n×n replica on this GPU (leading dimension n),
        // valid until the driver's fence after this call; lwork is a host int.
        ok("potrf_bufferSize", unsafe { T::POTRF_BUFFER_SIZE(dn.cu(), lower, n, a, n, &mut lwork) })?;
        let mut work = stream.alloc_zeros::<T>(lwork.max(1) as usize).map_err(|e| err(&e))?;
        let mut info = stream.alloc_zeros::<i32>(1).map_err(|e| err(&e))?;
        {
            let (pw, _rw) = work.device_ptr_mut(&stream);
            let (pi, _ri) = info.device_ptr_mut(&stream);
            // SAFETY: as above; the workspace has the size cuSOLVER asked for and info is
            // one device int, both kept alive by the guards until the call is enqueued.
            ok("potrf", unsafe { T::POTRF(dn.cu(), lower, n, a, n, pw as *mut T, lwork, pi as *mut i32) })?;
        }
        let info = stream.clone_dtoh(&info).map_err(|e| err(&e))?;
        match info.first() {
            Some(0) => Ok(()),
            i => Err(format!("cusolverDn{}potrf: info = {i:?} (not positive definite)", T::P)),
        }
    }

    /// `B = B·L⁻ᵀ`: buffer 0 is the lower triangular `L` (n×n), buffer 1 `B` (m×n).
    pub fn trsm_right_lower_t<T: super::Real>(ctx: &CudaTaskContext<'_>) -> Result<(), String> {
        let ((nl, _), (m, n)) = (dims(ctx, 0)?, dims(ctx, 1)?);
        let blas = ctx.device().cublas().map_err(|e| e.to_string())?;
        let one = T::from_f64(1.0);
        // SAFETY: as in `gemm`.
        let s = unsafe {
            T::TRSM(
                *blas.handle(),
                sys::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
                sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                op(true),
                sys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                m,
                n,
                &one,
                ctx.device_ptr(0) as *const T,
                nl,
                ctx.device_ptr(1) as *mut T,
                m,
            )
        };
        check(&format!("cublas{}trsm", T::P), s)
    }
}

/// The Cholesky tile kernels on CPU workers (examples/cholesky, weft-mpi's distributed
/// Cholesky): faer, or OpenBLAS with the `openblas` feature, in place on the tiles.
pub mod tiles {
    use super::Real;
    #[cfg(not(feature = "openblas"))]
    use faer::Accum;
    #[cfg(not(feature = "openblas"))]
    use faer::Par;
    #[cfg(not(feature = "openblas"))]
    use faer::dyn_stack::{MemBuffer, MemStack};
    #[cfg(not(feature = "openblas"))]
    use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
    #[cfg(not(feature = "openblas"))]
    use faer::linalg::matmul::matmul;
    #[cfg(not(feature = "openblas"))]
    use faer::linalg::matmul::triangular::{self, BlockStructure};
    #[cfg(not(feature = "openblas"))]
    use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
    use weft_core::TaskContext;

    /// POTRF: the diagonal tile's lower triangle replaced by its factor `L`.
    pub fn potrf<T: Real>(ctx: &TaskContext<'_>) -> Result<(), String> {
        let a = super::mat_mut::<T>(ctx.buffer(0));
        #[cfg(feature = "openblas")]
        return super::openblas::potrf(a).map_err(|info| format!("matrix not positive definite (LAPACK info {info} in a diagonal tile)"));
        #[cfg(not(feature = "openblas"))]
        {
            let mut mem = MemBuffer::new(cholesky_in_place_scratch::<T>(a.nrows(), Par::Seq, Default::default()));
            match cholesky_in_place(a, Default::default(), Par::Seq, MemStack::new(&mut mem), Default::default()) {
                Ok(_) => Ok(()),
                Err(e) => Err(format!("matrix not positive definite ({e:?} in a diagonal tile)")),
            }
        }
    }

    /// TRSM: `X = B·L⁻ᵀ` in place of `B` (a tile below the diagonal), `L` the factored
    /// diagonal tile, solved as `L·Xᵀ = Bᵀ`.
    pub fn trsm<T: Real>(ctx: &TaskContext<'_>) -> Result<(), String> {
        let l = super::mat::<T>(ctx.buffer(0));
        let b = super::mat_mut::<T>(ctx.buffer(1));
        #[cfg(feature = "openblas")]
        super::openblas::trsm(l, b);
        #[cfg(not(feature = "openblas"))]
        solve_lower_triangular_in_place(l, b.transpose_mut(), Par::Seq);
        Ok(())
    }

    /// SYRK: `C −= A·Aᵀ` on a diagonal tile, its lower triangle only.
    pub fn syrk<T: Real>(ctx: &TaskContext<'_>) -> Result<(), String> {
        let a = super::mat::<T>(ctx.buffer(0));
        let c = super::mat_mut::<T>(ctx.buffer(1));
        #[cfg(feature = "openblas")]
        super::openblas::syrk(a, c);
        #[cfg(not(feature = "openblas"))]
        {
            let (rect, minus_one) = (BlockStructure::Rectangular, T::from_f64(-1.0));
            triangular::matmul(c, BlockStructure::TriangularLower, Accum::Add, a, rect, a.transpose(), rect, minus_one, Par::Seq);
        }
        Ok(())
    }

    /// GEMM: `C −= A·Bᵀ`.
    pub fn gemm<T: Real>(ctx: &TaskContext<'_>) -> Result<(), String> {
        let a = super::mat::<T>(ctx.buffer(0));
        let b = super::mat::<T>(ctx.buffer(1));
        let c = super::mat_mut::<T>(ctx.buffer(2));
        #[cfg(feature = "openblas")]
        super::openblas::gemm(a, b, c);
        #[cfg(not(feature = "openblas"))]
        matmul(c, Accum::Add, a, b.transpose(), T::from_f64(-1.0), Par::Seq);
        Ok(())
    }
}

/// OpenBLAS's tile kernels (the `openblas` feature), on the same column-major views.
pub mod openblas {
    /// The routines of one precision (empty without the `openblas` feature).
    #[cfg(not(feature = "openblas"))]
    pub trait Routines {}
    #[cfg(not(feature = "openblas"))]
    impl<T> Routines for T {}

    #[cfg(feature = "openblas")]
    pub use with::*;

    #[cfg(feature = "openblas")]
    #[allow(unsafe_code)]
    mod with {
        use faer::{MatMut, MatRef};
        use std::ffi::{c_char, c_int};

        // CBLAS's enumerations (cblas.h).
        const COL_MAJOR: c_int = 102;
        const NO_TRANS: c_int = 111;
        const TRANS: c_int = 112;
        const LOWER: c_int = 122;
        const NON_UNIT: c_int = 131;
        const RIGHT: c_int = 142;

        #[link(name = "openblas")]
        unsafe extern "C" {
            fn openblas_set_num_threads(n: c_int);
            fn cblas_sgemm(
                l: c_int,
                ta: c_int,
                tb: c_int,
                m: c_int,
                n: c_int,
                k: c_int,
                al: f32,
                a: *const f32,
                lda: c_int,
                b: *const f32,
                ldb: c_int,
                be: f32,
                c: *mut f32,
                ldc: c_int,
            );
            fn cblas_dgemm(
                l: c_int,
                ta: c_int,
                tb: c_int,
                m: c_int,
                n: c_int,
                k: c_int,
                al: f64,
                a: *const f64,
                lda: c_int,
                b: *const f64,
                ldb: c_int,
                be: f64,
                c: *mut f64,
                ldc: c_int,
            );
            fn cblas_ssyrk(
                l: c_int,
                up: c_int,
                t: c_int,
                n: c_int,
                k: c_int,
                al: f32,
                a: *const f32,
                lda: c_int,
                be: f32,
                c: *mut f32,
                ldc: c_int,
            );
            fn cblas_dsyrk(
                l: c_int,
                up: c_int,
                t: c_int,
                n: c_int,
                k: c_int,
                al: f64,
                a: *const f64,
                lda: c_int,
                be: f64,
                c: *mut f64,
                ldc: c_int,
            );
            fn cblas_strsm(
                l: c_int,
                s: c_int,
                up: c_int,
                t: c_int,
                d: c_int,
                m: c_int,
                n: c_int,
                al: f32,
                a: *const f32,
                lda: c_int,
                b: *mut f32,
                ldb: c_int,
            );
            fn cblas_dtrsm(
                l: c_int,
                s: c_int,
                up: c_int,
                t: c_int,
                d: c_int,
                m: c_int,
                n: c_int,
                al: f64,
                a: *const f64,
                lda: c_int,
                b: *mut f64,
                ldb: c_int,
            );
            fn spotrf_(up: *const c_char, n: *const c_int, a: *mut f32, lda: *const c_int, info: *mut c_int);
            fn dpotrf_(up: *const c_char, n: *const c_int, a: *mut f64, lda: *const c_int, info: *mut c_int);
        }

        /// OpenBLAS runs each call in the calling thread only: the runtime's workers are the
        /// parallelism (OpenBLAS's own threads would compete with them for the cores).
        pub fn single_threaded() {
            // SAFETY: sets a global of OpenBLAS's; no memory is passed.
            unsafe { openblas_set_num_threads(1) }
        }

        // One precision's entry points, with the same arguments for both.
        type Gemm<T> =
            unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int, c_int, T, *const T, c_int, *const T, c_int, T, *mut T, c_int);
        type Syrk<T> = unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int, T, *const T, c_int, T, *mut T, c_int);
        type Trsm<T> = unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int, c_int, c_int, T, *const T, c_int, *mut T, c_int);
        type Potrf<T> = unsafe extern "C" fn(*const c_char, *const c_int, *mut T, *const c_int, *mut c_int);

        /// One precision's entry points.
        pub trait Routines: Sized {
            const CB_GEMM: Gemm<Self>;
            const CB_SYRK: Syrk<Self>;
            const CB_TRSM: Trsm<Self>;
            const LAPACK_POTRF: Potrf<Self>;
        }
        impl Routines for f32 {
            const CB_GEMM: Gemm<f32> = cblas_sgemm;
            const CB_SYRK: Syrk<f32> = cblas_ssyrk;
            const CB_TRSM: Trsm<f32> = cblas_strsm;
            const LAPACK_POTRF: Potrf<f32> = spotrf_;
        }
        impl Routines for f64 {
            const CB_GEMM: Gemm<f64> = cblas_dgemm;
            const CB_SYRK: Syrk<f64> = cblas_dsyrk;
            const CB_TRSM: Trsm<f64> = cblas_dtrsm;
            const LAPACK_POTRF: Potrf<f64> = dpotrf_;
        }

        fn dims<T>(m: &MatRef<'_, T>) -> (c_int, c_int, c_int) {
            assert_eq!(m.row_stride(), 1, "column-major views");
            (m.nrows() as c_int, m.ncols() as c_int, m.col_stride() as c_int)
        }

        /// `C −= A·Bᵀ`.
        pub fn gemm<T: crate::common::Real>(a: MatRef<'_, T>, b: MatRef<'_, T>, c: MatMut<'_, T>) {
            let ((m, k, lda), (n, _, ldb), (_, _, ldc)) = (dims(&a), dims(&b), dims(&c.as_ref()));
            let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
            // SAFETY: the three views are valid column-major matrices of the sizes given
            // (their leading dimensions are their column strides), `c` exclusively borrowed.
            unsafe {
                T::CB_GEMM(COL_MAJOR, NO_TRANS, TRANS, m, n, k, minus_one, a.as_ptr(), lda, b.as_ptr(), ldb, one, c.as_ptr_mut(), ldc)
            }
        }

        /// `C −= A·Aᵀ`, the lower triangle of `C` only.
        pub fn syrk<T: crate::common::Real>(a: MatRef<'_, T>, c: MatMut<'_, T>) {
            let ((n, k, lda), (_, _, ldc)) = (dims(&a), dims(&c.as_ref()));
            let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
            // SAFETY: as in `gemm`.
            unsafe { T::CB_SYRK(COL_MAJOR, LOWER, NO_TRANS, n, k, minus_one, a.as_ptr(), lda, one, c.as_ptr_mut(), ldc) }
        }

        /// Order of `L` up to which [`trsm`] calls the library's solve; above it, it halves `L`.
        const TRSM_BLOCK: usize = 64;

        /// `B = B·L⁻ᵀ`, `L` lower triangular. Halved while `L` is larger than
        /// [`TRSM_BLOCK`] (`X₁ = B₁·L₁₁⁻ᵀ`, `B₂ −= X₁·L₂₁ᵀ`, `X₂ = B₂·L₂₂⁻ᵀ`), so that most of
        /// its flops run in GEMM: single-threaded, OpenBLAS's `dtrsm` on a 512 tile reaches
        /// about two thirds of its `dgemm`'s rate, halved down to 64 about 0.85 (down to 128,
        /// 0.8). faer's solve gains nothing from the same halving (it blocks its own).
        pub fn trsm<T: crate::common::Real>(l: MatRef<'_, T>, b: MatMut<'_, T>) {
            let n = l.nrows();
            if n <= TRSM_BLOCK {
                return trsm_lib(l, b);
            }
            let n1 = n / 2;
            let (l11, _, l21, l22) = l.split_at(n1, n1);
            let (mut b1, mut b2) = b.split_at_col_mut(n1);
            trsm(l11, b1.as_mut());
            gemm(b1.as_ref(), l21, b2.as_mut());
            trsm(l22, b2);
        }

        /// `B = B·L⁻ᵀ` by the library's triangular solve.
        fn trsm_lib<T: crate::common::Real>(l: MatRef<'_, T>, b: MatMut<'_, T>) {
            let ((n, _, lda), (m, _, ldb)) = (dims(&l), dims(&b.as_ref()));
            // SAFETY: as in `gemm`.
            unsafe { T::CB_TRSM(COL_MAJOR, RIGHT, LOWER, TRANS, NON_UNIT, m, n, T::from_f64(1.0), l.as_ptr(), lda, b.as_ptr_mut(), ldb) }
        }

        /// The lower Cholesky factor of `a` in place; LAPACK's `info` when not positive definite.
        pub fn potrf<T: crate::common::Real>(a: MatMut<'_, T>) -> Result<(), i32> {
            let (n, _, lda) = dims(&a.as_ref());
            let mut info: c_int = 0;
            // SAFETY: as in `gemm`; LAPACK reads the scalars through the pointers only
            // during the call.
            unsafe { T::LAPACK_POTRF(c"L".as_ptr(), &n, a.as_ptr_mut(), &lda, &mut info) };
            if info == 0 { Ok(()) } else { Err(info) }
        }
    }
}
