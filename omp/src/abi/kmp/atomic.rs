//! The `__kmpc_atomic_*` entry points: atomic updates the compiler leaves to the runtime
//! (LLVM's kmp_atomic.h; clang 14 inlines every host `atomic` or calls libatomic, but other
//! compilers built for libomp call these; libomp 14 exports 340 of them, and so does Weft). Names read
//! `__kmpc_atomic_<type>_<op>[_cpt][_rev]`: `fixed1`/`2`/`4`/`8` are `char` … `kmp_int64`
//! (`u`: unsigned), `float4`/`8` `float`/`double`, `cmplx4`/`8` their `_Complex` forms;
//! `_cpt` returns the new value (`flag` non-zero) or the old one, `_rev` computes
//! `rhs op x`; `_rd`, `_wr`, `_swp` read, write and exchange; `<type>_<op>_float8` and
//! `cmplx4_<op>_cmplx8` take a wider right-hand side and compute in it; `__kmpc_atomic_N`
//! apply the compiler's `f(out, x, rhs)` to an `N`-byte object; `bool_N_cas`/`val_N_cas`
//! (`_cpt`) are OpenMP 5.1's `atomic compare`; `__kmpc_atomic_start/end` bracket an update
//! the compiler writes itself.
//!
//! As in libomp: an object of 1, 2, 4 or 8 bytes aligned to its size is updated with a
//! compare-and-swap loop on an integer of that width; any other (misaligned, `cmplx8`, the
//! 10- to 32-byte generic forms, `atomic_start`) under one global lock, `lock::ATOMIC`,
//! which `GOMP_atomic_start` takes too (one lock for both ABIs). The same object always
//! takes the same path, so its updates exclude each other. Every access is `SeqCst`: the
//! compiler passes no memory order to these entry points, so they give the strongest one an
//! `atomic` construct can ask for (on x86-64 a locked `cmpxchg` is that already).
//!
//! Complex `*` and `/` call the C runtime's `__mulsc3`, `__divdc3`, … (libgcc), as C's own
//! operators do, so results match those of a non-atomic update. The `long double`
//! (`float10`) and `_Complex long double` (`cmplx10`) forms, whose x87 values the Rust ABI
//! cannot pass or return, are in atomic_x87.rs.
//!
//! Misuse: an integer division by zero prints which entry point and aborts (C's behaviour
//! is undefined; libomp takes SIGFPE).

use super::Ident;
use crate::lock::{self, ATOMIC};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

/// `kmp_cmplx32`: `float _Complex` (the System V ABI passes it as this struct).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C32 {
    pub re: f32,
    pub im: f32,
}

/// `kmp_cmplx64`: `double _Complex`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

unsafe extern "C" {
    // libgcc's complex multiplication and division (C99 Annex G), what C's `*` and `/`
    // compile to.
    fn __mulsc3(a: f32, b: f32, c: f32, d: f32) -> C32;
    fn __divsc3(a: f32, b: f32, c: f32, d: f32) -> C32;
    fn __muldc3(a: f64, b: f64, c: f64, d: f64) -> C64;
    fn __divdc3(a: f64, b: f64, c: f64, d: f64) -> C64;
}

/// `*p` replaced by `f(*p)` under the global atomic lock; (old, new).
///
/// # Safety
/// `p` is valid for reads and writes of a `T` (any alignment).
unsafe fn locked<T: Copy>(p: *mut T, f: impl FnOnce(T) -> T) -> (T, T) {
    lock::lock(&ATOMIC);
    // SAFETY: per the contract; every update of `*p` through this module holds the lock.
    let old = unsafe { p.read_unaligned() };
    let new = f(old);
    // SAFETY: as above.
    unsafe { p.write_unaligned(new) };
    lock::unlock(&ATOMIC);
    (old, new)
}

/// A type the atomics update.
pub(crate) trait Atom: Copy {
    /// Atomically replace `*p` by `f(*p)` (`f` may run more than once); (old, new).
    ///
    /// # Safety
    /// `p` is valid for reads and writes of a `Self`, and accessed only atomically while
    /// this runs (a conforming program's `atomic` target).
    unsafe fn update(p: *mut Self, f: impl FnMut(Self) -> Self) -> (Self, Self);

    /// # Safety
    /// As [`Atom::update`].
    unsafe fn load(p: *mut Self) -> Self {
        // SAFETY: per the contract.
        unsafe { Self::update(p, |x| x).0 }
    }

