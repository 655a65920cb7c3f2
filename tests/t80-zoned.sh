# SPDX-License-Identifier: GPL-2.0
# Zoned devices: the geometry checks of power-on, the zone state machine
# driven by writes and zone commands, read-only and offline zones, data of
# memory-backed zoned devices, each compared with null_blk.
# shellcheck shell=bash

# zdev DIR ATTR=VALUE...: a zoned device with the given settings (not powered).
zdev() {
	local dir=$1 a
	mkdir "$dir"
	echo 1 >"$dir"/zoned
	shift
	for a in "$@"; do echo "${a#*=}" >"$dir/${a%%=*}"; done
}

# zpair ATTR=VALUE...: zoned devices d (rnull) and c (null_blk) with the
# same settings, powered on.
zpair() {
	zdev $RCFG/d "$@"
	zdev $CCFG/c "$@"
	expect_eq "$(wr $RCFG/d/power 1)" 0 "rnull power-on ($*)" &&
		expect_eq "$(wr $CCFG/c/power 1)" 0 "null_blk power-on ($*)"
}

# zone_report DISK: the zones of DISK as blkzone reports them.
zone_report() { blkzone report /dev/"$1" 2>&1; }

# zone_settings DIR: the zone attributes of a device, as C rewrites them.
zone_settings() {
	local a
	for a in zoned zone_size zone_capacity zone_nr_conv zone_max_open zone_max_active \
		zone_append_max_sectors zone_full discard; do
		printf '%s=%s ' "$a" "$(<"$1/$a")"
	done
}

# zone_messages_to VAR DRIVER: what DRIVER logged since the kernel log was
# last read and cleared, without its prefix and the disk names, in VAR; the
# log goes on to the run's saved log (take_kernel_log_to). One dmesg, and bash
# for the rest: this runs twice for each power-on of t80's geometry test.
zone_messages_to() {
	local -n zone_messages=$1
	local log line msg
	take_kernel_log_to log
	zone_messages=
	while IFS= read -r line; do
		[[ $line =~ ^\[[^]]*\]\ $2:\ (.*)$ ]] || continue
		msg=${BASH_REMATCH[1]}
		[[ ! $msg =~ ^[a-z]*:\ using(.*)$ ]] || msg="DISK: using${BASH_REMATCH[1]}"
		[[ ! $msg =~ ^disk\ .*\ created$ ]] || continue
		zone_messages+="$msg|"
	done <<<"$log"
}

test_zoned_geometry_matches_null_blk() {
	local settings r c mr mc
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	# Each line: the settings of one power-on.
	while read -r settings; do
		zdev $RCFG/d $settings
		zdev $CCFG/c $settings
		save_kernel_log
		wr_to r $RCFG/d/power 1
		zone_messages_to mr rnull
		wr_to c $CCFG/c/power 1
		zone_messages_to mc null_blk
		expect_same "$r" "$c" "power-on with $settings" &&
			expect_same "$(zone_settings $RCFG/d)" "$(zone_settings $CCFG/c)" \
				"settings after power-on with $settings" &&
			expect_same "$mr" "$mc" "messages of power-on with $settings" || return 1
		if [ "$r" = 0 ]; then
			expect_same "$(disk_shape d)" "$(disk_shape c)" "disk with $settings" &&
				expect_same "$(zone_report d)" "$(zone_report c)" \
					"zones with $settings" &&
				expect_same "$(</sys/block/d/queue/zone_append_max_bytes)" \
					"$(</sys/block/c/queue/zone_append_max_bytes)" \
					"zone append limit with $settings" || return 1
		fi
		rmdir $RCFG/d $CCFG/c
	done <<-EOF
		size=64 zone_size=16
		size=64 zone_size=3
		size=64 zone_size=0
		size=8 zone_size=16
		size=64 zone_size=16 zone_capacity=32
		size=64 zone_size=16 zone_capacity=8
		size=60 zone_size=16 zone_capacity=8
		size=60 zone_size=16
		size=64 zone_size=8 zone_nr_conv=20
		size=64 zone_size=8 zone_nr_conv=2 zone_max_active=6
		size=64 zone_size=8 zone_nr_conv=2 zone_max_active=3 zone_max_open=5
		size=64 zone_size=8 zone_nr_conv=2 zone_max_open=6
		size=64 zone_size=8 zone_max_open=2 zone_max_active=4
		size=64 zone_size=8 zone_full=1 zone_capacity=4
		size=64 zone_size=8 blocksize=4096 zone_append_max_sectors=1001
		size=64 zone_size=8 zone_append_max_sectors=0
		size=64 zone_size=1 zone_append_max_sectors=100000
		size=64 zone_size=8 discard=1 memory_backed=1
		size=64 zone_size=8 discard=1
	EOF
}

