#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The quality checks of the project: rustfmt, clippy and checkpatch --strict
# on the driver and on the patch series, and the documentation against the
# code. Run after scripts/build.sh.
source "$(dirname "$0")/common.sh"

fail=0
cd "$SRC"

log "rustfmtcheck"
"${KMAKE[@]}" -s rustfmtcheck || fail=1

log "clippy (driver and kernel crate)"
# Clippy changes the command line, so kbuild rebuilds what it checks; the
# next normal build rebuilds it once more without clippy.
# A second lint with nothing changed in between would find the objects
# built by the first one's clippy, rebuild nothing and report nothing: the
# driver's files are touched so that it is always checked.
touch drivers/block/rnull/*.rs drivers/block/rnull/*/*.rs
out=$("${KMAKE[@]}" CLIPPY=1 rust/ drivers/block/rnull/ 2>&1) || fail=1
if grep -E '^(warning|error)' <<<"$out"; then
	echo "$out"
	fail=1
fi

log "checkpatch --strict"
# checkpatch runs scripts/spdxcheck.py with the first python3 in PATH; the
# system's has the modules it needs (setup.sh).
export PATH=/usr/bin:$PATH
# The driver's patch adds files to drivers/block/rnull/, which MAINTAINERS
# already covers: checkpatch's question whether MAINTAINERS needs updating
# is answered here instead.
grep -q '^F:[[:space:]]*drivers/block/rnull/$' MAINTAINERS ||
	{ echo "MAINTAINERS does not cover drivers/block/rnull/"; fail=1; }
# The prepared tree is Debian's source release, without git history:
# checkpatch cannot look up the commits that Fixes: tags name, and would
# call every one unknown. Each was checked against mainline's history when
# it was written.
while read -r p; do
	p=$REPO/patches/$p
	ignore=(--ignore UNKNOWN_COMMIT_ID)
	! grep -q '^Subject: \[PATCH[^]]*\] block: rnull:' "$p" ||
		ignore+=(--ignore FILE_PATH_CHANGES)
	scripts/checkpatch.pl --strict --quiet --no-summary "${ignore[@]}" "$p" || fail=1
done < <(all_patches)
scripts/checkpatch.pl --strict --quiet --no-summary --no-tree -f \
	$(driver_files | sed "s|^|$REPO/|") || fail=1

log "the documentation against the code (scripts/docs-check.py)"
python3 "$REPO/scripts/docs-check.py" | grep -v '^ok ' || true
python3 "$REPO/scripts/docs-check.py" >/dev/null || fail=1

((fail == 0)) && log "lint: clean" || die "lint: problems found (see above)"
