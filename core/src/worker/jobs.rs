//! Jobs: work handed to one CPU worker directly, outside the task graph.
//!
//! Front ends whose units of work are threads rather than tasks (OpenMP teams) borrow core
//! CPU workers through jobs: a job runs on the worker it was posted to, before that worker's
//! next task, and may run for as long as it likes (a team member's whole share of a parallel
//! region). While it runs, the worker can still run ready tasks through
//! [`Runtime::help`](crate::Runtime::help) (an OpenMP barrier or taskwait does).
//!
//! **Owns**: the per-worker mailboxes. **Does not own**: which workers a front end recruits
//! (it decides), waking (the worker's `Sleep` bit, as for pinned tasks).

use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, lock};
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;

/// The body of a job: called once with the argument it was posted with.
pub type JobFn = Arc<dyn Fn(usize) + Send + Sync>;

struct Job {
    f: JobFn,
    arg: usize,
}

struct Mailbox {
    queued: AtomicUsize,
    jobs: Mutex<VecDeque<Job>>,
}

pub(crate) struct Mailboxes(Vec<CachePadded<Mailbox>>);

impl Mailboxes {
    pub fn new(n: usize) -> Mailboxes {
        Mailboxes((0..n).map(|_| CachePadded::new(Mailbox { queued: AtomicUsize::new(0), jobs: Mutex::new(VecDeque::new()) })).collect())
    }

    pub fn post(&self, w: usize, f: JobFn, arg: usize) {
        let m = &self.0[w];
        lock(&m.jobs).push_back(Job { f, arg });
        // SeqCst: pairs with the sleeper's announce-then-look (see README, as for tasks).
        m.queued.fetch_add(1, Ordering::SeqCst);
    }

    pub fn has_work(&self, w: usize) -> bool {
        self.0[w].queued.load(Ordering::SeqCst) != 0
    }

    /// Run one job posted to `w`, if there is one, counting it in `started` first (a job may
    /// run until the process exits: an OpenMP member's docking job serves region after
    /// region). Returns whether one ran.
    pub fn run_one(&self, w: usize, started: &AtomicU64) -> bool {
        let m = &self.0[w];
        if m.queued.load(Ordering::Acquire) == 0 {
            return false;
        }
        let Some(job) = lock(&m.jobs).pop_front() else { return false };
        m.queued.fetch_sub(1, Ordering::Release);
        started.fetch_add(1, Ordering::Relaxed);
        // A panicking job would leave the front end's threads waiting for it forever: the
        // front ends' jobs run C code and their own bookkeeping, which must not panic.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (job.f)(job.arg))).is_err() {
            eprintln!("weft: a job posted to worker {w} panicked; aborting (its peers would wait for it forever)");
            std::process::abort();
        }
        true
    }
}
