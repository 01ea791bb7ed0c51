//! The one place synchronisation primitives are imported from, so a model checker can be
//! swapped in here (crossbeam's `primitive` module does the same).

pub(crate) use std::sync::atomic;
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

/// Lock a mutex, ignoring poisoning: a panic in user code is caught and reported as a task
/// error before it can leave runtime state half-updated, so a poisoned lock holds consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
