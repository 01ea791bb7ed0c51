//! Building OpenCL programs per device, with an in-memory and an on-disk cache, and
//! setting kernel arguments the way core's codelets pass them.
//!
//! **Owns**: [`ProgramCache`] and its file format; [`OpenClDevice::build_program`] and
//! [`OpenClDevice::create_kernel`].
//! **Does not own**: where the cache lives (core's config decides and passes the
//! directory; [`ProgramCache::default_dir`] is a suggestion) or which source a codelet
//! uses.
//!
//! Cache keys: in memory, (context, device, options, source), so a program is reused only
//! in the context it was built in; on disk, a file named by a 64-bit FNV-1a hash of the
//! device's [`identity`](OpenClDevice::identity) (platform and device names and versions),
//! the options and the source, holding those three in full (so a hash collision or a
//! driver update is a miss, never a wrong binary) and the `CL_PROGRAM_BINARIES` blob.
//! A file that does not load or build is rebuilt from source and overwritten. Files are
//! written to a temporary name and renamed, so concurrent writers never tear one.
//!
//! A binary is code this process will run, so the cache follows [`crate::fsutil`]'s trust
//! rule: the directory (created 0700) and each file (written 0600) must be the effective
//! user's and neither group- nor world-writable, and files are opened without following
//! symbolic links. A file or directory that fails the rule is never loaded: the cache
//! prints one warning, builds from source, and replaces the file (in a trusted directory)
//! or keeps the program in memory only (in an untrusted one).
//!
//! File format (`*.clbin`): `WEFTCLBIN1\n`, then three length-prefixed byte strings
//! (identity, options, source) and the binary, each prefix a little-endian `u64`.

use super::OpenClError;
use super::device::OpenClDevice;
use super::memory::raw_mem;
use super::result::ClError;
use super::safe::{Kernel, Program};
use crate::Buffer;
use crate::fsutil::{self, PrivateDir};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const MAGIC: &[u8] = b"WEFTCLBIN1\n";

/// How a [`ProgramCache`] served its requests so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Programs compiled from source.
    pub source_builds: u64,
    /// Requests served by an already built program in memory.
    pub memory_hits: u64,
    /// Programs built from a binary found on disk.
    pub disk_hits: u64,
    /// Binaries written to disk.
    pub disk_writes: u64,
}

#[derive(Hash, PartialEq, Eq)]
struct MemKey {
    context: usize,
    device: usize,
    options: String,
    source: String,
}

/// Built programs, per (context, device, options, source), backed by a directory of
/// binaries. Share one per process.
pub struct ProgramCache {
    dir: Option<PathBuf>,
    programs: Mutex<HashMap<MemKey, Program>>,
    source_builds: AtomicU64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    disk_writes: AtomicU64,
    /// Whether the warning about an untrusted directory or file was printed (once per cache).
    warned: AtomicBool,
}

impl std::fmt::Debug for ProgramCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramCache").field("dir", &self.dir).field("stats", &self.stats()).finish()
    }
}

impl ProgramCache {
    /// A cache keeping binaries in `dir` (created, mode 0700, when first written), or in
    /// memory only.
    pub fn new(dir: Option<PathBuf>) -> ProgramCache {
        ProgramCache {
            dir,
            programs: Mutex::new(HashMap::new()),
            source_builds: AtomicU64::new(0),
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            disk_writes: AtomicU64::new(0),
            warned: AtomicBool::new(false),
        }
    }

    /// `$WEFT_HOME/kernels`, else `$XDG_CACHE_HOME/weft/kernels`, else
    /// `$HOME/.cache/weft/kernels`; `None` without any of them.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |v| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from);
        var("WEFT_HOME")
            .map(|h| h.join("kernels"))
            .or_else(|| var("XDG_CACHE_HOME").map(|c| c.join("weft/kernels")))
            .or_else(|| var("HOME").map(|h| h.join(".cache/weft/kernels")))
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    pub fn stats(&self) -> CacheStats {
        // Relaxed: statistics, read for display and tests after the builds returned.
        CacheStats {
            source_builds: self.source_builds.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            disk_writes: self.disk_writes.load(Ordering::Relaxed),
        }
    }

