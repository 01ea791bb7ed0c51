//! Tags: names for tasks that may not exist yet (StarPU's `starpu_tag_t`).
//!
//! The table is sharded so that tagged submissions from several threads rarely meet on a
//! lock. Lock order: a tree lock (held by the submitter) → a tag shard → a task's state.

use super::{TaskError, TaskRef};
use crate::error::{Error, Result};
use crate::sync::atomic::Ordering;
use crate::sync::{Arc, Mutex, lock};
use crossbeam_utils::CachePadded;
use std::collections::{HashMap, HashSet};

use super::Tag;

enum TagState {
    /// Tasks wait on the tag, which no task carries yet.
    Unbound(Vec<TaskRef>),
    /// The task carrying the tag has not completed.
    Bound(TaskRef),
    /// Completed (or notified by the application).
    Done,
}

const SHARDS: usize = 64;

type Shard = CachePadded<Mutex<HashMap<Tag, TagState>>>;

pub(crate) struct Tags {
    shards: Box<[Shard]>,
}

impl Default for Tags {
    fn default() -> Self {
        Tags { shards: (0..SHARDS).map(|_| CachePadded::new(Mutex::new(HashMap::new()))).collect() }
    }
}

fn shard_of(t: Tag) -> usize {
    (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % SHARDS
}

impl Tags {
    /// Make `task` wait for tag `t`.
    pub fn depend(&self, task: &TaskRef, t: Tag) {
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.get_mut(&t) {
            None => {
                task.pending.fetch_add(1, Ordering::Relaxed);
                s.insert(t, TagState::Unbound(vec![task.clone()]));
            }
            Some(TagState::Unbound(w)) => {
                task.pending.fetch_add(1, Ordering::Relaxed);
                w.push(task.clone());
            }
            Some(TagState::Bound(x)) => {
                x.add_successor(task);
            }
            Some(TagState::Done) => {}
        }
    }

    /// The unfinished task carrying tag `t`, if any.
    pub fn carrier(&self, t: Tag) -> Option<TaskRef> {
        match lock(&self.shards[shard_of(t)]).get(&t) {
            Some(TagState::Bound(x)) if !x.is_done() => Some(x.clone()),
            _ => None,
        }
    }

    /// Give tag `t` to `task`, whose future predecessors are `preds`. Tasks already waiting on
    /// `t` become its successors, unless one of them is a predecessor of `task`: a cycle.
    pub fn bind(&self, task: &TaskRef, t: Tag, preds: &[TaskRef]) -> Result<()> {
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.get(&t) {
            Some(TagState::Bound(x)) if !x.is_done() => return Err(Error::TagInUse(t)),
            Some(TagState::Unbound(waiters)) if task.dep_tags.contains(&t) || reaches(waiters, preds) => {
                return Err(Error::DependencyCycle(t));
            }
            _ => {}
        }
        if let Some(TagState::Unbound(waiters)) = s.insert(t, TagState::Bound(task.clone())) {
            // The waiters already count this dependency in `pending`.
            let mut st = lock(&task.state);
            st.successors.extend(waiters);
        }
        Ok(())
    }

    /// The task carrying `t` completed.
    pub fn complete(&self, t: Tag, task: &TaskRef) {
        let mut s = lock(&self.shards[shard_of(t)]);
        if let Some(st @ TagState::Bound(_)) = s.get_mut(&t)
            && matches!(st, TagState::Bound(x) if Arc::ptr_eq(x, task))
        {
            *st = TagState::Done;
        }
    }

    /// The application declares `t` done (StarPU's `starpu_tag_notify_from_apps`); returns
    /// the tasks that this made ready.
    pub fn notify(&self, t: Tag) -> Result<Vec<TaskRef>> {
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.insert(t, TagState::Done) {
            Some(TagState::Unbound(w)) => Ok(w.into_iter().filter(|x| x.pending.fetch_sub(1, Ordering::AcqRel) == 1).collect()),
            Some(TagState::Bound(x)) if !x.is_done() => {
                s.insert(t, TagState::Bound(x));
                Err(Error::TagInUse(t))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Forget tag `t` (StarPU's `starpu_tag_remove`); fails while tasks wait on it.
    pub fn remove(&self, t: Tag) -> Result<()> {
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.get(&t) {
            Some(TagState::Unbound(_)) => Err(Error::TagInUse(t)),
            Some(TagState::Bound(x)) if !x.is_done() => Err(Error::TagInUse(t)),
            _ => {
                s.remove(&t);
                Ok(())
            }
        }
    }

    /// Tags that tasks wait on but that no task carries.
    pub fn unbound_with_waiters(&self) -> Vec<Tag> {
        let mut v: Vec<Tag> = self
            .shards
            .iter()
            .flat_map(|s| {
                lock(s).iter().filter(|(_, st)| matches!(st, TagState::Unbound(w) if !w.is_empty())).map(|(t, _)| *t).collect::<Vec<_>>()
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Cancel every task waiting on a tag nobody carries (shutdown with a stalled graph).
    pub fn cancel_unbound(&self) -> Vec<TaskRef> {
        let mut out = Vec::new();
        for s in self.shards.iter() {
            for (t, st) in lock(s).iter_mut() {
                if let TagState::Unbound(w) = st {
                    for x in w.drain(..) {
                        let _ = x
                            .poison
                            .set(TaskError::Failed { task: x.name().to_string(), msg: format!("tag {t} was never carried by a task") });
                        if x.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                            out.push(x);
                        }
                    }
                }
            }
        }
        out
    }
}

/// Whether any task reachable from `from` (through successor edges) is in `targets`.
fn reaches(from: &[TaskRef], targets: &[TaskRef]) -> bool {
    if targets.is_empty() {
        return false;
    }
    let goal: HashSet<*const super::TaskInner> = targets.iter().map(Arc::as_ptr).collect();
    let mut seen: HashSet<*const super::TaskInner> = HashSet::new();
    let mut stack: Vec<TaskRef> = from.to_vec();
    while let Some(t) = stack.pop() {
        let p = Arc::as_ptr(&t);
        if goal.contains(&p) {
            return true;
        }
        if !seen.insert(p) {
            continue;
        }
        let st = lock(&t.state);
        if !st.done {
            stack.extend(st.successors.iter().cloned());
        }
    }
    false
}
