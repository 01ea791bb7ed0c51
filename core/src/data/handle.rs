//! Data handles: registration, partitioning, application access, reductions, unregistration.
//!
//! Unregistering a handle that submitted tasks still use **waits** for those tasks (as
//! StarPU does), then writes the newest data back home. Called from inside a task, where
//! waiting could deadlock, it fails with `Error::WouldDeadlock` instead.
#![allow(unsafe_code)]

use super::filters::{Filter, split};
use super::interface::{Shape, Strides};
use super::view::View;
use super::{DepState, Entry, Home, Redux, Replica, ReplicaState, Tree, TreeState};
use crate::error::{Error, Result};
use crate::runtime::{Runtime, RuntimeInner};
use crate::sync::atomic::Ordering;
use crate::sync::{Arc, lock};
use crate::task::{AccessMode, AcquireSignal, Codelet, TaskBuilder, TaskContext, TaskRef};
use bytemuck::Pod;
use std::any::Any;

/// Aligned to a cache line so that its fields sit on a line of their own, apart from the
/// reference counts `Arc` puts in front: every task's access clones the handle on the
/// submitting thread while the completing thread reads `tree` and `idx`, and sharing one line
/// made each side miss on the other's writes (`TaskBuilder::add_access` spent half its time
/// on the clone's increment). Measured, commit 60fc030: bench/RESULTS.md, "Figures behind
/// code comments".
#[repr(align(64))]
pub struct HandleInner {
    pub(crate) rt: Arc<RuntimeInner>,
    pub(crate) tree: Arc<Tree>,
    pub(crate) idx: usize,
    pub(crate) id: u64,
}

/// A piece of data the runtime keeps coherent across memory nodes.
#[derive(Clone)]
pub struct DataHandle(pub(crate) Arc<HandleInner>);

impl std::fmt::Debug for DataHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataHandle#{}", self.0.id)
    }
}

impl PartialEq for DataHandle {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0)
    }
}
impl Eq for DataHandle {}

/// Acquire entry `h` on `node` (host-addressable) for `mode`, pinned, and view it there;
/// copies run, and others' are waited for, without the tree lock (see `data::coherence`).
pub(crate) fn acquire_view(h: &HandleInner, node: usize, mode: AccessMode) -> Result<View> {
    let got = super::coherence::acquire_unlocked(
        &h.tree,
        h.idx,
        node,
        mode,
        false,
        || true,
        |st| {
            let p = st.host_addr(&h.tree, h.idx, node).inspect_err(|_| st.release(h.idx, node))?;
            let e = &st.entries[h.idx];
            Ok(view(p, e.shape, e.strides_on(node), mode))
        },
    )?;
    Ok(got.unwrap_or_else(|_| unreachable!("a waiting acquisition is never deferred")))
}

/// Build a view (the one place views are made).
pub(crate) fn view(p: *mut u8, shape: Shape, strides: Strides, mode: AccessMode) -> View {
    // SAFETY: callers pass the address of a replica acquired (pinned, valid, ordered by
    // dependencies) for `mode`, laid out with `strides`, for the duration of the view.
    unsafe { View::new(p, shape, strides, mode) }
}

fn new_entry(id: u64, shape: Shape, strides: Strides, nnodes: usize, parent: Option<usize>, off: usize) -> Entry {
    let mut replicas: smallvec::SmallVec<[Replica; 2]> = (0..nnodes).map(|_| Replica::invalid()).collect();
    replicas[0].state = ReplicaState::Owner;
    Entry {
        id,
        shape,
        parent,
        children: Vec::new(),
        home_offset: off,
        home_strides: strides,
        replicas,
        deps: DepState::default(),
        redux: None,
        alive: true,
        host_addr: None,
    }
}

