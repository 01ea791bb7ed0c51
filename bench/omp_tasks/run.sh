#!/usr/bin/env bash
# Issue 6's OpenMP task benchmarks, side by side in one run: GNU libgomp (the system's),
# LLVM libomp (LD_PRELOAD of Debian's libomp.so.5) and Weft (libweft.so standing in for
# libgomp.so.1, so libgomp is not loaded at all), when Weft's library exports GOMP_task.
#
#   tasks_million  a million empty tasks created by one thread     target: Weft <= libgomp
#   fib            fib(30), a task per call above an `if` cutoff   target: Weft <= 1.1x libgomp
#   cholesky       tiled Cholesky with depend clauses              target: Weft <= both
#   sparselu       BOTS SparseLU with depend clauses               target: Weft <= both
#   wavefront      200x200 blocks, each depending on its upper and left neighbours,
#                  created row by row (a creator must run ahead of the tasks in flight)
#   taskloop       200 taskloops of 100 tasks with a reduction, from one thread
#   deptree        recursive tasks with depend clauses (two writers and a reader per call)
#
# Usage: bench/omp_tasks/run.sh [rounds]   (default 5; medians of the rounds)
# Environment: OMP_NUM_THREADS (default 2), WEFT_LIB (default target/release/libweft.so),
#              PROGS (default: all seven, e.g. PROGS="cholesky sparselu"; a program's
#              arguments follow its name after colons, e.g. "cholesky:2048:64"),
#              LIBOMP (default: the first libomp.so.5 found under /usr/lib), WEFT_BASE
#              (another libweft.so, run as column `base` beside `weft`: an A/B of two
#              builds in the same interleaved rounds, with a weft/base column), BASE_ENV
#              (VAR=value settings for the base column alone; without WEFT_BASE, base is
#              Weft's library again: e.g. BASE_ENV=WEFT_BIND=0 for an A/B of a setting).
# Each program checks its own result and prints `RESULT name=… seconds=… check=ok`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/bench/omp_tasks
rounds=${1:-5}
case $rounds in '' | *[!0-9]* | 0) echo "rounds must be a positive number" >&2; exit 2 ;; esac
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export SPARSELU_REF_DIR=$out # its sequential reference, computed once per size

clang=${CLANG:-0}
cc=(gcc -O3 -fopenmp)
[ "$clang" = 1 ] && cc=(clang-14 -O3 -fopenmp)
progs=${PROGS:-tasks_million fib cholesky sparselu wavefront taskloop deptree}
for spec in $progs; do
    p=${spec%%:*}
    [ -x "$out/$p" ] || "${cc[@]}" -o "$out/$p" "$src/$p.c" -lm
done

# shellcheck source=bench/omp_tasks/runtimes.sh
source "$src/runtimes.sh"
if [ "$clang" = 1 ]; then
    # The programs load libomp.so.5 themselves (DT_NEEDED): no libgomp column. libomp's
    # column finds LLVM's library in a directory of its own; Weft's directories hold
    # libweft.so under the same name, so the dynamic linker never maps LLVM's.
    [[ " $runtimes " == *" libomp "* ]] || { echo "CLANG=1 needs libomp.so.5 (LIBOMP)" >&2; exit 2; }
    runtimes=${runtimes#libgomp }
    mkdir -p "$out/libomp"
    ln -s "$(realpath "$libomp")" "$out/libomp/libomp.so.5"
    for d in "$out/weft" "$out/base"; do
        [ -e "$d/libgomp.so.1" ] && ln -s "$(readlink "$d/libgomp.so.1")" "$d/libomp.so.5"
    done
    # Which file each column's dynamic linker resolves libomp.so.5 to, checked once: a
    # Weft column that loaded LLVM's libomp would compare libomp with itself.
    first=${progs%% *}
    first=${first%%:*}
    for r in $runtimes; do
        deps=$(LD_LIBRARY_PATH=$out/$r ldd "$out/$first" | awk '$2 == "=>" {print $1, $3}')
        resolved=$(awk '$1 == "libomp.so.5" {print $2}' <<<"$deps")
        case $r in
            libomp) want=$(realpath "$libomp") ;;
            weft | base) want=$(realpath "$(readlink "$out/$r/libomp.so.5")") ;;
        esac
        [ -n "$resolved" ] && [ "$(realpath "$resolved")" = "$want" ] ||
            { echo "$r: libomp.so.5 resolves to '$resolved', not $want" >&2; exit 1; }
        if [ "$r" != libomp ]; then
            while read -r _ path; do
                [ "$(realpath "$path")" != "$(realpath "$libomp")" ] ||
                    { echo "$r: LLVM's libomp is loaded as well ($path)" >&2; exit 1; }
            done <<<"$deps"
        fi
    done
fi

