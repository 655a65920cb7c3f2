#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Compares rnull with null_blk: the same fio jobs on both, configured alike,
# interleaved (C, Rust, Rust, C, C, Rust, ...) in one boot, over a matrix of points.
# Each point is one fio run of 2 x REPS jobs, its JSON kept in OUT/raw;
# bench/report.py turns them into ratios with 95% confidence intervals, a
# table (OUT/table.md) and a plot (OUT/ratios.svg).
#
# Runs as root wherever both modules can be loaded: in the test VM through
# 'make bench', or directly on a machine running a kernel built with both.
#
# Settings (environment; lists are comma-separated):
#   BENCH_MODE        quick, default or full: the defaults of the rest
#   BENCH_REPS        runs of each driver per point
#   BENCH_RUNTIME     seconds per run (fractions allowed: 0.6)
#   BENCH_RW          randread,randwrite
#   BENCH_BS          4k,64k,1M
#   BENCH_IODEPTH     1,32
#   BENCH_NUMJOBS     1,2
#   BENCH_MEMORY      memory_backed values: 0,1
#   BENCH_COMPLETION  irqmode values, and poll for polled I/O: 0,1,poll
#   BENCH_POLL_BS     block sizes polled points use (default: 4k; full: all)
#   BENCH_ZONED       zoned points: zwrite (sequential writes, --zonemode=zbd,
#                     at each BENCH_ZBS, 1 and 2 jobs, memory_backed 0 and 1),
#                     zreport (zone reports of a disk of 4096 zones), or none
#   BENCH_ZBS         block sizes of the zoned writes: 4k,64k
#   BENCH_NOMEM_BS    block sizes of the points without memory backing
#                     (default: 4k,64k; full: all): a request of a disk
#                     without memory costs the same at 64 KiB and at 1 MiB
#   BENCH_SETTINGS    groups of points on devices with one more setting that
#                     changes the data path (see setting_group): cache16,
#                     cache512, badblocks, mbps, blocking, sharedtags; or none
#   BENCH_SIZE        device size in MiB (256)
#   BENCH_OUT         results directory (default: a new one under /tmp)
#   BENCH_AA          1: an A/A run, null_blk against a second null_blk device
#   BENCH_CALIBRATE   0: no A/A calibration points (see below)
#   BENCH_INSN_*      set by bench/insn.sh, which counts instructions
# bench/insn.sh's one device takes the settings of the groups one by one:
#   BENCH_SETTING     a group's name (below), or the settings themselves:
#   BENCH_CACHE       cache_size in MiB (0)
#   BENCH_BADBLOCKS   1: the second half of the disk bad, fio in the first
#   BENCH_MBPS        mbps (0)
#   BENCH_BLOCKING    blocking (0)
#   BENCH_SHARED_TAGS 1: the device on the module-wide tag set
#   BENCH_SYNC        none, fsync (fio's --fsync=32) or fua (--sync=dsync)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
MODE=${BENCH_MODE:-default}
case $MODE in
quick)
	reps=2 runtime=1 rws=randread,randwrite bss=4k qds=32 njs=1 mems=0,1
	cms=1,poll poll_bs=4k zoned=zwrite zbss=4k nomem_bs=all
	;;
default)
	reps=4 runtime=0.6 rws=randread,randwrite bss=4k,64k,1M qds=1,32 njs=1,2 mems=0,1
	cms=0,1,poll poll_bs=4k zoned=zwrite,zreport zbss=4k,64k nomem_bs=4k,64k
	;;
full)
	reps=6 runtime=2.5 rws=randread,randwrite bss=4k,64k,1M qds=1,32 njs=1,2 mems=0,1
	cms=0,1,poll poll_bs=4k,64k,1M zoned=zwrite,zreport zbss=4k,64k nomem_bs=all
	;;
*)
	echo "BENCH_MODE must be quick, default or full" >&2
	exit 2
	;;
