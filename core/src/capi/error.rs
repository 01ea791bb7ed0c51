//! Error reporting of the C API: codes, the per-thread message, and the entry-point wrappers.
//!
//! **Owns**: `enum weft_error` (the codes C callers compare against), the one mapping from
//! `core::Error` to a code (`code_of`), the thread-local message behind `weft_last_error`,
//! and the `ret_*` wrappers that run an entry point's body under `catch_unwind`. They are
//! public so that other crates' C APIs exported by the same library (weft-mpi's
//! `weft_mpi_*`) report through the same codes and the same `weft_last_error`.
//!
//! **Thread-local**: the message of the last failed call is kept per thread, as `errno` and
//! `dlerror` are. It is the C API's exception to the house rule of one thread-local (the
//! current worker, STYLE.md §5): C has no `Result` to carry a message, and a process-wide
//! slot would hand one thread another thread's message.

use crate::error::Error;
use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Return codes of the C API. Every function returning `int` returns `WEFT_SUCCESS` (0) or
/// one of these negative codes; `weft_last_error()` then describes the failure. The values
/// are Weft's own, not `errno` values.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_error {
    /// The call succeeded.
    WEFT_SUCCESS = 0,
    /// An argument is invalid: a NULL pointer, a zero size, an unknown access mode or
    /// filter, a handle that is not (or no longer) a valid `weft_data_handle`.
    WEFT_EINVAL = -1,
    /// No worker of this machine can run the task: the codelet has no implementation
    /// (e.g. its `cpu_func` is NULL) for any kind of worker present.
    WEFT_ENODEV = -2,
    /// The task gives a number of data handles different from the codelet's `nbuffers`.
    WEFT_EBUFCOUNT = -3,
    /// The data handle was unregistered (or dropped by `weft_data_unpartition`).
    WEFT_EUNREGISTERED = -4,
    /// The task would depend on itself through its tag.
    WEFT_ECYCLE = -5,
    /// The call would never return: e.g. waiting from inside a task, or acquiring a handle
    /// this thread already holds in a conflicting mode.
    WEFT_EDEADLK = -6,
    /// A memory node is out of memory.
    WEFT_ENOMEM = -7,
    /// The task failed (its `cpu_func` returned nonzero) or was cancelled because a task
    /// it depends on failed.
    WEFT_ETASK = -8,
    /// Waiting would never end: tasks wait on tags that no task carries.
    WEFT_ESTALLED = -9,
    /// The runtime is shutting down.
    WEFT_ESHUTDOWN = -10,
    /// `weft_init` has not been called (or `weft_shutdown` was called since).
    WEFT_ENOTINIT = -11,
    /// The tag is carried by a task that has not completed yet.
    WEFT_ETAGINUSE = -12,
    /// The operation is not supported (for this handle, mode or partitioning).
    WEFT_ENOTSUP = -13,
    /// A device failed.
    WEFT_EDEVICE = -14,
    /// The configuration in the environment is invalid (the message names the variable).
    WEFT_ECONFIG = -15,
    /// A bug in Weft: an internal error was caught at the API boundary.
    WEFT_EINTERNAL = -16,
}

use weft_error::*;

/// The one mapping from core errors to C API codes.
pub fn code_of(e: &Error) -> weft_error {
    match e {
        Error::Config(_) => WEFT_ECONFIG,
        Error::InvalidData(_) | Error::NoReductionMethods(_) => WEFT_EINVAL,
        Error::BufferCount { .. } => WEFT_EBUFCOUNT,
        Error::NoImplementation(_) => WEFT_ENODEV,
        Error::Unregistered(_) => WEFT_EUNREGISTERED,
        Error::Unsupported(_) => WEFT_ENOTSUP,
        Error::TagInUse(_) => WEFT_ETAGINUSE,
        Error::DependencyCycle(_) => WEFT_ECYCLE,
        Error::Stalled(_) => WEFT_ESTALLED,
        Error::WouldDeadlock => WEFT_EDEADLK,
        Error::OutOfMemory { .. } | Error::MemoryBusy(_) | Error::Device(weft_vendors::DeviceError::OutOfMemory(_)) => WEFT_ENOMEM,
        Error::Device(_) => WEFT_EDEVICE,
        Error::Task(_) | Error::TasksFailed { .. } => WEFT_ETASK,
        Error::ShutDown => WEFT_ESHUTDOWN,
    }
}

/// A failure on its way to C: a code and the message `weft_last_error` will return.
#[derive(Debug)]
pub struct CError {
    pub code: weft_error,
    pub msg: String,
}

impl CError {
    pub fn new(code: weft_error, msg: impl Into<String>) -> CError {
        CError { code, msg: msg.into() }
    }
    /// `WEFT_EINVAL` with a message naming the argument.
    pub fn inval(msg: impl Into<String>) -> CError {
        CError::new(WEFT_EINVAL, msg)
    }
}

impl From<Error> for CError {
    fn from(e: Error) -> CError {
        CError::new(code_of(&e), e.to_string())
    }
}

pub type CResult<T> = Result<T, CError>;

