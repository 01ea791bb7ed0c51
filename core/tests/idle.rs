//! Idle workers and waiting threads sleep: an idle runtime burns no CPU. In a test binary
//! of their own, one test at a time ([`ALONE`]), so that no other test's threads count in
//! the process's CPU time.

use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::*;

static ALONE: Mutex<()> = Mutex::new(());

/// Process CPU time (user + system), from /proc/self/stat, in clock ticks.
fn cpu_ticks() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn idle_workers_sleep_instead_of_burning_cores() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::new(Config { ncpu: Some(2), sched: PolicyKind::Ws, ..Config::default() }).unwrap();
    let cl = Codelet::builder("nop").cpu(|_| Ok(())).build();
    for _ in 0..1000 {
        rt.submit(TaskBuilder::new(&cl)).unwrap();
    }
    rt.wait_for_all().unwrap();
    std::thread::sleep(Duration::from_millis(50)); // past the spin phase
    let before = cpu_ticks();
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(600));
    let used = cpu_ticks() - before;
    // Two spinning workers would use ~120 ticks (100 Hz) in 600 ms; sleeping ones use ~0.
    assert!(used <= 6, "idle workers used {used} ticks in {:?}", t.elapsed());
    // And they wake up for new work.
    rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
}

#[test]
fn a_thread_waiting_for_a_task_sleeps_where_no_gpu_could_run_it() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // A 10 s wait spin, but no worker whose device computes off this machine's cores (a
    // GPU): nothing spins (`Config::wait_spin_us`).
    let rt = Runtime::new(Config { ncpu: Some(1), wait_spin_us: 10_000_000, ..Config::default() }).unwrap();
    let cl = Codelet::builder("nop").cpu(|_| Ok(())).build();
    let a = rt.submit(TaskBuilder::new(&cl).after_tag(1)).unwrap();
    assert!(!a.spin_wait(), "a task waiting for a tag is not done");
    let waiter = {
        let a = a.clone();
        std::thread::spawn(move || a.wait_done())
    };
    std::thread::sleep(Duration::from_millis(50)); // past the workers' spin phase
    let before = cpu_ticks();
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(600));
    let used = cpu_ticks() - before;
    // A spinning waiter would use ~60 ticks (100 Hz) in 600 ms; a sleeping one ~0.
    assert!(used <= 6, "the waiting thread and idle worker used {used} ticks in {:?}", t.elapsed());
    rt.tag_notify(1).unwrap();
    waiter.join().unwrap();
    assert!(a.is_done() && a.spin_wait());
}
