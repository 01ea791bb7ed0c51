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
//!
//! Also [`fsutil`]: how every crate of Weft reads and writes its own files (the kernel cache
//! here, core's model files, the ICD's header directory). It sits in this crate, the bottom
//! of the dependency chain, because the kernel cache is here.
#![warn(unsafe_op_in_unsafe_fn)]

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod fsutil;
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
    /// When it completed: a device's task duration for the performance models is measured
    /// from it (the driver that retires the task may look much later).
    at: Option<std::time::Instant>,
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
        s.at = Some(std::time::Instant::now());
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

    /// When the operation completed (`None` while it has not).
    pub fn completed_at(&self) -> Option<std::time::Instant> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner()).at
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

/// Copy a strided rectangle between host addresses: a large one is split over several
/// threads ([`host_copy`]), since one core's `memcpy` moves far less than the
/// memory bus can (8 GB/s of 12 on the 2-core test machine; 6.7 GB/s on a 16-core Xeon
/// whose GPU's DMA reads at 11.5).
///
/// # Safety
/// `src` and `dst` must be valid for every byte the rectangle touches, and must not overlap.
pub unsafe fn copy_rect_host(src: *const u8, dst: *mut u8, rect: Rect) {
    let [w, h, d] = rect.region;
    let rows = h * d;
    if rows == 0 || w == 0 {
        return;
    }
    // One contiguous run on both sides: split it by bytes.
    let contiguous = |pitch: [usize; 2]| (h == 1 || pitch[0] == w) && (d == 1 || pitch[1] == w * h);
    if contiguous(rect.src_pitch) && contiguous(rect.dst_pitch) {
        // SAFETY: the caller's contract, for the `w * h * d` bytes the rectangle is.
        return unsafe { copy_host(src, dst, w * rows) };
    }
    let (s, t) = (src as usize, dst as usize);
    // Rows `from..to` (row `r` is row `r % h` of slice `r / h`).
    let copy_rows = move |from: usize, to: usize| {
        for r in from..to {
            let (z, y) = (r / h, r % h);
            let so = z * rect.src_pitch[1] + y * rect.src_pitch[0];
            let doff = z * rect.dst_pitch[1] + y * rect.dst_pitch[0];
            // SAFETY: the caller guarantees both rows are in bounds and disjoint.
            unsafe { std::ptr::copy_nonoverlapping((s + so) as *const u8, (t + doff) as *mut u8, w) };
        }
    };
    split(rows, w, copy_rows);
}

