//! Parallel regions: `__kmpc_fork_call` and its pushed clauses, serialized regions, thread
//! numbers. A region runs on `team::parallel`, as `GOMP_parallel`'s does.
//!
//! `__kmpc_fork_call(loc, argc, microtask, ...)` passes `argc` pointer-sized values on to
//! `microtask(&gtid, &btid, ...)`. Rust can neither define nor make C variadic calls, so two
//! naked functions do it for the x86-64 System V convention: the entry point spills the
//! three varargs that came in registers and hands a Rust function pointers to them and to
//! the rest on the caller's stack; [`invoke`] calls the microtask with any number of
//! arguments (LLVM's `__kmp_invoke_microtask` in z_Linux_asm.S does the same).

use super::Ident;
use crate::abi::guard;
use crate::outlined::Outlined;
use crate::team::{self, ctx};
use smallvec::SmallVec;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};

/// `void microtask(kmp_int32 *gtid, kmp_int32 *btid, ...)`: the outlined region body.
pub type Microtask = unsafe extern "C" fn(*mut i32, *mut i32);

thread_local! {
    /// `num_threads` and `proc_bind` pushed for the calling thread's next region (0: none).
    static PUSHED: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
    /// `num_teams` and `thread_limit` pushed for the calling thread's next `teams` (0: none).
    static PUSHED_TEAMS: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
    /// The calling thread's global thread number (-1: not given yet).
    static GTID: Cell<i32> = const { Cell::new(-1) };
    /// The calling thread's region records, one per nesting depth of the regions it forks
    /// (boxed: a record stays put while its region runs, even as a nested fork grows the
    /// list), and how many of its regions run.
    #[allow(clippy::vec_box)]
    static CALLS: std::cell::RefCell<Vec<Box<Call>>> = const { std::cell::RefCell::new(Vec::new()) };
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// The calling thread's global thread number: distinct per thread, given on first use. The
/// compiler only passes it back to us, and we do not need it (the context is thread-local).
pub(crate) fn gtid() -> i32 {
    static NEXT: AtomicI32 = AtomicI32::new(0);
    GTID.with(|g| {
        if g.get() < 0 {
            // Relaxed: a counter; nothing is published through it.
            g.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        g.get()
    })
}

/// One region's microtask and its arguments, shared by the team's threads.
struct Call {
    f: Microtask,
    /// At least 4 entries ([`invoke`] loads 4 into registers); 8 or `argc`, whichever is
    /// more. Those past `argc` are padding the microtask never reads: nulls at first, then
    /// what an earlier region of the record left there.
    argv: SmallVec<[*mut c_void; 8]>,
    argc: usize,
}

/// Each thread's share: the microtask with (its gtid, its thread number, the arguments).
unsafe extern "C" fn body(data: *mut c_void) {
    // SAFETY: `data` is the `Call` of `fork_call`, alive until its region joins.
    let call = unsafe { &*(data as *const Call) };
    let mut gtid = gtid();
    let mut btid = ctx().tid as i32;
    // SAFETY: the compiler's microtask takes the two ids and `argc` pointer-sized arguments;
    // `argv` holds at least max(argc, 4) values.
    unsafe { invoke(call.f, &mut gtid, &mut btid, call.argc, call.argv.as_ptr()) };
}

/// The varargs of `__kmpc_fork_call`/`__kmpc_fork_teams` as a [`Call`].
///
/// # Safety
/// `regs` points to the 3 values that came in registers, `stack` to the caller's stack
/// arguments (`argc - 3` of them when `argc > 3`).
unsafe fn gather(argc: i32, f: Microtask, regs: *const *mut c_void, stack: *const *mut c_void) -> Call {
    // Nulls in place (no pushes one by one), then the arguments over them.
    let mut call = Call { f, argv: SmallVec::from_buf([std::ptr::null_mut(); 8]), argc: 0 };
    // SAFETY: per the contract.
    unsafe { call.refill(argc, f, regs, stack) };
    call
}

impl Call {
    /// Make this record the varargs' (as [`gather`] reads them), writing only what
    /// differs (the argument slots past `argc` keep what they held): the team's members read
    /// it at every region, and a line left unchanged stays valid in their caches (a
    /// program forking the same region in a loop changes nothing).
    ///
    /// # Safety
    /// As [`gather`].
    unsafe fn refill(&mut self, argc: i32, f: Microtask, regs: *const *mut c_void, stack: *const *mut c_void) {
        let argc = argc.max(0) as usize;
        if !std::ptr::fn_addr_eq(self.f, f) {
            self.f = f;
        }
        if argc > self.argv.len() {
            self.argv.resize(argc, std::ptr::null_mut());
        }
        for (i, a) in self.argv.iter_mut().take(argc).enumerate() {
            // SAFETY: per the contract: argument i is in the spilled registers or on the
            // caller's stack (the System V layout of a variadic call's integer arguments).
            let v = unsafe { if i < 3 { *regs.add(i) } else { *stack.add(i - 3) } };
            if *a != v {
                *a = v;
            }
        }
        if self.argc != argc {
            self.argc = argc;
        }
    }
}

/// Gives the calling thread's region depth back when its region ends (or unwinds).
struct Depth(usize);

impl Drop for Depth {
    fn drop(&mut self) {
        DEPTH.set(self.0);
    }
}

/// `__kmpc_fork_call`'s body: gather the varargs into the thread's record for the region's
/// depth, run the region.
///
/// # Safety
/// As [`gather`].
unsafe extern "C" fn fork_call_va(_loc: Ident, argc: i32, f: Microtask, regs: *const *mut c_void, stack: *const *mut c_void) {
    guard("__kmpc_fork_call", || {
        let (n, bind) = PUSHED.with(|p| p.replace((0, 0)));
        let d = DEPTH.replace(DEPTH.get() + 1);
        let _back = Depth(d);
        let call: *const Call = CALLS.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() <= d {
                // SAFETY: per the contract.
                c.push(Box::new(unsafe { gather(argc, f, regs, stack) }));
            } else {
                // SAFETY: per the contract.
                unsafe { c[d].refill(argc, f, regs, stack) };
            }
            &*c[d] as *const Call
        });
        // SAFETY: `body` runs a `Call`; this one is the thread's record at depth `d`, which
        // stays put (boxed) and unchanged (only a region at that depth writes it, and this
        // thread forks no other until this one joins) until the region joins, below.
        let body = unsafe { Outlined::new(body, call as *mut c_void) };
        team::parallel(body, n, bind, None)
    })
}

