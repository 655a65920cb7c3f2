#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The host side of make check and make check-debug (RNULL_KERNEL=debug): the
# host's checks first (misuses of the request API that must not compile, the
# documentation against the code, the harness's settings, the VM runner's
# handling of splats, the benchmark harness on a small scale; not on the
# debug kernel), then
# tests/run.sh in the VM, which counts their results with its own. The
# results also go, in KTAP, to results.ktap in a directory of the cache
# (check-results, or check-debug-results), which the guest writes through
# RNULL_VM_OUT. Run after scripts/build.sh.
source "$(dirname "$0")/common.sh"

results=$CACHE/check${RNULL_KERNEL:+-$RNULL_KERNEL}-results
mkdir -p "$results"
rm -f "$results/results.ktap"
host=
if [ -z "${RNULL_KERNEL:-}" ]; then
	host=$results/host
	"$REPO/scripts/compile-fail.sh" "$host" >/dev/null
	python3 "$REPO/scripts/docs-check.py" >>"$host" || true
	"$REPO/scripts/settings-check.sh" >>"$host" || true
	"$REPO/scripts/harness-check.sh" "$host" >/dev/null
	"$REPO/scripts/bench-check.sh" "$host" >/dev/null
fi
rc=0
RNULL_HOST_RESULTS=$host RNULL_KTAP=$results/results.ktap RNULL_VM_OUT=$results \
	RNULL_VM_NUMA=${RNULL_VM_NUMA:-2} RNULL_FIO=1 \
	"$REPO/scripts/vm.sh" "$REPO/tests/run.sh" || rc=$?
if [ ! -s "$results/results.ktap" ]; then
	echo "check: the guest wrote no $results/results.ktap" >&2
	exit 1
fi
echo "check: KTAP results in $results/results.ktap"
exit "$rc"
