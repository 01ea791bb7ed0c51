//! Performance models seen from the runtime: tasks are measured on every kind of worker,
//! model-driven policies force the runs that calibrate a model, place tasks by what it
//! predicts, and models persist under `$WEFT_HOME/models`.

use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_core::perfmodel::{PerfModel, Prediction};
use weft_core::*;

mod common;
use common::{Gate, unique, work};

fn codelet(name: &str, us: u64) -> Arc<Codelet> {
    Codelet::builder(name)
        .cpu_and_null(move |_| {
            work(us);
            Ok(())
        })
        .model(PerfModel::new(name))
        .build()
}

/// `v`'s replica states once its replica on `node` is valid, or after 10 s.
fn states_once_valid(v: &DataHandle, node: usize) -> Vec<ReplicaState> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while v.replica_states()[node] == ReplicaState::Invalid && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    v.replica_states()
}

fn runtime(sched: PolicyKind, slowdown: f64) -> Runtime {
    Runtime::new(Config { ncpu: Some(1), nnull: 1, sched, null_slowdown: slowdown, spin_us: 5, ..Config::default() }).unwrap()
}

/// Tasks submitted `width` at a time, each burst waited for; how many ran on the null device.
fn bursts(rt: &Runtime, cl: &Arc<Codelet>, n: usize, width: usize) -> u64 {
    bursts_cpu(rt, cl, n, width);
    let null = rt.workers().iter().find(|w| w.arch == Arch::Null).unwrap().id;
    rt.tasks_per_worker()[null]
}

/// A device eight times slower than the CPU worker, tasks two at a time: `eager` hands the
/// idle device one of most pairs, `dmda` only the runs that calibrate its model (the CPU
/// worker finishes both sooner than the device one).
#[test]
fn dmda_sends_a_slowed_device_fewer_tasks_than_eager() {
    let eager = runtime(PolicyKind::Eager, 8.0);
    let on_null_eager = bursts(&eager, &codelet(&unique("slow-eager"), 200), 60, 2);
    let dmda = runtime(PolicyKind::Dmda, 8.0);
    let on_null_dmda = bursts(&dmda, &codelet(&unique("slow-dmda"), 200), 60, 2);
    assert!(
        on_null_dmda < 20 && on_null_dmda * 2 < on_null_eager,
        "null device ran {on_null_dmda} tasks under dmda, {on_null_eager} under eager"
    );
}

/// A fresh model is uncalibrated everywhere: the model-driven policies run its tasks on
/// every kind of worker until each has its 10 samples, though the CPU worker is faster.
#[test]
fn forced_calibration_reaches_every_architecture() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas, PolicyKind::Heteroprio] {
        let rt = runtime(sched, 4.0);
        let cl = codelet(&unique("calibrate"), 50);
        bursts(&rt, &cl, 20, 3);
        let m = rt.model(&cl).unwrap();
        let (fp, size) = (perfmodel::footprint(&[]), 0.0);
        for arch in ["cpu", "null"] {
            assert!(matches!(m.predict(arch, fp, size), Prediction::Calibrated(_)), "{sched:?}: {arch} not calibrated");
        }
        // And the model learnt which is faster.
        let (Prediction::Calibrated(cpu), Prediction::Calibrated(null)) = (m.predict("cpu", fp, size), m.predict("null", fp, size)) else {
            unreachable!()
        };
        assert!(null > 2.0 * cpu, "{sched:?}: null {null} us, cpu {cpu} us");
    }
}

/// `WEFT_PERF_MODEL_HOMOGENEOUS_CPU=0`: each CPU worker calibrates entries of its own, and
/// no shared `cpu` entry is made.
#[test]
fn cpu_workers_calibrate_their_own_entries_when_not_homogeneous() {
    let rt =
        Runtime::new(Config { ncpu: Some(2), sched: PolicyKind::Dmda, homogeneous_cpu: false, spin_us: 5, ..Config::default() }).unwrap();
    // (Short tasks: the timing assertions of the tests running beside this one suffer from
    // two more busy workers.)
    let cl = codelet(&unique("per-worker"), 5);
    bursts_cpu(&rt, &cl, 20, 2);
    let m = rt.model(&cl).unwrap();
    let (fp, size) = (perfmodel::footprint(&[]), 0.0);
    for arch in ["cpu0", "cpu1"] {
        assert!(matches!(m.predict(arch, fp, size), Prediction::Calibrated(_)), "{arch} not calibrated: {:?}", m.archs());
    }
    assert!(!m.archs().iter().any(|a| a == "cpu"), "{:?}", m.archs());
}

