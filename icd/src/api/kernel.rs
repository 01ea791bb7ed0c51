//! Kernels and their launch: `clEnqueueNDRangeKernel` submits a core task whose codelet
//! has a custom OpenCL launch. The task's accesses are the distinct buffers among the
//! arguments (`R` where every use is a `const` or `__constant` pointer or the buffer is
//! `CL_MEM_READ_ONLY`, else `RW`), so core moves the data to whichever device runs the
//! kernel. On that device's driver the launch takes a vendor kernel of the program built
//! for that device (a small pool per device), sets the arguments (buffers are the task's
//! replicas there), and enqueues it.
//!
//! Each kernel object has one codelet, made with it; what differs between two enqueues
//! (the argument snapshot, work sizes, the event) is the task's payload (`Launch`), so an
//! enqueue allocates no codelet, closure or name.
//!
//! Placement: a queue on a real device pins the task to that device's driver
//! (`on_worker`); an out-of-order queue on the unified device lets the scheduler choose; an
//! in-order one makes each kernel a follower (`TaskBuilder::set_follow`): once the command
//! before it completed, it goes to the device where it is expected to finish first (core
//! weighs the drivers' tasks in flight and pinned, other queues' included), and right
//! behind a short kernel (under `weft_core::BACK_TO_BACK_US`) it is launched on that
//! kernel's device without waiting. A program built for only some of the devices keeps
//! its in-order queues on one of them each (round robin over the queues).

use super::cl::*;
use super::event::{EventState, hand_out};
use super::icd::{self, Obj, new_obj, publish};
use super::memory::Mem;
use super::platform::DeviceKind;
use super::program::Program;
use super::queue::{Completes, Queue, enqueue, submit_with};
use super::sampler::Sampler;
use super::{ClResult, Info, c_str, cl_entrypoint, entry::retain_release, info_ptr, info_str, info_val, slice};
use smallvec::SmallVec;
use std::ffi::{c_char, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use weft_core::task::{AccessMode, Codelet, OpenClImpl, OpenClLaunch, TaskBuilder, TaskPayload};
use weft_vendors::opencl::Kernel as VendorKernel;
use weft_vendors::opencl::Mem as VendorMem;
use weft_vendors::opencl::result as vr;

/// What an argument is, from the kernel's argument info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A `__global` pointer (`const`-qualified or not) or a `__constant` one (read-only).
    Buffer {
        read_only: bool,
    },
    Local,
    /// An image (`write`: not `__read_only`).
    Image {
        write: bool,
    },
    Sampler,
    Value,
    /// No argument info: decided by the value set.
    Unknown,
}

/// An argument as set. Buffers are held weakly, as OpenCL does not retain them: a kernel
/// kept in a cache must not keep its last buffers alive (released buffers make the next
/// enqueue fail with `CL_INVALID_KERNEL_ARGS`).
#[derive(Clone)]
pub enum KArg {
    Mem(Option<Weak<Obj<Mem>>>),
    Local(usize),
    Bytes(Vec<u8>),
    Sampler(Arc<Obj<Sampler>>),
    /// An SVM pointer (`clSetKernelArgSVMPointer`).
    Svm(usize),
}

pub struct Kernel {
    pub program: Arc<Obj<Program>>,
    pub name: String,
    pub kinds: Vec<ArgKind>,
    pub args: Mutex<Vec<Option<KArg>>>,
    /// Idle vendor kernels, per real device (index into the platform's `real`).
    pools: Vec<Mutex<Vec<Pooled>>>,
    /// SVM pointers the kernel may use besides its arguments (`CL_KERNEL_EXEC_INFO_SVM_PTRS`).
    pub svm_ptrs: Mutex<Vec<usize>>,
    /// The codelet of every launch ([`launch_codelet`]; what differs is the task's payload).
    codelet: Arc<Codelet>,
}
crate::cl_object!(Kernel, CL_INVALID_KERNEL);

/// [`Pooled::mems`] of an argument set to an SVM pointer (no `cl_mem` is 1).
const SVM_ARG: usize = 1;

/// An idle vendor kernel, with the buffers its arguments are known to hold.
struct Pooled {
    k: VendorKernel,
    /// Per argument index, the raw `cl_mem` last set there by a launch (0: unknown, or not a
    /// buffer; [`SVM_ARG`]: an SVM pointer). A launch of an in-order stream mostly passes
    /// the same buffers again, and the vendor kernel keeps its arguments: those need no
    /// `clSetKernelArg`.
    mems: SmallVec<[usize; 4]>,
}

impl Pooled {
    fn new(k: VendorKernel) -> Pooled {
        Pooled { k, mems: SmallVec::new() }
    }
}

impl Kernel {
    /// A vendor kernel for real device `i` (from the pool, or new).
    fn take(&self, i: usize) -> ClResult<Pooled> {
        if let Some(k) = self.pools.get(i).and_then(|p| p.lock().unwrap_or_else(|e| e.into_inner()).pop()) {
            return Ok(k);
        }
        self.fresh(i)
    }

    /// A new vendor kernel for real device `i`.
    fn fresh(&self, i: usize) -> ClResult<Pooled> {
        let st = self.program.state.lock().unwrap_or_else(|e| e.into_inner());
        let vp = st.builds.get(i).and_then(|b| b.as_ref()).and_then(|b| b.program.as_ref()).ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
        VendorKernel::new(vp, &self.name).map(Pooled::new).map_err(|e| e.0)
    }

    fn give_back(&self, i: usize, k: Pooled) {
        if let Some(p) = self.pools.get(i) {
            p.lock().unwrap_or_else(|e| e.into_inner()).push(k);
        }
    }

    /// Run `f` on a vendor kernel of the first real device it is built for. `f` may set its
    /// arguments: what the launches knew of them is forgotten.
    fn with_template<T>(&self, f: impl FnOnce(&mut VendorKernel, usize) -> ClResult<T>) -> ClResult<T> {
        let &i = self.program.built().first().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
        let mut k = self.take(i)?;
        let r = f(&mut k.k, i);
        // Forget the buffers, not the SVM arguments (see `run_launch`).
        k.mems.iter_mut().filter(|m| **m != SVM_ARG).for_each(|m| *m = 0);
        self.give_back(i, k);
        r
    }
}

