#!/usr/bin/env bash
# Weft's distributed tiled Cholesky (weft-mpi's example `cholesky`) side by side with its
# peers on MPI, in one run, at each rank count of RANKS, one CPU worker per rank:
#   f32: StarPU-MPI's mpi_cholesky (StarPU 1.3, Debian package starpu-examples). It is
#        SINGLE precision (float tiles, sgemm/ssyrk/strsm), so it is compared with Weft's
#        example run with WEFT_F32_FLAG (default --f32), when the example accepts it;
#   f64: ScaLAPACK's pdpotrf (bench/mpi/pdpotrf.c, built here with mpicc), against Weft's
#        example in its default f64.
# Prints, per rank count, the medians of ROUNDS interleaved rounds (every program at every
# rank count once per round, so all see the same machine noise), the ratio Weft/peer
# (above 1: Weft is faster) and the bytes each program's ranks send (max over the ranks,
# total), from one untimed run of each before the rounds.
#
# Usage: bench/mpi/run.sh [N] [TILE]
#
# Needs: mpirun (openmpi-bin), mpicc and ScaLAPACK (libopenmpi-dev,
# libscalapack-openmpi-dev), starpu-examples, libopenblas-dev (scripts/setup.sh --bench
# installs the last three), cargo for weft-mpi's example. Whatever is missing fills its
# rows with the reason and the rest still runs.
#
# Environment (all optional):
#   N=2048 TILE=256     matrix order and tile size (the arguments win); N % TILE == 0
#   ROUNDS=3            rounds; medians are reported
#   RANKS="1 2 4"       rank counts; more ranks than cores run oversubscribed
#   TIMEOUT=300         seconds allowed to each mpirun before it is killed (counted as failed)
#   WEFT_MPI_CHOLESKY=  Weft's program; else built (cargo build --release -p weft-mpi
#                       --example mpi_cholesky: $CARGO_TARGET_DIR/release/examples/mpi_cholesky)
#   WEFT_F32_FLAG=--f32 the example's flag for single precision ('' : no f32 row for Weft)
#   WEFT_SCHED, STARPU_SCHED   the runtimes' policies (their defaults if unset)
#   STARPU_MPI_CHOLESKY=/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky
#   MPIRUN_FLAGS=       more options for mpirun
#
# How each program runs (`mpirun -np R --bind-to none`, the environment below):
#   Weft        mpi_cholesky N TILE [--f32], WEFT_NCPU=1 WEFT_NOPENCL=0 WEFT_NCUDA=0
#               WEFT_BIND=0; GFLOP/s is the number before `GFLOP/s` in its output (rank 0);
#               a line starting `result:` other than `result: correct` fails the run.
#               WEFT_MPI_STATS=1 in the untimed run: `weft-mpi rank R: sent B bytes in M messages`.
#   StarPU-MPI  mpi_cholesky -size N -nblocks N/TILE, STARPU_NCPU=1 STARPU_NCUDA=0
#               STARPU_NOPENCL=0 STARPU_WORKERS_NOBIND=1 STARPU_MPI_NOBIND=1. Its tiles are
#               dealt 2-D block-cyclically over its own dblocksx×dblocksy grid. GFLOP/s is
#               N³/3 over its "Computation time (in ms)" (rank 0; barrier to barrier around
#               the submission and the wait), not its "Synthetic GFlops" (which sums its
#               tasks' flops, a little more than N³/3). Each rank also runs StarPU-MPI's
#               progression thread, which polls while requests are pending: it takes a good
#               share of a core (about half of one, seen on this 2-core machine at 2 ranks).
#               STARPU_COMM_STATS=1 in the untimed run (which also calibrates the models
#               under STARPU_HOME, default $CARGO_TARGET_DIR/bench-starpu-mpi); each rank
#               prints `[starpu_comm_stats][R] TOTAL:	B B	MB MB	...` on stderr: bytes
#               it sent, no message count. Its bytes are f32's: 4 bytes per element.
#   ScaLAPACK   pdpotrf N TILE, OPENBLAS_NUM_THREADS=1; a P×Q grid as square as possible
#               (1×1, 1×2, 2×2); PDPOTRF_STATS=1 in the untimed run gives weft-mpi's line
#               format (bytes MPI sends inside pdpotrf, counted over PMPI; see pdpotrf.c).
# Binding: StarPU 1.3 binds every process's first worker to core 0 whatever mpirun's
# binding (seen here: both ranks' workers on core 0, their MPI threads on core 1), and
# Weft binds worker i to core i % ncores. Under one mpirun on one machine that stacks all
# ranks on core 0, so every runtime's binding is off and mpirun binds nothing: the kernel
# spreads the ranks. All BLAS calls go to OpenBLAS, single-threaded.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

