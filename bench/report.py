#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarises a results directory of bench/bench.sh.

Every point of the benchmark is one fio JSON file in DIR/raw, holding the
interleaved runs c1, r1, c2, r2, ... (c: null_blk, r: rnull). For each point
the ratio rnull / null_blk of IOPS and of CPU time per I/O is computed run
pair by run pair, and reported as a mean with a 95% confidence interval
(Student's t over the pairs).

DIR/aa, if there, holds the calibration points of the same boot: a second
null_blk device in rnull's place. The largest distance from 1 of their IOPS
ratios is the A/A spread S: two identical devices differed by that much.
A point is called slower only when its whole interval lies below 1 - S,
faster only when it lies above 1 + S.

    report.py DIR            write DIR/table.md, DIR/points.csv and
                             DIR/ratios.svg, and print the table
    report.py --point FILE   print the one-line summary of a point
"""

import csv
import json
import math
import os
import sys

# Two-sided 95% quantiles of Student's t by degrees of freedom.
T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
        2.086]

FIELDS = ("rw", "bs", "iodepth", "numjobs", "memory_backed", "completion", "setting")


def t975(df):
    return T975[df] if df < len(T975) else 1.96


def interval(values):
    """Mean and half-width of the 95% confidence interval of the mean."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, t975(n - 1) * math.sqrt(var / n)


def run_figures(job):
    """IOPS and CPU time per I/O (ns) of one fio job (group)."""
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    iops = job["read"]["iops"] + job["write"]["iops"]
    # fio gives the CPU use of the job's processes as a percentage of the
    # job's run time (summed over its processes).
    cpu_ms = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"]
    return iops, (cpu_ms * 1e6 / ios if ios else float("nan"))


def parse_name(path):
    """The settings of a point, from its file name: the fields of FIELDS,
    separated by '-'; the last, the group of BENCH_SETTINGS (with "+fsync"
    or "+fua" for runs that flush or force unit access), is empty for the
    points of the matrix."""
    parts = os.path.basename(path)[: -len(".json")].split("-")
    point = dict(zip(FIELDS, parts))
    point.setdefault("setting", "")
    return point


def load_point(path):
    with open(path) as f:
        data = json.load(f)
    runs = {job["jobname"]: run_figures(job) for job in data["jobs"]}
    pairs = []
    rep = 1
    while f"c{rep}" in runs and f"r{rep}" in runs:
        pairs.append((runs[f"c{rep}"], runs[f"r{rep}"]))
        rep += 1
    if not pairs:
        raise ValueError(f"{path}: no pair of runs")
    point = parse_name(path)
    point["c_iops"] = sum(c[0] for c, _ in pairs) / len(pairs)
    point["r_iops"] = sum(r[0] for _, r in pairs) / len(pairs)
    point["c_cpu_ns"] = sum(c[1] for c, _ in pairs) / len(pairs)
    point["r_cpu_ns"] = sum(r[1] for _, r in pairs) / len(pairs)
    point["ratio"], point["ratio_ci"] = interval([r[0] / c[0] for c, r in pairs])
    point["cpu_ratio"], point["cpu_ratio_ci"] = interval([r[1] / c[1] for c, r in pairs])
    point["pairs"] = len(pairs)
    return point


def load_dir(path):
    """The points of the fio JSON files in directory PATH (none if absent)."""
    if not os.path.isdir(path):
        return []
    return [load_point(os.path.join(path, f)) for f in sorted(os.listdir(path))
            if f.endswith(".json")]


def verdict(mean, half, spread=0.0):
    """Whether rnull is slower or faster than null_blk: the interval of the
    ratio lies wholly outside 1 +- spread."""
    if math.isnan(half):
        return ""
    if mean + half < 1 - spread:
        return "slower"
    if mean - half > 1 + spread:
        return "faster"
    return ""


def aa_spread(aa_points):
    """The A/A spread: how far from 1 the ratio of two null_blk devices got."""
    return max((abs(p["ratio"] - 1) for p in aa_points), default=0.0)


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def label(p):
    return (f"{p['rw']} {p['bs']} qd{p['iodepth']} j{p['numjobs']} "
            f"mb{p['memory_backed']} {p['completion']}"
            + (f" {p['setting']}" if p["setting"] else ""))


def one_line(p):
    return (f"{label(p):46} null_blk {p['c_iops']:9.0f}  rnull {p['r_iops']:9.0f} IOPS  "
            f"ratio {p['ratio']:.3f} ±{p['ratio_ci']:.3f}  "
            f"CPU/IO ratio {p['cpu_ratio']:.3f} ±{p['cpu_ratio_ci']:.3f}  "
            f"{p.get('verdict', verdict(p['ratio'], p['ratio_ci']))}")


HEADER = ["rw", "bs", "qd", "jobs", "mem", "completion", "setting", "null_blk IOPS",
          "rnull IOPS",
          "IOPS ratio (95% CI)", "null_blk CPU/IO", "rnull CPU/IO", "CPU/IO ratio (95% CI)",
          "verdict"]


def table_rows(points):
    for p in points:
        yield [p["rw"], p["bs"], p["iodepth"], p["numjobs"], p["memory_backed"],
               p["completion"], p["setting"], f"{p['c_iops']:.0f}", f"{p['r_iops']:.0f}",
               f"{p['ratio']:.3f} ± {p['ratio_ci']:.3f}",
               f"{p['c_cpu_ns'] / 1000:.1f} µs", f"{p['r_cpu_ns'] / 1000:.1f} µs",
               f"{p['cpu_ratio']:.3f} ± {p['cpu_ratio_ci']:.3f}",
               p["verdict"]]


def figures(points, aa_points):
    """The figures the benchmark is judged by (summary.json)."""
    spread = aa_spread(aa_points)
    worst = min(points, key=lambda p: p["ratio"])
    mem_j2 = [p for p in points if p["memory_backed"] == "1" and p["numjobs"] == "2"]

    def mean(values):
        value = geomean(values)
        return None if math.isnan(value) else round(value, 4)
    return {
        "points": len(points),
        "iops_ratio_geomean": mean(p["ratio"] for p in points),
        "cpu_per_io_ratio_geomean": mean(p["cpu_ratio"] for p in points),
        "memory_backed_two_jobs_points": len(mem_j2),
        "memory_backed_two_jobs_iops_ratio_geomean": mean(p["ratio"] for p in mem_j2),
        "aa_points": len(aa_points),
        "aa_spread": round(spread, 4) if aa_points else None,
        "aa_geomean": mean(p["ratio"] for p in aa_points),
        "worst": {"point": label(worst), "ratio": round(worst["ratio"], 4),
                  "ci": None if math.isnan(worst["ratio_ci"]) else round(worst["ratio_ci"], 4)},
        "slower": sum(p["verdict"] == "slower" for p in points),
        "faster": sum(p["verdict"] == "faster" for p in points),
        "wholly_below_0_97": sum(p["ratio"] + p["ratio_ci"] < 0.97 for p in points
                                 if not math.isnan(p["ratio_ci"])),
    }


def summary(points, aa_points):
    """The figures the benchmark is judged by, in a few lines."""
    f = figures(points, aa_points)
    spread = aa_spread(aa_points)
    lines = [f"{f['points']} points: geometric mean of IOPS ratios "
             f"{f['iops_ratio_geomean']:.3f}; worst {f['worst']['ratio']:.3f} "
             f"({f['worst']['point']}); interval wholly below 0.97 at {f['wholly_below_0_97']}."]
    if aa_points:
        lines.append(f"A/A spread of this boot (largest distance from 1 of {len(aa_points)} "
                     f"null_blk/null_blk ratios): {spread:.3f}; A/A geometric mean "
                     f"{f['aa_geomean']:.3f}.")
        lines.append(f"Slower at {f['slower']}, faster at {f['faster']}: the interval lies "
                     f"wholly below {1 - spread:.3f} or above {1 + spread:.3f}.")
    else:
        lines.append(f"No A/A calibration: slower at {f['slower']}, faster at {f['faster']} "
                     f"(the interval excludes 1).")
    mem = (f"Memory-backed points with 2 jobs ({f['memory_backed_two_jobs_points']}): "
           f"geometric mean of IOPS ratios "
           f"{f['memory_backed_two_jobs_iops_ratio_geomean']:.3f}. "
           if f["memory_backed_two_jobs_points"] else "")
    lines.append(f"{mem}CPU time per I/O: geometric mean of ratios "
                 f"{f['cpu_per_io_ratio_geomean']:.3f}.")
    return "\n".join(lines)


AA_HEADER = ["rw", "bs", "qd", "jobs", "mem", "completion", "setting", "null_blk IOPS",
             "null_blk (2nd device) IOPS", "IOPS ratio (95% CI)"]


def markdown(points, aa_points, info):
    lines = []
    if info:
        lines += [info.strip(), ""]
    lines += ["| " + " | ".join(HEADER) + " |",
              "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(points)]
    lines += ["", summary(points, aa_points), ""]
    if aa_points:
        lines += ["A/A calibration points (a second null_blk device in rnull's place):", "",
                  "| " + " | ".join(AA_HEADER) + " |",
                  "|" + "|".join("---" for _ in AA_HEADER) + "|"]
        lines += ["| " + " | ".join(row[:9] + [row[9]]) + " |"
                  for row in table_rows(aa_points)]
        lines.append("")
    return "\n".join(lines)


def svg(points, spread):
    """The IOPS ratios with their intervals, one column per point, over the
    band of the A/A spread."""
    step, left, top, height, bottom = 14, 50, 20, 300, 150
    width = left + step * len(points) + 20
    los = [p["ratio"] - (0 if math.isnan(p["ratio_ci"]) else p["ratio_ci"]) for p in points]
    his = [p["ratio"] + (0 if math.isnan(p["ratio_ci"]) else p["ratio_ci"]) for p in points]
    # Intervals are clipped to [0, 2]: a few pairs of runs under emulation
    # can give very wide ones.
    los = [max(0.0, v) for v in los]
    his = [min(2.0, v) for v in his]
    lo = min(0.8, math.floor(min(los) * 10) / 10)
    hi = max(1.2, math.ceil(max(his) * 10) / 10)

    def y(v):
        return top + (hi - v) / (hi - lo) * height

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{top + height + bottom}" font-family="sans-serif" font-size="10">',
           f'<rect width="{width}" height="{top + height + bottom}" fill="white"/>']
    tick = lo
    while tick <= hi + 1e-9:
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(tick):.1f}" '
                   f'y2="{y(tick):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 5}" y="{y(tick) + 3:.1f}" '
                   f'text-anchor="end">{tick:.1f}</text>')
        tick += 0.1
    if spread > 0:
        out.append(f'<rect x="{left}" y="{y(1 + spread):.1f}" width="{width - 10 - left}" '
                   f'height="{y(1 - spread) - y(1 + spread):.1f}" fill="#eee"/>')
    out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(1):.1f}" y2="{y(1):.1f}" '
               f'stroke="black"/>')
    out.append(f'<text x="12" y="{top + height / 2}" transform="rotate(-90 12 '
               f'{top + height / 2})" text-anchor="middle">IOPS rnull / null_blk</text>')
    for i, p in enumerate(points):
        x = left + step * i + step / 2
        colour = {"slower": "#c00", "faster": "#080"}.get(p["verdict"], "#246")
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(los[i]):.1f}" '
                   f'y2="{y(his[i]):.1f}" stroke="{colour}"/>')
        out.append(f'<circle cx="{x:.1f}" cy="{y(p["ratio"]):.1f}" r="2.5" fill="{colour}"/>')
        ly = top + height + 6
        out.append(f'<text x="{x + 3:.1f}" y="{ly}" transform="rotate(90 {x + 3:.1f} {ly})" '
                   f'font-size="8">{label(p)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) == 3 and argv[1] == "--point":
        print(one_line(load_point(argv[2])))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    raw = os.path.join(out, "raw")
    points = load_dir(raw)
    if not points:
        print(f"{raw}: no results", file=sys.stderr)
        return 1
    aa_points = load_dir(os.path.join(out, "aa"))
    spread = aa_spread(aa_points)
    for p in points + aa_points:
        p["verdict"] = verdict(p["ratio"], p["ratio_ci"], spread)
    # Zoned points (zwrite, zreport) last, after the others.
    order = {"randread": 0, "randwrite": 1, "zwrite": 2, "zreport": 3}

    def kib(bs):
        return int(bs[:-1]) * (1024 if bs.endswith("M") else 1) if bs[:-1].isdigit() else 0

    def key(p):
        return (p["rw"].startswith("z"), p["setting"] != "", p["setting"], p["completion"],
                p["memory_backed"], order.get(p["rw"], 4), kib(p["bs"]), int(p["iodepth"]),
                int(p["numjobs"]))

    points.sort(key=key)
    aa_points.sort(key=key)
    info = ""
    if os.path.exists(os.path.join(out, "info.md")):
        with open(os.path.join(out, "info.md")) as f:
            info = f.read()
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(markdown(points, aa_points, info))
    with open(os.path.join(out, "ratios.svg"), "w") as f:
        f.write(svg(points, spread))
    with open(os.path.join(out, "points.csv"), "w", newline="") as f:
        keys = list(FIELDS) + ["pairs", "c_iops", "r_iops", "ratio", "ratio_ci",
                               "c_cpu_ns", "r_cpu_ns", "cpu_ratio", "cpu_ratio_ci", "verdict"]
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(points)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(figures(points, aa_points), f, indent=2)
        f.write("\n")
    for p in points:
        print(one_line(p))
    print(summary(points, aa_points))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