# zone_op DISK OP ZONE: blkzone OP (open, close, finish, reset) on zone ZONE
# of DISK (1 MiB zones); prints 0 or the errno name.
zone_op() { run blkzone "$2" -o $(($3 * 2048)) -c 1 /dev/"$1"; }

# zone_write DISK ZONE KIB [OFFSET_KIB]: writes KIB KiB at OFFSET_KIB of zone
# ZONE (1 MiB zones), in one direct write; prints 0 or the errno name.
zone_write() {
	run dd if=/tmp/zone-pattern of=/dev/"$1" bs="$3"K count=1 oflag=direct,seek_bytes \
		seek=$((($2 * 1024 + ${4:-0}) * 1024)) conv=notrunc status=none
}

# zone_step OP ARGS...: does one step on both disks (d and c, or $ZD and
# $ZC if set): the same errno, then the same zones.
zone_step() {
	local fn=$1 r=${ZD:-d} c=${ZC:-c}
	shift
	expect_same "$($fn $r "$@")" "$($fn $c "$@")" "$fn $*" &&
		expect_same "$(zone_report $r)" "$(zone_report $c)" "zones after $fn $*"
}

# zone_states MB: the steps of the state machine on the zoned pair dMB and
# cMB, and a reset of all zones.
zone_states() {
	local ZD=d$1 ZC=c$1 step
	while read -r step; do
		# shellcheck disable=SC2086
		zone_step $step || return 1
	done <<-EOF
		zone_write 1 4
		zone_write 2 8
		zone_write 3 4
		zone_write 4 4
		zone_op open 4
		zone_op close 2
		zone_op close 2
		zone_op open 2
		zone_op open 2
		zone_op finish 1
		zone_write 4 4
		zone_op open 5
		zone_op reset 3
		zone_op open 5
		zone_op open 6
		zone_write 6 4
		zone_write 5 4 4
		zone_write 5 4
		zone_write 5 4
		zone_write 5 1016 8
		zone_write 5 8 1016
		zone_op close 7
		zone_op finish 7
		zone_op open 0
		zone_op reset 0
		zone_write 0 8 100
		zone_write 0 4 12
		zone_write 9 1024
		zone_write 9 4
		zone_op finish 8
		zone_op reset 9
		zone_op reset 1
	EOF
	expect_same "$(run blkzone reset /dev/$ZD)" "$(run blkzone reset /dev/$ZC)" "reset all" &&
		expect_same "$(zone_report $ZD)" "$(zone_report $ZC)" "zones after reset all"
}

test_zone_state_machine_matches_null_blk() {
	local mb
	head -c 1048576 /dev/urandom >/tmp/zone-pattern
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	for mb in 0 1; do
		zdev $RCFG/d$mb size=10 zone_size=1 zone_nr_conv=1 zone_max_open=2 \
			zone_max_active=3 memory_backed=$mb
		zdev $CCFG/c$mb size=10 zone_size=1 zone_nr_conv=1 zone_max_open=2 \
			zone_max_active=3 memory_backed=$mb
		expect_eq "$(wr $RCFG/d$mb/power 1)" 0 "rnull power-on (memory_backed=$mb)"
		expect_eq "$(wr $CCFG/c$mb/power 1)" 0 "null_blk power-on (memory_backed=$mb)"
	done
	# Both pairs at once: every step starts a few programs.
	together zone_states 0 -- zone_states 1
}