esac
REPS=${BENCH_REPS:-$reps}
# The first run of a pair is faster than the second, by about 1.5% in the
# default run of 2026-12-07 17:07 (3 pairs; each job's IOPS against the mean
# of its driver's, over 135 points: 1.007/0.989, 1.002/0.988, 0.995/0.991).
# The order alternates from pair to pair, so with an even number of pairs
# each driver runs first as often as the other; with an odd one null_blk
# runs first once more, and the ratios are biased against rnull.
if ((REPS % 2)); then
	echo "BENCH_REPS=$REPS is odd: null_blk runs first in one pair more, which favours it" >&2
fi
RUNTIME=${BENCH_RUNTIME:-$runtime}
RUNTIME_MS=$(awk -v s="$RUNTIME" 'BEGIN { printf "%d", s * 1000 }')
((RUNTIME_MS > 0)) || {
	echo "BENCH_RUNTIME must be a positive number of seconds" >&2
	exit 2
}
RWS=${BENCH_RW:-$rws}
BSS=${BENCH_BS:-$bss}
QDS=${BENCH_IODEPTH:-$qds}
NJS=${BENCH_NUMJOBS:-$njs}
MEMS=${BENCH_MEMORY:-$mems}
CMS=${BENCH_COMPLETION:-$cms}
POLL_BS=${BENCH_POLL_BS:-$poll_bs}
SIZE=${BENCH_SIZE:-256}
ZONED=${BENCH_ZONED:-$zoned}
ZBSS=${BENCH_ZBS:-$zbss}
NOMEM_BS=${BENCH_NOMEM_BS:-$nomem_bs}
SETTINGS=${BENCH_SETTINGS:-cache16,cache512,badblocks,mbps,blocking,sharedtags}
OUT=${BENCH_OUT:-}
RCFG=/sys/kernel/config/rnull/bench
# BENCH_AA=1 puts a second null_blk device, set up alike, where rnull's would
# be: the ratios of such an A/A run show how far two identical devices differ
# here, the noise that rnull's ratios are to be read against.
AA=${BENCH_AA:-0}
[ "$AA" = 0 ] || RCFG=/sys/kernel/config/nullb/bench
# Calibration: in every memory_backed/completion group, after its points, a
# second null_blk device (ACFG, /dev/bench_a) takes rnull's place for one
# point per number of jobs (the first rw and block size, the deepest queue):
# the A/A spread of the same boot, which bench/report.py needs before it
# calls a point slower or faster. An A/A run has no calibration of its own.
CALIBRATE=${BENCH_CALIBRATE:-1}
[ "$AA" = 0 ] || CALIBRATE=0
ACFG=/sys/kernel/config/nullb/bench_a
# The options of every measured fio run.
FIO=(--ioengine=io_uring --direct=1 --fixedbufs=1 --registerfiles=1 --nonvectored=1
	--gtod_reduce=1 --norandommap --random_generator=lfsr --thread)
CCFG=/sys/kernel/config/nullb/bench_c
# The second device of each driver, on its shared tag set (sharedtags).
RCFG2=${RCFG}2 CCFG2=${CCFG}2

list() { tr ',' ' ' <<<"$1"; }

# Every setting is checked here, before anything is done: a bad value of
# the last axis used would otherwise fail after every other point ran.
# BENCH_CHECK_ONLY=1 stops after the checks (make bench runs them on the
# host before it builds and boots).
bad_setting() { echo "bench: $1" >&2; exit 2; }
check_list() { # NAME VALUE PATTERN WHAT
	local v
	[ -n "$2" ] || bad_setting "$1 is empty"
	for v in $(list "$2"); do
		[[ $v =~ ^($3)$ ]] || bad_setting "$1: '$v' is not $4"
	done
}
SIZE_RE='[1-9][0-9]*[kKmM]'
check_list BENCH_RW "$RWS" 'randread|randwrite|read|write|randrw|zwrite' \
	"randread, randwrite, read, write, randrw or (make insn) zwrite"
