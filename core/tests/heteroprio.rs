//! `heteroprio` with bucket orders given by the program (`Config::heteroprio`,
//! `WEFT_HETEROPRIO`): buckets are task priorities, each architecture takes the buckets it
//! lists in its order, then the others by priority.

use std::sync::{Arc, Mutex};
use weft_core::*;

mod common;
use common::{Gate, unique, work};

fn runtime(ncpu: usize, nnull: usize, orders: &str) -> Runtime {
    let heteroprio = Some(orders.parse::<HeteroprioOrders>().unwrap());
    Runtime::new(Config { ncpu: Some(ncpu), nnull, sched: PolicyKind::Heteroprio, heteroprio, spin_us: 5, ..Config::default() }).unwrap()
}

/// Holds one worker of each of `archs` until its gate is opened, so that the order in which
/// they then take the tasks queued meanwhile is the policy's alone.
fn hold(rt: &Runtime, archs: &[Arch]) -> Vec<Gate> {
    archs
        .iter()
        .map(|&arch| {
            let gate = Gate::new("blocker", arch);
            gate.block(rt);
            gate
        })
        .collect()
}

/// (architecture, priority) of each task run, in the order run.
type Log = Arc<Mutex<Vec<(Arch, i32)>>>;

/// Records each task's run; each takes `us` µs (long enough for every worker to take part);
/// with `model`, measured by the performance model of that name.
fn recorder(log: &Log, us: u64, model: Option<&str>) -> Arc<Codelet> {
    let l = log.clone();
    let b = Codelet::builder("record").cpu_and_null(move |ctx| {
        l.lock().unwrap().push((ctx.arch(), ctx.arg::<i32>()));
        work(us);
        Ok(())
    });
    match model {
        Some(name) => b.model(perfmodel::PerfModel::new(name)).build(),
        None => b.build(),
    }
}

#[test]
fn one_kind_takes_its_listed_buckets_in_order_then_the_rest_by_priority() {
    let rt = runtime(1, 0, "cpu=1,3,2");
    let log: Log = Arc::default();
    let rec = recorder(&log, 0, None);
    let gates = hold(&rt, &[Arch::Cpu]);
    for p in [0, 3, 1, 2, 3, 5, 1, -1] {
        rt.submit(TaskBuilder::new(&rec).arg(p).priority(p)).unwrap();
    }
    gates.iter().for_each(Gate::open);
    rt.wait_for_all().unwrap();
    let order: Vec<i32> = log.lock().unwrap().iter().map(|&(_, p)| p).collect();
    assert_eq!(order, vec![1, 1, 3, 3, 2, 5, 0, -1]);
}

#[test]
fn each_kind_starts_with_its_own_first_bucket() {
    // Opposite orders: the CPU worker drains bucket 0 first, the null device bucket 1 (tasks
    // of 0.5 ms: neither worker drains both buckets before the other looks).
    let rt = runtime(1, 1, "cpu=0,1;null=1,0");
    let log: Log = Arc::default();
    let rec = recorder(&log, 500, None);
    let gates = hold(&rt, &[Arch::Cpu, Arch::Null]);
    for i in 0..40 {
        let p = i % 2;
        rt.submit(TaskBuilder::new(&rec).arg(p).priority(p)).unwrap();
    }
    gates.iter().for_each(Gate::open);
    rt.wait_for_all().unwrap();
    let log = log.lock().unwrap();
    for (arch, first) in [(Arch::Cpu, 0), (Arch::Null, 1)] {
        let ran: Vec<i32> = log.iter().filter(|&&(a, _)| a == arch).map(|&(_, p)| p).collect();
        assert!(!ran.is_empty(), "{arch:?} ran nothing: {log:?}");
        assert_eq!(ran[0], first, "{arch:?} took another bucket first: {log:?}");
        // It took from its second bucket only once its first was empty: what it ran is its
        // first bucket's tasks, then the other's.
        let switch = ran.iter().position(|&p| p != first).unwrap_or(ran.len());
        assert!(ran[switch..].iter().all(|&p| p != first), "{arch:?} went back to bucket {first}: {ran:?}");
    }
}