    /// # Safety
    /// As [`Atom::update`].
    unsafe fn swap(p: *mut Self, v: Self) -> Self {
        // SAFETY: per the contract.
        unsafe { Self::update(p, |_| v).0 }
    }
}

/// Types of 1, 2, 4 or 8 bytes whose every bit pattern is a value: a compare-and-swap loop
/// on the integer `$b` of their width when aligned to it, else the lock.
macro_rules! native {
    ($($t:ty => $a:ident($b:ty);)*) => {$(
        const _: () = assert!(size_of::<$t>() == size_of::<$b>());
        impl Atom for $t {
            unsafe fn update(p: *mut $t, mut f: impl FnMut($t) -> $t) -> ($t, $t) {
                if !(p as usize).is_multiple_of(align_of::<$a>()) {
                    // SAFETY: per the contract.
                    return unsafe { locked(p, f) };
                }
                // SAFETY: valid and aligned for `$a` (checked above); accessed only
                // atomically meanwhile (the contract).
                let a = unsafe { $a::from_ptr(p as *mut $b) };
                let mut cur = a.load(Ordering::Relaxed);
                loop {
                    // SAFETY: same size (asserted above); every bit pattern is a `$t`.
                    let old: $t = unsafe { std::mem::transmute_copy(&cur) };
                    let new = f(old);
                    // SAFETY: as above, the other way.
                    let bits: $b = unsafe { std::mem::transmute_copy(&new) };
                    // SeqCst: the strongest order an `atomic` construct may ask for (module
                    // doc); Relaxed on failure: the value is only used to retry.
                    match a.compare_exchange_weak(cur, bits, Ordering::SeqCst, Ordering::Relaxed) {
                        Ok(_) => return (old, new),
                        Err(seen) => cur = seen,
                    }
                }
            }

            unsafe fn load(p: *mut $t) -> $t {
                if !(p as usize).is_multiple_of(align_of::<$a>()) {
                    // SAFETY: per the contract.
                    return unsafe { locked(p, |x| x).0 };
                }
                // SAFETY: as in `update`.
                let cur = unsafe { $a::from_ptr(p as *mut $b) }.load(Ordering::SeqCst);
                // SAFETY: as in `update`.
                unsafe { std::mem::transmute_copy(&cur) }
            }

            unsafe fn swap(p: *mut $t, v: $t) -> $t {
                if !(p as usize).is_multiple_of(align_of::<$a>()) {
                    // SAFETY: per the contract.
                    return unsafe { locked(p, |_| v).0 };
                }
                // SAFETY: as in `update`.
                let bits: $b = unsafe { std::mem::transmute_copy(&v) };
                // SAFETY: as in `update`.
                let cur = unsafe { $a::from_ptr(p as *mut $b) }.swap(bits, Ordering::SeqCst);
                // SAFETY: as in `update`.
                unsafe { std::mem::transmute_copy(&cur) }
            }
        }
    )*};
}
native! {
    i8 => AtomicU8(u8);
    u8 => AtomicU8(u8);
    i16 => AtomicU16(u16);
    u16 => AtomicU16(u16);
    i32 => AtomicU32(u32);
    u32 => AtomicU32(u32);
    i64 => AtomicU64(u64);
    u64 => AtomicU64(u64);
    f32 => AtomicU32(u32);
    f64 => AtomicU64(u64);
    C32 => AtomicU64(u64);
}

/// 16 bytes: no native atomic (libomp does not use `cmpxchg16b` either); the lock.
impl Atom for C64 {
    unsafe fn update(p: *mut C64, f: impl FnMut(C64) -> C64) -> (C64, C64) {
        // SAFETY: per the contract.
        unsafe { locked(p, f) }
    }
}

/// C's `x / y` on integers, which has no value for `y == 0`: abort with the entry point's
/// name (`what`). `MIN / -1` wraps (x86 would trap; C leaves it undefined too).
#[cold]
fn div_by_zero(what: &str) -> ! {
    eprintln!("weft-omp: {what}: integer division by zero; aborting");
    std::process::abort()
}

