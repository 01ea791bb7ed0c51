//! Codelets and tasks in the C API.
//!
//! **Owns**: `struct weft_codelet` (user memory, read at submission and converted to a core
//! `Codelet`, cached by address while its content is unchanged), the box behind
//! `struct weft_task *`, and the trampoline that runs a C `cpu_func` on a worker.
//!
//! **Task lifetime**: `weft_task_create` allocates a task; exactly one call frees it:
//! a successful `weft_task_submit` of a detached task (the default), `weft_task_submit_sync`
//! once submitted, `weft_task_wait` (tasks made non-detached with `weft_task_set_detach`),
//! or `weft_task_destroy`. A task whose submission failed stays with the caller, who may fix
//! and resubmit it, or destroy it (as with StarPU).

use super::data::{core_handle, weft_data_handle};
use super::error::{CError, CResult, ret_code, ret_ptr, weft_error};
use super::{State, lock, state};
use crate::data::{Shape, View};
use crate::error::Error;
use crate::perfmodel::{ModelKind, PerfModel};
use crate::task::{AccessMode, Codelet, Tag, TaskBuilder, TaskContext, TaskHandle};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Arc;

/// The most buffers a codelet declares with `nbuffers`/`modes` (StarPU's `STARPU_NMAXBUFS`).
pub const WEFT_NMAXBUFS: usize = 8;

/// `nbuffers` value of a codelet whose tasks access any number of handles, each given with
/// `weft_task_set_handle_mode` (StarPU's `STARPU_VARIABLE_NBUFFERS`).
pub const WEFT_VARIABLE_NBUFFERS: c_int = -1;

/// How a task accesses a data handle (StarPU's `enum starpu_data_access_mode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_access_mode {
    /// No access: marks an unset entry of `weft_codelet.modes`.
    WEFT_NONE = 0,
    /// Read only.
    WEFT_R = 1,
    /// Write only: the previous content is undefined for the task.
    WEFT_W = 2,
    /// Read and write.
    WEFT_RW = 3,
    /// Temporary memory of the handle's shape, private to the task, content undefined.
    WEFT_SCRATCH = 4,
    /// Commutative, associative accumulation (needs reduction methods on the handle).
    WEFT_REDUX = 8,
    /// Combined with `WEFT_W` or `WEFT_RW`: tasks may run in any order, one at a time.
    WEFT_COMMUTE = 16,
}

/// An access mode as it crosses the ABI: received as an `int`, so that an unknown value is
/// `WEFT_EINVAL` rather than undefined behaviour, and so that `WEFT_RW | WEFT_COMMUTE` is
/// representable. The header names it `weft_access_mode` (cbindgen.toml renames it).
pub type weft_access_mode_int = c_int;

const _: () = assert!(std::mem::size_of::<weft_access_mode>() == std::mem::size_of::<c_int>());

/// Names a task before it exists (StarPU's `starpu_tag_t`).
pub type weft_tag_t = u64;

/// A CPU implementation: `buffers[i]` points to the `struct weft_buffer` describing the
/// task's i-th handle, `cl_arg` to a private copy of the task's argument (16-byte aligned;
/// NULL when the task has none). Return 0 on success; any other value fails the task:
/// `weft_task_wait` and `weft_task_submit_sync` return `WEFT_ETASK`, and the tasks that
/// depend on it are cancelled.
///
/// This is StarPU's `void (*)(void *buffers[], void *cl_arg)` with an `int` result.
pub type weft_cpu_func = Option<unsafe extern "C" fn(buffers: *mut *mut c_void, cl_arg: *mut c_void) -> c_int>;

/// Called with its argument when a task completes (on the thread that completed it).
pub type weft_callback_func = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// One buffer of a running task: the layout of a data handle's replica in the worker's
/// memory. Vectors have `ny = nz = 1`; matrices `nz = 1` and columns `ldy` elements apart;
/// blocks add slices `ldz` elements apart; a variable is one element of `elemsize` bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weft_buffer {
    pub ptr: *mut c_void,
    pub nx: usize,
    pub ny: usize,
    pub nz: usize,
    pub ldy: usize,
    pub ldz: usize,
    pub elemsize: usize,
}

/// How a codelet's performance model predicts (StarPU's `enum starpu_perfmodel_type`), in
/// `weft_codelet.model_kind`. Every kind records the same measurements in the same file.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum weft_perfmodel_type {
    /// The default (0): each footprint's measured duration once it has 10 samples; the
    /// power law `a*n^b` over sizes for a footprint without them (`STARPU_HISTORY_BASED`).
    WEFT_HISTORY_BASED = 0,
    /// The power law `a*n^b` for every task, once measured at spread sizes
    /// (`STARPU_REGRESSION_BASED`).
    WEFT_REGRESSION_BASED = 1,
    /// `a*n^b + c` for every task once 3 sizes are calibrated; history-based before
    /// (`STARPU_NL_REGRESSION_BASED`).
    WEFT_NL_REGRESSION_BASED = 2,
}

