//! One conformance suite for every scheduling policy: every task runs exactly once,
//! dependencies are respected, nothing starves; plus what is specific to a policy. The
//! model-driven policies run the suite twice: with codelets without a performance model
//! (placed by queued work) and with codelets whose fresh models they calibrate and then
//! place by.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_core::perfmodel::PerfModel;
use weft_core::task::CodeletBuilder;
use weft_core::*;

mod common;
use common::{Gate, unique};

fn runtime(sched: PolicyKind, ncpu: usize, nnull: usize) -> Runtime {
    Runtime::new(Config { ncpu: Some(ncpu), nnull, sched, spin_us: 5, ..Config::default() }).unwrap()
}

/// Codelets of the suite, with a fresh performance model each when `modelled`: the
/// model-driven policies then force the runs that calibrate it on both kinds of worker and
/// place the rest by its predictions (without one, by queued work alone).
struct Codelets {
    modelled: bool,
    names: Mutex<Vec<String>>,
}

impl Codelets {
    fn build(&self, b: CodeletBuilder, name: &str) -> Arc<Codelet> {
        if !self.modelled {
            return b.build();
        }
        let name = unique(name);
        self.names.lock().unwrap().push(name.clone());
        b.model(PerfModel::new(name)).build()
    }
}

fn conformance(sched: PolicyKind) {
    conformance_with(sched, false);
}

/// A policy that loses a task hangs its test: after this long the suite is taken for hung,
/// says which policy and aborts the process rather than leaving CI to its timeout.
const WATCHDOG: Duration = Duration::from_secs(120);

fn conformance_with(sched: PolicyKind, modelled: bool) {
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        if finished.recv_timeout(WATCHDOG) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            eprintln!("policies: the conformance suite under {sched:?} (models: {modelled}) hung for {WATCHDOG:?}");
            std::process::abort();
        }
    });
    conformance_run(sched, modelled);
    drop(done);
    dog.join().unwrap();
}

