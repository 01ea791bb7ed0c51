//! Doacross loops (`ordered(n)` with `depend(sink: ...)`/`depend(source)`):
//! `__kmpc_doacross_init/wait/post/fini` on ws.rs's doacross table, as the GOMP loops use.
//!
//! Quirks decoded here: the dimensions come as `kmp_dim {lo, up, st}` (inclusive upper
//! bound) in an init call of their own, before the loop's own static or dispatch init, so
//! the table is not the loop's worksharing slot's but a team-shared one
//! ([`super::team_shared`]); and `wait`/`post` take the iteration variables' values, not
//! iteration numbers (a value outside the loop: the wait returns at once, as libomp's).

use super::Ident;
use crate::abi::guard;
use crate::ws::{self, Doacross};
use std::cell::RefCell;
use std::sync::Arc;

/// `struct kmp_dim`.
#[repr(C)]
pub struct Dim {
    lo: i64,
    up: i64,
    st: i64,
}

/// One dimension's iteration number of the value `x` (None: outside the loop).
fn iteration(&(lo, up, st): &(i64, i64, i64), x: i64) -> Option<u64> {
    let (lo, up, st, x) = (lo as i128, up as i128, st as i128, x as i128);
    if st > 0 && (lo..=up).contains(&x) {
        Some(((x - lo) / st) as u64)
    } else if st < 0 && (up..=lo).contains(&x) {
        Some(((lo - x) / -st) as u64)
    } else {
        None
    }
}

/// A dimension's iteration count.
fn count(d: &(i64, i64, i64)) -> u64 {
    iteration(d, d.1).map_or(0, |k| k + 1)
}

/// A doacross loop as a thread sees it: the team's table and the dimensions.
type Loop = (Arc<Doacross>, Vec<(i64, i64, i64)>);

thread_local! {
    /// The calling thread's doacross loops, innermost last.
    static LOOPS: RefCell<Vec<Loop>> = const { RefCell::new(Vec::new()) };
}

/// # Safety
/// `dims` holds `num_dims` dimensions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_init(_loc: Ident, _gtid: i32, num_dims: i32, dims: *const Dim) {
    guard("__kmpc_doacross_init", || {
        let dims: Vec<(i64, i64, i64)> = (0..num_dims.max(0) as usize)
            .map(|i| {
                // SAFETY: per the contract.
                let d = unsafe { &*dims.add(i) };
                (d.lo, d.up, d.st)
            })
            .collect();
        let counts: Vec<u64> = dims.iter().map(count).collect();
        let table = super::team_shared(super::SHARED_DOACROSS, |_| ws::doacross_new(&counts));
        LOOPS.with(|l| l.borrow_mut().push((table, dims)));
    })
}

/// The iteration numbers of the values `vec` in the innermost loop, and its table.
///
/// # Safety
/// `vec` holds one value per dimension of the calling thread's innermost doacross loop.
unsafe fn with_iteration(vec: *const i64, f: impl FnOnce(&Doacross, &[u64])) {
    LOOPS.with(|l| {
        let l = l.borrow();
        let Some((table, dims)) = l.last() else { return };
        let mut v = Vec::with_capacity(dims.len());
        for (i, d) in dims.iter().enumerate() {
            // SAFETY: per the contract.
            match iteration(d, unsafe { *vec.add(i) }) {
                Some(k) => v.push(k),
                None => return,
            }
        }
        if !v.is_empty() {
            f(table, &v)
        }
    })
}

/// `depend(sink: vec)`: wait until iteration `vec` is posted.
///
/// # Safety
/// As [`with_iteration`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_wait(_loc: Ident, _gtid: i32, vec: *const i64) {
    let traced = crate::trace::start();
    // SAFETY: per the contract.
    guard("__kmpc_doacross_wait", || unsafe { with_iteration(vec, ws::doacross_wait_in) });
    crate::trace::end(traced, "omp ordered depend(sink)");
}

/// `depend(source)`: iteration `vec` is done.
///
/// # Safety
/// As [`with_iteration`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_doacross_post(_loc: Ident, _gtid: i32, vec: *const i64) {
    let traced = crate::trace::start();
    // SAFETY: per the contract.
    guard("__kmpc_doacross_post", || unsafe { with_iteration(vec, ws::doacross_post_in) });
    crate::trace::end(traced, "omp ordered depend(source)");
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_doacross_fini(_loc: Ident, _gtid: i32) {
    guard("__kmpc_doacross_fini", || {
        LOOPS.with(|l| l.borrow_mut().pop());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_iteration_numbers() {
        // for (i = 2; i <= 10; i += 3): 2, 5, 8.
        let d = (2, 10, 3);
        assert_eq!([2, 5, 8, 1, 11].map(|x| iteration(&d, x)), [Some(0), Some(1), Some(2), None, None]);
        assert_eq!(count(&d), 3);
        // for (i = 10; i >= 0; i -= 5): 10, 5, 0.
        let d = (10, 0, -5);
        assert_eq!([10, 5, 0, -5].map(|x| iteration(&d, x)), [Some(0), Some(1), Some(2), None]);
        assert_eq!(count(&d), 3);
        assert_eq!(count(&(5, 4, 1)), 0);
    }
}