/// A model kind as it crosses the ABI: an `int`, so that an unknown value is `WEFT_EINVAL`
/// rather than undefined behaviour. The header names it `weft_perfmodel_type`.
pub type weft_perfmodel_type_int = c_int;

/// A task's size for its performance model (StarPU's `size_base`): called with the task's
/// buffers (`ptr` is NULL: only the shapes are known when a task is placed; `ldy` and `ldz`
/// are those of a packed layout), their number, and a copy of the task's argument (16-byte
/// aligned; NULL when it has none) and its size in bytes. Called on any thread, possibly
/// more than once per task, before the task runs; it must not call Weft. A result that is
/// not a finite number `>= 0` is replaced by the default size (bytes of the task's data).
pub type weft_model_size_func =
    Option<unsafe extern "C" fn(buffers: *const weft_buffer, nbuffers: usize, cl_arg: *const c_void, arg_size: usize) -> f64>;

/// A task's footprint for its performance model (StarPU's `footprint`): tasks with equal
/// footprints are expected to take equally long, and share a history entry. Called as
/// `weft_model_size_func` is.
pub type weft_model_footprint_func =
    Option<unsafe extern "C" fn(buffers: *const weft_buffer, nbuffers: usize, cl_arg: *const c_void, arg_size: usize) -> u32>;

/// A computation (StarPU's `struct starpu_codelet`). It is user memory: Weft reads it when a
/// task using it is submitted, so it must stay valid (and should stay unchanged) until then.
///
/// Fields are only ever appended, and a zero value is the default of each: a program that
/// names the fields it sets (`{ .cpu_func = f, .model = "m" }`) or zeroes the struct keeps
/// its meaning when fields are added. (A program must be recompiled against the new header,
/// though: the struct grows.)
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weft_codelet {
    /// Name, for messages and statistics (may be NULL).
    pub name: *const c_char,
    /// The CPU implementation. NULL means none: submitting a task fails with `WEFT_ENODEV`.
    pub cpu_func: weft_cpu_func,
    /// The number of handles each task gives (at most `WEFT_NMAXBUFS`), or
    /// `WEFT_VARIABLE_NBUFFERS`. A task giving another number fails with `WEFT_EBUFCOUNT`.
    pub nbuffers: c_int,
    /// The access mode of each buffer, used by `weft_task_set_handle`.
    pub modes: [weft_access_mode_int; WEFT_NMAXBUFS],
    /// Name of the codelet's performance model (StarPU's `model->symbol`), NUL-terminated,
    /// or NULL for none. Tasks of codelets naming one model share its measurements, kept in
    /// `$WEFT_HOME/models/<name>.model`; the model-driven policies place tasks by it.
    pub model: *const c_char,
    /// How the model predicts (a `weft_perfmodel_type`; 0: `WEFT_HISTORY_BASED`). Another
    /// value fails submission with `WEFT_EINVAL`. Ignored without `model`.
    pub model_kind: weft_perfmodel_type_int,
    /// The task's size for the model; NULL: bytes of the task's data. Ignored without `model`.
    pub model_size: weft_model_size_func,
    /// The task's footprint for the model; NULL: a hash of its buffers' dimensions and
    /// element sizes. Ignored without `model`.
    pub model_footprint: weft_model_footprint_func,
}

