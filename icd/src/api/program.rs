//! Programs: the application's source, built by each real device's vendor for every real
//! device the program's devices stand for (the unified device: all of them), with a
//! build status and log per device.
//!
//! A Weft program "binary" is its source behind a marker ([`BINARY_MAGIC`]): a program
//! created from it is rebuilt from source for whichever devices it lands on, which keeps
//! binary caches (pyopencl's) working across devices. A compiled object or a library
//! carries what remaking it takes ([`BINARY_MAGIC_2`]: its type, options, headers and
//! source), and a program created from one is compiled (or built as a library) at once,
//! ready to link, as a vendor's object binary would be.

use super::cl::*;
use super::context::Context;
use super::icd::{self, Obj, new_obj, publish};
use super::platform::DeviceKind;
use super::{ClResult, Info, c_str, cl_entrypoint, entry::retain_release, info_ptr, info_str, info_val, info_vals, slice, write_info};
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weft_vendors::fsutil;
use weft_vendors::opencl::{OpenClDevice, Program as VendorProgram};

/// What starts a Weft program binary of an executable.
pub const BINARY_MAGIC: &[u8] = b"WEFT-OPENCL-SOURCE-1\n";
/// What starts a Weft program binary of a compiled object or library, followed by
/// length-prefixed fields (each length a decimal and a newline): the binary type, the
/// number of units, and per unit its source, compile options, header count and each
/// header's include name and source.
pub const BINARY_MAGIC_2: &[u8] = b"WEFT-OPENCL-PROGRAM-2\n";

/// A compiled object's (one unit) or library's binary (see [`BINARY_MAGIC_2`]).
fn binary_v2(binary_type: cl_uint, units: &[Unit]) -> Vec<u8> {
    let mut b = BINARY_MAGIC_2.to_vec();
    let mut field = |f: &[u8]| {
        b.extend_from_slice(format!("{}\n", f.len()).as_bytes());
        b.extend_from_slice(f);
    };
    field(binary_type.to_string().as_bytes());
    field(units.len().to_string().as_bytes());
    for u in units {
        field(u.source.as_bytes());
        field(u.options.as_bytes());
        field(u.headers.len().to_string().as_bytes());
        for (name, src) in &u.headers {
            field(name.as_bytes());
            field(src.as_bytes());
        }
    }
    b
}

/// What [`binary_v2`] wrote: (binary type, units); None if malformed.
fn parse_v2(mut rest: &[u8]) -> Option<(cl_uint, Vec<Unit>)> {
    let mut field = || -> Option<String> {
        let nl = rest.iter().position(|&c| c == b'\n')?;
        let n: usize = std::str::from_utf8(&rest[..nl]).ok()?.parse().ok()?;
        let body = rest.get(nl + 1..nl.checked_add(1 + n)?)?;
        rest = &rest[nl + 1 + n..];
        String::from_utf8(body.to_vec()).ok()
    };
    let kind: cl_uint = field()?.parse().ok()?;
    let nu: usize = field()?.parse().ok()?;
    let mut units = Vec::new();
    for _ in 0..nu.min(4096) {
        let source = field()?;
        let options = field()?;
        let nh: usize = field()?.parse().ok()?;
        let mut headers = Vec::new();
        for _ in 0..nh.min(4096) {
            let name = field()?;
            headers.push((name, field()?));
        }
        units.push(Unit { source, options, headers });
    }
    let ok = match kind {
        CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT => units.len() == 1,
        CL_PROGRAM_BINARY_TYPE_LIBRARY => !units.is_empty(),
        _ => false,
    };
    ok.then_some((kind, units))
}

pub type BuildNotify = unsafe extern "C" fn(Handle, *mut c_void);

/// One real device's build.
pub struct DeviceBuild {
    pub status: cl_int,
    pub log: String,
    /// The executable (built or linked): kernels are made from it.
    pub program: Option<VendorProgram>,
    /// The compiled object (clCompileProgram), when the vendor compiled it: a link whose
    /// inputs all have one on a device links them with the vendor's own linker there.
    pub object: Option<VendorProgram>,
}

impl DeviceBuild {
    fn new(status: cl_int, log: String) -> DeviceBuild {
        DeviceBuild { status, log, program: None, object: None }
    }
}

#[derive(Default)]
pub struct ProgramState {
    pub options: String,
    /// Per real device (index into the platform's `real`).
    pub builds: Vec<Option<DeviceBuild>>,
    /// `CL_PROGRAM_BINARY_TYPE`.
    pub binary_type: cl_uint,
    /// Headers given to clCompileProgram (include name, source), for the link.
    pub headers: Vec<(String, String)>,
    /// A library's compiled inputs (clLinkProgram with `-create-library`): what its binary
    /// carries to make it again.
    pub units: Vec<Unit>,
}

/// One compiled object's making: its source, compile options and headers.
#[derive(Clone)]
pub struct Unit {
    pub source: String,
    pub options: String,
    pub headers: Vec<(String, String)>,
}

pub struct Program {
    pub context: Arc<Obj<Context>>,
    pub devices: Vec<DeviceKind>,
    pub source: String,
    pub state: Mutex<ProgramState>,
    /// Kernel objects created from it that the application still holds (API references).
    pub kernels: AtomicUsize,
}
crate::cl_object!(Program, CL_INVALID_PROGRAM);

