#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Compares rnull with null_blk: the same fio job on both, configured alike,
# interleaved (C, Rust, C, Rust, ...) in one boot. Prints each IOPS figure
# and the ratio rnull / null_blk of the means.
#
# Runs as root wherever both modules can be loaded: in the test VM through
# 'make bench', or directly on a machine running a kernel built with both.
# Settings (environment): BENCH_REPS (3), BENCH_RUNTIME seconds (3),
# BENCH_IRQMODE (0), BENCH_BS (4k), BENCH_IODEPTH (32), BENCH_RW (randread).
set -eu

REPS=${BENCH_REPS:-3}
RUNTIME=${BENCH_RUNTIME:-3}
IRQMODE=${BENCH_IRQMODE:-0}
BS=${BENCH_BS:-4k}
IODEPTH=${BENCH_IODEPTH:-32}
RW=${BENCH_RW:-randread}

cleanup() {
	for d in /sys/kernel/config/rnull/bench /sys/kernel/config/nullb/bench_c; do
		[ -d "$d" ] || continue
		echo 0 >"$d/power"
		rmdir "$d"
	done
	modprobe -r rnull null_blk 2>/dev/null || true
}
trap cleanup EXIT

mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe rnull nr_devices=0
modprobe null_blk nr_devices=0

# make DIR NAME: a 1 GiB device, 4 KiB blocks, 256 tags, one hw queue.
make_dev() {
	mkdir "$1"
	echo 1024 >"$1/size"
	echo 4096 >"$1/blocksize"
	echo 256 >"$1/hw_queue_depth"
	echo 1 >"$1/submit_queues"
	echo "$IRQMODE" >"$1/irqmode"
	# Same queue layout on both: no poll queue on null_blk either.
	[ ! -e "$1/poll_queues" ] || echo 0 >"$1/poll_queues"
	echo 1 >"$1/power"
	echo none >"/sys/block/$2/queue/scheduler"
	echo 0 >"/sys/block/$2/queue/iostats"
}
make_dev /sys/kernel/config/rnull/bench bench
make_dev /sys/kernel/config/nullb/bench_c bench_c

iops() { # device
	fio --name=bench --filename="$1" --ioengine=io_uring --direct=1 \
		--rw="$RW" --bs="$BS" --iodepth="$IODEPTH" --numjobs=1 \
		--time_based --runtime="$RUNTIME" --norandommap \
		--random_generator=lfsr --gtod_reduce=1 --output-format=terse \
		--terse-version=3 | awk -F';' '{print $8 + $49}'
}

echo "fio $RW bs=$BS iodepth=$IODEPTH io_uring, irqmode=$IRQMODE, $REPS x ${RUNTIME}s each"
c_sum=0
r_sum=0
for ((i = 1; i <= REPS; i++)); do
	c=$(iops /dev/bench_c)
	r=$(iops /dev/bench)
	printf 'run %d: null_blk %8d IOPS   rnull %8d IOPS\n' "$i" "$c" "$r"
	c_sum=$((c_sum + c))
	r_sum=$((r_sum + r))
done
awk -v c="$c_sum" -v r="$r_sum" -v n="$REPS" 'BEGIN {
	printf "mean:  null_blk %8d IOPS   rnull %8d IOPS   ratio rnull/null_blk %.3f\n",
		c / n, r / n, (c > 0 ? r / c : 0)
}'
