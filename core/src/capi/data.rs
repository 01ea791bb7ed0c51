//! Data handles in the C API: registration of user memory, application acquisition,
//! partitioning, lookup and unregistration.
//!
//! **Owns**: the box behind a `weft_data_handle` (a `DataHandle`, the acquisitions
//! application threads hold on it, and the boxes of its partition children).
//! **Invariants**: a box is freed exactly once, by `weft_data_unregister` (a root and its
//! children) or `weft_data_unpartition` (the children); its magic number is cleared first.
//! Root boxes of the live runtime are listed in `State::roots`.

use super::error::{CError, CResult, ret_code, ret_ptr, weft_error};
use super::task::{access_mode, weft_access_mode_int};
use super::{State, lock, state};
use crate::data::{AcquireGuard, DataHandle, Filter, Shape, Strides};
use crate::task::AccessMode;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::ThreadId;

const HANDLE_MAGIC: u64 = u64::from_be_bytes(*b"WEFTDATA");

/// What a `weft_data_handle` points to; opaque to C (the Rust side is `HandleBox`).
pub struct weft_data_state {
    _private: [u8; 0],
}

/// The object behind a `weft_data_handle`. `repr(C)` puts `magic` first, as in every object
/// of this API (`task::TaskBox`), so that checking a handle of the wrong kind reads within
/// bounds.
#[repr(C)]
pub(crate) struct HandleBox {
    /// `HANDLE_MAGIC` while the box is alive. Relaxed: it only guards against misuse (a
    /// pointer that never was a handle, or a freed one), not against concurrent frees.
    magic: AtomicU64,
    handle: DataHandle,
    /// Acquisitions held by application threads, most recent last.
    acquired: Mutex<Vec<Acquisition>>,
    /// Boxes (addresses) of the children made by `weft_data_partition`.
    children: Mutex<Vec<usize>>,
    /// Set when `weft_shutdown` unregistered this root: `weft_data_unregister` then only frees it.
    retired: AtomicBool,
    /// The parent's box (address) for partition children; 0 for roots.
    parent: usize,
}

/// A piece of data registered with the runtime (StarPU's `starpu_data_handle_t`).
pub type weft_data_handle = *mut weft_data_state;

/// Splitting a handle into children (`weft_data_partition`). Parts are sized as StarPU sizes
/// them: `n / parts` each, the first `n % parts` parts one element larger.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_filter {
    /// A vector into `nparts_x` contiguous pieces.
    WEFT_FILTER_VECTOR_BLOCK = 1,
    /// A matrix along `nx` (the contiguous dimension) into `nparts_x` blocks of rows.
    WEFT_FILTER_MATRIX_ROWS = 2,
    /// A matrix along `ny` into `nparts_x` blocks of columns.
    WEFT_FILTER_MATRIX_COLS = 3,
    /// A matrix into `nparts_x × nparts_y` tiles; child `i + nparts_x * j` is tile (i, j).
    WEFT_FILTER_MATRIX_TILES = 4,
    /// A 3-D block along `nz` into `nparts_x` slabs.
    WEFT_FILTER_BLOCK_SLABS = 5,
}

/// A filter as it crosses the ABI: received as an `int` (an unknown value is `WEFT_EINVAL`,
/// not undefined behaviour); the header names it `weft_filter` (cbindgen.toml renames it).
pub type weft_filter_int = c_int;

const _: () = assert!(std::mem::size_of::<weft_filter>() == std::mem::size_of::<c_int>());

struct Acquisition {
    guard: AcquireGuard,
    thread: ThreadId,
    writes: bool,
}

// SAFETY: an acquisition is released (dropped) by whichever thread calls
// `weft_data_release`, as StarPU allows; dropping the guard only takes the handle tree's lock
// and completes the acquisition's task, neither of which is tied to a thread. The view's
// borrow flag (a `Cell`) is never touched here; only its address is read, under the mutex.
unsafe impl Send for Acquisition {}

impl HandleBox {
    /// Whether this thread holds this handle acquired in a way that conflicts with a new
    /// acquisition that `writes` (or not).
    fn own_conflict(&self, writes: bool) -> bool {
        let me = std::thread::current().id();
        lock(&self.acquired).iter().any(|a| a.thread == me && (a.writes || writes))
    }

