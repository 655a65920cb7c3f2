# SPDX-License-Identifier: GPL-2.0
# The driver's own fault injection (CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION
# and null_blk's): the timeout, requeue and init_hctx parameters, the
# per-device fault directories, and what each fault does, compared with
# null_blk.
# shellcheck shell=bash

# inject GROUP PROBABILITY TIMES: sets the fault directory GROUP of both
# devices, quietly (the default logs a stack trace for each fault).
inject() {
	local dir
	for dir in $RCFG/d $CCFG/c; do
		echo 0 >$dir/$1/verbose && echo 1 >$dir/$1/interval &&
			echo "$3" >$dir/$1/times && echo "$2" >$dir/$1/probability || return 1
	done
}

# fault_files DIR: every file of the fault directories of a device, with its
# value.
fault_files() {
	local f
	for f in "$1"/*_inject/*; do echo "${f#"$1"/}=$(<"$f")"; done
}

# read4k DISK [ARGS...]: one direct read of 4 KiB; prints 0 or the errno.
read4k() {
	local disk=$1
	shift
	run dd if=/dev/"$disk" of=/dev/null bs=4k count=1 iflag=direct status=none "$@"
}

test_fault_parameters_match_null_blk() {
	local p spec long
	long=$(printf '1%.0s' $(seq 80))
	for p in timeout requeue init_hctx; do
		for spec in "" "1,100,0,1" "0,0,0,0" "abc" "1,100" "1,100,0,1,junk" "3,50,4096,-1" \
			"${long:0:79}" "$long"; do
			expect_same "$(load rnull nr_devices=0 "$p=$spec")" \
				"$(load null_blk nr_devices=0 "$p=$spec")" "modprobe $p='${spec:0:16}'" ||
				return 1
			if lsmod | grep -q '^rnull '; then
				expect_same "$(</sys/module/rnull/parameters/$p)" \
					"$(</sys/module/null_blk/parameters/$p)" "$p after '${spec:0:16}'" ||
					return 1
			fi
			unload_all
		done
	done
	expect_eq "$(load rnull nr_devices=0 requeue=abc)" EINVAL "rnull: requeue=abc" &&
		expect_eq "$(load rnull nr_devices=0 "timeout=$long")" ENOSPC "rnull: a long timeout"
}

test_fault_directories_match_null_blk() {
	expect_eq "$(load rnull nr_devices=0 requeue=2,50,0,7)" 0 "modprobe rnull" &&
		expect_eq "$(load null_blk nr_devices=0 requeue=2,50,0,7)" 0 "modprobe null_blk" ||
		return 1
	pair size=16
	expect_same "$(fault_files $RCFG/d)" "$(fault_files $CCFG/c)" "fault files" &&
		expect_eq "$(cat $RCFG/d/requeue_inject/probability $RCFG/d/requeue_inject/times)" \
			"$(printf '50\n7')" "rnull's requeue attribute from the parameter" || return 1
	# Written like any fault attribute, kept over a power cycle, gone with
	# the directory; not in features.
	echo 9 >$RCFG/d/timeout_inject/times && echo 9 >$CCFG/c/timeout_inject/times
	expect_same "$(wr $RCFG/d/timeout_inject/space abc)" \
		"$(wr $CCFG/c/timeout_inject/space abc)" "a bad value" || return 1
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power && echo 0 >$RCFG/d/power &&
		echo 0 >$CCFG/c/power || return 1
	expect_same "$(fault_files $RCFG/d)" "$(fault_files $CCFG/c)" "fault files after a power cycle" &&
		expect_same "$(wr $RCFG/d/timeout_inject/x 1)" "$(wr $CCFG/c/timeout_inject/x 1)" \
			"a new file" &&
		expect_same "$(run rmdir $RCFG/d/timeout_inject)" "$(run rmdir $CCFG/c/timeout_inject)" \
			"rmdir of a fault directory" &&
		expect_same "$(run mkdir $RCFG/d/timeout_inject/x)" \
			"$(run mkdir $CCFG/c/timeout_inject/x)" "mkdir in a fault directory" || return 1
	rmdir $RCFG/d $CCFG/c || return 1
	pair size=16
	expect_eq "$(<$RCFG/d/timeout_inject/times)" 1 "times of a new directory"
}

test_injected_timeouts_match_null_blk() {
	local disk
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=1)" 0 "modprobe null_blk"
	pair size=16 poll_queues=1
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power || return 1
	short_io_timeout d c
	inject timeout_inject 100 1 || return 1
	# The two reads that time out at once.
	read4k d >/tmp/timeout-d &
	read4k c >/tmp/timeout-c
	wait $!
	expect_eq "$(</tmp/timeout-d)" ETIMEDOUT "rnull: read with a timeout injected" &&
		expect_eq "$(</tmp/timeout-c)" ETIMEDOUT "null_blk: read with a timeout injected" &&
		expect_eq "$(read4k d)" 0 "rnull: the read after" &&
		expect_eq "$(read4k c)" 0 "null_blk: the read after" || return 1
	expect_eq "$(<$RCFG/d/timeout_inject/times) $(<$CCFG/c/timeout_inject/times)" "0 0" \
		"times left" || return 1
	# A polled request is completed by polling even if the fault hits it.
	inject timeout_inject 100 1 || return 1
	for disk in d c; do
		expect_eq "$(run fio --name=p --filename=/dev/$disk --direct=1 --bs=4k --size=4k \
			--ioengine=io_uring --hipri --rw=read)" 0 "$disk: polled read with a timeout injected" ||
			return 1
	done
	expect_eq "$(<$RCFG/d/timeout_inject/times) $(<$CCFG/c/timeout_inject/times)" "0 0" \
		"times left after the polled read"
}

test_injected_requeues_lose_no_request() {
	local disk
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	pair size=16 memory_backed=1 cache_size=1
	echo 1 >$RCFG/d/power && echo 1 >$CCFG/c/power || return 1
	inject requeue_inject 50 200 || return 1
	for disk in d c; do
		echo none >/sys/block/$disk/queue/scheduler
		expect_eq "$(run fio --name=r --filename=/dev/$disk --direct=1 --bs=4k --size=2M \
			--rw=randwrite --ioengine=io_uring --iodepth=16 --iodepth_batch_submit=8 \
			--verify=crc32c --do_verify=1)" 0 "$disk: verified writes with requeues" || return 1
	done
	expect_eq "$(<$RCFG/d/requeue_inject/times) $(<$CCFG/c/requeue_inject/times)" "0 0" \
		"requeues left"
}

test_requeue_parameter_on_module_disks() {
	expect_eq "$(load rnull gb=1 requeue=1,100,0,10)" 0 "modprobe rnull" &&
		expect_eq "$(load null_blk gb=1 requeue=1,100,0,10)" 0 "modprobe null_blk" || return 1
	expect_same "$(read4k rnullb0)" "$(read4k nullb0)" "read with requeues" &&
		expect_eq "$(read4k rnullb0 count=16)" 0 "rnull: reads with requeues"
}

test_failed_hctx_setup_leaves_the_device_off() {
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	pair size=16 submit_queues=2
	inject init_hctx_fault_inject 100 1 || return 1
	expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "power-on with a failed hctx" &&
		expect_eq "$(<$RCFG/d/init_hctx_fault_inject/times)" 0 "rnull: faults left" &&
		expect_eq "$(<$RCFG/d/power) $(<$CCFG/c/power)" "0 0" "power after it" &&
		expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "the next power-on" &&
		expect_eq "$(<$RCFG/d/power)" 1 "rnull's power" || return 1
	unload_all
	expect_same "$(load rnull init_hctx=1,100,0,1)" "$(load null_blk init_hctx=1,100,0,1)" \
		"modprobe with a failed hctx" &&
		expect_eq "$(load rnull init_hctx=1,100,0,1)" ENOMEM "rnull: modprobe with a failed hctx" &&
		expect_eq "$(lsmod | grep -c '^rnull ')" 0 "rnull not loaded"
}
