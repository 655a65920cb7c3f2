# SPDX-License-Identifier: GPL-2.0
# Failures and teardown under load: allocations that fail (fault injection
# aimed at power-on, live queue changes and memory-backed writes), power-off
# and rmdir while fio runs at depth in every completion mode, with requests
# held by fail_io_timeout. Errors must surface as errnos or I/O errors, the
# device must stay usable or cleanly off, and nothing may leak, hang or splat.
# shellcheck shell=bash

FAILSLAB=/sys/kernel/debug/failslab
FAIL_PAGE=/sys/kernel/debug/fail_page_alloc

# Fault injection for the allocations of one task (/proc/self/fail-nth):
# every kind of allocation may fail, silently (no stack dumps, which the log
# checks would take for splats).
fault_setup() {
	local a
	for a in $FAILSLAB $FAIL_PAGE; do
		echo 0 >$a/verbose
		echo N >$a/ignore-gfp-wait
		echo 0 >$a/probability
	done
	echo N >$FAIL_PAGE/ignore-gfp-highmem
	echo 0 >$FAIL_PAGE/min-order
}

# quiet_faults DIR: the device's own fault attributes (t96-fault-inject.sh)
# count a task's fail-nth like any fault point; when it makes one of them
# fail, no stack dump either.
quiet_faults() {
	local f
	for f in "$1"/*_inject/verbose; do
		[ ! -e "$f" ] || echo 0 >"$f"
	done
}

# nth_fails N FILE VALUE: writes VALUE to FILE with the Nth allocation of the
# writing task failing. Prints "ERRNO FIRED": the write's result and whether
# the failure was injected (1) or the write made fewer allocations (0). The
# count is the task's own, and a fork resets it in the child: between
# setting it and reading it back, only builtins run, in one subshell.
nth_fails() {
	(
		local left status=0 error=/tmp/nth-error.$BASHPID
		# Opened before the count starts: the message of a failed write
		# must not need an allocation.
		exec 3>"$error"
		echo "$1" >/proc/self/fail-nth
		printf '%s' "$3" 2>&3 >"$2" || status=$?
		read -r left </proc/self/fail-nth
		echo 0 >/proc/self/fail-nth
		exec 3>&-
		if [ "$status" = 0 ]; then
			printf '0'
		else
			printf '%s' "$(errno_of "$(<"$error")")"
		fi
		echo " $([ "$left" = 0 ] && echo 1 || echo 0)"
	)
}

# power_on_allocations DIR: about how many allocations a power-on of the
# device at DIR makes (the count of /proc/self/fail-nth, set too high to
# fire); the device is then powered off again.
power_on_allocations() {
	(
		local left
		echo 100000 >/proc/self/fail-nth
		printf 1 >"$1"/power
		read -r left </proc/self/fail-nth
		echo 0 >/proc/self/fail-nth
		echo $((100000 - left))
	)
	echo 0 >"$1"/power
}

# power_on_lane LANE DIR: powers on the device at DIR with its Nth allocation
# failing, for the Ns of POWER_ON_SWEEP (in increasing order) that it claims
# first, the lanes claiming them in turn from its end. Writes the
# highest N that failed an allocation, the lowest N that did not (or none),
# and the errnos seen to /tmp/power-on-lane.LANE.
power_on_lane() {
	local i n out r fired errnos=" " last=0 unfired=none
	for ((i = ${#POWER_ON_SWEEP[@]} - 1; i >= 0; i--)); do
		# A claim is a file that a redirection creates only if it does not
		# exist yet (noclobber), in this shell: no program, no subshell.
		set -C
		{ : >/tmp/power-on-claim."$i"; } 2>/dev/null || { set +C; continue; }
		set +C
		n=${POWER_ON_SWEEP[i]}
		out=$(nth_fails "$n" "$2"/power 1)
		r=${out% *} fired=${out#* }
		if [ "$r" = 0 ]; then
			expect_eq "$(<"$2"/power)" 1 "power after a successful power-on ($n)"
			echo 0 >"$2"/power
		else
			expect_eq "$(<"$2"/power)" 0 "power after a failed power-on ($n: $r)"
			[ ! -e /dev/"${2##*/}" ] ||
				{ echo "    /dev/${2##*/} exists after a failed power-on ($n: $r)"; return 1; }
			[[ $errnos == *" $r "* ]] || errnos+="$r "
		fi
		if [ "$fired" = 1 ]; then
			((n < last)) || last=$n
		else
			[ "$unfired" != none ] && ((n > unfired)) || unfired=$n
		fi
	done
	echo "$last $unfired$errnos" >/tmp/power-on-lane.$1
}

