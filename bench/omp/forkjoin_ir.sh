#!/usr/bin/env bash
# Instructions per parallel region (empty body; `reduction(+:x)`) and per omp_set_lock /
# omp_unset_lock pair, under callgrind (deterministic, unlike the wall clock of a shared
# machine), for the primary thread and for the other threads together, at 2 threads with
# OMP_WAIT_POLICY=passive (every wait sleeps: the active policy's spinning would swamp the
# counts). Each figure is the difference of two runs (N and 2N operations) over N, so
# start-up cancels out.
#   bench/omp/forkjoin_ir.sh      env: CLANG=1 (clang-14 builds, libomp and Weft as
#                                      libomp.so.5; default: gcc builds, libgomp and Weft as
#                                      libgomp.so.1), WEFT_BASE (another libweft.so, a column
#                                      `base`), N (10000 regions; the lock pairs are 100x)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build -q --release -p weft
CLANG=${CLANG:-0} N=${N:-10000}
LIBOMP=${LIBOMP:-/usr/lib/x86_64-linux-gnu/libomp.so.5}
WORK="$TARGET/omp-ir"; rm -rf "$WORK"; mkdir -p "$WORK/weft" "$WORK/base" "$WORK/libomp"
cat > "$WORK/parallel.c" <<'C'
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  for (int i = 0; i < n; i++) {
#pragma omp parallel
    { __asm__ volatile("" ::: "memory"); } /* empty, but kept (an empty region is not) */
  }
  return 0;
}
C
cat > "$WORK/reduction.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]); long t = 0;
  for (int i = 0; i < n; i++) {
    int x = 0;
#pragma omp parallel reduction(+:x)
    { x += 1; }
    t += x;
  }
  printf("%ld\n", t);
  return 0;
}
C
cat > "$WORK/lock.c" <<'C'
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]); long c = 0; omp_lock_t l;
  omp_init_lock(&l);
#pragma omp parallel
  { }
  for (int i = 0; i < n; i++) { omp_set_lock(&l); c++; omp_unset_lock(&l); }
  printf("%ld\n", c);
  return 0;
}
C
if [ "$CLANG" = 1 ]; then cc=(clang-14 -fopenmp -O2) soname=libomp.so.5 runtimes="libomp weft"
else cc=(gcc -fopenmp -O2) soname=libgomp.so.1 runtimes="libgomp weft"; fi
for p in parallel reduction lock; do "${cc[@]}" "$WORK/$p.c" -o "$WORK/$p"; done
ln -sf "$TARGET/release/libweft.so" "$WORK/weft/$soname"
ln -sf "$LIBOMP" "$WORK/libomp/libomp.so.5"
if [ -n "${WEFT_BASE:-}" ]; then ln -sf "$(realpath "$WEFT_BASE")" "$WORK/base/$soname"; runtimes="$runtimes base"; fi
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive WEFT_NOPENCL=0 WEFT_NCUDA=0
# Instructions of the primary (thread 1) and of the other threads, for `prog n`.
count() {
  local rt=$1 prog=$2 n=$3 lib=""
  local out="$WORK/cg.$rt.$prog.$n"
  case $rt in libomp) [ "$CLANG" = 1 ] && lib=$WORK/libomp;; weft|base) lib=$WORK/$rt;; esac
  if [ "$rt" = libomp ] && [ "$CLANG" != 1 ]; then return 1; fi
  LD_LIBRARY_PATH=$lib valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out.%p" "$WORK/$prog" "$n" >/dev/null 2>&1
  for f in "$out".*-*; do
    t=${f##*-}; v=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    echo "$([ "$t" = 01 ] && echo primary || echo others) $v"
  done | awk '{a[$1] += $2} END {printf "%d %d\n", a["primary"], a["others"]}'
}
printf '%-10s %-8s %12s %12s\n' program runtime primary others
for p in parallel reduction lock; do
  n=$N; [ "$p" = lock ] && n=$((N * 100))
  for rt in $runtimes; do
    read -r p1 o1 < <(count "$rt" "$p" "$n")
    read -r p2 o2 < <(count "$rt" "$p" $((2 * n)))
    awk -v p="$p" -v r="$rt" -v a="$p1" -v b="$p2" -v c="$o1" -v d="$o2" -v n="$n" \
      'BEGIN { printf "%-10s %-8s %12.1f %12.1f\n", p, r, (b - a) / n, (d - c) / n }'
  done
done
echo "(instructions per region, or per lock pair with the loop's own; $([ "$CLANG" = 1 ] && echo clang-14 || echo gcc)-built, 2 threads, OMP_WAIT_POLICY=passive)"
