# SPDX-License-Identifier: GPL-2.0
# Queues and completions: timer completions, polled I/O, timeouts, live
# queue counts and shared tag sets, on both drivers.
# shellcheck shell=bash

# mean_clat_ns DEV ARGS...: the mean completion latency, in ns, of a second
# of fio reads from DEV.
mean_clat_ns() {
	local dev=$1 out f us
	shift
	out=$(fio --name=t --filename="$dev" --ioengine=io_uring --direct=1 --size=64M \
		--runtime=1 --time_based --rw=randread --output-format=terse "$@" 2>&1)
	IFS=';' read -r -a f <<<"$out"
	us=${f[FIO_READ_CLAT_MEAN]:-?}
	[[ $us =~ ^([0-9]+)\.([0-9]{3}) ]] || { echo "no latency from fio: ${out:0:200}"; return; }
	echo $((10#${BASH_REMATCH[1]} * 1000 + 10#${BASH_REMATCH[2]}))
}

test_fio_with_every_irqmode_and_polling() {
	every_irqmode submit_queues=2 poll_queues=2 gb=1
	fio_ok "$IRQMODE_DISKS" --rw=randread --bs=4k --iodepth=8 --numjobs=2
	# Polled: each job polls the poll queue of its CPU.
	fio_ok "$IRQMODE_DISKS" --rw=randrw --bs=4k --iodepth=8 --numjobs=2 --hipri
}

# polled_read_errno DISK: one polled read from DISK; prints 0 or the errno
# name fio reports.
polled_read_errno() {
	local msg
	msg=$(fio --name=t --filename=/dev/"$1" --ioengine=io_uring --hipri --direct=1 \
		--rw=read --bs=4k --size=4k 2>&1 |
		sed -n 's/.*io_u error on file [^:]*: \([^:]*\):.*/\1/p' | head -n 1)
	[ -n "$msg" ] || { echo 0; return; }
	echo "${ERRNO_OF[$msg]:-?$msg}"
}

test_polled_io_completes_through_poll_queues() {
	# With poll queues, polled reads complete through the poll callback;
	# without, the disk cannot poll and polled reads fail.
	local dev
	expect_eq "$(load rnull gb=1 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk gb=1 poll_queues=1)" 0 "modprobe null_blk"
	for dev in rnullb0 nullb0; do
		expect_eq "$(</sys/block/$dev/queue/io_poll)" 1 "$dev io_poll"
		expect_eq "$(</sys/kernel/debug/block/$dev/hctx0/type)" default "$dev hctx0"
		expect_eq "$(</sys/kernel/debug/block/$dev/hctx1/type)" poll "$dev hctx1"
		fio_ok /dev/$dev --rw=randread --bs=4k --iodepth=4 --hipri
	done
	unload_all
	expect_eq "$(load rnull gb=1 poll_queues=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk gb=1 poll_queues=0)" 0 "modprobe null_blk"
	for dev in rnullb0 nullb0; do
		expect_eq "$(</sys/block/$dev/queue/io_poll)" 0 "$dev io_poll"
	done
	expect_eq "$(polled_read_errno rnullb0)" EOPNOTSUPP "rnull polled read without poll queues"
	expect_eq "$(polled_read_errno nullb0)" EOPNOTSUPP "null_blk polled read without poll queues"
}

test_timer_completion_takes_completion_nsec() {
	# irqmode 2 completes each request about completion_nsec after it was
	# queued: with one request in flight, the mean completion latency is at
	# least that, plus the (emulated) machine's overhead.
	local dev nsec=2000000 mean
	expect_eq "$(load rnull irqmode=2 completion_nsec=$nsec)" 0 "modprobe rnull"
	expect_eq "$(load null_blk irqmode=2 completion_nsec=$nsec)" 0 "modprobe null_blk"
	for dev in rnullb0 nullb0; do
		mean=$(mean_clat_ns /dev/$dev --bs=4k --iodepth=1)
		[[ $mean =~ ^[0-9]+$ ]] && [ "$mean" -ge "$nsec" ] && [ "$mean" -lt $((nsec + 3000000)) ] ||
			{ echo "    $dev: mean latency ${mean}ns for completion_nsec=$nsec"; return 1; }
	done
}

# read_errno DISK: reads one block of DISK, bypassing the page cache; prints
# 0 or the errno name of the failed read.
read_errno() {
	local out
	out=$(dd if=/dev/"$1" of=/dev/null bs=4k count=1 iflag=direct status=none 2>&1) &&
		{ echo 0; return; }
	errno_of "$out"
}

# fake_timeouts DISK...: the next request of each DISK is lost, as if the
# device never completed it.
fake_timeouts() {
	local f=/sys/kernel/debug/fail_io_timeout disk
	echo 0 >$f/verbose
	echo 100 >$f/probability
	echo $# >$f/times
	for disk in "$@"; do echo 1 >/sys/block/"$disk"/io-timeout-fail; done
}

# Both tests below shorten the timeout of the disks (short_io_timeout; the
# tag set's five seconds are compared with null_blk's by the disk shapes of
# t10 and t20), and run both drivers at once.

test_lost_request_times_out_with_etimedout() {
	local dev start m
	expect_eq "$(load rnull)" 0 "modprobe rnull"
	expect_eq "$(load null_blk)" 0 "modprobe null_blk"
	m=$(mark)
	short_io_timeout rnullb0 nullb0
	fake_timeouts rnullb0 nullb0
	start=$EPOCHREALTIME
	read_errno rnullb0 >/tmp/lost-rnullb0 &
	read_errno nullb0 >/tmp/lost-nullb0
	wait
	for dev in rnullb0 nullb0; do
		expect_eq "$(</tmp/lost-$dev)" ETIMEDOUT "read of a lost request on $dev"
		expect_eq "$(read_errno $dev)" 0 "next read on $dev"
	done
	(((${EPOCHREALTIME/./} - ${start/./}) / 1000 >= 100)) ||
		{ echo "    timed out before the timeout"; return 1; }
	dmesg_since "$m" | grep -q "rnull: request timed out" ||
		{ echo "    rnull did not report the timeout"; return 1; }
}

test_late_timer_completion_times_out_with_etimedout() {
	# A timer completion (2 s) later than the timeout (short_io_timeout:
	# about 1.1 s): the timeout marks the request, the timer ends it with
	# the error. The partition scans of the loads complete in time (2 s,
	# within the tag set's 5 s).
	load rnull irqmode=2 completion_nsec=2000000000 >/tmp/late-load-rnull &
	load null_blk irqmode=2 completion_nsec=2000000000 >/tmp/late-load-c
	wait
	expect_eq "$(</tmp/late-load-rnull)" 0 "modprobe rnull"
	expect_eq "$(</tmp/late-load-c)" 0 "modprobe null_blk"
	short_io_timeout rnullb0 nullb0
	read_errno rnullb0 >/tmp/late-rnull &
	read_errno nullb0 >/tmp/late-c
	wait
	expect_eq "$(</tmp/late-rnull)" ETIMEDOUT "late read on rnullb0"
	expect_eq "$(</tmp/late-c)" ETIMEDOUT "late read on nullb0"
}

# queue_state DIR DISK: the queue attributes of a device and its disk.
queue_state() {
	echo "submit=$(<"$1"/submit_queues) poll=$(<"$1"/poll_queues)" \
		"hwq=$(nr_hw_queues "$2") io_poll=$(</sys/block/"$2"/queue/io_poll)"
}

test_live_queue_changes_match_null_blk() {
	local step
	expect_eq "$(load rnull nr_devices=0 poll_queues=2)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=2)" 0 "modprobe null_blk"
	mkdir $RCFG/d $CCFG/c
	echo 1 >$RCFG/d/power
	echo 1 >$CCFG/c/power
	expect_same "$(queue_state $RCFG/d d)" "$(queue_state $CCFG/c c)" "at power-on"
	for step in submit_queues=2 poll_queues=0 poll_queues=1 submit_queues=0 \
		submit_queues=$(($(nproc) + 1)) poll_queues=3 submit_queues=1 \
		poll_queues=2 poll_queues=x submit_queues=-1 submit_queues=$(nproc); do
		expect_same "$(wr $RCFG/d/"${step%=*}" "${step#*=}")" \
			"$(wr $CCFG/c/"${step%=*}" "${step#*=}")" "write $step"
		expect_same "$(queue_state $RCFG/d d)" "$(queue_state $CCFG/c c)" "after $step"
	done
	# Off, the counts are only recorded, and checked at power-on.
	echo 0 >$RCFG/d/power
	echo 0 >$CCFG/c/power
	expect_same "$(wr $RCFG/d/poll_queues 9)" "$(wr $CCFG/c/poll_queues 9)" "poll_queues off"
	expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "power on"
	expect_same "$(queue_state $RCFG/d d)" "$(queue_state $CCFG/c c)" "after power-on"
}

# A tag set made without poll queues has one queue map, and blk-mq never
# gives it more hardware queues than there are CPUs: it quietly makes fewer
# than asked. rnull refuses such a count with EINVAL and keeps its queues;
# null_blk lets blk-mq remap with the cut count, warns from its map_queues
# (WARN_ON_ONCE, "tag set has unexpected nr_hw_queues"), and blk-mq goes
# back to the old queues; null_blk reports ENOMEM.
test_queue_count_beyond_the_cpus_on_one_queue_map() {
	local cpus m out
	cpus=$(nproc)
	[ "$cpus" -ge 2 ] || { note "needs 2 CPUs"; return 0; }
	expect_eq "$(load rnull nr_devices=0 poll_queues=$cpus)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=$cpus)" 0 "modprobe null_blk"
	mkdir $RCFG/d $CCFG/c
	for dir in $RCFG/d $CCFG/c; do
		echo 1 >$dir/submit_queues
		echo 0 >$dir/poll_queues
		echo 1 >$dir/power
	done
	expect_eq "$(wr $RCFG/d/poll_queues "$cpus")" EINVAL "rnull: poll_queues=$cpus"
	expect_eq "$(queue_state $RCFG/d d)" "submit=1 poll=0 hwq=1 io_poll=0" "rnull's queues"
	m=$(known_splats_begin "a queue count beyond the CPUs on null_blk's one queue map")
	expect_eq "$(wr $CCFG/c/poll_queues "$cpus")" ENOMEM "null_blk: poll_queues=$cpus"
	out=$(dmesg_since "$m")
	known_splats_end "$m"
	grep -q "tag set has unexpected nr_hw_queues: $cpus" <<<"$out" ||
		{ echo "    null_blk did not warn: $out"; return 1; }
	expect_eq "$(queue_state $CCFG/c c)" "submit=1 poll=0 hwq=1 io_poll=0" "null_blk's queues"
	# Both still do I/O.
	fio_ok /dev/d,/dev/c --rw=randread --bs=4k --size=16M --io_size=4M
}

# A tag set made without poll queues has no map for them: blk-mq would make
# the queues and never issue a request to them. rnull refuses them with
# EINVAL; null_blk takes the count, which then says 1 while its disk still
# cannot poll (the queue is made but not mapped, so sysfs does not show it).
# Made again at the next power-on, rnull's disk has its poll queue.
test_poll_queues_on_a_disk_made_without() {
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=1)" 0 "modprobe null_blk"
	mkdir $RCFG/d $CCFG/c
	for dir in $RCFG/d $CCFG/c; do
		echo 0 >$dir/poll_queues
		echo 1 >$dir/power
	done
	expect_eq "$(wr $RCFG/d/poll_queues 1)" EINVAL "rnull: poll_queues=1 on a disk made without"
	expect_eq "$(queue_state $RCFG/d d)" "submit=1 poll=0 hwq=1 io_poll=0" "rnull's queues"
	expect_eq "$(polled_read_errno d)" EOPNOTSUPP "rnull polled read"
	expect_eq "$(wr $CCFG/c/poll_queues 1)" 0 "null_blk: poll_queues=1 on a disk made without"
	expect_eq "$(queue_state $CCFG/c c)" "submit=1 poll=1 hwq=1 io_poll=0" "null_blk's queues"
	expect_eq "$(polled_read_errno c)" EOPNOTSUPP "null_blk polled read"
	# Off and on again, with the count written while off.
	echo 0 >$RCFG/d/power
	echo 1 >$RCFG/d/poll_queues
	echo 1 >$RCFG/d/power
	expect_eq "$(queue_state $RCFG/d d)" "submit=1 poll=1 hwq=2 io_poll=1" "rnull after a power cycle"
	expect_eq "$(polled_read_errno d)" 0 "rnull polled read after a power cycle"
}

test_queue_changes_under_io() {
	# Both drivers at once, each step on rnull's disk and then on null_blk's.
	local dir disk step n job
	local -A result pid
	expect_eq "$(load rnull nr_devices=0 poll_queues=2)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=2)" 0 "modprobe null_blk"
	for dir in $RCFG/d $CCFG/c; do
		disk=${dir##*/}
		mkdir $dir
		echo 1 >$dir/power
		fio --output-format=terse --filename=/dev/$disk --ioengine=io_uring --direct=1 \
			--size=64M --runtime=60 --time_based --bs=4k --iodepth=16 \
			--name=plain --rw=randrw --name=polled --rw=randread --hipri \
			>/tmp/fio-$disk.out 2>&1 &
		pid[$disk]=$!
	done
	wait_for_io d
	wait_for_io c
	for step in 2:2 1:1 2:1 1:2 2:2 1:1; do
		for dir in $RCFG/d $CCFG/c; do
			disk=${dir##*/}
			n=${step%:*}
			expect_eq "$(wr $dir/submit_queues "$n")" 0 "$disk submit_queues=$n"
			n=${step#*:}
			expect_eq "$(wr $dir/poll_queues "$n")" 0 "$disk poll_queues=$n"
			expect_eq "$(nr_hw_queues "$disk")" $((${step%:*} + ${step#*:})) "$disk hw queues"
		done
		# I/O goes on over the new queues before the next change.
		wait_for_io d
		wait_for_io c
	done
	# The changes were made under I/O: fio still runs, until it is told to
	# stop (on SIGINT it ends its jobs and reports them as at their end).
	for disk in d c; do
		kill -INT "${pid[$disk]}" 2>/dev/null ||
			{ echo "    $disk: fio ended before the last change"; return 1; }
	done
	wait
	for disk in d c; do
		fio_results_to result /tmp/fio-$disk.out
		for job in plain polled; do
			[[ ${result[$job]:-} == "0 "[1-9]* ]] ||
				{ echo "    $disk, job $job: errors or no I/O: ${result[$job]:-none}"; return 1; }
		done
	done
}

test_shared_tags_span_devices() {
	local a
	expect_eq "$(load rnull shared_tags=1 nr_devices=2 submit_queues=2 hw_queue_depth=16)" 0 \
		"modprobe rnull"
	expect_eq "$(load null_blk shared_tags=1 nr_devices=2 submit_queues=2 hw_queue_depth=16)" 0 \
		"modprobe null_blk"
	# A configfs device with shared_tags gets the module's tag set, whatever
	# its own queue settings.
	mkdir $RCFG/d $CCFG/c
	for a in shared_tags=1 submit_queues=1 hw_queue_depth=4 poll_queues=0; do
		wr $RCFG/d/"${a%=*}" "${a#*=}" >/dev/null
		wr $CCFG/c/"${a%=*}" "${a#*=}" >/dev/null
	done
	expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "power on"
	expect_same "$(disk_shape d)" "$(disk_shape c)" "configfs disk on shared tags"
	expect_same "$(disk_shape rnullb1)" "$(disk_shape nullb1)" "module disk on shared tags"
	# Several queues on one tag set: blk-mq marks the tags shared.
	[[ $(hctx_flags d) == *TAG_QUEUE_SHARED* ]] ||
		{ echo "    tags of d not shared: $(hctx_flags d)"; return 1; }
	# The queue counts of a shared tag set are the module's.
	expect_same "$(wr $RCFG/d/submit_queues 1)" "$(wr $CCFG/c/submit_queues 1)" \
		"submit_queues on shared tags"
	expect_same "$(wr $RCFG/d/poll_queues 1)" "$(wr $CCFG/c/poll_queues 1)" \
		"poll_queues on shared tags"
	local pids=()
	for a in rnullb0 rnullb1 d; do
		fio_ok /dev/$a --rw=randread --bs=4k --iodepth=32 &
		pids+=($!)
	done
	for a in "${pids[@]}"; do
		wait "$a" || return 1
	done
	fio_ok /dev/rnullb0 --rw=randread --bs=4k --iodepth=8 --hipri
}

test_batched_submission() {
	# Without a scheduler, plugged requests reach the driver in batches
	# (queue_rqs).
	local dev
	every_irqmode submit_queues=2 gb=1
	for dev in rnullb0 nullb0 r1 c1 r2 c2; do
		echo none >/sys/block/$dev/queue/scheduler
	done
	fio_ok "$IRQMODE_DISKS" --rw=randread --bs=4k --iodepth=32 \
		--iodepth_batch_submit=16 --iodepth_batch_complete_min=8 --numjobs=2
	fio_ok "$IRQMODE_DISKS" --rw=randwrite --bs=16k --iodepth=16 \
		--iodepth_batch_submit=16 --ioengine=libaio
}

test_queues_on_two_numa_nodes() {
	# make check boots two nodes with one CPU each.
	expect_eq "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)" 2 "NUMA nodes"
	compare_params use_per_node_hctx=1 poll_queues=0
	compare_params use_per_node_hctx=1 submit_queues=1 home_node=1
	compare_params home_node=1 submit_queues=2 poll_queues=2
	compare_params shared_tags=1 nr_devices=2 home_node=1 use_per_node_hctx=1
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	mkdir $RCFG/d $CCFG/c
	local a
	for a in home_node=1 use_per_node_hctx=1 submit_queues=1; do
		expect_same "$(wr $RCFG/d/"${a%=*}" "${a#*=}")" "$(wr $CCFG/c/"${a%=*}" "${a#*=}")" \
			"write $a"
	done
	expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "power on"
	expect_same "$(read_all $RCFG/d)" "$(read_all $CCFG/c)" "read-back"
	expect_same "$(disk_shape d)" "$(disk_shape c)" "per-node disk"
	fio_ok /dev/d --rw=randread --bs=4k --iodepth=16 --numjobs=2
}
