//! Decoders of the GNU libgomp ABI's data layouts: the entry points in `abi/` call these to
//! turn what GCC passes into the runtime's Rust types (shared/STYLE.md §2; the kmp ABI's
//! counterparts are in `abi/kmp/`). So far: the depend array (`depend.rs`), the task and
//! taskloop flags (`flags.rs`) and the task reductions' descriptor chains (`reduction.rs`).

pub mod depend;
pub mod flags;
pub mod reduction;
