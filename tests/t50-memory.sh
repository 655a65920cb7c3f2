# SPDX-License-Identifier: GPL-2.0
# Memory backing: data written reads back, on rnull as on null_blk.
# shellcheck shell=bash

# mb_device DIR SIZE_MB BLOCKSIZE [ATTR=VALUE...]: a powered, memory-backed
# configfs device.
mb_device() {
	local dir=$1 a
	mkdir "$dir"
	echo "$2" >"$dir"/size
	echo "$3" >"$dir"/blocksize
	echo 1 >"$dir"/memory_backed
	shift 3
	for a in "$@"; do echo "${a#*=}" >"$dir/${a%=*}"; done
	echo 1 >"$dir"/power
}

test_memory_backed_forces_blocking() {
	load_both
	mkdir $RCFG/d $CCFG/c
	echo 1 >$RCFG/d/memory_backed
	echo 1 >$CCFG/c/memory_backed
	echo 1 >$RCFG/d/power
	echo 1 >$CCFG/c/power
	expect_same "$(read_all $RCFG/d)" "$(read_all $CCFG/c)" "read-back"
	expect_eq "$(<$RCFG/d/blocking)" 1 "blocking"
	expect_same "$(disk_shape d)" "$(disk_shape c)" "disk"
}

test_fio_verify_on_memory_backed_disks() {
	local bs qd
	load_both
	for bs in 512 4096; do
		mb_device $RCFG/d 64 $bs
		mb_device $CCFG/c 64 $bs
		# Both disks at once (one job each).
		for qd in 1 16; do
			fio_ok /dev/d,/dev/c --rw=randwrite --bs=$((bs * 2)) --iodepth=$qd \
				--size=8M --verify=crc32c --do_verify=1 --time_based=0 --runtime=30
		done
		fio_ok /dev/d,/dev/c --rw=write --bs=64k --iodepth=4 --size=8M \
			--verify=crc32c --time_based=0 --runtime=30
		rmdir $RCFG/d $CCFG/c
	done
}

# shared_page_jobs DISK: jobs in parallel on the same pages, as rnull's store
# lets them run: four write their own 2 KiB of every 8 KiB (two jobs to a
# page) and verify it, one reads all of it and the range after, and one trims
# and rewrites that range (freeing pages that the reader finds).
shared_page_jobs() {
	local k jobs=() out errors
	for k in 0 1 2 3; do
		jobs+=(--name=w$k --rw=write:6k --bs=2k --offset=$((k * 2048))
			--size=16M --verify=crc32c --do_verify=1 --iodepth=4)
	done
	jobs+=(--name=r --rw=randread --bs=4k --size=32M --iodepth=4 --time_based --runtime=3)
	jobs+=(--name=tw --rw=trimwrite --bs=64k --offset=16M --size=16M
		--iodepth=2 --time_based --runtime=3)
	out=$(fio --filename=/dev/$1 --ioengine=io_uring --direct=1 \
		--output-format=json "${jobs[@]}" 2>&1) ||
		{ echo "    fio on $1 failed: $out"; return 1; }
	errors=$(grep -o '"error" : [0-9]*' <<<"$out" | grep -vc '"error" : 0$' || true)
	expect_eq "$errors" 0 "jobs with errors on $1" &&
		expect_eq "$(grep -c '"jobname"' <<<"$out")" 6 "jobs run on $1"
}

# shared_page_pair CACHE: shared_page_jobs on rnull's dCACHE and null_blk's
# cCACHE at once.
shared_page_pair() {
	together shared_page_jobs d$1 -- shared_page_jobs c$1 || { echo "    (cache_size $1)"; return 1; }
}

# On both drivers, with and without a cache: the four disks at once.
test_parallel_jobs_share_pages() {
	local cache
	load_both
	for cache in 0 4; do
		mb_device $RCFG/d$cache 64 512 cache_size=$cache discard=1
		mb_device $CCFG/c$cache 64 512 cache_size=$cache discard=1
	done
	together shared_page_pair 0 -- shared_page_pair 4
}

