//! The MSI state machine over a handle tree's replicas.
//!
//! **Owns**: making a replica valid on a node before a task uses it (fetching through the
//! node's device, routing device-to-device traffic through host memory), state transitions
//! for reads and writes, write-back, and evicting a replica to make room.
//! **Invariants** (checked by `check_invariants` in tests): at most one Owner per entry; an
//! Owner means every other replica of the entry is Invalid; a live entry always has a valid
//! replica; a replica with a copy in flight into it is Invalid, and that copy's source is
//! valid and pinned. For trees: before an entry is used, every relative (ancestor or
//! descendant) whose home copy is stale is written back home first, and a write invalidates
//! the relatives' non-home replicas. Dependencies keep conflicting relatives from running at
//! the same time, so at most one entry on any ancestor chain is stale at home.
//!
//! **No copy under the tree lock on the task paths.** The lock of a partitioned matrix
//! covers every tile, and a copy to or from a device can wait behind the kernel that device
//! is running (a PoCL "basic" device runs every command in order in one thread): a worker
//! that waited for its copy under the lock stalled every other worker touching any tile.
//! So `step` never copies: it *reserves* the copy it needs (a [`PendingCopy`] in the
//! destination replica's `incoming`, both replicas pinned) and returns it as a [`CopyJob`],
//! which the caller runs after dropping the lock (`acquire_unlocked`), then asks again; a
//! copy someone else reserved is waited for, outside the lock too, or handed to a device
//! driver that runs other tasks meanwhile. Until a copy is *settled* its destination stays
//! Invalid, and every path that looks at a replica settles what flows into it first (a
//! write, which changes every replica, settles all of the entry's), waiting if it must.
//!
//! **Copies out of another device.** A device driver never waits for the first hop of a
//! device-to-device transfer: the copy home waits behind the kernel the other device is
//! running (a PoCL `basic` device runs it inside the flush that holds its submission
//! lock), so `step` hands it to the source node's copy thread (`MemoryNode::copy_later`)
//! and returns its completion; the driver runs other tasks and asks again when it
//! completed. The second hop (home to the driver's device) is then a single copy.
#![allow(unsafe_code)] // issuing device copies (one `unsafe` call, with its SAFETY argument)

use super::{Entry, Home, PendingCopy, ReplicaState, Tree, TreeState, relatives};
use crate::error::{Error, Result};
use crate::memory::{MemoryNode, tick};
use crate::sync::Arc;
use crate::sync::atomic::Ordering;
use crate::task::AccessMode;
use weft_vendors::{Completion, Endpoint, Rect};

/// What one call of `TreeState::step` found.
pub(crate) enum Step {
    /// The replica is usable and pinned for the caller.
    Done,
    /// A copy the replica needs is in flight (reserved by someone else, or a copy home a
    /// device driver started): ask again once it completed. Nothing was pinned.
    Wait(Completion),
    /// The caller must run this copy (without the tree lock), then ask again.
    Copy(CopyJob),
}

/// A copy reserved by `step`, run by its caller without the tree lock. Completes the
/// reservation's completion when the copy has completed, or with an error if dropped unrun
/// (so that nobody waits forever for a copy an error path abandoned).
pub(crate) struct CopyJob {
    node: Arc<MemoryNode>,
    src: Endpoint,
    dst: Endpoint,
    rect: Rect,
    done: Completion,
}

impl CopyJob {
    /// Issue the copy on its device and wait for it (the tree lock not held).
    pub(crate) fn run(self) {
        // SAFETY: `step` reserved the copy: both replicas are allocated, span the rectangle
        // and stay pinned (neither evicted nor freed) until the copy is settled, home memory
        // lives as long as the tree (which the caller's handle keeps alive), nobody reads the
        // destination before `settle` marks it valid, and nobody writes the source meanwhile
        // (a write settles every copy of its entry first; dependencies order the rest).
        let r = unsafe { self.node.device.copy(self.src, self.dst, self.rect) }.and_then(|c| c.wait());
        self.done.complete(r);
    }
}