impl RuntimeInner {
    fn new_handle(self: &Arc<Self>, shape: Shape, strides: Strides, home: Home) -> Result<DataHandle> {
        shape.validate(strides).map_err(Error::InvalidData)?;
        let addr = match &home {
            Home::Owned { ptr, .. } | Home::User { ptr } => Some(*ptr as usize),
            Home::Runtime { .. } => None,
        };
        if addr == Some(0) {
            return Err(Error::InvalidData("null pointer".into()));
        }
        let id = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let mut e = new_entry(id, shape, strides, self.nodes.len(), None, 0);
        e.host_addr = addr;
        let tree = Arc::new(Tree {
            id,
            state: crate::sync::Mutex::new(TreeState { entries: smallvec::smallvec![e], home, unregistered: false }),
            nodes: self.nodes.clone(),
            partitioned: crate::sync::atomic::AtomicBool::new(false),
        });
        let h = DataHandle(Arc::new(HandleInner { rt: self.clone(), tree, idx: 0, id }));
        if let Some(a) = addr {
            self.registry.insert(a, shape.span(strides), Arc::downgrade(&h.0));
        }
        Ok(h)
    }
}

fn owned<T: Pod + Send>(mut v: Vec<T>) -> Home {
    let ptr = v.as_mut_ptr() as *mut u8;
    Home::Owned { ptr, owner: Box::new(v) }
}

impl Runtime {
    /// Register a vector; `into_vec` gives it back after the tasks using it.
    pub fn register_vector<T: Pod + Send>(&self, v: Vec<T>) -> Result<DataHandle> {
        let shape = Shape::Vector { nx: v.len(), elem: std::mem::size_of::<T>() };
        self.inner().new_handle(shape, shape.packed(), owned(v))
    }

    /// Register a matrix of `ny` columns of `nx` elements, columns `ld` elements apart.
    pub fn register_matrix<T: Pod + Send>(&self, v: Vec<T>, nx: usize, ny: usize, ld: usize) -> Result<DataHandle> {
        let shape = Shape::Matrix { nx, ny, elem: std::mem::size_of::<T>() };
        let strides = Strides { ldy: ld, ldz: ld * ny };
        if shape.span(strides) > v.len() * std::mem::size_of::<T>() {
            return Err(Error::InvalidData(format!("a {nx}x{ny} matrix with ld {ld} does not fit in {} elements", v.len())));
        }
        self.inner().new_handle(shape, strides, owned(v))
    }

    /// Register a 3-D block: `nz` slices `ldz` apart of `ny` rows `ldy` apart of `nx` elements.
    pub fn register_block<T: Pod + Send>(&self, v: Vec<T>, dims: [usize; 3], ldy: usize, ldz: usize) -> Result<DataHandle> {
        let [nx, ny, nz] = dims;
        let shape = Shape::Block { nx, ny, nz, elem: std::mem::size_of::<T>() };
        let strides = Strides { ldy, ldz };
        if shape.span(strides) > v.len() * std::mem::size_of::<T>() {
            return Err(Error::InvalidData(format!("a {nx}x{ny}x{nz} block does not fit in {} elements", v.len())));
        }
        self.inner().new_handle(shape, strides, owned(v))
    }

    /// Register one value.
    pub fn register_variable<T: Pod + Send>(&self, v: T) -> Result<DataHandle> {
        let shape = Shape::Variable { size: std::mem::size_of::<T>() };
        let mut b = Box::new(v);
        let ptr = &mut *b as *mut T as *mut u8;
        self.inner().new_handle(shape, shape.packed(), Home::Owned { ptr, owner: b })
    }

    /// Register raw bytes.
    pub fn register_bytes(&self, v: Vec<u8>) -> Result<DataHandle> {
        let shape = Shape::Bytes { size: v.len() };
        self.inner().new_handle(shape, shape.packed(), owned(v))
    }

    /// Register memory the caller owns (the C API's path).
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `shape.span(strides)` bytes until
    /// `unregister` returns, and the caller must not touch it meanwhile except through
    /// `acquire`.
    pub unsafe fn register_raw(&self, ptr: *mut u8, shape: Shape, strides: Strides) -> Result<DataHandle> {
        self.inner().new_handle(shape, strides, Home::User { ptr })
    }

    /// Data the runtime allocates (zero-filled) where it is first used.
    pub fn alloc(&self, shape: Shape) -> Result<DataHandle> {
        self.inner().new_handle(shape, shape.packed(), Home::Runtime { buf: None })
    }
}

/// Holds data for the application (StarPU's `starpu_data_acquire`); released on drop.
pub struct AcquireGuard {
    handle: DataHandle,
    task: Option<TaskRef>,
    view: View,
}