# same_writes DISK BS: a fixed sequence of writes of BS-sized blocks. (Also
# a half of `together`: each step checks its status.)
same_writes() {
	local at blocks=$((32 * 1048576 / $2 - 3))
	for at in 0 1 7 8 9 100 1000 4095; do
		dd if=/tmp/pattern of=/dev/"$1" bs="$2" skip=$((at % 61)) seek=$((at % blocks)) count=3 \
			oflag=direct conv=notrunc status=none || return 1
	done
	fio --name=w --filename=/dev/"$1" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bs="$2" --size=24M --io_size=4M --iodepth=8 --randseed=7 --norandommap \
		--buffer_pattern=0xdeadbeef >/dev/null
}

test_same_writes_give_same_contents() {
	local bs
	# 64 blocks of the largest size, so that any block size can skip 61.
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	load_both
	for bs in 512 4096 65536; do
		mb_device $RCFG/d 32 $bs
		mb_device $CCFG/c 32 $bs
		together same_writes d $bs -- same_writes c $bs
		expect_same_data /dev/d /dev/c "contents after the same writes (bs $bs)"
		rmdir $RCFG/d $CCFG/c
	done
}

test_block_size_0_stores_512_byte_blocks() {
	# Deliberate difference, found by the fuzzer: null_blk copies in steps
	# of its block size, which stays 0, so the partition scan of a
	# memory-backed device with blocksize=0 loops forever (not run here).
	# rnull's disk has 512-byte blocks, like null_blk's with blocksize=512.
	local dev
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	load_both
	mb_device $RCFG/d 32 0 cache_size=1 discard=1
	mb_device $CCFG/c 32 512 cache_size=1 discard=1
	expect_eq "$(</sys/block/d/queue/logical_block_size)" 512 "rnull's block size"
	expect_eq "$(<$RCFG/d/blocksize)" 0 "blocksize read back"
	for dev in d c; do
		same_writes $dev 512
		blkdiscard -o 4096 -l 8192 /dev/$dev
		# A FLUSH, so that the cache's data survives the power cycle.
		dd if=/dev/$dev of=/dev/$dev bs=512 count=1 oflag=direct conv=notrunc,fsync status=none
	done
	expect_same_data /dev/d /dev/c "contents after the same writes and discards"
	power_cycle $RCFG/d
	power_cycle $CCFG/c
	expect_same_data /dev/d /dev/c "contents after a power cycle"
}

test_unwritten_sectors_read_zeros() {
	load_both
	mb_device $RCFG/d 16 512
	# A page with one written sector: the others still read as zeros.
	printf 'rnull' | dd of=/dev/d bs=512 seek=3 conv=sync oflag=direct status=none
	expect_eq "$(dd if=/dev/d bs=512 skip=3 count=1 iflag=direct status=none | head -c 5)" \
		rnull "written sector"
	expect_eq "$(dd if=/dev/d bs=512 count=3 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
		"sectors before"
	expect_eq "$(dd if=/dev/d bs=512 skip=4 count=4 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
		"sectors after"
	expect_eq "$(dd if=/dev/d bs=1M skip=1 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
		"never written MiBs"
}

test_data_survives_power_cycle() {
	local before
	load_both
	mb_device $RCFG/d 32 4096
	fio_ok /dev/d --rw=randwrite --bs=4k --iodepth=8 --size=32M --io_size=16M --time_based=0
	copy_of d /tmp/before
	echo 0 >$RCFG/d/power
	echo 1 >$RCFG/d/power
	expect_same_data /dev/d /tmp/before "contents after power off and on"
}

# fill DISK MIB [FIO_ARG...]: writes MIB MiB of a pattern from the start of
# DISK, directly, in 1 MiB blocks. (The tests that count the memory a disk
# holds need its pages written, not random data, which /dev/urandom makes at
# about 30 MiB a second in the VM.)
fill() {
	local disk=$1 mib=$2
	shift 2
	fio --name=fill --filename=/dev/"$disk" --ioengine=psync --direct=1 --rw=write --bs=1M \
		--size="${mib}M" --buffer_pattern=0x5aa5c33c "$@" >/dev/null
}