check_list BENCH_BS "$BSS" "$SIZE_RE" "a block size with its unit (4k, 64k, 1M)"
check_list BENCH_POLL_BS "$POLL_BS" "$SIZE_RE|all" "a block size with its unit, or all"
check_list BENCH_NOMEM_BS "$NOMEM_BS" "$SIZE_RE|all" "a block size with its unit, or all"
check_list BENCH_ZBS "$ZBSS" "$SIZE_RE" "a block size with its unit"
check_list BENCH_IODEPTH "$QDS" '[1-9][0-9]*' "a queue depth of 1 or more"
check_list BENCH_NUMJOBS "$NJS" '[1-9][0-9]*' "a number of jobs of 1 or more"
check_list BENCH_MEMORY "$MEMS" '0|1' "0 or 1"
check_list BENCH_COMPLETION "$CMS" '0|1|2|poll' "an irqmode (0, 1, 2) or poll"
check_list BENCH_REPS "$REPS" '[1-9][0-9]*' "a number of pairs of 1 or more"
check_list BENCH_SIZE "$SIZE" '[1-9][0-9]*' "a size in MiB"
check_list BENCH_SETTINGS "$SETTINGS" 'cache16|cache512|badblocks|mbps|blocking|sharedtags|none' \
	"cache16, cache512, badblocks, mbps, blocking, sharedtags or none"
check_list BENCH_ZONED "$ZONED" 'zwrite|zreport|none' "zwrite, zreport or none"
check_list BENCH_AA "$AA" '0|1' "0 or 1"
check_list BENCH_CALIBRATE "${BENCH_CALIBRATE:-1}" '0|1' "0 or 1"
check_list BENCH_CACHE "${BENCH_CACHE:-0}" '[0-9]+' "a cache size in MiB"
check_list BENCH_BADBLOCKS "${BENCH_BADBLOCKS:-0}" '0|1' "0 or 1"
check_list BENCH_MBPS "${BENCH_MBPS:-0}" '[0-9]+' "a rate in MiB/s"
check_list BENCH_BLOCKING "${BENCH_BLOCKING:-0}" '0|1' "0 or 1"
check_list BENCH_SHARED_TAGS "${BENCH_SHARED_TAGS:-0}" '0|1' "0 or 1"
check_list BENCH_SYNC "${BENCH_SYNC:-none}" 'none|fsync|fua' "none, fsync or fua"
[ -z "${BENCH_SETTING:-}" ] ||
	check_list BENCH_SETTING "$BENCH_SETTING" 'cache16|cache512|badblocks|mbps|blocking|sharedtags' \
		"one of cache16, cache512, badblocks, mbps, blocking, sharedtags"
if [ "${BENCH_CHECK_ONLY:-0}" = 1 ]; then
	exit 0
fi
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/rnull-bench.XXXXXX)
first() { list "$1" | awk '{ print $1; exit }'; }
RDEV=bench

# A warning, BUG or lockdep report in the kernel log makes the figures
# worthless: check_log stops the run at the first point after one, leaving
# OUT/INVALID with the log lines and no table. What counts is the shared list,
# tests/log-bad.ere; the benchmark announces no expected lines, so there is
# nothing for tests/log-filter.awk to drop.
LOG_BAD=$(paste -sd'|' "$here/../tests/log-bad.ere")
log_start=$(dmesg | wc -l)
check_log() { # WHAT: what was run last
	local bad
	bad=$(dmesg | tail -n +"$((log_start + 1))" | grep -E "$LOG_BAD" || true)
	[ -z "$bad" ] && return 0
	mkdir -p "$OUT"
	{
		echo "Results invalid: the kernel log has warnings, after $1:"
		dmesg | tail -n +"$((log_start + 1))" | tail -n 80
	} >"$OUT/INVALID"
	echo "bench: the kernel log has warnings after $1; results invalid ($OUT/INVALID)" >&2
	exit 1
}
in_list() { [[ ",$2," == *",$1,"* ]]; }

remove_dev() { # DIR
	[ -d "$1" ] || return 0
	echo 0 >"$1/power"
	rmdir "$1"
}
remove_devs() {
	local d
	for d in $RCFG $CCFG $ACFG $RCFG2 $CCFG2 ${ACFG}2; do
		remove_dev "$d"
	done
}
cleanup() {
	remove_devs
	modprobe -r rnull null_blk 2>/dev/null || true
}
trap cleanup EXIT

mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe -r rnull null_blk 2>/dev/null || true
# One poll queue available to the devices that ask for it (the default of
# both drivers, said explicitly).
modprobe rnull nr_devices=0 poll_queues=1
modprobe null_blk nr_devices=0 poll_queues=1

