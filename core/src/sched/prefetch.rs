//! Prefetch: when a model-driven policy places a task on a device, the task's inputs start
//! moving to the device's memory node at once, on a thread of the node's own, instead of
//! when the device's driver takes the task (StarPU's dmda does the same).
//!
//! **Owns**: one prefetch thread per device memory node, fed through a channel.
//! **Does not own**: coherence (`data::coherence` makes the replica valid and pins it,
//! exactly as a task's own acquisition does).
//!
//! Why it is safe to copy a ready task's input before the task runs: every task that writes
//! that input, before it or after it, is ordered with it, so none runs between the task
//! becoming ready and its completion, except itself (an RW access), on the node it was
//! placed on, where the replica is then valid and nothing is copied. A prefetch checks,
//! under the handle's tree lock, that the task has not completed (a successor writing the
//! input can only start after that), and reads only R and RW inputs (COMMUTE inputs may be
//! written by another task meanwhile). Bounded by the node's free memory: a prefetch never
//! evicts anything; what does not fit waits for the task's own acquisition.

use crate::data::coherence::Acquired;
use crate::memory::MemoryNode;
use crate::sync::Arc;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::task::{AccessMode, TaskRef};
use std::sync::mpsc::{Sender, channel};

pub(crate) struct Prefetcher {
    /// Per memory node: the channel of its prefetch thread (none for host memory).
    txs: Vec<Option<Sender<TaskRef>>>,
    /// Bytes brought to a node ahead of their task.
    pub bytes: Arc<AtomicU64>,
}

impl Prefetcher {
    /// A prefetch thread for every device node among `nodes`.
    pub(crate) fn new(nodes: &[Arc<MemoryNode>]) -> Prefetcher {
        let bytes = Arc::new(AtomicU64::new(0));
        let txs = nodes
            .iter()
            .map(|n| {
                if n.id == 0 {
                    return None;
                }
                let (tx, rx) = channel::<TaskRef>();
                let (node, b) = (n.clone(), bytes.clone());
                // A thread that cannot start leaves the node without prefetch, nothing more.
                std::thread::Builder::new()
                    .name(format!("weft-prefetch{}", n.id))
                    .spawn(move || {
                        for t in rx {
                            b.fetch_add(prefetch(&node, &t), Ordering::Relaxed);
                        }
                    })
                    .ok()
                    .map(|_| tx)
            })
            .collect();
        Prefetcher { txs, bytes }
    }

    /// Start bringing `t`'s inputs to memory node `node` (host memory: nothing to do).
    pub(crate) fn request(&self, node: usize, t: &TaskRef) {
        if let Some(Some(tx)) = self.txs.get(node)
            && t.accesses.iter().any(|a| matches!(a.mode, AccessMode::R | AccessMode::RW))
        {
            // The thread is gone only if it could not start: then no prefetch.
            let _ = tx.send(t.clone());
        }
    }
}

/// Bring `t`'s inputs to `node`; the bytes copied.
fn prefetch(node: &MemoryNode, t: &TaskRef) -> u64 {
    let mut moved = 0;
    for a in t.accesses.iter().filter(|a| matches!(a.mode, AccessMode::R | AccessMode::RW)) {
        let h = &a.handle.0;
        let mut st = h.tree.lock();
        if t.is_done() {
            break;
        }
        let e = &st.entries[h.idx];
        if !e.alive || e.replicas.get(node.id).is_none_or(|r| r.valid()) {
            continue;
        }
        let bytes = e.shape.span(e.shape.packed());
        if node.limit.is_some_and(|l| node.used() + bytes > l) {
            continue;
        }
        // Data on its way home from another device (`Pending`) or no room: the task's own
        // acquisition finishes the trip.
        if let Ok(Acquired::Ready(_)) = st.acquire_buffer(&h.tree, h.idx, node.id, AccessMode::R) {
            st.release(h.idx, node.id);
            moved += bytes as u64;
        }
    }
    moved
}
