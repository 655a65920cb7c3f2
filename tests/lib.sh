# SPDX-License-Identifier: GPL-2.0
# Helpers for the tests in this directory; sourced by run.sh inside the VM.
# shellcheck shell=bash

RCFG=/sys/kernel/config/rnull
CCFG=/sys/kernel/config/nullb

declare -A ERRNO_OF=(
	["Invalid argument"]=EINVAL
	["Numerical result out of range"]=ERANGE
	["Device or resource busy"]=EBUSY
	["File exists"]=EEXIST
	["Operation not permitted"]=EPERM
	["No such file or directory"]=ENOENT
	["Cannot allocate memory"]=ENOMEM
	["Permission denied"]=EACCES
	["No space left on device"]=ENOSPC
	["Input/output error"]=EIO
	["Operation not supported"]=EOPNOTSUPP
	["No such device"]=ENODEV
	["Resource temporarily unavailable"]=EAGAIN
	["Connection timed out"]=ETIMEDOUT
	["cannot splice"]=ETOOMANYREFS
	["Value too large for defined data type"]=EOVERFLOW
	# busybox insmod's own words for some errors of init_module.
	["invalid module parameters"]=EINVAL
	["unknown symbol in module, or unknown parameter"]=ENOENT
	["module already loaded"]=EEXIST
)