test_power_on_survives_each_failed_allocation() {
	# Each allocation of a power-on, failed in turn: the write fails with an
	# errno and leaves the device off, or succeeds; then the device powers
	# on normally. Nothing is left behind (kmemleak checks this precisely
	# on the debug kernel). The Ns: every N up to 64, then every seventh
	# (the tag set's requests are many alike), up to a few past the
	# allocations a power-on makes. The sweep runs in two lanes at once,
	# each on a device of its own (a task's fail-nth counts its own
	# allocations), which take the Ns from one list, highest first: failing
	# one of a few allocations near the end of a power-on can leave the
	# read of the partition scan to the tag set's timeout (5 s, and the
	# second blk-mq takes to find it), in null_blk as in rnull, and while a
	# lane waits for it, the other goes on with the rest of the list.
	local base dev lane0 lane1 r n most=0
	fault_setup
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	for dev in d e; do
		mkdir $RCFG/$dev
		quiet_faults $RCFG/$dev
		echo 1 >$RCFG/$dev/memory_backed
		echo 4 >$RCFG/$dev/cache_size
		echo 2 >$RCFG/$dev/poll_queues
	done
	base=$(kernel_kib)
	for dev in d e; do
		n=$(power_on_allocations $RCFG/$dev)
		((n < most)) || most=$n
	done
	POWER_ON_SWEEP=()
	for ((n = 1; n <= most + 28; n += (n >= 64 ? 7 : 1))); do
		POWER_ON_SWEEP+=("$n")
	done
	rm -f /tmp/power-on-claim.*
	injected_faults_begin "power-on"
	together power_on_lane 0 $RCFG/d -- power_on_lane 1 $RCFG/e
	injected_faults_end
	# Each lane: the highest N that failed an allocation, the lowest that
	# did not, the errnos. (A power-on makes about 330 allocations, a few
	# more or less from one to the next.)
	read -ra lane0 </tmp/power-on-lane.0
	read -ra lane1 </tmp/power-on-lane.1
	local errnos=" "
	for r in "${lane0[@]:2}" "${lane1[@]:2}"; do
		[ "$r" = ENOMEM ] || [ "$r" = ENOSPC ] || [ "$r" = EINVAL ] ||
			{ echo "    unexpected errno $r"; return 1; }
		[[ $errnos == *" $r "* ]] || errnos+="$r "
	done
	note "the lowest N past the end of a power-on: ${lane0[1]} (d) and ${lane1[1]} (e);" \
		"errnos seen:${errnos% }"
	for dev in d e; do
		expect_eq "$(wr $RCFG/$dev/power 1)" 0 "power-on of $dev without failures"
		echo 0 >$RCFG/$dev/power
	done
	local used=$(($(kernel_kib) - base))
	if [ -e /sys/kernel/debug/kmemleak ]; then
		# The debug kernel's own bookkeeping (kmemleak's and debugobjects'
		# metadata, freed lazily) grows by megabytes over the sweep; there
		# kmemleak's scan at the end of the run is the check.
		echo "    ${used} KiB more kernel memory in use (left to kmemleak)" >&2
		return 0
	fi
	[ "$used" -lt 1024 ] || { echo "    ${used} KiB more kernel memory in use"; return 1; }
}