    /// The file a program for (`identity`, `options`, `source`) is kept in.
    pub fn file_for(&self, identity: &str, options: &str, source: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(file_name(identity, options, source)))
    }

    /// Prints the warning about `e` (an untrusted directory or file) unless this cache has
    /// printed one already; other errors only cost a rebuild and are not reported.
    fn warn_untrusted(&self, e: &std::io::Error) {
        // Relaxed: only which thread prints matters, nothing is published through the flag.
        if fsutil::is_untrusted(e) && !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!("weft: ignoring the OpenCL kernel cache: {e}; building from source");
        }
    }
}

/// The name of the file a program for (`identity`, `options`, `source`) is kept in.
fn file_name(identity: &str, options: &str, source: &str) -> String {
    let mut h = Fnv1a::new();
    for part in [identity, options, source] {
        h.write(&(part.len() as u64).to_le_bytes());
        h.write(part.as_bytes());
    }
    format!("{:016x}.clbin", h.0)
}

/// 64-bit FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

fn encode(parts: [&[u8]; 4]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// The binary of a cache file if its identity, options and source match.
fn decode<'a>(file: &'a [u8], expect: [&[u8]; 3]) -> Option<&'a [u8]> {
    let mut rest = file.strip_prefix(MAGIC)?;
    let mut next = || -> Option<&'a [u8]> {
        let (len, tail) = rest.split_at_checked(8)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
        let (part, tail) = tail.split_at_checked(len)?;
        rest = tail;
        Some(part)
    };
    for e in expect {
        if next()? != e {
            return None;
        }
    }
    let bin = next()?;
    (!bin.is_empty()).then_some(bin)
}

impl OpenClDevice {
    /// The program of `source` built for this device with `options`, from `cache` if it
    /// has it. A failed compilation is [`OpenClError::Build`], with the build log.
    pub fn build_program(&self, cache: &ProgramCache, source: &str, options: &str) -> Result<Program, OpenClError> {
        let key = MemKey {
            context: self.context.as_raw() as usize,
            device: self.id.as_raw() as usize,
            options: options.to_owned(),
            source: source.to_owned(),
        };
        if let Some(p) = cache.programs.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            cache.memory_hits.fetch_add(1, Ordering::Relaxed);
            return p.try_clone().map_err(|code| OpenClError::Call { call: "clRetainProgram", code });
        }
        // Built without holding the lock: compiling takes long, and two threads building
        // the same program at once only waste work (the second insert wins).
        let name = file_name(self.identity(), options, source);
        let program = match cache.dir.as_deref().and_then(|d| self.load_binary(cache, d, &name, options, source)) {
            Some(p) => {
                cache.disk_hits.fetch_add(1, Ordering::Relaxed);
                p
            }
            None => {
                let p = self.build_from_source(source, options)?;
                cache.source_builds.fetch_add(1, Ordering::Relaxed);
                if cache.dir.as_deref().is_some_and(|d| self.store_binary(cache, &p, d, &name, options, source)) {
                    cache.disk_writes.fetch_add(1, Ordering::Relaxed);
                }
                p
            }
        };
        let mine = program.try_clone().map_err(|code| OpenClError::Call { call: "clRetainProgram", code })?;
        cache.programs.lock().unwrap_or_else(|e| e.into_inner()).insert(key, program);
        Ok(mine)
    }

    fn build_from_source(&self, source: &str, options: &str) -> Result<Program, OpenClError> {
        let p =
            Program::from_source(&self.context, source).map_err(|code| OpenClError::Call { call: "clCreateProgramWithSource", code })?;
        p.build(self.id, options).map_err(|code| OpenClError::Build {
            device: self.name_and_platform(),
            code,
            log: p.build_log(self.id).unwrap_or_else(|e| format!("(no build log: {e})")),
        })?;
        Ok(p)
    }

    /// The program in file `name` of `dir`, if that is a trusted file holding a binary
    /// for these options and source that the vendor loads and builds.
    fn load_binary(&self, cache: &ProgramCache, dir: &Path, name: &str, options: &str, source: &str) -> Option<Program> {
        let read = PrivateDir::open(dir).and_then(|d| d.read(name));
        let bytes = read.inspect_err(|e| cache.warn_untrusted(e)).ok()??;
        let bin = decode(&bytes, [self.identity().as_bytes(), options.as_bytes(), source.as_bytes()])?;
        let p = Program::from_binary(&self.context, self.id, bin).ok()?;
        p.build(self.id, options).ok()?;
        Some(p)
    }

    /// Write `p`'s binary to file `name` of `dir` (created 0700 if missing); false if the
    /// vendor gives none, the directory is untrusted or the write fails (a cache that cannot
    /// be written only costs rebuilds).
    fn store_binary(&self, cache: &ProgramCache, p: &Program, dir: &Path, name: &str, options: &str, source: &str) -> bool {
        let Ok(bin) = p.binary() else { return false };
        if bin.is_empty() {
            return false;
        }
        let data = encode([self.identity().as_bytes(), options.as_bytes(), source.as_bytes(), &bin]);
        let written = PrivateDir::create(dir).and_then(|d| d.write_atomic(name, &data));
        written.inspect_err(|e| cache.warn_untrusted(e)).is_ok()
    }

    fn name_and_platform(&self) -> String {
        format!("{} ({})", crate::Device::name(self), self.platform_name())
    }

    /// Kernel `name` of a program built for this device.
    pub fn create_kernel(&self, program: &Program, name: &str) -> Result<Kernel, OpenClError> {
        Kernel::new(program, name).map_err(|code| OpenClError::Kernel { name: name.to_owned(), code })
    }
}

