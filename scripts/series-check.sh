#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Checks the series in patches/ (make series-check):
# - it (patches/fixes/series, then patches/series) applies with git am to
#   pristine 7.3, the fixes first and alone, and gives exactly the tree that
#   make check tests: the prepared kernel tree's commits, and this
#   repository's driver in drivers/block/rnull, with its documentation as
#   Documentation/block/rnull.rst;
# - with --build, every prefix of it builds: the kernel and its modules,
#   mainline's rnull and then each step of the driver's growth, configured
#   as for make check. The prefixes are checked out one after the other in
#   the prepared tree and built in a directory of their own, seeded from
#   make check's, so each step only rebuilds what its patch changed (one
#   to three minutes a patch). The tree is put back afterwards; the next
#   make check rebuilds what the checkouts touched.
# checkpatch --strict on every patch is part of make lint.
source "$(dirname "$0")/common.sh"

build=0
[ "${1:-}" != --build ] || build=1


# 1. git am onto pristine, in a scratch worktree.
scratch_tree pristine
n=0
while read -r p; do
	git -C "$tmp/tree" -c user.name=rnull-harness -c user.email=rnull@localhost \
		am -q "$REPO/patches/$p" || die "patches/$p does not apply"
	n=$((n + 1))
done < <(all_patches)

# Everything but the documentation, as the tree's commits have it.
docs=(':!Documentation/block/rnull.rst' ':!Documentation/block/index.rst')
git -C "$tmp/tree" diff --quiet rnull -- . "${docs[@]}" || {
	git -C "$tmp/tree" diff --stat rnull -- . "${docs[@]}"
	die "the series differs from the tree make check builds (run make series)"
}
# The driver's documentation, as this repository has it, in the block index.
cmp -s "$REPO/Documentation/rnull.rst" "$tmp/tree/Documentation/block/rnull.rst" ||
	die "Documentation/rnull.rst differs from the series's (run make series)"
grep -qx '   rnull' "$tmp/tree/Documentation/block/index.rst" ||
	die "the series does not list rnull in Documentation/block/index.rst"
# The driver, as this repository has it.
[ "$(cd "$tmp/tree/drivers/block/rnull" && find . -type f | sed 's|^\./||' | sort)" = \
	"$(driver_files | while read -r f; do in_tree "$f"; done | sort)" ] ||
	die "the series's drivers/block/rnull has other files than the repository's driver"
while read -r f; do
	cmp -s "$REPO/$f" "$tmp/tree/drivers/block/rnull/$(in_tree "$f")" ||
		die "$f differs from the series's (commit the change to $SRC and" \
			"run make series: see Documentation/rnull-developing.rst)"
done < <(driver_files)
log "patches/fixes/series and patches/series: $n patches apply to pristine $KVER" \
	"and give the tested tree"
((build)) || exit 0

# 2. Every prefix builds.
[ "$(cat "$SRC/.rnull-series" 2>/dev/null)" = "$(series_id)" ] ||
	die "the tree does not hold patches/ yet: run make build first"
[ -f "$OUT/.config" ] || die "no $OUT/.config: run make build first"
git -C "$SRC" diff --quiet HEAD -- . ':!drivers/block/rnull' ||
	die "uncommitted changes in $SRC: commit them first"
bdir=$CACHE/build-series
[ -d "$bdir" ] || cp -a "$OUT" "$bdir"
cp "$OUT/.config" "$bdir/.config"
kmake=(make -C "$SRC" O="$bdir" "${KMAKE[@]:4}")

head=$(git -C "$SRC" rev-parse HEAD)
# The driver's files as the build left them: the repository's, which may
# differ from the tree's last commit until make series.
stashed=0
if [ -n "$(git -C "$SRC" status --porcelain -- drivers/block/rnull)" ]; then
	git -C "$SRC" stash push -q -u -- drivers/block/rnull
	stashed=1
fi
restore() {
	git -C "$SRC" checkout -q -f rnull
	git -C "$SRC" clean -q -fd -- drivers/block/rnull
	((!stashed)) || git -C "$SRC" stash pop -q ||
		echo "series-check: git stash pop failed in $SRC" >&2
	cleanup
}
trap restore EXIT

built() { # WHAT
	"${kmake[@]}" olddefconfig >/dev/null && "${kmake[@]}" -s >"$tmp/log" 2>&1 ||
		{ tail -n 40 "$tmp/log"; die "the build with $1 fails"; }
}
# SERIES_FROM=N starts at patch N (after a fix to it), the earlier ones
# having built; the patches are counted over both series, fixes first.
i=0
for c in $(git -C "$SRC" rev-list --reverse pristine.."$head"); do
	i=$((i + 1))
	((i >= ${SERIES_FROM:-1})) || continue
	((i <= ${SERIES_TO:-i})) || break
	git -C "$SRC" checkout -q "$c"
	log "building patches 1-$i: $(git -C "$SRC" log -1 --format=%s "$c")"
	built "patches 1-$i"
done
# SERIES_TO=N stops after patch N (N = the number of fixes: the fixes
# series alone).
[ -z "${SERIES_TO:-}" ] || { log "patches 1-$SERIES_TO build"; exit 0; }
# The last prefix is the tree make check builds; the documentation patch
# changes no built file.
log "every prefix of the series builds"
