//! What weft-core's integration tests share (`mod common;` in each): work of a known
//! length, model names no other test uses, and a task that holds a worker.
#![allow(dead_code)] // each test uses some of it

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use weft_core::*;

/// Spin for `us` µs: work whose duration the models can learn.
pub fn work(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

/// A model name no other test (or earlier run) has used: models are kept per process.
pub fn unique(base: &str) -> String {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{base}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A task that occupies the one worker of `arch` until [`Gate::open`].
pub struct Gate {
    go: Arc<AtomicBool>,
    started: Arc<AtomicBool>,
    codelet: Arc<Codelet>,
}

impl Gate {
    pub fn new(name: &str, arch: Arch) -> Gate {
        let (go, started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (g, s) = (go.clone(), started.clone());
        let codelet = Codelet::builder(name)
            .implementation(
                arch,
                Arc::new(move |_: &TaskContext<'_>| {
                    s.store(true, Ordering::SeqCst);
                    while !g.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                    Ok(())
                }),
            )
            .build();
        Gate { go, started, codelet }
    }

    /// Submit the blocking task and wait until it runs.
    pub fn block(&self, rt: &Runtime) {
        rt.submit(TaskBuilder::new(&self.codelet)).unwrap();
        while !self.started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    pub fn open(&self) {
        self.go.store(true, Ordering::SeqCst);
    }
}
