//! The CUDA backend against a real driver and GPU, when the machine has them.
//!
//! This file has its own `main` (`harness = false`, run by `libtest-mimic`), so that
//! skip lines are printed rather than captured, and so that a test can re-run this binary
//! as a child process with another environment (`CUDA_VISIBLE_DEVICES`).
//!
//! Without a CUDA driver every GPU test prints `skipped: no CUDA driver` (or, with a
//! driver but no GPU, `skipped: no CUDA device`) and passes. The tests that need no GPU
//! (discovery never panics, hidden GPUs mean no devices, nothing CUDA is linked) run
//! everywhere.

use libtest_mimic::{Arguments, Failed, Trial};
use std::process::Command;
use std::sync::OnceLock;
use weft_vendors::cuda::cudarc::cublas::{result as blas, sys::cublasOperation_t};
use weft_vendors::cuda::{self, CudaDevice, CudaError, Discovery, KernelCache, LaunchDims};
use weft_vendors::{Buffer, Device, DeviceKind, Endpoint, Rect, copy_rect_host};

type TestFn = fn() -> Result<(), Failed>;

/// Set in a child process: which child role to play.
const CHILD: &str = "WEFT_CUDA_TEST_CHILD";

fn main() {
    if let Ok(role) = std::env::var(CHILD) {
        child(&role);
        return;
    }
    let args = Arguments::from_args();
    let tests: Vec<(&str, TestFn)> = vec![
        ("discovery_never_panics", discovery_never_panics),
        ("hidden_gpus_mean_no_devices", hidden_gpus_mean_no_devices),
        ("no_cuda_library_is_linked", no_cuda_library_is_linked),
        ("alloc_is_zeroed_and_round_trips", alloc_is_zeroed_and_round_trips),
        ("rect_copies", rect_copies),
        ("many_copies_in_flight", many_copies_in_flight),
        ("vector_add_kernel", vector_add_kernel),
        ("build_failure_carries_the_log", build_failure_carries_the_log),
        ("cublas_gemm", cublas_gemm),
    ];
    let trials = tests.into_iter().map(|(name, f)| Trial::test(name, f)).collect();
    libtest_mimic::run(&args, trials).exit();
}

fn child(role: &str) {
    match role {
        "count-devices" => {
            let d = cuda::discover();
            println!("devices: {}", d.devices.len());
            for s in d.skipped {
                println!("skipped: {s}");
            }
        }
        _ => panic!("unknown child role {role}"),
    }
}

/// The discovery shared by the tests (done once, like core would).
fn discovery() -> &'static Discovery {
    static D: OnceLock<Discovery> = OnceLock::new();
    D.get_or_init(cuda::discover)
}

/// The first GPU, or `None` after printing the skip line.
fn need_device() -> Option<&'static CudaDevice> {
    let d = discovery();
    if !d.driver {
        println!("skipped: no CUDA driver");
        return None;
    }
    let dev = d.devices.first();
    if dev.is_none() {
        println!("skipped: no CUDA device ({})", d.skipped.join("; "));
    }
    dev
}

fn write(dev: &CudaDevice, buf: Buffer, off: usize, data: &[u8]) {
    // SAFETY: `data` outlives the wait; `buf` is the device's own and large enough.
    let c = unsafe { dev.copy(Endpoint::Host(data.as_ptr().cast_mut()), Endpoint::Device(buf, off), Rect::linear(data.len())) };
    c.expect("enqueue write").wait().expect("write");
}

fn read(dev: &CudaDevice, buf: Buffer, off: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0xAAu8; len];
    // SAFETY: `out` outlives the wait; `buf` is the device's own and large enough.
    let c = unsafe { dev.copy(Endpoint::Device(buf, off), Endpoint::Host(out.as_mut_ptr()), Rect::linear(len)) };
    c.expect("enqueue read").wait().expect("read");
    out
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Bytes one side of `rect` spans.
fn extent(region: [usize; 3], pitch: [usize; 2]) -> usize {
    (region[2] - 1) * pitch[1] + (region[1] - 1) * pitch[0] + region[0]
}

