//! `sgemm_opencl`: tiled SGEMM through Weft on one OpenCL device against the same kernel
//! enqueued directly on that device, as a plain OpenCL program would.
//!
//! `C = A·B` with `N×N` single-precision matrices, column-major (StarPU's convention: `nx`
//! contiguous, leading dimension `N`), cut into `T×T` tiles of size `N/T` (`-n`, `-t`;
//! default N = 1024, tiles of 256). Task `(i, j, k)` computes
//! `C(i,j) = beta·C(i,j) + A(i,k)·B(k,j)` with `beta = 0` for `k = 0` (the tile is only
//! written) and 1 after: `T³` kernel launches in all. They are submitted (Weft) and
//! enqueued (direct) tile by tile of `C`, `k` innermost, which is also the order Weft runs
//! them in (each task's successor on its `C` tile becomes ready on the driver that ran it,
//! which takes it next), so both sides run the same kernels in the same order. `-o k`
//! submits `k`-major instead: the direct side follows that order, while Weft still runs
//! each `C` tile's chain back to back (on PoCL the two orders run equally fast).
//!
//! **Owns**: the kernel, the two ways of running it, the CPU reference, timing and report.
//! **Does not own**: anything in the runtime (public `weft_core` API) or the OpenCL backend
//! (`weft_vendors::opencl`, used as a plain OpenCL program uses its vendor's API).
//!
//! * **Weft**: a runtime with no CPU worker and one OpenCL device; `A`, `B`, `C` registered
//!   (`C` filled with NaN: its first access is a write, so none of it may show through)
//!   and partitioned with `Filter::MatrixTiles` before the clock. The clock covers
//!   submitting every task, `wait_for_all`, and `C.unpartition()` (which brings the result
//!   tiles home). Weft allocates each tile on the device when a task first needs it
//!   (reusing memory from its allocation cache after the first run), uploads each `A` and
//!   `B` tile once (they stay valid there), and never uploads `C`.
//! * **Direct**: the same device (the first one), its own context and in-order queue, one
//!   buffer per tile (`clCreateBuffer`) created by the first (untimed) run and reused by
//!   every later one. The clock covers uploading every `A` and `B` tile once (rectangular
//!   writes from the full host matrices, as Weft does), the same `T³` launches in the same
//!   order, reading every `C` tile back once, and waiting for the last command. Each tile
//!   is uploaded just before the first kernel that reads it, as Weft fetches it; `-u e`
//!   uploads them all first, as the simplest program would, which on PoCL makes the direct
//!   side a few percent slower (the tiles are no longer warm in cache when the kernels
//!   read them). Phases are timed separately too.
//!
//! Host matrices are written before the clock on both sides (a `calloc`ed matrix would
//! make the first write-back pay its page faults inside the clock).
//!
//! Both use one kernel, `sgemm` below: a register-blocked kernel where each work-item
//! computes 16 rows × 4 columns of its `C` tile with `float8` (PoCL reaches 1-2 GFLOP/s
//! with naive kernels, which would hide any overhead; this one reaches tens of GFLOP/s on one
//! core). Both builds are warmed before timing. Rounds alternate which side goes first;
//! every result is checked against a CPU reference computed once in `f64`.
//!
//! The last line, `RESULT ...`, is what `bench/run_opencl.sh` reads.

use std::process::ExitCode;
use std::time::{Duration, Instant};
use weft_bench::{Flags, Samples};
use weft_core::{AccessMode, Arch, Codelet, Config, DataHandle, Filter, OpenClImpl, Runtime, TaskBuilder};
use weft_vendors::opencl::{self, Kernel, Mem, OpenClDevice, ProgramCache};
use weft_vendors::{Buffer, Completion, Device, Endpoint, Rect};

