//! Jobs posted to CPU workers (how the OpenMP front end borrows them).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use weft_core::*;

#[test]
fn a_job_runs_on_the_worker_it_was_posted_to() {
    let rt = Arc::new(Runtime::new(Config { ncpu: Some(2), ..Config::default() }).unwrap());
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let rt2 = rt.clone();
    let f: JobFn = Arc::new(move |arg| tx.lock().unwrap().send((arg, rt2.current_worker())).unwrap());
    for round in 0..200 {
        for w in 0..2 {
            rt.post_job(w, f.clone(), round * 10 + w).unwrap();
        }
        let mut got: Vec<_> = (0..2).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, vec![(round * 10, Some(0)), (round * 10 + 1, Some(1))]);
        if round % 50 == 0 {
            // Let the workers fall asleep: posting must wake them.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    assert_eq!(rt.current_worker(), None, "the test thread is no worker");
}

#[test]
fn jobs_to_one_worker_run_in_order_and_only_cpu_workers_take_them() {
    let rt = Runtime::new(Config { ncpu: Some(1), nnull: 1, ..Config::default() }).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let f: JobFn = Arc::new(move |arg| s.lock().unwrap().push(arg));
    for i in 0..100 {
        rt.post_job(0, f.clone(), i).unwrap();
    }
    let null = rt.workers().iter().position(|w| w.arch == Arch::Null).unwrap();
    assert!(matches!(rt.post_job(null, f.clone(), 0), Err(Error::Unsupported(_))));
    assert!(matches!(rt.post_job(99, f.clone(), 0), Err(Error::Unsupported(_))));
    while seen.lock().unwrap().len() < 100 {
        std::thread::yield_now();
    }
    assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn a_job_waiting_for_a_task_runs_it_through_help() {
    // One CPU worker: the task can only run if the job helps while it waits.
    let rt = Arc::new(Runtime::new(Config { ncpu: Some(1), ..Config::default() }).unwrap());
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let (rt2, d2) = (rt.clone(), done.clone());
    let f: JobFn = Arc::new(move |_| {
        let d3 = d2.clone();
        let c = Codelet::builder("inc")
            .cpu(move |_| {
                d3.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .build();
        rt2.submit(TaskBuilder::new(&c)).unwrap();
        let mut helped = 0;
        while d2.load(Ordering::SeqCst) == 0 {
            helped += rt2.help() as usize;
        }
        tx.lock().unwrap().send(helped).unwrap();
    });
    rt.post_job(0, f, 0).unwrap();
    assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), 1);
    assert!(!rt.help(), "a non-worker thread cannot help");
}