# The settings of a group of points (setting_group) that make_dev gives
# every device: cache_size, bad blocks, mbps, blocking, shared_tags; and
# what the group's fio runs add (SYNC). The points of the matrix and
# bench/insn.sh's device take them from BENCH_CACHE, ... (none by default).
plain_settings() {
	DEV_CACHE=${BENCH_CACHE:-0} DEV_BADBLOCKS=${BENCH_BADBLOCKS:-0} DEV_MBPS=${BENCH_MBPS:-0}
	DEV_BLOCKING=${BENCH_BLOCKING:-0} DEV_SHARED=${BENCH_SHARED_TAGS:-0}
	SYNC=${BENCH_SYNC:-none}
}
plain_settings

# make_dev DIR NAME MEMORY COMPLETION: SIZE MiB, 4 KiB blocks, a submission
# queue per CPU of 256 tags, no I/O scheduler, no I/O statistics, and the
# settings of the group (DEV_*).
make_dev() {
	mkdir "$1"
	echo "$SIZE" >"$1/size"
	echo 4096 >"$1/blocksize"
	echo 256 >"$1/hw_queue_depth"
	nproc >"$1/submit_queues"
	echo "$3" >"$1/memory_backed"
	if [ "$4" = poll ]; then
		echo 1 >"$1/poll_queues"
		echo 1 >"$1/irqmode"
	else
		echo 0 >"$1/poll_queues"
		echo "$4" >"$1/irqmode"
	fi
	echo "$DEV_CACHE" >"$1/cache_size"
	echo "$DEV_MBPS" >"$1/mbps"
	echo "$DEV_BLOCKING" >"$1/blocking"
	echo "$DEV_SHARED" >"$1/shared_tags"
	echo 1 >"$1/power"
	echo none >"/sys/block/$2/queue/scheduler"
	echo 0 >"/sys/block/$2/queue/iostats"
}

# make_devs DIR NAME MEMORY COMPLETION: make_dev, and on a shared tag set
# (DEV_SHARED) a second device DIR2 (NAME2) alike, which run_point's jobs
# also use.
make_devs() {
	make_dev "$@"
	[ "$DEV_SHARED" = 0 ] || make_dev "${1}2" "${2}2" "$3" "$4"
}

# mark_bad DIR: with DEV_BADBLOCKS, the second half of the device's sectors
# bad (after any fill): the table is searched on every request, and fio
# stays in the first half (fio_region), so none is hit.
mark_bad() {
	[ "$DEV_BADBLOCKS" = 1 ] || return 0
	local half=$((SIZE << 10)) i
	# A range takes at most 512 sectors of the table's 512 entries: a
	# handful of ranges spread over the second half.
	for ((i = 0; i < 8; i++)); do
		echo "+$((half + i * (half / 8)))-$((half + i * (half / 8) + 511))" >"$1/badblocks"
	done
}
fio_region() { # the fio arguments that keep the jobs where DEV_BADBLOCKS allows
	[ "$DEV_BADBLOCKS" = 1 ] && echo "--size=$((SIZE / 2))M"
	return 0
}
fio_sync() { # the fio arguments of SYNC
	case $SYNC in
	fsync) echo --fsync=32 ;;
	fua) echo --sync=dsync ;;
	esac
}