test_zone_readonly_and_offline_match_null_blk() {
	local a
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	head -c 1048576 /dev/urandom >/tmp/zone-pattern
	# Not zoned, not powered.
	mkdir $RCFG/n $CCFG/n
	expect_same "$(wr $RCFG/n/zone_readonly 0)" "$(wr $CCFG/n/zone_readonly 0)" "not zoned"
	rmdir $RCFG/n $CCFG/n
	zdev $RCFG/d size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
	zdev $CCFG/c size=8 zone_size=1 zone_nr_conv=1 memory_backed=1
	expect_same "$(wr $RCFG/d/zone_offline 2048)" "$(wr $CCFG/c/zone_offline 2048)" \
		"not powered"
	echo 1 >$RCFG/d/power
	echo 1 >$CCFG/c/power
	zone_step zone_write 2 8 || return 1
	zone_step zone_write 3 8 || return 1
	for a in zone_readonly:0 zone_readonly:16384 zone_readonly:99999999 zone_readonly:x \
		zone_readonly:2048 zone_offline:4096 zone_offline:6144 zone_readonly:4100; do
		expect_same "$(wr $RCFG/d/${a%:*} "${a#*:}")" "$(wr $CCFG/c/${a%:*} "${a#*:}")" \
			"write ${a#*:} to ${a%:*}" &&
			expect_same "$(zone_report d)" "$(zone_report c)" "zones after $a" || return 1
	done
	# Read-only zones fail writes and zone commands; offline zones also reads.
	zone_step zone_write 1 4 || return 1
	zone_step zone_write 2 4 || return 1
	zone_step zone_op reset 2 || return 1
	zone_step zone_op finish 3 || return 1
	expect_same "$(run dd if=/dev/d of=/dev/null bs=4k count=1 skip=512 iflag=direct)" \
		"$(run dd if=/dev/c of=/dev/null bs=4k count=1 skip=512 iflag=direct)" "read offline"
	expect_same "$(dd if=/dev/d bs=1M count=1 skip=1 iflag=direct status=none | md5sum)" \
		"$(dd if=/dev/c bs=1M count=1 skip=1 iflag=direct status=none | md5sum)" \
		"read of a read-only zone"
	# Back to normal: written again, the condition goes.
	zone_step zone_write_cond zone_readonly 1 || return 1
	zone_step zone_write_cond zone_offline 2 || return 1
	zone_step zone_write 2 4 || return 1
	expect_same "$(run blkzone reset /dev/d)" "$(run blkzone reset /dev/c)" "reset all" &&
		expect_same "$(zone_report d)" "$(zone_report c)" "zones after reset all"
}

# zone_write_cond DISK ATTR ZONE: writes the first sector of ZONE to ATTR of
# the device of DISK.
zone_write_cond() {
	local dir=$RCFG/d
	[ "$1" = c ] && dir=$CCFG/c
	wr $dir/"$2" $(($3 * 2048))
}

test_memory_backed_zones_read_like_null_blk() {
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	head -c 1048576 /dev/urandom >/tmp/zone-pattern
	zpair size=8 zone_size=2 zone_nr_conv=1 zone_capacity=1 memory_backed=1 || return 1
	# Conventional data, a partly written zone, a full one.
	zone_step zone_write 0 12 40 || return 1
	zone_step zone_write 2 12 || return 1
	zone_step zone_write 4 1024 || return 1
	expect_same_data /dev/d /dev/c "contents" || return 1
	# Zone conditions are not kept over a power cycle, the data is: both
	# read the sequential zones as empty again (0xff).
	echo 0 >$RCFG/d/power && echo 1 >$RCFG/d/power
	echo 0 >$CCFG/c/power && echo 1 >$CCFG/c/power
	expect_same "$(zone_report d)" "$(zone_report c)" "zones after a power cycle" &&
		expect_same_data /dev/d /dev/c "contents after a power cycle"
}

test_fio_zbd_verify_on_memory_backed_zoned_disks() {
	local disk
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	zpair size=64 zone_size=4 zone_nr_conv=2 zone_max_open=4 memory_backed=1 \
		cache_size=2 || return 1
	for disk in d c; do
		fio_ok /dev/$disk --zonemode=zbd --rw=randwrite --bs=4k --iodepth=4 \
			--numjobs=2 --offset_increment=32M --size=32M --io_size=8M \
			--max_open_zones=2 --verify=crc32c --do_verify=1 --time_based=0 \
			--runtime=0 --group_reporting || return 1
	done
}

# Polled writes of several segments that wait in their zone's write plug:
# the block layer of 7.3 polled them with their segment count as the
# hardware queue, and either driver's poll crashed. The series' block patch
# makes bio_poll skip them; their data moves like any other write's.
test_polled_zone_writes_waiting_in_the_plug() {
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=1)" 0 "modprobe null_blk"
	zpair size=256 zone_size=16 zone_max_open=4 || return 1
	expect_eq "$(</sys/block/d/queue/io_poll) $(</sys/block/c/queue/io_poll)" "1 1" "io_poll"
	fio_ok /dev/d,/dev/c --hipri --zonemode=zbd --rw=randrw --bs=64k --iodepth=8 \
		--max_open_zones=4 --size=256M
}

