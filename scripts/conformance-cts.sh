#!/usr/bin/env bash
# The Khronos OpenCL CTS (the pinned snapshot in shared/third_party/opencl-cts) against Weft's
# ICD and against PoCL alone, each sub-test in its own process, and a comparison table
# (issue 32, item 1).
#
# Usage: scripts/conformance-cts.sh [-c CONFIGS] [-s SUITES] [-k GLOB] [-x GLOB] [-f] [-t SECONDS] [-b] [-r]
#   -c CONFIGS  configurations, comma or space separated (env WEFT_CTS_CONFIGS; default all):
#                 a  PoCL alone: only the system's pocl.icd visible, its default device
#                 b  Weft's unified device ("Weft (all 1 devices)") over PoCL's default device
#                 c  Weft's unified device over two PoCL basic devices (POCL_DEVICES="basic basic")
#                 d  a real device through Weft: PoCL's default device, as Weft lists it
#                    behind the unified one (CL_DEVICE_TYPE=cpu CL_DEVICE_INDEX=1; the type
#                    from WEFT_CTS_D_TYPE, e.g. gpu for a GPU underneath)
#               On Weft, CL_DEVICE_TYPE=default (the harness's default) yields only the unified
#               device (icd/src/api/platform.rs, clGetDeviceIDs), and any other type lists the
#               unified device first (its type is its most capable real device's), then the
#               real ones of that type; so b and c use the default and d index 1.
#               (Not CL_DEVICE_TYPE=all: test_computeinfo reads CL_DEVICE_TYPE itself and
#               refuses "all".)
#   -s SUITES   suites (env WEFT_CTS_SUITES; default: all those listed below as run by default).
#   -k GLOB     only the sub-tests whose name matches the shell pattern GLOB (env WEFT_CTS_TESTS).
#   -x GLOBS    leave out the sub-tests whose name matches one of GLOBS, comma separated (env
#               WEFT_CTS_EXCLUDE), e.g. -s basic -x 'async_*' for test_basic without its long
#               async copy tests, or -x 'integer_*,quick_*'.
#   -f          full: also the sub-tests left out by default (relationals' shuffle_*: each
#               compiles thousands of kernels and runs past 5 minutes on PoCL alone here;
#               vectors' vec_align_packed_struct*: past 5 minutes on every configuration,
#               PoCL alone included).
#   -t SECONDS  time limit of one sub-test's process (env WEFT_CTS_TIMEOUT; default 300).
#   -b          build only (the CTS suites and Weft's ICD), run nothing.
#   -r          report only: print the table from the results already on disk, run nothing.
# Other environment: WEFT_CTS_SNAPSHOT (the snapshot folder; default
# $root/../shared/third_party/opencl-cts), WEFT_CTS_WORK (the build folder; default
# $root/target/conformance/cts, git-ignored), CARGO_TARGET_DIR, WEFT_CTS_JOBS (make -j, 2).
# Weft's own variables (WEFT_SCHED, WEFT_LIMIT_OPENCL_MEM, ...) pass through to b, c, d;
# WEFT_HOME defaults to $WEFT_CTS_WORK/weft-home, so the bus measurement and the performance
# models are kept there, not in ~/.cache/weft.
#
# What it takes: Debian packages cmake, spirv-tools (test_compiler's spirv-as) and
# ocl-icd-opencl-dev (installed if missing, as scripts/setup.sh does), pocl-opencl-icd from
# scripts/setup.sh, and the three archives of the snapshot, unpacked under
# $WEFT_CTS_WORK/src (never into the tracked tree). Weft's ICD is built here
# (`cargo build --release -p weft -p weft-icd-shim`) and selected, as in
# scripts/conformance-pyopencl.sh, by OCL_ICD_VENDORS = a folder holding weft.icd; Weft itself
# opens PoCL from /etc/OpenCL/vendors, never through the loader.
#
# Each sub-test (`<suite binary> --list`) runs alone: `timeout` around one process, its output
# in $WEFT_CTS_WORK/results/<config>/<suite>/<sub-test>.log, and its result from the harness's
# JSON (CL_CONFORMANCE_RESULTS_FILENAME) and exit status: pass, fail, skip; crash (killed by a
# signal, or exited without a JSON after dying in the harness); timeout (the limit ran out).
# A table per configuration and suite lands in results/<config>/<suite>.tsv; the one from
# the run before is kept as <suite>.prev.tsv and sub-tests whose result changed are printed.
#
# Output: `suite config: P pass / F fail / S skip / C crash / T timeout` per suite and
# configuration, then per suite the sub-tests where a Weft configuration (b, c, d) does worse
# than PoCL alone (a), each with the first error line of its output.
#
# Suites (test_conformance/<dir>, extra arguments), run by default:
#   api buffers compiler events profiling mem_host_flags multiple_device_context computeinfo
#   geometrics relationals commonfns integer_ops vectors allocations (`single 25%`: one buffer
#   of a quarter of CL_DEVICE_MAX_MEM_ALLOC_SIZE, 2 GiB on PoCL here; the whole 8 GiB, with
#   Weft's host copy beside the device's, could take 16 GiB of this 23 GiB machine)
#   basic (`-w`, wimpy; the longest: 49 minutes for PoCL alone on a loaded machine, its
#   async copy tests dominate; it runs last)
# Also runnable by name (-s), not by default: atomics, printf, select, workgroups,
#   non_uniform_work_group, device_timer, SVM, c11_atomics, generic_address_space,
#   thread_dimensions, device_partition, half, ... (any test_conformance/<dir> whose binary is
#   test_<dir>): not measured here for lack of time on the 2-core machine.
# Left out: math_brute_force, conversions, contractions (hours on 2 cores), images (a dozen
#   binaries, hours), spirv_new, spir (no IL on PoCL 3.1 here nor in Weft; spir is not in the
#   snapshot), gl, gles, d3d10, d3d11, vulkan (no interop), subgroups, pipes,
#   device_execution (OpenCL 2.x features neither offers here), extensions.
#
# Time here (2 cores, shared with other builds; measured 2026-11-28): the CTS build takes
# about 4 minutes for api, buffers, compiler, events (the harness library first) and 8 more
# for the other default suites (make -j1); Weft's release build about 4. Sum of the sub-tests'
# seconds per configuration a / b / c / d, with three to five runs of this script side by
# side (so slower than alone): api 197 / 305 / 440 / 120, buffers 278 / 365 / 450 / 125,
# compiler 674 / 587 / 542 / 169, events 26 / 27 / 54 / 28, profiling 120 / 117 / 198 / 64,
# multiple_device_context 93 / 193 / 328 / 193, geometrics 33 / 114 / 101 / 112, relationals
# 30 / 307 / 138 / 307, commonfns 252 / 268 / 300 / 267, allocations 161 / 309 / 211 / 316,
# integer_ops' 27 integer_* sub-tests 869 / 1051 / 986 / 1050 (all 99: over an hour a
# configuration), mem_host_flags and computeinfo a few seconds; vectors 40-90 s a sub-test,
# its vec_align_packed_struct* past 300 s in every configuration under that load; basic
# (wimpy) 49 minutes for PoCL alone (README of the snapshot), not run here. PoCL alone on an
# idle machine runs api, buffers, compiler, events in about 6
# minutes. The whole default set on all four configurations is several hours: pick with -c, -s.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
snapshot=${WEFT_CTS_SNAPSHOT:-$root/../shared/third_party/opencl-cts}
work=${WEFT_CTS_WORK:-$root/target/conformance/cts}
target=${CARGO_TARGET_DIR:-$root/target}
configs=${WEFT_CTS_CONFIGS:-a b c d}
default_suites="api buffers compiler events profiling mem_host_flags multiple_device_context
computeinfo geometrics relationals commonfns integer_ops vectors allocations basic"
suites=${WEFT_CTS_SUITES:-$default_suites}
filter=${WEFT_CTS_TESTS:-*}
exclude=${WEFT_CTS_EXCLUDE:-}
limit=${WEFT_CTS_TIMEOUT:-300}
jobs=${WEFT_CTS_JOBS:-2}
d_type=${WEFT_CTS_D_TYPE:-cpu}
build_only=0
report_only=0
full=${WEFT_CTS_FULL:-0}
while getopts c:s:k:x:t:fbrh opt; do
    case $opt in
        c) configs=$OPTARG ;;
        s) suites=$OPTARG ;;
        k) filter=$OPTARG ;;
        x) exclude=$OPTARG ;;
        f) full=1 ;;
        t) limit=$OPTARG ;;
        b) build_only=1 ;;
        r) report_only=1 ;;
        *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