# expect_kib BASE -ge|-lt MIB WHAT: the kernel memory used since BASE
# (from kernel_kib) is at least, or below, MIB MiB.
expect_kib() {
	local used=$(($(kernel_kib) - $1))
	[ "$used" "$2" $(($3 * 1024)) ] || { echo "    $4: ${used} KiB more in use"; return 1; }
}

test_memory_is_freed_with_the_device() {
	local base
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	mb_device $RCFG/d 128 4096
	base=$(kernel_kib)
	fill d 96
	expect_kib "$base" -ge 96 "96 MiB written"
	# A power cycle keeps the data, and its memory.
	echo 0 >$RCFG/d/power
	expect_kib "$base" -ge 96 "after power off"
	rmdir $RCFG/d
	expect_kib "$base" -lt 4 "after rmdir"
	# The same for a module disk and rmmod.
	unload_all
	base=$(kernel_kib)
	expect_eq "$(load rnull memory_backed=1 gb=1)" 0 "modprobe rnull memory_backed=1"
	fill rnullb0 64
	expect_eq "$(run modprobe -r rnull)" 0 "rmmod"
	expect_kib "$base" -lt 4 "after rmmod"
}

test_filesystem_on_a_memory_backed_disk() {
	local opts
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	dd if=/dev/urandom of=/tmp/file bs=1M count=40 status=none
	mkdir -p /mnt/fs
	# Without a cache, and with one much smaller than the data, which
	# ext4's flushes and FUA writes must write back.
	for opts in "irqmode=2 submit_queues=2" "cache_size=2"; do
		mb_device $RCFG/fs 256 4096 $opts
		mkfs.ext4 -q -F /dev/fs || { echo "    mkfs.ext4 failed ($opts)"; return 1; }
		mount /dev/fs /mnt/fs || { echo "    mount failed ($opts)"; return 1; }
		cp /tmp/file /mnt/fs/file
		# The tests directory (the working directory) as small files.
		mkdir /mnt/fs/dir && cp -r "$PWD" /mnt/fs/dir/tree
		umount /mnt/fs
		# Unmounted, all is stable: a power cycle keeps it.
		power_cycle $RCFG/fs
		expect_eq "$(run fsck.ext4 -n -f /dev/fs)" 0 "fsck ($opts)"
		mount /dev/fs /mnt/fs || { echo "    mount after power cycle failed ($opts)"; return 1; }
		expect_same_data /mnt/fs/file /tmp/file "file after remount ($opts)"
		expect_eq "$(run diff -r "$PWD" /mnt/fs/dir/tree)" 0 "directory after remount ($opts)"
		umount /mnt/fs
		rmdir $RCFG/fs
	done
}

test_memory_backed_disks_on_shared_tags_block() {
	# Deliberate difference: C builds the module-wide tag set from the
	# blocking parameter alone, so memory-backed disks on it may sleep in
	# a non-blocking queue_rq (not run here on C: the kernel warns). rnull
	# makes that tag set blocking for memory_backed, and refuses to power
	# on a memory-backed device on a shared tag set that is not blocking.
	local m
	expect_eq "$(load rnull shared_tags=1 memory_backed=1 gb=1)" 0 "modprobe rnull"
	expect_eq "$(load null_blk shared_tags=1 memory_backed=1 gb=1)" 0 "modprobe null_blk"
	[[ $(hctx_flags rnullb0) == *BLOCKING* ]] ||
		{ echo "    rnull's shared tag set is not blocking: $(hctx_flags rnullb0)"; return 1; }
	[[ $(hctx_flags nullb0) != *BLOCKING* ]] ||
		{ echo "    null_blk's shared tag set is blocking: $(hctx_flags nullb0)"; return 1; }
	fio_ok /dev/rnullb0 --rw=randwrite --bs=4k --iodepth=16 --verify=crc32c --size=8M \
		--time_based=0
	unload_all
	expect_eq "$(load rnull shared_tags=1 nr_devices=0)" 0 "modprobe rnull"
	mkdir $RCFG/d
	echo 1 >$RCFG/d/memory_backed
	echo 1 >$RCFG/d/shared_tags
	m=$(mark)
	expect_eq "$(wr $RCFG/d/power 1)" EINVAL "power on on the shared tag set"
	dmesg_since "$m" | grep -q "rnull: a memory-backed disk cannot use the shared tag set" ||
		{ echo "    no error message"; return 1; }
}