impl std::ops::Deref for AcquireGuard {
    type Target = View;
    fn deref(&self) -> &View {
        &self.view
    }
}

impl Drop for AcquireGuard {
    fn drop(&mut self) {
        let h = &self.handle.0;
        h.tree.lock().release(h.idx, 0);
        if let Some(t) = self.task.take() {
            h.rt.complete(&t, Ok(()), None);
        }
    }
}

/// An acquisition whose dependencies are met ([`DataHandle::acquire_async`]): `get` brings
/// the data to host memory and gives the guard. Dropping it unused releases the data.
pub struct PendingAcquire {
    handle: DataHandle,
    task: Option<TaskRef>,
    mode: AccessMode,
}

impl PendingAcquire {
    /// The data in host memory, held until the guard is dropped. Call it outside the
    /// runtime's workers: a transfer to host memory may have to wait for a device.
    pub fn get(mut self) -> Result<AcquireGuard> {
        self.handle.check_not_in_task()?;
        let t = self.task.take().expect("a pending acquisition is taken once");
        let h = self.handle.clone();
        match acquire_view(&h.0, 0, self.mode) {
            Ok(view) => Ok(AcquireGuard { handle: h, task: Some(t), view }),
            Err(e) => {
                h.0.rt.complete(&t, Err(crate::task::TaskError::Data(e.to_string())), None);
                Err(e)
            }
        }
    }

    pub fn handle(&self) -> &DataHandle {
        &self.handle
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            self.handle.0.rt.complete(&t, Ok(()), None);
        }
    }
}

impl DataHandle {
    pub fn id(&self) -> u64 {
        self.0.id
    }

    pub fn shape(&self) -> Shape {
        self.0.tree.lock().entries[self.0.idx].shape
    }

    /// Replica state on each memory node (diagnostics and tests).
    pub fn replica_states(&self) -> Vec<ReplicaState> {
        self.0.tree.lock().entries[self.0.idx].replicas.iter().map(|r| r.state).collect()
    }

    /// Make this handle order the accesses submitted next as a new handle would, if this is
    /// its only reference: no clone, no task (a submitted task holds its handles until it is
    /// dropped), no partition and no registered address share it or its tree. Then the
    /// finished tasks its dependency state still names are forgotten (the data stays), and
    /// true is returned; otherwise nothing changes. A front end that keeps dependency-only
    /// handles by address (OpenMP `depend`) reuses an idle one for a new address instead of
    /// freeing it and allocating another.
    pub fn reuse_if_unshared(&mut self) -> bool {
        // A plain load first: `get_mut` locks the weak count (an atomic exchange), and most
        // handles a front end looks at while tasks are in flight are shared.
        if Arc::strong_count(&self.0) != 1 {
            return false;
        }
        let Some(inner) = Arc::get_mut(&mut self.0) else { return false };
        let Some(tree) = Arc::get_mut(&mut inner.tree) else { return false };
        let st = tree.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for e in &mut st.entries {
            e.deps = DepState::default();
        }
        true
    }

    fn check_not_in_task(&self) -> Result<()> {
        if crate::worker::current(self.0.rt.id).is_some() { Err(Error::WouldDeadlock) } else { Ok(()) }
    }

    /// Wait for the tasks submitted before on this handle (for `mode`), and get its data in
    /// host memory. Tasks submitted later wait until the guard is dropped.
    pub fn acquire(&self, mode: AccessMode) -> Result<AcquireGuard> {
        if matches!(mode, AccessMode::Scratch | AccessMode::Redux | AccessMode::Commute) {
            return Err(Error::Unsupported(format!("acquiring in mode {mode:?}")));
        }
        self.check_not_in_task()?;
        let rt = &self.0.rt;
        let sig = Arc::new(AcquireSignal::default());
        let t = rt.submit_task(&mut TaskBuilder::empty().access(self, mode), Some(crate::task::TaskKind::Acquire(sig.clone())))?;
        {
            let mut ready = lock(&sig.ready);
            while !*ready {
                ready = sig.cv.wait(ready).unwrap_or_else(|e| e.into_inner());
            }
        }
        PendingAcquire { handle: self.clone(), task: Some(t), mode }.get()
    }

