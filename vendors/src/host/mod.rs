//! Host memory (memory node 0). Allocations are zeroed, 64-byte aligned, and copies are
//! synchronous `memcpy`s.

use crate::{Buffer, Completion, Device, DeviceError, DeviceKind, Endpoint, Rect};
use std::alloc::{Layout, alloc_zeroed, dealloc};

pub const ALIGN: usize = 64;

#[derive(Debug, Default)]
pub struct HostDevice;

pub(crate) fn host_alloc(len: usize) -> Result<Buffer, DeviceError> {
    let layout = Layout::from_size_align(len.max(1), ALIGN).map_err(|_| DeviceError::OutOfMemory(len))?;
    // SAFETY: the layout has non-zero size.
    let p = unsafe { alloc_zeroed(layout) };
    if p.is_null() {
        return Err(DeviceError::OutOfMemory(len));
    }
    Ok(Buffer { addr: p as usize, len })
}

pub(crate) fn host_free(buf: Buffer) {
    let layout = Layout::from_size_align(buf.len.max(1), ALIGN).expect("invariant: layout was valid at alloc");
    // SAFETY: `buf` came from `host_alloc` with this layout and is freed once (core's contract).
    unsafe { dealloc(buf.addr as *mut u8, layout) };
}

pub(crate) fn endpoint_ptr(e: Endpoint) -> *mut u8 {
    match e {
        Endpoint::Host(p) => p,
        Endpoint::Device(b, off) => (b.addr + off) as *mut u8,
    }
}

impl Device for HostDevice {
    fn name(&self) -> &str {
        "host"
    }
    fn kind(&self) -> DeviceKind {
        DeviceKind::Host
    }
    fn memory_size(&self) -> Option<usize> {
        None
    }
    fn alloc(&self, len: usize) -> Result<Buffer, DeviceError> {
        host_alloc(len)
    }
    fn free(&self, buf: Buffer) {
        host_free(buf)
    }
    fn host_ptr(&self, buf: Buffer) -> Option<*mut u8> {
        Some(buf.addr as *mut u8)
    }
    unsafe fn copy(&self, src: Endpoint, dst: Endpoint, rect: Rect) -> Result<Completion, DeviceError> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { crate::copy_rect_host(endpoint_ptr(src), endpoint_ptr(dst), rect) };
        Ok(Completion::done())
    }
}
