//! Cancellation: `__kmpc_cancel`, `__kmpc_cancellationpoint` and `__kmpc_cancel_barrier`,
//! on the GOMP entry points' state (the team's and the taskgroup's cancelled flags).
//!
//! The quirk decoded here: libomp numbers the constructs 1 parallel, 2 loop, 3 sections,
//! 4 taskgroup; GOMP's are bits (1, 2, 4, 8). A static loop of this ABI takes no
//! worksharing slot, so cancelling one ends only the calling thread's share; the others
//! run theirs to the end (allowed: a thread only has to notice at a cancellation point).

use super::Ident;
use crate::abi::parallel::{GOMP_cancel, GOMP_cancellation_point};
use crate::abi::sync::GOMP_barrier_cancel;

/// libomp's `kmp_cancel_kind_t` as GOMP's `which` bit (0: none).
fn which(kind: i32) -> i32 {
    match kind {
        1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        _ => 0,
    }
}

/// 1 when the construct is cancelled (always, with cancellation enabled): the caller jumps
/// to its end.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancel(_loc: Ident, _gtid: i32, kind: i32) -> i32 {
    match which(kind) {
        0 => 0,
        w => i32::from(GOMP_cancel(w, true)),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancellationpoint(_loc: Ident, _gtid: i32, kind: i32) -> i32 {
    match which(kind) {
        0 => 0,
        w => i32::from(GOMP_cancellation_point(w)),
    }
}

/// A barrier in a cancellable region: 1 when the region was cancelled.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_cancel_barrier(_loc: Ident, _gtid: i32) -> i32 {
    i32::from(GOMP_barrier_cancel())
}

#[cfg(test)]
mod tests {
    #[test]
    fn kinds_as_gomp_bits() {
        assert_eq!([0, 1, 2, 3, 4, 5].map(super::which), [0, 1, 2, 4, 8, 0]);
    }
}
