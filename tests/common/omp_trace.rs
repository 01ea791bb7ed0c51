//! What the trace of tests/omp/traced.c must show, whichever compiler built it (tests/omp.rs
//! for gcc's GOMP ABI, tests/omp_clang.rs for clang's kmp one).

use serde_json::Value;
use std::collections::HashSet;

/// A complete slice of process 1: (tid, start ns, end ns, event).
type Slice<'a> = (u64, i64, i64, &'a Value);

/// What one OpenMP thread of the first region ran, as traced.c prints it.
#[derive(Debug)]
struct Thread {
    critical: usize,
    ordered: usize,
    doacross: usize,
    /// It ran the doacross loop's first iteration, whose sink is outside the loop.
    first: usize,
    master: usize,
    masked: usize,
}

/// `text`: the trace; `stderr`: the program's, with its `traced: ...` lines. `kmp`: clang
/// built it (the kmp ABI): the task slices name their source line in traced.c, and master,
/// masked, static loops and distribute reach the runtime; gcc inlines them (no slices) and
/// passes no locations.
pub fn check(text: &str, stderr: &str, kmp: bool) {
    let counts = stderr.lines().find_map(|l| l.strip_prefix("traced: ")).unwrap_or_else(|| panic!("no counts printed:\n{stderr}"));
    let counts: Vec<usize> = counts.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let (ntasks, ndepend) = (counts[0], counts[1]);
    let threads: Vec<Thread> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("traced thread "))
        .map(|l| {
            // "N: critical C ordered O doacross D first F master M masked K"
            let n: Vec<usize> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
            assert_eq!(n.len(), 6, "{l}");
            Thread { critical: n[0], ordered: n[1], doacross: n[2], first: n[3], master: n[4], masked: n[5] }
        })
        .collect();
    assert_eq!(threads.len(), 2, "per-thread counts:\n{stderr}");
    let nteams: usize = stderr
        .lines()
        .find_map(|l| l.strip_prefix("traced teams: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no teams count printed:\n{stderr}"));
    let json: Value = serde_json::from_str(text).expect("the trace is JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    // The threads the trace names (workers, "other threads").
    let tracks: HashSet<u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1)
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    let ns = |v: &Value| (v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) * 1000.0).round() as i64;
    let slices = |name: &str| -> Vec<Slice<'_>> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == 1 && e["name"] == name)
            .map(|e| {
                let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
                (e["tid"].as_u64().unwrap(), ts, ts + dur, e)
            })
            .collect()
    };
    let shares = slices("omp parallel");
    assert_eq!(shares.len(), 4, "two regions of two threads: {shares:?}");
    // Each slice is on a thread the trace names, inside that thread's share of the region.
    let inside = |what: &str, s: &Slice<'_>| {
        assert!(tracks.contains(&s.0), "{what} on a track the trace does not name: {}", s.3);
        assert!(
            shares.iter().any(|r| r.0 == s.0 && r.1 <= s.1 && s.2 <= r.2),
            "{what} outside its thread's share of the region: {}\nshares: {shares:?}",
            s.3
        );
    };

    let tasks = slices("omp task");
    assert_eq!(tasks.len(), ntasks, "one omp task slice per task body that ran");
    let with_depend = tasks.iter().filter(|t| t.3["args"]["depend"] == true).count();
    assert_eq!(with_depend, ndepend, "task slices with depend clauses");
    for t in &tasks {
        assert_eq!(t.3["cat"], "omp_task", "{}", t.3);
        inside("a task", t);
        match t.3["args"]["loc"].as_str() {
            Some(l) => assert!(kmp && l.starts_with("traced.c:"), "location {l:?} (expected one: {kmp})"),
            None => assert!(!kmp, "a task without its location: {}", t.3),
        }
    }

    // The single construct and the taskloop inside it, on the same thread. gcc makes no
    // call at a single's end: its slice ends at the thread's next barrier (here the single's
    // own), worksharing construct or region end.
    let (single, taskloop) = (slices("omp single"), slices("omp taskloop"));
    assert_eq!((single.len(), taskloop.len()), (1, 1), "{single:?} {taskloop:?}");
    inside("the single construct", &single[0]);
    assert!(single[0].0 == taskloop[0].0 && single[0].1 <= taskloop[0].1 && taskloop[0].2 <= single[0].2, "{single:?} {taskloop:?}");
    let barriers = slices("omp barrier");
    assert!(!barriers.is_empty(), "no barrier slices");
    let next_barrier = barriers.iter().filter(|b| b.0 == single[0].0 && b.1 >= single[0].1).min_by_key(|b| b.1);
    assert!(next_barrier.is_some_and(|b| single[0].2 <= b.1), "the single does not end by its barrier: {single:?} {next_barrier:?}");

    // Constructs of the first region, per thread: each OpenMP thread's track is the one with
    // its number of critical sections (2 + its number).
    let on = |name: &str, tid: u64| slices(name).into_iter().filter(|s| s.0 == tid).count();
    let fors = slices("omp for");
    for s in fors.iter().chain(&barriers) {
        assert_eq!(s.3["cat"], "omp", "{}", s.3);
        inside("a worksharing slice", s);
    }
    let criticals = slices("omp critical");
    assert_eq!(criticals.len(), threads.iter().map(|t| t.critical).sum::<usize>(), "{criticals:?}");
    let mut seen = HashSet::new();
    for (n, t) in threads.iter().enumerate() {
        let tid = tracks
            .iter()
            .copied()
            .find(|&tid| on("omp critical", tid) == t.critical)
            .unwrap_or_else(|| panic!("no track with thread {n}'s {} critical sections: {criticals:?}", t.critical));
        assert!(seen.insert(tid), "threads 0 and 1 on one track");
        // The loops with a runtime call: dynamic, ordered and doacross (gcc computes a
        // static schedule's share itself; clang calls __kmpc_for_static_init).
        assert_eq!(on("omp for", tid), if kmp { 4 } else { 3 }, "thread {n}'s loops: {fors:?}");
        assert_eq!(on("omp ordered", tid), t.ordered, "thread {n}'s ordered blocks");
        assert_eq!(on("omp ordered depend(source)", tid), t.doacross, "thread {n}'s doacross posts");
        // gcc makes no wait call for a sink outside the loop; clang's returns at once.
        let waits = if kmp { t.doacross } else { t.doacross - t.first };
        assert_eq!(on("omp ordered depend(sink)", tid), waits, "thread {n}'s doacross waits");
        let (master, masked) = if kmp { (t.master, t.masked) } else { (0, 0) };
        assert_eq!((on("omp master", tid), on("omp masked", tid)), (master, masked), "thread {n}'s master and masked blocks");
        // A sections construct in each region: the second a combined parallel sections.
        assert_eq!(on("omp sections", tid), 2, "thread {n}'s sections");
    }
    for name in ["omp critical", "omp ordered", "omp master", "omp masked", "omp sections"] {
        for s in slices(name) {
            assert_eq!(s.3["cat"], "omp", "{}", s.3);
            inside(name, &s);
        }
    }
    // Waiting to enter is an argument of critical and ordered slices.
    for s in criticals.iter().chain(&slices("omp ordered")) {
        assert!(s.3["args"]["wait_us"].as_f64().is_some_and(|w| w >= 0.0), "no wait_us: {}", s.3);
    }
    // An ordered block and a doacross wait or post run inside their thread's loop.
    for name in ["omp ordered", "omp ordered depend(sink)", "omp ordered depend(source)"] {
        for s in slices(name) {
            assert!(fors.iter().any(|f| f.0 == s.0 && f.1 <= s.1 && s.2 <= f.2), "{name} outside its loop: {}", s.3);
        }
    }

    // The host teams run one after the other on the encountering thread; clang's distribute
    // loop has a slice inside each (gcc computes its share inline).
    let teams = slices("omp teams");
    assert_eq!(teams.len(), nteams, "{teams:?}");
    assert!(teams.iter().all(|t| t.0 == teams[0].0 && tracks.contains(&t.0)), "{teams:?}");
    let dist = slices("omp distribute");
    assert_eq!(dist.len(), if kmp { nteams } else { 0 }, "{dist:?}");
    for d in &dist {
        assert!(teams.iter().any(|t| t.0 == d.0 && t.1 <= d.1 && d.2 <= t.2), "a distribute slice outside its team: {}", d.3);
    }
}