test_live_queue_changes_survive_failed_allocations() {
	# Queue changes under running I/O, each with one allocation failing: the
	# change fails (the disk keeps its queues) or succeeds, and I/O goes on.
	local n out r fired pid want
	fault_setup
	expect_eq "$(load rnull nr_devices=0 poll_queues=2)" 0 "modprobe rnull"
	mkdir $RCFG/d
	quiet_faults $RCFG/d
	echo 1 >$RCFG/d/power
	fio --name=q --filename=/dev/d --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
		--iodepth=16 --time_based --runtime=600 >/dev/null 2>&1 &
	pid=$!
	local before
	injected_faults_begin "live queue changes"
	for n in $(seq 1 3 90); do
		want=$((n % 2 + 1))
		before=$(<$RCFG/d/submit_queues)
		out=$(nth_fails $n $RCFG/d/submit_queues $want)
		r=${out% *} fired=${out#* }
		case $r in
		0) expect_eq "$(<$RCFG/d/submit_queues)" $want "submit_queues after a change ($n)" ;;
		ENOMEM) expect_eq "$(<$RCFG/d/submit_queues)" "$before" "submit_queues after a failure ($n)" ;;
		*) echo "    submit_queues=$want with allocation $n failing: $r"; return 1 ;;
		esac
		[ "$fired" = 1 ] || break
	done
	injected_faults_end
	kill -0 $pid || { echo "    fio stopped"; return 1; }
	# Without failures, changes work again, and the disk has the queues
	# asked for (sysfs entries that a failed allocation left out are made
	# again by the next change).
	for want in 1 2; do
		expect_eq "$(wr $RCFG/d/submit_queues $want)" 0 "submit_queues=$want after the failures"
		expect_eq "$(nr_hw_queues d)" $((want + 2)) "queues after submit_queues=$want"
	done
	kill $pid
	wait $pid || true
	expect_eq "$(run dd if=/dev/d of=/dev/null bs=4k count=16 iflag=direct status=none)" 0 \
		"reads after the changes"
}

# fail_in_module MODULE SPACE: the next allocation made with MODULE's code
# on the stack fails, once, after SPACE bytes of such allocations succeeded.
fail_in_module() {
	local a base size
	read -r _ size _ _ _ base <<<"$(grep "^$1 " /proc/modules)"
	for a in $FAILSLAB $FAIL_PAGE; do
		printf '0x%x' "$((base))" >$a/require-start
		printf '0x%x' "$((base + size))" >$a/require-end
		echo "$2" >$a/space
		echo 1 >$a/times
		echo 100 >$a/probability
	done
}

fail_nothing() {
	local a
	for a in $FAILSLAB $FAIL_PAGE; do
		echo 0 >$a/probability
		echo 0 >$a/require-start
		echo 0 >$a/require-end
	done
}

test_memory_backed_writes_survive_failed_allocations() {
	# Writes to new pages, with one allocation of the driver failing: the
	# write fails with ENOSPC (as null_blk's) or succeeds, and what was
	# written reads back, on both drivers.
	local n=0 space out dev mod
	fault_setup
	load_both
	for dev in $RCFG/d $CCFG/c; do
		mkdir $dev
		echo 1 >$dev/memory_backed
		echo 1 >$dev/power
	done
	dd if=/dev/urandom of=/tmp/block bs=64k count=1 status=none
	injected_faults_begin "memory-backed writes"
	for dev in d c; do
		mod=$([ $dev = d ] && echo rnull || echo null_blk)
		for space in 0 1 4096 20000 65536; do
			n=$((n + 1))
			fail_in_module $mod $space
			out=$(run dd if=/tmp/block of=/dev/$dev bs=64k seek=$n count=1 oflag=direct status=none)
			fail_nothing
			case $out in
			0) expect_eq "$(dd if=/dev/$dev bs=64k skip=$n count=1 iflag=direct status=none |
				cmp - /tmp/block && echo same)" same "block $n of $dev" ;;
			ENOSPC) ;;
			*) echo "    write to $dev failing after $space bytes: $out"; return 1 ;;
			esac
		done
		# The failures are over: writes work again.
		expect_eq "$(run dd if=/tmp/block of=/dev/$dev bs=64k seek=99 count=1 oflag=direct \
			status=none)" 0 "$dev: a write after the failures"
	done
	# Random failures under fio, for rnull: I/O errors, no hang.
	read -r _ size _ _ _ base <<<"$(grep "^rnull " /proc/modules)"
	printf '0x%x' "$((base))" >$FAILSLAB/require-start
	printf '0x%x' "$((base + size))" >$FAILSLAB/require-end
	echo 0 >$FAILSLAB/space
	echo -1 >$FAILSLAB/times
	echo 5 >$FAILSLAB/probability
	fio --name=w --filename=/dev/d --ioengine=io_uring --direct=1 --rw=randwrite \
		--bs=4k --iodepth=16 --size=32M --io_size=8M --continue_on_error=io \
		>/dev/null 2>&1 || true
	fail_nothing
	injected_faults_end
	expect_eq "$(run dd if=/tmp/block of=/dev/d bs=64k seek=100 count=1 oflag=direct status=none)" 0 \
		"writes after the failures"
}

