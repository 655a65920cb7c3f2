#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Usage: vm.sh SCRIPT
# Boots the built kernel in QEMU (2 vCPUs), runs SCRIPT inside as root with
# the host's file system readable and exits with SCRIPT's status. A guest that
# prints nothing for $RNULL_VM_IDLE seconds, or runs longer than
# $RNULL_VM_TIMEOUT, is killed and the tail of its console shown. A kernel
# log with a warning, BUG, Oops, lockdep or KASAN report fails the run.
# $RNULL_VM_OUT, if set, is a host directory the guest may write to, at the
# same path. $RNULL_VM_QEMU_ARGS are more arguments for QEMU (a plugin, for
# bench/insn.sh).
source "$(dirname "$0")/common.sh"

script=${1:?usage: vm.sh /abs/path/to/script}
script=$(realpath "$script")
if [ -n "${RNULL_VM_OUT:-}" ]; then
	mkdir -p "$RNULL_VM_OUT"
	RNULL_VM_OUT=$(realpath "$RNULL_VM_OUT")
fi
[ -x "$script" ] || die "$script is not an executable file"
IDLE=${RNULL_VM_IDLE:-300}
TIMEOUT=${RNULL_VM_TIMEOUT:-3600}
CPUS=${RNULL_VM_CPUS:-2}
MEM=${RNULL_VM_MEM:-2G}
NUMA=${RNULL_VM_NUMA:-1}
# The settings of the VM and of the tests it runs, checked before it boots.
check_setting() { # NAME VALUE PATTERN WHAT
	[[ $2 =~ ^($3)$ ]] || die "$1: '$2' is not $4"
}
check_setting RNULL_VM_IDLE "$IDLE" '[1-9][0-9]*' "a number of seconds"
check_setting RNULL_VM_TIMEOUT "$TIMEOUT" '[1-9][0-9]*' "a number of seconds"
check_setting RNULL_VM_CPUS "$CPUS" '[1-9][0-9]*' "a number of CPUs"
check_setting RNULL_VM_MEM "$MEM" '[1-9][0-9]*[MG]' "a size in M or G (2G)"
check_setting RNULL_VM_NUMA "$NUMA" '[1-9]' "a number of NUMA nodes (1-9)"
((NUMA <= CPUS)) || die "RNULL_VM_NUMA ($NUMA) must not exceed RNULL_VM_CPUS ($CPUS)"
check_setting RNULL_VM_ACCEL "${RNULL_VM_ACCEL:-auto}" 'auto|kvm|tcg' "auto, kvm or tcg"
check_setting RNULL_FUZZ_SEED "${RNULL_FUZZ_SEED:-0}" '[0-9]+' "a seed (a number)"
check_setting RNULL_FUZZ_OPS "${RNULL_FUZZ_OPS:-1}" '[1-9][0-9]*' "a number of operations"
check_setting RNULL_FUZZ_SECONDS "${RNULL_FUZZ_SECONDS:-1}" '[1-9][0-9]*' "a number of seconds"
check_setting RNULL_FUZZ_TRACE "${RNULL_FUZZ_TRACE:-0}" '0|1' "0 or 1"
# A regular expression bash cannot compile would select nothing, silently.
if [ -n "${RNULL_TESTS:-}" ]; then
	rc=0
	[[ x =~ $RNULL_TESTS ]] || rc=$?
	((rc != 2)) || die "RNULL_TESTS: '$RNULL_TESTS' is not a valid regular expression"
fi

kernel=$OUT/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "no kernel at $kernel: run 'make build' first"

# A minimal initramfs: busybox and our init, nothing else.
initrd=$CACHE/initramfs.cpio
if [ ! -f "$initrd" ] || [ "$REPO/scripts/init.sh" -nt "$initrd" ] ||
	! cmp -s "$REPO/scripts/init.sh" "$CACHE/initramfs/init" 2>/dev/null; then
	rm -rf "$CACHE/initramfs"
	mkdir -p "$CACHE/initramfs/bin"
	cp /bin/busybox "$CACHE/initramfs/bin/busybox"
	cp "$REPO/scripts/init.sh" "$CACHE/initramfs/init"
	(cd "$CACHE/initramfs" && find . | cpio -o -H newc --quiet) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
