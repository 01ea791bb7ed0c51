//! The OpenCL backend: every device of every installed OpenCL vendor as a Weft
//! [`Device`](crate::Device), plus the kernel API core's OpenCL codelets use.
//!
//! **Owns**: finding vendors (without the ICD loader), one context and queue per device,
//! device memory, asynchronous copies, building programs (with a cache) and launching
//! kernels.
//! **Does not own**: which devices Weft uses (`WEFT_NOPENCL` is core's), coherence, or
//! scheduling. Backends validate little: a broken core invariant is `unreachable!`.
//!
//! # Loading
//! Nothing links `libOpenCL`. [`discover`] reads the `.icd` files of `OCL_ICD_VENDORS`
//! (a directory, one `.icd` file, or a library) or `/etc/OpenCL/vendors`, skips any
//! library whose file name contains `weft`, opens each vendor with `dlopen`, and gets its
//! platforms through `clGetExtensionFunctionAddress("clIcdGetPlatformIDsKHR")`. Every
//! later call goes through the dispatch table that each OpenCL object points to with its
//! first word (`struct _cl_icd_dispatch`, mirrored in [`sys`]), as ocl-icd does. With no
//! vendor installed, [`devices`] is empty: no error, no panic. `WEFT_OCL_VENDORS` overrides
//! `OCL_ICD_VENDORS`; a source naming Weft only falls back to `/etc/OpenCL/vendors` (see
//! [`loader::vendor_libraries`]). A vendor is loaded, and its devices listed, on a helper
//! thread `WEFT_VENDOR_NICE` (default 5) nicer than the caller, so the threads a CPU vendor
//! starts there to run its kernels yield to Weft's driver threads that feed them (see
//! `on_niced_thread`).
//!
//! # Layers (as cudarc)
//! [`sys`] raw types, constants and the dispatch table → [`result`] one fallible function
//! per call (`Result<_, ClError>`, the error printing its name) → [`safe`] owning types
//! with `Drop` ([`Platform`], [`DeviceId`], [`Context`], [`Queue`], [`Mem`], [`Program`],
//! [`Kernel`], [`Event`]) → [`OpenClDevice`], the `Device` implementation.
//!
//! # Devices, queues and completions
//! Each [`OpenClDevice`] has its own context and **one in-order queue** for copies and
//! kernels (why one: see `device.rs`). `Device::copy` submits a non-blocking
//! `clEnqueue{Read,Write,Copy}Buffer` (or the `*Rect` form when the rectangle is not
//! contiguous), registers a `clSetEventCallback` that completes the returned
//! [`Completion`](crate::Completion), and flushes. On PoCL "basic" devices the command
//! runs inside the flush, in the calling thread: drive each device from its own thread
//! (core's driver thread) to run devices in parallel. Submissions to one device are
//! serialized by a lock (a PoCL 3.1 "basic" device deadlocks when two threads submit to
//! one queue at once; see `device.rs`), so any thread may copy to or from any device, but
//! on "basic" a long kernel holds that device's other submitters until it ends.
//! `host_ptr` is `None`: device memory is reached only by copies. The kernel queue is
//! created with `CL_QUEUE_PROFILING_ENABLE` where the vendor allows it, so that a launch
//! can report the device's own times (`OpenClDevice::launch_timed`, [`DeviceTiming`]).
//!
//! # Kernels and the argument convention
//! [`OpenClDevice::build_program`] compiles a source for the device (an error carries the
//! build log) through a [`ProgramCache`] (memory, then disk, then source);
//! [`OpenClDevice::create_kernel`] makes a kernel; [`OpenClDevice::launch`] enqueues an
//! NDRange and returns its completion. A codelet's OpenCL kernel takes, in order:
//! 1. one `__global` pointer per task buffer, in the order of the task's accesses
//!    (the replica on this device; offsets and leading dimensions come as values), then
//! 2. the task's argument blob, split by core into one by-value argument per field, each
//!    set with the exact size of the kernel parameter.
//!
//! [`Kernel::set_task_args`] sets both at once. A `Kernel` is `Send` but not `Sync` (OpenCL
//! argument state is per object): the driver thread owns the kernels it launches.

pub mod conv;
pub mod device;
pub mod loader;
pub mod memory;
pub mod program;
pub mod queue;
pub mod result;
pub mod safe;
pub mod sys;

pub use device::OpenClDevice;
pub use program::{CacheStats, ProgramCache};
pub use queue::{DeviceTimes, DeviceTiming, clock_ns};
pub use result::ClError;
pub use safe::{Context, DeviceId, Event, Kernel, Mem, Platform, Program, Queue, Sampler};

