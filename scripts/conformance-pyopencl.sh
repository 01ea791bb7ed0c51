#!/usr/bin/env bash
# pyopencl's own test suite (2026.1.4, 308 tests) against one OpenCL platform alone:
# issue 4's "real client" check for the Weft ICD, with PoCL alone as the reference.
#
# Usage: scripts/conformance-pyopencl.sh [weft|pocl] [pytest args...]
#   weft (default): only Weft's platform is visible (OCL_ICD_VENDORS = a directory holding
#                   weft.icd → $CARGO_TARGET_DIR/release/libweft_icd.so, built here), and the
#                   tests use its unified device ("Weft (all N devices)"), which places each
#                   kernel on the PoCL devices underneath (POCL_DEVICES, default "basic basic").
#                   WEFT_LIMIT_OPENCL_MEM defaults to 2048 (MiB per device): PoCL's CPU devices
#                   allocate host RAM, and Weft keeps a home copy of every buffer beside
#                   the device's, so without a limit the run peaks at 13 GB RSS (20 GB before
#                   the allocation cache was bounded).
#   pocl:           only PoCL is visible (the system's pocl.icd, its default device).
# Extra arguments go to pytest (e.g. `-k test_wrapper` or `-x`).
#
# Everything it fetches stays under target/conformance/pyopencl (a venv with the pyopencl
# wheel and pytest; the sdist, for its test/ directory, checked against PyPI's sha256).
# It prints pytest's summary and a last line `pyopencl <mode>: N passed, N failed, N skipped`.
# Takes 9-17 minutes on the project's 2-core machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-weft}
[ $# -gt 0 ] && shift
version=2026.1.4
work=$root/target/conformance/pyopencl
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$work"

if [ ! -x "$work/venv/bin/pytest" ] || ! "$work/venv/bin/python" -c "import mako" 2>/dev/null; then
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install -q "pyopencl==$version" pytest mako
fi
if [ ! -d "$work/pyopencl-$version/test" ]; then
    # The sdist's address and hash, from PyPI's simple index.
    link=$(curl -fsS https://pypi.org/simple/pyopencl/ | grep -o "href=\"[^\"]*pyopencl-$version.tar.gz#sha256=[0-9a-f]*\"" | head -n 1)
    [ -n "$link" ] || { echo "pyopencl-$version.tar.gz not found on PyPI's simple index" >&2; exit 1; }
    url=${link#href=\"}
    url=${url%\"}
    sha=${url##*#sha256=}
    curl -fsSL -o "$work/sdist.tar.gz" "${url%%#*}"
    echo "$sha  $work/sdist.tar.gz" | sha256sum -c --quiet
    tar -xzf "$work/sdist.tar.gz" -C "$work" "pyopencl-$version/test"
fi

case $mode in
    weft)
        (cd "$root" && cargo build --release -q -p weft -p weft-icd-shim)
        lib=$target/release/libweft_icd.so
        mkdir -p "$work/vendors-weft"
        echo "$lib" >"$work/vendors-weft/weft.icd"
        vendors=$work/vendors-weft
        platform=Weft:all # the unified device, "Weft (all N devices)"
        export POCL_DEVICES=${POCL_DEVICES:-basic basic} WEFT_LIMIT_OPENCL_MEM=${WEFT_LIMIT_OPENCL_MEM:-2048}
        ;;
    pocl)
        vendors=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd | head -n 1)
        platform=Portable
        ;;
    *) echo "mode must be weft or pocl, not '$mode'" >&2; exit 2 ;;
esac

log=$work/pytest-$mode.log
cd "$work/pyopencl-$version/test"
# PYOPENCL_TEST picks the platform by name; an empty PYOPENCL_CACHE_FAILURE_FATAL keeps
# pyopencl 2026.1.4 from turning a binary-cache miss into a KeyError (opencl-facts.md).
set +e
OCL_ICD_VENDORS=$vendors PYOPENCL_TEST=$platform PYOPENCL_CACHE_FAILURE_FATAL="" \
    XDG_CACHE_HOME=$work/cache "$work/venv/bin/pytest" -q -p no:cacheprovider -rfE "${@:-.}" 2>&1 | tee "$log"
set -e
summary=$(grep -E '[0-9]+ (passed|failed|error)' "$log" | tail -n 1)
num() { local n; n=$(grep -o "[0-9]* $1" <<<"$summary" | cut -d' ' -f1); echo "${n:-0}"; }
echo "pyopencl $mode: $(num passed) passed, $(num failed) failed, $(num skipped) skipped, $(num error) errors"