# setting_group NAME: the devices and points of a group of BENCH_SETTINGS,
# each a setting of null_blk that changes the data path: DEV_* (above),
# GROUP_MEM and GROUP_CM (memory_backed and irqmode), and GROUP_POINTS,
# RW:BS:IODEPTH:NUMJOBS[:SYNC] each (SYNC none, fsync or fua), fewer in the
# quick mode.
setting_group() {
	DEV_CACHE=0 DEV_BADBLOCKS=0 DEV_MBPS=0 DEV_BLOCKING=0 DEV_SHARED=0
	GROUP_MEM=1 GROUP_CM=0
	local quick
	case $1 in
	cache16)
		# A cache of a sixteenth of the working set: writes find it full.
		DEV_CACHE=16
		GROUP_POINTS="randwrite:4k:1:1 randwrite:4k:32:1 randwrite:64k:8:1
			randread:4k:32:1 randwrite:4k:32:1:fsync randwrite:4k:32:1:fua"
		quick=randwrite:4k:32:1
		;;
	cache512)
		# A cache larger than the working set: everything stays cached.
		DEV_CACHE=512
		GROUP_POINTS="randwrite:4k:32:1 randwrite:64k:8:1 randread:4k:32:1
			randwrite:4k:32:1:fsync"
		quick=randwrite:4k:32:1
		;;
	badblocks)
		DEV_BADBLOCKS=1
		GROUP_POINTS="randread:4k:32:1 randwrite:4k:32:1"
		quick=randwrite:4k:32:1
		;;
	mbps)
		# Far above what the VM moves (C takes at most 40960).
		DEV_MBPS=40960 GROUP_MEM=0 GROUP_CM=1
		GROUP_POINTS="randread:4k:32:1 randread:64k:32:1"
		quick=randread:4k:32:1
		;;
	blocking)
		DEV_BLOCKING=1 GROUP_MEM=0
		GROUP_POINTS="randread:4k:32:1 randwrite:4k:32:2"
		quick=randread:4k:32:1
		;;
	sharedtags)
		# Two devices of each driver on its module-wide tag set, one fio
		# job on both.
		DEV_SHARED=1 GROUP_MEM=0 GROUP_CM=1
		GROUP_POINTS="randread:4k:32:1 randread:4k:32:2"
		quick=randread:4k:32:1
		;;
	*)
		echo "BENCH_SETTINGS: cache16, cache512, badblocks, mbps, blocking," \
			"sharedtags or none, not $1" >&2
		exit 2
		;;
	esac
	[ "$MODE" != quick ] || GROUP_POINTS=$quick
}

# make_zoned_dev DIR NAME MEMORY ZONES: a zoned device of ZONES zones of 1
# MiB (ZONES 0: SIZE MiB in zones of 4 MiB), otherwise as make_dev with
# softirq completions.
make_zoned_dev() {
	mkdir "$1"
	echo 1 >"$1/zoned"
	if [ "$4" = 0 ]; then
		echo "$SIZE" >"$1/size"
		echo 4 >"$1/zone_size"
	else
		echo "$4" >"$1/size"
		echo 1 >"$1/zone_size"
	fi
	echo 4096 >"$1/blocksize"
	echo 256 >"$1/hw_queue_depth"
	nproc >"$1/submit_queues"
	echo "$3" >"$1/memory_backed"
	echo 0 >"$1/poll_queues"
	echo 1 >"$1/irqmode"
	echo 1 >"$1/power"
	echo none >"/sys/block/$2/queue/scheduler"
	echo 0 >"/sys/block/$2/queue/iostats"
}

# report_point FILE: REPS pairs of timed loops of zone reports (blkzone
# report of every zone, ZREPORTS times), alternating the devices as
# run_point does, written into FILE as fio would report them: an "I/O" is a
# zone reported.
ZREPORTS=20
report_point() {
	local file=$1 i dev name zones t jobs=() order
	zones=$(blkzone report /dev/bench_c | wc -l)
	for ((i = 1; i <= REPS; i++)); do
		if ((i % 2)); then order="c r"; else order="r c"; fi
		for name in $order; do
			dev=bench_c
			[ "$name" = r ] && dev=bench
			t=$({ TIMEFORMAT='%3R %3U %3S'; time for ((k = 0; k < ZREPORTS; k++)); do
				blkzone report /dev/$dev >/dev/null; done; } 2>&1)
			jobs+=("$(awk -v n="$name$i" -v z=$((zones * ZREPORTS)) -v t="$t" 'BEGIN {
				split(t, f, " "); r = f[1] > 0 ? f[1] : 0.001
				printf "{\"jobname\": \"%s\", \"read\": {\"total_ios\": %d, \"iops\": %f}, ", n, z, z / r
				printf "\"write\": {\"total_ios\": 0, \"iops\": 0}, "
				printf "\"usr_cpu\": %f, \"sys_cpu\": %f, \"job_runtime\": %d}", f[2] / r * 100, f[3] / r * 100, r * 1000
			}')")
		done
	done
	(IFS=,; echo "{\"jobs\": [${jobs[*]}]}") >"$file"
}

