//! What every entry point written by `#[cl_entrypoint]` (crate `weft-icd-macros`) calls:
//! `catch_unwind` around the function that does the work, and its result in the C
//! convention. A panic never crosses `extern "C"`: it is `CL_OUT_OF_RESOURCES` (shared/STYLE.md
//! §2), a null object or pointer, or nothing.

use super::ClResult;
use super::cl::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use weft_icd_macros::cl_entrypoint;

/// What an entry point returns when it has nothing to return: after an error or a panic.
pub trait NoValue {
    fn no_value() -> Self;
}

impl<T> NoValue for *mut T {
    fn no_value() -> Self {
        std::ptr::null_mut()
    }
}

impl NoValue for () {
    fn no_value() -> Self {}
}

/// A status call: its code (`CL_SUCCESS` for `Ok`); a panic is `CL_OUT_OF_RESOURCES`.
pub fn ret_code(f: impl FnOnce() -> ClResult<()>) -> cl_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => CL_SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => CL_OUT_OF_RESOURCES,
    }
}

/// An object-creating call: the object and `CL_SUCCESS`, or no object and the code (a
/// panic is `CL_OUT_OF_RESOURCES`). The entry point writes the code with [`set_errcode`].
pub fn obj_or_code<T: NoValue>(f: impl FnOnce() -> ClResult<T>) -> (T, cl_int) {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(h)) => (h, CL_SUCCESS),
        Ok(Err(e)) => (T::no_value(), e),
        Err(_) => (T::no_value(), CL_OUT_OF_RESOURCES),
    }
}

/// Write `code` to `errcode_ret` unless it is null.
///
/// # Safety
/// `errcode_ret` is null or writable for one `cl_int`.
pub unsafe fn set_errcode(errcode_ret: *mut cl_int, code: cl_int) {
    if !errcode_ret.is_null() {
        // SAFETY: the caller's contract; unaligned, as C callers may pass any address.
        unsafe { errcode_ret.write_unaligned(code) };
    }
}

/// A call with no error code (`clSVMAlloc`, `clSVMFree`, `clGetExtensionFunctionAddress`):
/// its value; a panic is no value.
pub fn ret_plain<T: NoValue>(f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| T::no_value())
}

/// `clRetain*` of kind `$t` and, where releasing only drops the API reference (the object
/// lives on while Weft's own references hold it), `clRelease*`.
macro_rules! retain_release {
    ($t:ty, $retain:ident => $r:ident $(, $release:ident => $rel:ident)?) => {
        #[doc = concat!("`", stringify!($retain), "`: one more API reference.")]
        #[$crate::api::entry::cl_entrypoint($retain)]
        fn $r(h: $crate::api::cl::Handle) -> $crate::api::ClResult<()> {
            $crate::api::icd::retain::<$t>(h)
        }
        $(
            #[doc = concat!("`", stringify!($release), "`: one API reference less.")]
            #[$crate::api::entry::cl_entrypoint($release)]
            fn $rel(h: $crate::api::cl::Handle) -> $crate::api::ClResult<()> {
                $crate::api::icd::release::<$t>(h).map(drop)
            }
        )?
    };
}
pub(crate) use retain_release;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn panics_become_codes_and_no_value() {
        assert_eq!(ret_code(|| Ok(())), CL_SUCCESS);
        assert_eq!(ret_code(|| Err(CL_INVALID_VALUE)), CL_INVALID_VALUE);
        assert_eq!(ret_code(|| panic!("an entry point's bug")), CL_OUT_OF_RESOURCES);
        let (h, code) = obj_or_code::<Handle>(|| panic!("an entry point's bug"));
        assert!(h.is_null());
        assert_eq!(code, CL_OUT_OF_RESOURCES);
        let (h, code) = obj_or_code::<Handle>(|| Err(CL_INVALID_CONTEXT));
        assert!(h.is_null());
        assert_eq!(code, CL_INVALID_CONTEXT);
        assert!(ret_plain::<*mut c_void>(|| panic!("an entry point's bug")).is_null());
        let mut code = 0;
        // SAFETY: `code` is writable; null is skipped.
        unsafe {
            set_errcode(&mut code, CL_INVALID_DEVICE);
            set_errcode(std::ptr::null_mut(), CL_INVALID_DEVICE);
        }
        assert_eq!(code, CL_INVALID_DEVICE);
    }

    use crate::api::Info;
    use crate::api::icd::Obj;
    use crate::api::queue::Queue;
    use std::sync::Arc;

    #[cl_entrypoint(clTestObject)]
    fn test_object(fail: cl_int) -> ClResult<Handle> {
        match fail {
            0 => Ok(std::ptr::dangling_mut()),
            1 => panic!("an entry point's bug"),
            e => Err(e),
        }
    }

    #[cl_entrypoint(clTestInfo)]
    fn test_info(q: Arc<Obj<Queue>>, _param: cl_uint) -> ClResult<Info> {
        Ok(Info(vec![q.properties as u8; 4]))
    }

    #[cl_entrypoint(clTestInfoBytes)]
    fn test_info_bytes(param: cl_uint) -> ClResult<Info> {
        Ok(Info(param.to_ne_bytes().to_vec()))
    }

    #[test]
    fn generated_entry_points_follow_the_c_conventions() {
        let mut code = 7;
        // SAFETY: `code` is writable.
        unsafe {
            assert!(!clTestObject(0, &mut code).is_null());
            assert_eq!(code, CL_SUCCESS);
            assert!(clTestObject(1, &mut code).is_null());
            assert_eq!(code, CL_OUT_OF_RESOURCES);
            assert!(clTestObject(CL_INVALID_VALUE, &mut code).is_null());
            assert_eq!(code, CL_INVALID_VALUE);
            // A null errcode_ret is skipped.
            assert!(clTestObject(CL_INVALID_VALUE, std::ptr::null_mut()).is_null());
        }
        // A typed handle: a null queue is CL_INVALID_COMMAND_QUEUE, before the function runs.
        let mut size = 0usize;
        // SAFETY: a null value and a writable size.
        assert_eq!(unsafe { clTestInfo(std::ptr::null_mut(), 0, 0, std::ptr::null_mut(), &mut size) }, CL_INVALID_COMMAND_QUEUE);
        assert_eq!(size, 0);
        // The size dance: the size alone, too small a buffer, the value.
        // SAFETY: as above.
        assert_eq!(unsafe { clTestInfoBytes(0x1234, 0, std::ptr::null_mut(), &mut size) }, CL_SUCCESS);
        assert_eq!(size, 4);
        let mut out = [0u8; 4];
        // SAFETY: `out` is writable for 4 bytes.
        unsafe {
            assert_eq!(clTestInfoBytes(0x1234, 3, out.as_mut_ptr().cast(), std::ptr::null_mut()), CL_INVALID_VALUE);
            assert_eq!(out, [0; 4]);
            assert_eq!(clTestInfoBytes(0x1234, 4, out.as_mut_ptr().cast(), std::ptr::null_mut()), CL_SUCCESS);
        }
        assert_eq!(u32::from_ne_bytes(out), 0x1234);
    }
}
