//! Model kinds seen from the runtime: codelets naming one model with different kinds share
//! its samples and predict each by its own kind; a regression-based model that cannot be
//! fitted (one size) keeps forcing calibration runs without stalling anything.

use std::sync::Arc;
use weft_core::perfmodel::{ModelKind, PerfModel, Prediction};
use weft_core::*;

mod common;
use common::{unique, work};

/// A codelet spinning `20 + n / 100` µs for its argument `n`, which is also its model's size
/// and footprint.
fn codelet(name: &str, model: &str, kind: ModelKind) -> Arc<Codelet> {
    Codelet::builder(name)
        .cpu_and_null(|ctx| {
            work(20 + ctx.arg::<u32>() as u64 / 100);
            Ok(())
        })
        .model(
            PerfModel::new(model)
                .kind(kind)
                .size(|_, a| bytemuck::pod_read_unaligned::<u32>(a) as f64)
                .footprint(|_, a| bytemuck::pod_read_unaligned(a)),
        )
        .build()
}

fn runtime(sched: PolicyKind, nnull: usize) -> Runtime {
    Runtime::new(Config { ncpu: Some(1), nnull, sched, null_slowdown: 2.0, spin_us: 5, ..Config::default() }).unwrap()
}

/// Two codelets, one model, two kinds: the samples either records reach both, and once 3
/// sizes are calibrated the NlRegression one answers an unseen size by its curve while the
/// History one answers a seen footprint by its entry.
#[test]
fn codelets_of_two_kinds_share_one_model() {
    // One CPU worker: every task is sampled there (one warm-up, then 10 per size).
    let rt = runtime(PolicyKind::Dmda, 0);
    let model = unique("kinds");
    let hist = codelet("hist", &model, ModelKind::History);
    let nl = codelet("nl", &model, ModelKind::NlRegression);
    for round in 0..14u32 {
        for n in [1000u32, 4000, 16000] {
            let cl = if round % 2 == 0 { &hist } else { &nl };
            rt.submit(TaskBuilder::new(cl).arg(n)).unwrap();
        }
        rt.wait_for_all().unwrap();
    }
    let (mh, mn) = (rt.model(&hist).unwrap(), rt.model(&nl).unwrap());
    assert_eq!((mh.kind(), mn.kind()), (ModelKind::History, ModelKind::NlRegression));
    assert_eq!(mh.entries(), mn.entries(), "one set of samples");
    let cpu = mh.entries().into_iter().filter(|e| e.arch == "cpu").collect::<Vec<_>>();
    assert_eq!(cpu.len(), 3, "{cpu:?}");
    assert!(cpu.iter().all(|e| e.count == 10), "{cpu:?}");
    let (a, b, c) = mn.nl_prediction("cpu").expect("3 calibrated sizes");
    assert_eq!(mn.predict("cpu", 7, 8000.0), Prediction::Calibrated(a * 8000f64.powf(b) + c));
    let e = &cpu[0];
    assert_eq!(mh.predict("cpu", e.footprint, e.size), Prediction::Calibrated(e.estimate));
}

/// A Regression model whose tasks all have one size never becomes usable: every prediction
/// is uncalibrated, the model-driven policies keep placing its tasks as calibration runs,
/// and every task still runs; its entries stop taking samples once calibrated.
#[test]
fn unusable_regression_keeps_calibrating_without_stalling() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas, PolicyKind::Heteroprio] {
        let rt = runtime(sched, 1);
        let cl = codelet("reg", &unique("reg"), ModelKind::Regression);
        for _ in 0..10 {
            for _ in 0..3 {
                rt.submit(TaskBuilder::new(&cl).arg(5000u32)).unwrap();
            }
            rt.wait_for_all().unwrap();
        }
        assert_eq!(rt.tasks_per_worker().iter().sum::<u64>(), 30, "{sched:?}");
        let m = rt.model(&cl).unwrap();
        for arch in m.archs() {
            assert_eq!(m.predict(&arch, 5000, 5000.0), Prediction::Uncalibrated, "{sched:?} {arch}");
            let count = m.entries().iter().find(|e| e.arch == arch).map_or(0, |e| e.count);
            assert!(count <= 10, "{sched:?} {arch}: {count} samples kept after calibration");
        }
    }
}
