//! CUDA C kernels: NVRTC compilation to PTX with an in-memory cache, modules, functions
//! and launch dimensions.
//!
//! **Owns**: [`KernelCache`] (PTX by source hash, modules per context),
//! [`CudaDevice::build_module`], [`CudaDevice::kernel`], [`LaunchDims`].
//! **Does not own**: the launch itself (`queue`), or which source a codelet uses.
//!
//! PTX is compiled for the device's virtual architecture (`compute_XY` from its compute
//! capability), so devices of one capability share it; the driver JIT-compiles PTX into
//! machine code when a module is loaded (and caches that on disk itself, in
//! `~/.nv/ComputeCache`). An NVRTC too old to know the device's architecture rejects the
//! option: the source is then compiled for NVRTC's default one, which newer devices run.
//!
//! Cache keys: a 64-bit FNV-1a hash of (architecture, options, source), with length
//! prefixes; an entry keeps the three in full, so a hash collision is a miss (and a
//! recompilation), never a wrong kernel. Modules are cached per (context, hash).
//!
//! Kernels are looked up by name, so their names must not be mangled: declare them
//! `extern "C" __global__`.

use super::device::CudaDevice;
use super::{CudaError, nvrtc_present};
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, sys::nvrtcResult};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How a [`KernelCache`] served its requests so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Sources compiled by NVRTC.
    pub nvrtc_compiles: u64,
    /// Requests served by PTX already compiled (for another device of the same
    /// architecture, or after a module was loaded in another context).
    pub ptx_hits: u64,
    /// Modules loaded into a context (`cuModuleLoadData`).
    pub module_loads: u64,
    /// Requests served by a module already loaded in the device's context.
    pub module_hits: u64,
}

struct PtxEntry {
    arch: String,
    options: String,
    source: String,
    ptx: Ptx,
}

/// Compiled PTX by source hash, and loaded modules per context. Share one per process.
#[derive(Default)]
pub struct KernelCache {
    ptx: Mutex<HashMap<u64, PtxEntry>>,
    modules: Mutex<HashMap<(usize, u64), Arc<CudaModule>>>,
    nvrtc_compiles: AtomicU64,
    ptx_hits: AtomicU64,
    module_loads: AtomicU64,
    module_hits: AtomicU64,
}

impl std::fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCache").field("stats", &self.stats()).finish()
    }
}

impl KernelCache {
    pub fn new() -> KernelCache {
        KernelCache::default()
    }

    pub fn stats(&self) -> CacheStats {
        // Relaxed: statistics, read for display and tests after the builds returned.
        CacheStats {
            nvrtc_compiles: self.nvrtc_compiles.load(Ordering::Relaxed),
            ptx_hits: self.ptx_hits.load(Ordering::Relaxed),
            module_loads: self.module_loads.load(Ordering::Relaxed),
            module_hits: self.module_hits.load(Ordering::Relaxed),
        }
    }

    /// The PTX of `source` for `arch`, compiled now or found in the cache.
    fn ptx(&self, device: &str, arch: &str, source: &str, options: &str) -> Result<(u64, Ptx), CudaError> {
        let hash = key_hash(arch, options, source);
        let same = |e: &PtxEntry| e.arch == arch && e.options == options && e.source == source;
        if let Some(e) = self.ptx.lock().unwrap_or_else(|e| e.into_inner()).get(&hash).filter(|e| same(e)) {
            self.ptx_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((hash, e.ptx.clone()));
        }
        // Compiled without holding the lock: two threads compiling one source only waste work.
        let ptx = compile(device, arch, source, options)?;
        self.nvrtc_compiles.fetch_add(1, Ordering::Relaxed);
        let entry = PtxEntry { arch: arch.to_owned(), options: options.to_owned(), source: source.to_owned(), ptx: ptx.clone() };
        self.ptx.lock().unwrap_or_else(|e| e.into_inner()).insert(hash, entry);
        Ok((hash, ptx))
    }
}

