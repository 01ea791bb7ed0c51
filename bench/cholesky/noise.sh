#!/usr/bin/env bash
# How much this machine scatters the durations of Cholesky's tile kernels, for Weft and for
# StarPU alike: the floor under any history model's prediction error. Interleaved runs of
# StarPU's cholesky_implicit (dmdas, STARPU_CALIBRATE=1: its history files keep every
# task's duration in a mean and standard deviation per kernel) and of Weft's
# examples/cholesky --f32 (the same work: single precision, same n and tiles, dmdas,
# WEFT_CALIBRATE=1, traced), each in a home of its own, after CALIBRATION untimed runs of
# each. Prints per kernel and runtime the samples kept, the mean and the coefficient of
# variation (standard deviation / mean) of the durations after the calibration runs, and
# for Weft the mean absolute relative error of the runtime's predictions, of one median per
# kernel and of one median per kernel and step (bench/cholesky/steps.sh says what those
# tell). StarPU keeps only samples within 1.5x of its entry's mean (STARPU_HISTORY_MAX_ERROR,
# 50%) and its files hold sums only: its rows count those, and Weft's "cv 1.5x" column
# applies the same filter (around the median) to Weft's samples, like for like; Weft's
# "cv" counts every sample. A history model cannot score much under its samples'
# coefficient of variation (a normal spread gives a mean absolute deviation of 0.8
# standard deviations).
#
# StarPU's codelets: chol_model_11 POTRF, chol_model_21 TRSM, chol_model_22 the update of
# every tile, diagonal ones included (its GEMM codelet does SYRK's work too).
#
# Usage: bench/cholesky/noise.sh
# Environment: SIZE=2048/256, ROUNDS=20 (runs of each), CALIBRATION=3, NCPU=2 (CPU workers
#   of both), GAP=0 (seconds between rounds: spread over more of the machine's moods),
#   BIN=PATH (an examples/cholesky binary instead of building one),
#   STARPU_CHOLESKY=/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit.
# Needs: cargo, python3, starpu-examples and libopenblas (scripts/setup.sh --bench).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
SIZE=${SIZE:-2048/256}
ROUNDS=${ROUNDS:-20}
CALIBRATION=${CALIBRATION:-3}
NCPU=${NCPU:-2}
GAP=${GAP:-0}
n=${SIZE%/*} tile=${SIZE#*/}
((n % tile == 0)) || { echo "SIZE: n ($n) must be a multiple of the tile ($tile)" >&2; exit 2; }
STARPU_BIN=${STARPU_CHOLESKY:-/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit}
[[ -x $STARPU_BIN ]] || { echo "StarPU's cholesky_implicit not found at $STARPU_BIN (apt-get install starpu-examples)" >&2; exit 2; }
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-pthread
# shellcheck source=bench/cholesky/common.sh
source "$root/bench/cholesky/common.sh"
cholesky_bin
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
unset WEFT_SCHED WEFT_NOPENCL POCL_DEVICES WEFT_CALIBRATE WEFT_TRACE STARPU_SCHED STARPU_CALIBRATE
weft() { # [trace file]
    env WEFT_NCUDA=0 WEFT_NOPENCL=0 WEFT_NCPU="$NCPU" WEFT_SCHED=dmdas WEFT_CALIBRATE=1 \
        WEFT_HOME="$out/weft" ${1:+WEFT_TRACE="$1"} "$BIN" "$n" "$tile" --f32 > /dev/null
}
starpu() {
    STARPU_HOME=$out/starpu STARPU_SCHED=dmdas STARPU_CALIBRATE=1 STARPU_NCPU=$NCPU STARPU_NCUDA=0 \
        STARPU_NOPENCL=0 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1 \
        LD_LIBRARY_PATH=$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$STARPU_BIN" -size "$n" -nblocks $((n / tile)) > /dev/null 2>&1
}
for ((r = 0; r < CALIBRATION; r++)); do weft; starpu; done
# StarPU's sums so far, to take away: the rows count the timed rounds only.
models=$(find "$out/starpu" -path '*codelets*' -name 'chol_model_*' -type f)
mkdir -p "$out/before"
for f in $models; do cp "$f" "$out/before/"; done
for ((r = 0; r < ROUNDS; r++)); do
    weft "$out/t$r.json"
    starpu
    sleep "$GAP"