run() { # runtime program:arg:... -> seconds (fails loudly on a wrong result)
    local line args
    IFS=: read -ra args <<<"$2"
    case $1 in
        libgomp) line=$("$out/${args[0]}" "${args[@]:1}") ;;
        libomp)
            if [ "$clang" = 1 ]; then
                line=$(LD_LIBRARY_PATH=$out/libomp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$out/${args[0]}" "${args[@]:1}")
            else
                line=$(LD_PRELOAD=$libomp "$out/${args[0]}" "${args[@]:1}")
            fi
            ;;
        weft) line=$(LD_LIBRARY_PATH=$out/weft${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$out/${args[0]}" "${args[@]:1}") ;;
        base)
            # shellcheck disable=SC2086 # BASE_ENV: VAR=value words
            line=$(env ${BASE_ENV:-} LD_LIBRARY_PATH=$out/base${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$out/${args[0]}" "${args[@]:1}")
            ;;
    esac
    case $line in *check=ok*) ;; *) echo "$1 $2: wrong result: $line" >&2; return 1 ;; esac
    # Cholesky and SparseLU also report the threads' time outside their kernels.
    sed -n 's/.*outside_ms=\([0-9.]*\).*/\1/p' <<<"$line" >>"$out/outside-$1"
    sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-14s' program
for r in $runtimes; do printf ' | %-10s' "$r (s)"; done
if [[ $runtimes == *weft* ]]; then
    [[ " $runtimes " == *" libgomp "* ]] && printf ' | %-14s' "weft/libgomp"
    printf ' | %-14s' "weft/libomp"
fi
# weft/base only with both columns (base is WEFT_BASE; weft may be missing).
ab=$([[ " $runtimes " == *" weft "* && " $runtimes " == *" base "* ]] && echo 1 || true)
[ -n "$ab" ] && printf ' | %-10s' "weft/base"
echo
for p in $progs; do
    declare -A med=()
    # Interleaved: each round runs every runtime once, so a change in the machine's load
    # hits all columns alike.
    for _ in $(seq "$rounds"); do
        for r in $runtimes; do run "$r" "$p" >>"$out/times-$r"; done
    done
    # Also the median of each round's own ratio: runs of one round share the machine's
    # state of the moment, so on a noisy machine (a VM with steal time) these pairs are
    # steadier than the ratio of the medians.
    paired=""
    if [[ " $runtimes " == *" weft "* ]]; then
        for peer in libgomp libomp base; do
            [ -s "$out/times-$peer" ] || continue
            paired+=" weft/$peer $(paste "$out/times-weft" "$out/times-$peer" | awk '{print $1 / $2}' | median)"
        done
    fi
    for r in $runtimes; do
        med[$r]=$(median <"$out/times-$r")
        rm -f "$out/times-$r"
    done
    printf '%-14s' "$p"
    for r in $runtimes; do printf ' | %-10s' "${med[$r]}"; done
    if [[ $runtimes == *weft* ]]; then
        [[ " $runtimes " == *" libgomp "* ]] && awk -v w="${med[weft]}" -v g="${med[libgomp]}" 'BEGIN { printf " | %-14.3f", w / g }'
        awk -v w="${med[weft]}" -v o="${med[libomp]:-0}" 'BEGIN { printf " | %-14s", (o > 0 ? sprintf("%.3f", w / o) : "-") }'
    fi
    if [ -n "$ab" ]; then
        awk -v w="${med[weft]}" -v b="${med[base]}" 'BEGIN { printf " | %-10.3f", w / b }'
    fi
    echo
    [ -n "$paired" ] && [ "$rounds" -gt 1 ] && printf '%-14s | %s\n' "  per round" "$(awk '{for (i = 1; i < NF; i += 2) printf "%s%s %.3f", (i > 1 ? ", " : ""), $i, $(i + 1)}' <<<"$paired")"
    if [ -s "$out/outside-${runtimes%% *}" ]; then
        outside_shown=1
        printf '%-14s' "  outside (ms)"
        for r in $runtimes; do printf ' | %-10s' "$(median <"$out/outside-$r")"; done
        echo
    fi
    for r in $runtimes; do rm -f "$out/outside-$r"; done
    unset med
done
[[ " $runtimes " == *" weft "* ]] && echo "(per round: the median over the rounds of each round's own ratio, steadier on a noisy machine)"
if [ -n "${outside_shown:-}" ]; then
    echo "(outside (ms): the threads' time outside the task kernels, threads x wall - kernel time: what"
    echo " creating, scheduling and waiting for tasks cost; steadier than the wall time when all"
    echo " runtimes keep every core busy)"
fi
echo "($([ "$clang" = 1 ] && echo "clang-14" || echo "gcc")-built, OMP_NUM_THREADS=$OMP_NUM_THREADS, medians of $rounds interleaved rounds; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
