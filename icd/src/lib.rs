//! Weft's OpenCL implementation (DESIGN.md "The ICD"): every enqueued command a core task,
//! every `cl_mem` a core data handle, every `cl_event` a task's completion. Linked into
//! `libweft.so`, which exports only the two prefixed entry points of [`api::icd`]
//! (`weft_clIcdGetPlatformIDsKHR`, `weft_clGetExtensionFunctionAddress`); everything else
//! is reached through the dispatch table. The loader opens `libweft_icd.so` (crate
//! `icd/shim`), which forwards to those two.
//!
//! **Owns**: the OpenCL API surface and its object model ([`api`]).
//! **Does not own**: scheduling, coherence, devices (core and weft-vendors).

pub mod api;

pub use api::icd::{weft_clGetExtensionFunctionAddress, weft_clIcdGetPlatformIDsKHR};
