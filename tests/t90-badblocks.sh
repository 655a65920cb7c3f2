# SPDX-License-Identifier: GPL-2.0
# Bad blocks: the badblocks table of a device, how its writes are parsed and
# how it shows, and the requests that fail on bad sectors, with
# badblocks_once and badblocks_partial_io, compared with null_blk.
# shellcheck shell=bash

# bad_both TEXT: writes TEXT to badblocks of both devices; fails if the
# answers differ.
bad_both() {
	expect_same "$(wr $RCFG/d/badblocks "$1")" "$(wr $CCFG/c/badblocks "$1")" \
		"write '$1' to badblocks"
}

# power_both VALUE
power_both() {
	expect_eq "$(wr $RCFG/d/power "$1")" 0 "rnull power=$1" &&
		expect_eq "$(wr $CCFG/c/power "$1")" 0 "null_blk power=$1"
}

# sectors DISK OP FIRST COUNT: dd of COUNT 512-byte sectors from sector
# FIRST of DISK, direct, in one request of the pattern's first bytes; OP is
# read or write. Whole 4 KiB blocks go in blocks of 4 KiB, for disks of that
# block size. Prints 0 or the errno.
sectors() {
	local bs=512 first=$3 count=$4
	if ((first % 8 == 0 && count % 8 == 0)); then
		bs=4096 first=$((first / 8)) count=$((count / 8))
	fi
	if [ "$2" = write ]; then
		run dd if=/tmp/bad-pattern of=/dev/"$1" bs=$((bs * count)) count=1 \
			oflag=direct,seek_bytes status=none seek=$((first * bs))
	else
		run dd if=/dev/"$1" of=/dev/null bs=$((bs * count)) count=1 \
			iflag=direct,skip_bytes status=none skip=$((first * bs))
	fi
}

# sectors_both OP FIRST COUNT EXPECTED: the same dd on both, with the
# expected answer.
sectors_both() {
	expect_eq "$(sectors d "$@")" "$4" "rnull: $1 of $3 sectors from $2" &&
		expect_eq "$(sectors c "$@")" "$4" "null_blk: $1 of $3 sectors from $2"
}

# sum DISK FIRST COUNT: checksum of COUNT sectors from FIRST, both
# multiples of 8.
sum() {
	dd if=/dev/"$1" bs=4096 skip=$(($2 / 8)) count=$(($3 / 8)) iflag=direct status=none |
		md5sum
}

# fio_errors DISK ARGS...: the I/O errors of a 4 MiB fio job (ARGS) on DISK, in 4 KiB
# blocks.
fio_errors() {
	local disk=$1
	shift
	fio --name=bad --filename=/dev/"$disk" --direct=1 --bs=4k --size=4M \
		--continue_on_error=all --output-format=json "$@" 2>/dev/null | jq '.jobs[0].total_err'
}

load_both() {
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	expect_eq "$(load null_blk nr_devices=0)" 0 "modprobe null_blk"
	head -c 1048576 /dev/urandom >/tmp/bad-pattern
}

test_badblocks_writes_and_table_match_null_blk() {
	local v
	load_both
	pair size=16
	expect_same "$(<$RCFG/d/badblocks)" "$(<$CCFG/c/badblocks)" "table of a new device"
	for v in "" "+" "-" "+1" "*1-2" "+a-3" "+1 -2" "+-1-2" "+5-3" "+1-0x" \
		"+1-99999999999999999999" "+0-18446744073709551615" $' \v+0x10-0x13\n' \
		"++010-011" "+0-7" "+100-100" "+101-700" "-2-3" "-650-651" "-5-4" \
		"-1000-1010" "$(printf '+%.0s' $(seq 4096))"; do
		bad_both "$v" || return 1
		expect_same "$(<$RCFG/d/badblocks)" "$(<$CCFG/c/badblocks)" \
			"table after '${v:0:24}'" || return 1
	done
	expect_eq "$(cat $RCFG/d/badblocks | xargs)" "0 2 4 6 16 4 100 512 612 38 652 49" \
		"rnull's table"
	# Live while powered; kept over a power cycle; gone with the directory.
	power_both 1 || return 1
	bad_both "+2000-2001"
	bad_both "-0-1"
	expect_eq "$(wr $RCFG/d/badblocks_once 1)" EBUSY "badblocks_once while powered"
	expect_eq "$(wr $CCFG/c/badblocks_once 1)" EBUSY "null_blk: badblocks_once while powered"
	power_both 0 && power_both 1 || return 1
	expect_same "$(<$RCFG/d/badblocks)" "$(<$CCFG/c/badblocks)" "table after a power cycle"
	expect_eq "$(cat $RCFG/d/badblocks | head -n 1)" "4 6" "first range after a power cycle"
	rmdir $RCFG/d $CCFG/c
	pair size=16
	expect_eq "$(<$RCFG/d/badblocks)" "" "table of a new directory of the same name"
}

