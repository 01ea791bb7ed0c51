//! Memory nodes: one per memory space (node 0 is host RAM, then one per device).
//!
//! **Owns**: allocating and freeing replica buffers through the node's device, an
//! allocation cache (freed buffers kept by size for reuse), the node's memory limit, and
//! the list of replicas resident on the node that eviction picks from.
//! **Does not own**: replica states; eviction asks `data::coherence` to write a victim back.
//!
//! Accounting: `used` counts every byte allocated from the device for replicas, including
//! buffers parked in the cache. A limit is enforced by first dropping the cache, then
//! evicting least-recently-used unpinned replicas. The cache itself holds at most a quarter
//! of the limit, or [`CACHE_CAP`] bytes on a node without one (a program that allocates
//! many sizes must not keep them all: on PoCL's CPU devices device memory is host RAM), and
//! a failed device allocation drops the cache and tries once more.

use crate::error::{Error, Result};
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, Weak, lock};
use std::collections::HashMap;
use weft_vendors::{Buffer, Device};

pub(crate) type TreeKey = (u64, usize);

/// Bytes the allocation cache of a node without a memory limit may hold.
pub const CACHE_CAP: usize = 256 << 20;

pub struct MemoryNode {
    pub id: usize,
    pub device: Arc<dyn Device>,
    pub limit: Option<usize>,
    used: AtomicUsize,
    cache: Mutex<HashMap<usize, Vec<Buffer>>>,
    /// Bytes parked in `cache` (changed under its lock).
    cached: AtomicUsize,
    /// Replicas allocated on this node: (tree id, entry index) → tree.
    pub(crate) resident: Mutex<HashMap<TreeKey, Weak<crate::data::Tree>>>,
    pub(crate) evictions: AtomicUsize,
    /// Bytes received from each node (the last slot counts every node from it on).
    bytes_from: [AtomicU64; MAX_FROM],
    /// The runtime's trace (`WEFT_TRACE`), set once at start: copies to this node record
    /// themselves there. Unset, a copy pays one load of it.
    pub(crate) trace: std::sync::OnceLock<Arc<crate::trace::Tracer>>,
    /// The channel of this node's copy thread, started on first use (`copy_later`).
    copier: std::sync::OnceLock<Option<Mutex<std::sync::mpsc::Sender<crate::data::coherence::CopyJob>>>>,
}

/// Source nodes counted apart in `MemoryNode::bytes_from`.
const MAX_FROM: usize = 16;

/// A monotonic clock for least-recently-used ordering.
pub(crate) static TICK: AtomicU64 = AtomicU64::new(1);

pub(crate) fn tick() -> u64 {
    // Relaxed: only an approximate order is needed.
    TICK.fetch_add(1, Ordering::Relaxed)
}

impl MemoryNode {
    pub fn new(id: usize, device: Arc<dyn Device>, limit: Option<usize>) -> MemoryNode {
        MemoryNode {
            id,
            device,
            limit,
            used: AtomicUsize::new(0),
            cache: Mutex::new(HashMap::new()),
            cached: AtomicUsize::new(0),
            resident: Mutex::new(HashMap::new()),
            evictions: AtomicUsize::new(0),
            bytes_from: std::array::from_fn(|_| AtomicU64::new(0)),
            trace: std::sync::OnceLock::new(),
            copier: std::sync::OnceLock::new(),
        }
    }