# btrfs_keeps_data DISK: btrfs in zoned mode on DISK keeps two copies of
# /tmp/btrfs-data over a remount, and scrubs without errors. (A half of
# `together`: each step checks its status.)
btrfs_keeps_data() {
	local mnt=/tmp/btrfs-$1
	mkdir -p $mnt &&
		expect_eq "$(run mkfs.btrfs -q -f -O zoned -d single -m single /dev/$1)" 0 \
			"mkfs.btrfs -O zoned on $1" &&
		expect_eq "$(run mount -t btrfs /dev/$1 $mnt)" 0 "mount $1" || return 1
	cp /tmp/btrfs-data $mnt/data && cp /tmp/btrfs-data $mnt/copy && sync &&
		umount $mnt || return 1
	expect_eq "$(run mount -t btrfs /dev/$1 $mnt)" 0 "mount $1 again" &&
		expect_same_data $mnt/data /tmp/btrfs-data "file data on $1 after a remount" &&
		expect_same_data $mnt/copy /tmp/btrfs-data "second file on $1" &&
		expect_eq "$(btrfs scrub start -B -R $mnt | grep -Ec '(csum|verify|read)_errors: 0$')" \
			3 "scrub of $1 without errors" && umount $mnt
}

# btrfs in zoned mode is a real user of zone append: it writes file data
# with zone appends and records the sector each one landed at, so a wrong
# append sector reads back as checksum errors or wrong data. Both drivers at
# once. No open-zone limit: with one, btrfs finishes zones from writeback,
# and 7.3's btrfs can deadlock there against a sync (seen once in CI: the
# flusher in a zone finish waiting for the ordered-operations mutex that
# sync held while it waited for ordered extents whose pages the flusher had
# locked; no request was outstanding in either driver).
test_btrfs_zoned_keeps_data_on_both_drivers() {
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	expect_eq "$(load btrfs)" 0 "modprobe btrfs" || return 1
	zpair size=512 zone_size=8 memory_backed=1 || return 1
	dd if=/dev/urandom of=/tmp/btrfs-data bs=1M count=24 status=none
	local status=0
	together btrfs_keeps_data d -- btrfs_keeps_data c || status=1
	# A half that failed may have left its file system mounted.
	umount /tmp/btrfs-d /tmp/btrfs-c 2>/dev/null || true
	return $status
}

test_zoned_differences_from_null_blk() {
	# FINISH: rnull moves the write pointer to the end of the zone's
	# capacity, null_blk to the end of the zone.
	expect_eq "$(load rnull nr_devices=0 poll_queues=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0 poll_queues=1)" 0 "modprobe null_blk"
	zpair size=8 zone_size=2 zone_capacity=1 || return 1
	# Zone 1 of 2 MiB starts at sector 4096.
	expect_eq "$(run blkzone finish -o 4096 -c 1 /dev/d)" 0 "finish on rnull"
	expect_eq "$(run blkzone finish -o 4096 -c 1 /dev/c)" 0 "finish on null_blk"
	expect_eq "$(zone_report d | sed -n 2p | grep -o 'wptr 0x[0-9a-f]*')" "wptr 0x000800" \
		"rnull's write pointer after finish"
	expect_eq "$(zone_report c | sed -n 2p | grep -o 'wptr 0x[0-9a-f]*')" "wptr 0x001000" \
		"null_blk's write pointer after finish"
	rmdir $RCFG/d $CCFG/c
	# Polled requests: rnull handles their zones like any other's, null_blk
	# skips its zone checks for them: a polled read of an offline zone fails
	# on rnull and succeeds on null_blk.
	zpair size=8 zone_size=1 poll_queues=1 || return 1
	expect_same "$(</sys/block/d/queue/io_poll)" "$(</sys/block/c/queue/io_poll)" io_poll
	expect_eq "$(</sys/block/d/queue/io_poll)" 1 "io_poll"
	echo 2048 >$RCFG/d/zone_offline
	echo 2048 >$CCFG/c/zone_offline
	expect_eq "$(polled_read d)" 1 "polled read of an offline zone on rnull"
	expect_eq "$(polled_read c)" 0 "polled read of an offline zone on null_blk"
}

