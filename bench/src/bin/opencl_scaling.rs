//! `opencl_scaling`: do two OpenCL devices run independent kernels twice as fast as one?
//!
//! `ntasks` (default 64) independent tasks, each a compute loop of about `-m` ms (default
//! 10) on one device over its own small vector (`-e` floats, default 1024: every task has
//! its own handle, so no task depends on another), run by Weft with no CPU worker
//! (`ncpu = 0`) on one OpenCL device (`nopencl = 1`) and on two (`nopencl = 2`). With PoCL,
//! `POCL_DEVICES="basic basic"` (set here when unset) gives two single-core devices that
//! run in parallel because each has its own driver thread.
//!
//! **Owns**: the kernel, its calibration, the timing and the report. **Does not own**:
//! anything in the runtime (public `weft_core` API only).
//!
//! * Both runtimes are built first; each builds the kernel on each of its devices with one
//!   tiny task per device before anything is timed (a first PoCL build costs ~0.4 s; later
//!   ones come from the kernel cache).
//! * Calibration (unless `-i` gives the loop count): batches of 8 tasks on the one-device
//!   runtime, scaling the loop count until a task takes `-m` ms (median of 3 batches).
//! * Then `-r` rounds (default 7), each timing one batch on each runtime and one batch of
//!   the **direct** baseline on one and on two devices, in an order that rotates from
//!   round to round so that all four see the same drift. Weft: registering the vectors is
//!   outside the clock; the clock covers submitting every task and `wait_for_all`. Direct:
//!   the same kernel through `weft_vendors::opencl`, one host thread per device taking
//!   tasks from a shared counter (as a plain multi-threaded OpenCL program would); device
//!   buffers are allocated before the clock, which covers each task's upload and launch
//!   and the wait for the last one. Results stay on the devices; after the clock every
//!   vector is read back and checked against a CPU reference.
//!
//! The direct baseline is the ceiling for Weft on this machine at this moment: on a
//! shared 2-core machine other processes take CPU time, and two devices driven by two
//! threads cannot then run twice as fast as one, with or without Weft.
//!
//! The last line, `RESULT ...`, is what `bench/run_opencl.sh` reads.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use weft_bench::{Flags, Samples};
use weft_core::{Arch, Codelet, Config, DataHandle, OpenClImpl, Runtime, TaskBuilder};
use weft_vendors::opencl::{self, Kernel, OpenClDevice, ProgramCache};
use weft_vendors::{Buffer, Completion, Device, Endpoint, Rect};

/// The recurrence `x <- x*A + b` converges to `b / (1 - A)` and cannot be folded away.
const SRC: &str = r#"
__kernel void spin(__global float *v, int iters) {
    size_t i = get_global_id(0);
    float b = v[i];
    float x = b;
    for (int t = 0; t < iters; t++)
        x = x * 0.9999f + b;
    v[i] = x;
}
"#;
const A: f32 = 0.9999;

const USAGE: &str = "Usage: opencl_scaling [-t ntasks] [-m ms_per_task] [-i iters] [-e elems] [-r rounds]\n\
  -t ntasks   independent tasks per batch (default 64)\n\
  -m ms       calibrate one task to take about this long on one device (default 10)\n\
  -i iters    loop count per work-item (skips calibration)\n\
  -e elems    floats per task vector = work-items per launch (default 1024)\n\
  -r rounds   rounds, each timing every configuration once; medians are reported (default 7)\n\
Weft runs with no CPU worker, on 1 and on 2 OpenCL devices; WEFT_SCHED picks the policy.\n\
The direct baseline drives the same devices with one host thread each.";

struct Opts {
    ntasks: usize,
    target_ms: f64,
    iters: Option<i32>,
    elems: usize,
    rounds: usize,
}

fn initial(task: usize, i: usize) -> f32 {
    1.0 + 0.125 * (i % 8) as f32 + 0.5 * (task % 4) as f32
}

/// The task vectors, as registered (Weft) or uploaded (direct).
fn inputs(n: usize, elems: usize) -> Vec<Vec<f32>> {
    (0..n).map(|t| (0..elems).map(|i| initial(t, i)).collect()).collect()
}

/// Reference results of the kernel, by (initial value bits, iters).
#[derive(Default)]
struct Refs(HashMap<(u32, i32), f32>);

impl Refs {
    /// Check task `t`'s vector after the kernel: the CPU runs the same recurrence in f32
    /// without fused multiply-adds, hence the tolerance.
    fn check(&mut self, who: &str, t: usize, got: &[f32], iters: i32) -> Result<(), String> {
        for (i, &g) in got.iter().enumerate() {
            let b = initial(t, i);
            let want = *self.0.entry((b.to_bits(), iters)).or_insert_with(|| {
                let mut x = b;
                for _ in 0..iters {
                    x = x * A + b;
                }
                x
            });
            if (g - want).abs() > 1e-3 * want.abs() {
                return Err(format!("{who}: task {t} element {i}: got {g}, expected {want} (iters {iters})"));
            }
        }
        Ok(())
    }
}