thread_local! {
    /// The message of the last failed call on this thread (see the module doc).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // `try_with`: a call made while the thread is being torn down loses its message
    // rather than aborting.
    let _ = LAST_ERROR.try_with(|s| *s.borrow_mut() = c);
}

/// Record `e` for `weft_last_error` and return its code.
pub fn fail(e: CError) -> c_int {
    set_last_error(&e.msg);
    e.code as c_int
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Run an entry point's body: a panic becomes `WEFT_EINTERNAL`, never an unwind into C.
pub fn guarded<T>(f: impl FnOnce() -> CResult<T>) -> CResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(CError::new(WEFT_EINTERNAL, format!("internal error (please report): {}", panic_message(&*p)))),
    }
}

/// For entry points returning `int`: 0 or a negative code.
pub fn ret_code(f: impl FnOnce() -> CResult<()>) -> c_int {
    match guarded(f) {
        Ok(()) => WEFT_SUCCESS as c_int,
        Err(e) => fail(e),
    }
}

/// For entry points returning a pointer: NULL on failure.
pub fn ret_ptr<T>(f: impl FnOnce() -> CResult<*mut T>) -> *mut T {
    match guarded(f) {
        Ok(p) => p,
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

/// For entry points returning a plain value: `default` on failure.
pub fn ret_value<T>(default: T, f: impl FnOnce() -> CResult<T>) -> T {
    match guarded(f) {
        Ok(v) => v,
        Err(e) => {
            fail(e);
            default
        }
    }
}

/// The message describing the last failed Weft call made by the calling thread.
///
/// Never NULL: an empty string when no call has failed on this thread. The string belongs
/// to Weft and stays valid until the next failing Weft call on the same thread. A
/// successful call does not clear it, so read it only right after a call returned an error.
#[unsafe(no_mangle)]
pub extern "C" fn weft_last_error() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    catch_unwind(|| LAST_ERROR.try_with(|s| s.borrow().as_ptr()).unwrap_or(EMPTY.as_ptr() as *const c_char))
        .unwrap_or(EMPTY.as_ptr() as *const c_char)
}

/// A short, constant description of a return code (for messages; `weft_last_error` says more).
/// Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn weft_strerror(code: c_int) -> *const c_char {
    let s: &'static [u8] = match code {
        0 => b"success\0",
        -1 => b"invalid argument\0",
        -2 => b"no worker can run the codelet\0",
        -3 => b"wrong number of buffers\0",
        -4 => b"data handle unregistered\0",
        -5 => b"dependency cycle\0",
        -6 => b"would deadlock\0",
        -7 => b"out of memory\0",
        -8 => b"task failed\0",
        -9 => b"stalled: tasks wait on tags no task carries\0",
        -10 => b"runtime shutting down\0",
        -11 => b"weft_init has not been called\0",
        -12 => b"tag in use\0",
        -13 => b"not supported\0",
        -14 => b"device error\0",
        -15 => b"invalid configuration\0",
        -16 => b"internal error\0",
        _ => b"unknown error code\0",
    };
    s.as_ptr() as *const c_char
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskError;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: weft_last_error returns a NUL-terminated string valid until the next
        // failing call on this thread; it is copied at once.
        unsafe { CStr::from_ptr(weft_last_error()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn codes_and_messages() {
        assert_eq!(ret_code(|| Ok(())), 0);
        let c = ret_code(|| Err(Error::WouldDeadlock.into()));
        assert_eq!(c, WEFT_EDEADLK as c_int);
        assert!(last().contains("deadlock"));
        let c = ret_code(|| Err(CError::inval("ptr is NULL")));
        assert_eq!(c, -1);
        assert_eq!(last(), "ptr is NULL");
    }

    #[test]
    fn panics_become_internal_errors() {
        let c = ret_code(|| panic!("boom"));
        assert_eq!(c, WEFT_EINTERNAL as c_int);
        assert!(last().contains("boom"));
        let p: *mut u8 = ret_ptr(|| panic!("again"));
        assert!(p.is_null());
    }

    #[test]
    fn every_code_has_a_description() {
        for c in -16..=0 {
            // SAFETY: weft_strerror returns a static NUL-terminated string.
            let s = unsafe { CStr::from_ptr(weft_strerror(c)) };
            assert!(!s.to_bytes().is_empty());
            assert_ne!(s.to_bytes(), b"unknown error code", "code {c}");
        }
    }

    #[test]
    fn core_errors_map_to_their_codes() {
        assert_eq!(code_of(&Error::ShutDown), WEFT_ESHUTDOWN);
        assert_eq!(code_of(&Error::BufferCount { codelet: "c".into(), declared: 1, given: 2 }), WEFT_EBUFCOUNT);
        assert_eq!(code_of(&Error::NoImplementation("c".into())), WEFT_ENODEV);
        assert_eq!(code_of(&Error::DependencyCycle(3)), WEFT_ECYCLE);
        assert_eq!(code_of(&Error::Task(TaskError::Data("x".into()))), WEFT_ETASK);
    }
}
