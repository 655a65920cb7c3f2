#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Instructions per request, by function, from the counts of bench/insn.sh.

Usage: insn.py DIR N

DIR holds DRIVER-N and DRIVER-2N for null_blk and rnull, each with `blocks`
(lines "<address in hex> <instructions> <executions>" from the plugin) and
`kallsyms` (the guest's /proc/kallsyms). A block's instructions are charged
to the function its first instruction is in; blocks end at calls and jumps,
so this is exact except for the rare block that runs into the next symbol.
Writes DIR/insn.md and prints it.
"""

import bisect
import collections
import os
import subprocess
import sys

# Where x86_64 kernel addresses start; everything below is user space.
KERNEL_START = 0xFFFF800000000000
# Functions shown: the largest per-request counts of either driver, and the
# largest differences between the drivers.
SHOWN = 25
# What runs in the kernel's init text, only at boot, and the timer
# calibration, which loops for a time rather than a count (it runs at boot and
# once more a second later): neither is per request, and their counts differ
# from boot to boot by up to about 100 instructions per request of a run.
BOOT = "(boot: init text, timer calibration)"
CALIBRATION = {"pit_hpet_ptimer_calibrate_cpu", "calibrate_APIC_clock",
               "delay_tsc", "delay_with_tsc", "tsc_refine_calibration_work"}


def load_symbols(path):
    """Sorted (address, name) of the text symbols of a kallsyms file."""
    symbols = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3 or fields[1] not in "tTwW":
                continue
            name = fields[2]
            if len(fields) > 3:
                name += " " + fields[3]
            symbols.append((int(fields[0], 16), name))
    symbols.sort()
    return symbols


def per_function(run):
    """Instructions run per function (user space as one) in a boot."""
    symbols = load_symbols(f"{run}/kallsyms")
    starts = [address for address, _ in symbols]
    where = dict((name, address) for address, name in symbols)
    init = (where.get("_sinittext", 0), where.get("_einittext", 0))
    counts = collections.Counter()
    with open(f"{run}/blocks") as f:
        for line in f:
            address, insns, runs = (int(x, 16 if i == 0 else 10)
                                    for i, x in enumerate(line.split()))
            if address < KERNEL_START:
                name = "(user space: fio)"
            elif init[0] <= address < init[1]:
                name = BOOT
            else:
                i = bisect.bisect_right(starts, address) - 1
                name = symbols[i][1] if i >= 0 else "(unknown)"
                if name in CALIBRATION:
                    name = BOOT
            counts[name] += insns * runs
    return counts


def per_request(out, driver, n):
    """Instructions per request by function: 2N requests minus N."""
    once = per_function(f"{out}/{driver}-{n}")
    twice = per_function(f"{out}/{driver}-{2 * n}")
    return {name: (twice[name] - once[name]) / n for name in once | twice}


def demangle(names):
    """Readable names of kernel symbols: Rust ones demangled by the program
    in $CXXFILT (llvm-cxxfilt), the module name kept."""
    symbols = [name.partition(" ")[0] for name in names]
    try:
        result = subprocess.run([os.environ.get("CXXFILT", "llvm-cxxfilt")],
                                input="\n".join(symbols), capture_output=True,
                                text=True, check=True)
        plain = result.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        plain = symbols
    if len(plain) != len(symbols):
        plain = symbols
    return {name: (p + " " + name.partition(" ")[2]).strip()
            for name, p in zip(names, plain)}


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    c = per_request(out, "null_blk", n)
    r = per_request(out, "rnull", n)

    def total(counts, kernel):
        return sum(v for k, v in counts.items()
                   if k != BOOT and k.startswith("(user") != kernel)

    lines = [
        f"Instructions per request over {n} requests (counts of 2 x {n} "
        f"minus {n}):",
        "",
        "| | null_blk | rnull | rnull - null_blk |",
        "|---|---|---|---|",
    ]
    for label, kernel in (("kernel", True), ("user space (fio)", False)):
        a, b = total(c, kernel), total(r, kernel)
        lines.append(f"| {label} | {a:.0f} | {b:.0f} | {b - a:+.0f} |")
    lines += [
        "",
        "| function | null_blk | rnull | rnull - null_blk |",
        "|---|---|---|---|",
    ]
    names = sorted((c.keys() | r.keys()) - {BOOT},
                   key=lambda k: -max(abs(c.get(k, 0)), abs(r.get(k, 0))))
    diffs = sorted(names, key=lambda k: -abs(r.get(k, 0) - c.get(k, 0)))
    readable = demangle(list(set(names[:SHOWN] + diffs[:SHOWN])))
    for name in names[:SHOWN]:
        a, b = c.get(name, 0), r.get(name, 0)
        lines.append(f"| `{readable[name]}` | {a:.0f} | {b:.0f} | {b - a:+.0f} |")
    lines += [
        "",
        "Largest differences (a function that runs on one driver only, or",
        "noise: the boots differ by a few tens of instructions per request",
        "in page faults and timers):",
        "",
        "| function | null_blk | rnull | rnull - null_blk |",
        "|---|---|---|---|",
    ]
    for name in diffs[:SHOWN]:
        a, b = c.get(name, 0), r.get(name, 0)
        lines.append(f"| `{readable[name]}` | {a:.0f} | {b:.0f} | {b - a:+.0f} |")
    a, b = c.get(BOOT, 0), r.get(BOOT, 0)
    lines += ["", f"Not counted: {BOOT[1:-1]} ({a:+.0f} and {b:+.0f} per request)."]
    text = "\n".join(lines) + "\n"
    with open(f"{out}/insn.md", "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
