//! Device memory: [`Device::alloc`](crate::Device::alloc) and `free` of an
//! [`OpenClDevice`].
//!
//! **Invariants**: a [`Buffer`] of this backend holds in `addr` a `cl_mem` with one
//! reference owned by whoever holds the `Buffer` (core), given back by `free`; `len` is
//! the size asked for (the `cl_mem` has at least one byte, since OpenCL refuses empty
//! buffers). Allocations are zero-filled before `alloc` returns, which also makes a lazy
//! allocator (PoCL, most GPU drivers) report running out of memory here rather than at a
//! later copy.

use super::conv::{is_out_of_memory, lost};
use super::device::OpenClDevice;
use super::result as r;
use super::safe::{Event, Mem};
use super::sys::cl_mem;
use crate::{Buffer, DeviceError};
use std::sync::atomic::Ordering;

impl OpenClDevice {
    pub(crate) fn alloc_zeroed(&self, len: usize) -> Result<Buffer, DeviceError> {
        let size = len.max(1);
        let oom_or_lost = |call: &'static str| move |e| if is_out_of_memory(e) { DeviceError::OutOfMemory(len) } else { lost(call, e) };
        let mem = Mem::new(&self.context, size).map_err(oom_or_lost("clCreateBuffer"))?;
        // The widest power-of-two pattern (at most 128 bytes, the spec's limit) dividing the size.
        let pattern = [0u8; 128];
        let width = 1usize << size.trailing_zeros().min(7);
        let submitting = self.lock_submissions();
        // SAFETY: queue and buffer are live; the pattern is copied by the call.
        let fill = unsafe { r::enqueue_fill_buffer(self.transfer.as_raw(), mem.as_raw(), &pattern[..width], 0, size, &[]) };
        let _ = self.transfer.flush();
        drop(submitting);
        match fill {
            // SAFETY: a new event whose one reference we own.
            Ok(ev) => unsafe { Event::from_raw(ev) }.wait().map_err(oom_or_lost("clEnqueueFillBuffer"))?,
            Err(_) => {
                // OpenCL 1.1 has no fill: write zeros, blocking (the host vector must live).
                let zeros = vec![0u8; size];
                let submitting = self.lock_submissions();
                // SAFETY: `zeros` outlives the wait below.
                let ev = unsafe { r::enqueue_write_buffer(self.transfer.as_raw(), mem.as_raw(), 0, size, zeros.as_ptr().cast(), &[]) }
                    .map_err(oom_or_lost("clEnqueueWriteBuffer"))?;
                let _ = self.transfer.flush();
                drop(submitting);
                // SAFETY: a new event whose one reference we own.
                unsafe { Event::from_raw(ev) }.wait().map_err(oom_or_lost("clEnqueueWriteBuffer"))?;
            }
        }
        self.allocated.fetch_add(len, Ordering::Relaxed);
        Ok(Buffer { addr: mem.into_raw() as usize, len })
    }

    pub(crate) fn release(&self, buf: Buffer) {
        if buf.addr == 0 {
            unreachable!("core freed a null OpenCL buffer");
        }
        self.allocated.fetch_sub(buf.len, Ordering::Relaxed);
        // SAFETY: `buf` came from `alloc_zeroed` (core's contract), which gave its holder
        // the one reference we release here.
        drop(unsafe { Mem::from_raw(buf.addr as cl_mem) });
    }
}

/// The `cl_mem` of a buffer of this backend (see the module doc), for kernel arguments.
pub fn raw_mem(buf: Buffer) -> cl_mem {
    buf.addr as cl_mem
}