/// Column-major tiles, packed (leading dimension = rows): `A` is `m×k`, `B` `k×n`, `C`
/// `m×n`. One work-item: rows `16·gid0 ..+16` and columns `4·gid1 ..+4` of `C`.
const SRC: &str = include_str!("../../../examples/kernels/sgemm_f8.cl");
/// Rows and columns of `C` per work-item.
const RB: usize = 16;
const CB: usize = 4;

const USAGE: &str = "Usage: sgemm_opencl [-n N] [-t tile] [-r rounds] [-o c|k] [-u l|e]\n\
  -n N       matrix order (default 1024)\n\
  -t tile    tile order; N must be a multiple, and tile a multiple of 16 (default 256)\n\
  -r rounds  timed runs of each side; medians are reported (default 5)\n\
  -o order   c: tile by tile of C, k innermost (default); k: k-major\n\
  -u upload  direct side: l: each A and B tile just before its first kernel (default);\n\
             e: every tile first\n\
Weft runs with no CPU worker and one OpenCL device; the direct side uses the same device.";

struct Problem {
    n: usize,
    tile: usize,
    k_major: bool,
    /// Direct side: upload each A and B tile just before its first kernel (else all first).
    lazy: bool,
    a: Vec<f32>,
    b: Vec<f32>,
    /// `A·B` in f64, and `|A|·|B|` (the scale of the rounding error of each element).
    reference: Vec<f64>,
    scale: Vec<f64>,
}

impl Problem {
    fn new(n: usize, tile: usize, k_major: bool, lazy: bool) -> Problem {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let a: Vec<f32> = (0..n * n).map(|_| next()).collect();
        let b: Vec<f32> = (0..n * n).map(|_| next()).collect();
        let (mut reference, mut scale) = (vec![0f64; n * n], vec![0f64; n * n]);
        // Column-major, j-p-i: the inner loop runs down contiguous columns.
        for j in 0..n {
            let (r, s) = (&mut reference[j * n..(j + 1) * n], &mut scale[j * n..(j + 1) * n]);
            for p in 0..n {
                let bv = f64::from(b[p + j * n]);
                let col = &a[p * n..(p + 1) * n];
                for i in 0..n {
                    let av = f64::from(col[i]);
                    r[i] += av * bv;
                    s[i] += (av * bv).abs();
                }
            }
        }
        Problem { n, tile, k_major, lazy, a, b, reference, scale }
    }

    fn tiles(&self) -> usize {
        self.n / self.tile
    }

    fn flops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3)
    }

    /// Every element within the worst-case rounding bound of an `n`-term f32 dot product.
    fn check(&self, c: &[f32], who: &str) -> Result<(), String> {
        let bound = 2.0 * self.n as f64 * f64::from(f32::EPSILON);
        for (idx, (&got, (&want, &s))) in c.iter().zip(self.reference.iter().zip(&self.scale)).enumerate() {
            if (f64::from(got) - want).abs() > bound * s + 1e-30 {
                let (i, j) = (idx % self.n, idx / self.n);
                return Err(format!("{who}: C({i},{j}) = {got}, expected {want} (tolerance {:e})", bound * s));
            }
        }
        Ok(())
    }

    /// Submission order: tile by tile of `C` (columns, then rows), `k` innermost; or
    /// `k`-major with `-o k`.
    fn tasks(&self) -> Vec<(usize, usize, usize)> {
        let t = self.tiles();
        let mut v = Vec::with_capacity(t * t * t);
        for a in 0..t {
            for b in 0..t {
                for c in 0..t {
                    v.push(if self.k_major { (c, b, a) } else { (b, a, c) });
                }
            }
        }
        v
    }
}