# run_point FILE RW BS IODEPTH NUMJOBS POLL [FIO ARGS...]: one fio run alternating the
# two devices (null_blk's and RDEV, rnull's unless calibrating), REPS jobs
# each, JSON into FILE. The order within a pair
# alternates too (C R, R C, C R, ...), so that neither driver always runs
# first. Jobs are threads: a process per job took about 0.2 s more each to
# start under TCG.
run_point() {
	local file=$1 i c r jobs=() cdevs=/dev/bench_c rdevs=/dev/$RDEV
	# On a shared tag set, each job does its I/O on the driver's two devices.
	if [ "$DEV_SHARED" = 1 ]; then
		cdevs+=:/dev/bench_c2 rdevs+=:/dev/${RDEV}2
	fi
	for ((i = 1; i <= REPS; i++)); do
		c=(--name=c$i --filename=$cdevs --stonewall)
		r=(--name=r$i --filename=$rdevs --stonewall)
		if ((i % 2)); then jobs+=("${c[@]}" "${r[@]}"); else jobs+=("${r[@]}" "${c[@]}"); fi
	done
	fio --output-format=json --output="$file" "${FIO[@]}" --hipri="$6" --time_based \
		--runtime="${RUNTIME_MS}ms" --rw="$2" --bs="$3" --iodepth="$4" --numjobs="$5" \
		--group_reporting "${@:7}" "${jobs[@]}" >/dev/null
}

# fill DEV: writes all of /dev/DEV, so that reads of a memory-backed disk
# find data everywhere.
fill() {
	fio --name=fill --filename="/dev/$1" --ioengine=io_uring --direct=1 \
		--rw=write --bs=1M --iodepth=8 >/dev/null
}

# progress N FILE [A/A]: a line for point N, with the mean IOPS of each
# driver (jq is much quicker to start than python in the VM).
progress() {
	local second=rnull
	[ -z "$3" ] || second=null_blk_a
	jq -r --arg n "$1" --arg of "$points" --arg name "$(basename "$2" .json)${3:+ $3}" \
		--arg second "$second" '
		def mean(p): [.jobs[] | select(.jobname | test(p)) |
			.read.iops + .write.iops] | add / length;
		mean("^c") as $c | mean("^r") as $r |
		"[\($n)/\($of)] \($name): null_blk \($c | floor) \($second) \($r | floor) IOPS," +
		" ratio \($r / $c * 1000 | round / 1000)"' "$2"
}

# For bench/insn.sh: BENCH_INSN_DRIVER (null_blk or rnull) names the one
# device to make, set up with the first value of each setting (BENCH_RW
# zwrite: a zoned device, as the zwrite points); it is filled if
# memory-backed and not zoned, fio does BENCH_INSN_IOS requests on it, and the kernel's
# symbols are saved in OUT.
if [ -n "${BENCH_INSN_DRIVER:-}" ]; then
	mem=$(first "$MEMS") cm=$(first "$CMS")
	if [ -n "${BENCH_SETTING:-}" ]; then
		# The group's devices, memory backing and completion.
		setting_group "$BENCH_SETTING"
		mem=$GROUP_MEM cm=$GROUP_CM
	fi
	case $BENCH_INSN_DRIVER in
	null_blk) dev=bench_c dir=$CCFG ;;
	rnull) dev=bench dir=$RCFG ;;
	*)
		echo "BENCH_INSN_DRIVER must be null_blk or rnull" >&2
		exit 2
		;;
	esac
	# Huge pages the guest may make or not, when fio faults its memory in,
	# would make the counts of two boots differ.
	thp=/sys/kernel/mm/transparent_hugepage/enabled
	if [ -w $thp ]; then echo never >$thp; fi
	rw=$(first "$RWS") zbd=()
	if [ "$rw" = zwrite ]; then
		# As the zwrite points: sequential writes to a zoned device (of
		# 4 MiB zones, softirq completion), fio resetting the zones it
		# finds full; their memory is freed and allocated again.
		make_zoned_dev "$dir" $dev "$mem" 0
		rw=write zbd=(--zonemode=zbd)
	else
		make_dev "$dir" $dev "$mem" "$cm"
		if [ "$mem" = 1 ]; then fill $dev; fi
		mark_bad "$dir"
	fi
	# shellcheck disable=SC2046
	fio --name=insn --filename=/dev/$dev "${FIO[@]}" "${zbd[@]}" $(fio_region) $(fio_sync) \
		--hipri="$([ "$cm" = poll ] && echo 1 || echo 0)" --rw="$rw" \
		--bs="$(first "$BSS")" --iodepth="$(first "$QDS")" --numjobs="$(first "$NJS")" \
		--number_ios="${BENCH_INSN_IOS:?}" --io_size=1T >/dev/null
	mkdir -p "$OUT"
	check_log "the counted run"
	cat /proc/kallsyms >"$OUT/kallsyms"
	exit 0