    fn conflict_below(&self, writes: bool) -> bool {
        self.own_conflict(writes)
            || lock(&self.children).iter().any(|&c| {
                // SAFETY: children boxes live until their parent's unpartition or unregister,
                // which takes them out of this list first.
                unsafe { &*(c as *const HandleBox) }.conflict_below(writes)
            })
    }

    /// Whether accessing this handle (writing it, if `writes`) from this thread would wait
    /// for an acquisition this thread holds on it, a descendant or an ancestor: a deadlock.
    fn would_wait_for_own(&self, writes: bool) -> bool {
        if self.conflict_below(writes) {
            return true;
        }
        let mut up = self.parent;
        while up != 0 {
            // SAFETY: a parent box outlives its children (they are freed first).
            let p = unsafe { &*(up as *const HandleBox) };
            if p.own_conflict(writes) {
                return true;
            }
            up = p.parent;
        }
        false
    }
}

/// The box behind `h`, checked.
///
/// # Safety
/// `h` is NULL or a pointer returned by this API (the magic check catches others on a best
/// effort basis). The box must not be freed while the reference is used.
pub(crate) unsafe fn handle_ref<'a>(h: weft_data_handle) -> CResult<&'a HandleBox> {
    let p = h.cast::<HandleBox>();
    if p.is_null() {
        return Err(CError::inval("the data handle is NULL"));
    }
    if !p.is_aligned() {
        return Err(CError::inval("the data handle is not a weft_data_handle"));
    }
    // SAFETY: non-null and aligned; every object of this API starts with its magic number
    // (repr(C)), so this reads within the object the caller passed (contract).
    let magic = unsafe { &*std::ptr::addr_of!((*p).magic) }.load(Ordering::Relaxed);
    if magic != HANDLE_MAGIC {
        return Err(CError::inval("the data handle is not a valid weft_data_handle (unregistered, unpartitioned, or never registered)"));
    }
    // SAFETY: a live box made by `new_box` (its magic is intact).
    Ok(unsafe { &*p })
}

/// The core handle behind `h` (used by task setters, and by other crates' C APIs, such as
/// weft-mpi's, that act on handles registered through this one). `WEFT_EINVAL` for NULL or
/// a pointer that is not a live `weft_data_handle`.
///
/// # Safety
/// `h` is NULL or a pointer returned by this API (the magic check catches others on a best
/// effort basis), not freed by another thread during the call.
pub unsafe fn core_handle(h: weft_data_handle) -> CResult<DataHandle> {
    // SAFETY: forwarded contract.
    Ok(unsafe { handle_ref(h) }?.handle.clone())
}

fn new_box(handle: DataHandle, parent: usize) -> weft_data_handle {
    let b = Box::into_raw(Box::new(HandleBox {
        magic: AtomicU64::new(HANDLE_MAGIC),
        handle,
        acquired: Mutex::new(Vec::new()),
        children: Mutex::new(Vec::new()),
        retired: AtomicBool::new(false),
        parent,
    }));
    b.cast()
}

/// Free `h` and every child box under it.
///
/// # Safety
/// `h` is a live box made by `new_box`; no other thread uses it or its children.
unsafe fn free_tree(h: weft_data_handle) {
    let p = h.cast::<HandleBox>();
    // SAFETY: live box (contract).
    let b = unsafe { &*p };
    let children = std::mem::take(&mut *lock(&b.children));
    for c in children {
        // SAFETY: children boxes are live until taken out of their parent's list (here).
        unsafe { free_tree(c as weft_data_handle) };
    }
    b.magic.store(0, Ordering::Relaxed);
    // SAFETY: made by Box::into_raw in new_box, freed once (its magic is now cleared).
    drop(unsafe { Box::from_raw(p) });
}

