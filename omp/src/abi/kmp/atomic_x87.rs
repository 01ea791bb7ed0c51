//! The `long double` (`float10`) and `_Complex long double` (`cmplx10`) forms of the
//! `__kmpc_atomic_*` family (atomic.rs has the others and the rules they share).
//!
//! The System V ABI passes an x87 extended value in memory (16 bytes on the caller's stack)
//! and returns it in `st(0)` (a complex one in `st(0)`, real, and `st(1)`, imaginary); Rust
//! has no such type. So each entry point is a naked shim: it hands the address of the
//! stacked right-hand side (and of a result buffer in its own frame) to a Rust function
//! that takes plain pointers, and loads the result onto the x87 stack before returning.
//! The arithmetic is x87 instructions on memory operands (`x87_op`), and complex `*` and
//! `/` call libgcc's `__mulxc3` and `__divxc3`, as C's operators do.
//!
//! Every update holds the global atomic lock (no native atomic is 10 or 32 bytes; libomp
//! uses a lock for these types too).

use super::Ident;
use crate::lock::{self, ATOMIC};
use std::arch::{asm, naked_asm};

/// An x87 extended value as C stores a `long double`: 10 bytes, padded to 16.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct F80([u8; 16]);

/// `_Complex long double`.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct CF80 {
    re: F80,
    im: F80,
}

const ZERO: F80 = F80([0; 16]);

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
}

/// `a op b` in x87 extended precision (`Max`/`Min`: libomp's comparison, a NaN leaves `a`).
fn x87_op(op: Op, a: F80, b: F80) -> F80 {
    let mut out = ZERO;
    let (pa, pb, po) = (&a as *const F80, &b as *const F80, &mut out as *mut F80);
    // SAFETY: x87 loads and stores of the three locals; the x87 stack is empty on entry
    // (ABI) and left empty (each block pops what it pushes). The operand order keeps `st`
    // as the destination (`fsub st, st(1)` is st(0) - st(1)), avoiding the reversed
    // mnemonics of the popping forms.
    unsafe {
        match op {
            Op::Add => asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fadd st, st(1)", "fstp tbyte ptr [{o}]", "fstp st(0)",
                a = in(reg) pa, b = in(reg) pb, o = in(reg) po, out("st(0)") _, out("st(1)") _, options(nostack)),
            Op::Sub => asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fsub st, st(1)", "fstp tbyte ptr [{o}]", "fstp st(0)",
                a = in(reg) pa, b = in(reg) pb, o = in(reg) po, out("st(0)") _, out("st(1)") _, options(nostack)),
            Op::Mul => asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fmul st, st(1)", "fstp tbyte ptr [{o}]", "fstp st(0)",
                a = in(reg) pa, b = in(reg) pb, o = in(reg) po, out("st(0)") _, out("st(1)") _, options(nostack)),
            Op::Div => asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fdiv st, st(1)", "fstp tbyte ptr [{o}]", "fstp st(0)",
                a = in(reg) pa, b = in(reg) pb, o = in(reg) po, out("st(0)") _, out("st(1)") _, options(nostack)),
            Op::Max | Op::Min => {
                // a < b (Max) or b < a (Min), false when unordered: CF set and PF clear.
                let (x, y) = if matches!(op, Op::Max) { (pa, pb) } else { (pb, pa) };
                let (lt, ord): (u8, u8);
                asm!("fld tbyte ptr [{y}]", "fld tbyte ptr [{x}]", "fucomip st, st(1)", "fstp st(0)", "setb {lt}", "setnp {ord}",
                    x = in(reg) x, y = in(reg) y, lt = out(reg_byte) lt, ord = out(reg_byte) ord, out("st(0)") _, out("st(1)") _, options(nostack));
                out = if lt != 0 && ord != 0 { b } else { a };
            }
        }
    }
    out
}

unsafe extern "C" {
    // libgcc's `_Complex long double` multiplication and division: four `long double`
    // arguments in memory, the result in st(0), st(1).
    fn __mulxc3();
    fn __divxc3();
}

/// `*out = x * y` through `__mulxc3`.
#[unsafe(naked)]
unsafe extern "C" fn cmul80(_out: *mut CF80, _x: *const CF80, _y: *const CF80) {
    // rbx keeps `out` across the call; the 64-byte argument area keeps rsp 16-byte aligned
    // at the call (8 on entry, + 8 pushed, + 64).
    naked_asm!(
        "push rbx",
        "mov rbx, rdi",
        "sub rsp, 64",
        "movups xmm0, [rsi]",
        "movups [rsp], xmm0",
        "movups xmm0, [rsi + 16]",
        "movups [rsp + 16], xmm0",
        "movups xmm0, [rdx]",
        "movups [rsp + 32], xmm0",
        "movups xmm0, [rdx + 16]",
        "movups [rsp + 48], xmm0",
        "call {f}",
        "fstp tbyte ptr [rbx]",
        "fstp tbyte ptr [rbx + 16]",
        "add rsp, 64",
        "pop rbx",
        "ret",
        f = sym __mulxc3,
    )
}

