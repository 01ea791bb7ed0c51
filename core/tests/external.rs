//! External tasks (`Runtime::submit_external`): work a front end runs itself, ordered by the
//! same dependency machinery as codelet tasks (how OpenMP tasks with `depend` use core).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use weft_core::{AccessMode, Codelet, Config, External, Runtime, Shape, TaskBuilder};

fn rt() -> Arc<Runtime> {
    Arc::new(Runtime::new(Config { ncpu: Some(2), spin_us: 5, ..Config::default() }).unwrap())
}

/// Collects ready tokens on a channel so the test decides when each task's work is done.
fn submit(rt: &Runtime, b: TaskBuilder, id: usize, tx: &mpsc::Sender<(usize, External)>) {
    let tx = tx.clone();
    rt.submit_external(b, move |e| tx.send((id, e)).unwrap()).unwrap();
}

#[test]
fn ready_only_after_predecessors_complete() {
    let rt = rt();
    let h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
    let (tx, rx) = mpsc::channel();
    // w0 -> (r1, r2) -> w3
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::W), 0, &tx);
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::R), 1, &tx);
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::R), 2, &tx);
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::RW), 3, &tx);
    let (id, e) = rx.recv().unwrap();
    assert_eq!(id, 0);
    assert!(rx.try_recv().is_err(), "readers must wait for the writer");
    rt.complete_external(e);
    let (a, ea) = rx.recv().unwrap();
    let (b, eb) = rx.recv().unwrap();
    let mut ids = [a, b];
    ids.sort();
    assert_eq!(ids, [1, 2], "both readers ready together");
    rt.complete_external(ea);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(rx.try_recv().is_err(), "the writer waits for every reader");
    rt.complete_external(eb);
    let (id, e) = rx.recv().unwrap();
    assert_eq!(id, 3);
    rt.complete_external(e);
    rt.wait_for_all().unwrap();
}

#[test]
fn ordered_with_codelet_tasks_on_the_same_handle() {
    let rt = rt();
    let h = rt.alloc(Shape::Vector { nx: 1, elem: 8 }).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let cl = Codelet::builder("write").cpu(move |_| {
        std::thread::sleep(std::time::Duration::from_millis(30));
        l.lock().unwrap().push("codelet");
        Ok(())
    });
    rt.submit(TaskBuilder::new(&cl.build()).access(&h, AccessMode::RW)).unwrap();
    let l = log.clone();
    let r2 = rt.clone();
    rt.submit_external(TaskBuilder::empty().access(&h, AccessMode::R), move |e| {
        l.lock().unwrap().push("external");
        r2.complete_external(e);
    })
    .unwrap();
    rt.wait_for_all().unwrap();
    assert_eq!(*log.lock().unwrap(), ["codelet", "external"]);
}

#[test]
fn commute_accesses_run_one_at_a_time_in_any_order() {
    let rt = rt();
    let h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..3 {
        submit(&rt, TaskBuilder::empty().access(&h, AccessMode::Commute), i, &tx);
    }
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::R), 9, &tx);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (id, e) = rx.recv().unwrap();
        assert!(rx.try_recv().is_err(), "a second commute task became ready while {id} held the handle");
        seen.push(id);
        rt.complete_external(e);
    }
    seen.sort();
    assert_eq!(seen, [0, 1, 2]);
    let (id, e) = rx.recv().unwrap();
    assert_eq!(id, 9);
    rt.complete_external(e);
    rt.wait_for_all().unwrap();
}

#[test]
fn bad_external_tasks_are_refused() {
    let rt = rt();
    let h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
    let cl = Codelet::builder("x").cpu(|_| Ok(())).build();
    assert!(rt.submit_external(TaskBuilder::new(&cl), |_| {}).is_err());
    assert!(rt.submit_external(TaskBuilder::empty().access(&h, AccessMode::Scratch), |_| {}).is_err());
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let rt2 = rt.clone();
    rt.submit_external(TaskBuilder::empty(), move |e| {
        r.fetch_add(1, Ordering::SeqCst);
        rt2.complete_external(e);
    })
    .unwrap();
    rt.wait_for_all().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn an_external_task_after_a_redux_phase_waits_for_the_reduction() {
    let rt = rt();
    let acc = rt.register_variable(1000u64).unwrap();
    let init = Codelet::builder("zero")
        .cpu(|ctx| {
            ctx.buffer(0).set_value(0u64);
            Ok(())
        })
        .build();
    let add = Codelet::builder("add")
        .cpu(|ctx| {
            let s = ctx.buffer(1).value::<u64>();
            let d = ctx.buffer(0).value::<u64>();
            ctx.buffer(0).set_value(d + s);
            Ok(())
        })
        .build();
    acc.set_reduction(&init, &add).unwrap();
    let contrib = Codelet::builder("contribute")
        .cpu(|ctx| {
            let b = ctx.buffer(0);
            b.set_value(b.value::<u64>() + ctx.arg::<u64>());
            Ok(())
        })
        .build();
    for i in 1..=10u64 {
        rt.submit(TaskBuilder::new(&contrib).access(&acc, AccessMode::Redux).arg(i)).unwrap();
    }
    let (tx, rx) = mpsc::channel();
    submit(&rt, TaskBuilder::empty().access(&acc, AccessMode::R), 0, &tx);
    let (_, e) = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the external task became ready");
    rt.complete_external(e);
    rt.wait_for_all().unwrap();
    assert_eq!(acc.acquire(AccessMode::R).unwrap().value::<u64>(), 1000 + 55);
}

#[test]
fn a_handle_is_reused_only_when_nothing_else_holds_it() {
    let rt = rt();
    let mut h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
    let (tx, rx) = mpsc::channel();
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::W), 0, &tx);
    let (_, e) = rx.recv().unwrap();
    assert!(!h.reuse_if_unshared(), "a task not complete holds the handle");
    rt.complete_external(e);
    rt.wait_for_all().unwrap();
    // The finished task's last reference goes on a worker thread, soon after completing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !h.reuse_if_unshared() {
        assert!(std::time::Instant::now() < deadline, "the handle stayed shared after its task completed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let other = h.clone();
    assert!(!h.reuse_if_unshared(), "a clone shares the handle");
    drop(other);
    assert!(h.reuse_if_unshared());
    // Reused, it orders new accesses as before: a reader waits for the writer before it.
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::W), 1, &tx);
    submit(&rt, TaskBuilder::empty().access(&h, AccessMode::R), 2, &tx);
    let (id, e) = rx.recv().unwrap();
    assert_eq!(id, 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(rx.try_recv().is_err(), "the reader waits for the writer submitted after the reuse");
    assert!(!h.reuse_if_unshared(), "tasks not complete hold the handle");
    rt.complete_external(e);
    let (id, e) = rx.recv().unwrap();
    assert_eq!(id, 2);
    rt.complete_external(e);
    rt.wait_for_all().unwrap();
}