impl Program {
    /// Real devices the program is built for (or will be).
    pub fn reals(&self) -> Vec<usize> {
        self.context.platform.reals_of(&self.devices)
    }

    /// Store per-device builds (real device index, build) with the options and binary type
    /// they make; whether any failed.
    fn record(&self, results: Vec<(usize, DeviceBuild)>, options: &str, binary_type: cl_uint) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.context.platform.real.len();
        if st.builds.len() < n {
            st.builds.resize_with(n, || None);
        }
        let failed = results.iter().any(|(_, b)| b.status != CL_BUILD_SUCCESS);
        for (i, b) in results {
            st.builds[i] = Some(b);
        }
        st.options = options.to_owned();
        st.binary_type = binary_type;
        failed
    }

    /// Status for Weft device `k`: success when every real device it stands for built.
    pub fn status(&self, k: DeviceKind) -> cl_int {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let reals = self.context.platform.reals(k);
        let s: Vec<cl_int> = reals.iter().map(|&i| st.builds.get(i).and_then(|b| b.as_ref()).map_or(CL_BUILD_NONE, |b| b.status)).collect();
        if s.contains(&CL_BUILD_ERROR) {
            CL_BUILD_ERROR
        } else if s.iter().all(|&x| x == CL_BUILD_SUCCESS) && !s.is_empty() {
            CL_BUILD_SUCCESS
        } else {
            CL_BUILD_NONE
        }
    }

    /// Real devices with a successful build.
    pub fn built(&self) -> Vec<usize> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.builds.iter().enumerate().filter(|(_, b)| b.as_ref().is_some_and(|b| b.status == CL_BUILD_SUCCESS)).map(|(i, _)| i).collect()
    }

    /// Compile (clCompileProgram) on each real device with its vendor's compiler; the
    /// options and headers are kept too, for a link on a device whose vendor cannot
    /// compile separately (it builds the inputs' concatenated sources). Errors:
    /// `CL_INVALID_COMPILER_OPTIONS`, or `CL_COMPILE_PROGRAM_FAILURE` when a device's
    /// compile failed (its log says why).
    fn compile(&self, devices: &[DeviceKind], options: &str, headers: Vec<(String, String)>) -> ClResult<()> {
        let p = &self.context.platform;
        // Argument info tells buffers from values once linked, as in `build`.
        let opts = format!("{options} -cl-kernel-arg-info");
        let mut results = Vec::new();
        for i in p.reals_of(devices) {
            let dev = &p.real[i].1;
            results.push((i, compile_on(dev, &self.source, &socl_options(&opts, dev), &headers)?));
        }
        let failed = self.record(results, options, CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).headers = headers;
        if failed { Err(CL_COMPILE_PROGRAM_FAILURE) } else { Ok(()) }
    }

    fn build(&self, devices: &[DeviceKind], options: &str, extra_source: &str) -> ClResult<()> {
        let p = &self.context.platform;
        let source = format!("{extra_source}{}", self.source);
        let mut results = Vec::new();
        for i in p.reals_of(devices) {
            let dev = &p.real[i].1;
            let b = match VendorProgram::from_source(dev.context(), &source) {
                Err(e) => DeviceBuild::new(CL_BUILD_ERROR, format!("clCreateProgramWithSource: {e}")),
                Ok(vp) => {
                    // Argument info tells buffers from values and read-only from written buffers.
                    let r = vp.build(dev.id(), &socl_options(&format!("{options} -cl-kernel-arg-info"), dev));
                    let log = vp.build_log(dev.id()).unwrap_or_default();
                    match r {
                        Ok(()) => DeviceBuild { program: Some(vp), ..DeviceBuild::new(CL_BUILD_SUCCESS, log) },
                        Err(e) if e.0 == CL_INVALID_BUILD_OPTIONS => return Err(CL_INVALID_BUILD_OPTIONS),
                        Err(_) => DeviceBuild::new(CL_BUILD_ERROR, log),
                    }
                }
            };
            results.push((i, b));
        }
        if self.record(results, options, CL_PROGRAM_BINARY_TYPE_EXECUTABLE) { Err(CL_BUILD_PROGRAM_FAILURE) } else { Ok(()) }
    }

    pub fn binary(&self) -> Vec<u8> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match st.binary_type {
            CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT => {
                return binary_v2(st.binary_type, &[self.unit(&st)]);
            }
            CL_PROGRAM_BINARY_TYPE_LIBRARY => return binary_v2(st.binary_type, &st.units),
            _ => {}
        }
        let mut b = BINARY_MAGIC.to_vec();
        b.extend_from_slice(self.source.as_bytes());
        b
    }
}

impl Program {
    /// This compiled object as a unit.
    fn unit(&self, st: &ProgramState) -> Unit {
        Unit { source: self.source.clone(), options: st.options.clone(), headers: st.headers.clone() }
    }

