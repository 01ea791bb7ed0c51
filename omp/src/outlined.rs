//! Compiler-outlined code as the core holds it: a C function and the data the compiler
//! passes it, checked once where the ABI layer receives them ([`Outlined::new`]) and
//! called safely from then on ([`Outlined::call`]): a region's body, which every thread of
//! its team runs.
//!
//! This module's `unsafe` is the one call of such a body: [`Outlined`]'s invariant,
//! made by the caller of [`Outlined::new`], is what makes it sound.

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
}