/// A C access mode as a core one.
pub(crate) fn access_mode(m: weft_access_mode_int) -> Option<AccessMode> {
    use weft_access_mode::*;
    const R: c_int = WEFT_R as c_int;
    const W: c_int = WEFT_W as c_int;
    const RW: c_int = WEFT_RW as c_int;
    const SCRATCH: c_int = WEFT_SCRATCH as c_int;
    const REDUX: c_int = WEFT_REDUX as c_int;
    const COMMUTE: c_int = WEFT_COMMUTE as c_int;
    match m {
        R => Some(AccessMode::R),
        W => Some(AccessMode::W),
        RW => Some(AccessMode::RW),
        SCRATCH => Some(AccessMode::Scratch),
        REDUX => Some(AccessMode::Redux),
        _ if m == COMMUTE || m == COMMUTE | W || m == COMMUTE | RW => Some(AccessMode::Commute),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Codelets

/// What a cached conversion was made from.
#[derive(PartialEq, Eq)]
struct Snapshot {
    func: usize,
    nbuffers: c_int,
    name: Box<[u8]>,
    model: Option<Box<[u8]>>,
    model_kind: c_int,
    model_size: usize,
    model_footprint: usize,
}

/// Bound on cached codelets (codelets allocated per task would otherwise grow it forever).
const CACHE_MAX: usize = 1024;

/// Core codelets made from C codelets, by address of the C struct. An entry is reused only
/// if the struct still holds what it was made from.
#[derive(Default)]
pub(crate) struct CodeletCache {
    map: HashMap<usize, (Snapshot, Arc<Codelet>)>,
}

fn codelet_name(raw: &weft_codelet) -> &[u8] {
    if raw.name.is_null() {
        b"(unnamed codelet)"
    } else {
        // SAFETY: a non-NULL name is a NUL-terminated string (weft_codelet's contract).
        unsafe { CStr::from_ptr(raw.name) }.to_bytes()
    }
}

/// Read the C codelet at `cl` and get its core codelet.
///
/// # Safety
/// `cl` is a valid, readable `struct weft_codelet` whose `name` and `model` are NULL or
/// NUL-terminated.
unsafe fn codelet_of(st: &State, cl: *const weft_codelet) -> CResult<(Arc<Codelet>, weft_codelet)> {
    // SAFETY: contract; a copy, so that the C side changing it later cannot matter.
    let raw = unsafe { cl.read() };
    let name = codelet_name(&raw);
    let Some(f) = raw.cpu_func else {
        return Err(CError::new(
            weft_error::WEFT_ENODEV,
            format!(
                "codelet '{}' has no implementation for any worker of this machine (its cpu_func is NULL)",
                String::from_utf8_lossy(name)
            ),
        ));
    };
    if raw.nbuffers > WEFT_NMAXBUFS as c_int || (raw.nbuffers < 0 && raw.nbuffers != WEFT_VARIABLE_NBUFFERS) {
        return Err(CError::inval(format!(
            "codelet '{}': nbuffers is {}; it must be 0..={WEFT_NMAXBUFS} or WEFT_VARIABLE_NBUFFERS",
            String::from_utf8_lossy(name),
            raw.nbuffers
        )));
    }
    // SAFETY: a non-NULL model name is a NUL-terminated string (weft_codelet's contract).
    let model = (!raw.model.is_null()).then(|| unsafe { CStr::from_ptr(raw.model) }.to_bytes());
    let kind = match raw.model_kind {
        0 => ModelKind::History,
        1 => ModelKind::Regression,
        2 => ModelKind::NlRegression,
        k if model.is_some() => {
            return Err(CError::inval(format!(
                "codelet '{}': model_kind is {k}; it must be a weft_perfmodel_type",
                String::from_utf8_lossy(name)
            )));
        }
        _ => ModelKind::History,
    };
    let (size_fn, footprint_fn) = (raw.model_size.map_or(0, |f| f as usize), raw.model_footprint.map_or(0, |f| f as usize));
    let mut cache = lock(&st.codelets);
    if let Some((snap, c)) = cache.map.get(&(cl as usize))
        && snap.func == f as usize
        && snap.nbuffers == raw.nbuffers
        && *snap.name == *name
        && snap.model.as_deref() == model
        && (snap.model_kind, snap.model_size, snap.model_footprint) == (raw.model_kind, size_fn, footprint_fn)
    {
        return Ok((c.clone(), raw));
    }
    let mut b = Codelet::builder(String::from_utf8_lossy(name).into_owned()).cpu(move |ctx| run_cpu_func(f, ctx));
    if let Ok(n) = usize::try_from(raw.nbuffers) {
        b = b.nbuffers(n);
    }
    if let Some(m) = model {
        let mut pm = PerfModel::new(String::from_utf8_lossy(m).into_owned()).kind(kind);
        if let Some(size) = raw.model_size {
            pm = pm.size(move |shapes, args| {
                let n = with_c_view(shapes, args, |b, nb, a, na| {
                    // SAFETY: `size` is the C function the codelet names (contract:
                    // weft_model_size_func's); `b` points to `nb` descriptors and `a` to
                    // `na` bytes (or is NULL), valid for the call.
                    unsafe { size(b, nb, a, na) }
                });
                if n.is_finite() && n >= 0.0 { n } else { crate::perfmodel::default_key(shapes).1 }
            });
        }
        if let Some(fp) = raw.model_footprint {
            pm = pm.footprint(move |shapes, args| {
                // SAFETY: as for the size function, with weft_model_footprint_func's contract.
                with_c_view(shapes, args, |b, nb, a, na| unsafe { fp(b, nb, a, na) })
            });
        }
        b = b.model(pm);
    }
    let c = b.build();
    if cache.map.len() >= CACHE_MAX {
        cache.map.clear();
    }
    let snap = Snapshot {
        func: f as usize,
        nbuffers: raw.nbuffers,
        name: name.into(),
        model: model.map(Into::into),
        model_kind: raw.model_kind,
        model_size: size_fn,
        model_footprint: footprint_fn,
    };
    cache.map.insert(cl as usize, (snap, c.clone()));
    Ok((c, raw))
}

/// A shape as the buffer descriptor a model callback gets: no pointer (the task's data may
/// be nowhere valid yet), strides of a packed layout.
fn describe_shape(s: &Shape) -> weft_buffer {
    let (nx, ny, nz, elemsize) = match *s {
        Shape::Vector { nx, elem } => (nx, 1, 1, elem),
        Shape::Matrix { nx, ny, elem } => (nx, ny, 1, elem),
        Shape::Block { nx, ny, nz, elem } => (nx, ny, nz, elem),
        Shape::Variable { size } => (1, 1, 1, size),
        Shape::Bytes { size } => (size, 1, 1, 1),
    };
    weft_buffer { ptr: std::ptr::null_mut(), nx, ny, nz, ldy: nx, ldz: nx.saturating_mul(ny), elemsize }
}

/// Calls `f` with a task's shapes and argument as a model callback takes them (the argument
/// copied 16-byte aligned, as a `cpu_func` gets it, so C may read it as any type).
fn with_c_view<R>(shapes: &[Shape], args: &[u8], f: impl FnOnce(*const weft_buffer, usize, *const c_void, usize) -> R) -> R {
    let descs: SmallVec<[weft_buffer; WEFT_NMAXBUFS]> = shapes.iter().map(describe_shape).collect();
    let mut copy: SmallVec<[Chunk; 8]> = SmallVec::from_elem(Chunk([0; 16]), args.len().div_ceil(16));
    bytemuck::cast_slice_mut::<Chunk, u8>(&mut copy)[..args.len()].copy_from_slice(args);
    let arg = if args.is_empty() { std::ptr::null() } else { copy.as_ptr().cast::<c_void>() };
    f(descs.as_ptr(), descs.len(), arg, args.len())
}

fn describe(v: &View) -> weft_buffer {
    let s = v.strides();
    let (nx, ny, nz, elemsize, ldy, ldz) = match v.shape() {
        Shape::Vector { nx, elem } => (nx, 1, 1, elem, nx, nx),
        Shape::Matrix { nx, ny, elem } => (nx, ny, 1, elem, s.ldy, s.ldz),
        Shape::Block { nx, ny, nz, elem } => (nx, ny, nz, elem, s.ldy, s.ldz),
        Shape::Variable { size } => (1, 1, 1, size, 1, 1),
        Shape::Bytes { size } => (size, 1, 1, 1, size, size),
    };
    weft_buffer { ptr: v.as_ptr().cast(), nx, ny, nz, ldy, ldz, elemsize }
}

/// 16 bytes, 16-aligned: storage for the private copy of a task's argument.
#[repr(C, align(16))]
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
struct Chunk([u8; 16]);

type CpuFn = unsafe extern "C" fn(*mut *mut c_void, *mut c_void) -> c_int;

/// Run a C `cpu_func` on a worker: describe the buffers, copy the argument, call it.
fn run_cpu_func(f: CpuFn, ctx: &TaskContext<'_>) -> Result<(), String> {
    let mut descs: SmallVec<[weft_buffer; WEFT_NMAXBUFS]> = (0..ctx.nbuffers()).map(|i| describe(ctx.buffer(i))).collect();
    let mut ptrs: SmallVec<[*mut c_void; WEFT_NMAXBUFS]> = descs.iter_mut().map(|d| d as *mut weft_buffer as *mut c_void).collect();
    let args = ctx.args();
    let mut copy: SmallVec<[Chunk; 8]> = SmallVec::from_elem(Chunk([0; 16]), args.len().div_ceil(16));
    bytemuck::cast_slice_mut::<Chunk, u8>(&mut copy)[..args.len()].copy_from_slice(args);
    let arg = if args.is_empty() { std::ptr::null_mut() } else { copy.as_mut_ptr().cast::<c_void>() };
    // SAFETY: `f` is the C function the codelet names (its contract is weft_cpu_func's);
    // `ptrs` points to `descs`, which describe buffers acquired for this task, and `arg` to
    // a private copy of the argument; all outlive the call.
    let rc = unsafe { f(ptrs.as_mut_ptr(), arg) };
    if rc == 0 { Ok(()) } else { Err(format!("cpu_func returned {rc}")) }
}

// ---------------------------------------------------------------------------------------
// Tasks

const TASK_MAGIC: u64 = u64::from_be_bytes(*b"WEFTTASK");

/// Bound on buffer indices of tasks of `WEFT_VARIABLE_NBUFFERS` codelets (catches garbage).
const MAX_BUFFERS: usize = 1 << 16;

#[derive(Clone, Copy)]
struct CCallback {
    f: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
}

// SAFETY: `weft_task_set_callback` documents that the callback runs on whichever thread
// completes the task, with `arg` as given: the C caller provides both for any thread.
unsafe impl Send for CCallback {}

impl CCallback {
    fn call(self) {
        // SAFETY: the function and argument the C caller gave for this task (see above).
        unsafe { (self.f)(self.arg) }
    }
}

/// A task being prepared (StarPU's `struct starpu_task`); opaque to C (the Rust side is
/// `TaskBox`).
pub struct weft_task {
    _private: [u8; 0],
}

/// The object behind a `struct weft_task *`. `repr(C)` puts `magic` first, as in every
/// object of this API (`data::HandleBox`), so that checking a pointer of the wrong kind
/// reads within bounds.
#[repr(C)]
pub(crate) struct TaskBox {
    magic: u64,
    cl: *const weft_codelet,
    /// Buffer i: a handle and an explicit mode (None: the codelet's `modes[i]`).
    handles: Vec<Option<(crate::data::DataHandle, Option<AccessMode>)>>,
    args: Vec<u8>,
    priority: i32,
    tag: Option<Tag>,
    dep_tags: Vec<Tag>,
    deps: Vec<TaskHandle>,
    callback: Option<CCallback>,
    detach: bool,
    /// Set once a non-detached task is submitted.
    submitted: Option<TaskHandle>,
}

/// The task behind `t`, checked.
///
/// # Safety
/// `t` is NULL or a pointer returned by `weft_task_create` (the magic check catches others
/// on a best effort basis), not used concurrently by another thread.
unsafe fn task_mut<'a>(t: *mut weft_task) -> CResult<&'a mut TaskBox> {
    let p = t.cast::<TaskBox>();
    if p.is_null() {
        return Err(CError::inval("the task is NULL"));
    }
    if !p.is_aligned() {
        return Err(CError::inval("the task is not a struct weft_task"));
    }
    // SAFETY: non-null and aligned; every object of this API starts with its magic number
    // (repr(C)), so this reads within the object the caller passed (contract).
    let magic = unsafe { std::ptr::addr_of!((*p).magic).read() };
    if magic != TASK_MAGIC {
        return Err(CError::inval("the task is not a valid struct weft_task (freed, or not made by weft_task_create)"));
    }
    // SAFETY: a live task made by weft_task_create (its magic is intact), used by one thread.
    Ok(unsafe { &mut *p })
}

/// # Safety
/// `t` is a live task made by `weft_task_create`, given up by the caller.
unsafe fn free_task(t: *mut weft_task) {
    // SAFETY: contract: made by Box::into_raw in weft_task_create, freed once.
    let mut b = unsafe { Box::from_raw(t.cast::<TaskBox>()) };
    b.magic = 0;
    drop(b);
}

/// Create a task running `cl` (NULL: a task with no work, which only carries dependencies,
/// a tag or a callback). StarPU's `starpu_task_create`. Detached by default. Never fails
/// except on allocation failure; `cl` is read at submission.
///
/// # Safety
/// `cl` must be NULL or a `struct weft_codelet` valid until the task is submitted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_create(cl: *const weft_codelet) -> *mut weft_task {
    ret_ptr(|| {
        let b = Box::into_raw(Box::new(TaskBox {
            magic: TASK_MAGIC,
            cl,
            handles: Vec::new(),
            args: Vec::new(),
            priority: 0,
            tag: None,
            dep_tags: Vec::new(),
            deps: Vec::new(),
            callback: None,
            detach: true,
            submitted: None,
        }));
        Ok(b.cast::<weft_task>())
    })
}

/// Free a task that will not be submitted (or whose submission failed), or give up on
/// waiting for a submitted non-detached task (it still runs). NULL is ignored.
///
/// # Safety
/// `task` must be NULL or a live task from `weft_task_create`, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_destroy(task: *mut weft_task) {
    if task.is_null() {
        return;
    }
    ret_code(|| {
        // SAFETY: forwarded contract.
        unsafe { task_mut(task) }?;
        // SAFETY: checked live; the caller gives it up.
        unsafe { free_task(task) };
        Ok(())
    });
}

