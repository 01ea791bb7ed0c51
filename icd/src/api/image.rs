//! Images: each image is a `cl_mem` ([`Mem`] with [`ImageInfo`]) whose data is one core
//! data handle, like a buffer's, laid out row by row in host memory (its home: the
//! application's for `CL_MEM_USE_HOST_PTR`, with its pitches, else Weft's, packed).
//!
//! **Owns**: image creation and validation, `clGetImageInfo`, the supported formats, the
//! host-side image commands (read, write, copy, fill, map, and copies between images and
//! buffers), and the vendor images that stand for an image on each real device.
//! **Does not own**: coherence (core moves the handle's bytes between the host and the
//! devices, as for buffers), kernel launch (`kernel.rs`).
//!
//! Design: the source of truth is the data handle, never a vendor image. Host-side
//! commands are host tasks on the handle (core brings the data home first), so they need
//! no device. A kernel taking an image accesses the handle like a buffer (`R` for
//! `__read_only` images, else `RW`); on the device that runs it, the launch copies the
//! handle's replica (a packed vendor buffer) into a vendor image of that device's context
//! (made once per image and device, kept with the image), runs the kernel, and, unless the
//! image is read-only for the kernel, copies the vendor image back into the replica — all
//! on the device's one in-order kernel queue, under one completion. So an image is
//! coherent across devices exactly as a buffer is, at the price of two device-local
//! copies per launch; any device of the platform may run the kernel.
//!
//! Formats: those every device supports, plus two-channel (`CL_RG`) formats the devices
//! lack but whose four-channel (`CL_RGBA`) form they have (PoCL's CPU devices have no
//! two-channel format): such an image keeps its two-channel layout in its data handle, and
//! on a device it is a four-channel vendor image, filled through a staging buffer by a
//! helper kernel that widens each pixel with (0, 1) and, when written, narrowed back.
//! Reads give (r, g, 0, 1) either way, as the specification says for `CL_RG`.
//!
//! **Invariants**: `ImageInfo::vendor[i]` is a vendor image of real device `i`'s context
//! with the image's format and dimensions; it holds no data between launches that anyone
//! reads (every launch fills it from the replica first).

use super::cl::*;
use super::context::Context;
use super::event::EventState;
use super::icd::{self, Obj};
use super::memory::{HostAlloc, Mem, check_flags};
use super::queue::{Cmd, Queue, Rect, buffer_of, check_range, copy_rect, finish_command, host_codelet};
use super::{ClResult, Info, cl_entrypoint, info_ptr, info_val, is_true, slice};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use weft_core::data::{Shape, Strides};
use weft_core::task::{AccessMode, TaskBuilder};
use weft_vendors::opencl::result as vr;
use weft_vendors::opencl::{Kernel as VendorKernel, Mem as VendorMem, OpenClDevice, Program as VendorProgram};

/// What makes a `Mem` an image.
pub struct ImageInfo {
    pub kind: cl_uint,
    pub format: cl_image_format,
    /// Bytes per pixel.
    pub pixel: usize,
    /// As created (for `clGetImageInfo` and the vendor images).
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub array_size: usize,
    /// The home layout: pixels per row, rows, slices (1-D arrays: one row per image; 2-D
    /// arrays: one slice per image).
    pub dims: [usize; 3],
    /// Home pitches in bytes, between rows and between slices.
    pub row: usize,
    pub slice: usize,
    /// How the devices hold it when they lack its format (`CL_RG` as `CL_RGBA`).
    emulation: Option<Emulation>,
    /// A vendor image per real device, made at its first launch there (with, when
    /// emulated, a staging buffer of the wider pixels).
    vendor: Vec<Mutex<Option<DeviceImage>>>,
}

/// A vendor image, and the staging buffer of an emulated format.
type DeviceImage = (VendorMem, Option<VendorMem>);

/// A two-channel image held on the devices as a four-channel one of the same channel type:
/// reads see (r, g, 0, 1) either way, and writes keep r and g.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emulation {
    pub format: cl_image_format,
    /// Bytes per pixel on the host and on the devices.
    pub narrow: usize,
    pub wide: usize,
    /// The bytes of the added channels (0 and 1 in the channel type), little-endian in a word.
    pub tail: u64,
}

impl Emulation {
    /// How to hold `f` on devices that support `vendor` formats, if they lack it.
    fn of(f: &cl_image_format, vendor: &[cl_image_format]) -> Option<Emulation> {
        if f.image_channel_order != CL_RG || vendor.contains(f) {
            return None;
        }
        let format = cl_image_format { image_channel_order: CL_RGBA, image_channel_data_type: f.image_channel_data_type };
        if !vendor.contains(&format) {
            return None;
        }
        let int = matches!(
            f.image_channel_data_type,
            CL_SIGNED_INT8 | CL_SIGNED_INT16 | CL_SIGNED_INT32 | CL_UNSIGNED_INT8 | CL_UNSIGNED_INT16 | CL_UNSIGNED_INT32
        );
        let one = if int { 1u32.to_ne_bytes() } else { 1.0f32.to_ne_bytes() };
        let mut color = [0u8; 16];
        color[12..].copy_from_slice(&one);
        let wide_px = fill_pixel(&format, color)?;
        let narrow = pixel_size(f)?;
        let mut tail = [0u8; 8];
        let t = wide_px.get(narrow..)?;
        tail.get_mut(..t.len())?.copy_from_slice(t);
        Some(Emulation { format, narrow, wide: wide_px.len(), tail: u64::from_le_bytes(tail) })
    }
}

/// A vendor image for a launch: the image, and its staging buffer and emulation if any.
#[derive(Clone, Copy)]
pub struct VendorImage<'a> {
    pub image: vr_mem,
    pub staging: Option<(vr_mem, &'a Emulation)>,
}

impl ImageInfo {
    /// The whole image's region, in pixels (what the vendor copies take).
    pub fn region(&self) -> [usize; 3] {
        self.dims
    }

    /// `CL_IMAGE_SLICE_PITCH` (and what map returns): the pitch between images of an
    /// array or slices of a 3-D image, else 0.
    pub fn slice_pitch(&self) -> usize {
        match self.kind {
            CL_MEM_OBJECT_IMAGE3D | CL_MEM_OBJECT_IMAGE2D_ARRAY => self.slice,
            CL_MEM_OBJECT_IMAGE1D_ARRAY => self.row,
            _ => 0,
        }
    }

