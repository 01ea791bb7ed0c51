//! What the trace of tests/omp/traced.c must show, whichever compiler built it (tests/omp.rs
//! for gcc's GOMP ABI, tests/omp_clang.rs for clang's kmp one).

use serde_json::Value;
use std::collections::HashSet;

/// A complete slice of process 1: (tid, start ns, end ns, event).
type Slice<'a> = (u64, i64, i64, &'a Value);

/// `text`: the trace; `stderr`: the program's, with its `traced: tasks N depend D` line.
/// `loc`: the task slices name their source line in traced.c (the kmp ABI passes it; GOMP's
/// does not, and then they have none).
pub fn check(text: &str, stderr: &str, loc: bool) {
    let counts = stderr.lines().find_map(|l| l.strip_prefix("traced: ")).unwrap_or_else(|| panic!("no counts printed:\n{stderr}"));
    let counts: Vec<usize> = counts.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let (ntasks, ndepend) = (counts[0], counts[1]);
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
    assert_eq!(shares.len(), 2, "one region of two threads: {shares:?}");
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
            Some(l) => assert!(loc && l.starts_with("traced.c:"), "location {l:?} (expected one: {loc})"),
            None => assert!(!loc, "a task without its location: {}", t.3),
        }
    }

    // The loop: one slice per thread of the team, on the two threads.
    let fors = slices("omp for");
    assert_eq!(fors.len(), 2, "{fors:?}");
    assert_ne!(fors[0].0, fors[1].0, "both loop slices on one thread: {fors:?}");
    for s in fors.iter().chain(&slices("omp barrier")) {
        assert_eq!(s.3["cat"], "omp", "{}", s.3);
        inside("a worksharing slice", s);
    }
    // The single construct and the taskloop inside it, on the same thread.
    let (single, taskloop) = (slices("omp single"), slices("omp taskloop"));
    assert_eq!((single.len(), taskloop.len()), (1, 1), "{single:?} {taskloop:?}");
    inside("the single construct", &single[0]);
    assert!(single[0].0 == taskloop[0].0 && single[0].1 <= taskloop[0].1 && taskloop[0].2 <= single[0].2, "{single:?} {taskloop:?}");
    assert!(!slices("omp barrier").is_empty(), "no barrier slices");
}
