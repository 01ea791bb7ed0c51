//! libweft.so: the one shared library of the process (DESIGN.md "Packaging"): core's C API,
//! the OpenMP runtime's GOMP/omp symbols and the ICD's prefixed OpenCL entry points.
pub use weft_core::*;
// Linked for their exported symbols.
pub use weft_icd;
pub use weft_omp;
