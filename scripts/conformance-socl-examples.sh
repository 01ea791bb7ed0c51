#!/usr/bin/env bash
# The SOCL example programs of Debian's starpu-examples that use standard OpenCL only
# (clinfo, mansched), run unmodified against one platform alone, with their output checked:
# issue 4's "real clients nobody here wrote".
#
# Usage: scripts/conformance-socl-examples.sh [weft|pocl]   (default weft)
#   weft: only Weft's platform is visible ($CARGO_TARGET_DIR/release/libweft_icd.so, built
#         with `cargo build --release`); pocl: only PoCL (the reference).
# Needs starpu-examples (apt-get install starpu-examples). Prints one line per check and
# `socl-examples <mode>: N passed, N failed`; exits 1 if any failed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-weft}
ex=/usr/lib/x86_64-linux-gnu/starpu/examples/socl
[ -x "$ex/mansched" ] || { echo "skipped: starpu-examples is not installed ($ex/mansched)"; exit 0; }
target=${CARGO_TARGET_DIR:-$root/target}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $mode in
    weft)
        lib=$target/release/libweft_icd.so
        [ -f "$lib" ] || { echo "$lib not built: run cargo build --release" >&2; exit 1; }
        mkdir "$tmp/vendors" && echo "$lib" >"$tmp/vendors/weft.icd"
        vendors=$tmp/vendors name=Weft ;;
    pocl)
        vendors=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd | head -n 1) name="Portable Computing Language" ;;
    *) echo "mode must be weft or pocl, not '$mode'" >&2; exit 2 ;;
esac

passed=0 failed=0
check() { # name condition-result message
    if [ "$2" = ok ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1: $3"; fi
}

# clinfo: one platform, named as expected, with at least one device and its properties.
set +e
OCL_ICD_VENDORS=$vendors timeout 120 "$ex/clinfo" >"$tmp/clinfo.out" 2>&1
rc=$?
set -e
out=$(cat "$tmp/clinfo.out")
r=ok
[ $rc -eq 0 ] || r="exit status $rc"
grep -q $'Number of platforms:\t*[ ]*1$' <<<"$out" || grep -Eq 'Number of platforms:[[:space:]]+1$' <<<"$out" || r="not exactly one platform"
grep -Eq "Plaform Name:[[:space:]]+$name" <<<"$out" || r="platform name is not '$name'"
grep -q 'DEVICE 0' <<<"$out" || r="no device listed"
grep -Eq 'Max compute units:[[:space:]]+[1-9]' <<<"$out" || r="no compute units"
check clinfo "$r" "$(tail -n 3 "$tmp/clinfo.out" | tr '\n' ' ')"

# mansched: 1024 results, every one 9.
set +e
OCL_ICD_VENDORS=$vendors timeout 120 "$ex/mansched" >"$tmp/mansched.out" 2>&1
rc=$?
set -e
data=$(grep -A1 '^Data' "$tmp/mansched.out" | tail -n 1)
nums=$(tr -s ' ' '\n' <<<"$data" | grep -c . || true)
nines=$(tr -s ' ' '\n' <<<"$data" | grep -c '^9\.000000$' || true)
r=ok
[ $rc -eq 0 ] || r="exit status $rc"
[ "$nums" -eq 1024 ] && [ "$nines" -eq 1024 ] || r="$nines of $nums results are 9 (want 1024 of 1024)"
grep -q 'Releasing context' "$tmp/mansched.out" || r="did not reach the end"
check mansched "$r" "$(tail -n 2 "$tmp/mansched.out" | tr '\n' ' ')"

echo "socl-examples $mode: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