impl Drop for CopyJob {
    fn drop(&mut self) {
        if !self.done.is_complete() {
            self.done.complete(Err(weft_vendors::DeviceError::Lost("a reserved copy was abandoned".into())));
        }
    }
}

/// Acquire entry `idx` of `tree` on `node` for `mode` (pinned, as `TreeState::step`), taking
/// the tree lock only between copies: the copies it needs run in this thread with the lock
/// dropped, and copies others started are waited for with it dropped. `defer`: return such
/// a copy's completion instead of waiting (device drivers, which run other tasks meanwhile,
/// and prefetching, which gives up). `wanted` is asked under the lock before each step; once
/// false, the acquisition stops there (returning an already completed completion). Once
/// acquired, `then` runs under the same lock.
pub(crate) fn acquire_unlocked<R>(
    tree: &Arc<Tree>,
    idx: usize,
    node: usize,
    mode: AccessMode,
    defer: bool,
    wanted: impl Fn() -> bool,
    then: impl FnOnce(&mut TreeState) -> Result<R>,
) -> Result<std::result::Result<R, Completion>> {
    loop {
        let mut st = tree.lock();
        if !wanted() {
            return Ok(Err(Completion::done()));
        }
        match st.step(tree, idx, node, mode, defer)? {
            Step::Done => return then(&mut st).map(Ok),
            Step::Copy(job) => {
                drop(st);
                job.run();
            }
            Step::Wait(c) => {
                drop(st);
                if defer {
                    return Ok(Err(c));
                }
                // A failed copy is reported by the `settle` of the next step.
                let _ = c.wait();
            }
        }
    }
}

impl TreeState {
    /// Address of the root's home memory, allocating it for runtime-allocated data.
    pub(crate) fn home_base(&mut self, tree: &Tree) -> Result<*mut u8> {
        let span = {
            let r = &self.entries[0];
            r.shape.span(r.home_strides)
        };
        match &mut self.home {
            Home::Owned { ptr, .. } | Home::User { ptr } => Ok(*ptr),
            Home::Runtime { buf } => {
                if buf.is_none() {
                    *buf = Some(tree.nodes[0].alloc_raw(span)?);
                }
                let b = buf.expect("invariant: allocated above");
                Ok(tree.nodes[0].device.host_ptr(b).expect("invariant: host memory is addressable"))
            }
        }
    }

    /// Host address of entry `idx`'s replica on `node` (which must be allocated).
    pub(crate) fn host_addr(&mut self, tree: &Tree, idx: usize, node: usize) -> Result<*mut u8> {
        if node == 0 {
            let base = self.home_base(tree)?;
            return Ok(base.wrapping_add(self.entries[idx].home_offset));
        }
        let b = self.entries[idx].replicas[node].buf.expect("invariant: replica allocated before use");
        tree.nodes[node]
            .device
            .host_ptr(b)
            .ok_or_else(|| Error::Unsupported(format!("memory of node {node} is not addressable by CPU code")))
    }

    fn endpoint(&mut self, tree: &Tree, idx: usize, node: usize) -> Result<Endpoint> {
        if node == 0 {
            Ok(Endpoint::Host(self.host_addr(tree, idx, 0)?))
        } else {
            Ok(Endpoint::Device(self.entries[idx].replicas[node].buf.expect("invariant: allocated"), 0))
        }
    }

    /// Copy entry `idx` from `src` to `dst`; one of them is node 0. Waits for completion.
    fn copy(&mut self, tree: &Tree, idx: usize, src: usize, dst: usize) -> Result<()> {
        debug_assert!(src == 0 || dst == 0, "device-to-device copies go through host memory");
        let e = &self.entries[idx];
        let rect = e.shape.rect(e.strides_on(src), e.strides_on(dst));
        let handle = e.id;
        let s = self.endpoint(tree, idx, src)?;
        let d = self.endpoint(tree, idx, dst)?;
        let dev = if src == 0 { &tree.nodes[dst].device } else { &tree.nodes[src].device };
        let trace = tree.nodes[dst].trace.get();
        let start = trace.map(|_| std::time::Instant::now());
        // SAFETY: both replicas are allocated and span the rectangle; the tree lock is held
        // until the copy completes, and dependencies keep tasks from writing `dst` meanwhile.
        let done = unsafe { dev.copy(s, d, rect) }?;
        done.wait()?;
        tree.nodes[dst].received(src, rect.bytes());
        if let (Some(tr), Some(start)) = (trace, start) {
            tr.transfer(src, dst, rect.bytes(), handle, start, done.completed_at().unwrap_or_else(std::time::Instant::now));
        }
        Ok(())
    }

