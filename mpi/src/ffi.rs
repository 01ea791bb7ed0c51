//! The raw MPI calls of weft-mpi, behind safe functions: every non-blocking operation's
//! [`Request`] owns the memory MPI reads or writes until the operation completes.
//!
//! **Invariant**: a buffer handed to MPI is owned by its request (a `Vec`, boxed words, or
//! an acquired replica whose guard pins it and keeps conflicting tasks out) until MPI
//! reports completion; a request dropped before that waits for it first. Only one thread
//! at a time calls MPI (the progress thread once the runtime has started; MPI initialised
//! with at least `MPI_THREAD_SERIALIZED`).
#![allow(unsafe_code)]

use mpi::ffi;
use std::ffi::c_int;
use weft_core::AcquireGuard;

/// A communicator of the engine's (duplicated from `MPI_COMM_WORLD` at start).
#[derive(Clone, Copy)]
pub(crate) struct Comm(ffi::MPI_Comm);

// SAFETY: an MPI communicator is a process-wide handle, valid on any thread of a process
// whose MPI thread level lets that thread call MPI (checked at start).
unsafe impl Send for Comm {}
// SAFETY: as for Send; the calls that use it are serialised (the module's invariant).
unsafe impl Sync for Comm {}

/// Memory an operation reads or writes.
pub(crate) enum Buf {
    /// A replica in host memory, contiguous, acquired for the operation's direction.
    Replica(AcquireGuard),
    Packed(Vec<u8>),
    /// An all-reduce's two input words then its two output words.
    Words(Box<[u64; 4]>),
    None,
}

impl Buf {
    fn ptr_len(&mut self) -> (*mut u8, usize) {
        match self {
            Buf::Replica(g) => (g.as_ptr(), g.shape().size()),
            Buf::Packed(v) => (v.as_mut_ptr(), v.len()),
            Buf::Words(w) => (w.as_mut_ptr() as *mut u8, 32),
            Buf::None => (std::ptr::null_mut(), 0),
        }
    }
}

/// An outstanding non-blocking operation and the memory it uses.
pub(crate) struct Request {
    raw: ffi::MPI_Request,
    buf: Buf,
    done: bool,
}

// SAFETY: a request is a process-wide handle, and its buffer is owned memory (a guard's
// replica is pinned and reached through a raw address); only the thread holding the
// request calls MPI on it.
unsafe impl Send for Request {}

fn check(what: &str, rc: c_int) {
    // The communicators keep MPI_ERRORS_ARE_FATAL (the default): an error aborts the job
    // inside MPI, with its message, before returning here. A non-zero code means a handler
    // was changed behind our back: stop all ranks rather than go on with lost messages.
    if rc != 0 {
        abort_world(&format!("weft-mpi: {what} failed with MPI error {rc}"), 1);
    }
}

fn null_request() -> ffi::MPI_Request {
    // SAFETY: reading a constant MPI exports.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

fn count(len: usize) -> c_int {
    c_int::try_from(len).unwrap_or_else(|_| abort_world(&format!("weft-mpi: a message of {len} bytes exceeds MPI's int count"), 1))
}

/// Duplicate `MPI_COMM_WORLD`: the engine's messages never match the application's.
pub(crate) fn dup_world() -> Comm {
    // SAFETY: MPI is initialised (the caller's precondition); `c` receives the new handle.
    unsafe {
        let mut c = ffi::RSMPI_COMM_NULL;
        check("MPI_Comm_dup", ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut c));
        Comm(c)
    }
}

/// This process's rank and the number of ranks.
pub(crate) fn rank_size(c: Comm) -> (i32, i32) {
    let (mut r, mut s) = (0, 0);
    // SAFETY: valid communicator, out-pointers to locals.
    unsafe {
        check("MPI_Comm_rank", ffi::MPI_Comm_rank(c.0, &mut r));
        check("MPI_Comm_size", ffi::MPI_Comm_size(c.0, &mut s));
    }
    (r, s)
}

/// The largest tag MPI accepts (`MPI_TAG_UB`; at least 32767).
pub(crate) fn tag_ub(c: Comm) -> i32 {
    let mut v: *mut c_int = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: MPI_TAG_UB is a predefined attribute of every communicator: MPI stores the
    // address of its int in `v` when it sets `flag`.
    unsafe {
        ffi::MPI_Comm_get_attr(c.0, ffi::MPI_TAG_UB as c_int, &mut v as *mut *mut c_int as *mut std::ffi::c_void, &mut flag);
        if flag != 0 && !v.is_null() { *v } else { 32767 }
    }
}

