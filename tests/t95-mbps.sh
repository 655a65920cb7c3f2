# SPDX-License-Identifier: GPL-2.0
# The bandwidth limit (mbps): its values, the rates fio measures on both
# drivers, what rnull does differently, and throttled I/O combined with the
# other features.
# shellcheck shell=bash

# rate DISK BS [ARGS...]: the KiB/s fio reads from DISK in blocks of BS, for
# 2 seconds: a hundred of the limit's 20 ms ticks.
rate() {
	local disk=$1 bs=$2 out f
	shift 2
	out=$(fio --name=rate --filename=/dev/"$disk" --direct=1 --rw=randread --bs="$bs" \
		--runtime=2 --time_based --output-format=terse "$@" 2>/dev/null)
	IFS=';' read -r -a f <<<"$out"
	echo "${f[FIO_READ_BW]}"
}

# rates DISK:KIBPS:BS[:ARG...]...: runs rate on every DISK at once, rather
# than one after the other (each disk is limited by its own budget, far below
# what the VM can do); the KiB/s of DISK are then in RATE[DISK], and KIBPS,
# the rate it should get, in EXPECTED_RATE[DISK]. A disk whose rate is not
# within 5% of its KIBPS is measured once more, alone: the guest's clock runs
# on while the host stalls, and a stall takes its length off the rate of
# every disk measured then (rnull's disk at 16 MiB/s once got 94% in
# .ci/run).
declare -A RATE EXPECTED_RATE
rates() {
	local spec args disk
	for spec in "$@"; do
		IFS=: read -r -a args <<<"$spec"
		EXPECTED_RATE[${args[0]}]=${args[1]}
		rate "${args[0]}" "${args[@]:2}" >/tmp/rate-"${args[0]}" &
	done
	wait
	for spec in "$@"; do
		IFS=: read -r -a args <<<"$spec"
		disk=${args[0]}
		RATE[$disk]=$(</tmp/rate-"$disk")
		within_5_percent "${RATE[$disk]}" "${args[1]}" && continue
		note "$disk: ${RATE[$disk]} KiB/s at first, measured again"
		RATE[$disk]=$(rate "$disk" "${args[@]:2}")
	done
}

within_5_percent() { ((${1:-0} * 100 >= $2 * 95 && ${1:-0} * 100 <= $2 * 105)); }

# expect_rate DISK WHAT: the rate rates measured on DISK within 5% of the
# one it should get.
expect_rate() {
	note "$2: ${RATE[$1]} KiB/s, expected ${EXPECTED_RATE[$1]}"
	within_5_percent "${RATE[$1]}" "${EXPECTED_RATE[$1]}" || {
		echo "    $2: ${RATE[$1]} KiB/s, not within 5% of ${EXPECTED_RATE[$1]}"
		return 1
	}
}

load_both() {
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=1)" 0 "modprobe null_blk"
}

test_mbps_values_match_null_blk() {
	local v
	load_both
	pair size=16
	for v in 0 1 " 10" $'12\n' 40960 40961 4294967295 4294967296 -1 abc "" 0x10 2000000; do
		expect_same "$(wr $RCFG/d/mbps "$v")" "$(wr $CCFG/c/mbps "$v")" "write '$v' to mbps" &&
			expect_same "$(<$RCFG/d/mbps)" "$(<$CCFG/c/mbps)" "mbps after '$v'" ||
			return 1
	done
	# The cap applies at power-on and shows afterwards.
	expect_eq "$(<$RCFG/d/mbps)" 2000000 "rnull's mbps before power-on"
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power || return 1
	expect_same "$(<$RCFG/d/mbps)" "$(<$CCFG/c/mbps)" "mbps after power-on" &&
		expect_eq "$(<$RCFG/d/mbps)" 40960 "rnull's capped mbps" &&
		expect_same "$(wr $RCFG/d/mbps 5)" "$(wr $CCFG/c/mbps 5)" "mbps while powered" &&
		expect_eq "$(wr $RCFG/d/mbps 5)" EBUSY "rnull: mbps while powered" || return 1
	unload_all
	# The parameter is every new device's default, capped when it powers on.
	expect_eq "$(load rnull nr_devices=0 mbps=50000)" 0 "modprobe rnull mbps=50000"
	expect_eq "$(load null_blk nr_devices=0 mbps=50000)" 0 "modprobe null_blk mbps=50000"
	pair size=16
	expect_same "$(<$RCFG/d/mbps)" "$(<$CCFG/c/mbps)" "default mbps" &&
		expect_eq "$(<$RCFG/d/mbps)" 50000 "rnull's default mbps"
}

test_rates_match_the_limit_on_both() {
	local n disk
	# The disks the modules make from the parameter, and configfs devices
	# with limits of their own.
	expect_eq "$(load rnull gb=1 mbps=8 poll_queues=1)" 0 "modprobe rnull mbps=8"
	expect_eq "$(load null_blk gb=1 mbps=8 poll_queues=1)" 0 "modprobe null_blk mbps=8"
	for n in 4 16; do
		mkdir $RCFG/d$n $CCFG/c$n
		echo 64 >$RCFG/d$n/size && echo 64 >$CCFG/c$n/size || return 1
		echo "$n" >$RCFG/d$n/mbps && echo "$n" >$CCFG/c$n/mbps || return 1
		echo 1 >$RCFG/d$n/power && echo 1 >$CCFG/c$n/power || return 1
	done
	# Both drivers at once, queued deep enough that neither falls behind
	# its budget (null_blk's whole requests per tick give 4000 of 4096
	# KiB/s); the four slower disks, then the two faster ones (all six at
	# once are more than the VM's two CPUs keep up with).
	local q=:--iodepth=4:--ioengine=io_uring
	rates rnullb0:8192:4k$q nullb0:8192:4k$q d4:4096:4k$q c4:4096:4k$q
	rates d16:16384:4k$q c16:16384:4k$q
	for n in 4 16; do
		for disk in d$n c$n; do
			expect_rate $disk "$disk at mbps=$n, 4 KiB" || return 1
		done
	done
	expect_rate rnullb0 "rnullb0 at mbps=8" &&
		expect_rate nullb0 "nullb0 at mbps=8"
}