fn create_kernel_named(program: Handle, name: &str) -> ClResult<Handle> {
    let p = icd::get::<Program>(program)?;
    let built = p.built();
    // CL_INVALID_PROGRAM_EXECUTABLE if there is no successfully built executable for program.
    let &first = built.first().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
    let nreal = p.context.platform.real.len();
    let mut pools: Vec<Mutex<Vec<Pooled>>> = (0..nreal).map(|_| Mutex::new(Vec::new())).collect();
    let (kinds, template, model) = {
        let st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        // One performance model per kernel of a given source and build options, shared by
        // every process that runs it.
        let mut h = weft_core::hash::Fnv::default();
        h.write(p.source.as_bytes());
        h.write(&[0]);
        h.write(st.options.as_bytes());
        let model = format!("cl-{:016x}-{name}", h.finish());
        let vp = st.builds[first].as_ref().and_then(|b| b.program.as_ref()).ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
        // CL_INVALID_KERNEL_NAME if kernel_name is not found in program.
        let k = VendorKernel::new(vp, name).map_err(|e| if e.0 == CL_INVALID_VALUE { CL_INVALID_KERNEL_NAME } else { e.0 })?;
        let n = k.num_args().map_err(|e| e.0)?;
        let kinds = (0..n).map(|i| arg_kind(&k, i)).collect::<Vec<_>>();
        (kinds, k, model)
    };
    pools[first].get_mut().unwrap_or_else(|e| e.into_inner()).push(Pooled::new(template));
    p.kernels.fetch_add(1, Ordering::AcqRel);
    let k = new_obj(Kernel {
        program: p.clone(),
        name: name.to_owned(),
        args: Mutex::new(vec![None; kinds.len()]),
        kinds,
        pools,
        svm_ptrs: Mutex::new(Vec::new()),
        codelet: launch_codelet(name, model),
    });
    Ok(publish(&k))
}

fn arg_u32(k: &VendorKernel, i: u32, param: cl_uint) -> Option<u64> {
    // SAFETY: the vendor kernel is live.
    let b = unsafe { vr::get_kernel_arg_info(k.as_raw(), i, param) }.ok()?;
    vr::bytes_to_u64(&b).ok()
}

fn arg_kind(k: &VendorKernel, i: u32) -> ArgKind {
    let Some(addr) = arg_u32(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER) else { return ArgKind::Unknown };
    let qual = arg_u32(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER).unwrap_or(0);
    // SAFETY: the vendor kernel is live.
    let ty = unsafe { vr::get_kernel_arg_info(k.as_raw(), i, CL_KERNEL_ARG_TYPE_NAME) }.map(vr::bytes_to_string).unwrap_or_default();
    if !ty.contains('*') && ty.contains("image") {
        let access = arg_u32(k, i, CL_KERNEL_ARG_ACCESS_QUALIFIER).unwrap_or(0) as cl_uint;
        return ArgKind::Image { write: access != CL_KERNEL_ARG_ACCESS_READ_ONLY };
    }
    if ty.trim() == "sampler_t" {
        return ArgKind::Sampler;
    }
    match addr as cl_uint {
        CL_KERNEL_ARG_ADDRESS_GLOBAL if ty.contains('*') || !ty.contains("image") => {
            ArgKind::Buffer { read_only: qual & CL_KERNEL_ARG_TYPE_CONST != 0 }
        }
        CL_KERNEL_ARG_ADDRESS_CONSTANT => ArgKind::Buffer { read_only: true },
        CL_KERNEL_ARG_ADDRESS_LOCAL => ArgKind::Local,
        _ => ArgKind::Value,
    }
}

/// # Safety
/// `name` null or NUL-terminated; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateKernel)]
unsafe fn create_kernel(program: Handle, name: *const c_char) -> ClResult<Handle> {
    icd::get::<Program>(program)?;
    // CL_INVALID_VALUE if kernel_name is NULL.
    // SAFETY: the caller's contract.
    let name = unsafe { c_str(name) }.ok_or(CL_INVALID_VALUE)?.to_string_lossy().into_owned();
    create_kernel_named(program, &name)
}

/// # Safety
/// `kernels` null or writable for `n` handles; `n_ret` null or writable.
#[cl_entrypoint(clCreateKernelsInProgram)]
unsafe fn create_kernels_in_program(program: Handle, n: cl_uint, kernels: *mut Handle, n_ret: *mut cl_uint) -> ClResult<()> {
    let p = icd::get::<Program>(program)?;
    let names = vr::bytes_to_string(super::program::vendor_names(&p)?);
    let names: Vec<&str> = names.split(';').filter(|s| !s.is_empty()).collect();
    // CL_INVALID_VALUE if kernels is not NULL and num_kernels is less than the number of
    // kernels in program.
    if !kernels.is_null() && (n as usize) < names.len() {
        return Err(CL_INVALID_VALUE);
    }
    if !kernels.is_null() {
        for (i, name) in names.iter().enumerate() {
            let h = create_kernel_named(program, name)?;
            // SAFETY: the caller's contract; i < n.
            unsafe { kernels.add(i).write_unaligned(h) };
        }
    }
    if !n_ret.is_null() {
        // SAFETY: the caller's contract.
        unsafe { n_ret.write_unaligned(names.len() as cl_uint) };
    }
    Ok(())
}

retain_release!(Kernel, clRetainKernel => retain_kernel);

#[cl_entrypoint(clReleaseKernel)]
fn release_kernel(kernel: Handle) -> ClResult<()> {
    // The program counts the kernels the application holds (clBuildProgram refuses to
    // rebuild under them), not Weft's own references: a launch still running keeps its
    // kernel alive without keeping the program from a rebuild.
    if let Some(k) = icd::release::<Kernel>(kernel)? {
        k.program.kernels.fetch_sub(1, Ordering::AcqRel);
    }
    Ok(())
}

