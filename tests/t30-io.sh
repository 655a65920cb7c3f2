# SPDX-License-Identifier: GPL-2.0
# I/O through both drivers with fio.
# shellcheck shell=bash

# fio_ok DEV[,DEV...] ARGS...: runs a short fio job on each DEV, all at
# once in one fio (one start of fio rather than one a disk); fails on any I/O
# error, or if a DEV saw no I/O.
fio_ok() {
	local dev devs jobs=() out file=/tmp/fio-ok.$BASHPID
	local -A result
	IFS=, read -r -a devs <<<"$1"
	shift
	for dev in "${devs[@]}"; do jobs+=(--name="$dev" --filename="$dev"); done
	out=$(fio --ioengine=io_uring --direct=1 --size=64M --runtime=300ms --time_based \
		"$@" --output-format=terse --output="$file" "${jobs[@]}" 2>&1) ||
		{ echo "    fio on ${devs[*]} failed: $out"; return 1; }
	fio_results_to result "$file"
	for dev in "${devs[@]}"; do
		[[ ${result[$dev]:-} == "0 "[1-9]* ]] ||
			{ echo "    fio on $dev ($*): errors or no I/O: ${result[$dev]:-no result}"; return 1; }
	done
}

test_fio_on_both_drivers() {
	every_irqmode submit_queues=2 gb=1
	fio_ok "$IRQMODE_DISKS" --rw=randread --bs=4k --iodepth=16
	fio_ok "$IRQMODE_DISKS" --rw=randwrite --bs=64k --iodepth=4 --numjobs=2
	fio_ok "$IRQMODE_DISKS" --rw=read --bs=1M --iodepth=2 --ioengine=libaio
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
