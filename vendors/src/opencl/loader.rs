//! Finding the OpenCL vendors without the ICD loader.
//!
//! **Owns**: reading `.icd` files, opening vendor libraries, and asking each for its
//! platforms through `clIcdGetPlatformIDsKHR`, the way ocl-icd 2.3.1 does.
//! **Does not own**: devices and contexts (see `device`).
//! **Invariants**:
//! * A library whose file name contains `weft` is never opened: Weft's own ICD must not
//!   re-enter itself, and `libOpenCL` (the loader) is never called (see
//!   `shared/reference/opencl-facts.md`).
//! * A library, once opened, is never closed: every OpenCL object handed out points into
//!   its dispatch table, and vendor libraries start threads and register `atexit`
//!   handlers that do not survive unloading. Opened libraries (and their platforms) are
//!   kept in one process-wide table keyed by the name in the `.icd` file, so a second
//!   discovery reuses them. A library that failed is tried again next time.
//!
//! * A vendor's platforms are asked for their devices one thread at a time (the vendor's
//!   own lock, [`Vendor::platform_devices`]), and a list with a device is kept: root
//!   devices do not change while the library stays loaded, and PoCL (3.1, as its current
//!   source still does) initialises its devices in the first `clGetDeviceIDs` behind an
//!   `init_in_progress` flag it reads without its lock: a second thread listing meanwhile
//!   gets `CL_SUCCESS` from that initialisation with no device counted yet, so
//!   `CL_DEVICE_NOT_FOUND`, and a runtime created then had no OpenCL device. An empty
//!   list is asked again a few times (an application thread may be initialising the
//!   vendor through its own loader) and is not kept: the next discovery asks again.
//!
//! Sources, as in ocl-icd: `OCL_ICD_VENDORS` names a directory of `.icd` files, one
//! `.icd` file, or a library; unset, `/etc/OpenCL/vendors`. Each `.icd` file holds one
//! line: the library's name (searched by `dlopen`) or path.

use super::OpenClError;
use super::result::{self as r, ClError, WEFT_BAD_VENDOR};
use super::safe::{DeviceId, Platform};
use super::sys::*;
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Default vendor directory (ocl-icd's).
pub const DEFAULT_VENDORS_DIR: &str = "/etc/OpenCL/vendors";

/// One opened vendor library and its platforms.
pub struct Vendor {
    /// The library name as the `.icd` file gave it.
    pub library: String,
    pub platforms: Vec<Platform>,
    /// Each platform's devices, once a listing found one (module doc); held while listing.
    devices: Mutex<Vec<Option<Vec<DeviceId>>>>,
    _lib: libloading::Library,
}

impl Vendor {
    /// Each platform with its devices (`CL_DEVICE_TYPE_ALL`): the kept list, else a new
    /// listing, made while no other thread lists this vendor's devices (module doc).
    pub fn platform_devices(&self) -> Vec<(Platform, r::ClResult<Vec<DeviceId>>)> {
        let mut kept = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        let listed = self.platforms.iter().zip(kept.iter_mut()).map(|(&p, slot)| {
            let devices = match slot {
                Some(d) => Ok(d.clone()),
                None => list_devices(p),
            };
            if let Ok(d) = &devices
                && !d.is_empty()
            {
                *slot = Some(d.clone());
            }
            (p, devices)
        });
        listed.collect()
    }
}

impl std::fmt::Debug for Vendor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vendor").field("library", &self.library).field("platforms", &self.platforms).finish()
    }
}

/// The vendor libraries named by the configured `.icd` files, in file-name order, plus a
/// note for each file that could not be used (unreadable, empty, or naming Weft).
///
/// `WEFT_OCL_VENDORS`, when set, is read instead of `OCL_ICD_VENDORS` (the vendors Weft's
/// own OpenCL platform runs on, when a program's loader is pointed elsewhere). When the
/// configured source names Weft only (a vendors directory holding just `weft.icd`, as
/// `OCL_ICD_VENDORS=PREFIX/etc/OpenCL/vendors clinfo` gives), the system's
/// `/etc/OpenCL/vendors` is read as well: those are the devices Weft's platform stands on.
pub fn vendor_libraries() -> (Vec<String>, Vec<String>) {
    let source = std::env::var_os("WEFT_OCL_VENDORS").or_else(|| std::env::var_os("OCL_ICD_VENDORS")).map(PathBuf::from);
    resolve(source.as_deref(), Path::new(DEFAULT_VENDORS_DIR))
}

