# SPDX-License-Identifier: GPL-2.0
# Unloading a driver while something still uses it: an open disk, a mounted
# file system, a shell inside a configfs directory, an open parameter file.
# Each scenario runs on both drivers and must give null_blk's answers (rmmod
# refused while the user holds on, the module's reference count), then
# unload cleanly once the user is gone; the run's log check then finds the
# kernel log clean.
# shellcheck shell=bash

# The scenarios below print one line of answers each, which the tests
# compare between the drivers. DRIVER is rnull or null_blk; its module disk
# is rnullb0 or nullb0, its configfs directory $RCFG or $CCFG.
declare -A MODULE_DISK=([rnull]=rnullb0 [null_blk]=nullb0)
declare -A CONFIGFS_OF=([rnull]=$RCFG [null_blk]=$CCFG)

# rmmod_answer DRIVER: rmmod's answer (0 or the errno name) and, if the
# module is still there, its reference count.
rmmod_answer() {
	local r
	run_to r busybox rmmod "$1"
	if [ -d /sys/module/"$1" ]; then
		echo "$r refcnt=$(</sys/module/"$1"/refcnt)"
	else
		echo "$r"
	fi
}

# fd_op OP FD [ARG]: tests/fd.py on the descriptor FD that the shell holds
# (a report of zones, a read): prints its answer.
fd_op() { python3 "$RNULL_REPO/tests/fd.py" "$@"; }

# The module's own disk, open for reading.
open_module_disk() { # DRIVER
	local out
	[ "$(load "$1")" = 0 ] || { echo "load $1 failed"; return; }
	exec 3<"/dev/${MODULE_DISK[$1]}"
	out="open: $(rmmod_answer "$1")"
	exec 3<&-
	echo "$out; closed: $(rmmod_answer "$1")"
}

test_rmmod_with_the_module_disk_open() {
	local r c
	r=$(open_module_disk rnull)
	c=$(open_module_disk null_blk)
	expect_same "$r" "$c" "rmmod with /dev/<driver>b0 open, then closed"
	expect_eq "$r" "open: EAGAIN refcnt=1; closed: 0" "rmmod with rnullb0 open"
}

# A configfs disk, open for reading: configfs holds the module twice as long
# as the directory exists (for the subsystem and for the directory's item),
# and the open disk once more.
open_configfs_disk() { # DRIVER
	local dir=${CONFIGFS_OF[$1]}/u out
	[ "$(load "$1" nr_devices=0)" = 0 ] || { echo "load $1 failed"; return; }
	mkdir "$dir"
	echo 1 >"$dir"/power
	exec 3</dev/u
	out="open: $(rmmod_answer "$1")"
	exec 3<&-
	out+="; closed: $(rmmod_answer "$1")"
	rmdir "$dir"
	echo "$out; removed: $(rmmod_answer "$1")"
}

test_rmmod_with_a_configfs_disk_open() {
	local r c
	r=$(open_configfs_disk rnull)
	c=$(open_configfs_disk null_blk)
	expect_same "$r" "$c" "rmmod with a configfs disk open, closed, removed"
	expect_eq "$r" "open: EAGAIN refcnt=3; closed: EAGAIN refcnt=2; removed: 0" \
		"rmmod with a configfs disk open"
}

# The configfs directory of an open disk is removed: the disk is deleted,
# the open descriptor stays, and it alone must hold the module. The disk has
# no capacity left: a read through it reads nothing, a report of its zones
# reports none.
removed_while_open() { # DRIVER [ATTR=VALUE...]
	local driver=$1 dir=${CONFIGFS_OF[$1]}/u out a
	shift
	[ "$(load "$driver" nr_devices=0)" = 0 ] || { echo "load $driver failed"; return; }
	mkdir "$dir"
	for a in "$@"; do echo "${a#*=}" >"$dir/${a%%=*}"; done
	echo 1 >"$dir"/power
	exec 3</dev/u
	out="before: read=$(fd_op read 3)"
	[ -z "$*" ] || out+=" zones=$(fd_op report-zones 3)"
	rmdir "$dir"
	[ ! -e /sys/block/u ] || out+=" (disk still there after rmdir)"
	out+="; removed: $(rmmod_answer "$driver") read=$(fd_op read 3)"
	[ -z "$*" ] || out+=" zones=$(fd_op report-zones 3)"
	exec 3<&-
	echo "$out; closed: $(rmmod_answer "$driver")"
}

test_rmmod_with_a_removed_disk_open() {
	local r c
	r=$(removed_while_open rnull)
	c=$(removed_while_open null_blk)
	expect_same "$r" "$c" "rmmod with a disk open whose directory was removed"
	expect_eq "$r" "before: read=4096; removed: EAGAIN refcnt=1 read=0; closed: 0" \
		"rmmod with a removed rnull disk open"
}