    /// The units a link input brings to a library: its own (a compiled object) or its units
    /// (a library).
    fn units_of(&self) -> Vec<Unit> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.binary_type == CL_PROGRAM_BINARY_TYPE_LIBRARY { st.units.clone() } else { vec![self.unit(&st)] }
    }

    /// `build` from source with `headers` written to a private directory for the build's
    /// duration: `options` gets the `-I` flag naming it (empty without headers). No headers
    /// written, no build: the program stays as after a failed one.
    fn build_with_headers(
        &self,
        devices: &[DeviceKind],
        headers: &[(String, String)],
        options: impl FnOnce(&str) -> String,
    ) -> ClResult<()> {
        // The directory goes when `dir` is dropped, after the build.
        header_dir(headers).and_then(|dir| {
            let include = dir.as_ref().map(|d| format!(" -I{}", d.path().display())).unwrap_or_default();
            self.build(devices, &options(&include), "")
        })
    }

    /// Make this program a library of `units` with each device's vendor linker (each unit
    /// compiled there, then linked with `-create-library`): whether every device did. A
    /// library's vendor program is a link input (`DeviceBuild::object`), not an executable.
    fn library_native(&self, devices: &[DeviceKind], units: &[Unit]) -> bool {
        if link_from_source() {
            return false;
        }
        let p = &self.context.platform;
        let mut results = Vec::new();
        for i in p.reals_of(devices) {
            let dev = &p.real[i].1;
            let mut objects = Vec::new();
            for u in units {
                match compile_on(dev, &u.source, &socl_options(&format!("{} -cl-kernel-arg-info", u.options), dev), &u.headers) {
                    Ok(DeviceBuild { object: Some(o), .. }) => objects.push(o),
                    _ => return false,
                }
            }
            let refs: Vec<&VendorProgram> = objects.iter().collect();
            match vendor_link(dev, "-create-library", &refs) {
                Ok(b) => results.push((i, DeviceBuild { object: b.program, program: None, ..DeviceBuild::new(CL_BUILD_SUCCESS, b.log) })),
                Err(_) => return false,
            }
        }
        self.record(results, "", CL_PROGRAM_BINARY_TYPE_LIBRARY);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).units = units.to_vec();
        true
    }
}

/// `WEFT_OCL_LINK_FROM_SOURCE=1`: link (and make libraries) from the inputs' joined
/// sources, as for a vendor that cannot compile separately, whatever the vendors can do: a
/// diagnostic for that path (its tests run it on PoCL).
fn link_from_source() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("WEFT_OCL_LINK_FROM_SOURCE").is_ok_and(|v| v == "1"))
}

fn new_program(context: &Arc<Obj<Context>>, devices: Vec<DeviceKind>, source: String) -> Handle {
    publish(&new_obj(Program { context: context.clone(), devices, source, state: Mutex::default(), kernels: AtomicUsize::new(0) }))
}

/// # Safety
/// Pointers per OpenCL's clCreateProgramWithSource.
#[cl_entrypoint(clCreateProgramWithSource)]
unsafe fn create_program_with_source(
    c: Arc<Obj<Context>>,
    count: cl_uint,
    strings: *const *const c_char,
    lengths: *const usize,
) -> ClResult<Handle> {
    // CL_INVALID_VALUE if count is zero or if strings or any entry in strings is NULL.
    if count == 0 || strings.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `count` strings and, if not null, `count` lengths.
    let ss = unsafe { slice(strings, count as usize) }?;
    // SAFETY: as above.
    let ls = if lengths.is_null() { None } else { Some(unsafe { slice(lengths, count as usize) }?) };
    let mut source = Vec::new();
    for (i, &s) in ss.iter().enumerate() {
        if s.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        match ls.map(|l| l[i]) {
            // SAFETY: the caller's contract: a string of `n` bytes, or NUL-terminated.
            Some(n) if n > 0 => source.extend_from_slice(unsafe { slice(s.cast::<u8>(), n) }?),
            // SAFETY: as above.
            _ => source.extend_from_slice(unsafe { c_str(s) }.map_or(&[][..], |c| c.to_bytes())),
        }
    }
    let source = String::from_utf8_lossy(&source).into_owned();
    Ok(new_program(&c, c.devices.clone(), source))
}