/// Integer operations with C's semantics on the type (`$p`: the type C promotes it to
/// for shifts).
trait Int: Copy {
    fn div(self, y: Self, what: &str) -> Self;
    fn shl(self, y: Self) -> Self;
    fn shr(self, y: Self) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! int {
    ($($t:ty => $p:ty;)*) => {$(
        impl Int for $t {
            fn div(self, y: $t, what: &str) -> $t {
                if y == 0 {
                    div_by_zero(what)
                }
                self.wrapping_div(y)
            }
            fn shl(self, y: $t) -> $t {
                (self as $p).wrapping_shl(y as u32) as $t
            }
            fn shr(self, y: $t) -> $t {
                (self as $p).wrapping_shr(y as u32) as $t
            }
            fn from_f64(v: f64) -> $t {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
int! {
    i8 => i32;
    u8 => i32;
    i16 => i32;
    u16 => i32;
    i32 => i32;
    u32 => u32;
    i64 => i64;
    u64 => u64;
}

fn cmul32(x: C32, y: C32) -> C32 {
    // SAFETY: a pure libgcc function on plain values.
    unsafe { __mulsc3(x.re, x.im, y.re, y.im) }
}
fn cdiv32(x: C32, y: C32) -> C32 {
    // SAFETY: as `cmul32`.
    unsafe { __divsc3(x.re, x.im, y.re, y.im) }
}
fn cmul64(x: C64, y: C64) -> C64 {
    // SAFETY: as `cmul32`.
    unsafe { __muldc3(x.re, x.im, y.re, y.im) }
}
fn cdiv64(x: C64, y: C64) -> C64 {
    // SAFETY: as `cmul32`.
    unsafe { __divdc3(x.re, x.im, y.re, y.im) }
}
fn widen(x: C32) -> C64 {
    C64 { re: x.re as f64, im: x.im as f64 }
}
fn narrow(x: C64) -> C32 {
    C32 { re: x.re as f32, im: x.im as f32 }
}

/// `x op= rhs` and its capture form, for each `op: |x, y| new value` (`$w`: the entry
/// point's name, for messages).
macro_rules! ops {
    ($tn:ident: $t:ty; $($op:ident: |$x:ident, $y:ident, $w:ident| $e:expr;)*) => {$(paste::paste! {
        /// # Safety
        /// `lhs` is the `atomic` construct's target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _ $op>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t) {
            let $w = stringify!([<__kmpc_atomic_ $tn _ $op>]);
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::update(lhs, |$x| { let $y = rhs; $e }) };
        }

        /// # Safety
        /// As the update form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _ $op _cpt>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t, flag: i32) -> $t {
            let $w = stringify!([<__kmpc_atomic_ $tn _ $op _cpt>]);
            // SAFETY: per the contract.
            let (old, new) = unsafe { <$t as Atom>::update(lhs, |$x| { let $y = rhs; $e }) };
            if flag != 0 { new } else { old }
        }
    })*};
}

/// `x = rhs op x` (`_rev`, `_cpt_rev`) for the non-commutative operations.
macro_rules! rev_ops {
    ($tn:ident: $t:ty; $($op:ident: |$x:ident, $y:ident, $w:ident| $e:expr;)*) => {$(paste::paste! {
        /// # Safety
        /// `lhs` is the `atomic` construct's target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _ $op _rev>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t) {
            let $w = stringify!([<__kmpc_atomic_ $tn _ $op _rev>]);
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::update(lhs, |$y| { let $x = rhs; $e }) };
        }

        /// # Safety
        /// As the update form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _ $op _cpt_rev>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t, flag: i32) -> $t {
            let $w = stringify!([<__kmpc_atomic_ $tn _ $op _cpt_rev>]);
            // SAFETY: per the contract.
            let (old, new) = unsafe { <$t as Atom>::update(lhs, |$y| { let $x = rhs; $e }) };
            if flag != 0 { new } else { old }
        }
    })*};
}

/// `_rd`, `_wr` and `_swp`.
macro_rules! rd_wr_swp {
    ($($tn:ident: $t:ty;)*) => {$(paste::paste! {
        /// # Safety
        /// `loc` is the `atomic read`'s source: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _rd>](_loc: Ident, _gtid: i32, loc: *mut $t) -> $t {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::load(loc) }
        }

        /// # Safety
        /// `lhs` is the `atomic write`'s target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _wr>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t) {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::swap(lhs, rhs) };
        }

        /// # Safety
        /// As `_wr`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_ $tn _swp>](_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $t) -> $t {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::swap(lhs, rhs) }
        }
    })*};
}

