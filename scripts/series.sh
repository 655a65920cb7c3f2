#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Turns the commits on top of the pristine tag in the prepared kernel tree
# back into patches/ (one file per commit, in order, listed in
# patches/series). See README, "Changing the kernel crate".
source "$(dirname "$0")/common.sh"

git -C "$SRC" diff --quiet HEAD -- . ':!drivers/block/rnull' ||
	die "uncommitted changes in $SRC: commit them first"
rm -f "$REPO"/patches/*.patch
git -C "$SRC" format-patch -q --no-numbered --zero-commit --no-signature --abbrev=9 \
	-o "$REPO/patches" pristine..HEAD
(cd "$REPO/patches" && ls -- *.patch 2>/dev/null || true) >"$REPO/patches/series"
# The tree already holds exactly this series: record it so the next build
# does not re-apply it.
series_id >"$SRC/.rnull-series"
log "patches/series: $(wc -l <"$REPO/patches/series") patch(es)"
