#!/usr/bin/env bash
# What creating a task costs the creating thread, per runtime, side by side in one run:
# spawn_cost.c (LD_PRELOAD) times each GOMP_task call inside the parallel region of a
# task benchmark; libgomp, LLVM libomp and Weft take turns, and the medians over the
# rounds of each runtime's per-run median and mean are printed (µs per call; calls that
# ran a task body, over 100 µs, are left out and counted).
#
# Usage: bench/omp_tasks/spawn_cost.sh [rounds] [program args...]
#        (default 5 rounds of `cholesky 2048 128`; also e.g. `5 tasks_million`)
# Environment: OMP_NUM_THREADS (default 2), WEFT_LIB, LIBOMP, WEFT_BASE (runtimes.sh);
# CLANG=1 builds the program with clang-14 (the kmp ABI: a task is __kmpc_omp_task_alloc
# plus __kmpc_omp_task_with_deps or __kmpc_omp_task, timed together) and compares LLVM's
# libomp with Weft standing in for libomp.so.5 (no libgomp column).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/bench/omp_tasks
rounds=${1:-5}
case $rounds in '' | *[!0-9]* | 0) echo "rounds must be a positive number" >&2; exit 2 ;; esac
shift || true
prog=${1:-cholesky}
shift || true
args=("$@")
[ "$prog" = cholesky ] && [ ${#args[@]} -eq 0 ] && args=(2048 128)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
clang=${CLANG:-0}
if [ "$clang" = 1 ]; then
    clang-14 -O3 -fopenmp -o "$out/$prog" "$src/$prog.c" -lm
else
    gcc -O3 -fopenmp -o "$out/$prog" "$src/$prog.c" -lm
fi
if [ "$clang" = 1 ]; then
    # Not linked against libgomp: omp_in_parallel comes from the runtime the program loads.
    gcc -O2 -fopenmp -fPIC -c -o "$out/spawn_cost.o" "$src/spawn_cost.c"
    gcc -shared -o "$out/spawn_cost.so" "$out/spawn_cost.o" -ldl
else
    gcc -O2 -fopenmp -shared -fPIC -o "$out/spawn_cost.so" "$src/spawn_cost.c" -ldl
fi

# shellcheck source=bench/omp_tasks/runtimes.sh
source "$src/runtimes.sh"
if [ "$clang" = 1 ]; then
    # The program loads libomp.so.5 itself: no libgomp column, no preloaded libomp, and
    # Weft's directories stand in for libomp.so.5 as well.
    runtimes=${runtimes#libgomp }
    for d in "$out/weft" "$out/base"; do
        [ -e "$d/libgomp.so.1" ] && ln -sf "$(readlink "$d/libgomp.so.1")" "$d/libomp.so.5"
    done
fi

for _ in $(seq "$rounds"); do
    for r in $runtimes; do
        case $r in
            libgomp) pre=$out/spawn_cost.so lib= ;;
            libomp) pre=$out/spawn_cost.so$([ "$clang" = 1 ] || echo ":$libomp") lib= ;;
            weft) pre=$out/spawn_cost.so lib=$out/weft ;;
            base) pre=$out/spawn_cost.so lib=$out/base ;;
        esac
        line=$(LD_PRELOAD=$pre LD_LIBRARY_PATH=$lib "$out/$prog" "${args[@]}" 2>&1 >/dev/null | grep SPAWN_COST)
        echo "$r $line" >>"$out/all"
    done
done
printf '%-8s | %-10s | %-10s | %-8s | %s\n' runtime "median us" "mean us" calls "over 100 us"
med() { # runtime field -> median over the rounds
    grep "^$1 " "$out/all" | sed -n "s/.* $2=\([0-9.]*\).*/\1/p" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
for r in $runtimes; do
    printf '%-8s | %-10s | %-10s | %-8s | %s\n' "$r" "$(med "$r" median_us)" "$(med "$r" mean_us)" "$(med "$r" calls)" "$(med "$r" over100us)"
done
echo "($prog ${args[*]}, $([ "$clang" = 1 ] && echo clang-14 || echo gcc), OMP_NUM_THREADS=$OMP_NUM_THREADS, medians of $rounds interleaved rounds)"