# teardown_under_load DIR DISK WHAT [FIO_ARG]: fio at depth on DISK, then
# power-off, power-on and rmdir of DIR while it runs. Each must return.
# (A half of `together`: each step checks its status.)
teardown_under_load() {
	local pids=() start
	fio --name=t --filename=/dev/"$2" --ioengine=io_uring --direct=1 --rw=randrw --bs=4k \
		--iodepth=32 --numjobs=2 --time_based --runtime=60 $4 >/dev/null 2>&1 &
	pids+=($!)
	wait_for_io "$2"
	start=$SECONDS
	echo 0 >"$1"/power && echo 1 >"$1"/power || return 1
	fio --name=t2 --filename=/dev/"$2" --ioengine=io_uring --direct=1 --rw=randrw --bs=4k \
		--iodepth=32 --time_based --runtime=60 $4 >/dev/null 2>&1 &
	pids+=($!)
	wait_for_io "$2"
	rmdir "$1" || return 1
	wait "${pids[@]}"
	# Requests held by fail_io_timeout take the timeout to end (about 1.1 s,
	# or 6 s after the power cycle).
	((SECONDS - start < 40)) || { echo "    $3: teardown took $((SECONDS - start)) s"; return 1; }
}

# teardown_lane HELD DISK MODE...: teardowns under load of a configfs device
# DISK in each completion MODE (an irqmode, or poll); with HELD=1, a few
# requests are lost (held until they time out, after about 1.1 s with
# short_io_timeout rather than the tag set's 5 s).
teardown_lane() {
	local held=$1 disk=$2 dir=$RCFG/$2 mode
	shift 2
	for mode in "$@"; do
		mkdir $dir && echo 64 >$dir/hw_queue_depth || return 1
		if [ $mode = poll ]; then
			echo 1 >$dir/poll_queues
		else
			echo $mode >$dir/irqmode && echo 0 >$dir/poll_queues
		fi || return 1
		echo 1 >$dir/power || return 1
		if [ $held = 1 ]; then
			short_io_timeout $disk &&
				echo 1 >/sys/block/$disk/io-timeout-fail || return 1
		fi
		teardown_under_load $dir $disk "irqmode $mode, held $held" \
			"$([ $mode = poll ] && echo --hipri)" || return 1
	done
}

test_power_off_and_rmdir_under_load() {
	local f=/sys/kernel/debug/fail_io_timeout status=0
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	# fail_io_timeout loses 2% of the requests of the disks that ask for it
	# (io-timeout-fail): those of the held lanes.
	echo 0 >$f/verbose
	echo 2 >$f/probability
	echo -1 >$f/times
	# The lanes at once, on devices of their own; those that hold requests
	# mostly wait, two modes each.
	together teardown_lane 0 d 0 1 2 poll -- teardown_lane 1 e 0 1 -- \
		teardown_lane 1 f 2 poll || status=1
	echo 0 >$f/probability
	return $status
}

test_disk_larger_than_memory_fails_writes() {
	# A memory-backed disk twice the size of the memory: writes fail with
	# ENOSPC once little memory is left, nothing is OOM-killed, and rmdir
	# gives the memory back. (null_blk's GFP_NOIO allocations make the
	# kernel OOM-kill every process and then panic: not run here.)
	local mem_mib out m base
	mem_mib=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	base=$(kernel_kib)
	mkdir $RCFG/d
	echo $((2 * mem_mib)) >$RCFG/d/size
	echo 4096 >$RCFG/d/blocksize
	echo 1 >$RCFG/d/memory_backed
	echo 1 >$RCFG/d/power
	m=$(mark)
	out=$(dd if=/dev/zero of=/dev/d bs=1M count=$((2 * mem_mib)) oflag=direct 2>&1) &&
		{ echo "    writing $((2 * mem_mib)) MiB succeeded"; return 1; }
	grep -q "No space left on device" <<<"$out" || { echo "    dd: $out"; return 1; }
	! dmesg_since "$m" | grep -q "invoked oom-killer" ||
		{ echo "    the OOM killer ran"; return 1; }
	# The disk holds what fitted, and still reads.
	expect_eq "$(run dd if=/dev/d of=/dev/null bs=1M count=64 iflag=direct status=none)" 0 \
		"reads of the full disk"
	rmdir $RCFG/d
	local used=$(($(kernel_kib) - base))
	[ "$used" -lt 4096 ] || { echo "    ${used} KiB still in use after rmdir"; return 1; }
}
