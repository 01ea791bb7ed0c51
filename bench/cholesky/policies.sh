#!/usr/bin/env bash
# examples/cholesky under each of Weft's scheduling policies, on three worker setups: the
# one given (SETUP; by default a CPU worker beside a PoCL device), its CPU worker alone,
# and the device alone. Prints GFLOP/s per policy (medians of ROUNDS interleaved rounds)
# and, from WEFT_STATS=1, the memory nodes' lines of the last round (bytes each received).
# A policy this build does not have (its error: "unknown policy") prints n/a.
#
# Usage: bench/cholesky/policies.sh
#
# Needs: cargo; PoCL (pocl-opencl-icd, from scripts/setup.sh) for the setups with a device.
#
# Environment (all optional):
#   SETUP="WEFT_NCPU=1 POCL_DEVICES=basic WEFT_NOPENCL=1 WEFT_OPENCL_ON_CPUS=1"
#                        variables of the first setup (words NAME=value)
#   SIZES="2048/256 4096/512"      n/tile pairs
#   POLICIES="eager ws lws dmda dmdas"
#   ROUNDS=3             rounds; medians are reported
#   CALIBRATION=3        untimed dmdas runs per size and setup first (WEFT_CALIBRATE=1),
#                        which calibrate the performance models (kept in a WEFT_HOME of the script's own,
#                        target/bench-policies-home, emptied first)
#   F32=1                single precision (the example's --f32)
#   BIN=PATH             an examples/cholesky binary to measure instead of building one
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

SETUP=${SETUP:-WEFT_NCPU=1 POCL_DEVICES=basic WEFT_NOPENCL=1 WEFT_OPENCL_ON_CPUS=1}
read -r -a SIZES <<< "${SIZES:-2048/256 4096/512}"
read -r -a POLICIES <<< "${POLICIES:-eager ws lws dmda dmdas}"
ROUNDS=${ROUNDS:-3}
case $ROUNDS in '' | *[!0-9]* | 0) echo "ROUNDS must be a positive number, not '$ROUNDS'" >&2; exit 2 ;; esac
precision=()
[[ ${F32:-0} == 1 ]] && precision=(--f32)
setup_names=("given" "CPU worker alone" "device alone")
setup_envs=("$SETUP" "WEFT_NCPU=1 WEFT_NOPENCL=0" "WEFT_NCPU=0 POCL_DEVICES=basic")

# shellcheck source=bench/cholesky/common.sh
source "$root/bench/cholesky/common.sh"
cholesky_bin
unset WEFT_SCHED WEFT_NCPU WEFT_NOPENCL WEFT_NNULL POCL_DEVICES WEFT_CALIBRATE
export WEFT_NCUDA=0
export WEFT_HOME=${CARGO_TARGET_DIR:-$root/target}/bench-policies-home
rm -rf "$WEFT_HOME/models"
CALIBRATION=${CALIBRATION:-3}

# One run: setup index, policy, n, tile. Sets `gflops` (a number, NA or n/a) and `nodes`
# (the WEFT_STATS lines of the memory nodes).
run() {
    local -a vars
    read -r -a vars <<< "${setup_envs[$1]}"
    local out
    gflops=NA nodes=
    if out=$(env "${vars[@]}" "${extra[@]}" WEFT_SCHED="$2" WEFT_STATS=1 "$BIN" "$3" "$4" "${precision[@]}" 2>&1); then
        if grep -q '^result: correct' <<< "$out"; then
            gflops=$(sed -n 's/.*(\([0-9.]*\) GFLOP\/s).*/\1/p' <<< "$out" | head -1)
        else
            echo "cholesky $3 $4 (${setup_names[$1]}, $2): no correct result" >&2
        fi
    elif grep -q 'unknown policy' <<< "$out"; then
        gflops=n/a
    else
        echo "cholesky $3 $4 (${setup_names[$1]}, $2) failed:" >&2
        tail -3 <<< "$out" >&2
    fi
    nodes=$(grep -E '^(node|bytes|prefetched)' <<< "$out" || true)
}

median() {
    printf '%s\n' "$@" | sort -g | awk '
        /n\/a/ { na = 1 } /NA/ { bad = 1 } { v[NR] = $1 }
        END { if (na) print "n/a"; else if (bad || NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || commit="$commit (modified)"
echo "== Cholesky under Weft's policies (${precision[*]:-f64}) =="
echo "machine : $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "commit  : $commit; $ROUNDS rounds, medians; load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in "${!setup_names[@]}"; do echo "setup   : ${setup_names[$i]}: ${setup_envs[$i]}"; done
echo

# OpenCL programs are built on a device's first use (then cached under WEFT_HOME): once
# per setup at a small size, untimed.
extra=()
for i in "${!setup_names[@]}"; do run "$i" lws 512 128; done
# The model-driven policies' first runs at a size measure every kind of worker there;
# WEFT_CALIBRATE=1 keeps measuring through all of them, so that each entry's estimate (the
# median of its newest samples) comes from warm runs, not from the first, cold one.
extra=(WEFT_CALIBRATE=1)
for size in "${SIZES[@]}"; do
    for i in "${!setup_names[@]}"; do
        for ((c = 0; c < CALIBRATION; c++)); do run "$i" dmdas "${size%/*}" "${size#*/}"; done
    done
done
extra=()
declare -A res stats
for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r/$ROUNDS..." >&2
    for size in "${SIZES[@]}"; do
        for i in "${!setup_names[@]}"; do
            for p in "${POLICIES[@]}"; do
                run "$i" "$p" "${size%/*}" "${size#*/}"
                res[$size,$i,$p]+=" $gflops"
                stats[$size,$i,$p]=$nodes
            done
        done
    done
done

fmt='%-9s %-6s | %18s | %18s | %18s\n'
for size in "${SIZES[@]}"; do
    echo "-- n/tile $size: GFLOP/s --"
    printf "$fmt" n/tile policy "${setup_names[@]}"
    for p in "${POLICIES[@]}"; do
        # shellcheck disable=SC2086 # the lists are meant to split
        printf "$fmt" "$size" "$p" "$(median ${res[$size,0,$p]})" "$(median ${res[$size,1,$p]})" "$(median ${res[$size,2,$p]})"
    done
    echo
done
echo "-- memory nodes (WEFT_STATS=1, last round) --"
for size in "${SIZES[@]}"; do
    for i in "${!setup_names[@]}"; do
        for p in "${POLICIES[@]}"; do
            [[ -n ${stats[$size,$i,$p]} ]] || continue
            echo "$size ${setup_names[$i]}, $p:"
            sed 's/^/    /' <<< "${stats[$size,$i,$p]}"
        done
    done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