configs=${configs//,/ }
suites=${suites//,/ }
for c in $configs; do
    case $c in a | b | c | d) ;; *) echo "unknown configuration '$c' (a, b, c or d)" >&2; exit 2 ;; esac
done
build=$work/build
results=$work/results
src=$work/src

# The suite's folder under test_conformance, its binary and its extra arguments.
suite_dir() {
    case $1 in
        allocations_multiple) echo allocations ;;
        *) echo "$1" ;;
    esac
}
suite_bin() {
    case $1 in
        multiple_device_context) echo test_multiples ;;
        allocations_multiple) echo test_allocations ;;
        math_brute_force) echo test_bruteforce ;;
        SVM) echo test_svm ;;
        *) echo "test_$1" ;;
    esac
}
# The sub-tests of suite $1 left out unless -f, as a shell pattern (none: a name no test has).
suite_skip() {
    case $1 in
        relationals) echo 'shuffle_*' ;;
        vectors) echo 'vec_align_packed_struct*' ;;
        *) echo '/' ;;
    esac
}
suite_args() {
    case $1 in
        basic) echo -w ;;
        allocations) echo "single 25%" ;;
        allocations_multiple) echo "multiple 25%" ;;
    esac
}

install_packages() {
    local p missing=()
    for p in cmake spirv-tools ocl-icd-opencl-dev pocl-opencl-icd; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "conformance-cts: installing ${missing[*]}"
        local SUDO=""
        [ "$(id -u)" = 0 ] || SUDO="sudo"
        $SUDO apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >/dev/null
    fi
}

