#!/usr/bin/env bash
# Set up, build, and run Weft's main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build -q --release --workspace --examples
echo "== Tiled matrix multiply on every CPU core =="
cargo run -q --release --example demo
echo
echo "== The same with a simulated device (WEFT_NNULL=1): tiles move between memory nodes =="
WEFT_NNULL=1 cargo run -q --release --example demo -- 512 4
