//! The Weft platform and its devices.
//!
//! **Owns**: the one platform object and the device list: one **unified** device first
//! (it stands for the whole machine: a queue on it lets the scheduler place each kernel on
//! any device), then one device per real OpenCL device core drives, in core's order.
//! **Does not own**: the devices themselves (core's drivers own them).
//! Device queries of a real device are forwarded to its vendor, except those whose
//! answer is Weft's (platform, version, partitioning, images, extensions that need entry
//! points Weft lacks); the unified device answers as its first real device, with the
//! machine's totals where they differ. Weft reports OpenCL 3.0, where everything beyond 1.2
//! is optional: it offers images and samplers, and SVM on the unified device and the first
//! real device (svm.rs), not device-side enqueue, pipes, sub-groups or IL programs (their
//! queries answer "none", and their OpenCL C feature macros are not reported); the OpenCL
//! C versions and features are those every real device has. Extensions pass from the
//! vendors through an allow-list ([`PASSED_ON`]).

use super::cl::*;
use super::icd::{Obj, new_obj};
use super::{ClResult, Info, c_str, cl_entrypoint, info_ptr, info_str, info_val, info_vals, slice};
use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};
use weft_core::Runtime;
use weft_vendors::opencl::OpenClDevice;

pub const PLATFORM_VERSION: &str = "OpenCL 3.0 Weft 0.1.0";
/// The platform's extensions (each version 1.0.0): the ICD's, and Weft's own
/// `cl_weft_placement` (event.rs), which every device reports too.
pub const PLATFORM_EXTENSIONS: &str = "cl_khr_icd cl_weft_placement";

/// Weft's own device extensions, reported by every device after the vendors' it passes on.
const WEFT_EXTENSIONS: &[&str] = &[CL_WEFT_PLACEMENT_EXTENSION_NAME];

/// `CL_MAKE_VERSION(1, 0, 0)`.
const VERSION_1_0: u32 = 1 << 22;

/// `CL_MAKE_VERSION(3, 0, 0)`.
const VERSION_3_0: u32 = 3 << 22;

/// A `cl_name_version` entry (a version and a 64-byte name) as bytes.
fn name_version(name: &str, version: u32) -> Vec<u8> {
    let mut v = version.to_ne_bytes().to_vec();
    let mut n = [0u8; 64];
    let b = name.as_bytes();
    n[..b.len().min(63)].copy_from_slice(&b[..b.len().min(63)]);
    v.extend_from_slice(&n);
    v
}

/// What a Weft device stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// Every real device: the scheduler places each kernel.
    Unified,
    /// Real device `i` (index into [`Platform::real`]).
    Real(usize),
}

pub struct Device {
    pub kind: DeviceKind,
}

pub struct Platform {
    pub rt: Arc<Runtime>,
    /// The real devices, each with its driver worker.
    pub real: Vec<(usize, Arc<OpenClDevice>)>,
    /// Unified first, then the real ones.
    pub devices: Vec<Arc<Obj<Device>>>,
}

impl Platform {
    /// The device behind handle `h`, or `CL_INVALID_DEVICE`.
    pub fn device(&self, h: Handle) -> ClResult<Arc<Obj<Device>>> {
        self.devices.iter().find(|d| super::icd::handle_of(d) == h).cloned().ok_or(CL_INVALID_DEVICE)
    }

    /// The handle of Weft device `kind`.
    pub fn handle(&self, kind: DeviceKind) -> Handle {
        let i = match kind {
            DeviceKind::Unified => 0,
            DeviceKind::Real(i) => i + 1,
        };
        super::icd::handle_of(&self.devices[i])
    }

    /// The real devices a Weft device stands for (indices into `real`).
    pub fn reals(&self, kind: DeviceKind) -> Vec<usize> {
        match kind {
            DeviceKind::Unified => (0..self.real.len()).collect(),
            DeviceKind::Real(i) => vec![i],
        }
    }

