#!/usr/bin/env bash
# Weft's tasks_overhead side by side with StarPU's own (Debian package starpu-examples)
# and, for the dependency variants, with GNU libgomp; prints medians and ratios.
#
# Usage: bench/run_tasks_overhead.sh [NTASKS]
#
# Environment (all optional):
#   N=100000          tasks per run (the first argument wins)
#   R=3               repetitions per measurement; the median is reported
#   NCPU=2            CPU workers for both runtimes (StarPU's program sets 2 itself);
#                     passed as STARPU_NCPU, WEFT_NCPU and OMP_NUM_THREADS
#   SCHEDS="eager prio random ws lws"      policies of the main table
#   VARIANT_SCHEDS="eager ws"              policies of the variants table
#   STARPU_TASKS_OVERHEAD=/usr/lib/x86_64-linux-gnu/starpu/examples/tasks_overhead
#   NO_OMP=1          skip the libgomp column
#
# Each row pairs one program of each runtime under the same policy; the runs of a row
# alternate between the runtimes so that both see the same machine noise.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

N=${1:-${N:-100000}}
R=${R:-3}
NCPU=${NCPU:-2}
SCHEDS=${SCHEDS:-eager prio random ws lws}
VARIANT_SCHEDS=${VARIANT_SCHEDS:-eager ws}
TARGET_TAGS=0.5 TARGET_CHAIN=1.0
STARPU_BIN=${STARPU_TASKS_OVERHEAD:-/usr/lib/x86_64-linux-gnu/starpu/examples/tasks_overhead}
case $N in '' | *[!0-9]*) echo "NTASKS must be a number, not '$N'" >&2; exit 2 ;; esac
case $R in '' | *[!0-9]* | 0) echo "R must be a positive number, not '$R'" >&2; exit 2 ;; esac

echo "building weft-bench (release)..." >&2
cargo build --release -q -p weft-bench
WEFT_BIN=${CARGO_TARGET_DIR:-$root/target}/release/tasks_overhead

have_starpu=1
if [[ ! -x $STARPU_BIN ]]; then
    have_starpu=0
    echo "StarPU not installed: apt-get install starpu-examples" \
        "(looked for $STARPU_BIN; set STARPU_TASKS_OVERHEAD to point elsewhere)"
fi

OMP_BIN=
if [[ -z ${NO_OMP:-} ]] && command -v gcc > /dev/null; then
    mkdir -p "$root/target/bench-c"
    if gcc -O2 -fopenmp "$root/bench/c/omp_tasks_overhead.c" \
        -o "$root/target/bench-c/omp_tasks_overhead" 2> /dev/null; then
        OMP_BIN=$root/target/bench-c/omp_tasks_overhead
    else
        echo "gcc -fopenmp failed: no libgomp column" >&2
    fi
fi

export STARPU_SILENT=1 STARPU_NCPU=$NCPU STARPU_NCUDA=0 STARPU_NOPENCL=0
export WEFT_NCPU=$NCPU WEFT_NOPENCL=0 WEFT_NCUDA=0 OMP_NUM_THREADS=$NCPU
unset WEFT_SCHED STARPU_SCHED

# Run one program; print "submit execution total" per-task microseconds, or "NA NA NA".
measure() {
    local out
    if ! out=$("$@" 2>&1 > /dev/null); then
        echo "run failed: $*" >&2
        printf '%s\n' "$out" | tail -3 >&2
        echo "NA NA NA"
        return
    fi
    printf '%s\n' "$out" | awk '
        /^Per task submit:/    { s = $4 }
        /^Per task execution:/ { e = $4 }
        /^Per task:/           { t = $3 }
        END { if (t == "") print "NA NA NA"; else print s, e, t }'
}

# Median of the numbers given (NA if any is NA).
median() {
    printf '%s\n' "$@" | sort -g | awk '
        /NA/ { na = 1 }
        { v[NR] = $1 }
        END {
            if (na || NR == 0) { print "NA"; exit }
            if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
        }'
}

# ratio A B: A / B (how many times faster B is than A).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "NA" || b == "NA" || a == "-" || b == "-" || b + 0 == 0) print "-"
        else if (a / b < 10) printf "%.2fx\n", a / b
        else printf "%.1fx\n", a / b }'
}

