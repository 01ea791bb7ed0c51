//! Tags: names for tasks that may not exist yet (StarPU's `starpu_tag_t`).
//!
//! The table is sharded so that tagged submissions from several threads rarely meet on a
//! lock. Lock order: a tree lock (held by the submitter) → a tag shard → a task's state.

use super::{TaskError, TaskInner, TaskRef};
use crate::error::{Error, Result};
use crate::sync::atomic::Ordering;
use crate::sync::{Arc, Mutex, Weak, lock};
use crossbeam_utils::CachePadded;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::Tag;

enum TagState {
    /// Tasks wait on the tag, which no task carries yet.
    Unbound(Vec<TaskRef>),
    /// Carried by a task. Weak: once that task has finished (or is gone) the tag is done,
    /// without the table being touched on every completion.
    Bound(Weak<TaskInner>),
    /// Notified by the application.
    Done,
}

/// The unfinished task a `Bound` entry names.
fn live(x: &Weak<TaskInner>) -> Option<TaskRef> {
    x.upgrade().filter(|t| !t.is_done())
}

/// Tags are usually small consecutive integers: keep them in neighbouring buckets (the low
/// 57 bits as they are) and put a few mixed bits where hashbrown reads its control byte.
#[derive(Default)]
struct TagHasher(u64);

impl Hasher for TagHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, t: u64) {
        self.0 = t;
    }
    fn finish(&self) -> u64 {
        let t = self.0;
        // Drop the bits that chose the shard (`shard_of`): they are equal for every key of a
        // shard, and left in place they would make keys 4096 apart collide.
        let local = (t & 63) | ((t >> 12) << 6);
        (local & ((1 << 57) - 1)) | (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) & !((1 << 57) - 1))
    }
}

/// Outcome of `Tags::bind` besides success.
pub(crate) enum BindError {
    /// Tasks wait on the tag: call again with the carriers of the task's own tags among `preds`.
    NeedsCycleCheck,
    Fail(Error),
}

const SHARDS: usize = 64;
const _: () = assert!(SHARDS.is_power_of_two());

type Shard = CachePadded<Mutex<HashMap<Tag, TagState, BuildHasherDefault<TagHasher>>>>;

pub(crate) struct Tags {
    shards: Box<[Shard]>,
}

impl Default for Tags {
    fn default() -> Self {
        Tags { shards: (0..SHARDS).map(|_| CachePadded::new(Mutex::new(HashMap::default()))).collect() }
    }
}

/// Runs of 64 consecutive tags share a shard (and its cache lines).
fn shard_of(t: Tag) -> usize {
    ((t >> 6) & (SHARDS as u64 - 1)) as usize
}

impl Tags {
    /// Make `task` wait for tag `t`.
    pub fn depend(&self, task: &TaskRef, t: Tag) {
        use std::collections::hash_map::Entry;
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.entry(t) {
            Entry::Vacant(v) => {
                task.pending.fetch_add(1, Ordering::Relaxed);
                v.insert(TagState::Unbound(vec![task.clone()]));
            }
            Entry::Occupied(mut o) => match o.get_mut() {
                TagState::Unbound(w) => {
                    task.pending.fetch_add(1, Ordering::Relaxed);
                    w.push(task.clone());
                }
                TagState::Bound(x) => {
                    if let Some(x) = x.upgrade() {
                        x.add_successor(task);
                    }
                }
                TagState::Done => {}
            },
        }
    }

    /// The unfinished task carrying tag `t`, if any.
    pub fn carrier(&self, t: Tag) -> Option<TaskRef> {
        match lock(&self.shards[shard_of(t)]).get(&t) {
            Some(TagState::Bound(x)) => live(x),
            _ => None,
        }
    }

    /// Give tag `t` to `task`, whose future predecessors are `preds`. Tasks already waiting on
    /// `t` become its successors, unless one of them is a predecessor of `task`: a cycle.
    /// The check needs the carriers of the tags `task` waits on among `preds`; they are only
    /// looked up (`cycle_checked`) when tasks wait on `t`, since no cycle is possible otherwise.
    pub fn bind(&self, task: &TaskRef, t: Tag, preds: &[TaskRef], cycle_checked: bool) -> std::result::Result<(), BindError> {
        use std::collections::hash_map::Entry;
        let mut s = lock(&self.shards[shard_of(t)]);
        let mut o = match s.entry(t) {
            Entry::Vacant(v) => {
                v.insert(TagState::Bound(Arc::downgrade(task)));
                return Ok(());
            }
            Entry::Occupied(o) => o,
        };
        match o.get() {
            TagState::Bound(x) if live(x).is_some() => return Err(BindError::Fail(Error::TagInUse(t))),
            TagState::Unbound(w) if !w.is_empty() && !cycle_checked => return Err(BindError::NeedsCycleCheck),
            TagState::Unbound(waiters) if task.dep_tags.contains(&t) || reaches(waiters, preds) => {
                return Err(BindError::Fail(Error::DependencyCycle(t)));
            }
            _ => {}
        }
        if let TagState::Unbound(waiters) = o.insert(TagState::Bound(Arc::downgrade(task))) {
            // The waiters already count this dependency in `pending`.
            let mut st = lock(&task.state);
            st.successors.extend(waiters);
        }
        Ok(())
    }

    /// The application declares `t` done (StarPU's `starpu_tag_notify_from_apps`); returns
    /// the tasks that this made ready.
    pub fn notify(&self, t: Tag) -> Result<Vec<TaskRef>> {
        let mut s = lock(&self.shards[shard_of(t)]);
        match s.insert(t, TagState::Done) {
            Some(TagState::Unbound(w)) => Ok(w.into_iter().filter(|x| x.pending.fetch_sub(1, Ordering::AcqRel) == 1).collect()),
            Some(TagState::Bound(x)) if live(&x).is_some() => {
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
            Some(TagState::Bound(x)) if live(x).is_some() => Err(Error::TagInUse(t)),
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
                        let _ = x.poison.set(Box::new(TaskError::Failed {
                            task: x.name().to_string(),
                            msg: format!("tag {t} was never carried by a task"),
                        }));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn consecutive_tags_of_a_shard_get_distinct_buckets() {
        // Keys of shard 0 among the first 2^20 tags: with 64 shards, blocks of 64 every 4096.
        let keys: Vec<u64> = (0..1u64 << 20).filter(|&t| shard_of(t) == 0).collect();
        assert_eq!(keys.len(), (1 << 20) / SHARDS);
        let b = BuildHasherDefault::<TagHasher>::default();
        let mask = keys.len() as u64 - 1; // a table exactly as large as the shard
        let mut buckets: Vec<u64> = keys.iter().map(|k| b.hash_one(k) & mask).collect();
        buckets.sort_unstable();
        buckets.dedup();
        assert_eq!(buckets.len(), keys.len(), "keys of one shard collide");
    }
}
