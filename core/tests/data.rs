//! Data handles: interfaces, filters, coherence across memory nodes, eviction, lookup.

use std::sync::Arc;
use weft_core::*;

fn with_null(nnull: usize, limit: Option<usize>) -> Runtime {
    Runtime::new(Config { ncpu: Some(1), nnull, null_mem_limit: limit, spin_us: 5, ..Config::default() }).unwrap()
}

fn scale_cl() -> Arc<Codelet> {
    Codelet::builder("scale")
        .cpu_and_null(|ctx| {
            let f: f64 = ctx.arg();
            let mut m = ctx.buffer(0).matrix_mut::<f64>();
            for j in 0..m.ny {
                m.col_mut(j).iter_mut().for_each(|x| *x *= f);
            }
            Ok(())
        })
        .build()
}

#[test]
fn data_written_on_a_device_is_read_right_on_the_host_and_another_device() {
    let rt = with_null(2, None);
    let v = rt.register_vector(vec![1u32; 64]).unwrap();
    let on = |arch: Arch| {
        Codelet::builder("inc")
            .implementation(
                arch,
                Arc::new(|ctx: &TaskContext<'_>| {
                    ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
                    Ok(())
                }),
            )
            .build()
    };
    let (dev, cpu) = (on(Arch::Null), on(Arch::Cpu));
    for i in 0..20 {
        rt.submit(TaskBuilder::new(if i % 3 == 0 { &cpu } else { &dev }).access(&v, AccessMode::RW)).unwrap();
    }
    rt.wait_for_all().unwrap();
    // The newest copy is on a device; the host replica is stale until someone reads it.
    let states = v.replica_states();
    assert_eq!(states.iter().filter(|s| **s == ReplicaState::Owner).count(), 1, "{states:?}");
    assert_eq!(v.read_to_vec::<u32>().unwrap(), vec![21u32; 64]);
    assert!(rt.stats_report().contains("B copied"));
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![21u32; 64]);
}

#[test]
fn a_problem_twice_the_device_memory_still_gives_right_results() {
    // 2 MiB matrix, 1 MiB device memory limit: tiles must be evicted (written back first).
    let n = 512;
    let rt = with_null(1, Some(1 << 20));
    let m = rt.register_matrix((0..n * n).map(|x| x as f64).collect::<Vec<f64>>(), n, n, n).unwrap();
    let tiles = m.partition(Filter::MatrixTiles { px: 4, py: 4 }).unwrap();
    let dev_only = Codelet::builder("scale-dev")
        .null(|ctx| {
            let f: f64 = ctx.arg();
            let mut m = ctx.buffer(0).matrix_mut::<f64>();
            for j in 0..m.ny {
                m.col_mut(j).iter_mut().for_each(|x| *x *= f);
            }
            Ok(())
        })
        .build();
    for round in 0..3 {
        for t in &tiles {
            rt.submit(TaskBuilder::new(&dev_only).access(t, AccessMode::RW).arg(2.0f64 + round as f64)).unwrap();
        }
    }
    rt.wait_for_all().unwrap();
    let node = &rt.memory_nodes()[1];
    assert!(node.evictions() > 0, "no eviction happened");
    assert!(node.used() <= 1 << 20, "device used {} bytes over its limit", node.used());
    drop(tiles);
    let out = m.into_vec::<f64>().unwrap();
    assert!(out.iter().enumerate().all(|(i, &x)| x == i as f64 * 24.0));
}

#[test]
fn a_task_needing_more_than_the_device_memory_fails_clearly() {
    let rt = with_null(1, Some(1024));
    let v = rt.register_vector(vec![0u8; 4096]).unwrap();
    let dev = Codelet::builder("dev").null(|_| Ok(())).build();
    let e = rt.submit(TaskBuilder::new(&dev).access(&v, AccessMode::RW)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("out of memory on memory node 1"), "{e}");
    assert_eq!(v.into_vec::<u8>().unwrap(), vec![0u8; 4096]);
}

