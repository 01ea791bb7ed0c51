#!/usr/bin/env bash
# The creating thread's instructions per task with depend clauses, per runtime and shape
# (bench/omp_tasks/depend_cost.c under callgrind, 2 threads): for the gcc build, GOMP_task's
# inclusive count under libgomp and under Weft as libgomp.so.1; for the clang-14 build,
# __kmpc_omp_task_alloc plus __kmpc_omp_task_with_deps under LLVM's libomp and under Weft as
# libomp.so.5. Instruction counts do not move with the machine's load, so one run decides.
#
# Usage: bench/omp_tasks/depend_cost.sh [shapes...]   (default: 0 1 2 3, see depend_cost.c)
# Environment: R (regions, default 100), N (tasks a region, default 100), WEFT_LIB, LIBOMP,
# WEFT_BASE (runtimes.sh: a `base` library as a third column, for an A/B).
# Needs: gcc, clang-14, valgrind (scripts/setup.sh --bench installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/bench/omp_tasks
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(0 1 2 3)
R=${R:-100} N=${N:-100}
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
for tool in valgrind callgrind_annotate clang-14; do
    command -v "$tool" > /dev/null || "$root/scripts/setup.sh" --bench >&2 || true
    command -v "$tool" > /dev/null || { echo "depend_cost.sh needs $tool" >&2; exit 2; }
done
# shellcheck source=bench/omp_tasks/runtimes.sh
. "$src/runtimes.sh"
gcc -O2 -g -fopenmp -o "$out/dc-gcc" "$src/depend_cost.c"
clang-14 -O2 -g -fopenmp -o "$out/dc-clang" "$src/depend_cost.c"
# Weft (and the base library) as libomp.so.5 for the clang build.
for lib in weft base; do
    [ -e "$out/$lib/libgomp.so.1" ] && ln -s "$(realpath "$out/$lib/libgomp.so.1")" "$out/$lib/libomp.so.5"
done
calls=$((R * N))
# Inclusive instructions per call of the functions named in $2 (a regex alternative of
# names) in callgrind output $1, summed over the names. A function whose code comes from
# several source files (inlining) is listed once per file, the entry's line holding the
# whole inclusive count: the largest line of each name is taken.
per_task() {
    callgrind_annotate --inclusive=yes "$1" 2> /dev/null |
        awk -v re="^($2)\$" -v n="$calls" '
            {
                # "COUNT (PCT%)  FILE:FUNCTION [OBJECT]"
                f = $0; sub(/^ *[0-9,]+ *\( *[0-9.]+%\) */, "", f); sub(/ \[.*$/, "", f)
                sub(/^.*:/, "", f)
                if (f !~ re) next
                c = $1; gsub(",", "", c); c += 0
                if (c > best[f]) best[f] = c
            }
            END { for (f in best) s += best[f]; printf "%.0f", s / n }'
}
run() { # build, library dir ("" = the system's), label
    local f=$out/cg.$1.$3.$shape
    OMP_NUM_THREADS=2 LD_LIBRARY_PATH=$2 valgrind --tool=callgrind --callgrind-out-file="$f" \
        "$out/dc-$1" "$R" "$N" "$shape" > /dev/null 2>&1
    if [ "$1" = gcc ]; then
        per_task "$f" 'GOMP_task'
    else
        per_task "$f" '__kmpc_omp_task_alloc|__kmpc_omp_task_with_deps'
    fi
}
cols="weft"
[ -d "$out/base" ] && cols="weft base"
printf '%-6s %10s' shape libgomp
for c in $cols; do printf ' %10s' "gcc:$c"; done
printf ' %10s' libomp
for c in $cols; do printf ' %10s' "clang:$c"; done
echo
for shape in "${shapes[@]}"; do
    printf '%-6s %10s' "$shape" "$(run gcc "" libgomp)"
    for c in $cols; do printf ' %10s' "$(run gcc "$out/$c" "$c")"; done
    if [ -n "$libomp" ]; then
        printf ' %10s' "$(run clang "$(dirname "$libomp")" libomp)"
    else
        printf ' %10s' -
    fi
    for c in $cols; do printf ' %10s' "$(run clang "$out/$c" "$c")"; done
    echo
done
echo "(instructions a task, the creating thread; R=$R regions of N=$N tasks, 2 threads)"
