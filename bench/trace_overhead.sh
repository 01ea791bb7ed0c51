#!/usr/bin/env bash
# What recording a trace (WEFT_TRACE) costs tasks_overhead's empty tasks, against no
# instrumentation and against WEFT_STATS=1; runs interleaved, medians of "Per task" (µs).
#
# Usage: bench/trace_overhead.sh [MODE...]     (default: "tags" "independent" "chain -b 1")
# Environment: N=100000 tasks per run, R=11 runs per variant.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
N=${N:-100000}
R=${R:-11}
[[ $# -gt 0 ]] || set -- "tags" "independent" "chain -b 1"
cargo build --release -q -p weft-bench --bin tasks_overhead
bin=${CARGO_TARGET_DIR:-$root/target}/release/tasks_overhead
trace=$(mktemp -d)/trace.json
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-14s %10s %10s %10s %8s %8s\n' mode off stats trace stats% trace%
for mode in "$@"; do
    off="" stats="" on=""
    for _ in $(seq "$R"); do
        # shellcheck disable=SC2086
        off+=" $(env -u WEFT_STATS -u WEFT_TRACE "$bin" -i "$N" -m $mode 2>&1 | awk '/^Per task:/ {print $3}')"
        # shellcheck disable=SC2086
        stats+=" $(env -u WEFT_TRACE WEFT_STATS=1 "$bin" -i "$N" -m $mode 2>&1 | awk '/^Per task:/ {print $3}')"
        # shellcheck disable=SC2086
        on+=" $(env -u WEFT_STATS WEFT_TRACE="$trace" "$bin" -i "$N" -m $mode 2>&1 | awk '/^Per task:/ {print $3}')"
    done
    o=$(echo "$off" | median) s=$(echo "$stats" | median) t=$(echo "$on" | median)
    printf '%-14s %10.3f %10.3f %10.3f %7.0f%% %7.0f%%\n' "$mode" "$o" "$s" "$t" "$(echo "($s/$o-1)*100" | bc -l)" "$(echo "($t/$o-1)*100" | bc -l)"
done
rm -rf "$(dirname "$trace")"