N=${1:-${N:-2048}}
TILE=${2:-${TILE:-256}}
ROUNDS=${ROUNDS:-3}
TIMEOUT=${TIMEOUT:-300}
read -r -a RANKS <<< "${RANKS:-1 2 4}"
WEFT_F32_FLAG=${WEFT_F32_FLAG---f32}
STARPU_BIN=${STARPU_MPI_CHOLESKY:-/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky}
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-pthread
read -r -a EXTRA_FLAGS <<< "${MPIRUN_FLAGS:-}"
if (($# > 2)); then
    echo "usage: bench/mpi/run.sh [N] [TILE]" >&2
    exit 2
fi
for v in N TILE ROUNDS TIMEOUT; do
    case ${!v} in '' | *[!0-9]* | 0*) echo "$v must be a positive number, not '${!v}'" >&2; exit 2 ;; esac
done
((${#RANKS[@]})) || { echo "RANKS must name at least one rank count" >&2; exit 2; }
for r in "${RANKS[@]}"; do
    case $r in *[!0-9]* | 0*) echo "RANKS must be positive numbers, not '$r'" >&2; exit 2 ;; esac
done
((TILE <= N)) || { echo "TILE ($TILE) must not exceed N ($N)" >&2; exit 2; }
((N % TILE == 0)) || { echo "N ($N) must be a multiple of TILE ($TILE)" >&2; exit 2; }
NBLOCKS=$((N / TILE))
command -v mpirun > /dev/null || { echo "mpirun not found: apt-get install openmpi-bin (scripts/setup.sh)" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-$root/target}

# Open MPI: allowed to run more ranks than cores, as root where the script runs as root,
# and no binding (see the header). Its warnings, if any, are shown: a failed run's last
# lines go to stderr.
MPIRUN=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) == 0 ]] && MPIRUN+=(--allow-run-as-root)
MPIRUN+=(${EXTRA_FLAGS[@]+"${EXTRA_FLAGS[@]}"})
if [[ -d $OPENBLAS_DIR ]]; then
    export LD_LIBRARY_PATH=$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
    echo "no OpenBLAS in $OPENBLAS_DIR: StarPU and ScaLAPACK use whatever BLAS the system has" >&2
fi
export OPENBLAS_NUM_THREADS=1
unset WEFT_NNULL WEFT_MPI_STATS STARPU_COMM_STATS PDPOTRF_STATS

# Weft's program: given, or built; otherwise its rows say why.
WEFT_BIN='' weft_missing=''
if [[ -n ${WEFT_MPI_CHOLESKY:-} ]]; then
    if [[ -x $WEFT_MPI_CHOLESKY ]]; then WEFT_BIN=$WEFT_MPI_CHOLESKY; else weft_missing="WEFT_MPI_CHOLESKY=$WEFT_MPI_CHOLESKY is not an executable"; fi
else
    echo "building weft-mpi's example mpi_cholesky (release)..." >&2
    if err=$(cargo build --release -q -p weft-mpi --example mpi_cholesky 2>&1); then
        WEFT_BIN=$target/release/examples/mpi_cholesky
    else
        weft_missing="cargo build -p weft-mpi --example mpi_cholesky: $(grep -m1 -i 'error' <<< "$err" | sed 's/^error: //' || head -1 <<< "$err")"
    fi
fi
[[ -n $weft_missing ]] && echo "weft-mpi: not built ($weft_missing)" >&2
export WEFT_HOME=${WEFT_HOME:-$target/bench-weft-mpi}
mkdir -p "$WEFT_HOME"

starpu_missing=
[[ -x $STARPU_BIN ]] || starpu_missing="no $STARPU_BIN: apt-get install starpu-examples"
export STARPU_HOME=${STARPU_HOME:-$target/bench-starpu-mpi}
mkdir -p "$STARPU_HOME"