fn set_arg(k: &Kernel, index: cl_uint, size: usize, value: *const c_void) -> ClResult<()> {
    // CL_INVALID_ARG_INDEX if arg_index is not a valid argument index.
    let kind = *k.kinds.get(index as usize).ok_or(CL_INVALID_ARG_INDEX)?;
    let mem_arg = |value: *const c_void, image: Option<bool>| -> ClResult<KArg> {
        // CL_INVALID_ARG_SIZE if [...] the argument is a memory object and arg_size != sizeof(cl_mem).
        if size != size_of::<Handle>() {
            return Err(CL_INVALID_ARG_SIZE);
        }
        if value.is_null() {
            return Ok(KArg::Mem(None));
        }
        // SAFETY: the application passes a pointer to a cl_mem (`size` bytes, checked).
        let h = unsafe { value.cast::<Handle>().read_unaligned() };
        if h.is_null() {
            return Ok(KArg::Mem(None));
        }
        // CL_INVALID_MEM_OBJECT for an argument declared to be a memory object when the
        // specified arg_value is not a valid memory object.
        let m = icd::get::<Mem>(h)?;
        if !Arc::ptr_eq(&m.context, &k.program.context) || image.is_some_and(|img| img != m.image.is_some()) {
            return Err(CL_INVALID_MEM_OBJECT);
        }
        Ok(KArg::Mem(Some(Arc::downgrade(&m))))
    };
    let arg = match kind {
        ArgKind::Buffer { .. } => mem_arg(value, Some(false))?,
        ArgKind::Image { .. } => {
            // CL_INVALID_ARG_VALUE if arg_value specified is NULL for an image argument.
            if value.is_null() {
                return Err(CL_INVALID_ARG_VALUE);
            }
            match mem_arg(value, Some(true))? {
                KArg::Mem(None) => return Err(CL_INVALID_ARG_VALUE),
                a => a,
            }
        }
        ArgKind::Sampler => {
            // CL_INVALID_ARG_SIZE if [...] the argument is a sampler object and arg_size !=
            // sizeof(cl_sampler); CL_INVALID_SAMPLER for an argument declared to be of type
            // sampler_t when the specified arg_value is not a valid sampler object.
            if size != size_of::<Handle>() {
                return Err(CL_INVALID_ARG_SIZE);
            }
            if value.is_null() {
                return Err(CL_INVALID_SAMPLER);
            }
            // SAFETY: the application passes a pointer to a cl_sampler (`size` bytes, checked).
            let h = unsafe { value.cast::<Handle>().read_unaligned() };
            let sm = icd::get::<Sampler>(h)?;
            if !Arc::ptr_eq(&sm.context, &k.program.context) {
                return Err(CL_INVALID_SAMPLER);
            }
            KArg::Sampler(sm)
        }
        ArgKind::Local => {
            // CL_INVALID_ARG_VALUE if the argument is declared with the local qualifier and
            // arg_value is not NULL; CL_INVALID_ARG_SIZE if arg_size is zero and the argument is
            // declared with the local qualifier.
            if !value.is_null() {
                return Err(CL_INVALID_ARG_VALUE);
            }
            if size == 0 {
                return Err(CL_INVALID_ARG_SIZE);
            }
            KArg::Local(size)
        }
        ArgKind::Value | ArgKind::Unknown => {
            if kind == ArgKind::Unknown && value.is_null() && size > 0 {
                KArg::Local(size)
            } else if kind == ArgKind::Unknown
                && size == size_of::<Handle>()
                // SAFETY: `size` readable bytes at `value` (the application's contract).
                && icd::is::<Mem>(unsafe { value.cast::<Handle>().read_unaligned() })
            {
                mem_arg(value, None)?
            } else if kind == ArgKind::Unknown
                && size == size_of::<Handle>()
                // SAFETY: as above.
                && icd::is::<Sampler>(unsafe { value.cast::<Handle>().read_unaligned() })
            {
                // SAFETY: as above.
                KArg::Sampler(icd::get::<Sampler>(unsafe { value.cast::<Handle>().read_unaligned() })?)
            } else {
                // CL_INVALID_ARG_VALUE if arg_value specified is not a valid value.
                if value.is_null() {
                    return Err(CL_INVALID_ARG_VALUE);
                }
                // SAFETY: the application's contract: `size` readable bytes.
                let bytes = unsafe { slice(value.cast::<u8>(), size) }?.to_vec();
                // The vendor checks the size against the parameter's type.
                k.with_template(|vk, _| vk.set_arg_bytes(index, &bytes).map_err(|e| e.0))?;
                KArg::Bytes(bytes)
            }
        }
    };
    k.args.lock().unwrap_or_else(|e| e.into_inner())[index as usize] = Some(arg);
    Ok(())
}

/// # Safety
/// `value` null or readable for `size` bytes.
#[cl_entrypoint(clSetKernelArg)]
unsafe fn set_kernel_arg(kernel: Handle, index: cl_uint, size: usize, value: *const c_void) -> ClResult<()> {
    set_arg(&**icd::get::<Kernel>(kernel)?, index, size, value)
}