#[test]
fn tiles_of_tiles_and_the_parent_are_ordered() {
    let rt = with_null(1, None);
    let n = 16;
    let m = rt.register_matrix(vec![1.0f64; n * n], n, n, n).unwrap();
    let cl = scale_cl();
    // Whole matrix ×2, then each of 2 column blocks ×3, then each 2×2 tile of block 0 ×5,
    // then the whole matrix ×7 again: every element's factor says whether the order held.
    rt.submit(TaskBuilder::new(&cl).access(&m, AccessMode::RW).arg(2.0f64)).unwrap();
    let cols = m.partition(Filter::MatrixCols { parts: 2 }).unwrap();
    for c in &cols {
        rt.submit(TaskBuilder::new(&cl).access(c, AccessMode::RW).arg(3.0f64)).unwrap();
    }
    let tiles = cols[0].partition(Filter::MatrixTiles { px: 2, py: 2 }).unwrap();
    for t in &tiles {
        rt.submit(TaskBuilder::new(&cl).access(t, AccessMode::RW).arg(5.0f64)).unwrap();
    }
    rt.submit(TaskBuilder::new(&cl).access(&m, AccessMode::RW).arg(7.0f64)).unwrap();
    let out = m.read_to_vec::<f64>().unwrap();
    for j in 0..n {
        for i in 0..n {
            let want = if j < n / 2 { 2.0 * 3.0 * 5.0 * 7.0 } else { 2.0 * 3.0 * 7.0 };
            assert_eq!(out[i + j * n], want, "element ({i},{j})");
        }
    }
    cols[0].unpartition().unwrap();
    m.unpartition().unwrap();
    assert!(m.into_vec::<f64>().unwrap().iter().all(|&x| x > 0.0));
}

#[test]
fn interfaces_block_variable_bytes_and_scratch() {
    let rt = with_null(1, None);
    let (nx, ny, nz) = (3, 4, 5);
    let b = rt.register_block((0..(nx * ny * nz) as i32).collect::<Vec<i32>>(), [nx, ny, nz], nx, nx * ny).unwrap();
    let var = rt.register_variable(0i64).unwrap();
    let bytes = rt.register_bytes(b"weft".to_vec()).unwrap();
    let sum = Codelet::builder("sum")
        .cpu_and_null(|ctx| {
            let blk = ctx.buffer(0).block::<i32>();
            let mut s = 0i64;
            for k in 0..blk.dims[2] {
                for j in 0..blk.dims[1] {
                    s += blk.row(j, k).iter().map(|&x| x as i64).sum::<i64>();
                }
            }
            let scratch = ctx.buffer(3).slice_mut::<i32>();
            scratch.fill(7);
            s += ctx.buffer(2).slice::<u8>().len() as i64 + scratch.iter().map(|&x| x as i64).sum::<i64>();
            ctx.buffer(1).set_value(s);
            Ok(())
        })
        .build();
    let tmp = rt.alloc(Shape::Vector { nx: 10, elem: 4 }).unwrap();
    rt.submit(
        TaskBuilder::new(&sum)
            .access(&b, AccessMode::R)
            .access(&var, AccessMode::W)
            .access(&bytes, AccessMode::R)
            .access(&tmp, AccessMode::Scratch),
    )
    .unwrap();
    let n = (nx * ny * nz) as i64;
    assert_eq!(var.acquire(AccessMode::R).unwrap().value::<i64>(), n * (n - 1) / 2 + 4 + 70);
    let slabs = b.partition(Filter::BlockSlabs { parts: 5 }).unwrap();
    assert_eq!(slabs[4].read_to_vec::<i32>().unwrap(), (48..60).collect::<Vec<i32>>());
}