fi

mkdir -p "$OUT/raw"
{
	echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on Linux $(uname -r)," \
		"$(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1))" \
		"${RNULL_IN_VM:+in the QEMU test VM}; mode $MODE, $REPS pairs of runs" \
		"of ${RUNTIME} s per point, devices of $SIZE MiB."
	[ "$AA" = 0 ] || echo "A/A run (BENCH_AA=1): the \"rnull\" columns are a second" \
		"null_blk device."
	[ "$CALIBRATE" = 0 ] || echo "A/A calibration in the same boot: after the points of" \
		"each memory_backed/completion pair, a second null_blk device in rnull's place."
} >"$OUT/info.md"

# measured BS MEMORY COMPLETION: whether the matrix has points of that block
# size with that memory backing and completion.
measured() {
	[ "$3" != poll ] || in_list "$1" "$POLL_BS" || [ "$POLL_BS" = all ] || return 1
	[ "$2" = 1 ] || in_list "$1" "$NOMEM_BS" || [ "$NOMEM_BS" = all ]
}
points=0
for cm in $(list "$CMS"); do
	for bs in $(list "$BSS"); do
		for mem in $(list "$MEMS"); do
			measured "$bs" "$mem" "$cm" || continue
			points=$((points + $(list "$RWS" | wc -w) * $(list "$QDS" | wc -w) *
				$(list "$NJS" | wc -w)))
		done
	done
done
[ "$SETTINGS" != none ] || SETTINGS=
# (Each group is looked at now: a misspelt one fails before any point runs.)
for g in $(list "$SETTINGS"); do
	setting_group "$g"
	points=$((points + $(wc -w <<<"$GROUP_POINTS")))
done
plain_settings
if [ "$CALIBRATE" = 1 ]; then
	aa_points=$(($(list "$MEMS" | wc -w) * $(list "$CMS" | wc -w) * $(list "$NJS" | wc -w)))
fi
for z in $(list "$ZONED"); do
	case $z in
	zwrite) points=$((points + 2 * 2 * $(list "$ZBSS" | wc -w))) ;;
	zreport) points=$((points + 1)) ;;
	esac
done
points=$((points + ${aa_points:-0}))
echo "rnull vs null_blk: $points points (${aa_points:-no} A/A), $REPS x ${RUNTIME} s per" \
	"driver and point; results in $OUT"