# measure_pair SCHED "STARPU ARGS|-" "WEFT ARGS" "OMP ARGS|-": R alternating runs; sets
# sp_{s,e,t}, wf_{s,e,t}, om_t to medians ("-" where not run).
measure_pair() {
    local sched=$1 sp_args=$2 wf_args=$3 om_args=$4 r
    local -a sps=() spe=() spt=() wfs=() wfe=() wft=() omt=()
    for ((r = 0; r < R; r++)); do
        if ((have_starpu)) && [[ $sp_args != - ]]; then
            # shellcheck disable=SC2086
            read -r a b c < <(STARPU_SCHED=$sched measure "$STARPU_BIN" -i "$N" $sp_args)
            sps+=("$a") spe+=("$b") spt+=("$c")
        fi
        # shellcheck disable=SC2086
        read -r a b c < <(WEFT_SCHED=$sched measure "$WEFT_BIN" -i "$N" $wf_args)
        wfs+=("$a") wfe+=("$b") wft+=("$c")
        if [[ -n $OMP_BIN && $om_args != - ]]; then
            # shellcheck disable=SC2086
            read -r a b c < <(measure "$OMP_BIN" -i "$N" $om_args)
            omt+=("$c")
        fi
    done
    sp_s=- sp_e=- sp_t=- om_t=-
    if ((${#spt[@]})); then
        sp_s=$(median "${sps[@]}") sp_e=$(median "${spe[@]}") sp_t=$(median "${spt[@]}")
    fi
    wf_s=$(median "${wfs[@]}") wf_e=$(median "${wfe[@]}") wf_t=$(median "${wft[@]}")
    if ((${#omt[@]})); then om_t=$(median "${omt[@]}"); fi
}

starpu_version=$(dpkg-query -W -f '${Version}' starpu-examples 2> /dev/null || echo "not installed")
echo "== tasks_overhead: StarPU vs Weft =="
echo "machine : $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "commit  : $(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2> /dev/null || echo ' (modified)')"
echo "StarPU  : $starpu_version ($STARPU_BIN)"
echo "workers : StarPU $NCPU CPU (STARPU_NCPU), Weft $NCPU CPU (WEFT_NCPU), libgomp $NCPU threads"
echo "tasks   : $N per run; median of $R runs; times in microseconds per task"
echo

echo "-- tasks_overhead -i $N (StarPU's program: a chain through tags, task 0 submitted last) --"
printf '%-7s | %9s %9s %9s | %9s %9s %9s | %8s %8s\n' \
    sched "SP submit" "SP exec" "SP total" "Wf submit" "Wf exec" "Wf total" "total" "submit"
printf '%-7s | %29s | %29s | %17s\n' "" "StarPU" "Weft" "StarPU/Weft"
targets=()
# verdict VALUE LIMIT: "met" or "missed" (or "not measured").
verdict() {
    awk -v v="$1" -v l="$2" 'BEGIN {
        if (v == "NA" || v == "-") print "not measured"; else if (v + 0 <= l + 0) print "met"; else print "missed" }'
}
for s in $SCHEDS; do
    measure_pair "$s" "" "" -
    printf '%-7s | %9s %9s %9s | %9s %9s %9s | %8s %8s\n' "$s" \
        "$sp_s" "$sp_e" "$sp_t" "$wf_s" "$wf_e" "$wf_t" \
        "$(ratio "$sp_t" "$wf_t")" "$(ratio "$sp_s" "$wf_s")"
    case $s in eager | ws)
        targets+=("tasks_overhead $s: Weft $wf_t us/task, target <= $TARGET_TAGS: $(verdict "$wf_t" "$TARGET_TAGS")")
        ;;
    esac
done
echo

echo "-- variants (per task, total = submit + execution) --"
echo "   StarPU column: the same program (-b 1) or the nearest one; '-' where StarPU has none"
printf '%-7s %-34s | %9s %9s %9s | %11s %11s\n' \
    sched variant StarPU Weft libgomp "StarPU/Weft" "libgomp/Weft"
row() {
    printf '%-7s %-34s | %9s %9s %9s | %11s %11s\n' "$1" "$2" \
        "$sp_t" "$wf_t" "$om_t" "$(ratio "$sp_t" "$wf_t")" "$(ratio "$om_t" "$wf_t")"
}
for s in $VARIANT_SCHEDS; do
    measure_pair "$s" "-b 1" "-b 1" -
    row "$s" "tasks_overhead -b 1 (tags + data)"
    measure_pair "$s" "-b 1" "-m chain" "-m chain"
    row "$s" "chain: RW on one vector"
    targets+=("chain $s: Weft $wf_t us/task, target <= $TARGET_CHAIN: $(verdict "$wf_t" "$TARGET_CHAIN")")
    measure_pair "$s" - "-m chain-deps" -
    row "$s" "chain-deps: explicit task deps"
    measure_pair "$s" - "-m fanout" "-m fanout"
    row "$s" "fanout: 1 -> R x (N-2) -> 1"
    measure_pair "$s" - "-m fanout-deps" -
    row "$s" "fanout-deps: explicit task deps"
    measure_pair "$s" - "-m independent" "-m independent"
    row "$s" "independent: no dependency"
done
echo
echo "StarPU's chain reference is 'tasks_overhead -b 1', whose tasks also carry tags."
echo "libgomp runs the same graphs with depend clauses (bench/c/omp_tasks_overhead.c)."
if ((N == 100000 && NCPU == 2)); then
    echo
    echo "-- targets (issue: 2 workers, -i 100000) --"
    printf '%s\n' "${targets[@]}"
fi