#[test]
fn runtime_allocated_data_and_lookup_by_address() {
    let rt = with_null(1, None);
    let h = rt.alloc(Shape::Vector { nx: 100, elem: 8 }).unwrap();
    let fill = Codelet::builder("fill")
        .cpu_and_null(|ctx| {
            ctx.vector_mut::<u64>(0).iter_mut().enumerate().for_each(|(i, x)| *x = i as u64);
            Ok(())
        })
        .build();
    rt.submit(TaskBuilder::new(&fill).access(&h, AccessMode::W)).unwrap();
    assert_eq!(h.read_to_vec::<u64>().unwrap()[99], 99);
    h.unregister().unwrap();

    let data = vec![5u16; 32];
    let addr = data.as_ptr() as usize;
    let v = rt.register_vector(data).unwrap();
    assert_eq!(rt.lookup(addr), Some(v.clone()));
    assert_eq!(rt.lookup(addr + 10), Some(v.clone()));
    assert_eq!(rt.lookup(addr + 64), None);
    v.unregister().unwrap();
    assert_eq!(rt.lookup(addr), None);
}

#[test]
fn redux_accumulates_per_worker_and_reduces_at_the_next_access() {
    let rt = Runtime::new(Config { ncpu: Some(2), nnull: 1, spin_us: 5, ..Config::default() }).unwrap();
    let acc = rt.register_variable(1000u64).unwrap();
    let init = Codelet::builder("zero")
        .cpu(|ctx| {
            ctx.buffer(0).set_value(0u64);
            Ok(())
        })
        .build();
    let add = Codelet::builder("add")
        .cpu(|ctx| {
            let s = ctx.buffer(1).value::<u64>();
            let d = ctx.buffer(0).value::<u64>();
            ctx.buffer(0).set_value(d + s);
            Ok(())
        })
        .build();
    acc.set_reduction(&init, &add).unwrap();
    let contrib = Codelet::builder("contribute")
        .cpu_and_null(|ctx| {
            let x: u64 = ctx.arg();
            let b = ctx.buffer(0);
            b.set_value(b.value::<u64>() + x);
            Ok(())
        })
        .build();
    for i in 1..=100u64 {
        rt.submit(TaskBuilder::new(&contrib).access(&acc, AccessMode::Redux).arg(i)).unwrap();
    }
    assert_eq!(acc.acquire(AccessMode::R).unwrap().value::<u64>(), 1000 + 5050);
    // A second phase starts from the reduced value.
    for i in 1..=10u64 {
        rt.submit(TaskBuilder::new(&contrib).access(&acc, AccessMode::Redux).arg(i)).unwrap();
    }
    assert_eq!(acc.acquire(AccessMode::R).unwrap().value::<u64>(), 1000 + 5050 + 55);
}

#[test]
fn commute_tasks_run_one_at_a_time_in_any_order() {
    let rt = Runtime::new(Config { ncpu: Some(2), nnull: 1, spin_us: 5, ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![0u64; 1]).unwrap();
    let other = rt.register_vector(vec![0u64; 1]).unwrap();
    let inc = Codelet::builder("inc")
        .cpu_and_null(|ctx| {
            let s = ctx.vector_mut::<u64>(0);
            let old = s[0];
            std::thread::sleep(std::time::Duration::from_micros(50));
            s[0] = old + 1;
            Ok(())
        })
        .build();
    for i in 0..200 {
        let h = if i % 4 == 0 { &other } else { &v };
        rt.submit(TaskBuilder::new(&inc).access(h, AccessMode::Commute)).unwrap();
    }
    // A reader after the commute group sees all of them.
    assert_eq!(v.read_to_vec::<u64>().unwrap(), vec![150]);
    assert_eq!(other.into_vec::<u64>().unwrap(), vec![50]);
}

#[test]
fn acquire_orders_the_application_between_tasks() {
    let rt = with_null(1, None);
    let v = rt.register_vector(vec![0u32; 4]).unwrap();
    let add = Codelet::builder("add1")
        .cpu_and_null(|ctx| {
            ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
            Ok(())
        })
        .build();
    rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW)).unwrap();
    {
        let g = v.acquire(AccessMode::RW).unwrap();
        assert_eq!(g.slice::<u32>(), &[1, 1, 1, 1]);
        // A task submitted now waits for the guard.
        let t = rt.submit(TaskBuilder::new(&add).access(&v, AccessMode::RW)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(!t.is_done());
        drop(g);
        t.wait().unwrap();
    }
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![2; 4]);
}