    /// Run `job`, a copy out of this node's device, on a thread of the node's own, so that
    /// whoever needs it need not wait meanwhile (a device driver runs other tasks; see
    /// `data::coherence`). Its copies run one after another, as the device's own queue
    /// would run them. The thread ends with the node (its channel closes); if it cannot be
    /// started, the copy runs here.
    pub(crate) fn copy_later(&self, job: crate::data::coherence::CopyJob) {
        let tx = self.copier.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<crate::data::coherence::CopyJob>();
            std::thread::Builder::new()
                .name(format!("weft-copy{}", self.id))
                .spawn(move || {
                    for job in rx {
                        job.run();
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        });
        match tx {
            Some(tx) => {
                // A send fails only if the thread is gone: the job comes back in the error.
                if let Err(e) = crate::sync::lock(tx).send(job) {
                    e.0.run();
                }
            }
            None => job.run(),
        }
    }

    /// `bytes` arrived from node `src`.
    pub(crate) fn received(&self, src: usize, bytes: usize) {
        self.bytes_from[src.min(MAX_FROM - 1)].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes received from node `src` so far (nodes from 15 on are counted together).
    pub fn bytes_from(&self, src: usize) -> u64 {
        self.bytes_from[src.min(MAX_FROM - 1)].load(Ordering::Relaxed)
    }

    /// Bytes received from other nodes so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_from.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Replicas currently allocated on this node.
    pub fn resident_count(&self) -> usize {
        lock(&self.resident).len()
    }

    pub fn evictions(&self) -> usize {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Bytes parked in the allocation cache.
    pub fn cached(&self) -> usize {
        self.cached.load(Ordering::Relaxed)
    }

    /// Take a cached buffer of exactly `len` bytes, if any.
    pub(crate) fn take_cached(&self, len: usize) -> Option<Buffer> {
        let b = lock(&self.cache).get_mut(&len).and_then(|v| v.pop());
        if b.is_some() {
            self.cached.fetch_sub(len, Ordering::Relaxed);
        }
        b
    }

    /// Whether `len` more bytes fit under the limit.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.limit.is_none_or(|l| self.used() + len <= l)
    }

    /// Free every cached buffer; returns the bytes released.
    pub(crate) fn drain_cache(&self) -> usize {
        let bufs: Vec<Buffer> = {
            let mut c = lock(&self.cache);
            self.cached.store(0, Ordering::Relaxed);
            c.drain().flat_map(|(_, v)| v).collect()
        };
        let mut n = 0;
        for b in bufs {
            n += b.len;
            self.used.fetch_sub(b.len, Ordering::Relaxed);
            self.device.free(b);
        }
        n
    }

    /// Allocate from the device, without eviction (the caller made room).
    pub(crate) fn alloc_raw(&self, len: usize) -> Result<Buffer> {
        if let Some(b) = self.take_cached(len) {
            return Ok(b);
        }
        if !self.fits(len) {
            self.drain_cache();
            if !self.fits(len) {
                return Err(Error::OutOfMemory { node: self.id, bytes: len });
            }
        }
        let b = match self.device.alloc(len) {
            Ok(b) => b,
            // The device may be short of what the cache holds: give it back and retry once.
            Err(_) if self.drain_cache() > 0 => self.device.alloc(len).map_err(|_| Error::OutOfMemory { node: self.id, bytes: len })?,
            Err(_) => return Err(Error::OutOfMemory { node: self.id, bytes: len }),
        };
        self.used.fetch_add(len, Ordering::Relaxed);
        Ok(b)
    }

    /// Return a buffer to the cache (or to the device when the node is under pressure).
    pub(crate) fn release(&self, b: Buffer) {
        let cap = self.limit.map_or(CACHE_CAP, |l| l / 4);
        if self.limit.is_none_or(|l| self.used() <= l / 2) {
            let mut c = lock(&self.cache);
            if self.cached() + b.len <= cap {
                self.cached.fetch_add(b.len, Ordering::Relaxed);
                c.entry(b.len).or_default().push(b);
                return;
            }
        }
        self.used.fetch_sub(b.len, Ordering::Relaxed);
        self.device.free(b);
    }

    /// Free a buffer to the device immediately (eviction).
    pub(crate) fn free_now(&self, b: Buffer) {
        self.used.fetch_sub(b.len, Ordering::Relaxed);
        self.device.free(b);
    }

    pub(crate) fn note_resident(&self, key: TreeKey, tree: &Arc<crate::data::Tree>) {
        lock(&self.resident).insert(key, Arc::downgrade(tree));
    }

    pub(crate) fn forget_resident(&self, key: TreeKey) {
        lock(&self.resident).remove(&key);
    }
}

impl Drop for MemoryNode {
    fn drop(&mut self) {
        self.drain_cache();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocation_cache_keeps_at_most_its_cap_and_reuses_sizes() {
        let node = MemoryNode::new(1, Arc::new(weft_vendors::null::NullDevice::new(0)), None);
        // 40 distinct sizes of 8 MiB and more: 320+ MiB released, at most CACHE_CAP kept.
        let bufs: Vec<Buffer> = (0..40).map(|i| node.alloc_raw((8 << 20) + i * 4096).unwrap()).collect();
        let total: usize = bufs.iter().map(|b| b.len).sum();
        for b in bufs {
            node.release(b);
        }
        assert!(node.cached() <= CACHE_CAP && node.cached() > 0, "cached {}", node.cached());
        assert_eq!(node.used(), node.cached(), "every released buffer not cached went back to the device");
        assert!(total > CACHE_CAP);
        // A cached size is reused without a new allocation.
        let before = node.used();
        let b = node.alloc_raw(8 << 20).unwrap();
        assert_eq!(node.used(), before);
        node.release(b);
        // With a limit, the cache holds at most a quarter of it.
        let node = MemoryNode::new(1, Arc::new(weft_vendors::null::NullDevice::new(0)), Some(64 << 20));
        let bufs: Vec<Buffer> = (0..8).map(|i| node.alloc_raw((4 << 20) + i * 4096).unwrap()).collect();
        for b in bufs {
            node.release(b);
        }
        assert!(node.cached() <= 16 << 20, "cached {}", node.cached());
    }
}
