#!/usr/bin/env bash
# Install what Weft needs on a Debian machine that has Rust: system packages, then crates.
# Idempotent: installs only what is missing. Run as root or with sudo available.
# Usage: scripts/setup.sh [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."

# OpenCL (issue 3): PoCL as the test device, the ocl-icd loader and headers (the
# dispatch-table layout test compiles against CL/cl_icd.h), clinfo to look around.
# The ICD's tests (issue 4) run clinfo and StarPU's SOCL example programs (starpu-examples)
# through the loader; binutils' nm checks exported symbols.
# The clang-built OpenMP tests (issue 34, tests/omp_clang.rs) compile with clang 14 and
# LLVM's omp.h (libomp-14-dev; linking needs its libomp.so, which the tests then replace).
# weft-mpi (issue 36, mpi/) builds on Open MPI (rsmpi finds it through mpicc; its bindings
# are generated with clang 14's libclang) and its tests run mpirun.
PKGS=(pkg-config gcc binutils clang-14 libomp-14-dev libhwloc-dev libudev-dev pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo starpu-examples libopenmpi-dev openmpi-bin)
# `--bench`: also the benchmarks' peers that tests do not need (LLVM's libomp, beside
# the system's libgomp, for bench/omp_tasks; StarPU's SOCL for bench/cl; OpenBLAS for
# bench/cholesky: its dpotrf, and the BLAS under StarPU's cholesky_implicit; ScaLAPACK on
# Open MPI for bench/mpi: its pdpotrf, built with mpicc, beside StarPU-MPI's mpi_cholesky
# from starpu-examples).
[ "${1:-}" = --bench ] && PKGS+=(libomp-dev libsocl-1.3-0 libopenblas-dev libscalapack-openmpi-dev valgrind)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >/dev/null
fi

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2; exit 1; }
cargo fetch -q
