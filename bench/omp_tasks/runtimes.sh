# shellcheck shell=bash disable=SC2154 # root and out: set by the sourcing script
# Sourced by run.sh and spawn_cost.sh (with $root and $out set): the runtimes to compare.
# Sets `runtimes` (libgomp, then libomp and weft when present), `libomp` (the LLVM library
# to LD_PRELOAD) and links Weft's library as $out/weft/libgomp.so.1 (run a program with
# LD_LIBRARY_PATH=$out/weft and libgomp is not loaded at all).
# Environment: LIBOMP (default: the first libomp.so.5 found under /usr/lib), WEFT_LIB
# (default: $CARGO_TARGET_DIR or ./target, release/libweft.so), WEFT_BASE (optional: another
# libweft.so, e.g. one built from main, run as the column `base` for an A/B in one run),
# BASE_ENV (optional: VAR=value settings for the `base` column only, e.g. BASE_ENV=WEFT_BIND=0;
# without WEFT_BASE, `base` is then the same library: an A/B of a setting).
runtimes="libgomp"
find_libomp() { ls /usr/lib/llvm-*/lib/libomp.so.5 /usr/lib/x86_64-linux-gnu/libomp.so.5 2>/dev/null | head -n 1 || true; }
libomp=${LIBOMP:-$(find_libomp)}
if [ -z "$libomp" ] && [ -z "${LIBOMP:-}" ]; then
    "$root/scripts/setup.sh" --bench >&2 || true
    libomp=$(find_libomp)
fi
[ -n "$libomp" ] && runtimes="$runtimes libomp" || echo "(no libomp.so.5: install libomp5 for the LLVM column)" >&2
weft=${WEFT_LIB:-${CARGO_TARGET_DIR:-$root/target}/release/libweft.so}
if [ -f "$weft" ] && nm -D --defined-only "$weft" 2>/dev/null | grep ' GOMP_task\b' >/dev/null; then
    mkdir -p "$out/weft"
    ln -s "$weft" "$out/weft/libgomp.so.1"
    runtimes="$runtimes weft"
else
    echo "(Weft column left out: $weft does not export GOMP_task yet)" >&2
fi
[ -n "${BASE_ENV:-}" ] && [ -z "${WEFT_BASE:-}" ] && WEFT_BASE=$weft
if [ -n "${WEFT_BASE:-}" ]; then
    [ -f "$WEFT_BASE" ] || { echo "WEFT_BASE=$WEFT_BASE: no such file" >&2; exit 2; }
    mkdir -p "$out/base"
    ln -s "$(realpath "$WEFT_BASE")" "$out/base/libgomp.so.1"
    runtimes="$runtimes base"
fi
