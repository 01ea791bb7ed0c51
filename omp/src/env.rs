//! The environment: every `OMP_*` variable is read here, once, into [`Env`] (the initial
//! values of the ICVs). A value that does not parse gets a warning naming the variable and
//! the default, as libgomp does.
//!
//! **Owns**: parsing and `OMP_DISPLAY_ENV`. **Does not own**: the per-task copies of the
//! ICVs (team.rs).

use std::sync::OnceLock;

pub const SCHED_STATIC: i32 = 1;
pub const SCHED_DYNAMIC: i32 = 2;
pub const SCHED_GUIDED: i32 = 3;
pub const SCHED_AUTO: i32 = 4;
pub const SCHED_MONOTONIC: i32 = 0x8000_0000u32 as i32;
/// What `omp_get_supported_active_levels` answers (libgomp: UCHAR_MAX).
pub const SUPPORTED_ACTIVE_LEVELS: u32 = 255;

/// proc_bind values (omp_proc_bind_t).
pub const BIND_FALSE: u8 = 0;
pub const BIND_TRUE: u8 = 1;
pub const BIND_PRIMARY: u8 = 2;
pub const BIND_CLOSE: u8 = 3;
pub const BIND_SPREAD: u8 = 4;

pub struct Env {
    pub nthreads: Vec<u32>,
    pub dynamic: bool,
    pub run_sched: i32,
    pub run_chunk: i32,
    pub max_active_levels: u32,
    pub thread_limit: u32,
    pub bind: Vec<u8>,
    /// Places, each a list of OS processor ids.
    pub places: Vec<Vec<u32>>,
    pub stacksize: Option<usize>,
    pub cancellation: bool,
    pub max_task_priority: i32,
    pub default_device: i32,
    pub wait_policy: i32,
    pub nprocs: u32,
    pub display: Option<bool>,
    pub affinity_format: String,
    pub display_affinity: bool,
    pub num_teams: u32,
    pub teams_thread_limit: u32,
    /// The process's CPUs when the library was loaded (before the program could bind a
    /// thread): the places' universe, and the cores Weft's workers may run on.
    pub cpus: Vec<u32>,
    /// `WEFT_OMP_BARRIER_REPORT` (seconds): a thread that has slept this long at a barrier
    /// reports where the team's threads are (watch.rs); None: off.
    pub barrier_report: Option<std::time::Duration>,
}

static ENV: OnceLock<Env> = OnceLock::new();

/// Read the environment when the library is loaded, as libgomp does: `OMP_DISPLAY_ENV`
/// prints before `main`, and the process's CPU set (the places' universe) is taken before
/// anything binds a thread. This parses only; the runtime itself still starts on first use.
#[used]
#[unsafe(link_section = ".init_array")]
static READ_AT_LOAD: extern "C" fn() = {
    extern "C" fn read_at_load() {
        let _ = env();
    }
    read_at_load
};

pub fn env() -> &'static Env {
    ENV.get_or_init(|| {
        let e = parse();
        crate::sys::SPIN_NS.store(
            match e.wait_policy {
                1 => u64::MAX,
                0 => 0,
                _ => spin_from_env(),
            },
            std::sync::atomic::Ordering::Relaxed,
        );
        crate::sys::NPROCS.store(e.nprocs as i64, std::sync::atomic::Ordering::Relaxed);
        if let Some(verbose) = e.display {
            eprint!("{}", display(&e, verbose));
        }
        e
    })
}