build_cts() {
    local a name s bins=() found
    mkdir -p "$src" "$build"
    for name in OpenCL-CTS OpenCL-Headers SPIRV-Headers; do
        [ -d "$src/$name" ] && continue
        found=("$snapshot/$name"-*.tar.xz)
        a=${found[0]}
        [ -f "$a" ] || { echo "no $name-*.tar.xz in $snapshot (set WEFT_CTS_SNAPSHOT)" >&2; exit 1; }
        tar -xJf "$a" -C "$src"
    done
    if [ ! -f "$build/CMakeCache.txt" ]; then
        cmake -S "$src/OpenCL-CTS" -B "$build" -DCMAKE_BUILD_TYPE=Release \
            -DCL_INCLUDE_DIR="$src/OpenCL-Headers" -DCL_LIB_DIR=/usr/lib/x86_64-linux-gnu \
            -DOPENCL_LIBRARIES=OpenCL -DSPIRV_INCLUDE_DIR="$src/SPIRV-Headers" >"$work/cmake.log" 2>&1 ||
            { tail -n 20 "$work/cmake.log" >&2; exit 1; }
    fi
    for s in $suites; do
        bins+=("$(suite_bin "$s")")
    done
    echo "conformance-cts: building ${bins[*]} (make -j$jobs, log in $work/make.log)"
    make -C "$build" -j"$jobs" "${bins[@]}" >"$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
}

build_weft() {
    mkdir -p "$work/vendors-weft" "$work/vendors-pocl"
    # Weft's ICD only when a Weft configuration (b, c, d) is asked for.
    if [ -n "$(tr -d 'a ' <<<"$configs")" ]; then
        (cd "$root" && cargo build --release -q -p weft -p weft-icd-shim)
        echo "$target/release/libweft_icd.so" >"$work/vendors-weft/weft.icd"
    fi
    local pocl
    pocl=$(grep -l -i pocl /etc/OpenCL/vendors/*.icd 2>/dev/null | head -n 1)
    [ -n "$pocl" ] || { echo "no PoCL .icd in /etc/OpenCL/vendors (scripts/setup.sh installs it)" >&2; exit 1; }
    cp "$pocl" "$work/vendors-pocl/"
}

# The environment of configuration $1, as arguments to env, into the array envs.
config_env() {
    local weft=("OCL_ICD_VENDORS=$work/vendors-weft" "WEFT_HOME=${WEFT_HOME:-$work/weft-home}")
    case $1 in
        a) envs=(-u POCL_DEVICES "OCL_ICD_VENDORS=$work/vendors-pocl" CL_DEVICE_TYPE=default) ;;
        b) envs=(-u POCL_DEVICES "${weft[@]}" CL_DEVICE_TYPE=default) ;;
        c) envs=("POCL_DEVICES=basic basic" "${weft[@]}" CL_DEVICE_TYPE=default) ;;
        d) envs=(-u POCL_DEVICES "${weft[@]}" CL_DEVICE_TYPE="$d_type" CL_DEVICE_INDEX=1) ;;
    esac
}

# What went wrong in sub-test $2, from its log $1: the first line of the sub-test's own
# output (between "<name>..." and "<name> FAILED") that reads as an error, else such a line
# anywhere, else the sub-test's last line; the signal first for a crash.
first_error() {
    awk -v t="$2" '
        function iserr(l) {
            return l ~ /(ERROR|[Ee]rror)([^_]|$)|FAIL|[Ff]ail|Assert|should|[Ii]nvalid|[Ee]xpected|[Mm]ismatch|[Uu]nable|[Cc]ould not|[Cc]annot|[Aa]bort|terminate called|double free|corrupted|invalid pointer|free\(\)|malloc|panicked|Segmentation|[Nn]ot supported|out of range/ &&
                l !~ /^(PASSED|FAILED) |^Saving results|^conformance-cts:/
        }
        /conformance-cts: killed by / { sig = $NF; sub(/conformance-cts: killed by .*/, ""); if (!NF) next }
        $0 == t "..." { inb = 1; next }
        inb && ($0 == t " FAILED" || $0 == t " passed" || $0 == t " test not supported") { inb = 0; next }
        inb && NF { last = $0; if (err == "" && iserr($0)) err = $0 }
        !inb && NF && any == "" && iserr($0) { any = $0 }
        NF { tail = $0 }
        END {
            if (sig != "" && err == "" && last == "") m = "(no output after \"" t "...\")"
            else m = err != "" ? err : any != "" ? any : last != "" ? last : tail
            if (sig != "") m = sig ": " m
            gsub(/\t/, " ", m)
            print substr(m, 1, 240)
        }' "$1" 2>/dev/null | sed "s|$src/OpenCL-CTS/||g"
}