fn not_submitted(t: &TaskBox) -> CResult<()> {
    if t.submitted.is_some() { Err(CError::inval("the task was already submitted")) } else { Ok(()) }
}

/// Set buffer `index` of `t` to `h` with `mode` (None: the codelet's mode).
///
/// # Safety
/// As the setters' contracts.
unsafe fn set_handle(t: *mut weft_task, index: u32, h: weft_data_handle, mode: Option<AccessMode>) -> CResult<()> {
    // SAFETY: forwarded contract.
    let t = unsafe { task_mut(t) }?;
    not_submitted(t)?;
    // SAFETY: forwarded contract.
    let handle = unsafe { core_handle(h) }?;
    let i = index as usize;
    if t.cl.is_null() {
        return Err(CError::inval("the task has no codelet: it cannot access data"));
    }
    // SAFETY: the task's codelet is valid until submission (weft_task_create's contract).
    let raw = unsafe { t.cl.read() };
    if let Ok(n) = usize::try_from(raw.nbuffers) {
        if i >= n {
            return Err(CError::new(
                weft_error::WEFT_EBUFCOUNT,
                format!("codelet '{}' declares {n} buffers but the task sets buffer {i}", String::from_utf8_lossy(codelet_name(&raw))),
            ));
        }
    } else if mode.is_none() {
        return Err(CError::inval("the codelet has WEFT_VARIABLE_NBUFFERS: give each mode with weft_task_set_handle_mode"));
    } else if i >= MAX_BUFFERS {
        return Err(CError::new(weft_error::WEFT_EBUFCOUNT, format!("buffer index {i} is too large")));
    }
    if t.handles.len() <= i {
        t.handles.resize(i + 1, None);
    }
    t.handles[i] = Some((handle, mode));
    Ok(())
}