fn warn(var: &str, val: &str, default: &str) {
    eprintln!("weft-omp: invalid value for environment variable {var}: {val:?}; using the default ({default})");
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn spin_from_env() -> u64 {
    // GOMP_SPINCOUNT counts spin iterations (libgomp: 300000 by default, about a ms);
    // we spin by time: one iteration is about a nanosecond.
    match var("GOMP_SPINCOUNT") {
        Some(s) if s.eq_ignore_ascii_case("infinity") => u64::MAX,
        Some(s) => match s.parse::<u64>() {
            Ok(n) => n,
            Err(_) => {
                warn("GOMP_SPINCOUNT", &s, "300000");
                300_000
            }
        },
        None => 300_000,
    }
}

fn parse_bool(name: &str, default: bool) -> bool {
    match var(name) {
        None => default,
        Some(s) if s.eq_ignore_ascii_case("true") || s == "1" => true,
        Some(s) if s.eq_ignore_ascii_case("false") || s == "0" => false,
        Some(s) => {
            warn(name, &s, if default { "true" } else { "false" });
            default
        }
    }
}

fn parse_uint(name: &str, min: u64) -> Option<u64> {
    let s = var(name)?;
    match s.parse::<u64>() {
        Ok(n) if n >= min => Some(n),
        _ => {
            warn(name, &s, "unset");
            None
        }
    }
}

/// `OMP_SCHEDULE`: `[modifier:]kind[,chunk]`.
pub fn parse_schedule(s: &str) -> Option<(i32, i32)> {
    let s = s.to_ascii_lowercase();
    let (modifier, rest) = match s.split_once(':') {
        Some((m, r)) => (Some(m.trim().to_string()), r.trim().to_string()),
        None => (None, s.trim().to_string()),
    };
    let (kind, chunk) = match rest.split_once(',') {
        Some((k, c)) => (k.trim().to_string(), Some(c.trim().parse::<i32>().ok().filter(|&c| c > 0)?)),
        None => (rest, None),
    };
    let mut k = match kind.as_str() {
        "static" => SCHED_STATIC,
        "dynamic" => SCHED_DYNAMIC,
        "guided" => SCHED_GUIDED,
        "auto" => SCHED_AUTO,
        _ => return None,
    };
    match modifier.as_deref() {
        None => {
            if k == SCHED_STATIC {
                k |= SCHED_MONOTONIC;
            }
        }
        Some("monotonic") => k |= SCHED_MONOTONIC,
        Some("nonmonotonic") => {}
        Some(_) => return None,
    }
    let chunk = match chunk {
        Some(c) => c,
        None if k & !SCHED_MONOTONIC == SCHED_STATIC => 0,
        None => 1,
    };
    Some((k, chunk))
}

fn parse_bind_word(w: &str) -> Option<u8> {
    Some(match w.trim().to_ascii_lowercase().as_str() {
        "false" => BIND_FALSE,
        "true" => BIND_TRUE,
        "master" | "primary" => BIND_PRIMARY,
        "close" => BIND_CLOSE,
        "spread" => BIND_SPREAD,
        _ => return None,
    })
}

fn parse_stacksize(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()?.to_ascii_uppercase() {
        'B' => (&s[..s.len() - 1], 1usize),
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1 << 10),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}

fn nprocs() -> u32 {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as u32;
            }
        }
    }
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

