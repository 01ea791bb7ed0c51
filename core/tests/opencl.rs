//! OpenCL devices as memory nodes and workers, on PoCL: `POCL_DEVICES="basic basic"` gives
//! two single-core devices (shared/reference/opencl-facts.md). Without any OpenCL platform
//! each test prints `skipped: no OpenCL platform`.
//!
//! Its own `main` sets `POCL_DEVICES` before any thread exists, runs the tests in order, and
//! prints `N passed, N failed`.

use std::sync::Arc;
use weft_core::*;

const ADD: &str = "__kernel void add(__global float *v, float x) { v[get_global_id(0)] += x; }";

fn runtime(ncpu: usize, limit: Option<usize>, dir: &std::path::Path) -> Option<Runtime> {
    let rt = Runtime::new(Config {
        ncpu: Some(ncpu),
        nopencl: None,
        opencl_mem_limit: limit,
        kernel_cache: Some(dir.to_path_buf()),
        sched: PolicyKind::Eager,
        spin_us: 5,
        // PoCL's devices are of type CPU: let them run what has a CPU implementation too.
        opencl_on_cpus: true,
        ..Config::default()
    })
    .unwrap();
    if rt.workers().iter().filter(|w| w.arch == Arch::OpenCl).count() < 2 {
        println!("skipped: no OpenCL platform with two devices");
        return None;
    }
    Some(rt)
}

fn opencl_workers(rt: &Runtime) -> Vec<usize> {
    rt.workers().iter().filter(|w| w.arch == Arch::OpenCl).map(|w| w.id).collect()
}

fn add_codelet() -> Arc<Codelet> {
    Codelet::builder("add")
        .opencl(ADD, "add")
        .cpu(|ctx| {
            let x: f32 = ctx.arg();
            ctx.vector_mut::<f32>(0).iter_mut().for_each(|v| *v += x);
            Ok(())
        })
        .build()
}

fn data_written_on_one_device_is_right_on_the_other_and_the_host(dir: &std::path::Path) {
    let Some(rt) = runtime(1, None, dir) else { return };
    let ocl = opencl_workers(&rt);
    let cpu = rt.workers().iter().find(|w| w.arch == Arch::Cpu).unwrap().id;
    let v = rt.register_vector((0..4096).map(|i| i as f32).collect::<Vec<f32>>()).unwrap();
    let add = add_codelet();
    // device A, device B, CPU, device B, device A: every hop needs the newest data.
    for (k, w) in [ocl[0], ocl[1], cpu, ocl[1], ocl[0]].into_iter().enumerate() {
        rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW).arg(10.0f32 * (k + 1) as f32).on_worker(w)).unwrap();
    }
    let out = v.into_vec::<f32>().unwrap();
    assert!(out.iter().enumerate().all(|(i, &x)| x == i as f32 + 150.0), "{:?}", &out[..4]);
    let per = rt.tasks_per_worker();
    assert_eq!((per[ocl[0]], per[ocl[1]], per[cpu]), (2, 2, 1));
}

fn a_problem_twice_the_device_memory_gives_right_results(dir: &std::path::Path) {
    // 2 MiB of floats in 16 blocks on devices limited to 1 MiB each: blocks are evicted
    // (written back first) and fetched again.
    let Some(rt) = runtime(0, Some(1 << 20), dir) else { return };
    let n = 1 << 19;
    let v = rt.register_vector(vec![1.0f32; n]).unwrap();
    let blocks = v.partition(Filter::VectorBlock { parts: 16 }).unwrap();
    let add = Codelet::builder("add-ocl").opencl(ADD, "add").build();
    for round in 0..3 {
        for b in &blocks {
            rt.submit(TaskBuilder::new(&add).access(b, AccessMode::RW).arg(1.0f32 + round as f32)).unwrap();
        }
    }
    rt.wait_for_all().unwrap();
    let evictions: usize = rt.memory_nodes()[1..].iter().map(|n| n.evictions()).sum();
    assert!(evictions > 0, "no eviction");
    assert!(rt.memory_nodes()[1..].iter().all(|n| n.used() <= 1 << 20));
    drop(blocks);
    assert!(v.into_vec::<f32>().unwrap().iter().all(|&x| x == 7.0));
}