test_large_requests_get_the_rate() {
	# null_blk resets its budget every tick (20 ms), and a request that
	# finds too little is refused whole: it moves whole requests that fit in
	# a tick's budget, 1 of 128 KiB out of the 200 KiB of 10 MiB/s, and a
	# request larger than the budget (64 KiB at 1 MiB/s) never passes, its
	# disk hangs (not run). rnull lets a request overdraw the budget, and
	# later ticks pay back: the rate holds for any request size.
	load_both
	pair size=64 mbps=10
	mkdir $RCFG/d1
	echo 64 >$RCFG/d1/size && echo 1 >$RCFG/d1/mbps || return 1
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power && echo 1 >$RCFG/d1/power || return 1
	rates d:10240:128k c:6400:128k d1:1024:64k:--runtime=4
	expect_rate d "rnull at 10 MiB/s, 128 KiB" &&
		expect_rate c "null_blk at 10 MiB/s, 128 KiB" &&
		expect_rate d1 "rnull at 1 MiB/s, 64 KiB"
}

test_limit_goes_with_the_setting() {
	# null_blk sets a flag when a throttled disk powers on and never clears
	# it: powered on again with mbps=0, its requests take the throttle path
	# without a timer set up, and the kernel oopses (not run). rnull's limit
	# is made at each power-on from the setting.
	local bw
	load_both
	pair size=64 mbps=1
	echo 1 >$RCFG/d/power || return 1
	rates d:1024:4k
	expect_rate d "rnull at 1 MiB/s" || return 1
	echo 0 >$RCFG/d/power && echo 0 >$RCFG/d/mbps && echo 1 >$RCFG/d/power || return 1
	bw=$(rate d 64k --runtime=1)
	note "rnull without a limit: $bw KiB/s"
	((bw > 20 * 1024)) || { echo "    rnull without a limit: only $bw KiB/s"; return 1; }
}

test_power_off_drains_throttled_requests() {
	# Requests waiting in stopped queues are dispatched by the next ticks
	# while the disk is deleted: power-off returns at once. (fio goes on
	# after it, with both drivers, until killed.)
	local dir start took
	local -A pid
	load_both
	pair size=64 mbps=1
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power || return 1
	for dir in $RCFG/d $CCFG/c; do
		fio --name=wait --filename=/dev/"${dir##*/}" --direct=1 --rw=randread --bs=4k \
			--iodepth=32 --ioengine=io_uring --runtime=30 --time_based >/dev/null 2>&1 &
		pid[$dir]=$!
	done
	sleep 1
	for dir in $RCFG/d $CCFG/c; do
		start=$EPOCHREALTIME
		echo 0 >$dir/power || return 1
		took=$(((${EPOCHREALTIME/./} - ${start/./}) / 1000))
		kill "${pid[$dir]}" 2>/dev/null || true
		wait "${pid[$dir]}" || true
		note "${dir##*/}: power-off took $took ms"
		((took < 5000)) || { echo "    ${dir##*/}: power-off took $took ms"; return 1; }
	done
}

# throttled_cached_writes DISK: polled and batched verified writes on DISK,
# a throttled, cached, memory-backed disk: every request refused at first is
# issued again, none is lost.
throttled_cached_writes() {
	expect_eq "$(run fio --name=polled --filename=/dev/$1 --rw=randwrite --ioengine=io_uring \
		--hipri --iodepth=16 "${job[@]}")" 0 "rnull: throttled polled writes, verified"
	expect_eq "$(run fio --name=batched --filename=/dev/$1 --rw=randwrite --offset=4M \
		--ioengine=io_uring --iodepth=32 --iodepth_batch_submit=16 "${job[@]}")" 0 \
		"rnull: throttled batched writes, verified"
}

# throttled_zoned_writes DISK: verified writes on DISK, a throttled, zoned,
# memory-backed disk.
throttled_zoned_writes() {
	expect_eq "$(run fio --name=zoned --filename=/dev/$1 --zonemode=zbd --rw=write \
		--ioengine=io_uring --iodepth=8 "${job[@]}")" 0 "$1: throttled zoned writes, verified"
}

test_throttled_io_with_memory_cache_polling_and_zones() {
	local job=(--direct=1 --bs=4k --size=1M --verify=crc32c --do_verify=1)
	load_both
	# Polled and batched writes on a cached memory-backed disk (e), and a
	# zoned memory-backed disk on both drivers (d and c), all at once: each
	# disk has a budget of its own.
	mkdir $RCFG/e
	for a in size=16 memory_backed=1 cache_size=1 poll_queues=1 mbps=2; do
		echo "${a#*=}" >$RCFG/e/"${a%%=*}"
	done
	pair size=16 zoned=1 zone_size=1 memory_backed=1 mbps=2
	echo 1 >$RCFG/e/power && echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power || return 1
	echo none >/sys/block/e/queue/scheduler
	together throttled_cached_writes e -- throttled_zoned_writes d -- throttled_zoned_writes c
	expect_same "$(blkzone report /dev/d)" "$(blkzone report /dev/c)" "zones after the writes"
}
