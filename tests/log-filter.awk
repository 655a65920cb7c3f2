# SPDX-License-Identifier: GPL-2.0
# Filters the kernel log for the warning checks of a VM run (tests/run.sh,
# scripts/init.sh, which runs it with busybox awk): drops what the tests
# announced as expected, between their markers (tests/lib.sh):
# - "known null_blk splats": everything, null_blk's known bugs;
# - "injected faults": the diagnostics the kernel prints with a stack trace
#   when an allocation fails on purpose (a kmem_cache that could not be
#   made, a page or vmalloc allocation failure), each up to the end of its
#   trace.
#   Anything else there, a WARNING or a BUG, stays.

/rnull-tests: known null_blk splats begin/ { splats = 1 }
/rnull-tests: injected faults begin/ { faults = 1 }
/rnull-tests: injected faults end/ { faults = 0; dump = 0 }

{
	if (faults && !dump && $0 ~ /kmem_cache_create.* failed with error|page allocation failure|vmalloc error:|SLUB: Unable to allocate/)
		dump = 1
	if (!splats && !dump)
		print
	if (dump && $0 ~ /<\/TASK>/)
		dump = 0
}

/rnull-tests: known null_blk splats end/ { splats = 0 }
