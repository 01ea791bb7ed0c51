#!/usr/bin/env bash
# Install Weft under PREFIX (default /usr/local): libweft.so (the runtime, the OpenMP ABI
# and the OpenCL implementation), libweft_omp.so (a link to it, for LD_PRELOAD),
# libweft_icd.so (the ICD shim the OpenCL loader opens), include/weft.h, include/CL/cl_weft.h
# (Weft's OpenCL extensions), a pkg-config file,
# etc/OpenCL/vendors/weft.icd, and bin/weft (the command that reads traces, performance
# models and the machine: docs/cli.md); where MPI is installed (mpicc), also weft-mpi's
# libweft_mpi.so, include/weft_mpi.h and weft-mpi.pc (docs/mpi.md). Builds in release mode
# first (honours CARGO_TARGET_DIR). The installed files carry symbols but no debug
# information (the release build keeps it for profilers: about 13 times the size);
# WEFT_INSTALL_DEBUG=1 installs them as built.
#
#   scripts/install.sh /opt/weft
#   OCL_ICD_VENDORS=/opt/weft/etc/OpenCL/vendors clinfo      # any OpenCL program, on Weft
#
# To make Weft a system-wide OpenCL platform, copy (or link) weft.icd into
# /etc/OpenCL/vendors. Weft's platform runs on the system's other OpenCL vendors (read from
# /etc/OpenCL/vendors, or WEFT_OCL_VENDORS), never on itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${1:-/usr/local}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build -q --release -p weft -p weft-icd-shim -p weft-cli
LIB="$PREFIX/lib"
# install FILE DEST, then drop the debug sections unless WEFT_INSTALL_DEBUG=1.
put() {
    install -m 755 "$1" "$2"
    [ "${WEFT_INSTALL_DEBUG:-0}" = 1 ] || strip --strip-debug "$2"
}
mkdir -p "$LIB/pkgconfig" "$PREFIX/include" "$PREFIX/etc/OpenCL/vendors" "$PREFIX/bin"
put "$TARGET/release/libweft.so" "$LIB/libweft.so"
put "$TARGET/release/libweft_icd.so" "$LIB/libweft_icd.so"
ln -sfn libweft.so "$LIB/libweft_omp.so"
put "$TARGET/release/weft" "$PREFIX/bin/weft"
install -m 644 include/weft.h "$PREFIX/include/weft.h"
install -D -m 644 include/CL/cl_weft.h "$PREFIX/include/CL/cl_weft.h"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
cat > "$LIB/pkgconfig/weft.pc" <<PC
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: weft
Description: Weft, a task runtime for heterogeneous machines (C API, OpenMP runtime, OpenCL platform)
Version: $VERSION
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lweft
Cflags: -I\${includedir}
PC
echo "$LIB/libweft_icd.so" > "$PREFIX/etc/OpenCL/vendors/weft.icd"
# weft-mpi: its own library (core's C API plus weft_mpi_*), so that nothing else needs MPI.
if command -v mpicc >/dev/null; then
    cargo build -q --release -p weft-mpi
    put "$TARGET/release/libweft_mpi.so" "$LIB/libweft_mpi.so"
    install -m 644 include/weft_mpi.h "$PREFIX/include/weft_mpi.h"
    cat > "$LIB/pkgconfig/weft-mpi.pc" <<PC
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: weft-mpi
Description: Weft across machines on MPI (C API; link it instead of libweft, not beside it)
Version: $VERSION
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lweft_mpi
Cflags: -I\${includedir}
PC
else
    echo "no mpicc: weft-mpi not installed (Debian: apt-get install libopenmpi-dev)" >&2
fi
echo "Installed Weft $VERSION under $PREFIX."
echo "Run any OpenCL program on Weft, e.g.:"
echo "  OCL_ICD_VENDORS=$PREFIX/etc/OpenCL/vendors clinfo"
echo "See the machine as Weft does, and read a trace (docs/cli.md):"
echo "  $PREFIX/bin/weft machine"
echo "  WEFT_TRACE=/tmp/run.json ./my_program && $PREFIX/bin/weft trace summary /tmp/run.json"