test_zone_report_on_a_removed_disk() {
	local r c zoned=(size=64 zoned=1 zone_size=4 zone_nr_conv=1)
	r=$(removed_while_open rnull "${zoned[@]}")
	c=$(removed_while_open null_blk "${zoned[@]}")
	expect_same "$r" "$c" "BLKREPORTZONE through a descriptor kept across rmdir"
	expect_eq "$r" "before: read=4096 zones=16; removed: EAGAIN refcnt=1 read=0 zones=0; closed: 0" \
		"BLKREPORTZONE on a removed rnull disk"
}

# A file system mounted on the module's disk (memory-backed, so that it
# can be made and mounted).
mounted_module_disk() { # DRIVER
	local disk=${MODULE_DISK[$1]} mnt=/mnt/unload-$1 out
	[ "$(load "$1" memory_backed=1 gb=1)" = 0 ] || { echo "load $1 failed"; return; }
	mkdir -p "$mnt"
	mkfs.ext4 -q -F "/dev/$disk" || { echo "mkfs.ext4 failed"; return; }
	mount "/dev/$disk" "$mnt" || { echo "mount failed"; return; }
	trap 'umount "$mnt" 2>/dev/null' EXIT
	echo data >"$mnt/file"
	out="mounted: $(rmmod_answer "$1")"
	[ "$(<"$mnt/file")" = data ] || out+=" (file lost)"
	umount "$mnt"
	echo "$out; unmounted: $(rmmod_answer "$1")"
}

test_rmmod_with_a_mounted_file_system() {
	local r c
	r=$(mounted_module_disk rnull)
	c=$(mounted_module_disk null_blk)
	expect_same "$r" "$c" "rmmod with ext4 mounted on the module's disk"
	expect_eq "$r" "mounted: EAGAIN refcnt=1; unmounted: 0" "rmmod with ext4 on rnullb0"
}

# A shell whose working directory is a device's configfs directory; the
# directory is then removed under it, and the module unloaded, while the
# shell is still there.
shell_in_configfs_dir() { # DRIVER
	local dir=${CONFIGFS_OF[$1]}/u out v
	[ "$(load "$1" nr_devices=0)" = 0 ] || { echo "load $1 failed"; return; }
	mkdir "$dir"
	echo 1 >"$dir"/power
	cd "$dir"
	out="inside: $(rmmod_answer "$1")"
	v=$(run rmdir "$dir")
	out+="; rmdir=$v: $(rmmod_answer "$1")"
	# The shell is still in the removed directory, of an unloaded module.
	out+=" ls=$(run ls -A .) power=$(run cat power)"
	cd /
	echo "$out"
}

test_rmmod_with_a_shell_in_configfs() {
	local r c
	r=$(shell_in_configfs_dir rnull)
	c=$(shell_in_configfs_dir null_blk)
	expect_same "$r" "$c" "rmmod with a shell inside a device's configfs directory"
	expect_eq "$r" "inside: EAGAIN refcnt=2; rmdir=0: 0 ls=ENOENT power=ENOENT" \
		"rmmod with a shell inside $RCFG/u"
}

# Parameter files of /sys/module/<driver>/parameters held open across the
# unload: they do not hold the module, and read nothing once it is gone.
open_parameter_files() { # DRIVER
	local p=/sys/module/$1/parameters out
	[ "$(load "$1" nr_devices=0)" = 0 ] || { echo "load $1 failed"; return; }
	exec 3<"$p"/irqmode 4<"$p"/timeout
	out="open: $(rmmod_answer "$1")"
	out+=" irqmode=$(fd_op read 3) timeout=$(fd_op read 4)"
	exec 3<&- 4<&-
	echo "$out"
}

test_rmmod_with_parameter_files_open() {
	local r c
	r=$(open_parameter_files rnull)
	c=$(open_parameter_files null_blk)
	expect_same "$r" "$c" "rmmod with /sys/module/<driver>/parameters files open"
	expect_eq "$r" "open: 0 irqmode=ENODEV timeout=ENODEV" "rmmod with rnull's parameters open"
}

# configfs attribute files held open: each holds the module, as C's
# attributes do; a device's file stays open across its directory's
# removal, and reads nothing more.
open_configfs_files() { # DRIVER
	local dir=${CONFIGFS_OF[$1]}/u out
	[ "$(load "$1" nr_devices=0)" = 0 ] || { echo "load $1 failed"; return; }
	exec 3<"${CONFIGFS_OF[$1]}"/features
	out="features open: $(rmmod_answer "$1")"
	exec 3<&-
	mkdir "$dir"
	exec 4<"$dir"/size
	rmdir "$dir"
	out+="; size open, removed: $(rmmod_answer "$1") size=$(fd_op read 4)"
	exec 4<&-
	echo "$out; closed: $(rmmod_answer "$1")"
}

test_rmmod_with_configfs_files_open() {
	local r c
	r=$(open_configfs_files rnull)
	c=$(open_configfs_files null_blk)
	expect_same "$r" "$c" "rmmod with configfs attribute files open"
	expect_eq "$r" "features open: EAGAIN refcnt=1; size open, removed: EAGAIN refcnt=1 size=ENOENT; closed: 0" \
		"rmmod with rnull's configfs files open"
}
