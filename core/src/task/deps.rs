//! Implicit dependencies: sequential consistency per data handle.
//!
//! Each handle keeps the tasks of its current *phase* and of the phase before. Accesses
//! that may run together form one phase: readers (R), REDUX contributors, COMMUTE writers;
//! every W/RW access is a phase of its own. A task joining the current phase depends on
//! the previous phase; a task starting a new phase depends on the whole current phase.
//! For handles in a partition tree, a task also depends on the conflicting tasks of every
//! ancestor and descendant (children alias the parent's memory).
//!
//! The functions here run with the task's trees locked (in tree-id order) by the submitter.

use super::{AccessMode, TaskInner, TaskRef};
use crate::data::{Phase, PhaseTasks, TreeState, relatives};
use crate::sync::{Arc, Weak};

pub(crate) fn phase_of(m: AccessMode) -> Phase {
    match m {
        AccessMode::R => Phase::Read,
        AccessMode::W | AccessMode::RW => Phase::Write,
        AccessMode::Redux => Phase::Redux,
        AccessMode::Commute => Phase::Commute,
        AccessMode::Scratch => Phase::None,
    }
}

/// Readers accumulate in a phase; drop finished ones now and then so that a handle read by
/// millions of tasks does not keep them all alive.
fn prune(v: &mut PhaseTasks) {
    if v.len() >= 64 && v.len().is_power_of_two() {
        v.retain(|t| t.upgrade().is_some_and(|t| !t.is_done()));
    }
}

/// The unfinished tasks of a phase.
pub(crate) fn live(v: &[Weak<TaskInner>]) -> impl Iterator<Item = TaskRef> + '_ {
    v.iter().filter_map(Weak::upgrade)
}

/// A task's predecessors, inline up to a few: registering a task allocates nothing more.
pub(crate) type Preds = smallvec::SmallVec<[TaskRef; 4]>;

/// Collect the predecessors of an access of `mode` to entry `idx`, and (if `apply`) record
/// `task` in the handle's phase state.
pub(crate) fn access_preds(st: &mut TreeState, idx: usize, mode: AccessMode, task: &TaskRef, apply: bool, preds: &mut Preds) {
    if mode == AccessMode::Scratch {
        return;
    }
    let p = phase_of(mode);
    let e = &st.entries[idx];
    // Most handles are in no partition tree: no relatives to look at (and no list to build).
    let related = if e.parent.is_none() && e.children.is_empty() { Default::default() } else { relatives(st, idx) };
    for r in related {
        let d = &st.entries[r].deps;
        if mode == AccessMode::R && d.phase == Phase::Read {
            preds.extend(live(&d.prev));
        } else {
            preds.extend(live(&d.cur));
        }
    }
    let d = &mut st.entries[idx].deps;
    if p != Phase::Write && p == d.phase {
        preds.extend(live(&d.prev));
        if apply {
            d.cur.push(Arc::downgrade(task));
            prune(&mut d.cur);
        }
    } else {
        preds.extend(live(&d.cur));
        if apply {
            d.prev = std::mem::take(&mut d.cur);
            d.cur.push(Arc::downgrade(task));
            d.phase = p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_of_modes() {
        assert_eq!(phase_of(AccessMode::R), Phase::Read);
        assert_eq!(phase_of(AccessMode::RW), Phase::Write);
        assert_eq!(phase_of(AccessMode::Commute), Phase::Commute);
        assert_eq!(phase_of(AccessMode::Redux), Phase::Redux);
    }
}
