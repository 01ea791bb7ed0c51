//! libweft.so defines libgomp's version nodes (DESIGN.md "The OpenMP runtime"), so that it
//! can stand in for libgomp.so.1: this script hands the linker omp/libgomp.map, which defines
//! the 19 nodes (OMP_1.0 … GOMP_5.1) with no symbols in them, plus LLVM libomp's one node,
//! `VERSION` (clang-built programs import `__kmpc_*@VERSION`: libomp.so.5 stand-in). Every symbol keeps the base
//! version, and the dynamic linker binds a reference such as `GOMP_parallel@GOMP_4.0` to a
//! base-version definition when the library defines that node (no "no version information"
//! warning). rustc passes its own anonymous version script (the exported-symbol list); LLD
//! (rustc's default linker on x86_64 Linux) accepts the pair, GNU ld would refuse it.
//! (`.symver` through `global_asm!` does not work: the asm and the function land in
//! different objects.)
fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=omp/libgomp.map");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={root}/omp/libgomp.map");
}
