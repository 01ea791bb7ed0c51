#!/usr/bin/env bash
# How well the performance models predict Cholesky's tile kernels: examples/cholesky under
# WEFT_STATS=1, which prints per model and kind of worker the mean absolute relative error
# of the predictions a calibrated model made against the durations then measured. First
# CALIBRATION untimed runs calibrate the models (in a WEFT_HOME of the benchmark's own,
# emptied first), then ROUNDS runs are counted, under each WEFT_CALIBRATE mode in MODES
# (0: models frozen once calibrated, StarPU's default; 1: every task measured too). A
# model's first task on each worker is a warm-up (not a sample, docs/perfmodel.md): "mean
# error" leaves warm-ups out, "with them" counts every predicted task.
#
# Usage: bench/cholesky/predict.sh
#
# Needs: cargo; PoCL (pocl-opencl-icd, from scripts/setup.sh) for the device setup.
#
# Environment (all optional):
#   SIZE=2048/256        n/tile
#   ROUNDS=5             counted runs per setup and mode
#   CALIBRATION=3        untimed runs first
#   MODES="0 1"          WEFT_CALIBRATE values
#   F32=1                single precision
#   BIN=PATH             an examples/cholesky binary to measure instead of building one
#                        (another commit's, for a before and after)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
SIZE=${SIZE:-2048/256}
ROUNDS=${ROUNDS:-5}
CALIBRATION=${CALIBRATION:-3}
read -r -a MODES <<< "${MODES:-0 1}"
precision=()
[[ ${F32:-0} == 1 ]] && precision=(--f32)
n=${SIZE%/*} tile=${SIZE#*/}

BIN_GIVEN=${BIN:-}
# shellcheck source=bench/cholesky/common.sh
source "$root/bench/cholesky/common.sh"
cholesky_bin
unset WEFT_SCHED WEFT_NCPU WEFT_NOPENCL WEFT_NNULL POCL_DEVICES WEFT_CALIBRATE
export WEFT_NCUDA=0
export WEFT_HOME=${CARGO_TARGET_DIR:-$root/target}/bench-predict-home

names=("2 CPU workers" "PoCL device alone")
envs=("WEFT_NCPU=2 WEFT_NOPENCL=0" "WEFT_NCPU=0 POCL_DEVICES=basic WEFT_NOPENCL=1")

echo "== Prediction errors of the Cholesky tile kernels' models, $n/$tile ${precision[*]:-f64} =="
echo "machine : $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
what="commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)"
[[ -n ${BIN_GIVEN:-} ]] && what="binary $BIN"
echo "build   : $what; $CALIBRATION calibration runs, $ROUNDS counted; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-18s %-9s %-16s %-44s %9s %12s %12s %9s %12s\n' setup calibrate model arch predicted "mean error" "mean us" warm-ups "with them"
for i in "${!names[@]}"; do
    read -r -a vars <<< "${envs[$i]}"
    for mode in "${MODES[@]}"; do
        rm -rf "$WEFT_HOME"
        for ((r = 0; r < CALIBRATION; r++)); do
            env "${vars[@]}" WEFT_SCHED=dmdas WEFT_CALIBRATE="$mode" "$BIN" "$n" "$tile" "${precision[@]}" > /dev/null
        done
        for ((r = 0; r < ROUNDS; r++)); do
            env "${vars[@]}" WEFT_SCHED=dmdas WEFT_CALIBRATE="$mode" WEFT_STATS=1 "$BIN" "$n" "$tile" "${precision[@]}" 2>&1 | grep '^model ' || true
        done | awk -v setup="${names[$i]}" -v mode="$mode" '
            # model NAME on ARCH: M measured, mean X us; P predicted: mean predicted A us, measured B us, mean abs error E%
            #   [; W warm-ups left out (mean abs error F%; G% with them)]
            {
                line = $0
                name = $2
                sub(/^model [^ ]+ on /, "", line); arch = line; sub(/: [0-9]+ measured.*/, "", arch)
                match($0, /; [0-9]+ predicted/); p = substr($0, RSTART + 2, RLENGTH - 12) + 0
                match($0, /error [0-9.]+%/); e = substr($0, RSTART + 6, RLENGTH - 7) + 0
                match($0, /, measured [0-9.]+ us/); m = substr($0, RSTART + 11, RLENGTH - 14) + 0
                k = name "|" arch
                np[k] += p; err[k] += p * e; us[k] += p * m
                w = 0; g = e
                if (match($0, /; [0-9]+ warm-ups/)) w = substr($0, RSTART + 2, RLENGTH - 11) + 0
                if (match($0, /; [0-9.]+% with them/)) g = substr($0, RSTART + 2, RLENGTH - 13) + 0
                nw[k] += w; errall[k] += (p + w) * g
            }
            END {
                for (k in np) {
                    split(k, f, "|")
                    if (np[k] > 0) printf "%-18s %-9s %-16s %-44s %9d %11.1f%% %12.1f %9d %11.1f%%\n", setup, mode, f[1], f[2], np[k], err[k] / np[k], us[k] / np[k], nw[k], errall[k] / (np[k] + nw[k])
                    else printf "%-18s %-9s %-16s %-44s %9d %12s %12s %9s %12s\n", setup, mode, f[1], f[2], 0, "-", "-", "-", "-"
                }
            }' | sort
    done
done