#[test]
fn dropping_handles_and_finished_tasks_frees_their_replicas() {
    let rt = with_null(1, None);
    let dev = Codelet::builder("touch")
        .null(|ctx| {
            ctx.vector_mut::<u8>(0)[0] = 1;
            Ok(())
        })
        .build();
    for _ in 0..10 {
        let h = rt.alloc(Shape::Vector { nx: 4096, elem: 1 }).unwrap();
        rt.submit(TaskBuilder::new(&dev).access(&h, AccessMode::RW)).unwrap();
        rt.submit(TaskBuilder::new(&dev).access(&h, AccessMode::RW)).unwrap();
        // Dropped without unregister: once its tasks finish, nothing may keep it alive.
    }
    rt.wait_for_all().unwrap();
    // The worker drops its reference to the last task just after completing it.
    let t = std::time::Instant::now();
    while rt.memory_nodes()[1].resident_count() > 0 && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(rt.memory_nodes()[1].resident_count(), 0);
}

/// Adds 1 to each u32 of its buffer, on null devices only.
fn inc_on_null() -> Arc<Codelet> {
    Codelet::builder("inc-dev")
        .null(|ctx| {
            ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
            Ok(())
        })
        .build()
}

/// `detach_home` gives registered memory back: the newest data (written on a device) lands
/// there, and later tasks, evictions and unregistration never touch it again; called from
/// the completion callback of the last task, the data is home before that task's waiters
/// wake.
#[test]
fn a_detached_home_gets_the_newest_data_and_is_never_touched_again() {
    let inc_dev = inc_on_null();
    let shape = Shape::Vector { nx: 64, elem: 4 };
    for in_callback in [false, true] {
        let rt = with_null(1, None);
        let mut mem = vec![1u32; 64];
        // SAFETY: `mem` outlives every use the runtime makes of it (checked below: none after
        // detach_home) and holds 64 u32.
        let h = unsafe { rt.register_raw(mem.as_mut_ptr().cast(), shape, shape.packed()) }.unwrap();
        let mut b = TaskBuilder::new(&inc_dev).access(&h, AccessMode::RW);
        let seen = Arc::new(std::sync::Mutex::new(None));
        if in_callback {
            let (h2, seen2, addr) = (h.clone(), seen.clone(), mem.as_ptr() as usize);
            b = b.callback(move |r| {
                r.unwrap();
                h2.detach_home(true).unwrap();
                // SAFETY: `mem` is alive until the test waits for this task.
                *seen2.lock().unwrap() = Some(unsafe { *(addr as *const u32) });
            });
        }
        rt.submit(b).unwrap().wait().unwrap();
        if !in_callback {
            h.detach_home(true).unwrap();
        }
        assert_eq!(mem, vec![2u32; 64], "the newest data is home after detach_home");
        if in_callback {
            assert_eq!(*seen.lock().unwrap(), Some(2), "home written before the callback returned");
        }
        // The program may free its memory now: scribble over it; Weft must keep its own copy
        // and never write here again.
        mem.iter_mut().for_each(|x| *x = 0xdead);
        rt.submit(TaskBuilder::new(&inc_dev).access(&h, AccessMode::RW)).unwrap();
        rt.wait_for_all().unwrap();
        assert_eq!(h.read_to_vec::<u32>().unwrap(), vec![3u32; 64], "the data moved to Weft's memory");
        h.detach_home(true).unwrap();
        h.unregister().unwrap();
        assert_eq!(mem, vec![0xdead; 64], "registered memory touched after detach_home");
    }
}

