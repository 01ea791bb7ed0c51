//! The progress engine: one thread that makes every MPI call of the runtime once it has
//! started, so that workers never block on communication and MPI needs only
//! `MPI_THREAD_SERIALIZED`.
//!
//! **Owns**: posting sends and receives when their data has been acquired (a send reads the
//! replica in host memory; a receive writes it), testing them until they complete, then
//! releasing the data; barriers; the checking mode's all-reduces; per-rank statistics.
//! **Invariant**: operations between two ranks on one tag are posted in the order the task
//! flow submitted them on both sides. Acquisitions of one handle are ordered by its
//! dependencies, and this thread takes them first come first served, so that MPI's
//! non-overtaking rule matches each receive with the send of the same data version.

use crate::ffi::{self, Buf, Comm, Request};
use crate::lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Duration;
use weft_core::{AcquireGuard, PendingAcquire, Shape, Strides};

/// Tests of pending requests the progress thread makes back to back (yielding between them)
/// before it starts sleeping between tests.
const SPIN_TESTS: u32 = 200;

pub(crate) enum Op {
    /// Send the acquired (R) data to `dest`.
    Send {
        acq: PendingAcquire,
        dest: i32,
        tag: i32,
    },
    /// Receive into the acquired (W) data from `src`.
    Recv {
        acq: PendingAcquire,
        src: i32,
        tag: i32,
    },
    Barrier {
        done: mpsc::Sender<()>,
    },
    /// Checking mode: every rank's `seq`-th call must carry the same `value`.
    Check {
        value: u64,
        seq: u64,
        desc: String,
    },
}

/// Communication counters of this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub sent_bytes: u64,
    pub sent_messages: u64,
    pub received_bytes: u64,
    pub received_messages: u64,
}

#[derive(Default)]
struct Queue {
    ops: VecDeque<Op>,
    stop: bool,
}

pub(crate) struct Engine {
    comm: Comm,
    check_comm: Comm,
    pub rank: i32,
    queue: Mutex<Queue>,
    cv: Condvar,
    /// Check operations posted and not yet complete, and a condition for `wait_checks`.
    checks: Mutex<u64>,
    checks_cv: Condvar,
    sent_bytes: AtomicU64,
    sent_messages: AtomicU64,
    received_bytes: AtomicU64,
    received_messages: AtomicU64,
    /// How long the thread waits for new operations between tests of pending ones.
    poll: Duration,
}

enum Pending {
    Send(Request),
    /// A receive; the replica to unpack a packed message into.
    Recv(Request, Option<AcquireGuard>),
    Barrier(Request, mpsc::Sender<()>),
    Check {
        req: Request,
        seq: u64,
        desc: String,
    },
}

impl Pending {
    fn request(&mut self) -> &mut Request {
        match self {
            Pending::Send(r) | Pending::Recv(r, _) | Pending::Barrier(r, _) | Pending::Check { req: r, .. } => r,
        }
    }
}

/// Whether a replica with these strides is one run of `shape.size()` bytes.
fn contiguous(shape: Shape, s: Strides) -> bool {
    let [nx, ny, nz] = shape.dims();
    (ny == 1 || s.ldy == nx) && (nz == 1 || s.ldz == nx * ny)
}

impl Engine {
    pub(crate) fn new(comm: Comm, check_comm: Comm, rank: i32, poll: Duration) -> Engine {
        Engine {
            comm,
            check_comm,
            rank,
            queue: Mutex::default(),
            cv: Condvar::new(),
            checks: Mutex::new(0),
            checks_cv: Condvar::new(),
            sent_bytes: AtomicU64::new(0),
            sent_messages: AtomicU64::new(0),
            received_bytes: AtomicU64::new(0),
            received_messages: AtomicU64::new(0),
            poll,
        }
    }

    pub(crate) fn push(&self, op: Op) {
        if matches!(op, Op::Check { .. }) {
            *lock(&self.checks) += 1;
        }
        lock(&self.queue).ops.push_back(op);
        self.cv.notify_one();
    }

    pub(crate) fn stop(&self) {
        lock(&self.queue).stop = true;
        self.cv.notify_one();
    }

