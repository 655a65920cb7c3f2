# SPDX-License-Identifier: GPL-2.0
# Module parameters: the disks they create, and the load failures, compared
# with null_blk loaded with the same parameters.
# shellcheck shell=bash

test_defaults_make_one_disk() {
	expect_eq "$(load rnull)" 0 "modprobe rnull"
	expect_eq "$(ls -d /sys/block/rnullb* | xargs -n1 basename)" rnullb0 "disks"
	expect_eq "$(</sys/block/rnullb0/size)" $((250 << 21)) "size (250 GiB)"
	expect_eq "$(</sys/block/rnullb0/queue/logical_block_size)" 512 "bs"
	expect_eq "$(</sys/block/rnullb0/queue/rotational)" 0 "rotational"
	# One submit queue and one poll queue.
	expect_eq "$(nr_hw_queues rnullb0)" 2 "hw queues"
	expect_eq "$(</sys/block/rnullb0/mq/0/nr_tags)" 64 "tags"
	expect_eq "$(load null_blk)" 0 "modprobe null_blk"
	expect_same "$(disk_shape rnullb0)" "$(disk_shape nullb0)" "default disk"
}

# compare_params PARAM=VALUE...: both drivers load (or fail) alike and make
# the same disks.
compare_params() {
	local r c d ours theirs
	# The two loads at once (and unload_all's two unloads).
	{
		load_to r rnull "$@"
		printf '%s' "$r" >/tmp/rnull-load
	} &
	load_to c null_blk "$@"
	wait $!
	attr_to r /tmp/rnull-load
	expect_same "$r" "$c" "modprobe $*"
	[ "$r" = 0 ] || return 0
	ours=(/sys/block/rnullb*)
	theirs=(/sys/block/nullb*)
	[ -e "${ours[0]}" ] || ours=()
	[ -e "${theirs[0]}" ] || theirs=()
	expect_same "${#ours[@]}" "${#theirs[@]}" "number of disks ($*)"
	for d in "${ours[@]}"; do
		d=${d#/sys/block/r}
		expect_same "$(disk_shape r"$d")" "$(disk_shape "$d")" "disk ${d#nullb} ($*)"
	done
	unload_all
}

test_params_shape_disks_like_null_blk() {
	compare_params nr_devices=3 gb=2 bs=4096 submit_queues=2 \
		hw_queue_depth=32 rotational=1 irqmode=0
	compare_params gb=0
	compare_params nr_devices=0
	compare_params bs=1024 gb=1 rotational=0 hw_queue_depth=1
	compare_params hw_queue_depth=20000
	compare_params submit_queues=64
	compare_params submit_queues=0
	compare_params bs=0
	compare_params irqmode=0
	compare_params irqmode=1
	compare_params rotational=y
	compare_params max_sectors=8 virt_boundary=1
	compare_params max_sectors=255 bs=4096
	compare_params max_sectors=-1
	compare_params virt_boundary=0 max_sectors=0
	compare_params home_node=0
	compare_params home_node=7
	compare_params home_node=-5
	compare_params use_per_node_hctx=1 submit_queues=2
	compare_params use_per_node_hctx=1 home_node=0
	compare_params poll_queues=0
	compare_params poll_queues=3 submit_queues=2
	compare_params poll_queues=-1
	compare_params irqmode=2 completion_nsec=50000
	compare_params irqmode=2 completion_nsec=0
	compare_params completion_nsec=-1
	compare_params blocking=1
	compare_params no_sched=1
	compare_params no_sched=-3 hw_queue_depth=2
	compare_params shared_tag_bitmap=1 submit_queues=2
	compare_params blocking=1 no_sched=1 shared_tag_bitmap=1
	compare_params shared_tags=1 nr_devices=3 submit_queues=2 poll_queues=2
	compare_params shared_tags=1 nr_devices=2 blocking=1 hw_queue_depth=8
	compare_params memory_backed=1 gb=1 nr_devices=2
	compare_params memory_backed=1 discard=1 gb=1
	compare_params discard=1
	compare_params memory_backed=1 cache_size=1 gb=1
	compare_params memory_backed=1 cache_size=1 fua=0 gb=1
	compare_params cache_size=3
	compare_params memory_backed=1 cache_size=-1 gb=1
}

test_bs_above_page_size_is_clamped_with_warning() {
	local m
	m=$(mark)
	compare_params bs=8192
	load rnull bs=8192 >/dev/null
	expect_eq "$(</sys/block/rnullb0/queue/logical_block_size)" 4096 "bs"
	dmesg_since "$m" | grep -q 'rnull: invalid block size' ||
		{ echo "    no 'invalid block size' warning"; return 1; }
}

test_bad_params_fail_like_null_blk() {
	local p
	for p in bs=1000 bs=256 bs=3 hw_queue_depth=0 queue_mode=1 queue_mode=3 \
		queue_mode=-1 irqmode=3 irqmode=-1 gb=abc nr_devices=-1 \
		rotational=2 submit_queues=1x virt_boundary=maybe hw_queue_depth=99999999999 \
		submit_queues=-99999999999 nr_devices=4294967296 mbps=-1 \
		completion_nsec=18446744073709551616; do
		compare_params "$p"
		expect_eq "$(ls -d /sys/module/rnull/initstate 2>/dev/null | wc -l)" 0 "rnull left loaded ($p)"
		expect_eq "$(ls /sys/block | grep -c '^rnullb')" 0 "disks left ($p)"
	done
}

test_repeated_params_take_the_last_value_like_null_blk() {
	# The kernel sets a parameter once per occurrence: the last value wins,
	# and a bad last value fails the load (a Rust parameter refused its
	# second value with EEXIST, which modprobe reports as success).
	local p
	for p in "irqmode=1 irqmode=7" "gb=abc gb=2" "bs=4096 bs=512" "nr_devices=2 nr_devices=3" \
		"queue_mode=1 queue_mode=2" "submit_queues=1 submit_queues=2"; do
		# shellcheck disable=SC2086 # one parameter per word
		compare_params $p
	done
	expect_eq "$(load rnull irqmode=1 irqmode=7)" EINVAL "modprobe rnull irqmode=1 irqmode=7"
	expect_eq "$(ls -d /sys/module/rnull/initstate 2>/dev/null | wc -l)" 0 "rnull left loaded"
	expect_eq "$(load rnull nr_devices=0 gb=3 gb=5 timeout=1,2,3,4 timeout=)" 0 "modprobe rnull"
	expect_eq "$(</sys/module/rnull/parameters/gb)" 5 "gb"
	expect_eq "$(</sys/module/rnull/parameters/timeout)" "" "timeout"
}

test_queue_mode_0_switches_to_mq_with_error() {
	local m
	m=$(mark)
	compare_params queue_mode=0
	dmesg_since "$m" | grep -q 'rnull: BIO-based IO path is no longer available' ||
		{ echo "    no pr_err about queue_mode 0"; return 1; }
}

test_negative_submit_queues_mean_one() {
	# Deliberate difference: C compares the int parameter with the unsigned
	# nr_cpu_ids, so a negative value becomes nr_cpu_ids rather than the 1
	# its "<= 0" branch intends. rnull uses 1.
	expect_eq "$(load rnull poll_queues=0 submit_queues=-3)" 0 "modprobe rnull"
	expect_eq "$(load null_blk poll_queues=0 submit_queues=-3)" 0 "modprobe null_blk"
	expect_eq "$(nr_hw_queues rnullb0)" 1 "rnull hw queues"
	expect_eq "$(nr_hw_queues nullb0)" "$(nproc)" "null_blk hw queues"
}

test_offline_home_node_param_falls_back_with_error() {
	local m
	m=$(mark)
	expect_eq "$(load rnull home_node=7)" 0 "modprobe rnull home_node=7"
	expect_eq "$(load null_blk home_node=7 poll_queues=0)" 0 "modprobe null_blk home_node=7"
	local drv
	for drv in rnull null_blk; do
		dmesg_since "$m" | grep -q "$drv: invalid home_node value" ||
			{ echo "    no error message about home_node from $drv"; return 1; }
	done
	# The fallback (no node) is what a configfs device inherits.
	mkdir $RCFG/d
	expect_eq "$(<$RCFG/d/home_node)" 4294967295 "home_node default after fallback"
}

test_negative_poll_queues_are_refused() {
	# null_blk makes its first tag set with one queue fewer and fails on a
	# single submit queue; with no disk at load it goes on with a huge count
	# that fails every power-on. rnull refuses the value at load, with an
	# error message.
	local m
	m=$(mark)
	expect_eq "$(load rnull nr_devices=0 poll_queues=-1)" EINVAL "modprobe rnull"
	dmesg_since "$m" | grep -q "rnull: invalid poll_queues -1" ||
		{ echo "    no error message about poll_queues"; return 1; }
}

test_negative_gb_is_refused() {
	# Deliberate difference: null_blk turns gb=-1 into a nonsense capacity.
	expect_eq "$(load rnull gb=-1)" EINVAL "rnull gb=-1"
}

test_unload_removes_everything() {
	expect_eq "$(load rnull nr_devices=4)" 0 "modprobe"
	expect_eq "$(ls /sys/block | grep -c '^rnullb')" 4 "disks"
	expect_eq "$(run modprobe -r rnull)" 0 "rmmod"
	expect_eq "$(ls /sys/block | grep -c '^rnullb')" 0 "disks after rmmod"
	expect_eq "$(ls -d $RCFG 2>/dev/null)" "" "configfs dir after rmmod"
	expect_eq "$(load rnull)" 0 "modprobe again"
	expect_eq "$(run modprobe -r rnull)" 0 "rmmod again"
}

# Mainline's rnull names its author; the port keeps him and adds itself.
test_modinfo_keeps_mainline_author() {
	local authors
	authors=$(modinfo -F author rnull)
	echo "$authors" | grep -qx "Andreas Hindborg" ||
		{ echo "    authors: $authors"; return 1; }
	echo "$authors" | grep -qx "The rnull developers" ||
		{ echo "    authors: $authors"; return 1; }
}

test_modinfo_describes_every_parameter() {
	local p
	for p in nr_devices gb bs irqmode hw_queue_depth submit_queues rotational \
		queue_mode max_sectors virt_boundary home_node use_per_node_hctx \
		completion_nsec poll_queues no_sched blocking shared_tags \
		shared_tag_bitmap memory_backed discard cache_size fua zoned zone_size \
		zone_capacity zone_nr_conv zone_max_open zone_max_active \
		zone_append_max_sectors zone_full; do
		modinfo -F parm rnull | grep -q "^$p:.\+" ||
			{ echo "    modinfo has no description of $p"; return 1; }
	done
}

# The names of rnull's parameters, as modinfo lists them.
rnull_params() { modinfo -F parm rnull | sed 's/:.*//'; }

test_sysfs_parameters_read_like_null_blk() {
	local line p n=0
	for line in "nr_devices=1" "nr_devices=0 gb=3 bs=4096 irqmode=0 hw_queue_depth=17 \
		submit_queues=1 rotational=1 max_sectors=64 virt_boundary=1 completion_nsec=123 \
		poll_queues=2 blocking=1 no_sched=7 shared_tags=1 shared_tag_bitmap=1 \
		memory_backed=1 discard=1 cache_size=5 fua=0 use_per_node_hctx=0 home_node=-1 \
		queue_mode=2 zoned=1 zone_size=8 zone_capacity=4 zone_nr_conv=1 zone_max_open=3 \
		zone_max_active=5 zone_append_max_sectors=64 zone_full=1 mbps=50000"; do
		# shellcheck disable=SC2086 # one parameter per word
		expect_eq "$(load rnull $line)" 0 "modprobe rnull $line" || return 1
		# shellcheck disable=SC2086
		expect_eq "$(load null_blk $line)" 0 "modprobe null_blk $line" || return 1
		for p in $(rnull_params); do
			n=$((n + 1))
			expect_same "$(</sys/module/rnull/parameters/$p)" \
				"$(</sys/module/null_blk/parameters/$p)" "$p after '${line:0:40}'" ||
				return 1
		done
		expect_eq "$(ls /sys/module/rnull/parameters | wc -l)" "$(rnull_params | wc -l)" \
			"parameter files"
		expect_eq "$(stat -c %a /sys/module/rnull/parameters/gb)" 444 "mode of a parameter"
		unload_all
	done
	expect_eq "$n" 68 "parameters compared"
	# A value null_blk rewrites at load is shown rewritten by null_blk, as
	# given by rnull (the value in effect is in each device's attributes).
	expect_eq "$(load rnull bs=8192 nr_devices=0)" 0 "modprobe rnull bs=8192"
	expect_eq "$(load null_blk bs=8192 nr_devices=0)" 0 "modprobe null_blk bs=8192"
	expect_eq "$(</sys/module/rnull/parameters/bs)" 8192 "rnull's bs"
	expect_eq "$(</sys/module/null_blk/parameters/bs)" 4096 "null_blk's bs"
	mkdir $RCFG/d
	expect_eq "$(<$RCFG/d/blocksize)" 4096 "the block size of a new rnull device"
}