# discard_bytes DISK: the largest discard the disk takes, in bytes.
discard_bytes() { cat /sys/block/"$1"/queue/discard_max_hw_bytes; }

# splat_lines SINCE: the lines of reports (tests/log-bad.ere) in the kernel
# log since the mark SINCE.
splat_lines() { dmesg_since "$1" | grep -E -f "$RNULL_REPO/tests/log-bad.ere" || true; }

test_polled_io_on_memory_backed_disks_does_not_sleep() {
	# Polled requests complete in ->poll, inside an RCU read-side critical
	# section of bio_poll(): nothing there may sleep. rnull moves the data
	# of a polled request in queue_rq (the queues of a memory-backed disk
	# are blocking); null_blk moves it in poll, where allocating a page for
	# new data may sleep, which DEBUG_ATOMIC_SLEEP reports.
	local cache m out
	load_both poll_queues=1
	for cache in 0 16; do
		mb_device $RCFG/d 64 4096 poll_queues=1 cache_size=$cache
		mb_device $CCFG/c 64 4096 poll_queues=1 cache_size=$cache
		m=$(mark)
		fio_ok /dev/d --rw=randwrite --bs=4k --iodepth=8 --hipri --size=32M \
			--verify=crc32c --do_verify=1 --time_based=0 --io_size=8M
		fio_ok /dev/d --rw=randread --bs=16k --iodepth=4 --hipri --size=32M
		out=$(splat_lines "$m")
		expect_eq "$out" "" "kernel log after polled I/O on rnull (cache_size=$cache)"

		m=$(known_splats_begin "polled I/O on memory-backed null_blk")
		fio_ok /dev/c --rw=randwrite --bs=4k --iodepth=8 --hipri --size=32M \
			--verify=crc32c --do_verify=1 --time_based=0 --io_size=8M
		out=$(splat_lines "$m")
		known_splats_end "$m"
		# Shown once a second at most: only the first run is sure to.
		[ "$cache" != 0 ] || grep -q 'BUG: sleeping function called from invalid context' <<<"$out" ||
			{ echo "    null_blk did not sleep in poll (cache_size=$cache): $out"; return 1; }
		rmdir $RCFG/d $CCFG/c
	done
}

test_discard_needs_memory_backing() {
	local m
	load_both
	mkdir $RCFG/d $CCFG/c
	echo 1 >$RCFG/d/discard
	echo 1 >$CCFG/c/discard
	m=$(mark)
	expect_same "$(wr $RCFG/d/power 1)" "$(wr $CCFG/c/power 1)" "power on"
	expect_same "$(read_all $RCFG/d)" "$(read_all $CCFG/c)" "read-back"
	expect_eq "$(<$RCFG/d/discard)" 0 "discard after power-on"
	expect_same "$(discard_bytes d)" "$(discard_bytes c)" "discard_max_hw_bytes"
	dmesg_since "$m" | grep -q "rnull: discard option is ignored without memory backing" ||
		{ echo "    no message about the ignored discard"; return 1; }
}

test_discard_frees_data_like_null_blk() {
	local bs base
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	load_both
	for bs in 512 4096; do
		mb_device $RCFG/d 32 $bs discard=1
		mb_device $CCFG/c 32 $bs discard=1
		expect_same "$(discard_bytes d)" "$(discard_bytes c)" "discard_max_hw_bytes"
		together same_writes d $bs -- same_writes c $bs
		blkdiscard -o $((bs * 5)) -l $((bs * 3)) /dev/d
		blkdiscard -o $((bs * 5)) -l $((bs * 3)) /dev/c
		blkdiscard -o 1048576 -l 4194304 /dev/d
		blkdiscard -o 1048576 -l 4194304 /dev/c
		expect_same_data /dev/d /dev/c "contents after discards (bs $bs)"
		expect_eq "$(dd if=/dev/d bs=1M skip=1 count=4 iflag=direct status=none |
			tr -d '\0' | wc -c)" 0 "discarded range (bs $bs)"
		# Discarding everything frees the memory.
		fill d 16
		base=$(kernel_kib)
		blkdiscard /dev/d
		[ $((base - $(kernel_kib))) -ge $((16 * 1024)) ] ||
			{ echo "    memory not freed by discard (bs $bs)"; return 1; }
		expect_eq "$(dd if=/dev/d bs=1M iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
			"after discarding everything (bs $bs)"
		rmdir $RCFG/d $CCFG/c
	done
}