/// Make `handle` buffer `index` of `task`, accessed with the codelet's `modes[index]`
/// (StarPU's `task->handles[index] = handle`). `WEFT_EBUFCOUNT` if `index` is not below the
/// codelet's `nbuffers`; `WEFT_EINVAL` for a NULL or invalid task or handle.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `handle` NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_handle(task: *mut weft_task, index: u32, handle: weft_data_handle) -> c_int {
    // SAFETY: forwarded contract.
    ret_code(|| unsafe { set_handle(task, index, handle, None) })
}

/// Make `handle` buffer `index` of `task`, accessed with `mode` (StarPU's
/// `task->handles[index] = handle; task->modes[index] = mode`): `WEFT_R`, `WEFT_W`,
/// `WEFT_RW`, `WEFT_SCRATCH`, `WEFT_REDUX`, or `WEFT_W`/`WEFT_RW` `| WEFT_COMMUTE`.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `handle` NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_handle_mode(
    task: *mut weft_task,
    index: u32,
    handle: weft_data_handle,
    mode: weft_access_mode_int,
) -> c_int {
    ret_code(|| {
        let m = access_mode(mode).ok_or_else(|| CError::inval(format!("mode {mode} is not a weft_access_mode")))?;
        // SAFETY: forwarded contract.
        unsafe { set_handle(task, index, handle, Some(m)) }
    })
}

