//! The null device: a simulated accelerator for tests.
//!
//! Its memory is host RAM, but allocated separately from node 0's, and every copy really
//! moves bytes, asynchronously, on the device's own copy thread (a stand-in for a DMA
//! engine). Core therefore has to get coherence right for results to be right.

use crate::host::{endpoint_ptr, host_alloc, host_free};
use crate::{Buffer, Completion, Device, DeviceError, DeviceKind, Endpoint, Rect};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

struct CopyJob {
    src: Endpoint,
    dst: Endpoint,
    rect: Rect,
    done: Completion,
}

pub struct NullDevice {
    name: String,
    jobs: Mutex<Option<Sender<CopyJob>>>,
    engine: Mutex<Option<JoinHandle<()>>>,
    allocated: AtomicUsize,
    /// Bytes copied so far (for tests and stats).
    copied: AtomicUsize,
}

impl NullDevice {
    pub fn new(index: usize) -> NullDevice {
        let (tx, rx) = channel::<CopyJob>();
        let engine = std::thread::Builder::new()
            .name(format!("weft-null{index}-dma"))
            .spawn(move || {
                for job in rx {
                    // SAFETY: `Device::copy`'s caller keeps both ends valid and `dst`
                    // unaliased until `done` completes, which happens after this copy.
                    unsafe { crate::copy_rect_host(endpoint_ptr(job.src), endpoint_ptr(job.dst), job.rect) };
                    job.done.complete(Ok(()));
                }
            })
            .expect("spawning the null device's copy thread");
        NullDevice {
            name: format!("null{index}"),
            jobs: Mutex::new(Some(tx)),
            engine: Mutex::new(Some(engine)),
            allocated: AtomicUsize::new(0),
            copied: AtomicUsize::new(0),
        }
    }

    /// Bytes currently allocated on the device.
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Bytes copied to or from the device so far.
    pub fn copied(&self) -> usize {
        self.copied.load(Ordering::Relaxed)
    }
}

impl Drop for NullDevice {
    fn drop(&mut self) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = self.engine.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl Device for NullDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> DeviceKind {
        DeviceKind::Null
    }
    fn memory_size(&self) -> Option<usize> {
        None
    }
    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
        let b = host_alloc(len)?;
        self.allocated.fetch_add(len, Ordering::Relaxed);
        Ok(b)
    }
    fn free(&self, buf: Buffer) {
        self.allocated.fetch_sub(buf.len, Ordering::Relaxed);
        host_free(buf)
    }
    fn host_ptr(&self, buf: Buffer) -> Option<*mut u8> {
        Some(buf.addr as *mut u8)
    }
    unsafe fn copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        let done = Completion::new();
        self.copied.fetch_add(rect.bytes(), Ordering::Relaxed);
        let tx = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let tx = tx.as_ref().ok_or_else(|| DeviceError::Lost("device shut down".into()))?;
        tx.send(CopyJob { src, dst, rect, done: done.clone() }).map_err(|_| DeviceError::Lost("copy engine stopped".into()))?;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_really_move_bytes_asynchronously() {
        let d = NullDevice::new(0);
        let buf = d.alloc(16).unwrap();
        let src: Vec<u8> = (0..16).collect();
        // SAFETY: src lives until we waited; buf is the device's own.
        let c = unsafe { d.copy(Endpoint::Host(src.as_ptr() as *mut u8), Endpoint::Device(buf, 0), Rect::linear(16)) }.unwrap();
        c.wait().unwrap();
        let mut back = vec![0u8; 16];
        let c = unsafe { d.copy(Endpoint::Device(buf, 0), Endpoint::Host(back.as_mut_ptr()), Rect::linear(16)) }.unwrap();
        c.wait().unwrap();
        assert_eq!(back, src);
        assert_eq!(d.copied(), 32);
        assert_eq!(d.allocated(), 16);
        d.free(buf);
        assert_eq!(d.allocated(), 0);
    }
}
