#!/usr/bin/env bash
# A/B of two builds of examples/cholesky (Weft is linked into it): a base and the working
# tree, run interleaved, per policy and size, on one worker setup. Prints per policy and
# size the medians of GFLOP/s and of the bytes moved between memory nodes (WEFT_STATS=1),
# and the median of the rounds' new/base ratios: a scheduler change compared in one run.
#
# Usage: bench/cholesky/ab.sh                   # base: main, as committed
#        BASE=HEAD~1 ROUNDS=7 bench/cholesky/ab.sh
#        BASE_BIN=/path/to/cholesky bench/cholesky/ab.sh
#        BASE_BIN=same BASE_ENV=WEFT_SCHED_LOCALITY=0 bench/cholesky/ab.sh   # A/B of a setting
#
# Needs: cargo, git; PoCL (pocl-opencl-icd, from scripts/setup.sh) for the default setup.
#
# Environment (all optional):
#   BASE=main            git revision of the base build: its tree (git archive) is built
#                        under $CARGO_TARGET_DIR/ab/src with its own target directory
#                        ($CARGO_TARGET_DIR/ab/target, kept: later builds are incremental),
#                        the binary kept as $CARGO_TARGET_DIR/ab/cholesky-<commit>
#   BASE_BIN=PATH        a base binary instead ("same": the working tree's, for an A/B of
#                        BASE_ENV against NEW_ENV)
#   BASE_ENV, NEW_ENV    extra variables (words NAME=value) for one side's runs only
#   SETUP="WEFT_NCPU=1 POCL_DEVICES=basic WEFT_NOPENCL=1 WEFT_OPENCL_ON_CPUS=1"
#                        the worker setup (words NAME=value): one CPU worker beside one PoCL
#                        `basic` device, as policies.sh's first setup
#   SIZES="2048/256 4096/512"   n/tile pairs
#   POLICIES="eager dmda dmdas"
#   ROUNDS=5             rounds; each runs base and new once per policy and size, the order
#                        alternating between rounds (odd: base first)
#   CALIBRATION=3        untimed dmdas runs per size first (WEFT_CALIBRATE=1), models emptied
#                        first; each side runs in a WEFT_HOME of its own
#                        ($CARGO_TARGET_DIR/ab/home-{base,new})
#   MODELS=shared        shared: the new build calibrates, and both sides run on copies of
#                        its models (frozen: the rounds run WEFT_CALIBRATE=0), so that they
#                        differ only by the builds; own: each side calibrates its own (for a
#                        change to the models themselves; on a loaded machine two calibrations
#                        differ by up to 2x in a kernel's CPU/device ratio, and so do the
#                        placements and bytes)
#   F32=1                single precision (the example's --f32)
# shellcheck disable=SC2059 # one format, in a variable, for every line of the table
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
ab=$target/ab
mkdir -p "$ab"

SETUP=${SETUP:-WEFT_NCPU=1 POCL_DEVICES=basic WEFT_NOPENCL=1 WEFT_OPENCL_ON_CPUS=1}
read -r -a SIZES <<< "${SIZES:-2048/256 4096/512}"
read -r -a POLICIES <<< "${POLICIES:-eager dmda dmdas}"
ROUNDS=${ROUNDS:-5}
CALIBRATION=${CALIBRATION:-3}
MODELS=${MODELS:-shared}
case $MODELS in shared | own) ;; *) echo "MODELS must be shared or own, not '$MODELS'" >&2; exit 2 ;; esac
case $ROUNDS in '' | *[!0-9]* | 0) echo "ROUNDS must be a positive number, not '$ROUNDS'" >&2; exit 2 ;; esac
case $CALIBRATION in '' | *[!0-9]*) echo "CALIBRATION must be a number, not '$CALIBRATION'" >&2; exit 2 ;; esac
precision=()
[[ ${F32:-0} == 1 ]] && precision=(--f32)

# The working tree's binary, copied so that a rebuild during the run changes nothing.
echo "building examples/cholesky (release, working tree)..." >&2
cargo build --release -q --example cholesky
new_commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || new_commit="$new_commit (modified)"
cp "$target/release/examples/cholesky" "$ab/cholesky-new"
NEW_BIN=$ab/cholesky-new

if [[ ${BASE_BIN:-} == same ]]; then
    BASE_BIN=$NEW_BIN base_desc="the same binary ($new_commit)"
elif [[ -n ${BASE_BIN:-} ]]; then
    [[ -x $BASE_BIN ]] || { echo "BASE_BIN=$BASE_BIN: not an executable" >&2; exit 2; }
    base_desc=$BASE_BIN
else
    BASE=${BASE:-main}
    rev=$(git rev-parse --verify -q "$BASE^{commit}") || { echo "BASE=$BASE: no such revision" >&2; exit 2; }
    short=$(git rev-parse --short "$rev")
    BASE_BIN=$ab/cholesky-$short base_desc="$BASE ($short)"
    if [[ ! -x $BASE_BIN ]]; then
        echo "building examples/cholesky (release) at $BASE ($short) in $ab/src..." >&2
        rm -rf "$ab/src"
        mkdir -p "$ab/src"
        git archive "$rev" | tar -x -C "$ab/src"
        (cd "$ab/src" && CARGO_TARGET_DIR=$ab/target cargo build --release -q --example cholesky)
        cp "$ab/target/release/examples/cholesky" "$BASE_BIN"
    fi
fi