/// [`vendor_libraries`] for a configured `source` (or none) and the system's directory.
fn resolve(source: Option<&Path>, system: &Path) -> (Vec<String>, Vec<String>) {
    let (libs, mut notes) = libraries_from(source.unwrap_or(system));
    let only_weft = libs.is_empty() && notes.iter().any(|n| n.contains("(Weft itself)"));
    if only_weft && source.is_some_and(|s| s != system) {
        let (sys, sys_notes) = libraries_from(system);
        notes.extend(sys_notes);
        return (sys, notes);
    }
    (libs, notes)
}

fn libraries_from(source: &Path) -> (Vec<String>, Vec<String>) {
    let (mut libs, mut notes) = (Vec::new(), Vec::new());
    let icd_files: Vec<PathBuf> = if source.is_dir() {
        match std::fs::read_dir(source) {
            Ok(rd) => {
                let mut v: Vec<PathBuf> =
                    rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "icd")).collect();
                v.sort();
                v
            }
            Err(e) => {
                notes.push(format!("{}: {e}", source.display()));
                Vec::new()
            }
        }
    } else if source.extension().is_some_and(|x| x == "icd") {
        vec![source.to_path_buf()]
    } else if source.exists() {
        // A library path, as ocl-icd accepts.
        push_library(&mut libs, &mut notes, source.to_string_lossy().into_owned(), source);
        Vec::new()
    } else {
        Vec::new()
    };
    for file in icd_files {
        match std::fs::read_to_string(&file) {
            Ok(text) => match text.lines().map(str::trim).find(|l| !l.is_empty()) {
                Some(lib) => push_library(&mut libs, &mut notes, lib.to_owned(), &file),
                None => notes.push(format!("{}: empty .icd file", file.display())),
            },
            Err(e) => notes.push(format!("{}: {e}", file.display())),
        }
    }
    (libs, notes)
}

fn push_library(libs: &mut Vec<String>, notes: &mut Vec<String>, lib: String, from: &Path) {
    let file_name = Path::new(&lib).file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if file_name.contains("weft") {
        notes.push(format!("{}: skipped {lib} (Weft itself)", from.display()));
    } else if !libs.contains(&lib) {
        libs.push(lib);
    }
}

fn table() -> &'static Mutex<HashMap<String, Arc<Vendor>>> {
    static VENDORS: OnceLock<Mutex<HashMap<String, Arc<Vendor>>>> = OnceLock::new();
    VENDORS.get_or_init(Default::default)
}

/// Open (or find already open) the vendor library `library` and list its platforms.
pub fn load(library: &str) -> Result<Arc<Vendor>, OpenClError> {
    // Held while opening: two threads discovering at once open a library once.
    let mut vendors = table().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = vendors.get(library) {
        return Ok(v.clone());
    }
    let err = |reason: String| OpenClError::Vendor { library: library.to_owned(), reason };
    // SAFETY: opening a vendor library runs its initialisers; the library comes from the
    // system's (or the user's) OpenCL vendor configuration, which we trust as the ICD
    // loader does. It is never unloaded (module doc).
    let lib = unsafe { libloading::Library::new(library) }.map_err(|e| err(e.to_string()))?;
    // SAFETY: the symbol, if present, has the signature of `clGetExtensionFunctionAddress`.
    let gefa: clGetExtensionFunctionAddress_fn =
        *unsafe { lib.get::<clGetExtensionFunctionAddress_fn>(b"clGetExtensionFunctionAddress\0") }
            .map_err(|e| err(format!("no clGetExtensionFunctionAddress: {e}")))?;
    // SAFETY: a valid NUL-terminated name; the vendor returns null or the function.
    let mut f: *mut c_void = unsafe { gefa(c"clIcdGetPlatformIDsKHR".as_ptr()) };
    if f.is_null() {
        // Some vendors export it directly (ocl-icd falls back the same way).
        // SAFETY: as above, a symbol of the named function's signature.
        f = unsafe { lib.get::<*mut c_void>(b"clIcdGetPlatformIDsKHR\0") }.map(|s| *s).unwrap_or(std::ptr::null_mut());
    }
    if f.is_null() {
        return Err(err("not an ICD: no clIcdGetPlatformIDsKHR".into()));
    }
    // SAFETY: a non-null address of `clIcdGetPlatformIDsKHR`, whose signature cl_khr_icd fixes.
    let icd_get_platforms: clIcdGetPlatformIDsKHR_fn = unsafe { std::mem::transmute::<*mut c_void, clIcdGetPlatformIDsKHR_fn>(f) };
    // SAFETY: the vendor's own clIcdGetPlatformIDsKHR.
    let raw = unsafe { r::icd_get_platform_ids(icd_get_platforms) }.map_err(|e| err(format!("clIcdGetPlatformIDsKHR: {e}")))?;
    let mut platforms = Vec::new();
    for p in raw {
        if p.is_null() {
            return Err(err(format!("clIcdGetPlatformIDsKHR: {}", ClError(WEFT_BAD_VENDOR))));
        }
        // SAFETY: a platform of a vendor that stays loaded (we keep `lib` forever).
        let platform = unsafe { Platform::from_raw(p) };
        // ocl-icd requires cl_khr_icd, which is what promises the dispatch table.
        let ext = platform.info_string(CL_PLATFORM_EXTENSIONS).map_err(|e| err(format!("clGetPlatformInfo: {e}")))?;
        if ext.split_whitespace().any(|x| x == "cl_khr_icd") {
            platforms.push(platform);
        } else {
            return Err(err("platform without cl_khr_icd".into()));
        }
    }
    let devices = Mutex::new(vec![None; platforms.len()]);
    let v = Arc::new(Vendor { library: library.to_owned(), platforms, devices, _lib: lib });
    vendors.insert(library.to_owned(), v.clone());
    Ok(v)
}