/// `__kmpc_fork_teams`'s body: the host `teams` construct, as `GOMP_teams_reg` runs it
/// (one team after the other on the encountering thread).
///
/// # Safety
/// As [`gather`].
unsafe extern "C" fn fork_teams_va(_loc: Ident, argc: i32, f: Microtask, regs: *const *mut c_void, stack: *const *mut c_void) {
    // SAFETY: per the contract.
    let call = unsafe { gather(argc, f, regs, stack) };
    let (n, limit) = PUSHED_TEAMS.with(|p| p.replace((0, 0)));
    // SAFETY: `teams_body` takes the `Call`, alive for the construct.
    unsafe { crate::abi::parallel::GOMP_teams_reg(teams_body, &call as *const Call as *mut c_void, n, limit, 0) }
}

/// A team's initial thread runs the microtask with thread number 0.
unsafe extern "C" fn teams_body(data: *mut c_void) {
    // SAFETY: `data` is the `Call` of `fork_teams_va`, alive until the construct ends.
    let call = unsafe { &*(data as *const Call) };
    let (mut gtid, mut btid) = (gtid(), 0);
    // SAFETY: as in `body`.
    unsafe { invoke(call.f, &mut gtid, &mut btid, call.argc, call.argv.as_ptr()) };
}

/// A variadic `(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...)` entry point that
/// hands `$imp` pointers to its varargs.
macro_rules! varargs_entry {
    ($(#[$m:meta])* $name:ident => $imp:ident) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Called as the variadic C function it is, with `argc` pointer-sized varargs.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(loc: Ident, argc: i32, microtask: Microtask) {
            // rdi, rsi, rdx: loc, argc, microtask; rcx, r8, r9: the first 3 varargs; the
            // rest at [rsp + 8] on entry ([rbp + 16] once rbp is pushed). The 32-byte frame
            // keeps rsp 16-byte aligned at the call.
            std::arch::naked_asm!(
                "push rbp",
                "mov rbp, rsp",
                "sub rsp, 32",
                "mov [rsp], rcx",
                "mov [rsp + 8], r8",
                "mov [rsp + 16], r9",
                "mov rcx, rsp",
                "lea r8, [rbp + 16]",
                "call {imp}",
                "leave",
                "ret",
                imp = sym $imp,
            )
        }
    };
}