done_points=0
# point_done FILE [A/A]: counts the point measured into FILE, checks the
# kernel log and prints its progress line.
point_done() {
	done_points=$((done_points + 1))
	check_log "$(basename "$1" .json)${2:+ ($2)}"
	progress "$done_points" "$1" "${2:-}"
}
for mem in $(list "$MEMS"); do
	for cm in $(list "$CMS"); do
		remove_devs
		make_devs $CCFG bench_c "$mem" "$cm"
		make_devs $RCFG bench "$mem" "$cm"
		if [ "$mem" = 1 ]; then
			fill bench_c
			fill bench
		fi
		mark_bad $CCFG
		mark_bad $RCFG
		check_log "making the devices (memory_backed=$mem, completion $cm)"
		for rw in $(list "$RWS"); do
			for bs in $(list "$BSS"); do
				measured "$bs" "$mem" "$cm" || continue
				for qd in $(list "$QDS"); do
					for nj in $(list "$NJS"); do
						file=$OUT/raw/$rw-$bs-$qd-$nj-$mem-$cm.json
						# shellcheck disable=SC2046
						run_point "$file" "$rw" "$bs" "$qd" "$nj" \
							"$([ "$cm" = poll ] && echo 1 || echo 0)" \
							$(fio_region) $(fio_sync)
						point_done "$file"
					done
				done
			done
		done
		[ "$CALIBRATE" = 1 ] || continue
		# The A/A points of the group, on a null_blk device in rnull's place.
		remove_dev $RCFG
		remove_dev $RCFG2
		make_devs $ACFG bench_a "$mem" "$cm"
		if [ "$mem" = 1 ]; then fill bench_a; fi
		mark_bad $ACFG
		check_log "making the A/A device (memory_backed=$mem, completion $cm)"
		mkdir -p "$OUT/aa"
		rw=$(first "$RWS") bs=$(first "$BSS") qd=$(list "$QDS" | awk '{ print $NF }')
		RDEV=bench_a
		for nj in $(list "$NJS"); do
			file=$OUT/aa/$rw-$bs-$qd-$nj-$mem-$cm.json
			# shellcheck disable=SC2046
			run_point "$file" "$rw" "$bs" "$qd" "$nj" "$([ "$cm" = poll ] && echo 1 || echo 0)" \
				$(fio_region) $(fio_sync)
			point_done "$file" A/A
		done
		RDEV=bench
	done
done

# The groups of BENCH_SETTINGS: devices made with one more setting, filled
# if memory-backed. A point's file name ends with the group's name (and the
# fio runs' extra, fsync or fua), the setting field of bench/report.py.
for g in $(list "$SETTINGS"); do
	setting_group "$g"
	mem=$GROUP_MEM cm=$GROUP_CM
	remove_devs
	make_devs $CCFG bench_c "$mem" "$cm"
	make_devs $RCFG bench "$mem" "$cm"
	if [ "$mem" = 1 ]; then
		fill bench_c
		fill bench
	fi
	mark_bad $CCFG
	mark_bad $RCFG
	check_log "making the devices of $g"
	for point in $GROUP_POINTS; do
		IFS=: read -r rw bs qd nj SYNC <<<"$point"
		SYNC=${SYNC:-none}
		setting=$g
		[ "$SYNC" = none ] || setting+=+$SYNC
		file=$OUT/raw/$rw-$bs-$qd-$nj-$mem-$cm-$setting.json
		# shellcheck disable=SC2046
		run_point "$file" "$rw" "$bs" "$qd" "$nj" 0 $(fio_region) $(fio_sync)
		point_done "$file"
	done
done
plain_settings

# Zoned points: sequential writes in zbd mode (fio resets full zones, so
# that a timed run can go on), each job in a part of its own; zone reports.
for z in $(list "$ZONED"); do
	case $z in
	none) continue ;;
	zwrite)
		for mem in 0 1; do
			remove_devs
			make_zoned_dev $CCFG bench_c "$mem" 0
			make_zoned_dev $RCFG bench "$mem" 0
			check_log "making zoned devices (memory_backed=$mem)"
			for bs in $(list "$ZBSS"); do
				for nj in 1 2; do
					file=$OUT/raw/zwrite-$bs-1-$nj-$mem-1.json
					run_point "$file" write "$bs" 1 "$nj" 0 --zonemode=zbd \
						--size=$((SIZE / nj))M --offset_increment=$((SIZE / nj))M
					point_done "$file"
				done
			done
		done
		;;
	zreport)
		remove_devs
		make_zoned_dev $CCFG bench_c 0 4096
		make_zoned_dev $RCFG bench 0 4096
		file=$OUT/raw/zreport-all-1-1-0-1.json
		report_point "$file"
		point_done "$file"
		;;
	*)
		echo "BENCH_ZONED: zwrite, zreport or none" >&2
		exit 2
		;;
	esac
done

echo
python3 "$here/report.py" "$OUT"
echo "results: $OUT (table.md, ratios.svg, points.csv, raw/)"