/// Weft's side: one runtime per device count.
struct WeftSide {
    codelet: Arc<Codelet>,
}

impl WeftSide {
    /// One batch of `n` tasks on `rt`: the time from the first submission to the end of
    /// `wait_for_all`, and how many tasks each OpenCL worker ran.
    fn batch(&self, rt: &Runtime, n: usize, elems: usize, iters: i32, refs: &mut Refs) -> Result<(Duration, Vec<u64>), String> {
        let e = |e: weft_core::Error| e.to_string();
        let hs: Vec<DataHandle> = inputs(n, elems).into_iter().map(|v| rt.register_vector(v)).collect::<Result<_, _>>().map_err(e)?;
        let before = rt.tasks_per_worker();
        let t0 = Instant::now();
        for h in &hs {
            rt.submit(TaskBuilder::new(&self.codelet).access(h, weft_core::AccessMode::RW).arg(iters)).map_err(e)?;
        }
        rt.wait_for_all().map_err(e)?;
        let dt = t0.elapsed();
        let per = rt.tasks_per_worker().into_iter().zip(&before).zip(rt.workers()).filter(|(_, w)| w.arch == Arch::OpenCl);
        let per: Vec<u64> = per.map(|((a, b), _)| a - b).collect();
        for (t, h) in hs.into_iter().enumerate() {
            refs.check("Weft", t, &h.into_vec::<f32>().map_err(e)?, iters)?;
        }
        Ok((dt, per))
    }

    /// Build the kernel on every device of `rt` (one tiny task pinned to each), untimed.
    fn warm(&self, rt: &Runtime) -> Result<Duration, String> {
        let t0 = Instant::now();
        for w in rt.workers().iter().filter(|w| w.arch == Arch::OpenCl) {
            let h = rt.register_vector(vec![1.0f32; 16]).map_err(|e| e.to_string())?;
            rt.submit(TaskBuilder::new(&self.codelet).access(&h, weft_core::AccessMode::RW).arg(1i32).on_worker(w.id))
                .and_then(|t| t.wait())
                .map_err(|e| format!("warming {}: {e}", w.name))?;
        }
        Ok(t0.elapsed())
    }
}

fn runtime(base: &Config, ndev: usize) -> Result<Option<Runtime>, String> {
    let rt = Runtime::new(Config { ncpu: Some(0), nopencl: Some(ndev), ncuda: Some(0), ..base.clone() }).map_err(|e| e.to_string())?;
    let n = rt.workers().iter().filter(|w| w.arch == Arch::OpenCl).count();
    Ok((n == ndev).then_some(rt))
}

/// The direct baseline: the first two devices, each with the kernel built, driven by one
/// host thread each.
struct DirectSide {
    devs: Vec<(OpenClDevice, Kernel)>,
}

impl DirectSide {
    fn new() -> Result<DirectSide, String> {
        let cache = ProgramCache::new(ProgramCache::default_dir());
        let mut devs = Vec::new();
        for dev in opencl::devices().into_iter().take(2) {
            let p = dev.build_program(&cache, SRC, "").map_err(|e| e.to_string())?;
            let k = dev.create_kernel(&p, "spin").map_err(|e| e.to_string())?;
            devs.push((dev, k));
        }
        Ok(DirectSide { devs })
    }