unset WEFT_SCHED WEFT_NCPU WEFT_NOPENCL WEFT_NNULL POCL_DEVICES WEFT_CALIBRATE WEFT_STATS
export WEFT_NCUDA=0
read -r -a setup <<< "$SETUP"
read -r -a base_env <<< "${BASE_ENV:-}"
read -r -a new_env <<< "${NEW_ENV:-}"
sides=(base new)
bins=("$BASE_BIN" "$NEW_BIN")

# One run: side index (0 base, 1 new), policy, n, tile, extra variables. Sets `gflops`
# (a number or NA) and `bytes` (the sum of WEFT_STATS's "bytes node A -> node B" lines).
run() {
    local side=$1 policy=$2 n=$3 tile=$4
    shift 4
    local -a vars=("${setup[@]}")
    if ((side == 0)); then vars+=("${base_env[@]}"); else vars+=("${new_env[@]}"); fi
    local out
    gflops=NA bytes=NA
    if out=$(env "${vars[@]}" "$@" WEFT_HOME="$ab/home-${sides[$side]}" WEFT_SCHED="$policy" WEFT_STATS=1 \
        "${bins[$side]}" "$n" "$tile" "${precision[@]}" 2>&1) && grep -q '^result: correct' <<< "$out"; then
        gflops=$(sed -n 's/.*(\([0-9.]*\) GFLOP\/s).*/\1/p' <<< "$out" | head -1)
        bytes=$(awk '/^bytes node [0-9]+ -> node [0-9]+:/ { s += $NF } END { print s + 0 }' <<< "$out")
    else
        echo "${sides[$side]}: cholesky $n $tile ($policy) failed:" >&2
        tail -3 <<< "$out" >&2
    fi
}

median() {
    printf '%s\n' "$@" | sort -g | awk '
        /NA/ { bad = 1 } { v[NR] = $1 }
        END { if (bad || NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.3f\n", a / b }'; }

echo "== Cholesky A/B: base against new (${precision[*]:-f64}) =="
echo "machine : $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "base    : $base_desc${BASE_ENV:+, with $BASE_ENV}"
echo "new     : working tree at $new_commit${NEW_ENV:+, with $NEW_ENV}"
echo "setup   : $SETUP"
echo "rounds  : $ROUNDS interleaved, medians; $CALIBRATION calibration runs per size, models $MODELS; load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
echo

# OpenCL programs are built on a device's first use, then cached under WEFT_HOME; the
# model-driven policies' models are calibrated on warm runs (as policies.sh does).
for s in 1 0; do
    rm -rf "$ab/home-${sides[$s]}/models"
    run "$s" lws 512 128
    if [[ $MODELS == shared && $s == 0 ]]; then
        rm -rf "$ab/home-base/models"
        cp -r "$ab/home-new/models" "$ab/home-base/models"
        continue
    fi
    for size in "${SIZES[@]}"; do
        for ((c = 0; c < CALIBRATION; c++)); do run "$s" dmdas "${size%/*}" "${size#*/}" WEFT_CALIBRATE=1; done
    done
done

declare -A g b gr br
for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r/$ROUNDS..." >&2
    order=(0 1)
    ((r % 2 == 0)) && order=(1 0)
    for size in "${SIZES[@]}"; do
        for p in "${POLICIES[@]}"; do
            declare -A got_g=() got_b=()
            for s in "${order[@]}"; do
                run "$s" "$p" "${size%/*}" "${size#*/}"
                g[$size,$p,$s]+=" $gflops"
                b[$size,$p,$s]+=" $bytes"
                got_g[$s]=$gflops got_b[$s]=$bytes
            done
            gr[$size,$p]+=" $(ratio "${got_g[1]}" "${got_g[0]}")"
            br[$size,$p]+=" $(ratio "${got_b[1]}" "${got_b[0]}")"
        done
    done
done

# Median of a list of byte counts, in MB.
# shellcheck disable=SC2086 # the list is meant to split
mb() { awk -v x="$(median $1)" 'BEGIN { if (x == "NA") print "NA"; else printf "%.1f\n", x / 1e6 }'; }
fmt='%-9s %-6s | %9s %9s %9s | %9s %9s %9s\n'
printf "$fmt" n/tile policy "GFLOP/s" "" "new/base" "MB moved" "" "new/base"
printf "$fmt" "" "" base new "(rounds)" base new "(rounds)"
for size in "${SIZES[@]}"; do
    for p in "${POLICIES[@]}"; do
        # shellcheck disable=SC2086 # the lists are meant to split
        printf "$fmt" "$size" "$p" "$(median ${g[$size,$p,0]})" "$(median ${g[$size,$p,1]})" "$(median ${gr[$size,$p]})" \
            "$(mb "${b[$size,$p,0]}")" "$(mb "${b[$size,$p,1]}")" "$(median ${br[$size,$p]})"
    done
done
echo
echo "-- every round (GFLOP/s; MB) --"
for size in "${SIZES[@]}"; do
    for p in "${POLICIES[@]}"; do
        for s in 0 1; do
            # shellcheck disable=SC2086
            printf '%-9s %-6s %-4s %s;%s\n' "$size" "$p" "${sides[$s]}" "${g[$size,$p,$s]}" \
                "$(printf ' %s' ${b[$size,$p,$s]} | awk '{ for (i = 1; i <= NF; i++) printf " %s", ($i == "NA" ? "NA" : sprintf("%.1f", $i / 1e6)) }')"
        done
    done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
