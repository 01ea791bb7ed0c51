//! Output tests of the `weft` command: on a trace a runtime writes for a known task graph,
//! on a hand-written trace with dependencies, and on a known model file. Counts, bytes and
//! names are asserted, never timings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use weft_core::*;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `weft ARGS` with `env` set (and the runtime's device variables cleared: no OpenCL or
/// CUDA device joins in unless a test asks).
fn weft(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weft"));
    c.args(args).env("WEFT_NOPENCL", "0").env("WEFT_NCUDA", "0").env_remove("WEFT_TRACE").env_remove("WEFT_SCHED");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run weft")
}

/// stdout of a `weft` run that must succeed.
fn ok(args: &[&str], env: &[(&str, &str)]) -> String {
    let o = weft(args, env);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "weft {args:?} failed: {err}\n{out}");
    out.into_owned()
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

/// The graph of core's trace test: 3 rounds of one task pinned to each of cpu0, cpu1 and
/// null0; a 1 KiB vector `v` goes host -> null0 once per round (3 copies, 3072 bytes) and
/// comes back; `u` never leaves host memory.
fn known_trace(dir: &Path) -> PathBuf {
    let path = dir.join("trace.json");
    let rt = Runtime::new(Config { ncpu: Some(2), nnull: 1, spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![0u32; 256]).unwrap();
    let u = rt.register_vector(vec![0u32; 64]).unwrap();
    let (c0, c1, n0) = (inc("on_cpu0", Arch::Cpu), inc("on_cpu1", Arch::Cpu), inc("on_null0", Arch::Null));
    for round in 0..3 {
        for (cl, w) in [(&c0, 0), (&c1, 1), (&n0, 2)] {
            let h = if round == 1 && w == 0 { &u } else { &v };
            rt.submit(TaskBuilder::new(cl).access(h, AccessMode::RW).on_worker(w)).unwrap();
        }
    }
    rt.wait_for_all().unwrap();
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![8u32; 256]);
    drop(u);
    drop(rt);
    path
}

/// The line of `text` that starts (after indentation) with `start`.
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_else(|| panic!("no line starting with {start:?} in:\n{text}"))
}

fn words(l: &str) -> Vec<&str> {
    l.split_whitespace().collect()
}

