#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Writes the series a maintainer reviews to patches/: a cover letter, the
# kernel crate's patches (the commits on top of the pristine tag in the
# prepared kernel tree, one per commit), the driver (this repository's
# files in place of mainline's minimal rnull, as one commit on top, with the
# message of patches/rnull.txt) and its documentation (the message of
# patches/rnull-doc.txt). patches/series lists the patches in order,
# without the cover letter. See README, "Changing the kernel crate" and
# "The series"; scripts/series-check.sh checks the result.
source "$(dirname "$0")/common.sh"

git -C "$SRC" diff --quiet HEAD -- . ':!drivers/block/rnull' ||
	die "uncommitted changes in $SRC: commit them first"


# The driver's commit, in a scratch worktree of the tree's HEAD (the kernel
# tree's own drivers/block/rnull holds the files a build copied, which may
# be older than the repository's).
scratch_tree HEAD
rm -rf "$tmp/tree/drivers/block/rnull"
while read -r f; do
	t=$tmp/tree/drivers/block/rnull/$(in_tree "$f")
	mkdir -p "$(dirname "$t")"
	cp "$REPO/$f" "$t"
done < <(driver_files)
git -C "$tmp/tree" add -A drivers/block/rnull
sed -n '/^[^#]/,$p' "$REPO/patches/rnull.txt" >"$tmp/message"
printf '\nSigned-off-by: %s <%s>\n' "$AUTHOR_NAME" "$AUTHOR_EMAIL" >>"$tmp/message"
# Dated as the repository's last change of the driver, so that the patch
# only changes when the driver does.
date=$(git -C "$REPO" log -1 --format=%aI -- $(driver_files))
GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
	git -C "$tmp/tree" -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL" \
	commit -q -F "$tmp/message"

# The driver's documentation, as a patch of its own after the driver's:
# Documentation/rnull.rst as Documentation/block/rnull.rst, listed in the
# block documentation's index after pr. Same date as the driver's commit.
cp "$REPO/Documentation/rnull.rst" "$tmp/tree/Documentation/block/rnull.rst"
grep -qx '   rnull' "$tmp/tree/Documentation/block/index.rst" ||
	sed -i 's/^   pr$/&\n   rnull/' "$tmp/tree/Documentation/block/index.rst"
grep -qx '   rnull' "$tmp/tree/Documentation/block/index.rst" ||
	die "Documentation/block/index.rst: no '   pr' line to list rnull after"
git -C "$tmp/tree" add Documentation/block/rnull.rst Documentation/block/index.rst
sed -n '/^[^#]/,$p' "$REPO/patches/rnull-doc.txt" >"$tmp/message"
printf '\nSigned-off-by: %s <%s>\n' "$AUTHOR_NAME" "$AUTHOR_EMAIL" >>"$tmp/message"
date=$(git -C "$REPO" log -1 --format=%aI -- $(driver_files) Documentation/rnull.rst)
GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
	git -C "$tmp/tree" -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL" \
	commit -q -F "$tmp/message"

rm -f "$REPO"/patches/*.patch
git -C "$tmp/tree" format-patch -q --numbered --cover-letter --zero-commit --no-signature \
	--abbrev=9 -o "$REPO/patches" pristine..HEAD

# The cover letter: its text from patches/cover-letter.txt (first line the
# subject), then the summary of the latest benchmark run, then git's
# shortlog and diffstat.
cover=$(ls "$REPO"/patches/0000-cover-letter.patch)
python3 "$REPO/scripts/cover-letter.py" "$cover" "$REPO/patches/cover-letter.txt" \
	"$REPO/bench/results"
# Dated as the last patch, not as the time of the run.
last_date=$(grep -m1 '^Date: ' "$(ls "$REPO"/patches/0*.patch | tail -n 1)")
sed -i "s/^Date: .*/$last_date/" "$cover"
(cd "$REPO/patches" && ls -- *.patch | grep -v '^0000-cover-letter\.patch$') >"$REPO/patches/series"
# The tree already holds exactly these kernel-crate patches: record it so
# the next build does not re-apply them.
series_id >"$SRC/.rnull-series"
log "patches/: a cover letter and $(wc -l <"$REPO/patches/series") patch(es)" \
	"($(kernel_patches | wc -l) of the kernel crate)"