/// Errors of the OpenCL backend's own API (the `Device` trait reports
/// [`DeviceError`](crate::DeviceError) instead).
#[derive(Debug, thiserror::Error)]
pub enum OpenClError {
    #[error("{call}: {code}")]
    Call { call: &'static str, code: ClError },
    #[error("building an OpenCL program for {device} failed with {code}; build log:\n{log}")]
    Build { device: String, code: ClError, log: String },
    #[error("OpenCL kernel {name:?}: {code}")]
    Kernel { name: String, code: ClError },
    #[error("OpenCL vendor library {library}: {reason}")]
    Vendor { library: String, reason: String },
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Every device of every vendor platform, in `.icd` file order, then platform and
    /// device order.
    pub devices: Vec<OpenClDevice>,
    /// Why a vendor, platform or device was left out (for `weft` tool output and logs).
    pub skipped: Vec<String>,
}

/// Find every OpenCL device of every vendor, with the reasons for what was left out.
pub fn discover() -> Discovery {
    let mut d = Discovery::default();
    let (libraries, notes) = loader::vendor_libraries();
    d.skipped.extend(notes);
    // Every vendor loaded, and its devices listed, on one niced thread; opened here.
    let loaded = on_niced_thread(|| {
        let list = |v: std::sync::Arc<loader::Vendor>| v.platform_devices();
        libraries.into_iter().map(|lib| (loader::load(&lib).map(list), lib)).collect::<Vec<_>>()
    });
    for (platforms, lib) in loaded {
        let platforms = match platforms {
            Ok(v) => v,
            Err(e) => {
                d.skipped.push(e.to_string());
                continue;
            }
        };
        for (platform, ids) in platforms {
            let ids = match ids {
                Ok(ids) => ids,
                Err(e) => {
                    d.skipped.push(format!("{lib}: clGetDeviceIDs: {e}"));
                    continue;
                }
            };
            for id in ids {
                match OpenClDevice::open(platform, id, &lib) {
                    Ok(dev) => d.devices.push(dev),
                    Err(e) => d.skipped.push(format!("{lib}: {e}")),
                }
            }
        }
    }
    d
}

/// How much nicer than the caller the threads a vendor starts while it loads run
/// (`WEFT_VENDOR_NICE`, default [`VENDOR_NICE`]; 0 leaves them alone).
/// A value that is not a number from 0 to 19 gets a warning (once) and the default.
pub fn vendor_nice() -> i32 {
    let Ok(v) = std::env::var("WEFT_VENDOR_NICE") else { return VENDOR_NICE };
    match v.trim().parse::<i32>() {
        Ok(n) if (0..=19).contains(&n) => n,
        _ => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| eprintln!("weft: WEFT_VENDOR_NICE={v:?} is not a number from 0 to 19; using {VENDOR_NICE}"));
            VENDOR_NICE
        }
    }
}

/// Default of [`vendor_nice`]: see [`on_niced_thread`].
pub const VENDOR_NICE: i32 = 5;

/// Run `f` (loading the vendors and listing their devices) on a thread [`vendor_nice`]
/// nicer than the caller, so that the threads the vendors start there inherit that
/// niceness.
///
/// Why: a CPU vendor (PoCL's `pthread` device) computes on worker threads it starts when it
/// loads, and Weft's driver thread feeds them. Where there are fewer cores than busy
/// threads (2 cores: application, driver and PoCL's two workers), each enqueue's broadcast
/// woke a sleeping worker that preempted the driver inside PoCL's enqueue, holding PoCL's
/// lock: tiny kernels on an in-order queue took 2.5-3.7 µs against PoCL direct's 1.8-2.1.
/// With the workers at nice 5 the driver keeps its core: 1.9-2.0 µs, SGEMM unchanged (its
/// workers have the cores to themselves while the driver sleeps). Nice 1-3 helped less and
/// not every run. Niceness changes nothing while cores are free; it does give the vendor's
/// threads a smaller share against other busy threads of equal priority (set 0 to keep
/// them equal). A thread of Weft's own is never started here, and nothing can raise a
/// niced thread back without privilege, so a vendor that was already loaded (by the
/// application, through the ICD loader) keeps its threads as they are.
fn on_niced_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let inc = vendor_nice();
    if inc == 0 {
        return f();
    }
    std::thread::scope(|s| {
        // Unnamed: the vendor's threads inherit this thread's name, as they would the
        // application thread's without Weft.
        let h = s.spawn(move || {
            unsafe extern "C" {
                fn nice(inc: std::ffi::c_int) -> std::ffi::c_int;
            }
            // SAFETY: nice(2) only changes the calling thread's niceness on Linux (NPTL
            // threads have their own); failure (e.g. at the limit) leaves it as it was.
            unsafe { nice(inc) };
            f()
        });
        h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Every device of every OpenCL vendor platform (empty when none is installed).
pub fn devices() -> Vec<OpenClDevice> {
    discover().devices
}