    /// Wait until every check posted so far has completed (a divergence aborts instead).
    pub(crate) fn wait_checks(&self) {
        let mut n = lock(&self.checks);
        while *n > 0 {
            n = self.checks_cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A barrier of all ranks, progressing the other operations meanwhile.
    pub(crate) fn barrier(&self) {
        let (tx, rx) = mpsc::channel();
        self.push(Op::Barrier { done: tx });
        // The thread only drops the sender after sending, or when the process aborts.
        let _ = rx.recv();
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            sent_bytes: self.sent_bytes.load(Ordering::Relaxed),
            sent_messages: self.sent_messages.load(Ordering::Relaxed),
            received_bytes: self.received_bytes.load(Ordering::Relaxed),
            received_messages: self.received_messages.load(Ordering::Relaxed),
        }
    }

    /// The progress thread's loop: post what arrives, test what is pending, until stopped
    /// with nothing pending.
    pub(crate) fn run(self: Arc<Self>) {
        let mut pending: Vec<Pending> = Vec::new();
        let mut checks: VecDeque<Pending> = VecDeque::new();
        let mut progressed = true;
        // Between tests of pending requests the thread waits `poll`, doubling up to 16×
        // while nothing completes: ranks oversubscribing cores (and long transfers) leave
        // the cores to the workers, a completion brings the short wait back.
        let mut wait = self.poll;
        let mut idle_tests = 0u32;
        loop {
            let batch = {
                let mut q = lock(&self.queue);
                if q.ops.is_empty() && !progressed {
                    if pending.is_empty() && checks.is_empty() {
                        if q.stop {
                            return;
                        }
                        q = self.cv.wait(q).unwrap_or_else(|e| e.into_inner());
                    } else if idle_tests < SPIN_TESTS {
                        // A message is often about to complete: test again at once (yielding
                        // the core) before sleeping between tests.
                        idle_tests += 1;
                        drop(q);
                        std::thread::yield_now();
                        q = lock(&self.queue);
                    } else {
                        q = self.cv.wait_timeout(q, wait).unwrap_or_else(|e| e.into_inner()).0;
                        wait = (wait * 2).min(self.poll * 16);
                    }
                }
                std::mem::take(&mut q.ops)
            };
            let batch_empty = batch.is_empty();
            for op in batch {
                match self.post(op) {
                    c @ Pending::Check { .. } => checks.push_back(c),
                    p => pending.push(p),
                }
            }
            if !batch_empty {
                wait = self.poll;
                idle_tests = 0;
            }
            progressed = false;
            let mut i = 0;
            while i < pending.len() {
                if pending[i].request().test() {
                    self.finish(pending.swap_remove(i));
                    progressed = true;
                    wait = self.poll;
                    idle_tests = 0;
                } else {
                    i += 1;
                }
            }
            // Checks are judged in call order, so that every rank names the first call
            // that differs.
            while checks.front_mut().is_some_and(|c| c.request().test()) {
                self.finish(checks.pop_front().expect("front exists"));
                progressed = true;
            }
        }
    }

    fn get(&self, acq: PendingAcquire, what: &str) -> AcquireGuard {
        acq.get().unwrap_or_else(|e| ffi::abort_world(&format!("weft-mpi: rank {}: cannot {what}: {e}", self.rank), 1))
    }

    fn post(&self, op: Op) -> Pending {
        match op {
            Op::Send { acq, dest, tag } => {
                let g = self.get(acq, "read data to send");
                let buf = if contiguous(g.shape(), g.strides()) {
                    Buf::Replica(g)
                } else {
                    let mut v = vec![0u8; g.shape().size()];
                    g.pack_into(&mut v);
                    Buf::Packed(v)
                };
                Pending::Send(ffi::isend(buf, dest, tag, self.comm))
            }
            Op::Recv { acq, src, tag } => {
                let g = self.get(acq, "write received data");
                if contiguous(g.shape(), g.strides()) {
                    Pending::Recv(ffi::irecv(Buf::Replica(g), src, tag, self.comm), None)
                } else {
                    let v = vec![0u8; g.shape().size()];
                    Pending::Recv(ffi::irecv(Buf::Packed(v), src, tag, self.comm), Some(g))
                }
            }
            Op::Barrier { done } => Pending::Barrier(ffi::ibarrier(self.comm), done),
            Op::Check { value, seq, desc } => Pending::Check { req: ffi::iallreduce_min([value, !value], self.check_comm), seq, desc },
        }
    }

    fn finish(&self, p: Pending) {
        match p {
            Pending::Send(req) => {
                let bytes = match req.into_buf() {
                    Buf::Replica(g) => g.shape().size(),
                    Buf::Packed(v) => v.len(),
                    _ => 0,
                };
                self.sent_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
                self.sent_messages.fetch_add(1, Ordering::Relaxed);
            }
            Pending::Recv(req, unpack) => {
                let bytes = match (req.into_buf(), unpack) {
                    (Buf::Packed(v), Some(g)) => {
                        g.unpack_from(&v);
                        v.len()
                    }
                    (Buf::Replica(g), _) => g.shape().size(),
                    _ => 0,
                };
                self.received_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
                self.received_messages.fetch_add(1, Ordering::Relaxed);
            }
            Pending::Barrier(_, done) => {
                let _ = done.send(());
            }
            Pending::Check { req, seq, desc } => {
                let [min, not_max] = req.words();
                if min != !not_max {
                    ffi::abort_world(
                        &format!(
                            "weft-mpi: the ranks' task flows differ at call #{seq}: rank {} submitted {desc}; every rank must \
                             submit the same registrations and tasks in the same order",
                            self.rank
                        ),
                        2,
                    );
                }
                let mut n = lock(&self.checks);
                *n -= 1;
                if *n == 0 {
                    self.checks_cv.notify_all();
                }
            }
        }
    }
}
