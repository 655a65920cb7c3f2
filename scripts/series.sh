#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Writes the two series a maintainer reviews: in patches/fixes/, the fixes
# of mainline bugs, which apply to pristine 7.3 alone (the first commits of
# the prepared kernel tree, named in patches/fixes/subjects); in patches/,
# on top of them, a cover letter, then the other commits of the prepared
# tree, one patch each: the kernel crate's patches and the driver's, which
# grow mainline's minimal rnull feature by feature (the tree keeps the
# driver's history; its last commit must hold this repository's driver),
# and last the driver's documentation, written here from
# Documentation/rnull.rst with the message of patches/rnull-doc.txt. Each
# directory's series lists its patches in order, without the cover letter.
# See Documentation/rnull-developing.rst; scripts/series-check.sh checks
# the result.
source "$(dirname "$0")/common.sh"

git -C "$SRC" diff --quiet HEAD -- . ':!drivers/block/rnull' ||
	die "uncommitted changes in $SRC: commit them first"

# The tree's HEAD, in a scratch worktree: its driver must be this
# repository's (a change made since is committed to the tree first, into
# the driver patch it belongs to).
scratch_tree HEAD
rm -rf "$tmp/tree/drivers/block/rnull"
install_driver "$tmp/tree/drivers/block/rnull"
changed=$(git -C "$tmp/tree" status --porcelain -- drivers/block/rnull)
[ -z "$changed" ] || die "the driver differs from the last commit of $SRC:
$changed
Commit the change there, into the driver patch it belongs to (git commit
--fixup=<commit> -- drivers/block/rnull, then git rebase -i --autosquash),
or as a new patch; see Documentation/rnull-developing.rst."

# The driver's documentation, as a patch of its own after the driver's:
# Documentation/rnull.rst as Documentation/block/rnull.rst, listed in the
# block documentation's index after pr, dated as the repository's last
# change of Documentation/rnull.rst.
cp "$REPO/Documentation/rnull.rst" "$tmp/tree/Documentation/block/rnull.rst"
grep -qx '   rnull' "$tmp/tree/Documentation/block/index.rst" ||
	sed -i 's/^   pr$/&\n   rnull/' "$tmp/tree/Documentation/block/index.rst"
grep -qx '   rnull' "$tmp/tree/Documentation/block/index.rst" ||
	die "Documentation/block/index.rst: no '   pr' line to list rnull after"
git -C "$tmp/tree" add Documentation/block/rnull.rst Documentation/block/index.rst
sed -n '/^[^#]/,$p' "$REPO/patches/rnull-doc.txt" >"$tmp/message"
printf '\nSigned-off-by: %s <%s>\n' "$AUTHOR_NAME" "$AUTHOR_EMAIL" >>"$tmp/message"
date=$(git -C "$REPO" log -1 --format=%aI -- Documentation/rnull.rst)
GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
	git -C "$tmp/tree" -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL" \
	commit -q -F "$tmp/message"

# The fixes: the first commits of the tree, those patches/fixes/subjects
# names, in its order. They apply to pristine 7.3 alone, as a series of
# their own.
mapfile -t fix_subjects < <(grep -v '^#' "$REPO/patches/fixes/subjects")
nfix=${#fix_subjects[@]}
mapfile -t subjects < <(git -C "$tmp/tree" log --reverse --format=%s pristine..HEAD)
for ((i = 0; i < nfix; i++)); do
	[ "${subjects[i]}" = "${fix_subjects[i]}" ] ||
		die "commit $((i + 1)) of the tree is \"${subjects[i]}\", not the fix" \
			"\"${fix_subjects[i]}\" of patches/fixes/subjects"
done
fixes_end=$(git -C "$tmp/tree" rev-list --reverse pristine..HEAD | sed -n "${nfix}p")

# cover_letter DIR TEXT RESULTS: fills in DIR's cover letter from TEXT, dated
# as DIR's last patch, and lists DIR's patches in DIR/series.
cover_letter() {
	local cover=$1/0000-cover-letter.patch last_date
	python3 "$REPO/scripts/cover-letter.py" "$cover" "$2" "$3"
	last_date=$(grep -m1 '^Date: ' "$(ls "$1"/0*.patch | tail -n 1)")
	sed -i "s/^Date: .*/$last_date/" "$cover"
	(cd "$1" && ls -- *.patch | grep -v '^0000-cover-letter\.patch$') >"$1/series"
}

rm -f "$REPO"/patches/*.patch "$REPO"/patches/fixes/*.patch
git -C "$tmp/tree" format-patch -q --numbered --cover-letter --zero-commit --no-signature \
	--abbrev=9 -o "$REPO/patches/fixes" pristine.."$fixes_end"
git -C "$tmp/tree" format-patch -q --numbered --cover-letter --zero-commit --no-signature \
	--abbrev=9 -o "$REPO/patches" "$fixes_end"..HEAD

# The cover letters: their text from cover-letter.txt (first line the
# subject), the feature series's with the summary of the latest benchmark
# run, then git's shortlog and diffstat.
cover_letter "$REPO/patches/fixes" "$REPO/patches/fixes/cover-letter.txt" "$REPO/bench/results"
cover_letter "$REPO/patches" "$REPO/patches/cover-letter.txt" "$REPO/bench/results"
# The tree already holds exactly these kernel-crate patches: record it so
# the next build does not re-apply them.
series_id >"$SRC/.rnull-series"
log "patches/fixes/: a cover letter and $(wc -l <"$REPO/patches/fixes/series") fix(es);" \
	"patches/: a cover letter and $(wc -l <"$REPO/patches/series") patch(es)" \
	"($(tree_patches | wc -l) of them held by $SRC)"