test_discard_of_blocks_larger_than_a_page() {
	# Deliberate difference: null_blk discards only the first sector of
	# each block, so with blocks larger than a page most of a discarded
	# block keeps its data. rnull discards all of it.
	load_both
	mb_device $RCFG/d 16 65536 discard=1
	mb_device $CCFG/c 16 65536 discard=1
	dd if=/dev/urandom of=/dev/d bs=64k count=16 oflag=direct status=none
	dd if=/dev/urandom of=/dev/c bs=64k count=16 oflag=direct status=none
	blkdiscard -o 0 -l 1048576 /dev/d
	blkdiscard -o 0 -l 1048576 /dev/c
	expect_eq "$(dd if=/dev/d bs=64k count=16 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
		"rnull after discard"
	[ "$(dd if=/dev/c bs=64k count=16 iflag=direct status=none | tr -d '\0' | wc -c)" -gt 0 ] ||
		{ echo "    null_blk discarded whole 64 KiB blocks"; return 1; }
}

# cache_mode DISK: the disk's write cache ("write back" or "write through")
# and whether it takes FUA.
cache_mode() { echo "$(</sys/block/"$1"/queue/write_cache) fua=$(</sys/block/"$1"/queue/fua)"; }

# power_cycle DIR: powers the configfs device DIR off and on.
power_cycle() { echo 0 >"$1"/power && echo 1 >"$1"/power; }

# nonzero DISK SKIP COUNT: the non-zero bytes of COUNT 4 KiB blocks from
# block SKIP of DISK.
nonzero() {
	dd if=/dev/"$1" bs=4k skip="$2" count="$3" iflag=direct status=none | tr -d '\0' | wc -c
}

test_cache_is_advertised_like_null_blk() {
	load_both
	mb_device $RCFG/d 16 4096 cache_size=1
	mb_device $CCFG/c 16 4096 cache_size=1
	expect_eq "$(cache_mode d)" "write back fua=1" "rnull with a cache"
	expect_same "$(cache_mode d)" "$(cache_mode c)" "with a cache"
	rmdir $RCFG/d $CCFG/c
	mb_device $RCFG/d 16 4096 cache_size=1 fua=0
	mb_device $CCFG/c 16 4096 cache_size=1 fua=0
	expect_eq "$(cache_mode d)" "write back fua=0" "rnull with a cache, fua=0"
	expect_same "$(cache_mode d)" "$(cache_mode c)" "with a cache, fua=0"
	rmdir $RCFG/d $CCFG/c
	mb_device $RCFG/d 16 4096
	expect_eq "$(cache_mode d)" "write through fua=0" "rnull without a cache"
}

test_flush_makes_cached_data_survive_power_off() {
	local dev cfg
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	load_both
	for dev in d c; do
		cfg=$RCFG && [ $dev = c ] && cfg=$CCFG
		mb_device $cfg/$dev 16 4096 cache_size=2
		# 256 KiB fit in the cache: without a flush, power off loses them.
		dd if=/tmp/pattern of=/dev/$dev bs=64k count=4 oflag=direct status=none
		expect_eq "$(cmp -n 262144 /tmp/pattern /dev/$dev >/dev/null && echo same)" same \
			"$dev before power off"
		power_cycle $cfg/$dev
		expect_eq "$(nonzero $dev 0 64)" 0 "$dev: unflushed data after power off"
		# conv=fsync ends with a FLUSH.
		dd if=/tmp/pattern of=/dev/$dev bs=64k count=4 oflag=direct conv=fsync status=none
		power_cycle $cfg/$dev
		expect_eq "$(cmp -n 262144 /tmp/pattern /dev/$dev >/dev/null && echo same)" same \
			"$dev: flushed data after power off"
	done
}

