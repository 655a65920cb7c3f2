#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Instructions per request of both drivers at several points of the
# benchmark's matrix: bench/insn.sh at each, and one table of the kernel's
# instructions per request.
#
# Settings (environment): BENCH_INSN_POINTS, a space-separated list of points
# RW:BS:MEMORY:COMPLETION[:SETTING[:SYNC]] (default below: none, softirq and
# polled completion, memory-backed or not, 4 KiB and 64 KiB, reads and
# writes, the memory-backed zoned writes of the zwrite points, whose zones
# fio resets, and the write-back cache, full and not, with and without
# FLUSH; SETTING is a group of the benchmark, SYNC none, fsync or fua, and
# the group's memory backing and completion then apply); BENCH_INSN_IOS
# (100000 here: with fewer, what differs between boots, page faults and the
# scheduler, still moves a count by some tens of instructions); BENCH_OUT, the
# results directory (default: a new one in the cache); the rest as for
# bench/insn.sh. About a minute and a half a point.
source "$(dirname "$0")/../scripts/common.sh"

POINTS=${BENCH_INSN_POINTS:-"randread:4k:0:0 randwrite:4k:0:1 randread:4k:0:poll
	randwrite:4k:0:poll randread:4k:1:1 randwrite:4k:1:0 randread:4k:1:poll
	randwrite:4k:1:poll randread:64k:1:1 randwrite:64k:1:0 randread:64k:0:0
	randwrite:64k:0:1 zwrite:4k:1:1 zwrite:64k:1:1 randwrite:4k:1:0:cache16
	randwrite:64k:1:0:cache16 randwrite:4k:1:0:cache512 randwrite:4k:1:0:cache16:fsync
	randwrite:4k:1:0:cache16:fua"}
export BENCH_INSN_IOS=${BENCH_INSN_IOS:-100000}
out=${BENCH_OUT:-$CACHE/insn/table-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")

table=$out/table.md
{
	echo "Kernel instructions per request (one vCPU, qd1, one job," \
		"$BENCH_INSN_IOS requests; completion 0 = none, 1 = softirq):"
	echo
	echo "| rw | bs | memory_backed | completion | setting | null_blk | rnull | rnull - null_blk |"
	echo "|---|---|---|---|---|---|---|---|"
} >"$table.tmp"
for point in $POINTS; do
	IFS=: read -r rw bs memory completion setting sync <<<"$point"
	[ -n "$completion" ] || die "$point: not RW:BS:MEMORY:COMPLETION[:SETTING[:SYNC]]"
	dir=$out/$rw-$bs-m$memory-c$completion${setting:+-$setting}${sync:+-$sync}
	BENCH_RW=$rw BENCH_BS=$bs BENCH_MEMORY=$memory BENCH_COMPLETION=$completion \
		BENCH_SETTING=$setting BENCH_SYNC=${sync:-none} \
		BENCH_OUT=$dir "$REPO/bench/insn.sh" >/dev/null
	# The kernel's line of insn.md: "| kernel | C | R | R - C |".
	counts=$(awk -F' *\\| *' '$2 == "kernel" { print $3 " | " $4 " | " $5 }' "$dir/insn.md")
	[ -n "$counts" ] || die "$dir/insn.md has no kernel line"
	echo "| $rw | $bs | $memory | $completion | ${setting:+$setting${sync:++$sync}} | $counts |" \
		>>"$table.tmp"
	log "$point: $counts"
done
mv "$table.tmp" "$table"
cat "$table"