#[cl_entrypoint(clGetKernelInfo)]
fn get_kernel_info(k: Arc<Obj<Kernel>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_KERNEL_FUNCTION_NAME => info_str(&k.name),
        CL_KERNEL_NUM_ARGS => info_val(k.kinds.len() as cl_uint),
        CL_KERNEL_REFERENCE_COUNT => info_val(icd::refcount_of(&k)),
        CL_KERNEL_CONTEXT => info_ptr(icd::handle_of(&k.program.context)),
        CL_KERNEL_PROGRAM => info_ptr(icd::handle_of(&k.program)),
        CL_KERNEL_ATTRIBUTES => k
            // SAFETY: the vendor kernel is live.
            .with_template(|vk, _| unsafe { vr::get_kernel_info(vk.as_raw(), param) }.map_err(|e| e.0))
            .unwrap_or_else(|_| info_str("")),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

#[cl_entrypoint(clGetKernelWorkGroupInfo)]
fn get_kernel_work_group_info(k: Arc<Obj<Kernel>>, device: Handle, param: cl_uint) -> ClResult<Info> {
    let plat = k.program.context.platform;
    let kind = if device.is_null() {
        // CL_INVALID_DEVICE if device is NULL but there is more than one device associated with kernel.
        if k.program.devices.len() != 1 {
            return Err(CL_INVALID_DEVICE);
        }
        k.program.devices[0]
    } else {
        let d = plat.device(device)?;
        if !k.program.devices.contains(&d.kind) {
            return Err(CL_INVALID_DEVICE);
        }
        d.kind
    };
    let real = match kind {
        DeviceKind::Real(i) => i,
        DeviceKind::Unified => *k.program.built().first().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?,
    };
    let vk = k.take(real)?;
    // SAFETY: the vendor kernel and device are live.
    let r = unsafe { vr::get_kernel_work_group_info(vk.k.as_raw(), plat.real[real].1.id().as_raw(), param) }.map_err(|e| e.0);
    k.give_back(real, vk);
    let bytes = r?;
    Ok(Info(bytes))
}

#[cl_entrypoint(clGetKernelArgInfo)]
fn get_kernel_arg_info(k: Arc<Obj<Kernel>>, index: cl_uint, param: cl_uint) -> ClResult<Info> {
    // CL_INVALID_ARG_INDEX if arg_indx is not a valid argument index.
    if index as usize >= k.kinds.len() {
        return Err(CL_INVALID_ARG_INDEX);
    }
    // SAFETY: the vendor kernel is live.
    let bytes = k.with_template(|vk, _| unsafe { vr::get_kernel_arg_info(vk.as_raw(), index, param) }.map_err(|e| e.0))?;
    Ok(Info(bytes))
}

/// Work sizes of an enqueue.
///
/// # Safety
/// Each pointer null or readable for `dim` elements.
unsafe fn sizes(dim: cl_uint, p: *const usize) -> ClResult<Option<Dims>> {
    // SAFETY: the caller's contract.
    Ok(if p.is_null() { None } else { Some(SmallVec::from_slice(unsafe { slice(p, dim as usize) }?)) })
}

/// # Safety
/// Pointers per OpenCL's clEnqueueNDRangeKernel.
#[cl_entrypoint(clEnqueueNDRangeKernel)]
unsafe fn enqueue_nd_range_kernel(
    qq: Arc<Obj<Queue>>,
    kernel: Handle,
    dim: cl_uint,
    offset: *const usize,
    global: *const usize,
    local: *const usize,
    n: cl_uint,
    list: *const Handle,
    event: *mut Handle,
) -> ClResult<()> {
    let k = icd::get::<Kernel>(kernel)?;
    // CL_INVALID_CONTEXT if context associated with command_queue and kernel are not the same.
    if !Arc::ptr_eq(&qq.context, &k.program.context) {
        return Err(CL_INVALID_CONTEXT);
    }
    // SAFETY: the caller's contract.
    let waits = unsafe { super::event::wait_list(n, list, Some(&qq.context)) }?;
    // CL_INVALID_WORK_DIMENSION if work_dim is not a valid value (i.e. a value between 1 and 3).
    if !(1..=3).contains(&dim) {
        return Err(CL_INVALID_WORK_DIMENSION);
    }
    // SAFETY: the caller's contract.
    let (offset, global, local) = unsafe { (sizes(dim, offset)?, sizes(dim, global)?, sizes(dim, local)?) };
    // Since OpenCL 2.1 a NULL global_work_size, or a zero in it, is no error (returning
    // CL_INVALID_GLOBAL_WORK_SIZE for them is deprecated): "the kernel command will
    // trivially succeed after its event dependencies are satisfied and subsequently
    // update its completion event". Arguments must still be set.
    let global = global.unwrap_or_default();
    if global.is_empty() || global.contains(&0) {
        if k.args.lock().unwrap_or_else(|e| e.into_inner()).iter().any(Option::is_none) {
            return Err(CL_INVALID_KERNEL_ARGS);
        }
        let e = super::queue::submit(&qq, &waits, CL_COMMAND_NDRANGE_KERNEL, EventState::new_queued(), TaskBuilder::empty(), false)?;
        // SAFETY: the caller's contract.
        unsafe { super::event::hand_out(&e, event) };
        return Ok(());
    }
    if let Some(l) = &local {
        // CL_INVALID_WORK_GROUP_SIZE if local_work_size is specified and number of work-items
        // specified by global_work_size is not evenly divisible by size of work-group given by
        // local_work_size.
        if l.contains(&0) || global.iter().zip(l).any(|(g, l)| g % l != 0) {
            return Err(CL_INVALID_WORK_GROUP_SIZE);
        }
    }
    launch(&qq, &k, offset, global, local, &waits, event)
}

/// Work sizes, inline up to three dimensions.
type Dims = SmallVec<[usize; 3]>;

/// What differs between two launches of one kernel: the task's payload
/// (`TaskBuilder::payload`), read by the kernel's one codelet ([`launch_codelet`]).
struct Launch {
    kernel: Arc<Obj<Kernel>>,
    /// The command's state, when an event shows it (none for a launch asked for no event:
    /// nothing could read it, and the queue's finish waits on the task).
    state: Option<Arc<EventState>>,
    slots: SmallVec<[LaunchArg; 4]>,
    offset: Option<Dims>,
    global: Dims,
    local: Option<Dims>,
    /// The images among the task's buffers: (access index, image, copied back after the kernel).
    images: Vec<(usize, Arc<Obj<Mem>>, bool)>,
    exec_svm: Vec<usize>,
    /// Coarse-grained SVM allocations the kernel takes (address, size): unmapped from the
    /// host before it runs and mapped again after (svm.rs).
    coarse: Vec<(usize, usize)>,
    /// The launch may join its device's batch when the driver allows (`OpenClLaunch::batch`):
    /// not on a profiling queue, whose end timestamps would be the batch's.
    batchable: bool,
}

/// The launch completes the command's state: no boxed callback per launch.
impl TaskPayload for Launch {
    fn completed(&self, result: &Result<(), weft_core::task::TaskError>) {
        let code = super::event::code_of(result);
        if let Some(st) = &self.state {
            st.complete(code);
        }
    }
}

/// The codelet every launch of kernel `name` uses: its OpenCL implementation runs the
/// launch described by the task's payload ([`Launch`]). Its performance model is `model`;
/// each launch gives its footprint (`footprint`).
fn launch_codelet(name: &str, model: String) -> Arc<Codelet> {
    let imp = OpenClImpl::custom(|l: &OpenClLaunch<'_>| {
        let p = l.payload.and_then(|p| (p as &dyn std::any::Any).downcast_ref::<Launch>()).ok_or("a kernel task without its launch")?;
        run_launch(p, l)
    });
    Codelet::builder(name).opencl_impl(imp).model(weft_core::perfmodel::PerfModel::new(model)).build()
}