/// Give the task an argument: `size` bytes at `arg` are copied now, and the task's
/// `cpu_func` receives a pointer to a (16-byte aligned) copy of them as `cl_arg`. NULL with
/// size 0 removes the argument.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `arg` NULL or valid for reading `size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_arg(task: *mut weft_task, arg: *const c_void, size: usize) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        if size == 0 {
            t.args.clear();
            return Ok(());
        }
        if arg.is_null() {
            return Err(CError::inval(format!("arg is NULL but size is {size}")));
        }
        if size > isize::MAX as usize {
            return Err(CError::inval("size is too large"));
        }
        // SAFETY: `arg` is valid for reading `size` bytes (contract).
        let bytes = unsafe { std::slice::from_raw_parts(arg.cast::<u8>(), size) };
        t.args = bytes.to_vec();
        Ok(())
    })
}

/// Set the task's priority (higher runs first under priority-aware schedulers; default 0).
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_priority(task: *mut weft_task, priority: c_int) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        t.priority = priority;
        Ok(())
    })
}

/// Give the task tag `tag`: tasks declaring a dependency on `tag` run after it, even if
/// submitted before it (StarPU's `task->use_tag = 1; task->tag_id = tag`).
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_tag(task: *mut weft_task, tag: weft_tag_t) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        t.tag = Some(tag);
        Ok(())
    })
}

/// Make the task run after the tasks carrying each of the `ndeps` tags in `tags` (which may
/// be submitted later), or after `weft_tag_notify_from_apps` on them.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `tags` NULL or valid for reading `ndeps` tags.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_declare_deps_tags(task: *mut weft_task, ndeps: u32, tags: *const weft_tag_t) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        if ndeps == 0 {
            return Ok(());
        }
        if tags.is_null() {
            return Err(CError::inval(format!("tags is NULL but ndeps is {ndeps}")));
        }
        // SAFETY: `tags` is valid for reading `ndeps` tags (contract).
        let tags = unsafe { std::slice::from_raw_parts(tags, ndeps as usize) };
        t.dep_tags.extend_from_slice(tags);
        Ok(())
    })
}

/// Make the task run after each of the `ndeps` tasks in `deps`, which must be submitted
/// already and non-detached (see `weft_task_set_detach`). StarPU's
/// `starpu_task_declare_deps_array`.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `deps` NULL or valid for reading `ndeps`
/// task pointers, each NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_declare_deps(task: *mut weft_task, ndeps: u32, deps: *const *mut weft_task) -> c_int {
    ret_code(|| {
        if ndeps > 0 && deps.is_null() {
            return Err(CError::inval(format!("deps is NULL but ndeps is {ndeps}")));
        }
        let mut handles = Vec::with_capacity(ndeps as usize);
        for i in 0..ndeps as usize {
            // SAFETY: `deps` is valid for `ndeps` reads (contract).
            let d = unsafe { deps.add(i).read() };
            if d == task {
                return Err(CError::new(weft_error::WEFT_ECYCLE, "a task cannot depend on itself"));
            }
            // SAFETY: each entry is NULL or a live task (contract).
            let d = unsafe { task_mut(d) }?;
            let h = d.submitted.clone().ok_or_else(|| {
                CError::inval(format!("deps[{i}] is not submitted, or is detached: submit it first, with weft_task_set_detach(dep, 0)"))
            })?;
            handles.push(h);
        }
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        t.deps.extend(handles);
        Ok(())
    })
}

/// Call `callback(arg)` when the task completes (successfully or not), on the thread that
/// completes it (usually a worker), before `weft_task_wait` returns. The callback must not
/// wait for tasks. NULL `callback` removes it.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task; `callback` must be callable with `arg` on
/// any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_callback(task: *mut weft_task, callback: weft_callback_func, arg: *mut c_void) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        t.callback = callback.map(|f| CCallback { f, arg });
        Ok(())
    })
}