#[test]
fn trace_summary_counts_tasks_per_worker_and_codelet_and_bytes_per_link() {
    let dir = temp_dir("summary");
    let trace = known_trace(&dir);
    let out = ok(&["trace", "summary", trace.to_str().unwrap()], &[]);
    assert!(out.starts_with("3 workers, 9 tasks, "), "{out}");
    assert!(out.contains("makespan "), "{out}");
    // The 8 tasks on `v` form one chain of dependencies (flow arrows; an edge is missing
    // only if a task ended before the next was submitted); the task on `u` depends on none.
    let cp = words(line(&out, "critical path "));
    let n: usize = cp[cp.iter().position(|w| *w == "over").expect("critical path ... over N tasks") + 1].parse().unwrap();
    assert!((2..=8).contains(&n), "{out}");
    // Per worker: 3 tasks each; the null device's row has a transfer share, the CPU rows not.
    for w in ["cpu 0", "cpu 1", "null 0"] {
        let l = line(&out, w);
        assert_eq!(words(l)[2], "3", "{l}");
    }
    assert!(line(&out, "cpu 0").ends_with(" -"), "{out}");
    assert!(line(&out, "null 0").trim_end().ends_with('%'), "{out}");
    // Per codelet: 3 of each, on the kind of worker it was pinned to.
    for (c, kind) in [("on_cpu0", "cpu 3"), ("on_cpu1", "cpu 3"), ("on_null0", "null 3")] {
        let l = line(&out, c);
        assert_eq!(words(l)[1], "3", "{l}");
        assert!(l.ends_with(kind), "{l}");
    }
    // Per link: v's three trips to the device, 1 KiB each; it comes back too.
    let up = line(&out, "node 0 (host) -> node 1 (null0)");
    assert_eq!(words(up)[7], "3", "{up}");
    assert!(up.contains("(3072 B)"), "{up}");
    let down = line(&out, "node 1 (null0) -> node 0 (host)");
    let n: u64 = words(down)[7].parse().unwrap();
    assert!(down.contains(&format!("({} B)", n * 1024)), "{down}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_gantt_draws_a_rect_per_task_and_names_the_rows() {
    let dir = temp_dir("gantt");
    let trace = known_trace(&dir);
    let svg = dir.join("g.svg");
    let out = ok(&["trace", "gantt", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()], &[]);
    assert!(out.contains("g.svg"), "{out}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"), "{}", &s[..s.len().min(200)]);
    assert!(s.len() > 2000 && s.len() < 1 << 20, "{} bytes", s.len());
    // 9 tasks, the transfers, the background and the legend's boxes: at least 9 + 3 + 4.
    assert!(s.matches("<rect").count() >= 16, "{} rects", s.matches("<rect").count());
    for name in ["cpu 0", "cpu 1", "null 0", "node 0 (host) -&gt; node 1 (null0)", "on_cpu0", "on_null0", "transfer"] {
        assert!(s.contains(name), "{name} missing");
    }
    // Only SVG and PNG.
    let o = weft(&["trace", "gantt", trace.to_str().unwrap(), "-o", dir.join("g.jpg").to_str().unwrap()], &[]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("only SVG and PNG"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A hand-written trace with flow events: a (0-10 µs) -> b (10-30) -> c (30-35), and d
/// (0-20) on its own. The critical path is a, b, c.
const FLOWS: &str = r#"{"traceEvents":[
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"cpu 0"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"cpu 1"}},
{"ph":"X","pid":1,"tid":1,"name":"a","cat":"task","ts":0.0,"dur":10.0,"args":{"task":1}},
{"ph":"X","pid":1,"tid":2,"name":"b","cat":"task","ts":10.0,"dur":20.0,"args":{"task":2}},
{"ph":"X","pid":1,"tid":1,"name":"c","cat":"task","ts":30.0,"dur":5.0,"args":{"task":3}},
{"ph":"X","pid":1,"tid":1,"name":"d","cat":"task","ts":12.0,"dur":8.0,"args":{"task":4}},
{"ph":"X","pid":1,"tid":1,"name":"idle","cat":"idle","ts":20.0,"dur":10.0,"args":{}},
{"ph":"s","pid":1,"tid":1,"name":"dep","cat":"dep","id":1,"ts":9.0},
{"ph":"f","pid":1,"tid":2,"name":"dep","cat":"dep","id":1,"ts":10.0,"bp":"e"},
{"ph":"s","pid":1,"tid":2,"name":"dep","cat":"dep","id":2,"ts":29.0},
{"ph":"f","pid":1,"tid":1,"name":"dep","cat":"dep","id":2,"ts":30.0,"bp":"e"}
]}"#;