/// A launch's footprint and size in its kernel's performance model: what its cost depends
/// on is the work size and the buffers' sizes (the argument values are not hashed: a
/// kernel whose cost follows a scalar argument shares one entry across values). The size
/// is the bytes of its buffers (StarPU's default), or its work items when it has none.
fn footprint(global: &[usize], local: Option<&[usize]>, buffers: impl Iterator<Item = usize>) -> (u32, f64) {
    let mut h = weft_core::hash::Fnv::default();
    for &d in global {
        h.write_u64(d as u64);
    }
    h.write_u64(u64::MAX);
    for &d in local.unwrap_or(&[]) {
        h.write_u64(d as u64);
    }
    let mut bytes = 0.0;
    for b in buffers {
        h.write_u64(u64::MAX - 1);
        h.write_u64(b as u64);
        bytes += b as f64;
    }
    let items: f64 = global.iter().map(|&d| d as f64).product();
    (weft_core::perfmodel::fold(h.finish()), if bytes > 0.0 { bytes } else { items })
}

fn launch(
    qq: &Arc<Obj<Queue>>,
    k: &Arc<Obj<Kernel>>,
    offset: Option<Dims>,
    global: Dims,
    local: Option<Dims>,
    waits: &[Arc<Obj<super::event::Event>>],
    event: *mut Handle,
) -> ClResult<()> {
    let plat = qq.context.platform;
    // The real devices the kernel may run on: the queue's, built.
    let allowed: SmallVec<[usize; 4]> = {
        let st = k.program.state.lock().unwrap_or_else(|e| e.into_inner());
        let built = |i: usize| st.builds.get(i).is_some_and(|b| b.as_ref().is_some_and(|b| b.status == CL_BUILD_SUCCESS));
        match qq.device {
            DeviceKind::Real(i) => (built(i)).then_some(i).into_iter().collect(),
            DeviceKind::Unified => (0..plat.real.len()).filter(|&i| built(i)).collect(),
        }
    };
    // CL_INVALID_PROGRAM_EXECUTABLE if there is no successfully built program executable
    // available for device associated with command_queue.
    if allowed.is_empty() {
        return Err(CL_INVALID_PROGRAM_EXECUTABLE);
    }
    // Distinct buffers, each with its access mode; each argument's access index.
    let mut mems: SmallVec<[(Arc<Obj<Mem>>, bool); 4]> = SmallVec::new();
    let mut slots: SmallVec<[LaunchArg; 4]> = SmallVec::new();
    let mut svm = false;
    {
        let args = k.args.lock().unwrap_or_else(|e| e.into_inner());
        // CL_INVALID_KERNEL_ARGS if the kernel argument values have not been specified.
        if args.iter().any(Option::is_none) {
            return Err(CL_INVALID_KERNEL_ARGS);
        }
        for (i, a) in args.iter().flatten().enumerate() {
            slots.push(match a {
                KArg::Mem(Some(weak)) => {
                    let sub = weak.upgrade().ok_or(CL_INVALID_KERNEL_ARGS)?;
                    let ro = matches!(k.kinds[i], ArgKind::Buffer { read_only: true } | ArgKind::Image { write: false })
                        || sub.flags & CL_MEM_READ_ONLY != 0;
                    let region = sub.parent.is_some().then_some((sub.offset, sub.size));
                    // An image of a buffer stays itself (an image argument over its buffer's
                    // handle); a sub-buffer is its root at an offset.
                    let m = if sub.image.is_some() { sub.clone() } else { super::memory::root(&sub) };
                    let j = match mems.iter().position(|(x, _)| Arc::ptr_eq(x, &m)) {
                        Some(j) => {
                            mems[j].1 &= ro;
                            j
                        }
                        None => {
                            mems.push((m, ro));
                            mems.len() - 1
                        }
                    };
                    if mems[j].0.image.is_some() { LaunchArg::Image(j) } else { LaunchArg::Buffer(j, region) }
                }
                KArg::Mem(None) => LaunchArg::Null,
                KArg::Local(n) => LaunchArg::Local(*n),
                KArg::Bytes(b) => LaunchArg::Bytes(b.clone()),
                KArg::Sampler(s) => LaunchArg::Sampler(s.clone()),
                KArg::Svm(p) => {
                    svm = true;
                    LaunchArg::Svm(*p)
                }
            });
        }
    }
    let exec_svm = k.svm_ptrs.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // A kernel using SVM runs on the device SVM allocations belong to (svm.rs).
    let allowed: SmallVec<[usize; 4]> = if svm || !exec_svm.is_empty() {
        // CL_INVALID_OPERATION: no device of the queue can use this context's SVM.
        if !allowed.contains(&0) {
            return Err(CL_INVALID_OPERATION);
        }
        SmallVec::from_slice(&[0])
    } else {
        allowed
    };
    // Buffers over SVM memory (pyopencl's `SVM.as_buffer`): their data is fetched from memory
    // that kernels taking SVM pointers write outside core's view (svm.rs).
    let views: SmallVec<[Arc<Obj<Mem>>; 1]> = mems
        .iter()
        .filter(|(m, _)| m.image.is_none() && m.host_ptr != 0 && super::svm::in_svm(m.host_ptr, m.host_ptr + m.size))
        .map(|(m, _)| m.clone())
        .collect();
    let mut gated: Vec<Arc<Obj<super::event::Event>>> = Vec::new();
    let mut coarse = Vec::new();
    if svm || !exec_svm.is_empty() || !views.is_empty() {
        let ptrs: Vec<usize> =
            slots.iter().filter_map(|a| if let LaunchArg::Svm(p) = a { Some(*p) } else { None }).chain(exec_svm.iter().copied()).collect();
        gated = super::svm::kernel_waits(qq, waits, &ptrs, &views)?;
        coarse = super::svm::coarse_allocations(ptrs);
    }
    let waits = if gated.is_empty() { waits } else { &gated[..] };
    let images: Vec<(usize, Arc<Obj<Mem>>, bool)> =
        mems.iter().enumerate().filter(|(_, (m, _))| m.image.is_some()).map(|(j, (m, ro))| (j, m.clone(), !*ro)).collect();
    let profiled = qq.properties & CL_QUEUE_PROFILING_ENABLE != 0;
    let state = (!event.is_null()).then(|| EventState::submitted(profiled));
    let mut b = TaskBuilder::new(&k.codelet);
    for (m, ro) in &mems {
        b.add_access(m.handle(), if *ro { AccessMode::R } else { AccessMode::RW });
    }
    let (fp, size) = footprint(&global, local.as_deref(), mems.iter().map(|(m, _)| m.size));
    b.set_footprint(fp, size);
    if let DeviceKind::Real(i) = qq.device {
        b.set_worker(plat.real[i].0);
    } else if qq.in_order() && allowed.len() == plat.real.len() && allowed.len() > 1 {
        // Each kernel of an in-order queue on the unified device goes where it is expected to
        // finish first once the command before it completed, or right behind a short one
        // on its device (core's followers): the queue keeps its order and still spreads.
        b.set_follow();
    } else if qq.in_order() && !allowed.is_empty() {
        b.set_worker(plat.real[allowed[qq.spread % allowed.len()]].0);
    } else if allowed.len() < plat.real.len() {
        b.set_worker(plat.real[allowed[0]].0);
    }
    let payload =
        Launch { kernel: k.clone(), state: state.clone(), slots, offset, global, local, images, exec_svm, coarse, batchable: !profiled };
    b.set_payload(Arc::new(payload));
    let Some(state) = state else {
        // No event object when none is asked for, nor a state (the queue's finish waits on
        // the task).
        return enqueue(qq, waits, None, &mut b, false, Completes::Payload);
    };
    let e = submit_with(qq, waits, CL_COMMAND_NDRANGE_KERNEL, state, &mut b, false, Completes::Payload)?;
    // SAFETY: the caller's contract.
    unsafe { hand_out(&e, event) };
    Ok(())
}

