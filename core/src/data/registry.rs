//! Host address → handle lookup (for OpenCL `USE_HOST_PTR` buffers and OpenMP `depend`).

use super::handle::{DataHandle, HandleInner};
use crate::sync::{Mutex, Weak, lock};
use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct Registry {
    /// start address → (length in bytes, handle)
    map: Mutex<BTreeMap<usize, (usize, Weak<HandleInner>)>>,
}

impl Registry {
    pub fn insert(&self, addr: usize, len: usize, h: Weak<HandleInner>) {
        lock(&self.map).insert(addr, (len, h));
    }

    pub fn remove(&self, addr: usize) {
        lock(&self.map).remove(&addr);
    }

    /// The handle registered at exactly `addr`.
    pub fn exact(&self, addr: usize) -> Option<DataHandle> {
        lock(&self.map).get(&addr).and_then(|(_, w)| w.upgrade()).map(DataHandle)
    }

    /// The handle whose registered range contains `addr`.
    pub fn containing(&self, addr: usize) -> Option<DataHandle> {
        let m = lock(&self.map);
        let (start, (len, w)) = m.range(..=addr).next_back()?;
        if addr < start + len { w.upgrade().map(DataHandle) } else { None }
    }
}
