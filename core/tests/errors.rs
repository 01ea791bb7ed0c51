//! Bad input gets a clear error and loses nothing; nothing crashes or hangs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use weft_core::*;

fn rt(ncpu: usize) -> Runtime {
    Runtime::new(Config { ncpu: Some(ncpu), spin_us: 5, ..Config::default() }).unwrap()
}

fn nop() -> Arc<Codelet> {
    Codelet::builder("nop").cpu(|_| Ok(())).build()
}

#[test]
fn zero_size_and_null_registrations_are_refused() {
    let rt = rt(1);
    let e = rt.register_vector(Vec::<f32>::new()).unwrap_err();
    assert!(matches!(e, Error::InvalidData(_)), "{e}");
    assert!(e.to_string().contains("zero-size"), "{e}");
    let shape = Shape::Vector { nx: 4, elem: 4 };
    // SAFETY: the pointer is null and must be refused before any use.
    let e = unsafe { rt.register_raw(std::ptr::null_mut(), shape, shape.packed()) }.unwrap_err();
    assert!(e.to_string().contains("null"), "{e}");
    let e = rt.register_matrix(vec![0u8; 10], 4, 4, 4).unwrap_err();
    assert!(e.to_string().contains("does not fit"), "{e}");
    let e = rt.register_matrix(vec![0u8; 64], 4, 4, 2).unwrap_err();
    assert!(e.to_string().contains("leading dimension"), "{e}");
}

