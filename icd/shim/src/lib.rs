//! `libweft_icd.so`: the library `weft.icd` names, which the OpenCL ICD loader opens.
//!
//! **Owns**: the three symbols an ICD exports (`clIcdGetPlatformIDsKHR`,
//! `clGetExtensionFunctionAddress`, `clGetExtensionFunctionAddressForPlatform`) and
//! finding `libweft.so`, the one library that holds Weft (DESIGN.md "Packaging").
//! **Does not own**: anything else; every object it hands out comes from libweft.so and
//! carries libweft's dispatch table, so the loader never calls this library again.
//!
//! `libweft.so` is found, in order: already loaded (`dlopen` with `RTLD_NOLOAD`, as
//! `libweft.so` or the `libweft_omp.so` link a program preloaded); next to this library
//! (`dladdr` on one of its own symbols); on the library search path. It has no
//! link-time dependency on libweft.so, so cargo builds both side by side.
//!
//! It depends on nothing but `std` (the few `dlfcn.h` functions are declared here), so a
//! test can build it with a single `rustc` call.
#![allow(non_snake_case)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::OnceLock;

type GetPlatforms = unsafe extern "C" fn(u32, *mut *mut c_void, *mut u32) -> i32;
type GetAddress = unsafe extern "C" fn(*const c_char) -> *mut c_void;

const CL_PLATFORM_NOT_FOUND_KHR: i32 = -1001;

/// `dlfcn.h` (glibc, Linux).
mod libc {
    use std::ffi::{c_char, c_int, c_void};
    pub const RTLD_NOW: c_int = 2;
    pub const RTLD_NOLOAD: c_int = 4;
    pub const RTLD_GLOBAL: c_int = 0x100;

    #[repr(C)]
    pub struct Dl_info {
        pub dli_fname: *const c_char,
        pub dli_fbase: *mut c_void,
        pub dli_sname: *const c_char,
        pub dli_saddr: *mut c_void,
    }

    #[link(name = "dl")]
    unsafe extern "C" {
        pub fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
        pub fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        pub fn dladdr(addr: *const c_void, info: *mut Dl_info) -> c_int;
        pub fn dlerror() -> *mut c_char;
    }
}

/// The handle of libweft.so (0 when not found).
fn libweft() -> usize {
    static LIB: OnceLock<usize> = OnceLock::new();
    *LIB.get_or_init(|| {
        for name in [c"libweft.so", c"libweft_omp.so"] {
            // SAFETY: a NUL-terminated name; RTLD_NOLOAD only looks the library up.
            let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL) };
            if !h.is_null() {
                return h as usize;
            }
        }
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: the address of one of this library's functions; `info` is writable.
        let found = unsafe { libc::dladdr(clIcdGetPlatformIDsKHR as *const c_void, info.as_mut_ptr()) } != 0;
        if found {
            // SAFETY: dladdr succeeded, so `info` is initialised; dli_fname is null or a path.
            let info = unsafe { info.assume_init() };
            if !info.dli_fname.is_null() {
                // SAFETY: a NUL-terminated path owned by the dynamic linker.
                let me = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
                if let Some(dir) = std::path::Path::new(&me).parent()
                    && let Ok(path) = CString::new(dir.join("libweft.so").to_string_lossy().into_owned())
                {
                    // SAFETY: a NUL-terminated path.
                    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
                    if !h.is_null() {
                        return h as usize;
                    }
                }
            }
        }
        // SAFETY: a NUL-terminated name.
        let h = unsafe { libc::dlopen(c"libweft.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if h.is_null() {
            // SAFETY: dlerror returns null or a NUL-terminated message.
            let e = unsafe { libc::dlerror() };
            // SAFETY: non-null: a NUL-terminated message.
            let msg = if e.is_null() { String::new() } else { unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned() };
            eprintln!("weft: libweft_icd.so could not find libweft.so: {msg}");
        }
        h as usize
    })
}

/// A symbol of libweft.so.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    let lib = libweft();
    if lib == 0 {
        return None;
    }
    // SAFETY: a live handle from dlopen (never closed) and a NUL-terminated name.
    let f = unsafe { libc::dlsym(lib as *mut c_void, name.as_ptr()) };
    (!f.is_null()).then_some(f)
}

/// The cl_khr_icd entry point: Weft's one platform.
///
/// # Safety
/// As `clIcdGetPlatformIDsKHR`: `platforms` null or writable for `num_entries` handles,
/// `num_platforms` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clIcdGetPlatformIDsKHR(num_entries: u32, platforms: *mut *mut c_void, num_platforms: *mut u32) -> i32 {
    match symbol(c"weft_clIcdGetPlatformIDsKHR") {
        Some(f) => {
            // SAFETY: libweft.so defines this symbol with this signature.
            let f: GetPlatforms = unsafe { std::mem::transmute::<*mut c_void, GetPlatforms>(f) };
            // SAFETY: forwarded contract.
            unsafe { f(num_entries, platforms, num_platforms) }
        }
        None => CL_PLATFORM_NOT_FOUND_KHR,
    }
}

/// # Safety
/// `name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetExtensionFunctionAddress(name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's contract.
    if unsafe { CStr::from_ptr(name) } == c"clIcdGetPlatformIDsKHR" {
        return clIcdGetPlatformIDsKHR as *mut c_void;
    }
    match symbol(c"weft_clGetExtensionFunctionAddress") {
        Some(f) => {
            // SAFETY: libweft.so defines this symbol with this signature.
            let f: GetAddress = unsafe { std::mem::transmute::<*mut c_void, GetAddress>(f) };
            // SAFETY: forwarded contract.
            unsafe { f(name) }
        }
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `name` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clGetExtensionFunctionAddressForPlatform(_platform: *mut c_void, name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { clGetExtensionFunctionAddress(name) }
}