fn discovery_never_panics() -> Result<(), Failed> {
    let d = discovery();
    for dev in &d.devices {
        println!("{}: {} [{}], {:?} bytes", dev.ordinal(), dev.name(), dev.identity(), dev.memory_size());
        assert_eq!(dev.kind(), DeviceKind::Cuda);
        assert!(dev.memory_size().is_some_and(|m| m > 0));
        assert!(dev.host_ptr(Buffer { addr: 1, len: 1 }).is_none());
    }
    for s in &d.skipped {
        println!("left out: {s}");
    }
    if !d.driver {
        assert!(d.devices.is_empty());
        println!("skipped: no CUDA driver (discovery returned no device, as it should)");
    }
    Ok(())
}

fn hidden_gpus_mean_no_devices() -> Result<(), Failed> {
    // Runs with or without CUDA: nothing to discover is not an error.
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).env(CHILD, "count-devices").env("CUDA_VISIBLE_DEVICES", "").output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().next(), Some("devices: 0"), "{text}");
    assert!(text.contains("skipped: no CUDA"), "{text}");
    Ok(())
}

fn no_cuda_library_is_linked() -> Result<(), Failed> {
    // `dynamic-loading`: the binary must start on a machine without CUDA.
    let exe = std::env::current_exe()?;
    let out = match Command::new("readelf").arg("-d").arg(&exe).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            println!("skipped: no readelf");
            return Ok(());
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = text.lines().filter(|l| l.contains("(NEEDED)")).collect();
    println!("{}", needed.join("\n"));
    for lib in ["libcuda", "libcudart", "libnvrtc", "libcublas"] {
        assert!(!needed.iter().any(|l| l.contains(lib)), "{} links {lib}:\n{text}", exe.display());
    }
    Ok(())
}

fn alloc_is_zeroed_and_round_trips() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    let len = (3 << 20) + 5;
    let buf = dev.alloc(len)?;
    assert!(dev.allocated() >= len);
    assert!(read(dev, buf, 0, len).iter().all(|&b| b == 0), "alloc must zero-fill");
    // Pageable host memory (staged).
    let data = pattern(len, 7);
    write(dev, buf, 0, &data);
    assert_eq!(read(dev, buf, 0, len), data);
    // Offsets on both sides.
    write(dev, buf, 1000, &[1, 2, 3]);
    assert_eq!(read(dev, buf, 999, 5), [data[999], 1, 2, 3, data[1003]]);
    // Pinned host memory (direct DMA).
    let mut pinned = dev.alloc_pinned(len)?;
    pinned.as_mut_slice().copy_from_slice(&pattern(len, 99));
    // SAFETY: `pinned` outlives the wait; `buf` holds `len` bytes.
    unsafe { dev.copy(Endpoint::Host(pinned.as_mut_ptr()), Endpoint::Device(buf, 0), Rect::linear(len)) }?.wait()?;
    assert_eq!(read(dev, buf, 0, len), pattern(len, 99));
    pinned.as_mut_slice().fill(0);
    // SAFETY: as above.
    unsafe { dev.copy(Endpoint::Device(buf, 0), Endpoint::Host(pinned.as_mut_ptr()), Rect::linear(len)) }?.wait()?;
    assert_eq!(pinned.as_slice(), &pattern(len, 99)[..]);
    // An empty buffer and an empty copy are fine.
    let empty = dev.alloc(0)?;
    assert_eq!(read(dev, empty, 0, 0), Vec::<u8>::new());
    dev.free(empty);
    dev.free(buf);
    assert!(dev.staging_cached() <= cuda::memory::STAGING_CACHE);
    Ok(())
}

