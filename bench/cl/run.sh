#!/usr/bin/env bash
# Issue 4's OpenCL targets, side by side in one run: the same unmodified program (clbench.c)
# on PoCL direct, on Weft through the ICD loader (when libweft_icd.so is built), and on
# StarPU's SOCL. Targets, as ratios to PoCL direct: tiny-kernel overhead <= 1.2x, 64 MiB
# read and write bandwidth >= 0.9x, SGEMM GFLOP/s >= 0.95x.
#
# Usage: bench/cl/run.sh [rounds]        (default 3; medians over rounds)
# Environment: WEFT_ICD_LIB (default target/release/libweft_icd.so), WEFT_DEVICE (Weft's
# device index for the in-order queue, default 0), POCL_DEVICES (PoCL's default if unset),
# NO_SOCL=1 to leave SOCL out.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
rounds=${1:-3}
case $rounds in '' | *[!0-9]* | 0) echo "rounds must be a positive number" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O2 -Wall -Wextra -o "$out/clbench" bench/cl/clbench.c -lOpenCL -lm

pocl_icd=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -n 1 || true)
[ -n "$pocl_icd" ] || { echo "no PoCL .icd under /etc/OpenCL/vendors: install pocl-opencl-icd" >&2; exit 1; }
columns="pocl"
weft_icd=${WEFT_ICD_LIB:-${CARGO_TARGET_DIR:-$root/target}/release/libweft_icd.so}
if [ -f "$weft_icd" ]; then
    mkdir -p "$out/weft"
    echo "$weft_icd" >"$out/weft/weft.icd"
    columns="$columns weft"
else
    echo "(Weft column left out: no $weft_icd; build with cargo build --release -p weft -p weft-icd-shim)" >&2
fi
find_socl() { ls /usr/lib/x86_64-linux-gnu/libsocl-*.so.0 2>/dev/null | head -n 1 || true; }
socl=$(find_socl)
if [ -z "$socl" ] && [ -z "${NO_SOCL:-}" ]; then
    scripts/setup.sh --bench >&2 || true
    socl=$(find_socl)
    [ -n "$socl" ] || echo "(SOCL column left out: install libsocl-1.3-0)" >&2
fi
if [ -n "$socl" ] && [ -z "${NO_SOCL:-}" ]; then
    mkdir -p "$out/socl"
    echo "$socl" >"$out/socl/socl.icd"
    cp "$pocl_icd" "$out/socl/" # SOCL drives the real devices through the loader
    columns="$columns socl"
fi

run() { # column -> RESULT line
    case $1 in
        pocl) OCL_ICD_VENDORS=$pocl_icd "$out/clbench" Portable 0 ;;
        weft) OCL_ICD_VENDORS=$out/weft "$out/clbench" Weft "${WEFT_DEVICE:-0}" ;;
        socl) STARPU_SILENT=1 STARPU_OPENCL_ON_CPUS=1 STARPU_NCPU=0 OCL_ICD_VENDORS=$out/socl "$out/clbench" SOCL 0 ;;
    esac 2>"$out/$1.err" | grep '^RESULT' || { echo "RESULT check=crashed:$(tail -n 1 "$out/$1.err" | tr ' ' _)"; }
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A val check
# Rounds interleave the columns, so a noisy stretch of the machine hits them all.
for _ in $(seq "$rounds"); do
    for c in $columns; do run "$c" >>"$out/$c.txt"; done
done
for c in $columns; do
    for k in tiny_us tiny_enqueue_us write_gbs read_gbs sgemm_gflops; do
        val[$c.$k]=$(field "$k" <"$out/$c.txt" | median)
    done
    check[$c]=$(field check <"$out/$c.txt" | sort -u | tr '\n' ' ')
done

printf '%-16s' measure
for c in $columns; do printf ' | %-10s' "$c"; done
for c in $columns; do [ "$c" = pocl ] || printf ' | %-12s' "$c/pocl"; done
echo
for k in tiny_us tiny_enqueue_us write_gbs read_gbs sgemm_gflops; do
    printf '%-16s' "$k"
    for c in $columns; do printf ' | %-10s' "${val[$c.$k]:--}"; done
    for c in $columns; do
        [ "$c" = pocl ] && continue
        awk -v a="${val[$c.$k]:-0}" -v b="${val[pocl.$k]:-0}" 'BEGIN { if (a > 0 && b > 0) printf " | %-12.3f", a / b; else printf " | %-12s", "-" }'
    done
    echo
done
for c in $columns; do echo "checks $c: ${check[$c]}"; done
echo "(targets vs pocl: tiny_us <= 1.2 (tiny_enqueue_us: the application thread's share of it), write/read >= 0.9, sgemm >= 0.95; $rounds rounds, medians; load average $(cut -d' ' -f1-3 /proc/loadavg))"
