#!/usr/bin/env bash
# EPCC-style overheads at 2 threads, side by side in one run: GNU libgomp, LLVM libomp
# (LD_PRELOAD of Debian's libomp5) and Weft (libweft.so standing in for libgomp.so.1).
#   bench/omp/run.sh [INNER]        env: ROUNDS (3: runtimes interleaved, best median kept),
#                                        OMP_NUM_THREADS (2; more than the processors
#                                        measures an oversubscribed machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build -q --release -p weft
WORK="$TARGET/omp-bench"; mkdir -p "$WORK/standin"
ln -sf "$TARGET/release/libweft.so" "$WORK/standin/libgomp.so.1"
gcc -fopenmp -O2 bench/omp/syncbench.c -o "$WORK/syncbench"
LIBOMP=${LIBOMP:-/usr/lib/x86_64-linux-gnu/libomp.so.5}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} WEFT_NOPENCL=0 WEFT_NCUDA=0
declare -A best
for round in $(seq "${ROUNDS:-3}"); do
  for rt in libgomp libomp weft; do
    case $rt in
      libgomp) out=$("$WORK/syncbench" "$@");;
      libomp) out=$(LD_PRELOAD=$LIBOMP "$WORK/syncbench" "$@");;
      weft) out=$(LD_LIBRARY_PATH="$WORK/standin" "$WORK/syncbench" "$@");;
    esac
    while read -r name v; do
      k="$rt:$name"
      if [ -z "${best[$k]:-}" ] || awk -v a="$v" -v b="${best[$k]}" 'BEGIN{exit !(a<b)}'; then best[$k]=$v; fi
    done <<< "$out"
  done
done
printf '%-13s %10s %10s %10s %8s\n' construct libgomp libomp weft 'ratio'
for name in PARALLEL FOR PARALLEL_FOR BARRIER SINGLE CRITICAL LOCK ORDERED ATOMIC REDUCTION; do
  g=${best[libgomp:$name]:-nan}; o=${best[libomp:$name]:-nan}; w=${best[weft:$name]:-nan}
  awk -v n="$name" -v g="$g" -v o="$o" -v w="$w" 'BEGIN{
    f = (g < o ? g : o); fl = (f < 0.005 ? 0.005 : f); wl = (w < 0.005 ? 0.005 : w);
    printf "%-13s %10.3f %10.3f %10.3f %7.2fx\n", n, g, o, w, wl / fl }'
done
echo "(microseconds per construct at $OMP_NUM_THREADS threads, best of ${ROUNDS:-3} medians; ratio = weft / faster peer, values under 5 ns counted as 5 ns)"