fn rect_copies() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    let rects = [
        // A 2-D tile of a wider matrix into a packed one, and back.
        Rect { region: [24, 5, 1], src_pitch: [40, 200], dst_pitch: [24, 120] },
        Rect { region: [24, 5, 1], src_pitch: [24, 120], dst_pitch: [40, 200] },
        // A 3-D block whose slices are whole rows (one cuMemcpy3D).
        Rect { region: [8, 3, 4], src_pitch: [16, 64], dst_pitch: [8, 24] },
        // Slice pitch not a multiple of the row pitch (one 2-D copy per slice).
        Rect { region: [6, 3, 3], src_pitch: [7, 30], dst_pitch: [9, 29] },
        // One row per slice.
        Rect { region: [5, 1, 4], src_pitch: [5, 11], dst_pitch: [5, 5] },
    ];
    for rect in rects {
        let (src_len, dst_len) = (extent(rect.region, rect.src_pitch), extent(rect.region, rect.dst_pitch));
        let src = pattern(src_len, 3);
        let mut want = vec![0u8; dst_len];
        // SAFETY: both span the rectangle.
        unsafe { copy_rect_host(src.as_ptr(), want.as_mut_ptr(), rect) };

        // Host (pageable, then pinned) to device.
        let dbuf = dev.alloc(dst_len)?;
        // SAFETY: `src` outlives the wait; `dbuf` spans the destination side.
        unsafe { dev.copy(Endpoint::Host(src.as_ptr().cast_mut()), Endpoint::Device(dbuf, 0), rect) }?.wait()?;
        assert_eq!(read(dev, dbuf, 0, dst_len), want, "pageable host -> device {rect:?}");
        let mut pinned_src = dev.alloc_pinned(src_len)?;
        pinned_src.as_mut_slice().copy_from_slice(&src);
        let dbuf2 = dev.alloc(dst_len)?;
        // SAFETY: as above.
        unsafe { dev.copy(Endpoint::Host(pinned_src.as_mut_ptr()), Endpoint::Device(dbuf2, 0), rect) }?.wait()?;
        assert_eq!(read(dev, dbuf2, 0, dst_len), want, "pinned host -> device {rect:?}");

        // Device to host (pageable, then pinned), into memory that must keep its gaps.
        let sbuf = dev.alloc(src_len)?;
        write(dev, sbuf, 0, &src);
        let mut out = vec![0u8; dst_len];
        // SAFETY: `out` outlives the wait; `sbuf` spans the source side.
        unsafe { dev.copy(Endpoint::Device(sbuf, 0), Endpoint::Host(out.as_mut_ptr()), rect) }?.wait()?;
        assert_eq!(out, want, "device -> pageable host {rect:?}");
        let mut pinned_out = dev.alloc_pinned(dst_len)?;
        // SAFETY: as above.
        unsafe { dev.copy(Endpoint::Device(sbuf, 0), Endpoint::Host(pinned_out.as_mut_ptr()), rect) }?.wait()?;
        assert_eq!(pinned_out.as_slice(), &want[..], "device -> pinned host {rect:?}");

        // Device to device, with offsets on both sides.
        let (so, doff) = (3, 5);
        let sbig = dev.alloc(src_len + so)?;
        let dbig = dev.alloc(dst_len + doff)?;
        write(dev, sbig, so, &src);
        // SAFETY: both buffers span their side from their offsets.
        unsafe { dev.copy(Endpoint::Device(sbig, so), Endpoint::Device(dbig, doff), rect) }?.wait()?;
        let got = read(dev, dbig, 0, dst_len + doff);
        assert_eq!(&got[..doff], &[0; 5][..], "bytes before the offset untouched");
        assert_eq!(&got[doff..], &want[..], "device -> device {rect:?}");
        for b in [dbuf, dbuf2, sbuf, sbig, dbig] {
            dev.free(b);
        }
    }
    Ok(())
}