/// Run launch `p` on the device of `l`: take a vendor kernel of the program built for it,
/// set the arguments (buffers are the task's replicas there) and enqueue.
fn run_launch(p: &Launch, l: &OpenClLaunch<'_>) -> Result<weft_vendors::Completion, String> {
    let Launch { kernel, state: st, slots, offset, global, local, images, exec_svm, coarse, batchable } = p;
    if let Some(st) = st {
        st.started();
    }
    let plat = kernel.program.context.platform;
    let i = plat.real_index(l.device).ok_or("the device is not one of Weft's OpenCL platform")?;
    let no_kernel = |e| format!("kernel {}: {}", kernel.name, weft_vendors::opencl::ClError(e));
    let mut pooled = kernel.take(i).map_err(no_kernel)?;
    // NVIDIA's OpenCL refuses a launch (CL_INVALID_KERNEL_ARGS) of a kernel object whose
    // argument was an SVM pointer and is now a buffer: such an argument needs a fresh one.
    if pooled.mems.iter().zip(slots.iter()).any(|(&m, a)| m == SVM_ARG && !matches!(a, LaunchArg::Svm(_))) {
        pooled = kernel.fresh(i).map_err(no_kernel)?;
    }
    let Pooled { k: vk, mems } = &mut pooled;
    let r = (|| {
        // The vendor image standing for each image argument on this device.
        let mut vimages = Vec::with_capacity(images.len());
        for (j, m, back) in images.iter() {
            let info = m.image.as_ref().ok_or("an image without its description")?;
            vimages.push((*j, info.vendor_image(i, l.device)?, info.region(), *back));
        }
        let _subs = set_launch_args(vk, mems, slots, l.buffers, &vimages, i, l.device)?;
        if !exec_svm.is_empty() {
            // SAFETY: SVM pointers of this device's context (checked by clSetKernelExecInfo).
            unsafe {
                vr::set_kernel_exec_info(
                    vk.as_raw(),
                    CL_KERNEL_EXEC_INFO_SVM_PTRS,
                    exec_svm.len() * size_of::<usize>(),
                    exec_svm.as_ptr().cast(),
                )
            }
            .map_err(|e| format!("clSetKernelExecInfo: {e}"))?;
        }
        let off = offset.as_deref();
        // A profiling queue's launch asks for the vendor's record of its commands: the
        // event's times are the device's (event.rs).
        let timed = st.as_ref().is_some_and(|s| s.timed());
        // The event learns where the command ran (cl_weft_placement) before the launch can
        // complete: the driver retires the task only once this returned.
        let ran = |timing| {
            if let Some(st) = st {
                st.ran_on(i, timing);
            }
        };
        if vimages.is_empty() && coarse.is_empty() {
            if timed {
                // SAFETY: every buffer argument is one of the task's replicas on this device,
                // pinned until the returned completion fires.
                let (done, timing) = unsafe { l.device.launch_timed(vk, off, global, local.as_deref()) }.map_err(|e| e.to_string())?;
                ran(timing);
                return Ok(done);
            }
            let r = if l.batch && *batchable {
                // SAFETY: every buffer argument is one of the task's replicas on this device,
                // pinned until the returned completion fires (the batch's: the driver closes
                // it before waiting).
                unsafe { l.device.launch_batched(vk, off, global, local.as_deref()) }
            } else {
                // SAFETY: every buffer argument is one of the task's replicas on this device,
                // pinned until the returned completion fires.
                unsafe { l.device.launch_at(vk, off, global, local.as_deref()) }
            };
            if r.is_ok() {
                ran(None);
            }
            return r.map_err(|e| e.to_string());
        }
        // Fill each vendor image from its replica, run the kernel, copy written images back:
        // one in-order queue, one completion (see image.rs).
        type Cmd<'a> =
            Box<dyn FnOnce(weft_vendors::opencl::sys::cl_command_queue) -> vr::ClResult<weft_vendors::opencl::sys::cl_event> + 'a>;
        // Helper kernels (emulated formats), alive until the commands are enqueued.
        let mut helpers: Vec<VendorKernel> = Vec::new();
        let raw = |j: usize| weft_vendors::opencl::memory::raw_mem(l.buffers[j]);
        // A helper kernel over `n` pixels, from `src` to `dst` (pixel sizes `from`, `to`).
        let mut helper = |name: &str, src, dst, from: usize, to: usize, tail: Option<u64>, n: usize| -> Result<Cmd<'static>, String> {
            let mut hk = super::image::helper_kernel(l.device, name)?;
            // SAFETY: both buffers live until the completion fires (the replica pinned by core,
            // the staging buffer kept with the image).
            unsafe { hk.set_arg_raw_mem(0, src).and_then(|_| hk.set_arg_raw_mem(1, dst)) }.map_err(|e| e.to_string())?;
            hk.set_arg_bytes(2, &(from as u32).to_ne_bytes()).map_err(|e| e.to_string())?;
            hk.set_arg_bytes(3, &(to as u32).to_ne_bytes()).map_err(|e| e.to_string())?;
            if let Some(t) = tail {
                hk.set_arg_bytes(4, &t.to_ne_bytes()).map_err(|e| e.to_string())?;
            }
            let hr = hk.as_raw();
            helpers.push(hk);
            let g = [n];
            // SAFETY: the helper's arguments are set to live buffers.
            Ok(Box::new(move |q| unsafe { vr::enqueue_nd_range_kernel(q, hr, None, &g, None) }))
        };
        let mut cmds: Vec<Cmd<'_>> = Vec::new();
        let mut after: Vec<Cmd<'_>> = Vec::new();
        // Coarse-grained SVM: the device's view for the kernel, the host's again after it.
        // A kernel taking SVM runs on the SVM device, whose context holds these allocations;
        // they live while commands use them (OpenCL's contract).
        cmds.extend(coarse.iter().map(|&(a, _)| super::svm::unmap_for_device(a)));
        for &(j, vi, region, back) in &vimages {
            let n = region.iter().product::<usize>();
            let img = vi.image;
            let src = match vi.staging {
                Some((st, e)) => {
                    cmds.push(helper("weft_widen", raw(j), st, e.narrow, e.wide, Some(e.tail), n)?);
                    st
                }
                None => raw(j),
            };
            // SAFETY: the replica (pinned for the task), or the staging buffer, holds the image
            // packed in the vendor image's format, over its whole region.
            cmds.push(Box::new(move |q| unsafe { vr::enqueue_copy_buffer_to_image(q, src, img, 0, &region) }));
            if back {
                // SAFETY: as for the copy in.
                after.push(Box::new(move |q| unsafe { vr::enqueue_copy_image_to_buffer(q, img, src, &region, 0) }));
                if let Some((st, e)) = vi.staging {
                    after.push(helper("weft_narrow", st, raw(j), e.wide, e.narrow, None, n)?);
                }
            }
        }
        let (kr, glob, loc) = (vk.as_raw(), &global, local.as_deref());
        // SAFETY: the arguments are set to objects alive until the completion fires.
        cmds.push(Box::new(move |q| unsafe { vr::enqueue_nd_range_kernel(q, kr, off, glob, loc) }));
        cmds.extend(after);
        cmds.extend(coarse.iter().map(|&(a, n)| super::svm::map_for_host(a, n)));
        // SAFETY: every object the commands use lives until the completion fires (replicas
        // pinned by core, images and samplers held by the launch closure).
        let (done, timing) = unsafe { l.device.enqueue_raw_timed("clEnqueueNDRangeKernel", cmds, timed) }.map_err(|e| e.to_string())?;
        ran(timing);
        Ok(done)
    })();
    if r.is_err() {
        // A failed launch may have set only some of the arguments.
        pooled.mems.clear();
    }
    kernel.give_back(i, pooled);
    r
}

