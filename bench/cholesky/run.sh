#!/usr/bin/env bash
# Weft's tiled Cholesky (examples/cholesky; with faer's tile kernels, and with OpenBLAS's
# when libopenblas-dev is installed) side by side with its peers, in one run:
#   f32: StarPU's cholesky_implicit (the same algorithm in single precision; Debian
#        package starpu-examples) under each of STARPU_SCHEDS;
#   f64: LAPACK's dpotrf from OpenBLAS (bench/cholesky/dpotrf.c, built here with gcc).
# Prints the medians of ROUNDS interleaved rounds (every program once per round, so all
# see the same machine noise) and the ratio Weft/peer (above 1: Weft is faster).
#
# Usage: bench/cholesky/run.sh [N] [TILE]
#
# Needs: cargo, gcc, starpu-examples, libopenblas-dev (scripts/setup.sh --bench installs
# the last two). Without StarPU or OpenBLAS the rows they would fill say so and the rest
# still runs.
#
# Environment (all optional):
#   N=2048 TILE=256     matrix order and tile size (the arguments win); N % TILE == 0
#   ROUNDS=3            rounds; medians are reported
#   NCPU=2              CPU workers of Weft and StarPU, threads of OpenBLAS's dpotrf
#   WEFT_SCHED=lws      Weft's policy
#   STARPU_SCHEDS="dmdas lws"   StarPU's policies, a row each
#   STARPU_CHOLESKY=/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit
#
# StarPU keeps its performance models (dmda* policies) under STARPU_HOME, by default
# target/bench-starpu; one untimed run per policy before the rounds calibrates them.
# StarPU's tasks call the system's libblas.so.3, put on OpenBLAS here (single-threaded:
# OPENBLAS_NUM_THREADS=1, as each worker runs one task).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

N=${1:-${N:-2048}}
TILE=${2:-${TILE:-256}}
ROUNDS=${ROUNDS:-3}
NCPU=${NCPU:-2}
SCHED=${WEFT_SCHED:-lws}
read -r -a STARPU_SCHEDS <<< "${STARPU_SCHEDS:-dmdas lws}"
STARPU_BIN=${STARPU_CHOLESKY:-/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit}
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-pthread
for v in N TILE ROUNDS NCPU; do
    case ${!v} in '' | *[!0-9]* | 0) echo "$v must be a positive number, not '${!v}'" >&2; exit 2 ;; esac
done
((N % TILE == 0)) || { echo "N ($N) must be a multiple of TILE ($TILE)" >&2; exit 2; }
NBLOCKS=$((N / TILE))
target=${CARGO_TARGET_DIR:-$root/target}

# Weft's example twice: with its default CPU tile kernels (faer) and with OpenBLAS's (the
# `openblas` feature: the kernels StarPU's example and dpotrf run, so that row compares
# runtimes only), when libopenblas-dev is there.
OPENBLAS_BIN=
if [[ -e /usr/lib/x86_64-linux-gnu/libopenblas.so ]]; then
    echo "building examples/cholesky with OpenBLAS kernels (release)..." >&2
    cargo build --release -q --example cholesky --features openblas
    OPENBLAS_BIN=$target/release/examples/cholesky-openblas
    cp "$target/release/examples/cholesky" "$OPENBLAS_BIN"
fi
echo "building examples/cholesky (release)..." >&2
cargo build --release -q --example cholesky
WEFT_BIN=$target/release/examples/cholesky

have_starpu=1
if [[ ! -x $STARPU_BIN ]]; then
    have_starpu=0
    echo "StarPU not installed: apt-get install starpu-examples (looked for $STARPU_BIN)" >&2
fi
DPOTRF_BIN=
mkdir -p "$target/bench-c"
if gcc -O2 "$root/bench/cholesky/dpotrf.c" -o "$target/bench-c/dpotrf" -lopenblas 2> /dev/null; then
    DPOTRF_BIN=$target/bench-c/dpotrf
else
    echo "cannot build bench/cholesky/dpotrf.c against OpenBLAS: apt-get install libopenblas-dev" >&2
fi
if [[ -d $OPENBLAS_DIR ]]; then
    starpu_ld=$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
    starpu_ld=${LD_LIBRARY_PATH:-}
    echo "no OpenBLAS in $OPENBLAS_DIR: StarPU uses whatever libblas.so.3 the system has" >&2
fi

export STARPU_HOME=${STARPU_HOME:-$target/bench-starpu}
mkdir -p "$STARPU_HOME"
unset WEFT_NNULL