    /// `n` tasks on the first `ndev` devices, one host thread per device taking task
    /// numbers from a shared counter: upload the task's vector, launch; then wait.
    fn batch(&mut self, ndev: usize, n: usize, elems: usize, iters: i32, refs: &mut Refs) -> Result<Duration, String> {
        let bytes = elems * 4;
        let hosts = inputs(n, elems);
        // A buffer per task on every device (a task runs where a thread takes it).
        let mut bufs: Vec<Vec<Buffer>> = Vec::new();
        for (dev, _) in &self.devs[..ndev] {
            bufs.push((0..n).map(|_| dev.alloc(bytes)).collect::<Result<_, _>>().map_err(|e| e.to_string())?);
        }
        let next = AtomicUsize::new(0);
        let t0 = Instant::now();
        let ran: Vec<Result<Vec<usize>, String>> = std::thread::scope(|s| {
            let threads: Vec<_> = self.devs[..ndev]
                .iter_mut()
                .zip(&bufs)
                .map(|((dev, kernel), bufs)| {
                    let (next, hosts) = (&next, &hosts);
                    s.spawn(move || -> Result<Vec<usize>, String> {
                        let mut mine = Vec::new();
                        let mut done: Vec<Completion> = Vec::new();
                        let mut submit = |t: usize, done: &mut Vec<Completion>| -> Result<(), String> {
                            let src = hosts[t].as_ptr().cast::<u8>().cast_mut();
                            let to_dev = Endpoint::Device(bufs[t], 0);
                            // SAFETY: `hosts[t]` outlives the wait below (even on errors) and is
                            // only read; the buffer is this device's and only this thread uses it.
                            done.push(unsafe { dev.copy(Endpoint::Host(src), to_dev, Rect::linear(bytes)) }.map_err(|e| e.to_string())?);
                            // SAFETY: as above; the buffer lives until after the wait.
                            unsafe { kernel.set_task_args(&[bufs[t]], &[&iters.to_ne_bytes()]) }.map_err(|e| e.to_string())?;
                            // SAFETY: as above.
                            done.push(unsafe { dev.launch(kernel, &[elems], None) }.map_err(|e| e.to_string())?);
                            Ok(())
                        };
                        let mut r = Ok(());
                        while r.is_ok() {
                            let t = next.fetch_add(1, Ordering::Relaxed);
                            if t >= n {
                                break;
                            }
                            r = submit(t, &mut done);
                            mine.push(t);
                        }
                        // Wait for everything submitted, also after an error.
                        let waited = done.iter().try_for_each(|d| d.wait()).map_err(|e| e.to_string());
                        r.and(waited).map(|()| mine)
                    })
                })
                .collect();
            threads.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("direct thread panicked".into()))).collect()
        });
        let dt = t0.elapsed();
        for (d, r) in ran.into_iter().enumerate() {
            let dev = &self.devs[d].0;
            for t in r? {
                let mut got = vec![0f32; elems];
                // SAFETY: `got` holds `bytes` and is not touched until the wait returns.
                unsafe { dev.copy(Endpoint::Device(bufs[d][t], 0), Endpoint::Host(got.as_mut_ptr().cast()), Rect::linear(bytes)) }
                    .and_then(|c| c.wait())
                    .map_err(|e| e.to_string())?;
                refs.check("direct", t, &got, iters)?;
            }
        }
        for (d, list) in bufs.into_iter().enumerate() {
            list.into_iter().for_each(|b| self.devs[d].0.free(b));
        }
        Ok(dt)
    }
}

/// Loop count for one task of about `target_ms` on `rt`'s one device, and the time per
/// task measured in batches of 8.
fn calibrate(w: &WeftSide, rt: &Runtime, o: &Opts, refs: &mut Refs) -> Result<(i32, f64), String> {
    const BATCH: usize = 8;
    let per_task = |iters: i32, refs: &mut Refs| -> Result<f64, String> {
        let mut s = Samples::default();
        for _ in 0..3 {
            s.push(ms(w.batch(rt, BATCH, o.elems, iters, refs)?.0) / BATCH as f64);
        }
        Ok(s.median())
    };
    if let Some(i) = o.iters {
        return Ok((i, per_task(i, refs)?));
    }
    let mut iters: i32 = 2000;
    let mut t = 0.0;
    for _ in 0..4 {
        t = per_task(iters, refs)?;
        if (t - o.target_ms).abs() < 0.05 * o.target_ms {
            break;
        }
        iters = (f64::from(iters) * o.target_ms / t.max(0.01)).round().clamp(1.0, f64::from(i32::MAX)) as i32;
    }
    Ok((iters, t))
}