varargs_entry!(
    /// `void __kmpc_fork_call(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...)`.
    __kmpc_fork_call => fork_call_va
);
varargs_entry!(
    /// `void __kmpc_fork_teams(ident_t *loc, kmp_int32 argc, kmpc_micro microtask, ...)`.
    __kmpc_fork_teams => fork_teams_va
);

/// `num_teams(n)` and `thread_limit(t)` of the calling thread's next `teams` (0: not given).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_teams(_loc: Ident, _gtid: i32, num_teams: i32, thread_limit: i32) {
    PUSHED_TEAMS.with(|p| p.set((num_teams.max(0) as u32, thread_limit.max(0) as u32)));
}

/// OpenMP 5.1's `num_teams(lower: upper)`: the upper bound is the number of teams made.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_teams_51(_loc: Ident, _gtid: i32, _lower: i32, upper: i32, thread_limit: i32) {
    __kmpc_push_num_teams(_loc, _gtid, upper, thread_limit)
}

/// Call `f(gtid, btid, argv[0], …, argv[argc - 1])`.
///
/// # Safety
/// `f` takes two pointers and `argc` pointer-sized arguments; `argv` holds at least
/// max(`argc`, 4) values.
#[unsafe(naked)]
unsafe extern "C" fn invoke(f: Microtask, gtid: *mut i32, btid: *mut i32, argc: usize, argv: *const *mut c_void) {
    // rdi f, rsi gtid, rdx btid, rcx argc, r8 argv. Arguments 5.. go on the stack, pushed
    // last first, after a pad word when their count is odd (rsp 16-byte aligned at the
    // call); then the ids and argv[0..4] go into rdi, rsi, rdx, rcx, r8, r9.
    std::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "mov r10, rdi",
        "mov r11, r8",
        "mov rdi, rsi",
        "mov rsi, rdx",
        "mov rax, rcx",
        "sub rax, 4",
        "jbe 3f",
        "test al, 1",
        "jz 2f",
        "sub rsp, 8",
        "2:",
        "push qword ptr [r11 + rcx * 8 - 8]",
        "dec rcx",
        "dec rax",
        "jnz 2b",
        "3:",
        "mov rdx, [r11]",
        "mov rcx, [r11 + 8]",
        "mov r8, [r11 + 16]",
        "mov r9, [r11 + 24]",
        "xor eax, eax",
        "call r10",
        "leave",
        "ret",
    )
}

/// `num_threads(n)` of the calling thread's next region.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_num_threads(_loc: Ident, _gtid: i32, n: i32) {
    PUSHED.with(|p| p.set((n.max(0) as u32, p.get().1)));
}

/// `proc_bind(kind)` of the next region: libomp's numbers (false 0, true 1, master 2,
/// close 3, spread 4) are the proc-bind flags `GOMP_parallel` takes.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_push_proc_bind(_loc: Ident, _gtid: i32, kind: i32) {
    let kind = if (0..=4).contains(&kind) { kind as u32 } else { 0 };
    PUSHED.with(|p| p.set((p.get().0, kind)));
}

/// A region the compiler runs itself on one thread (an `if` clause that is false): a team
/// of one, as `GOMP_parallel_start` with `if(0)` makes.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_serialized_parallel(_loc: Ident, _gtid: i32) {
    guard("__kmpc_serialized_parallel", || {
        PUSHED.with(|p| p.set((0, 0)));
        team::fork(None, 1, 0, false, None)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end_serialized_parallel(_loc: Ident, _gtid: i32) {
    guard("__kmpc_end_serialized_parallel", team::join)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_global_thread_num(_loc: Ident) -> i32 {
    guard("__kmpc_global_thread_num", gtid)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_global_num_threads(_loc: Ident) -> i32 {
    guard("__kmpc_global_num_threads", || ctx().team().n as i32)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_bound_thread_num(_loc: Ident) -> i32 {
    guard("__kmpc_bound_thread_num", || ctx().tid as i32)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_bound_num_threads(_loc: Ident) -> i32 {
    guard("__kmpc_bound_num_threads", || ctx().team().n as i32)
}

/// Whether a region may fork: always (team sizes are decided at the fork).
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_ok_to_fork(_loc: Ident) -> i32 {
    1
}

/// `__kmpc_begin`/`__kmpc_end` bracket a program built with `-fopenmp` on some platforms;
/// the runtime starts on first use and needs neither.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_begin(_loc: Ident, _flags: i32) {}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_end(_loc: Ident) {}
