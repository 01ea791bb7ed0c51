//! Samplers: a Weft sampler holds its three settings; the vendor sampler standing for it on
//! a real device is made in that device's context at the first launch there that takes it
//! (`kernel.rs`), and kept.
//!
//! **Owns**: `clCreateSampler(WithProperties)`, retain/release, `clGetSamplerInfo`, and the
//! vendor samplers. **Does not own**: setting them as kernel arguments (`kernel.rs`).

use super::cl::*;
use super::context::Context;
use super::icd::{self, Obj, new_obj, publish};
use super::{ClResult, Info, cl_entrypoint, entry::retain_release, info_ptr, info_val, info_vals, is_true};
use std::sync::{Arc, Mutex};
use weft_vendors::opencl::result as vr;
use weft_vendors::opencl::{OpenClDevice, Sampler as VendorSampler};

pub struct Sampler {
    pub context: Arc<Obj<Context>>,
    pub normalized: bool,
    pub addressing: cl_uint,
    pub filter: cl_uint,
    /// The properties as given to `clCreateSamplerWithProperties` (for `CL_SAMPLER_PROPERTIES`).
    pub properties: Vec<u64>,
    vendor: Vec<Mutex<Option<VendorSampler>>>,
}
crate::cl_object!(Sampler, CL_INVALID_SAMPLER);

impl Sampler {
    /// The vendor sampler standing for this one on real device `i` (`dev`), made on first
    /// use; the raw handle stays valid while `self` lives.
    pub fn vendor_sampler(&self, i: usize, dev: &OpenClDevice) -> Result<usize, String> {
        let slot = self.vendor.get(i).ok_or("no such device")?;
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slot.as_ref() {
            return Ok(s.as_raw() as usize);
        }
        // SAFETY: the device's context is live.
        let raw = unsafe { vr::create_sampler(dev.context().as_raw(), self.normalized, self.addressing, self.filter) }
            .map_err(|e| format!("clCreateSampler: {e}"))?;
        // SAFETY: a new sampler whose one reference we own.
        *slot = Some(unsafe { VendorSampler::from_raw(raw) });
        Ok(raw as usize)
    }
}

fn create(context: Handle, normalized: bool, addressing: cl_uint, filter: cl_uint, properties: Vec<u64>) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    // CL_INVALID_VALUE if addressing_mode, filter_mode, normalized_coords or a combination of
    // these arguments are not valid.
    if !(CL_ADDRESS_NONE..=CL_ADDRESS_MIRRORED_REPEAT).contains(&addressing) || !matches!(filter, CL_FILTER_NEAREST | CL_FILTER_LINEAR) {
        return Err(CL_INVALID_VALUE);
    }
    // CL_ADDRESS_REPEAT and CL_ADDRESS_MIRRORED_REPEAT need normalized coordinates.
    if !normalized && addressing >= CL_ADDRESS_NONE + 3 {
        return Err(CL_INVALID_VALUE);
    }
    // CL_INVALID_OPERATION if images are not supported by any device associated with context.
    if !super::image::all_support_images(c.platform, &c.platform.reals_of(&c.devices)) {
        return Err(CL_INVALID_OPERATION);
    }
    let vendor = (0..c.platform.real.len()).map(|_| Mutex::new(None)).collect();
    let s = new_obj(Sampler { context: c.clone(), normalized, addressing, filter, properties, vendor });
    Ok(publish(&s))
}

#[cl_entrypoint(clCreateSampler)]
fn create_sampler(context: Handle, normalized: cl_bool, addressing: cl_uint, filter: cl_uint) -> ClResult<Handle> {
    create(context, is_true(normalized), addressing, filter, Vec::new())
}

/// # Safety
/// `properties` null or a 0-terminated list of (name, value) pairs; `errcode_ret` null or writable.
#[cl_entrypoint(clCreateSamplerWithProperties)]
unsafe fn create_sampler_with_properties(context: Handle, properties: *const u64) -> ClResult<Handle> {
    let (mut normalized, mut addressing, mut filter) = (true, CL_ADDRESS_NONE + 2, CL_FILTER_NEAREST);
    let mut list = Vec::new();
    let mut seen = Vec::new();
    let mut i = 0;
    while !properties.is_null() {
        // SAFETY: the caller's contract (0-terminated pairs).
        let key = unsafe { properties.add(i).read_unaligned() };
        if key == 0 {
            list.push(0);
            break;
        }
        // SAFETY: as above: a key other than 0 has its value.
        let value = unsafe { properties.add(i + 1).read_unaligned() };
        // CL_INVALID_VALUE if the same property name is specified more than once.
        if seen.contains(&key) || i > 16 {
            return Err(CL_INVALID_VALUE);
        }
        seen.push(key);
        match key as cl_uint {
            CL_SAMPLER_NORMALIZED_COORDS => normalized = value != 0,
            CL_SAMPLER_ADDRESSING_MODE => addressing = value as cl_uint,
            CL_SAMPLER_FILTER_MODE => filter = value as cl_uint,
            // CL_INVALID_VALUE if the property name in sampler_properties is not a
            // supported property name.
            _ => return Err(CL_INVALID_VALUE),
        }
        list.extend([key, value]);
        i += 2;
    }
    create(context, normalized, addressing, filter, list)
}

retain_release!(Sampler, clRetainSampler => retain_sampler, clReleaseSampler => release_sampler);

#[cl_entrypoint(clGetSamplerInfo)]
fn get_sampler_info(sm: Arc<Obj<Sampler>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_SAMPLER_REFERENCE_COUNT => info_val(icd::refcount_of(&sm)),
        CL_SAMPLER_CONTEXT => info_ptr(icd::handle_of(&sm.context)),
        CL_SAMPLER_NORMALIZED_COORDS => info_val(sm.normalized as cl_bool),
        CL_SAMPLER_ADDRESSING_MODE => info_val(sm.addressing),
        CL_SAMPLER_FILTER_MODE => info_val(sm.filter),
        CL_SAMPLER_PROPERTIES => info_vals(&sm.properties),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}
