#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The rnull test suite. Runs inside the test VM (make check) as root: every
# function test_* in tests/t*.sh is one test, run in file order in a
# subshell that stops at its first failed assertion. KUnit results from the
# kernel log count as tests too. Ends with "N passed, N failed", after a
# line that splits the count by kind; with RNULL_KTAP set, also writes the
# results there in KTAP (version 1).
set -u
cd "$(dirname "$0")" || exit 1
source ./lib.sh

[ "${RNULL_IN_VM:-}" = 1 ] || { echo "run.sh runs inside the VM: use 'make check'"; exit 2; }

# The static fio that make check builds (scripts/setup.sh): Debian's links
# 64 shared libraries, whose loading costs about 0.4 s a run in the VM.
if [ -n "${RNULL_FIO:-}" ]; then
	[ -x "$RNULL_FIO" ] || { echo "no fio at $RNULL_FIO (scripts/setup.sh builds it)"; exit 1; }
	mkdir -p /tmp/rnull-bin
	ln -sf "$RNULL_FIO" /tmp/rnull-bin/fio
	PATH=/tmp/rnull-bin:$PATH
fi

passed=0
failed=0
# The KTAP lines of the results so far, and the counts by kind: rnull's
# tests (tests/t*.sh and the log check), the host's checks, KUnit cases.
ktap_lines=()
ktap_count=0
declare -A kind_count=([tests]=0 [host]=0 [kunit]=0)
ktap_add() { # ok|"not ok" name [details] [seconds]
	ktap_count=$((ktap_count + 1))
	ktap_lines+=("$1 $ktap_count $2")
	[ -z "${3:-}" ] || ktap_lines+=("$(sed 's/^/# /' <<<"$3")")
}
report() { # status name [details] [seconds] [kind]
	local took=${4:+ (${4} s)}
	kind_count[${5:-tests}]=$((kind_count[${5:-tests}] + 1))
	if [ "$1" = 0 ]; then
		passed=$((passed + 1))
		echo "ok      $2$took"
		ktap_add ok "$2" "" "${4:-}"
	else
		failed=$((failed + 1))
		echo "FAILED  $2$took"
		[ -z "${3:-}" ] || printf '%s\n' "$3"
		ktap_add "not ok" "$2" "${3:-}" "${4:-}"
	fi
}

# The host's checks, run before the VM booted (scripts/compile-fail.sh).
if [ -n "${RNULL_HOST_RESULTS:-}" ]; then
	if [ -r "$RNULL_HOST_RESULTS" ]; then
		while IFS= read -r line; do
			case $line in
			"ok      "*)
				passed=$((passed + 1)) kind_count[host]=$((kind_count[host] + 1))
				ktap_add ok "${line#ok      }"
				;;
			"FAILED  "*)
				failed=$((failed + 1)) kind_count[host]=$((kind_count[host] + 1))
				ktap_add "not ok" "${line#FAILED  }"
				;;
			*) ktap_lines+=("# $line") ;;
			esac
			printf '%s\n' "$line"
		done <"$RNULL_HOST_RESULTS"
	else
		report 1 "host checks: no results in $RNULL_HOST_RESULTS" "" "" host
	fi
fi

# The driver's KUnit suites run at each load of the module, which costs
# 40 ms in the VM: they run at a first load here, and not again at the
# hundreds of loads of the tests (a glob that matches no suite).
load rnull nr_devices=0 >/dev/null
unload_all
echo 'rnull-suites-ran-once' >/sys/module/kunit/parameters/filter_glob

# RNULL_TESTS selects tests by a regular expression matched against
# "file:test" and "file: test" (the kernel command line that carries it to
# the VM drops spaces, so older selections wrote "file:.test").
only=${RNULL_TESTS:-}
for file in t[0-9]*.sh; do
	# shellcheck disable=SC1090
	source "./$file"
	for t in $(grep -o '^test_[a-z0-9_]*' "$file"); do
		[ -z "$only" ] || [[ "${file%.sh}:${t#test_}" =~ $only ]] ||
			[[ "${file%.sh}: ${t#test_}" =~ $only ]] || continue
		unload_all
		save_kernel_log
		start=${EPOCHREALTIME/./}
		# Without starting programs or a second subshell: each costs a few
		# milliseconds in the VM, and there are hundreds of tests.
		: >/tmp/rnull-test-notes
		out=$(set -e; "$t" 2>&1)
		status=$?
		took=$(((${EPOCHREALTIME/./} - start) / 100000))
		report $status "${file%.sh}: ${t#test_}" "$out" $((took / 10)).$((took % 10))
		[ ! -s /tmp/rnull-test-notes ] || cat /tmp/rnull-test-notes
	done
done
unload_all
save_kernel_log