    /// The vendor image standing for this image on real device `i` (`dev`), made on first
    /// use. The raw handle stays valid while `self` lives.
    pub fn vendor_image(&self, i: usize, dev: &OpenClDevice) -> Result<VendorImage<'_>, String> {
        let slot = self.vendor.get(i).ok_or("no such device")?;
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        let staged = |st: &Option<VendorMem>| st.as_ref().map(|b| b.as_raw()).zip(self.emulation.as_ref());
        if let Some((m, st)) = slot.as_ref() {
            return Ok(VendorImage { image: m.as_raw(), staging: staged(st) });
        }
        let desc = cl_image_desc {
            image_type: self.kind,
            image_width: self.width,
            image_height: self.height,
            image_depth: self.depth,
            image_array_size: self.array_size,
            image_row_pitch: 0,
            image_slice_pitch: 0,
            num_mip_levels: 0,
            num_samples: 0,
            mem_object: std::ptr::null_mut(),
        };
        let format = self.emulation.as_ref().map_or(self.format, |e| e.format);
        // A 1-D image buffer stands on a vendor buffer of its own, kept in the staging slot
        // (`staged` hands out a staging buffer only with an emulation, which it never has).
        let mut desc = desc;
        let backing = if self.kind == CL_MEM_OBJECT_IMAGE1D_BUFFER {
            // SAFETY: the device's context is live.
            let b = unsafe { vr::create_buffer(dev.context().as_raw(), CL_MEM_READ_WRITE, self.row, std::ptr::null_mut()) }
                .map_err(|e| format!("clCreateBuffer (1-D image buffer): {e}"))?;
            // SAFETY: a new buffer whose one reference we own.
            let b = unsafe { VendorMem::from_raw(b) };
            desc.mem_object = b.as_raw();
            Some(b)
        } else {
            None
        };
        // SAFETY: the device's context is live; format and descriptor are plain values (a
        // 1-D image buffer's backing buffer lives in the slot as long as the image).
        let raw = unsafe { vr::create_image(dev.context().as_raw(), CL_MEM_READ_WRITE, &format, &desc) }
            .map_err(|e| format!("clCreateImage on {}: {e}", weft_vendors::Device::name(dev)))?;
        // SAFETY: a new image whose one reference we own.
        let m = unsafe { VendorMem::from_raw(raw) };
        let staging = match &self.emulation {
            Some(e) => {
                let bytes = self.dims.iter().product::<usize>() * e.wide;
                // SAFETY: the device's context is live.
                let b = unsafe { vr::create_buffer(dev.context().as_raw(), CL_MEM_READ_WRITE, bytes, std::ptr::null_mut()) }
                    .map_err(|e| format!("clCreateBuffer (image staging): {e}"))?;
                // SAFETY: a new buffer whose one reference we own.
                Some(unsafe { VendorMem::from_raw(b) })
            }
            None => backing,
        };
        let st = staged(&staging);
        *slot = Some((m, staging));
        Ok(VendorImage { image: raw, staging: st })
    }
}

/// Kernels that widen packed two-channel pixels into a staging buffer of four-channel ones
/// (the added bytes from `tail`) and narrow them back, byte by byte (any channel type).
const HELPERS: &str = "
__kernel void weft_widen(__global const uchar *src, __global uchar *dst, uint in_px, uint out_px, ulong tail) {
  size_t p = get_global_id(0);
  for (uint b = 0; b < in_px; b++) dst[p * out_px + b] = src[p * in_px + b];
  for (uint b = in_px; b < out_px; b++) dst[p * out_px + b] = (uchar)(tail >> (8 * (b - in_px)));
}
__kernel void weft_narrow(__global const uchar *src, __global uchar *dst, uint in_px, uint out_px) {
  size_t p = get_global_id(0);
  for (uint b = 0; b < out_px; b++) dst[p * out_px + b] = src[p * in_px + b];
}
";

/// The helper programs, built once per device (keyed by the device's address).
static HELPER_PROGRAMS: std::sync::LazyLock<Mutex<Vec<(usize, VendorProgram)>>> = std::sync::LazyLock::new(Default::default);

/// A new kernel `name` of [`HELPERS`] for `dev`.
pub fn helper_kernel(dev: &OpenClDevice, name: &str) -> Result<VendorKernel, String> {
    let key = dev as *const OpenClDevice as usize;
    let mut progs = HELPER_PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
    if !progs.iter().any(|p| p.0 == key) {
        let p = VendorProgram::from_source(dev.context(), HELPERS).map_err(|e| format!("image helpers: {e}"))?;
        p.build(dev.id(), "").map_err(|e| format!("building the image helpers: {e}"))?;
        progs.push((key, p));
    }
    let p = progs.iter().find(|p| p.0 == key).map(|p| &p.1).ok_or("image helpers")?;
    VendorKernel::new(p, name).map_err(|e| format!("image helper {name}: {e}"))
}

/// A raw vendor `cl_mem`.
#[allow(non_camel_case_types)]
pub type vr_mem = weft_vendors::opencl::sys::cl_mem;

/// Channels of a channel order, `None` for orders Weft does not know.
fn channels(order: cl_uint) -> Option<usize> {
    Some(match order {
        CL_R | CL_A | CL_INTENSITY | CL_LUMINANCE => 1,
        CL_RG | CL_RA => 2,
        CL_RGB => 3,
        CL_RGBA | CL_BGRA | CL_ARGB | CL_ABGR => 4,
        _ => return None,
    })
}

/// Bytes per pixel of a format, `None` when the format is not a valid one.
pub fn pixel_size(f: &cl_image_format) -> Option<usize> {
    let n = channels(f.image_channel_order)?;
    let packed = matches!(f.image_channel_data_type, CL_UNORM_SHORT_565 | CL_UNORM_SHORT_555 | CL_UNORM_INT_101010);
    // CL_RGB is only valid with the packed types, and those only with CL_RGB.
    if packed != (f.image_channel_order == CL_RGB) {
        return None;
    }
    Some(match f.image_channel_data_type {
        CL_UNORM_SHORT_565 | CL_UNORM_SHORT_555 => 2,
        CL_UNORM_INT_101010 => 4,
        CL_SNORM_INT8 | CL_UNORM_INT8 | CL_SIGNED_INT8 | CL_UNSIGNED_INT8 => n,
        CL_SNORM_INT16 | CL_UNORM_INT16 | CL_SIGNED_INT16 | CL_UNSIGNED_INT16 | CL_HALF_FLOAT => 2 * n,
        CL_SIGNED_INT32 | CL_UNSIGNED_INT32 | CL_FLOAT => 4 * n,
        _ => return None,
    })
}

/// The formats every real device of `c` supports for `flags` and `kind`, plus those Weft
/// emulates with them.
fn supported_formats(c: &Context, flags: cl_bitfield, kind: cl_uint) -> ClResult<Vec<cl_image_format>> {
    Ok(with_emulated(vendor_formats(c, flags, kind)?))
}

/// The formats every real device of `c` supports for `flags` and `kind`.
fn vendor_formats(c: &Context, flags: cl_bitfield, kind: cl_uint) -> ClResult<Vec<cl_image_format>> {
    let mut common: Option<Vec<cl_image_format>> = None;
    for i in c.platform.reals_of(&c.devices) {
        let dev = &c.platform.real[i].1;
        // SAFETY: the device's context is live.
        let mine = unsafe { vr::get_supported_image_formats(dev.context().as_raw(), flags, kind) }.map_err(|e| e.0)?;
        common = Some(match common {
            None => mine,
            Some(c) => c.into_iter().filter(|f| mine.contains(f)).collect(),
        });
    }
    Ok(common.unwrap_or_default().into_iter().filter(|f| pixel_size(f).is_some()).collect())
}