/// `weft_shutdown`: unregister the roots C code left registered (writing their data back
/// when `drained`, i.e. when no task is stuck), so that nothing is lost.
pub(crate) fn retire_roots(st: &State, drained: bool) {
    let roots: Vec<usize> = lock(&st.roots).drain().map(|(_, b)| b).collect();
    if roots.is_empty() {
        return;
    }
    eprintln!(
        "weft: weft_shutdown: {} data handle(s) still registered; unregistering them{}",
        roots.len(),
        if drained { " (their data is written back)" } else { " without writing back: tasks were stuck" }
    );
    for b in roots {
        // SAFETY: listed roots are live boxes (they leave the list when unregistered).
        let b = unsafe { &*(b as *const HandleBox) };
        b.retired.store(true, Ordering::Relaxed);
        // Acquisitions the application forgot would make unregistration wait forever.
        let held = std::mem::take(&mut *lock(&b.acquired));
        drop(held);
        if drained && let Err(e) = b.handle.clone().unregister() {
            eprintln!("weft: weft_shutdown: {:?}: {e}", b.handle);
        }
    }
}

fn nonzero(what: &str, v: usize) -> CResult<usize> {
    if v == 0 { Err(CError::inval(format!("{what} is 0: data cannot be empty"))) } else { Ok(v) }
}

/// Bytes spanned by `shape` laid out with `strides`, computed without overflow.
fn checked_span(shape: Shape, s: Strides) -> CResult<usize> {
    let [nx, ny, nz] = shape.dims();
    let span = (nz - 1)
        .checked_mul(s.ldz)
        .and_then(|a| a.checked_add((ny - 1).checked_mul(s.ldy)?))
        .and_then(|a| a.checked_add(nx))
        .and_then(|a| a.checked_mul(shape.elem()))
        .filter(|&b| b <= isize::MAX as usize);
    span.ok_or_else(|| CError::inval(format!("the data size overflows ({shape:?}, {s:?})")))
}

/// Register `shape` at `ptr` and store the new handle in `*out`.
///
/// # Safety
/// `out` is NULL or valid for one write; `ptr` is NULL or valid for reads and writes of the
/// layout's span until the handle is unregistered.
unsafe fn register(out: *mut weft_data_handle, ptr: *mut c_void, shape: Shape, strides: Strides) -> CResult<()> {
    if out.is_null() {
        return Err(CError::inval("out (where to store the new handle) is NULL"));
    }
    // SAFETY: `out` is valid for a write (contract); a failed call leaves NULL there.
    unsafe { out.write(std::ptr::null_mut()) };
    if ptr.is_null() {
        return Err(CError::inval("ptr (the data to register) is NULL"));
    }
    checked_span(shape, strides)?;
    let st = state()?;
    // SAFETY: the caller keeps `ptr` valid for the span until unregistration (contract).
    let h = unsafe { st.rt.register_raw(ptr.cast(), shape, strides) }?;
    let id = h.id();
    let b = new_box(h, 0);
    lock(&st.roots).insert(id, b as usize);
    // SAFETY: as above.
    unsafe { out.write(b) };
    Ok(())
}

/// Register a vector of `nx` elements of `elemsize` bytes at `ptr` (StarPU's
/// `starpu_vector_data_register` with the home node fixed to main memory).
///
/// The memory stays the caller's: Weft reads and writes it until `weft_data_unregister`
/// returns, which writes the newest data back. Meanwhile, touch it only between
/// `weft_data_acquire` and `weft_data_release`. Returns 0 and stores the handle in `*out`,
/// or a negative code (`*out` is then NULL): `WEFT_EINVAL` for a NULL pointer or a zero size.
///
/// # Safety
/// `out` must be NULL or valid for writing one handle; `ptr` must be NULL or valid for reads
/// and writes of `nx * elemsize` bytes until the handle is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_vector_data_register(out: *mut weft_data_handle, ptr: *mut c_void, nx: usize, elemsize: usize) -> c_int {
    ret_code(|| {
        let shape = Shape::Vector { nx: nonzero("nx", nx)?, elem: nonzero("elemsize", elemsize)? };
        // SAFETY: forwarded contract.
        unsafe { register(out, ptr, shape, shape.packed()) }
    })
}

