#!/usr/bin/env bash
# Fetch GCC 12's libgomp testsuite (Debian source package gcc-12) into target/omp-testsuite,
# using a private apt configuration with a deb-src line (the system's sources are untouched).
# Prints the libgomp source directory on stdout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OMP_TESTSUITE_CACHE:-$ROOT/target/omp-testsuite}
mkdir -p "$CACHE"
if [ -d "$CACHE/libgomp/testsuite" ] && [ -f "$CACHE/include/gomp-constants.h" ]; then echo "$CACHE/libgomp"; exit 0; fi
cd "$CACHE"
if ! ls gcc-12_*.orig.tar.* >/dev/null 2>&1; then
  APT="$CACHE/apt"
  mkdir -p "$APT/lists/partial" "$APT/sources.list.d"
  cat > "$APT/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
SRC
  opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d" -o "Dir::State::Lists=$APT/lists")
  apt-get "${opts[@]}" update >&2
  apt-get "${opts[@]}" source --download-only gcc-12 >&2
fi
orig=$(ls gcc-12_*.orig.tar.* | head -1)
# The orig tarball holds the upstream tarball (gcc-12.2.0-dfsg.tar.xz): take libgomp out of it.
inner=$(tar -tf "$orig" | grep -E '/gcc-[0-9.]+(-dfsg)?\.tar\.xz$' | head -1)
tar -xf "$orig" "$inner"
tar -xJf "$inner" --wildcards '*/libgomp/*' '*/include/gomp-constants.h' --strip-components=1
rm -rf "$(dirname "$inner")"
echo "$CACHE/libgomp"
