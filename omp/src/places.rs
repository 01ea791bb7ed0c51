//! Places (`OMP_PLACES`) and thread affinity (`OMP_PROC_BIND`, the `proc_bind` clause).
//!
//! **Owns**: parsing the place list, the assignment of a team's threads to places and to
//! place partitions (OpenMP 5.1 §2.6.2, computed exactly as libgomp's `gomp_team_start`
//! does, so programs that check where threads land see the same answers), and binding
//! threads to their place. **Does not own**: which threads form a team (team.rs).
//!
//! The semantics follow libgomp: an explicit `OMP_PROC_BIND=false` drops the place list;
//! `OMP_PLACES` without `OMP_PROC_BIND` turns binding on (`true`); binding without
//! `OMP_PLACES` uses `threads`. Places are intersected with the CPUs the process may run on
//! (empty places are dropped, with a warning, as libgomp does). The initial thread is bound
//! to place 0 when it first enters the OpenMP runtime.
//!
//! # Binding borrowed threads
//! Team members are core CPU workers (bound to one processing unit by core) or OS threads of
//! this crate. A member whose place differs from where it runs is rebound with
//! `sched_setaffinity` when it starts its share of a region, and stays bound across the
//! regions it serves back to back (no system call when the place is unchanged). A core
//! worker gets its original mask back when it leaves OpenMP (its docking job returns to
//! core's scheduler), so Weft's own tasks keep running where core put them.

use std::cell::Cell;

/// CPUs a place list can name (libgomp: 8 × the size of the cpu set it uses).
pub const MAX_CPUS: u32 = 1024;

/// One implicit task's place and place partition (`place-partition-var`): `place` is an
/// index into the place list (-1: not bound), the partition is places `off..off + len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assign {
    pub place: i32,
    pub off: u32,
    pub len: u32,
}

fn places() -> &'static [Vec<u32>] {
    &crate::env::env().places
}

/// The mask of the process when the environment was read (before any binding): what
/// threads of our own start with, whatever the thread that creates them is bound to.
static PROCESS_MASK: std::sync::OnceLock<Option<libc::cpu_set_t>> = std::sync::OnceLock::new();

fn process_mask() -> Option<libc::cpu_set_t> {
    *PROCESS_MASK.get_or_init(|| {
        // Through pthread_getaffinity_np, as libgomp reads it (a program may interpose it:
        // libgomp's affinity-1.c does, to learn the set).
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the call fills it for this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::pthread_getaffinity_np(libc::pthread_self(), std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
        }
    })
}

/// A new OS thread of ours: run where the process may run, not only where the thread that
/// created it was bound (a core worker is bound to one processing unit).
pub fn init_own_thread() {
    if let Some(set) = process_mask() {
        set_mask(&set);
    }
}

/// The CPUs the process may run on (its affinity mask when it started).
pub fn process_cpus() -> Vec<u32> {
    if let Some(set) = process_mask() {
        // SAFETY: CPU_ISSET reads a valid set below its size in bits.
        let v: Vec<u32> = (0..MAX_CPUS).filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) }).collect();
        if !v.is_empty() {
            return v;
        }
    }
    let n = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    (0..n).collect()
}

// ---------------------------------------------------------------------------------------
// Parsing.

#[derive(Clone, Copy, PartialEq, Debug)]
enum Level {
    Threads,
    Cores,
    Sockets,
    LlCaches,
    NumaDomains,
}

/// Parse `OMP_PLACES` against the CPUs the process may use. `Err` carries the reason (the
/// caller warns and leaves the list unset); a list reduced by unusable CPUs is `Ok` with a
/// warning in the second field.
pub fn parse(s: &str, allowed: &[u32]) -> Result<(Vec<Vec<u32>>, Option<String>), String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    for (name, level) in [
        ("threads", Level::Threads),
        ("cores", Level::Cores),
        ("sockets", Level::Sockets),
        ("ll_caches", Level::LlCaches),
        ("numa_domains", Level::NumaDomains),
    ] {
        if let Some(rest) = lower.strip_prefix(name) {
            let rest = rest.trim();
            let count = if rest.is_empty() {
                usize::MAX
            } else {
                let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or("expected `(count)`")?;
                inner.trim().parse::<usize>().map_err(|_| "bad count")?
            };
            let p = abstract_places(level, count, allowed, &Sysfs);
            return if p.is_empty() { Err("no place found in the machine's topology".into()) } else { Ok((p, None)) };
        }
    }
    let list = explicit(t)?;
    let n = list.len();
    let kept: Vec<Vec<u32>> =
        list.into_iter().map(|p| p.into_iter().filter(|c| allowed.contains(c)).collect::<Vec<u32>>()).filter(|p| !p.is_empty()).collect();
    if kept.is_empty() {
        return Err("none of the places contain usable logical CPUs".into());
    }
    let warning = (kept.len() < n)
        .then(|| format!("number of places reduced from {n} to {} because some places didn't contain any usable logical CPUs", kept.len()));
    Ok((kept, warning))
}