// A target with a wider right-hand side (`double`, `double _Complex`), computed in it. (Only the update
// form exists, so `ops!`' capture forms are not wanted: written out.)
macro_rules! mixed {
    ($($name:ident: $t:ty, $r:ty, |$x:ident, $y:ident| $e:expr;)*) => {$(
        /// # Safety
        /// `lhs` is the `atomic` construct's target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(_loc: Ident, _gtid: i32, lhs: *mut $t, rhs: $r) {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::update(lhs, |$x| { let $y = rhs; $e }) };
        }
    )*};
}
/// The integer types' operations (`fixed1` … `fixed8`).
macro_rules! fixed {
    ($($tn:ident: $t:ty;)*) => {$(
        ops! { $tn: $t;
            add: |x, y, _w| x.wrapping_add(y);
            sub: |x, y, _w| x.wrapping_sub(y);
            mul: |x, y, _w| x.wrapping_mul(y);
            div: |x, y, w| Int::div(x, y, w);
            andb: |x, y, _w| x & y;
            orb: |x, y, _w| x | y;
            xor: |x, y, _w| x ^ y;
            andl: |x, y, _w| <$t>::from(x != 0 && y != 0);
            orl: |x, y, _w| <$t>::from(x != 0 || y != 0);
            eqv: |x, y, _w| !(x ^ y);
            neqv: |x, y, _w| x ^ y;
            shl: |x, y, _w| Int::shl(x, y);
            shr: |x, y, _w| Int::shr(x, y);
            max: |x, y, _w| if x < y { y } else { x };
            min: |x, y, _w| if x > y { y } else { x };
        }
        rev_ops! { $tn: $t;
            sub: |x, y, _w| x.wrapping_sub(y);
            div: |x, y, w| Int::div(x, y, w);
            shl: |x, y, _w| Int::shl(x, y);
            shr: |x, y, _w| Int::shr(x, y);
        }
        paste::paste! {
            mixed! {
                [<__kmpc_atomic_ $tn _mul_float8>]: $t, f64, |x, y| <$t as Int>::from_f64(Int::to_f64(x) * y);
                [<__kmpc_atomic_ $tn _div_float8>]: $t, f64, |x, y| <$t as Int>::from_f64(Int::to_f64(x) / y);
            }
        }
    )*};
}

/// The unsigned forms exist for the operations whose result depends on the sign.
macro_rules! fixed_u {
    ($($tn:ident: $t:ty;)*) => {$(
        ops! { $tn: $t;
            div: |x, y, w| Int::div(x, y, w);
            shr: |x, y, _w| Int::shr(x, y);
        }
        rev_ops! { $tn: $t;
            div: |x, y, w| Int::div(x, y, w);
            shr: |x, y, _w| Int::shr(x, y);
        }
    )*};
}

macro_rules! float {
    ($($tn:ident: $t:ty;)*) => {$(
        ops! { $tn: $t;
            add: |x, y, _w| x + y;
            sub: |x, y, _w| x - y;
            mul: |x, y, _w| x * y;
            div: |x, y, _w| x / y;
            // libomp's comparison: a NaN on either side leaves `x` as it is.
            max: |x, y, _w| if x < y { y } else { x };
            min: |x, y, _w| if x > y { y } else { x };
        }
        rev_ops! { $tn: $t;
            sub: |x, y, _w| x - y;
            div: |x, y, _w| x / y;
        }
    )*};
}

fixed! {
    fixed1: i8;
    fixed2: i16;
    fixed4: i32;
    fixed8: i64;
}
fixed_u! {
    fixed1u: u8;
    fixed2u: u16;
    fixed4u: u32;
    fixed8u: u64;
}
float! {
    float4: f32;
    float8: f64;
}
rd_wr_swp! {
    fixed1: i8;
    fixed2: i16;
    fixed4: i32;
    fixed8: i64;
    float4: f32;
    float8: f64;
}

mixed! {
    __kmpc_atomic_float4_add_float8: f32, f64, |x, y| (x as f64 + y) as f32;
    __kmpc_atomic_float4_sub_float8: f32, f64, |x, y| (x as f64 - y) as f32;
    __kmpc_atomic_float4_mul_float8: f32, f64, |x, y| (x as f64 * y) as f32;
    __kmpc_atomic_float4_div_float8: f32, f64, |x, y| (x as f64 / y) as f32;
    __kmpc_atomic_cmplx4_add_cmplx8: C32, C64, |x, y| narrow(C64 { re: x.re as f64 + y.re, im: x.im as f64 + y.im });
    __kmpc_atomic_cmplx4_sub_cmplx8: C32, C64, |x, y| narrow(C64 { re: x.re as f64 - y.re, im: x.im as f64 - y.im });
    __kmpc_atomic_cmplx4_mul_cmplx8: C32, C64, |x, y| narrow(cmul64(widen(x), y));
    __kmpc_atomic_cmplx4_div_cmplx8: C32, C64, |x, y| narrow(cdiv64(widen(x), y));
}

