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
use crate::data::{DataHandle, DepState, Phase, PhaseTasks, Tree, TreeState, relatives};
use crate::sync::{Arc, MutexGuard, Weak};
use smallvec::SmallVec;

pub(crate) fn phase_of(m: AccessMode) -> Phase {
    match m {
        AccessMode::R => Phase::Read,
        AccessMode::W | AccessMode::RW => Phase::Write,
        AccessMode::Redux => Phase::Redux,
        AccessMode::Commute => Phase::Commute,
        AccessMode::Scratch => Phase::None,
    }
}

/// Readers accumulate in a phase; drop finished ones and vacated places now and then so that
/// a handle read by millions of tasks does not keep them all alive nor grow without bound.
/// Compacting moves tasks: their recorded places go stale and `forget` scans for them.
fn prune(v: &mut PhaseTasks) {
    if v.len() >= 64 && v.len().is_power_of_two() {
        v.retain(|t| t.upgrade().is_some_and(|t| !t.is_done()));
    }
}

/// The current phase becomes the previous one; the current list starts empty in the old
/// previous list's memory. A read phase of many readers spills to the heap; a handle read
/// widely again and again then neither frees that list at each phase change nor grows a new
/// one reader by reader. Memory over [`KEPT_CAPACITY`] places is given back. (A tile read
/// by one wide phase still grows its list once. Measured, commit 7ff688c: bench/RESULTS.md,
/// "Figures behind code comments".)
fn new_phase(d: &mut DepState) {
    std::mem::swap(&mut d.prev, &mut d.cur);
    if d.cur.capacity() > KEPT_CAPACITY {
        d.cur = PhaseTasks::new();
    } else {
        d.cur.clear();
    }
}

/// The most places a handle's phase list keeps when it is emptied ([`new_phase`]).
const KEPT_CAPACITY: usize = 128;

/// How far into a phase's list `forget` looks for a task not at its recorded place:
/// completing a task costs at most this much per access, however many readers a handle
/// has in flight.
const FORGET_SCAN: usize = 64;

/// Remove a completed task from entry `idx`'s phase lists, looking first at `slot`, where
/// registering put it. A weak reference keeps the task's allocation alive: a handle whose
/// last phase had many readers and which is never used again (a factored tile) would
/// otherwise hold all of them until it goes, and every new task would be fresh memory
/// (page faults and time outside the kernels on OpenMP Cholesky, commit 0c63990:
/// bench/RESULTS.md, "Figures behind code comments"). The place is vacated, not removed, so
/// that the other tasks' places stay valid (`prune` compacts).
pub(crate) fn forget(st: &mut TreeState, idx: usize, task: *const TaskInner, slot: u32) {
    let d = &mut st.entries[idx].deps;
    let at = |v: &PhaseTasks| v.get(slot as usize).is_some_and(|w| std::ptr::eq(w.as_ptr(), task));
    for v in [&mut d.cur, &mut d.prev] {
        if at(v) {
            v[slot as usize] = Weak::new();
            return;
        }
    }
    for v in [&mut d.cur, &mut d.prev] {
        let n = v.len().min(FORGET_SCAN);
        if let Some(i) = v[..n].iter().position(|w| std::ptr::eq(w.as_ptr(), task)) {
            v[i] = Weak::new();
            return;
        }
    }
}

/// The unfinished tasks of a phase.
pub(crate) fn live(v: &[Weak<TaskInner>]) -> impl Iterator<Item = TaskRef> + '_ {
    v.iter().filter_map(Weak::upgrade)
}