impl Kernel {
    /// Set argument `index` to a buffer from [`crate::Device::alloc`].
    ///
    /// # Safety
    /// `buf` is a live buffer of the device whose context the kernel belongs to, and
    /// stays allocated until every launch using this argument completes.
    pub unsafe fn set_arg_buffer(&mut self, index: u32, buf: Buffer) -> Result<(), ClError> {
        // SAFETY: forwarded contract.
        unsafe { self.set_arg_raw_mem(index, raw_mem(buf)) }
    }

    /// Set the arguments as core passes a task (see the module doc of `opencl`): the
    /// task's buffers first, in access order, then each by-value argument.
    ///
    /// # Safety
    /// As [`Kernel::set_arg_buffer`], for every buffer.
    pub unsafe fn set_task_args(&mut self, buffers: &[Buffer], values: &[&[u8]]) -> Result<(), ClError> {
        for (i, b) in buffers.iter().enumerate() {
            // SAFETY: forwarded contract.
            unsafe { self.set_arg_buffer(i as u32, *b) }?;
        }
        for (j, v) in values.iter().enumerate() {
            self.set_arg_bytes((buffers.len() + j) as u32, v)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_files_round_trip_and_reject_other_keys() {
        let f = encode([b"dev", b"-O2", b"src", b"BIN"]);
        assert_eq!(decode(&f, [b"dev", b"-O2", b"src"]), Some(&b"BIN"[..]));
        assert_eq!(decode(&f, [b"dev", b"-O2", b"other"]), None);
        assert_eq!(decode(&f[..f.len() - 1], [b"dev", b"-O2", b"src"]), None);
        assert_eq!(decode(b"junk", [b"dev", b"-O2", b"src"]), None);
    }

    #[test]
    fn file_names_depend_on_every_key_part() {
        let c = ProgramCache::new(Some(PathBuf::from("/x")));
        let a = c.file_for("d", "o", "s").unwrap();
        assert_ne!(a, c.file_for("d", "o", "s2").unwrap());
        assert_ne!(a, c.file_for("d", "o2", "s").unwrap());
        assert_ne!(a, c.file_for("d2", "o", "s").unwrap());
        // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
        assert_ne!(c.file_for("ab", "c", "s"), c.file_for("a", "bc", "s"));
        assert!(ProgramCache::new(None).file_for("d", "o", "s").is_none());
    }
}