fn many_copies_in_flight() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    // Many copies on both copy lanes at once, waited for in reverse order.
    let n = 64;
    let len = 100_000;
    let bufs: Vec<Buffer> = (0..n).map(|_| dev.alloc(len)).collect::<Result<_, _>>()?;
    let inputs: Vec<Vec<u8>> = (0..n).map(|i| pattern(len, i as u8)).collect();
    let writes: Vec<_> = bufs
        .iter()
        .zip(&inputs)
        // SAFETY: inputs outlive the waits below; each buffer holds `len` bytes.
        .map(|(b, d)| unsafe { dev.copy(Endpoint::Host(d.as_ptr().cast_mut()), Endpoint::Device(*b, 0), Rect::linear(len)) })
        .collect::<Result<_, _>>()?;
    for w in writes.iter().rev() {
        w.wait()?;
    }
    let mut outputs = vec![vec![0u8; len]; n];
    let reads: Vec<_> = bufs
        .iter()
        .zip(&mut outputs)
        // SAFETY: outputs outlive the waits below.
        .map(|(b, o)| unsafe { dev.copy(Endpoint::Device(*b, 0), Endpoint::Host(o.as_mut_ptr()), Rect::linear(len)) })
        .collect::<Result<_, _>>()?;
    for r in reads.iter().rev() {
        r.wait()?;
    }
    assert!(outputs == inputs);
    for b in bufs {
        dev.free(b);
    }
    Ok(())
}

const VADD: &str = r#"
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = scale * (a[i] + b[i]);
}
"#;

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn vector_add_kernel() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    if !cuda::nvrtc_present() {
        println!("skipped: no NVRTC ({})", CudaError::NoNvrtc);
        return Ok(());
    }
    let cache = KernelCache::new();
    let module = dev.build_module(&cache, VADD, "")?;
    let kernel = dev.kernel(&module, "vadd")?;
    let n = 100_003usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32 + 0.5).collect();
    let (ba, bb, bc) = (dev.alloc(4 * n)?, dev.alloc(4 * n)?, dev.alloc(4 * n)?);
    write(dev, ba, 0, &floats(&a));
    write(dev, bb, 0, &floats(&b));
    let (count, scale) = ((n as i32).to_ne_bytes(), 2.0f32.to_ne_bytes());
    // SAFETY: the buffers live until the wait; the values match `int n, float scale`.
    let done = unsafe { dev.launch(&kernel, LaunchDims::for_elements(n, 256), &[ba, bb, bc], &[&count, &scale]) }?;
    done.wait()?;
    let c = read(dev, bc, 0, 4 * n);
    let c: Vec<f32> = c.chunks_exact(4).map(|w| f32::from_ne_bytes(w.try_into().unwrap())).collect();
    for i in 0..n {
        assert_eq!(c[i], 2.0 * (a[i] + b[i]), "element {i}");
    }
    // The second build of the same source is served from the cache.
    let again = dev.build_module(&cache, VADD, "")?;
    assert!(std::sync::Arc::ptr_eq(&module, &again));
    let s = cache.stats();
    println!("{s:?}");
    assert_eq!((s.nvrtc_compiles, s.module_loads, s.module_hits), (1, 1, 1));
    for buf in [ba, bb, bc] {
        dev.free(buf);
    }
    Ok(())
}