// `cmplx8`: the by-value forms.
ops! { cmplx8: C64;
    add: |x, y, _w| C64 { re: x.re + y.re, im: x.im + y.im };
    sub: |x, y, _w| C64 { re: x.re - y.re, im: x.im - y.im };
    mul: |x, y, _w| cmul64(x, y);
    div: |x, y, _w| cdiv64(x, y);
}
rev_ops! { cmplx8: C64;
    sub: |x, y, _w| C64 { re: x.re - y.re, im: x.im - y.im };
    div: |x, y, _w| cdiv64(x, y);
}
rd_wr_swp! {
    cmplx8: C64;
}

// `cmplx4`: libomp returns captured and exchanged values through an `out` pointer
// (kmp_atomic.h's "workaround for cmplx4"); the read returns by value.
macro_rules! cmplx4 {
    ($($op:ident, $rev:tt: |$x:ident, $y:ident| $e:expr;)*) => {$(paste::paste! {
        /// # Safety
        /// `lhs` is the `atomic` construct's target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_cmplx4_ $op>](_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32) {
            // SAFETY: per the contract.
            unsafe { C32::update(lhs, |$x| { let $y = rhs; $e }) };
        }

        /// # Safety
        /// As the update form; `out` is valid for writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_cmplx4_ $op _cpt>](_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32, out: *mut C32, flag: i32) {
            // SAFETY: per the contract.
            let (old, new) = unsafe { C32::update(lhs, |$x| { let $y = rhs; $e }) };
            // SAFETY: per the contract.
            unsafe { *out = if flag != 0 { new } else { old } };
        }
    }
    cmplx4!(@rev $rev, $x, $y, $e);
    )*};
    (@rev -, $x:ident, $y:ident, $e:expr) => {};
    (@rev $op:ident, $x:ident, $y:ident, $e:expr) => { paste::paste! {
        /// # Safety
        /// `lhs` is the `atomic` construct's target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_cmplx4_ $op _rev>](_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32) {
            // SAFETY: per the contract.
            unsafe { C32::update(lhs, |$y| { let $x = rhs; $e }) };
        }

        /// # Safety
        /// As the update form; `out` is valid for writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_cmplx4_ $op _cpt_rev>](_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32, out: *mut C32, flag: i32) {
            // SAFETY: per the contract.
            let (old, new) = unsafe { C32::update(lhs, |$y| { let $x = rhs; $e }) };
            // SAFETY: per the contract.
            unsafe { *out = if flag != 0 { new } else { old } };
        }
    }};
}
cmplx4! {
    add, -: |x, y| C32 { re: x.re + y.re, im: x.im + y.im };
    sub, sub: |x, y| C32 { re: x.re - y.re, im: x.im - y.im };
    mul, -: |x, y| cmul32(x, y);
    div, div: |x, y| cdiv32(x, y);
}

/// # Safety
/// `loc` is the `atomic read`'s source: valid, accessed only atomically.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_atomic_cmplx4_rd(_loc: Ident, _gtid: i32, loc: *mut C32) -> C32 {
    // SAFETY: per the contract.
    unsafe { C32::load(loc) }
}

/// # Safety
/// `lhs` is the `atomic write`'s target: valid, accessed only atomically.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_atomic_cmplx4_wr(_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32) {
    // SAFETY: per the contract.
    unsafe { C32::swap(lhs, rhs) };
}

/// # Safety
/// As `_wr`; `out` is valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __kmpc_atomic_cmplx4_swp(_loc: Ident, _gtid: i32, lhs: *mut C32, rhs: C32, out: *mut C32) {
    // SAFETY: per the contract.
    unsafe { *out = C32::swap(lhs, rhs) };
}

/// The compiler's update of an object of any type: `f(out, x, rhs)` writes `x op rhs` to
/// `out`.
pub type Generic = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void);