done
echo "== Cholesky $n/$tile f32, $NCPU CPU workers, dmdas: kernel durations, Weft and StarPU =="
echo "commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown); StarPU $(dpkg-query -W -f='${Version}' starpu-examples 2> /dev/null); $ROUNDS rounds each; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" << 'PY'
import collections, glob, json, math, os, statistics as st, sys
out = sys.argv[1]

def starpu_sums(path):
    # StarPU 1.3 history files: under each "# hash size flops mean (us) dev (us) sum sum2
    # n" line, one line of sums per footprint, up to the next comment.
    s = s2 = k = 0.0
    table = False
    for l in open(path).read().splitlines():
        if l.startswith("#"):
            table = l.startswith("# hash") and "sum2" in l
        elif table and len(l.split()) >= 8:
            f = l.split()
            s, s2, k = s + float(f[5]), s2 + float(f[6]), k + float(f[7])
    return s, s2, k

names = {"chol_model_11": "potrf", "chol_model_21": "trsm", "chol_model_22": "gemm+syrk"}
sp = {}
# (os.walk: StarPU keeps them under a hidden .starpu, which glob skips)
paths = [os.path.join(d, f) for d, _, fs in os.walk(out + "/starpu") for f in fs if f.startswith("chol_model_")]
for p in paths:
    base = os.path.basename(p).split(".")[0]
    s, s2, k = starpu_sums(p)
    b = os.path.join(out, "before", os.path.basename(p))
    if os.path.exists(b):
        s0, s20, k0 = starpu_sums(b)
        s, s2, k = s - s0, s2 - s20, k - k0
    if k > 1:
        mean = s / k
        sd = math.sqrt(max(s2 / k - mean * mean, 0.0))
        sp[names.get(base, base)] = (int(k), mean, 100 * sd / mean)

rows = collections.defaultdict(list)  # kernel -> [(step, measured, predicted)]
for f in glob.glob(out + "/t*.json"):
    d = json.load(open(f))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    seen, occ = set(), collections.Counter()
    for e in sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "task"), key=lambda e: e["ts"]):
        a, name = e["args"], e["name"]
        k = occ[name]
        occ[name] += 1
        first = (name, e["tid"]) not in seen  # a model's first task on a worker: a warm-up
        seen.add((name, e["tid"]))
        if not first and "measured_us" in a:
            rows[name].append((k, a["measured_us"], a.get("predicted_us")))

def mape(pairs):
    return 100 * st.mean(abs(p - m) / m for m, p in pairs) if pairs else float("nan")

def cv(ms):
    return 100 * st.pstdev(ms) / st.mean(ms)

def kept(ms):  # StarPU's filter: within 1.5x of the estimate (here the median)
    med = st.median(ms)
    return [m for m in ms if med / 1.5 <= m <= med * 1.5]

print("%-10s %-7s %9s %9s %7s %8s %8s %8s %8s" % ("kernel", "runtime", "samples", "mean us", "cv 1.5x", "cv", "model", "median", "oracle"))
for name in ("potrf", "trsm", "syrk", "gemm", "gemm+syrk"):
    if name in sp:
        k, mean, c = sp[name]
        print("%-10s %-7s %9d %9.1f %6.1f%%" % (name, "StarPU", k, mean, c))
    rr = rows.get(name, []) if name != "gemm+syrk" else rows.get("gemm", []) + rows.get("syrk", [])
    if len(rr) < 2:
        continue
    ms = [m for _, m, _ in rr]
    ks = kept(ms)
    line = "%-10s %-7s %4d/%-4d %9.1f %6.1f%% %7.1f%%" % (name, "Weft", len(ks), len(ms), st.mean(ks), cv(ks), cv(ms))
    if name != "gemm+syrk":
        med = st.median(ms)
        by = collections.defaultdict(list)
        for k, m, _ in rr:
            by[k].append(m)
        kmed = {k: st.median(v) for k, v in by.items()}
        model = [(m, p) for _, m, p in rr if p is not None]
        line += " %7.1f%% %7.1f%% %7.1f%%" % (mape(model), mape([(m, med) for m in ms]), mape([(m, kmed[k]) for k, m, _ in rr]))
    print(line)
PY
