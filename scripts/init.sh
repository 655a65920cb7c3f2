#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the test VM. Builds a root from the host's file system (read-only
# over virtio 9p, with a tmpfs overlay for writes), binds the freshly built
# modules into it, runs $RNULL_SCRIPT there as root and powers off. The host
# side (scripts/vm.sh) reads the markers printed on the console.
# shellcheck shell=sh

bb=/bin/busybox
$bb mkdir -p /proc /sys /dev /host /rw /root
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev

fail() {
	echo "RNULL_VM_ERROR: $*"
	echo "RNULL_EXIT=125"
	$bb reboot -f
}

$bb mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /host ||
	fail "cannot mount the host root over 9p"
$bb mount -t tmpfs -o mode=0755 tmpfs /rw
$bb mkdir -p /rw/upper /rw/work
$bb mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work \
	overlay /root || fail "cannot mount the overlay root"

kver=$($bb uname -r)
$bb mkdir -p "/root/lib/modules/$kver"
$bb mount --bind "/host$RNULL_MODULES/lib/modules/$kver" "/root/lib/modules/$kver" ||
	fail "modules for $kver not found under $RNULL_MODULES"

$bb mount -t proc proc /root/proc
$bb mount -t sysfs sysfs /root/sys
$bb mount -t devtmpfs devtmpfs /root/dev
$bb mkdir -p /root/dev/shm /root/dev/pts
$bb mount -t tmpfs tmpfs /root/dev/shm
$bb mount -t devpts devpts /root/dev/pts
$bb mount -t tmpfs tmpfs /root/tmp
$bb mount -t tmpfs tmpfs /root/run
$bb mount -t configfs configfs /root/sys/kernel/config
$bb mount -t debugfs debugfs /root/sys/kernel/debug
$bb hostname rnull-vm

# The script's directory, the working directory, the repository and the
# harness's cache (the tests' fio is there) stay visible even where the
# guest mounts its own file systems (/tmp, /run).
for d in "$RNULL_SCRIPT_DIR" "$RNULL_CWD" "$RNULL_REPO" "$RNULL_CACHE_DIR"; do
	case "$d" in
	/tmp | /tmp/* | /run | /run/*)
		$bb mkdir -p "/root$d"
		$bb mount --bind "/host$d" "/root$d"
		;;
	esac
done

# The directory the host lets the guest write to, at its host path (after
# the binds above: it may lie in one of them).
if [ -n "$RNULL_OUT" ]; then
	$bb mkdir -p "/root$RNULL_OUT"
	$bb mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rnullout "/root$RNULL_OUT" ||
		fail "cannot mount $RNULL_OUT over 9p"
fi

# Only critical kernel messages reach the console (panics, lockups); the
# rest stays in dmesg, which is checked below. (During boot, only
# emergencies: the kernel crate's doc tests print some messages on purpose.)
echo 3 >/proc/sys/kernel/printk

# No address-space randomization: QEMU's TCG finds the code it translated
# for a page again by the page's virtual address, so a shared library that
# every program maps at a new address is translated anew at every start.
# Without it a dynamically linked program starts in about 12 ms rather than
# 40 (blkzone, started hundreds of times by the zoned tests; cmp; mkfs).
echo 0 >/proc/sys/kernel/randomize_va_space

# Under TCG, starting a dynamically linked program costs about 30 ms (the
# loader's relocations are emulated), a static one about 5 ms: the common
# text tools are taken from the host's static busybox, ahead of PATH (for
# the project's scripts, below), and so
# are dmesg (read and cleared before every test, and by the checks at the
# end, which read it with busybox already) and dd (started hundreds of times;
# busybox's takes every flag the tests give it, and words its errors as GNU
# dd does, "dd: error writing '/dev/d': Input/output error"). Tools whose
# messages or options the tests depend on (modprobe, fio, ...) are not among
# them.
fast=/root/run/rnull-bin
$bb mkdir -p $fast
for a in cat ls grep sed tr wc head tail cut sort uniq xargs seq sleep \
	basename dirname mkdir rmdir nproc rm cp mv touch env expr readlink dmesg dd; do
	$bb ln -s /bin/busybox $fast/$a
done

# Only the project's own scripts (the tests, the benchmark) get them: a
# script of the user's (make vm SCRIPT=...) runs with the guest's own
# tools, whose options it may rely on (GNU grep's --quiet, ...).
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
case $RNULL_SCRIPT in
"$RNULL_REPO"/tests/* | "$RNULL_REPO"/bench/*) path=/run/rnull-bin:$path ;;
esac

echo "RNULL_VM_READY"
$bb chroot /root /usr/bin/env -i HOME=/root TERM=dumb \
	PATH="$path" \
	RNULL_IN_VM=1 RNULL_REPO="$RNULL_REPO" \
	$($bb env | $bb grep -E '^(RNULL_TESTS|RNULL_HOST_RESULTS|RNULL_KTAP|RNULL_FIO|RNULL_FUZZ_[A-Z_]+|BENCH_[A-Z_]+)=') \
	/bin/sh -c 'cd "$1" 2>/dev/null; shift; exec "$@"' sh "$RNULL_CWD" \
	"$RNULL_SCRIPT" </dev/console >/dev/console 2>&1
rc=$?

# Anything the kernel complained about fails the run, whatever the script said,
# except what a test announced as expected (tests/log-filter.awk).
# tests/run.sh moves the log to /tmp/rnull-kernel.log as it goes.
bad=$({ $bb cat /root/tmp/rnull-kernel.log 2>/dev/null; $bb dmesg; } |
	$bb awk -f "/host$RNULL_REPO/tests/log-filter.awk" |
	$bb grep -E -f "/host$RNULL_REPO/tests/log-bad.ere")
if [ -n "$bad" ]; then
	echo "RNULL_KERNEL_LOG_DIRTY"
	$bb dmesg | $bb tail -n 80
	[ "$rc" = 0 ] && rc=124
fi
$bb sync
echo "RNULL_EXIT=$rc"
$bb reboot -f
