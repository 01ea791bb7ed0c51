//! The runtime calls of libomp's `omp.h` that are not the `omp_*` names: the affinity
//! format calls its header maps to `ompc_*`, and the `__kmpc_*` allocator calls clang emits
//! for `allocate` clauses and directives. Each forwards to the `omp_*` entry point.

use crate::abi::alloc::{omp_aligned_alloc, omp_alloc, omp_calloc, omp_free, omp_realloc};
use crate::abi::icv::{omp_capture_affinity, omp_display_affinity, omp_get_affinity_format, omp_set_affinity_format};
use std::ffi::{c_char, c_void};

/// # Safety
/// As `omp_set_affinity_format`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompc_set_affinity_format(format: *const c_char) {
    // SAFETY: the same contract.
    unsafe { omp_set_affinity_format(format) }
}

/// # Safety
/// As `omp_get_affinity_format`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompc_get_affinity_format(buf: *mut c_char, size: usize) -> usize {
    // SAFETY: the same contract.
    unsafe { omp_get_affinity_format(buf, size) }
}

/// # Safety
/// As `omp_display_affinity`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompc_display_affinity(format: *const c_char) {
    // SAFETY: the same contract.
    unsafe { omp_display_affinity(format) }
}

/// # Safety
/// As `omp_capture_affinity`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompc_capture_affinity(buf: *mut c_char, size: usize, format: *const c_char) -> usize {
    // SAFETY: the same contract.
    unsafe { omp_capture_affinity(buf, size, format) }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_alloc(_gtid: i32, size: usize, allocator: usize) -> *mut c_void {
    omp_alloc(size, allocator)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_aligned_alloc(_gtid: i32, align: usize, size: usize, allocator: usize) -> *mut c_void {
    omp_aligned_alloc(align, size, allocator)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_calloc(_gtid: i32, n: usize, size: usize, allocator: usize) -> *mut c_void {
    omp_calloc(n, size, allocator)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_realloc(_gtid: i32, p: *mut c_void, size: usize, allocator: usize, free_allocator: usize) -> *mut c_void {
    omp_realloc(p, size, allocator, free_allocator)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_free(_gtid: i32, p: *mut c_void, allocator: usize) {
    omp_free(p, allocator)
}
