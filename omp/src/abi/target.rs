//! The device memory routines (OpenMP 5.1 §3.8: `omp_target_alloc`, `omp_target_free`,
//! `omp_target_is_present`, `omp_target_memcpy`, `omp_target_memcpy_rect`,
//! `omp_target_associate_ptr`, `omp_target_disassociate_ptr`) on a runtime with no offload
//! device, as libgomp serves them without one: the host (the initial device, which
//! `omp_get_initial_device` numbers 0, or `omp_initial_device`, -1) is a device whose memory
//! is the heap, and copies between host pointers are `memcpy`. A program calling them must
//! at least load (their absence made it fail at start-up with an undefined symbol). Any
//! other device number names a device that does not exist: one line on stderr names the
//! routine and the number, and the routine returns its failure value (NULL, 0 or EINVAL),
//! as libgomp's do, silently, for a device it does not have.

use super::icv::{omp_get_initial_device, omp_get_num_devices};
use std::ffi::{c_int, c_void};

/// `omp_initial_device` (OpenMP 5.1): the host, whatever the number of devices.
const INITIAL_DEVICE: c_int = -1;

/// Whether `dev` is the host; otherwise the message for `what` is printed.
fn host(what: &str, dev: c_int) -> bool {
    if dev == INITIAL_DEVICE || dev == omp_get_initial_device() {
        return true;
    }
    eprintln!(
        "weft-omp: {what}: device {dev} does not exist (Weft has {} offload devices; the host is device {}); the call fails",
        omp_get_num_devices(),
        omp_get_initial_device()
    );
    false
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_target_alloc(size: usize, device_num: c_int) -> *mut c_void {
    if !host("omp_target_alloc", device_num) || size == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: plain allocation (null when out of memory, as the routine's failure).
    unsafe { libc::malloc(size) }
}

/// # Safety
/// `ptr` is null or came from `omp_target_alloc` for the same device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_target_free(ptr: *mut c_void, device_num: c_int) {
    if !ptr.is_null() && host("omp_target_free", device_num) {
        // SAFETY: per the contract: the host's device memory is the heap.
        unsafe { libc::free(ptr) };
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_target_is_present(ptr: *const c_void, device_num: c_int) -> c_int {
    // Every host address is present on the host (a null pointer too, as in libgomp).
    (ptr.is_null() || host("omp_target_is_present", device_num)) as c_int
}

/// # Safety
/// `dst + dst_offset` and `src + src_offset` have `length` bytes (host memory).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_target_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device_num: c_int,
    src_device_num: c_int,
) -> c_int {
    if !host("omp_target_memcpy", dst_device_num) || !host("omp_target_memcpy", src_device_num) {
        return libc::EINVAL;
    }
    if length > 0 {
        // SAFETY: per the contract; `copy` allows the program's ranges to overlap.
        unsafe { std::ptr::copy((src as *const u8).add(src_offset), (dst as *mut u8).add(dst_offset), length) };
    }
    0
}

/// Copy a `dims`-dimensional subvolume (libgomp's `omp_target_memcpy_rect_worker`): the
/// first dimension's slices one after another, each the rest of the dimensions. EINVAL when
/// a size or offset overflows.
///
/// # Safety
/// The arrays have `dims` entries; the subvolume lies within both arrays.
#[allow(clippy::too_many_arguments)]
unsafe fn copy_rect(
    dst: *mut u8,
    src: *const u8,
    elem: usize,
    dims: usize,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dims: *const usize,
    src_dims: *const usize,
) -> c_int {
    // SAFETY: per the contract: the arrays have `dims` entries, the volume is in bounds.
    unsafe {
        let (v0, d0, s0) = (*volume, *dst_offsets, *src_offsets);
        if dims == 1 {
            let (Some(len), Some(doff), Some(soff)) = (v0.checked_mul(elem), d0.checked_mul(elem), s0.checked_mul(elem)) else {
                return libc::EINVAL;
            };
            std::ptr::copy(src.add(soff), dst.add(doff), len);
            return 0;
        }
        // The bytes of one slice of the first dimension, in each array.
        let (mut dslice, mut sslice) = (Some(elem), Some(elem));
        for i in 1..dims {
            dslice = dslice.and_then(|x| x.checked_mul(*dst_dims.add(i)));
            sslice = sslice.and_then(|x| x.checked_mul(*src_dims.add(i)));
        }
        let (Some(dslice), Some(sslice)) = (dslice, sslice) else { return libc::EINVAL };
        let (Some(doff), Some(soff)) = (dslice.checked_mul(d0), sslice.checked_mul(s0)) else { return libc::EINVAL };
        for j in 0..v0 {
            let r = copy_rect(
                dst.add(doff + dslice * j),
                src.add(soff + sslice * j),
                elem,
                dims - 1,
                volume.add(1),
                dst_offsets.add(1),
                src_offsets.add(1),
                dst_dims.add(1),
                src_dims.add(1),
            );
            if r != 0 {
                return r;
            }
        }
        0
    }
}

/// # Safety
/// As OpenMP says: the arrays have `num_dims` entries and the subvolume lies within both
/// (host) arrays; with `dst` and `src` both null, nothing is read.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn omp_target_memcpy_rect(
    dst: *mut c_void,
    src: *const c_void,
    element_size: usize,
    num_dims: c_int,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dimensions: *const usize,
    src_dimensions: *const usize,
    dst_device_num: c_int,
    src_device_num: c_int,
) -> c_int {
    if dst.is_null() && src.is_null() {
        // The number of dimensions supported.
        return c_int::MAX;
    }
    let args = [volume, dst_offsets, src_offsets, dst_dimensions, src_dimensions];
    if dst.is_null() || src.is_null() || num_dims < 1 || element_size == 0 || args.iter().any(|p| p.is_null()) {
        return libc::EINVAL;
    }
    if !host("omp_target_memcpy_rect", dst_device_num) || !host("omp_target_memcpy_rect", src_device_num) {
        return libc::EINVAL;
    }
    // SAFETY: per the contract.
    unsafe {
        copy_rect(
            dst as *mut u8,
            src as *const u8,
            element_size,
            num_dims as usize,
            volume,
            dst_offsets,
            src_offsets,
            dst_dimensions,
            src_dimensions,
        )
    }
}

/// Associating host memory with device memory needs a device: EINVAL for the host (as
/// libgomp) and, with the message, for any other number.
#[unsafe(no_mangle)]
pub extern "C" fn omp_target_associate_ptr(
    _host_ptr: *const c_void,
    _device_ptr: *const c_void,
    _size: usize,
    _device_offset: usize,
    device_num: c_int,
) -> c_int {
    host("omp_target_associate_ptr", device_num);
    libc::EINVAL
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_target_disassociate_ptr(_ptr: *const c_void, device_num: c_int) -> c_int {
    host("omp_target_disassociate_ptr", device_num);
    libc::EINVAL
}