# One run of a program; prints its GFLOP/s, or NA (and why, on stderr) when it fails.
weft() { # binary precision-flags...
    local out bin=$1
    shift
    if ! out=$(WEFT_NCPU=$NCPU WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_SCHED=$SCHED "$bin" "$N" "$TILE" "$@" 2>&1) ||
        ! grep -q '^result: correct' <<< "$out"; then
        echo "weft cholesky $N $TILE $* failed:" >&2
        tail -3 <<< "$out" >&2
        echo NA
        return
    fi
    sed -n 's/.*(\([0-9.]*\) GFLOP\/s).*/\1/p' <<< "$out" | head -1
}
starpu() { # policy
    local out
    if ! out=$(STARPU_SCHED=$1 STARPU_NCPU=$NCPU STARPU_NCUDA=0 STARPU_NOPENCL=0 STARPU_SILENT=1 \
        OPENBLAS_NUM_THREADS=1 LD_LIBRARY_PATH=$starpu_ld \
        "$STARPU_BIN" -size "$N" -nblocks "$NBLOCKS" 2>&1); then
        echo "cholesky_implicit ($1) failed:" >&2
        tail -3 <<< "$out" >&2
        echo NA
        return
    fi
    # "# size  ms  GFlop/s" then "2048  123  23.4".
    awk '$1 ~ /^[0-9]+$/ && NF >= 3 { g = $3 } END { print (g == "" ? "NA" : g) }' <<< "$out"
}
dpotrf() {
    local out
    if ! out=$(OPENBLAS_NUM_THREADS=$NCPU "$DPOTRF_BIN" "$N" 2>&1); then
        echo "dpotrf failed: $out" >&2
        echo NA
        return
    fi
    sed -n 's/.*(\([0-9.]*\) GFLOP\/s).*/\1/p' <<< "$out"
}

# Median of the numbers given (NA if any is NA).
median() {
    printf '%s\n' "$@" | sort -g | awk '
        /NA/ { na = 1 } { v[NR] = $1 }
        END { if (na || NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.2f\n", a / b }'; }

commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || commit="$commit (modified)"
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2> /dev/null || echo "not installed"; }
echo "== Cholesky: Weft vs StarPU (f32) and OpenBLAS dpotrf (f64) =="
echo "machine  : $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "commit   : $commit"
echo "StarPU   : $(pkg_version starpu-examples) ($STARPU_BIN), BLAS $(LD_LIBRARY_PATH=$starpu_ld ldd "$STARPU_BIN" 2> /dev/null | awk '/libblas/ { print $3 }')"
echo "OpenBLAS : $(pkg_version libopenblas0-pthread)"
echo "workers  : Weft $NCPU CPU (policy $SCHED), StarPU $NCPU CPU, dpotrf $NCPU threads"
echo "matrix   : n = $N, tiles of $TILE ($NBLOCKS x $NBLOCKS); $ROUNDS rounds, medians; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if ((have_starpu)); then
    echo "calibrating StarPU's models (one untimed run per policy)..." >&2
    for s in "${STARPU_SCHEDS[@]}"; do starpu "$s" > /dev/null; done
fi
declare -A res
for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r/$ROUNDS..." >&2
    res[w32]+=" $(weft "$WEFT_BIN" --f32)"
    if [[ -n $OPENBLAS_BIN ]]; then res[o32]+=" $(weft "$OPENBLAS_BIN" --f32)"; fi
    if ((have_starpu)); then
        for s in "${STARPU_SCHEDS[@]}"; do res[sp_$s]+=" $(starpu "$s")"; done
    fi
    res[w64]+=" $(weft "$WEFT_BIN")"
    if [[ -n $OPENBLAS_BIN ]]; then res[o64]+=" $(weft "$OPENBLAS_BIN")"; fi
    if [[ -n $DPOTRF_BIN ]]; then res[blas]+=" $(dpotrf)"; fi
done

fmt='%-6s %-5s %-9s %-8s | %10s | %-32s %10s | %10s\n'
printf "$fmt" n tile precision kernels "Weft" peer "peer" "Weft/peer"
printf "$fmt" "" "" "" "" "GFLOP/s" "" "GFLOP/s" ""
kernels=(faer)
[[ -n $OPENBLAS_BIN ]] && kernels+=(OpenBLAS)
for k in "${kernels[@]}"; do
    key=$([[ $k == faer ]] && echo w || echo o)
    # shellcheck disable=SC2086 # the lists are meant to split
    w32=$(median ${res[${key}32]}) w64=$(median ${res[${key}64]})
    for s in "${STARPU_SCHEDS[@]}"; do
        # shellcheck disable=SC2086
        p=$( ((have_starpu)) && median ${res[sp_$s]} || echo NA)
        printf "$fmt" "$N" "$TILE" f32 "$k" "$w32" "StarPU cholesky_implicit $s" "$p" "$(ratio "$w32" "$p")"
    done
    # shellcheck disable=SC2086
    p=$([[ -n $DPOTRF_BIN ]] && median ${res[blas]} || echo NA)
    printf "$fmt" "$N" "$TILE" f64 "$k" "$w64" "OpenBLAS dpotrf, $NCPU threads" "$p" "$(ratio "$w64" "$p")"
done
echo
echo "rounds (GFLOP/s): Weft f32:${res[w32]}; Weft f64:${res[w64]}"
if [[ -n $OPENBLAS_BIN ]]; then echo "  Weft with OpenBLAS kernels f32:${res[o32]}; f64:${res[o64]}"; fi
if ((have_starpu)); then
    for s in "${STARPU_SCHEDS[@]}"; do echo "  StarPU $s:${res[sp_$s]}"; done
fi
if [[ -n $DPOTRF_BIN ]]; then echo "  dpotrf:${res[blas]}"; fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