    /// Acquire without blocking (StarPU's `starpu_data_acquire_cb`): ordered like
    /// [`DataHandle::acquire`] after the tasks submitted before on this handle, and before
    /// those submitted after; `ready` is called once they are done, on the thread that
    /// finished the last of them (a worker: keep it short, e.g. hand the [`PendingAcquire`]
    /// to a thread of the front end's) or on this one if there were none. Tasks submitted
    /// later wait until the `PendingAcquire`, or the guard it gives, is dropped.
    pub fn acquire_async(&self, mode: AccessMode, ready: impl FnOnce(PendingAcquire) + Send + 'static) -> Result<()> {
        if matches!(mode, AccessMode::Scratch | AccessMode::Redux | AccessMode::Commute) {
            return Err(Error::Unsupported(format!("acquiring in mode {mode:?}")));
        }
        let sig = Arc::new(AcquireSignal::default());
        let t = self.0.rt.submit_task(&mut TaskBuilder::empty().access(self, mode), Some(crate::task::TaskKind::Acquire(sig.clone())))?;
        let pending = PendingAcquire { handle: self.clone(), task: Some(t), mode };
        let mut then = lock(&sig.then);
        match *then {
            crate::task::Then::Fired => {
                drop(then);
                ready(pending);
            }
            _ => *then = crate::task::Then::Armed(Box::new(move || ready(pending))),
        }
        Ok(())
    }

    /// Copy the data out (waits for writers before).
    pub fn read_to_vec<T: Pod>(&self) -> Result<Vec<T>> {
        let g = self.acquire(AccessMode::R)?;
        let shape = g.shape();
        let out = match shape {
            Shape::Matrix { .. } => {
                let m = g.matrix::<T>();
                (0..m.ny).flat_map(|j| m.col(j).to_vec()).collect()
            }
            Shape::Block { .. } => {
                let b = g.block::<T>();
                let mut v = Vec::new();
                for k in 0..b.dims[2] {
                    for j in 0..b.dims[1] {
                        v.extend_from_slice(b.row(j, k));
                    }
                }
                v
            }
            _ => g.slice::<T>().to_vec(),
        };
        Ok(out)
    }

    /// Partition into children with `filter`. Tasks on the children and on this handle are
    /// ordered with each other; use `unpartition` to drop the children.
    pub fn partition(&self, filter: Filter) -> Result<Vec<DataHandle>> {
        let h = &self.0;
        let mut st = h.tree.lock();
        let e = &st.entries[h.idx];
        if !e.alive {
            return Err(Error::Unregistered(h.id));
        }
        if !e.children.is_empty() {
            return Err(Error::InvalidData(format!("handle {} is already partitioned", h.id)));
        }
        if e.redux.is_some() {
            return Err(Error::Unsupported("partitioning a handle with reduction methods".into()));
        }
        let parts = split(e.shape, e.home_strides, filter).map_err(Error::InvalidData)?;
        // Children alias the home memory: make sure it exists.
        st.home_base(&h.tree)?;
        let (base_off, strides) = (st.entries[h.idx].home_offset, st.entries[h.idx].home_strides);
        let mut out = Vec::with_capacity(parts.len());
        for (shape, off) in parts {
            let id = h.rt.next_handle.fetch_add(1, Ordering::Relaxed);
            let idx = st.entries.len();
            let child = new_entry(id, shape, strides, h.rt.nodes.len(), Some(h.idx), base_off + off);
            st.entries.push(child);
            st.entries[h.idx].children.push(idx);
            out.push(DataHandle(Arc::new(HandleInner { rt: h.rt.clone(), tree: h.tree.clone(), idx, id })));
        }
        // Release: pairs with the Acquire load of tasks created after this call.
        h.tree.partitioned.store(true, Ordering::Release);
        Ok(out)
    }

    /// Wait for the tasks on the children, gather them, and drop them: their handles become
    /// invalid and this handle is whole again.
    pub fn unpartition(&self) -> Result<()> {
        self.check_not_in_task()?;
        let g = self.acquire(AccessMode::RW)?;
        let h = &self.0;
        let mut st = h.tree.lock();
        let desc = super::relatives(&st, h.idx).into_iter().filter(|&r| is_descendant(&st, r, h.idx)).collect::<Vec<_>>();
        st.flush_home(&h.tree, &desc)?;
        for &d in &desc {
            st.entries[d].alive = false;
        }
        st.entries[h.idx].children.clear();
        let any = st.entries.iter().any(|e| e.alive && !e.children.is_empty());
        h.tree.partitioned.store(any, Ordering::Release);
        drop(st);
        drop(g);
        Ok(())
    }

