//! GCC's depend array (`GOMP_task`, `GOMP_taskwait_depend`; libgomp's task.c), decoded into
//! the runtime's [`Deps`].
//!
//! Two layouts. Before OpenMP 5.0: `[n, nout, addresses…]`, the `nout` first being `out`
//! or `inout`, the rest `in`. Since: `[0, n, nout, nmutex, nin, addresses…]`: `out`/`inout`,
//! then `mutexinoutset`, then `in`, then `n - nout - nmutex - nin` depend objects
//! (`omp_depend_t`: `{ address, kind }` with GOMP_DEPEND_* kinds, inoutset among them).

use crate::task::Deps;
use std::ffi::c_void;
use weft_core::AccessMode;

/// gomp-constants.h's GOMP_DEPEND_* kinds, in depend objects.
const DEPEND_IN: usize = 1;
const DEPEND_OUT: usize = 2;
const DEPEND_INOUT: usize = 3;
const DEPEND_MUTEXINOUTSET: usize = 4;
const DEPEND_INOUTSET: usize = 5;

/// How a depend object's kind orders a task against its siblings.
fn mode(kind: usize) -> Option<AccessMode> {
    match kind {
        DEPEND_IN => Some(AccessMode::R),
        DEPEND_OUT | DEPEND_INOUT => Some(AccessMode::RW),
        DEPEND_MUTEXINOUTSET => Some(AccessMode::Commute),
        // inoutset tasks may run together but not beside `in` tasks: ordering them like
        // writers is correct, only less parallel.
        DEPEND_INOUTSET => Some(AccessMode::RW),
        _ => None,
    }
}

/// Add the (address, mode) pairs of `depend` to `deps` ([`Deps::add`]: repeated addresses
/// merged). Inline in `GOMP_task`, into its `Spawn`: a call of its own saves and restores
/// registers the caller has already saved, for a loop of a few items.
///
/// # Safety
/// `depend` is the array the compiler passed (either layout), its depend objects
/// initialized by `depobj` constructs.
#[inline(always)]
pub unsafe fn decode(depend: *mut *mut c_void, deps: &mut Deps) {
    let at = |i: usize| -> usize {
        // SAFETY: indices within the counts the array itself gives.
        unsafe { *depend.add(i) as usize }
    };
    let n = at(0);
    if n != 0 {
        // `nout` writers, then readers.
        let nout = at(1).min(n);
        deps.extend((0..nout).map(|i| (at(2 + i), AccessMode::RW)));
        deps.extend((nout..n).map(|i| (at(2 + i), AccessMode::R)));
        return;
    }
    let (n, nout, nmutex, nin) = (at(1), at(2), at(3), at(4));
    let normal = nout + nmutex + nin;
    deps.extend((0..n).map(|i| {
        let p = at(5 + i);
        if i < nout {
            (p, AccessMode::RW)
        } else if i < nout + nmutex {
            (p, AccessMode::Commute)
        } else if i < normal {
            (p, AccessMode::R)
        } else {
            let obj = p as *const usize;
            // SAFETY: an omp_depend_t the program initialized with a depobj construct.
            let (addr, kind) = unsafe { (*obj, *obj.add(1)) };
            match mode(kind) {
                Some(m) => (addr, m),
                None => {
                    eprintln!("weft-omp: unknown omp_depend_t dependence type {kind}; aborting");
                    std::process::abort();
                }
            }
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessMode::{Commute, R, RW};

    fn run(mut a: Vec<usize>) -> Vec<(usize, AccessMode)> {
        let mut deps = Deps::new();
        // SAFETY: a well-formed array.
        unsafe { decode(a.as_mut_ptr().cast(), &mut deps) };
        deps.to_vec()
    }

    #[test]
    fn the_layout_before_openmp_5() {
        // depend(out: a) depend(inout: b) depend(in: c, d)
        assert_eq!(run(vec![4, 2, 0xa, 0xb, 0xc, 0xd]), vec![(0xa, RW), (0xb, RW), (0xc, R), (0xd, R)]);
    }

    #[test]
    fn the_openmp_5_layout_with_depend_objects() {
        // out a, mutexinoutset b, in c, then depend objects: inoutset d, in e, mutex f.
        let objs = [[0xd, DEPEND_INOUTSET], [0xe, DEPEND_IN], [0xf, DEPEND_MUTEXINOUTSET]];
        let mut a = vec![0, 6, 1, 1, 1, 0xa, 0xb, 0xc];
        a.extend(objs.iter().map(|o| o.as_ptr() as usize));
        assert_eq!(run(a), vec![(0xa, RW), (0xb, Commute), (0xc, R), (0xd, RW), (0xe, R), (0xf, Commute)]);
    }

    #[test]
    fn a_repeated_address_takes_the_strongest_mode() {
        // in a, then out a; mutexinoutset b and in b.
        assert_eq!(run(vec![0, 4, 1, 1, 2, 0xa, 0xb, 0xa, 0xb]), vec![(0xa, RW), (0xb, Commute)]);
        assert_eq!(run(vec![3, 0, 0xa, 0xa, 0xa]), vec![(0xa, R)]);
        // Past the four addresses held inline.
        let five = vec![(0xa, RW), (0xb, RW), (0xc, R), (0xd, R), (0xe, R)];
        assert_eq!(run(vec![7, 2, 0xa, 0xb, 0xc, 0xd, 0xe, 0xa, 0xe]), five);
        // in a…e, then a depend object out a.
        let obj = [0xa, DEPEND_OUT];
        let got = run(vec![0, 6, 0, 0, 5, 0xa, 0xb, 0xc, 0xd, 0xe, obj.as_ptr() as usize]);
        assert_eq!(got, vec![(0xa, RW), (0xb, R), (0xc, R), (0xd, R), (0xe, R)]);
    }
}
