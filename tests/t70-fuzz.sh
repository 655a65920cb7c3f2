# SPDX-License-Identifier: GPL-2.0
# The seeded fuzzer (tests/fuzz.py): random sequences of module, configfs and
# fio operations on both drivers, compared. RNULL_FUZZ_SEED replays a run,
# RNULL_FUZZ_OPS and RNULL_FUZZ_SECONDS bound it (12 s by default).
# shellcheck shell=bash

test_fuzz_against_null_blk() {
	local out status=0
	out=$(RNULL_FUZZ_SECONDS=${RNULL_FUZZ_SECONDS:-12} python3 ./fuzz.py 2>&1) || status=$?
	# The seed and the summary are shown even when the run passes.
	note "$(grep -E '^fuzz: seed [0-9]+:' <<<"$out" | tail -n 1)"
	[ "$status" = 0 ] || { echo "$out" | tail -n 60; return 1; }
}