# KUnit: the kernel crate's suites ran at boot, the driver's own at each
# load of the module; each distinct case is one test, and each suite below
# must have run and passed.
# - KUNIT_BOOT_SUITES, built into the kernel: the kernel crate's doc tests
#   (rust_doctests_kernel) and the #[kunit_tests] of rust/kernel that
#   config/*.config builds (`grep -rn 'kunit_tests(' rust/kernel` in the
#   kernel tree, less those under a #[cfg(CONFIG_RUST_..._KUNIT_TEST)]:
#   CONFIG_RUST_KUNIT_TESTS is off). A boot's kernel log lists them as its
#   top-level KTAP lines, before rnull is loaded:
#   `dmesg | grep -E '^\[[^]]*\] (not )?ok [0-9]+ '`.
# - KUNIT_MODULE_SUITES: the driver's #[kunit_tests(...)] in ../*.rs and
#   ../storage/ (`grep -n 'kunit_tests(' ../*.rs ../storage/*.rs`); one missing
#   here fails the run.
KUNIT_BOOT_SUITES=(rust_module_param rust_kernel_fmt rust_netlink rust_block_badblocks
	rust_spinlock_irq_condvar rust_doctests_kernel)
KUNIT_MODULE_SUITES=(rnull_settings rnull_zoned rnull_storage rnull_configfs rnull_badblocks)
klog=$(kernel_log | sed -E 's/^\[[^]]*\] ?//')
ktap=$(grep -E '^ {4,}(not )?ok [0-9]+ ' <<<"$klog" |
	sed -E 's/^ +//; s/^(not ok|ok) [0-9]+ /\1 /' | sort -u)
kunit_pass=$(grep -c '^ok ' <<<"$ktap" || true)
kunit_fail=$(grep '^not ok ' <<<"$ktap" | grep -v '# SKIP' || true)
passed=$((passed + kunit_pass))
kind_count[kunit]=$((kind_count[kunit] + kunit_pass))
while IFS= read -r case; do
	[[ $case != "ok "* ]] || ktap_add ok "kunit: ${case#ok }"
done <<<"$ktap"
if [ -n "$kunit_fail" ]; then
	report 1 "kunit: $(wc -l <<<"$kunit_fail") failed case(s)" "$kunit_fail" "" kunit
fi
for suite in $(grep -hoE 'kunit_tests\([a-z0-9_]+\)' ../*.rs ../storage/*.rs |
	sed -E 's/.*\((.*)\)/\1/'); do
	[[ " ${KUNIT_MODULE_SUITES[*]} " == *" $suite "* ]] ||
		report 1 "kunit: suite $suite of the driver is not in KUNIT_MODULE_SUITES (tests/run.sh)" "" "" kunit
done
# The driver's suites run only when a test loads rnull, which a run of some
# tests (RNULL_TESTS) may never do: such a run requires only the suites of the
# boot, and those of the driver only if they ran.
for suite in "${KUNIT_BOOT_SUITES[@]}" "${KUNIT_MODULE_SUITES[@]}"; do
	grep -q "^ok [0-9]* $suite\$" <<<"$klog" && continue
	[[ -n "$only" && " ${KUNIT_MODULE_SUITES[*]} " == *" $suite "* ]] &&
		! grep -qE "^(not )?ok [0-9]+ $suite( |\$)" <<<"$klog" && continue
	report 1 "kunit: suite $suite did not pass" "" "" kunit
done
echo "kunit: $kunit_pass cases passed"

# On the debug kernel (make check-debug), kmemleak looks for memory that
# nothing references any more. An object is only reported once it is older
# than five seconds and was seen unreferenced by two scans. Leaks of rnull,
# of the kernel crate's block code or of null_blk fail the run; the others
# (the boot's own, if any) are shown.
if [ -w /sys/kernel/debug/kmemleak ]; then
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(cat /sys/kernel/debug/kmemleak)
	ours=$(awk 'BEGIN { RS = "unreferenced object" } /rnull|null_blk|5block2mq|5owned/ { print "unreferenced object" $0 }' <<<"$leaks")
	report "$([ -z "$ours" ] && echo 0 || echo 1)" "kmemleak: nothing of rnull, null_blk or the block crate leaked" "$ours"
	[ -z "$leaks" ] || [ -n "$ours" ] ||
		echo "        kmemleak reports $(grep -c '^unreferenced object' <<<"$leaks") other objects"
fi

# Whatever the tests did, the kernel must not have complained.
# A report is shown whole: from a few lines before its first line to the end
# of its first stack trace.
# The lines that make a report: tests/log-bad.ere, one extended regular
# expression a line (also used by scripts/init.sh, fuzz.py and bench.sh).
bad_re=$(paste -sd'|' log-bad.ere)
bad=$(checked_log | awk -v re="$bad_re" '
	{ line[NR] = $0 }
	!first && $0 ~ re { first = NR }
	first && !last && /<\/TASK>|---\[ end trace/ { last = NR }
	END {
		if (!first) exit
		if (!last || last > first + 80) last = first + 80
		for (i = (first > 8 ? first - 8 : 1); i <= last; i++) print line[i]
	}')
report "$([ -z "$bad" ] && echo 0 || echo 1)" "kernel log free of warnings" "$bad"

echo "counted: ${kind_count[tests]} of rnull's tests (tests/t*.sh and checks of the run)," \
	"${kind_count[host]} host checks, ${kind_count[kunit]} KUnit cases"
if [ -n "${RNULL_KTAP:-}" ]; then
	{
		echo "KTAP version 1"
		echo "1..$ktap_count"
		printf '%s\n' "${ktap_lines[@]}"
	} >"$RNULL_KTAP" || echo "cannot write $RNULL_KTAP"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
