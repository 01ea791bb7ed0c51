#!/usr/bin/env bash
# Set up, build, and run Weft's main demo: Weft's own tiled matrix multiply on the CPU cores
# and OpenCL devices, then an unmodified OpenCL program through the system's ICD loader (and
# the time of independent kernels on Weft's unified device against one PoCL device), and an
# unmodified OpenMP program built by gcc and by clang, each showing which worker ran how
# many tasks. Step 3
# (CPU and a simulated device) also writes an execution trace, sums it up with
# `weft trace summary` and draws it as a Gantt chart (docs/cli.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The libraries (libweft.so, libweft_icd.so), the `weft` command and the examples:
# `--examples` alone builds no library target of the other packages.
cargo build -q --release -p weft -p weft-icd-shim -p weft-cli
cargo build -q --release --workspace --examples
# Where cargo put them: $CARGO_TARGET_DIR when set (as cargo does), else ./target.
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
demo=$target/demo
mkdir -p "$demo/vendors" "$demo/omp"
echo "== 1. Every CPU core (no devices) =="
WEFT_NOPENCL=0 WEFT_NCUDA=0 cargo run -q --release --example demo
echo
echo "== 2. The same with the two OpenCL devices PoCL offers (POCL_DEVICES='basic basic'), as Weft finds them =="
echo "   (PoCL computes on the CPU workers' cores: by default its devices take only kernels that have"
echo "   no CPU implementation, such as an OpenCL program's, and every core stays a CPU worker)"
POCL_DEVICES="basic basic" WEFT_NCUDA=0 cargo run -q --release --example demo -- 384 4
echo
echo "== 2b. Asked to (WEFT_OPENCL_ON_CPUS=1): one CPU worker beside one PoCL device, each on a core =="
echo "   (policy dmdas: each tile goes where the performance models expect it to finish first; the"
echo "   first run measures both kinds of worker, kept in \$WEFT_HOME/models for the next runs)"
for run in first second; do
    echo "-- $run run"
    POCL_DEVICES=basic WEFT_OPENCL_ON_CPUS=1 WEFT_NCPU=1 WEFT_NCUDA=0 cargo run -q --release --example demo -- 384 4
done
echo
echo "== 3. With a simulated device (WEFT_NNULL=1): tiles move between separate memory nodes =="
WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_NNULL=1 WEFT_TRACE="$demo/trace-3.json" cargo run -q --release --example demo -- 512 4
echo "-- where the time went (WEFT_TRACE=$demo/trace-3.json, which https://ui.perfetto.dev opens)"
"$target/release/weft" trace summary "$demo/trace-3.json"
"$target/release/weft" trace gantt "$demo/trace-3.json" -o "$demo/gantt-3.svg" >/dev/null
echo "   Gantt chart (a row per worker and per link): $demo/gantt-3.svg"
echo
echo "== 4. An unmodified OpenCL program (examples/opencl/saxpy_tiles.c) through the system's ICD loader =="
echo "   (OCL_ICD_VENDORS names only weft.icd: the program sees the Weft platform, takes its first"
echo "   device, the unified one, and Weft places its 32 kernels on the two PoCL devices underneath)"
gcc -O2 examples/opencl/saxpy_tiles.c -lOpenCL -o "$demo/saxpy_tiles"
echo "$target/release/libweft_icd.so" >"$demo/vendors/weft.icd"
POCL_DEVICES="basic basic" WEFT_NCUDA=0 WEFT_STATS=1 OCL_ICD_VENDORS="$demo/vendors" "$demo/saxpy_tiles" Weft
echo
echo "== 4b. Do both devices compute at once? 16 independent compute-bound kernels (bench/cl/overlap.c)"
echo "   on one PoCL device alone (one in-order queue), then on Weft's unified device (one out-of-order queue);"
echo "   near 2x on an idle machine of two cores or more, less when other programs use the cores =="
gcc -O2 -pthread bench/cl/overlap.c -lOpenCL -o "$demo/overlap"
pocl_icd=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -n 1 || true)
one=$(POCL_DEVICES=basic OCL_ICD_VENDORS=$pocl_icd "$demo/overlap" Portable one | sed -n 's/.*seconds=\([0-9.]*\) check=ok$/\1/p')
both=$(POCL_DEVICES="basic basic" WEFT_NCUDA=0 OCL_ICD_VENDORS="$demo/vendors" "$demo/overlap" Weft ooo | sed -n 's/.*seconds=\([0-9.]*\) check=ok$/\1/p')
if [ -z "$one" ] || [ -z "$both" ]; then
    echo "overlap: a run failed or computed wrong results" >&2
    exit 1
fi
echo "   one PoCL device: $one s; Weft's unified device over two: $both s ($(awk -v a="$one" -v b="$both" 'BEGIN { printf "%.2f", a / b }')x)"
echo
echo "== 5. An unmodified OpenMP program (examples/omp/hello.c, gcc -fopenmp) with libweft.so as libgomp.so.1 =="
echo "   (team threads are Weft's CPU workers, plus OpenMP threads of its own past the free workers;"
echo "   its tasks with depend clauses are ordered by Weft's data handles and run on the team's threads)"
gcc -O2 -fopenmp examples/omp/hello.c -o "$demo/omp_hello"
ln -sf "$target/release/libweft.so" "$demo/omp/libgomp.so.1"
OMP_NUM_THREADS=4 WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_STATS=1 LD_LIBRARY_PATH="$demo/omp" "$demo/omp_hello"
echo
echo "== 6. The same program built by clang -fopenmp (LLVM libomp's ABI) with libweft.so as libomp.so.5 =="
clang=$(command -v clang-14 || command -v clang)
"$clang" -O2 -fopenmp examples/omp/hello.c -o "$demo/omp_hello_clang"
ln -sf "$target/release/libweft.so" "$demo/omp/libomp.so.5"
OMP_NUM_THREADS=4 WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_STATS=1 LD_LIBRARY_PATH="$demo/omp" "$demo/omp_hello_clang"