fn conformance_run(sched: PolicyKind, modelled: bool) {
    // Statistics show how many tasks ran with a calibrated prediction.
    let rt = Runtime::new(Config { ncpu: Some(2), nnull: 1, sched, stats: modelled, spin_us: 5, ..Config::default() }).unwrap();
    assert_eq!(rt.policy_name(), sched.name());
    let cls = Codelets { modelled, names: Mutex::new(Vec::new()) };
    // Every task runs exactly once.
    let n = 3000;
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let r = runs.clone();
    let cl = cls.build(
        Codelet::builder("once").cpu_and_null(move |ctx| {
            r[ctx.arg::<u64>() as usize].fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
        "once",
    );
    // Submitted from several application threads at once.
    std::thread::scope(|s| {
        for part in 0..3 {
            let (rt, cl) = (&rt, &cl);
            s.spawn(move || {
                for i in (part..n).step_by(3) {
                    rt.submit(TaskBuilder::new(cl).arg(i as u64)).unwrap();
                }
            });
        }
    });
    rt.wait_for_all().unwrap();
    assert!(runs.iter().all(|c| c.load(Ordering::SeqCst) == 1), "{sched:?}: a task ran twice or never");

    // Dependencies are respected: a chain of explicit dependencies runs in order.
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    let rec = cls.build(
        Codelet::builder("record").cpu_and_null(move |ctx| {
            o.lock().unwrap().push(ctx.arg::<u64>());
            Ok(())
        }),
        "record",
    );
    let mut prev: Option<TaskHandle> = None;
    for i in 0..200u64 {
        let mut b = TaskBuilder::new(&rec).arg(i);
        if let Some(p) = &prev {
            b = b.after(p);
        }
        prev = Some(rt.submit(b).unwrap());
    }
    rt.wait_for_all().unwrap();
    assert_eq!(*order.lock().unwrap(), (0..200).collect::<Vec<_>>(), "{sched:?}");

    // Nothing starves: tasks only the device can run and tasks only CPUs can run, mixed.
    let dev = Arc::new(AtomicUsize::new(0));
    let cpu = Arc::new(AtomicUsize::new(0));
    let (d, c) = (dev.clone(), cpu.clone());
    let dev_only = cls.build(
        Codelet::builder("dev").null(move |ctx| {
            assert_eq!(ctx.arch(), Arch::Null);
            d.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
        "dev",
    );
    let cpu_only = cls.build(
        Codelet::builder("cpu").cpu(move |ctx| {
            assert_eq!(ctx.arch(), Arch::Cpu);
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }),
        "cpu",
    );
    for i in 0..400 {
        rt.submit(TaskBuilder::new(if i % 2 == 0 { &dev_only } else { &cpu_only })).unwrap();
    }
    rt.wait_for_all().unwrap();
    assert_eq!((dev.load(Ordering::SeqCst), cpu.load(Ordering::SeqCst)), (200, 200), "{sched:?}");
    // A chain alternating between tasks only the device runs and tasks only CPUs run: each
    // completion must wake a worker of the other kind.
    let mut prev: Option<TaskHandle> = None;
    for i in 0..100 {
        let mut b = TaskBuilder::new(if i % 2 == 0 { &dev_only } else { &cpu_only });
        if let Some(p) = &prev {
            b = b.after(p);
        }
        prev = Some(rt.submit(b).unwrap());
    }
    rt.wait_for_all().unwrap();
    assert_eq!((dev.load(Ordering::SeqCst), cpu.load(Ordering::SeqCst)), (250, 250), "{sched:?}");
    // Work reached more than one worker.
    assert!(rt.tasks_per_worker().iter().filter(|&&n| n > 0).count() >= 2, "{sched:?}: {:?}", rt.tasks_per_worker());
    if modelled {
        // The forced runs calibrated each model wherever its codelet runs, and the tasks
        // after them were placed by calibrated predictions. `heteroprio` forces no run: an
        // uncalibrated kind gets a bucket's last tasks, and of a burst only what it takes
        // itself (little, where its driver's thread seldom gets a core), so the burst's
        // model is certain to calibrate on the CPU workers alone; the chain's tasks come one
        // at a time, each a bucket's last.
        let burst: &[&str] = if sched == PolicyKind::Heteroprio { &["cpu"] } else { &["cpu", "null"] };
        for (cl, archs) in [(&cl, burst), (&rec, &["cpu", "null"]), (&dev_only, &["null"]), (&cpu_only, &["cpu"])] {
            let m = rt.model(cl).unwrap();
            for arch in archs {
                assert!(
                    m.entries().iter().any(|e| e.arch == *arch && e.count >= 10),
                    "{sched:?}: {} not calibrated on {arch}: {:?}",
                    m.name(),
                    m.entries()
                );
            }
        }
        let r = rt.stats_report();
        let names = cls.names.lock().unwrap();
        let predicted: u64 = r
            .lines()
            .filter(|l| names.iter().any(|n| l.starts_with(&format!("model {n} on "))))
            .filter_map(|l| l.split("; ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
            .sum();
        assert!(predicted > 3000, "{sched:?}: {predicted} tasks predicted by their models\n{r}");
    }
}

#[test]
fn eager_conforms() {
    conformance(PolicyKind::Eager);
}
#[test]
fn prio_conforms() {
    conformance(PolicyKind::Prio);
}
#[test]
fn random_conforms() {
    conformance(PolicyKind::Random);
}
#[test]
fn ws_conforms() {
    conformance(PolicyKind::Ws);
}
#[test]
fn lws_conforms() {
    conformance(PolicyKind::Lws);
}
#[test]
fn dm_conforms() {
    conformance(PolicyKind::Dm);
}
#[test]
fn dmda_conforms() {
    conformance(PolicyKind::Dmda);
}
#[test]
fn dmdas_conforms() {
    conformance(PolicyKind::Dmdas);
}
#[test]
fn heteroprio_conforms() {
    conformance(PolicyKind::Heteroprio);
}
#[test]
fn dm_conforms_with_models() {
    conformance_with(PolicyKind::Dm, true);
}
#[test]
fn dmda_conforms_with_models() {
    conformance_with(PolicyKind::Dmda, true);
}
#[test]
fn dmdas_conforms_with_models() {
    conformance_with(PolicyKind::Dmdas, true);
}
#[test]
fn heteroprio_conforms_with_models() {
    conformance_with(PolicyKind::Heteroprio, true);
}

/// The default policy is work stealing on CPU workers alone and a model-driven one where
/// workers are of several kinds.
#[test]
fn the_default_policy_depends_on_the_kinds_of_workers() {
    let cpu = Runtime::new(Config { ncpu: Some(2), spin_us: 5, ..Config::default() }).unwrap();
    assert_eq!(cpu.policy_name(), "lws");
    let mixed = Runtime::new(Config { ncpu: Some(1), nnull: 1, spin_us: 5, ..Config::default() }).unwrap();
    assert_eq!(mixed.policy_name(), "dmdas");
}

#[test]
fn prio_runs_higher_priorities_first() {
    let rt = runtime(PolicyKind::Prio, 1, 0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    let rec = Codelet::builder("record")
        .cpu(move |ctx| {
            o.lock().unwrap().push(ctx.arg::<i32>());
            Ok(())
        })
        .build();
    // The only worker is kept busy until every task below is queued, so the order it then
    // takes them in is the policy's alone. The tasks are submitted once the blocker runs:
    // queued beside it, a higher-priority task could be taken first and the rest compete
    // with the submissions.
    let gate = Gate::new("blocker", Arch::Cpu);
    gate.block(&rt);
    for p in [0, 5, -3, 2, 5, 1] {
        rt.submit(TaskBuilder::new(&rec).arg(p).priority(p)).unwrap();
    }
    gate.open();
    rt.wait_for_all().unwrap();
    assert_eq!(*order.lock().unwrap(), vec![5, 5, 2, 1, 0, -3]);
}

#[test]
fn random_spreads_tasks_over_workers() {
    let rt = runtime(PolicyKind::Random, 2, 0);
    let cl = Codelet::builder("nop").cpu(|_| Ok(())).build();
    for _ in 0..2000 {
        rt.submit(TaskBuilder::new(&cl)).unwrap();
    }
    rt.wait_for_all().unwrap();
    let per = rt.tasks_per_worker();
    // Equal speeds: each worker gets about half (binomial, 2000 draws: far inside 40%..60%).
    assert!(per.iter().all(|&n| (800..=1200).contains(&n)), "{per:?}");
}

#[test]
fn idle_workers_steal_work_released_on_another_worker() {
    for sched in [PolicyKind::Ws, PolicyKind::Lws] {
        let rt = runtime(sched, 2, 0);
        // A root releases 50 leaves into the queue of the worker that ran it. Each leaf waits
        // until a leaf has run on some other worker, which only stealing can bring about;
        // without it the first leaf would time out (no timing assumption otherwise).
        let ran_on = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let r = ran_on.clone();
        let leaf = Codelet::builder("leaf")
            .cpu(move |ctx| {
                r.lock().unwrap().insert(ctx.worker());
                let t = std::time::Instant::now();
                while r.lock().unwrap().len() < 2 {
                    // usize::MAX marks a leaf that gave up: fail the others at once.
                    if t.elapsed() > Duration::from_secs(20) || r.lock().unwrap().contains(&usize::MAX) {
                        r.lock().unwrap().insert(usize::MAX);
                        return Err("no other worker stole a task".into());
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                Ok(())
            })
            .build();
        let root = rt.submit(TaskBuilder::new(&Codelet::builder("root").cpu(|_| Ok(())).build()).after_tag(1)).unwrap();
        let leaves: Vec<TaskHandle> = (0..50).map(|_| rt.submit(TaskBuilder::new(&leaf).after(&root)).unwrap()).collect();
        rt.tag_notify(1).unwrap();
        for l in &leaves {
            l.wait().unwrap_or_else(|e| panic!("{sched:?}: {e}"));
        }
        assert_eq!(ran_on.lock().unwrap().len(), 2);
    }
}

#[test]
fn task_ids_and_callbacks() {
    let rt = runtime(PolicyKind::Eager, 2, 0);
    let hits = Arc::new(AtomicU64::new(0));
    let cl = Codelet::builder("nop").cpu(|_| Ok(())).build();
    let mut ids = Vec::new();
    for _ in 0..50 {
        let h = hits.clone();
        let t = rt.submit(TaskBuilder::new(&cl).callback(move |r| {
            assert!(r.is_ok());
            h.fetch_add(1, Ordering::SeqCst);
        }));
        ids.push(t.unwrap().id());
    }
    rt.wait_for_all().unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 50);
    ids.dedup();
    assert_eq!(ids.len(), 50);
}

/// A payload hears of its task's completion once, after the callback, before `wait` returns.
#[test]
fn payloads_hear_of_completion() {
    struct Count(Arc<AtomicU64>, Arc<AtomicU64>);
    impl TaskPayload for Count {
        fn completed(&self, r: &std::result::Result<(), TaskError>) {
            assert!(r.is_ok());
            assert_eq!(self.1.load(Ordering::SeqCst), 1, "the callback ran first");
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let rt = runtime(PolicyKind::Eager, 2, 0);
    let cl = Codelet::builder("nop").cpu(|_| Ok(())).build();
    for _ in 0..20 {
        let (hits, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let c = cb.clone();
        let b = TaskBuilder::new(&cl).payload(Arc::new(Count(hits.clone(), cb.clone()))).callback(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        });
        rt.submit(b).unwrap().wait().unwrap();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
}
