//! The `omp_*` queries and ICV setters (OpenMP 5.1 §3.2–3.4, host only), affinity
//! display, `omp_get_wtime`.

use super::guard;
use super::parallel::teams;
use crate::env::{self, SCHED_MONOTONIC, SUPPORTED_ACTIVE_LEVELS, env};
use crate::team::ctx;
use std::ffi::{CStr, c_char, c_double, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_thread_num() -> c_int {
    ctx().tid as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_threads() -> c_int {
    ctx().team().n as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_threads() -> c_int {
    ctx().icv.nthreads.min(i32::MAX as u32) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_num_threads(n: c_int) {
    // "The value of the argument [...] must be a positive integer": ignore others, saying so.
    if n > 0 {
        ctx().icv.nthreads = n as u32;
    } else {
        eprintln!("weft-omp: omp_set_num_threads({n}): the number of threads must be positive; ignored");
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_procs() -> c_int {
    env().nprocs as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_in_parallel() -> c_int {
    (ctx().team().active_level > 0) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_dynamic(v: c_int) {
    ctx().icv.dynamic = v != 0;
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_dynamic() -> c_int {
    ctx().icv.dynamic as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_nested(v: c_int) {
    let c = ctx();
    if v != 0 {
        c.icv.max_active_levels = SUPPORTED_ACTIVE_LEVELS;
    } else if c.icv.max_active_levels > 1 {
        c.icv.max_active_levels = 1;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_nested() -> c_int {
    let c = ctx();
    (c.icv.max_active_levels > 1 && c.icv.max_active_levels > c.team().active_level) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_max_active_levels(n: c_int) {
    if n >= 0 {
        ctx().icv.max_active_levels = (n as u32).min(SUPPORTED_ACTIVE_LEVELS);
    } else {
        eprintln!("weft-omp: omp_set_max_active_levels({n}): the number of levels must not be negative; ignored");
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_active_levels() -> c_int {
    ctx().icv.max_active_levels as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_supported_active_levels() -> c_int {
    SUPPORTED_ACTIVE_LEVELS as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_level() -> c_int {
    ctx().team().level as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_active_level() -> c_int {
    ctx().team().active_level as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_ancestor_thread_num(level: c_int) -> c_int {
    if level < 0 {
        return -1;
    }
    let c = ctx();
    c.team().ancestor(c.tid, level as u32).map(|(t, _)| t as c_int).unwrap_or(-1)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_team_size(level: c_int) -> c_int {
    if level < 0 {
        return -1;
    }
    let c = ctx();
    c.team().ancestor(c.tid, level as u32).map(|(_, n)| n as c_int).unwrap_or(-1)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_schedule(kind: c_int, chunk: c_int) {
    let k = kind & !SCHED_MONOTONIC;
    if !(1..=4).contains(&k) {
        eprintln!("weft-omp: omp_set_schedule: unknown schedule kind {kind}; ignored");
        return;
    }
    let c = ctx();
    c.icv.run_sched = kind;
    c.icv.run_chunk = if chunk < 1 { if k == env::SCHED_STATIC { 0 } else { 1 } } else { chunk };
    if k == env::SCHED_AUTO {
        c.icv.run_chunk = 0;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_get_schedule(kind: *mut c_int, chunk: *mut c_int) {
    let c = ctx();
    // SAFETY: the program passes valid out-pointers.
    unsafe {
        *kind = c.icv.run_sched;
        *chunk = c.icv.run_chunk;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_thread_limit() -> c_int {
    ctx().icv.thread_limit.min(i32::MAX as u32) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_in_final() -> c_int {
    c_int::from(crate::task::in_final())
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_cancellation() -> c_int {
    env().cancellation as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_proc_bind() -> c_int {
    ctx().icv.bind as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_places() -> c_int {
    env().places.len() as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_place_num_procs(p: c_int) -> c_int {
    env().places.get(p.max(0) as usize).filter(|_| p >= 0).map(|x| x.len() as c_int).unwrap_or(0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_get_place_proc_ids(p: c_int, ids: *mut c_int) {
    if p < 0 {
        return;
    }
    if let Some(pl) = env().places.get(p as usize) {
        for (i, &x) in pl.iter().enumerate() {
            // SAFETY: the program passes room for omp_get_place_num_procs(p) ids.
            unsafe { *ids.add(i) = x as c_int };
        }
    }
}

/// The calling implicit task's place and partition (None without a place list).
fn my_place() -> Option<crate::places::Assign> {
    let c = ctx();
    c.team().places.get(c.tid as usize).copied()
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_place_num() -> c_int {
    my_place().map(|a| a.place).unwrap_or(-1)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_partition_num_places() -> c_int {
    my_place().map(|a| a.len as c_int).unwrap_or(0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_get_partition_place_nums(out: *mut c_int) {
    let Some(a) = my_place() else { return };
    for i in 0..a.len {
        // SAFETY: the program passes room for omp_get_partition_num_places() ints.
        unsafe { *out.add(i as usize) = (a.off + i) as c_int };
    }
}

static DEFAULT_DEVICE: AtomicI32 = AtomicI32::new(-1);

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_default_device(d: c_int) {
    DEFAULT_DEVICE.store(d, Ordering::Relaxed);
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_default_device() -> c_int {
    let d = DEFAULT_DEVICE.load(Ordering::Relaxed);
    if d < 0 { env().default_device } else { d }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_devices() -> c_int {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_is_initial_device() -> c_int {
    1
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_initial_device() -> c_int {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_device_num() -> c_int {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_num_teams() -> c_int {
    teams().1
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_team_num() -> c_int {
    teams().0
}

/// The nteams-var and teams-thread-limit-var ICVs (-1: not read from the environment yet).
static NUM_TEAMS: AtomicI32 = AtomicI32::new(-1);
static TEAMS_THREAD_LIMIT: AtomicI32 = AtomicI32::new(-1);

fn teams_icv(v: &AtomicI32, from_env: fn() -> u32) -> c_int {
    let x = v.load(Ordering::Relaxed);
    if x >= 0 {
        return x;
    }
    let e = from_env().min(i32::MAX as u32) as i32;
    // A setter may have run meanwhile: keep its value.
    match v.compare_exchange(-1, e, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => e,
        Err(x) => x,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_num_teams(n: c_int) {
    if n > 0 {
        NUM_TEAMS.store(n, Ordering::Relaxed);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_teams() -> c_int {
    teams_icv(&NUM_TEAMS, || env().num_teams)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_set_teams_thread_limit(n: c_int) {
    if n > 0 {
        TEAMS_THREAD_LIMIT.store(n, Ordering::Relaxed);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_teams_thread_limit() -> c_int {
    teams_icv(&TEAMS_THREAD_LIMIT, || env().teams_thread_limit)
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_max_task_priority() -> c_int {
    env().max_task_priority
}

/// Pausing the host: an error inside a parallel region (as libgomp); otherwise nothing to
/// release. Team threads are Weft's shared CPU workers (plus OpenMP threads of our own that
/// sleep on a futex when idle): they are kept, so threadprivate data of the other threads
/// survives a pause. OpenMP allows that; libgomp's pause-2.c checks that libgomp goes
/// further and destroys its threads.
fn pause_host() -> c_int {
    if ctx().team().level > 0 { -1 } else { 0 }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_pause_resource(_kind: c_int, device: c_int) -> c_int {
    if device == omp_get_initial_device() {
        pause_host()
    } else if device < 0 || device >= omp_get_num_devices() {
        -1
    } else {
        0
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_pause_resource_all(_kind: c_int) -> c_int {
    pause_host()
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_wtime() -> c_double {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_get_wtick() -> c_double {
    1e-9
}

#[unsafe(no_mangle)]
pub extern "C" fn omp_display_env(verbose: c_int) {
    guard("omp_display_env", || eprint!("{}", env::display(env(), verbose != 0)))
}

// ---------------------------------------------------------------------------------------
// Affinity format (OpenMP 5.0 §3.3.x).

static FORMAT: Mutex<Option<String>> = Mutex::new(None);

fn format_string() -> String {
    FORMAT.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(|| env().affinity_format.clone())
}

fn expand(fmt: &str) -> String {
    let c = ctx();
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    while let Some(ch) = it.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        // %[0][.][size]{name} or %[0][.][size]letter: '0' pads with zeros on the left, '.'
        // right-justifies, otherwise left-justified.
        let mut zero = false;
        let mut right = false;
        if it.peek() == Some(&'0') {
            zero = true;
            it.next();
        }
        if it.peek() == Some(&'.') {
            right = true;
            it.next();
        }
        let mut width = String::new();
        while let Some(&d) = it.peek() {
            if !d.is_ascii_digit() {
                break;
            }
            width.push(d);
            it.next();
        }
        let mut name = String::new();
        match it.next() {
            Some('{') => {
                for x in it.by_ref() {
                    if x == '}' {
                        break;
                    }
                    name.push(x);
                }
            }
            Some(x) => name.push(x),
            None => break,
        }
        let t = c.team();
        let v = match name.as_str() {
            "t" | "team_num" => teams().0.to_string(),
            "T" | "num_teams" => teams().1.to_string(),
            "L" | "nesting_level" => t.level.to_string(),
            "n" | "thread_num" => c.tid.to_string(),
            "N" | "num_threads" => t.n.to_string(),
            "a" | "ancestor_tnum" if t.level == 0 => "-1".into(),
            "a" | "ancestor_tnum" => t.ancestor(c.tid, t.level - 1).map(|x| x.0 as i64).unwrap_or(-1).to_string(),
            "H" | "host" => std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default(),
            "P" | "process_id" => std::process::id().to_string(),
            // SAFETY: gettid has no preconditions.
            "i" | "native_thread_id" => unsafe { libc::gettid() }.to_string(),
            // As libgomp: the CPUs of the thread's place, else those it may run on.
            "A" | "thread_affinity" => {
                let place = t.places.get(c.tid as usize).and_then(|a| env().places.get(a.place.max(0) as usize).filter(|_| a.place >= 0));
                crate::places::cpu_ranges(&place.cloned().unwrap_or_else(crate::places::process_cpus))
            }
            "%" => "%".into(),
            _ => format!("%{name}"),
        };
        let w = width.parse::<usize>().unwrap_or(0);
        let pad = w.saturating_sub(v.len());
        if zero {
            // Zeros go after a sign.
            let (sign, digits) = if let Some(d) = v.strip_prefix('-') { ("-", d) } else { ("", v.as_str()) };
            out.push_str(sign);
            out.push_str(&"0".repeat(pad));
            out.push_str(digits);
        } else if right {
            out.push_str(&" ".repeat(pad));
            out.push_str(&v);
        } else {
            out.push_str(&v);
            out.push_str(&" ".repeat(pad));
        }
    }
    out
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn cstr(p: *const c_char) -> Option<String> {
    // SAFETY: per the contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Copy `s` into `buf` of `size` bytes (truncated, NUL-terminated); returns `s.len()`.
fn copy_out(s: &str, buf: *mut c_char, size: usize) -> usize {
    if !buf.is_null() && size > 0 {
        let n = s.len().min(size - 1);
        // SAFETY: the program passes `size` writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
    }
    s.len()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_set_affinity_format(format: *const c_char) {
    // SAFETY: the program passes a string.
    let f = unsafe { cstr(format) }.unwrap_or_default();
    *FORMAT.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_get_affinity_format(buf: *mut c_char, size: usize) -> usize {
    guard("omp_get_affinity_format", || copy_out(&format_string(), buf, size))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_display_affinity(format: *const c_char) {
    // SAFETY: the program passes null or a string.
    let f = unsafe { cstr(format) }.filter(|s| !s.is_empty()).unwrap_or_else(format_string);
    guard("omp_display_affinity", || println!("{}", expand(&f)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn omp_capture_affinity(buf: *mut c_char, size: usize, format: *const c_char) -> usize {
    // SAFETY: the program passes null or a string.
    let f = unsafe { cstr(format) }.filter(|s| !s.is_empty()).unwrap_or_else(format_string);
    guard("omp_capture_affinity", || copy_out(&expand(&f), buf, size))
}

#[allow(dead_code)]
fn _unused(_: *mut c_void) {}
