use weft_core::*;

#[test]
fn scale_a_vector() {
    let rt = Runtime::new(Config { ncpu: Some(2), ..Config::default() }).unwrap();
    let v = rt.register_vector(vec![1.0f32; 1000]).unwrap();
    let scal = Codelet::builder("scal")
        .cpu(|ctx| {
            let f: f32 = ctx.arg();
            ctx.vector_mut::<f32>(0).iter_mut().for_each(|x| *x *= f);
            Ok(())
        })
        .nbuffers(1)
        .build();
    for _ in 0..10 {
        rt.submit(TaskBuilder::new(&scal).access(&v, AccessMode::RW).arg(2.0f32)).unwrap();
    }
    let out = v.into_vec::<f32>().unwrap();
    assert!(out.iter().all(|&x| x == 1024.0));
}
