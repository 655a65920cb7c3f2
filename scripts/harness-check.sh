#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Usage: harness-check.sh [RESULTS]
# Checks the VM runner itself: a warning in the guest's kernel log must fail
# a run whose script succeeds (what make check, make bench and make insn
# rely on to reject runs with splats), and a warning a test marked as
# null_blk's must not. Prints one line per check, like tests/run.sh, and
# appends them to RESULTS if given. Run after scripts/build.sh.
source "$(dirname "$0")/common.sh"

results=${1:-}
work=$CACHE/harness-check
mkdir -p "$work"
# Inputs: the runner, the guest's init, the splat patterns and filter, this
# script, the kernel and QEMU.
reuse_results harness-check "$results" "$REPO"/scripts/{vm,init,common,harness-check}.sh \
	"$REPO"/tests/log-bad.ere "$REPO"/tests/log-filter.awk "$OUT/arch/x86/boot/bzImage" \
	<(qemu-system-x86_64 --version) && exit 0
out=()
check() { # status name [details]
	if [ "$1" = 0 ]; then
		out+=("ok      harness: $2")
	else
		out+=("FAILED  harness: $2${3:+
$3}")
	fi
}

# One boot: the marked warning comes first, then an unmarked one.
cat >"$work/splat.sh" <<'SCRIPT'
#!/bin/sh
echo "rnull-tests: known null_blk splats begin: harness check" >/dev/kmsg
echo "WARNING: a warning marked as null_blk's" >/dev/kmsg
echo "rnull-tests: known null_blk splats end" >/dev/kmsg
[ "$1" = unmarked ] && echo "WARNING: harness check" >/dev/kmsg
exit 0
SCRIPT
chmod +x "$work/splat.sh"
printf '#!/bin/sh\nexec %s unmarked\n' "$work/splat.sh" >"$work/unmarked.sh"
chmod +x "$work/unmarked.sh"

log "harness: checking that a splat in the guest fails the run"
status=0
RNULL_VM_IDLE=60 "$REPO/scripts/vm.sh" "$work/unmarked.sh" >"$work/unmarked.log" 2>&1 || status=$?
if [ "$status" = 124 ] && grep -q "WARNING: harness check" "$work/unmarked.log"; then
	check 0 "a warning in the guest's log fails a run that succeeds"
else
	check 1 "a warning in the guest's log fails a run that succeeds" \
		"    vm.sh exited with $status; $(tail -n 5 "$work/unmarked.log")"
fi
status=0
RNULL_VM_IDLE=60 "$REPO/scripts/vm.sh" "$work/splat.sh" >"$work/marked.log" 2>&1 || status=$?
check "$status" "a warning marked as null_blk's does not" "$(tail -n 5 "$work/marked.log")"

log "harness: checking that a user's script gets the guest's own tools"
cat >"$work/tools.sh" <<'SCRIPT'
#!/bin/sh
# make vm SCRIPT=...: GNU grep, not the static busybox of the tests.
grep --version 2>&1 | grep -q "GNU grep" ||
	{ echo "grep is $(command -v grep): $(grep --version 2>&1 | head -n 1)"; exit 1; }
SCRIPT
chmod +x "$work/tools.sh"
status=0
RNULL_VM_IDLE=60 "$REPO/scripts/vm.sh" "$work/tools.sh" >"$work/tools.log" 2>&1 || status=$?
check "$status" "a user's script runs with the guest's GNU tools" "$(tail -n 5 "$work/tools.log")"

printf '%s\n' "${out[@]}"
[ -z "$results" ] || printf '%s\n' "${out[@]}" >>"$results"
store_results harness-check "${out[@]}"