#[test]
fn trace_summary_follows_flow_events_for_the_critical_path() {
    let dir = temp_dir("flows");
    let path = dir.join("flows.json");
    std::fs::write(&path, FLOWS).unwrap();
    let out = ok(&["trace", "summary", path.to_str().unwrap()], &[]);
    assert!(out.starts_with("2 workers, 4 tasks, 0 transfers"), "{out}");
    assert!(out.contains("critical path 35.0 us over 3 tasks"), "{out}");
    assert!(out.contains("no transfers"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_is_not_a_trace_is_an_error_naming_it() {
    let dir = temp_dir("bad");
    let path = dir.join("bad.json");
    std::fs::write(&path, "{\"x\": 1}").unwrap();
    let o = weft(&["trace", "summary", path.to_str().unwrap()], &[]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.json: no `traceEvents`"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = weft(&["trace", "summary", dir.join("missing.json").to_str().unwrap()], &[]);
    assert!(!o.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `$WEFT_HOME` with the fixture model (`tests/fixtures/sgemm.model`: cpu with 3 sizes and 12
/// samples, null with 2 sizes and 6) in `models/`.
fn home_with_model(name: &str) -> PathBuf {
    let home = temp_dir(name);
    std::fs::create_dir_all(home.join("models")).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sgemm.model"), home.join("models/sgemm.model")).unwrap();
    home
}

#[test]
fn perfmodel_list_and_show_read_the_model_file() {
    let home = home_with_model("models");
    let env = [("WEFT_HOME", home.to_str().unwrap())];
    let list = ok(&["perfmodel", "list"], &env);
    assert!(list.starts_with("1 models in "), "{list}");
    assert!(list.contains("  sgemm: cpu (3 entries, 12 samples); null (2 entries, 6 samples)"), "{list}");

    let show = ok(&["perfmodel", "show", "sgemm"], &env);
    assert!(show.starts_with("model sgemm\n"), "{show}");
    assert!(show.contains("arch cpu: 3 entries, 12 samples"), "{show}");
    assert!(show.contains("arch null: 2 entries, 6 samples"), "{show}");
    // The cpu architecture has a usable power law (12 samples over three sizes) and a
    // non-linear fit (3 sizes); null has neither.
    let cpu = &show[show.find("arch cpu").unwrap()..show.find("arch null").unwrap()];
    assert!(cpu.contains("regression t = a*n^b: a = "), "{cpu}");
    assert!(cpu.contains("regression t = a*n^b + c through the entries"), "{cpu}");
    // But no entry has its 10 samples: a model of kind nl-regression cannot predict by it.
    assert!(cpu.contains("predicting (kind nl-regression): not usable yet (needs 3 calibrated entries"), "{cpu}");
    let null = &show[show.find("arch null").unwrap()..];
    assert!(null.contains("not usable yet") && null.contains("needs 3 distinct sizes"), "{null}");
    let e = words(line(cpu, "0000beef"));
    assert_eq!(e[..3], ["0000beef", "262144", "4"]);
    assert_eq!(e[3], "409.375", "mean");
    assert_eq!(e[5..7], ["402.500", "420.000"], "min, max");
    // The median of 402.5, 405, 410, 420.
    assert_eq!(e[7], "407.500");
    // By path too, and an unknown name is an error.
    let by_path = ok(&["perfmodel", "show", home.join("models/sgemm.model").to_str().unwrap()], &env);
    assert_eq!(by_path, show);
    assert!(!weft(&["perfmodel", "show", "nope"], &env).status.success());
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn perfmodel_list_of_an_empty_home_says_so() {
    let home = temp_dir("nomodels");
    let out = ok(&["perfmodel", "list"], &[("WEFT_HOME", home.to_str().unwrap())]);
    assert!(out.starts_with("no performance models in "), "{out}");
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn perfmodel_plot_draws_the_samples_and_the_fits() {
    let home = home_with_model("plot");
    let svg = home.join("m.svg");
    ok(&["perfmodel", "plot", "sgemm", "-o", svg.to_str().unwrap()], &[("WEFT_HOME", home.to_str().unwrap())]);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    assert!(s.len() > 2000 && s.len() < 1 << 20, "{} bytes", s.len());
    // 18 samples, plus a dot per architecture in the legend.
    assert!(s.matches("<circle").count() >= 18, "{} circles", s.matches("<circle").count());
    // cpu's power law and non-linear fit.
    assert!(s.matches("<polyline").count() >= 2, "{} polylines", s.matches("<polyline").count());
    for t in ["performance model sgemm", "cpu: samples (12 in 3 entries", "null: samples (6 in 2 entries", "cpu: t = "] {
        assert!(s.contains(t), "{t} missing");
    }
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn machine_shows_workers_nodes_and_the_cached_bus_model() {
    let home = temp_dir("machine");
    let env = [("WEFT_HOME", home.to_str().unwrap()), ("WEFT_NCPU", "2"), ("WEFT_NNULL", "1")];
    let out = ok(&["machine"], &env);
    assert!(out.starts_with("cores: "), "{out}");
    assert!(out.contains("memory nodes: 2") && out.contains("workers: 3"), "{out}");
    for w in ["cpu0", "cpu1", "null0"] {
        assert!(out.lines().any(|l| words(l).get(1) == Some(&w)), "{w} in {out}");
    }
    assert!(out.contains("policy: dmdas (the default for these workers)"), "{out}");
    assert!(out.contains("bus model: not measured yet"), "{out}");
    // A runtime with a model-driven policy measures the bus and caches it; then it shows.
    let rt =
        Runtime::new(Config { ncpu: Some(1), nnull: 1, sched: PolicyKind::Dmda, home: Some(home.clone()), ..Config::default() }).unwrap();
    drop(rt);
    let out = ok(&["machine"], &env);
    assert!(out.contains("bus model (device to device goes through host memory)"), "{out}");
    assert!(out.contains("latency_us"), "{out}");
    std::fs::remove_dir_all(&home).unwrap();
}

/// A vendor that does not load is named with the reason, so that a user who expected a
/// device sees why there is none.
#[test]
fn machine_says_why_a_vendor_was_left_out() {
    let dir = temp_dir("machine-vendors");
    std::fs::write(dir.join("gone.icd"), "libnosuchvendor.so\n").unwrap();
    // (`weft` here sets WEFT_NOPENCL=0 and WEFT_NCUDA=0 unless told otherwise.)
    let env = [("WEFT_OCL_VENDORS", dir.to_str().unwrap()), ("WEFT_NCPU", "1"), ("WEFT_NOPENCL", "1")];
    let out = ok(&["machine"], &env);
    let section = out.split("\nleft out:\n").nth(1).unwrap_or_else(|| panic!("no 'left out' section: {out}"));
    assert!(section.lines().any(|l| l.trim_start().starts_with("OpenCL: ") && l.contains("libnosuchvendor.so")), "{out}");
    assert!(!section.contains("CUDA:"), "WEFT_NCUDA=0 asks for no CUDA notes: {out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["trace", "--help"],
        &["trace", "summary", "--help"],
        &["trace", "gantt", "--help"],
        &["machine", "--help"],
        &["perfmodel", "--help"],
        &["perfmodel", "list", "--help"],
        &["perfmodel", "show", "--help"],
        &["perfmodel", "plot", "--help"],
    ] {
        let out = ok(args, &[]);
        assert!(out.contains("Usage: weft"), "{args:?}: {out}");
    }
}

/// Workers bind within the process's CPU affinity (what `taskset` or `mpirun` gives it), not
/// to the machine's first cores.
#[test]
fn workers_bind_within_the_process_cpu_affinity() {
    let last = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) - 1;
    if last == 0 || Command::new("taskset").arg("--version").output().is_err() {
        eprintln!("skipped: one core, or no taskset");
        return;
    }
    let out = Command::new("taskset")
        .args(["-c", &last.to_string(), env!("CARGO_BIN_EXE_weft"), "machine"])
        .env("WEFT_NOPENCL", "0")
        .env("WEFT_NCUDA", "0")
        .output()
        .expect("taskset runs weft machine");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(line(&text, "cores:").starts_with("cores: 1 processing units"), "{text}");
    // One CPU worker, on the one PU allowed (the column is core(PU os index)).
    assert!(!text.contains(" cpu1 "), "{text}");
    let cpu0 = words(line(&text, "0 cpu0"));
    assert!(cpu0[4].ends_with(&format!("({last})")), "cpu0 not on PU {last}: {text}");
}

/// An OpenMP region share (a front end's span, `"cat":"omp"`) is busy time on its thread's
/// row, not a task: the summary counts it apart and the per-codelet table leaves it out.
#[test]
fn trace_summary_counts_openmp_region_shares_apart_from_tasks() {
    let dir = temp_dir("regions");
    let path = dir.join("trace.json");
    let rt = Runtime::new(Config { ncpu: Some(1), spin_us: 5, trace: Some(path.clone()), ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    rt.submit(TaskBuilder::new(&inc("a_task", Arch::Cpu)).access(&v, AccessMode::RW)).unwrap();
    rt.wait_for_all().unwrap();
    let start = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(2));
    rt.trace_span("omp parallel", start);
    drop(v);
    drop(rt);
    let out = ok(&["trace", "summary", path.to_str().unwrap()], &[]);
    assert!(out.contains(" 1 tasks, "), "{out}");
    assert!(out.contains("1 OpenMP region shares"), "{out}");
    assert!(!out.lines().any(|l| l.trim_start().starts_with("omp parallel")), "a region in the per-codelet table:\n{out}");
    let svg = dir.join("gantt.svg");
    ok(&["trace", "gantt", path.to_str().unwrap(), "-o", svg.to_str().unwrap()], &[]);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("OpenMP region"), "no legend entry for regions");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// OpenMP explicit tasks count as tasks (an `omp task` row per construct name in the
/// per-codelet table); worksharing constructs and barrier waits are busy time inside the
/// region shares, listed per construct. Nested slices count once: a thread whose share
/// holds a loop holding tasks is busy for the share's length, not the sum.
#[test]
fn trace_summary_counts_openmp_tasks_as_tasks_and_nested_spans_once() {
    let dir = temp_dir("omp-nested");
    let path = dir.join("trace.json");
    // cpu 0: a share 0-1000 µs holding a loop 100-600 (two tasks in it) and a barrier
    // 600-1000 (a task in it); other threads: a share 0-1000 with one task.
    let x = |tid: u32, name: &str, cat: &str, ts: u32, dur: u32| {
        format!(r#"{{"ph":"X","pid":1,"tid":{tid},"name":"{name}","cat":"{cat}","ts":{ts},"dur":{dur},"args":{{}}}}"#)
    };
    let events = [
        r#"{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"cpu 0"}}"#.to_string(),
        r#"{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"other threads"}}"#.to_string(),
        x(1, "omp parallel", "omp", 0, 1000),
        x(1, "omp for", "omp", 100, 500),
        x(1, "omp task", "omp_task", 200, 100),
        x(1, "omp task", "omp_task", 400, 100),
        x(1, "omp barrier", "omp", 600, 400),
        x(1, "omp task", "omp_task", 700, 100),
        x(2, "omp parallel", "omp", 0, 1000),
        x(2, "omp task", "omp_task", 300, 200),
    ];
    std::fs::write(&path, format!("{{\"traceEvents\":[{}]}}", events.join(",\n"))).unwrap();
    let out = ok(&["trace", "summary", path.to_str().unwrap()], &[]);
    assert!(out.starts_with("2 workers, 4 tasks (4 of them OpenMP tasks), 0 transfers"), "{out}");
    assert!(out.contains("2 OpenMP region shares"), "{out}");
    // Busy for the whole share: 1.000 ms, 100.0% (a sum of the nested slices would be 2.3 ms).
    let cpu0 = words(line(&out, "cpu 0 "));
    assert_eq!(&cpu0[2..6], ["3", "1.000", "ms", "100.0%"], "{out}");
    let other = words(line(&out, "other threads "));
    assert_eq!(&other[2..6], ["1", "1.000", "ms", "100.0%"], "{out}");
    // The tasks, per construct name, with their own durations (100, 100, 100, 200 µs).
    assert_eq!(&words(line(&out, "omp task "))[2..5], ["4", "125.0", "us"], "{out}");
    // The constructs apart, not in the per-codelet table.
    let after = &out[out.find("per OpenMP construct").unwrap_or_else(|| panic!("no construct table:\n{out}"))..];
    assert_eq!(&words(line(after, "omp for "))[2..3], ["1"], "{out}");
    assert_eq!(&words(line(after, "omp barrier "))[2..5], ["1", "400.0", "us"], "{out}");
    assert!(!out[..out.find("per OpenMP construct").unwrap()].contains("omp for"), "a construct among the tasks:\n{out}");
    let svg = dir.join("gantt.svg");
    ok(&["trace", "gantt", path.to_str().unwrap(), "-o", svg.to_str().unwrap()], &[]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("OpenMP construct") && svg.contains("OpenMP barrier") && svg.contains("omp task"), "legend");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A PNG file decoded: width, height, RGBA pixels.
fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 4]>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG signature");
    let mut r = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().expect("a PNG header");
    let mut buf = vec![0; r.output_buffer_size().expect("a size")];
    let info = r.next_frame(&mut buf).expect("a PNG frame");
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    let px = buf[..info.buffer_size()].chunks_exact(3).map(|c| [c[0], c[1], c[2], 255]).collect();
    (info.width, info.height, px)
}

/// `-o NAME.png` renders the picture: a PNG of the SVG's size, with the chart's colours,
/// and text (dark pixels in the row names' column, left of the chart) where the machine has
/// a font (else a warning says it has none).
#[test]
fn trace_gantt_and_perfmodel_plot_write_png() {
    let dir = temp_dir("png");
    let trace = known_trace(&dir);
    let png = dir.join("g.png");
    let o = weft(&["trace", "gantt", trace.to_str().unwrap(), "-o", png.to_str().unwrap(), "--width", "1200"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let no_font = String::from_utf8_lossy(&o.stderr).contains("no system font");
    let (w, h, px) = decode_png(&png);
    // The SVG's size: the width asked for; a row per worker and link, the caption, axis and legend.
    assert_eq!(w, 1200);
    assert!((150..1000).contains(&h), "height {h}");
    let distinct: std::collections::HashSet<[u8; 4]> = px.iter().copied().collect();
    assert!(distinct.len() > 10, "{} colours", distinct.len());
    // The first codelet's colour (the palette's first, Tableau blue) and the copies' grey.
    for c in [[31, 119, 180, 255], [70, 70, 70, 255]] {
        assert!(px.contains(&c), "no pixel of {c:?}");
    }
    if !no_font {
        // Row names: dark text left of the plotting area, in the chart's rows.
        // (The longest, "node 0 (host) -> node 1 (null0)", starts some 30 px from the left.)
        let dark = (40..150).flat_map(|y| (0..150).map(move |x| (x, y))).filter(|&(x, y)| px[(y * w + x) as usize][0] < 100).count();
        assert!(dark > 20, "no text in the row names' column ({dark} dark pixels)");
    }

    let home = home_with_model("png-model");
    let png = home.join("m.png");
    ok(&["perfmodel", "plot", "sgemm", "-o", png.to_str().unwrap()], &[("WEFT_HOME", home.to_str().unwrap())]);
    let (w, h, px) = decode_png(&png);
    assert_eq!(w, 1000);
    assert!(h > 650, "height {h}");
    let distinct: std::collections::HashSet<[u8; 4]> = px.iter().copied().collect();
    assert!(distinct.len() > 10, "{} colours", distinct.len());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
}