PDPOTRF_BIN=$target/bench-mpi/pdpotrf pdpotrf_missing=
mkdir -p "$target/bench-mpi"
if ! command -v mpicc > /dev/null; then
    pdpotrf_missing="no mpicc: apt-get install libopenmpi-dev"
elif ! err=$(mpicc -O2 "$root/bench/mpi/pdpotrf.c" -o "$PDPOTRF_BIN" -lscalapack-openmpi -lm 2>&1); then
    pdpotrf_missing="cannot build bench/mpi/pdpotrf.c: apt-get install libscalapack-openmpi-dev ($(head -1 <<< "$err"))"
fi
[[ -n $starpu_missing ]] && echo "StarPU-MPI: $starpu_missing" >&2
[[ -n $pdpotrf_missing ]] && echo "ScaLAPACK: $pdpotrf_missing" >&2

# ---- One run of each program. Each prints "GFLOP/s" or "NA" (and why, on stderr); with
# a last argument "stats" it runs with the program's statistics on and prints
# "GFLOP/s max_bytes total_bytes messages grid" instead (fields "NA" when unknown).

gflops_of() { grep -oE '[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? ?GFLOP/s' | head -1 | grep -oE '^[0-9.eE+-]+' || true; }
# Bytes from lines "... rank R: sent B bytes in M messages": max, total, messages.
sent_of() { awk '/rank [0-9]+: sent [0-9]+ bytes in [0-9]+ messages/ {
        for (i = 1; i < NF; i++) if ($i == "sent") { b = $(i + 1); m = $(i + 4) }
        if (b > max) max = b; tot += b; msgs += m; n++ }
    END { if (n) printf "%.0f %.0f %.0f\n", max, tot, msgs; else print "NA NA NA" }'; }
fail() { # program ranks output
    echo "$1 at $2 ranks failed:" >&2
    tail -4 <<< "$3" | sed 's/^/    /' >&2
    echo NA
}

weft() { # ranks precision(f32|f64) [stats]
    local out g flag=() env=(WEFT_NCPU=1 WEFT_NOPENCL=0 WEFT_NCUDA=0 WEFT_BIND=0)
    [[ $2 == f32 ]] && flag=("$WEFT_F32_FLAG")
    [[ ${3:-} == stats ]] && env+=(WEFT_MPI_STATS=1)
    if ! out=$(env "${env[@]}" timeout "$TIMEOUT" "${MPIRUN[@]}" -np "$1" "$WEFT_BIN" "$N" "$TILE" "${flag[@]}" 2>&1) ||
        { grep -q '^result:' <<< "$out" && ! grep -q '^result: correct' <<< "$out"; } || [[ -z $(gflops_of <<< "$out") ]]; then
        fail "weft-mpi cholesky${flag[*]:+ ${flag[*]}}" "$1" "$out"
        return
    fi
    g=$(gflops_of <<< "$out")
    if [[ ${3:-} == stats ]]; then echo "$g $(sent_of <<< "$out") -"; else echo "$g"; fi
}
starpu() { # ranks [stats]
    local out ms grid env=(STARPU_NCPU=1 STARPU_NCUDA=0 STARPU_NOPENCL=0 STARPU_WORKERS_NOBIND=1 STARPU_MPI_NOBIND=1 STARPU_SILENT=1)
    [[ ${2:-} == stats ]] && env+=(STARPU_COMM_STATS=1)
    if ! out=$(env "${env[@]}" timeout "$TIMEOUT" "${MPIRUN[@]}" -np "$1" "$STARPU_BIN" -size "$N" -nblocks "$NBLOCKS" 2>&1) ||
        ! ms=$(sed -n 's/^Computation time (in ms): *\([0-9.]*\).*/\1/p' <<< "$out" | head -1) || [[ -z $ms ]]; then
        fail "StarPU-MPI mpi_cholesky" "$1" "$out"
        return
    fi
    local g
    g=$(awk -v n="$N" -v ms="$ms" 'BEGIN { printf "%.2f\n", n * n * n / 3 / (ms / 1e3) / 1e9 }')
    if [[ ${2:-} == stats ]]; then
        # "[starpu_comm_stats][R] TOTAL:<tab>B B<tab>MB MB<tab> B/s B/s<tab> MB/s MB/s"; no
        # lines at all at 1 rank.
        grid=$(sed -n 's/.*dblocksx: *\([0-9]*\) - dblocksy: *\([0-9]*\).*/\1x\2/p' <<< "$out" | head -1)
        echo "$g $(awk -v r="$1" '/^\[starpu_comm_stats\]\[[0-9]+\] TOTAL:/ { b = $3 + 0; if (b > max) max = b; tot += b; n++ }
            END { if (n || r == 1) printf "%.0f %.0f NA\n", max, tot; else print "NA NA NA" }' <<< "$out") ${grid:--}"
    else
        echo "$g"
    fi
}
pdpotrf() { # ranks [stats]
    local out grid env=(OPENBLAS_NUM_THREADS=1)
    [[ ${2:-} == stats ]] && env+=(PDPOTRF_STATS=1)
    if ! out=$(env "${env[@]}" timeout "$TIMEOUT" "${MPIRUN[@]}" -np "$1" "$PDPOTRF_BIN" "$N" "$TILE" 2>&1) ||
        ! grep -q '^check: .*: correct$' <<< "$out"; then
        fail "ScaLAPACK pdpotrf" "$1" "$out"
        return
    fi
    if [[ ${2:-} == stats ]]; then
        grid=$(sed -n 's/.*(grid \([0-9]*x[0-9]*\)).*/\1/p' <<< "$out")
        echo "$(gflops_of <<< "$out") $(sent_of <<< "$out") ${grid:--}"
    else
        gflops_of <<< "$out"
    fi
}

