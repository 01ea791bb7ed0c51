//! How fast a posted job reaches an idle CPU worker and comes back: the fork half of an
//! OpenMP `parallel` on Weft (the team's threads are core workers borrowed through
//! `Runtime::post_job`).
//!
//! `job_latency [rounds]`: posts a job to worker 0 that bumps a counter, and spins until it
//! sees the bump; prints the median round trip over batches, in nanoseconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use weft_core::{Config, JobFn, Runtime};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rt = Runtime::new(Config { ncpu: Some(1), ..Config::default() }).expect("runtime");
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let f: JobFn = Arc::new(move |_| {
        h.fetch_add(1, Ordering::Release);
    });
    let mut batches = Vec::new();
    let batch = 1000;
    for _ in 0..rounds.div_ceil(batch) {
        let start = Instant::now();
        for _ in 0..batch {
            let before = hits.load(Ordering::Acquire);
            rt.post_job(0, f.clone(), 0).expect("post");
            while hits.load(Ordering::Acquire) == before {
                std::hint::spin_loop();
            }
        }
        batches.push(start.elapsed().as_nanos() as f64 / batch as f64);
    }
    batches.sort_by(f64::total_cmp);
    let med = batches[batches.len() / 2];
    println!(
        "job round trip: median {med:.0} ns (min {:.0}, max {:.0}) over {} batches of {batch}",
        batches[0],
        batches[batches.len() - 1],
        batches.len()
    );
}
