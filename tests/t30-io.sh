# SPDX-License-Identifier: GPL-2.0
# I/O through both drivers with fio.
# shellcheck shell=bash

# fio_ok DEV ARGS...: runs a short fio job on DEV; fails on any I/O error.
fio_ok() {
	local dev=$1 out errors ios
	shift
	out=$(fio --name=t --filename="$dev" --ioengine=io_uring --direct=1 \
		--size=64M --runtime=300ms --time_based --output-format=json "$@" 2>&1) ||
		{ echo "    fio on $dev failed: $out"; return 1; }
	errors=$(grep -o '"error" : [0-9]*' <<<"$out" | grep -vc '"error" : 0$' || true)
	expect_eq "$errors" 0 "jobs with errors on $dev ($*)"
	ios=$(grep -o '"total_ios" : [0-9]*' <<<"$out" | awk '{s += $3} END {print s + 0}')
	[ "$ios" -gt 0 ] || { echo "    no I/O done on $dev ($*)"; return 1; }
}

test_fio_on_both_drivers() {
	local mode
	for mode in 0 1; do
		expect_eq "$(load rnull irqmode=$mode submit_queues=2 gb=1)" 0 "modprobe rnull"
		expect_eq "$(load null_blk irqmode=$mode submit_queues=2 gb=1)" 0 "modprobe null_blk"
		for dev in /dev/rnullb0 /dev/nullb0; do
			fio_ok $dev --rw=randread --bs=4k --iodepth=16
			fio_ok $dev --rw=randwrite --bs=64k --iodepth=4 --numjobs=2
			fio_ok $dev --rw=read --bs=1M --iodepth=2 --ioengine=libaio
		done
		unload_all
	done
}

test_fio_on_configfs_disk() {
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	mkdir $RCFG/d
	echo 128 >$RCFG/d/size
	echo 4096 >$RCFG/d/blocksize
	echo 1 >$RCFG/d/power
	fio_ok /dev/d --rw=randrw --bs=4k --iodepth=8
	expect_eq "$(blockdev --getsize64 /dev/d)" $((128 << 20)) "size"
}
