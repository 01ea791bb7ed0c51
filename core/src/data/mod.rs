//! Data handles and their replicas.
//!
//! **Owns**: registered and runtime-allocated data, its replicas on memory nodes with
//! their MSI states, partitioning into children (filters), the per-handle state that
//! implicit dependencies are computed from, and the host-address registry.
//! **Does not own**: tasks (it stores references for dependency tracking only) or the
//! memory nodes' allocators (`memory`).
//!
//! A handle and all handles partitioned from it form a *tree* that shares one lock: the
//! children alias sub-ranges of the root's home (node 0) memory, so their coherence and
//! ordering are decided together. Distinct trees lock independently; code that needs
//! several trees locks them in tree-id order.

pub(crate) mod coherence;
pub mod filters;
pub mod handle;
pub mod interface;
pub(crate) mod registry;
pub(crate) mod view;

pub use filters::Filter;
pub use handle::{AcquireGuard, DataHandle, PendingAcquire};
pub use interface::{Shape, Strides};
pub use view::{BlockMut, BlockRef, MatrixMut, MatrixRef, View};

use crate::memory::MemoryNode;
use crate::sync::{Arc, Mutex, Weak, lock};
use crate::task::{Codelet, TaskInner};
use smallvec::SmallVec;
use std::any::Any;
use weft_vendors::Buffer;

/// MSI state of one replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    /// The only valid copy; others are invalid.
    Owner,
    /// Valid, and at least one other replica may be valid too.
    Shared,
    Invalid,
}

#[derive(Debug)]
pub(crate) struct Replica {
    pub state: ReplicaState,
    /// Device allocation (every node but a home replica at node 0, which aliases `Home`).
    pub buf: Option<Buffer>,
    /// Tasks using the replica right now, and copies reading or writing it; a pinned
    /// replica is never evicted.
    pub pins: u32,
    pub last_use: u64,
    /// A copy into this (invalid) replica still in flight (see `coherence`): the replica
    /// becomes valid when it is settled.
    pub incoming: Option<PendingCopy>,
}

impl Replica {
    fn invalid() -> Replica {
        Replica { state: ReplicaState::Invalid, buf: None, pins: 0, last_use: 0, incoming: None }
    }
    pub fn valid(&self) -> bool {
        self.state != ReplicaState::Invalid
    }
}

/// Where the root's node-0 data lives.
pub(crate) enum Home {
    /// Memory the runtime owns a Rust value for (a `Vec<T>`), returned at unregister.
    Owned { ptr: *mut u8, owner: Box<dyn Any + Send> },
    /// Memory a C caller registered; written back at unregister, never freed.
    User { ptr: *mut u8 },
    /// Runtime-allocated host memory; allocated lazily on first use.
    Runtime { buf: Option<Buffer> },
}

// SAFETY: the pointers in `Home` are addresses of memory handed over to the runtime for the
// lifetime of the registration; every access to it is ordered by task dependencies.
#[allow(unsafe_code)]
unsafe impl Send for Home {}

/// The kind of the current access phase of a handle (see `task::deps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    #[default]
    None,
    Read,
    Write,
    Redux,
    Commute,
}

/// Implicit-dependency state of one handle: the tasks of the current phase and of the one
/// before it (sequential consistency per handle). Weak references: a finished task is no
/// dependency, and must not be kept alive by the data it used (that would be a cycle
/// handle → task → handle); an unfinished task is always held by whoever will release it.
#[derive(Default)]
pub(crate) struct DepState {
    pub phase: Phase,
    pub cur: PhaseTasks,
    pub prev: PhaseTasks,
}

/// The tasks of one phase, inline up to two: a write phase has one task, and starting a
/// phase (moving `cur` to `prev`) allocates nothing.
pub(crate) type PhaseTasks = smallvec::SmallVec<[Weak<TaskInner>; 2]>;

pub(crate) struct Redux {
    pub init: Arc<Codelet>,
    pub reduce: Arc<Codelet>,
    /// Per-worker private contributions (host memory) of the current REDUX phase.
    pub contribs: Vec<Option<Buffer>>,
}

pub(crate) struct Entry {
    /// The handle id of this entry (diagnostics).
    #[allow(dead_code)]
    pub id: u64,
    pub shape: interface::Shape,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// Byte offset of this entry inside the root's home memory, and its strides there.
    pub home_offset: usize,
    pub home_strides: interface::Strides,
    pub replicas: smallvec::SmallVec<[Replica; 2]>,
    pub deps: DepState,
    pub redux: Option<Redux>,
    pub alive: bool,
    pub host_addr: Option<usize>,
}

/// A copy into a replica from node `src`; it keeps both replicas pinned until settled.
#[derive(Debug)]
pub(crate) struct PendingCopy {
    pub done: weft_vendors::Completion,
    pub src: usize,
    pub bytes: usize,
    /// When it was issued, if the runtime records a trace (`WEFT_TRACE`).
    pub issued: Option<std::time::Instant>,
}

impl Entry {
    pub fn strides_on(&self, node: usize) -> interface::Strides {
        if node == 0 { self.home_strides } else { self.shape.packed() }
    }
}

pub(crate) struct TreeState {
    pub entries: smallvec::SmallVec<[Entry; 1]>,
    pub home: Home,
    /// Whether the root is unregistered: every entry is dead.
    pub unregistered: bool,
}

/// A handle tree: a root handle plus everything partitioned from it.
pub struct Tree {
    pub(crate) id: u64,
    pub(crate) state: Mutex<TreeState>,
    pub(crate) nodes: Arc<[Arc<MemoryNode>]>,
    /// Whether some entry has children (kept under the state lock, read without it): a use
    /// of such a tree may write relatives back, so it is never launched ahead of its
    /// predecessors' completion (`TaskInner::flat`).
    pub(crate) partitioned: crate::sync::atomic::AtomicBool,
}

impl Tree {
    pub(crate) fn lock(&self) -> crate::sync::MutexGuard<'_, TreeState> {
        lock(&self.state)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for (idx, e) in st.entries.iter_mut().enumerate() {
            // A copy still writing a replica or reading one must end before either goes.
            for r in e.replicas.iter_mut() {
                if let Some(p) = r.incoming.take() {
                    let _ = p.done.wait();
                }
            }
            for (n, r) in e.replicas.iter_mut().enumerate() {
                if let Some(b) = r.buf.take() {
                    self.nodes[n].forget_resident((self.id, idx));
                    self.nodes[n].release(b);
                }
            }
            if let Some(rd) = e.redux.as_mut() {
                for b in rd.contribs.iter_mut().filter_map(Option::take) {
                    self.nodes[0].release(b);
                }
            }
        }
        if let Home::Runtime { buf: Some(b) } = &mut st.home {
            self.nodes[0].free_now(*b);
        }
    }
}

/// Indices of the relatives of `idx`: its ancestors and all its descendants.
pub(crate) fn relatives(st: &TreeState, idx: usize) -> SmallVec<[usize; 8]> {
    let mut out = SmallVec::new();
    let mut p = st.entries[idx].parent;
    while let Some(a) = p {
        out.push(a);
        p = st.entries[a].parent;
    }
    let mut stack: SmallVec<[usize; 8]> = st.entries[idx].children.iter().copied().collect();
    while let Some(c) = stack.pop() {
        if st.entries[c].alive {
            out.push(c);
            stack.extend(st.entries[c].children.iter().copied());
        }
    }
    out
}