/// `*out = x / y` through `__divxc3`.
#[unsafe(naked)]
unsafe extern "C" fn cdiv80(_out: *mut CF80, _x: *const CF80, _y: *const CF80) {
    // As `cmul80`.
    naked_asm!(
        "push rbx",
        "mov rbx, rdi",
        "sub rsp, 64",
        "movups xmm0, [rsi]",
        "movups [rsp], xmm0",
        "movups xmm0, [rsi + 16]",
        "movups [rsp + 16], xmm0",
        "movups xmm0, [rdx]",
        "movups [rsp + 32], xmm0",
        "movups xmm0, [rdx + 16]",
        "movups [rsp + 48], xmm0",
        "call {f}",
        "fstp tbyte ptr [rbx]",
        "fstp tbyte ptr [rbx + 16]",
        "add rsp, 64",
        "pop rbx",
        "ret",
        f = sym __divxc3,
    )
}

fn c_op(op: Op, x: CF80, y: CF80) -> CF80 {
    match op {
        Op::Add | Op::Sub => CF80 { re: x87_op(op, x.re, y.re), im: x87_op(op, x.im, y.im) },
        Op::Mul | Op::Div => {
            let mut out = CF80 { re: ZERO, im: ZERO };
            // SAFETY: three valid values; the helpers call libgcc's pure functions.
            unsafe { if matches!(op, Op::Mul) { cmul80(&mut out, &x, &y) } else { cdiv80(&mut out, &x, &y) } };
            out
        }
        Op::Max | Op::Min => unreachable!("complex values have no order"),
    }
}

/// `*p = f(*p)` under the lock; (old, new).
///
/// # Safety
/// `p` is the `atomic` construct's target: valid (any alignment), updated only through
/// this module meanwhile.
unsafe fn locked<T: Copy>(p: *mut T, f: impl FnOnce(T) -> T) -> (T, T) {
    lock::lock(&ATOMIC);
    // SAFETY: per the contract; every update holds the lock.
    let old = unsafe { p.read_unaligned() };
    let new = f(old);
    // SAFETY: as above.
    unsafe { p.write_unaligned(new) };
    lock::unlock(&ATOMIC);
    (old, new)
}

/// The Rust side of each shim kind, for a value type `$t` and its operation function.
macro_rules! impls {
    ($t:ty, $f:ident) => {
        /// `x op rhs` (`rev`: `rhs op x`) into `*lhs`; the new or old value to `*out`.
        ///
        /// # Safety
        /// `lhs` is the target, `rhs` the caller's stacked operand, `out` a buffer.
        pub(super) unsafe fn update(op: Op, rev: bool, lhs: *mut $t, rhs: *const $t, out: *mut $t, flag: i32) {
            // SAFETY: per the contract.
            let r = unsafe { rhs.read() };
            // SAFETY: per the contract.
            let (old, new) = unsafe { locked(lhs, |x| if rev { $f(op, r, x) } else { $f(op, x, r) }) };
            if !out.is_null() {
                // SAFETY: per the contract.
                unsafe { out.write(if flag != 0 { new } else { old }) };
            }
        }

        /// `*out = *p`, read under the lock.
        ///
        /// # Safety
        /// `p` is the source, `out` a buffer.
        pub(super) unsafe extern "C" fn rd(_loc: Ident, _gtid: i32, p: *mut $t, out: *mut $t) {
            // SAFETY: per the contract.
            unsafe { out.write(locked(p, |x| x).0) };
        }

        /// `*lhs = *rhs`; the old value to `*out` (may be null).
        ///
        /// # Safety
        /// As [`update`].
        pub(super) unsafe extern "C" fn swp(_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: *const $t, out: *mut $t) {
            // SAFETY: per the contract.
            let r = unsafe { rhs.read() };
            // SAFETY: per the contract.
            let old = unsafe { locked(lhs, |_| r).0 };
            if !out.is_null() {
                // SAFETY: per the contract.
                unsafe { out.write(old) };
            }
        }
    };
}

mod f10 {
    use super::*;
    pub(super) type T = F80;
    impls!(F80, x87_op);
}

mod c10 {
    use super::*;
    pub(super) type T = CF80;
    impls!(CF80, c_op);
}

