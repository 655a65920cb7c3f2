#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The rnull test suite. Runs inside the test VM (make check) as root: every
# function test_* in tests/t*.sh is one test, run in file order in a
# subshell that stops at its first failed assertion. KUnit results from the
# kernel log count as tests too. Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")" || exit 1
source ./lib.sh

[ "${RNULL_IN_VM:-}" = 1 ] || { echo "run.sh runs inside the VM: use 'make check'"; exit 2; }

passed=0
failed=0
report() { # status name [details]
	if [ "$1" = 0 ]; then
		passed=$((passed + 1))
		echo "ok      $2"
	else
		failed=$((failed + 1))
		echo "FAILED  $2"
		[ -z "${3:-}" ] || printf '%s\n' "$3"
	fi
}

only=${RNULL_TESTS:-}
for file in t[0-9]*.sh; do
	# shellcheck disable=SC1090
	source "./$file"
	for t in $(grep -o '^test_[a-z0-9_]*' "$file"); do
		[ -z "$only" ] || [[ $t == *$only* ]] || continue
		unload_all
		out=$( (set -e; "$t") 2>&1)
		report $? "${file%.sh}: ${t#test_}" "$out"
	done
done
unload_all

# KUnit: the kernel crate's doc tests ran at boot, the driver's own tests at
# each load of the module; each distinct case is one test.
ktap=$(dmesg | sed -E 's/^\[[^]]*\] ?//' | grep -E '^ {4,}(not )?ok [0-9]+ ' |
	sed -E 's/^ +//; s/^(not ok|ok) [0-9]+ /\1 /' | sort -u)
kunit_pass=$(grep -c '^ok ' <<<"$ktap" || true)
kunit_fail=$(grep '^not ok ' <<<"$ktap" | grep -v '# SKIP' || true)
passed=$((passed + kunit_pass))
if [ -n "$kunit_fail" ]; then
	report 1 "kunit: $(wc -l <<<"$kunit_fail") failed case(s)" "$kunit_fail"
fi
if [ "$kunit_pass" -lt 100 ]; then
	report 1 "kunit: only $kunit_pass passing cases in the kernel log"
fi
for suite in rnull_disk rnull_configfs rnull_storage; do
	grep -q "^ok [0-9]* $suite\$" <<<"$(dmesg | sed -E 's/^\[[^]]*\] ?//')" ||
		report 1 "kunit: suite $suite did not pass"
done
echo "kunit: $kunit_pass cases passed"

# Whatever the tests did, the kernel must not have complained.
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|KASAN:|UBSAN:|lockdep|circular locking|INFO: task .* blocked|soft lockup|Call Trace:' || true)
report "$([ -z "$bad" ] && echo 0 || echo 1)" "kernel log free of warnings" "$bad"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
