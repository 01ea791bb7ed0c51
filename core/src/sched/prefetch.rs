//! Prefetch: when a model-driven policy places a task on a worker, the task's inputs start
//! moving to the worker's memory node at once, on a thread of the node's own, instead of
//! when the worker takes the task (StarPU's dmda does the same). Host memory included: a
//! task queued on a CPU worker gets its inputs back from the devices while it waits, so the
//! worker does not wait then for a copy that queues behind a device's running kernel.
//!
//! **Owns**: one prefetch thread per memory node, fed through a channel.
//! **Does not own**: coherence (`data::coherence` makes the replica valid and pins it,
//! exactly as a task's own acquisition does).
//!
//! Why it is safe to copy a ready task's input before the task runs: every task that writes
//! that input, before it or after it, is ordered with it, so none runs between the task
//! becoming ready and its completion, except itself (an RW access), on the node it was
//! placed on, where the replica is then valid and nothing is copied. A prefetch checks,
//! under the handle's tree lock, that the task has not completed (a successor writing the
//! input can only start after that) before each step that may reserve a copy; a copy
//! reserved then runs without the lock, and a writer arriving meanwhile waits for it (a
//! write settles every copy of its entry first). It reads only R and RW inputs (COMMUTE
//! inputs may be written by another task meanwhile). Bounded by the node's free memory: a prefetch never
//! evicts anything; what does not fit waits for the task's own acquisition.

use crate::memory::MemoryNode;
use crate::sync::Arc;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::task::{AccessMode, TaskRef};
use std::sync::mpsc::{Sender, channel};

pub(crate) struct Prefetcher {
    /// Per memory node: the channel of its prefetch thread (none if it could not start).
    txs: Vec<Option<Sender<TaskRef>>>,
    /// Bytes brought to a node ahead of their task.
    pub bytes: Arc<AtomicU64>,
}

impl Prefetcher {
    /// A prefetch thread for every node among `nodes` (the runtime makes one only when some
    /// node is a device's), bound to `pus[node]` (an OS index) where given: a device's next
    /// to its driver, host memory's next to a device's driver, so that their copies (memcpy
    /// on the host for a device whose memory is host memory, which its driver would
    /// otherwise do itself) never take time from the CPU workers' cores.
    pub(crate) fn new(nodes: &[Arc<MemoryNode>], pus: &[Option<usize>], topology: &crate::topology::Topology) -> Prefetcher {
        let bytes = Arc::new(AtomicU64::new(0));
        let txs = nodes
            .iter()
            .map(|n| {
                let (tx, rx) = channel::<TaskRef>();
                let (node, b) = (n.clone(), bytes.clone());
                let (pu, topology) = (pus.get(n.id).copied().flatten(), topology.clone());
                // A thread that cannot start leaves the node without prefetch, nothing more.
                std::thread::Builder::new()
                    .name(format!("weft-prefetch{}", n.id))
                    .spawn(move || {
                        if let Some(pu) = pu {
                            topology.bind_current_thread_os(pu);
                        }
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

    /// Start bringing `t`'s inputs to memory node `node`.
    pub(crate) fn request(&self, node: usize, t: &TaskRef) {
        // Host memory holds most inputs already (every CPU task's, on CPU-bound graphs):
        // only those missing there wake its thread.
        let missing = |a: &crate::task::Access| {
            let h = &a.handle.0;
            node != 0 || {
                let home = &h.tree.lock().entries[h.idx].replicas[0];
                !home.valid() && home.incoming.is_none()
            }
        };
        if let Some(Some(tx)) = self.txs.get(node)
            && t.accesses.iter().any(|a| matches!(a.mode, AccessMode::R | AccessMode::RW) && missing(a))
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
        {
            let st = h.tree.lock();
            if t.is_done() {
                break;
            }
            let e = &st.entries[h.idx];
            if !e.alive || e.replicas.get(node.id).is_none_or(|r| r.valid() || r.incoming.is_some()) {
                continue;
            }
            let bytes = e.shape.span(e.shape.packed());
            if node.limit.is_some_and(|l| node.used() + bytes > l) {
                continue;
            }
        }
        // Copies run here without the tree lock; data still on its way home from another
        // device or copied by someone else (`Err`), or no room: the task's own acquisition
        // finishes the trip.
        // A completed task's successors may write the input: checked before each step.
        let got = crate::data::coherence::acquire_unlocked(
            &h.tree,
            h.idx,
            node.id,
            AccessMode::R,
            true,
            || !t.is_done(),
            |st| {
                st.release(h.idx, node.id);
                let e = &st.entries[h.idx];
                Ok(e.shape.span(e.shape.packed()))
            },
        );
        if let Ok(Ok(bytes)) = got {
            moved += bytes as u64;
        }
    }
    moved
}