/// `f` applied atomically to the `T`-sized object `lhs`.
///
/// # Safety
/// `lhs` is the target (valid, accessed only atomically), `f` the compiler's function for
/// it and `rhs`.
unsafe fn generic<T: Atom>(lhs: *mut c_void, rhs: *mut c_void, f: Generic) {
    // SAFETY: per the contract; `f` reads the old value from `x` and writes the new one to
    // `out`, both locals of the object's size.
    unsafe {
        T::update(lhs as *mut T, |mut x| {
            let mut out = x;
            f(&mut out as *mut T as *mut c_void, &mut x as *mut T as *mut c_void, rhs);
            out
        })
    };
}

macro_rules! generic {
    ($($name:ident: locked;)*) => {$(
        /// # Safety
        /// `lhs` is the target (valid, accessed only atomically), `f` the compiler's
        /// function for it and `rhs`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(_loc: Ident, _gtid: i32, lhs: *mut c_void, rhs: *mut c_void, f: Generic) {
            lock::lock(&ATOMIC);
            // SAFETY: per the contract; updates of objects this size all hold the lock.
            unsafe { f(lhs, lhs, rhs) };
            lock::unlock(&ATOMIC);
        }
    )*};
    ($($name:ident: $t:ty;)*) => {$(
        /// # Safety
        /// `lhs` is the target (valid, accessed only atomically), `f` the compiler's
        /// function for it and `rhs`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(_loc: Ident, _gtid: i32, lhs: *mut c_void, rhs: *mut c_void, f: Generic) {
            // SAFETY: per the contract.
            unsafe { generic::<$t>(lhs, rhs, f) }
        }
    )*};
}
generic! {
    __kmpc_atomic_1: u8;
    __kmpc_atomic_2: u16;
    __kmpc_atomic_4: u32;
    __kmpc_atomic_8: u64;
}
generic! {
    __kmpc_atomic_10: locked;
    __kmpc_atomic_16: locked;
    __kmpc_atomic_20: locked;
    __kmpc_atomic_32: locked;
}

/// `atomic compare`: `if (*x == e) *x = d`.
macro_rules! cas {
    ($($n:literal: $t:ty;)*) => {$(paste::paste! {
        /// Whether `*x` was `e` (and is now `d`).
        ///
        /// # Safety
        /// `x` is the target: valid, accessed only atomically.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_bool_ $n _cas>](_loc: Ident, _gtid: i32, x: *mut $t, e: $t, d: $t) -> bool {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::update(x, |v| if v == e { d } else { v }).0 == e }
        }

        /// The old value of `*x`.
        ///
        /// # Safety
        /// As the `bool` form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_val_ $n _cas>](_loc: Ident, _gtid: i32, x: *mut $t, e: $t, d: $t) -> $t {
            // SAFETY: per the contract.
            unsafe { <$t as Atom>::update(x, |v| if v == e { d } else { v }).0 }
        }

        /// As the `bool` form; when the comparison fails, the value found goes to `*pv`.
        ///
        /// # Safety
        /// As the `bool` form; `pv` is valid for writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_bool_ $n _cas_cpt>](_loc: Ident, _gtid: i32, x: *mut $t, e: $t, d: $t, pv: *mut $t) -> bool {
            // SAFETY: per the contract.
            let old = unsafe { <$t as Atom>::update(x, |v| if v == e { d } else { v }).0 };
            if old != e {
                // SAFETY: per the contract.
                unsafe { *pv = old };
            }
            old == e
        }

        /// The old value; `*pv` gets the new one (`d` when the comparison held).
        ///
        /// # Safety
        /// As the `bool` form; `pv` is valid for writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn [<__kmpc_atomic_val_ $n _cas_cpt>](_loc: Ident, _gtid: i32, x: *mut $t, e: $t, d: $t, pv: *mut $t) -> $t {
            // SAFETY: per the contract.
            let (old, new) = unsafe { <$t as Atom>::update(x, |v| if v == e { d } else { v }) };
            // SAFETY: per the contract.
            unsafe { *pv = new };
            old
        }
    })*};
}
cas! {
    1: i8;
    2: i16;
    4: i32;
    8: i64;
}

/// The start of an atomic update the compiler writes out itself (any type): the global
/// atomic lock, as `GOMP_atomic_start`.
#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_atomic_start() {
    lock::lock(&ATOMIC)
}

