//! The few fallible driver calls this backend needs that cudarc's own `result` layer does
//! not wrap: strided copies, blocking-sync events, pointer attributes, the driver version.
//! Each returns `Result<_, DriverError>`, like `cudarc::driver::result`.
//!
//! **Owns**: filling the driver's parameter structs (`CUDA_MEMCPY2D`, `CUDA_MEMCPY3D`)
//! from a `conv::Piece`. **Does not own**: lifetimes or the current context (callers bind the
//! context first; see `queue`).
//!
//! # Safety (of every `unsafe fn` here)
//! The driver library is loaded (callers probed it), the calling thread has the right
//! context current, handles are live, and host and device addresses are valid for every
//! byte the call touches until the work is complete.

use super::conv::Piece;
use cudarc::driver::DriverError;
use cudarc::driver::sys::{self, CUdeviceptr, CUevent, CUmemorytype, CUpointer_attribute, CUstream};
use std::ffi::c_void;
use std::mem::MaybeUninit;

/// One side of a copy: a host address or a device address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Host(*mut u8),
    Device(CUdeviceptr),
}

impl Side {
    fn at(self, off: usize) -> Side {
        match self {
            // `wrapping_add`: the address is not dereferenced here.
            Side::Host(p) => Side::Host(p.wrapping_add(off)),
            Side::Device(d) => Side::Device(d + off as CUdeviceptr),
        }
    }

    /// (memory type, host pointer, device pointer) for the copy structs.
    fn parts(self) -> (CUmemorytype, *mut c_void, CUdeviceptr) {
        match self {
            Side::Host(p) => (CUmemorytype::CU_MEMORYTYPE_HOST, p.cast(), 0),
            Side::Device(d) => (CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), d),
        }
    }
}

/// Enqueue one [`Piece`] of a copy from `src` to `dst` on `stream`.
///
/// # Safety
/// See the module doc.
pub(crate) unsafe fn memcpy_piece_async(piece: &Piece, src: Side, dst: Side, stream: CUstream) -> Result<(), DriverError> {
    match *piece {
        Piece::Linear { src: so, dst: doff, len } => {
            // SAFETY: forwarded contract.
            unsafe { memcpy_linear_async(src.at(so), dst.at(doff), len, stream) }
        }
        Piece::Rows { src: so, dst: doff, width, height, src_pitch, dst_pitch } => {
            let (src_type, src_host, src_dev) = src.at(so).parts();
            let (dst_type, dst_host, dst_dev) = dst.at(doff).parts();
            let p = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: src_type,
                srcHost: src_host.cast_const(),
                srcDevice: src_dev,
                srcArray: std::ptr::null_mut(),
                srcPitch: src_pitch,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: dst_type,
                dstHost: dst_host,
                dstDevice: dst_dev,
                dstArray: std::ptr::null_mut(),
                dstPitch: dst_pitch,
                WidthInBytes: width,
                Height: height,
            };
            // SAFETY: `p` is fully initialized; the addresses meet the module's contract.
            unsafe { sys::cuMemcpy2DAsync_v2(&p, stream) }.result()
        }
        Piece::Slices { src: so, dst: doff, width, height, depth, src_pitch, src_rows, dst_pitch, dst_rows } => {
            let (src_type, src_host, src_dev) = src.at(so).parts();
            let (dst_type, dst_host, dst_dev) = dst.at(doff).parts();
            let p = sys::CUDA_MEMCPY3D {
                srcXInBytes: 0,
                srcY: 0,
                srcZ: 0,
                srcLOD: 0,
                srcMemoryType: src_type,
                srcHost: src_host.cast_const(),
                srcDevice: src_dev,
                srcArray: std::ptr::null_mut(),
                reserved0: std::ptr::null_mut(),
                srcPitch: src_pitch,
                srcHeight: src_rows,
                dstXInBytes: 0,
                dstY: 0,
                dstZ: 0,
                dstLOD: 0,
                dstMemoryType: dst_type,
                dstHost: dst_host,
                dstDevice: dst_dev,
                dstArray: std::ptr::null_mut(),
                reserved1: std::ptr::null_mut(),
                dstPitch: dst_pitch,
                dstHeight: dst_rows,
                WidthInBytes: width,
                Height: height,
                Depth: depth,
            };
            // SAFETY: `p` is fully initialized; the addresses meet the module's contract.
            unsafe { sys::cuMemcpy3DAsync_v2(&p, stream) }.result()
        }
    }
}

