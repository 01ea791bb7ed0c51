//! `threadprivate` variables when the compiler does not put them in TLS (clang's
//! `-fnoopenmp-use-tls`, or targets without TLS): `__kmpc_threadprivate_cached` (and the
//! uncached `__kmpc_threadprivate`) return the calling thread's copy;
//! `__kmpc_threadprivate_register` (`_vec` for arrays) gives C++ constructors and
//! destructors.
//!
//! The process's initial thread uses the variable itself, so that the values it gives it in
//! parallel regions persist into the sequential parts (OpenMP 5.1 §2.21.2); every other
//! thread has its own copy, made on its first use: by the registered constructor (or
//! copy constructor, from the variable), else as a copy of the variable's value when its
//! first copy was made (libomp's `pod_init`). Team threads are Weft's workers, which outlive
//! regions, so copies persist between regions.
//!
//! A copy of a variable with a registered destructor is destroyed once: when its thread
//! exits, or at process exit for threads still running then (Weft's workers), before the
//! program's static objects (the variable itself) are destroyed (OpenMP leaves the order
//! unspecified). Invariant: a copy is in [`LIVE`] until its
//! destructor has been claimed by one of the two paths, under the lock.

use super::Ident;
use crate::abi::guard;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

/// `void *(*)(void *)`: a constructor on the new copy.
pub type Ctor = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
/// `void *(*)(void *dst, void *src)`: a copy constructor.
pub type CCtor = unsafe extern "C" fn(*mut c_void, *mut c_void) -> *mut c_void;
/// `void (*)(void *)`: a destructor.
pub type Dtor = unsafe extern "C" fn(*mut c_void);
/// The array forms take the number of elements too.
pub type CtorVec = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
pub type CCtorVec = unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> *mut c_void;
pub type DtorVec = unsafe extern "C" fn(*mut c_void, usize);

/// How a variable's copies are made and destroyed.
#[derive(Clone, Copy, Default)]
struct Hooks {
    ctor: Option<Ctor>,
    cctor: Option<CCtor>,
    dtor: Option<Dtor>,
    ctor_vec: Option<CtorVec>,
    cctor_vec: Option<CCtorVec>,
    dtor_vec: Option<DtorVec>,
    /// Elements, for the `_vec` hooks.
    len: usize,
}

impl Hooks {
    fn constructs(&self) -> bool {
        self.ctor.is_some() || self.cctor.is_some() || self.ctor_vec.is_some() || self.cctor_vec.is_some()
    }

    /// Construct the copy `p` of the variable `data`.
    ///
    /// # Safety
    /// `p` is a zeroed block of the variable's size, `data` the variable; the hooks are the
    /// compiler's for it.
    unsafe fn construct(&self, p: *mut c_void, data: *mut c_void) {
        // SAFETY: per the contract.
        unsafe {
            if let Some(f) = self.ctor {
                f(p);
            } else if let Some(f) = self.cctor {
                f(p, data);
            } else if let Some(f) = self.ctor_vec {
                f(p, self.len);
            } else if let Some(f) = self.cctor_vec {
                f(p, data, self.len);
            }
        }
    }

    fn destroys(&self) -> bool {
        self.dtor.is_some() || self.dtor_vec.is_some()
    }

    /// # Safety
    /// `p` is a constructed copy, destroyed once.
    unsafe fn destroy(&self, p: *mut c_void) {
        // SAFETY: per the contract.
        unsafe {
            if let Some(f) = self.dtor {
                f(p);
            } else if let Some(f) = self.dtor_vec {
                f(p, self.len);
            }
        }
    }
}

/// Per variable: its hooks, and the value copies start from.
#[derive(Default)]
struct Var {
    hooks: Hooks,
    init: Option<Vec<u8>>,
}

static VARS: Mutex<Option<HashMap<usize, Var>>> = Mutex::new(None);

/// Copies still to destroy: copy address → its variable's hooks.
static LIVE: Mutex<Option<HashMap<usize, Hooks>>> = Mutex::new(None);

/// The calling thread's copies, by the variable's address (16-byte aligned blocks); their
/// destructors run when the thread exits.
#[derive(Default)]
struct Copies(HashMap<usize, Box<[u128]>>);

impl Drop for Copies {
    fn drop(&mut self) {
        let mine: Vec<(usize, Hooks)> = {
            let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            let Some(live) = live.as_mut() else { return };
            self.0.values_mut().filter_map(|b| live.remove_entry(&(b.as_mut_ptr() as usize))).collect()
        };
        for (p, h) in mine {
            // SAFETY: a copy constructed by `__kmpc_threadprivate_cached`, still allocated
            // (dropped after this), claimed from LIVE by this thread only.
            unsafe { h.destroy(p as *mut c_void) };
        }
    }
}