/// The vendor formats plus those Weft emulates with them.
fn with_emulated(mut vendor: Vec<cl_image_format>) -> Vec<cl_image_format> {
    let extra: Vec<cl_image_format> = vendor
        .iter()
        .filter(|f| f.image_channel_order == CL_RGBA)
        .map(|f| cl_image_format { image_channel_order: CL_RG, image_channel_data_type: f.image_channel_data_type })
        .filter(|f| Emulation::of(f, &vendor).is_some())
        .collect();
    vendor.extend(extra);
    vendor
}

/// Whether every real device has image support.
pub fn all_support_images(p: &super::platform::Platform, reals: &[usize]) -> bool {
    !reals.is_empty()
        && reals
            .iter()
            .all(|&i| super::platform::forward(&p.real[i].1, CL_DEVICE_IMAGE_SUPPORT).is_ok_and(|b| b.first().is_some_and(|&x| x != 0)))
}

/// The smallest value of a `size_t` device limit over `reals`.
fn min_limit(p: &super::platform::Platform, reals: &[usize], param: cl_uint) -> usize {
    reals
        .iter()
        .filter_map(|&i| super::platform::forward(&p.real[i].1, param).ok())
        .filter_map(|b| b.get(..8).and_then(|s| s.try_into().ok()).map(usize::from_ne_bytes))
        .min()
        .unwrap_or(0)
}

const IMAGE_KINDS: [cl_uint; 6] = [
    CL_MEM_OBJECT_IMAGE2D,
    CL_MEM_OBJECT_IMAGE3D,
    CL_MEM_OBJECT_IMAGE2D_ARRAY,
    CL_MEM_OBJECT_IMAGE1D,
    CL_MEM_OBJECT_IMAGE1D_ARRAY,
    CL_MEM_OBJECT_IMAGE1D_BUFFER,
];