fn build_failure_carries_the_log() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    if !cuda::nvrtc_present() {
        println!("skipped: no NVRTC ({})", CudaError::NoNvrtc);
        return Ok(());
    }
    let bad = "extern \"C\" __global__ void broken(float *x) { x[0] = undeclared_thing; }";
    match dev.build_module(&KernelCache::new(), bad, "") {
        Err(CudaError::Build { log, .. }) => {
            println!("{log}");
            assert!(log.contains("undeclared_thing"), "the log names the error: {log}");
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    // A missing kernel is an error too, not a panic.
    let module = dev.build_module(&KernelCache::new(), VADD, "")?;
    assert!(matches!(dev.kernel(&module, "no_such_kernel"), Err(CudaError::Kernel { .. })));
    Ok(())
}

/// Shapes of a column-major `C = alpha * A * B + beta * C`.
struct Gemm {
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
}

impl Gemm {
    /// The product on the CPU, a plain loop.
    fn reference(&self, alpha: f64, a: &[f64], b: &[f64], beta: f64, c: &mut [f64]) {
        let Gemm { m, n, k, lda, ldb, ldc } = *self;
        for j in 0..n {
            for i in 0..m {
                let dot: f64 = (0..k).map(|l| a[i + l * lda] * b[l + j * ldb]).sum();
                c[i + j * ldc] = alpha * dot + beta * c[i + j * ldc];
            }
        }
    }
}

fn cublas_gemm() -> Result<(), Failed> {
    let Some(dev) = need_device() else { return Ok(()) };
    if !cuda::cublas_present() {
        println!("skipped: no cuBLAS ({})", CudaError::NoCublas);
        return Ok(());
    }
    // A has a leading dimension larger than its row count.
    let g = Gemm { m: 5, n: 4, k: 3, lda: 7, ldb: 3, ldc: 5 };
    let Gemm { m, n, k, lda, ldb, ldc } = g;
    let a: Vec<f64> = (0..lda * k).map(|i| (i % 11) as f64 - 3.0).collect();
    let b: Vec<f64> = (0..ldb * n).map(|i| (i % 5) as f64 * 0.5).collect();
    let c0: Vec<f64> = (0..ldc * n).map(|i| i as f64).collect();
    let (alpha, beta) = (1.5, -0.5);
    let mut want = c0.clone();
    g.reference(alpha, &a, &b, beta, &mut want);

    // Double precision.
    let bytes = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
    let (da, db, dc) = (dev.alloc(8 * a.len())?, dev.alloc(8 * b.len())?, dev.alloc(8 * c0.len())?);
    write(dev, da, 0, &bytes(&a));
    write(dev, db, 0, &bytes(&b));
    write(dev, dc, 0, &bytes(&c0));
    {
        let h = dev.cublas()?;
        let nn = cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the buffers hold the matrices with these leading dimensions and live
        // until the fence below; alpha and beta are host scalars (default pointer mode).
        unsafe {
            blas::dgemm(
                *h.handle(),
                nn,
                nn,
                m as i32,
                n as i32,
                k as i32,
                &alpha,
                da.addr as *const f64,
                lda as i32,
                db.addr as *const f64,
                ldb as i32,
                &beta,
                dc.addr as *mut f64,
                ldc as i32,
            )
        }?;
    }
    dev.fence()?.wait()?;
    let got: Vec<f64> = read(dev, dc, 0, 8 * c0.len()).chunks_exact(8).map(|w| f64::from_ne_bytes(w.try_into().unwrap())).collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "dgemm element {i}: {g} != {w}");
    }

    // Single precision, same matrices.
    let f32s = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|&x| (x as f32).to_ne_bytes()).collect() };
    let (sa, sb, sc) = (dev.alloc(4 * a.len())?, dev.alloc(4 * b.len())?, dev.alloc(4 * c0.len())?);
    write(dev, sa, 0, &f32s(&a));
    write(dev, sb, 0, &f32s(&b));
    write(dev, sc, 0, &f32s(&c0));
    {
        let h = dev.cublas()?;
        let nn = cublasOperation_t::CUBLAS_OP_N;
        let (alpha, beta) = (alpha as f32, beta as f32);
        // SAFETY: as for dgemm.
        unsafe {
            blas::sgemm(
                *h.handle(),
                nn,
                nn,
                m as i32,
                n as i32,
                k as i32,
                &alpha,
                sa.addr as *const f32,
                lda as i32,
                sb.addr as *const f32,
                ldb as i32,
                &beta,
                sc.addr as *mut f32,
                ldc as i32,
            )
        }?;
    }
    dev.fence()?.wait()?;
    let got: Vec<f32> = read(dev, sc, 0, 4 * c0.len()).chunks_exact(4).map(|w| f32::from_ne_bytes(w.try_into().unwrap())).collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((*g as f64 - w).abs() <= 1e-4 * w.abs().max(1.0), "sgemm element {i}: {g} != {w}");
    }
    for buf in [da, db, dc, sa, sb, sc] {
        dev.free(buf);
    }
    Ok(())
}