/// # Safety
/// Pointers per OpenCL's clCreateProgramWithBinary.
#[cl_entrypoint(clCreateProgramWithBinary)]
unsafe fn create_program_with_binary(
    context: Handle,
    num_devices: cl_uint,
    devices: *const Handle,
    lengths: *const usize,
    binaries: *const *const u8,
    binary_status: *mut cl_int,
) -> ClResult<Handle> {
    let c = icd::get::<Context>(context)?;
    // SAFETY: the caller's contract: `num_devices` handles.
    let devs = unsafe { super::platform::device_list(c.platform, num_devices, devices) }?;
    // CL_INVALID_DEVICE if OpenCL devices listed in device_list are not in the list of
    // devices associated with context.
    if devs.iter().any(|d| !c.has(*d)) {
        return Err(CL_INVALID_DEVICE);
    }
    // CL_INVALID_VALUE if lengths or binaries are NULL or if any entry in lengths[i] is zero
    // or binaries[i] is NULL.
    // SAFETY: the caller's contract: `num_devices` lengths and binaries.
    let ls = unsafe { slice(lengths, num_devices as usize) }?;
    // SAFETY: as above.
    let bs = unsafe { slice(binaries, num_devices as usize) }?;
    if ls.contains(&0) || bs.iter().any(|b| b.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    let mut source: Option<String> = None;
    let mut parts: Option<(cl_uint, Vec<Unit>)> = None;
    let mut statuses = Vec::new();
    for (&l, &b) in ls.iter().zip(bs) {
        // SAFETY: the caller's contract: binary `i` holds `lengths[i]` bytes.
        let bytes = unsafe { slice(b, l) }?;
        if let Some(s) = bytes.strip_prefix(BINARY_MAGIC) {
            statuses.push(CL_SUCCESS);
            source.get_or_insert_with(|| String::from_utf8_lossy(s).into_owned());
        } else if let Some(p) = bytes.strip_prefix(BINARY_MAGIC_2).and_then(parse_v2) {
            statuses.push(CL_SUCCESS);
            parts.get_or_insert(p);
        } else {
            statuses.push(CL_INVALID_BINARY);
        }
    }
    if !binary_status.is_null() {
        for (i, s) in statuses.iter().enumerate() {
            // SAFETY: the caller's contract: `binary_status` writable for `num_devices` codes.
            unsafe { binary_status.add(i).write_unaligned(*s) };
        }
    }
    // CL_INVALID_BINARY if an invalid program binary was encountered for any device.
    if statuses.contains(&CL_INVALID_BINARY) {
        return Err(CL_INVALID_BINARY);
    }
    let Some((kind, units)) = parts else {
        // An executable's binary: the program is one (its type says so) before the
        // build the application must still ask for makes it from the source.
        let h = new_program(&c, devs, source.unwrap_or_default());
        icd::get::<Program>(h)?.state.lock().unwrap_or_else(|e| e.into_inner()).binary_type = CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
        return Ok(h);
    };
    // A compiled object or a library is ready to link, as the vendor's would be: it
    // is compiled (linked as a library) here, for the devices it was given for.
    let object = kind == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT;
    let source: String = if object { units[0].source.clone() } else { units.iter().map(|u| format!("{}\n", u.source)).collect() };
    let h = new_program(&c, devs.clone(), source);
    let p = icd::get::<Program>(h)?;
    let ok = if object {
        let u = &units[0];
        p.compile(&devs, &u.options, u.headers.clone()).is_ok()
    } else if p.library_native(&devs, &units) {
        true
    } else {
        // As clLinkProgram's library from sources: built when linked into a program.
        let headers: Vec<(String, String)> = units.iter().flat_map(|u| u.headers.iter().cloned()).collect();
        let built = p.build_with_headers(&devs, &headers, |include| include.to_owned());
        let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        (st.binary_type, st.units) = (CL_PROGRAM_BINARY_TYPE_LIBRARY, units);
        built.is_ok()
    };
    if !ok {
        let _ = icd::release::<Program>(h);
        return Err(CL_INVALID_BINARY);
    }
    Ok(h)
}

retain_release!(Program, clRetainProgram => retain_program, clReleaseProgram => release_program);

/// The devices of a build-like call: the listed ones (each of the program's), or all.
///
/// # Safety
/// `list` null or readable for `n` handles.
unsafe fn build_devices(prog: &Program, n: cl_uint, list: *const Handle) -> ClResult<Vec<DeviceKind>> {
    // CL_INVALID_VALUE if device_list is NULL and num_devices is greater than zero, or if
    // device_list is not NULL and num_devices is zero.
    if list.is_null() != (n == 0) {
        return Err(CL_INVALID_VALUE);
    }
    if list.is_null() {
        return Ok(prog.devices.clone());
    }
    // SAFETY: the caller's contract.
    let devs = unsafe { super::platform::device_list(prog.context.platform, n, list) }?;
    // CL_INVALID_DEVICE if OpenCL devices listed in device_list are not in the list of devices
    // associated with program.
    if devs.iter().any(|d| !prog.devices.contains(d)) {
        return Err(CL_INVALID_DEVICE);
    }
    Ok(devs)
}

/// # Safety
/// Pointers per OpenCL's clBuildProgram.
#[cl_entrypoint(clBuildProgram)]
unsafe fn build_program(
    program: Handle,
    n: cl_uint,
    list: *const Handle,
    options: *const c_char,
    notify: Option<BuildNotify>,
    user_data: *mut c_void,
) -> ClResult<()> {
    // SAFETY: the caller's contract.
    let (p, devs, opts) = unsafe { build_request(program, n, list, options, notify, user_data) }?;
    let r = p.build(&devs, &opts, "");
    if let Some(f) = notify {
        // SAFETY: the application's callback with its user data.
        unsafe { f(program, user_data) };
    }
    r
}

/// What clBuildProgram and clCompileProgram check first, in the spec's order: the program,
/// the callback/user-data pair, the devices, no kernels attached; then the options.
///
/// # Safety
/// `list` readable for `n` handles, `options` null or a C string.
unsafe fn build_request(
    program: Handle,
    n: cl_uint,
    list: *const Handle,
    options: *const c_char,
    notify: Option<BuildNotify>,
    user_data: *mut c_void,
) -> ClResult<(Arc<Obj<Program>>, Vec<DeviceKind>, String)> {
    let p = icd::get::<Program>(program)?;
    // CL_INVALID_VALUE if pfn_notify is NULL but user_data is not NULL.
    if notify.is_none() && !user_data.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let devs = unsafe { build_devices(&p, n, list) }?;
    // CL_INVALID_OPERATION if there are kernel objects attached to program.
    if p.kernels.load(Ordering::Acquire) > 0 {
        return Err(CL_INVALID_OPERATION);
    }
    // SAFETY: the caller's contract.
    let opts = unsafe { c_str(options) }.map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((p, devs, opts))
}

/// One device's clCompileProgram: the vendor's compiled object, or the compile's error
/// and log; a vendor that cannot compile separately (any other error) gets the source
/// recorded instead (`object` None), for a link that builds the concatenated sources.
/// `options`, with SOCL's device-type macro for `dev` under `WEFT_SOCL=1`
/// (`super::platform::socl`).
fn socl_options(options: &str, dev: &OpenClDevice) -> String {
    if !super::platform::socl() {
        return options.to_string();
    }
    let t = dev.device_type();
    let name = if t & CL_DEVICE_TYPE_GPU != 0 {
        "GPU"
    } else if t & CL_DEVICE_TYPE_CPU != 0 {
        "CPU"
    } else if t & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        "ACCELERATOR"
    } else {
        "UNKNOWN"
    };
    format!("-DSOCL_DEVICE_TYPE_{name} {options}")
}