fi

numa=()
smp=$CPUS
if ((NUMA > 1)); then
	# One socket per node: CPUs of one socket on two nodes make the kernel
	# warn about the cache topology.
	smp="$CPUS,sockets=$NUMA,cores=$((CPUS / NUMA)),threads=1"
	mem_mb=$(($(numfmt --from=iec "$MEM") / 1048576 / NUMA))
	for ((n = 0; n < NUMA; n++)); do
		numa+=(-object "memory-backend-ram,id=mem$n,size=${mem_mb}M"
			-numa "node,nodeid=$n,memdev=mem$n,cpus=$((n * CPUS / NUMA))-$(((n + 1) * CPUS / NUMA - 1))")
	done
fi

# One VM at a time: two would share the console log below and the two
# cores of the machines this runs on.
exec 9>"$CACHE/vm.lock"
if ! flock -n 9; then
	echo "vm: another VM of this cache is running; waiting for it" >&2
	flock 9
fi

# KVM hangs on some hosts (it does on the machines this was written on), so
# it is used only once a probe boot has shown that it works.
accel=${RNULL_VM_ACCEL:-auto}
qemu_args() {
	local a=$1
	# Without 5-level paging: 7.3's identify_cpu() clears the boot CPU's
	# feature words before reading them again, so an interrupt in that
	# window sees LA57 off, and KASAN takes the direct map for a wild
	# address (a false "wild-memory-access" in handle_edge_irq at boot).
	# Without ERMS ("enhanced rep movsb/stosb"): with it the kernel clears
	# pages and copies to and from user space with rep movsb/stosb, which
	# TCG executes one byte per step; without it, with rep movsq/stosq or
	# loops of 8-byte moves. Writing 300 MiB to tmpfs takes 0.5-0.8 s
	# instead of 1.7-2.5 s, and the tests that write much to memory-backed
	# disks a fifth to a third less time (small_cache_under_heavy_writes
	# 4.2-4.7 s instead of 7.2 s).
	local cpu=max,la57=off,erms=off
	[ "$a" = kvm ] && cpu=host
	echo -accel "$a" -cpu "$cpu"
}

# The guest's console as the user should see it: without carriage returns,
# the harness's markers (which may end a line the script left unterminated)
# and the kernel's goodbye.
console_filter() {
	tr -d '\r' | sed -E -e '/^RNULL_[A-Z_]+(=[0-9]+)?$/d' \
		-e 's/RNULL_[A-Z_]+(=[0-9]+)?$//' -e '/^\[ *[0-9.]+\] reboot: /d'
}