# Resetting zones frees their memory, but for 16 MiB of emptied pages that
# rnull keeps for the writes that follow: the rest once no reader can hold
# the pages (an RCU grace period, which a reset does not wait for), at a
# later reset; null_blk frees all of it at once. (null_blk's pages are not
# slab memory, which kernel_kib counts: rnull only.)
test_zone_resets_free_memory() {
	local base tries kept=$((16 * 1024 + 4096))
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	zdev $RCFG/d size=64 zone_size=16 memory_backed=1
	expect_eq "$(wr $RCFG/d/power 1)" 0 "power-on" || return 1
	base=$(kernel_kib)
	dd if=/dev/urandom of=/dev/d bs=1M count=32 oflag=direct status=none
	[ $(($(kernel_kib) - base)) -ge $((32 * 1024)) ] ||
		{ echo "    32 MiB written, $(($(kernel_kib) - base)) KiB more in use"; return 1; }
	expect_eq "$(run blkzone reset -o 0 -c 2 /dev/d)" 0 "reset of zones 0 and 1" || return 1
	# Resets of the empty zone 3 free what waits.
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		[ $(($(kernel_kib) - base)) -lt $kept ] && break
		sleep 0.1
		run blkzone reset -o $((48 * 2048)) -c 1 /dev/d >/dev/null
	done
	[ $(($(kernel_kib) - base)) -lt $kept ] ||
		{ echo "    $(($(kernel_kib) - base)) KiB still in use after $tries resets"; return 1; }
	expect_eq "$(dd if=/dev/d bs=1M count=32 iflag=direct status=none | tr -d '\377' | wc -c)" 0 \
		"the reset zones read as 0xff"
	# Zone 0 written again takes the kept pages: little new memory.
	base=$(kernel_kib)
	dd if=/dev/urandom of=/tmp/zone0 bs=1M count=16 status=none
	dd if=/tmp/zone0 of=/dev/d bs=1M oflag=direct status=none
	[ $(($(kernel_kib) - base)) -lt 4096 ] ||
		{ echo "    zone 0 written again: $(($(kernel_kib) - base)) KiB more in use"; return 1; }
	dd if=/dev/d of=/tmp/zone0.back bs=1M count=16 iflag=direct status=none
	cmp -s /tmp/zone0 /tmp/zone0.back ||
		{ echo "    zone 0 does not read back"; return 1; }
	rm -f /tmp/zone0 /tmp/zone0.back
}

# polled_read DISK: fio's exit status after one polled 4 KiB read of zone 1.
polled_read() {
	fio --name=p --filename=/dev/"$1" --ioengine=io_uring --hipri --direct=1 --rw=read \
		--bs=4k --size=4k --offset=1M >/dev/null 2>&1
	echo $?
}

test_zone_table_larger_than_memory_fails_quietly() {
	# 2^31 zones of 1 MiB: a zone table of tens of GiB. rnull fails the
	# power-on with ENOMEM and nothing in the log; null_blk's kvmalloc
	# warns (WARN_ON_ONCE above INT_MAX bytes), so it is not run there.
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	zdev $RCFG/d size=2147483648 zone_size=1
	expect_eq "$(wr $RCFG/d/power 1)" ENOMEM "power-on" &&
		expect_eq "$(<$RCFG/d/power)" 0 "power after the failed power-on"
	# 2^32 zones and more cannot even be counted.
	echo 4294967296 >$RCFG/d/size
	expect_eq "$(wr $RCFG/d/power 1)" EINVAL "power-on with 2^32 zones"
}