/// Tasks submitted `width` at a time, each burst waited for (on whichever workers).
fn bursts_cpu(rt: &Runtime, cl: &Arc<Codelet>, n: usize, width: usize) {
    for _ in 0..n {
        let hs: Vec<TaskHandle> = (0..width).map(|_| rt.submit(TaskBuilder::new(cl)).unwrap()).collect();
        for h in hs {
            h.wait().unwrap();
        }
    }
}

/// Tasks of a codelet without a model still run everywhere under the model-driven
/// policies, placed by queued work.
#[test]
fn tasks_without_models_spread_under_model_policies() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas, PolicyKind::Heteroprio] {
        let rt = Runtime::new(Config { ncpu: Some(2), sched, spin_us: 5, ..Config::default() }).unwrap();
        let cl = Codelet::builder("plain").cpu(|_| {
            work(20);
            Ok(())
        });
        let cl = cl.build();
        for _ in 0..400 {
            rt.submit(TaskBuilder::new(&cl)).unwrap();
        }
        rt.wait_for_all().unwrap();
        assert!(rt.tasks_per_worker().iter().all(|&n| n > 0), "{sched:?}: {:?}", rt.tasks_per_worker());
    }
}

/// `dmdas` takes the most urgent of the tasks queued on a worker first.
#[test]
fn dmdas_runs_higher_priorities_first() {
    let rt = Runtime::new(Config { ncpu: Some(1), sched: PolicyKind::Dmdas, spin_us: 5, ..Config::default() }).unwrap();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let o = order.clone();
    let rec = Codelet::builder("record")
        .cpu(move |ctx| {
            o.lock().unwrap().push(ctx.arg::<i32>());
            Ok(())
        })
        .build();
    let gate = rt.submit(TaskBuilder::empty().after_tag(7)).unwrap();
    for p in [0, 5, -3, 2, 5, 1] {
        rt.submit(TaskBuilder::new(&rec).arg(p).priority(p).after(&gate)).unwrap();
    }
    // Released together by the gate's completion, on the worker that completes it.
    rt.tag_notify(7).unwrap();
    rt.wait_for_all().unwrap();
    let got = order.lock().unwrap().clone();
    assert_eq!(got, vec![5, 5, 2, 1, 0, -3]);
}

/// Measurements survive the runtime: saved at shutdown under `$WEFT_HOME/models`, where a
/// runtime of another process finds them.
#[test]
fn models_are_saved_under_weft_home() {
    let home = std::env::temp_dir().join(unique("weft-home"));
    let name = unique("saved");
    {
        let rt = Runtime::new(Config { ncpu: Some(1), home: Some(home.clone()), sched: PolicyKind::Dm, spin_us: 5, ..Config::default() })
            .unwrap();
        let cl = codelet(&name, 10);
        for _ in 0..12 {
            rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
        }
    }
    let files: Vec<_> = std::fs::read_dir(home.join("models")).unwrap().map(|e| e.unwrap().path()).collect();
    let file = files
        .iter()
        .find(|p| p.to_string_lossy().contains(&name) && p.extension().is_some_and(|e| e == "model"))
        .unwrap_or_else(|| panic!("no model file in {files:?}"));
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(&name) && text.contains("cpu"), "{text}");
    let _ = std::fs::remove_dir_all(&home);
}