# Run sub-test $3 of suite $2 in configuration $1; prints "status rc seconds".
run_one() {
    local cfg=$1 suite=$2 t=$3 dir bin out json log rc t0 secs status res
    dir=$build/test_conformance/$(suite_dir "$suite")
    bin=$(suite_bin "$suite")
    out=$results/$cfg/$suite
    json=$out/$t.json
    log=$out/$t.log
    rm -f "$json"
    local envs=()
    config_env "$cfg"
    t0=$(date +%s)
    set +e
    # shellcheck disable=SC2046 # suite_args's words are meant to split.
    (cd "$dir" && exec env "${envs[@]}" CL_CONFORMANCE_RESULTS_FILENAME="$json" \
        timeout -k 10 "$limit" "./$bin" $(suite_args "$suite") "$t") >"$log" 2>&1 </dev/null
    rc=$?
    set -e
    secs=$(($(date +%s) - t0))
    # The harness's JSON holds `"<sub-test>": "pass"` (or fail, skip).
    res=$(grep -a -F "\"$t\": \"" "$json" 2>/dev/null | grep -o -E '"(pass|fail|skip)"' | tr -d '"' | head -n 1 || true)
    if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ "$secs" -ge "$limit" ]; }; then
        status=timeout
    elif [ "$rc" -gt 128 ]; then
        status=crash
        printf '\n%s\n' "conformance-cts: killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))" >>"$log"
    elif [ -n "$res" ]; then
        status=$res
        [ "$status" = pass ] && [ "$rc" != 0 ] && status=fail
    elif [ "$rc" = 0 ]; then
        if grep -a -q -E '^SKIPPED|test not supported|Skipping' "$log"; then status=skip; else status=pass; fi
    else
        status=fail
    fi
    echo "$status $rc $secs"
}

run_suite() {
    local cfg=$1 suite=$2 dir bin out tsv tests t r status rc secs err n=0 t0 skip=/
    dir=$build/test_conformance/$(suite_dir "$suite")
    bin=$(suite_bin "$suite")
    [ -x "$dir/$bin" ] || { echo "conformance-cts: $dir/$bin not built" >&2; return 1; }
    out=$results/$cfg/$suite
    tsv=$results/$cfg/$suite.tsv
    mkdir -p "$out"
    [ -f "$tsv" ] && mv "$tsv" "$results/$cfg/$suite.prev.tsv"
    tests=$(cd "$dir" && "./$bin" --list 2>/dev/null | sed -n 's/^\t\([^[:space:]]*\).*/\1/p')
    [ "$full" = 1 ] || skip=$(suite_skip "$suite")
    t0=$(date +%s)
    : >"$tsv.part"
    for t in $tests; do
        # shellcheck disable=SC2254 # GLOB is a pattern.
        case $t in $filter) ;; *) continue ;; esac
        excluded=0
        IFS=, read -r -a globs <<<"$exclude"
        for x in "${globs[@]}"; do
            # shellcheck disable=SC2254
            case $t in $x) excluded=1 ;; esac
        done
        [ "$excluded" = 0 ] || continue
        # shellcheck disable=SC2254
        case $t in $skip) continue ;; esac
        r=$(run_one "$cfg" "$suite" "$t")
        read -r status rc secs <<<"$r"
        err=
        [ "$status" = pass ] || err=$(first_error "$out/$t.log" "$t")
        printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$status" "$rc" "$secs" "$err" >>"$tsv.part"
        n=$((n + 1))
        [ "$status" = pass ] || [ "$status" = skip ] || echo "  $suite $cfg: $t $status (rc $rc, ${secs}s)"
    done
    mv "$tsv.part" "$tsv"
    echo "$suite $cfg: $n sub-tests in $(($(date +%s) - t0))s" | tee -a "$results/times.log"
    if [ -f "$results/$cfg/$suite.prev.tsv" ]; then
        join -t $'\t' <(cut -f1,2 "$results/$cfg/$suite.prev.tsv" | sort) <(cut -f1,2 "$tsv" | sort) |
            awk -F'\t' -v s="$suite" -v c="$cfg" '$2 != $3 { printf "  changed since the run before: %s %s %s: %s -> %s\n", s, c, $1, $2, $3 }'
    fi
}

