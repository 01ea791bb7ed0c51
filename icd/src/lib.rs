//! Weft's OpenCL implementation (DESIGN.md "The ICD"): every enqueued command a core task,
//! every `cl_mem` a core data handle. Linked into `libweft.so` under prefixed names only.