/// # Safety
/// See the module doc.
unsafe fn memcpy_linear_async(src: Side, dst: Side, len: usize, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY (each arm): forwarded contract.
    unsafe {
        match (src, dst) {
            (Side::Host(s), Side::Device(d)) => sys::cuMemcpyHtoDAsync_v2(d, s.cast_const().cast(), len, stream),
            (Side::Device(s), Side::Host(d)) => sys::cuMemcpyDtoHAsync_v2(d.cast(), s, len, stream),
            (Side::Device(s), Side::Device(d)) => sys::cuMemcpyDtoDAsync_v2(d, s, len, stream),
            (Side::Host(_), Side::Host(_)) => unreachable!("host-to-host copies never reach the driver"),
        }
    }
    .result()
}

/// A new event for completion tracking: `CU_EVENT_BLOCKING_SYNC` (a waiting thread
/// sleeps instead of spinning on a core that CPU workers need) and
/// `CU_EVENT_DISABLE_TIMING` (cheaper to record).
///
/// # Safety
/// See the module doc.
pub(crate) unsafe fn event_create_blocking() -> Result<CUevent, DriverError> {
    let flags = sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32 | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    let mut ev = MaybeUninit::uninit();
    // SAFETY: `ev` is written on success.
    unsafe {
        sys::cuEventCreate(ev.as_mut_ptr(), flags).result()?;
        Ok(ev.assume_init())
    }
}

/// Whether `len` bytes from `ptr` lie in one page-locked host allocation (from
/// `cuMemHostAlloc` or `cuMemHostRegister`), so the DMA engine can read or write them
/// directly. `false` for ordinary (pageable) memory, and whenever the driver cannot
/// confirm it: the caller then stages the copy, which is always correct.
///
/// Both the first and the last byte must be pinned host memory of one allocation: the
/// same buffer ID at both ends, or (where the driver gives no ID for host memory) an
/// address range of the first byte's allocation that covers the last.
///
/// # Safety
/// See the module doc.
pub(crate) unsafe fn is_pinned(ptr: *const u8, len: usize) -> bool {
    if len == 0 {
        return false;
    }
    let first = ptr as CUdeviceptr;
    let last = first + (len - 1) as CUdeviceptr;
    // SAFETY: forwarded contract.
    let (Some((type_first, id_first)), Some((type_last, id_last))) = (unsafe { host_kind(first) }, unsafe { host_kind(last) }) else {
        return false;
    };
    let host = CUmemorytype::CU_MEMORYTYPE_HOST as u32;
    if type_first != host || type_last != host {
        return false;
    }
    if id_first != 0 && id_first == id_last {
        return true;
    }
    // SAFETY: forwarded contract.
    unsafe { range(first) }.is_some_and(|(start, size)| start != 0 && start <= first && last < start + size as CUdeviceptr)
}

/// (memory type, buffer ID) of the allocation holding `addr`: zeros for memory the
/// driver does not know (`cuPointerGetAttributes` leaves defaults instead of failing, so
/// the memory type is read as a plain integer, not as the enum).
///
/// # Safety
/// See the module doc.
unsafe fn host_kind(addr: CUdeviceptr) -> Option<(u32, u64)> {
    let (mut mem_type, mut id): (u32, u64) = (0, 0);
    let mut attrs = [CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID];
    let mut data: [*mut c_void; 2] = [(&raw mut mem_type).cast(), (&raw mut id).cast()];
    // SAFETY: each data pointer has the size its attribute's value needs.
    unsafe { sys::cuPointerGetAttributes(attrs.len() as u32, attrs.as_mut_ptr(), data.as_mut_ptr(), addr) }.result().ok()?;
    Some((mem_type, id))
}

/// (start, size) of the address range holding `addr`, if the driver tells.
///
/// # Safety
/// See the module doc.
unsafe fn range(addr: CUdeviceptr) -> Option<(CUdeviceptr, usize)> {
    let (mut start, mut size): (CUdeviceptr, usize) = (0, 0);
    let mut attrs = [CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE];
    let mut data: [*mut c_void; 2] = [(&raw mut start).cast(), (&raw mut size).cast()];
    // SAFETY: each data pointer has the size its attribute's value needs.
    unsafe { sys::cuPointerGetAttributes(attrs.len() as u32, attrs.as_mut_ptr(), data.as_mut_ptr(), addr) }.result().ok()?;
    Some((start, size))
}

/// The driver's CUDA version, as `major * 1000 + minor * 10` (12040 for 12.4).
pub(crate) fn driver_version() -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}