test_fua_writes_skip_the_cache() {
	local dev cfg fua
	# No zero bytes: written blocks count in full in nonzero.
	head -c 65536 /dev/urandom | tr "\0" x >/tmp/pattern
	load_both
	for fua in 1 0; do
		for dev in d c; do
			cfg=$RCFG && [ $dev = c ] && cfg=$CCFG
			mb_device $cfg/$dev 16 4096 cache_size=4 fua=$fua
			# Blocks 0-15 cached, then blocks 32-47 written with FUA:
			# O_DSYNC through io_uring, which (unlike a synchronous
			# write) sends no FLUSH after. Without FUA support the
			# block layer follows the write with a FLUSH, which makes
			# everything stable.
			dd if=/tmp/pattern of=/dev/$dev bs=4k count=16 oflag=direct status=none
			fio --name=fua --filename=/dev/$dev --ioengine=io_uring --direct=1 \
				--sync=dsync --rw=write --bs=4k --offset=128k --size=64k \
				--buffer_pattern=0x5a5a5a5a >/dev/null ||
				{ echo "    fio failed"; return 1; }
			power_cycle $cfg/$dev
			expect_eq "$(nonzero $dev 32 16)" 65536 "$dev, fua=$fua: FUA blocks"
			expect_eq "$(nonzero $dev 0 16)" "$([ $fua = 1 ] && echo 0 || echo 65536)" \
				"$dev, fua=$fua: cached blocks"
			rmdir $cfg/$dev
		done
	done
}

