//! Owning OpenCL objects: each wraps one reference to a vendor object, retains on
//! `Clone`, releases on `Drop`.
//!
//! **Owns**: reference counts. **Does not own**: which device or queue to use (see
//! `device`), or completion tracking (see `queue`).
//! **Invariants**: a wrapper's handle is non-null, live and of an ICD-compliant vendor for
//! as long as the wrapper exists (that is what makes the `result` calls on it sound).
//! Platforms and root devices have no reference count in OpenCL: [`Platform`] and
//! [`DeviceId`] are plain copies, valid while the vendor library is loaded, which is
//! forever (`loader` never unloads one).
//!
//! Names: the memory object is [`Mem`] and the device [`DeviceId`], because `Buffer` and
//! `Device` are the crate's own backend-neutral types.
//!
//! Thread safety: OpenCL 1.2 §A.2 makes every call thread-safe except `clSetKernelArg`
//! (and the kernel-enqueue that reads those arguments) on one `cl_kernel` from several
//! threads, so every wrapper is `Send + Sync` except [`Kernel`], which is `Send` only and
//! takes `&mut self` to set arguments.

use super::result::{self as r, ClError, ClResult};
use super::sys::*;
use std::ffi::CString;

macro_rules! send_sync {
    ($($t:ty),*) => {$(
        // SAFETY: OpenCL objects may be used from any thread (module doc, "Thread safety").
        unsafe impl Send for $t {}
        // SAFETY: as above; every call on them is thread-safe.
        unsafe impl Sync for $t {}
    )*};
}