fn compile_on(dev: &OpenClDevice, source: &str, options: &str, headers: &[(String, String)]) -> ClResult<DeviceBuild> {
    let recorded = || Ok(DeviceBuild::new(CL_BUILD_SUCCESS, String::new()));
    let Ok(vp) = VendorProgram::from_source(dev.context(), source) else { return recorded() };
    let Ok(hs) = headers.iter().map(|(_, h)| VendorProgram::from_source(dev.context(), h)).collect::<Result<Vec<_>, _>>() else {
        return recorded();
    };
    let named: Vec<(&VendorProgram, &str)> = hs.iter().zip(headers).map(|(p, (name, _))| (p, name.as_str())).collect();
    match vp.compile(dev.id(), options, &named) {
        Ok(()) => {
            let log = vp.build_log(dev.id()).unwrap_or_default();
            Ok(DeviceBuild { object: Some(vp), ..DeviceBuild::new(CL_BUILD_SUCCESS, log) })
        }
        Err(e) if e.0 == CL_INVALID_COMPILER_OPTIONS || e.0 == CL_INVALID_BUILD_OPTIONS => Err(CL_INVALID_COMPILER_OPTIONS),
        Err(e) if e.0 == CL_COMPILE_PROGRAM_FAILURE => Ok(DeviceBuild::new(CL_BUILD_ERROR, vp.build_log(dev.id()).unwrap_or_default())),
        Err(_) => recorded(),
    }
}

/// The headers of clCompileProgram: (include name, source).
///
/// # Safety
/// `headers`/`names` readable for `n` entries.
unsafe fn headers_of(n: cl_uint, headers: *const Handle, names: *const *const c_char) -> ClResult<Vec<(String, String)>> {
    if n == 0 {
        // CL_INVALID_VALUE if num_input_headers is zero and header_include_names or
        // input_headers are not NULL.
        return if headers.is_null() && names.is_null() { Ok(Vec::new()) } else { Err(CL_INVALID_VALUE) };
    }
    // SAFETY: the caller's contract.
    let (hs, ns) = unsafe { (slice(headers, n as usize)?, slice(names, n as usize)?) };
    let mut out = Vec::new();
    for (&h, &name) in hs.iter().zip(ns) {
        let hp = icd::get::<Program>(h)?;
        // SAFETY: the caller's contract.
        let name = unsafe { c_str(name) }.ok_or(CL_INVALID_VALUE)?.to_string_lossy().into_owned();
        // The spec lists no error for an include name's content: its CL_INVALID_VALUE
        // clauses cover NULL and count mismatches, and CL_COMPILE_PROGRAM_FAILURE is "a
        // failure to compile the program source", which sets a build status and log per
        // device. A name Weft cannot write below its header directory (empty, absolute, or
        // with a `..` component: `header_dir`) is refused here, before any compile and with
        // the program untouched, so it is a bad argument value: CL_INVALID_VALUE, the
        // spec's code for an invalid parameter value, and what a caller checking arguments expects.
        if !fsutil::is_relative_below(&name) {
            return Err(CL_INVALID_VALUE);
        }
        out.push((name, hp.source.clone()));
    }
    Ok(out)
}

/// Write headers into a fresh directory (for `-I`), removed when the returned value is
/// dropped: after the build, whether it succeeded or not.
///
/// Another user of the machine must not be able to redirect these writes or change a
/// header before the build reads it, so the directory is created by `mkdir` under a random
/// name in the temporary directory, mode 0700 (tempfile; `mkdir` fails rather than reuse a
/// directory someone else made), checked again once open (owner, mode), and each header is
/// created below it with `O_EXCL | O_NOFOLLOW`, its subdirectories (`inc/a.h`) with
/// `mkdirat` and opened without following links (`fsutil::PrivateDir::create_new`). Names
/// were checked by `headers_of`; where two are the same the first is kept, as the spec says
/// of `header_include_names`.
fn header_dir(headers: &[(String, String)]) -> ClResult<Option<tempfile::TempDir>> {
    use std::os::unix::fs::PermissionsExt;
    if headers.is_empty() {
        return Ok(None);
    }
    // Any failure to make the directory or write a header is the host's (no space, no
    // usable TMPDIR): CL_OUT_OF_HOST_MEMORY, as for other host allocations.
    let dir = tempfile::Builder::new()
        .prefix("weft-cl-headers-")
        .permissions(std::fs::Permissions::from_mode(fsutil::DIR_MODE))
        .tempdir()
        .map_err(|_| CL_OUT_OF_HOST_MEMORY)?;
    let private = fsutil::PrivateDir::open(dir.path()).map_err(|_| CL_OUT_OF_HOST_MEMORY)?;
    for (name, source) in headers {
        debug_assert!(fsutil::is_relative_below(name), "headers_of checked {name:?}");
        private.create_new(name, source.as_bytes()).map_err(|_| CL_OUT_OF_HOST_MEMORY)?;
    }
    Ok(Some(dir))
}