/// # Safety
/// `formats` null or writable for `num_entries` formats; `num_ret` null or writable.
#[cl_entrypoint(clGetSupportedImageFormats)]
unsafe fn get_supported_image_formats(
    c: Arc<Obj<Context>>,
    flags: cl_bitfield,
    image_type: cl_uint,
    num_entries: cl_uint,
    formats: *mut cl_image_format,
    num_ret: *mut cl_uint,
) -> ClResult<()> {
    // CL_MEM_KERNEL_READ_AND_WRITE (2.0+) is a flag of this query only: formats a kernel
    // may both read and write; the vendors answer it.
    check_flags(flags & !CL_MEM_KERNEL_READ_AND_WRITE)?;
    // CL_INVALID_VALUE if flags or image_type are not valid, or if num_entries is 0 and
    // image_formats is not NULL.
    if !IMAGE_KINDS.contains(&image_type) || (num_entries == 0 && !formats.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    // A 1-D image buffer's formats are the vendors' own (no emulated ones: its pixels
    // are the buffer's bytes).
    let list = if image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER {
        vendor_formats(&c, flags, image_type)?
    } else {
        supported_formats(&c, flags, image_type)?
    };
    if !formats.is_null() {
        for (i, f) in list.iter().take(num_entries as usize).enumerate() {
            // SAFETY: the caller's contract; i < num_entries.
            unsafe { formats.add(i).write_unaligned(*f) };
        }
    }
    if !num_ret.is_null() {
        // SAFETY: the caller's contract.
        unsafe { num_ret.write_unaligned(list.len() as cl_uint) };
    }
    Ok(())
}

/// # Safety
/// `format`, `desc` null or valid; `host_ptr` as clCreateImage requires; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateImage)]
unsafe fn create_image(
    context: Handle,
    flags: cl_bitfield,
    format: *const cl_image_format,
    desc: *const cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    check_flags(flags)?;
    let given_flags = flags;
    let flags = if flags & (CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY) == 0 { flags | CL_MEM_READ_WRITE } else { flags };
    let reals = c.platform.reals_of(&c.devices);
    // CL_INVALID_OPERATION if there are no devices in context that support images.
    if !all_support_images(c.platform, &reals) {
        return Err(CL_INVALID_OPERATION);
    }
    // CL_INVALID_IMAGE_FORMAT_DESCRIPTOR if values specified in image_format are not valid
    // or if image_format is NULL.
    if format.is_null() {
        return Err(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    }
    // SAFETY: non-null; the caller's contract makes it a cl_image_format.
    let format = unsafe { format.read_unaligned() };
    let pixel = pixel_size(&format).ok_or(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)?;
    // CL_INVALID_IMAGE_DESCRIPTOR if values specified in image_desc are not valid or if
    // image_desc is NULL.
    if desc.is_null() {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // SAFETY: non-null; the caller's contract makes it a cl_image_desc.
    let d = unsafe { desc.read_unaligned() };
    // A 2-D image of a buffer is an optional feature Weft's devices report absent
    // (CL_DEVICE_IMAGE_PITCH_ALIGNMENT 0): "CL_INVALID_OPERATION if [...] the device does
    // not support creating a 2D image from a buffer", as the CTS checks.
    if d.image_type == CL_MEM_OBJECT_IMAGE2D && !d.mem_object.is_null() {
        return Err(CL_INVALID_OPERATION);
    }
    if d.image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER {
        return image_of_buffer(&c, given_flags, format, pixel, &d, host_ptr);
    }
    if !d.mem_object.is_null() || d.num_mip_levels != 0 || d.num_samples != 0 {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let (w, h, dep, arr) = (d.image_width, d.image_height, d.image_depth, d.image_array_size);
    let dims = match d.image_type {
        CL_MEM_OBJECT_IMAGE1D => [w, 1, 1],
        CL_MEM_OBJECT_IMAGE1D_ARRAY => [w, arr, 1],
        CL_MEM_OBJECT_IMAGE2D => [w, h, 1],
        CL_MEM_OBJECT_IMAGE2D_ARRAY => [w, h, arr],
        CL_MEM_OBJECT_IMAGE3D => [w, h, dep],
        _ => return Err(CL_INVALID_IMAGE_DESCRIPTOR),
    };
    if dims.contains(&0) {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // CL_INVALID_IMAGE_SIZE if image dimensions exceed the maximum image dimensions of every
    // device in context.
    let lim = |param| min_limit(c.platform, &reals, param);
    let too_big = match d.image_type {
        CL_MEM_OBJECT_IMAGE1D => w > lim(CL_DEVICE_IMAGE2D_MAX_WIDTH),
        CL_MEM_OBJECT_IMAGE1D_ARRAY => w > lim(CL_DEVICE_IMAGE2D_MAX_WIDTH) || arr > lim(CL_DEVICE_IMAGE_MAX_ARRAY_SIZE),
        CL_MEM_OBJECT_IMAGE2D => w > lim(CL_DEVICE_IMAGE2D_MAX_WIDTH) || h > lim(CL_DEVICE_IMAGE2D_MAX_HEIGHT),
        CL_MEM_OBJECT_IMAGE2D_ARRAY => {
            w > lim(CL_DEVICE_IMAGE2D_MAX_WIDTH) || h > lim(CL_DEVICE_IMAGE2D_MAX_HEIGHT) || arr > lim(CL_DEVICE_IMAGE_MAX_ARRAY_SIZE)
        }
        _ => w > lim(CL_DEVICE_IMAGE3D_MAX_WIDTH) || h > lim(CL_DEVICE_IMAGE3D_MAX_HEIGHT) || dep > lim(CL_DEVICE_IMAGE3D_MAX_DEPTH),
    };
    if too_big {
        return Err(CL_INVALID_IMAGE_SIZE);
    }
    let uses = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0;
    // CL_INVALID_HOST_PTR if host_ptr is NULL and CL_MEM_USE_HOST_PTR or CL_MEM_COPY_HOST_PTR
    // are set in flags or if host_ptr is not NULL but they are not set.
    if host_ptr.is_null() == uses {
        return Err(CL_INVALID_HOST_PTR);
    }
    // Pitches of the application's memory: image_row_pitch (image_slice_pitch for the
    // images of a 1-D array), image_slice_pitch.
    let packed_row = dims[0].checked_mul(pixel).ok_or(CL_INVALID_IMAGE_SIZE)?;
    let (row_in, slice_in) =
        if d.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY { (d.image_slice_pitch, 0) } else { (d.image_row_pitch, d.image_slice_pitch) };
    // CL_INVALID_IMAGE_DESCRIPTOR if [...] image_row_pitch is not 0 and host_ptr is NULL, or
    // is not 0 and is smaller than image_width * size of element in bytes or is not a
    // multiple of the element size (likewise image_slice_pitch).
    if host_ptr.is_null() && (d.image_row_pitch != 0 || d.image_slice_pitch != 0) {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let row = if row_in == 0 { packed_row } else { row_in };
    if row < packed_row || row % pixel != 0 {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let packed_slice = row.checked_mul(dims[1]).ok_or(CL_INVALID_IMAGE_SIZE)?;
    let slice_ = if slice_in == 0 || dims[2] == 1 { packed_slice } else { slice_in };
    if slice_ < packed_slice || slice_ % row != 0 {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    let size = slice_.checked_mul(dims[2]).ok_or(CL_INVALID_IMAGE_SIZE)?;
    let max = c.platform.real.iter().filter_map(|(_, d)| d.max_alloc_size()).min().unwrap_or(usize::MAX);
    if size > max {
        return Err(CL_INVALID_IMAGE_SIZE);
    }
    // CL_IMAGE_FORMAT_NOT_SUPPORTED if the image_format is not supported. The devices hold
    // the image as their own kernels' writes and reads need: READ_WRITE.
    let access = flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY);
    if !supported_formats(&c, access, d.image_type)?.contains(&format) {
        return Err(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    }
    let vendor = vendor_formats(&c, CL_MEM_READ_WRITE, d.image_type)?;
    let emulation = Emulation::of(&format, &vendor);
    // The home: the application's memory with its pitches, or a packed allocation of Weft's.
    let (base, owned, strides) = if flags & CL_MEM_USE_HOST_PTR != 0 {
        (host_ptr.cast::<u8>(), None, Strides { ldy: row, ldz: slice_ })
    } else {
        let a = HostAlloc::zeroed(packed_slice.checked_mul(dims[2]).ok_or(CL_INVALID_IMAGE_SIZE)?)?;
        if flags & CL_MEM_COPY_HOST_PTR != 0 {
            let src = Rect { origin: [0; 3], row, slice: slice_ };
            let dst = Rect { origin: [0; 3], row: packed_row, slice: packed_slice };
            // SAFETY: host_ptr holds the image with its pitches (clCreateImage's contract); the
            // allocation holds it packed.
            unsafe { copy_rect(host_ptr as usize, src, a.ptr as usize, dst, [packed_row, dims[1], dims[2]]) };
        }
        (a.ptr, Some(a), Strides { ldy: packed_row, ldz: packed_slice })
    };
    let (row, slice_) = (strides.ldy, strides.ldz);
    let shape = Shape::Block { nx: packed_row, ny: dims[1], nz: dims[2], elem: 1 };
    // SAFETY: `base` is valid for the shape with these strides until the handle is
    // unregistered (as for buffers, see memory.rs).
    let handle = unsafe { c.platform.rt.register_raw(base, shape, strides) }.map_err(|_| CL_OUT_OF_RESOURCES)?;
    let info = ImageInfo {
        kind: d.image_type,
        format,
        pixel,
        width: w,
        height: if matches!(d.image_type, CL_MEM_OBJECT_IMAGE1D | CL_MEM_OBJECT_IMAGE1D_ARRAY) { 0 } else { h },
        depth: if d.image_type == CL_MEM_OBJECT_IMAGE3D { dep } else { 0 },
        array_size: if matches!(d.image_type, CL_MEM_OBJECT_IMAGE1D_ARRAY | CL_MEM_OBJECT_IMAGE2D_ARRAY) { arr } else { 0 },
        dims,
        row,
        slice: slice_,
        emulation,
        vendor: (0..c.platform.real.len()).map(|_| Mutex::new(None)).collect(),
    };
    let host = if flags & CL_MEM_USE_HOST_PTR != 0 { host_ptr as usize } else { 0 };
    Ok(Mem::publish_new(c.clone(), flags, slice_ * dims[2], host, base as usize, handle, owned, Some(info)))
}

/// A 1-D image buffer: a view of a buffer's first `width` pixels, accessing the buffer's
/// data handle (as a sub-buffer does), so commands on either are ordered and coherent.
/// Where a kernel takes it, each device gets a vendor 1-D image buffer over a vendor buffer
/// of its own, filled from and copied back to the buffer's replica around the kernel (as
/// for other images). `flags` as given (access flags may be inherited from the buffer).
fn image_of_buffer(
    c: &Arc<super::icd::Obj<Context>>,
    flags: cl_bitfield,
    format: cl_image_format,
    pixel: usize,
    d: &cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    // CL_INVALID_IMAGE_DESCRIPTOR if [...] mem_object is not a valid buffer object.
    let buffer = icd::get::<Mem>(d.mem_object.cast()).map_err(|_| CL_INVALID_IMAGE_DESCRIPTOR)?;
    if buffer.image.is_some() || !Arc::ptr_eq(&buffer.context, c) {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // Weft makes images of whole buffers, not of sub-buffers (their offset would have to
    // reach every image command): listed in the README's coverage table.
    if buffer.parent.is_some() {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    // CL_INVALID_VALUE if an image is being created from another memory object (buffer or
    // image) and flags specifies CL_MEM_USE_HOST_PTR, CL_MEM_ALLOC_HOST_PTR or
    // CL_MEM_COPY_HOST_PTR; or if the buffer was created with CL_MEM_WRITE_ONLY and flags
    // specifies CL_MEM_READ_WRITE or CL_MEM_READ_ONLY, or it was created with
    // CL_MEM_READ_ONLY and flags specifies CL_MEM_READ_WRITE or CL_MEM_WRITE_ONLY.
    if flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0 || !host_ptr.is_null() {
        return Err(if host_ptr.is_null() { CL_INVALID_VALUE } else { CL_INVALID_HOST_PTR });
    }
    let access = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
    let given = flags & access;
    if (buffer.flags & CL_MEM_WRITE_ONLY != 0 && given & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY) != 0)
        || (buffer.flags & CL_MEM_READ_ONLY != 0 && given & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY) != 0)
    {
        return Err(CL_INVALID_VALUE);
    }
    let inherit = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;
    let flags = if given == 0 { flags | (buffer.flags & access) } else { flags } | (buffer.flags & inherit);
    let flags = if flags & access == 0 { flags | CL_MEM_READ_WRITE } else { flags };
    let w = d.image_width;
    let reals = c.platform.reals_of(&c.devices);
    // CL_INVALID_IMAGE_SIZE if image_width exceeds CL_DEVICE_IMAGE_MAX_BUFFER_SIZE of every
    // device, or its pixels exceed the buffer.
    let bytes = w.checked_mul(pixel).ok_or(CL_INVALID_IMAGE_SIZE)?;
    if w == 0 {
        return Err(CL_INVALID_IMAGE_DESCRIPTOR);
    }
    if w > min_limit(c.platform, &reals, CL_DEVICE_IMAGE_MAX_BUFFER_SIZE) || bytes > buffer.size {
        return Err(CL_INVALID_IMAGE_SIZE);
    }
    // CL_IMAGE_FORMAT_NOT_SUPPORTED: a vendor format for 1-D image buffers.
    if !vendor_formats(c, flags & access, CL_MEM_OBJECT_IMAGE1D_BUFFER)?.contains(&format) {
        return Err(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    }
    let info = ImageInfo {
        kind: CL_MEM_OBJECT_IMAGE1D_BUFFER,
        format,
        pixel,
        width: w,
        height: 0,
        depth: 0,
        array_size: 0,
        dims: [w, 1, 1],
        row: bytes,
        slice: bytes,
        emulation: None,
        vendor: (0..c.platform.real.len()).map(|_| Mutex::new(None)).collect(),
    };
    Ok(Mem::publish_view(&buffer, flags, bytes, 0, Some(info)))
}

/// # Safety
/// As clCreateImage; `properties` null or a 0-terminated list.
#[cl_entrypoint(clCreateImageWithProperties)]
unsafe fn create_image_with_properties(
    context: Handle,
    properties: *const u64,
    flags: cl_bitfield,
    format: *const cl_image_format,
    desc: *const cl_image_desc,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    // SAFETY: the caller's contract: `properties` null or a 0-terminated list.
    let props = unsafe { super::memory::no_properties(properties) }?;
    // SAFETY: the caller's contract (clCreateImage's).
    super::memory::set_properties(unsafe { create_image(context, flags, format, desc, host_ptr) }?, props)
}

fn desc_of(kind: cl_uint, w: usize, h: usize, d: usize, row: usize, slice_: usize) -> cl_image_desc {
    cl_image_desc {
        image_type: kind,
        image_width: w,
        image_height: h,
        image_depth: d,
        image_array_size: 0,
        image_row_pitch: row,
        image_slice_pitch: slice_,
        num_mip_levels: 0,
        num_samples: 0,
        mem_object: std::ptr::null_mut(),
    }
}

/// # Safety
/// As clCreateImage.
#[cl_entrypoint(clCreateImage2D)]
unsafe fn create_image_2d(
    context: Handle,
    flags: cl_bitfield,
    format: *const cl_image_format,
    w: usize,
    h: usize,
    row: usize,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    let d = desc_of(CL_MEM_OBJECT_IMAGE2D, w, h, 0, row, 0);
    icd::get::<Context>(context)?;
    // CL_INVALID_IMAGE_SIZE if image_width or image_height are 0.
    if w == 0 || h == 0 {
        return Err(CL_INVALID_IMAGE_SIZE);
    }
    // SAFETY: the caller's contract (clCreateImage's).
    unsafe { create_image(context, flags, format, &d, host_ptr) }
}

/// # Safety
/// As clCreateImage.
#[cl_entrypoint(clCreateImage3D)]
unsafe fn create_image_3d(
    context: Handle,
    flags: cl_bitfield,
    format: *const cl_image_format,
    w: usize,
    h: usize,
    depth: usize,
    row: usize,
    slice_: usize,
    host_ptr: *mut c_void,
) -> ClResult<Handle> {
    let d = desc_of(CL_MEM_OBJECT_IMAGE3D, w, h, depth, row, slice_);
    icd::get::<Context>(context)?;
    // CL_INVALID_IMAGE_SIZE if image_width, image_height are 0 or if image_depth <= 1.
    if w == 0 || h == 0 || depth <= 1 {
        return Err(CL_INVALID_IMAGE_SIZE);
    }
    // SAFETY: the caller's contract (clCreateImage's).
    unsafe { create_image(context, flags, format, &d, host_ptr) }
}

#[cl_entrypoint(clGetImageInfo)]
fn get_image_info(image: Handle, param: cl_uint) -> ClResult<Info> {
    let m = icd::get::<Mem>(image)?;
    // CL_INVALID_MEM_OBJECT if image is not a valid image object.
    let i = m.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
    let bytes = match param {
        CL_IMAGE_FORMAT => super::info_vals(&[i.format.image_channel_order, i.format.image_channel_data_type]),
        CL_IMAGE_ELEMENT_SIZE => info_val(i.pixel),
        CL_IMAGE_ROW_PITCH => info_val(i.row),
        CL_IMAGE_SLICE_PITCH => info_val(i.slice_pitch()),
        CL_IMAGE_WIDTH => info_val(i.width),
        CL_IMAGE_HEIGHT => info_val(i.height),
        CL_IMAGE_DEPTH => info_val(i.depth),
        CL_IMAGE_ARRAY_SIZE => info_val(i.array_size),
        CL_IMAGE_BUFFER => info_ptr(m.parent.as_ref().map_or(std::ptr::null(), |p| icd::handle_of(p).cast_const())),
        CL_IMAGE_NUM_MIP_LEVELS | CL_IMAGE_NUM_SAMPLES => info_val(0 as cl_uint),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

/// An image argument of a command on `q`: live, of `q`'s context, an image.
fn image_of(q: &Queue, h: Handle) -> ClResult<Arc<super::icd::Obj<Mem>>> {
    let m = super::queue::mem_of(q, h)?;
    // CL_INVALID_MEM_OBJECT if image is not a valid image object.
    if m.image.is_none() {
        return Err(CL_INVALID_MEM_OBJECT);
    }
    Ok(m)
}

/// Three `size_t`s (origin or region).
///
/// # Safety
/// `p` null or readable for 3 elements.
unsafe fn triple(p: *const usize) -> ClResult<[usize; 3]> {
    // CL_INVALID_VALUE if origin or region is NULL.
    // SAFETY: the caller's contract.
    let s = unsafe { slice(p, 3) }?;
    Ok([s[0], s[1], s[2]])
}

/// Check that `origin`/`region` (pixels) lie within `i`, and return the home rectangle
/// and the region in bytes.
fn image_box(i: &ImageInfo, origin: [usize; 3], region: [usize; 3]) -> ClResult<(Rect, [usize; 3])> {
    // CL_INVALID_VALUE if the region being read or written specified by origin and region is
    // out of bounds [or] if image is a 2D image object and origin[2] is not equal to 0 or
    // region[2] is not equal to 1 [likewise 1-D images and arrays], or any region value is 0.
    let ok_dims = match i.kind {
        CL_MEM_OBJECT_IMAGE1D => origin[1] == 0 && origin[2] == 0 && region[1] == 1 && region[2] == 1,
        CL_MEM_OBJECT_IMAGE2D | CL_MEM_OBJECT_IMAGE1D_ARRAY => origin[2] == 0 && region[2] == 1,
        _ => true,
    };
    if !ok_dims || region.contains(&0) || (0..3).any(|k| origin[k].checked_add(region[k]).is_none_or(|e| e > i.dims[k])) {
        return Err(CL_INVALID_VALUE);
    }
    Ok((
        Rect { origin: [origin[0] * i.pixel, origin[1], origin[2]], row: i.row, slice: i.slice },
        [region[0] * i.pixel, region[1], region[2]],
    ))
}

/// The application's side of a read/write: pitches defaulted and checked.
fn host_rect(i: &ImageInfo, bytes: [usize; 3], row: usize, slice_: usize) -> ClResult<Rect> {
    // For a 1-D image array, slice_pitch is the pitch between its images (rows here).
    let (row, slice_) = if i.kind == CL_MEM_OBJECT_IMAGE1D_ARRAY { (slice_, 0) } else { (row, slice_) };
    let row = if row == 0 { bytes[0] } else { row };
    let min_slice = row.checked_mul(bytes[1]).ok_or(CL_INVALID_VALUE)?;
    let slice_ = if slice_ == 0 { min_slice } else { slice_ };
    // CL_INVALID_VALUE if [...] row_pitch is not 0 and is less than the region's row, or
    // slice_pitch is less than row_pitch * height.
    if row < bytes[0] || slice_ < min_slice {
        return Err(CL_INVALID_VALUE);
    }
    Ok(Rect { origin: [0; 3], row, slice: slice_ })
}

/// Shared body of clEnqueueReadImage and clEnqueueWriteImage.
///
/// # Safety
/// OpenCL's contract for those calls.
#[allow(clippy::too_many_arguments)]
unsafe fn read_write(
    cmd: Cmd,
    image: Handle,
    blocking: cl_bool,
    origin: *const usize,
    region: *const usize,
    row: usize,
    slice_: usize,
    ptr: usize,
    write: bool,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let m = image_of(&qq, image)?;
        let i = m.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
        let (o, r) = (triple(origin)?, triple(region)?);
        let (img, bytes) = image_box(i, o, r)?;
        let host = host_rect(i, bytes, row, slice_)?;
        if ptr == 0 {
            return Err(CL_INVALID_VALUE);
        }
        // CL_INVALID_OPERATION if clEnqueueReadImage is called on image which has been created
        // with CL_MEM_HOST_WRITE_ONLY or CL_MEM_HOST_NO_ACCESS (and the converse for writes).
        let forbidden = if write { CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS } else { CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS };
        if m.flags & forbidden != 0 {
            return Err(CL_INVALID_OPERATION);
        }
        let state = EventState::new_queued();
        let name = if write { "clEnqueueWriteImage" } else { "clEnqueueReadImage" };
        let c = host_codelet(name, &state, move |a| {
            // SAFETY: the image rectangle lies within the home (checked); the application's within
            // its memory (its contract).
            if write { copy_rect(ptr, host, a[0], img, bytes) } else { copy_rect(a[0], img, ptr, host, bytes) }
        });
        // (An image of a buffer is a view: writing all of it is not writing the buffer.)
        let whole = o == [0; 3] && r == i.dims && m.parent.is_none();
        let mode = if !write {
            AccessMode::R
        } else if whole {
            AccessMode::W
        } else {
            AccessMode::RW
        };
        let tb = TaskBuilder::new(&c).access(m.handle(), mode);
        let cmd = if write { CL_COMMAND_WRITE_IMAGE } else { CL_COMMAND_READ_IMAGE };
        finish_command(&qq, &waits, cmd, state, tb, is_true(blocking), event)
    }
}

/// clEnqueueReadImage and clEnqueueWriteImage: one signature, `ptr` written or read.
macro_rules! read_write_image {
    ($($cl:ident => $f:ident($ptr:ty, $write:expr);)*) => {$(
        /// # Safety
        #[doc = concat!("OpenCL's contract for ", stringify!($cl), ".")]
        #[cl_entrypoint($cl)]
        unsafe fn $f(
            cmd: Cmd,
            image: Handle,
            blocking: cl_bool,
            origin: *const usize,
            region: *const usize,
            row: usize,
            slice_: usize,
            ptr: $ptr,
        ) -> ClResult<()> {
            // SAFETY: forwarded contract.
            unsafe { read_write(cmd, image, blocking, origin, region, row, slice_, ptr as usize, $write) }
        }
    )*};
}

read_write_image! {
    clEnqueueReadImage => enqueue_read_image(*mut c_void, false);
    clEnqueueWriteImage => enqueue_write_image(*const c_void, true);
}

/// Submit a copy between two memory objects' homes (`same`: one handle, accessed `RW`).
///
/// # Safety
/// Both rectangles lie within their homes; `event` null or writable.
#[allow(clippy::too_many_arguments)]
unsafe fn copy_between(
    qq: &Arc<super::icd::Obj<Queue>>,
    waits: &[Arc<super::icd::Obj<super::event::Event>>],
    src: &Arc<super::icd::Obj<Mem>>,
    s: Rect,
    dst: &Arc<super::icd::Obj<Mem>>,
    d: Rect,
    bytes: [usize; 3],
    name: &'static str,
    cmd: cl_uint,
    event: *mut Handle,
) -> ClResult<()> {
    let same = Arc::ptr_eq(&super::memory::root(src), &super::memory::root(dst));
    let state = EventState::new_queued();
    let c = host_codelet(name, &state, move |a| {
        let (from, to) = if same { (a[0], a[0]) } else { (a[0], a[1]) };
        // SAFETY: both rectangles lie within their homes (the caller's contract).
        unsafe { copy_rect(from, s, to, d, bytes) }
    });
    let tb = if same {
        TaskBuilder::new(&c).access(src.handle(), AccessMode::RW)
    } else {
        TaskBuilder::new(&c).access(src.handle(), AccessMode::R).access(dst.handle(), AccessMode::RW)
    };
    // SAFETY: the caller's contract.
    unsafe { finish_command(qq, waits, cmd, state, tb, false, event) }
}

/// # Safety
/// OpenCL's contract for clEnqueueCopyImage.
#[cl_entrypoint(clEnqueueCopyImage)]
unsafe fn enqueue_copy_image(
    cmd: Cmd,
    src: Handle,
    dst: Handle,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let (s, d) = (image_of(&qq, src)?, image_of(&qq, dst)?);
        let (si, di) = (s.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?, d.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?);
        // CL_IMAGE_FORMAT_MISMATCH if src_image and dst_image do not use the same image format.
        if si.format != di.format {
            return Err(CL_IMAGE_FORMAT_MISMATCH);
        }
        let r = triple(region)?;
        let (so, do_) = (triple(src_origin)?, triple(dst_origin)?);
        let (sr, bytes) = image_box(si, so, r)?;
        let (dr, _) = image_box(di, do_, r)?;
        // CL_MEM_COPY_OVERLAP if src_image and dst_image are the same image object and the
        // source and destination regions overlap.
        if Arc::ptr_eq(&s, &d) && (0..3).all(|k| so[k] < do_[k] + r[k] && do_[k] < so[k] + r[k]) {
            return Err(CL_MEM_COPY_OVERLAP);
        }
        copy_between(&qq, &waits, &s, sr, &d, dr, bytes, "clEnqueueCopyImage", CL_COMMAND_COPY_IMAGE, event)
    }
}

/// The buffer side of an image<->buffer copy: `bytes` packed at `offset` in `m`.
/// CL_INVALID_VALUE if the region's bytes at `offset` run past the buffer's end.
fn packed_in_buffer(m: &Mem, offset: usize, bytes: [usize; 3]) -> ClResult<Rect> {
    check_range(offset, bytes[0] * bytes[1] * bytes[2], m.size)?;
    Ok(Rect { origin: [offset + m.offset, 0, 0], row: bytes[0], slice: bytes[0] * bytes[1] })
}

/// # Safety
/// OpenCL's contract for clEnqueueCopyImageToBuffer.
#[cl_entrypoint(clEnqueueCopyImageToBuffer)]
unsafe fn enqueue_copy_image_to_buffer(
    cmd: Cmd,
    src: Handle,
    dst: Handle,
    src_origin: *const usize,
    region: *const usize,
    dst_offset: usize,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let (s, d) = (image_of(&qq, src)?, buffer_of(&qq, dst)?);
        let si = s.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
        let (sr, bytes) = image_box(si, triple(src_origin)?, triple(region)?)?;
        let dr = packed_in_buffer(&d, dst_offset, bytes)?;
        copy_between(&qq, &waits, &s, sr, &d, dr, bytes, "clEnqueueCopyImageToBuffer", CL_COMMAND_COPY_IMAGE_TO_BUFFER, event)
    }
}

/// # Safety
/// OpenCL's contract for clEnqueueCopyBufferToImage.
#[cl_entrypoint(clEnqueueCopyBufferToImage)]
unsafe fn enqueue_copy_buffer_to_image(
    cmd: Cmd,
    src: Handle,
    dst: Handle,
    src_offset: usize,
    dst_origin: *const usize,
    region: *const usize,
) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let (s, d) = (buffer_of(&qq, src)?, image_of(&qq, dst)?);
        let di = d.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
        let (dr, bytes) = image_box(di, triple(dst_origin)?, triple(region)?)?;
        let sr = packed_in_buffer(&s, src_offset, bytes)?;
        copy_between(&qq, &waits, &s, sr, &d, dr, bytes, "clEnqueueCopyBufferToImage", CL_COMMAND_COPY_BUFFER_TO_IMAGE, event)
    }
}

/// An `f32` as IEEE half precision (round to nearest, ties away; overflow to infinity).
fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = (man | 0x80_0000) >> (1 - e);
        return sign | ((m + 0x1000) >> 13) as u16;
    }
    let h = ((e as u32) << 10) | (man >> 13);
    let round = (man >> 12) & 1;
    sign | (h + round) as u16
}

/// The bytes of one pixel of format `f` filled with `color` (`float4`, `int4` or `uint4` as
/// the channel type requires, in R, G, B, A order).
pub fn fill_pixel(f: &cl_image_format, color: [u8; 16]) -> Option<Vec<u8>> {
    let word = |k: usize| u32::from_ne_bytes([color[4 * k], color[4 * k + 1], color[4 * k + 2], color[4 * k + 3]]);
    let fl = |k: usize| f32::from_bits(word(k));
    let comps: &[usize] = match f.image_channel_order {
        CL_R | CL_INTENSITY | CL_LUMINANCE => &[0],
        CL_A => &[3],
        CL_RG => &[0, 1],
        CL_RA => &[0, 3],
        CL_RGB => &[0, 1, 2],
        CL_RGBA => &[0, 1, 2, 3],
        CL_BGRA => &[2, 1, 0, 3],
        CL_ARGB => &[3, 0, 1, 2],
        CL_ABGR => &[3, 2, 1, 0],
        _ => return None,
    };
    let unorm = |k: usize, max: f32| (fl(k).clamp(0.0, 1.0) * max).round() as u32;
    let snorm = |k: usize, max: f32| (fl(k).clamp(-1.0, 1.0) * max).round() as i32;
    let sint = |k: usize, lo: i32, hi: i32| (word(k) as i32).clamp(lo, hi);
    let uint = |k: usize, hi: u32| word(k).min(hi);
    let mut out = Vec::new();
    match f.image_channel_data_type {
        CL_UNORM_SHORT_565 => out.extend_from_slice(&((unorm(0, 31.0) << 11 | unorm(1, 63.0) << 5 | unorm(2, 31.0)) as u16).to_ne_bytes()),
        CL_UNORM_SHORT_555 => out.extend_from_slice(&((unorm(0, 31.0) << 10 | unorm(1, 31.0) << 5 | unorm(2, 31.0)) as u16).to_ne_bytes()),
        CL_UNORM_INT_101010 => out.extend_from_slice(&(unorm(0, 1023.0) << 20 | unorm(1, 1023.0) << 10 | unorm(2, 1023.0)).to_ne_bytes()),
        t => {
            for &k in comps {
                match t {
                    CL_UNORM_INT8 => out.push(unorm(k, 255.0) as u8),
                    CL_UNORM_INT16 => out.extend_from_slice(&(unorm(k, 65535.0) as u16).to_ne_bytes()),
                    CL_SNORM_INT8 => out.push(snorm(k, 127.0) as i8 as u8),
                    CL_SNORM_INT16 => out.extend_from_slice(&(snorm(k, 32767.0) as i16).to_ne_bytes()),
                    CL_SIGNED_INT8 => out.push(sint(k, -128, 127) as i8 as u8),
                    CL_SIGNED_INT16 => out.extend_from_slice(&(sint(k, -32768, 32767) as i16).to_ne_bytes()),
                    CL_SIGNED_INT32 => out.extend_from_slice(&word(k).to_ne_bytes()),
                    CL_UNSIGNED_INT8 => out.push(uint(k, 255) as u8),
                    CL_UNSIGNED_INT16 => out.extend_from_slice(&(uint(k, 65535) as u16).to_ne_bytes()),
                    CL_UNSIGNED_INT32 => out.extend_from_slice(&word(k).to_ne_bytes()),
                    CL_HALF_FLOAT => out.extend_from_slice(&f32_to_f16(fl(k)).to_ne_bytes()),
                    CL_FLOAT => out.extend_from_slice(&word(k).to_ne_bytes()),
                    _ => return None,
                }
            }
        }
    }
    Some(out)
}

/// # Safety
/// OpenCL's contract for clEnqueueFillImage.
#[cl_entrypoint(clEnqueueFillImage)]
unsafe fn enqueue_fill_image(cmd: Cmd, image: Handle, color: *const c_void, origin: *const usize, region: *const usize) -> ClResult<()> {
    // SAFETY: the caller's contract (all pointer arguments).
    unsafe {
        let Cmd { q: qq, waits, event } = cmd;
        let m = image_of(&qq, image)?;
        let i = m.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
        // CL_INVALID_VALUE if fill_color is NULL.
        let color: [u8; 16] = slice(color.cast::<u8>(), 16)?.try_into().map_err(|_| CL_INVALID_VALUE)?;
        let pixel = fill_pixel(&i.format, color).ok_or(CL_INVALID_VALUE)?;
        let (o, r) = (triple(origin)?, triple(region)?);
        let (img, bytes) = image_box(i, o, r)?;
        let state = EventState::new_queued();
        let c = host_codelet("clEnqueueFillImage", &state, move |a| {
            let base = a[0] + img.offset().unwrap_or(0);
            for z in 0..bytes[2] {
                for y in 0..bytes[1] {
                    let row = base + z * img.slice + y * img.row;
                    for x in (0..bytes[0]).step_by(pixel.len()) {
                        // SAFETY: the rectangle lies within the home (checked by image_box).
                        std::ptr::copy_nonoverlapping(pixel.as_ptr(), (row + x) as *mut u8, pixel.len());
                    }
                }
            }
        });
        let mode = if o == [0; 3] && r == i.dims && m.parent.is_none() { AccessMode::W } else { AccessMode::RW };
        let tb = TaskBuilder::new(&c).access(m.handle(), mode);
        finish_command(&qq, &waits, CL_COMMAND_FILL_IMAGE, state, tb, false, event)
    }
}

/// # Safety
/// OpenCL's contract for clEnqueueMapImage.
#[cl_entrypoint(clEnqueueMapImage)]
unsafe fn enqueue_map_image(
    cmd: Cmd,
    image: Handle,
    blocking: cl_bool,
    flags: cl_bitfield,
    origin: *const usize,
    region: *const usize,
    row_pitch: *mut usize,
    slice_pitch: *mut usize,
) -> ClResult<*mut c_void> {
    // SAFETY: the caller's contract: `list` readable for `n` events.
    let Cmd { q: qq, waits, event } = cmd;
    let m = image_of(&qq, image)?;
    super::memory::host_map(&m, flags)?;
    let i = m.image.as_ref().ok_or(CL_INVALID_MEM_OBJECT)?;
    // SAFETY: the caller's contract: `origin` and `region` null or three values each.
    let (img, bytes) = image_box(i, unsafe { triple(origin) }?, unsafe { triple(region) }?)?;
    // CL_INVALID_VALUE if image_row_pitch is NULL [or] image is a 3D image, 1D or 2D
    // image array object and image_slice_pitch is NULL [or] map_flags are not valid.
    if row_pitch.is_null()
        || (i.slice_pitch() != 0 && slice_pitch.is_null())
        || flags & !(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0
        || (flags & CL_MAP_WRITE_INVALIDATE_REGION != 0 && flags & (CL_MAP_READ | CL_MAP_WRITE) != 0)
    {
        return Err(CL_INVALID_VALUE);
    }
    let state = EventState::new_queued();
    let c = host_codelet("clEnqueueMapImage", &state, |_| {});
    let mode = if flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 { AccessMode::RW } else { AccessMode::R };
    let tb = TaskBuilder::new(&c).access(m.handle(), mode);
    let ptr = m.base + img.offset().ok_or(CL_INVALID_VALUE)?;
    let len = img.end(bytes).ok_or(CL_INVALID_VALUE)? - img.offset().unwrap_or(0);
    // SAFETY: the caller's contract; checked not null above.
    unsafe { row_pitch.write_unaligned(i.row) };
    if !slice_pitch.is_null() {
        // SAFETY: the caller's contract.
        unsafe { slice_pitch.write_unaligned(i.slice_pitch()) };
    }
    m.map_count.fetch_add(1, Ordering::Relaxed);
    m.maps.lock().unwrap_or_else(|e| e.into_inner()).push((ptr, len));
    // SAFETY: the caller's contract: `event` null or writable.
    unsafe { finish_command(&qq, &waits, CL_COMMAND_MAP_IMAGE, state, tb, is_true(blocking), event) }?;
    Ok(ptr as *mut c_void)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_sizes_follow_the_format_table() {
        let f = |o, t| cl_image_format { image_channel_order: o, image_channel_data_type: t };
        assert_eq!(pixel_size(&f(CL_RGBA, CL_FLOAT)), Some(16));
        assert_eq!(pixel_size(&f(CL_R, CL_UNORM_INT8)), Some(1));
        assert_eq!(pixel_size(&f(CL_RG, CL_HALF_FLOAT)), Some(4));
        assert_eq!(pixel_size(&f(CL_RGB, CL_UNORM_SHORT_565)), Some(2));
        assert_eq!(pixel_size(&f(CL_RGB, CL_FLOAT)), None);
        assert_eq!(pixel_size(&f(CL_RGBA, CL_UNORM_SHORT_565)), None);
        assert_eq!(pixel_size(&f(0, CL_FLOAT)), None);
    }

    #[test]
    fn two_channel_formats_are_emulated_with_four_channels() {
        let f = |o, t| cl_image_format { image_channel_order: o, image_channel_data_type: t };
        let vendor = [f(CL_RGBA, CL_FLOAT), f(CL_RGBA, CL_UNORM_INT8), f(CL_R, CL_FLOAT)];
        let e = Emulation::of(&f(CL_RG, CL_FLOAT), &vendor).expect("RG float is emulated");
        assert_eq!((e.narrow, e.wide), (8, 16));
        assert_eq!(e.tail, u64::from_le_bytes([0, 0, 0, 0, 0, 0, 0x80, 0x3f]));
        let e = Emulation::of(&f(CL_RG, CL_UNORM_INT8), &vendor).expect("RG unorm8 is emulated");
        assert_eq!((e.narrow, e.wide, e.tail), (2, 4, 0xff00));
        assert_eq!(Emulation::of(&f(CL_RG, CL_HALF_FLOAT), &vendor), None);
        assert_eq!(Emulation::of(&f(CL_R, CL_FLOAT), &vendor), None);
        let listed = with_emulated(vendor.to_vec());
        assert!(listed.contains(&f(CL_RG, CL_FLOAT)) && !listed.contains(&f(CL_RG, CL_HALF_FLOAT)));
    }

    #[test]
    fn fill_colors_convert_per_channel_type() {
        let mut c = [0u8; 16];
        for (k, v) in [1.0f32, 0.5, 0.0, 1.0].iter().enumerate() {
            c[4 * k..4 * k + 4].copy_from_slice(&v.to_ne_bytes());
        }
        let f = |o, t| cl_image_format { image_channel_order: o, image_channel_data_type: t };
        assert_eq!(fill_pixel(&f(CL_RGBA, CL_UNORM_INT8), c), Some(vec![255, 128, 0, 255]));
        assert_eq!(fill_pixel(&f(CL_BGRA, CL_UNORM_INT8), c), Some(vec![0, 128, 255, 255]));
        assert_eq!(fill_pixel(&f(CL_R, CL_HALF_FLOAT), c), Some(0x3c00u16.to_ne_bytes().to_vec()));
        assert_eq!(f32_to_f16(0.5), 0x3800);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
    }
}