/// Copy `len` bytes between host addresses, over several threads when it is large (see
/// [`copy_rect_host`]).
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` bytes, and they must not overlap.
pub unsafe fn copy_host(src: *const u8, dst: *mut u8, len: usize) {
    let (s, t) = (src as usize, dst as usize);
    // Pieces of 4 KiB pages, so that no two threads write one page.
    const PAGE: usize = 4096;
    split(len.div_ceil(PAGE), PAGE, move |from, to| {
        let (a, b) = (from * PAGE, (to * PAGE).min(len));
        // SAFETY: `a..b` lies within the `len` bytes of the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping((s + a) as *const u8, (t + a) as *mut u8, b - a) };
    });
}

/// Bytes a host copy must reach before it is split, and the least each thread then copies:
/// a thread costs tens of microseconds to start, a 2 MiB piece a few hundred to copy.
const SPLIT_PIECE: usize = 2 << 20;

/// How large host copies are split ([`set_host_copy`]).
#[derive(Clone)]
pub struct HostCopy {
    /// Threads a copy is split over at most (1: never split).
    pub threads: usize,
    /// Where helper threads run. A helper inherits the CPU binding of the thread that
    /// starts it, often a worker bound to one core, where it would only take turns with
    /// that thread.
    pub placement: Option<Arc<dyn CopyPlacement>>,
}

/// Places the helper threads of a split host copy (a runtime knows its cores and binding).
pub trait CopyPlacement: Send + Sync {
    /// On the thread splitting a copy: the processing unit (OS index) it is bound to, if any.
    fn caller(&self) -> Option<usize>;
    /// First thing on helper `i` (from 1) of a caller bound to `caller`.
    fn place_helper(&self, caller: usize, i: usize);
}

static HOST_COPY: Mutex<Option<HostCopy>> = Mutex::new(None);

/// Set how large host copies are split (a runtime does, knowing its cores and binding).
/// `WEFT_COPY_THREADS`, if set, overrides `threads`.
pub fn set_host_copy(mut c: HostCopy) {
    if let Some(n) = env_copy_threads() {
        c.threads = n;
    }
    *HOST_COPY.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
}

fn env_copy_threads() -> Option<usize> {
    std::env::var("WEFT_COPY_THREADS").ok().and_then(|v| v.trim().parse::<usize>().ok()).map(|n| n.clamp(1, 64))
}

/// How host copies are split now: as set, else `WEFT_COPY_THREADS` or the cores the
/// calling thread may run on, at most 8 (memory bandwidth is spent long before that).
pub fn host_copy() -> HostCopy {
    if let Some(c) = HOST_COPY.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return c.clone();
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    HostCopy { threads: env_copy_threads().unwrap_or(cores.min(8)), placement: None }
}

/// Run `f(from, to)` over `0..units` (each unit `unit` bytes of copying) in contiguous
/// ranges, on this thread and up to `threads - 1` scoped helpers ([`host_copy`]), enough
/// that each copies at least [`SPLIT_PIECE`] bytes. A helper that cannot be started leaves
/// its range to this thread.
fn split(units: usize, unit: usize, f: impl Fn(usize, usize) + Copy + Send) {
    // One range whatever the setting (`split_over` gives fewer than two pieces): the
    // common small copy does not take the setting's lock.
    if units.saturating_mul(unit) < 2 * SPLIT_PIECE {
        return f(0, units);
    }
    split_over(units, unit, &host_copy(), f);
}

/// [`split`] as `c` says.
fn split_over(units: usize, unit: usize, c: &HostCopy, f: impl Fn(usize, usize) + Copy + Send) {
    let threads = c.threads;
    let bytes = units.saturating_mul(unit);
    let k = (bytes / SPLIT_PIECE).clamp(1, threads.max(1)).min(units.max(1));
    if k == 1 {
        return f(0, units);
    }
    let per = units.div_ceil(k);
    std::thread::scope(|sc| {
        let mut mine = vec![(0, per.min(units))];
        let caller = c.placement.as_ref().and_then(|p| p.caller());
        for i in 1..k {
            let (from, to) = (i * per, ((i + 1) * per).min(units));
            if from >= to {
                break;
            }
            let place = caller.zip(c.placement.clone());
            let helper = move || {
                if let Some((at, p)) = place {
                    p.place_helper(at, i);
                }
                f(from, to)
            };
            if std::thread::Builder::new().name("weft-copy".into()).spawn_scoped(sc, helper).is_err() {
                mine.push((from, to));
            }
        }
        for (from, to) in mine {
            f(from, to);
        }
    });
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

    /// A byte pattern that differs between neighbouring pages and pieces.
    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ (i >> 12) as u8).collect()
    }

    #[test]
    fn large_copies_move_every_byte() {
        // Not a multiple of the page or the piece: the last range is short.
        let n = 9 * SPLIT_PIECE / 2 + 123;
        let src = pattern(n);
        let mut dst = vec![0u8; n];
        // SAFETY: both vectors hold `n` bytes.
        unsafe { copy_host(src.as_ptr(), dst.as_mut_ptr(), n) };
        assert!(dst == src, "copy_host lost or moved bytes");
        // Empty and tiny copies.
        // SAFETY: as above.
        unsafe { copy_host(src.as_ptr(), dst.as_mut_ptr(), 0) };
        let mut small = [0u8; 3];
        // SAFETY: 3 bytes each.
        unsafe { copy_host(src.as_ptr(), small.as_mut_ptr(), 3) };
        assert_eq!(small, src[..3]);
    }

    #[test]
    fn large_copies_are_split_into_disjoint_ranges_over_threads() {
        let seen = Mutex::new(Vec::new());
        let units = 10 * SPLIT_PIECE / 4096 + 7;
        let record = |from: usize, to: usize| seen.lock().unwrap().push((from, to, std::thread::current().id()));
        /// Says the caller is bound to PU 7 and records where helpers were placed.
        struct Spy(Mutex<Vec<(usize, usize)>>);
        impl CopyPlacement for Spy {
            fn caller(&self) -> Option<usize> {
                Some(7)
            }
            fn place_helper(&self, caller: usize, i: usize) {
                self.0.lock().unwrap().push((caller, i));
            }
        }
        let spy = Arc::new(Spy(Mutex::new(Vec::new())));
        let c = HostCopy { threads: 4, placement: Some(spy.clone()) };
        split_over(units, 4096, &c, record);
        let mut placed = spy.0.lock().unwrap().clone();
        placed.sort();
        assert_eq!(placed, [(7, 1), (7, 2), (7, 3)], "each helper is placed once, knowing its caller's PU");
        let mut got = seen.into_inner().unwrap();
        got.sort_by_key(|r| r.0);
        assert_eq!(got.len(), 4, "10 pieces' worth over at most 4 threads: {got:?}");
        let mut at = 0;
        for (from, to, _) in &got {
            assert_eq!(*from, at, "ranges must tile 0..units: {got:?}");
            assert!(to > from);
            at = *to;
        }
        assert_eq!(at, units);
        let threads: std::collections::HashSet<_> = got.iter().map(|r| r.2).collect();
        assert_eq!(threads.len(), 4, "each range on its own thread");
        // Below one piece: one range, on the calling thread.
        let one = Mutex::new(Vec::new());
        split_over(SPLIT_PIECE / 4096 - 1, 4096, &c, |a, b| one.lock().unwrap().push((a, b, std::thread::current().id())));
        assert_eq!(one.into_inner().unwrap(), [(0, SPLIT_PIECE / 4096 - 1, std::thread::current().id())]);
    }

    #[test]
    fn large_strided_rects_move_only_the_rectangle() {
        // 2 slices of 3000 rows of 1000 bytes, out of 1024-byte rows, packed: 6 MB, split by rows.
        let (w, h, d) = (1000, 3000, 2);
        let src = pattern(1024 * h * d);
        let mut dst = vec![0u8; w * h * d + 1];
        let rect = Rect { region: [w, h, d], src_pitch: [1024, 1024 * h], dst_pitch: [w, w * h] };
        // SAFETY: both vectors cover the rectangle.
        unsafe { copy_rect_host(src.as_ptr(), dst.as_mut_ptr(), rect) };
        let want: Vec<u8> = (0..h * d).flat_map(|r| src[r * 1024..r * 1024 + w].iter().copied()).collect();
        assert!(dst[..w * h * d] == want[..], "rows lost or moved");
        assert_eq!(dst[w * h * d], 0, "a byte past the rectangle was written");
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
