//! libweft.so: the one shared library of the process (DESIGN.md "Packaging").
pub use weft_core::*;