/// Register a matrix of `ny` columns of `nx` contiguous elements of `elemsize` bytes,
/// columns `ld` elements apart (StarPU's `starpu_matrix_data_register` argument order:
/// `ld, nx, ny, elemsize`). See `weft_vector_data_register` for ownership and errors; `ld`
/// smaller than `nx` is `WEFT_EINVAL`.
///
/// # Safety
/// `out` must be NULL or valid for writing one handle; `ptr` must be NULL or valid for reads
/// and writes of `((ny - 1) * ld + nx) * elemsize` bytes until the handle is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_matrix_data_register(
    out: *mut weft_data_handle,
    ptr: *mut c_void,
    ld: usize,
    nx: usize,
    ny: usize,
    elemsize: usize,
) -> c_int {
    ret_code(|| {
        let shape = Shape::Matrix { nx: nonzero("nx", nx)?, ny: nonzero("ny", ny)?, elem: nonzero("elemsize", elemsize)? };
        if ld < nx {
            return Err(CError::inval(format!("ld ({ld}) is smaller than nx ({nx})")));
        }
        let ldz = ld.checked_mul(ny).ok_or_else(|| CError::inval("ld * ny overflows"))?;
        // SAFETY: forwarded contract.
        unsafe { register(out, ptr, shape, Strides { ldy: ld, ldz }) }
    })
}

/// Register a 3-D block: `nz` slices `ldz` elements apart, each of `ny` rows `ldy` elements
/// apart, each of `nx` contiguous elements of `elemsize` bytes (StarPU's
/// `starpu_block_data_register` argument order). See `weft_vector_data_register`.
///
/// # Safety
/// `out` must be NULL or valid for writing one handle; `ptr` must be NULL or valid for reads
/// and writes of `((nz - 1) * ldz + (ny - 1) * ldy + nx) * elemsize` bytes until the handle
/// is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_block_data_register(
    out: *mut weft_data_handle,
    ptr: *mut c_void,
    ldy: usize,
    ldz: usize,
    nx: usize,
    ny: usize,
    nz: usize,
    elemsize: usize,
) -> c_int {
    ret_code(|| {
        let shape =
            Shape::Block { nx: nonzero("nx", nx)?, ny: nonzero("ny", ny)?, nz: nonzero("nz", nz)?, elem: nonzero("elemsize", elemsize)? };
        if ldy < nx {
            return Err(CError::inval(format!("ldy ({ldy}) is smaller than nx ({nx})")));
        }
        if nz > 1 && ldz < ldy.saturating_mul(ny) {
            return Err(CError::inval(format!("ldz ({ldz}) is smaller than ldy * ny ({})", ldy.saturating_mul(ny))));
        }
        // SAFETY: forwarded contract.
        unsafe { register(out, ptr, shape, Strides { ldy, ldz }) }
    })
}

/// Register one value of `size` bytes at `ptr` (StarPU's `starpu_variable_data_register`).
/// See `weft_vector_data_register`.
///
/// # Safety
/// `out` must be NULL or valid for writing one handle; `ptr` must be NULL or valid for reads
/// and writes of `size` bytes until the handle is unregistered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_variable_data_register(out: *mut weft_data_handle, ptr: *mut c_void, size: usize) -> c_int {
    ret_code(|| {
        let shape = Shape::Variable { size: nonzero("size", size)? };
        // SAFETY: forwarded contract.
        unsafe { register(out, ptr, shape, shape.packed()) }
    })
}

unsafe fn unregister(h: weft_data_handle) -> CResult<()> {
    // SAFETY: forwarded contract of weft_data_unregister.
    let b = unsafe { handle_ref(h) }?;
    if b.retired.load(Ordering::Relaxed) {
        // SAFETY: a live box; the caller gives it up.
        unsafe { free_tree(h) };
        return Ok(());
    }
    if b.would_wait_for_own(true) {
        return Err(CError::new(
            weft_error::WEFT_EDEADLK,
            "this thread holds the handle (or a child) acquired: call weft_data_release first",
        ));
    }
    let id = b.handle.id();
    b.handle.clone().unregister()?;
    if let Ok(st) = state() {
        lock(&st.roots).remove(&id);
    }
    // SAFETY: a live box, unregistered; the caller gives it up.
    unsafe { free_tree(h) };
    Ok(())
}

