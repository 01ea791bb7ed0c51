//! Execution traces (`WEFT_TRACE`, set through `Config::trace`): the file a runtime writes at
//! shutdown is Chrome trace-event JSON with a track per worker, a slice per task, and the
//! copies between memory nodes with their bytes.

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use weft_core::*;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn inc(name: &str, arch: Arch) -> Arc<Codelet> {
    Codelet::builder(name)
        .implementation(
            arch,
            Arc::new(|ctx: &TaskContext<'_>| {
                ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
                Ok(())
            }),
        )
        .build()
}

/// (pid, tid) of a thread-scoped event.
fn track(e: &Value) -> (u64, u64) {
    (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())
}

#[test]
fn a_trace_has_a_slice_per_task_on_its_workers_track_and_the_copies_with_their_bytes() {
    let dir = temp_dir("graph");
    let path = dir.join("trace.json");
    let rt = Runtime::new(Config { ncpu: Some(2), nnull: 1, spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let names: Vec<String> = rt.workers().iter().map(|w| w.name.clone()).collect();
    assert_eq!(names, ["cpu0", "cpu1", "null0"]);
    let v = rt.register_vector(vec![0u32; 256]).unwrap();
    let u = rt.register_vector(vec![0u32; 64]).unwrap();
    let (c0, c1, n0) = (inc("on_cpu0", Arch::Cpu), inc("on_cpu1", Arch::Cpu), inc("on_null0", Arch::Null));
    let mut ids: HashMap<u64, (&str, u64)> = HashMap::new();
    for round in 0..3 {
        for (cl, w, name) in [(&c0, 0, "on_cpu0"), (&c1, 1, "on_cpu1"), (&n0, 2, "on_null0")] {
            // `v` moves host -> null device -> host each round; `u` stays home.
            let h = if round == 1 && w == 0 { &u } else { &v };
            let t = rt.submit(TaskBuilder::new(cl).access(h, AccessMode::RW).on_worker(w)).unwrap();
            ids.insert(t.id(), (name, h.id()));
        }
    }
    rt.wait_for_all().unwrap();
    let (vid, uid) = (v.id(), u.id());
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![8u32; 256]);
    assert_eq!(u.into_vec::<u32>().unwrap(), vec![1u32; 64]);
    drop(rt);

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    // Thread names, by (pid, tid).
    let mut thread_names: HashMap<(u64, u64), String> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M" && e["name"] == "thread_name") {
        thread_names.insert(track(e), e["args"]["name"].as_str().unwrap().to_string());
    }
    let tid_of =
        |name: &str| *thread_names.iter().find(|(_, n)| *n == name).unwrap_or_else(|| panic!("no track {name}: {thread_names:?}")).0;
    let tracks = [("on_cpu0", tid_of("cpu 0")), ("on_cpu1", tid_of("cpu 1")), ("on_null0", tid_of("null 0"))];

    // One slice per task, named by its codelet, on its worker's track, with its handles.
    let tasks: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "task").collect();
    assert_eq!(tasks.len(), 9, "{tasks:#?}");
    for e in &tasks {
        let id = e["args"]["task"].as_u64().unwrap();
        let (name, handle) = ids[&id];
        assert_eq!(e["name"], name);
        let want = tracks.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(track(e), want, "{e}");
        assert_eq!(e["args"]["handles"], serde_json::json!([handle]));
        // No model: no footprint, prediction or measurement apart from the slice.
        assert!(e["args"].get("footprint").is_none() && e["args"].get("measured_us").is_none(), "{e}");
    }
    let mut seen: Vec<u64> = tasks.iter().map(|e| e["args"]["task"].as_u64().unwrap()).collect();
    seen.sort_unstable();
    let mut want: Vec<u64> = ids.keys().copied().collect();
    want.sort_unstable();
    assert_eq!(seen, want);

    // Copies of `v` to the null device (node 1) and back, each with its byte count, on the
    // tracks of their node pairs.
    let copies: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X" && e["cat"] == "transfer").collect();
    let to_dev: Vec<&&Value> = copies.iter().filter(|e| e["args"]["src"] == 0 && e["args"]["dst"] == 1).collect();
    assert_eq!(to_dev.len(), 3, "{copies:#?}");
    for e in &to_dev {
        assert_eq!(e["args"]["bytes"], 1024);
        assert_eq!(e["args"]["handle"], vid);
        assert!(thread_names[&track(e)].starts_with("node 0 (host) -> node 1"), "{thread_names:?}");
    }
    assert!(copies.iter().any(|e| e["args"]["src"] == 1 && e["args"]["dst"] == 0 && e["args"]["bytes"] == 1024));
    assert!(copies.iter().all(|e| e["args"]["handle"] != uid), "u never left home");
    assert!(events.iter().any(|e| e["ph"] == "C" && e["args"]["bytes"].as_u64() >= Some(3 * 1024)));

    // Per track, slices in time order and not overlapping.
    let mut per_track: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(dur >= 0.0);
        per_track.entry(track(e)).or_default().push((ts, ts + dur));
    }
    for (t, slices) in &per_track {
        assert!(thread_names.contains_key(t), "a slice on unnamed track {t:?}");
        for pair in slices.windows(2) {
            assert!(pair[0].0 <= pair[1].0, "track {t:?} not in time order: {pair:?}");
            assert!(pair[0].1 <= pair[1].0 + 1e-3, "track {t:?} has overlapping slices: {pair:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tasks_of_a_modelled_codelet_carry_footprint_measured_and_then_predicted_times() {
    let dir = temp_dir("model");
    let path = dir.join("t.json");
    let rt = Runtime::new(Config { ncpu: Some(1), spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let name = format!("traced-model-{}", std::process::id());
    let cl = Codelet::builder(&name)
        .cpu(|ctx| {
            ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
            Ok(())
        })
        .model(weft_core::perfmodel::PerfModel::new(&name))
        .build();
    let v = rt.register_vector(vec![0u32; 32]).unwrap();
    for _ in 0..12 {
        rt.submit(TaskBuilder::new(&cl).access(&v, AccessMode::RW)).unwrap();
    }
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![12u32; 32]);
    drop(rt);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut tasks: Vec<&Value> = json["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "task").collect();
    tasks.sort_by_key(|e| e["args"]["task"].as_u64());
    assert_eq!(tasks.len(), 12);
    let fp = &tasks[0]["args"]["footprint"];
    assert!(fp.is_string());
    for e in &tasks {
        assert_eq!(e["name"], name.as_str());
        assert_eq!(&e["args"]["footprint"], fp);
        let m = e["args"]["measured_us"].as_f64().unwrap();
        assert!(m >= 0.0 && m <= e["dur"].as_f64().unwrap() + 1e-3, "{e}");
    }
    // Calibrated after 10 measurements: the last tasks were predicted.
    assert!(tasks[0]["args"].get("predicted_us").is_none());
    assert!(tasks[11]["args"]["predicted_us"].is_number(), "{:#?}", tasks[11]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_trace_path_leaves_the_runtime_working_and_shutting_down() {
    let path = PathBuf::from("/nonexistent-weft-trace-dir/sub/trace.json");
    let rt = Runtime::new(Config { ncpu: Some(1), spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    let c = inc("inc", Arch::Cpu);
    for _ in 0..4 {
        rt.submit(TaskBuilder::new(&c).access(&v, AccessMode::RW)).unwrap();
    }
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![4u32; 16]);
    // Writes (and warns) now, then again at shutdown: neither panics.
    rt.write_trace();
    drop(rt);
    assert!(!path.exists());
}

#[test]
fn without_a_trace_path_nothing_is_written() {
    let dir = temp_dir("off");
    let rt = Runtime::new(Config { ncpu: Some(1), spin_us: 5, ..Config::default() }).unwrap();
    let c = inc("inc", Arch::Cpu);
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    rt.submit(TaskBuilder::new(&c).access(&v, AccessMode::RW)).unwrap();
    rt.wait_for_all().unwrap();
    rt.write_trace();
    drop(v);
    drop(rt);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Dependencies are flow arrows: one `s`/`f` pair per edge the submission created, from
/// inside the earlier task's slice to the start of the later one's; independent tasks get
/// none.
#[test]
fn dependencies_are_flow_arrows_between_the_tasks_slices() {
    let dir = temp_dir("flows");
    let path = dir.join("trace.json");
    let rt = Runtime::new(Config { ncpu: Some(2), spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![0u32; 64]).unwrap();
    let free = rt.register_vector(vec![0u32; 64]).unwrap();
    let cl = inc("step", Arch::Cpu);
    // The chain's first task waits until everything is submitted: a task that ended before
    // its successor's submission would leave no edge (nothing to wait for).
    let go = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let g = go.clone();
    let gated = Codelet::builder("gated")
        .cpu(move |_| {
            while !g.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::yield_now();
            }
            Ok(())
        })
        .build();
    // A chain a -> b -> c on `v`, and one task on `free` that depends on nothing.
    let mut chain = vec![rt.submit(TaskBuilder::new(&gated).access(&v, AccessMode::RW)).unwrap().id()];
    chain.extend((0..2).map(|_| rt.submit(TaskBuilder::new(&cl).access(&v, AccessMode::RW)).unwrap().id()));
    let alone = rt.submit(TaskBuilder::new(&cl).access(&free, AccessMode::RW)).unwrap().id();
    go.store(true, std::sync::atomic::Ordering::Release);
    rt.wait_for_all().unwrap();
    drop((v, free));
    drop(rt);

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let slice = |task: u64| -> (u64, f64, f64) {
        let e = events.iter().find(|e| e["cat"] == "task" && e["args"]["task"] == task).unwrap_or_else(|| panic!("no slice of {task}"));
        let ts = e["ts"].as_f64().unwrap();
        (e["tid"].as_u64().unwrap(), ts, ts + e["dur"].as_f64().unwrap())
    };
    let flows: Vec<&Value> = events.iter().filter(|e| e["cat"] == "dep").collect();
    assert_eq!(flows.len(), 4, "two edges, an s and an f each: {flows:#?}");
    for (a, b) in [(chain[0], chain[1]), (chain[1], chain[2])] {
        let (ta, sa, ea) = slice(a);
        let (tb, sb, _) = slice(b);
        let s = flows
            .iter()
            .find(|e| e["ph"] == "s" && e["tid"] == ta && (sa..=ea).contains(&e["ts"].as_f64().unwrap()))
            .unwrap_or_else(|| panic!("no arrow out of task {a}: {flows:#?}"));
        let f = flows.iter().find(|e| e["ph"] == "f" && e["id"] == s["id"]).unwrap();
        assert_eq!((f["tid"].as_u64().unwrap(), f["ts"].as_f64().unwrap(), &f["bp"]), (tb, sb, &Value::from("e")));
    }
    let (ta, sa, ea) = slice(alone);
    assert!(!flows.iter().any(|e| e["tid"] == ta && (sa..ea).contains(&e["ts"].as_f64().unwrap()) && e["ph"] == "f"));
    let _ = std::fs::remove_dir_all(&dir);
}
