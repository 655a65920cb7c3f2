#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Usage: compile-fail.sh [RESULTS]
# Checks that the misuses of the request API in tests/compile-fail/misuse.rs
# do not compile: the file is built as an out-of-tree module against the
# built kernel once without a misuse (it must compile) and once with each
# misuse listed in tests/compile-fail/misuses (it must fail, with the listed
# error). Prints one line per check, like tests/run.sh, and writes them to
# RESULTS if given, for the VM's test run to count. Run after scripts/build.sh.
source "$(dirname "$0")/common.sh"

results=${1:-}
dir=$REPO/tests/compile-fail
work=$CACHE/compile-fail
# Inputs: the misuses, this script, and the kernel crate they build against.
[ -z "$results" ] || : >"$results"
reuse_results compile-fail "$results" "$dir"/* "$0" "$OUT/.config" \
	"$OUT"/rust/lib*.rmeta <(rustc --version) && exit 0
rm -rf "$work" && mkdir -p "$work"

mapfile -t misuses < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$dir/misuses")
# One object per misuse, all built by one make: each gets its own copy of
# the source and its own --cfg.
{
	echo "# SPDX-License-Identifier: GPL-2.0"
	echo "obj-m := control.o"
	cp "$dir/misuse.rs" "$work/control.rs"
	for line in "${misuses[@]}"; do
		m=${line%% *}
		cp "$dir/misuse.rs" "$work/$m.rs"
		echo "obj-m += $m.o"
		echo "RUSTFLAGS_$m.o := --cfg 'misuse=\"$m\"'"
	done
} >"$work/Kbuild"

log "compile-fail: building ${#misuses[@]} misuses of the request API and module!"
# -k: go on after the failures; -j1: the output of each object in one block,
# headed by its RUSTC line.
"${KMAKE[@]}" -k -j1 M="$work" modules >"$work/build.log" 2>&1 || true

out=()
check() { # status name [details]
	if [ "$1" = 0 ]; then
		out+=("ok      compile-fail: $2")
	else
		out+=("FAILED  compile-fail: $2${3:+
$3}")
	fi
}
# The output of the object NAME.
block() {
	awk -v obj="$1.o" '
		/^  [A-Z]+ / { inside = $NF == obj }
		inside' "$work/build.log"
}

if [ -f "$work/control.o" ]; then
	check 0 "the API used correctly compiles"
else
	check 1 "the API used correctly compiles" "$(block control | tail -n 30)"
fi
for line in "${misuses[@]}"; do
	m=${line%% *}
	want=$(sed -E 's/^[^ ]+ +//' <<<"$line")
	if [ -f "$work/$m.o" ]; then
		check 1 "$m" "    compiled, but must not"
	elif block "$m" | grep -qF -- "$want"; then
		check 0 "$m"
	else
		check 1 "$m" "    expected '$want'; the compiler said:
$(block "$m" | grep -E '^(error|warning)' | head -n 5)"
	fi
done

printf '%s\n' "${out[@]}"
[ -z "$results" ] || printf '%s\n' "${out[@]}" >"$results"
store_results compile-fail "${out[@]}"
