#!/usr/bin/env bash
# How much of a tile kernel's prediction error a history model could remove at all: traced
# runs of examples/cholesky on CPU workers (dmdas, WEFT_CALIBRATE=1, after CALIBRATION
# untimed runs in a WEFT_HOME of its own), then per codelet the mean absolute relative error
# (as WEFT_STATS prints it, warm-ups left out) of
#   model   the predictions the runtime made,
#   median  one estimate per codelet, the median of every measured duration (the best a
#           model keyed by data sizes can do on these samples),
#   oracle  one estimate per codelet and occurrence (the k-th POTRF of every run shares
#           one: a model that knew each step's cache state and neighbours),
# and the share of durations over 1.5x the median (the machine's disturbances: another
# program, the host). Prints the median duration of each POTRF step too.
#
# Usage: bench/cholesky/steps.sh
# Environment: SIZE=2048/256, ROUNDS=8, CALIBRATION=3, NCPU=2 (CPU workers), BIN=PATH (an
#   examples/cholesky binary instead of building one), KEEP=1 (keep the traces, t*.json,
#   and say where: to replay other models on them).
# Needs: cargo, python3.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
SIZE=${SIZE:-2048/256}
ROUNDS=${ROUNDS:-8}
CALIBRATION=${CALIBRATION:-3}
n=${SIZE%/*} tile=${SIZE#*/}
# shellcheck source=bench/cholesky/common.sh
source "$root/bench/cholesky/common.sh"
cholesky_bin
out=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
unset WEFT_SCHED WEFT_NOPENCL POCL_DEVICES WEFT_CALIBRATE WEFT_TRACE
export WEFT_NCUDA=0 WEFT_NOPENCL=0 WEFT_NCPU=${NCPU:-2} WEFT_SCHED=dmdas WEFT_CALIBRATE=1
export WEFT_HOME=$out/home
for ((r = 0; r < CALIBRATION; r++)); do "$BIN" "$n" "$tile" > /dev/null; done
for ((r = 0; r < ROUNDS; r++)); do WEFT_TRACE=$out/t$r.json "$BIN" "$n" "$tile" > /dev/null; done
echo "== Cholesky $n/$tile, $WEFT_NCPU CPU workers, dmdas: prediction errors and their floor =="
echo "commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown); $CALIBRATION calibration runs, $ROUNDS traced; load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${KEEP:-}" ] || echo "traces kept in $out"
python3 - "$out"/t*.json << 'PY'
import collections, json, statistics as st, sys
rows = collections.defaultdict(list)  # codelet -> [(occurrence, measured, predicted)]
for f in sys.argv[1:]:
    d = json.load(open(f))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    tasks = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "task"), key=lambda e: e["ts"])
    seen, occ = set(), collections.Counter()
    for e in tasks:
        a = e["args"]
        k = occ[e["name"]]
        occ[e["name"]] += 1
        if "predicted_us" not in a or "measured_us" not in a:
            continue
        if (e["name"], e["tid"]) not in seen:  # a model's first task on a worker: a warm-up
            seen.add((e["name"], e["tid"]))
            continue
        rows[e["name"]].append((k, a["measured_us"], a["predicted_us"]))
def mape(pairs):
    return 100 * st.mean(abs(p - m) / m for m, p in pairs)
print("%-8s %6s %9s %8s %8s %8s %12s" % ("codelet", "tasks", "median us", "model", "median", "oracle", "over 1.5x"))
for name, rr in sorted(rows.items()):
    ms = [m for _, m, _ in rr]
    med = st.median(ms)
    by = collections.defaultdict(list)
    for k, m, _ in rr:
        by[k].append(m)
    kmed = {k: st.median(v) for k, v in by.items()}
    print("%-8s %6d %9.1f %7.1f%% %7.1f%% %7.1f%% %11.1f%%" % (
        name, len(rr), med, mape([(m, p) for _, m, p in rr]), mape([(m, med) for m in ms]),
        mape([(m, kmed[k]) for k, m, _ in rr]), 100 * sum(m > 1.5 * med for m in ms) / len(ms)))
if "potrf" in rows:
    by = collections.defaultdict(list)
    for k, m, _ in rows["potrf"]:
        by[k].append(m)
    print("POTRF median by step (us): " + ", ".join("%d: %.0f" % (k, st.median(v)) for k, v in sorted(by.items())))
PY
