//! Idle workers: spin briefly, then sleep until a push wakes them. See `README.md` here.

use super::super::sched::Target;
use crate::sync::atomic::{AtomicU64, Ordering, fence};
use crate::task::Arch;
use std::sync::OnceLock;
use std::thread::Thread;

pub(crate) struct Sleep {
    /// Bit w set: worker w is asleep or about to be.
    words: Vec<AtomicU64>,
    threads: Vec<OnceLock<Thread>>,
    archs: Vec<Arch>,
}

impl Sleep {
    pub fn new(archs: Vec<Arch>) -> Sleep {
        let n = archs.len();
        Sleep {
            words: (0..n.div_ceil(64).max(1)).map(|_| AtomicU64::new(0)).collect(),
            threads: (0..n).map(|_| OnceLock::new()).collect(),
            archs,
        }
    }

    pub fn set_thread(&self, w: usize, t: Thread) {
        let _ = self.threads[w].set(t);
    }

    /// Announce that worker `w` is going to sleep. The caller must look for work once more
    /// afterwards and only then `park` (see README: the SeqCst pair with `wake`).
    pub fn announce(&self, w: usize) {
        self.words[w / 64].fetch_or(1 << (w % 64), Ordering::SeqCst);
    }

    /// Worker `w` is awake again (found work after announcing, or woke up).
    pub fn clear(&self, w: usize) {
        self.words[w / 64].fetch_and(!(1 << (w % 64)), Ordering::SeqCst);
    }

    /// Try to claim sleeping worker `w`; true if this call cleared its bit.
    fn claim(&self, w: usize) -> bool {
        let bit = 1 << (w % 64);
        self.words[w / 64].fetch_and(!bit, Ordering::SeqCst) & bit != 0
    }

    fn unpark(&self, w: usize) {
        if let Some(t) = self.threads[w].get() {
            t.unpark();
        }
    }

    /// After a push: wake the worker the push names, or one sleeping worker that can run it.
    pub fn wake(&self, target: Target) {
        // Pairs with the SeqCst RMW in `announce`: either the sleeper sees our push when it
        // looks again, or we see its bit here.
        fence(Ordering::SeqCst);
        match target {
            Target::Worker(w) => {
                if self.claim(w) {
                    self.unpark(w);
                }
            }
            Target::Any(mask) => {
                for (i, word) in self.words.iter().enumerate() {
                    let mut bits = word.load(Ordering::SeqCst);
                    while bits != 0 {
                        let w = i * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        if self.archs[w].bit() & mask != 0 && self.claim(w) {
                            self.unpark(w);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Wake every worker (shutdown).
    pub fn wake_all(&self) {
        for w in 0..self.threads.len() {
            self.clear(w);
            self.unpark(w);
        }
    }
}