/// `WEFT_STATS` reports per worker busy and idle time, per model the predicted and measured
/// means, and bytes moved per pair of memory nodes: checked against what the tasks did (each
/// spins 2 ms; a vector of 4096 bytes goes back and forth, one of 8192 bytes is read on the
/// device once), with bounds on times that only a wrong figure can miss.
#[test]
fn statistics_report_time_models_and_bytes_per_pair() {
    let outer = Instant::now();
    let rt =
        Runtime::new(Config { ncpu: Some(1), nnull: 1, sched: PolicyKind::Dmda, stats: true, spin_us: 5, ..Config::default() }).unwrap();
    let name = unique("stats");
    let (n, spin_us) = (40, 2000);
    let cl = Codelet::builder(&name)
        .cpu_and_null(move |ctx| {
            ctx.vector_mut::<u8>(0)[0] += 1;
            work(spin_us);
            Ok(())
        })
        .model(PerfModel::new(&name))
        .build();
    let v = rt.register_vector(vec![0u8; 4096]).unwrap();
    for _ in 0..n {
        rt.submit(TaskBuilder::new(&cl).access(&v, AccessMode::RW)).unwrap();
    }
    rt.wait_for_all().unwrap();
    // A device task reading a vector that only host memory holds: 8192 more bytes from
    // node 0 to node 1, whether its own acquisition or a prefetch copies them.
    let before = rt.bytes_moved(0, 1);
    let read = Codelet::builder("stats-read").null(|ctx| {
        assert_eq!(ctx.vector::<u8>(0).len(), 8192);
        Ok(())
    });
    let w = rt.register_vector(vec![1u8; 8192]).unwrap();
    rt.submit(TaskBuilder::new(&read.build()).access(&w, AccessMode::R)).unwrap().wait().unwrap();
    let r = rt.stats_report();
    let lifetime = outer.elapsed().as_secs_f64();

    // The number after `key` on `line`.
    fn after<T: std::str::FromStr>(line: &str, key: &str) -> T {
        let mut words = line.split_whitespace().skip_while(|w| *w != key);
        words
            .nth(1)
            .and_then(|x| x.trim_end_matches([',', ';', ':']).parse().ok())
            .unwrap_or_else(|| panic!("no number after {key:?}: {line}"))
    }
    let wall: f64 = after(r.lines().next().unwrap(), "dmda,");
    assert!(wall <= lifetime + 1e-3, "{wall} s since start, {lifetime} s measured around the runtime\n{r}");
    let workers: Vec<&str> = r.lines().filter(|l| l.starts_with("worker")).collect();
    assert_eq!(workers.len(), 2, "{r}");
    let mut busy_total = 0.0;
    for (line, tasks) in workers.iter().zip(rt.tasks_per_worker()) {
        let (busy, idle): (f64, f64) = (after(line, "busy"), after(line, "idle"));
        assert_eq!(after::<u64>(line, "tasks"), tasks, "{r}");
        // Printed to the ms; busy time is within the runtime's lifetime, idle the rest.
        assert!(busy <= wall + 1e-3 && (busy + idle - wall).abs() <= 2e-3, "{line}: {wall} s since start");
        if tasks > 1 {
            assert!(busy > 0.0, "{line}");
        }
        busy_total += busy;
    }
    // Every task spun 2 ms on one worker or the other (less the rounding of two figures).
    let spun = (n as u64 * spin_us) as f64 / 1e6;
    assert!(busy_total >= spun - 2e-3, "{busy_total} s busy in all, the tasks spun {spun} s\n{r}");

    // Each kind of worker measured durations of at least the spin (the mean includes the
    // warm-ups: those are measured too).
    let mut measured = 0;
    for arch in ["cpu", "null"] {
        let line = r.lines().find(|l| l.starts_with(&format!("model {name} on {arch}:"))).unwrap_or_else(|| panic!("{arch}: {r}"));
        let (count, mean): (u64, f64) = (after(line, &format!("{arch}:")), after(line, "mean"));
        assert!(count > 0 && mean >= spin_us as f64, "{line}");
        measured += count;
    }
    assert_eq!(measured, n as u64, "{r}");

    // Bytes per pair: as the runtime counted them, and the device's node received nothing
    // from elsewhere.
    let pair = |src: usize, dst: usize| -> u64 {
        r.lines().find(|l| l.starts_with(&format!("bytes node {src} -> node {dst}:"))).map_or(0, |l| after(l, &format!("{dst}:")))
    };
    assert_eq!((pair(0, 1), pair(1, 0)), (rt.bytes_moved(0, 1), rt.bytes_moved(1, 0)), "{r}");
    let node1 = r.lines().find(|l| l.starts_with("node 1")).unwrap_or_else(|| panic!("{r}"));
    assert_eq!(after::<u64>(node1, "received"), pair(0, 1), "{r}");
    // The 4096-byte vector went to the device whole, once or more; the 8192-byte one once.
    assert!(before >= 4096 && before.is_multiple_of(4096), "{before} B to the device before the reader\n{r}");
    assert_eq!(pair(0, 1), before + 8192, "{r}");
    assert_eq!(v.into_vec::<u8>().unwrap()[0], 40);
    // The vector came home from the device: when a CPU task followed one there, or now.
    assert!(rt.bytes_moved(1, 0) >= 4096);
}