/// The entry points: `$kind` says the C signature (`upd`: `void (loc, gtid, T *lhs, T rhs)`;
/// `cpt`: `T (loc, gtid, T *lhs, T rhs, int flag)`; `rd`: `T (loc, gtid, T *p)`; `wr`,
/// `swp`: as `upd`, `swp` returning the old value); `$m` the type (`f10` returns in st(0),
/// `c10` in st(0) and st(1)); `$op`, `$rev` the update.
macro_rules! shims {
    ($($name:ident: $kind:ident $m:ident $op:ident $rev:literal;)*) => {$(paste::paste! {
        /// # Safety
        /// Called as the C function kmp_atomic.h declares; `lhs` is the `atomic`
        /// construct's target.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            shims!(@body $kind $m [<$name _imp>])
        }

        shims!(@imp $kind $m $op $rev [<$name _imp>]);
    })*};

    // void f(loc, gtid, lhs, rhs@[rsp+8]): rhs's address as the 4th argument, no result.
    (@body upd $m:ident $imp:ident) => { naked_asm!("lea rcx, [rsp + 8]", "xor r8d, r8d", "xor r9d, r9d", "jmp {imp}", imp = sym $imp) };
    (@body wr $m:ident $imp:ident) => { naked_asm!("lea rcx, [rsp + 8]", "xor r8d, r8d", "jmp {imp}", imp = sym $imp) };
    // T f(loc, gtid, lhs, rhs@[rsp+8], flag@ecx): result buffer in the shim's frame.
    (@body cpt f10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 16", "mov r9d, ecx", "lea rcx, [rbp + 16]", "mov r8, rsp",
        "call {imp}", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };
    (@body cpt c10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 32", "mov r9d, ecx", "lea rcx, [rbp + 16]", "mov r8, rsp",
        "call {imp}", "fld tbyte ptr [rsp + 16]", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };
    (@body swp f10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 16", "lea rcx, [rbp + 16]", "mov r8, rsp",
        "call {imp}", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };
    (@body swp c10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 32", "lea rcx, [rbp + 16]", "mov r8, rsp",
        "call {imp}", "fld tbyte ptr [rsp + 16]", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };
    // T f(loc, gtid, p).
    (@body rd f10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 16", "mov rcx, rsp",
        "call {imp}", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };
    (@body rd c10 $imp:ident) => { naked_asm!("push rbp", "mov rbp, rsp", "sub rsp, 32", "mov rcx, rsp",
        "call {imp}", "fld tbyte ptr [rsp + 16]", "fld tbyte ptr [rsp]", "leave", "ret", imp = sym $imp) };

    (@imp upd $m:ident $op:ident $rev:literal $imp:ident) => {
        /// # Safety
        /// Called by its shim: `rhs` points to the caller's operand.
        unsafe extern "C" fn $imp(_loc: Ident, _gtid: i32, lhs: *mut $m::T, rhs: *const $m::T, _out: *mut $m::T, _flag: i32) {
            // SAFETY: per the contract.
            unsafe { $m::update(Op::$op, $rev, lhs, rhs, std::ptr::null_mut(), 0) }
        }
    };
    (@imp cpt $m:ident $op:ident $rev:literal $imp:ident) => {
        /// # Safety
        /// Called by its shim: `rhs` points to the caller's operand, `out` to its buffer.
        unsafe extern "C" fn $imp(_loc: Ident, _gtid: i32, lhs: *mut $m::T, rhs: *const $m::T, out: *mut $m::T, flag: i32) {
            // SAFETY: per the contract.
            unsafe { $m::update(Op::$op, $rev, lhs, rhs, out, flag) }
        }
    };
    (@imp wr $m:ident $op:ident $rev:literal $imp:ident) => { use $m::swp as $imp; };
    (@imp swp $m:ident $op:ident $rev:literal $imp:ident) => { use $m::swp as $imp; };
    (@imp rd $m:ident $op:ident $rev:literal $imp:ident) => { use $m::rd as $imp; };
}