/// Tries and pause of [`list_devices`] while a platform reports no device.
const EMPTY_TRIES: u32 = 3;
const EMPTY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// A platform's devices; an empty list is asked again ([`EMPTY_TRIES`] in all), since a
/// vendor initialising on another thread may report none for the moment (module doc).
fn list_devices(p: Platform) -> r::ClResult<Vec<DeviceId>> {
    let mut tries = 1;
    loop {
        match p.devices() {
            Ok(d) if d.is_empty() && tries < EMPTY_TRIES => {
                tries += 1;
                std::thread::sleep(EMPTY_PAUSE);
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("weft-icd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_icd_files_and_skips_weft() {
        let d = tmpdir("read");
        std::fs::write(d.join("b.icd"), "libvendor_b.so\n").unwrap();
        std::fs::write(d.join("a.icd"), "\n  /opt/a/libvendor_a.so.1  \n").unwrap();
        std::fs::write(d.join("weft.icd"), "/usr/lib/libweft_icd.so\n").unwrap();
        std::fs::write(d.join("empty.icd"), "").unwrap();
        std::fs::write(d.join("notes.txt"), "libignored.so").unwrap();
        let (libs, notes) = libraries_from(&d);
        assert_eq!(libs, ["/opt/a/libvendor_a.so.1", "libvendor_b.so"]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("Weft itself")));
        let (one, _) = libraries_from(&d.join("b.icd"));
        assert_eq!(one, ["libvendor_b.so"]);
        let (none, notes) = libraries_from(&d.join("missing"));
        assert!(none.is_empty() && notes.is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_vendors_directory_naming_only_weft_falls_back_to_the_system_one() {
        let (mine, system) = (tmpdir("only-weft"), tmpdir("system"));
        std::fs::write(mine.join("weft.icd"), "/opt/weft/lib/libweft_icd.so\n").unwrap();
        std::fs::write(system.join("pocl.icd"), "libpocl.so.2\n").unwrap();
        assert_eq!(resolve(Some(&mine), &system).0, ["libpocl.so.2"]);
        // A directory naming another vendor is used as it is.
        std::fs::write(mine.join("other.icd"), "libother.so\n").unwrap();
        assert_eq!(resolve(Some(&mine), &system).0, ["libother.so"]);
        assert_eq!(resolve(None, &system).0, ["libpocl.so.2"]);
        std::fs::remove_dir_all(&mine).unwrap();
        std::fs::remove_dir_all(&system).unwrap();
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        let e = load("/nonexistent/libnot_a_vendor.so").unwrap_err();
        assert!(e.to_string().contains("libnot_a_vendor"), "{e}");
    }
}