/// Compile: record the options and headers; the program becomes a compiled object whose
/// source a link concatenates and builds (so compile errors surface at the link).
///
/// # Safety
/// Pointers per OpenCL's clCompileProgram.
#[cl_entrypoint(clCompileProgram)]
unsafe fn compile_program(
    program: Handle,
    n: cl_uint,
    list: *const Handle,
    options: *const c_char,
    num_headers: cl_uint,
    headers: *const Handle,
    names: *const *const c_char,
    notify: Option<BuildNotify>,
    user_data: *mut c_void,
) -> ClResult<()> {
    // SAFETY: the caller's contract.
    let (p, devs, opts) = unsafe { build_request(program, n, list, options, notify, user_data) }?;
    // SAFETY: the caller's contract.
    let hs = unsafe { headers_of(num_headers, headers, names) }?;
    let r = p.compile(&devs, &opts, hs);
    if let Some(f) = notify {
        // SAFETY: the application's callback with its user data.
        unsafe { f(program, user_data) };
    }
    r
}

const CL_LINK_PROGRAM_FAILURE: cl_int = -17;

/// Link: each device's vendor linker on the inputs' objects (a library: on their units,
/// with `-create-library`); where a vendor has none, one program from the concatenated
/// sources of the inputs, built with `options`.
///
/// # Safety
/// Pointers per OpenCL's clLinkProgram.
#[cl_entrypoint(clLinkProgram)]
unsafe fn link_program(
    c: Arc<Obj<Context>>,
    n: cl_uint,
    list: *const Handle,
    options: *const c_char,
    num_inputs: cl_uint,
    inputs: *const Handle,
    notify: Option<BuildNotify>,
    user_data: *mut c_void,
) -> ClResult<Handle> {
    if notify.is_none() && !user_data.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    // CL_INVALID_VALUE if num_input_programs is zero and input_programs is NULL or if
    // num_input_programs is zero and input_programs is not NULL or if num_input_programs
    // is not zero and input_programs is NULL.
    if num_inputs == 0 || inputs.is_null() || list.is_null() != (n == 0) {
        return Err(CL_INVALID_VALUE);
    }
    // SAFETY: the caller's contract: `n` device handles.
    let devs = if list.is_null() { c.devices.clone() } else { unsafe { super::platform::device_list(c.platform, n, list) }? };
    let mut source = String::new();
    let mut compile_opts = String::new();
    let mut headers = Vec::new();
    let mut ins = Vec::new();
    // SAFETY: the caller's contract: `num_inputs` program handles.
    for &h in unsafe { slice(inputs, num_inputs as usize) }? {
        let p = icd::get::<Program>(h)?;
        ins.push(p.clone());
        // CL_INVALID_OPERATION if the compilation or build of a program executable for any of
        // the devices listed in device_list by a previous call to clCompileProgram [...] has not
        // completed.
        if p.built().is_empty() {
            return Err(CL_INVALID_OPERATION);
        }
        source.push_str(&p.source);
        source.push('\n');
        let st = p.state.lock().unwrap_or_else(|e| e.into_inner());
        if compile_opts.is_empty() {
            compile_opts = st.options.clone();
        }
        headers.extend(st.headers.iter().cloned());
    }
    // SAFETY: the caller's contract: `options` null or NUL-terminated.
    let opts = unsafe { c_str(options) }.map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    let library = opts.contains("-create-library");
    // The vendors' own linkers where every input was compiled by them; a library the
    // vendors cannot make is made from the sources, below, and built when linked into
    // a program.
    let native = if library { None } else { link_native(&c, &devs, &opts, &ins) };
    let h = new_program(&c, devs.clone(), source);
    let p = icd::get::<Program>(h)?;
    if library {
        let units: Vec<Unit> = ins.iter().flat_map(|i| i.units_of()).collect();
        if p.library_native(&devs, &units) {
            if let Some(f) = notify {
                // SAFETY: the caller's contract: `notify` may be called with `user_data`.
                unsafe { f(h, user_data) };
            }
            return Ok(h);
        }
    }
    let r = match native {
        Some(results) => {
            if p.record(results, &opts, CL_PROGRAM_BINARY_TYPE_EXECUTABLE) {
                Err(CL_LINK_PROGRAM_FAILURE)
            } else {
                Ok(())
            }
        }
        None => {
            // Compile options that are preprocessor settings still apply; others are dropped.
            let mut defines: Vec<&str> = Vec::new();
            let mut words = compile_opts.split_whitespace();
            while let Some(o) = words.next() {
                if o == "-D" || o == "-I" {
                    defines.push(o);
                    defines.extend(words.next());
                } else if o.starts_with("-D") || o.starts_with("-I") {
                    defines.push(o);
                }
            }
            let keep = if library { String::new() } else { opts.clone() };
            let built = p.build_with_headers(&devs, &headers, |include| {
                format!("{}{include} {}", defines.join(" "), keep.replace("-enable-link-options", ""))
            });
            if library {
                // Its binary carries its inputs' units.
                let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
                st.binary_type = CL_PROGRAM_BINARY_TYPE_LIBRARY;
                st.units = ins.iter().flat_map(|i| i.units_of()).collect();
            }
            built
        }
    };
    if let Some(f) = notify {
        // SAFETY: the caller's contract: `notify` may be called with `user_data`.
        unsafe { f(h, user_data) };
    }
    match r {
        Ok(()) => Ok(h),
        // The build from sources reports a build failure: for the caller, the link failed.
        Err(e) => link_failed(h, &p, if e == CL_BUILD_PROGRAM_FAILURE { CL_LINK_PROGRAM_FAILURE } else { e }),
    }
}