fn run(opts: Opts, pocl: &str) -> Result<(), String> {
    let base = Config::from_env().map_err(|e| e.to_string())?;
    let (Some(rt1), Some(rt2)) = (runtime(&base, 1)?, runtime(&base, 2)?) else {
        println!("skipped: fewer than two OpenCL devices (POCL_DEVICES={pocl:?})");
        println!("RESULT opencl_scaling skipped");
        return Ok(());
    };
    let name = |rt: &Runtime, i: usize| rt.memory_nodes()[i].device.name().to_string();
    println!("== opencl_scaling: {} independent kernel tasks, 1 vs 2 OpenCL devices ==", opts.ntasks);
    println!("devices : {} | {} (POCL_DEVICES={pocl:?})", name(&rt2, 1), name(&rt2, 2));
    println!("runtime : WEFT_NCPU=0 (no CPU worker, one driver thread per device), policy {}", rt2.policy_name());
    let weft = WeftSide { codelet: Codelet::builder("spin").opencl_impl(OpenClImpl::new(SRC, "spin").arg_sizes(&[4])).build() };
    let mut refs = Refs::default();
    let w1 = weft.warm(&rt1)?;
    let w2 = weft.warm(&rt2)?;
    let t0 = Instant::now();
    let mut direct = DirectSide::new()?;
    println!(
        "warm-up : kernel built for Weft on 1 device in {:.1} ms, on 2 in {:.1} ms, for direct in {:.1} ms (untimed)",
        ms(w1),
        ms(w2),
        ms(t0.elapsed())
    );
    let (iters, task_ms) = calibrate(&weft, &rt1, &opts, &mut refs)?;
    let (n, e) = (opts.ntasks, opts.elems);
    println!("task    : {e} work-items x {iters} iterations = {task_ms:.2} ms per task on one device (batches of 8, median of 3)");
    // Untimed: PoCL specialises the kernel for the work size on first use on each device.
    direct.batch(2, 4, e, iters, &mut refs)?;
    let names = ["Weft 1 dev", "Weft 2 dev", "direct 1 dev", "direct 2 dev"];
    let mut s: [Samples; 4] = Default::default();
    let (mut wr, mut dr) = (Samples::default(), Samples::default());
    let mut per2 = Vec::new();
    for r in 0..opts.rounds {
        let mut t = [0.0f64; 4];
        // Rotate the order so that every configuration sees the same drift.
        for k in 0..4 {
            let c = (k + r) % 4;
            t[c] = match c {
                0 => ms(weft.batch(&rt1, n, e, iters, &mut refs)?.0),
                1 => {
                    let (dt, per) = weft.batch(&rt2, n, e, iters, &mut refs)?;
                    per2 = per;
                    ms(dt)
                }
                d => ms(direct.batch(d - 1, n, e, iters, &mut refs)?),
            };
        }
        println!(
            "round {r}: Weft {:7.1} / {:7.1} ms = {:.3}x (tasks per device {per2:?})   direct {:7.1} / {:7.1} ms = {:.3}x",
            t[0],
            t[1],
            t[0] / t[1],
            t[2],
            t[3],
            t[2] / t[3]
        );
        for (samples, x) in s.iter_mut().zip(t) {
            samples.push(x);
        }
        wr.push(t[0] / t[1]);
        dr.push(t[2] / t[3]);
    }
    let ws = s[0].median() / s[1].median();
    let ds = s[2].median() / s[3].median();
    let ideal = task_ms * n as f64;
    println!("-- medians of {} rounds (min..max), ms; ideal = {n} x {task_ms:.2} ms / devices --", opts.rounds);
    for (i, nm) in names.iter().enumerate() {
        let ndev = 1 + i % 2;
        println!("{nm:<13}: {:<28} {:+6.1}% vs ideal", s[i].show(1), (s[i].median() / (ideal / ndev as f64) - 1.0) * 100.0);
    }
    println!("speedup 2 vs 1 device: Weft {ws:.3}x (per round {}), direct {ds:.3}x (per round {})", wr.show(3), dr.show(3));
    println!("Weft 2-device time / direct 2-device time: {:.3}", s[1].median() / s[3].median());
    println!(
        "RESULT opencl_scaling ntasks={n} task_ms={task_ms:.3} iters={iters} t1_ms={:.2} t1_min={:.2} t1_max={:.2} \
         t2_ms={:.2} t2_min={:.2} t2_max={:.2} speedup={ws:.4} speedup_min={:.4} speedup_max={:.4} \
         direct_t1_ms={:.2} direct_t2_ms={:.2} direct_speedup={ds:.4} direct_speedup_min={:.4} direct_speedup_max={:.4}",
        s[0].median(),
        s[0].min(),
        s[0].max(),
        s[1].median(),
        s[1].min(),
        s[1].max(),
        wr.min(),
        wr.max(),
        s[2].median(),
        s[3].median(),
        dr.min(),
        dr.max()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let f = Flags::parse(args, "tmier", USAGE)?;
    let o = Opts {
        ntasks: f.get('t', 64)?,
        target_ms: f.get('m', 10.0)?,
        iters: if f.has('i') { Some(f.get('i', 0)?) } else { None },
        elems: f.get('e', 1024)?,
        rounds: f.get('r', 7)?,
    };
    if o.ntasks == 0 || o.elems == 0 || o.rounds == 0 || o.target_ms <= 0.0 || o.iters.is_some_and(|i| i < 0) {
        return Err(format!("counts must be positive\n{USAGE}"));
    }
    Ok(o)
}

fn main() -> ExitCode {
    let pocl = weft_bench::pocl_devices_default();
    let args: Vec<String> = std::env::args().collect();
    let r = parse(&args).and_then(|o| run(o, &pocl));
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("opencl_scaling: {e}");
            ExitCode::FAILURE
        }
    }
}