/// `GOMP_CPU_AFFINITY` (libgomp's older variable, used when `OMP_PLACES` is not set): CPUs
/// `a`, ranges `a-b` and strided ranges `a-b:s`, separated by spaces or commas; each CPU
/// becomes a place. CPUs the process may not use are left out.
pub fn parse_gomp_cpu_affinity(s: &str, allowed: &[u32]) -> Result<Vec<Vec<u32>>, String> {
    let num = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => t.parse::<u64>(),
        };
        v.ok().filter(|&v| v < 65536).ok_or_else(|| format!("bad CPU number {t:?}"))
    };
    let mut out = Vec::new();
    for tok in s.split(|c: char| c == ',' || c.is_ascii_whitespace()).filter(|t| !t.is_empty()) {
        let (range, stride) = match tok.split_once(':') {
            Some((r, st)) => (r, num(st)?),
            None => (tok, 1),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None if tok.contains(':') => return Err("a stride needs a range".into()),
            None => (num(range)?, num(range)?),
        };
        if b < a || stride == 0 {
            return Err(format!("bad range {tok:?}"));
        }
        out.extend((a..=b).step_by(stride as usize).map(|c| c as u32).filter(|c| allowed.contains(c)).map(|c| vec![c]));
    }
    if out.is_empty() { Err("no usable CPU".into()) } else { Ok(out) }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn int(&mut self, signed: bool) -> Result<i64, String> {
        self.ws();
        let start = self.i;
        if signed && matches!(self.peek(), Some(b'-') | Some(b'+')) {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).ok().and_then(|x| x.parse::<i64>().ok()).ok_or_else(|| "expected a number".to_string())
    }
    fn cpu(&mut self) -> Result<u32, String> {
        let n = self.int(false)?;
        if n >= MAX_CPUS as i64 {
            return Err(format!("logical CPU number {n} out of range"));
        }
        Ok(n as u32)
    }
    /// `:len[:stride]` after a number or a place; (1, 1) when absent.
    fn interval(&mut self, max_len: i64) -> Result<(i64, i64), String> {
        if !self.eat(b':') {
            return Ok((1, 1));
        }
        let len = self.int(false)?;
        if len == 0 || len >= max_len {
            return Err("bad length".into());
        }
        let stride = if self.eat(b':') { self.int(true)? } else { 1 };
        Ok((len, stride))
    }
}

fn shift(c: u32, by: i64) -> Result<u32, String> {
    let v = c as i64 + by;
    if (0..MAX_CPUS as i64).contains(&v) { Ok(v as u32) } else { Err(format!("logical CPU number {c}{by:+} out of range")) }
}

/// One place of an explicit list: `{res,...}` or a bare number, with `!` in front (an
/// exclusion) and `:len[:stride]` after. Returns (excluded, cpus, len, stride).
fn one_place(c: &mut Cursor) -> Result<(bool, Vec<u32>, i64, i64), String> {
    let negate = c.eat(b'!');
    let mut set: Vec<u32> = Vec::new();
    if c.eat(b'{') {
        let mut removals = Vec::new();
        loop {
            if c.eat(b'!') {
                removals.push(c.cpu()?);
                c.ws();
                if c.peek() == Some(b':') {
                    return Err("an excluded CPU takes no interval".into());
                }
            } else {
                let first = c.cpu()?;
                let (len, stride) = c.interval(i64::MAX)?;
                let mut x = first;
                for k in 0..len {
                    if k > 0 {
                        x = shift(x, stride)?;
                    }
                    set.push(x);
                }
            }
            if c.eat(b'}') {
                break;
            }
            if !c.eat(b',') {
                return Err("expected `,` or `}`".into());
            }
        }
        for r in removals {
            if !set.contains(&r) {
                return Err(format!("logical CPU {r} to be removed is not in the set"));
            }
            set.retain(|&x| x != r);
        }
    } else {
        set.push(c.cpu()?);
    }
    set.sort_unstable();
    set.dedup();
    let (len, stride) = c.interval(65536)?;
    if negate && len != 1 {
        return Err("an excluded place takes no interval".into());
    }
    Ok((negate, set, len, stride))
}