/// Whether MPI's thread level lets a thread other than the main one make the (serialised)
/// calls, and that level.
pub(crate) fn thread_level_ok() -> (bool, c_int) {
    let mut p = 0;
    // SAFETY: out-pointer to a local; MPI is initialised (the caller's precondition).
    unsafe {
        ffi::MPI_Query_thread(&mut p);
        (p >= ffi::RSMPI_THREAD_SERIALIZED, p)
    }
}

/// `MPI_Abort` on the world: every rank stops, with `msg` printed by this one first.
pub(crate) fn abort_world(msg: &str, code: i32) -> ! {
    eprintln!("{msg}");
    // SAFETY: MPI_Abort may be called from any thread of an initialised process; it does
    // not return (the abort below is for an MPI that would).
    unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, code) };
    std::process::abort()
}

/// Start sending `buf` (a replica acquired for reading, or packed bytes) to `dest`.
pub(crate) fn isend(mut buf: Buf, dest: i32, tag: i32, c: Comm) -> Request {
    let mut raw = null_request();
    let (p, len) = buf.ptr_len();
    // SAFETY: the request owns `buf` until completion (the module's invariant); a guard's
    // replica is pinned and readable, and no task writes it while the guard lives.
    check("MPI_Isend", unsafe { ffi::MPI_Isend(p as *const _, count(len), ffi::RSMPI_UINT8_T, dest, tag, c.0, &mut raw) });
    Request { raw, buf, done: false }
}

/// Start receiving into `buf` (a replica acquired for writing, or a packed buffer) from `src`.
pub(crate) fn irecv(mut buf: Buf, src: i32, tag: i32, c: Comm) -> Request {
    if let Buf::Replica(g) = &buf {
        assert!(g.mode().writes(), "weft-mpi receives only into data acquired for writing");
    }
    let mut raw = null_request();
    let (p, len) = buf.ptr_len();
    // SAFETY: as for isend; a guard acquired for writing keeps every other reader and
    // writer of the replica out until it is dropped.
    check("MPI_Irecv", unsafe { ffi::MPI_Irecv(p as *mut _, count(len), ffi::RSMPI_UINT8_T, src, tag, c.0, &mut raw) });
    Request { raw, buf, done: false }
}

/// Start a barrier.
pub(crate) fn ibarrier(c: Comm) -> Request {
    let mut raw = null_request();
    // SAFETY: valid communicator, out-pointer.
    check("MPI_Ibarrier", unsafe { ffi::MPI_Ibarrier(c.0, &mut raw) });
    Request { raw, buf: Buf::None, done: false }
}

/// Start an all-reduce of the minimum of each of `v`'s two words across ranks; read it
/// with [`Request::words`] once complete.
pub(crate) fn iallreduce_min(v: [u64; 2], c: Comm) -> Request {
    let mut w = Box::new([v[0], v[1], 0, 0]);
    let mut raw = null_request();
    let p = w.as_mut_ptr();
    // SAFETY: the box moves into the request (its contents stay put) until completion:
    // words 0-1 are read, 2-3 written.
    check("MPI_Iallreduce", unsafe {
        ffi::MPI_Iallreduce(p as *const _, p.add(2) as *mut _, 2, ffi::RSMPI_UINT64_T, ffi::RSMPI_MIN, c.0, &mut raw)
    });
    Request { raw, buf: Buf::Words(w), done: false }
}

impl Request {
    /// Whether the operation completed (then its memory is free again).
    pub(crate) fn test(&mut self) -> bool {
        if !self.done {
            let mut flag: c_int = 0;
            // SAFETY: a request from one of the calls above, not completed yet.
            check("MPI_Test", unsafe { ffi::MPI_Test(&mut self.raw, &mut flag, ffi::RSMPI_STATUS_IGNORE) });
            self.done = flag != 0;
        }
        self.done
    }

    /// The memory of a completed operation.
    pub(crate) fn into_buf(mut self) -> Buf {
        assert!(self.done, "a request's memory is handed back only once it has completed");
        std::mem::replace(&mut self.buf, Buf::None)
    }

    /// The result of a completed all-reduce.
    pub(crate) fn words(&self) -> [u64; 2] {
        assert!(self.done, "an all-reduce's result is read once it has completed");
        match &self.buf {
            Buf::Words(w) => [w[2], w[3]],
            _ => unreachable!("words() of a request that is not an all-reduce"),
        }
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if !self.done {
            // MPI still uses the memory: wait for it before freeing it.
            // SAFETY: a request not completed yet.
            unsafe { ffi::MPI_Wait(&mut self.raw, ffi::RSMPI_STATUS_IGNORE) };
        }
    }
}
