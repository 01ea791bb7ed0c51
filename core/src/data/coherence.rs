//! The MSI state machine over a handle tree's replicas.
//!
//! **Owns**: making a replica valid on a node before a task uses it (fetching through the
//! node's device, routing device-to-device traffic through host memory), state transitions
//! for reads and writes, write-back, and evicting a replica to make room.
//! **Invariants** (checked by `check_invariants` in tests): at most one Owner per entry; an
//! Owner means every other replica of the entry is Invalid; a live entry always has a valid
//! replica. For trees: before an entry is used, every relative (ancestor or descendant)
//! whose home copy is stale is written back home first, and a write invalidates the
//! relatives' non-home replicas. Dependencies keep conflicting relatives from running at
//! the same time, so at most one entry on any ancestor chain is stale at home.
//!
//! **Copies home in flight.** A device driver never waits for the first hop of a
//! device-to-device transfer: `acquire_buffer` starts the copy home (`start_write_back`,
//! recorded in `Entry::pending_home`, the source replica pinned) and returns its completion;
//! the driver runs other tasks and asks again when it completed. Until it is *settled* home
//! stays Invalid, and every path that looks at home (`acquire_replica`, `write_back`, hence
//! eviction, flushing and fetching) settles it first, waiting if it must.
#![allow(unsafe_code)] // issuing device copies (one `unsafe` call, with its SAFETY argument)

use super::{Entry, Home, ReplicaState, Tree, TreeState, relatives};
use crate::error::{Error, Result};
use crate::memory::tick;
use crate::sync::Arc;
use crate::sync::atomic::Ordering;
use crate::task::AccessMode;
use weft_vendors::Endpoint;

/// What a device driver's acquisition gave.
pub(crate) enum Acquired {
    Ready(weft_vendors::Buffer),
    /// The data is on its way home from another device: ask again once this completed.
    Pending(weft_vendors::Completion),
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