/// Whether the task is freed by its submission (`detach` nonzero, the default) or kept for
/// `weft_task_wait` and `weft_task_declare_deps` (`detach` = 0), as StarPU's `task->detach`.
///
/// # Safety
/// `task` must be NULL or a live, unsubmitted task.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_set_detach(task: *mut weft_task, detach: c_int) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        not_submitted(t)?;
        t.detach = detach != 0;
        Ok(())
    })
}

/// A task's buffers with their resolved modes.
type Accesses = Vec<(crate::data::DataHandle, AccessMode)>;

/// The task's codelet and its buffers with their resolved modes (None: no codelet).
///
/// # Safety
/// `t.cl` is NULL or a valid codelet (weft_task_create's contract).
unsafe fn work_of(st: &State, t: &TaskBox) -> CResult<Option<(Arc<Codelet>, Accesses)>> {
    if t.cl.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    let (c, raw) = unsafe { codelet_of(st, t.cl) }?;
    if let Ok(n) = usize::try_from(raw.nbuffers)
        && n != t.handles.len()
    {
        return Err(Error::BufferCount { codelet: c.name().to_string(), declared: n, given: t.handles.len() }.into());
    }
    let mut accesses = Vec::with_capacity(t.handles.len());
    for (i, slot) in t.handles.iter().enumerate() {
        let (h, mode) = slot
            .as_ref()
            .ok_or_else(|| CError::inval(format!("buffer {i} of the task has no handle: call weft_task_set_handle(task, {i}, handle)")))?;
        let mode = match mode {
            Some(m) => *m,
            None => access_mode(raw.modes[i]).ok_or_else(|| {
                CError::inval(format!(
                    "codelet '{}' has no valid access mode for buffer {i} (modes[{i}] = {}): set it, or use weft_task_set_handle_mode",
                    c.name(),
                    raw.modes[i]
                ))
            })?,
        };
        accesses.push((h.clone(), mode));
    }
    Ok(Some((c, accesses)))
}

/// Turn the C task into a core task builder.
///
/// # Safety
/// `t.cl` is NULL or a valid codelet (weft_task_create's contract).
unsafe fn builder(st: &State, t: &TaskBox) -> CResult<TaskBuilder> {
    // SAFETY: forwarded contract.
    let mut b = match unsafe { work_of(st, t) }? {
        None => TaskBuilder::empty(),
        Some((c, accesses)) => {
            let mut b = TaskBuilder::new(&c);
            for (h, mode) in &accesses {
                b = b.access(h, *mode);
            }
            b
        }
    };
    b = b.args(&t.args).priority(t.priority);
    if let Some(tag) = t.tag {
        b = b.tag(tag);
    }
    for &d in &t.dep_tags {
        b = b.after_tag(d);
    }
    for d in &t.deps {
        b = b.after(d);
    }
    if let Some(cb) = t.callback {
        b = b.callback(move |_| cb.call());
    }
    Ok(b)
}

/// What a C task asks for, for another crate's C API that submits tasks its own way
/// (weft-mpi's `weft_mpi_task_insert`): the codelet converted as `weft_task_submit` converts
/// it, the buffers with their resolved modes, the argument and the priority.
pub struct TaskParts {
    pub codelet: Arc<Codelet>,
    pub accesses: Accesses,
    pub args: Vec<u8>,
    pub priority: i32,
}

/// Read the task `t` (made with `weft_task_create` and the setters) into [`TaskParts`],
/// checked as `weft_task_submit` checks it (`WEFT_ENODEV`, `WEFT_EBUFCOUNT`, `WEFT_EINVAL`,
/// `WEFT_ENOTINIT`). The task stays the caller's, unchanged: free it with
/// `weft_task_destroy` once its parts are used. What `TaskParts` cannot carry is refused
/// with `WEFT_ENOTSUP`, naming `what` (the caller's entry point) in the message: no codelet,
/// a tag, tag or task dependencies, a callback, or `weft_task_set_detach(task, 0)`.
///
/// # Safety
/// `t` is NULL or a live task from `weft_task_create` whose codelet is still valid, not used
/// by another thread during the call.
pub unsafe fn task_parts(t: *mut weft_task, what: &str) -> CResult<TaskParts> {
    // SAFETY: forwarded contract.
    let task = unsafe { task_mut(t) }?;
    not_submitted(task)?;
    let unsupported = |feature: &str| CError::new(weft_error::WEFT_ENOTSUP, format!("{what} does not support {feature}"));
    if task.tag.is_some() || !task.dep_tags.is_empty() {
        return Err(unsupported("tags (weft_task_set_tag, weft_task_declare_deps_tags)"));
    }
    if !task.deps.is_empty() {
        return Err(unsupported("task dependencies (weft_task_declare_deps)"));
    }
    if task.callback.is_some() {
        return Err(unsupported("callbacks (weft_task_set_callback)"));
    }
    if !task.detach {
        return Err(unsupported("non-detached tasks (weft_task_set_detach(task, 0))"));
    }
    let st = state()?;
    // SAFETY: the task's codelet is valid until submission (weft_task_create's contract).
    let (codelet, accesses) = unsafe { work_of(&st, task) }?.ok_or_else(|| unsupported("tasks without a codelet"))?;
    Ok(TaskParts { codelet, accesses, args: task.args.clone(), priority: task.priority })
}

