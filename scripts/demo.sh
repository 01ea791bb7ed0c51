#!/usr/bin/env bash
# Set up, build, and run Weft's main demo: a tiled matrix multiply checked against a plain
# loop, showing which worker ran how many tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build -q --release --workspace --examples
echo "== 1. Every CPU core (no devices) =="
WEFT_NOPENCL=0 WEFT_NCUDA=0 cargo run -q --release --example demo
echo
echo "== 2. CPU cores and two OpenCL devices (PoCL, POCL_DEVICES='basic basic'), one OpenCL C kernel =="
echo "   (one CPU worker fewer per device driver; no performance model yet, so placement is greedy;
   the first run pays PoCL's kernel compile, later runs load it from the disk cache)"
POCL_DEVICES="basic basic" WEFT_NCUDA=0 cargo run -q --release --example demo -- 384 4
echo
echo "== 3. With a simulated device (WEFT_NNULL=1): tiles move between separate memory nodes =="
WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_NNULL=1 cargo run -q --release --example demo -- 512 4