shims! {
    __kmpc_atomic_float10_add: upd f10 Add false;
    __kmpc_atomic_float10_sub: upd f10 Sub false;
    __kmpc_atomic_float10_mul: upd f10 Mul false;
    __kmpc_atomic_float10_div: upd f10 Div false;
    __kmpc_atomic_float10_max: upd f10 Max false;
    __kmpc_atomic_float10_min: upd f10 Min false;
    __kmpc_atomic_float10_sub_rev: upd f10 Sub true;
    __kmpc_atomic_float10_div_rev: upd f10 Div true;
    __kmpc_atomic_float10_add_cpt: cpt f10 Add false;
    __kmpc_atomic_float10_sub_cpt: cpt f10 Sub false;
    __kmpc_atomic_float10_mul_cpt: cpt f10 Mul false;
    __kmpc_atomic_float10_div_cpt: cpt f10 Div false;
    __kmpc_atomic_float10_max_cpt: cpt f10 Max false;
    __kmpc_atomic_float10_min_cpt: cpt f10 Min false;
    __kmpc_atomic_float10_sub_cpt_rev: cpt f10 Sub true;
    __kmpc_atomic_float10_div_cpt_rev: cpt f10 Div true;
    __kmpc_atomic_float10_rd: rd f10 Add false;
    __kmpc_atomic_float10_wr: wr f10 Add false;
    __kmpc_atomic_float10_swp: swp f10 Add false;
    __kmpc_atomic_cmplx10_add: upd c10 Add false;
    __kmpc_atomic_cmplx10_sub: upd c10 Sub false;
    __kmpc_atomic_cmplx10_mul: upd c10 Mul false;
    __kmpc_atomic_cmplx10_div: upd c10 Div false;
    __kmpc_atomic_cmplx10_sub_rev: upd c10 Sub true;
    __kmpc_atomic_cmplx10_div_rev: upd c10 Div true;
    __kmpc_atomic_cmplx10_add_cpt: cpt c10 Add false;
    __kmpc_atomic_cmplx10_sub_cpt: cpt c10 Sub false;
    __kmpc_atomic_cmplx10_mul_cpt: cpt c10 Mul false;
    __kmpc_atomic_cmplx10_div_cpt: cpt c10 Div false;
    __kmpc_atomic_cmplx10_sub_cpt_rev: cpt c10 Sub true;
    __kmpc_atomic_cmplx10_div_cpt_rev: cpt c10 Div true;
    __kmpc_atomic_cmplx10_rd: rd c10 Add false;
    __kmpc_atomic_cmplx10_wr: wr c10 Add false;
    __kmpc_atomic_cmplx10_swp: swp c10 Add false;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_f64(x: f64) -> F80 {
        let mut out = ZERO;
        // SAFETY: an x87 load of a local and a store to another; the stack is left empty.
        unsafe {
            asm!("fld qword ptr [{x}]", "fstp tbyte ptr [{o}]", x = in(reg) &x, o = in(reg) &mut out, out("st(0)") _, options(nostack))
        };
        out
    }

    fn to_f64(x: F80) -> f64 {
        let mut out = 0f64;
        // SAFETY: as `from_f64`.
        unsafe {
            asm!("fld tbyte ptr [{x}]", "fstp qword ptr [{o}]", x = in(reg) &x, o = in(reg) &mut out, out("st(0)") _, options(nostack))
        };
        out
    }

    #[test]
    fn x87_arithmetic_and_order() {
        let (a, b) = (from_f64(7.0), from_f64(2.0));
        assert_eq!(to_f64(x87_op(Op::Add, a, b)), 9.0);
        assert_eq!(to_f64(x87_op(Op::Sub, a, b)), 5.0, "a - b, not b - a");
        assert_eq!(to_f64(x87_op(Op::Mul, a, b)), 14.0);
        assert_eq!(to_f64(x87_op(Op::Div, a, b)), 3.5, "a / b, not b / a");
        assert_eq!(to_f64(x87_op(Op::Max, a, b)), 7.0);
        assert_eq!(to_f64(x87_op(Op::Min, a, b)), 2.0);
        assert_eq!(to_f64(x87_op(Op::Max, b, a)), 7.0);
        let nan = from_f64(f64::NAN);
        assert!(to_f64(x87_op(Op::Max, nan, a)).is_nan(), "a NaN target stays");
        assert_eq!(to_f64(x87_op(Op::Min, a, nan)), 7.0, "a NaN operand changes nothing");
        // Extended precision: 1 + 2^-60 is exact in 64 mantissa bits, not in a double.
        let tiny = from_f64(2f64.powi(-60));
        let one = from_f64(1.0);
        assert_eq!(to_f64(x87_op(Op::Sub, x87_op(Op::Add, one, tiny), one)), 2f64.powi(-60));
    }

    #[test]
    fn complex_through_libgcc() {
        let c = |re: f64, im: f64| CF80 { re: from_f64(re), im: from_f64(im) };
        let v = |z: CF80| (to_f64(z.re), to_f64(z.im));
        assert_eq!(v(c_op(Op::Mul, c(1.0, 2.0), c(3.0, -1.0))), (5.0, 5.0));
        assert_eq!(v(c_op(Op::Div, c(5.0, 5.0), c(3.0, -1.0))), (1.0, 2.0));
        assert_eq!(v(c_op(Op::Sub, c(5.0, 5.0), c(3.0, -1.0))), (2.0, 6.0));
    }
}