run_qemu() { # accel script log
	# A soft lockup or a task blocked for two minutes panics, which ends the
	# run at once with the stack on the console (a hang otherwise keeps
	# printing and runs into the timeout).
	local append="console=ttyS0 panic=-1 oops=panic softlockup_panic=1 hung_task_panic=1"
	append+=" loglevel=1 log_buf_len=4M"
	# The TSC as the clock: under TCG the kernel finds the CPUs' TSCs out of
	# step and falls back to the HPET, whose every read is an emulated device
	# access (the block layer and fio read the clock for each request). TCG
	# derives every CPU's TSC from the host's.
	append+=" tsc=reliable"
	# Expedited RCU grace periods: removing a disk waits for several, which
	# take a few of the emulated machine's slow ticks each otherwise.
	append+=" rcupdate.rcu_expedited=1"
	append+=" RNULL_SCRIPT=$2 RNULL_MODULES=$OUT/mods RNULL_CWD=$(pwd)"
	append+=" RNULL_SCRIPT_DIR=$(dirname "$2")"
	append+=" RNULL_REPO=$REPO RNULL_CACHE_DIR=$CACHE"
	local out=()
	if [ -n "${RNULL_VM_OUT:-}" ]; then
		append+=" RNULL_OUT=$RNULL_VM_OUT"
		out=(-fsdev "local,id=out,path=$RNULL_VM_OUT,security_model=none"
			-device virtio-9p-pci,fsdev=out,mount_tag=rnullout)
	fi
	# Settings of the tests and the benchmark reach the guest's script.
	local v
	# RNULL_FIO=1: the tests' static fio (scripts/setup.sh), by its path.
	[ "${RNULL_FIO:-}" != 1 ] || RNULL_FIO=$FIO_STATIC
	for v in $(compgen -e | grep -E '^(RNULL_TESTS|RNULL_HOST_RESULTS|RNULL_KTAP|RNULL_FIO|RNULL_FUZZ_[A-Z_]+|BENCH_[A-Z_]+)$' || true); do
		append+=" $v=${!v// /}"
	done
	# RNULL_VM_QEMU_ARGS is split into words, as on a command line.
	# shellcheck disable=SC2046,SC2086
	qemu-system-x86_64 $(qemu_args "$1") -smp "$smp" -m "$MEM" "${numa[@]}" \
		${RNULL_VM_QEMU_ARGS:-} -nodefaults -no-reboot -display none -serial stdio \
		-kernel "$kernel" -initrd "$initrd" -append "$append" \
		-fsdev local,id=host,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=host,mount_tag=hostroot "${out[@]}" \
		</dev/null >"$3" 2>&1 &
	local pid=$! start=$SECONDS size=-1 still=$SECONDS shown=0
	# Looked at five times a second, so that the end of the run is noticed
	# at once: a stat, and a wc and a sed when the guest printed something.
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.2
		local now
		now=$(stat -c %s "$3")
		if [ "$now" != "$size" ]; then
			size=$now
			still=$SECONDS
			if [ -n "${4:-}" ]; then
				# Stream the guest's console (without carriage returns).
				local lines
				lines=$(wc -l <"$3")
				if ((lines > shown)); then
					sed -n "$((shown + 1)),${lines}p" "$3" | console_filter
					shown=$lines
				fi
			fi
		fi
		if ((SECONDS - still > IDLE || SECONDS - start > TIMEOUT)); then
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null || true
			echo "RNULL_VM_KILLED after $((SECONDS - start)) s" >>"$3"
			return
		fi
	done
	wait "$pid" 2>/dev/null || true
	if [ -n "${4:-}" ]; then
		tail -n +"$((shown + 1))" "$3" | console_filter
	fi
}

if [ "$accel" = auto ]; then
	accel=tcg
	if [ -w /dev/kvm ]; then
		probe=$CACHE/kvm-probe
		if [ ! -f "$probe" ]; then
			log "probing whether KVM works here (once)"
			IDLE=30 TIMEOUT=60 run_qemu kvm /bin/true "$CACHE/kvm-probe.log"
			if grep -q 'RNULL_EXIT=0' "$CACHE/kvm-probe.log"; then
				echo kvm >"$probe"
			else
				echo tcg >"$probe"
			fi
		fi
		accel=$(cat "$probe")
	fi
fi

# The time the hypervisor gave this host's CPUs to other machines (steal),
# in hundredths of a second. The VM's times grow with it: the memory tests
# took 77 s with 11 s of steal, 59 s with under 1 s, one run after the other.
host_steal() { awk '/^cpu / { print $9 }' /proc/stat; }

console=$CACHE/console.log
steal=$(host_steal) started=$SECONDS
run_qemu "$accel" "$script" "$console" stream
steal=$(($(host_steal) - steal))
((steal < 100)) ||
	echo "vm: the host's CPUs lost $((steal / 100)) s to other machines (steal) during" \
		"this run of $((SECONDS - started)) s" >&2

result=$(tr -d '\r' <"$console" | sed -n 's/.*RNULL_EXIT=\([0-9]*\)$/\1/p' | tail -n 1)
if [ -z "$result" ]; then
	echo "vm: the guest did not finish; last console lines:" >&2
	tr -d '\r' <"$console" | tail -n 60 >&2
	exit 125
fi
if grep -q 'RNULL_KERNEL_LOG_DIRTY' "$console"; then
	echo "vm: the guest's kernel log has warnings or errors (see above)" >&2
fi
exit "$result"