/// The by-value arguments: tile sizes `m, n, k` and `beta`.
fn args(tile: usize, beta: f32) -> [u8; 16] {
    let t = (tile as i32).to_ne_bytes();
    let mut out = [0u8; 16];
    out[..4].copy_from_slice(&t);
    out[4..8].copy_from_slice(&t);
    out[8..12].copy_from_slice(&t);
    out[12..].copy_from_slice(&beta.to_ne_bytes());
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// ---- Weft ----

struct WeftSide {
    rt: Runtime,
    codelet: std::sync::Arc<Codelet>,
}

impl WeftSide {
    fn new() -> Result<Option<WeftSide>, String> {
        let base = Config::from_env().map_err(|e| e.to_string())?;
        let rt = Runtime::new(Config { ncpu: Some(0), nopencl: Some(1), ncuda: Some(0), ..base }).map_err(|e| e.to_string())?;
        if !rt.workers().iter().any(|w| w.arch == Arch::OpenCl) {
            return Ok(None);
        }
        let imp = OpenClImpl::new(SRC, "sgemm").arg_sizes(&[4, 4, 4, 4]).global(|shapes, _| {
            let [m, n, _] = shapes[2].dims();
            vec![m / RB, n / CB]
        });
        let codelet = Codelet::builder("sgemm").opencl_impl(imp).build();
        Ok(Some(WeftSide { rt, codelet }))
    }

    /// Build the kernel on the device with one small task (untimed).
    fn warm(&self) -> Result<(), String> {
        let t = RB;
        let m = |v: f32| self.rt.register_matrix(vec![v; t * t], t, t, t).map_err(|e| e.to_string());
        let (a, b, c) = (m(1.0)?, m(1.0)?, m(0.0)?);
        let task = TaskBuilder::new(&self.codelet).access(&a, AccessMode::R).access(&b, AccessMode::R).access(&c, AccessMode::W);
        self.rt.submit(task.args(&args(t, 0.0))).and_then(|h| h.wait()).map_err(|e| format!("warming Weft: {e}"))?;
        let got = c.into_vec::<f32>().map_err(|e| e.to_string())?;
        if got.iter().any(|&x| x != t as f32) {
            return Err(format!("warming Weft: wrong result {:?}", &got[..4]));
        }
        Ok(())
    }

    /// One timed multiplication: (total, of which bringing C home), after checking C.
    fn run(&self, p: &Problem) -> Result<(Duration, Duration), String> {
        let (n, t) = (p.n, p.tiles());
        let e = |e: weft_core::Error| e.to_string();
        let a = self.rt.register_matrix(p.a.clone(), n, n, n).map_err(e)?;
        let b = self.rt.register_matrix(p.b.clone(), n, n, n).map_err(e)?;
        // NaN: the first access to each C tile is a write. Written, not calloc'ed, so that
        // its pages are mapped before the clock, as on the direct side.
        let c = self.rt.register_matrix(vec![f32::NAN; n * n], n, n, n).map_err(e)?;
        let tiles = |h: &DataHandle| h.partition(Filter::MatrixTiles { px: t, py: t });
        let (ta, tb, tc) = (tiles(&a).map_err(e)?, tiles(&b).map_err(e)?, tiles(&c).map_err(e)?);
        let builders: Vec<TaskBuilder> = p
            .tasks()
            .into_iter()
            .map(|(i, j, k)| {
                let (mode, beta) = if k == 0 { (AccessMode::W, 0.0) } else { (AccessMode::RW, 1.0) };
                TaskBuilder::new(&self.codelet)
                    .access(&ta[i + t * k], AccessMode::R)
                    .access(&tb[k + t * j], AccessMode::R)
                    .access(&tc[i + t * j], mode)
                    .args(&args(p.tile, beta))
            })
            .collect();
        let t0 = Instant::now();
        for task in builders {
            self.rt.submit(task).map_err(e)?;
        }
        self.rt.wait_for_all().map_err(e)?;
        let t1 = Instant::now();
        c.unpartition().map_err(e)?;
        let end = Instant::now();
        drop(tc);
        drop((ta, tb));
        a.unpartition().map_err(e)?;
        b.unpartition().map_err(e)?;
        drop((a, b));
        p.check(&c.into_vec::<f32>().map_err(e)?, "Weft")?;
        Ok((end - t0, end - t1))
    }
}

// ---- Direct ----

struct DirectSide {
    dev: OpenClDevice,
    kernel: Kernel,
    /// One buffer per tile of A, B and C, created by the first run and reused after (the
    /// memory objects are kept alive here).
    tiles: Option<(Vec<Mem>, [Vec<Buffer>; 3])>,
}

/// Direct phases: uploads first (`-u e` only), kernels (with the uploads for `-u l`),
/// downloads.
#[derive(Default)]
struct Phases {
    upload: Samples,
    kernels: Samples,
    download: Samples,
}

impl DirectSide {
    fn new() -> Result<Option<DirectSide>, String> {
        let Some(dev) = opencl::devices().into_iter().next() else { return Ok(None) };
        let cache = ProgramCache::new(ProgramCache::default_dir());
        let program = dev.build_program(&cache, SRC, "").map_err(|e| e.to_string())?;
        let kernel = dev.create_kernel(&program, "sgemm").map_err(|e| e.to_string())?;
        Ok(Some(DirectSide { dev, kernel, tiles: None }))
    }

    /// The tile buffers (`clCreateBuffer`, no fill), created once.
    fn tile_buffers(&mut self, count: usize, bytes: usize) -> Result<[Vec<Buffer>; 3], String> {
        if self.tiles.is_none() {
            let mut mems = Vec::with_capacity(3 * count);
            let mut bufs = [Vec::new(), Vec::new(), Vec::new()];
            for list in &mut bufs {
                for _ in 0..count {
                    let mem = Mem::new(self.dev.context(), bytes).map_err(|e| format!("clCreateBuffer: {e}"))?;
                    list.push(Buffer { addr: mem.as_raw() as usize, len: bytes });
                    mems.push(mem);
                }
            }
            self.tiles = Some((mems, bufs));
        }
        Ok(self.tiles.as_ref().expect("invariant: created above").1.clone())
    }

    /// One timed multiplication: total and its phases, after checking C.
    fn run(&mut self, p: &Problem, phases: &mut Phases) -> Result<Duration, String> {
        let (n, t, ts) = (p.n, p.tiles(), p.tile);
        let tile_bytes = ts * ts * 4;
        // Tile (i, j) of a column-major N×N matrix, to or from a packed tile.
        let to_tile = Rect { region: [ts * 4, ts, 1], src_pitch: [n * 4, n * n * 4], dst_pitch: [ts * 4, tile_bytes] };
        let from_tile = Rect { region: [ts * 4, ts, 1], src_pitch: [ts * 4, tile_bytes], dst_pitch: [n * 4, n * n * 4] };
        let at = |i: usize, j: usize| (i * ts + j * ts * n) * 4;
        // NaN, filled so that its pages are mapped before the clock (as on Weft's side).
        let mut c = vec![f32::NAN; n * n];
        let [ba, bb, bc] = self.tile_buffers(t * t, tile_bytes)?;
        let dev = &self.dev;
        let wait = |done: Vec<Completion>| done.iter().try_for_each(|d| d.wait()).map_err(|e| e.to_string());

        // Upload tile (i, j) of A (m = 0) or B (m = 1), unless it is there already.
        let mut uploaded = [vec![false; t * t], vec![false; t * t]];
        let mut upload = |m: usize, i: usize, j: usize, done: &mut Vec<Completion>| -> Result<(), String> {
            if std::mem::replace(&mut uploaded[m][i + t * j], true) {
                return Ok(());
            }
            let (host, dst) = if m == 0 { (&p.a, &ba) } else { (&p.b, &bb) };
            let src = host.as_ptr().cast::<u8>().wrapping_add(at(i, j)).cast_mut();
            // SAFETY: the source rectangle lies inside `host` (an N×N matrix), which outlives
            // the waits below and is only read; the destination is a live tile buffer of
            // this device that only commands of this in-order queue use.
            done.push(unsafe { dev.copy(Endpoint::Host(src), Endpoint::Device(dst[i + t * j], 0), to_tile) }.map_err(|e| e.to_string())?);
            Ok(())
        };

        let t0 = Instant::now();
        let mut done = Vec::new();
        if !p.lazy {
            for m in 0..2 {
                for j in 0..t {
                    for i in 0..t {
                        upload(m, i, j, &mut done)?;
                    }
                }
            }
            wait(std::mem::take(&mut done))?;
        }
        let t1 = Instant::now();
        for (i, j, k) in p.tasks() {
            upload(0, i, k, &mut done)?;
            upload(1, k, j, &mut done)?;
            let beta = if k == 0 { 0.0 } else { 1.0 };
            let v = args(ts, beta);
            let values: [&[u8]; 4] = [&v[..4], &v[4..8], &v[8..12], &v[12..]];
            // SAFETY: the three buffers are live tile buffers of this device (kept in
            // `self.tiles`), used only by commands of this in-order queue.
            unsafe { self.kernel.set_task_args(&[ba[i + t * k], bb[k + t * j], bc[i + t * j]], &values) }.map_err(|e| e.to_string())?;
            // SAFETY: as above.
            done.push(unsafe { dev.launch(&self.kernel, &[ts / RB, ts / CB], None) }.map_err(|e| e.to_string())?);
        }
        wait(std::mem::take(&mut done))?;
        let t2 = Instant::now();
        for j in 0..t {
            for i in 0..t {
                let dst = c.as_mut_ptr().cast::<u8>().wrapping_add(at(i, j));
                // SAFETY: the destination rectangle lies inside `c`, which outlives the wait
                // below and is not touched meanwhile; the source is a live tile buffer.
                done.push(
                    unsafe { dev.copy(Endpoint::Device(bc[i + t * j], 0), Endpoint::Host(dst), from_tile) }.map_err(|e| e.to_string())?,
                );
            }
        }
        wait(done)?;
        let t3 = Instant::now();
        phases.upload.push(ms(t1 - t0));
        phases.kernels.push(ms(t2 - t1));
        phases.download.push(ms(t3 - t2));
        p.check(&c, "direct")?;
        Ok(t3 - t0)
    }
}

fn run(n: usize, tile: usize, rounds: usize, (k_major, lazy): (bool, bool), pocl: &str) -> Result<(), String> {
    let (Some(weft), Some(mut direct)) = (WeftSide::new()?, DirectSide::new()?) else {
        println!("skipped: no OpenCL device (POCL_DEVICES={pocl:?})");
        println!("RESULT sgemm_opencl skipped");
        return Ok(());
    };
    let t = n / tile;
    let order = if k_major { "k-major" } else { "tile by tile of C, k innermost" };
    let uploads = if lazy { "each tile before its first kernel" } else { "all tiles first" };
    println!("== sgemm_opencl: N={n}, {t}x{t} tiles of {tile}, {} kernel launches ({order}), one OpenCL device ==", t * t * t);
    println!("device  : {} [{}] (POCL_DEVICES={pocl:?})", direct.dev.name(), direct.dev.platform_name());
    println!("direct  : same device, own context and in-order queue; uploads: {uploads}");
    println!("runtime : WEFT_NCPU=0, nopencl=1, policy {}", weft.rt.policy_name());
    println!("kernel  : register-blocked, {RB}x{CB} outputs per work-item (float8), global [{}, {}]", tile / RB, tile / CB);
    let t0 = Instant::now();
    let p = Problem::new(n, tile, k_major, lazy);
    println!("reference: CPU f64 in {:.0} ms (untimed)", ms(t0.elapsed()));
    weft.warm()?;
    // One untimed run each: kernel specialisation for this work size, allocator warm-up.
    let mut ph = Phases::default();
    direct.run(&p, &mut ph)?;
    weft.run(&p)?;
    let mut ph = Phases::default();
    let (mut wd, mut ww, mut wback, mut ratio) = (Samples::default(), Samples::default(), Samples::default(), Samples::default());
    let gf = |t: f64| p.flops() / (t * 1e-3) / 1e9;
    for r in 0..rounds {
        let (mut d, mut w) = (0.0, 0.0);
        let order: [bool; 2] = if r % 2 == 0 { [false, true] } else { [true, false] };
        for weft_side in order {
            if weft_side {
                let (total, back) = weft.run(&p)?;
                w = ms(total);
                wback.push(ms(back));
            } else {
                d = ms(direct.run(&p, &mut ph)?);
            }
        }
        println!("round {r}: direct {d:7.2} ms {:6.1} GFLOP/s   Weft {w:7.2} ms {:6.1} GFLOP/s   Weft/direct {:.3}", gf(d), gf(w), d / w);
        wd.push(d);
        ww.push(w);
        ratio.push(d / w);
    }
    let (gd, gw) = (gf(wd.median()), gf(ww.median()));
    let launches = (t * t * t) as f64;
    println!("-- medians of {rounds} rounds (min..max), times in ms --");
    println!(
        "direct : {} ms = {gd:.1} GFLOP/s; phases: upload first {}, kernels{} {} ({:.1} us per launch), download {}",
        wd.show(2),
        ph.upload.show(2),
        if lazy { " + uploads" } else { "" },
        ph.kernels.show(2),
        ph.kernels.median() * 1e3 / launches,
        ph.download.show(2)
    );
    println!("Weft   : {} ms = {gw:.1} GFLOP/s; of which C.unpartition {}", ww.show(2), wback.show(2));
    println!(
        "Weft/direct: {:.3} (GFLOP/s ratio of the medians); per round {}; best runs {:.3}; Weft costs {:+.1} us per task",
        gw / gd,
        ratio.show(3),
        wd.min() / ww.min(),
        (ww.median() - wd.median()) * 1e3 / launches
    );
    println!(
        "RESULT sgemm_opencl n={n} tile={tile} order={} upload={} tasks={} direct_ms={:.3} direct_min={:.3} direct_max={:.3} weft_ms={:.3} weft_min={:.3} \
         weft_max={:.3} direct_gflops={gd:.2} weft_gflops={gw:.2} ratio={:.4} ratio_min={:.4} ratio_max={:.4} kernels_ms={:.3}",
        if k_major { "k" } else { "c" },
        if lazy { "l" } else { "e" },
        t * t * t,
        wd.median(),
        wd.min(),
        wd.max(),
        ww.median(),
        ww.min(),
        ww.max(),
        gw / gd,
        ratio.min(),
        ratio.max(),
        ph.kernels.median()
    );
    Ok(())
}

fn main() -> ExitCode {
    let pocl = weft_bench::pocl_devices_default();
    let args: Vec<String> = std::env::args().collect();
    let r = Flags::parse(&args, "ntrou", USAGE).and_then(|f| {
        let (n, tile, rounds) = (f.get('n', 1024usize)?, f.get('t', 256usize)?, f.get('r', 5usize)?);
        let k_major = match f.get('o', "c".to_string())?.as_str() {
            "c" => false,
            "k" => true,
            o => return Err(format!("-o {o:?}: expected c or k\n{USAGE}")),
        };
        let lazy = match f.get('u', "l".to_string())?.as_str() {
            "l" => true,
            "e" => false,
            u => return Err(format!("-u {u:?}: expected l or e\n{USAGE}")),
        };
        if tile == 0 || n == 0 || n % tile != 0 || tile % RB != 0 || rounds == 0 {
            return Err(format!("N must be a multiple of the tile, the tile a multiple of {RB}, rounds > 0\n{USAGE}"));
        }
        run(n, tile, rounds, (k_major, lazy), &pocl)
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sgemm_opencl: {e}");
            ExitCode::FAILURE
        }
    }
}
