//! Device memory of a [`CudaDevice`], page-locked host memory, and the staging pool.
//!
//! **Owns**: `cuMemAlloc`/`cuMemFree` of [`Buffer`]s, [`PinnedHost`] allocations, and the
//! per-device pool of pinned staging buffers that copies from or to pageable memory go
//! through (see `queue`).
//! **Does not own**: when to allocate or evict (core's memory manager).
//!
//! A [`Buffer`] of this backend is `{ addr: CUdeviceptr, len }`: the device address of a
//! `cuMemAlloc` allocation of `max(len, 1)` bytes (the driver refuses empty ones),
//! zero-filled before `alloc` returns. The zeroing runs on the legacy default stream,
//! which the backend's non-blocking streams do not wait for, and `alloc` waits for it, so
//! later work on any lane sees zeros.
//!
//! Staging buffers come in size classes (powers of two from 64 KiB) and are cached for
//! reuse up to [`STAGING_CACHE`] bytes per device; a larger request is allocated for the
//! one copy and freed after it. Pinned memory is a scarce system resource, hence the cap.

use super::conv::{is_out_of_memory, lost};
use super::device::CudaDevice;
use crate::{Buffer, DeviceError};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, DriverError, result as dr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Smallest staging buffer.
const STAGING_MIN: usize = 64 << 10;
/// Bytes of staging buffers a device keeps for reuse.
pub const STAGING_CACHE: usize = 256 << 20;
/// `CU_MEMHOSTALLOC_PORTABLE`: pinned for every context, not only the allocating one.
const HOST_ALLOC_PORTABLE: u32 = 0x01;

fn oom_or_lost(call: &'static str, len: usize) -> impl Fn(DriverError) -> DeviceError {
    move |e| if is_out_of_memory(e) { DeviceError::OutOfMemory(len) } else { lost(call, e) }
}

impl CudaDevice {
    pub(crate) fn alloc_zeroed(&self, len: usize) -> Result<Buffer, DeviceError> {
        let size = len.max(1);
        self.ctx.bind_to_thread().map_err(|e| lost("cuCtxSetCurrent", e))?;
        // SAFETY: the context is current.
        let ptr = unsafe { dr::malloc_sync(size) }.map_err(oom_or_lost("cuMemAlloc", len))?;
        let null = std::ptr::null_mut();
        // SAFETY: `ptr` holds `size` bytes; the null (legacy) stream is always valid.
        let zeroed = unsafe { dr::memset_d8_async(ptr, 0, size, null) }.and_then(|()| unsafe { dr::stream::synchronize(null) });
        if let Err(e) = zeroed {
            // SAFETY: ours, unused.
            let _ = unsafe { dr::free_sync(ptr) };
            return Err(oom_or_lost("cuMemsetD8Async", len)(e));
        }
        self.allocated.fetch_add(len, Ordering::Relaxed);
        Ok(Buffer { addr: ptr as usize, len })
    }