thread_local! {
    static COPIES: RefCell<Copies> = RefCell::new(Copies::default());
}

/// At process exit: destroy the copies of the threads still running.
extern "C" fn destroy_at_exit() {
    let all: Vec<(usize, Hooks)> = LIVE.lock().unwrap_or_else(|e| e.into_inner()).take().into_iter().flatten().collect();
    for (p, h) in all {
        // SAFETY: a constructed copy whose thread has not destroyed it (it would have taken
        // it out of LIVE); the thread is still running, so its block is allocated. No
        // parallel region runs at exit.
        unsafe { h.destroy(p as *mut c_void) };
    }
}

fn initial_thread() -> bool {
    // SAFETY: plain system calls.
    unsafe { libc::gettid() == libc::getpid() }
}

fn register(data: *mut c_void, hooks: Hooks) {
    let mut v = VARS.lock().unwrap_or_else(|e| e.into_inner());
    v.get_or_insert_with(HashMap::new).entry(data as usize).or_default().hooks = hooks;
}

/// # Safety
/// `data` is the variable, the hooks null or the compiler's for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_threadprivate_register(
    _loc: Ident,
    data: *mut c_void,
    ctor: Option<Ctor>,
    cctor: Option<CCtor>,
    dtor: Option<Dtor>,
) {
    guard("__kmpc_threadprivate_register", || register(data, Hooks { ctor, cctor, dtor, ..Hooks::default() }))
}

/// An array of `len` objects.
///
/// # Safety
/// As [`__kmpc_threadprivate_register`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_threadprivate_register_vec(
    _loc: Ident,
    data: *mut c_void,
    ctor_vec: Option<CtorVec>,
    cctor_vec: Option<CCtorVec>,
    dtor_vec: Option<DtorVec>,
    len: usize,
) {
    guard("__kmpc_threadprivate_register_vec", || register(data, Hooks { ctor_vec, cctor_vec, dtor_vec, len, ..Hooks::default() }))
}

/// The calling thread's copy of the `size`-byte variable `data`.
fn copy_of(data: *mut c_void, size: usize) -> *mut c_void {
    let initial = initial_thread();
    COPIES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(b) = c.0.get_mut(&(data as usize)) {
            return if initial { data } else { b.as_mut_ptr() as *mut c_void };
        }
        let mut v = VARS.lock().unwrap_or_else(|e| e.into_inner());
        let var = v.get_or_insert_with(HashMap::new).entry(data as usize).or_default();
        if !var.hooks.constructs() && var.init.is_none() {
            // The value copies start from: taken at the variable's first use by any
            // thread, which precedes the initial thread's first write to it in a
            // region (every access asks for the copy first).
            // SAFETY: the entry points' contract: `size` readable bytes.
            var.init = Some(unsafe { std::slice::from_raw_parts(data as *const u8, size) }.to_vec());
        }
        if initial {
            // Marks the variable as seen by this thread (the block stays unused).
            c.0.insert(data as usize, Box::new([]));
            return data;
        }
        let mut b = vec![0u128; size.div_ceil(16)].into_boxed_slice();
        let p = b.as_mut_ptr() as *mut u8;
        if let Some(init) = &var.init {
            // SAFETY: `b` has room for `size` bytes; `init` holds them.
            unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), p, size.min(init.len())) };
        }
        let hooks = var.hooks;
        drop(v);
        // SAFETY: the compiler's hooks for the variable, on a zeroed block of its size.
        unsafe { hooks.construct(p as *mut c_void, data) };
        if hooks.destroys() {
            let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
            if live.is_none() {
                // SAFETY: registers a plain function, once (LIVE was never set before).
                unsafe { libc::atexit(destroy_at_exit) };
            }
            live.get_or_insert_with(HashMap::new).insert(p as usize, hooks);
        }
        c.0.insert(data as usize, b);
        p as *mut c_void
    })
}

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
    guard("__kmpc_threadprivate_cached", || copy_of(data, size))
}

/// The uncached form (older compilers).
///
/// # Safety
/// As [`__kmpc_threadprivate_cached`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_threadprivate(_loc: Ident, _gtid: i32, data: *mut c_void, size: usize) -> *mut c_void {
    guard("__kmpc_threadprivate", || copy_of(data, size))
}