fn a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents(dir: &std::path::Path) {
    let Some(rt) = runtime(1, None, dir) else { return };
    let v = rt.register_vector(vec![0.0f32; 64]).unwrap();
    let bad = Codelet::builder("bad").opencl("__kernel void bad(__global float *v) { v[0] = undeclared_thing; }", "bad").build();
    let add = add_codelet();
    let t = rt.submit(TaskBuilder::new(&bad).access(&v, AccessMode::RW)).unwrap();
    let dep = rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW).arg(1.0f32)).unwrap();
    let e = t.wait().unwrap_err().to_string();
    assert!(e.contains("undeclared_thing"), "the build log should reach the submitter: {e}");
    assert!(matches!(dep.wait(), Err(Error::Task(TaskError::Cancelled(_)))));
    // A kernel name that does not exist, and a blob that does not match the arguments.
    let missing = Codelet::builder("missing").opencl(ADD, "nope").build();
    let e = rt.submit(TaskBuilder::new(&missing).access(&v, AccessMode::RW)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let add_only = Codelet::builder("add-ocl").opencl_impl(OpenClImpl::new(ADD, "add").arg_sizes(&[4])).build();
    let ocl = opencl_workers(&rt)[0];
    let e = rt.submit(TaskBuilder::new(&add_only).access(&v, AccessMode::RW).arg(1u64).on_worker(ocl)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("8 bytes"), "{e}");
    // Nothing is stuck: the handle still works.
    rt.submit(TaskBuilder::new(&add_only).access(&v, AccessMode::RW).arg(2.0f32)).unwrap().wait().unwrap();
    assert_eq!(v.into_vec::<f32>().unwrap(), vec![2.0f32; 64]);
}

fn independent_kernels_use_both_devices(dir: &std::path::Path) {
    let Some(rt) = runtime(0, None, dir) else { return };
    let add = Codelet::builder("add-ocl").opencl(ADD, "add").build();
    // All ready at once (behind a tag) and long enough together (64 kernels over 4 MiB
    // each) that a device whose driver is slow to wake still takes some: on a loaded
    // machine, tiny kernels submitted one by one could all run on the first device
    // before the other's driver is scheduled.
    let hs: Vec<DataHandle> = (0..16).map(|_| rt.register_vector(vec![0.0f32; 1 << 20]).unwrap()).collect();
    for h in &hs {
        for i in 0..4 {
            let b = TaskBuilder::new(&add).access(h, AccessMode::RW).arg(0.5f32);
            rt.submit(if i == 0 { b.after_tag(9) } else { b }).unwrap();
        }
    }
    rt.tag_notify(9).unwrap();
    rt.wait_for_all().unwrap();
    let per = rt.tasks_per_worker();
    assert!(opencl_workers(&rt).iter().all(|&w| per[w] > 0), "{per:?}");
    for h in hs {
        assert!(h.into_vec::<f32>().unwrap().iter().all(|&x| x == 2.0));
    }
}

/// A front end that sets kernel arguments itself (the ICD) gets the device and the task's
/// replicas; here it passes the two buffers swapped, which only a custom launch can do.
fn a_custom_launch_enqueues_its_own_kernel_on_the_task_replicas(dir: &std::path::Path) {
    let Some(rt) = runtime(0, None, dir) else { return };
    let copy =
        "__kernel void copy(__global float *dst, __global const float *src) { size_t i = get_global_id(0); dst[i] = src[i] * 2.0f; }";
    let cache = Arc::new(weft_vendors::opencl::ProgramCache::new(None));
    let c = Codelet::builder("custom")
        .opencl_impl(OpenClImpl::custom(move |l| {
            let p = l.device.build_program(&cache, copy, "").map_err(|e| e.to_string())?;
            let mut k = l.device.create_kernel(&p, "copy").map_err(|e| e.to_string())?;
            let n = u64::from_ne_bytes(l.args.try_into().unwrap()) as usize;
            // SAFETY: both buffers are the task's replicas, pinned until the completion ends.
            unsafe {
                k.set_arg_buffer(0, l.buffers[1]).map_err(|e| e.to_string())?;
                k.set_arg_buffer(1, l.buffers[0]).map_err(|e| e.to_string())?;
            }
            // SAFETY: as above. (`launch` takes the device's submission lock itself.)
            unsafe { l.device.launch(&k, &[n], None) }.map_err(|e| e.to_string())
        }))
        .build();
    let src = rt.register_vector((0..1000).map(|i| i as f32).collect::<Vec<f32>>()).unwrap();
    let dst = rt.register_vector(vec![0.0f32; 1000]).unwrap();
    let devs = rt.opencl_devices();
    assert_eq!(devs.len(), 2);
    rt.submit(TaskBuilder::new(&c).access(&src, AccessMode::R).access(&dst, AccessMode::W).arg(1000u64).on_worker(devs[1].0)).unwrap();
    let out = dst.into_vec::<f32>().unwrap();
    assert!(out.iter().enumerate().all(|(i, &x)| x == 2.0 * i as f32), "{:?}", &out[..4]);
    // A failing launch function fails its task with its message.
    let bad = Codelet::builder("bad").opencl_impl(OpenClImpl::custom(|_| Err("no such kernel".into()))).build();
    let e = rt.submit(TaskBuilder::new(&bad)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("no such kernel"), "{e}");
}

