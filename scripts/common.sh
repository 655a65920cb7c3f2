# SPDX-License-Identifier: GPL-2.0
# Shared settings of the rnull harness; sourced by the other scripts.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything downloaded or built lives here, outside the checkout, so that it
# survives between runs and fresh clones.
CACHE=${RNULL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rnull}
KVER=7.3
SRC=$CACHE/linux-$KVER          # patched kernel source (a git tree)
# RNULL_KERNEL=debug selects the debug kernel (make check-debug): the same
# tree with config/debug.config on top, built in a directory of its own.
case ${RNULL_KERNEL:-} in
"") OUT=$CACHE/build ;;          # kernel build output (O=)
debug) OUT=$CACHE/build-debug ;;
*) echo "RNULL_KERNEL must be empty or debug" >&2; exit 2 ;;
esac
FRAGMENTS=("$REPO/config/rnull.config")
[ -z "${RNULL_KERNEL:-}" ] || FRAGMENTS+=("$REPO/config/$RNULL_KERNEL.config")
TOOLS=$CACHE/tools              # cargo-installed tools (bindgen)
BINDGEN=$TOOLS/bin/bindgen
BINDGEN_VERSION=0.72.1
FIO_STATIC=$TOOLS/fio/fio      # the tests' fio (scripts/setup.sh)
# Clang, lld and the LLVM tools of the LLVM that rustc-web links (22): with the
# same LLVM on both sides, CONFIG_RUST_INLINE_HELPERS can inline the C
# helpers into Rust (bookworm-security has clang-22).
LLVM_VER=22

# The kernel must be built with Debian's rustc-web, never rustup's toolchain,
# which lacks rust-src: every Rust tool is named explicitly.
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
export LIBCLANG_PATH=/usr/lib/llvm-$LLVM_VER/lib
KMAKE=(make -C "$SRC" O="$OUT" LLVM=-$LLVM_VER
	RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTFMT=/usr/bin/rustfmt
	CLIPPY_DRIVER=/usr/bin/clippy-driver BINDGEN="$BINDGEN"
	-j"$(($(nproc) + 1))")

# The files of the driver, relative to the repository: Kconfig, Kbuild, the
# top-level modules and the modules of their subdirectories (storage/ for
# storage.rs). In drivers/block/rnull each has the same name (in_tree),
# but for Kbuild: the kbuild makefile is Makefile there, as mainline's is.
# (The repository's Makefile holds the harness's commands, never copied.)
driver_files() {
	(
		cd "$REPO" || exit 1
		echo Kconfig
		echo Kbuild
		for f in *.rs; do
			echo "$f"
			[ ! -d "${f%.rs}" ] || find "${f%.rs}" -name '*.rs' | sort
		done
	)
}

# in_tree FILE: the name in drivers/block/rnull of FILE, a driver file.
in_tree() {
	if [ "$1" = Kbuild ]; then echo Makefile; else echo "$1"; fi
}

# install_driver DIR: copies the driver's files into DIR (a
# drivers/block/rnull), each under its in-tree name, those that differ only.
install_driver() {
	local f t
	while read -r f; do
		t=$1/$(in_tree "$f")
		mkdir -p "$(dirname "$t")"
		cmp -s "$REPO/$f" "$t" || cp "$REPO/$f" "$t"
	done < <(driver_files)
}

# scratch_tree REF: a worktree of the prepared tree at REF, in $tmp/tree ($tmp a
# new temporary directory); cleanup, run on exit, removes both.
scratch_tree() {
	tmp=$(mktemp -d)
	trap cleanup EXIT
	git -C "$SRC" worktree add -q --detach "$tmp/tree" "$1"
}
cleanup() {
	git -C "$SRC" worktree remove --force "$tmp/tree" 2>/dev/null || true
	rm -rf "$tmp"
}

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Runs "$@", saying every two minutes how long WHAT has taken, and how long
# it takes in all if ESTIMATE is given.
with_progress() { # what estimate command...
	local what=$1 estimate=$2 start=$SECONDS ticker rc=0
	shift 2
	(while sleep 120; do
		printf '    %s: %d min so far%s\n' "$what" $(((SECONDS - start) / 60)) \
			"${estimate:+, about $estimate in all}" >&2
	done) &
	ticker=$!
	"$@" || rc=$?
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null || true
	return "$rc"
}

