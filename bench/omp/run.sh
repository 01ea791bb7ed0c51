#!/usr/bin/env bash
# EPCC-style overheads at 2 threads, side by side in one run: GNU libgomp, LLVM libomp
# (LD_PRELOAD of Debian's libomp5) and Weft (libweft.so standing in for libgomp.so.1).
#   bench/omp/run.sh [INNER]        env: ROUNDS (3: runtimes interleaved, best median kept),
#                                        OMP_NUM_THREADS (2; more than the processors
#                                        measures an oversubscribed machine),
#                                        CLANG=1 (syncbench built with clang-14, LLVM's
#                                        __kmpc_* ABI: columns libomp, found as libomp.so.5
#                                        on LD_LIBRARY_PATH, and Weft standing in for
#                                        libomp.so.5, so LLVM's libomp is not loaded;
#                                        no libgomp column),
#                                        WEFT_BASE (another libweft.so, run as a column
#                                        `base` in the same rounds, for an A/B)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build -q --release -p weft
CLANG=${CLANG:-0}
LIBOMP=${LIBOMP:-/usr/lib/x86_64-linux-gnu/libomp.so.5}
WORK="$TARGET/omp-bench"; mkdir -p "$WORK/standin" "$WORK/libomp" "$WORK/base"
if [ "$CLANG" = 1 ]; then
  soname=libomp.so.5 exe=$WORK/syncbench-clang runtimes="libomp weft"
  clang-14 -fopenmp -O2 bench/omp/syncbench.c -o "$exe"
  ln -sf "$(realpath "$LIBOMP")" "$WORK/libomp/libomp.so.5"
else
  soname=libgomp.so.1 exe=$WORK/syncbench runtimes="libgomp libomp weft"
  gcc -fopenmp -O2 bench/omp/syncbench.c -o "$exe"
fi
ln -sf "$TARGET/release/libweft.so" "$WORK/standin/$soname"
if [ -n "${WEFT_BASE:-}" ]; then
  ln -sf "$(realpath "$WEFT_BASE")" "$WORK/base/$soname"
  runtimes="$runtimes base"
fi
if [ "$CLANG" = 1 ]; then
  # Each column's libomp.so.5 must be the library it names: a Weft column that mapped LLVM's
  # libomp as well would measure libomp.
  for rt in $runtimes; do
    dir=$WORK/standin; want=$TARGET/release/libweft.so
    case $rt in libomp) dir=$WORK/libomp want=$LIBOMP ;; base) dir=$WORK/base want=$WEFT_BASE ;; esac
    deps=$(LD_LIBRARY_PATH=$dir ldd "$exe" | awk '$2 == "=>" {print $1, $3}')
    got=$(awk '$1 == "libomp.so.5" {print $2}' <<< "$deps")
    if [ -z "$got" ] || [ "$(realpath "$got")" != "$(realpath "$want")" ]; then
      echo "$rt: libomp.so.5 resolves to '$got', not $want" >&2; exit 1
    fi
    if [ "$rt" != libomp ]; then
      while read -r _ path; do
        [ "$(realpath "$path")" != "$(realpath "$LIBOMP")" ] || { echo "$rt: LLVM's libomp is loaded ($path)" >&2; exit 1; }
      done <<< "$deps"
    fi
  done
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} WEFT_NOPENCL=0 WEFT_NCUDA=0
declare -A best
for _ in $(seq "${ROUNDS:-3}"); do
  for rt in $runtimes; do
    case $rt in
      libgomp) out=$("$exe" "$@");;
      libomp) if [ "$CLANG" = 1 ]; then out=$(LD_LIBRARY_PATH="$WORK/libomp" "$exe" "$@"); else out=$(LD_PRELOAD=$LIBOMP "$exe" "$@"); fi;;
      weft) out=$(LD_LIBRARY_PATH="$WORK/standin" "$exe" "$@");;
      base) out=$(LD_LIBRARY_PATH="$WORK/base" "$exe" "$@");;
    esac
    while read -r name v; do
      k="$rt:$name"
      if [ -z "${best[$k]:-}" ] || awk -v a="$v" -v b="${best[$k]}" 'BEGIN{exit !(a<b)}'; then best[$k]=$v; fi
    done <<< "$out"
  done
done
printf '%-13s' construct
for rt in $runtimes; do printf ' %10s' "$rt"; done
printf ' %8s' ratio
[ -n "${WEFT_BASE:-}" ] && printf ' %9s' weft/base
echo
for name in PARALLEL FOR PARALLEL_FOR BARRIER SINGLE CRITICAL LOCK ORDERED ATOMIC REDUCTION; do
  printf '%-13s' "$name"
  for rt in $runtimes; do printf ' %10.3f' "${best[$rt:$name]:-nan}"; done
  o=${best[libomp:$name]:-nan}; g=${best[libgomp:$name]:-$o}; w=${best[weft:$name]:-nan}
  awk -v g="$g" -v o="$o" -v w="$w" 'BEGIN{
    f = (g < o ? g : o); fl = (f < 0.005 ? 0.005 : f); wl = (w < 0.005 ? 0.005 : w);
    printf " %7.2fx", wl / fl }'
  if [ -n "${WEFT_BASE:-}" ]; then
    awk -v b="${best[base:$name]:-nan}" -v w="$w" 'BEGIN{
      bl = (b < 0.005 ? 0.005 : b); wl = (w < 0.005 ? 0.005 : w); printf " %8.2fx", wl / bl }'
  fi
  echo
done
echo "($([ "$CLANG" = 1 ] && echo clang-14 || echo gcc)-built; microseconds per construct at $OMP_NUM_THREADS threads, best of ${ROUNDS:-3} medians; ratio = weft / faster peer, values under 5 ns counted as 5 ns)"
