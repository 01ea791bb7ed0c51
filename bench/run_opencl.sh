#!/usr/bin/env bash
# Issue 3's OpenCL targets, measured in one go on PoCL:
#   opencl_scaling  64 independent ~10 ms kernel tasks on 1 vs 2 OpenCL devices (Weft, no
#                   CPU worker), beside the same kernels driven directly by one host
#                   thread per device; target: 2 devices >= 1.8x faster than one.
#   sgemm_opencl    tiled SGEMM through Weft on one device vs the same kernel enqueued
#                   directly on that device; target: Weft >= 0.9x the direct GFLOP/s.
#
# Usage: bench/run_opencl.sh
#
# Environment (all optional):
#   R_SCALING=7        rounds of opencl_scaling (each times all four configurations)
#   R_SGEMM=15         rounds of sgemm_opencl per tile size (each times both sides)
#   N=1024             SGEMM matrix order
#   TILES="256 512"    SGEMM tile orders, one sgemm_opencl run each (the first is the target's)
#   NTASKS=64 TASK_MS=10   opencl_scaling's task count and calibrated task length
#   POCL_DEVICES       default "basic basic": two single-core PoCL devices
#
# Both binaries print every round and end with a `RESULT key=value ...` line that this
# script turns into the summary table. Medians over rounds; ratios within one run only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

R_SCALING=${R_SCALING:-7}
R_SGEMM=${R_SGEMM:-15}
N=${N:-1024}
TILES=${TILES:-256 512}
NTASKS=${NTASKS:-64}
TASK_MS=${TASK_MS:-10}
TARGET_SPEEDUP=1.8 TARGET_RATIO=0.9
for v in R_SCALING R_SGEMM N NTASKS; do
    case ${!v} in '' | *[!0-9]* | 0) echo "$v must be a positive number, not '${!v}'" >&2; exit 2 ;; esac
done

echo "building weft-bench (release)..." >&2
cargo build --release -q -p weft-bench
bin=${CARGO_TARGET_DIR:-$root/target}/release

# PoCL reads POCL_DEVICES when it initialises: it must be in the process environment.
export POCL_DEVICES=${POCL_DEVICES:-basic basic}
# The binaries set ncpu = 0 and the device count themselves; these are for clarity.
export WEFT_NCPU=0
unset WEFT_NOPENCL

commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
if [[ $commit != unknown && -n $(git -C "$root" status --porcelain 2> /dev/null) ]]; then
    commit="$commit (modified)"
fi
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2> /dev/null || echo unknown)
pocl=$(clinfo 2> /dev/null | sed -n 's/^ *Platform Version  *//p' | head -1 | tr -s ' ' || true)
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2> /dev/null || echo unknown)

echo "== OpenCL targets (issue 3): Weft on PoCL =="
echo "machine : $(nproc) cores, $cpu"
echo "commit  : $commit"
echo "OpenCL  : ${pocl:-unknown} (POCL_DEVICES=\"$POCL_DEVICES\")"
echo "load    : $load_start (1/5/15-min load average before the run)"
echo

# Run a benchmark, show its output, and keep its RESULT line in the named variable.
run() {
    local var=$1 out
    shift
    echo "\$ $*"
    if ! out=$("$@" 2>&1); then
        printf '%s\n' "$out"
        echo "FAILED: $*" >&2
        printf -v "$var" '%s' "RESULT failed"
        return
    fi
    printf '%s\n' "$out"
    echo
    printf -v "$var" '%s' "$(printf '%s\n' "$out" | grep '^RESULT' | tail -1)"
}

# The value of key $2 in RESULT line $1 (NA if absent).
field() {
    printf '%s\n' "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print "NA" }'
}

# "met" / "missed" for $1 >= $2 (NA: not measured).
verdict() {
    awk -v x="$1" -v t="$2" 'BEGIN { if (x == "NA") print "not measured"; else if (x + 0 >= t + 0) print "met"; else print "missed" }'
}

run scaling "$bin/opencl_scaling" -t "$NTASKS" -m "$TASK_MS" -r "$R_SCALING"
sgemm_results=()
for t in $TILES; do
    run res "$bin/sgemm_opencl" -n "$N" -t "$t" -r "$R_SGEMM"
    sgemm_results+=("$res")
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2> /dev/null || echo unknown)

echo "== summary (medians; min..max over rounds) =="
printf '%-44s | %-26s | %-26s | %s\n' "measure" "Weft" "direct (same kernels)" "target"
sp=$(field "$scaling" speedup)
printf '%-44s | %-26s | %-26s | >= %s: %s\n' \
    "opencl_scaling: 2 devices vs 1 (x faster)" \
    "$(printf '%s (%s..%s)' "$sp" "$(field "$scaling" speedup_min)" "$(field "$scaling" speedup_max)")" \
    "$(printf '%s (%s..%s)' "$(field "$scaling" direct_speedup)" "$(field "$scaling" direct_speedup_min)" "$(field "$scaling" direct_speedup_max)")" \
    "$TARGET_SPEEDUP" "$(verdict "$sp" "$TARGET_SPEEDUP")"
printf '%-44s | %-26s | %-26s |\n' "  $NTASKS tasks, 1 device / 2 devices (ms)" \
    "$(field "$scaling" t1_ms) / $(field "$scaling" t2_ms)" "$(field "$scaling" direct_t1_ms) / $(field "$scaling" direct_t2_ms)"
first=1
for res in "${sgemm_results[@]}"; do
    tile=$(field "$res" tile)
    ratio=$(field "$res" ratio)
    target="(informative)"
    if ((first)); then target=">= $TARGET_RATIO: $(verdict "$ratio" "$TARGET_RATIO")"; fi
    first=0
    printf '%-44s | %-26s | %-26s |\n' "sgemm N=$N tile $tile ($(field "$res" tasks) tasks): GFLOP/s" \
        "$(field "$res" weft_gflops)" "$(field "$res" direct_gflops)"
    printf '%-44s | %-26s | %-26s | %s\n' "  Weft/direct" \
        "$(printf '%s (%s..%s)' "$ratio" "$(field "$res" ratio_min)" "$(field "$res" ratio_max)")" "1" "$target"
done
echo
echo "load average: $load_start before, $load_end after."
dsp=$(field "$scaling" direct_speedup)
awk -v d="$dsp" -v t="$TARGET_SPEEDUP" 'BEGIN {
    if (d != "NA" && d + 0 < t + 0)
        print "The direct program did not reach " t "x on two devices either: other processes were\n" \
              "taking CPU time (a shared 2-core machine), so this run says nothing about Weft'"'"'s\n" \
              "scaling. Run again when the machine is idle (the direct column near 2x)."
}'