#[unsafe(no_mangle)]
pub extern "C" fn __kmpc_atomic_end() {
    lock::unlock(&ATOMIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_operations_follow_c() {
        let mut x: i8 = -7;
        // SAFETY: a local, this thread's only.
        unsafe {
            __kmpc_atomic_fixed1_shr(std::ptr::null(), 0, &mut x, 1);
            assert_eq!(x, -4, "arithmetic shift of a signed char");
            let mut u: u8 = 0xf0;
            __kmpc_atomic_fixed1u_shr(std::ptr::null(), 0, &mut u, 4);
            assert_eq!(u, 0x0f);
            x = 3;
            // Promoted to int: 3 << 7 = 384, truncated back to 0x80.
            assert_eq!(__kmpc_atomic_fixed1_shl_cpt(std::ptr::null(), 0, &mut x, 7, 1), i8::MIN);
            let mut w: i32 = 10;
            assert_eq!(__kmpc_atomic_fixed4_sub_cpt_rev(std::ptr::null(), 0, &mut w, 3, 1), -7);
            assert_eq!(__kmpc_atomic_fixed4_div_cpt_rev(std::ptr::null(), 0, &mut w, 21, 0), -7);
            assert_eq!(w, -3);
            w = 5;
            __kmpc_atomic_fixed4_andl(std::ptr::null(), 0, &mut w, 9);
            assert_eq!(w, 1);
            __kmpc_atomic_fixed4_eqv(std::ptr::null(), 0, &mut w, 1);
            assert_eq!(w, -1);
            __kmpc_atomic_fixed4_mul_float8(std::ptr::null(), 0, &mut w, 2.5);
            assert_eq!(w, -2);
            let mut l: i64 = 3;
            assert_eq!(__kmpc_atomic_fixed8_max_cpt(std::ptr::null(), 0, &mut l, 9, 0), 3);
            assert_eq!(__kmpc_atomic_fixed8_min_cpt(std::ptr::null(), 0, &mut l, 4, 1), 4);
        }
    }

    #[test]
    fn floats_complex_and_compare() {
        // SAFETY: locals, this thread's only.
        unsafe {
            let mut d = 1.5f64;
            __kmpc_atomic_float8_div_rev(std::ptr::null(), 0, &mut d, 3.0);
            assert_eq!(d, 2.0);
            let mut f = f32::NAN;
            __kmpc_atomic_float4_max(std::ptr::null(), 0, &mut f, 1.0);
            assert!(f.is_nan(), "a NaN compares false: x stays");
            let mut c = C32 { re: 1.0, im: 2.0 };
            let mut out = C32 { re: 0.0, im: 0.0 };
            __kmpc_atomic_cmplx4_mul_cpt(std::ptr::null(), 0, &mut c, C32 { re: 0.0, im: 1.0 }, &mut out, 1);
            assert_eq!((c, out), (C32 { re: -2.0, im: 1.0 }, C32 { re: -2.0, im: 1.0 }));
            let mut z = C64 { re: 4.0, im: 2.0 };
            let old = __kmpc_atomic_cmplx8_div_cpt(std::ptr::null(), 0, &mut z, C64 { re: 2.0, im: 0.0 }, 0);
            assert_eq!((old, z), (C64 { re: 4.0, im: 2.0 }, C64 { re: 2.0, im: 1.0 }));
            let mut v = 5i32;
            let mut pv = 0i32;
            assert!(!__kmpc_atomic_bool_4_cas_cpt(std::ptr::null(), 0, &mut v, 4, 9, &mut pv));
            assert_eq!((v, pv), (5, 5));
            assert_eq!(__kmpc_atomic_val_4_cas_cpt(std::ptr::null(), 0, &mut v, 5, 9, &mut pv), 5);
            assert_eq!((v, pv), (9, 9));
        }
    }

    #[test]
    fn misaligned_targets_take_the_lock() {
        let mut buf = [0u8; 16];
        let p = buf.as_mut_ptr().wrapping_add(1) as *mut i32;
        // SAFETY: 4 bytes inside `buf`, this thread's only.
        unsafe {
            __kmpc_atomic_fixed4_add(std::ptr::null(), 0, p, 41);
            assert_eq!(__kmpc_atomic_fixed4_add_cpt(std::ptr::null(), 0, p, 1, 1), 42);
            assert_eq!(__kmpc_atomic_fixed4_rd(std::ptr::null(), 0, p), 42);
        }
    }
}