    pub(crate) fn release(&self, buf: Buffer) {
        if buf.addr == 0 {
            unreachable!("core freed a null CUDA buffer");
        }
        self.allocated.fetch_sub(buf.len, Ordering::Relaxed);
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `buf` came from `alloc_zeroed` (core's contract: freed once, nothing in
        // flight on it). A failure can only be an earlier sticky error, which the next
        // submission reports.
        let _ = unsafe { dr::free_sync(buf.addr as CUdeviceptr) };
    }

    /// `len` bytes (zero-filled) of page-locked host memory, portable to every context:
    /// copies between it and any CUDA device skip staging and run fully asynchronously.
    pub fn alloc_pinned(&self, len: usize) -> Result<PinnedHost, DeviceError> {
        self.ctx.bind_to_thread().map_err(|e| lost("cuCtxSetCurrent", e))?;
        // SAFETY: the context is current.
        let ptr = unsafe { dr::malloc_host(len.max(1), HOST_ALLOC_PORTABLE) }.map_err(oom_or_lost("cuMemHostAlloc", len))?;
        let ptr = ptr.cast::<u8>();
        // SAFETY: a fresh allocation of at least `len` bytes.
        unsafe { ptr.write_bytes(0, len) };
        Ok(PinnedHost { ptr, len, ctx: self.ctx.clone() })
    }
}

/// Page-locked host memory from [`CudaDevice::alloc_pinned`], freed on drop.
pub struct PinnedHost {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: plain owned host memory; the context handle is thread-safe.
unsafe impl Send for PinnedHost {}
// SAFETY: shared access only reads.
unsafe impl Sync for PinnedHost {}

impl PinnedHost {
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialized bytes (zeroed at allocation), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl std::fmt::Debug for PinnedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedHost").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: ours, from cuMemHostAlloc, freed once.
        let _ = unsafe { dr::free_host(self.ptr.cast()) };
    }
}

/// A pinned staging buffer of the pool (see the module doc).
pub(crate) struct Staging {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain owned host memory, used by one thread at a time.
unsafe impl Send for Staging {}

impl Staging {
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

/// The size class that serves a request of `n` bytes.
fn size_class(n: usize) -> usize {
    if n <= STAGING_CACHE { n.next_power_of_two().max(STAGING_MIN) } else { n.div_ceil(STAGING_MIN) * STAGING_MIN }
}

/// Pinned staging buffers of one device (see the module doc).
pub(crate) struct StagingPool {
    ctx: Arc<CudaContext>,
    free: Mutex<Vec<Staging>>,
}

impl StagingPool {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Arc<StagingPool> {
        Arc::new(StagingPool { ctx: ctx.clone(), free: Mutex::new(Vec::new()) })
    }

    /// A buffer of at least `n` bytes, or `None` if no pinned memory can be had.
    pub(crate) fn take(&self, n: usize) -> Option<Staging> {
        let class = size_class(n);
        {
            let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = free.iter().position(|s| s.len == class) {
                return Some(free.swap_remove(i));
            }
        }
        self.ctx.bind_to_thread().ok()?;
        // SAFETY: the context is current.
        let ptr = unsafe { dr::malloc_host(class, 0) }.ok()?;
        Some(Staging { ptr: ptr.cast(), len: class })
    }

    fn give_back(&self, s: Staging) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.iter().map(|s| s.len).sum::<usize>() + s.len <= STAGING_CACHE {
            free.push(s);
            return;
        }
        drop(free);
        Self::free_one(&self.ctx, s);
    }

    fn free_one(ctx: &CudaContext, s: Staging) {
        let _ = ctx.bind_to_thread();
        // SAFETY: from cuMemHostAlloc, no longer used by any copy.
        let _ = unsafe { dr::free_host(s.ptr.cast()) };
    }

    /// A function that returns `s` to the pool, for a copy's host step.
    pub(crate) fn releaser(self: &Arc<Self>, s: Staging) -> impl FnOnce() + Send + 'static {
        let pool = self.clone();
        move || pool.give_back(s)
    }

    /// Bytes cached for reuse.
    pub(crate) fn cached(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|s| s.len).sum()
    }
}

impl Drop for StagingPool {
    fn drop(&mut self) {
        for s in self.free.get_mut().unwrap_or_else(|e| e.into_inner()).drain(..) {
            Self::free_one(&self.ctx, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_size_classes() {
        assert_eq!(size_class(1), STAGING_MIN);
        assert_eq!(size_class(STAGING_MIN + 1), 2 * STAGING_MIN);
        assert_eq!(size_class(3 << 20), 4 << 20);
        assert_eq!(size_class(STAGING_CACHE), STAGING_CACHE);
        // Beyond the cache: rounded to the minimum size, not doubled.
        assert_eq!(size_class(STAGING_CACHE + 1), STAGING_CACHE + STAGING_MIN);
    }
}
