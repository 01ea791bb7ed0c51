//! OpenMP memory allocators (OpenMP 5.0 §2.11) on the host: the predefined allocators map
//! to the system heap; `omp_init_allocator` allocators honour the alignment, pool_size and
//! fallback traits. Each block carries a header recording its allocator and size.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

type Handle = usize;
const NULL_ALLOCATOR: Handle = 0;
const DEFAULT_MEM_ALLOC: Handle = 1;
const LAST_PREDEFINED: Handle = 8;

const TRAIT_SYNC_HINT: c_int = 1;
const TRAIT_ALIGNMENT: c_int = 2;
const TRAIT_ACCESS: c_int = 3;
const TRAIT_POOL_SIZE: c_int = 4;
const TRAIT_FALLBACK: c_int = 5;
const TRAIT_FB_DATA: c_int = 6;
const TRAIT_PINNED: c_int = 7;
const TRAIT_PARTITION: c_int = 8;

const FB_DEFAULT: usize = 11;
const FB_NULL: usize = 12;
const FB_ABORT: usize = 13;
const FB_ALLOCATOR: usize = 14;

#[repr(C)]
pub struct Trait {
    key: c_int,
    value: usize,
}

struct Allocator {
    align: usize,
    pool: usize,
    fallback: usize,
    fb_data: Handle,
    used: AtomicUsize,
}

#[repr(C)]
struct Header {
    base: *mut u8,
    size: usize,
    alloc: Handle,
}

/// `OMP_ALLOCATOR`: a predefined allocator's name or number.
fn env_allocator() -> Handle {
    static H: std::sync::OnceLock<Handle> = std::sync::OnceLock::new();
    *H.get_or_init(|| {
        let names = [
            "omp_default_mem_alloc",
            "omp_large_cap_mem_alloc",
            "omp_const_mem_alloc",
            "omp_high_bw_mem_alloc",
            "omp_low_lat_mem_alloc",
            "omp_cgroup_mem_alloc",
            "omp_pteam_mem_alloc",
            "omp_thread_mem_alloc",
        ];
        match std::env::var("OMP_ALLOCATOR") {
            Err(_) => DEFAULT_MEM_ALLOC,
            Ok(v) => {
                let v = v.trim();
                if let Some(i) = names.iter().position(|n| *n == v) {
                    i + 1
                } else if let Ok(n @ 1..=LAST_PREDEFINED) = v.parse::<Handle>() {
                    n
                } else {
                    eprintln!(
                        "weft-omp: invalid value for environment variable OMP_ALLOCATOR: {v:?}; using the default (omp_default_mem_alloc)"
                    );
                    DEFAULT_MEM_ALLOC
                }
            }
        }
    })
}