#[test]
fn an_unlisted_architecture_takes_highest_priorities_first() {
    let rt = runtime(1, 0, "null=0,1");
    let log: Log = Arc::default();
    let rec = recorder(&log, 0, None);
    let gates = hold(&rt, &[Arch::Cpu]);
    for p in [0, 5, -3, 2, 5, 1] {
        rt.submit(TaskBuilder::new(&rec).arg(p).priority(p)).unwrap();
    }
    gates.iter().for_each(Gate::open);
    rt.wait_for_all().unwrap();
    let order: Vec<i32> = log.lock().unwrap().iter().map(|&(_, p)| p).collect();
    assert_eq!(order, vec![5, 5, 2, 1, 0, -3]);
}

/// Automatic orders on one CPU worker beside a null device `slowdown` times slower.
fn automatic(slowdown: f64) -> Runtime {
    Runtime::new(Config {
        ncpu: Some(1),
        nnull: 1,
        sched: PolicyKind::Heteroprio,
        null_slowdown: slowdown,
        spin_us: 5,
        ..Config::default()
    })
    .unwrap()
}

/// `n` tasks of `cl` (argument 0) submitted at once, then waited for.
fn burst(rt: &Runtime, cl: &Arc<Codelet>, n: usize) {
    let hs: Vec<TaskHandle> = (0..n).map(|_| rt.submit(TaskBuilder::new(cl).arg(0i32)).unwrap()).collect();
    for h in hs {
        h.wait().unwrap();
    }
}

/// Bursts enough that `cl`'s fresh model, forced onto both kinds, calibrates on each.
fn calibrate(rt: &Runtime, cl: &Arc<Codelet>) {
    for _ in 0..15 {
        burst(rt, cl, 3);
    }
}

/// Automatic orders: a kind `s` times slower than another on a bucket (by the models) takes
/// a task from it only when it holds more than `s` tasks per faster worker (StarPU's slow
/// factor): while it ran one, the faster worker would have run them all.
#[test]
fn a_slow_kind_leaves_a_bucket_the_faster_ones_would_drain_first() {
    let rt = automatic(10.0);
    let name = unique("slow-factor");
    let cl = Codelet::builder(&name)
        .cpu_and_null(|_| {
            work(1000);
            Ok(())
        })
        .model(perfmodel::PerfModel::new(&name))
        .build();
    let null = rt.workers().iter().find(|w| w.arch == Arch::Null).unwrap().id;
    calibrate(&rt, &cl);
    let m = rt.model(&cl).unwrap();
    let fp = perfmodel::footprint(&[]);
    for arch in ["cpu", "null"] {
        assert!(matches!(m.predict(arch, fp, 0.0), perfmodel::Prediction::Calibrated(_)), "{arch} not calibrated");
    }
    // Bursts of 4: about 10 times slower, the device would end its one task after the CPU
    // worker ended all four. (Tasks of 1 ms: a loaded machine's preemptions stretch the
    // samples, and so the measured ratio, less than they would shorter ones'.)
    let before = rt.tasks_per_worker()[null];
    for _ in 0..20 {
        burst(&rt, &cl, 4);
    }
    let ran = rt.tasks_per_worker()[null] - before;
    assert_eq!(ran, 0, "the device, 10x slower, took {ran} of 80 tasks from bursts of 4");
}

/// Automatic orders: a kind that a faster one could stand in for takes the least urgent
/// task of a bucket, leaving the most urgent (a critical path's) to the faster kind.
#[test]
fn a_slower_kind_takes_the_least_urgent_task() {
    let rt = automatic(2.0);
    let name = unique("least-urgent");
    let log: Log = Arc::default();
    let cl = recorder(&log, 1000, Some(&name));
    calibrate(&rt, &cl); // the device is then known to be about 2x slower
    log.lock().unwrap().clear();
    // Both workers held; tasks of distinct priorities queued; the device let go first.
    let gates = hold(&rt, &[Arch::Cpu, Arch::Null]);
    // Ten: a device up to ten times slower (by its samples, which a loaded machine can
    // stretch) still takes one.
    for p in [3, 0, 5, 1, 4, 2, 9, 6, 8, 7] {
        rt.submit(TaskBuilder::new(&cl).arg(p).priority(p)).unwrap();
    }
    gates[1].open();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    gates[0].open();
    rt.wait_for_all().unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log[0], (Arch::Null, 0), "the device took another task first: {log:?}");
    let cpu: Vec<i32> = log.iter().filter(|&&(a, _)| a == Arch::Cpu).map(|&(_, p)| p).collect();
    assert_eq!(cpu.first(), Some(&9), "the CPU worker did not start with the most urgent: {log:?}");
}