    /// Write entry `idx` back to its home replica if that is stale.
    pub(crate) fn write_back(&mut self, tree: &Arc<Tree>, idx: usize) -> Result<()> {
        self.settle(tree, idx, true)?;
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

    /// Make entry `idx` usable on `node` with `mode`, pin it, and return its host address.
    pub(crate) fn acquire(&mut self, tree: &Arc<Tree>, idx: usize, node: usize, mode: AccessMode) -> Result<*mut u8> {
        let ready = self.acquire_replica(tree, idx, node, mode, true)?;
        debug_assert!(ready.is_none(), "a waiting acquisition is never left pending");
        self.host_addr(tree, idx, node).inspect_err(|_| self.release(idx, node))
    }

    /// Make entry `idx` usable on device node `node` with `mode`, pin it, and return its
    /// buffer; or, when the only valid copy is on another device, start copying it home and
    /// return that copy's completion without waiting (nothing pinned): the device driver
    /// asks again once it completed, and meanwhile runs other tasks. The second hop (home to
    /// this device) is then a single copy, which the driver's window overlaps with kernels.
    pub(crate) fn acquire_buffer(&mut self, tree: &Arc<Tree>, idx: usize, node: usize, mode: AccessMode) -> Result<Acquired> {
        debug_assert!(node != 0, "home replicas are reached by address");
        if let Some(pending) = self.acquire_replica(tree, idx, node, mode, false)? {
            return Ok(Acquired::Pending(pending));
        }
        Ok(Acquired::Ready(self.entries[idx].replicas[node].buf.expect("invariant: allocated by acquire_replica")))
    }

    /// Settle entry `idx`'s copy home in flight, if any: once it completed, home is valid
    /// and the source replica unpinned. `wait`: block until it completes; else a copy still
    /// running is returned.
    fn settle(&mut self, tree: &Tree, idx: usize, wait: bool) -> Result<Option<weft_vendors::Completion>> {
        let Some(p) = &self.entries[idx].pending_home else { return Ok(None) };
        if !wait && !p.done.is_complete() {
            return Ok(Some(p.done.clone()));
        }
        let p = self.entries[idx].pending_home.take().expect("invariant: checked above");
        let r = p.done.wait();
        let e = &mut self.entries[idx];
        e.replicas[p.src].pins -= 1;
        r?;
        e.replicas[0].state = ReplicaState::Shared;
        normalize(e);
        tree.nodes[0].received(p.src, p.bytes);
        if let (Some(tr), Some(start)) = (tree.nodes[0].trace.get(), p.issued) {
            tr.transfer(p.src, 0, p.bytes, e.id, start, p.done.completed_at().unwrap_or_else(std::time::Instant::now));
        }
        Ok(None)
    }

    /// Start copying entry `idx` home from the device that holds it, without waiting; the
    /// source replica stays pinned until `settle`. Returns the copy's completion.
    fn start_write_back(&mut self, tree: &Arc<Tree>, idx: usize) -> Result<weft_vendors::Completion> {
        debug_assert!(self.entries[idx].pending_home.is_none() && !self.entries[idx].replicas[0].valid());
        let src = self.any_valid(idx, 0).expect("invariant: a live entry has a valid replica");
        self.home_base(tree)?;
        let e = &self.entries[idx];
        let rect = e.shape.rect(e.strides_on(src), e.strides_on(0));
        let s = self.endpoint(tree, idx, src)?;
        let d = self.endpoint(tree, idx, 0)?;
        let issued = tree.nodes[0].trace.get().map(|_| std::time::Instant::now());
        // SAFETY: both replicas are allocated and span the rectangle; the source stays pinned
        // (so neither evicted nor freed) until the copy is settled, home memory lives as long
        // as the tree, and nobody reads home before `settle` marks it valid (every path that
        // looks at home settles first) nor writes the entry meanwhile (the task waiting for
        // this copy holds its dependencies).
        let done = unsafe { tree.nodes[src].device.copy(s, d, rect) }?;
        self.entries[idx].replicas[src].pins += 1;
        self.entries[idx].pending_home = Some(super::PendingCopy { done: done.clone(), src, bytes: rect.bytes(), issued });
        Ok(done)
    }

    /// Coherence for a use of entry `idx` on `node` with `mode`; pins the replica. With
    /// `wait` false, a copy home that has not completed yet is returned instead (see
    /// `acquire_buffer`), before anything was changed or pinned.
    fn acquire_replica(
        &mut self,
        tree: &Arc<Tree>,
        idx: usize,
        node: usize,
        mode: AccessMode,
        wait: bool,
    ) -> Result<Option<weft_vendors::Completion>> {
        // The steady state of a buffer used over and over on one device (an OpenCL in-order
        // queue's tiny kernels): a device replica that is allocated and already usable for
        // `mode` (valid for a read, the only valid copy for a write), of an entry with no
        // relatives and no copy home in flight. The full path below would change nothing but
        // the pin and the use time.
        let e = &mut self.entries[idx];
        let r = &mut e.replicas[node];
        let usable = if mode.writes() { r.state == ReplicaState::Owner } else { mode.reads() && r.valid() };
        if usable && node != 0 && r.buf.is_some() && e.pending_home.is_none() && e.parent.is_none() && e.children.is_empty() {
            r.pins += 1;
            r.last_use = tick();
            return Ok(None);
        }
        if let Some(c) = self.settle(tree, idx, wait)? {
            return Ok(Some(c));
        }
        if !wait && node != 0 && mode.reads() && !self.entries[idx].replicas[node].valid() && !self.entries[idx].replicas[0].valid() {
            // The data is only on other devices: route it home without blocking the driver.
            let c = self.start_write_back(tree, idx)?;
            if !c.is_complete() {
                return Ok(Some(c));
            }
            self.settle(tree, idx, true)?;
        }
        let rel = relatives(self, idx);
        for &r in &rel {
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
        // Pin now so that making room for the fetch below cannot evict this replica.
        self.entries[idx].replicas[node].pins += 1;
        let r = self.fetch_for(tree, idx, node, mode);
        if r.is_err() {
            self.entries[idx].replicas[node].pins -= 1;
        }
        r?;
        let e = &mut self.entries[idx];
        if mode.writes() {
            for (n, rep) in e.replicas.iter_mut().enumerate() {
                rep.state = if n == node { ReplicaState::Owner } else { ReplicaState::Invalid };
            }
        } else if !e.replicas[node].valid() {
            e.replicas[node].state = ReplicaState::Shared;
        }
        normalize(e);
        e.replicas[node].last_use = tick();
        Ok(None)
    }

    fn fetch_for(&mut self, tree: &Arc<Tree>, idx: usize, node: usize, mode: AccessMode) -> Result<()> {
        if !mode.reads() || self.entries[idx].replicas[node].valid() {
            return Ok(());
        }
        if node != 0 && !self.entries[idx].replicas[0].valid() {
            self.write_back(tree, idx)?;
        }
        let src = self.any_valid(idx, node).expect("invariant: a live entry has a valid replica");
        self.copy(tree, idx, src, node)?;
        self.entries[idx].replicas[node].state = ReplicaState::Shared;
        normalize(&mut self.entries[idx]);
        Ok(())
    }

    /// Unpin after a task used entry `idx` on `node`.
    pub(crate) fn release(&mut self, idx: usize, node: usize) {
        let r = &mut self.entries[idx].replicas[node];
        debug_assert!(r.pins > 0);
        r.pins -= 1;
        r.last_use = tick();
    }

    /// Forget the data of entries `which`: copies home in flight end first, device replicas
    /// are freed, and home becomes the only (Owner) replica without anything written to it.
    /// For a home being replaced by fresh memory whose content nobody will read.
    pub(crate) fn discard(&mut self, tree: &Arc<Tree>, which: &[usize]) -> Result<()> {
        for &i in which {
            self.settle(tree, i, true)?;
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
