//! What the OpenMP front end records in an execution trace (`WEFT_TRACE`,
//! `docs/tracing.md`): explicit tasks' bodies, worksharing constructs and barrier waits, as
//! slices on the track of the thread that ran them (region shares are team.rs's).
//!
//! **Owns**: the cached "tracing" flag every site checks, the source locations of the kmp
//! ABI's tasks as text, the one span a thread may have open for its current worksharing
//! construct ([`Ctx::ws_trace`](crate::team::Ctx)), and the constructs with an end call of
//! their own (masked, critical, ordered) open on a thread ([`enter`], [`exit`]: they nest
//! as the program's blocks do, so a stack per thread pairs them). **Does not own**: the
//! trace (core's `Runtime::trace_front_end`), nor where constructs start and end (the ABI
//! layer, ws.rs, team.rs and task.rs call in here).
//!
//! Cost: off, a site is one relaxed load of [`ON`] and a branch; no clock read. [`ON`] is
//! set once, when the runtime starts (team.rs `pool`); tasks and constructs run before
//! that (an orphaned task before the first region) are not recorded.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use weft_core::FrontSpan;

/// Whether the runtime records a trace. Relaxed: set once, before any team exists (the
/// runtime starts inside the first fork), and a site that read it stale would only leave
/// one span out.
static ON: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The kmp ident (`ident_t*`) of the last kmp task body that returned on this thread,
    /// 0 for none: the ABI's body trampoline leaves it here as its last act, and the task
    /// runner that called the body takes it right after ([`task_end`]). Nested tasks the
    /// body ran (at a taskwait) set and took theirs before.
    static LOC: Cell<usize> = const { Cell::new(0) };
    /// Locations as text, by ident: one parse and one leaked string per construct in the
    /// program's source, and no lock.
    static LOCS: RefCell<HashMap<usize, Option<&'static str>>> = RefCell::new(HashMap::new());
    /// The constructs [`enter`]ed and not yet [`exit`]ed on this thread, innermost last:
    /// when each started and how long the thread waited to enter it.
    static OPEN: RefCell<Vec<(Instant, Option<Duration>)>> = const { RefCell::new(Vec::new()) };
}

/// Called once the runtime has started: whether it records a trace.
pub fn set(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether the runtime records a trace.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The start of a span: now, when tracing.
#[inline]
pub fn start() -> Option<Instant> {
    if on() { Some(Instant::now()) } else { None }
}

/// Record a construct's span named `name` that started at `from` (from [`start`]).
#[inline]
pub fn end(from: Option<Instant>, name: &'static str) {
    if let Some(from) = from {
        record(&FrontSpan { name, ..Default::default() }, from);
    }
}

#[cold]
fn record(s: &FrontSpan, from: Instant) {
    if let Some(rt) = crate::team::started_runtime() {
        rt.trace_front_end(s, from);
    }
}

/// A construct with an end call of its own starts on this thread, after a wait to enter
/// that began at `asked` (from [`start`]: a `critical` section's lock, an `ordered` block's
/// turn): its slice runs from now to the matching [`exit`], with the wait as its `wait_us`.
#[inline]
pub fn enter(asked: Option<Instant>) {
    if let Some(asked) = asked {
        let now = Instant::now();
        push(now, Some(now.saturating_duration_since(asked)));
    }
}

/// [`enter`] for a construct that never waits to start (`masked`): no `wait_us`.
#[inline]
pub fn enter_now() {
    if on() {
        push(Instant::now(), None);
    }
}

#[cold]
fn push(at: Instant, wait: Option<Duration>) {
    OPEN.with(|o| o.borrow_mut().push((at, wait)));
}

/// The innermost construct [`enter`]ed on this thread ends: record it as a slice named
/// `name`. Nothing if none is open (it started before tracing did: [`ON`] is set inside
/// the first fork, and a construct may enclose it).
#[inline]
pub fn exit(name: &'static str) {
    if on() {
        exit_slow(name);
    }
}

#[cold]
fn exit_slow(name: &'static str) {
    if let Some((from, wait)) = OPEN.with(|o| o.borrow_mut().pop()) {
        record(&FrontSpan { name, wait, ..Default::default() }, from);
    }
}

/// An explicit task's body that started at `from` (from [`start`]) has returned: record
/// it as an `omp task` slice, with whether it had depend clauses and, for one core
/// ordered, its core task (its dependencies' arrows bind to the slice).
#[inline]
pub fn task_end(from: Option<Instant>, depend: bool, core_task: Option<u64>) {
    if let Some(from) = from {
        task_end_slow(from, depend, core_task);
    }
}

#[cold]
fn task_end_slow(from: Instant, depend: bool, core_task: Option<u64>) {
    let ident = LOC.with(|l| l.replace(0));
    let loc = if ident == 0 { None } else { location(ident) };
    record(&FrontSpan { name: "omp task", task: true, depend, core_task, loc, wait: None }, from);
}

/// The kmp ABI's body trampoline: the task whose body just returned on this thread was
/// created at `ident` (an `ident_t*`; 0 for unknown).
#[inline]
pub fn note_task_ident(ident: usize) {
    if on() {
        LOC.with(|l| l.set(ident));
    }
}

/// `ident`'s location as "file:line (function)", parsed once per ident.
fn location(ident: usize) -> Option<&'static str> {
    LOCS.with(|m| {
        *m.borrow_mut().entry(ident).or_insert_with(|| {
            let src = psource(ident)?;
            Some(&*Box::leak(format_psource(src)?.into_boxed_str()))
        })
    })
}

#[cfg(target_arch = "x86_64")]
fn psource(ident: usize) -> Option<&'static str> {
    crate::abi::kmp::psource(ident)
}

#[cfg(not(target_arch = "x86_64"))]
fn psource(_: usize) -> Option<&'static str> {
    None
}

/// A kmp `psource` (";file;function;line;column;;") as "file:line (function)"; `None` for
/// the runtime's placeholder (";unknown;unknown;0;0;;") or anything else.
fn format_psource(s: &str) -> Option<String> {
    let mut f = s.strip_prefix(';')?.split(';');
    let (file, func, line) = (f.next()?, f.next()?, f.next()?);
    if file.is_empty() || file == "unknown" {
        return None;
    }
    let file = file.rsplit('/').next().unwrap_or(file);
    Some(match (line.parse::<u32>().ok().filter(|&l| l > 0), func) {
        (Some(l), "" | "unknown") => format!("{file}:{l}"),
        (Some(l), func) => format!("{file}:{l} ({func})"),
        (None, _) => file.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmp_source_locations() {
        assert_eq!(format_psource(";/tmp/x/tasks.c;main;42;9;;").as_deref(), Some("tasks.c:42 (main)"));
        assert_eq!(format_psource(";t.c;unknown;7;1;;").as_deref(), Some("t.c:7"));
        assert_eq!(format_psource(";unknown;unknown;0;0;;"), None);
        assert_eq!(format_psource("garbage"), None);
    }
}