/// The trees of some accesses, each locked once, in tree-id order: the order every
/// submission (and predecessor lookup) takes them in, so two cannot deadlock.
pub(crate) struct LockedTrees<'a> {
    /// Each tree's id with its guard.
    guards: SmallVec<[(u64, MutexGuard<'a, TreeState>); 3]>,
}

impl<'a> LockedTrees<'a> {
    pub(crate) fn new(handles: impl Iterator<Item = &'a DataHandle>) -> LockedTrees<'a> {
        // Borrowed from the handles: no reference counting.
        let mut trees: SmallVec<[&'a Tree; 3]> = handles.map(|h| &*h.0.tree).collect();
        if trees.len() > 1 {
            trees.sort_unstable_by_key(|t| t.id);
            trees.dedup_by_key(|t| t.id);
        }
        let mut guards = SmallVec::new();
        for t in trees {
            guards.push((t.id, t.lock()));
        }
        LockedTrees { guards }
    }

    /// The locked state of `h`'s tree (`h` is one of the accesses' handles).
    pub(crate) fn of(&mut self, h: &DataHandle) -> &mut TreeState {
        let id = h.0.tree.id;
        let (_, g) = self.guards.iter_mut().find(|(i, _)| *i == id).expect("invariant: tree locked");
        g
    }
}

/// A task's predecessors, inline up to a few: registering a task allocates nothing more.
pub(crate) type Preds = smallvec::SmallVec<[TaskRef; 4]>;

/// Collect the predecessors of an access of `mode` to entry `idx`, and (if `record` names a
/// task) record that task in the handle's phase state; returns where in the current phase's
/// list (for `forget`).
pub(crate) fn access_preds(st: &mut TreeState, idx: usize, mode: AccessMode, record: Option<&TaskRef>, preds: &mut Preds) -> Option<u32> {
    if mode == AccessMode::Scratch {
        return None;
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
        record?;
        prune(&mut d.cur);
    } else {
        preds.extend(live(&d.cur));
        record?;
        new_phase(d);
        d.phase = p;
    }
    d.cur.push(Arc::downgrade(record?));
    u32::try_from(d.cur.len() - 1).ok()
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

    use crate::{Config, DataHandle, External, Runtime, Shape, TaskBuilder};
    use std::sync::mpsc::{Sender, channel};

    /// A runtime with one CPU worker and a one-byte handle.
    fn one_handle() -> (Runtime, DataHandle) {
        let rt = Runtime::new(Config { ncpu: Some(1), ..Config::default() }).unwrap();
        let h = rt.alloc(Shape::Bytes { size: 1 }).unwrap();
        (rt, h)
    }

    /// An external task accessing `h`: its token comes on `tx` once it is ready; a weak
    /// reference to it is returned (which keeps its allocation, not the task).
    fn submit(rt: &Runtime, h: &DataHandle, mode: AccessMode, tx: &Sender<External>) -> Weak<TaskInner> {
        let tx = tx.clone();
        let t = rt.submit_external(TaskBuilder::empty().access(h, mode), move |e| tx.send(e).unwrap()).unwrap();
        Arc::downgrade(&t.0)
    }

    /// Places of the handle's (previous, current) phase lists not vacated (a vacated one is
    /// a weak reference to no allocation).
    fn held(h: &DataHandle) -> (usize, usize) {
        let st = h.0.tree.lock();
        let d = &st.entries[h.0.idx].deps;
        let count = |v: &PhaseTasks| v.iter().filter(|w| !w.ptr_eq(&Weak::new())).count();
        (count(&d.prev), count(&d.cur))
    }

    /// A handle's last phase does not keep its finished tasks: after a writer and readers
    /// complete, and with no later access, its lists are empty (no weak reference keeps
    /// their allocations) and nothing holds the tasks.
    #[test]
    fn completed_tasks_leave_their_handles_phase_lists() {
        let (rt, h) = one_handle();
        let (tx, rx) = channel();
        let modes = [AccessMode::RW, AccessMode::R, AccessMode::R, AccessMode::R];
        let tasks: Vec<_> = modes.into_iter().map(|m| submit(&rt, &h, m, &tx)).collect();
        assert_eq!(held(&h), (1, 3), "the writer's phase, then the three readers'");
        for _ in 0..tasks.len() {
            rt.complete_external(rx.recv().unwrap());
        }
        rt.wait_for_all().unwrap();
        assert_eq!(held(&h), (0, 0), "completed tasks stay in the handle's lists");
        assert!(tasks.iter().all(|w| w.upgrade().is_none()), "a completed task is still held");
    }

    /// A lookup finds what a task would wait for and records nothing: a later task does not
    /// wait for the work that looked them up, and COMMUTE, which needs the arbiter, is refused.
    /// Both forms (a builder, borrowed handles) find the same.
    #[test]
    fn predecessors_are_found_without_a_task() {
        let (rt, h) = one_handle();
        let (tx, rx) = channel();
        let _w = submit(&rt, &h, AccessMode::RW, &tx);
        let writer = rx.recv().unwrap();
        let query = |m: AccessMode| {
            let by_builder = rt.predecessors(&TaskBuilder::empty().access(&h, m));
            let borrowed = rt.predecessors_of(&[(&h, m)]);
            match (&by_builder, &borrowed) {
                (Ok(a), Ok(b)) => assert_eq!((a.len(), a.done()), (b.len(), b.done()), "the two forms differ for {m:?}"),
                (Err(_), Err(_)) => {}
                _ => panic!("one form failed and the other did not for {m:?}"),
            }
            by_builder
        };
        let p = query(AccessMode::R).unwrap();
        assert_eq!(p.len(), 1, "a reader waits for the writer");
        assert!(!p.done());
        assert_eq!(held(&h), (0, 1), "the lookup was recorded in the handle's phases");
        // A reader submitted now waits for the writer only, not for the lookup.
        let _r = submit(&rt, &h, AccessMode::R, &tx);
        assert!(rx.try_recv().is_err(), "the reader ran before the writer completed");
        rt.complete_external(writer);
        assert!(p.done(), "the writer completed");
        let reader = rx.recv().unwrap();
        let w = query(AccessMode::RW).unwrap();
        assert_eq!((w.len(), w.done()), (1, false), "a writer waits for the reader in flight");
        assert!(query(AccessMode::R).unwrap().is_empty(), "readers do not wait for each other");
        assert!(matches!(query(AccessMode::Commute), Err(crate::Error::Unsupported(_))));
        rt.complete_external(reader);
        assert!(w.done());
        rt.wait_for_all().unwrap();
    }

    /// A handle from another runtime is refused by the lookup, as by a submission.
    #[test]
    fn predecessors_of_refuses_another_runtimes_handle() {
        let (rt, _) = one_handle();
        let (_other, h) = one_handle();
        assert!(matches!(rt.predecessors_of(&[(&h, AccessMode::R)]), Err(crate::Error::InvalidData(_))));
    }

    /// A new phase starts in the memory of the list two phases back (no allocation while
    /// the lists are small), and a large list's memory is given back.
    #[test]
    fn a_new_phase_reuses_the_old_list() {
        let mut d = DepState::default();
        d.cur.extend((0..40).map(|_| Weak::new()));
        new_phase(&mut d);
        assert_eq!((d.prev.len(), d.cur.len()), (40, 0));
        d.cur.extend((0..40).map(|_| Weak::new()));
        new_phase(&mut d);
        assert_eq!((d.prev.len(), d.cur.len()), (40, 0));
        assert!(d.cur.capacity() >= 40, "the list two phases back was not kept");
        d.cur.extend((0..3 * KEPT_CAPACITY).map(|_| Weak::new()));
        new_phase(&mut d);
        new_phase(&mut d);
        assert_eq!((d.prev.len(), d.cur.len()), (0, 0));
        assert!(d.cur.capacity() <= KEPT_CAPACITY, "a list of {} places was kept", d.cur.capacity());
    }

    /// Compacting a phase list moves its tasks from the places `forget` recorded: it finds
    /// them anyway, and reuses no place another task holds.
    #[test]
    fn forget_finds_tasks_that_pruning_moved() {
        let (rt, h) = one_handle();
        let (tx, rx) = channel();
        let readers = |n: usize| (0..n).map(|_| submit(&rt, &h, AccessMode::R, &tx)).collect::<Vec<_>>();
        // 48 readers, 40 of them complete (their places vacated, the other 8 at 40..48);
        // 40 more: at 64 places the list is compacted and the 8 move to 0..8.
        let mut tasks = readers(48);
        let ready: Vec<_> = (0..48).map(|_| rx.recv().unwrap()).collect();
        let mut ready = ready.into_iter();
        for e in ready.by_ref().take(40) {
            rt.complete_external(e);
        }
        tasks.extend(readers(40));
        assert_eq!(held(&h).1, 48, "8 earlier readers and 40 new ones");
        for e in ready {
            rt.complete_external(e);
        }
        assert_eq!(held(&h).1, 40, "the 8 moved readers are still held");
        for _ in 0..40 {
            rt.complete_external(rx.recv().unwrap());
        }
        rt.wait_for_all().unwrap();
        assert_eq!(held(&h).1, 0, "completed readers stay in the list");
        assert!(tasks.iter().all(|w| w.upgrade().is_none()), "a completed task is still held");
    }
}
