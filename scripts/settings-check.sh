#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host checks of make check for the harness's settings: a bad BENCH_* value
# stops bench.sh before anything runs, a bad RNULL_VM_* or RNULL_TESTS value
# stops vm.sh before the boot, and RNULL_TESTS=list lists every test. Prints
# one "ok" or "FAILED" line a check.
source "$(dirname "$0")/common.sh"

result() { # status name [details]
	if [ "$1" = 0 ]; then
		echo "ok      settings: $2"
	else
		echo "FAILED  settings: $2${3:+
$(sed 's/^/        /' <<<"$3")}"
	fi
}
# refused NAME EXPECTED COMMAND...: the command exits 2 (bench) or 1 (vm)
# at once, saying EXPECTED.
refused() {
	local name=$1 expected=$2 out rc=0
	shift 2
	out=$(timeout 20 "$@" 2>&1) || rc=$?
	[[ $rc != 0 && $rc != 124 && $out == *"$expected"* ]]
	result $? "$name" "exit $rc: $out"
}

bench=$REPO/bench/bench.sh
refused "a misspelt BENCH_ZONED stops make bench first" "BENCH_ZONED: 'zwrtie'" \
	env BENCH_CHECK_ONLY=1 BENCH_ZONED=zwrtie "$bench"
refused "a block size without its unit stops make bench first" "BENCH_BS: '4'" \
	env BENCH_CHECK_ONLY=1 BENCH_BS=4 "$bench"
refused "a misspelt settings group stops make bench first" "BENCH_SETTINGS: 'cahce16'" \
	env BENCH_CHECK_ONLY=1 BENCH_SETTINGS=cache512,cahce16 "$bench"
rc=0
out=$(BENCH_CHECK_ONLY=1 BENCH_MODE=quick "$bench" 2>&1) || rc=$?
result "$rc" "the settings of the quick mode pass the checks" "$out"

vm=$REPO/scripts/vm.sh
refused "a bad RNULL_VM_MEM stops the VM before it boots" "RNULL_VM_MEM: '2'" \
	env RNULL_VM_MEM=2 "$vm" /bin/true
refused "an RNULL_TESTS bash cannot compile stops the VM before it boots" \
	"RNULL_TESTS: 't80('" env RNULL_TESTS='t80(' "$vm" /bin/true

listed=$(make -s -C "$REPO" check RNULL_TESTS=list 2>&1)
want=$(cat "$REPO"/tests/t[0-9]*.sh | grep -c '^test_[a-z0-9_]*')
[[ $(wc -l <<<"$listed") == "$want" && $listed == *"t80-zoned:zone_state_machine_matches_null_blk"* ]]
result $? "RNULL_TESTS=list lists every test as file:test" "$listed"
