#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Usage: bench-check.sh [RESULTS]
# Checks the benchmark harness on a small scale: make bench on one point
# with its A/A calibration, an A/A run (BENCH_AA=1) and make insn over 5000
# requests, each with assertions on what it writes: the harness's
# bookkeeping and arithmetic, not the drivers' speed (make bench measures
# that). Prints one line per check, like tests/run.sh, and appends them to
# RESULTS if given. About two and a half minutes here; the results of the
# last passing run are reused while the inputs are the same. Run after
# scripts/build.sh.
source "$(dirname "$0")/common.sh"

results=${1:-}
work=$CACHE/bench-check
# Inputs: the harness (runner, guest init, benchmark, report, counting),
# the kernel and QEMU. Not the drivers: an edit of one changes its speed,
# not the harness, and would cost every make check after it a minute.
reuse_results bench-check "$results" "$REPO"/scripts/{vm,init,common,bench,bench-check}.sh \
	"$REPO"/bench/{bench.sh,report.py,insn.sh,insn.py,tbcount.c} "$REPO"/tests/log-bad.ere \
	"$OUT/arch/x86/boot/bzImage" <(qemu-system-x86_64 --version) && exit 0
out=()

# One point, run briefly: 4 KiB random reads at depth 32, softirq
# completion, no memory backing, no zoned points and no settings groups.
point=(BENCH_MODE=quick BENCH_RW=randread BENCH_BS=4k BENCH_IODEPTH=32 BENCH_NUMJOBS=1
	BENCH_MEMORY=0 BENCH_COMPLETION=1 BENCH_ZONED=none BENCH_SETTINGS=none BENCH_REPS=2
	BENCH_RUNTIME=0.5)

# run_bench NAME [VAR=VALUE...]: make bench's script on the point, its
# results in $work/NAME, its console in $work/NAME.log; prints its status.
run_bench() {
	local name=$1 status=0
	shift
	rm -rf "${work:?}/$name"
	env "${point[@]}" "$@" BENCH_OUT="$work/$name" "$REPO/scripts/bench.sh" \
		>"$work/$name.log" 2>&1 || status=$?
	echo "$status"
}

rm -rf "$work"
mkdir -p "$work"
log "bench-check: a small make bench, an A/A run and a small make insn"
bench_status=$(run_bench bench)
aa_status=$(run_bench aa BENCH_AA=1)
insn_status=0
BENCH_OUT="$work/insn" BENCH_INSN_IOS=5000 BENCH_RW=randread BENCH_BS=4k BENCH_MEMORY=0 \
	"$REPO/bench/insn.sh" >"$work/insn.log" 2>&1 || insn_status=$?

