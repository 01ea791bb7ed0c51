//! Device backends of Weft, blind to tasks and schedulers.
//!
//! **Owns**: device discovery, memory allocation on a device, and copies between a
//! device's memory and host memory (or between two buffers the device can address),
//! with completion events.
//! **Does not own**: coherence (which replica is valid), scheduling, or deciding when
//! to copy: that is `weft-core`'s job. Backends validate little; core validates.
//!
//! Backends:
//! * [`host`]: plain host memory (memory node 0).
//! * [`null`]: a simulated device whose memory is host RAM that it allocates
//!   separately and whose copies really move bytes, on its own copy thread, so
//!   a coherence bug in core shows up as a wrong result (like wgpu-hal's `noop`).
//!
//! * [`opencl`] (Cargo feature `opencl`, on by default): every device of every OpenCL
//!   vendor, loaded at run time (no link-time dependency on `libOpenCL`).
//! * [`cuda`] (Cargo feature `cuda`, on by default): every NVIDIA GPU through the CUDA
//!   driver API (cudarc), with NVRTC kernels and cuBLAS, loaded at run time (no
//!   link-time dependency on `libcuda`, `libnvrtc` or `libcublas`).
#![warn(unsafe_op_in_unsafe_fn)]

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod host;
pub mod null;
#[cfg(feature = "opencl")]
pub mod opencl;

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};

/// What kind of device a backend drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// Host RAM, addressed by CPU workers.
    Host,
    /// Simulated device: separate host allocations, real copies.
    Null,
    /// A device of an OpenCL vendor (its memory reached only by copies).
    OpenCl,
    /// An NVIDIA GPU driven through CUDA (its memory reached only by copies).
    Cuda,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Host => "host",
            DeviceKind::Null => "null",
            DeviceKind::OpenCl => "opencl",
            DeviceKind::Cuda => "cuda",
        })
    }
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DeviceError {
    #[error("out of device memory allocating {0} bytes")]
    OutOfMemory(usize),
    #[error("device lost: {0}")]
    Lost(String),
}

/// A region of device memory. `addr` is opaque to core: a host address for host-addressable
/// backends, a device handle for others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    pub addr: usize,
    pub len: usize,
}

/// A 3-D strided rectangle of bytes, as in `clEnqueueCopyBufferRect`: `region[0]` bytes per
/// row, `region[1]` rows, `region[2]` slices; pitches in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub region: [usize; 3],
    pub src_pitch: [usize; 2],
    pub dst_pitch: [usize; 2],
}

impl Rect {
    /// A contiguous run of `len` bytes.
    pub fn linear(len: usize) -> Rect {
        Rect { region: [len, 1, 1], src_pitch: [len, len], dst_pitch: [len, len] }
    }

    /// Total bytes moved.
    pub fn bytes(&self) -> usize {
        self.region.iter().product()
    }
}

/// One end of a copy: either host memory or a buffer of the copying device, plus a byte offset.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint {
    Host(*mut u8),
    Device(Buffer, usize),
}

// SAFETY: an Endpoint is an address; whoever builds a copy request guarantees (see
// `Device::copy`) that the memory stays valid and unaliased until the copy completes.
unsafe impl Send for Endpoint {}

/// Completion of an asynchronous operation: wait on it or poll it.
#[derive(Clone, Debug, Default)]
pub struct Completion(Arc<CompletionInner>);

#[derive(Debug, Default)]
struct CompletionInner {
    state: Mutex<Slot>,
    cv: Condvar,
    /// `state.result` without the lock: [`PENDING`], [`SUCCEEDED`] or [`FAILED`]. A driver
    /// polls and retires every task of a batch of launches through one completion, and the
    /// lock each time was two atomic read-modify-writes on a line the completing thread
    /// also writes.
    outcome: std::sync::atomic::AtomicU8,
}

const PENDING: u8 = 0;
const SUCCEEDED: u8 = 1;
const FAILED: u8 = 2;

/// A completion's result, and how many threads sleep on its condition variable: `complete`
/// notifies only when one does (a notification is a system call even with no one to wake,
/// and most completions are polled by a driver that is busy, not waited on).
#[derive(Debug, Default)]
struct Slot {
    result: Option<Result<(), DeviceError>>,
    waiters: usize,
    /// A thread parked until this completes or something else wakes it
    /// ([`Completion::unpark_on_complete`]).
    parked: Option<std::thread::Thread>,
}

impl Completion {
    pub fn new() -> Completion {
        Completion::default()
    }

    /// An already completed operation.
    pub fn done() -> Completion {
        let c = Completion::new();
        c.complete(Ok(()));
        c
    }

    pub fn complete(&self, r: Result<(), DeviceError>) {
        let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = if r.is_ok() { SUCCEEDED } else { FAILED };
        s.result = Some(r);
        // Release, under the lock, after the result: a reader that sees the outcome without
        // the lock also sees what the operation wrote before it completed (and one that then
        // takes the lock, the result).
        self.0.outcome.store(outcome, std::sync::atomic::Ordering::Release);
        let parked = s.parked.take();
        // Waiters register under the lock before sleeping: none missed.
        let notify = s.waiters > 0;
        drop(s);
        if notify {
            self.0.cv.notify_all();
        }
        if let Some(t) = parked {
            t.unpark();
        }
    }

