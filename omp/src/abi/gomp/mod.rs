//! Decoders of the GNU libgomp ABI's data layouts: the entry points in `abi/` call these to
//! turn what GCC passes into the runtime's Rust types (shared/STYLE.md §2; the kmp ABI's
//! counterparts are in `abi/kmp/`). So far: the depend array (`depend.rs`), the task and
//! taskloop flags (`flags.rs`), a task's data with its copy function, alignment, taskloop
//! bounds and detach event handle, and the storage a task keeps its copy in (`data.rs`,
//! which the kmp layer's task blocks use too), and the task reductions' descriptor chains
//! (`reduction.rs`).

pub mod data;
pub mod depend;
pub mod flags;
pub mod reduction;