# errno_to VAR MESSAGE: sets VAR to the errno name of the error message of a
# failed command. errno_of MESSAGE prints it.
# The *_to helpers here set a variable instead of printing: a command
# substitution forks, which costs milliseconds in the VM, and the tests
# compare thousands of answers.
errno_to() {
	local -n errno_to_var=$1
	local msg=${2##*: }
	msg=${msg%$'\n'}
	if [ -z "$msg" ]; then
		errno_to_var="?(no message)"
		return
	fi
	# modprobe -r says "Module X is in use." for EBUSY.
	[[ $msg != *" is in use." ]] || msg="Device or resource busy"
	errno_to_var=${ERRNO_OF[$msg]:-?$msg}
}
errno_of() {
	local e
	errno_to e "$1"
	echo "$e"
}

# run_to VAR CMD...: sets VAR to 0 if CMD succeeds, else to the errno name of
# its failure (from the last line CMD printed); run CMD... prints it. The
# output goes through a file, not a command substitution.
run_to() {
	local -n run_to_var=$1
	shift
	local f=/tmp/rnull-run.$BASHPID lines
	if "$@" >"$f" 2>&1; then
		run_to_var=0
	else
		mapfile -t lines <"$f"
		while ((${#lines[@]})) && [ -z "${lines[-1]}" ]; do unset 'lines[-1]'; done
		((${#lines[@]})) || lines=("")
		errno_to run_to_var "${lines[-1]}"
	fi
}
run() {
	local r
	run_to r "$@"
	echo "$r"
}

# wr FILE VALUE: writes VALUE (no newline added) in one write(2); prints 0
# or the errno name; wr_to VAR FILE VALUE sets VAR to it. (bash reports the
# errno of a failed write; dash's printf calls every failure an I/O error.)
write_value() { printf '%s' "$2" >"$1"; }
wr() { run write_value "$1" "$2"; }
wr_to() { run_to "$1" write_value "$2" "$3"; }

# load MODULE [PARAM=VALUE...]: prints 0 or the errno name of the load;
# load_to VAR MODULE [PARAM=VALUE...] sets VAR to it.
# The two drivers, which depend on no other module, are loaded with busybox's
# static insmod: kmod's modprobe takes a tenth of a second to start in the VM
# (even with -n), and the tests load them hundreds of times. The kernel gets
# the same parameters either way.
DRIVER_DIR=/lib/modules/$(uname -r)/kernel/drivers/block
declare -A DRIVER_FILE=([rnull]=$DRIVER_DIR/rnull/rnull.ko
	[null_blk]=$DRIVER_DIR/null_blk/null_blk.ko)
load_to() { # VAR MODULE [PARAM=VALUE...]
	if [ -n "${DRIVER_FILE[$2]:-}" ]; then
		run_to "$1" busybox insmod "${DRIVER_FILE[$2]}" "${@:3}"
	else
		run_to "$1" modprobe "${@:2}"
	fi
}
load() {
	local r
	load_to r "$@"
	echo "$r"
}

# pair ATTR=VALUE...: configfs devices d (rnull) and c (null_blk) with the
# same settings, not powered.
pair() {
	local a dir
	for dir in $RCFG/d $CCFG/c; do
		mkdir $dir
		for a in "$@"; do echo "${a#*=}" >"$dir/${a%%=*}"; done
	done
}

# every_irqmode PARAM=VALUE...: disks of both drivers in each completion
# mode, to run fio on all at once: rnull and null_blk loaded with PARAMs and
# irqmode=0 (their module disks rnullb0 and nullb0), and configfs devices r1
# and c1 in irqmode 1, r2 and c2 in irqmode 2, with the same settings (gb as
# size). Their device paths, comma-separated, are left in IRQMODE_DISKS.
every_irqmode() {
	local p dir mode r c
	load_to r rnull irqmode=0 "$@"
	load_to c null_blk irqmode=0 "$@"
	expect_eq "$r $c" "0 0" "modprobe rnull, null_blk irqmode=0 $*"
	IRQMODE_DISKS=/dev/rnullb0,/dev/nullb0
	for mode in 1 2; do
		for dir in $RCFG/r$mode $CCFG/c$mode; do
			mkdir "$dir"
			echo $mode >"$dir"/irqmode
			for p in "$@"; do
				case $p in
				gb=*) echo $((${p#gb=} * 1024)) >"$dir"/size ;;
				*) echo "${p#*=}" >"$dir/${p%%=*}" ;;
				esac
			done
			echo 1 >"$dir"/power
			IRQMODE_DISKS+=,/dev/${dir##*/}
		done
	done
}

# unload every driver under test, removing their configfs devices first.
unload_all() {
	# The two drivers at once, each in its own lane: removing a disk waits
	# for RCU grace periods, and so does removing a module (a third off the
	# time of one lane for both). A powered device is removed by its rmdir.
	# Only what is loaded, with busybox's static rmmod: neither driver
	# depends on another module, and modprobe -r takes a tenth of a second
	# in the VM.
	local pid=
	if [ -d /sys/module/rnull ]; then
		remove_driver rnull "$RCFG" &
		pid=$!
	fi
	[ ! -d /sys/module/null_blk ] || remove_driver null_blk "$CCFG"
	[ -z "$pid" ] || wait "$pid"
	true
}
remove_driver() { # MODULE CONFIGFS_DIR
	local d
	for d in "$2"/*; do
		[ ! -d "$d" ] || rmdir "$d" 2>/dev/null
	done
	busybox rmmod "$1" 2>/dev/null
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
	if [ "$1" != "$2" ]; then
		echo "    $3: expected '$2', got '$1'"
		return 1
	fi
}

# expect_same RNULL_VALUE C_VALUE WHAT: rnull must answer as null_blk does.
expect_same() {
	if [ "$1" != "$2" ]; then
		echo "    $3: rnull '$1', null_blk '$2'"
		return 1
	fi
}

# copy_of DISK FILE: the whole content of DISK, read directly, into FILE.
copy_of() { dd if=/dev/"$1" of="$2" bs=1M iflag=direct status=none; }

# expect_same_data A B WHAT: the files or disks A and B hold the same bytes.
# (One cmp rather than a checksum of each: hashing is slow in the VM, and cmp
# says where they differ.)
expect_same_data() {
	local out
	out=$(cmp "$1" "$2" 2>&1) || { echo "    $3: $out"; return 1; }
}

# Number of hardware queues of a disk.
nr_hw_queues() {
	local q=(/sys/block/"$1"/mq/[0-9]*)
	[ -e "${q[0]}" ] || q=()
	echo "${#q[@]}"
}

# together CMD... -- CMD... [-- CMD...]: runs the commands at once, for the
# parts of a test that wait or start many programs (the VM has two CPUs).
# All run to their end; their output is shown in order, and together fails
# if any failed. Each runs in a background subshell of its own, so that a
# test's set -e stops it at its first failed step, provided together is not
# itself called where set -e is off (after `if`, before `||` or `&&`): there
# each command must check its steps' status itself.
together() {
	local cmd=() pids=() out=/tmp/rnull-together.$BASHPID status=0 i
	while :; do
		if (($# == 0)) || [ "$1" = -- ]; then
			"${cmd[@]}" >"$out.${#pids[@]}" 2>&1 &
			pids+=($!)
			cmd=()
			(($#)) || break
		else
			cmd+=("$1")
		fi
		shift
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}" || status=1
	done
	for i in "${!pids[@]}"; do
		cat "$out.$i"
	done
	return $status
}

# The fields of fio's terse output (version 3) that the tests read, counted
# from 0: the job name, its error, the KiB read, the read KiB/s, the mean
# completion latency of the reads (µs, six decimals) and the KiB written.
FIO_NAME=2 FIO_ERROR=4 FIO_READ_KIB=5 FIO_READ_BW=6 FIO_READ_CLAT_MEAN=15 FIO_WRITE_KIB=46

# fio_results_to ARRAY FILE: reads fio's terse output (version 3, one line
# a job, fields separated by ';') from FILE into the associative ARRAY:
# for each job name, "ERRORS KIB", the errors and the KiB read and written of
# all the jobs of that name, summed. (jq would read fio's JSON, but takes a
# third of a second to start in the VM.) Lines that are not results, such as
# the notes of zonemode=zbd, are skipped.
fio_results_to() {
	local -n fio_results=$1
	local line f errors kib
	fio_results=()
	while IFS= read -r line; do
		[[ $line == "3;"* ]] || continue
		IFS=';' read -r -a f <<<"$line"
		read -r errors kib <<<"${fio_results[${f[FIO_NAME]}]:-0 0}"
		errors=$((errors + f[FIO_ERROR]))
		kib=$((kib + f[FIO_READ_KIB] + f[FIO_WRITE_KIB]))
		fio_results[${f[FIO_NAME]}]="$errors $kib"
	done <"$2"
}

# short_io_timeout DISK...: the block layer's timeout of each DISK at 100 ms
# (io_timeout) rather than the tag set's 5 s, for tests that wait for lost
# requests. blk-mq looks for expired requests 256 jiffies (about a second)
# after a request's deadline at the earliest, so a lost request ends after
# about 1.1 s.
short_io_timeout() {
	local disk
	for disk in "$@"; do
		echo 100 >/sys/block/"$disk"/queue/io_timeout || return 1
	done
}

# wait_for_io DISK: returns once DISK has requests in flight or has completed
# a hundred more, or after a second, rather than sleeping a second for fio to
# get going. (Requests that complete as they are queued are seldom seen in
# flight; the counts of /sys/block/DISK/stat show them.)
wait_for_io() {
	local i reads writes stat start=
	for ((i = 0; i < 50; i++)); do
		read -r reads writes </sys/block/"$1"/inflight &&
			read -r -a stat </sys/block/"$1"/stat || return 0
		((reads + writes == 0)) || return 0
		# Fields 1 and 5 of stat: the reads and writes completed.
		start=${start:-$((stat[0] + stat[4]))}
		((stat[0] + stat[4] - start < 100)) || return 0
		sleep 0.02
	done
}

# The queue shape of a disk as one comparable line. (Built from reads
# without programs or subshells: the tests compare hundreds of disks.)
disk_shape() {
	local d=/sys/block/$1 q=/sys/block/$1/queue a v line hwq cpus= flags
	line="size=$(<$d/size)"
	for a in lbs:logical_block_size pbs:physical_block_size rot:rotational \
		max_hw_kb:max_hw_sectors_kb max_kb:max_sectors_kb \
		virt_boundary:virt_boundary_mask dma_alignment:dma_alignment \
		nr_requests:nr_requests scheduler:scheduler io_poll:io_poll \
		io_timeout:io_timeout discard:discard_max_hw_bytes \
		write_cache:write_cache fua:fua; do
		attr_to v "$q/${a#*:}"
		line+=" ${a%%:*}=$v"
	done
	hwq=("$d"/mq/[0-9]*)
	[ -e "${hwq[0]}" ] || hwq=()
	for a in "${hwq[@]}"; do
		attr_to v "$a/cpu_list"
		cpus+="$v;"
	done
	mapfile -t flags </sys/kernel/debug/block/"$1"/hctx0/flags
	echo "$line hwq=${#hwq[@]} tags=$(<$d/mq/0/nr_tags) hctx_flags=${flags[*]} cpus=$cpus"
}

# The blk-mq flags of the first hardware queue of a disk, from debugfs
# (BLOCKING, TAG_HCTX_SHARED, TAG_QUEUE_SHARED, ...).
hctx_flags() { cat /sys/kernel/debug/block/"$1"/hctx0/flags; }

# dmesg_since MARK: the kernel log written after `mark` returned MARK.
mark() { dmesg | wc -l; }
dmesg_since() { dmesg | tail -n +"$(($1 + 1))"; }

# Kernel log lines that a test expects from null_blk (where C is buggy and
# rnull is not) are written between these markers; the log checks of the
# test run skip them. known_splats_end fails if anything in between came from
# rnull.
SPLATS_BEGIN="rnull-tests: known null_blk splats begin"
SPLATS_END="rnull-tests: known null_blk splats end"
known_splats_begin() { echo "$SPLATS_BEGIN: $1" >/dev/kmsg; mark; }
known_splats_end() { # MARK: the value known_splats_begin printed
	echo "$SPLATS_END" >/dev/kmsg
	! dmesg_since "$1" | grep -q '\[rnull\]\|rnull_' ||
		{ echo "    rnull in the log of a null_blk run:"; dmesg_since "$1" | tail -n 20; return 1; }
}

# Allocation failures injected on purpose make the kernel print
# diagnostics with stack traces; they are written between these markers.
injected_faults_begin() { echo "rnull-tests: injected faults begin: $1" >/dev/kmsg; }
injected_faults_end() { echo "rnull-tests: injected faults end" >/dev/kmsg; }

# run.sh moves the kernel log to this file before each test, so that a test's
# dmesg reads only its own lines: with the whole log of the run, each read
# took a tenth of a second or more in the VM. kernel_log gives all of it.
KERNEL_LOG=/tmp/rnull-kernel.log
save_kernel_log() { dmesg -c >>"$KERNEL_LOG"; }
# take_kernel_log_to VAR: what the log holds now, in VAR, moved to the file
# as save_kernel_log does.
take_kernel_log_to() {
	local -n take_kernel_log=$1
	take_kernel_log=$(dmesg -c)
	[ -z "$take_kernel_log" ] || printf '%s\n' "$take_kernel_log" >>"$KERNEL_LOG"
}
kernel_log() { cat "$KERNEL_LOG" 2>/dev/null; dmesg; }

# The kernel log without what the tests expected (tests/log-filter.awk).
checked_log() { kernel_log | awk -f "$RNULL_REPO/tests/log-filter.awk"; }

# attr FILE: what $(cat FILE) would give, or nothing if FILE cannot be read,
# without starting a program (that takes about 30 ms in the VM); attr_to VAR
# FILE sets VAR to it.
attr_to() {
	local -n attr_to_var=$1
	attr_to_var=
	{ IFS= read -r -d '' attr_to_var <"$2"; } 2>/dev/null || true
	while [[ $attr_to_var == *$'\n' ]]; do attr_to_var=${attr_to_var%$'\n'}; done
}
attr() {
	local v
	attr_to v "$1"
	printf '%s' "$v"
}

# note TEXT: a line shown under the test's result line, even when it passes.
note() { printf '        %s\n' "$*" >>/tmp/rnull-test-notes; }

# kernel_kib: unreclaimable kernel memory in use (KiB): where the pages of
# the store are allocated. The slab caches are shrunk first: on a KASAN
# kernel (make check-debug) that takes their freed objects out of KASAN's
# quarantine, which otherwise keeps up to 1/32 of the memory allocated
# after it was freed; elsewhere it returns empty slabs.
kernel_kib() {
	local f
	for f in /sys/kernel/slab/*/shrink; do
		[ -e "$f" ] && echo 1 >"$f"
	done
	awk '/^SUnreclaim:/ {print $2}' /proc/meminfo
}
