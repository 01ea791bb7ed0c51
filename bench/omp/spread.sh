#!/usr/bin/env bash
# How much the EPCC-style overheads of bench/omp/run.sh vary from run to run: ROUNDS runs of
# syncbench per runtime (GNU libgomp, LLVM libomp, Weft), interleaved, then for each
# construct the median over the runs with the smallest and largest run, in nanoseconds, and
# Weft's median over the faster peer's median.
#   bench/omp/spread.sh [INNER]     env: ROUNDS (9), ONLY (constructs, e.g. "CRITICAL LOCK"),
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
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "${ROUNDS:-9}"); do
  "$WORK/syncbench" "$@" | sed 's/^/libgomp /' >> "$out"
  LD_PRELOAD=$LIBOMP "$WORK/syncbench" "$@" | sed 's/^/libomp /' >> "$out"
  LD_LIBRARY_PATH="$WORK/standin" "$WORK/syncbench" "$@" | sed 's/^/weft /' >> "$out"
done
python3 - "$out" <<'PY'
import collections, os, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rt, name, v = line.split()
    runs[(name, rt)].append(float(v) * 1000)
names = [n for n in ["PARALLEL", "FOR", "PARALLEL_FOR", "BARRIER", "SINGLE", "CRITICAL", "LOCK", "ORDERED", "ATOMIC", "REDUCTION"] if (n, "weft") in runs]
print("%-13s %24s %24s %24s %7s" % ("construct", "libgomp med [min-max]", "libomp med [min-max]", "weft med [min-max]", "ratio"))
for n in names:
    cols, med = [], {}
    for rt in ("libgomp", "libomp", "weft"):
        v = sorted(runs[(n, rt)])
        med[rt] = statistics.median(v)
        cols.append("%7.1f [%6.1f-%7.1f]" % (med[rt], v[0], v[-1]))
    faster = max(min(med["libgomp"], med["libomp"]), 5.0)
    print("%-13s %24s %24s %24s %6.2fx" % (n, *cols, max(med["weft"], 5.0) / faster))
print("(nanoseconds per construct at %s threads: median over %d runs of each run's median, [smallest-largest run]; ratio = weft / faster peer, values under 5 ns counted as 5 ns)" % (os.environ["OMP_NUM_THREADS"], len(runs[(names[0], "weft")])))
PY
