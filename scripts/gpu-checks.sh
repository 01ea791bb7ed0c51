#!/usr/bin/env bash
# Weft's checks on a machine with an NVIDIA GPU that has no Rust toolchain (the lent device
# machines): pack the builds here, carry the folder there, run them there.
#
#   scripts/gpu-checks.sh pack [DIR]   (here; default DIR .dev, which .git/info/exclude
#                                        should list) builds and copies: the CUDA test and
#                                        examples, libweft.so, libweft_icd.so, clbench, the
#                                        ICD's C test programs, and the libraries a bare machine may lack (hwloc,
#                                        udev, ocl-icd's libOpenCL, LLVM's libomp, clinfo),
#                                        pyopencl's wheels and tests
#   scripts/gpu-checks.sh run [DIR]    (there, from the repository root) runs:
#     cuda   core/tests/cuda.rs, cuda_peers, examples/sgemm and cholesky on the GPU alone
#            and beside the CPU workers (WEFT_NOPENCL=0)
#     cl     clinfo and clbench on NVIDIA's OpenCL direct and on Weft over it (medians of
#            5), tests/icd/{basic,inorder,compile_link,svm,images,bad_input}.c on Weft over
#            NVIDIA and PoCL
#     pyopencl  pyopencl 2026.1.4's suite (pytest -n 16) on Weft's unified device over
#            NVIDIA, then on NVIDIA alone
#     omp    bench/omp_tasks/run.sh 7 at $THREADS (default: all cores) threads, compiled
#            there: libgomp, libomp, Weft (OMP_PROGS="fib cholesky:2048:64" picks programs
#            and sizes)
#     predict  bench/cholesky/steps.sh on 2 CPU workers and on all but one core, 2048/256
#            and 4096/512: the models' prediction errors beside their floors on a machine
#            quieter than the 2-vCPU VM (issue 31's 5% target)
#   PARTS (default "cuda cl pyopencl omp predict") picks some; logs go to $OUT (default
#   DIR/out).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${1:-}
D=$(realpath -m "${2:-.dev}")

pack() {
    set -e
    local t=${CARGO_TARGET_DIR:-$root/target}/release
    cargo build --release -q -p weft -p weft-icd-shim
    cargo build --release -q -p weft --example sgemm --example cholesky
    cargo build --release -q -p weft-bench --bin cuda_peers
    local cuda_test
    cuda_test=$(cargo test --release -q -p weft-core --test cuda --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
    rm -rf "$D" && mkdir -p "$D/bin" "$D/lib" "$D/ocl"
    cp "$cuda_test" "$D/bin/cuda_test"
    cp "$t/examples/sgemm" "$t/examples/cholesky" "$t/cuda_peers" "$D/bin/"
    cp "$t/libweft.so" "$t/libweft_icd.so" "$D/lib/"
    cp -L /lib/x86_64-linux-gnu/libhwloc.so.15 /lib/x86_64-linux-gnu/libudev.so.1 "$D/lib/"
    cp -L "$(ls /usr/lib/llvm-*/lib/libomp.so.5 | head -n 1)" "$D/lib/"
    cp -L /lib/x86_64-linux-gnu/libOpenCL.so.1 "$D/ocl/" # ocl-icd: CUDA's own loader ignores OCL_ICD_VENDORS
    cp "$(command -v clinfo)" "$D/bin/"
    gcc -O2 -o "$D/bin/clbench" bench/cl/clbench.c -lOpenCL -lm
    for n in basic inorder bad_input compile_link svm images; do
        gcc -std=c11 -O1 -Wall -Wextra -Werror -pthread "tests/icd/$n.c" -o "$D/bin/icd_$n" -lOpenCL
    done
    strip "$D"/bin/* "$D"/lib/*
    # pyopencl's suite for the device's Python 3.12 (wheels, and the sdist's tests).
    local py=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
        --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
    python3 -m pip download -q "${py[@]}" -d "$D/whl" pyopencl==2026.1.4 pytools platformdirs mako siphash24
    local tests=$root/target/conformance/pyopencl/pyopencl-2026.1.4/test
    # (the script fetches the sdist; with --collect-only its summary line finds no counts)
    [ -d "$tests" ] || scripts/conformance-pyopencl.sh pocl --collect-only >/dev/null 2>&1 || true
    [ -d "$tests" ] || { echo "pyopencl's tests not found at $tests" >&2; return 1; }
    cp -r "$tests" "$D/pytest"
    du -sh "$D"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_cuda() {
    echo "== core/tests/cuda.rs"
    timeout 300 "$D/bin/cuda_test"
    local peers
    peers=$(timeout 120 "$D/bin/cuda_peers" 4096)
    echo "$peers"
    case $peers in *skipped*) return ;; esac
    for cmd in "sgemm 8192 1024" "cholesky 4096 512"; do
        # shellcheck disable=SC2086
        set -- $cmd
        echo "== $cmd, GPU alone"
        WEFT_NOPENCL=0 WEFT_NCPU=0 WEFT_STATS=1 timeout 120 "$D/bin/$1" "${@:2}" | grep -E "tasks in|cuda0 +ran|result"
        echo "== $cmd, GPU and CPU workers"
        WEFT_NOPENCL=0 WEFT_STATS=1 timeout 120 "$D/bin/$1" "${@:2}" | grep -E "tasks in|cuda0 +ran|result"
    done
}

# Vendors directories: nv (NVIDIA's OpenCL), weft (Weft's ICD), all (NVIDIA and PoCL);
# fails, saying so, where there is no NVIDIA OpenCL.
nvidia_vendors() {
    local nv=/usr/lib/libnvidia-opencl.so.1
    [ -e "$nv" ] || nv=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n 1)
    [ -n "$nv" ] || { echo "no NVIDIA OpenCL: $1 part skipped"; return 1; }
    mkdir -p "$D/vendors/nv" "$D/vendors/weft" "$D/vendors/all"
    echo "$nv" >"$D/vendors/nv/nvidia.icd"
    echo "$D/lib/libweft_icd.so" >"$D/vendors/weft/weft.icd"
    cp "$D/vendors/nv/nvidia.icd" "$D/vendors/all/"
    cp /etc/OpenCL/vendors/*pocl*.icd "$D/vendors/all/" 2>/dev/null || true
}

run_cl() {
    nvidia_vendors cl || return 0
    local W=(env LD_LIBRARY_PATH="$D/ocl:$LD_LIBRARY_PATH" OCL_ICD_VENDORS="$D/vendors/weft")
    "${W[@]}" WEFT_OCL_VENDORS="$D/vendors/nv" timeout 60 "$D/bin/clinfo" >"$OUT/clinfo-weft.txt" 2>&1
    echo "== clinfo on Weft over NVIDIA: exit $?, $(grep -ciE 'invalid|<error' "$OUT/clinfo-weft.txt") error lines"
    for _ in 1 2 3 4 5; do
        env LD_LIBRARY_PATH="$D/ocl:$LD_LIBRARY_PATH" OCL_ICD_VENDORS="$D/vendors/nv" timeout 60 "$D/bin/clbench" NVIDIA 0 2>/dev/null
        "${W[@]}" WEFT_OCL_VENDORS="$D/vendors/nv" timeout 60 "$D/bin/clbench" Weft 0 2>/dev/null
    done | tee "$OUT/clbench.txt"
    for k in tiny_us write_gbs read_gbs sgemm_gflops; do
        n=$(grep NVIDIA "$OUT/clbench.txt" | sed -n "s/.* $k=\([^ ]*\).*/\1/p" | median)
        w=$(grep Weft "$OUT/clbench.txt" | sed -n "s/.* $k=\([^ ]*\).*/\1/p" | median)
        echo "clbench $k: NVIDIA $n, Weft $w, Weft/NVIDIA $(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.2f", w / n }')"
    done
    for t in basic inorder compile_link svm images; do
        echo "== tests/icd/$t.c on Weft over $(ls "$D/vendors/all" | tr '\n' ' ')"
        "${W[@]}" WEFT_OCL_VENDORS="$D/vendors/all" timeout 120 "$D/bin/icd_$t" | tail -n 1
    done
    for seed in 1 2 3; do "${W[@]}" WEFT_OCL_VENDORS="$D/vendors/all" timeout 60 "$D/bin/icd_bad_input" $seed 800 2>/dev/null; done
}

