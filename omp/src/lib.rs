//! Weft's OpenMP runtime: the GNU libgomp ABI (`GOMP_*`, `omp_*`) on Weft's CPU workers
//! (DESIGN.md "The OpenMP runtime"). Linked into `libweft.so`, which exports these symbols.
