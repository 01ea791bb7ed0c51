//! The FFI layer of Weft's OpenCL platform: every `extern "C"` entry point, reached only
//! through the dispatch table that each Weft object points to with its first word (none
//! is exported under a `cl*` name; see DESIGN.md "Packaging").
//!
//! **Owns**: converting raw pointers, handles and flags into Rust values, the
//! `errcode_ret`/return-code conventions, `catch_unwind` at every entry (a panic returns
//! `CL_OUT_OF_RESOURCES`), and the `clGet*Info` size dance ([`write_info`]). Every entry
//! point is written by `#[cl_entrypoint(clName)]` (crate `weft-icd-macros`, helpers in
//! [`entry`]) around the function that does the work, which returns a [`ClResult`] and
//! takes typed handles (`Arc<Obj<T>>`, [`queue::Cmd`]) where its first check was that
//! handle; the unsupported ones are `stubs.rs`'s two macros.
//! **Does not own**: runtime state (core), device calls (weft-vendors).
//! **Invariants**: every handle is checked against the live-object table of its kind
//! ([`icd::get`]) before it is dereferenced, so invalid, foreign, wrong-kind and released
//! handles are the kind's `CL_INVALID_*` code, never a dereference.
#![allow(non_snake_case)]

pub mod cl;
pub mod context;
pub mod entry;
pub mod event;
pub mod icd;
pub mod image;
pub mod kernel;
pub mod memory;
pub mod platform;
pub mod program;
pub mod queue;
pub mod sampler;
pub mod stubs;
pub mod svm;

use cl::*;
pub use entry::{NoValue, cl_entrypoint, obj_or_code, ret_code, ret_plain, set_errcode};
use std::ffi::{CStr, c_char, c_void};

/// A CL error code as the error of every safe function.
pub type ClResult<T> = Result<T, cl_int>;

/// The value of a `clGet*Info` query, as bytes: what a function under `#[cl_entrypoint]`
/// returns for the entry point to do the size dance with ([`write_info`]).
pub struct Info(pub Vec<u8>);

impl From<Vec<u8>> for Info {
    fn from(v: Vec<u8>) -> Self {
        Info(v)
    }
}

/// The `clGet*Info` dance for a value already encoded as bytes.
///
/// # Safety
/// `value` is null or writable for `size` bytes; `size_ret` is null or writable.
pub unsafe fn write_info(bytes: &[u8], size: usize, value: *mut c_void, size_ret: *mut usize) -> ClResult<()> {
    if !value.is_null() {
        // CL_INVALID_VALUE if [...] the size in bytes specified by param_value_size is < size
        // of return type [...] and param_value is not NULL.
        if size < bytes.len() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the caller's contract; `size >= bytes.len()`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len()) };
    }
    if !size_ret.is_null() {
        // SAFETY: the caller's contract.
        unsafe { size_ret.write_unaligned(bytes.len()) };
    }
    Ok(())
}

/// A string info value (NUL-terminated).
pub fn info_str(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

/// A plain value's bytes.
pub fn info_val<T: bytemuck::Pod>(v: T) -> Vec<u8> {
    bytemuck::bytes_of(&v).to_vec()
}

/// An array of plain values' bytes.
pub fn info_vals<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A handle (pointer) as an info value.
pub fn info_ptr(h: *const c_void) -> Vec<u8> {
    info_val(h as usize)
}

/// Borrow `n` elements at `p`: empty when `n == 0`; `CL_INVALID_VALUE` when null (or
/// misaligned) with `n > 0`.
///
/// # Safety
/// `p` is null or readable for `n` elements for the returned lifetime.
pub unsafe fn slice<'a, T>(p: *const T, n: usize) -> ClResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || !p.is_aligned() || n.checked_mul(size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract; checked non-null and aligned.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A NUL-terminated string argument (null is `None`).
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: the caller's contract.
    if p.is_null() { None } else { Some(unsafe { CStr::from_ptr(p) }) }
}

/// A CL boolean.
pub fn is_true(b: cl_bool) -> bool {
    b != CL_FALSE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_values_follow_the_size_dance() {
        let bytes = info_str("Weft");
        let mut size = 0usize;
        // Size only.
        // SAFETY: a null value pointer and a writable size.
        assert_eq!(unsafe { write_info(&bytes, 0, std::ptr::null_mut(), &mut size) }, Ok(()));
        assert_eq!(size, 5);
        // Too small a buffer is CL_INVALID_VALUE and writes nothing.
        let mut small = [7u8; 4];
        // SAFETY: `small` is writable for 4 bytes.
        assert_eq!(unsafe { write_info(&bytes, 4, small.as_mut_ptr().cast(), std::ptr::null_mut()) }, Err(CL_INVALID_VALUE));
        assert_eq!(small, [7; 4]);
        let mut out = [0u8; 8];
        // SAFETY: `out` is writable for 8 bytes.
        assert_eq!(unsafe { write_info(&bytes, 8, out.as_mut_ptr().cast(), &mut size) }, Ok(()));
        assert_eq!(&out[..5], b"Weft\0");
        assert_eq!(info_val(3u32), 3u32.to_ne_bytes());
    }

    #[test]
    fn slices_reject_null_and_misaligned_pointers() {
        // SAFETY: a zero-length slice never reads.
        assert_eq!(unsafe { slice::<u32>(std::ptr::null(), 0) }.map(<[u32]>::len), Ok(0));
        // SAFETY: null is rejected before any read.
        assert_eq!(unsafe { slice::<u32>(std::ptr::null(), 1) }.err(), Some(CL_INVALID_VALUE));
        let v = [0u32; 2];
        let odd = v.as_ptr().cast::<u8>().wrapping_add(1).cast::<u32>();
        // SAFETY: misalignment is rejected before any read.
        assert_eq!(unsafe { slice::<u32>(odd, 1) }.err(), Some(CL_INVALID_VALUE));
        // SAFETY: `v` holds 2 elements.
        assert_eq!(unsafe { slice(v.as_ptr(), 2) }.map(<[u32]>::len), Ok(2));
    }
}