    /// The real devices `kinds` stand for, in order, each once.
    pub fn reals_of(&self, kinds: &[DeviceKind]) -> Vec<usize> {
        let mut v: Vec<usize> = kinds.iter().flat_map(|&k| self.reals(k)).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The real device that answers queries for `kind`.
    pub fn answering(&self, kind: DeviceKind) -> &Arc<OpenClDevice> {
        match kind {
            DeviceKind::Unified => &self.real[0].1,
            DeviceKind::Real(i) => &self.real[i].1,
        }
    }

    /// The alignment (bytes) every real device accepts for sub-buffer origins.
    pub fn base_align(&self) -> usize {
        self.real
            .iter()
            .filter_map(|(_, d)| forward(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN).ok())
            .filter_map(|b| b.get(..4).and_then(|s| s.try_into().ok()).map(u32::from_ne_bytes))
            .map(|bits| (bits as usize / 8).max(1))
            .max()
            .unwrap_or(1)
    }

    /// The index in `real` of a device core hands a launch.
    pub fn real_index(&self, dev: &Arc<OpenClDevice>) -> Option<usize> {
        self.real.iter().position(|(_, d)| Arc::ptr_eq(d, dev))
    }
}

static PLATFORM: OnceLock<Result<Arc<Obj<Platform>>, String>> = OnceLock::new();

/// The platform, starting the process's runtime on first use.
pub fn platform() -> ClResult<&'static Arc<Obj<Platform>>> {
    let p = PLATFORM.get_or_init(|| {
        let rt = weft_core::capi::shared_runtime().map_err(|e| e.to_string())?;
        let real = rt.opencl_devices();
        let mut devices = Vec::new();
        if !real.is_empty() {
            devices.push(new_obj(Device { kind: DeviceKind::Unified }));
            devices.extend((0..real.len()).map(|i| new_obj(Device { kind: DeviceKind::Real(i) })));
        }
        Ok(new_obj(Platform { rt, real, devices }))
    });
    match p {
        Ok(p) => Ok(p),
        Err(e) => {
            eprintln!("weft: the OpenCL platform is unavailable: the runtime did not start: {e}");
            Err(CL_PLATFORM_NOT_FOUND_KHR)
        }
    }
}

/// Validate a platform argument (null means Weft's, as an implementation may choose).
pub fn check_platform(h: Handle) -> ClResult<&'static Arc<Obj<Platform>>> {
    let p = platform().map_err(|_| CL_INVALID_PLATFORM)?;
    if h.is_null() || h == super::icd::handle_of(p) { Ok(p) } else { Err(CL_INVALID_PLATFORM) }
}

/// # Safety
/// `platforms` is null or writable for `num_entries` handles; `num_platforms` null or writable.
#[cl_entrypoint(clIcdGetPlatformIDsKHR)]
unsafe fn icd_get_platform_ids_khr(num_entries: cl_uint, platforms: *mut Handle, num_platforms: *mut cl_uint) -> ClResult<()> {
    // CL_INVALID_VALUE if num_entries is equal to zero and platforms is not NULL, or if
    // both num_platforms and platforms are NULL.
    if (num_entries == 0 && !platforms.is_null()) || (platforms.is_null() && num_platforms.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    let p = platform()?;
    if !platforms.is_null() {
        // SAFETY: the caller's contract; num_entries >= 1.
        unsafe { platforms.write_unaligned(super::icd::handle_of(p)) };
    }
    if !num_platforms.is_null() {
        // SAFETY: the caller's contract.
        unsafe { num_platforms.write_unaligned(1) };
    }
    Ok(())
}

/// # Safety
/// As [`clIcdGetPlatformIDsKHR`].
#[cl_entrypoint(clGetPlatformIDs)]
unsafe fn get_platform_ids(num_entries: cl_uint, platforms: *mut Handle, num_platforms: *mut cl_uint) -> ClResult<()> {
    // SAFETY: forwarded contract.
    unsafe { icd_get_platform_ids_khr(num_entries, platforms, num_platforms) }
}

/// `WEFT_SOCL=1`: SOCL's conventions, for programs written for SOCL (StarPU's OpenCL
/// platform): the platform's vendor is "Inria" (how those programs find their platform), a
/// NULL device in `clCreateCommandQueue*` is the unified device, and programs are built for
/// each real device with `-DSOCL_DEVICE_TYPE_GPU` (`_CPU`, `_ACCELERATOR`, `_UNKNOWN`) after
/// its type. Off by default: it misnames the platform's vendor, and the specification wants
/// `CL_INVALID_DEVICE` for a NULL device.
pub(crate) fn socl() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("WEFT_SOCL").is_ok_and(|v| v == "1"))
}

