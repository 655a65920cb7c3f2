#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Lists the tests of tests/t*.sh as "file:test", the names RNULL_TESTS
# matches (make check RNULL_TESTS=list).
set -euo pipefail
cd "$(dirname "$0")/../tests"
for file in t[0-9]*.sh; do
	grep -o '^test_[a-z0-9_]*' "$file" | sed "s/^test_/${file%.sh}:/"
done