fn parse() -> Env {
    let np = nprocs();
    let nthreads = match var("OMP_NUM_THREADS") {
        None => vec![np],
        Some(s) => {
            let l: Option<Vec<u32>> = s.split(',').map(|x| x.trim().parse::<u32>().ok().filter(|&n| n > 0)).collect();
            l.unwrap_or_else(|| {
                warn("OMP_NUM_THREADS", &s, &np.to_string());
                vec![np]
            })
        }
    };
    let (run_sched, run_chunk) = match var("OMP_SCHEDULE") {
        None => (SCHED_DYNAMIC, 1),
        Some(s) => parse_schedule(&s).unwrap_or_else(|| {
            warn("OMP_SCHEDULE", &s, "dynamic");
            (SCHED_DYNAMIC, 1)
        }),
    };
    let mut bind_false = false;
    let mut bind = match var("OMP_PROC_BIND") {
        None => vec![BIND_FALSE],
        Some(s) => {
            let l: Option<Vec<u8>> = s.split(',').map(parse_bind_word).collect();
            match l {
                Some(l) if !(l.len() > 1 && l.contains(&BIND_FALSE)) => {
                    bind_false = l == [BIND_FALSE];
                    l
                }
                _ => {
                    warn("OMP_PROC_BIND", &s, "false");
                    vec![BIND_FALSE]
                }
            }
        }
    };
    // As libgomp: an explicit OMP_PROC_BIND=false drops the places; OMP_PLACES alone turns
    // binding on; binding without OMP_PLACES uses `threads`.
    let cpus = crate::places::process_cpus();
    let mut places = match var("OMP_PLACES") {
        Some(s) if !bind_false => match crate::places::parse(&s, &cpus) {
            Ok((p, warning)) => {
                if let Some(w) = warning {
                    eprintln!("weft-omp: OMP_PLACES: {w}");
                }
                p
            }
            Err(why) => {
                eprintln!("weft-omp: invalid value for environment variable OMP_PLACES: {s:?} ({why}); using the default (unset)");
                Vec::new()
            }
        },
        _ => Vec::new(),
    };
    if places.is_empty()
        && !bind_false
        && let Some(s) = var("GOMP_CPU_AFFINITY")
    {
        match crate::places::parse_gomp_cpu_affinity(&s, &cpus) {
            Ok(p) => places = p,
            Err(why) => eprintln!("weft-omp: invalid value for environment variable GOMP_CPU_AFFINITY: {s:?} ({why}); ignored"),
        }
    }
    if !places.is_empty() && bind[0] == BIND_FALSE {
        bind[0] = BIND_TRUE;
    }
    if places.is_empty() && bind[0] != BIND_FALSE {
        places = crate::places::parse("threads", &cpus).map(|p| p.0).unwrap_or_default();
    }
    let max_active_levels = match parse_uint("OMP_MAX_ACTIVE_LEVELS", 0) {
        Some(n) => n.min(SUPPORTED_ACTIVE_LEVELS as u64) as u32,
        None => match var("OMP_NESTED") {
            Some(_) if parse_bool("OMP_NESTED", false) => SUPPORTED_ACTIVE_LEVELS,
            Some(_) => 1,
            None if nthreads.len() > 1 || bind.len() > 1 => SUPPORTED_ACTIVE_LEVELS,
            None => 1,
        },
    };
    let wait_policy = match var("OMP_WAIT_POLICY") {
        None => -1,
        Some(s) if s.eq_ignore_ascii_case("active") => 1,
        Some(s) if s.eq_ignore_ascii_case("passive") => 0,
        Some(s) => {
            warn("OMP_WAIT_POLICY", &s, "spin briefly, then sleep");
            -1
        }
    };
    let stacksize = var("OMP_STACKSIZE").or_else(|| var("GOMP_STACKSIZE")).and_then(|s| {
        let v = parse_stacksize(&s);
        if v.is_none() {
            warn("OMP_STACKSIZE", &s, "the system's");
        }
        v
    });
    let display = var("OMP_DISPLAY_ENV").and_then(|s| {
        if s.eq_ignore_ascii_case("true") {
            Some(false)
        } else if s.eq_ignore_ascii_case("verbose") {
            Some(true)
        } else if s.eq_ignore_ascii_case("false") {
            None
        } else {
            warn("OMP_DISPLAY_ENV", &s, "false");
            None
        }
    });
    Env {
        nthreads,
        dynamic: parse_bool("OMP_DYNAMIC", false),
        run_sched,
        run_chunk,
        max_active_levels,
        thread_limit: parse_uint("OMP_THREAD_LIMIT", 1).map(|n| n.min(u32::MAX as u64) as u32).unwrap_or(u32::MAX),
        bind,
        places,
        stacksize,
        cancellation: parse_bool("OMP_CANCELLATION", false),
        max_task_priority: parse_uint("OMP_MAX_TASK_PRIORITY", 0).map(|n| n.min(i32::MAX as u64) as i32).unwrap_or(0),
        default_device: parse_uint("OMP_DEFAULT_DEVICE", 0).map(|n| n.min(i32::MAX as u64) as i32).unwrap_or(0),
        wait_policy,
        nprocs: np,
        display,
        affinity_format: var("OMP_AFFINITY_FORMAT").unwrap_or_else(|| "level %L thread %i affinity %A".into()),
        display_affinity: parse_bool("OMP_DISPLAY_AFFINITY", false),
        num_teams: parse_uint("OMP_NUM_TEAMS", 1).map(|n| n.min(i32::MAX as u64) as u32).unwrap_or(0),
        teams_thread_limit: parse_uint("OMP_TEAMS_THREAD_LIMIT", 1).map(|n| n.min(i32::MAX as u64) as u32).unwrap_or(0),
        cpus: cpus.clone(),
        barrier_report: var("WEFT_OMP_BARRIER_REPORT").and_then(|s| match s.parse::<f64>() {
            Ok(0.0) => None,
            Ok(x) if x > 0.0 && x.is_finite() => Some(std::time::Duration::from_secs_f64(x)),
            _ => {
                warn("WEFT_OMP_BARRIER_REPORT", &s, "off");
                None
            }
        }),
    }
}