# The checks read the files the runs wrote (points.csv and table.md of
# bench/report.py, insn.md of bench/insn.py) and print run.sh's lines.
mapfile -t out < <(python3 - "$work" "$bench_status" "$aa_status" "$insn_status" <<'PY'
import csv
import json
import os
import re
import sys

work, statuses = sys.argv[1], dict(zip(("bench", "aa", "insn"), sys.argv[2:5]))


def report(ok, name, detail=""):
    if ok:
        print(f"ok      bench-check: {name}")
    else:
        print(f"FAILED  bench-check: {name}")
        for line in detail.splitlines():
            print(f"    {line}")


def tail(name):
    with open(os.path.join(work, f"{name}.log"), errors="replace") as f:
        return "".join(f.readlines()[-8:])


def check_run(name, what):
    """The run ended well and wrote a report; returns its points."""
    d = os.path.join(work, name)
    if statuses[name] != "0" or os.path.exists(os.path.join(d, "INVALID")):
        report(False, f"{what} runs", f"exit status {statuses[name]}\n{tail(name)}")
        return None
    with open(os.path.join(d, "points.csv")) as f:
        points = list(csv.DictReader(f))
    with open(os.path.join(d, "table.md")) as f:
        table = f.read()
    report(len(points) == 1 and points[0]["rw"] == "randread" and points[0]["pairs"] == "2"
           and "nan" not in table,
           f"{what} reports the one point, from two pairs of runs",
           f"points: {points}\n{table}")
    with open(os.path.join(d, "summary.json")) as f:
        figures = json.load(f)
    report(figures["points"] == 1
           and abs(figures["iops_ratio_geomean"] - float(points[0]["ratio"])) < 1e-3,
           f"{what}: summary.json has the figures of the table",
           f"summary.json: {figures}\npoints: {points}")
    return points, table


def ratio_checks(what, name, point):
    """The point's figures, recomputed from fio's own output: the mean of
    the ratios of the pairs of runs, run in the order A B B A."""
    with open(os.path.join(work, name, "raw", "randread-4k-32-1-0-1.json")) as f:
        jobs = json.load(f)["jobs"]
    order = [j["jobname"] for j in jobs]
    report(order == ["c1", "r1", "r2", "c2"],
           f"{what}: the runs of the two devices alternate (A B B A)", f"runs: {order}")
    iops = {j["jobname"]: j["read"]["iops"] for j in jobs}
    want = (iops["r1"] / iops["c1"] + iops["r2"] / iops["c2"]) / 2
    c, ratio = float(point["c_iops"]), float(point["ratio"])
    report(abs(ratio - want) <= 1e-9 * want and abs(c - (iops["c1"] + iops["c2"]) / 2) <= 1e-6 * c,
           f"{what}: the ratio is the mean of the pairs' ratios of fio's IOPS",
           f"reported {ratio} and null_blk {c}; fio: {iops}")
    return ratio


# make bench: rnull against null_blk, and the A/A calibration point of the
# same boot (a second null_blk device) in table.md.
got = check_run("bench", "make bench")
if got:
    points, table = got
    ratio_checks("make bench", "bench", points[0])
    m = re.search(r"^\| randread \| 4k \| 32 \| 1 \| 0 \| 1 \|  \| \d+ \| \d+ \| ([0-9.]+) ±",
                  table.split("A/A calibration points")[-1], re.M)
    report(m is not None and 0.5 <= float(m.group(1)) <= 2,
           "make bench: the A/A calibration point of the boot is near 1 (0.5-2)",
           m.group(0) if m else table)

# BENCH_AA=1: null_blk against a second null_blk device.
got = check_run("aa", "the A/A run")
if got:
    points, table = got
    ratio = ratio_checks("the A/A run", "aa", points[0])
    report(0.5 <= ratio <= 2 and "A/A run (BENCH_AA=1)" in table,
           "the A/A run: says so, and its ratio is near 1 (0.5-2)", f"ratio {ratio}")

# make insn: per-request counts of both drivers, by function.
if statuses["insn"] != "0":
    report(False, "make insn runs", f"exit status {statuses['insn']}\n{tail('insn')}")
else:
    with open(os.path.join(work, "insn", "insn.md")) as f:
        text = f.read()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"-?\d+", cells[1] or "x"):
            rows[cells[0].strip("`")] = (int(cells[1]), int(cells[2]))
    report("over 5000 requests" in text and rows.get("kernel", (0, 0))[0] > 0
           and rows["kernel"][1] > 0 and rows.get("user space (fio)", (0, 0))[0] > 0,
           "make insn counts the kernel and fio per request on both drivers", text[:400])
    ours = [k for k in rows if k.endswith("[rnull]") and "queue_rq" in k]
    report(rows.get("null_queue_rq [null_blk]", (0, 1))[0] > 0
           and rows["null_queue_rq [null_blk]"][1] == 0
           and ours and rows[ours[0]][0] == 0 and rows[ours[0]][1] > 0,
           "make insn finds each driver's queue_rq on its side only",
           "\n".join(k for k in rows if "queue_rq" in k))
    # The block layer's submission runs the same code for both drivers.
    c, r = rows.get("blk_mq_submit_bio", (0, 0))
    report(c > 0 and abs(c - r) <= c / 10,
           "make insn: blk_mq_submit_bio costs the same per request on both (10%)",
           f"null_blk {c}, rnull {r}")
PY
)
((${#out[@]})) || out=("FAILED  bench-check: the checks printed nothing")

printf '%s\n' "${out[@]}"
[ -z "$results" ] || printf '%s\n' "${out[@]}" >>"$results"
store_results bench-check "${out[@]}"
