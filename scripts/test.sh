#!/usr/bin/env bash
# Set up, build, and run every test, plus the format and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy -q --workspace --all-targets -- -D warnings
cargo test --workspace