/// Submit `t`; on success a detached task is freed and the core handle returned.
///
/// # Safety
/// `t` is NULL or a live task (weft_task_submit's contract).
unsafe fn submit(t: *mut weft_task) -> CResult<(TaskHandle, bool)> {
    // SAFETY: forwarded contract.
    let task = unsafe { task_mut(t) }?;
    not_submitted(task)?;
    let st = state()?;
    // SAFETY: the task's codelet is valid until submission (weft_task_create's contract).
    let b = unsafe { builder(&st, task) }?;
    let h = st.rt.submit(b)?;
    let freed = task.detach;
    if freed {
        // SAFETY: live task, submitted: a detached task belongs to the runtime now.
        unsafe { free_task(t) };
    } else {
        task.submitted = Some(h.clone());
    }
    Ok((h, freed))
}

/// Submit a task (StarPU's `starpu_task_submit`): it runs once its data dependencies
/// (sequential consistency per handle), tag and task dependencies are met.
///
/// Returns 0 (a detached task is then freed: do not touch it again), or `WEFT_ENODEV`
/// (`cpu_func` is NULL), `WEFT_EBUFCOUNT` (handles ≠ `nbuffers`), `WEFT_EINVAL` (a buffer or
/// mode missing), `WEFT_ECYCLE`, `WEFT_ETAGINUSE`, `WEFT_ENOTINIT`, … On error the task is
/// not submitted and stays the caller's (fix and resubmit it, or `weft_task_destroy` it).
///
/// # Safety
/// `task` must be NULL or a live task from `weft_task_create` whose codelet is still valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_submit(task: *mut weft_task) -> c_int {
    // SAFETY: forwarded contract.
    ret_code(|| unsafe { submit(task) }.map(|_| ()))
}

/// Submit a task and wait for it (StarPU's `task->synchronous = 1`). Once submitted, the
/// task is freed whatever its detach setting. Returns the submission error (the task then
/// stays the caller's), or the task's result: 0, or `WEFT_ETASK` if it failed or was
/// cancelled.
///
/// # Safety
/// As `weft_task_submit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_submit_sync(task: *mut weft_task) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let (h, freed) = unsafe { submit(task) }?;
        if !freed {
            // SAFETY: submitted, non-detached, still live: this call owns it.
            unsafe { free_task(task) };
        }
        Ok(h.wait()?)
    })
}

/// Wait for a submitted non-detached task, then free it (StarPU's `starpu_task_wait`).
/// Returns 0, `WEFT_ETASK` if it failed or was cancelled, `WEFT_EDEADLK` from inside a task
/// (the task is then not freed), or `WEFT_EINVAL` if it was not submitted.
///
/// # Safety
/// `task` must be NULL or a live task from `weft_task_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_task_wait(task: *mut weft_task) -> c_int {
    ret_code(|| {
        // SAFETY: forwarded contract.
        let t = unsafe { task_mut(task) }?;
        let h = t.submitted.clone().ok_or_else(|| CError::inval("the task was not submitted (or was detached): nothing to wait for"))?;
        let r = h.wait();
        if matches!(r, Err(Error::WouldDeadlock)) {
            return Err(Error::WouldDeadlock.into());
        }
        // SAFETY: live and submitted: waiting gives it up.
        unsafe { free_task(task) };
        Ok(r?)
    })
}

/// Declare tag `tag` done from the application: tasks depending on it may run (StarPU's
/// `starpu_tag_notify_from_apps`). `WEFT_ETAGINUSE` if a task carrying it has not completed.
#[unsafe(no_mangle)]
pub extern "C" fn weft_tag_notify_from_apps(tag: weft_tag_t) -> c_int {
    ret_code(|| Ok(state()?.rt.tag_notify(tag)?))
}

/// Forget a completed tag so that it can be given to a new task (StarPU's
/// `starpu_tag_remove`). `WEFT_ETAGINUSE` while tasks wait on it or carry it.
#[unsafe(no_mangle)]
pub extern "C" fn weft_tag_remove(tag: weft_tag_t) -> c_int {
    ret_code(|| Ok(state()?.rt.tag_remove(tag)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_modes_decode_like_starpu() {
        use weft_access_mode::*;
        assert_eq!(access_mode(WEFT_R as c_int), Some(AccessMode::R));
        assert_eq!(access_mode(WEFT_RW as c_int), Some(AccessMode::RW));
        assert_eq!(access_mode(WEFT_RW as c_int | WEFT_COMMUTE as c_int), Some(AccessMode::Commute));
        assert_eq!(access_mode(WEFT_NONE as c_int), None);
        assert_eq!(access_mode(WEFT_R as c_int | WEFT_COMMUTE as c_int), None);
        assert_eq!(access_mode(42), None);
    }
}