run_pyopencl() {
    nvidia_vendors pyopencl || return 0
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/weft-site "$D"/whl/*.whl || return
    local mode
    for mode in weft nvidia; do
        (
            cd "$D/pytest" || exit
            case $mode in
                weft) export OCL_ICD_VENDORS=$D/vendors/weft WEFT_OCL_VENDORS=$D/vendors/nv PYOPENCL_TEST=Weft:all ;;
                nvidia) export OCL_ICD_VENDORS=$D/vendors/nv PYOPENCL_TEST=NVIDIA ;;
            esac
            PYTHONPATH=/tmp/weft-site PYOPENCL_CACHE_FAILURE_FATAL="" XDG_CACHE_HOME=/tmp/weft-xdg-$mode \
                timeout 300 python3 -m pytest -q -p no:cacheprovider -n 16 --timeout 120 -rfE . >"$OUT/pyopencl-$mode.log" 2>&1
        )
        echo "pyopencl on $mode: $(grep -E '^(FAILED|ERROR)' "$OUT/pyopencl-$mode.log" | sed 's/\[.*//' | tr '\n' ' ')"
        grep -E '[0-9]+ passed' "$OUT/pyopencl-$mode.log" | tail -n 1
    done
}

run_omp() {
    # The device compiles the programs (it has gcc); Weft and libomp are the packed ones.
    OMP_NUM_THREADS=${THREADS:-$(nproc)} WEFT_LIB=$D/lib/libweft.so LIBOMP=$D/lib/libomp.so.5 \
        PROGS=${OMP_PROGS:-"tasks_million fib cholesky cholesky:2048:64 sparselu wavefront taskloop deptree"} bench/omp_tasks/run.sh 7
}

run_predict() {
    local ncpu size
    for ncpu in 2 $(($(nproc) - 1)); do
        for size in 2048/256 4096/512; do
            BIN=$D/bin/cholesky NCPU=$ncpu SIZE=$size timeout 300 bench/cholesky/steps.sh
        done
    done
}

case $mode in
    pack) pack ;;
    run)
        chmod +x "$D"/bin/* 2>/dev/null
        OUT=${OUT:-$D/out}
        mkdir -p "$OUT"
        # The CUDA toolkit's libraries (NVRTC, cuBLAS) where the driver's loader may not look.
        for d in /usr/local/cuda/lib64 /usr/local/cuda-*/targets/x86_64-linux/lib /usr/local/nvidia/lib64; do
            [ -d "$d" ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
        done
        export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$D/lib
        for part in ${PARTS:-cuda cl pyopencl omp predict}; do "run_$part" 2>&1 | tee "$OUT/$part.log"; done
        ;;
    *) echo "usage: scripts/gpu-checks.sh pack|run [DIR]" >&2; exit 2 ;;
esac