#[test]
fn more_buffers_than_declared_is_an_error_and_runs_nothing() {
    let rt = rt(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let cl = Codelet::builder("one")
        .cpu(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .nbuffers(1)
        .build();
    let a = rt.register_vector(vec![1u8; 4]).unwrap();
    let b = rt.register_vector(vec![2u8; 4]).unwrap();
    let e = rt.submit(TaskBuilder::new(&cl).access(&a, AccessMode::R).access(&b, AccessMode::R)).unwrap_err();
    assert_eq!(e, Error::BufferCount { codelet: "one".into(), declared: 1, given: 2 });
    rt.wait_for_all().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    // The handles are untouched and still usable.
    rt.submit(TaskBuilder::new(&cl).access(&a, AccessMode::RW)).unwrap();
    rt.wait_for_all().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(b.into_vec::<u8>().unwrap(), vec![2u8; 4]);
}

#[test]
fn codelet_without_implementation_for_present_workers() {
    let rt = rt(1);
    let only_null = Codelet::builder("gpu-only").null(|_| Ok(())).build();
    let e = rt.submit(TaskBuilder::new(&only_null)).unwrap_err();
    assert_eq!(e, Error::NoImplementation("gpu-only".into()));
    let none = Codelet::builder("empty").build();
    assert!(matches!(rt.submit(TaskBuilder::new(&none)), Err(Error::NoImplementation(_))));
}

#[test]
fn unregister_waits_for_the_tasks_that_use_the_handle() {
    let rt = rt(2);
    let v = rt.register_vector(vec![0u32; 16]).unwrap();
    let slow = Codelet::builder("slow-inc")
        .cpu(|ctx| {
            std::thread::sleep(Duration::from_millis(20));
            ctx.vector_mut::<u32>(0).iter_mut().for_each(|x| *x += 1);
            Ok(())
        })
        .build();
    for _ in 0..5 {
        rt.submit(TaskBuilder::new(&slow).access(&v, AccessMode::RW)).unwrap();
    }
    // Documented: unregister waits, then hands back the newest data.
    assert_eq!(v.into_vec::<u32>().unwrap(), vec![5u32; 16]);
}

#[test]
fn unregister_or_wait_from_inside_a_task_fails_instead_of_deadlocking() {
    let rt = Arc::new(rt(2));
    let v = rt.register_vector(vec![0u8; 4]).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (v2, s2, rt2) = (v.clone(), seen.clone(), Arc::downgrade(&rt));
    let cl = Codelet::builder("bad")
        .cpu(move |_| {
            s2.lock().unwrap().push(v2.clone().unregister().unwrap_err());
            if let Some(rt) = rt2.upgrade() {
                s2.lock().unwrap().push(rt.wait_for_all().unwrap_err());
            }
            Ok(())
        })
        .build();
    rt.submit(TaskBuilder::new(&cl)).unwrap().wait().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![Error::WouldDeadlock, Error::WouldDeadlock]);
    v.unregister().unwrap();
}

#[test]
fn tag_cycle_is_refused_and_waiting_reports_the_stall() {
    let rt = rt(1);
    let cl = nop();
    // A waits for tag 2 (no task yet); B carries tag 2 and waits for tag 1 (A's): a cycle.
    let a = rt.submit(TaskBuilder::new(&cl).tag(1).after_tag(2)).unwrap();
    let e = rt.submit(TaskBuilder::new(&cl).tag(2).after_tag(1)).unwrap_err();
    assert_eq!(e, Error::DependencyCycle(2));
    // A task that waits for its own tag is a cycle too.
    assert_eq!(rt.submit(TaskBuilder::new(&cl).tag(9).after_tag(9)).unwrap_err(), Error::DependencyCycle(9));
    // A can never run: waiting says so instead of hanging.
    assert_eq!(rt.wait_for_all().unwrap_err(), Error::Stalled(vec![2]));
    assert_eq!(a.wait().unwrap_err(), Error::Stalled(vec![2]));
    // The application may still release the tag.
    rt.tag_notify(2).unwrap();
    a.wait().unwrap();
    rt.wait_for_all().unwrap();
}

#[test]
fn data_cycles_through_tags_are_refused() {
    let rt = rt(1);
    let v = rt.register_vector(vec![0u8; 4]).unwrap();
    let cl = nop();
    // A writes v after tag 7; B carrying tag 7 reads v, so B would wait for A: a cycle.
    rt.submit(TaskBuilder::new(&cl).access(&v, AccessMode::W).after_tag(7)).unwrap();
    let e = rt.submit(TaskBuilder::new(&cl).access(&v, AccessMode::R).tag(7)).unwrap_err();
    assert_eq!(e, Error::DependencyCycle(7));
    rt.tag_notify(7).unwrap();
    rt.wait_for_all().unwrap();
    v.unregister().unwrap();
}

#[test]
fn a_failing_task_cancels_its_dependents_with_its_error() {
    let rt = rt(2);
    let v = rt.register_vector(vec![1i64; 8]).unwrap();
    let fail = Codelet::builder("fails").cpu(|_| Err("no luck".into())).build();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let count = Codelet::builder("count")
        .cpu(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .build();
    // The gate makes sure the dependents are registered before the failure.
    let a = rt.submit(TaskBuilder::new(&fail).access(&v, AccessMode::RW).after_tag(77)).unwrap();
    let b = rt.submit(TaskBuilder::new(&count).access(&v, AccessMode::R)).unwrap();
    let c = rt.submit(TaskBuilder::new(&count).after(&b)).unwrap();
    rt.tag_notify(77).unwrap();
    let e = a.wait().unwrap_err();
    assert!(e.to_string().contains("no luck"), "{e}");
    let e = b.wait().unwrap_err();
    assert!(matches!(&e, Error::Task(TaskError::Cancelled(cause)) if cause.to_string().contains("no luck")), "{e}");
    assert!(matches!(c.wait().unwrap_err(), Error::Task(TaskError::Cancelled(_))));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    // wait_for_all reports them too, once: one failure, two cancelled, the failure first.
    match rt.wait_for_all().unwrap_err() {
        Error::TasksFailed { failed: 1, cancelled: 2, first: TaskError::Failed { task, msg } } => {
            assert_eq!((task.as_str(), msg.as_str()), ("fails", "no luck"));
        }
        e => panic!("unexpected: {e}"),
    }
    rt.wait_for_all().unwrap();
    // Independent work still runs, and so do new tasks on the handle: the failure was seen.
    rt.submit(TaskBuilder::new(&count)).unwrap().wait().unwrap();
    rt.submit(TaskBuilder::new(&count).access(&v, AccessMode::R)).unwrap().wait().unwrap();
    rt.submit(TaskBuilder::new(&count).after(&a)).unwrap().wait().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    assert_eq!(v.into_vec::<i64>().unwrap(), vec![1i64; 8]);
}

#[test]
fn a_panicking_task_fails_cleanly() {
    let rt = rt(1);
    let p = Codelet::builder("panics").cpu(|_| panic!("kaboom")).build();
    let e = rt.submit(TaskBuilder::new(&p)).unwrap().wait().unwrap_err();
    assert!(e.to_string().contains("kaboom"), "{e}");
    rt.submit(TaskBuilder::new(&nop())).unwrap().wait().unwrap();
}

#[test]
fn redux_without_methods_and_unsupported_modes() {
    let rt = rt(1);
    let v = rt.register_vector(vec![0u64; 4]).unwrap();
    let e = rt.submit(TaskBuilder::new(&nop()).access(&v, AccessMode::Redux)).unwrap_err();
    assert_eq!(e, Error::NoReductionMethods(v.id()));
    assert!(matches!(v.acquire(AccessMode::Commute), Err(Error::Unsupported(_))));
    let parts = v.partition(Filter::VectorBlock { parts: 2 }).unwrap();
    assert!(matches!(rt.submit(TaskBuilder::new(&nop()).access(&parts[0], AccessMode::Commute)), Err(Error::Unsupported(_))));
    assert!(matches!(v.partition(Filter::VectorBlock { parts: 2 }), Err(Error::InvalidData(_))));
    assert!(matches!(v.partition(Filter::MatrixTiles { px: 2, py: 2 }), Err(Error::InvalidData(_))));
    v.unpartition().unwrap();
    assert!(matches!(rt.submit(TaskBuilder::new(&nop()).access(&parts[0], AccessMode::R)), Err(Error::Unregistered(_))));
    assert!(matches!(parts[0].clone().unregister(), Err(Error::Unsupported(_))));
}

#[test]
fn handles_of_another_runtime_and_bad_config_are_refused() {
    let a = rt(1);
    let b = rt(1);
    let v = b.register_vector(vec![0u8; 4]).unwrap();
    assert!(matches!(a.submit(TaskBuilder::new(&nop()).access(&v, AccessMode::R)), Err(Error::InvalidData(_))));
    assert!(matches!(Runtime::new(Config { ncpu: Some(0), ..Config::default() }), Err(Error::Config(_))));
}
