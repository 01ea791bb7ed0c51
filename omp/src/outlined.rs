//! Compiler-outlined code as the core holds it: a C function and the data the compiler
//! passes it, checked once where the ABI layer receives them ([`Outlined::new`]) and
//! called safely from then on ([`Outlined::call`]): a region's body, which every thread of
//! its team runs; and a task's body run once, on the compiler's data or on a copy of it
//! ([`OutlinedTask`]): by its creating thread at once, or by the thread that takes the
//! deferred task, on the task's own copy.
//!
//! This module's `unsafe` is the call of such a body: each type's invariant, made by the
//! caller of its `new`, is what makes it sound.

use std::ffi::c_void;

/// A compiler-outlined region body, as the ABI passes it.
pub type Body = unsafe extern "C" fn(*mut c_void);

/// A body with its data.
///
/// # Invariant
/// `f(data)` may be called from any thread, any number of times, for as long as the
/// construct that received them lasts; the core calls it only within that construct (a
/// region's body, from its team's threads until the join).
#[derive(Clone, Copy, Debug)]
pub struct Outlined {
    f: Body,
    data: *mut c_void,
}

// SAFETY: the invariant: the compiler made the body to be called from the team's threads
// with this data (its shared variables, which the program synchronizes).
unsafe impl Send for Outlined {}
// SAFETY: as above (a shared `Outlined` only calls the body).
unsafe impl Sync for Outlined {}

/// The same body and data. (Two functions the linker merged, having the same code, compare
/// equal: calling either does the same.)
impl PartialEq for Outlined {
    fn eq(&self, o: &Outlined) -> bool {
        std::ptr::fn_addr_eq(self.f, o.f) && self.data == o.data
    }
}

impl Outlined {
    /// # Safety
    /// `f` and `data` are a body and its data as a GOMP or kmp entry point received them:
    /// `f(data)` is sound from any thread of the construct, any number of times, until the
    /// construct ends, and the core uses the value no longer than that.
    #[inline]
    pub unsafe fn new(f: Body, data: *mut c_void) -> Outlined {
        Outlined { f, data }
    }

    /// Run the body.
    #[inline]
    pub fn call(self) {
        // SAFETY: the type's invariant.
        unsafe { (self.f)(self.data) }
    }
}

/// A task's body with its data, run once by the thread that made the value: a task its
/// creator runs at once, on the compiler's data or on a copy, before the entry point
/// returns; or a deferred task, on its own copy, by the thread that took it (task.rs
/// `run_body`).
///
/// # Invariant
/// `f(data)` may be called once, on the thread that made the value, now (`data` is alive
/// until the call returns). Neither `Copy` nor `Send` (it holds a raw pointer):
/// [`OutlinedTask::call`] consumes it.
#[derive(Debug)]
pub struct OutlinedTask {
    f: Body,
    data: *mut c_void,
}

impl OutlinedTask {
    /// # Safety
    /// `f` is the compiler's body for `data` (the entry point's data block, or a copy made
    /// as the compiler's copy function says, such as a deferred task's own), calling it
    /// once now is what the program asked for, and `data` stays alive until the call
    /// returns.
    #[inline]
    pub unsafe fn new(f: Body, data: *mut c_void) -> OutlinedTask {
        OutlinedTask { f, data }
    }

    /// Run the body, once.
    #[inline]
    pub fn call(self) {
        // SAFETY: the type's invariant; `self` is consumed.
        unsafe { (self.f)(self.data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    unsafe extern "C" fn bump(data: *mut c_void) {
        // SAFETY: the test passes an AtomicU32.
        unsafe { &*(data as *const AtomicU32) }.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn calls_the_body_with_its_data_from_any_thread() {
        let n = AtomicU32::new(0);
        // SAFETY: `bump` on `n`, which outlives every call below.
        let o = unsafe { Outlined::new(bump, &n as *const AtomicU32 as *mut c_void) };
        o.call();
        std::thread::scope(|s| {
            s.spawn(|| o.call());
        });
        assert_eq!(n.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_task_body_runs_once_on_its_data() {
        let n = AtomicU32::new(0);
        // SAFETY: `bump` on `n`, called once below.
        let t = unsafe { OutlinedTask::new(bump, &n as *const AtomicU32 as *mut c_void) };
        t.call();
        assert_eq!(n.load(Ordering::Relaxed), 1);
    }
}