# Median of the numbers given (NA if any is NA).
median() {
    printf '%s\n' "$@" | sort -g | awk '
        /NA/ { na = 1 } { v[NR] = $1 }
        END { if (na || NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.2f\n", a / b }'; }
mib() { awk -v b="$1" 'BEGIN { if (b == "NA" || b == "") print "NA"; else printf "%.2f\n", b / 1048576 }'; }

# The programs, by key (w32/w64: Weft f32/f64, sp: StarPU-MPI, pd: ScaLAPACK); Weft's f32
# runs only when its flag is set.
progs=(sp w64 pd)
[[ -n $WEFT_F32_FLAG ]] && progs=(w32 "${progs[@]}")
missing() { # key -> the reason it does not run, or nothing
    case $1 in
        w32 | w64) echo "$weft_missing" ;;
        sp) echo "$starpu_missing" ;;
        pd) echo "$pdpotrf_missing" ;;
    esac
}
run_one() { # key ranks [stats]
    case $1 in
        w32) weft "$2" f32 ${3:+"$3"} ;;
        w64) weft "$2" f64 ${3:+"$3"} ;;
        sp) starpu "$2" ${3:+"$3"} ;;
        pd) pdpotrf "$2" ${3:+"$3"} ;;
    esac
}

commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || commit="$commit (modified)"
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2> /dev/null || echo "not installed"; }
echo "== Distributed Cholesky: weft-mpi vs StarPU-MPI mpi_cholesky (f32) and ScaLAPACK pdpotrf (f64) =="
echo "machine  : $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "commit   : $commit"
echo "Weft     : ${WEFT_BIN:-not built ($weft_missing)}${WEFT_BIN:+, f32 flag \"$WEFT_F32_FLAG\"}"
echo "StarPU   : $(pkg_version starpu-examples) ($STARPU_BIN), single precision"
echo "ScaLAPACK: $(pkg_version libscalapack-openmpi-dev), Open MPI $(pkg_version openmpi-bin), OpenBLAS $(pkg_version libopenblas0-pthread)"
echo "mpirun   : ${MPIRUN[*]} -np R; one CPU worker (one BLAS thread) per rank"
echo "matrix   : n = $N, tiles of $TILE ($NBLOCKS x $NBLOCKS); ranks ${RANKS[*]}; $ROUNDS rounds, medians; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# The untimed run of every program at every rank count: statistics, calibration, warm
# caches. A program that fails there is left out of the rounds at that rank count.
declare -A res stat why
for p in "${progs[@]}"; do
    m=$(missing "$p")
    for r in "${RANKS[@]}"; do [[ -n $m ]] && why[$p,$r]=$m; done
