#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fills in the cover letter git format-patch wrote (scripts/series.sh).

Usage: cover-letter.py COVER TEXT RESULTS

TEXT (patches/cover-letter.txt) gives the subject on its first line and the
body after it; lines starting with '#' are comments. In the body,
@BENCH_INFO@ becomes the description of the benchmark run in RESULTS
(bench/results/info.md) and @BENCH_TABLE@ a summary of its table: per
memory_backed/completion pair, the geometric means of the rnull/null_blk
ratios of IOPS and of CPU time per I/O, and how many points were found
slower or faster than the A/A spread allows.
"""

import math
import os
import sys


def summary(table_md):
    groups = {}
    for row in open(table_md):
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        # rw bs qd jobs mem completion [setting] c_iops r_iops ratio c_cpu r_cpu
        # ratio verdict (tables before the setting column have 13 cells)
        setting = ""
        if len(cells) == 14:
            setting = cells.pop(6).split("+")[0]
        if len(cells) != 13 or not cells[8][:1].isdigit():
            continue
        key = (cells[4], cells[5], setting)
        g = groups.setdefault(key, {"iops": [], "cpu": [], "slower": 0, "faster": 0})
        g["iops"].append(float(cells[8].split()[0]))
        g["cpu"].append(float(cells[11].split()[0]))
        if cells[12] in ("slower", "faster"):
            g[cells[12]] += 1

    def gm(values):
        return math.exp(sum(map(math.log, values)) / len(values))

    lines = ["  memory_backed completion setting    points IOPS ratio CPU/IO ratio slower faster"]
    every = {"iops": [], "cpu": [], "slower": 0, "faster": 0}
    for (mem, completion, setting), g in sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0])):
        lines.append(f"  {mem:>13} {completion:>10} {setting:10} {len(g['iops']):>6}"
                     f" {gm(g['iops']):>10.3f} {gm(g['cpu']):>12.3f} {g['slower']:>6}"
                     f" {g['faster']:>6}")
        for k in every:
            every[k] += g[k]
    lines.append(f"  {'all':>13} {'':>10} {'':10} {len(every['iops']):>6} {gm(every['iops']):>10.3f}"
                 f" {gm(every['cpu']):>12.3f} {every['slower']:>6} {every['faster']:>6}")
    return "\n".join(lines)


def main():
    cover, text, results = sys.argv[1:]
    lines = [line for line in open(text).read().split("\n") if not line.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    subject, body = lines[0], "\n".join(lines[1:]).strip("\n")
    body = body.replace("@BENCH_INFO@", open(os.path.join(results, "info.md")).read().strip())
    body = body.replace("@BENCH_TABLE@", summary(os.path.join(results, "table.md")))
    letter = open(cover).read()
    for mark in ("*** SUBJECT HERE ***", "*** BLURB HERE ***"):
        if mark not in letter:
            sys.exit(f"{cover}: no '{mark}'")
    letter = letter.replace("*** SUBJECT HERE ***", subject).replace("*** BLURB HERE ***", body)
    open(cover, "w").write(letter)


main()