/// Wait for the tasks using `handle`, write its newest data back to the registered memory,
/// and free the handle (and any partition children). StarPU's `starpu_data_unregister`.
///
/// Returns 0, `WEFT_EINVAL` for a NULL or invalid handle, `WEFT_ENOTSUP` for a partition
/// child (children go with `weft_data_unpartition`), `WEFT_EDEADLK` from inside a task or
/// while this thread holds the handle acquired. On error the handle stays valid.
///
/// # Safety
/// `handle` must be NULL or a handle returned by this API and not used after this call
/// succeeds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_unregister(handle: weft_data_handle) -> c_int {
    // SAFETY: forwarded contract.
    ret_code(|| unsafe { unregister(handle) })
}

fn acquire_mode(mode: weft_access_mode_int) -> CResult<AccessMode> {
    match access_mode(mode) {
        Some(m @ (AccessMode::R | AccessMode::W | AccessMode::RW)) => Ok(m),
        _ => Err(CError::inval(format!("mode {mode} cannot be acquired: use WEFT_R, WEFT_W or WEFT_RW"))),
    }
}

/// Wait for the tasks submitted before on `handle` (those writing it, for `WEFT_R`) and make
/// its newest data available in the registered memory, until `weft_data_release`. Tasks
/// submitted later on the handle wait for the release. StarPU's `starpu_data_acquire`.
///
/// `mode` is `WEFT_R`, `WEFT_W` or `WEFT_RW`. Returns `WEFT_EDEADLK` from inside a task, or
/// when this thread already holds the handle, a handle partitioned from it, or the handle it
/// was partitioned from, in a conflicting mode (it would wait for itself).
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_acquire(handle: weft_data_handle, mode: weft_access_mode_int) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_ref(handle) }?;
        let mode = acquire_mode(mode)?;
        let writes = mode.writes();
        if b.would_wait_for_own(writes) {
            return Err(CError::new(
                weft_error::WEFT_EDEADLK,
                "this thread already holds the handle acquired in a conflicting mode: release it first",
            ));
        }
        // Blocks until the previous tasks are done; no lock of ours is held meanwhile.
        let guard = b.handle.acquire(mode)?;
        lock(&b.acquired).push(Acquisition { guard, thread: std::thread::current().id(), writes });
        Ok(())
    })
}

/// End an acquisition of `handle` (this thread's most recent one, or else the most recent
/// one of any thread). StarPU's `starpu_data_release`. `WEFT_EINVAL` if it is not acquired.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_release(handle: weft_data_handle) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_ref(handle) }?;
        let me = std::thread::current().id();
        let acq = {
            let mut held = lock(&b.acquired);
            let i = held
                .iter()
                .rposition(|a| a.thread == me)
                .or_else(|| held.len().checked_sub(1))
                .ok_or_else(|| CError::inval("the handle is not acquired"))?;
            held.remove(i)
        };
        // Dropped without our lock: releasing may make tasks ready.
        drop(acq);
        Ok(())
    })
}

/// The address of the handle's data in main memory while it is acquired (for handles whose
/// memory the caller did not keep a pointer to, such as partition children it looked up);
/// NULL when it is not acquired or the handle is invalid.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_get_local_ptr(handle: weft_data_handle) -> *mut c_void {
    ret_ptr(|| {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_ref(handle) }?;
        let held = lock(&b.acquired);
        let a = held.last().ok_or_else(|| CError::inval("the handle is not acquired"))?;
        Ok(a.guard.as_ptr().cast())
    })
}

/// The size of the handle's data in bytes (padding between rows excluded); 0 for an invalid
/// handle.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_get_size(handle: weft_data_handle) -> usize {
    super::error::ret_value(0, || {
        // SAFETY: forwarded contract.
        Ok(unsafe { handle_ref(handle) }?.handle.shape().size())
    })
}