/// An argument as the launch sets it.
enum LaunchArg {
    /// Task buffer `j`, or a region of it (a sub-buffer: a vendor sub-buffer per launch).
    Buffer(usize, Option<(usize, usize)>),
    /// Task buffer `j`, an image: its vendor image on the device.
    Image(usize),
    Sampler(Arc<Obj<Sampler>>),
    Svm(usize),
    Null,
    Local(usize),
    Bytes(Vec<u8>),
}

/// Set the arguments; the vendor sub-buffers made for sub-buffer arguments are returned,
/// to be released once the launch is enqueued (the enqueued command keeps them). `mems`:
/// the buffers `vk`'s arguments are known to hold (see [`Pooled`]), kept up to date; a
/// buffer argument that already holds its buffer is not set again.
fn set_launch_args(
    vk: &mut VendorKernel,
    mems: &mut SmallVec<[usize; 4]>,
    slots: &[LaunchArg],
    buffers: &[weft_vendors::Buffer],
    vimages: &[(usize, super::image::VendorImage<'_>, [usize; 3], bool)],
    device: usize,
    dev: &weft_vendors::opencl::OpenClDevice,
) -> Result<Vec<VendorMem>, String> {
    let mut subs = Vec::new();
    if mems.len() < slots.len() {
        mems.resize(slots.len(), 0);
    }
    for (i, a) in slots.iter().enumerate() {
        let known = std::mem::take(&mut mems[i]);
        let i = i as u32;
        let r = match a {
            LaunchArg::Buffer(j, None) => {
                let raw = weft_vendors::opencl::memory::raw_mem(buffers[*j]);
                if known == raw as usize {
                    mems[i as usize] = known;
                    continue;
                }
                // SAFETY: the task's replica on this device, pinned for the launch.
                let r = unsafe { vk.set_arg_raw_mem(i, raw) };
                if r.is_ok() {
                    mems[i as usize] = raw as usize;
                }
                r
            }
            LaunchArg::Buffer(j, Some((origin, size))) => {
                let parent = weft_vendors::opencl::memory::raw_mem(buffers[*j]);
                // SAFETY: the replica is live (pinned for the launch); the region lies within it
                // (checked by clCreateSubBuffer); we own the new reference.
                let sub = unsafe { vr::create_sub_buffer(parent, CL_MEM_READ_WRITE, *origin, *size) }
                    .map_err(|e| format!("clCreateSubBuffer for argument {i}: {e}"))?;
                // SAFETY: a new sub-buffer whose one reference we own.
                let sub = unsafe { VendorMem::from_raw(sub) };
                // SAFETY: the sub-buffer lives until after the enqueue (returned to the caller).
                let r = unsafe { vk.set_arg_raw_mem(i, sub.as_raw()) };
                subs.push(sub);
                r
            }
            LaunchArg::Image(j) => {
                let img = vimages.iter().find(|v| v.0 == *j).map(|v| v.1.image).ok_or("an image argument without its vendor image")?;
                // SAFETY: the vendor image lives with the Weft image, held by the launch.
                unsafe { vk.set_arg_raw_mem(i, img) }
            }
            LaunchArg::Sampler(s) => {
                let raw = s.vendor_sampler(device, dev)?;
                vk.set_arg_bytes(i, &raw.to_ne_bytes())
            }
            LaunchArg::Svm(p) => {
                // SAFETY: an SVM pointer of the device's context (checked at enqueue).
                let r = unsafe { vr::set_kernel_arg_svm_pointer(vk.as_raw(), i, *p as *const c_void) };
                if r.is_ok() {
                    mems[i as usize] = SVM_ARG;
                }
                r
            }
            // SAFETY: a null buffer argument is allowed by OpenCL.
            LaunchArg::Null => unsafe { vk.set_arg_raw_mem(i, std::ptr::null_mut()) },
            LaunchArg::Local(n) => vk.set_arg_local(i, *n),
            LaunchArg::Bytes(b) => vk.set_arg_bytes(i, b),
        };
        r.map_err(|e| format!("clSetKernelArg({i}): {e}"))?;
    }
    Ok(subs)
}

/// # Safety
/// As clEnqueueNDRangeKernel.
#[cl_entrypoint(clEnqueueTask)]
unsafe fn enqueue_task(q: Arc<Obj<Queue>>, kernel: Handle, n: cl_uint, list: *const Handle, event: *mut Handle) -> ClResult<()> {
    let one = [1usize];
    // SAFETY: forwarded contract; `one` is readable for the one dimension.
    unsafe { enqueue_nd_range_kernel(q, kernel, 1, std::ptr::null(), one.as_ptr(), one.as_ptr(), n, list, event) }
}

const CL_KERNEL_EXEC_INFO_SVM_PTRS: cl_uint = 0x11B6;
const CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM: cl_uint = 0x11B7;

/// # Safety
/// No pointer is dereferenced.
#[cl_entrypoint(clSetKernelArgSVMPointer)]
unsafe fn set_kernel_arg_svm_pointer(k: Arc<Obj<Kernel>>, index: cl_uint, value: *const c_void) -> ClResult<()> {
    // CL_INVALID_ARG_INDEX if arg_index is not a valid argument index.
    let kind = *k.kinds.get(index as usize).ok_or(CL_INVALID_ARG_INDEX)?;
    // CL_INVALID_ARG_VALUE if arg_value specified is not a valid value: a pointer argument
    // takes NULL or a pointer into an SVM allocation.
    let p = value as usize;
    if !matches!(kind, ArgKind::Buffer { .. } | ArgKind::Unknown) || (p != 0 && super::svm::allocation_of(p).is_none()) {
        return Err(CL_INVALID_ARG_VALUE);
    }
    let arg = if p == 0 { KArg::Mem(None) } else { KArg::Svm(p) };
    k.args.lock().unwrap_or_else(|e| e.into_inner())[index as usize] = Some(arg);
    Ok(())
}

/// # Safety
/// `value` readable for `size` bytes.
#[cl_entrypoint(clSetKernelExecInfo)]
unsafe fn set_kernel_exec_info(k: Arc<Obj<Kernel>>, param: cl_uint, size: usize, value: *const c_void) -> ClResult<()> {
    match param {
        CL_KERNEL_EXEC_INFO_SVM_PTRS => {
            // CL_INVALID_VALUE if param_value is NULL or param_value_size is not a multiple of
            // the pointer size.
            if !size.is_multiple_of(size_of::<usize>()) || (size > 0 && value.is_null()) {
                return Err(CL_INVALID_VALUE);
            }
            // SAFETY: the caller's contract: `size` readable bytes.
            let ptrs = unsafe { slice(value.cast::<usize>(), size / size_of::<usize>()) }?.to_vec();
            if ptrs.iter().any(|&p| super::svm::allocation_of(p).is_none()) {
                return Err(CL_INVALID_VALUE);
            }
            *k.svm_ptrs.lock().unwrap_or_else(|e| e.into_inner()) = ptrs;
            Ok(())
        }
        CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM => {
            if size != size_of::<cl_bool>() || value.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            // SAFETY: the caller's contract: a cl_bool.
            let on = unsafe { value.cast::<cl_bool>().read_unaligned() } != 0;
            // CL_INVALID_OPERATION if [...] CL_KERNEL_EXEC_INFO_SVM_FINE_GRAIN_SYSTEM is set to
            // CL_TRUE and no devices in the context support fine-grain system SVM allocations.
            if on { Err(CL_INVALID_OPERATION) } else { Ok(()) }
        }
        // CL_INVALID_VALUE if param_name is not valid.
        _ => Err(CL_INVALID_VALUE),
    }
}

/// A copy of a kernel with its arguments and exec info as they are now (OpenCL 2.1).
///
#[cl_entrypoint(clCloneKernel)]
fn clone_kernel(k: Arc<Obj<Kernel>>) -> ClResult<Handle> {
    let pools = (0..k.pools.len()).map(|_| Mutex::new(Vec::new())).collect();
    k.program.kernels.fetch_add(1, Ordering::AcqRel);
    let c = new_obj(Kernel {
        program: k.program.clone(),
        name: k.name.clone(),
        kinds: k.kinds.clone(),
        args: Mutex::new(k.args.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        pools,
        svm_ptrs: Mutex::new(k.svm_ptrs.lock().unwrap_or_else(|e| e.into_inner()).clone()),
        codelet: k.codelet.clone(),
    });
    Ok(publish(&c))
}