    pub fn is_complete(&self) -> bool {
        // Acquire: pairs with the Release store in `complete`.
        self.0.outcome.load(std::sync::atomic::Ordering::Acquire) != PENDING
    }

    pub fn wait(&self) -> Result<(), DeviceError> {
        // Acquire: as in `is_complete`. A failure's error is read under the lock.
        if self.0.outcome.load(std::sync::atomic::Ordering::Acquire) == SUCCEEDED {
            return Ok(());
        }
        let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = &s.result {
                return r.clone();
            }
            s.waiters += 1;
            s = self.0.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            s.waiters -= 1;
        }
    }

    /// Have `t` unparked when the operation completes (replacing any thread registered
    /// before); false, registering nothing, if it already has. Lets a thread sleep in
    /// `std::thread::park` until either this completes or something else unparks it (a
    /// device driver waiting for a long kernel that new work may also wake).
    pub fn unpark_on_complete(&self, t: std::thread::Thread) -> bool {
        let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.result.is_some() {
            return false;
        }
        s.parked = Some(t);
        true
    }

    /// Wait at most `timeout`; whether the operation is complete.
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.result.is_some() {
            return true;
        }
        s.waiters += 1;
        let (mut s, _) = self.0.cv.wait_timeout(s, timeout).unwrap_or_else(|e| e.into_inner());
        s.waiters -= 1;
        s.result.is_some()
    }
}

/// The object-safe device interface core's memory nodes and drivers use.
pub trait Device: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn kind(&self) -> DeviceKind;
    /// Total memory the device offers, if known.
    fn memory_size(&self) -> Option<usize>;
    /// Allocate `len` bytes (zero-filled).
    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError>;
    /// Free a buffer from `alloc`. Core guarantees no copy is in flight on it.
    fn free(&self, buf: Buffer);
    /// Host address of a buffer, for devices whose memory CPU code can address.
    fn host_ptr(&self, buf: Buffer) -> Option<*mut u8>;
    /// Start copying `rect` from `src` to `dst`, returning its completion.
    ///
    /// # Safety
    /// Both endpoints must be valid for the whole rectangle until the completion fires,
    /// `dst` must not be read or written by anyone else meanwhile, and `Device` endpoints
    /// must be buffers of this device.
    unsafe fn copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError>;
}

/// Copy a strided rectangle between host addresses.
///
/// # Safety
/// `src` and `dst` must be valid for every byte the rectangle touches, and must not overlap.
pub unsafe fn copy_rect_host(src: *const u8, dst: *mut u8, rect: Rect) {
    let [w, h, d] = rect.region;
    for z in 0..d {
        for y in 0..h {
            let so = z * rect.src_pitch[1] + y * rect.src_pitch[0];
            let doff = z * rect.dst_pitch[1] + y * rect.dst_pitch[0];
            // SAFETY: the caller guarantees both rows are in bounds and disjoint.
            unsafe { std::ptr::copy_nonoverlapping(src.add(so), dst.add(doff), w) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rect_copy_moves_only_the_rectangle() {
        // 3x2 rows out of a 4-wide source into a packed 3-wide destination.
        let src: Vec<u8> = (0..8).collect();
        let mut dst = vec![0u8; 6];
        let rect = Rect { region: [3, 2, 1], src_pitch: [4, 8], dst_pitch: [3, 6] };
        // SAFETY: both vectors cover the rectangle.
        unsafe { copy_rect_host(src.as_ptr(), dst.as_mut_ptr(), rect) };
        assert_eq!(dst, [0, 1, 2, 4, 5, 6]);
        assert_eq!(rect.bytes(), 6);
    }

    #[test]
    fn device_kinds_display_their_feature_names() {
        let names: Vec<String> =
            [DeviceKind::Host, DeviceKind::Null, DeviceKind::OpenCl, DeviceKind::Cuda].iter().map(|k| k.to_string()).collect();
        assert_eq!(names, ["host", "null", "opencl", "cuda"]);
    }

    #[test]
    fn completion_reports_its_result() {
        let c = Completion::new();
        assert!(!c.is_complete());
        let c2 = c.clone();
        let t = std::thread::spawn(move || c2.wait());
        c.complete(Err(DeviceError::Lost("x".into())));
        assert_eq!(t.join().unwrap(), Err(DeviceError::Lost("x".into())));
    }

    #[test]
    fn completion_unparks_the_registered_thread() {
        let c = Completion::new();
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            // Spurious wake-ups are allowed: park until the completion is seen.
            if c2.unpark_on_complete(std::thread::current()) {
                while !c2.is_complete() {
                    std::thread::park();
                }
            }
            assert!(!c2.unpark_on_complete(std::thread::current()), "already complete");
        });
        std::thread::sleep(std::time::Duration::from_millis(10));
        c.complete(Ok(()));
        t.join().unwrap();
    }
}
