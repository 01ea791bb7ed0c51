# Sourced by the scripts of bench/cholesky (after they set `root`, the repository's root).

# Sets BIN to the examples/cholesky binary to measure: BIN as given (another build's, for a
# before and after), else this tree's, built in release mode.
cholesky_bin() {
    [[ -n ${BIN:-} ]] && return
    echo "building examples/cholesky (release)..." >&2
    cargo build --release -q --example cholesky
    BIN=${CARGO_TARGET_DIR:-$root/target}/release/examples/cholesky
}