/// A task placed on a busy device has its input copied there while it waits, before the
/// device's driver takes it.
#[test]
fn a_placed_tasks_inputs_are_prefetched_while_it_waits() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas] {
        let rt = Runtime::new(Config { ncpu: Some(1), nnull: 1, sched, spin_us: 5, ..Config::default() }).unwrap();
        // Only the device can run these.
        let gate = Gate::new("blocker", Arch::Null);
        let sum = Codelet::builder("sum")
            .null(|ctx| {
                let v = ctx.vector::<u32>(0);
                assert_eq!(v.iter().sum::<u32>(), 1024);
                Ok(())
            })
            .build();
        let v = rt.register_vector(vec![1u32; 1024]).unwrap();
        gate.block(&rt);
        let t = rt.submit(TaskBuilder::new(&sum).access(&v, AccessMode::R)).unwrap();
        // The device is busy: its input reaches node 1 anyway.
        let states = states_once_valid(&v, 1);
        gate.open();
        t.wait().unwrap();
        assert_ne!(states[1], ReplicaState::Invalid, "{sched:?}: not prefetched: {states:?}");
        drop(v);
    }
}

/// A task placed on a busy CPU worker gets its input back from the device while it waits:
/// host memory is prefetched to as well.
#[test]
fn a_cpu_tasks_inputs_come_home_while_it_waits() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas] {
        let rt = Runtime::new(Config { ncpu: Some(1), nnull: 1, sched, spin_us: 5, ..Config::default() }).unwrap();
        // Only the device can run this: the vector is then valid there alone.
        let produce = Codelet::builder("produce")
            .null(|ctx| {
                ctx.vector_mut::<u32>(0).fill(2);
                Ok(())
            })
            .build();
        // Only the CPU worker can run these.
        let gate = Gate::new("cpu-blocker", Arch::Cpu);
        let sum = Codelet::builder("cpu-sum")
            .cpu(|ctx| {
                assert_eq!(ctx.vector::<u32>(0).iter().sum::<u32>(), 2048);
                Ok(())
            })
            .build();
        let v = rt.register_vector(vec![1u32; 1024]).unwrap();
        rt.submit(TaskBuilder::new(&produce).access(&v, AccessMode::W)).unwrap().wait().unwrap();
        assert_eq!(v.replica_states()[0], ReplicaState::Invalid, "{sched:?}: the device wrote it");
        gate.block(&rt);
        let t = rt.submit(TaskBuilder::new(&sum).access(&v, AccessMode::R)).unwrap();
        // The CPU worker is busy: the input reaches host memory anyway.
        let states = states_once_valid(&v, 0);
        gate.open();
        t.wait().unwrap();
        assert_ne!(states[0], ReplicaState::Invalid, "{sched:?}: not brought home: {states:?}");
        drop(v);
    }
}

/// Runs tasks of `cl` (each reading a vector of its own when `with_vector`) until its model
/// is calibrated on each of `archs` (10 samples: the forced calibration runs go to whichever
/// kind lacks them, so how many each kind gets from one burst varies).
fn calibrate(rt: &Runtime, cl: &Arc<Codelet>, archs: &[&str], with_vector: bool) {
    let m = rt.model(cl).unwrap();
    let calibrated = |arch: &str| m.entries().iter().any(|e| e.arch == arch && e.count >= 10);
    for _ in 0..20 {
        if archs.iter().all(|a| calibrated(a)) {
            return;
        }
        for _ in 0..10 {
            let mut t = TaskBuilder::new(cl);
            let v;
            if with_vector {
                v = rt.register_vector(vec![7u32; 16 << 10]).unwrap();
                t = t.access(&v, AccessMode::R);
            }
            rt.submit(t).unwrap();
        }
        rt.wait_for_all().unwrap();
    }
    panic!("{} not calibrated on {archs:?}", m.name());
}