/// A launch function that models an in-order device: each launch completes `ms` after the
/// previous one did (fired by another thread); it records how many launches were in flight
/// at most, the order they started in and the order they completed in.
struct SlowLaunch {
    flying: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    started: Arc<std::sync::Mutex<Vec<u32>>>,
    completed: Arc<std::sync::Mutex<Vec<u32>>>,
    last: Arc<std::sync::Mutex<Option<weft_vendors::Completion>>>,
}

impl SlowLaunch {
    fn new() -> SlowLaunch {
        SlowLaunch {
            flying: Arc::default(),
            most: Arc::default(),
            started: Arc::default(),
            completed: Arc::default(),
            last: Arc::default(),
        }
    }

    fn codelet(&self, ms: u64) -> Arc<Codelet> {
        use std::sync::atomic::Ordering;
        let (f, m, st, done, last) =
            (self.flying.clone(), self.most.clone(), self.started.clone(), self.completed.clone(), self.last.clone());
        Codelet::builder("slow")
            .opencl_impl(OpenClImpl::custom(move |l| {
                let i = u32::from_ne_bytes(l.args[..4].try_into().unwrap());
                st.lock().unwrap().push(i);
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                let c = weft_vendors::Completion::new();
                let prev = last.lock().unwrap().replace(c.clone());
                let (c2, f2, d2) = (c.clone(), f.clone(), done.clone());
                std::thread::spawn(move || {
                    if let Some(p) = prev {
                        let _ = p.wait();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    d2.lock().unwrap().push(i);
                    f2.fetch_sub(1, Ordering::SeqCst);
                    c2.complete(Ok(()));
                });
                Ok(c)
            }))
            .build()
    }

    fn most(&self) -> usize {
        self.most.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A driver starts the next tasks while the device still runs earlier ones (up to
/// `DRIVER_WINDOW_PINNED` of the tasks pinned to it in flight, never more), and retires
/// them in order.
fn a_driver_keeps_a_window_of_tasks_in_flight(dir: &std::path::Path) {
    let Some(rt) = runtime(0, None, dir) else { return };
    let slow = SlowLaunch::new();
    let c = slow.codelet(5);
    let dev = rt.opencl_devices()[0].0;
    let n = DRIVER_WINDOW_PINNED as u32 + 4;
    let tasks: Vec<_> = (0..n).map(|i| rt.submit(TaskBuilder::new(&c).arg(i).on_worker(dev)).unwrap()).collect();
    for t in tasks {
        t.wait().unwrap();
    }
    assert_eq!(slow.most(), DRIVER_WINDOW_PINNED, "tasks in flight at once");
    assert_eq!(*slow.started.lock().unwrap(), (0..n).collect::<Vec<_>>());
}

/// Tasks pinned to one device that depend on one another (an OpenCL in-order queue's
/// chain, or data dependencies) are launched back to back: the device's queue orders them,
/// so none waits for its predecessor's completion. A successor elsewhere (a CPU task) still
/// does, and so does a task on a partitioned handle (its acquisition may write relatives
/// back, reading what the predecessor still writes).
fn chained_tasks_on_one_device_are_launched_without_waiting_for_completion(dir: &std::path::Path) {
    let Some(rt) = runtime(1, None, dir) else { return };
    let dev = rt.opencl_devices()[0].0;
    let cpu = rt.workers().iter().find(|w| w.arch == Arch::Cpu).unwrap().id;
    // A chain of explicit dependencies plus a data dependency on one handle.
    let slow = SlowLaunch::new();
    let c = slow.codelet(30);
    let v = rt.register_vector(vec![0u8; 64]).unwrap();
    let mut prev: Option<TaskHandle> = None;
    for i in 0..6u32 {
        let mut b = TaskBuilder::new(&c).access(&v, AccessMode::RW).arg(i).on_worker(dev);
        if let Some(p) = &prev {
            b = b.after(p);
        }
        prev = Some(rt.submit(b).unwrap());
    }
    // A CPU reader after the last one sees every launch completed.
    let done = slow.completed.clone();
    let seen = Arc::new(std::sync::Mutex::new(0usize));
    let s2 = seen.clone();
    let read = Codelet::builder("read")
        .cpu(move |_| {
            *s2.lock().unwrap() = done.lock().unwrap().len();
            Ok(())
        })
        .build();
    rt.submit(TaskBuilder::new(&read).access(&v, AccessMode::R).on_worker(cpu)).unwrap().wait().unwrap();
    assert!(slow.most() >= 2, "the chain was launched one at a time (at most {} in flight)", slow.most());
    assert_eq!(*slow.started.lock().unwrap(), (0..6).collect::<Vec<_>>());
    assert_eq!(*slow.completed.lock().unwrap(), (0..6).collect::<Vec<_>>(), "completions in order");
    assert_eq!(*seen.lock().unwrap(), 6, "the CPU task ran before every launch completed");

    // The same chain on a partitioned handle waits for each completion.
    let slow = SlowLaunch::new();
    let c = slow.codelet(10);
    let m = rt.register_vector(vec![0u8; 64]).unwrap();
    let parts = m.partition(Filter::VectorBlock { parts: 2 }).unwrap();
    for i in 0..4u32 {
        rt.submit(TaskBuilder::new(&c).access(&parts[0], AccessMode::RW).arg(i).on_worker(dev)).unwrap();
    }
    rt.wait_for_all().unwrap();
    assert_eq!(slow.most(), 1, "tasks on a partitioned handle were launched ahead of their predecessors' completion");
}

/// A launch function that records (task index, worker, launch, end) and completes `ms`
/// after its launch (fired by another thread): unlike a device's in-order queue, two
/// launches in flight on one device overlap too.
type LaunchLog = Arc<std::sync::Mutex<Vec<(u32, usize, std::time::Instant, std::time::Instant)>>>;

fn timed_codelet(log: &LaunchLog, ms: u64) -> Arc<Codelet> {
    let log = log.clone();
    Codelet::builder("timed")
        .opencl_impl(OpenClImpl::custom(move |l| {
            let i = u32::from_ne_bytes(l.args[..4].try_into().unwrap());
            let (c, log, w) = (weft_vendors::Completion::new(), log.clone(), l.worker);
            let done = c.clone();
            // The launch's time, not the thread's start: threads may start out of order.
            let start = std::time::Instant::now();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                log.lock().unwrap().push((i, w, start, std::time::Instant::now()));
                done.complete(Ok(()));
            });
            Ok(c)
        }))
        .build()
}

/// Followers (`TaskBuilder::set_follow`, an OpenCL in-order queue on the unified device):
/// beside a long task pinned to one device, a chain of followers runs on the other one,
/// launched in chain order (by default the model-less followers count as short and
/// follow each other there); with `back_to_back_us` 0 every follower waits for its
/// predecessor's completion (the chain's intervals never overlap) and is placed anew.
fn followers_run_where_a_device_is_free_and_keep_their_order(dir: &std::path::Path) {
    for back_to_back_us in [BACK_TO_BACK_US, 0.0] {
        let rt = Runtime::new(Config {
            ncpu: Some(0),
            nopencl: None,
            kernel_cache: Some(dir.to_path_buf()),
            back_to_back_us,
            ..Config::default()
        })
        .unwrap();
        let devs: Vec<usize> = rt.opencl_devices().iter().map(|d| d.0).collect();
        if devs.len() < 2 {
            println!("skipped: no OpenCL platform with two devices");
            return;
        }
        let log = LaunchLog::default();
        let long = timed_codelet(&log, 400);
        let short = timed_codelet(&log, 30);
        let busy = devs[1];
        let l = rt.submit(TaskBuilder::new(&long).arg(100u32).on_worker(busy)).unwrap();
        let mut prev: Option<TaskHandle> = None;
        for i in 0..4u32 {
            let mut b = TaskBuilder::new(&short).arg(i);
            b.set_follow();
            if let Some(p) = &prev {
                b.add_after(p);
            }
            prev = Some(rt.submit(b).unwrap());
        }
        prev.unwrap().wait().unwrap();
        assert!(!l.is_done(), "back_to_back_us {back_to_back_us}: the chain waited for the long task");
        l.wait().unwrap();
        let log = log.lock().unwrap();
        let mut chain: Vec<_> = log.iter().filter(|e| e.0 < 100).collect();
        chain.sort_by_key(|e| e.2);
        assert_eq!(chain.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 1, 2, 3], "chain order");
        assert!(chain.iter().all(|e| e.1 != busy), "back_to_back_us {back_to_back_us}: a follower ran on the busy device: {chain:?}");
        for w in chain.windows(2).filter(|_| back_to_back_us == 0.0) {
            assert!(w[1].2 >= w[0].3, "back_to_back_us {back_to_back_us}: follower {} started before {} ended", w[1].0, w[0].0);
        }
    }
}

/// `Config::trace` (`WEFT_TRACE`): each device driver has a track named after its device,
/// with a slice per kernel (named by its codelet) that never overlaps the next one.
fn a_trace_has_a_track_per_device_with_its_kernels(dir: &std::path::Path) {
    let path = dir.join(format!("trace-{}.json", std::process::id()));
    let _ = std::fs::create_dir_all(dir);
    let rt = Runtime::new(Config {
        ncpu: Some(1),
        nopencl: None,
        kernel_cache: Some(dir.to_path_buf()),
        sched: PolicyKind::Eager,
        spin_us: 5,
        trace: Some(path.clone()),
        ..Config::default()
    })
    .unwrap();
    let ocl = opencl_workers(&rt);
    if ocl.len() < 2 {
        println!("skipped: no OpenCL platform with two devices");
        return;
    }
    let v = rt.register_vector(vec![0.0f32; 1024]).unwrap();
    let add = Codelet::builder("add-traced").opencl(ADD, "add").build();
    for k in 0..20 {
        rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW).arg(1.0f32).on_worker(ocl[k % 2])).unwrap();
    }
    assert_eq!(v.into_vec::<f32>().unwrap(), vec![20.0f32; 1024]);
    drop(rt);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    let events = json["traceEvents"].as_array().unwrap();
    let tids: Vec<u64> = (0..2)
        .map(|k| {
            let e = events
                .iter()
                .find(|e| e["name"] == "thread_name" && e["args"]["name"].as_str().is_some_and(|n| n.starts_with(&format!("opencl {k} ("))))
                .unwrap_or_else(|| panic!("no track opencl {k}"));
            e["tid"].as_u64().unwrap()
        })
        .collect();
    for (k, tid) in tids.iter().enumerate() {
        let mut kernels: Vec<(f64, f64)> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "task" && e["pid"] == 1 && e["tid"] == *tid)
            .map(|e| {
                assert_eq!(e["name"], "add-traced");
                let ts = e["ts"].as_f64().unwrap();
                (ts, ts + e["dur"].as_f64().unwrap())
            })
            .collect();
        assert_eq!(kernels.len(), 10, "device {k}");
        kernels.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(kernels.windows(2).all(|p| p[0].1 <= p[1].0 + 1e-3), "device {k}: {kernels:?}");
    }
    // Moving `v` between the devices goes through host memory: copies both ways.
    let copies =
        |src: u64, dst: u64| events.iter().filter(|e| e["cat"] == "transfer" && e["args"]["src"] == src && e["args"]["dst"] == dst).count();
    assert!(copies(1, 0) + copies(2, 0) > 0 && copies(0, 1) + copies(0, 2) > 0);
}

