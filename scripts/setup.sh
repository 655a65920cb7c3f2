#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs everything the harness needs on a Debian 12 machine. Idempotent:
# when everything is present it only checks and returns within seconds.
source "$(dirname "$0")/common.sh"

# Before anything is installed: the machine must be one the harness knows.
# shellcheck disable=SC1091
os=$(. /etc/os-release 2>/dev/null && echo "${ID:-?} ${VERSION_ID:-?}")
[ "$os" = "debian 12" ] ||
	die "this harness sets up Debian 12 (bookworm); this is '$os'. Use a Debian 12 machine or container."
[ "$(uname -m)" = x86_64 ] ||
	die "this harness builds and boots an x86_64 kernel; this machine is $(uname -m)"
# Room for the kernel tree, a build and the tools (about 3.5 GB here), with
# some to spare, when they are not there yet.
mkdir -p "$CACHE" 2>/dev/null || die "cannot create $CACHE (RNULL_CACHE)"
if [ ! -d "$SRC" ] || [ ! -f "$OUT/vmlinux" ]; then
	free_kb=$(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }')
	((free_kb >= 5 * 1024 * 1024)) ||
		die "$CACHE has $((free_kb / 1024 / 1024)) GB free; the kernel tree and a build need about 5 GB"
fi

PKGS=(
	# kernel build
	make gcc flex bison bc libelf-dev libssl-dev cpio kmod xz-utils perl
	clang-$LLVM_VER lld-$LLVM_VER llvm-$LLVM_VER libclang-$LLVM_VER-dev
	# Rust for the kernel: rustc with its library source, and the cargo of
	# the same release, which builds bindgen-cli (all in bookworm-security)
	rustc-web rust-web-src rustfmt-web rust-web-clippy cargo-web
	# the VM and what runs inside it
	qemu-system-x86 busybox-static fio util-linux e2fsprogs jq
	# the tests' static fio (below): its libaio engine
	libaio-dev zlib1g-dev
	# zone append's real user in the tests: btrfs in zoned mode
	btrfs-progs
	# make lint: checkpatch's SPDX check (scripts/spdxcheck.py); the
	# documentation's reStructuredText (scripts/docs-check.py)
	python3-ply python3-git python3-docutils
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	[ "$(id -u)" = 0 ] ||
		die "these Debian packages are missing and installing them needs root: ${missing[*]}"
	log "installing Debian packages (a few minutes): ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# clang-22 and rustc-web 1.96 come from bookworm-security.
	for p in clang-$LLVM_VER rustc-web; do
		[ "$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')" != "(none)" ] ||
			die "apt finds no $p: add 'deb http://deb.debian.org/debian-security bookworm-security main' to the apt sources"
	done
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# CONFIG_RUST_INLINE_HELPERS (config/rnull.config) needs clang of rustc's LLVM.
rust_llvm=$(/usr/bin/rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
[ "$rust_llvm" = "$LLVM_VER" ] ||
	die "rustc links LLVM $rust_llvm, the harness uses clang $LLVM_VER (LLVM_VER in scripts/common.sh)"

# bindgen >= 0.71.1 is needed; bookworm only has 0.60.
# Built with Debian's cargo and rustc, not whatever cargo is on the PATH
# (rustup's, say), with cargo's downloads kept in the cache.
if ! "$BINDGEN" --version 2>/dev/null | grep -q "$BINDGEN_VERSION"; then
	log "building bindgen-cli $BINDGEN_VERSION from crates.io (about 2 minutes)"
	CARGO_HOME=$TOOLS/cargo-home RUSTC=/usr/bin/rustc with_progress "building bindgen-cli" "" \
		/usr/bin/cargo install --quiet --locked --root "$TOOLS" \
		bindgen-cli --version "$BINDGEN_VERSION"
fi

# Debian's linux-source-7.3 lives in trixie-backports only. Fetch it through
# a private apt configuration so the system's sources stay untouched.
TARBALL=$CACHE/linux-source-$KVER.tar.xz
if [ ! -s "$TARBALL" ]; then
	log "downloading Debian linux-source-$KVER (trixie-backports)"
	apt=$CACHE/apt
	mirror=$(debian_mirror)
	private_apt "$apt" "deb [signed-by=$DEBIAN_KEYRING] $mirror trixie-backports main"
	mkdir -p "$apt/deb"
	(cd "$apt/deb" && apt-get "${APT_OPTS[@]}" download linux-source-$KVER)
	dpkg -x "$apt"/deb/linux-source-"$KVER"_*.deb "$apt/x"
	mv "$apt"/x/usr/src/linux-source-$KVER.tar.xz "$TARBALL.tmp"
	mv "$TARBALL.tmp" "$TARBALL"
	rm -rf "$apt"
fi

# The tests run fio hundreds of times, and Debian's fio links 64 shared
# libraries: in the VM (TCG), loading them costs about 0.4 s a run. The
# tests use a static build of the same fio release instead (in
# $FIO_STATIC); make bench keeps Debian's. Two changes make each run start
# about 0.17 s sooner in the VM, and change nothing that fio measures:
# - fio starts its jobs and then looks every 100 ms whether they are ready
#   (run_threads() in backend.c): it looks every millisecond;
# - without the CPU clock, fio does not spin 65 ms at every start to
#   calibrate the TSC against clock_gettime(), which it then keeps time
#   with anyway in the VM (QEMU's CPU has no invariant TSC), as it does on
#   machines without the CPU clock.
# FIO_PATCHES names them in the version kept with the build, so that a build
# without them is redone.
FIO_PATCHES=start-poll-1ms,no-cpu-clock
fio_version=$(dpkg-query -W -f='${Version}' fio)
if [ "$(cat "$TOOLS/fio/version" 2>/dev/null)" != "$fio_version+$FIO_PATCHES" ] ||
	[ ! -x "$FIO_STATIC" ]; then
	log "building a static fio $fio_version from Debian's source"
	src=$CACHE/fio-src
	rm -rf "$src"
	mirror=$(debian_mirror)
	private_apt "$src" "deb-src [signed-by=$DEBIAN_KEYRING] $mirror bookworm main"
	(cd "$src" && apt-get "${APT_OPTS[@]}" source -qq --download-only "fio=$fio_version" >/dev/null)
	mkdir -p "$src/build"
	tar -xzf "$src"/fio_"${fio_version%-*}".orig.tar.gz -C "$src/build" --strip-components=1
	(
		cd "$src/build" || exit 1
		# The wait for the jobs to be ready: the first sleep of 100 ms in
		# backend.c, followed by the loop over the jobs.
		perl -0pi -e 's/do_usleep\(100000\);(\n\n\t+for \(i = 0; i < this_jobs)/do_usleep(1000);$1/' \
			backend.c
		sed -i 's/^#define ARCH_HAVE_CPU_CLOCK$//' arch/arch-x86_64.h
		grep -q 'do_usleep(1000);' backend.c && ! grep -q ARCH_HAVE_CPU_CLOCK arch/arch-x86_64.h
	) || die "fio $fio_version's source is not what scripts/setup.sh changes"
	(cd "$src/build" && ./configure --build-static --disable-native >/dev/null &&
		make -s -j"$(($(nproc) + 1))" fio >/dev/null 2>&1) || die "building fio failed"
	mkdir -p "$TOOLS/fio"
	cp "$src/build/fio" "$FIO_STATIC"
	echo "$fio_version+$FIO_PATCHES" >"$TOOLS/fio/version"
	rm -rf "$src"
fi
