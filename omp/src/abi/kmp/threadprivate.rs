//! `threadprivate` variables when the compiler does not put them in TLS (clang's
//! `-fnoopenmp-use-tls`, or targets without TLS): `__kmpc_threadprivate_cached` returns the
//! calling thread's copy, `__kmpc_threadprivate_register` gives C++ constructors.
//!
//! The process's initial thread uses the variable itself, so that the values it gives it in
//! parallel regions persist into the sequential parts (OpenMP 5.1 §2.21.2); every other
//! thread has its own copy, made on its first use: by the registered constructor, else as a
//! copy of the variable's value when its first copy was made (libomp's `pod_init`). Team
//! threads are Weft's workers, which outlive regions, so copies persist between regions.

use super::Ident;
use crate::abi::guard;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

/// `void *(*)(void *)`: a constructor on the new copy.
pub type Ctor = unsafe extern "C" fn(*mut c_void) -> *mut c_void;

/// Per variable: the registered constructor, and the value copies start from.
#[derive(Default)]
struct Var {
    ctor: Option<Ctor>,
    init: Option<Vec<u8>>,
}

static VARS: Mutex<Option<HashMap<usize, Var>>> = Mutex::new(None);

thread_local! {
    /// The calling thread's copies, by the variable's address (16-byte aligned blocks).
    static COPIES: RefCell<HashMap<usize, Box<[u128]>>> = RefCell::new(HashMap::new());
}

fn initial_thread() -> bool {
    // SAFETY: plain system calls.
    unsafe { libc::gettid() == libc::getpid() }
}

/// # Safety
/// `data` is the variable, `ctor` null or its constructor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_threadprivate_register(
    _loc: Ident,
    data: *mut c_void,
    ctor: Option<Ctor>,
    _cctor: *mut c_void,
    _dtor: *mut c_void,
) {
    guard("__kmpc_threadprivate_register", || {
        let mut v = VARS.lock().unwrap_or_else(|e| e.into_inner());
        v.get_or_insert_with(HashMap::new).entry(data as usize).or_default().ctor = ctor;
    })
}

/// The calling thread's copy of the `size`-byte variable `data`.
///
/// # Safety
/// `data` is a threadprivate variable of `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_threadprivate_cached(
    _loc: Ident,
    _gtid: i32,
    data: *mut c_void,
    size: usize,
    _cache: *mut c_void,
) -> *mut c_void {
    guard("__kmpc_threadprivate_cached", || {
        let initial = initial_thread();
        COPIES.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(b) = c.get_mut(&(data as usize)) {
                return if initial { data } else { b.as_mut_ptr() as *mut c_void };
            }
            let mut v = VARS.lock().unwrap_or_else(|e| e.into_inner());
            let var = v.get_or_insert_with(HashMap::new).entry(data as usize).or_default();
            if var.ctor.is_none() && var.init.is_none() {
                // The value copies start from: taken at the variable's first use by any
                // thread, which precedes the initial thread's first write to it in a
                // region (every access asks for the copy first).
                // SAFETY: per the contract: `size` readable bytes.
                var.init = Some(unsafe { std::slice::from_raw_parts(data as *const u8, size) }.to_vec());
            }
            if initial {
                // Marks the variable as seen by this thread (the block stays unused).
                c.insert(data as usize, Box::new([]));
                return data;
            }
            let mut b = vec![0u128; size.div_ceil(16)].into_boxed_slice();
            let p = b.as_mut_ptr() as *mut u8;
            let ctor = {
                if let Some(init) = &var.init {
                    // SAFETY: `b` has room for `size` bytes; `init` holds them.
                    unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), p, size.min(init.len())) };
                }
                var.ctor
            };
            drop(v);
            if let Some(ctor) = ctor {
                // SAFETY: the compiler's constructor for the variable, on a zeroed block of
                // its size.
                unsafe { ctor(p as *mut c_void) };
            }
            c.insert(data as usize, b);
            p as *mut c_void
        })
    })
}
