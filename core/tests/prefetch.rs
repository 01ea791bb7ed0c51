//! Prefetch under the `dm` family is bounded by the device's free memory: it never evicts
//! anything to make room, and what does not fit waits for the task's own acquisition.

use std::time::{Duration, Instant};
use weft_core::*;

mod common;
use common::Gate;

const LEN: usize = 64 * 1024; // u32s: 256 KiB a vector
const LIMIT: usize = 1 << 20; // the device's memory: four vectors

#[test]
fn prefetch_fills_a_device_up_to_its_limit_and_evicts_nothing() {
    for sched in [PolicyKind::Dm, PolicyKind::Dmda, PolicyKind::Dmdas] {
        let rt =
            Runtime::new(Config { ncpu: Some(1), nnull: 1, sched, null_mem_limit: Some(LIMIT), spin_us: 5, ..Config::default() }).unwrap();
        // The device's driver is kept busy while eight tasks only it can run are placed
        // there: their inputs (2 MiB) are prefetched as far as its memory allows.
        let gate = Gate::new("blocker", Arch::Null);
        let sum = Codelet::builder("sum")
            .null(|ctx| {
                let v = ctx.vector::<u32>(0);
                let first = v[0];
                if v.iter().all(|&x| x == first) { Ok(()) } else { Err("a vector arrived torn".into()) }
            })
            .build();
        let vs: Vec<DataHandle> = (0..8u32).map(|i| rt.register_vector(vec![i; LEN]).unwrap()).collect();
        gate.block(&rt);
        let tasks: Vec<TaskHandle> = vs.iter().map(|v| rt.submit(TaskBuilder::new(&sum).access(v, AccessMode::R)).unwrap()).collect();
        let device = rt.memory_nodes()[1].clone();
        let bytes = LEN * 4;
        // Wait for the prefetch to fill the device (or give up after 10 s), then give it a
        // moment more to overstep if it would.
        let deadline = Instant::now() + Duration::from_secs(10);
        while device.used() + bytes <= LIMIT && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        let resident = vs.iter().filter(|v| v.replica_states()[1] != ReplicaState::Invalid).count();
        let (used, evictions) = (device.used(), device.evictions());
        gate.open();
        for t in tasks {
            t.wait().unwrap();
        }
        assert_eq!(evictions, 0, "{sched:?}: a prefetch evicted to make room");
        assert!(used <= LIMIT, "{sched:?}: {used} bytes on a device of {LIMIT}");
        assert_eq!(resident, LIMIT / bytes, "{sched:?}: {resident} of 8 inputs prefetched; room for {}", LIMIT / bytes);
        // The rest came with their tasks' own acquisitions, evicting what was done with.
        assert!(device.bytes_from(0) >= 8 * bytes as u64, "{sched:?}: {} bytes reached the device", device.bytes_from(0));
    }
}