fn get(h: Handle) -> Option<&'static Allocator> {
    // SAFETY: handles above the predefined range are leaked Allocator boxes, live until
    // omp_destroy_allocator (using one after that is the program's error).
    (h > LAST_PREDEFINED).then(|| unsafe { &*(h as *const Allocator) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_init_allocator(memspace: usize, ntraits: c_int, traits: *const Trait) -> Handle {
    if memspace > 4 {
        return NULL_ALLOCATOR;
    }
    let mut a = Allocator { align: 1, pool: usize::MAX, fallback: FB_DEFAULT, fb_data: NULL_ALLOCATOR, used: AtomicUsize::new(0) };
    for i in 0..ntraits.max(0) as usize {
        // SAFETY: the program passes ntraits traits.
        let t = unsafe { &*traits.add(i) };
        // omp_atv_default: the trait's default.
        if t.value == usize::MAX && t.key != TRAIT_POOL_SIZE && t.key != TRAIT_FB_DATA && (1..=8).contains(&t.key) {
            continue;
        }
        match t.key {
            TRAIT_ALIGNMENT if t.value.is_power_of_two() => a.align = t.value,
            TRAIT_ALIGNMENT => return NULL_ALLOCATOR,
            TRAIT_POOL_SIZE => a.pool = t.value,
            TRAIT_FALLBACK if (FB_DEFAULT..=FB_ALLOCATOR).contains(&t.value) => a.fallback = t.value,
            TRAIT_FALLBACK => return NULL_ALLOCATOR,
            TRAIT_FB_DATA => a.fb_data = t.value,
            TRAIT_SYNC_HINT if (3..=6).contains(&t.value) => {}
            TRAIT_ACCESS if (7..=10).contains(&t.value) => {}
            TRAIT_PINNED if t.value <= 1 => {}
            TRAIT_PARTITION if (15..=18).contains(&t.value) => {}
            _ => return NULL_ALLOCATOR,
        }
    }
    if a.fallback == FB_ALLOCATOR && a.fb_data == NULL_ALLOCATOR {
        return NULL_ALLOCATOR;
    }
    Box::into_raw(Box::new(a)) as Handle
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_destroy_allocator(h: Handle) {
    if h > LAST_PREDEFINED {
        // SAFETY: made by omp_init_allocator.
        drop(unsafe { Box::from_raw(h as *mut Allocator) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_default_allocator(h: Handle) {
    // def-allocator-var is a data environment ICV: inherited by the tasks and regions below.
    crate::team::ctx().icv.def_alloc = if h == NULL_ALLOCATOR { env_allocator() } else { h };
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_default_allocator() -> Handle {
    match crate::team::ctx().icv.def_alloc {
        NULL_ALLOCATOR => env_allocator(),
        h => h,
    }
}

fn alloc(align: usize, size: usize, h: Handle, zero: bool) -> *mut c_void {
    let h = if h == NULL_ALLOCATOR { omp_get_default_allocator() } else { h };
    if size == 0 {
        return std::ptr::null_mut();
    }
    if let Some(a) = get(h) {
        let ok = a.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| u.checked_add(size).filter(|&n| n <= a.pool)).is_ok();
        if !ok {
            return fallback(a, align, size, zero);
        }
    }
    raw(align, size, h, zero)
}

/// What an allocator whose pool is exhausted does (its fallback trait).
fn fallback(a: &Allocator, align: usize, size: usize, zero: bool) -> *mut c_void {
    match a.fallback {
        FB_NULL => std::ptr::null_mut(),
        FB_ABORT => {
            eprintln!("weft-omp: allocation of {size} bytes failed (pool exhausted, abort_fb); aborting");
            std::process::abort()
        }
        FB_ALLOCATOR => alloc(align, size, a.fb_data, zero),
        _ => alloc(align, size, DEFAULT_MEM_ALLOC, zero),
    }
}

/// Allocate a block for `h` whose pool use is already accounted.
fn raw(align: usize, size: usize, h: Handle, zero: bool) -> *mut c_void {
    let align = align.max(get(h).map(|a| a.align).unwrap_or(1)).max(std::mem::align_of::<Header>());
    if !align.is_power_of_two() {
        return fail(h, size);
    }
    let total = match size.checked_add(align + std::mem::size_of::<Header>()) {
        Some(t) => t,
        None => return fail(h, size),
    };
    // SAFETY: plain heap allocation.
    let base = unsafe { if zero { libc::calloc(1, total) } else { libc::malloc(total) } } as *mut u8;
    if base.is_null() {
        return fail(h, size);
    }
    let start = base as usize + std::mem::size_of::<Header>();
    let p = start.div_ceil(align) * align;
    // SAFETY: the header fits between base and p (p - size_of::<Header>() >= base).
    unsafe { ((p - std::mem::size_of::<Header>()) as *mut Header).write_unaligned(Header { base, size, alloc: h }) };
    p as *mut c_void
}

fn fail(h: Handle, size: usize) -> *mut c_void {
    if let Some(a) = get(h) {
        a.used.fetch_sub(size, Ordering::Relaxed);
    }
    std::ptr::null_mut()
}

fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `alloc`, which put a header just below it.
    let h = unsafe { ((p as usize - std::mem::size_of::<Header>()) as *const Header).read_unaligned() };
    if let Some(a) = get(h.alloc) {
        a.used.fetch_sub(h.size, Ordering::Relaxed);
    }
    // SAFETY: the block's base from malloc/calloc.
    unsafe { libc::free(h.base as *mut c_void) };
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_alloc(size: usize, h: Handle) -> *mut c_void {
    alloc(1, size, h, false)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_aligned_alloc(align: usize, size: usize, h: Handle) -> *mut c_void {
    alloc(align, size, h, false)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_calloc(n: usize, size: usize, h: Handle) -> *mut c_void {
    match n.checked_mul(size) {
        Some(t) => alloc(1, t, h, true),
        None => std::ptr::null_mut(),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_aligned_calloc(align: usize, n: usize, size: usize, h: Handle) -> *mut c_void {
    match n.checked_mul(size) {
        Some(t) => alloc(align, t, h, true),
        None => std::ptr::null_mut(),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_free(p: *mut c_void, _h: Handle) {
    free(p)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_realloc(p: *mut c_void, size: usize, h: Handle, free_h: Handle) -> *mut c_void {
    if size == 0 {
        free(p);
        return std::ptr::null_mut();
    }
    if p.is_null() {
        return alloc(1, size, h, false);
    }
    // SAFETY: `p` came from `alloc`, which put a header just below it.
    let old = unsafe { ((p as usize - std::mem::size_of::<Header>()) as *const Header).read_unaligned() };
    let _ = free_h;
    // "If allocator is omp_null_allocator, the allocator of ptr is used."
    let h = if h == NULL_ALLOCATOR { old.alloc } else { h };
    let q = match get(h) {
        // Same pool: the old block's share is given back as the new one is taken.
        Some(a) if h == old.alloc => {
            let ok = a
                .used
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| u.checked_sub(old.size)?.checked_add(size).filter(|&n| n <= a.pool))
                .is_ok();
            if !ok {
                return match a.fallback {
                    FB_NULL => std::ptr::null_mut(),
                    _ => {
                        let q = fallback(a, 1, size, false);
                        if !q.is_null() {
                            // SAFETY: both blocks hold at least min(old, new) bytes.
                            unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.size.min(size)) };
                            free(p);
                        }
                        q
                    }
                };
            }
            let q = raw(1, size, h, false);
            if q.is_null() {
                return q;
            }
            // SAFETY: both blocks hold at least min(old, new) bytes.
            unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.size.min(size)) };
            // SAFETY: the old block's base; its pool share was moved to the new block.
            unsafe { libc::free(old.base as *mut c_void) };
            return q;
        }
        _ => alloc(1, size, h, false),
    };
    if q.is_null() {
        return q;
    }
    // SAFETY: both blocks hold at least min(old, new) bytes.
    unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.size.min(size)) };
    free(p);
    q
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_alloc(align: usize, size: usize, h: Handle) -> *mut c_void {
    let p = alloc(align, size, h, false);
    if p.is_null() && size > 0 {
        eprintln!("weft-omp: GOMP_alloc: out of memory allocating {size} bytes; aborting");
        std::process::abort();
    }
    p
}

#[unsafe(no_mangle)]
pub extern "C" fn GOMP_free(p: *mut c_void, _h: Handle) {
    free(p)
}