fn explicit(s: &str) -> Result<Vec<Vec<u32>>, String> {
    let mut c = Cursor { s: s.as_bytes(), i: 0 };
    let mut list: Vec<Vec<u32>> = Vec::new();
    loop {
        let (negate, set, len, stride) = one_place(&mut c)?;
        if negate {
            let Some(pos) = list.iter().position(|p| *p == set) else {
                return Err("trying to remove a non-existing place from the list of places".into());
            };
            list.remove(pos);
        } else {
            let mut p = set;
            for k in 0..len {
                if k > 0 {
                    p = p.iter().map(|&x| shift(x, stride)).collect::<Result<Vec<u32>, String>>()?;
                    p.sort_unstable();
                }
                list.push(p.clone());
            }
            if list.len() > 65536 {
                return Err("too many places".into());
            }
        }
        c.ws();
        match c.peek() {
            None => break,
            Some(b',') => c.i += 1,
            Some(_) => return Err("expected `,` between places".into()),
        }
    }
    if list.is_empty() {
        return Err("all places have been removed".into());
    }
    Ok(list)
}

/// Where the topology comes from (sysfs; a fake one in tests).
trait Topo {
    /// CPU list of `/sys/devices/system/cpu/cpu<cpu>/<rel>`.
    fn cpu_list(&self, cpu: u32, rel: &str) -> Option<Vec<u32>>;
    fn llc_index(&self, cpu: u32) -> Option<u32>;
    fn numa_nodes(&self) -> Option<Vec<Vec<u32>>>;
}

struct Sysfs;

fn read_list(path: &str) -> Option<Vec<u32>> {
    parse_cpu_list(std::fs::read_to_string(path).ok()?.trim())
}

/// A kernel CPU list: `0-3,8,10-11`.
fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = part.parse::<u32>().ok()?;
                (a, a)
            }
        };
        if b < a || b >= MAX_CPUS {
            return None;
        }
        v.extend(a..=b);
    }
    Some(v)
}

impl Topo for Sysfs {
    fn cpu_list(&self, cpu: u32, rel: &str) -> Option<Vec<u32>> {
        read_list(&format!("/sys/devices/system/cpu/cpu{cpu}/{rel}"))
    }
    fn llc_index(&self, cpu: u32) -> Option<u32> {
        let mut best: Option<(u32, u32)> = None;
        for l in 0..128 {
            let Ok(s) = std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/cache/index{l}/level")) else { break };
            if let Ok(level) = s.trim().parse::<u32>()
                && best.is_none_or(|(_, m)| level >= m)
            {
                best = Some((l, level));
            }
        }
        best.map(|(l, _)| l)
    }
    fn numa_nodes(&self) -> Option<Vec<Vec<u32>>> {
        let online = read_list("/sys/devices/system/node/online")?;
        Some(online.iter().filter_map(|n| read_list(&format!("/sys/devices/system/node/node{n}/cpulist"))).collect())
    }
}

