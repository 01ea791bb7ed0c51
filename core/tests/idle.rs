//! Idle workers sleep: an idle runtime burns no CPU. Alone in its test binary so that no
//! other test's threads count in the process's CPU time.

use std::time::{Duration, Instant};
use weft_core::*;

/// Process CPU time (user + system), from /proc/self/stat, in clock ticks.
fn cpu_ticks() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn idle_workers_sleep_instead_of_burning_cores() {
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