    /// Make sure entry `idx` has memory on `node`, evicting other replicas if needed.
    pub(crate) fn ensure_alloc(&mut self, tree: &Arc<Tree>, idx: usize, node: usize) -> Result<()> {
        if node == 0 {
            self.home_base(tree)?;
            return Ok(());
        }
        if self.entries[idx].replicas[node].buf.is_some() {
            return Ok(());
        }
        let len = self.entries[idx].shape.span(self.entries[idx].shape.packed());
        let mem = &tree.nodes[node];
        let buf = loop {
            match mem.alloc_raw(len) {
                Ok(b) => break b,
                Err(Error::OutOfMemory { node, bytes }) => match evict_one(tree, self, node) {
                    Evict::Done => continue,
                    Evict::Busy => return Err(Error::MemoryBusy(node)),
                    Evict::Nothing => return Err(Error::OutOfMemory { node, bytes }),
                },
                Err(e) => return Err(e),
            }
        };
        self.entries[idx].replicas[node].buf = Some(buf);
        mem.note_resident((tree.id, idx), tree);
        Ok(())
    }

    fn any_valid(&self, idx: usize, except: usize) -> Option<usize> {
        let r = &self.entries[idx].replicas;
        // Prefer home: every other node is reached from it in one copy.
        if except != 0 && r[0].valid() {
            return Some(0);
        }
        (0..r.len()).find(|&n| n != except && r[n].valid())
    }

    /// Write entry `idx` back to its home replica if that is stale, waiting under the lock
    /// (unregistering, eviction, relatives: not the task paths' copies).
    pub(crate) fn write_back(&mut self, tree: &Arc<Tree>, idx: usize) -> Result<()> {
        self.settle(tree, idx, 0, true)?;
        if self.entries[idx].replicas[0].valid() {
            return Ok(());
        }
        let src = self.any_valid(idx, 0).expect("invariant: a live entry has a valid replica");
        self.home_base(tree)?;
        self.copy(tree, idx, src, 0)?;
        self.entries[idx].replicas[0].state = ReplicaState::Shared;
        normalize(&mut self.entries[idx]);
        Ok(())
    }

    /// Make entry `idx` usable on `node` with `mode`, pin it, and return its host address,
    /// copying and waiting under the lock (reductions; tests).
    pub(crate) fn acquire(&mut self, tree: &Arc<Tree>, idx: usize, node: usize, mode: AccessMode) -> Result<*mut u8> {
        loop {
            match self.step(tree, idx, node, mode, false)? {
                Step::Done => break,
                Step::Copy(job) => job.run(),
                // Completed without this lock: a reserved copy's runner never takes it.
                Step::Wait(c) => {
                    let _ = c.wait();
                }
            }
        }
        self.host_addr(tree, idx, node).inspect_err(|_| self.release(idx, node))
    }

    /// Settle the copy in flight into entry `idx`'s replica on `node`, if any: once it
    /// completed, the replica is valid and both ends unpinned. `wait`: block until it
    /// completes; else a copy still running is returned.
    fn settle(&mut self, tree: &Tree, idx: usize, node: usize, wait: bool) -> Result<Option<Completion>> {
        let Some(p) = &self.entries[idx].replicas[node].incoming else { return Ok(None) };
        if !wait && !p.done.is_complete() {
            return Ok(Some(p.done.clone()));
        }
        let p = self.entries[idx].replicas[node].incoming.take().expect("invariant: checked above");
        let r = p.done.wait();
        let e = &mut self.entries[idx];
        e.replicas[p.src].pins -= 1;
        e.replicas[node].pins -= 1;
        r?;
        debug_assert!(e.replicas[p.src].valid(), "a copy's source stays valid until it is settled");
        e.replicas[node].state = ReplicaState::Shared;
        normalize(e);
        tree.nodes[node].received(p.src, p.bytes);
        if let (Some(tr), Some(start)) = (tree.nodes[node].trace.get(), p.issued) {
            tr.transfer(p.src, node, p.bytes, e.id, start, p.done.completed_at().unwrap_or_else(std::time::Instant::now));
        }
        Ok(None)
    }