# The identity of every commit of the series, in From: and Signed-off-by:.
AUTHOR_NAME="Seed dfc85cdf maintainers"
AUTHOR_EMAIL="maintainers@users.noreply.a-seed-dfc85cdf.example"

# The patches the prepared kernel tree holds as commits, relative to
# patches/, in order: the fixes (patches/fixes/series), then patches/series
# but its last patch, the driver's documentation, which scripts/series.sh
# writes from Documentation/rnull.rst. The driver's own patches are among
# them: the tree keeps the driver's history, feature by feature.
tree_patches() {
	all_patches | sed '$d'
}

# all_patches: every patch of both series, relative to patches/, in order.
all_patches() {
	sed 's|^|fixes/|' "$REPO/patches/fixes/series"
	cat "$REPO/patches/series"
}

# A fingerprint of the patches the tree holds: their list and contents.
series_id() {
	(cd "$REPO/patches" && tree_patches && cat $(tree_patches)) | sha256sum | cut -c1-16
}

# private_apt DIR LINE...: an apt configuration in DIR whose only sources are
# the sources.list LINEs, for downloads the system's sources cannot provide
# (they stay untouched); its lists are fetched, and APT_OPTS holds the
# options that select it.
private_apt() {
	local dir=$1
	shift
	rm -rf "$dir" && mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	printf '%s\n' "$@" >"$dir/sources.list"
	APT_OPTS=(-o Dir::Etc::sourcelist="$dir/sources.list"
		-o Dir::Etc::sourceparts=/dev/null
		-o Dir::State::Lists="$dir/lists"
		-o Dir::Cache="$dir/cache" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root)
	apt-get "${APT_OPTS[@]}" update -qq
}

DEBIAN_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# The Debian mirror this machine's apt sources use.
debian_mirror() {
	local mirror
	mirror=$(grep -hoE '^(URIs:|deb) +[^ ]+/debian/?( |$)' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		awk '{print $2; exit}' || true)
	[ -n "$mirror" ] || die "no Debian mirror found in the apt sources"
	echo "$mirror"
}

# The host checks of make check (compile-fail.sh, harness-check.sh) depend
# only on their inputs: when those are the same as at the last run that
# passed, its results stand and the check is not redone (the compile-fail
# builds and the harness's boots take most of a minute). The results are
# printed, and added to RESULTS if given, marked as reused.
# reuse_results NAME RESULTS INPUT...: succeeds if it reused them; sets
# RESULTS_KEY, for store_results, from the contents of the INPUT files.
reuse_results() {
	local name=$1 results=$2 dir=$CACHE/host-checks
	shift 2
	# A missing input (no kernel built yet, say) matches no key.
	RESULTS_KEY=$({ cat "$@" 2>/dev/null || echo "missing $RANDOM"; } | sha256sum | cut -c1-16)
	[ "$(cat "$dir/$name.key" 2>/dev/null)" = "$RESULTS_KEY" ] &&
		[ -s "$dir/$name.results" ] || return 1
	log "$name: inputs unchanged since it last passed; reusing its results"
	sed 's/$/ (reused: inputs unchanged)/' "$dir/$name.results" |
		tee -a ${results:+"$results"}
}
# store_results NAME LINE...: keeps the result lines of a run that passed.
store_results() {
	local name=$1 dir=$CACHE/host-checks
	shift
	printf '%s\n' "$@" | grep -q '^FAILED' && return
	mkdir -p "$dir"
	printf '%s\n' "$@" >"$dir/$name.results"
	echo "$RESULTS_KEY" >"$dir/$name.key"
}
