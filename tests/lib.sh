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
)

# Turns the error message of a failed command into an errno name.
errno_of() {
	local msg=${1##*: }
	msg=${msg%$'\n'}
	[ -n "$msg" ] || { echo "?(no message)"; return; }
	# modprobe -r says "Module X is in use." for EBUSY.
	[[ $msg != *" is in use." ]] || msg="Device or resource busy"
	echo "${ERRNO_OF[$msg]:-?$msg}"
}

# run CMD...: prints 0 if CMD succeeds, else the errno name of its failure
# (from the last line CMD printed). The output goes through a file, not a
# command substitution: a fork costs milliseconds in the VM, and the tests
# run thousands of these.
run() {
	local f=/tmp/rnull-run.$BASHPID lines
	if "$@" >"$f" 2>&1; then
		echo 0
	else
		mapfile -t lines <"$f"
		while ((${#lines[@]})) && [ -z "${lines[-1]}" ]; do unset 'lines[-1]'; done
		((${#lines[@]})) || lines=("")
		errno_of "${lines[-1]}"
	fi
}

# wr FILE VALUE: writes VALUE (no newline added) in one write(2); prints 0
# or the errno name. (bash reports the errno of a failed write; dash's
# printf calls every failure an I/O error.)
write_value() { printf '%s' "$2" >"$1"; }
wr() { run write_value "$1" "$2"; }

# load MODULE [PARAM=VALUE...]: prints 0 or the errno name of modprobe.
load() { run modprobe "$@"; }

# pair ATTR=VALUE...: configfs devices d (rnull) and c (null_blk) with the
# same settings, not powered.
pair() {
	local a dir
	for dir in $RCFG/d $CCFG/c; do
		mkdir $dir
		for a in "$@"; do echo "${a#*=}" >"$dir/${a%%=*}"; done
	done
}

# unload every driver under test, removing their configfs devices first.
unload_all() {
	local d
	for d in "$RCFG"/* "$CCFG"/*; do
		[ -d "$d" ] || continue
		echo 0 >"$d/power" 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
	# Only what is loaded, with busybox's static rmmod: neither driver
	# depends on another module, and modprobe -r takes a tenth of a second
	# in the VM.
	[ ! -d /sys/module/rnull ] || busybox rmmod rnull 2>/dev/null
	[ ! -d /sys/module/null_blk ] || busybox rmmod null_blk 2>/dev/null
	true
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

# Number of hardware queues of a disk.
nr_hw_queues() { ls -d /sys/block/"$1"/mq/[0-9]* 2>/dev/null | wc -l; }

# The queue shape of a disk as one comparable line.
disk_shape() {
	local q=/sys/block/$1/queue
	echo "size=$(</sys/block/"$1"/size)" \
		"lbs=$(<$q/logical_block_size)" \
		"pbs=$(<$q/physical_block_size)" \
		"rot=$(<$q/rotational)" \
		"hwq=$(nr_hw_queues "$1")" \
		"tags=$(</sys/block/"$1"/mq/0/nr_tags)" \
		"max_hw_kb=$(<$q/max_hw_sectors_kb)" \
		"max_kb=$(<$q/max_sectors_kb)" \
		"virt_boundary=$(<$q/virt_boundary_mask)" \
		"dma_alignment=$(<$q/dma_alignment)" \
		"nr_requests=$(<$q/nr_requests)" \
		"scheduler=$(<$q/scheduler)" \
		"io_poll=$(<$q/io_poll)" \
		"io_timeout=$(<$q/io_timeout)" \
		"hctx_flags=$(hctx_flags "$1")" \
		"discard=$(<$q/discard_max_hw_bytes)" \
		"write_cache=$(<$q/write_cache) fua=$(<$q/fua)" \
		"cpus=$(cat /sys/block/"$1"/mq/*/cpu_list | tr '\n' ';')"
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
kernel_log() { cat "$KERNEL_LOG" 2>/dev/null; dmesg; }

# The kernel log without what the tests expected (tests/log-filter.awk).
checked_log() { kernel_log | awk -f "$RNULL_REPO/tests/log-filter.awk"; }

# attr FILE: what $(cat FILE) would give, or nothing if FILE cannot be read,
# without starting a program (that takes about 30 ms in the VM).
attr() {
	local v=
	{ IFS= read -r -d '' v <"$1"; } 2>/dev/null || true
	while [[ $v == *$'\n' ]]; do v=${v%$'\n'}; done
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