/// A failed link: no program to ask the log of, so the log is printed, as a vendor's
/// linker would; the program is released.
fn link_failed(h: Handle, p: &Program, e: cl_int) -> ClResult<Handle> {
    let st = p.state.lock().unwrap_or_else(|e| e.into_inner());
    let logs: Vec<&str> = st.builds.iter().flatten().map(|b| b.log.trim_end()).filter(|l| !l.is_empty()).collect();
    eprintln!("weft: clLinkProgram failed:\n{}", logs.join("\n"));
    drop(st);
    let _ = icd::release::<Program>(h);
    Err(e)
}

/// Link `inputs` with each real device's vendor linker: None unless every input has a
/// compiled object ([`DeviceBuild::object`]) on every real device `devs` stand for; else a
/// build per device (a failed one with the vendor's link log).
fn link_native(c: &Context, devs: &[DeviceKind], options: &str, inputs: &[Arc<Obj<Program>>]) -> Option<Vec<(usize, DeviceBuild)>> {
    if link_from_source() {
        return None;
    }
    let p = c.platform;
    let reals = p.reals_of(devs);
    // Each input's objects, one input locked at a time (an input may be given twice).
    let mut objects: Vec<Vec<VendorProgram>> = reals.iter().map(|_| Vec::new()).collect();
    for input in inputs {
        let st = input.state.lock().unwrap_or_else(|e| e.into_inner());
        for (j, &i) in reals.iter().enumerate() {
            objects[j].push(st.builds.get(i)?.as_ref()?.object.as_ref()?.try_clone().ok()?);
        }
    }
    let mut out = Vec::new();
    for (j, &i) in reals.iter().enumerate() {
        let dev = &p.real[i].1;
        let refs: Vec<&VendorProgram> = objects[j].iter().collect();
        out.push((
            i,
            vendor_link(dev, options, &refs).unwrap_or_else(|(e, log)| {
                relink_without_arg_info(dev, options, inputs)
                    .unwrap_or_else(|| DeviceBuild::new(CL_BUILD_ERROR, if log.is_empty() { format!("clLinkProgram: {e}") } else { log }))
            }),
        ));
    }
    Some(out)
}

/// A second try at a failed vendor link, from objects compiled without the
/// `-cl-kernel-arg-info` Weft adds: NVIDIA's linker (driver 580) fails, with an empty log,
/// on objects so compiled that hold a kernel without arguments (pyopencl's
/// `test_compile_link`). The linked kernels then have no argument info, and
/// `clSetKernelArg` tells buffers from values by the value (`ArgKind::Unknown`).
fn relink_without_arg_info(dev: &OpenClDevice, options: &str, inputs: &[Arc<Obj<Program>>]) -> Option<DeviceBuild> {
    let mut objects = Vec::with_capacity(inputs.len());
    for input in inputs {
        let (opts, headers) = {
            let st = input.state.lock().unwrap_or_else(|e| e.into_inner());
            (st.options.clone(), st.headers.clone())
        };
        objects.push(compile_on(dev, &input.source, &opts, &headers).ok()?.object?);
    }
    let refs: Vec<&VendorProgram> = objects.iter().collect();
    vendor_link(dev, options, &refs).ok()
}

/// The device's vendor linker on `objects`: the linked build with its log, or the error
/// and the failed link's log.
fn vendor_link(
    dev: &OpenClDevice,
    options: &str,
    objects: &[&VendorProgram],
) -> Result<DeviceBuild, (weft_vendors::opencl::ClError, String)> {
    let vp = VendorProgram::link(dev.context(), dev.id(), options, objects)?;
    let log = vp.build_log(dev.id()).unwrap_or_default();
    Ok(DeviceBuild { program: Some(vp), ..DeviceBuild::new(CL_BUILD_SUCCESS, log) })
}

/// `CL_PROGRAM_KERNEL_NAMES` from the vendor.
pub fn vendor_names(p: &Program) -> ClResult<Vec<u8>> {
    vendor_info(p, CL_PROGRAM_KERNEL_NAMES)
}

/// The vendor's answer for a built program (kernel names and count).
fn vendor_info(p: &Program, param: cl_uint) -> ClResult<Vec<u8>> {
    let built = p.built();
    // CL_INVALID_PROGRAM_EXECUTABLE if a successful program executable has not been built
    // for at least one device in the list of devices associated with program.
    let &i = built.first().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
    let st = p.state.lock().unwrap_or_else(|e| e.into_inner());
    let vp = st.builds[i].as_ref().and_then(|b| b.program.as_ref()).ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
    // SAFETY: the vendor program is live while `st` holds it.
    unsafe { weft_vendors::opencl::result::get_program_info(vp.as_raw(), param) }.map_err(|e| e.0)
}