/// 64-bit FNV-1a of length-prefixed parts: stable across Rust versions.
fn key_hash(arch: &str, options: &str, source: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [arch, options, source] {
        for &b in (part.len() as u64).to_le_bytes().iter().chain(part.as_bytes()) {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// NVRTC's options for one compilation: the architecture (if any), then the caller's,
/// split at white space.
fn nvrtc_options(arch: Option<&str>, options: &str) -> Vec<String> {
    arch.map(|a| format!("--gpu-architecture={a}")).into_iter().chain(options.split_whitespace().map(str::to_owned)).collect()
}

fn compile(device: &str, arch: &str, source: &str, options: &str) -> Result<Ptx, CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    // cudarc turns these into C strings with `unwrap`: refuse them here instead.
    if source.contains('\0') || options.contains('\0') {
        return Err(CudaError::Invalid("a CUDA source or its options contain a NUL byte".into()));
    }
    let run = |arch: Option<&str>| {
        let opts = CompileOptions { options: nvrtc_options(arch, options), ..CompileOptions::default() };
        catch_unwind(AssertUnwindSafe(|| cudarc::nvrtc::compile_ptx_with_opts(source, opts)))
            .unwrap_or(Err(CompileError::CreationError(cudarc::nvrtc::result::NvrtcError(nvrtcResult::NVRTC_ERROR_INTERNAL_ERROR))))
    };
    let first = run(Some(arch));
    let result = match first {
        // An NVRTC older than the device does not know its architecture: use its default.
        Err(CompileError::CompileError { nvrtc, .. }) if nvrtc.0 == nvrtcResult::NVRTC_ERROR_INVALID_OPTION => run(None),
        other => other,
    };
    result.map_err(|e| match e {
        CompileError::CompileError { nvrtc, log, .. } => {
            CudaError::Build { device: device.to_owned(), code: format!("{:?}", nvrtc.0), log: log.to_string_lossy().into_owned() }
        }
        other => CudaError::Nvrtc(format!("{other:?}")),
    })
}

/// A kernel of a loaded module, ready to launch with [`CudaDevice::launch`].
#[derive(Debug, Clone)]
pub struct CudaKernel {
    pub(crate) name: String,
    pub(crate) function: CudaFunction,
}

impl CudaKernel {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// cudarc's function (for occupancy queries and attributes).
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }
}

/// Grid and block sizes (in blocks and threads, x/y/z) and dynamic shared memory of a
/// launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

impl LaunchDims {
    /// A 1-D launch with at least `n` threads, in blocks of `block` threads.
    pub fn for_elements(n: usize, block: u32) -> LaunchDims {
        let block = block.max(1);
        let blocks = n.div_ceil(block as usize).clamp(1, u32::MAX as usize) as u32;
        LaunchDims { grid: (blocks, 1, 1), block: (block, 1, 1), shared_mem_bytes: 0 }
    }
}

impl CudaDevice {
    /// The virtual architecture NVRTC compiles for on this device (`compute_90`).
    pub fn arch(&self) -> String {
        let (major, minor) = self.compute_capability();
        format!("compute_{major}{minor}")
    }

    /// The module of CUDA C `source`, compiled with NVRTC `options` (white-space
    /// separated, e.g. `"-default-device --use_fast_math"`) and loaded into this device's
    /// context, from `cache` if it has it. A failed compilation is [`CudaError::Build`],
    /// with NVRTC's log.
    pub fn build_module(&self, cache: &KernelCache, source: &str, options: &str) -> Result<Arc<CudaModule>, CudaError> {
        let arch = self.arch();
        let hash = key_hash(&arch, options, source);
        let key = (self.context().cu_ctx() as usize, hash);
        if let Some(m) = cache.modules.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            // The PTX entry of this hash holds the full key: check it before trusting the hash.
            let ptx = cache.ptx.lock().unwrap_or_else(|e| e.into_inner());
            if ptx.get(&hash).is_some_and(|e| e.arch == arch && e.options == options && e.source == source) {
                cache.module_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(m.clone());
            }
        }
        let (_, ptx) = cache.ptx(crate::Device::name(self), &arch, source, options)?;
        let ctx = self.context().clone();
        let module = catch_unwind(AssertUnwindSafe(|| ctx.load_module(ptx)))
            .map_err(|_| CudaError::Panicked("cuModuleLoadData"))?
            .map_err(|e| CudaError::driver("cuModuleLoadData", e))?;
        cache.module_loads.fetch_add(1, Ordering::Relaxed);
        cache.modules.lock().unwrap_or_else(|e| e.into_inner()).insert(key, module.clone());
        Ok(module)
    }

    /// Kernel `name` (an `extern "C"` function) of a module loaded on this device.
    pub fn kernel(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaKernel, CudaError> {
        if name.contains('\0') {
            return Err(CudaError::Invalid(format!("kernel name {name:?} contains a NUL byte")));
        }
        let function =
            module.load_function(name).map_err(|e| CudaError::Kernel { name: name.to_owned(), code: super::conv::error_name(e.0) })?;
        Ok(CudaKernel { name: name.to_owned(), function })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_depend_on_every_key_part() {
        let a = key_hash("compute_90", "-O3", "src");
        assert_eq!(a, key_hash("compute_90", "-O3", "src"));
        assert_ne!(a, key_hash("compute_80", "-O3", "src"));
        assert_ne!(a, key_hash("compute_90", "", "src"));
        assert_ne!(a, key_hash("compute_90", "-O3", "src2"));
        // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
        assert_ne!(key_hash("x", "ab", "c"), key_hash("x", "a", "bc"));
    }

    #[test]
    fn options_put_the_architecture_first() {
        assert_eq!(
            nvrtc_options(Some("compute_90"), " -lineinfo  --use_fast_math "),
            ["--gpu-architecture=compute_90", "-lineinfo", "--use_fast_math"]
        );
        assert!(nvrtc_options(None, "").is_empty());
    }

    #[test]
    fn linear_launches_cover_every_element() {
        assert_eq!(LaunchDims::for_elements(1000, 256).grid, (4, 1, 1));
        assert_eq!(LaunchDims::for_elements(1024, 256).grid, (4, 1, 1));
        assert_eq!(LaunchDims::for_elements(0, 256).grid, (1, 1, 1));
        assert_eq!(LaunchDims::for_elements(5, 0).block, (1, 1, 1));
    }
}