test_bad_sectors_fail_requests_like_null_blk() {
	load_both
	pair size=16 memory_backed=1 || return 1
	power_both 1 || return 1
	sectors_both write 0 128 0 || return 1
	bad_both "+64-71" || return 1
	sectors_both write 0 64 0 &&
		sectors_both write 72 8 0 &&
		sectors_both write 64 1 EIO &&
		sectors_both write 56 16 EIO &&
		sectors_both read 60 8 EIO &&
		sectors_both read 71 1 EIO &&
		sectors_both read 0 64 0 || return 1
	# Without badblocks_partial_io, a failed write moves nothing.
	bad_both "-64-71" || return 1
	expect_eq "$(sum d 0 128)" "$(sum c 0 128)" "data after the failed writes" &&
		expect_eq "$(sum d 56 8)" "$(head -c 32768 /tmp/bad-pattern | tail -c 4096 | md5sum)" \
			"sectors 56-63, not written by the failed write"
}

test_fio_error_counts_match_null_blk() {
	local disk
	load_both
	pair size=16 || return 1
	power_both 1 || return 1
	bad_both "+100-100" && bad_both "+2048-2055" && bad_both "+5000-5100" || return 1
	# Blocks of 4 KiB with a bad sector: 12, 256 and 625 to 637.
	for disk in d c; do
		expect_eq "$(fio_errors $disk --rw=read)" 15 "fio's errors on $disk" || return 1
	done
}

test_polled_requests_on_a_cached_memory_backed_disk() {
	# Polled I/O with memory backing and a cache, as users combine them.
	# null_blk sleeps in its poll on memory-backed disks, so its disk here
	# keeps no data; both must fail the same polled reads.
	load_both
	mkdir $RCFG/d $CCFG/c
	for a in size=16 memory_backed=1 cache_size=2 poll_queues=1; do
		echo "${a#*=}" >$RCFG/d/"${a%%=*}"
	done
	echo 16 >$CCFG/c/size
	power_both 1 || return 1
	expect_eq "$(</sys/block/d/queue/io_poll) $(</sys/block/c/queue/io_poll)" "1 1" io_poll
	bad_both "+100-100" && bad_both "+2048-2055" && bad_both "+5000-5100" || return 1
	expect_eq "$(fio_errors d --rw=read --ioengine=io_uring --hipri)" 15 "rnull's polled errors" &&
		expect_eq "$(fio_errors c --rw=read --ioengine=io_uring --hipri)" 15 \
			"null_blk's polled errors" &&
		expect_eq "$(fio_errors d --rw=write --ioengine=io_uring --hipri)" 15 \
			"rnull's polled write errors"
	# Polled writes before the bad blocks keep their data, read back from
	# the cache or the store.
	expect_eq "$(run fio --name=v --filename=/dev/d --direct=1 --bs=4k --size=48k --rw=write \
		--ioengine=io_uring --hipri --verify=crc32c --do_verify=1)" 0 "polled verified writes"
}

test_badblocks_once_makes_hit_sectors_good() {
	load_both
	pair size=16 badblocks_once=1 || return 1
	power_both 1 || return 1
	bad_both "+64-71" && bad_both "+100-103" || return 1
	sectors_both read 60 8 EIO &&
		sectors_both read 60 8 0 &&
		sectors_both write 96 8 EIO &&
		sectors_both write 96 8 0 || return 1
	expect_same "$(<$RCFG/d/badblocks)" "$(<$CCFG/c/badblocks)" "table after the hits" &&
		expect_eq "$(<$RCFG/d/badblocks)" "" "rnull's table after the hits"
}