    /// Set the codelets a REDUX access uses: `init` (one buffer, W) sets a worker's private
    /// contribution to the neutral value; `reduce` (RW destination, R source) accumulates.
    pub fn set_reduction(&self, init: &Arc<Codelet>, reduce: &Arc<Codelet>) -> Result<()> {
        if init.implementation(crate::task::Arch::Cpu).is_none() || reduce.implementation(crate::task::Arch::Cpu).is_none() {
            return Err(Error::NoImplementation(format!("{} / {} (reductions run on CPU workers)", init.name(), reduce.name())));
        }
        let mut st = self.0.tree.lock();
        let n = self.0.rt.workers.len();
        st.entries[self.0.idx].redux = Some(Redux { init: init.clone(), reduce: reduce.clone(), contribs: vec![None; n] });
        Ok(())
    }

    fn unregister_inner(self) -> Result<Option<Box<dyn Any + Send>>> {
        self.check_not_in_task()?;
        let h = &self.0;
        if h.idx != 0 {
            return Err(Error::Unsupported("unregister the root handle; children go with unpartition".into()));
        }
        // Ordered after every task submitted on the handle, its children included.
        let g = self.acquire(AccessMode::RW)?;
        let mut st = h.tree.lock();
        let all: Vec<usize> = (0..st.entries.len()).filter(|&i| st.entries[i].alive).collect();
        st.flush_home(&h.tree, &all)?;
        for e in st.entries.iter_mut() {
            e.alive = false;
        }
        st.unregistered = true;
        if let Some(a) = st.entries[0].host_addr {
            h.rt.registry.remove(a);
        }
        let owner = match std::mem::replace(&mut st.home, Home::Runtime { buf: None }) {
            Home::Owned { owner, .. } => Some(owner),
            Home::Runtime { buf } => {
                st.home = Home::Runtime { buf };
                None
            }
            Home::User { .. } => None,
        };
        drop(st);
        drop(g);
        Ok(owner)
    }

    /// Wait for the tasks using the handle, write the newest data back to the registered
    /// memory, and forget the handle.
    pub fn unregister(self) -> Result<()> {
        self.unregister_inner().map(|_| ())
    }

    /// Give registered memory back to its owner without unregistering: move the handle's
    /// home into memory the runtime allocates (same layout), so that nothing the runtime
    /// does later (a task, an eviction, unregistration) reads or writes the registered
    /// memory again. With `write_back`, the newest data is written there first and the new
    /// home holds it too; without, the data is discarded, and the registered memory is
    /// neither written nor read (its owner may have freed it already: an OpenCL program
    /// that frees a `CL_MEM_USE_HOST_PTR` region before its last release). A copy into it
    /// already in flight completes first. A no-op when the home is not registered C memory
    /// (or was given back already).
    ///
    /// Waits for no task, so it may run inside a task's completion callback: the caller
    /// knows that no task uses the handle's data now (every task submitted on it has
    /// completed or is completing, its data released); `Error::Unsupported` if a replica is
    /// still in use, and the home stays.
    pub fn detach_home(&self, write_back: bool) -> Result<()> {
        let h = &self.0;
        if h.idx != 0 {
            return Err(Error::Unsupported("detach the root handle's home".into()));
        }
        let mut st = h.tree.lock();
        let Home::User { ptr } = st.home else { return Ok(()) };
        if st.unregistered {
            return Ok(());
        }
        if st.entries.iter().any(|e| e.replicas.iter().any(|r| r.pins > 0)) {
            return Err(Error::Unsupported(format!("detaching the home of handle #{} while a task uses it", h.id)));
        }
        let all: Vec<usize> = (0..st.entries.len()).filter(|&i| st.entries[i].alive).collect();
        if write_back {
            st.flush_home(&h.tree, &all)?;
        } else {
            st.discard(&h.tree, &all)?;
        }
        let span = st.entries[0].shape.span(st.entries[0].home_strides);
        let buf = h.tree.nodes[0].alloc_raw(span)?;
        if write_back {
            let to = h.tree.nodes[0].device.host_ptr(buf).expect("invariant: host memory is addressable");
            // SAFETY: the registered memory holds `span` bytes (registration's contract) and
            // is valid until this call returns (the caller's, with `write_back`); `to` is a
            // fresh allocation of `span` bytes; no task uses either (pins checked above under
            // the tree lock).
            unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, to, span) };
        }
        st.home = Home::Runtime { buf: Some(buf) };
        if let Some(a) = st.entries[0].host_addr.take() {
            h.rt.registry.remove(a);
        }
        Ok(())
    }

    /// Unregister a handle made by `register_vector`/`register_matrix`/… and get its data back.
    pub fn into_vec<T: Pod + Send>(self) -> Result<Vec<T>> {
        match self.unregister_inner()? {
            Some(o) => {
                o.downcast::<Vec<T>>().map(|b| *b).map_err(|_| Error::InvalidData("the handle does not hold a Vec of that type".into()))
            }
            None => Err(Error::InvalidData("the handle does not own a Rust vector".into())),
        }
    }
}