/// Two calibrated codelets with models named after `tag`: a reader of a vector of 7s (200
/// µs of work, on the CPU worker or the device) and a filler (300 µs, CPU only). Calibration:
/// 10 runs on each kind of worker (the filler's with the CPU worker free for them: a
/// calibration run goes to the least loaded worker).
fn reader_and_filler(rt: &Runtime, tag: &str) -> (Arc<Codelet>, Arc<Codelet>) {
    let (name, fill) = (unique(&format!("{tag}-read")), unique(&format!("{tag}-filler")));
    let read = Codelet::builder(&name)
        .cpu_and_null(|ctx| {
            assert_eq!(ctx.vector::<u32>(0)[0], 7);
            work(200);
            Ok(())
        })
        .model(PerfModel::new(&name))
        .build();
    let filler = Codelet::builder(&fill)
        .cpu(|_| {
            work(300);
            Ok(())
        })
        .model(PerfModel::new(&fill))
        .build();
    calibrate(rt, &read, &["cpu", "null"], true);
    calibrate(rt, &filler, &["cpu"], false);
    (read, filler)
}

/// Bytes moved between host memory and the device by `n` tasks that each read their own
/// 64 KiB vector, every other one valid only on the device (written there first), placed
/// in that alternating order while both workers are held, the CPU worker's queue already
/// holding one task half as long again as theirs; each model is calibrated first.
fn mixed_bytes(rt: &Runtime, n: usize) -> u64 {
    let (read, filler) = reader_and_filler(rt, "mixed");
    let produce = Codelet::builder("produce-on-device")
        .null(|ctx| {
            ctx.vector_mut::<u32>(0).fill(7);
            Ok(())
        })
        .build();
    let vector = || rt.register_vector(vec![7u32; 16 << 10]).unwrap();
    let vs: Vec<DataHandle> = (0..n)
        .map(|i| {
            let v = vector();
            if i % 2 == 0 {
                rt.submit(TaskBuilder::new(&produce).access(&v, AccessMode::W)).unwrap();
            }
            v
        })
        .collect();
    rt.wait_for_all().unwrap();
    let (cpu, device) = (Gate::new("hold-cpu", Arch::Cpu), Gate::new("hold-device", Arch::Null));
    cpu.block(rt);
    device.block(rt);
    let moved = || rt.bytes_moved(0, 1) + rt.bytes_moved(1, 0);
    let before = moved();
    rt.submit(TaskBuilder::new(&filler)).unwrap();
    for v in &vs {
        rt.submit(TaskBuilder::new(&read).access(v, AccessMode::R)).unwrap();
    }
    cpu.open();
    device.open();
    rt.wait_for_all().unwrap();
    moved() - before
}

/// A CPU worker and a device of the same speed, tasks that each read their own vector,
/// half of them valid on the device only, half in host memory: either worker would finish
/// each about as soon. `eager` gives each to whichever worker is free first, moving some
/// of the vectors (4 to 48 of 64 in trials). The transfer term alone (a few µs against tasks of 200 µs) followed
/// the queues' stagger instead, moving nearly all; with their locality tolerance `dmda`
/// and `dmdas` run each where its data is. Bytes, not times, are compared (issue 31).
#[test]
fn dmda_runs_tasks_where_their_data_is() {
    let n = 64;
    let eager = mixed_bytes(&runtime(PolicyKind::Eager, 1.0), n);
    for sched in [PolicyKind::Dmda, PolicyKind::Dmdas] {
        let bytes = mixed_bytes(&runtime(sched, 1.0), n);
        // Before the tolerance: 63 of the 64 vectors moved.
        assert!(bytes < eager && bytes <= (n as u64 / 8) * (64 << 10), "{sched:?} moved {bytes} B, eager {eager} B");
    }
}

/// A CPU worker and a device of the same speed; the CPU worker holds one task of 300 µs
/// (queued while it is held), the device nothing. A task reading a vector in host memory
/// finishes first on the idle device by the models, but the CPU worker finishes it within
/// the locality tolerance (3 task durations) without moving it: `dmda` and `dmdas` keep it
/// at home. (They used to give it to the idle device whatever it moved: at 2048/256 and
/// 4096/512, one CPU worker beside one PoCL device, that moved 11-23% more bytes than this,
/// at no gain in GFLOP/s; bench/RESULTS.md, 2026-11-29, session 31.) Bytes, not times, are
/// compared.
#[test]
fn dmda_passes_over_an_idle_device_to_keep_data_at_home() {
    for sched in [PolicyKind::Dmda, PolicyKind::Dmdas] {
        let rt = runtime(sched, 1.0);
        let (read, filler) = reader_and_filler(&rt, "idle");
        let v = rt.register_vector(vec![7u32; 16 << 10]).unwrap();
        let cpu = Gate::new("hold-cpu-idle", Arch::Cpu);
        cpu.block(&rt);
        let moved = || rt.bytes_moved(0, 1) + rt.bytes_moved(1, 0);
        let before = moved();
        rt.submit(TaskBuilder::new(&filler)).unwrap();
        let t = rt.submit(TaskBuilder::new(&read).access(&v, AccessMode::R)).unwrap();
        cpu.open();
        t.wait().unwrap();
        rt.wait_for_all().unwrap();
        assert_eq!(moved() - before, 0, "{sched:?}: the idle device took the task and its vector");
    }
}