pub fn sched_name(k: i32) -> String {
    let m = if k & SCHED_MONOTONIC != 0 && k & !SCHED_MONOTONIC != SCHED_STATIC { "MONOTONIC:" } else { "" };
    let n = match k & !SCHED_MONOTONIC {
        SCHED_STATIC => "STATIC",
        SCHED_DYNAMIC => "DYNAMIC",
        SCHED_GUIDED => "GUIDED",
        _ => "AUTO",
    };
    format!("{m}{n}")
}

fn bind_name(b: u8) -> &'static str {
    ["FALSE", "TRUE", "PRIMARY", "CLOSE", "SPREAD"].get(b as usize).copied().unwrap_or("FALSE")
}

/// The `OMP_DISPLAY_ENV` block (also `omp_display_env`).
pub fn display(e: &Env, verbose: bool) -> String {
    let list = |v: &[String]| v.join(",");
    let mut s = String::from("\nOPENMP DISPLAY ENVIRONMENT BEGIN\n  _OPENMP = '201511'\n");
    s += &format!("  OMP_DYNAMIC = '{}'\n", if e.dynamic { "TRUE" } else { "FALSE" });
    s += &format!("  OMP_NESTED = '{}'\n", if e.max_active_levels > 1 { "TRUE" } else { "FALSE" });
    s += &format!("  OMP_NUM_THREADS = '{}'\n", list(&e.nthreads.iter().map(|n| n.to_string()).collect::<Vec<_>>()));
    s += &format!("  OMP_SCHEDULE = '{},{}'\n", sched_name(e.run_sched), e.run_chunk);
    s += &format!("  OMP_PROC_BIND = '{}'\n", list(&e.bind.iter().map(|&b| bind_name(b).to_string()).collect::<Vec<_>>()));
    s += &format!("  OMP_PLACES = '{}'\n", crate::places::display(&e.places));
    s += &format!("  OMP_STACKSIZE = '{}'\n", e.stacksize.unwrap_or(0));
    s += &format!("  OMP_WAIT_POLICY = '{}'\n", if e.wait_policy == 1 { "ACTIVE" } else { "PASSIVE" });
    s += &format!("  OMP_THREAD_LIMIT = '{}'\n", e.thread_limit);
    s += &format!("  OMP_MAX_ACTIVE_LEVELS = '{}'\n", e.max_active_levels);
    s += &format!("  OMP_NUM_TEAMS = '{}'\n  OMP_TEAMS_THREAD_LIMIT = '{}'\n", e.num_teams, e.teams_thread_limit);
    s += &format!("  OMP_CANCELLATION = '{}'\n", if e.cancellation { "TRUE" } else { "FALSE" });
    s += &format!("  OMP_DEFAULT_DEVICE = '{}'\n", e.default_device);
    s += &format!("  OMP_MAX_TASK_PRIORITY = '{}'\n", e.max_task_priority);
    s += &format!("  OMP_DISPLAY_AFFINITY = '{}'\n", if e.display_affinity { "TRUE" } else { "FALSE" });
    s += &format!("  OMP_AFFINITY_FORMAT = '{}'\n", e.affinity_format);
    s += "  OMP_ALLOCATOR = 'omp_default_mem_alloc'\n  OMP_TARGET_OFFLOAD = 'DEFAULT'\n";
    if verbose {
        s += "  GOMP_CPU_AFFINITY = ''\n  GOMP_STACKSIZE = '0'\n  GOMP_SPINCOUNT = '300000'\n";
    }
    s += "OPENMP DISPLAY ENVIRONMENT END\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse() {
        assert_eq!(parse_schedule("dynamic,4"), Some((SCHED_DYNAMIC, 4)));
        assert_eq!(parse_schedule("static"), Some((SCHED_STATIC | SCHED_MONOTONIC, 0)));
        assert_eq!(parse_schedule("monotonic:guided,2"), Some((SCHED_GUIDED | SCHED_MONOTONIC, 2)));
        assert_eq!(parse_schedule("nonmonotonic:dynamic"), Some((SCHED_DYNAMIC, 1)));
        assert_eq!(parse_schedule("fast"), None);
        assert_eq!(parse_schedule("dynamic,-1"), None);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_stacksize("4M"), Some(4 << 20));
        assert_eq!(parse_stacksize("100"), Some(100 << 10));
        assert_eq!(parse_stacksize("lots"), None);
    }
}