/// The abstract names, walked as libgomp walks them: by socket, then core, then hardware
/// thread, over the allowed CPUs; at most `count` places.
fn abstract_places(level: Level, count: usize, allowed: &[u32], topo: &dyn Topo) -> Vec<Vec<u32>> {
    let count = count.min(allowed.len());
    let mut left: Vec<u32> = allowed.to_vec();
    left.sort_unstable();
    let take = |left: &mut Vec<u32>, group: Vec<u32>| -> Vec<u32> {
        let g: Vec<u32> = group.into_iter().filter(|c| left.contains(c)).collect();
        left.retain(|c| !g.contains(c));
        g
    };
    let mut out: Vec<Vec<u32>> = Vec::new();
    match level {
        Level::NumaDomains => {
            for node in topo.numa_nodes().unwrap_or_default() {
                let g = take(&mut left, node);
                if !g.is_empty() {
                    out.push(g);
                }
            }
            if out.is_empty() && !left.is_empty() {
                out.push(left);
            }
        }
        Level::LlCaches => {
            let idx = left.first().and_then(|&c| topo.llc_index(c));
            while let Some(&c) = left.first() {
                let group = idx.and_then(|i| topo.cpu_list(c, &format!("cache/index{i}/shared_cpu_list"))).unwrap_or_else(|| left.clone());
                let mut g = take(&mut left, group);
                if g.is_empty() {
                    g = take(&mut left, vec![c]);
                }
                out.push(g);
            }
        }
        _ => {
            while let Some(&c) = left.first() {
                let pkg = topo.cpu_list(c, "topology/core_siblings_list").unwrap_or_else(|| vec![c]);
                let mut pkg: Vec<u32> = pkg.into_iter().filter(|x| left.contains(x)).collect();
                if !pkg.contains(&c) {
                    pkg.insert(0, c);
                }
                if level == Level::Sockets {
                    out.push(take(&mut left, pkg));
                    continue;
                }
                for d in pkg {
                    if !left.contains(&d) {
                        continue;
                    }
                    let core = topo.cpu_list(d, "topology/thread_siblings_list").unwrap_or_else(|| vec![d]);
                    let mut core = take(&mut left, core);
                    if core.is_empty() {
                        core = take(&mut left, vec![d]);
                    }
                    if level == Level::Cores {
                        out.push(core);
                    } else {
                        out.extend(core.into_iter().map(|t| vec![t]));
                    }
                }
            }
        }
    }
    out.truncate(count);
    out
}