/// A model's first task on each worker is a warm-up: measured (and reported by
/// `WEFT_STATS`), not recorded, so a cold first run does not enter the model; the second and
/// later runs are samples.
#[test]
fn a_models_first_task_on_a_worker_is_a_warm_up() {
    let rt = Runtime::new(Config { ncpu: Some(1), sched: PolicyKind::Dm, stats: true, spin_us: 5, ..Config::default() }).unwrap();
    let name = unique("warm-up");
    let cl = codelet(&name, 20);
    let m = rt.model(&cl).unwrap();
    let samples = || m.entries().iter().filter(|e| e.arch == "cpu").map(|e| e.count).sum::<u64>();
    rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
    assert_eq!(samples(), 0, "the first task was recorded");
    for n in 1..=10 {
        rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
        assert_eq!(samples(), n);
    }
    // Calibrated (10 samples, then frozen: `WEFT_CALIBRATE=0`) before the last task: it was
    // predicted, and the warm-up was not.
    rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
    assert_eq!(samples(), 10);
    let r = rt.stats_report();
    let line = r.lines().find(|l| l.starts_with(&format!("model {name} on cpu"))).unwrap_or_else(|| panic!("{r}"));
    assert!(line.contains("12 measured") && line.contains("; 1 predicted") && !line.contains("warm-ups left out"), "{line}");
}

/// The spin time, µs, a task's argument blob carries.
fn us_arg(args: &[u8]) -> u64 {
    u64::from_ne_bytes(args[..8].try_into().expect("a u64 argument"))
}

/// A codelet that spins for the µs its argument says, reading a vector (of one shape for
/// every task), with `model` (named `name`).
fn spin_by_arg(name: &str, model: PerfModel) -> Arc<Codelet> {
    Codelet::builder(name)
        .cpu(|ctx| {
            work(ctx.arg::<u64>());
            Ok(())
        })
        .model(model)
        .build()
}

/// Runs 11 tasks of `cl` spinning `us` each, one at a time: after the model's warm-up on
/// the only worker, 10 samples calibrate their entry.
fn eleven(rt: &Runtime, cl: &Arc<Codelet>, v: &DataHandle, us: u64) {
    for _ in 0..11 {
        rt.submit(TaskBuilder::new(cl).arg(us).access(v, AccessMode::R)).unwrap().wait().unwrap();
    }
}

/// A codelet's footprint function tells apart tasks whose data have the same shapes: here
/// by the spin time in their argument blob, so each spin time has an entry (and duration)
/// of its own, where the default footprint (of the shapes alone) would mix them in one.
#[test]
fn a_footprint_function_separates_tasks_of_equal_shapes() {
    let rt = Runtime::new(Config { ncpu: Some(1), sched: PolicyKind::Dm, spin_us: 5, ..Config::default() }).unwrap();
    let name = unique("footprint");
    let cl = spin_by_arg(&name, PerfModel::new(&name).footprint(|_, args| 1000 + us_arg(args) as u32));
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    let key = |us: u64| cl.model().unwrap().key(&[v.shape()], &us.to_ne_bytes());
    assert_eq!((key(100).0, key(400).0), (1100, 1400));
    eleven(&rt, &cl, &v, 100);
    eleven(&rt, &cl, &v, 400);
    let e = rt.model(&cl).unwrap().entries();
    assert_eq!(
        e.iter().map(|e| (e.arch.as_str(), e.footprint, e.count)).collect::<Vec<_>>(),
        [("cpu", 1100, 10), ("cpu", 1400, 10)],
        "{e:?}"
    );
    let (short, long) = (&e[0], &e[1]);
    // Each entry holds its own tasks' durations (spins of at least 100 and 400 µs).
    assert!(short.min >= 100.0 && long.min >= 400.0, "{e:?}");
    assert!(long.estimate > short.estimate, "{e:?}");
    // The default footprint hashes the shapes only: one entry for both.
    let plain = PerfModel::new("plain");
    assert_eq!(plain.key(&[v.shape()], &100u64.to_ne_bytes()), plain.key(&[v.shape()], &400u64.to_ne_bytes()));
}