done
for r in "${RANKS[@]}"; do
    for p in "${progs[@]}"; do
        [[ -n ${why[$p,$r]:-} ]] && continue
        echo "untimed run with statistics: $p at $r ranks..." >&2
        stat[$p,$r]=$(run_one "$p" "$r" stats)
        if [[ ${stat[$p,$r]} == NA ]]; then
            why[$p,$r]="failed in the untimed run (its output is above)"
            [[ $p == w32 ]] && why[$p,$r]="failed with '$WEFT_F32_FLAG' in the untimed run (output above)"
        fi
    done
done
for ((round = 1; round <= ROUNDS; round++)); do
    echo "round $round/$ROUNDS..." >&2
    for r in "${RANKS[@]}"; do
        for p in "${progs[@]}"; do
            [[ -n ${why[$p,$r]:-} ]] && continue
            res[$p,$r]+=" $(run_one "$p" "$r")"
        done
    done
done

# One program at one rank count: "GFLOP/s|sent MiB max/total (messages)|note".
cell() { # key ranks
    local g max tot msgs
    if [[ -n ${why[$1,$2]:-} ]]; then
        echo "NA|-|${why[$1,$2]}"
        return
    fi
    # shellcheck disable=SC2086 # the list is meant to split
    g=$(median ${res[$1,$2]:-NA})
    read -r _ max tot msgs _ <<< "${stat[$1,$2]:-NA NA NA NA}"
    echo "$g|$(mib "${max:-NA}")/$(mib "${tot:-NA}") (${msgs:-NA})|"
}
label() { case $1 in w32 | w64) echo weft-mpi ;; sp) echo StarPU-MPI ;; pd) echo ScaLAPACK ;; esac; }
row() { printf '%-9s | %9s | %-23s %9s | %9s | %-22s | %-22s | %s\n' "$@"; }
for r in "${RANKS[@]}"; do
    grid_sp=$(awk '{ print $5 }' <<< "${stat[sp,$r]:-}")
    grid_pd=$(awk '{ print $5 }' <<< "${stat[pd,$r]:-}")
    echo "-- $r rank(s), one worker each${grid_pd:+; ScaLAPACK grid $grid_pd}${grid_sp:+; StarPU-MPI grid $grid_sp} --"
    row precision "Weft" peer "peer" "Weft/peer" "Weft sent MiB" "peer sent MiB" ""
    row "" "GFLOP/s" "" "GFLOP/s" "" "max/total (messages)" "max/total (messages)" ""
    for pair in "w32 sp f32 StarPU-MPI mpi_cholesky" "w64 pd f64 ScaLAPACK pdpotrf"; do
        read -r wk pk prec name <<< "$pair"
        [[ " ${progs[*]} " == *" $pk "* ]] || continue
        if [[ " ${progs[*]} " == *" $wk "* ]]; then
            w=$(cell "$wk" "$r")
        else
            w="NA|-|no f32 run (WEFT_F32_FLAG is empty)"
        fi
        p=$(cell "$pk" "$r")
        IFS='|' read -r wg ws wn <<< "$w"
        IFS='|' read -r pg ps pn <<< "$p"
        note=
        if [[ -n $wn ]]; then
            note="weft-mpi: $([[ -n $weft_missing ]] && echo "not built" || echo "not run") ($wn)"
        fi
        [[ -n $pn ]] && note+="${note:+; }$(label "$pk"): not run ($pn)"
        row "$prec" "$wg" "$name" "$pg" "$(ratio "$wg" "$pg")" "$ws" "$ps" "$note"
    done
    echo
done
echo "Bytes: sent by each rank (max over the ranks / total), from the untimed run. StarPU-MPI's"
echo "  tiles are f32 (4 B per element, half of f64's) and it counts no messages; ScaLAPACK's"
echo "  collectives count as flat trees (bench/mpi/pdpotrf.c). Beside its worker, each StarPU-MPI"
echo "  rank runs a progression thread that polls while receives are posted (most of the run)."
echo "rounds (GFLOP/s):"
for r in "${RANKS[@]}"; do
    line="  $r rank(s):"
    for p in "${progs[@]}"; do line+=" $p:${res[$p,$r]:- -};"; done
    echo "$line"
done
echo "  (w32/w64: Weft f32/f64, sp: StarPU-MPI f32, pd: ScaLAPACK f64)"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