/// `{0:2},{2},{3,5}`: libgomp's way of writing a place list (`OMP_DISPLAY_ENV`).
pub fn display(list: &[Vec<u32>]) -> String {
    list.iter()
        .map(|p| {
            let mut parts = Vec::new();
            let mut i = 0;
            while i < p.len() {
                let mut j = i;
                while j + 1 < p.len() && p[j + 1] == p[j] + 1 {
                    j += 1;
                }
                parts.push(if j > i { format!("{}:{}", p[i], j - i + 1) } else { p[i].to_string() });
                i = j + 1;
            }
            format!("{{{}}}", parts.join(","))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `0-3,5`: a CPU list as the affinity format's `%A` writes it.
pub fn cpu_ranges(p: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let mut j = i;
        while j + 1 < p.len() && p[j + 1] == p[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", p[i], p[j]) } else { p[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

// ---------------------------------------------------------------------------------------
// Assignment of a team's threads to places.

/// The place and partition of each of the `n` implicit tasks of a team forked by a task
/// with `parent`, under binding policy `bind`; `out[0]` is the primary thread's. A port of
/// libgomp's `gomp_team_start` (team.c), so the answers match it place for place.
pub fn assign(parent: Assign, bind: u8, n: u32, out: &mut Vec<Assign>) {
    use crate::env::{BIND_CLOSE, BIND_PRIMARY, BIND_SPREAD, BIND_TRUE};
    out.clear();
    out.push(parent);
    if n <= 1 || parent.place < 0 || parent.len == 0 {
        out.extend(std::iter::repeat_n(Assign { place: parent.place, ..parent }, n.saturating_sub(1) as usize));
        return;
    }
    let (poff, plen) = (parent.off, parent.len);
    let mut p = parent.place as u32;
    let (mut s, mut rest, mut k) = (0u32, 0u32, 0u32);
    match bind {
        BIND_TRUE | BIND_CLOSE => {
            if n > plen {
                s = n / plen;
                rest = n % plen;
            } else {
                s = 1;
            }
            k = 1;
        }
        BIND_SPREAD => {
            if n <= plen {
                s = plen / n;
                rest = plen % n;
                rest = (s + 1) * rest + poff;
                if p < rest {
                    p -= (p - poff) % (s + 1);
                    out[0].len = s + 1;
                } else {
                    p -= (p - rest) % s;
                    out[0].len = s;
                }
                out[0].off = p;
            } else {
                s = n / plen;
                rest = n % plen;
                out[0].off = p;
                out[0].len = 1;
                k = 1;
            }
        }
        BIND_PRIMARY => {}
        _ => {
            // Not bound (cannot happen with a place list: OMP_PROC_BIND=false drops it).
            out.extend(std::iter::repeat_n(Assign { place: -1, ..parent }, (n - 1) as usize));
            return;
        }
    }
    let (moff, mlen) = (out[0].off, out[0].len);
    let wrap = |p: u32| if p == poff + plen { poff } else { p };
    for i in 1..n {
        let mut a = Assign { place: 0, off: moff, len: mlen };
        match bind {
            BIND_TRUE | BIND_CLOSE => {
                if k == s {
                    p = wrap(p + 1);
                    k = 1;
                    if i == n - rest {
                        s = 1;
                    }
                } else {
                    k += 1;
                }
            }
            BIND_SPREAD => {
                if k == 0 {
                    p += if p < rest { s + 1 } else { s };
                    p = wrap(p);
                    a.off = p;
                    a.len = if p < rest { s + 1 } else { s };
                } else {
                    if k == s {
                        p = wrap(p + 1);
                        k = 1;
                        if i == n - rest {
                            s = 1;
                        }
                    } else {
                        k += 1;
                    }
                    a.off = p;
                    a.len = 1;
                }
            }
            _ => {}
        }
        a.place = p as i32;
        out.push(a);
    }
}

/// The root implicit task's assignment: place 0 and the whole list, with the calling
/// thread bound to place 0 (libgomp binds the initial thread there). A core worker that
/// calls OpenMP outside any team is not rebound (it stays on core's processing unit).
pub fn root() -> Vec<Assign> {
    let list = places();
    if list.is_empty() {
        return Vec::new();
    }
    let all = Assign { place: 0, off: 0, len: list.len() as u32 };
    if weft_core::worker::in_worker() {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        let place = list.iter().position(|p| p.contains(&(cpu.max(0) as u32))).unwrap_or(0);
        return vec![Assign { place: place as i32, ..all }];
    }
    // Start the runtime first: its workers are created by this thread and would inherit
    // the narrowed mask (core binds them itself only with hwloc).
    let _ = crate::team::start_runtime();
    bind(0);
    vec![all]
}

// ---------------------------------------------------------------------------------------
// Binding.

/// [`BOUND`] of a thread running on every processor of the process ([`unbind`]).
const UNBOUND: i32 = -2;

thread_local! {
    /// The place this thread is bound to by us (-1: none, it runs with its own mask;
    /// [`UNBOUND`]: we let it run anywhere).
    static BOUND: Cell<i32> = const { Cell::new(-1) };
    /// The mask the thread had before we first bound it.
    static SAVED: Cell<Option<libc::cpu_set_t>> = const { Cell::new(None) };
}

fn set_mask(set: &libc::cpu_set_t) -> bool {
    // SAFETY: a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) == 0 }
}

/// Keep the calling thread's own mask for [`restore`], before we first change it; false if
/// it cannot be read.
fn save_mask() -> bool {
    if SAVED.with(|s| s.get()).is_none() {
        // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
        let mut cur: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above, for the calling thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut cur) } != 0 {
            return false;
        }
        SAVED.with(|s| s.set(Some(cur)));
    }
    true
}

/// Bind the calling thread to place `place` (no system call when it already is).
pub fn bind(place: i32) {
    if place < 0 || BOUND.with(|b| b.get()) == place {
        return;
    }
    let Some(cpus) = places().get(place as usize) else { return };
    if !save_mask() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c < MAX_CPUS, the set's size in bits.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    if set_mask(&set) {
        BOUND.with(|b| b.set(place));
    }
}

/// Let the calling thread run on every processor of the process (no system call when it
/// already may).
fn unbind() {
    if BOUND.with(|b| b.get()) == UNBOUND || !save_mask() {
        return;
    }
    if let Some(set) = process_mask()
        && set_mask(&set)
    {
        BOUND.with(|b| b.set(UNBOUND));
    }
}

/// A team member starting its share of a region: bind it to its place. Without places, a
/// core worker keeps its processing unit, unless the threads outnumber the processors
/// (`oversubscribed`): then it may run anywhere, as the program's own threads do. Bound, a
/// worker whose processor another program's busy thread shares waits for it a time slice
/// at a time, and the whole team with it (libgomp's for-14.c at 3 threads on 2 cores beside
/// a busy loop: 5.4 s bound, 0.1-0.2 s unbound, libgomp 0.03).
#[inline]
pub fn enter_member(a: Option<&Assign>, oversubscribed: bool) {
    match a {
        Some(a) => bind(a.place),
        None if oversubscribed => unbind(),
        None => restore(),
    }
}

/// A core worker going back to Weft's tasks: give it back its own mask if we bound it to a
/// place. One we let run anywhere stays so until a team that is not oversubscribed takes it
/// (else a worker between regions of such teams would be bound and unbound again each time,
/// and wait on its own processor meanwhile).
pub fn leave() {
    if BOUND.with(|b| b.get()) >= 0 {
        restore();
    }
}

/// A borrowed thread leaving OpenMP: give it back the mask it had before we bound it.
pub fn restore() {
    if BOUND.with(|b| b.replace(-1)) == -1 {
        return;
    }
    if let Some(set) = SAVED.with(|s| s.take()) {
        set_mask(&set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{BIND_CLOSE, BIND_PRIMARY, BIND_SPREAD};

    fn ok(s: &str, allowed: &[u32]) -> Vec<Vec<u32>> {
        parse(s, allowed).expect(s).0
    }

    #[test]
    fn explicit_lists() {
        let all: Vec<u32> = (0..8).collect();
        assert_eq!(ok("{0,1},{2:2}", &all), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(ok("{0}:3:2", &all), vec![vec![0], vec![2], vec![4]]);
        // The lists of libgomp's affinity-1.c, with the places it expects.
        assert_eq!(ok("{7,6}:2:-3", &all), vec![vec![6, 7], vec![3, 4]]);
        assert_eq!(ok("{6,7}:4:-2,!{2,3}", &all), vec![vec![6, 7], vec![4, 5], vec![0, 1]]);
        assert_eq!(ok("{1}:7:1", &all).len(), 7);
        assert_eq!(ok("{0,1},{3,2,4},{6,5,!6},{6},{7:2:-1,!6}", &all), vec![vec![0, 1], vec![2, 3, 4], vec![5], vec![6], vec![7]]);
        assert_eq!(
            ok("1,2,{2,3,!2},3,3,!3,!{5:3:-1,!4,!5},{4},5,!4,!5,1:2,!{1},!2,7:3:-2,!{5},!7,!3", &all),
            vec![vec![1], vec![2], vec![3]]
        );
        assert!(parse("{x}", &all).is_err());
        assert!(parse("{0},!{1}", &all).is_err());
        assert!(parse("{0,!1}", &all).is_err());
        assert!(parse("{0}:0", &all).is_err());
        assert!(parse("{2000}", &all).is_err());
        // Places without a usable CPU are dropped, with a warning.
        let (p, w) = parse("{0},{5},{1}", &[0, 1]).unwrap();
        assert_eq!(p, vec![vec![0], vec![1]]);
        assert!(w.is_some());
        assert!(parse("{5}", &[0, 1]).is_err());
    }

    #[test]
    fn gomp_cpu_affinity() {
        let all: Vec<u32> = (0..16).collect();
        assert_eq!(
            parse_gomp_cpu_affinity("0 3 1-2 4-15:4", &all).unwrap(),
            vec![vec![0], vec![3], vec![1], vec![2], vec![4], vec![8], vec![12]]
        );
        assert_eq!(parse_gomp_cpu_affinity("1,0x2, 40", &all).unwrap(), vec![vec![1], vec![2]]);
        assert!(parse_gomp_cpu_affinity("3-1", &all).is_err());
        assert!(parse_gomp_cpu_affinity("x", &all).is_err());
    }

    struct Fake;
    impl Topo for Fake {
        // Two sockets of two cores of two threads: cpu c is thread c/4 of core c%4 (Linux's
        // usual numbering: siblings are n apart).
        fn cpu_list(&self, cpu: u32, rel: &str) -> Option<Vec<u32>> {
            let core = cpu % 4;
            Some(match rel {
                "topology/core_siblings_list" => (0..8).filter(|c| c % 4 / 2 == core / 2).collect(),
                "topology/thread_siblings_list" => vec![core, core + 4],
                _ => (0..8).filter(|c| c % 4 / 2 == core / 2).collect(),
            })
        }
        fn llc_index(&self, _: u32) -> Option<u32> {
            Some(3)
        }
        fn numa_nodes(&self) -> Option<Vec<Vec<u32>>> {
            Some(vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]])
        }
    }

    #[test]
    fn abstract_names() {
        let all: Vec<u32> = (0..8).collect();
        assert_eq!(abstract_places(Level::Cores, usize::MAX, &all, &Fake), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(abstract_places(Level::Threads, 3, &all, &Fake), vec![vec![0], vec![4], vec![1]]);
        assert_eq!(abstract_places(Level::Sockets, usize::MAX, &all, &Fake), vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        assert_eq!(abstract_places(Level::LlCaches, usize::MAX, &all, &Fake).len(), 2);
        assert_eq!(abstract_places(Level::NumaDomains, usize::MAX, &[2, 3], &Fake), vec![vec![2, 3]]);
        assert_eq!(abstract_places(Level::Cores, usize::MAX, &[1, 5, 6], &Fake), vec![vec![1, 5], vec![6]]);
        assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(display(&[vec![0, 1, 2], vec![4], vec![6, 8]]), "{0:3},{4},{6,8}");
        assert_eq!(cpu_ranges(&[0, 1, 2, 4]), "0-2,4");
    }

    fn team(parent: Assign, bind: u8, n: u32) -> Vec<Assign> {
        let mut v = Vec::new();
        assign(parent, bind, n, &mut v);
        v
    }

    fn places_of(v: &[Assign]) -> Vec<i32> {
        v.iter().map(|a| a.place).collect()
    }

    #[test]
    fn assignment_matches_libgomp() {
        // Expectations from libgomp's affinity-1.c.
        let root = |len| Assign { place: 0, off: 0, len };
        // spread, T = 4, P = 8: every other place, partitions of 2.
        let v = team(root(8), BIND_SPREAD, 4);
        assert_eq!(places_of(&v), vec![0, 2, 4, 6]);
        assert_eq!((v[3].off, v[3].len), (6, 2));
        assert_eq!((v[0].off, v[0].len), (0, 2));
        // spread, T = 5, P = 8: first 3 subpartitions of 2 places, then 1.
        assert_eq!(places_of(&team(root(8), BIND_SPREAD, 5)), vec![0, 2, 4, 6, 7]);
        // spread, T = 5, P = 3: thr{0,3}, thr{1,4}, thr2.
        assert_eq!(places_of(&team(root(3), BIND_SPREAD, 5)), vec![0, 1, 2, 0, 1]);
        // spread, T = 5, P = 2: thr{0,1,4} then thr{2,3}.
        assert_eq!(places_of(&team(root(2), BIND_SPREAD, 5)), vec![0, 0, 1, 1, 0]);
        // close, T = 5, P = 3.
        assert_eq!(places_of(&team(root(3), BIND_CLOSE, 5)), vec![0, 1, 2, 0, 1]);
        // close, T = 6, P = 2: 3 threads per place.
        assert_eq!(places_of(&team(root(2), BIND_CLOSE, 6)), vec![0, 0, 0, 1, 1, 1]);
        // close from place 2 of 5, T = 4: wraps around.
        assert_eq!(places_of(&team(Assign { place: 2, off: 0, len: 5 }, BIND_CLOSE, 4)), vec![2, 3, 4, 0]);
        // primary: everyone on the primary's place, partition unchanged.
        let v = team(Assign { place: 3, off: 0, len: 8 }, BIND_PRIMARY, 3);
        assert_eq!(places_of(&v), vec![3, 3, 3]);
        assert!(v.iter().all(|a| (a.off, a.len) == (0, 8)));
        // Inside a spread subpartition {6,7}, close with T = 6: 3 per place.
        assert_eq!(places_of(&team(Assign { place: 6, off: 6, len: 2 }, BIND_CLOSE, 6)), vec![6, 6, 6, 7, 7, 7]);
        // A team of one keeps the parent's partition.
        assert_eq!(team(Assign { place: 1, off: 0, len: 4 }, BIND_SPREAD, 1), vec![Assign { place: 1, off: 0, len: 4 }]);
    }
}