/// A codelet's size function gives the `n` of its power law `t = a·n^b`: tasks whose data
/// are all of one size but whose spin time (their argument) is their size calibrate a
/// regression over those sizes (the data's bytes would give it one size, and no fit), and
/// a task of a footprint never measured is predicted at its size function's `n`.
#[test]
fn a_size_function_gives_the_regression_its_sizes() {
    let rt = Runtime::new(Config { ncpu: Some(1), sched: PolicyKind::Dm, stats: true, spin_us: 5, ..Config::default() }).unwrap();
    let name = unique("size");
    let model = PerfModel::new(&name).footprint(|_, args| us_arg(args) as u32).size(|_, args| us_arg(args) as f64);
    let cl = spin_by_arg(&name, model);
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    eleven(&rt, &cl, &v, 100);
    eleven(&rt, &cl, &v, 1000);
    let m = rt.model(&cl).unwrap();
    let e = m.entries();
    assert_eq!(e.iter().map(|e| e.size).collect::<Vec<_>>(), [100.0, 1000.0], "{e:?}");
    let (a, b) = m.regression("cpu").unwrap_or_else(|| panic!("no regression: {e:?}"));
    // Durations proportional to n (generous bounds: a preempted sample moves the fit).
    assert!((0.5..1.5).contains(&b), "t = {a} n^{b}");
    // What the runtime predicted for a task of footprint 3000, from the statistics' sum of
    // predictions before and after it.
    let predicted_sum = || {
        let r = rt.stats_report();
        let line = r.lines().find(|l| l.starts_with(&format!("model {name} on cpu"))).unwrap_or_else(|| panic!("{r}")).to_string();
        let after = line.split("; ").nth(1).unwrap_or_else(|| panic!("{line}"));
        let count: f64 = after.split(' ').next().unwrap().parse().unwrap();
        let mean: f64 = after.split("mean predicted ").nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap();
        (count, count * mean)
    };
    let want = a * 3000f64.powf(b);
    assert_eq!(m.predict("cpu", 3000, 3000.0), Prediction::Calibrated(want));
    let (n0, sum0) = predicted_sum();
    // (Its sample then enters the regression.)
    rt.submit(TaskBuilder::new(&cl).arg(3000u64).access(&v, AccessMode::R)).unwrap().wait().unwrap();
    let (n1, sum1) = predicted_sum();
    // (The means are printed to 0.1 µs.)
    assert!(
        n1 == n0 + 1.0 && (sum1 - sum0 - want).abs() <= 0.05 * (n0 + n1) + 1e-6 * want,
        "predicted {} us, the power law at n = 3000 gives {want} us",
        sum1 - sum0
    );
    // At the data's bytes (64) the power law would have predicted a tenth of that or less.
    assert!(want > 10.0 * a * 64f64.powf(b));
}

/// On a device, the task measured right after a warm-up, whatever its model, is no sample
/// either (a kernel's first launch may charge its build to the task behind it); a CPU
/// worker keeps the single warm-up (the test above).
#[test]
fn on_a_device_the_task_after_a_warm_up_is_no_sample_either() {
    let rt = Runtime::new(Config { ncpu: Some(0), nnull: 1, sched: PolicyKind::Eager, spin_us: 5, ..Config::default() }).unwrap();
    let (a, b) = (codelet(&unique("after-a"), 20), codelet(&unique("after-b"), 20));
    let (ma, mb) = (rt.model(&a).unwrap(), rt.model(&b).unwrap());
    let samples = || {
        let n = |m: &perfmodel::ModelHandle| m.entries().iter().filter(|e| e.arch == "null").map(|e| e.count).sum::<u64>();
        (n(&ma), n(&mb))
    };
    let run = |cl: &Arc<Codelet>| rt.submit(TaskBuilder::new(cl)).unwrap().wait().unwrap();
    run(&a); // a's warm-up
    run(&b); // b's warm-up
    run(&b); // right after b's warm-up: no sample (on a CPU worker, b's first)
    assert_eq!(samples(), (0, 0));
    run(&a);
    assert_eq!(samples(), (1, 0));
    run(&b);
    assert_eq!(samples(), (1, 1));
}