macro_rules! owned {
    ($(#[$m:meta])* $name:ident($raw:ty), $retain:path, $release:path) => {
        $(#[$m])*
        #[derive(Debug)]
        pub struct $name($raw);

        impl $name {
            /// Take ownership of one reference.
            ///
            /// # Safety
            /// `raw` is a live, non-null object of an ICD-compliant vendor whose one
            /// reference the caller gives up.
            pub unsafe fn from_raw(raw: $raw) -> $name {
                debug_assert!(!raw.is_null());
                $name(raw)
            }

            pub fn as_raw(&self) -> $raw {
                self.0
            }

            /// Give up ownership without releasing.
            pub fn into_raw(self) -> $raw {
                let raw = self.0;
                std::mem::forget(self);
                raw
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: we own one reference to a live object (type invariant).
                let _ = unsafe { $release(self.0) };
            }
        }
    };
    ($(#[$m:meta])* $name:ident($raw:ty), $retain:path, $release:path, clone) => {
        owned!($(#[$m])* $name($raw), $retain, $release);

        impl $name {
            /// Another reference to the same object.
            pub fn try_clone(&self) -> ClResult<$name> {
                // SAFETY: the object is live (type invariant); the new reference is owned by the result.
                unsafe { $retain(self.0) }?;
                Ok($name(self.0))
            }
        }
    };
}

/// An OpenCL platform of one vendor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform(cl_platform_id);
/// A root device of a platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId(cl_device_id);

owned!(
    /// `cl_context`.
    Context(cl_context), r::retain_context, r::release_context, clone
);
owned!(
    /// `cl_command_queue`.
    Queue(cl_command_queue), r::retain_command_queue, r::release_command_queue, clone
);
owned!(
    /// `cl_mem` (a buffer).
    Mem(cl_mem), r::retain_mem_object, r::release_mem_object, clone
);
owned!(
    /// `cl_program`.
    Program(cl_program), r::retain_program, r::release_program, clone
);
owned!(
    /// `cl_kernel`: `Send` but not `Sync` (arguments are per-object state).
    Kernel(cl_kernel), r::retain_kernel, r::release_kernel
);
owned!(
    /// `cl_sampler`.
    Sampler(cl_sampler), r::retain_sampler, r::release_sampler, clone
);
owned!(
    /// `cl_event`.
    Event(cl_event), r::retain_event, r::release_event, clone
);

send_sync!(Platform, DeviceId, Context, Queue, Mem, Program, Sampler, Event);
// SAFETY: a kernel may move between threads; `&mut self` on argument setters keeps two
// threads from setting arguments of one kernel at once, and it is not `Sync`.
unsafe impl Send for Kernel {}

impl Platform {
    /// # Safety
    /// `raw` is a platform returned by an ICD-compliant vendor that stays loaded.
    pub unsafe fn from_raw(raw: cl_platform_id) -> Platform {
        Platform(raw)
    }

    pub fn as_raw(self) -> cl_platform_id {
        self.0
    }

    pub fn info_string(self, param: cl_platform_info) -> ClResult<String> {
        // SAFETY: the platform is live (type invariant).
        Ok(r::bytes_to_string(unsafe { r::get_platform_info(self.0, param) }?))
    }

    pub fn name(self) -> ClResult<String> {
        self.info_string(CL_PLATFORM_NAME)
    }

    /// Every device of the platform (`CL_DEVICE_TYPE_ALL`).
    pub fn devices(self) -> ClResult<Vec<DeviceId>> {
        // SAFETY: the platform is live (type invariant).
        Ok(unsafe { r::get_device_ids(self.0, CL_DEVICE_TYPE_ALL) }?.into_iter().filter(|d| !d.is_null()).map(DeviceId).collect())
    }
}

impl DeviceId {
    /// # Safety
    /// `raw` is a root device returned by an ICD-compliant vendor that stays loaded.
    pub unsafe fn from_raw(raw: cl_device_id) -> DeviceId {
        DeviceId(raw)
    }

    pub fn as_raw(self) -> cl_device_id {
        self.0
    }

    pub fn info_bytes(self, param: cl_device_info) -> ClResult<Vec<u8>> {
        // SAFETY: the device is live (type invariant).
        unsafe { r::get_device_info(self.0, param) }
    }

    pub fn info_string(self, param: cl_device_info) -> ClResult<String> {
        Ok(r::bytes_to_string(self.info_bytes(param)?))
    }

    /// A scalar (`cl_uint`, `cl_ulong`, `size_t`, `cl_bitfield`) property.
    pub fn info_u64(self, param: cl_device_info) -> ClResult<u64> {
        r::bytes_to_u64(&self.info_bytes(param)?)
    }
}

impl Context {
    /// A context on `devices`, all of `platform`.
    pub fn new(platform: Platform, devices: &[DeviceId]) -> ClResult<Context> {
        let raw: Vec<cl_device_id> = devices.iter().map(|d| d.0).collect();
        // SAFETY: platform and devices are live (their invariants); we own the new reference.
        Ok(Context(unsafe { r::create_context(platform.0, &raw) }?))
    }
}

impl Queue {
    /// An in-order queue (no properties) on `device` of `context`.
    pub fn new(context: &Context, device: DeviceId) -> ClResult<Queue> {
        Queue::with_properties(context, device, 0)
    }

    /// An in-order queue with `properties` (`CL_QUEUE_PROFILING_ENABLE`).
    pub fn with_properties(context: &Context, device: DeviceId, properties: cl_command_queue_properties) -> ClResult<Queue> {
        // SAFETY: both are live; we own the new reference.
        Ok(Queue(unsafe { r::create_command_queue(context.0, device.0, properties) }?))
    }

    pub fn flush(&self) -> ClResult<()> {
        // SAFETY: the queue is live.
        unsafe { r::flush(self.0) }
    }

    pub fn finish(&self) -> ClResult<()> {
        // SAFETY: the queue is live.
        unsafe { r::finish(self.0) }
    }
}

impl Mem {
    /// A read-write buffer of `size` bytes, contents undefined.
    pub fn new(context: &Context, size: usize) -> ClResult<Mem> {
        // SAFETY: the context is live; no host pointer with these flags.
        Ok(Mem(unsafe { r::create_buffer(context.0, CL_MEM_READ_WRITE, size, std::ptr::null_mut()) }?))
    }
}

impl Program {
    pub fn from_source(context: &Context, source: &str) -> ClResult<Program> {
        // SAFETY: the context is live; we own the new reference.
        Ok(Program(unsafe { r::create_program_with_source(context.0, source) }?))
    }

    pub fn from_binary(context: &Context, device: DeviceId, binary: &[u8]) -> ClResult<Program> {
        // SAFETY: both are live; we own the new reference.
        Ok(Program(unsafe { r::create_program_with_binary(context.0, device.0, binary) }?))
    }

    /// Build for `device` (blocking). A NUL in `options` is `CL_INVALID_BUILD_OPTIONS`.
    pub fn build(&self, device: DeviceId, options: &str) -> ClResult<()> {
        let options = CString::new(options).map_err(|_| ClError(CL_INVALID_BUILD_OPTIONS))?;
        // SAFETY: program and device are live.
        unsafe { r::build_program(self.0, &[device.0], &options) }
    }

    /// Compile for `device` (blocking), with `headers` (programs from their source) under
    /// their include names. A NUL in `options` or a name is `CL_INVALID_COMPILER_OPTIONS`
    /// or `CL_INVALID_VALUE`.
    pub fn compile(&self, device: DeviceId, options: &str, headers: &[(&Program, &str)]) -> ClResult<()> {
        let options = CString::new(options).map_err(|_| ClError(CL_INVALID_COMPILER_OPTIONS))?;
        let names: Vec<CString> =
            headers.iter().map(|(_, n)| CString::new(*n)).collect::<Result<_, _>>().map_err(|_| ClError(CL_INVALID_VALUE))?;
        let names: Vec<&std::ffi::CStr> = names.iter().map(|n| n.as_c_str()).collect();
        let programs: Vec<cl_program> = headers.iter().map(|(p, _)| p.0).collect();
        // SAFETY: program, device and header programs are live; one name per header.
        unsafe { r::compile_program(self.0, &[device.0], &options, &programs, &names) }
    }

    /// Link compiled programs of `context` for `device` (blocking). On failure, the error
    /// and the vendor's link log when it returned a program to read it from.
    pub fn link(context: &Context, device: DeviceId, options: &str, inputs: &[&Program]) -> Result<Program, (ClError, String)> {
        let options = CString::new(options).map_err(|_| (ClError(CL_INVALID_LINKER_OPTIONS), String::new()))?;
        let inputs: Vec<cl_program> = inputs.iter().map(|p| p.0).collect();
        // SAFETY: the context, device and inputs are live; we own the returned reference.
        match unsafe { r::link_program(context.0, &[device.0], &options, &inputs) } {
            Ok(p) => Ok(Program(p)),
            Err((e, p)) => {
                let log = p.map(Program).and_then(|p| p.build_log(device).ok()).unwrap_or_default();
                Err((e, log))
            }
        }
    }

    pub fn build_log(&self, device: DeviceId) -> ClResult<String> {
        // SAFETY: program and device are live.
        Ok(r::bytes_to_string(unsafe { r::get_program_build_info(self.0, device.0, CL_PROGRAM_BUILD_LOG) }?))
    }

    /// The binary of a program built for one device; empty if the vendor offers none.
    pub fn binary(&self) -> ClResult<Vec<u8>> {
        // SAFETY: the program is live.
        unsafe { r::get_program_binary(self.0) }
    }
}

impl Kernel {
    /// Kernel `name` of a built program. A NUL in `name` is `CL_INVALID_KERNEL_NAME`.
    pub fn new(program: &Program, name: &str) -> ClResult<Kernel> {
        let name = CString::new(name).map_err(|_| ClError(CL_INVALID_KERNEL_NAME))?;
        // SAFETY: the program is live; we own the new reference.
        Ok(Kernel(unsafe { r::create_kernel(program.0, &name) }?))
    }

    pub fn num_args(&self) -> ClResult<u32> {
        // SAFETY: the kernel is live.
        Ok(r::bytes_to_u64(&unsafe { r::get_kernel_info(self.0, CL_KERNEL_NUM_ARGS) }?)? as u32)
    }

    pub fn function_name(&self) -> ClResult<String> {
        // SAFETY: the kernel is live.
        Ok(r::bytes_to_string(unsafe { r::get_kernel_info(self.0, CL_KERNEL_FUNCTION_NAME) }?))
    }

    /// A by-value argument: `bytes` is copied by the call (its size must be the
    /// parameter's `sizeof`, else `CL_INVALID_ARG_SIZE`).
    pub fn set_arg_bytes(&mut self, index: u32, bytes: &[u8]) -> ClResult<()> {
        // SAFETY: the kernel is live; `bytes` is readable for its length during the call.
        unsafe { r::set_kernel_arg(self.0, index, bytes.len(), bytes.as_ptr().cast()) }
    }

    /// A `__local` argument of `size` bytes.
    pub fn set_arg_local(&mut self, index: u32, size: usize) -> ClResult<()> {
        // SAFETY: the kernel is live; a null value with a size is the spec's `__local` form.
        unsafe { r::set_kernel_arg(self.0, index, size, std::ptr::null()) }
    }

    /// A buffer argument.
    pub fn set_arg_mem(&mut self, index: u32, mem: &Mem) -> ClResult<()> {
        // SAFETY: `mem` is a live memory object; its handle is passed by address.
        unsafe { self.set_arg_raw_mem(index, mem.0) }
    }

    /// A buffer argument from a raw handle.
    ///
    /// # Safety
    /// `mem` is a live memory object of the kernel's context, and stays alive until every
    /// launch that uses this argument completes.
    pub unsafe fn set_arg_raw_mem(&mut self, index: u32, mem: cl_mem) -> ClResult<()> {
        // SAFETY: the kernel is live; the caller vouches for `mem`; the handle is read during the call.
        unsafe { r::set_kernel_arg(self.0, index, size_of::<cl_mem>(), (&raw const mem).cast()) }
    }
}

impl Event {
    /// Block until the command completes; an abnormal termination is its error code.
    pub fn wait(&self) -> ClResult<()> {
        // SAFETY: the event is live.
        unsafe { r::wait_for_events(&[self.0]) }?;
        match self.status()? {
            s if s < 0 => Err(ClError(s)),
            _ => Ok(()),
        }
    }

    /// `CL_COMPLETE` (0), a later stage (> 0), or an error code (< 0).
    pub fn status(&self) -> ClResult<cl_int> {
        // SAFETY: the event is live.
        unsafe { r::get_event_status(self.0) }
    }

    /// One of its `CL_PROFILING_COMMAND_*` times, in the device's clock (an error unless
    /// the command completed on a profiling queue).
    pub fn profiling(&self, param: cl_uint) -> ClResult<u64> {
        // SAFETY: the event is live.
        unsafe { r::get_event_profiling_info(self.0, param) }
    }
}
