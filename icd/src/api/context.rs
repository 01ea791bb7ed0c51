//! Contexts: a set of Weft devices. Buffers are core data handles, valid on every device,
//! so a context holds no device memory of its own.

use super::cl::*;
use super::icd::{self, Obj, new_obj, publish};
use super::platform::{DeviceKind, Platform, check_platform, device_list, platform};
use super::{ClResult, Info, cl_entrypoint, entry::retain_release, info_ptr, info_val, info_vals};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub type ContextNotify = unsafe extern "C" fn(*const c_char, *const c_void, usize, *mut c_void);
/// `clSetContextDestructorCallback`'s callback: the (dead) context handle and user data.
pub type ContextDestructor = unsafe extern "C" fn(Handle, *mut c_void);

pub struct Context {
    pub platform: &'static Arc<Obj<Platform>>,
    pub devices: Vec<DeviceKind>,
    pub properties: Vec<isize>,
    /// Destructor callbacks, called in reverse order once the context is freed (its last
    /// API reference is released and no object made from it is left).
    destructors: Mutex<Vec<(ContextDestructor, usize)>>,
    /// The handle the application knew, for those callbacks.
    raw: AtomicUsize,
}
crate::cl_object!(Context, CL_INVALID_CONTEXT);

impl Drop for Context {
    fn drop(&mut self) {
        let destructors = std::mem::take(&mut *self.destructors.lock().unwrap_or_else(|e| e.into_inner()));
        if destructors.is_empty() {
            return;
        }
        let raw = self.raw.load(Ordering::Relaxed);
        let call = move || super::memory::call_destructors(destructors, raw);
        // The last reference may go on one of Weft's workers (a finished command's event):
        // the application's code runs on a thread of its own, as buffers' destructors do.
        if std::thread::Builder::new().name("weft-cl-release".into()).spawn(call).is_err() {
            eprintln!("weft: could not start a thread for a context's destructor callbacks; they are not called");
        }
    }
}

impl Context {
    pub fn has(&self, k: DeviceKind) -> bool {
        self.devices.contains(&k)
    }
}

/// Parse a 0-terminated property list; only `CL_CONTEXT_PLATFORM` (Weft's) and
/// `CL_CONTEXT_INTEROP_USER_SYNC` are known.
///
/// # Safety
/// `props` is null or a 0-terminated list of pairs.
unsafe fn properties(props: *const isize) -> ClResult<Vec<isize>> {
    let mut out = Vec::new();
    if props.is_null() {
        return Ok(out);
    }
    let mut i = 0;
    loop {
        // SAFETY: the caller's contract: read up to the terminating 0.
        let key = unsafe { props.add(i).read_unaligned() };
        if key == 0 {
            break;
        }
        // SAFETY: as above: a key is followed by its value.
        let value = unsafe { props.add(i + 1).read_unaligned() };
        match key {
            // CL_INVALID_PLATFORM if [the] platform value specified in properties is not a valid platform.
            CL_CONTEXT_PLATFORM => {
                check_platform(value as Handle)?;
                if value == 0 {
                    return Err(CL_INVALID_PLATFORM);
                }
            }
            CL_CONTEXT_INTEROP_USER_SYNC => {}
            // CL_INVALID_PROPERTY if context property name in properties is not a supported property name
            _ => return Err(CL_INVALID_PROPERTY),
        }
        // CL_INVALID_PROPERTY if [...] the same property name is specified more than once.
        if out.chunks(2).any(|c| c[0] == key) {
            return Err(CL_INVALID_PROPERTY);
        }
        out.extend([key, value]);
        i += 2;
        if i > 64 {
            return Err(CL_INVALID_PROPERTY);
        }
    }
    out.push(0);
    Ok(out)
}

fn create(props: Vec<isize>, devices: Vec<DeviceKind>) -> ClResult<Handle> {
    let platform = platform().map_err(|_| CL_INVALID_PLATFORM)?;
    let c = new_obj(Context { platform, devices, properties: props, destructors: Mutex::new(Vec::new()), raw: AtomicUsize::new(0) });
    let h = publish(&c);
    c.raw.store(h as usize, Ordering::Relaxed);
    Ok(h)
}