# The results table of configuration $1 and suite $2: the finished run's, else what an
# interrupted one left (<suite>.tsv.part); empty if neither.
table() {
    local f=$results/$1/$2.tsv
    [ -f "$f" ] || f=$f.part
    [ -f "$f" ] && echo "$f"
    return 0
}

# Configuration $1's table of suite $2, its first column the configuration, the error
# column read again from the logs (so that a better first_error applies to old runs).
with_errors() {
    local t st rc secs err
    while IFS=$'\t' read -r t st rc secs err; do
        [ "$st" = pass ] || [ ! -f "$results/$1/$2/$t.log" ] || err=$(first_error "$results/$1/$2/$t.log" "$t")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$t" "$st" "$rc" "$secs" "$err"
    done <"$(table "$1" "$2")"
}

report() {
    local suite cfg tsv
    echo
    echo "== OpenCL CTS: a = PoCL alone, b = Weft unified over PoCL's default device,"
    echo "   c = Weft unified over two PoCL basic devices, d = PoCL's default device through Weft"
    for suite in $suites; do
        for cfg in $configs; do
            tsv=$(table "$cfg" "$suite")
            [ -n "$tsv" ] || continue
            awk -F'\t' -v s="$suite" -v c="$cfg" -v part="${tsv##*.tsv}" '{ n[$2]++; secs += $4 } END {
                printf "%s %s: %d pass / %d fail / %d skip / %d crash / %d timeout (%ds%s)\n",
                    s, c, n["pass"], n["fail"], n["skip"], n["crash"], n["timeout"], secs,
                    part == "" ? "" : ", interrupted after " NR " sub-tests" }' "$tsv"
        done
    done
    echo
    echo "== Sub-tests where Weft does worse than PoCL alone (a): the results, then each"
    echo "   configuration's first error line (one line for configurations that agree)"
    for suite in $suites; do
        [ -n "$(table a "$suite")" ] || continue
        for cfg in $configs; do
            [ "$cfg" = a ] || [ -z "$(table "$cfg" "$suite")" ] || with_errors "$cfg" "$suite"
        done | awk -F'\t' -v s="$suite" -v ref="$(table a "$suite")" '
            function rank(x) { return x == "pass" ? 0 : x == "skip" ? 1 : x == "fail" ? 2 : x == "timeout" ? 3 : 4 }
            BEGIN { while ((getline l < ref) > 0) { split(l, f, "\t"); a[f[1]] = f[2] } }
            ($2 in a) && rank($3) > rank(a[$2]) {
                if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
                res[$2] = res[$2] (res[$2] == "" ? "" : ", ") $1 " " $3
                sig = $1 " " $3 " rc " $4 ", " $5 "s"
                if (($2, $6) in msg) msg[$2, $6] = msg[$2, $6] ", " $1
                else { msg[$2, $6] = $1; msgs[$2] = msgs[$2] SUBSEP $6 }
            }
            END {
                if (n) print s ":"
                for (i = 1; i <= n; i++) {
                    t = order[i]
                    print "  " t ": " res[t] " (PoCL alone: " a[t] ")"
                    k = split(substr(msgs[t], 2), m, SUBSEP)
                    for (j = 1; j <= k; j++) print "      " msg[t, m[j]] ": " m[j]
                }
            }'
    done
}

# All in one function called on the last line, so that bash has read the whole file before
# it runs anything (the script may be edited while it runs).
main() {
    if [ $report_only = 0 ]; then
        install_packages
        build_cts
        build_weft
        if [ $build_only = 0 ]; then
            mkdir -p "$results"
            for suite in $suites; do
                for cfg in $configs; do
                    run_suite "$cfg" "$suite"
                done
            done
        fi
    fi
    [ $build_only = 1 ] || report | tee "$results/summary-$(date +%Y%m%d-%H%M%S).txt"
}
main; exit