test_partial_io_moves_the_blocks_before_a_bad_sector() {
	load_both
	pair size=16 memory_backed=1 blocksize=4096 badblocks_partial_io=1 || return 1
	power_both 1 || return 1
	# Sector 70 is in the block of sectors 64-71: a write of sectors 48-111
	# moves 48-63, then fails.
	bad_both "+70-70" || return 1
	sectors_both write 48 64 EIO || return 1
	bad_both "-70-70" || return 1
	expect_eq "$(sum d 0 128)" "$(sum c 0 128)" "data after the partial write" &&
		expect_eq "$(sum d 48 16)" "$(head -c 8192 /tmp/bad-pattern | md5sum)" \
			"the blocks before the bad one" &&
		expect_eq "$(sum d 64 64)" "$(head -c 32768 /dev/zero | md5sum)" \
			"the blocks from the bad one on"
	# A read that starts in a bad block moves nothing and fails.
	bad_both "+64-64" || return 1
	sectors_both read 64 8 EIO && sectors_both read 0 64 0
}

test_zoned_bad_sectors_match_null_blk() {
	load_both
	pair size=8 zoned=1 zone_size=1 memory_backed=1 badblocks_partial_io=1 || return 1
	power_both 1 || return 1
	# Zone 1 starts at sector 2048. A write over the bad sector 2056 moves
	# the 8 sectors before it: the write pointer moves by 8, the zone stays
	# open. Then a write at the pointer, on the bad sector, moves nothing.
	bad_both "+2056-2056" || return 1
	sectors_both write 2048 16 EIO &&
		sectors_both write 2056 8 EIO &&
		sectors_both read 2048 16 EIO &&
		sectors_both read 2048 8 0 || return 1
	expect_same "$(blkzone report -o 2048 -c 1 /dev/d)" "$(blkzone report -o 2048 -c 1 /dev/c)" \
		"zone 1" &&
		expect_eq "$(blkzone report -o 2048 -c 1 /dev/d | grep -o 'wptr 0x[0-9a-f]*')" \
			"wptr 0x000008" "rnull's write pointer"
	bad_both "-2056-2056" || return 1
	sectors_both write 2056 8 0 &&
		expect_eq "$(sum d 2048 16)" "$(sum c 2048 16)" "zone 1's data"
}

test_badblocks_differences_from_null_blk() {
	local m i out
	load_both
	pair size=16 || return 1
	# Sector 2^54 and later: C's table records them at the wrong place
	# (here sector 0); rnull refuses them.
	expect_eq "$(wr $RCFG/d/badblocks "+18014398509481984-18014398509481984")" EINVAL \
		"rnull: a range at sector 2^54"
	expect_eq "$(wr $CCFG/c/badblocks "+18014398509481984-18014398509481984")" 0 \
		"null_blk: a range at sector 2^54"
	expect_eq "$(<$CCFG/c/badblocks)" "0 1" "null_blk's table"
	expect_eq "$(<$RCFG/d/badblocks)" "" "rnull's table"
	# Ranges longer than 2^31 - 1 sectors: C's table code counts them in an
	# int. Adding one fills C's table with 512 ranges of its first sectors,
	# then fails; removing one can loop forever with interrupts off, so it
	# is not tried on null_blk. rnull refuses both and changes nothing.
	expect_eq "$(wr $RCFG/d/badblocks "+0-4294967295")" EINVAL "rnull: adding 2^32 sectors" &&
		expect_eq "$(<$RCFG/d/badblocks)" "" "rnull's table after adding 2^32 sectors" &&
		expect_eq "$(wr $RCFG/d/badblocks "-0-4294967295")" EINVAL \
			"rnull: removing 2^32 sectors" || return 1
	m=$(known_splats_begin "a badblocks table longer than a page on null_blk")
	expect_eq "$(wr $CCFG/c/badblocks "+0-4294967295")" EINVAL "null_blk: adding 2^32 sectors"
	# Its 512 lines take more than a page: C makes configfs warn
	# (WARN_ON_ONCE) and fail the read.
	expect_eq "$(run cat $CCFG/c/badblocks)" EIO "null_blk: reading a long table"
	known_splats_end "$m" || return 1
	# rnull shows the lines that fit.
	for i in $(seq 0 299); do
		echo "+$((1000000000000000 + i * 1000))-$((1000000000000000 + i * 1000))" \
			>$RCFG/d/badblocks
	done
	out=$(<$RCFG/d/badblocks)
	# 215 lines of 19 bytes fit in a page, with C's final NUL.
	expect_eq "$(wc -l <<<"$out")" 215 "lines rnull shows" &&
		expect_eq "$(tail -n 1 <<<"$out")" "1000000000214000 1" "rnull's last line"
}
