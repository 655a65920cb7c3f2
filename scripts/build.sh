#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepares the 7.3 tree (pristine source + patches/, the driver's history
# included, + this repository's driver as drivers/block/rnull, which
# patches/ gives unless the driver was changed since make series),
# configures it from config/rnull.config and builds
# the kernel and its modules into $OUT. Reruns only redo what changed.
source "$(dirname "$0")/common.sh"

"$REPO/scripts/setup.sh"

GIT=(git -C "$SRC" -c user.name=rnull-harness -c user.email=rnull@localhost
	-c advice.detachedHead=false)
mapfile -t DRIVER_FILES < <(driver_files)

# 1. Pristine tree, kept as a git repository so that switching series only
#    touches the files that differ (and so only those get rebuilt).
if [ ! -d "$SRC/.git" ]; then
	log "unpacking linux-source-$KVER"
	rm -rf "$SRC" "$SRC.tmp" && mkdir -p "$SRC.tmp"
	tar -xJf "$CACHE/linux-source-$KVER.tar.xz" -C "$SRC.tmp" --strip-components=1
	# Debian's .gitignore ignores every top-level path; drop that block so
	# that git works normally in the tree.
	sed -i '/^# Debian packaging/,$d' "$SRC.tmp/.gitignore"
	git -C "$SRC.tmp" init -q -b rnull
	# No background gc: it would hold locks while the next steps run.
	git -C "$SRC.tmp" config gc.auto 0
	git -C "$SRC.tmp" config maintenance.auto false
	git -C "$SRC.tmp" add -A -f
	git -C "$SRC.tmp" -c user.name=rnull-harness -c user.email=rnull@localhost \
		commit -q -m "Linux $KVER (Debian linux-source-$KVER)"
	git -C "$SRC.tmp" tag pristine
	mv "$SRC.tmp" "$SRC"
fi

# 2. The patch series, re-applied onto the pristine tree whenever it changes.
series_id=$(series_id)
if [ "$(cat "$SRC/.rnull-series" 2>/dev/null)" != "$series_id" ]; then
	dirty=$("${GIT[@]}" status --porcelain -- . ':!drivers/block/rnull')
	[ -z "$dirty" ] || die "uncommitted changes in $SRC; commit them and run
'make series' (or discard them) first:
$dirty"
	log "applying patches/fixes/series and patches/series to the pristine tree"
	# Only the driver's files may differ from the tree's commit; step 3
	# copies them again.
	"${GIT[@]}" checkout -q -f -B rnull pristine
	"${GIT[@]}" clean -q -fd -- drivers/block/rnull
	while read -r p; do
		"${GIT[@]}" am -q "$REPO/patches/$p" || die "patches/$p does not apply"
	done < <(tree_patches)
	echo "$series_id" >"$SRC/.rnull-series"
fi

# 3. This repository's driver, as the last driver patch has it unless it
#    was changed since. Only changed files are copied, so an unchanged
#    driver is not rebuilt.
dst=$SRC/drivers/block/rnull
tree_files=()
for f in "${DRIVER_FILES[@]}"; do tree_files+=("$(in_tree "$f")"); done
while IFS= read -r f; do
	[[ " ${tree_files[*]} " == *" $f "* ]] || rm -f "$dst/$f"
done < <(cd "$dst" && find . -type f | sed 's|^\./||')
install_driver "$dst"

# 4. Configuration: tinyconfig + fragments, redone when a fragment changes
#    or when .config has lost one of their settings (a build of a driver
#    whose Kconfig lacks an option drops it, and kbuild does not bring it
#    back).
mkdir -p "$OUT"
# fragments_hold [quiet]: whether every setting of the fragments is in
# .config; names those that are not unless quiet.
fragments_hold() {
	local line want missing=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) want=$line ;;
		"# CONFIG_"*" is not set") want=${line#"# "} want="${want%% *}=" ;;
		*) continue ;;
		esac
		if [[ $want == *= ]]; then
			! grep -q -- "^$want" "$OUT/.config"
		else
			grep -qx -- "$want" "$OUT/.config"
		fi || {
			[ -n "${1:-}" ] || echo "config: '$line' did not stick (missing dependency?)" >&2
			missing=1
		}
	done < <(cat "${FRAGMENTS[@]}")
	return "$missing"
}
cfg_id=$(cat "${FRAGMENTS[@]}" | sha256sum | cut -c1-16)
if [ "$(cat "$OUT/.rnull-config" 2>/dev/null)" != "$cfg_id" ] || [ ! -f "$OUT/.config" ] ||
	! fragments_hold quiet; then
	log "configuring the kernel (tinyconfig + ${FRAGMENTS[*]#"$REPO/"})"
	"${KMAKE[@]}" -s tinyconfig >/dev/null
	KCONFIG_CONFIG="$OUT/.config" "$SRC/scripts/kconfig/merge_config.sh" \
		-m -O "$OUT" "$OUT/.config" "${FRAGMENTS[@]}" >/dev/null
	"${KMAKE[@]}" -s olddefconfig >/dev/null
	fragments_hold || die "the configuration fragments do not apply cleanly"
	"${KMAKE[@]}" -s rustavailable >/dev/null || die "Rust is not available"
	echo "$cfg_id" >"$OUT/.rnull-config"
fi

# 5. Build. Kbuild takes about half a minute to find that nothing changed,
#    so the state of the tree (its commit, any change on top of it, the
#    driver's files) and the configuration that the last successful build
#    saw are kept, and an identical state skips the build.
state=$({
	"${GIT[@]}" rev-parse HEAD
	"${GIT[@]}" diff HEAD
	"${GIT[@]}" ls-files -z --others --exclude-standard |
		(cd "$SRC" && xargs -0 -r sh -c 'for f; do echo "$f"; cat "$f"; done' sh)
	cat "$OUT/.config"
} | sha256sum | cut -c1-16)
if [ "$(cat "$OUT/.rnull-built" 2>/dev/null)" = "$state" ] && [ -d "$OUT/mods" ] &&
	[ -f "$OUT/arch/x86/boot/bzImage" ]; then
	log "the kernel in $OUT is up to date"
	exit 0
fi
estimate=
[ -f "$OUT/vmlinux" ] || estimate="12-15 min on 2 cores for a first build"
log "building the kernel and modules in $OUT${estimate:+ ($estimate)}"
rm -f "$OUT/.rnull-built"
with_progress "building the kernel" "${estimate%% on*}" "${KMAKE[@]}" -s bzImage modules
rm -rf "$OUT/mods"
"${KMAKE[@]}" -s INSTALL_MOD_PATH="$OUT/mods" INSTALL_MOD_STRIP=1 \
	modules_install >/dev/null
echo "$state" >"$OUT/.rnull-built"