/// `detach_home(false)` neither writes nor reads the registered memory (its owner may have
/// freed it): the data newest on a device is discarded, and later tasks and unregistration
/// use the runtime's memory.
#[test]
fn a_home_detached_without_write_back_is_never_touched() {
    let inc_dev = inc_on_null();
    let shape = Shape::Vector { nx: 64, elem: 4 };
    let rt = with_null(1, None);
    let mut mem = vec![1u32; 64];
    // SAFETY: `mem` outlives every use the runtime makes of it (none after detach_home).
    let h = unsafe { rt.register_raw(mem.as_mut_ptr().cast(), shape, shape.packed()) }.unwrap();
    rt.submit(TaskBuilder::new(&inc_dev).access(&h, AccessMode::RW)).unwrap().wait().unwrap();
    // The program "freed" its memory before the last release.
    mem.iter_mut().for_each(|x| *x = 0xdead);
    h.detach_home(false).unwrap();
    assert_eq!(mem, vec![0xdead; 64], "detach_home(false) wrote the registered memory");
    let w = Codelet::builder("set-7")
        .null(|ctx| {
            ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x = 7);
            Ok(())
        })
        .build();
    rt.submit(TaskBuilder::new(&w).access(&h, AccessMode::W)).unwrap();
    rt.wait_for_all().unwrap();
    assert_eq!(h.read_to_vec::<u32>().unwrap(), vec![7u32; 64]);
    h.unregister().unwrap();
    assert_eq!(mem, vec![0xdead; 64], "registered memory touched after detach_home(false)");
}

/// `pack_into` skips the padding between a strided matrix's columns and `unpack_from`
/// writes the columns back without touching it.
#[test]
fn pack_and_unpack_follow_the_strides() {
    let rt = Runtime::new(Config { ncpu: Some(1), ..Config::default() }).unwrap();
    // 3×2 matrix of u16 with ld 4: columns [1,2,3] and [5,6,7], padding 100 and 200.
    let h = rt.register_matrix(vec![1u16, 2, 3, 100, 5, 6, 7, 200], 3, 2, 4).unwrap();
    let mut packed = vec![0u8; 12];
    h.acquire(AccessMode::R).unwrap().pack_into(&mut packed);
    let words: Vec<u16> = packed.chunks(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect();
    assert_eq!(words, [1, 2, 3, 5, 6, 7]);
    let new: Vec<u8> = [9u16, 8, 7, 6, 5, 4].iter().flat_map(|w| w.to_ne_bytes()).collect();
    h.acquire(AccessMode::W).unwrap().unpack_from(&new);
    assert_eq!(h.into_vec::<u16>().unwrap(), [9, 8, 7, 100, 6, 5, 4, 200]);
}

/// An asynchronous acquisition is ordered after the tasks submitted before it and before
/// those submitted after: its callback sees the first task's write, and the second task
/// waits until the guard taken on another thread is dropped.
#[test]
fn an_asynchronous_acquisition_orders_like_a_task() {
    let rt = Runtime::new(Config { ncpu: Some(2), ..Config::default() }).unwrap();
    let h = rt.register_variable(0u64).unwrap();
    let set = |v: u64| {
        Codelet::builder("set")
            .cpu(move |ctx| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                ctx.buffer(0).set_value(ctx.buffer(0).value::<u64>() * 10 + v);
                Ok(())
            })
            .build()
    };
    let (first, second) = (set(1), set(2));
    rt.submit(TaskBuilder::new(&first).access(&h, AccessMode::RW)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<PendingAcquire>();
    h.acquire_async(AccessMode::RW, move |p| tx.send(p).unwrap()).unwrap();
    let t2 = rt.submit(TaskBuilder::new(&second).access(&h, AccessMode::RW)).unwrap();
    let pending = rx.recv().unwrap();
    let g = pending.get().unwrap();
    assert_eq!(g.value::<u64>(), 1, "the acquisition ran before the task submitted before it");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(!t2.is_done(), "the task submitted after the acquisition ran while it was held");
    g.set_value(5u64);
    drop(g);
    t2.wait().unwrap();
    assert_eq!(h.read_to_vec::<u64>().unwrap(), [52]);
    // Dropped without `get`, it releases the data too.
    h.acquire_async(AccessMode::R, drop).unwrap();
    rt.submit(TaskBuilder::new(&first).access(&h, AccessMode::RW)).unwrap().wait().unwrap();
    assert_eq!(h.read_to_vec::<u64>().unwrap(), [521]);
}
