//! Weft's own files on a machine other users share: the kernel cache (`$WEFT_HOME/kernels`),
//! the performance and bus models (`$WEFT_HOME/models`, `$WEFT_HOME/bus`) and the private
//! directory clCompileProgram's headers are written to for a build.
//!
//! **Owns**: the rule that decides whether a directory or file is trusted, reading a file
//! back through that rule, replacing a file atomically, and creating files and
//! subdirectories below a directory without following symbolic links.
//! **Does not own**: where these files live (core's `config`), their formats, or what a
//! caller does with an untrusted file (each warns once and rebuilds or measures again).
//!
//! Trust rule: a directory or file is used only if it is owned by the effective user and is
//! neither group- nor world-writable (so no other user could have written it, nor could have
//! put a file or link in it), and a file read back must be a regular file. The rule is
//! checked with `fstat` on the open descriptor, and every file is then reached relative to
//! the directory's descriptor (`openat`, `O_NOFOLLOW`): what was checked is what is used,
//! and renaming or replacing a path component afterwards redirects nothing. The path to a
//! [`PrivateDir`] may pass through symbolic links; whatever it ends at is checked.
//!
//! Invariants: every directory created here is created with mode 0700 and every file with
//! mode 0600 (the umask can only remove bits); a file is replaced only by `renameat` of a
//! complete temporary file created with `O_EXCL` beside it, so a reader sees the old file or
//! the new one, never half of one.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Mode of the directories created here.
pub const DIR_MODE: u32 = 0o700;
/// Mode of the files created here.
pub const FILE_MODE: u32 = 0o600;

/// Why a directory or file is not used: it is carried inside an [`io::Error`] of kind
/// `PermissionDenied`; [`is_untrusted`] tells it from other errors.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path} {why}; Weft uses only its own files (owned by uid {euid}, not group- or world-writable)")]
pub struct Untrusted {
    what: &'static str,
    path: PathBuf,
    why: String,
    euid: u32,
}

/// Whether `e` says a directory or file failed the trust rule (rather than could not be read).
pub fn is_untrusted(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Untrusted>())
}

fn untrusted(what: &'static str, path: &Path, why: String) -> io::Error {
    let euid = rustix::process::geteuid().as_raw();
    io::Error::new(io::ErrorKind::PermissionDenied, Untrusted { what, path: path.to_owned(), why, euid })
}

/// Checks the trust rule on the open `fd` (a `what`, of type `kind`, at `path`).
fn check(fd: &OwnedFd, what: &'static str, kind: FileType, path: &Path) -> io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    let euid = rustix::process::geteuid().as_raw();
    let ty = FileType::from_raw_mode(st.st_mode);
    if ty != kind {
        return Err(untrusted(what, path, format!("is a {ty:?}, not a {kind:?}")));
    }
    if st.st_uid != euid {
        return Err(untrusted(what, path, format!("is owned by uid {}", st.st_uid)));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(untrusted(what, path, format!("is writable by other users (mode {:o})", st.st_mode & 0o7777)));
    }
    Ok(())
}

/// `name` as one plain file name (no `/`, not `.` or `..`, not empty), else `InvalidInput`.
fn single(name: &str) -> io::Result<&str> {
    let mut c = Path::new(name).components();
    match (c.next(), c.next()) {
        (Some(Component::Normal(n)), None) if n == name => Ok(name),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not a plain file name"))),
    }
}

/// Whether `name` names a file strictly below a directory: relative, not empty, no `..`,
/// ending in a file name (`inc/a.h`, `./a.h`; not `/a.h`, `../a.h`, `a/../../b.h`, `a/`).
pub fn is_relative_below(name: &str) -> bool {
    let path = Path::new(name);
    !name.is_empty()
        && !name.ends_with('/')
        && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && matches!(path.components().next_back(), Some(Component::Normal(_)))
}