fn main() {
    // SAFETY: no other thread exists yet.
    unsafe { std::env::set_var("POCL_DEVICES", "basic basic") };
    let dir = std::env::temp_dir().join(format!("weft-kernels-{}", std::process::id()));
    type Test = (&'static str, fn(&std::path::Path));
    let tests: [Test; 9] = [
        ("data_written_on_one_device_is_right_on_the_other_and_the_host", data_written_on_one_device_is_right_on_the_other_and_the_host),
        ("a_problem_twice_the_device_memory_gives_right_results", a_problem_twice_the_device_memory_gives_right_results),
        (
            "a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents",
            a_kernel_that_fails_to_build_fails_its_task_and_cancels_dependents,
        ),
        ("independent_kernels_use_both_devices", independent_kernels_use_both_devices),
        ("a_custom_launch_enqueues_its_own_kernel_on_the_task_replicas", a_custom_launch_enqueues_its_own_kernel_on_the_task_replicas),
        ("a_driver_keeps_a_window_of_tasks_in_flight", a_driver_keeps_a_window_of_tasks_in_flight),
        (
            "chained_tasks_on_one_device_are_launched_without_waiting_for_completion",
            chained_tasks_on_one_device_are_launched_without_waiting_for_completion,
        ),
        ("a_trace_has_a_track_per_device_with_its_kernels", a_trace_has_a_track_per_device_with_its_kernels),
        ("followers_run_where_a_device_is_free_and_keep_their_order", followers_run_where_a_device_is_free_and_keep_their_order),
    ];
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, f) in tests {
        if !filter.is_empty() && !filter.iter().any(|p| name.contains(p.as_str())) {
            continue;
        }
        let r = std::panic::catch_unwind(|| f(&dir));
        println!("test {name} ... {}", if r.is_ok() { "ok" } else { "FAILED" });
        if r.is_ok() { passed += 1 } else { failed += 1 }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("\n{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
