#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The host side of make bench: boots the built kernel and runs
# bench/bench.sh in it (the script that compares rnull with null_blk inside
# the VM), with its results written to the host directory BENCH_OUT (default:
# a new one in the cache, named by the UTC time). A failed run leaves
# BENCH_OUT/INVALID and fails; a good one gets the host's CPU and QEMU's
# accelerator added to its info.md and its report (bench/report.py: table.md,
# ratios.svg, points.csv). RNULL_VM_TIMEOUT defaults to 8 hours here. Run
# after scripts/build.sh.
source "$(dirname "$0")/common.sh"

out=${BENCH_OUT:-$CACHE/bench/$(date -u +%Y%m%d-%H%M%S)}

if ! RNULL_VM_OUT=$out BENCH_OUT=$out RNULL_VM_TIMEOUT=${RNULL_VM_TIMEOUT:-28800} \
	"$REPO/scripts/vm.sh" "$REPO/bench/bench.sh"; then
	# bench/bench.sh writes INVALID itself when it finds warnings in the
	# kernel log; any other failure gets this one.
	[ -e "$out/INVALID" ] ||
		echo "Results invalid: the benchmark run failed (see the console above)." \
			>"$out/INVALID" || true
	echo "bench: results in $out are invalid ($out/INVALID)" >&2
	exit 1
fi

echo "Host: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)," \
	"QEMU with $(cat "$CACHE/kvm-probe" 2>/dev/null || echo tcg)." >>"$out/info.md"
python3 "$REPO/bench/report.py" "$out" >/dev/null