/// A directory that passed the trust rule, held open: its files are reached through it.
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl PrivateDir {
    /// The existing directory `path`, if trusted. `NotFound` if it does not exist; an
    /// [`Untrusted`] error if it is another user's or others can write it.
    pub fn open(path: &Path) -> io::Result<PrivateDir> {
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        check(&fd, "directory", FileType::Directory, path)?;
        Ok(PrivateDir { fd, path: path.to_owned() })
    }

    /// [`PrivateDir::open`], creating `path` and its missing parents (mode 0700) first.
    pub fn create(path: &Path) -> io::Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(path)?;
        PrivateDir::open(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The content of file `name` of this directory; `None` if there is none. A symbolic
    /// link, a non-regular file or a file that fails the trust rule is an [`Untrusted`] error.
    pub fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let name = single(name)?;
        let path = self.path.join(name);
        // NONBLOCK: opening a FIFO does not wait for a writer (it is refused just after).
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(untrusted("file", &path, "is a symbolic link".into())),
            Err(e) => return Err(e.into()),
        };
        check(&fd, "file", FileType::RegularFile, &path)?;
        let mut bytes = Vec::new();
        File::from(fd).read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }

    /// Replaces (or creates) file `name` with `data`: a temporary file created beside it
    /// (`O_EXCL`, a random name, mode 0600), written, synced, then renamed over `name`.
    pub fn write_atomic(&self, name: &str, data: &[u8]) -> io::Result<()> {
        let name = single(name)?;
        let (tmp, file) = self.create_temp(name)?;
        let written = (|| {
            let mut f = File::from(file);
            f.write_all(data)?;
            f.sync_all()?;
            rustix::fs::renameat(&self.fd, &tmp, &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
        }
        written
    }

    /// A new temporary file for `name` in this directory: its name and descriptor.
    fn create_temp(&self, name: &str) -> io::Result<(String, OwnedFd)> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut tries = 0;
        loop {
            // RandomState's keys are random per process and differ per instance, so two
            // processes or threads writing the same file pick different names; O_EXCL
            // refuses any name that exists all the same, and a few tries absorb that.
            let tag = RandomState::new().hash_one((std::process::id(), tries));
            let tmp = format!(".{name}.{tag:016x}.tmp");
            match rustix::fs::openat(&self.fd, tmp.as_str(), flags, Mode::from_raw_mode(FILE_MODE)) {
                Ok(fd) => return Ok((tmp, fd)),
                Err(Errno::EXIST) if tries < 8 => tries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// File `name` of this directory opened for reading and writing, created (mode 0600) if
    /// missing; never through a symbolic link, and an [`Untrusted`] error if it fails the
    /// trust rule. For lock files, which are never replaced.
    pub fn open_rw(&self, name: &str) -> io::Result<File> {
        let name = single(name)?;
        let path = self.path.join(name);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(FILE_MODE)) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => return Err(untrusted("file", &path, "is a symbolic link".into())),
            Err(e) => return Err(e.into()),
        };
        check(&fd, "file", FileType::RegularFile, &path)?;
        Ok(File::from(fd))
    }

    /// Creates file `rel` ([`is_relative_below`], e.g. `inc/a.h`) holding `data`, and the
    /// subdirectories on its way (mode 0700), none of them through a symbolic link. `false`
    /// (and nothing written) if the file exists already.
    pub fn create_new(&self, rel: &str, data: &[u8]) -> io::Result<bool> {
        if !is_relative_below(rel) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{rel:?} leaves its directory")));
        }
        let names: Vec<&std::ffi::OsStr> =
            Path::new(rel).components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
        let Some((file, dirs)) = names.split_last() else { unreachable!("is_relative_below: ends in a file name") };
        let mut dir: Option<OwnedFd> = None;
        for d in dirs {
            let at = dir.as_ref().unwrap_or(&self.fd);
            match rustix::fs::mkdirat(at, *d, Mode::from_raw_mode(DIR_MODE)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            // NOFOLLOW: an existing link named like the subdirectory is refused (ELOOP).
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            dir = Some(rustix::fs::openat(at, *d, flags, Mode::empty())?);
        }
        let at = dir.as_ref().unwrap_or(&self.fd);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(at, *file, flags, Mode::from_raw_mode(FILE_MODE)) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        File::from(fd).write_all(data)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A fresh path under the system's temporary directory (not created), removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            static N: AtomicU64 = AtomicU64::new(0);
            // Relaxed: the counter only has to differ between this process's threads.
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("weft-fsutil-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn create_makes_private_directories() {
        let s = Scratch::new("create");
        let d = PrivateDir::create(&s.0.join("a/b")).unwrap();
        assert_eq!(d.path(), s.0.join("a/b"));
        assert_eq!(mode(&s.0.join("a")), 0o700);
        assert_eq!(mode(&s.0.join("a/b")), 0o700);
    }

    #[test]
    fn write_atomic_replaces_the_whole_file_and_leaves_no_temporary() {
        let s = Scratch::new("atomic");
        let d = PrivateDir::create(&s.0).unwrap();
        assert_eq!(d.read("f").unwrap(), None);
        d.write_atomic("f", b"first version, rather long").unwrap();
        assert_eq!(mode(&s.0.join("f")), 0o600);
        // A reader holding the old file keeps reading the old content: the new one is
        // another inode, renamed in.
        let mut old = File::open(s.0.join("f")).unwrap();
        d.write_atomic("f", b"second").unwrap();
        let mut held = String::new();
        old.read_to_string(&mut held).unwrap();
        assert_eq!(held, "first version, rather long");
        assert_eq!(d.read("f").unwrap().as_deref(), Some(&b"second"[..]));
        let names: Vec<_> = std::fs::read_dir(&s.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["f"], "no temporary file is left behind");
        // A file others may write is replaced by one only the owner may.
        std::fs::set_permissions(s.0.join("f"), std::fs::Permissions::from_mode(0o666)).unwrap();
        d.write_atomic("f", b"third").unwrap();
        assert_eq!(mode(&s.0.join("f")), 0o600);
    }

    #[test]
    fn concurrent_atomic_writes_never_tear() {
        let s = Scratch::new("race");
        let d = PrivateDir::create(&s.0).unwrap();
        let texts: Vec<Vec<u8>> = (0..4u8).map(|k| vec![b'a' + k; 64 * 1024]).collect();
        std::thread::scope(|sc| {
            for t in &texts {
                let d = &d;
                sc.spawn(move || {
                    for _ in 0..20 {
                        d.write_atomic("f", t).unwrap();
                    }
                });
            }
            sc.spawn(|| {
                for _ in 0..200 {
                    if let Some(b) = d.read("f").unwrap() {
                        assert!(texts.contains(&b), "a torn file of {} bytes", b.len());
                    }
                }
            });
        });
        assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 1);
    }

    #[test]
    fn files_and_directories_others_can_write_are_untrusted() {
        let s = Scratch::new("trust");
        let d = PrivateDir::create(&s.0).unwrap();
        d.write_atomic("f", b"x").unwrap();
        std::fs::set_permissions(s.0.join("f"), std::fs::Permissions::from_mode(0o602)).unwrap();
        let e = d.read("f").unwrap_err();
        assert!(is_untrusted(&e), "{e}");
        assert!(e.to_string().contains("writable by other users"), "{e}");
        std::fs::set_permissions(s.0.join("f"), std::fs::Permissions::from_mode(0o620)).unwrap();
        assert!(is_untrusted(&d.read("f").unwrap_err()));
        std::fs::set_permissions(s.0.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(d.read("f").unwrap().as_deref(), Some(&b"x"[..]));

        std::fs::set_permissions(&s.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = PrivateDir::open(&s.0).unwrap_err();
        assert!(is_untrusted(&e), "{e}");
        // create() does not take over an existing directory others can write either.
        assert!(is_untrusted(&PrivateDir::create(&s.0).unwrap_err()));
        std::fs::set_permissions(&s.0, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(is_untrusted(&PrivateDir::open(&s.0).unwrap_err()), "the sticky bit does not make it private");
        std::fs::set_permissions(&s.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(PrivateDir::open(&s.0).is_ok());
        assert_eq!(PrivateDir::open(&s.0.join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn links_are_never_followed_from_a_private_directory() {
        let s = Scratch::new("links");
        let d = PrivateDir::create(&s.0.join("d")).unwrap();
        let victim = s.0.join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("f"), "victim's").unwrap();
        std::os::unix::fs::symlink(victim.join("f"), s.0.join("d/f")).unwrap();
        std::os::unix::fs::symlink(&victim, s.0.join("d/inc")).unwrap();
        let e = d.read("f").unwrap_err();
        assert!(is_untrusted(&e) && e.to_string().contains("symbolic link"), "{e}");
        assert!(is_untrusted(&d.open_rw("f").unwrap_err()));
        assert!(d.create_new("inc/a.h", b"planted").is_err(), "a linked subdirectory is refused");
        assert!(!victim.join("a.h").exists());
        // Replacing the name replaces the link, not the file it points to.
        d.write_atomic("f", b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(victim.join("f")).unwrap(), "victim's");
        assert_eq!(d.read("f").unwrap().as_deref(), Some(&b"mine"[..]));
        // A FIFO is refused without waiting for a writer.
        let fifo = s.0.join("d/fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()));
        assert!(is_untrusted(&d.read("fifo").unwrap_err()));
    }

    #[test]
    fn create_new_makes_subdirectories_and_keeps_the_first_file() {
        let s = Scratch::new("new");
        let d = PrivateDir::create(&s.0).unwrap();
        assert!(d.create_new("inc/sub/a.h", b"first").unwrap());
        assert!(!d.create_new("inc/sub/a.h", b"second").unwrap());
        assert!(d.create_new("./b.h", b"b").unwrap());
        assert_eq!(std::fs::read_to_string(s.0.join("inc/sub/a.h")).unwrap(), "first");
        assert_eq!(mode(&s.0.join("inc")), 0o700);
        assert_eq!(mode(&s.0.join("inc/sub/a.h")), 0o600);
        for bad in ["", "/etc/x.h", "../x.h", "inc/../../x.h", "inc/", ".", ".."] {
            assert_eq!(d.create_new(bad, b"x").unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        for bad in ["", "a/b", "..", ".", "/a"] {
            assert_eq!(d.read(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn relative_names() {
        for ok in ["a.h", "inc/a.h", "./a.h", "a..b.h", "inc//a.h", "x/./y.h"] {
            assert!(is_relative_below(ok), "{ok:?}");
        }
        for bad in ["", "/a.h", "../a.h", "inc/../a.h", "a/..", "inc/", ".", "./", "//a.h"] {
            assert!(!is_relative_below(bad), "{bad:?}");
        }
    }
}