    /// Settle every copy in flight into entry `idx` (`wait`: blocking; else the first still
    /// running is returned).
    fn settle_all(&mut self, tree: &Tree, idx: usize, wait: bool) -> Result<Option<Completion>> {
        for n in 0..self.entries[idx].replicas.len() {
            if let Some(c) = self.settle(tree, idx, n, wait)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Record a copy of entry `idx` from `src` to `dst` (one of them node 0) as in flight,
    /// pinning both replicas; the destination must be allocated and Invalid.
    fn reserve(&mut self, tree: &Arc<Tree>, idx: usize, src: usize, dst: usize, done: Completion) -> Result<(Endpoint, Endpoint, Rect)> {
        debug_assert!(src == 0 || dst == 0, "device-to-device copies go through host memory");
        let e = &self.entries[idx];
        debug_assert!(e.replicas[src].valid() && !e.replicas[dst].valid() && e.replicas[dst].incoming.is_none());
        let rect = e.shape.rect(e.strides_on(src), e.strides_on(dst));
        let s = self.endpoint(tree, idx, src)?;
        let d = self.endpoint(tree, idx, dst)?;
        let issued = tree.nodes[dst].trace.get().map(|_| std::time::Instant::now());
        let e = &mut self.entries[idx];
        e.replicas[src].pins += 1;
        e.replicas[dst].pins += 1;
        e.replicas[dst].incoming = Some(PendingCopy { done, src, bytes: rect.bytes(), issued });
        Ok((s, d, rect))
    }

    /// Reserve a copy of entry `idx` from `src` to `dst` for the caller to run (`CopyJob`).
    fn copy_job(&mut self, tree: &Arc<Tree>, idx: usize, src: usize, dst: usize) -> Result<CopyJob> {
        let done = Completion::new();
        let (s, d, rect) = self.reserve(tree, idx, src, dst, done.clone())?;
        let node = tree.nodes[if src == 0 { dst } else { src }].clone();
        Ok(CopyJob { node, src: s, dst: d, rect, done })
    }

    /// One step of making entry `idx` usable on `node` with `mode`: `Done` pins the replica
    /// for the caller; otherwise a copy is needed first (`Copy`, for the caller to run
    /// without the lock) or in flight (`Wait`). Never copies nor waits itself.
    /// `defer`: the caller does not wait (a device driver, a prefetch): data only on other
    /// devices goes home on the source node's copy thread (see the module doc).
    pub(crate) fn step(&mut self, tree: &Arc<Tree>, idx: usize, node: usize, mode: AccessMode, defer: bool) -> Result<Step> {
        // The steady state of a buffer used over and over on one device (an OpenCL in-order
        // queue's tiny kernels): a device replica that is allocated and already usable for
        // `mode` (valid for a read, the only valid copy for a write, with nothing copied
        // out of it), of an entry with no relatives. The full path below would change
        // nothing but the pin and the use time.
        let e = &mut self.entries[idx];
        let usable = {
            let r = &e.replicas[node];
            if mode.writes() {
                r.state == ReplicaState::Owner && e.replicas.iter().all(|r| r.incoming.is_none())
            } else {
                mode.reads() && r.valid()
            }
        };
        let r = &mut e.replicas[node];
        if usable && node != 0 && r.buf.is_some() && e.parent.is_none() && e.children.is_empty() {
            r.pins += 1;
            r.last_use = tick();
            return Ok(Step::Done);
        }
        // What flows into the replica (and, for a write, into any replica) settles first.
        let pending = if mode.writes() { self.settle_all(tree, idx, false)? } else { self.settle(tree, idx, node, false)? };
        if let Some(c) = pending {
            return Ok(Step::Wait(c));
        }
        let needs_fetch = mode.reads() && !self.entries[idx].replicas[node].valid();
        if needs_fetch && node != 0 && !self.entries[idx].replicas[0].valid() {
            // The data is only on other devices: it goes home first.
            if let Some(c) = self.settle(tree, idx, 0, false)? {
                return Ok(Step::Wait(c));
            }
            if !self.entries[idx].replicas[0].valid() {
                let src = self.any_valid(idx, 0).expect("invariant: a live entry has a valid replica");
                self.home_base(tree)?;
                let job = self.copy_job(tree, idx, src, 0)?;
                if defer {
                    // Out of another device: its copy thread waits for that device, not us.
                    let done = job.done.clone();
                    tree.nodes[src].copy_later(job);
                    return Ok(Step::Wait(done));
                }
                return Ok(Step::Copy(job));
            }
        }
        let rel = relatives(self, idx);
        for &r in &rel {
            if mode.writes() {
                self.settle_all(tree, r, true)?;
            }
            self.write_back(tree, r)?;
        }
        if mode.writes() {
            for &r in &rel {
                for rep in self.entries[r].replicas.iter_mut().skip(1) {
                    rep.state = ReplicaState::Invalid;
                }
                normalize(&mut self.entries[r]);
            }
        }
        self.ensure_alloc(tree, idx, node)?;
        if needs_fetch {
            let src = self.any_valid(idx, node).expect("invariant: a live entry has a valid replica");
            return self.copy_job(tree, idx, src, node).map(Step::Copy);
        }
        let e = &mut self.entries[idx];
        e.replicas[node].pins += 1;
        if mode.writes() {
            for (n, rep) in e.replicas.iter_mut().enumerate() {
                rep.state = if n == node { ReplicaState::Owner } else { ReplicaState::Invalid };
            }
        } else if !e.replicas[node].valid() {
            e.replicas[node].state = ReplicaState::Shared;
        }
        normalize(e);
        e.replicas[node].last_use = tick();
        Ok(Step::Done)
    }

    /// Unpin after a task used entry `idx` on `node`.
    pub(crate) fn release(&mut self, idx: usize, node: usize) {
        let r = &mut self.entries[idx].replicas[node];
        debug_assert!(r.pins > 0);
        r.pins -= 1;
        r.last_use = tick();
    }

    /// Forget the data of entries `which`: copies in flight end first, device replicas
    /// are freed, and home becomes the only (Owner) replica without anything written to it.
    /// For a home being replaced by fresh memory whose content nobody will read.
    pub(crate) fn discard(&mut self, tree: &Arc<Tree>, which: &[usize]) -> Result<()> {
        for &i in which {
            self.settle_all(tree, i, true)?;
            for n in 1..self.entries[i].replicas.len() {
                if let Some(b) = self.entries[i].replicas[n].buf.take() {
                    tree.nodes[n].forget_resident((tree.id, i));
                    tree.nodes[n].release(b);
                }
                self.entries[i].replicas[n].state = ReplicaState::Invalid;
            }
            self.entries[i].replicas[0].state = ReplicaState::Owner;
            normalize(&mut self.entries[i]);
        }
        Ok(())
    }

    /// Bring every live entry home and free its device replicas (unregister, unpartition).
    pub(crate) fn flush_home(&mut self, tree: &Arc<Tree>, which: &[usize]) -> Result<()> {
        for &i in which {
            self.settle_all(tree, i, true)?;
            self.write_back(tree, i)?;
        }
        for &i in which {
            for n in 1..self.entries[i].replicas.len() {
                if let Some(b) = self.entries[i].replicas[n].buf.take() {
                    tree.nodes[n].forget_resident((tree.id, i));
                    tree.nodes[n].release(b);
                }
                self.entries[i].replicas[n].state = ReplicaState::Invalid;
            }
            normalize(&mut self.entries[i]);
        }
        Ok(())
    }

    /// Evict entry `idx` from `node` if it is allocated and unpinned. Returns whether it did.
    fn evict(&mut self, tree: &Arc<Tree>, idx: usize, node: usize) -> Result<bool> {
        let rep = &self.entries[idx].replicas[node];
        if rep.pins > 0 || rep.buf.is_none() {
            return Ok(false);
        }
        let last_valid = rep.valid() && self.any_valid(idx, node).is_none();
        if last_valid || (rep.valid() && !self.entries[idx].replicas[0].valid()) {
            self.write_back(tree, idx)?;
        }
        let e = &mut self.entries[idx];
        e.replicas[node].state = ReplicaState::Invalid;
        let b = e.replicas[node].buf.take().expect("invariant: checked above");
        normalize(e);
        tree.nodes[node].forget_resident((tree.id, idx));
        tree.nodes[node].free_now(b);
        tree.nodes[node].evictions.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

/// Keep MSI canonical: a single valid replica is the Owner; several are Shared.
pub(crate) fn normalize(e: &mut Entry) {
    let valid = e.replicas.iter().filter(|r| r.valid()).count();
    for r in e.replicas.iter_mut().filter(|r| r.valid()) {
        r.state = if valid == 1 { ReplicaState::Owner } else { ReplicaState::Shared };
    }
}

enum Evict {
    Done,
    /// Candidates exist but are pinned or locked by someone else right now.
    Busy,
    Nothing,
}

/// Evict the least recently used unpinned replica on `node`. `cur` is the tree the caller
/// holds locked; other trees are only try-locked, so eviction never deadlocks: when they are
/// busy the caller releases everything and retries.
fn evict_one(cur_tree: &Arc<Tree>, cur: &mut TreeState, node: usize) -> Evict {
    let mem = &cur_tree.nodes[node];
    let resident: Vec<_> = crate::sync::lock(&mem.resident).iter().map(|(k, w)| (*k, w.clone())).collect();
    // (last use, replica key, its tree unless it is the caller's)
    type Candidate = (u64, (u64, usize), Option<Arc<Tree>>);
    let mut cands: Vec<Candidate> = Vec::new();
    let mut busy = false;
    for (key, weak) in resident {
        if key.0 == cur_tree.id {
            let r = &cur.entries[key.1].replicas[node];
            if r.pins == 0 && r.buf.is_some() {
                cands.push((r.last_use, key, None));
            }
            busy |= r.pins > 0;
        } else if let Some(t) = weak.upgrade() {
            let lu = match t.state.try_lock() {
                Ok(st) => {
                    let r = &st.entries[key.1].replicas[node];
                    busy |= r.pins > 0;
                    (r.pins == 0 && r.buf.is_some()).then_some(r.last_use)
                }
                Err(_) => {
                    busy = true;
                    None
                }
            };
            if let Some(lu) = lu {
                cands.push((lu, key, Some(t)));
            }
        }
    }
    cands.sort_by_key(|c| c.0);
    for (_, key, t) in cands {
        let done = match t {
            None => cur.evict(cur_tree, key.1, node),
            Some(t) => match t.state.try_lock() {
                Ok(mut st) => st.evict(&t, key.1, node),
                Err(_) => Ok(false),
            },
        };
        match done {
            Ok(true) => return Evict::Done,
            Ok(false) => busy = true,
            Err(_) => {}
        }
    }
    if busy { Evict::Busy } else { Evict::Nothing }
}

/// Check the MSI invariants of a tree (tests and debug builds).
#[cfg(test)]
pub(crate) fn check_invariants(st: &TreeState) -> std::result::Result<(), String> {
    for (i, e) in st.entries.iter().enumerate().filter(|(_, e)| e.alive) {
        let owners = e.replicas.iter().filter(|r| r.state == ReplicaState::Owner).count();
        let valid = e.replicas.iter().filter(|r| r.valid()).count();
        if owners > 1 {
            return Err(format!("entry {i}: {owners} owners"));
        }
        if owners == 1 && valid > 1 {
            return Err(format!("entry {i}: an owner beside {} other valid replicas", valid - 1));
        }
        if valid == 0 {
            return Err(format!("entry {i}: no valid replica"));
        }
        for (n, r) in e.replicas.iter().enumerate() {
            if let Some(p) = &r.incoming {
                let src = &e.replicas[p.src];
                if r.valid() || !src.valid() || src.pins == 0 || r.pins == 0 {
                    return Err(format!("entry {i}: a copy from node {} into node {n} in flight, but {:?} into {:?}", p.src, src, r));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::runtime::Runtime;
    use proptest::prelude::*;

    fn mode_of(i: u8) -> AccessMode {
        [AccessMode::R, AccessMode::W, AccessMode::RW][i as usize % 3]
    }

    /// Write `v` into entry `h` on `node` (acquired for `mode`, under the lock).
    fn write_u32s(h: &crate::data::handle::HandleInner, node: usize, mode: AccessMode, v: &[u32]) {
        let mut st = h.tree.lock();
        let p = st.acquire(&h.tree, h.idx, node, mode).unwrap() as *mut u32;
        // SAFETY: acquired for writing; callers pass the entry's length.
        unsafe { std::slice::from_raw_parts_mut(p, v.len()) }.copy_from_slice(v);
        st.release(h.idx, node);
    }

    /// Read `len` values of entry `h` on `node` through `acquire_unlocked` (`defer` as a
    /// device driver would).
    fn read_u32s(h: &crate::data::handle::HandleInner, node: usize, len: usize, defer: bool) -> Vec<u32> {
        let got = acquire_unlocked(
            &h.tree,
            h.idx,
            node,
            AccessMode::R,
            defer,
            || true,
            |st| {
                let p = st.host_addr(&h.tree, h.idx, node)? as *const u32;
                // SAFETY: acquired for reading; callers pass the entry's length.
                let v = unsafe { std::slice::from_raw_parts(p, len) }.to_vec();
                st.release(h.idx, node);
                Ok(v)
            },
        );
        got.unwrap().unwrap_or_else(|_| panic!("the copy was deferred"))
    }

    /// A copy a step reserved runs without the tree lock: meanwhile another tile of the same
    /// tree is acquired and released freely, a second reader of the tile waits for that copy
    /// (it is not copied twice), and the data arrives whole.
    #[test]
    fn reserved_copies_run_without_the_tree_lock() {
        let rt = Runtime::new(Config { ncpu: Some(1), nnull: 1, ..Config::default() }).unwrap();
        let h = rt.register_vector((0u32..8).collect::<Vec<_>>()).unwrap();
        let halves = h.partition(crate::data::Filter::VectorBlock { parts: 2 }).unwrap();
        let (a, b) = (&halves[0].0, &halves[1].0);
        // Make node 1 the only valid copy of the first half.
        write_u32s(a, 1, AccessMode::RW, &[10, 11, 12, 13]);
        let job = match a.tree.lock().step(&a.tree, a.idx, 0, AccessMode::R, false).unwrap() {
            Step::Copy(job) => job,
            _ => panic!("reading device-only data at home needs a copy"),
        };
        // The lock is free while the job waits to run: the other half is used at home.
        {
            let mut st = b.tree.lock();
            assert!(matches!(st.step(&b.tree, b.idx, 0, AccessMode::RW, false).unwrap(), Step::Done));
            st.release(b.idx, 0);
            assert!(check_invariants(&st).is_ok(), "{:?}", check_invariants(&st));
            // A second reader of the first half waits for the reserved copy.
            let Step::Wait(c) = st.step(&a.tree, a.idx, 0, AccessMode::R, false).unwrap() else { panic!("expected a wait") };
            assert!(!c.is_complete());
        }
        job.run();
        assert_eq!(read_u32s(a, 0, 4, false), vec![10, 11, 12, 13]);
        let st = a.tree.lock();
        assert!(check_invariants(&st).is_ok(), "{:?}", check_invariants(&st));
        assert!(st.entries[a.idx].replicas.iter().all(|r| r.incoming.is_none() && r.pins == 0));
    }

    /// A reserved copy dropped without running (an error path) fails the step that settles
    /// it, unpins both ends, and the next acquisition copies again.
    #[test]
    fn an_abandoned_copy_fails_once_and_is_redone() {
        let rt = Runtime::new(Config { ncpu: Some(1), nnull: 1, ..Config::default() }).unwrap();
        let h = rt.register_vector(vec![7u32; 4]).unwrap();
        let hd = &h.0;
        let Step::Copy(job) = hd.tree.lock().step(&hd.tree, hd.idx, 1, AccessMode::R, false).unwrap() else {
            panic!("reading home data on the device needs a copy")
        };
        drop(job);
        assert!(hd.tree.lock().step(&hd.tree, hd.idx, 1, AccessMode::R, false).is_err());
        {
            let st = hd.tree.lock();
            assert!(st.entries[hd.idx].replicas.iter().all(|r| r.incoming.is_none() && r.pins == 0));
            assert!(check_invariants(&st).is_ok());
        }
        assert_eq!(read_u32s(hd, 1, 4, true), vec![7; 4]);
    }

    /// A device driver (`defer`) reading data that only another device holds does not run
    /// the copy out of that device itself: the source node's copy thread does, and the
    /// driver gets its completion; asked again, it copies home to its own device.
    #[test]
    fn the_first_hop_between_devices_runs_on_the_source_nodes_thread() {
        let rt = Runtime::new(Config { ncpu: Some(1), nnull: 2, ..Config::default() }).unwrap();
        let h = rt.register_vector(vec![0u32; 4]).unwrap();
        let hd = &h.0;
        write_u32s(hd, 1, AccessMode::W, &[5, 6, 7, 8]);
        let c = match hd.tree.lock().step(&hd.tree, hd.idx, 2, AccessMode::R, true).unwrap() {
            Step::Wait(c) => c,
            _ => panic!("a driver waits for the copy out of the other device"),
        };
        c.wait().unwrap();
        assert_eq!(read_u32s(hd, 2, 4, true), vec![5, 6, 7, 8]);
        let st = hd.tree.lock();
        assert!(check_invariants(&st).is_ok(), "{:?}", check_invariants(&st));
        assert!(st.entries[hd.idx].replicas.iter().all(|r| r.valid() && r.pins == 0 && r.incoming.is_none()));
    }

    proptest! {
        /// Random (entry, node, mode) sequences over a vector and its two halves on three
        /// memory nodes, with a device memory limit that forces evictions: the MSI invariants
        /// hold after every step, and every read sees the last value written to each element.
        #[test]
        fn msi_invariants_and_values(ops in proptest::collection::vec((0usize..3, 0usize..3, 0u8..3), 1..60), limited in any::<bool>()) {
            let rt = Runtime::new(Config {
                ncpu: Some(1),
                nnull: 2,
                null_mem_limit: limited.then_some(48),
                ..Config::default()
            }).unwrap();
            let h = rt.register_vector(vec![0u32; 8]).unwrap();
            let halves = h.partition(crate::data::Filter::VectorBlock { parts: 2 }).unwrap();
            let handles = [h.clone(), halves[0].clone(), halves[1].clone()];
            let mut model = [0u32; 8];
            for (step, (which, node, m)) in ops.into_iter().enumerate() {
                let mode = mode_of(m);
                let hd = &handles[which].0;
                let (lo, len) = match which { 0 => (0, 8), 1 => (0, 4), _ => (4, 4) };
                let mut st = hd.tree.lock();
                let p = match st.acquire(&hd.tree, hd.idx, node, mode) {
                    Ok(p) => p as *mut u32,
                    Err(Error::OutOfMemory { .. }) => continue, // whole vector > a 48-byte device
                    Err(e) => panic!("{e}"),
                };
                // SAFETY: the replica is acquired for this mode and holds `len` u32s.
                let data = unsafe { std::slice::from_raw_parts_mut(p, len) };
                if mode.reads() {
                    prop_assert_eq!(&data[..], &model[lo..lo + len], "step {} read on node {}", step, node);
                }
                if mode.writes() {
                    for (k, x) in data.iter_mut().enumerate() {
                        *x = (step * 100 + k) as u32;
                        model[lo + k] = *x;
                    }
                }
                st.release(hd.idx, node);
                prop_assert!(check_invariants(&st).is_ok(), "step {}: {:?}", step, check_invariants(&st));
            }
            drop(handles);
            drop(halves);
            prop_assert_eq!(h.into_vec::<u32>().unwrap(), model.to_vec());
        }
    }
}