/// # Safety
/// `value` null or writable for `size` bytes (for `CL_PROGRAM_BINARIES`, an array of
/// pointers each null or writable for its binary's size); `size_ret` null or writable.
#[cl_entrypoint(clGetProgramInfo)]
unsafe fn get_program_info(program: Handle, param: cl_uint, size: usize, value: *mut c_void, size_ret: *mut usize) -> ClResult<()> {
    let p = icd::get::<Program>(program)?;
    let plat = p.context.platform;
    let built_any = !p.built().is_empty();
    let bytes = match param {
        CL_PROGRAM_REFERENCE_COUNT => info_val(icd::refcount::<Program>(program)),
        CL_PROGRAM_CONTEXT => info_ptr(icd::handle_of(&p.context)),
        CL_PROGRAM_NUM_DEVICES => info_val(p.devices.len() as cl_uint),
        CL_PROGRAM_DEVICES => info_vals(&p.devices.iter().map(|&k| plat.handle(k) as usize).collect::<Vec<_>>()),
        CL_PROGRAM_SOURCE => info_str(&p.source),
        CL_PROGRAM_BINARY_SIZES => {
            let n = if built_any { p.binary().len() } else { 0 };
            info_vals(&vec![n; p.devices.len()])
        }
        CL_PROGRAM_BINARIES => {
            let ptrs = vec![0usize; p.devices.len()];
            let need = ptrs.len() * size_of::<usize>();
            if !value.is_null() {
                if size < need {
                    return Err(CL_INVALID_VALUE);
                }
                let bin = p.binary();
                // SAFETY: the caller's contract: an array of `devices` pointers.
                let dsts = unsafe { slice(value.cast::<*mut u8>().cast_const(), ptrs.len()) }?;
                for &d in dsts {
                    if built_any && !d.is_null() {
                        // SAFETY: the caller's contract: each non-null entry holds the binary's size.
                        unsafe { std::ptr::copy_nonoverlapping(bin.as_ptr(), d, bin.len()) };
                    }
                }
            }
            if !size_ret.is_null() {
                // SAFETY: the caller's contract.
                unsafe { size_ret.write_unaligned(need) };
            }
            return Ok(());
        }
        CL_PROGRAM_NUM_KERNELS | CL_PROGRAM_KERNEL_NAMES => vendor_info(&p, param)?,
        // CL_PROGRAM_IL: none (Weft takes no IL programs).
        0x1169 => Vec::new(),
        // CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT / _DTORS_PRESENT: no device of Weft's
        // supports program initialization and clean-up kernels.
        0x116A | 0x116B => info_val::<cl_bool>(CL_FALSE),
        _ => return Err(CL_INVALID_VALUE),
    };
    // SAFETY: the caller's contract.
    unsafe { write_info(&bytes, size, value, size_ret) }
}

#[cl_entrypoint(clGetProgramBuildInfo)]
fn get_program_build_info(p: Arc<Obj<Program>>, device: Handle, param: cl_uint) -> ClResult<Info> {
    let d = p.context.platform.device(device)?;
    // CL_INVALID_DEVICE if device is not in the list of devices associated with program.
    if !p.devices.contains(&d.kind) {
        return Err(CL_INVALID_DEVICE);
    }
    let st = p.state.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = match param {
        CL_PROGRAM_BUILD_STATUS => {
            drop(st);
            info_val(p.status(d.kind))
        }
        CL_PROGRAM_BUILD_OPTIONS => info_str(&st.options),
        CL_PROGRAM_BUILD_LOG => {
            let reals = p.context.platform.reals(d.kind);
            let logs: Vec<String> = reals
                .iter()
                .filter_map(|&i| st.builds.get(i).and_then(|b| b.as_ref()).map(|b| b.log.trim_end().to_owned()))
                .filter(|l| !l.is_empty())
                .collect();
            info_str(&logs.join("\n"))
        }
        // NONE (0) until a build, compile or link, or an executable's binary, sets it.
        CL_PROGRAM_BINARY_TYPE => info_val(st.binary_type),
        // CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE: 0, Weft's devices report no
        // program-scope global variables (CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE 0).
        0x1185 => info_val(0usize),
        _ => return Err(CL_INVALID_VALUE),
    };
    Ok(Info(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn header_dir_is_private_randomly_named_and_removed_on_drop() {
        let hs = |v: &[(&str, &str)]| v.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect::<Vec<_>>();
        assert!(header_dir(&[]).unwrap().is_none());
        let a = header_dir(&hs(&[("inc/sub/a.h", "int a;"), ("b.h", "first"), ("b.h", "second")])).unwrap().unwrap();
        let b = header_dir(&hs(&[("x.h", "")])).unwrap().unwrap();
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("weft-cl-headers-"), "{name}");
        assert!(!name.starts_with(&format!("weft-cl-headers-{}-", std::process::id())), "a predictable name: {name}");
        let mode = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(a.path()), 0o700);
        assert_eq!(mode(&a.path().join("inc/sub")), 0o700);
        assert_eq!(std::fs::read_to_string(a.path().join("inc/sub/a.h")).unwrap(), "int a;");
        assert_eq!(std::fs::read_to_string(a.path().join("b.h")).unwrap(), "first", "the first of two names is kept");
        let path = a.path().to_owned();
        drop(a);
        assert!(!path.exists());
    }
}