#[cl_entrypoint(clGetPlatformInfo)]
fn get_platform_info(platform: Handle, param: cl_uint) -> ClResult<Info> {
    check_platform(platform)?;
    let bytes = match param {
        CL_PLATFORM_PROFILE => info_str("FULL_PROFILE"),
        CL_PLATFORM_VERSION => info_str(PLATFORM_VERSION),
        CL_PLATFORM_NAME => info_str("Weft"),
        CL_PLATFORM_VENDOR => info_str(if socl() { "Inria" } else { "The Weft developers" }),
        CL_PLATFORM_EXTENSIONS => info_str(PLATFORM_EXTENSIONS),
        CL_PLATFORM_ICD_SUFFIX_KHR => info_str("Weft"),
        // CL_PLATFORM_HOST_TIMER_RESOLUTION: Weft's clock counts nanoseconds (clGetHostTimer).
        0x0905 => info_val(1u64),
        // CL_PLATFORM_NUMERIC_VERSION
        0x0906 => info_val(VERSION_3_0),
        // CL_PLATFORM_EXTENSIONS_WITH_VERSION
        0x0907 => PLATFORM_EXTENSIONS.split_whitespace().flat_map(|e| name_version(e, VERSION_1_0)).collect(),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

/// The device type of `kind`: one type, never `DEFAULT` (the CTS and the spec's
/// `CL_DEVICE_TYPE` ask for one). The unified device takes its most capable real device's
/// (GPU, then accelerator, then custom, then CPU): a program asking for GPUs finds it
/// among them, and one asking for the default device gets it anyway (`clGetDeviceIDs`).
fn device_type(p: &Platform, kind: DeviceKind) -> cl_bitfield {
    let real = |i: usize| p.real[i].1.device_type() & !CL_DEVICE_TYPE_DEFAULT;
    match kind {
        DeviceKind::Unified => {
            let all = p.reals(kind).into_iter().fold(0, |t, i| t | real(i));
            [CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CUSTOM, CL_DEVICE_TYPE_CPU]
                .into_iter()
                .find(|t| all & t != 0)
                .unwrap_or(CL_DEVICE_TYPE_CPU)
        }
        DeviceKind::Real(i) => real(i),
    }
}

/// # Safety
/// `devices` null or writable for `num_entries` handles; `num_devices` null or writable.
#[cl_entrypoint(clGetDeviceIDs)]
pub(super) unsafe fn get_device_ids(
    platform: Handle,
    device_type_: cl_bitfield,
    num_entries: cl_uint,
    devices: *mut Handle,
    num_devices: *mut cl_uint,
) -> ClResult<()> {
    let p = check_platform(platform)?;
    let known = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;
    // CL_INVALID_DEVICE_TYPE if device_type is not a valid value.
    if device_type_ != CL_DEVICE_TYPE_ALL && (device_type_ & !known != 0 || device_type_ == 0) {
        return Err(CL_INVALID_DEVICE_TYPE);
    }
    // CL_INVALID_VALUE if num_entries is equal to zero and devices is not NULL or if
    // both num_devices and devices are NULL.
    if (num_entries == 0 && !devices.is_null()) || (devices.is_null() && num_devices.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    let found: Vec<Handle> = p
        .devices
        .iter()
        .filter(|d| {
            if device_type_ == CL_DEVICE_TYPE_ALL {
                return true;
            }
            if device_type_ & CL_DEVICE_TYPE_DEFAULT != 0 && d.kind == DeviceKind::Unified {
                return true;
            }
            device_type(p, d.kind) & device_type_ & !CL_DEVICE_TYPE_DEFAULT != 0
        })
        .map(super::icd::handle_of)
        .collect();
    // CL_DEVICE_NOT_FOUND if no OpenCL devices that matched device_type were found.
    if found.is_empty() {
        return Err(CL_DEVICE_NOT_FOUND);
    }
    if !devices.is_null() {
        for (i, d) in found.iter().take(num_entries as usize).enumerate() {
            // SAFETY: the caller's contract; i < num_entries.
            unsafe { devices.add(i).write_unaligned(*d) };
        }
    }
    if !num_devices.is_null() {
        // SAFETY: the caller's contract.
        unsafe { num_devices.write_unaligned(found.len() as cl_uint) };
    }
    Ok(())
}

/// Extensions a device may report through Weft: an allow-list of those that only change
/// the OpenCL C language (Weft forwards programs untouched) or add device queries (Weft
/// forwards them), so that a vendor extension needing entry points or objects Weft lacks
/// (`cl_khr_terminate_context`, `cl_nv_create_buffer`, `cl_amd_copy_buffer_p2p`, a new one)
/// is never reported. Not passed on: IL and SPIR (no IL programs), sub-groups, pipes,
/// device-side enqueue, images from buffers, mipmaps, MSAA, sharing with graphics APIs,
/// sub-devices, command buffers, semaphores, external memory, unified SVM, queue property
/// hints (Weft takes `CL_QUEUE_PROPERTIES` only), `cl_khr_create_command_queue` (no
/// `clCreateCommandQueueWithPropertiesKHR`), and `cl_khr_icd` (a platform extension).
const PASSED_ON: &[&str] = &[
    "cl_khr_byte_addressable_store",
    "cl_khr_fp16",
    "cl_khr_fp64",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
    "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics",
    "cl_khr_3d_image_writes",
    "cl_khr_depth_images",
    "cl_khr_srgb_image_writes",
    "cl_khr_select_fprounding_mode",
    "cl_khr_extended_versioning",
    "cl_khr_device_uuid",
    "cl_khr_pci_bus_info",
    "cl_khr_integer_dot_product",
    "cl_khr_expect_assume",
    "cl_khr_extended_async_copies",
    "cl_khr_extended_bit_ops",
    "cl_khr_kernel_clock",
    "cl_khr_work_group_uniform_arithmetic",
    "cl_khr_async_work_group_copy_fence",
    "cl_ext_atomic_counters_32",
    "cl_ext_atomic_counters_64",
    "cl_ext_float_atomics",
    "cl_ext_cxx_for_opencl",
    "cl_nv_compiler_options",
    "cl_nv_pragma_unroll",
    "cl_nv_device_attribute_query",
    "cl_amd_media_ops",
    "cl_amd_media_ops2",
    "cl_amd_printf",
    "cl_amd_fp64",
    "cl_amd_vec3",
    "cl_amd_device_attribute_query",
];

/// Extensions about one physical device (its PCI address, its UUID): a real device's,
/// not the unified device's, which stands for several (its answers would be the first
/// real device's).
const ONE_DEVICE: &[&str] = &["cl_khr_pci_bus_info", "cl_khr_device_uuid"];

/// The extensions of `ext` Weft passes on ([`PASSED_ON`]).
fn filter_extensions(ext: &str) -> String {
    ext.split_whitespace().filter(|e| PASSED_ON.contains(e)).collect::<Vec<_>>().join(" ")
}

/// OpenCL C feature macros (`CL_DEVICE_OPENCL_C_FEATURES`) Weft never reports: those of
/// the optional features it lacks (their device queries answer "none").
const FEATURES_DROPPED: &[&str] = &["__opencl_c_pipes", "__opencl_c_device_enqueue", "__opencl_c_subgroups"];

/// Whether a unified device over several real devices keeps program-scope global
/// variables: no, since each real device has its own copy of them and consecutive kernels
/// may run on different devices (a value one kernel stores, the next would not see).
fn globals_kept(kind: DeviceKind, reals: &[usize]) -> bool {
    kind != DeviceKind::Unified || reals.len() <= 1
}

/// A real device's `cl_name_version` list `param` (`CL_DEVICE_OPENCL_C_ALL_VERSIONS` or
/// `_FEATURES`), or, from a vendor older than OpenCL 3.0 (which lacks both queries), what
/// its older answers imply: the OpenCL C versions up to its `CL_DEVICE_OPENCL_C_VERSION`,
/// and no features (3.0's feature macros mean nothing to a 1.x or 2.x compiler).
fn name_versions_of(dev: &OpenClDevice, param: cl_uint) -> ClResult<Vec<u8>> {
    match forward(dev, param) {
        Ok(b) => Ok(b),
        Err(CL_INVALID_VALUE) if param == 0x1066 => {
            let v = weft_vendors::opencl::result::bytes_to_string(forward(dev, CL_DEVICE_OPENCL_C_VERSION)?);
            Ok(implied_c_versions(&v).into_iter().flat_map(|v| name_version("OpenCL C", v)).collect())
        }
        Err(CL_INVALID_VALUE) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The OpenCL C versions (`CL_MAKE_VERSION` values) a pre-3.0 device compiles, from its
/// `CL_DEVICE_OPENCL_C_VERSION` ("OpenCL C <major>.<minor> <vendor text>"): the 1.x and 2.0
/// versions up to that one (1.0 if the string does not parse).
fn implied_c_versions(version: &str) -> Vec<u32> {
    let number = version.strip_prefix("OpenCL C ").and_then(|r| r.split_whitespace().next()).unwrap_or("");
    let (major, minor) = number.split_once('.').map_or((1, 0), |(a, b)| (a.parse().unwrap_or(1), b.parse().unwrap_or(0)));
    [(1u32, 0u32), (1, 1), (1, 2), (2, 0)]
        .into_iter()
        .filter(|&v| v == (1, 0) || v <= (major, minor))
        .map(|(a, b)| (a << 22) | (b << 12))
        .collect()
}

/// `cl_name_version` entries (68 bytes each) of every one of `reals` for `param`, in the
/// first one's order: for `CL_DEVICE_OPENCL_C_ALL_VERSIONS` (one name, an entry per
/// version) the entries all of them report; for lists whose names are unique (features)
/// those whose name all of them report, at the smallest version.
fn common_name_versions(p: &Platform, reals: &[usize], param: cl_uint, keep: impl Fn(&str) -> bool) -> ClResult<Vec<u8>> {
    let by_name = param != 0x1066;
    let mut common: Option<Vec<(String, u32)>> = None;
    for &i in reals {
        let b = name_versions_of(&p.real[i].1, param)?;
        let mine: Vec<(String, u32)> = b
            .chunks_exact(68)
            .map(|e| {
                let v = u32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
                (weft_vendors::opencl::result::bytes_to_string(e[4..].to_vec()), v)
            })
            .filter(|(n, _)| keep(n))
            .collect();
        common = Some(match common {
            None => mine,
            Some(c) => c
                .into_iter()
                .filter_map(|(n, v)| mine.iter().find(|m| m.0 == n && (by_name || m.1 == v)).map(|m| (n, v.min(m.1))))
                .collect(),
        });
    }
    Ok(common.unwrap_or_default().iter().flat_map(|(n, v)| name_version(n, *v)).collect())
}

/// The extensions every one of `reals` reports that Weft passes on (for Weft device `kind`).
fn common_extensions(p: &Platform, kind: DeviceKind, reals: &[usize]) -> ClResult<Vec<String>> {
    let mut common: Option<Vec<String>> = None;
    for &i in reals {
        let e = weft_vendors::opencl::result::bytes_to_string(forward(&p.real[i].1, CL_DEVICE_EXTENSIONS)?);
        let mine: Vec<String> = filter_extensions(&e).split_whitespace().map(str::to_owned).collect();
        common = Some(match common {
            None => mine,
            Some(c) => c.into_iter().filter(|x| mine.contains(x)).collect(),
        });
    }
    let mut common = common.unwrap_or_default();
    if kind == DeviceKind::Unified {
        common.retain(|e| !ONE_DEVICE.contains(&e.as_str()));
    }
    Ok(common)
}

pub(super) fn forward(dev: &OpenClDevice, param: cl_uint) -> ClResult<Vec<u8>> {
    // SAFETY: the vendor device is live while its driver exists (for the process).
    unsafe { weft_vendors::opencl::result::get_device_info(dev.id().as_raw(), param) }.map_err(|e| e.0)
}

fn device_info(p: &Platform, h: Handle, kind: DeviceKind, param: cl_uint) -> ClResult<Vec<u8>> {
    let first = p.answering(kind);
    let reals = p.reals(kind);
    let _ = h;
    let images = super::image::all_support_images(p, &reals);
    // What the unified device answers where it stands for several devices: each real
    // device's answer combined element by element (`width`-byte values; arrays over their
    // common length) with `f`, from `init` (the answer when there are none). A kernel may
    // run on any of them, so limits are the smallest and capabilities what all have.
    let fold = |param: cl_uint, width: usize, init: u64, f: fn(u64, u64) -> u64| -> ClResult<Vec<u8>> {
        let mut acc: Option<Vec<u64>> = None;
        for &i in &reals {
            let b = forward(&p.real[i].1, param)?;
            if b.len() < width {
                return Err(CL_OUT_OF_RESOURCES);
            }
            let vals: Vec<u64> = b
                .chunks_exact(width)
                .map(|c| {
                    if width == 4 {
                        u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as u64
                    } else {
                        u64::from_ne_bytes(c.try_into().expect("8 bytes"))
                    }
                })
                .collect();
            acc = Some(match acc {
                None => vals,
                Some(a) => a.iter().zip(&vals).map(|(&x, &y)| f(x, y)).collect(),
            });
        }
        let vals = acc.unwrap_or_else(|| vec![init]);
        Ok(vals.iter().flat_map(|&v| if width == 4 { (v as u32).to_ne_bytes().to_vec() } else { v.to_ne_bytes().to_vec() }).collect())
    };
    let min = |param: cl_uint, width: usize| fold(param, width, u64::MAX, u64::min);
    Ok(match param {
        // Sizes (size_t, cl_ulong): the smallest. Work-group and work-item sizes, parameter,
        // constant buffer and local memory sizes.
        0x1004 | 0x1005 | 0x1017 | 0x1020 | 0x1023 if reals.len() > 1 => min(param, 8)?,
        // cl_uint counts: work-item dimensions, preferred and native vector widths, constant
        // arguments: the smallest.
        0x1003 | 0x1006..=0x100B | 0x1034 | 0x1036..=0x103C | 0x1021 if reals.len() > 1 => min(param, 4)?,
        // Floating-point capabilities (bitfields): what all have.
        0x101B | 0x1032 | 0x1033 if reals.len() > 1 => fold(param, 8, u64::MAX, |a, b| a & b)?,
        // Error correction, availability, a compiler, unified host memory: all or none.
        0x1024 | 0x1027 | 0x1028 | 0x1035 if reals.len() > 1 => fold(param, 4, u64::MAX, |a, b| a & b)?,
        CL_DEVICE_TYPE => info_val(device_type(p, kind)),
        CL_DEVICE_PLATFORM => info_ptr(super::icd::handle_of(platform()?)),
        CL_DEVICE_VERSION => info_str("OpenCL 3.0 Weft"),
        CL_DEVICE_OPENCL_C_VERSION => info_str("OpenCL C 1.2 "),
        CL_DRIVER_VERSION => info_str(env!("CARGO_PKG_VERSION")),
        CL_DEVICE_PROFILE => info_str("FULL_PROFILE"),
        CL_DEVICE_EXTENSIONS => {
            let mut all = common_extensions(p, kind, &reals)?;
            all.extend(WEFT_EXTENSIONS.iter().map(|&e| e.to_owned()));
            info_str(&all.join(" "))
        }
        CL_DEVICE_NAME => match kind {
            DeviceKind::Unified => info_str(&format!("Weft (all {} devices)", reals.len())),
            DeviceKind::Real(i) => {
                let n = weft_vendors::opencl::result::bytes_to_string(forward(first, CL_DEVICE_NAME)?);
                info_str(&format!("{n} (via Weft, device {})", i + 1))
            }
        },
        CL_DEVICE_IMAGE_SUPPORT => info_val::<cl_bool>(if images { CL_TRUE } else { CL_FALSE }),
        CL_DEVICE_QUEUE_PROPERTIES => info_val(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE),
        CL_DEVICE_BUILT_IN_KERNELS => info_str(""),
        CL_DEVICE_LINKER_AVAILABLE => info_val::<cl_bool>(CL_TRUE),
        CL_DEVICE_PARENT_DEVICE => info_ptr(std::ptr::null()),
        CL_DEVICE_PARTITION_MAX_SUB_DEVICES => info_val(0u32),
        CL_DEVICE_PARTITION_PROPERTIES => info_vals(&[0isize]),
        CL_DEVICE_PARTITION_AFFINITY_DOMAIN => info_val(0u64),
        CL_DEVICE_PARTITION_TYPE => Vec::new(),
        CL_DEVICE_REFERENCE_COUNT => info_val(1u32),
        // CL_DEVICE_EXECUTION_CAPABILITIES: kernels only (no native kernels).
        0x1029 => info_val(1u64),
        CL_DEVICE_PREFERRED_INTEROP_USER_SYNC => info_val::<cl_bool>(CL_TRUE),
        CL_DEVICE_MAX_COMPUTE_UNITS if kind == DeviceKind::Unified => fold(param, 4, 0, |a, b| a + b)?,
        CL_DEVICE_GLOBAL_MEM_SIZE | CL_DEVICE_MAX_MEM_ALLOC_SIZE if kind == DeviceKind::Unified => min(param, 8)?,
        // Every device's buffers may move to every other: sub-buffer origins must suit them
        // all (clCreateSubBuffer checks `base_align`), so each device reports the largest.
        CL_DEVICE_MEM_BASE_ADDR_ALIGN => info_val((p.base_align() * 8) as u32),
        // 2.0 and later queries (OpenCL 3.0: each feature optional). Images from buffers:
        // none (pitch and base address alignment 0).
        0x104A | 0x104B => info_val(0u32),
        0x104C if images => min(param, 4)?,
        0x104C => info_val(0u32),
        CL_DEVICE_SVM_CAPABILITIES => info_val(super::svm::device_caps(p, kind)),
        // No device-side enqueue or pipes.
        0x104E | 0x1070 => info_val(0u64),
        0x104F..=0x1052 | 0x1055..=0x1057 => info_val(0u32),
        0x1071 => info_val::<cl_bool>(CL_FALSE),
        // No IL programs, no sub-groups.
        0x105B => info_str(""),
        0x105C => info_val(0u32),
        0x105D => info_val::<cl_bool>(CL_FALSE),
        0x1061 | 0x1062 => Vec::new(),
        // CL_DEVICE_NUMERIC_VERSION
        0x105E => info_val(VERSION_3_0),
        // CL_DEVICE_PROFILING_TIMER_RESOLUTION: a kernel's times are its device's, so the
        // coarsest of the devices' resolutions.
        0x1025 if reals.len() > 1 => fold(param, 8, 0, u64::max)?,
        // Atomic memory and fence capabilities (bitfields): what every device has. Non-uniform
        // work-groups, work-group collectives, the generic address space: all or none.
        0x1063 | 0x1064 if reals.len() > 1 => fold(param, 8, u64::MAX, |a, b| a & b)?,
        0x1065 | 0x1068 | 0x1069 if reals.len() > 1 => fold(param, 4, u64::MAX, |a, b| a & b)?,
        // CL_DEVICE_OPENCL_C_ALL_VERSIONS: the versions every device compiles.
        0x1066 => common_name_versions(p, &reals, param, |_| true)?,
        // CL_DEVICE_OPENCL_C_FEATURES: those every device has, less the optional features
        // Weft lacks, and program-scope globals where kernels move between devices.
        0x106F => common_name_versions(p, &reals, param, |n| {
            !FEATURES_DROPPED.contains(&n)
                && (globals_kept(kind, &reals) || n != "__opencl_c_program_scope_global_variables")
                && (images || !n.contains("image"))
        })?,
        // CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE, CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE.
        0x104D | 0x1054 if !globals_kept(kind, &reals) => info_val(0usize),
        // CL_DEVICE_EXTENSIONS_WITH_VERSION: the vendor's entries for the extensions Weft reports.
        0x1060 => {
            let names = common_extensions(p, kind, &reals)?;
            let all = forward(first, param).unwrap_or_default();
            let mut out = Vec::new();
            for e in all.chunks_exact(68) {
                let name = weft_vendors::opencl::result::bytes_to_string(e[4..].to_vec());
                if names.contains(&name) {
                    out.extend_from_slice(e);
                }
            }
            for e in WEFT_EXTENSIONS {
                out.extend(name_version(e, VERSION_1_0));
            }
            out
        }
        // Image limits: the smallest over the devices (0 without image support).
        0x1011..=0x1015 | 0x1040 | 0x1041 if !images => info_val(0usize),
        0x1018 | 0x100E | 0x100F if !images => info_val(0u32),
        0x1011..=0x1015 | 0x1040 | 0x1041 => min(param, 8)?,
        0x1018 | 0x100E | 0x100F => min(param, 4)?,
        _ => forward(first, param)?,
    })
}

/// # Safety
/// `device_timestamp` and `host_timestamp` null or writable.
#[cl_entrypoint(clGetDeviceAndHostTimer)]
unsafe fn get_device_and_host_timer(device: Handle, device_timestamp: *mut u64, host_timestamp: *mut u64) -> ClResult<()> {
    // CL_INVALID_DEVICE if device is not a valid device.
    platform().map_err(|_| CL_INVALID_DEVICE)?.device(device)?;
    // CL_INVALID_VALUE if host_timestamp or device_timestamp is NULL.
    if device_timestamp.is_null() || host_timestamp.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // Every Weft device's timer is Weft's profiling clock, the host's (event.rs): one
    // reading is both, exactly synchronized.
    let t = super::event::now_ns();
    // SAFETY: both are non-null, and writable by the caller's contract.
    unsafe {
        device_timestamp.write_unaligned(t);
        host_timestamp.write_unaligned(t);
    }
    Ok(())
}

/// # Safety
/// `host_timestamp` null or writable.
#[cl_entrypoint(clGetHostTimer)]
unsafe fn get_host_timer(device: Handle, host_timestamp: *mut u64) -> ClResult<()> {
    // CL_INVALID_DEVICE if device is not a valid device.
    platform().map_err(|_| CL_INVALID_DEVICE)?.device(device)?;
    // CL_INVALID_VALUE if host_timestamp is NULL.
    if host_timestamp.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: non-null, and writable by the caller's contract.
    unsafe { host_timestamp.write_unaligned(super::event::now_ns()) };
    Ok(())
}

#[cl_entrypoint(clGetDeviceInfo)]
fn get_device_info(device: Handle, param: cl_uint) -> ClResult<Info> {
    let p = platform().map_err(|_| CL_INVALID_DEVICE)?;
    let d = p.device(device)?;
    let bytes = device_info(p, device, d.kind, param)?;
    Ok(Info(bytes))
}

/// Root devices have no reference count: retain and release only validate.
#[cl_entrypoint(clRetainDevice)]
fn retain_device(device: Handle) -> ClResult<()> {
    platform().map_err(|_| CL_INVALID_DEVICE)?.device(device).map(drop)
}

/// See [`clRetainDevice`].
#[cl_entrypoint(clReleaseDevice)]
fn release_device(device: Handle) -> ClResult<()> {
    platform().map_err(|_| CL_INVALID_DEVICE)?.device(device).map(drop)
}

/// # Safety
/// `name` is null or a NUL-terminated string.
#[cl_entrypoint(clGetExtensionFunctionAddress)]
unsafe fn get_extension_function_address(name: *const c_char) -> *mut c_void {
    // SAFETY: the caller's contract.
    match unsafe { c_str(name) } {
        Some(n) => super::icd::function_address(&n.to_string_lossy()),
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// As [`clGetExtensionFunctionAddress`].
#[cl_entrypoint(clGetExtensionFunctionAddressForPlatform)]
unsafe fn get_extension_function_address_for_platform(platform: Handle, name: *const c_char) -> *mut c_void {
    if check_platform(platform).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: forwarded contract.
    unsafe { get_extension_function_address(name) }
}

/// Validate a device list of a context or program call: the Weft devices, in order.
///
/// # Safety
/// `devices` null or readable for `n` handles.
pub unsafe fn device_list(p: &Platform, n: cl_uint, devices: *const Handle) -> ClResult<Vec<DeviceKind>> {
    // CL_INVALID_VALUE if devices is NULL [or] num_devices is equal to zero.
    if n == 0 || devices.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let hs = unsafe { slice(devices, n as usize) }?;
    let mut out = Vec::new();
    for &h in hs {
        // CL_INVALID_DEVICE if any device in devices is not a valid device.
        let d = p.device(h)?;
        if !out.contains(&d.kind) {
            out.push(d.kind);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Other vendors' lists: only extensions without entry points of their own pass.
    #[test]
    fn extensions_needing_entry_points_weft_lacks_are_not_passed_on() {
        let nvidia = "cl_khr_global_int32_base_atomics cl_khr_fp64 cl_khr_3d_image_writes cl_khr_byte_addressable_store \
                      cl_khr_icd cl_khr_gl_sharing cl_nv_compiler_options cl_nv_device_attribute_query cl_nv_pragma_unroll \
                      cl_nv_copy_opts cl_nv_create_buffer cl_khr_int64_base_atomics cl_khr_device_uuid cl_khr_pci_bus_info \
                      cl_khr_external_semaphore cl_khr_external_memory cl_khr_semaphore cl_khr_terminate_context";
        assert_eq!(
            filter_extensions(nvidia),
            "cl_khr_global_int32_base_atomics cl_khr_fp64 cl_khr_3d_image_writes cl_khr_byte_addressable_store \
             cl_nv_compiler_options cl_nv_device_attribute_query cl_nv_pragma_unroll cl_khr_int64_base_atomics \
             cl_khr_device_uuid cl_khr_pci_bus_info"
        );
        let amd = "cl_khr_fp64 cl_amd_media_ops cl_amd_copy_buffer_p2p cl_amd_offline_devices cl_khr_create_command_queue \
                   cl_khr_priority_hints cl_ext_image_requirements_info cl_khr_spirv_linkonce_odr cl_amd_planar_yuv";
        assert_eq!(filter_extensions(amd), "cl_khr_fp64 cl_amd_media_ops");
    }

    /// A pre-3.0 vendor's OpenCL C versions come from its one version string.
    #[test]
    fn older_vendors_imply_their_opencl_c_versions() {
        let v = |a: u32, b: u32| (a << 22) | (b << 12);
        assert_eq!(implied_c_versions("OpenCL C 1.2 pocl"), vec![v(1, 0), v(1, 1), v(1, 2)]);
        assert_eq!(implied_c_versions("OpenCL C 2.0 "), vec![v(1, 0), v(1, 1), v(1, 2), v(2, 0)]);
        assert_eq!(implied_c_versions("OpenCL C 1.1"), vec![v(1, 0), v(1, 1)]);
        assert_eq!(implied_c_versions("garbage"), vec![v(1, 0)]);
    }

    #[test]
    fn only_language_extensions_are_passed_on() {
        let pocl = "cl_khr_byte_addressable_store cl_khr_fp64 cl_khr_3d_image_writes cl_khr_il_program cl_khr_spir \
                    cl_khr_subgroups cl_pocl_content_size cl_khr_command_buffer cl_khr_int64_base_atomics \
                    cl_khr_image2d_from_buffer cl_khr_mipmap_image";
        // Images are Weft's (3-D image writes included); images from buffers and mipmaps are not.
        assert_eq!(filter_extensions(pocl), "cl_khr_byte_addressable_store cl_khr_fp64 cl_khr_3d_image_writes cl_khr_int64_base_atomics");
    }
}