fn is_descendant(st: &TreeState, mut x: usize, anc: usize) -> bool {
    while let Some(p) = st.entries[x].parent {
        if p == anc {
            return true;
        }
        x = p;
    }
    false
}

/// Worker `w`'s private contribution to handle `h`'s REDUX phase, created (and initialised
/// with the init codelet) on first use.
pub(crate) fn redux_contribution(rt: &RuntimeInner, h: &HandleInner, w: usize) -> Result<*mut u8> {
    let mut st = h.tree.lock();
    let e = &mut st.entries[h.idx];
    let shape = e.shape;
    let rd = e.redux.as_mut().ok_or(Error::NoReductionMethods(h.id))?;
    if let Some(b) = rd.contribs[w] {
        return Ok(b.addr as *mut u8);
    }
    let init = rd.init.clone();
    let buf = rt.nodes[0].alloc_raw(shape.span(shape.packed()))?;
    rd.contribs[w] = Some(buf);
    drop(st);
    // Only worker `w` touches its contribution during the phase: no lock needed to init it.
    let p = buf.addr as *mut u8;
    let views = [view(p, shape, shape.packed(), AccessMode::W)];
    let ctx = TaskContext { views: &views, args: &[], worker: w, arch: crate::task::Arch::Cpu };
    let f = init.implementation(crate::task::Arch::Cpu).expect("invariant: checked by set_reduction");
    crate::runtime::call_implementation(f, &ctx, init.name()).map_err(|e| Error::InvalidData(e.to_string()))?;
    Ok(p)
}

/// Reduce every contribution of the REDUX phase into the handle (on worker `w`, in host memory).
pub(crate) fn reduce(rt: &RuntimeInner, h: &HandleInner, w: usize) -> Result<()> {
    let mut st = h.tree.lock();
    let p = st.acquire(&h.tree, h.idx, 0, AccessMode::RW)?;
    let e = &mut st.entries[h.idx];
    let (shape, strides) = (e.shape, e.home_strides);
    let rd = e.redux.as_mut().expect("invariant: reduction tasks exist only for handles with methods");
    let contribs: Vec<_> = rd.contribs.iter_mut().filter_map(Option::take).collect();
    let red = rd.reduce.clone();
    drop(st);
    let f = red.implementation(crate::task::Arch::Cpu).expect("invariant: checked by set_reduction");
    let mut result = Ok(());
    for b in &contribs {
        if result.is_ok() {
            let views = [view(p, shape, strides, AccessMode::RW), view(b.addr as *mut u8, shape, shape.packed(), AccessMode::R)];
            let ctx = TaskContext { views: &views, args: &[], worker: w, arch: crate::task::Arch::Cpu };
            result = crate::runtime::call_implementation(f, &ctx, red.name()).map_err(|e| Error::InvalidData(e.to_string()));
        }
    }
    for b in contribs {
        rt.nodes[0].release(b);
    }
    h.tree.lock().release(h.idx, 0);
    result
}