# cache_writes DIR BS: a memory-backed disk with a cache of 1 MiB and blocks
# of BS, made at DIR, takes over 4 MiB of random writes, a flush and a power
# cycle; a copy of its contents goes to /tmp/cache-data-DISK.
# (A half of `together`: each step checks its status.)
cache_writes() {
	local dev=${1##*/}
	mb_device "$1" 32 "$2" cache_size=1 || return 1
	same_writes $dev "$2" && copy_of $dev /tmp/cache-data-$dev || return 1
	sync /dev/$dev && power_cycle "$1" || return 1
	expect_same_data /dev/$dev /tmp/cache-data-$dev \
		"$dev: contents after flush and power cycle (bs $2)" &&
		fio_ok /dev/$dev --rw=randwrite --bs=$(($2 > 4096 ? $2 : 4096)) --iodepth=16 \
			--size=8M --verify=crc32c --do_verify=1 --time_based=0 --fsync=64 &&
		rmdir "$1"
}

test_small_cache_under_heavy_writes() {
	local bs
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	load_both
	for bs in 512 4096; do
		together cache_writes $RCFG/d $bs -- cache_writes $CCFG/c $bs || return 1
		expect_same_data /tmp/cache-data-d /tmp/cache-data-c "contents (bs $bs)"
	done
	# Not run on null_blk with blocks larger than a page: its flush copies
	# whole blocks from a page and overruns it. Two sizes on rnull at once.
	together cache_writes $RCFG/d 8192 -- cache_writes $RCFG/e 65536
}

test_cache_of_16_eib() {
	# Deliberate difference, found by the fuzzer: null_blk computes the
	# cache's size in bytes in an unsigned long and adds what it holds, so
	# with cache_size near 16 EiB (C's upper clamp) a FLUSH of more than a
	# MiB of cached data loops with interrupts off (not run here). rnull
	# clamps the size the same way and counts in pages.
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=64 status=none
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	mb_device $RCFG/d 16 4096 cache_size=18446744073709551615
	expect_eq "$(<$RCFG/d/cache_size)" 17592186044415 "cache_size after power-on (as null_blk)"
	expect_eq "$(cache_mode d)" "write back fua=1" "cache mode"
	dd if=/tmp/pattern of=/dev/d bs=64k count=64 oflag=direct conv=fsync status=none
	power_cycle $RCFG/d
	expect_eq "$(cmp -n 4194304 /tmp/pattern /dev/d >/dev/null && echo same)" same \
		"flushed data after a power cycle"
}

test_overwrites_of_written_back_data_skip_the_cache() {
	# As in null_blk: a write goes to the store's page when the cache holds
	# no copy of it, so an overwrite of flushed data survives power off
	# without a flush.
	dd if=/dev/urandom of=/tmp/old bs=64k count=1 status=none
	dd if=/dev/urandom of=/tmp/new bs=64k count=1 status=none
	load_both
	mb_device $RCFG/d 16 4096 cache_size=1
	mb_device $CCFG/c 16 4096 cache_size=1
	for dev in d c; do
		dd if=/tmp/old of=/dev/$dev bs=64k oflag=direct conv=fsync status=none
		dd if=/tmp/new of=/dev/$dev bs=64k oflag=direct status=none
	done
	power_cycle $RCFG/d
	power_cycle $CCFG/c
	expect_eq "$(cmp -n 65536 /tmp/new /dev/d >/dev/null && echo new)" new "rnull"
	expect_eq "$(cmp -n 65536 /tmp/new /dev/c >/dev/null && echo new)" new "null_blk"
}

# unflushed_writes DISK: 4 KiB writes in a fixed random order over 3 MiB,
# each block once, one at a time, without a flush: three times what a cache
# of 1 MiB holds. (A half of `together`.)
unflushed_writes() {
	fio --name=u --filename=/dev/"$1" --ioengine=psync --direct=1 --rw=randwrite --bs=4k \
		--size=3M --randseed=11 --buffer_pattern=0x5a >/dev/null
}

test_a_full_cache_writes_back_what_null_blk_does() {
	# Which pages a full cache writes back, and so which survive a power
	# off without a flush, is C's: batches of 16 in page order, from where
	# the last batch stopped, once the cache holds a page less than its
	# size. The two disks must keep the same blocks.
	load_both
	mb_device $RCFG/d 16 4096 cache_size=1
	mb_device $CCFG/c 16 4096 cache_size=1
	together unflushed_writes d -- unflushed_writes c
	power_cycle $RCFG/d
	power_cycle $CCFG/c
	expect_same_data /dev/d /dev/c "contents after a power off without a flush"
	# Some were written back, not all.
	local kept
	kept=$(nonzero d 0 768)
	[ "$kept" -gt 0 ] && [ "$kept" -lt $((768 * 4096)) ] ||
		{ echo "    $kept bytes kept of 3 MiB"; return 1; }
}

test_cache_size_0_turns_the_cache_off() {
	# Deliberate difference: null_blk keeps using a cache once a device
	# has had one, even after cache_size is set to 0 (its cache flag is
	# never cleared), while the disk reports a write-through cache and
	# gets no FLUSH: data still in that cache is lost at power off.
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=16 status=none
	load_both
	mb_device $RCFG/d 16 4096 cache_size=1
	mb_device $CCFG/c 16 4096 cache_size=1
	for cfg in $RCFG/d $CCFG/c; do
		echo 0 >$cfg/power
		echo 0 >$cfg/cache_size
		echo 1 >$cfg/power
	done
	expect_same "$(cache_mode d)" "$(cache_mode c)" "cache mode"
	expect_eq "$(cache_mode d)" "write through fua=0" "rnull's cache mode"
	dd if=/tmp/pattern of=/dev/d bs=64k oflag=direct status=none
	dd if=/tmp/pattern of=/dev/c bs=64k oflag=direct status=none
	power_cycle $RCFG/d
	power_cycle $CCFG/c
	expect_eq "$(cmp -n 1048576 /tmp/pattern /dev/d >/dev/null && echo kept)" kept "rnull"
	expect_eq "$(cmp -n 1048576 /tmp/pattern /dev/c >/dev/null && echo kept)" "" "null_blk"
}

test_cache_memory_is_freed() {
	local base
	expect_eq "$(load rnull nr_devices=0)" 0 "modprobe rnull"
	base=$(kernel_kib)
	mb_device $RCFG/d 64 4096 cache_size=16
	fill d 12
	expect_kib "$base" -ge 12 "12 MiB cached"
	# Power off drops the cache, and the store holds nothing.
	echo 0 >$RCFG/d/power
	expect_kib "$base" -lt 4 "after power off"
	echo 1 >$RCFG/d/power
	fill d 40 --end_fsync=1
	expect_kib "$base" -ge 40 "40 MiB written"
	rmdir $RCFG/d
	expect_kib "$base" -lt 4 "after rmdir"
}
