#!/usr/bin/env bash
# check_abi.sh SRC_DIR LIBRI2N LIBRI2N_RUN ABI_LAYOUT - libri2n.so.0's binary interface
# against the lists kept in tests/abi/:
#  - the exported symbols of libri2n.so and of the shim libri2n-run.so (nm -D, "type name")
#    equal libri2n.syms and libri2n-run.syms: a symbol removed or changed (its type) breaks
#    programs built before, one added must be added to the list on purpose;
#  - debian/libri2n0.symbols names exactly libri2n.so's symbols (dpkg-gensymbols would fail
#    the package build later, and a new symbol needs the version that brings it);
#  - on x86_64, the public structs' layout and constants (abi_layout) equal layout.txt,
#    but for lines added: a struct grows at its end only (ri2n_stats_sz).
set -euo pipefail
usage="usage: check_abi.sh SRC_DIR libri2n.so libri2n-run.so abi_layout"
src=${1:?$usage} lib=${2:?$usage} shim=${3:?$usage} layout=${4:?$usage}
bad=0

# The list without its comments.
list() { grep -v '^#' "$1"; }

# Compares the symbols lib exports with the list; says what differs.
check_syms() { # LIB LIST
	local got want
	got=$(nm -D --defined-only "$1" | awk 'NF == 3 {print $2, $3}' | sort -k2)
	want=$(list "$2" | sort -k2)
	if [ "$got" != "$want" ]; then
		echo "${1##*/}: exported symbols differ from ${2#"$src"/} (< list, > library):"
		diff <(echo "$want") <(echo "$got") | grep '^[<>]' || true
		echo "  removed or changed: an ABI break; added: add it to the list (and the Debian"
		echo "  symbols file for libri2n) with the version that brings it"
		bad=1
	fi
}

check_syms "$lib" "$src/tests/abi/libri2n.syms"
check_syms "$shim" "$src/tests/abi/libri2n-run.syms"

deb=$(awk '/^ [^ ]+@Base / {sub(/@Base$/, "", $1); print $1}' "$src/debian/libri2n0.symbols" | sort)
ours=$(list "$src/tests/abi/libri2n.syms" | awk '{print $2}' | sort)
if [ "$deb" != "$ours" ]; then
	echo "debian/libri2n0.symbols and tests/abi/libri2n.syms name different symbols:"
	diff <(echo "$deb") <(echo "$ours") | grep '^[<>]' || true
	bad=1
fi

if [ "$(uname -m)" = x86_64 ]; then
	# every line of layout.txt must be in the output, unchanged (new ones may follow)
	missing=$(list "$src/tests/abi/layout.txt" | grep -vxF -f <("$layout") || true)
	if [ -n "$missing" ]; then
		echo "public structs or constants changed (tests/abi/layout.txt lines no longer true):"
		echo "$missing"
		echo "  now: $("$layout" | grep -F -f <(echo "$missing" | awk '{print $1 " "}') | paste -sd';')"
		bad=1
	fi
	added=$("$layout" | grep -vxF -f <(list "$src/tests/abi/layout.txt") || true)
	if [ -n "$added" ]; then
		echo "public structs or constants added: put them in tests/abi/layout.txt:"
		echo "$added"
		bad=1
	fi
fi
[ "$bad" -eq 0 ] || exit 1
echo "ABI as listed: $(list "$src/tests/abi/libri2n.syms" | wc -l) + $(list "$src/tests/abi/libri2n-run.syms" | wc -l) symbols, $(list "$src/tests/abi/layout.txt" | wc -l) layout lines"
