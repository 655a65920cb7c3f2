#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Counts the instructions the test VM runs per request on rnull and on
# null_blk, by function: where rnull does more work than C, and in what.
#
# Under TCG, perf in the guest has no hardware counters and its samples land
# on the first instruction of QEMU's translated blocks, so its profiles
# cannot say where inside a driver the time goes. This counts instead: a QEMU
# plugin (bench/tbcount.c) counts the executions of every translated block
# while the guest, on one vCPU, makes one device of one driver (as
# bench/bench.sh does), fills it if memory-backed, and does N requests on it
# with fio. Four boots, N and 2N requests on each driver: the difference
# between the two boots of a driver is the cost of N requests, without the
# boot, the setup and the fill. bench/insn.py maps the blocks to the guest's
# symbols and writes the table.
#
# Settings (environment): one value each of BENCH_RW (randwrite), BENCH_BS
# (64k), BENCH_IODEPTH (1), BENCH_NUMJOBS (1), BENCH_MEMORY (1),
# BENCH_COMPLETION (0) and BENCH_SIZE, as for bench/bench.sh; the device's
# settings of a group of the benchmark, BENCH_SETTING (cache16, cache512,
# badblocks, mbps, blocking, sharedtags: its devices, memory backing and
# completion), or one by one: BENCH_CACHE, BENCH_BADBLOCKS, BENCH_MBPS,
# BENCH_BLOCKING, BENCH_SHARED_TAGS, and BENCH_SYNC (none, fsync, fua) for
# fio's writes; BENCH_INSN_IOS,
# N (20000); BENCH_OUT, the results directory (default: a new one in the
# cache); RNULL_VM_CPUS (1: with more, the counts are close but not exact).
source "$(dirname "$0")/../scripts/common.sh"

export BENCH_RW=${BENCH_RW:-randwrite} BENCH_BS=${BENCH_BS:-64k}
export BENCH_IODEPTH=${BENCH_IODEPTH:-1} BENCH_NUMJOBS=${BENCH_NUMJOBS:-1}
export BENCH_MEMORY=${BENCH_MEMORY:-1} BENCH_COMPLETION=${BENCH_COMPLETION:-0}
for v in BENCH_RW BENCH_BS BENCH_IODEPTH BENCH_NUMJOBS BENCH_MEMORY BENCH_COMPLETION; do
	[[ ${!v} != *,* ]] || die "$v: one value only"
done
IOS=${BENCH_INSN_IOS:-20000}
[[ $IOS =~ ^[1-9][0-9]*$ ]] || die "BENCH_INSN_IOS must be a positive number"
out=${BENCH_OUT:-$CACHE/insn/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")

# The plugin is built against the plugin API header of the QEMU installed
# here, taken from Debian's source of that QEMU.
plugin_header() {
	local dir=$CACHE/qemu-plugin version codename mirror
	version=$(dpkg-query -W -f='${source:Upstream-Version}' qemu-system-x86)
	if [ ! -s "$dir/$version/qemu-plugin.h" ]; then
		log "fetching the plugin header of QEMU $version (Debian source)"
		codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
		mirror=$(debian_mirror)
		private_apt "$dir/apt" "deb-src [signed-by=$DEBIAN_KEYRING] $mirror $codename main" >&2
		(cd "$dir/apt" && apt-get "${APT_OPTS[@]}" source -qq --download-only qemu) >&2
		local orig
		orig=$(ls "$dir"/apt/qemu_*.orig.tar.*)
		[[ $orig == */qemu_"$version".orig.* ]] ||
			die "Debian's source of QEMU is $orig, not $version as installed"
		mkdir -p "$dir/$version"
		tar -xf "$orig" -O --wildcards '*/include/qemu/qemu-plugin.h' \
			>"$dir/$version/qemu-plugin.h.tmp"
		mv "$dir/$version/qemu-plugin.h.tmp" "$dir/$version/qemu-plugin.h"
		rm -rf "$dir/apt"
	fi
	echo "$dir/$version"
}

include=$(plugin_header)
plugin=$CACHE/qemu-plugin/tbcount.so
if [ ! -f "$plugin" ] || [ "$REPO/bench/tbcount.c" -nt "$plugin" ] ||
	[ "$include/qemu-plugin.h" -nt "$plugin" ]; then
	log "building the QEMU plugin bench/tbcount.c"
	clang-$LLVM_VER -O2 -Wall -Werror -shared -fPIC -I"$include" \
		-o "$plugin" "$REPO/bench/tbcount.c"
fi

# The guest's clock advances by the instructions it runs (one nanosecond
# each) and skips idle time, so what runs for a time rather than a count
# (fio's calibration of its clock at start, the kernel's timers and its own
# calibrations) runs the same number of instructions in every boot. On the
# host's clock, fio's calibration alone moved a boot's user-space count by
# ten million instructions with the load of the host. Plugins need TCG.
ICOUNT="-icount shift=0,sleep=off"
export RNULL_VM_ACCEL=tcg

settings=
for v in BENCH_SETTING BENCH_CACHE BENCH_BADBLOCKS BENCH_MBPS BENCH_BLOCKING BENCH_SHARED_TAGS \
	BENCH_SYNC; do
	[ -z "${!v:-}" ] || settings+=" ${v#BENCH_}=${!v}"
done
echo "instructions per request, $BENCH_RW $BENCH_BS qd$BENCH_IODEPTH j$BENCH_NUMJOBS" \
	"memory_backed=$BENCH_MEMORY completion=$BENCH_COMPLETION${settings:+ (${settings# })}:" \
	"4 boots, results in $out"
for driver in null_blk rnull; do
	for n in "$IOS" $((2 * IOS)); do
		run=$out/$driver-$n
		mkdir -p "$run"
		log "$driver: $n requests"
		# A run whose kernel log has warnings fails (scripts/init.sh, and
		# bench.sh's INVALID file): its counts are not used.
		RNULL_VM_CPUS=${RNULL_VM_CPUS:-1} RNULL_VM_OUT=$run BENCH_OUT=$run BENCH_INSN_DRIVER=$driver \
			BENCH_INSN_IOS=$n RNULL_VM_QEMU_ARGS="-plugin $plugin,out=$run/blocks $ICOUNT" \
			"$REPO/scripts/vm.sh" "$REPO/bench/bench.sh" ||
			die "$run: the run failed; its counts are invalid${run:+ ($(head -n 1 "$run/INVALID" 2>/dev/null))}"
		[ -s "$run/blocks" ] && [ -s "$run/kallsyms" ] ||
			die "$run: the counts or the guest's symbols are missing"
	done
done
CXXFILT=llvm-cxxfilt-$LLVM_VER python3 "$REPO/bench/insn.py" "$out" "$IOS"
