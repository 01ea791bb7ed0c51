#!/usr/bin/env bash
# "Adding a device never makes Weft slower": the README demo (examples/demo 384 4) and
# examples/cholesky (2048/256) with whatever devices Weft finds by default, against the same
# programs on the CPU cores alone (WEFT_NOPENCL=0), interleaved, medians of ROUNDS rounds,
# as a ratio (at or above 1: the default is not slower). PoCL's device sets: its default
# (one pthread device) and the demo's POCL_DEVICES="basic basic".
#
# Usage: bench/defaults.sh
# Needs: cargo; PoCL (scripts/setup.sh).
# Environment: ROUNDS=5.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
ROUNDS=${ROUNDS:-5}
echo "building the examples (release)..." >&2
cargo build --release -q --example demo --example cholesky
bin=${CARGO_TARGET_DIR:-$root/target}/release/examples
unset WEFT_SCHED WEFT_NCPU WEFT_NOPENCL WEFT_NNULL POCL_DEVICES WEFT_OPENCL_ON_CPUS
export WEFT_NCUDA=0

gflops() { sed -n 's/.*(\([0-9.]*\) GFLOP\/s).*/\1/p' | head -1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

programs=("demo 384 4" "cholesky 2048 256")
setups=("default devices (PoCL's default)" "default devices (POCL_DEVICES='basic basic')" "CPU cores alone (WEFT_NOPENCL=0)")
envs=("" "POCL_DEVICES=basic basic" "WEFT_NOPENCL=0")
# Warm-up: kernel builds, model calibration.
for p in "${programs[@]}"; do
    for e in "${envs[@]}"; do
        read -r -a args <<< "$p"
        for _ in 1 2 3; do env ${e:+"$e"} "$bin/${args[0]}" "${args[@]:1}" > /dev/null; done
    done
done
declare -A res
for ((r = 0; r < ROUNDS; r++)); do
    for p in "${programs[@]}"; do
        read -r -a args <<< "$p"
        for i in "${!envs[@]}"; do
            e=${envs[$i]}
            res[$p,$i]+=" $(env ${e:+"$e"} "$bin/${args[0]}" "${args[@]:1}" | gflops)"
        done
    done
done
echo "== Default devices against the CPU cores alone: GFLOP/s, medians of $ROUNDS =="
echo "machine : $(nproc) cores; commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown); load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in "${programs[@]}"; do
    # shellcheck disable=SC2086 # the lists are meant to split
    cpu=$(median ${res[$p,2]})
    for i in 0 1; do
        # shellcheck disable=SC2086
        m=$(median ${res[$p,$i]})
        printf '%-18s %-48s %8s GFLOP/s  CPU alone %8s  ratio %.3f   rounds:%s\n' "$p" "${setups[$i]}" "$m" "$cpu" "$(awk -v a="$m" -v b="$cpu" 'BEGIN { print a / b }')" "${res[$p,$i]}"
    done
done
