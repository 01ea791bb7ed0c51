#!/usr/bin/env bash
# Issue 33: does an unmodified OpenCL program get both devices? bench/cl/overlap.c's 16
# independent compute-bound kernels, run the ways a program can hand several devices to an
# implementation, on PoCL alone, on Weft through the ICD loader and on StarPU's SOCL, all
# over the same two PoCL `basic` devices (POCL_DEVICES="basic basic"), side by side.
#
# Usage: bench/cl/overlap.sh [rounds] [iters]   (default 3 rounds, 8,000,000 loop steps
#        per work item, about 0.1 s per kernel here; medians over rounds)
# Environment: WEFT_ICD_LIB (default $CARGO_TARGET_DIR or target/release/libweft_icd.so),
# NO_SOCL=1 to leave SOCL out.
#
# Prints seconds per (platform, mode) and each mode's speedup over the platform's own
# one-queue-on-one-device run (Weft's `one` is its unified device with an in-order queue,
# which runs one kernel at a time). Targets (issue 33): Weft ooo, perdev, threads and all
# >= 1.8x; ooo faster than SOCL's null; threads at PoCL's ~1.98x.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
rounds=${1:-3}
iters=${2:-8000000}
case $rounds in '' | *[!0-9]* | 0) echo "rounds must be a positive number" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O2 -Wall -Wextra -pthread -o "$out/overlap" bench/cl/overlap.c -lOpenCL
export POCL_DEVICES=${POCL_DEVICES:-basic basic}

pocl_icd=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -n 1 || true)
[ -n "$pocl_icd" ] || { echo "no PoCL .icd under /etc/OpenCL/vendors: install pocl-opencl-icd" >&2; exit 1; }
runs="pocl:one pocl:threads"
weft_icd=${WEFT_ICD_LIB:-${CARGO_TARGET_DIR:-$root/target}/release/libweft_icd.so}
if [ -f "$weft_icd" ]; then
    mkdir -p "$out/weft"
    echo "$weft_icd" >"$out/weft/weft.icd"
    runs="$runs weft:one weft:ooo weft:perdev weft:threads weft:all"
else
    echo "(Weft left out: no $weft_icd; build with cargo build --release -p weft -p weft-icd-shim)" >&2
fi
socl=$(ls /usr/lib/x86_64-linux-gnu/libsocl-*.so.0 2>/dev/null | head -n 1 || true)
if [ -n "$socl" ] && [ -z "${NO_SOCL:-}" ]; then
    mkdir -p "$out/socl"
    echo "$socl" >"$out/socl/socl.icd"
    cp "$pocl_icd" "$out/socl/" # SOCL drives the real devices through the loader
    runs="$runs socl:one socl:null socl:threads"
else
    echo "(SOCL left out: install libsocl-1.3-0, or NO_SOCL is set)" >&2
fi

run() { # platform mode -> RESULT line
    case $1 in
        pocl) OCL_ICD_VENDORS=$pocl_icd "$out/overlap" Portable "$2" "$iters" ;;
        weft) OCL_ICD_VENDORS=$out/weft "$out/overlap" Weft "$2" "$iters" ;;
        socl) STARPU_SILENT=1 STARPU_OPENCL_ON_CPUS=1 STARPU_NCPU=0 OCL_ICD_VENDORS=$out/socl "$out/overlap" SOCL "$2" "$iters" ;;
    esac 2>"$out/$1.$2.err" | grep '^RESULT' || echo "RESULT seconds=0 check=crashed:$(tail -n 1 "$out/$1.$2.err" | tr ' ' _)"
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Rounds interleave the runs, so a noisy stretch of the machine hits them all.
for _ in $(seq "$rounds"); do
    for x in $runs; do run "${x%%:*}" "${x#*:}" >>"$out/${x/:/.}.txt"; done
done
printf '%-14s %9s %8s  %s\n' run seconds speedup checks
for x in $runs; do
    p=${x%%:*}
    s=$(field seconds <"$out/${x/:/.}.txt" | median)
    base=$(field seconds <"$out/$p.one.txt" | median)
    checks=$(field check <"$out/${x/:/.}.txt" | sort -u | tr '\n' ' ')
    awk -v x="$x" -v s="$s" -v b="$base" -v c="$checks" 'BEGIN { printf "%-14s %9.3f %8s  %s\n", x, s, (s > 0 ? sprintf("%.2fx", b / s) : "-"), c }'
done
echo "($rounds rounds, medians; $iters steps per kernel; POCL_DEVICES=\"$POCL_DEVICES\"; load average $(cut -d' ' -f1-3 /proc/loadavg))"