/// The handle registered through this API whose data starts at, or contains, `ptr`; NULL if
/// there is none (StarPU's `starpu_data_lookup`). Partition children are not found: look
/// up the registered root.
///
/// # Safety
/// None beyond a live runtime: `ptr` is only compared, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_lookup(ptr: *const c_void) -> weft_data_handle {
    ret_ptr(|| {
        if ptr.is_null() {
            return Err(CError::inval("ptr is NULL"));
        }
        let st = state()?;
        let h = st.rt.lookup(ptr as usize).ok_or_else(|| CError::inval(format!("no data is registered at {ptr:?}")))?;
        lock(&st.roots)
            .get(&h.id())
            .map(|&b| b as weft_data_handle)
            .ok_or_else(|| CError::inval(format!("the data at {ptr:?} was not registered through the C API")))
    })
}

fn filter_of(kind: weft_filter_int, nx: usize, ny: usize) -> CResult<(Filter, usize)> {
    let one_d = |f: fn(usize) -> Filter| {
        if ny > 1 {
            Err(CError::inval(format!("nparts_y is {ny} but filter {kind} splits one dimension: pass 0 or 1")))
        } else {
            Ok((f(nx), nx))
        }
    };
    match kind {
        1 => one_d(|parts| Filter::VectorBlock { parts }),
        2 => one_d(|parts| Filter::MatrixRows { parts }),
        3 => one_d(|parts| Filter::MatrixCols { parts }),
        4 => {
            let n = nx.checked_mul(ny).ok_or_else(|| CError::inval("nparts_x * nparts_y overflows"))?;
            Ok((Filter::MatrixTiles { px: nx, py: ny }, n))
        }
        5 => one_d(|parts| Filter::BlockSlabs { parts }),
        _ => Err(CError::inval(format!("filter {kind} is not a weft_filter"))),
    }
}

/// Partition `handle` into children with `filter` (StarPU's `starpu_data_partition` plus
/// `starpu_data_get_sub_data`): the children handles are stored in `children[0..n]`, where
/// `n` is `nparts_x * nparts_y` for `WEFT_FILTER_MATRIX_TILES` and `nparts_x` otherwise
/// (`nparts_y` must then be 0 or 1).
///
/// Children alias parts of the parent's memory; tasks on the children and on the parent are
/// ordered with each other. Children are freed by `weft_data_unpartition` (or by
/// unregistering the root); a child can be partitioned in turn.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API; `children` must be NULL or
/// valid for writing `n` handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_partition(
    handle: weft_data_handle,
    filter: weft_filter_int,
    nparts_x: usize,
    nparts_y: usize,
    children: *mut weft_data_handle,
) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_ref(handle) }?;
        if children.is_null() {
            return Err(CError::inval("children (where to store the children) is NULL"));
        }
        let (filter, n) = filter_of(filter, nparts_x, nparts_y)?;
        let parts = b.handle.partition(filter)?;
        if parts.len() != n {
            return Err(CError::new(weft_error::WEFT_EINTERNAL, format!("invariant: {filter:?} made {} children", parts.len())));
        }
        let mut kids = lock(&b.children);
        for (i, p) in parts.into_iter().enumerate() {
            let c = new_box(p, b as *const HandleBox as usize);
            kids.push(c as usize);
            // SAFETY: `children` is valid for `n` writes (contract).
            unsafe { children.add(i).write(c) };
        }
        Ok(())
    })
}

/// Wait for the tasks on the children of `handle`, gather their data into it, and free the
/// children handles (StarPU's `starpu_data_unpartition`). `WEFT_EDEADLK` while this thread
/// holds a child acquired.
///
/// # Safety
/// `handle` must be NULL or a live handle returned by this API; its children must not be
/// used after this call succeeds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_data_unpartition(handle: weft_data_handle) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_ref(handle) }?;
        if b.would_wait_for_own(true) {
            return Err(CError::new(
                weft_error::WEFT_EDEADLK,
                "this thread holds the handle or a child acquired: call weft_data_release first",
            ));
        }
        b.handle.unpartition()?;
        let kids = std::mem::take(&mut *lock(&b.children));
        for c in kids {
            // SAFETY: children boxes are live until taken out of the list (here).
            unsafe { free_tree(c as weft_data_handle) };
        }
        Ok(())
    })
}