/// What clCreateContext and clCreateContextFromType check first, in this order: the
/// callback/user-data pair, the properties, the platform.
///
/// # Safety
/// `properties_` null or a 0-terminated property list.
unsafe fn context_request(
    properties_: *const isize,
    pfn_notify: Option<ContextNotify>,
    user_data: *mut c_void,
) -> ClResult<(Vec<isize>, &'static Arc<Obj<Platform>>)> {
    // CL_INVALID_VALUE if pfn_notify is NULL but user_data is not NULL.
    if pfn_notify.is_none() && !user_data.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let props = unsafe { properties(properties_) }?;
    Ok((props, platform().map_err(|_| CL_INVALID_PLATFORM)?))
}

/// # Safety
/// Pointers per the OpenCL specification of `clCreateContext`.
#[cl_entrypoint(clCreateContext)]
unsafe fn create_context(
    properties_: *const isize,
    num_devices: cl_uint,
    devices: *const Handle,
    pfn_notify: Option<ContextNotify>,
    user_data: *mut c_void,
) -> ClResult<Handle> {
    // SAFETY: the caller's contract.
    let (props, p) = unsafe { context_request(properties_, pfn_notify, user_data) }?;
    // SAFETY: the caller's contract (`devices` readable for `num_devices` handles).
    let devs = unsafe { device_list(p, num_devices, devices) }?;
    create(props, devs)
}

/// # Safety
/// Pointers per the OpenCL specification of `clCreateContextFromType`.
#[cl_entrypoint(clCreateContextFromType)]
unsafe fn create_context_from_type(
    properties_: *const isize,
    device_type: cl_bitfield,
    pfn_notify: Option<ContextNotify>,
    user_data: *mut c_void,
) -> ClResult<Handle> {
    // SAFETY: the caller's contract.
    let (props, p) = unsafe { context_request(properties_, pfn_notify, user_data) }?;
    let mut n = 0u32;
    let mut hs = vec![std::ptr::null_mut(); p.devices.len().max(1)];
    // SAFETY: `hs` is writable for its length, `n` for one count.
    unsafe { super::platform::get_device_ids(std::ptr::null_mut(), device_type, hs.len() as u32, hs.as_mut_ptr(), &mut n) }?;
    // SAFETY: `hs` holds the `n` handles just written.
    let devs = unsafe { device_list(p, n, hs.as_ptr()) }?;
    create(props, devs)
}

retain_release!(Context, clRetainContext => retain_context, clReleaseContext => release_context);

/// # Safety
/// `f` callable with `user_data` from any thread.
#[cl_entrypoint(clSetContextDestructorCallback)]
unsafe fn set_context_destructor_callback(c: Arc<Obj<Context>>, f: Option<ContextDestructor>, user_data: *mut c_void) -> ClResult<()> {
    let f = f.ok_or(CL_INVALID_VALUE)?;
    c.destructors.lock().unwrap_or_else(|e| e.into_inner()).push((f, user_data as usize));
    Ok(())
}

#[cl_entrypoint(clGetContextInfo)]
fn get_context_info(c: Arc<Obj<Context>>, param: cl_uint) -> ClResult<Info> {
    let bytes = match param {
        CL_CONTEXT_REFERENCE_COUNT => info_val(icd::refcount_of(&c)),
        CL_CONTEXT_NUM_DEVICES => info_val(c.devices.len() as cl_uint),
        CL_CONTEXT_DEVICES => {
            let hs: Vec<usize> = c.devices.iter().map(|&k| c.platform.handle(k) as usize).collect();
            info_vals(&hs)
        }
        CL_CONTEXT_PROPERTIES => info_vals(&c.properties),
        _ => return Err(CL_INVALID_VALUE),
    };
    let _ = info_ptr;
    Ok(Info(bytes))
}
