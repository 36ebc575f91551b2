#!/usr/bin/env bash
# test_man.sh SRC_DIR BUILD_DIR VERSION MANDIR - the man pages against the programs they describe.
#
# Installs the build into a scratch prefix, then for every program it put in bin/:
#  - man/<program>.1 exists in the sources and was installed to MANDIR/man1;
#  - the page has the sections a reader looks for, names the project's VERSION, and renders
#    with `groff -man -ww` without one warning;
#  - `<program> --help` exits 0 with the usage on stdout, and that usage mentions every option
#    the page's OPTIONS section lists;
#  - `<program> --version` prints "<program> VERSION" and exits 0;
#  - a bad option still fails (non-zero) with the usage on stderr and nothing on stdout.
# No root needed. Exit 77 (skipped) when groff is not installed (tools/deps.sh installs it).
set -uo pipefail

src=$1 build=$2 version=$3 mandir=$4
command -v groff >/dev/null || { echo "SKIP: groff is not installed (groff-base)"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cmake --install "$build" --prefix "$tmp/p" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
# the installed programs find the installed libri2n.so (lib/ or lib/<arch>/)
LD_LIBRARY_PATH=$(find "$tmp/p" -name 'libri2n.so*' -printf '%h:' | sort -u)${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH

# The options a page's OPTIONS section lists: every -x / --name in its .TP tag lines.
page_options() {
	awk '/^\.SH / { in_opts = ($2 == "OPTIONS") } in_opts && tag { print; tag = 0 }
	     in_opts && /^\.TP/ { tag = 1 }' "$1" |
		sed 's/\\-/-/g' | grep -oE '(^|[ "])--?[a-z][a-z0-9-]*' | sed 's/^[ "]//' | sort -u
}

progs=()
for f in "$tmp/p/bin"/*; do progs+=("$(basename "$f")"); done
[[ ${#progs[@]} -ge 7 ]] || fail "only ${#progs[@]} programs installed: ${progs[*]}"
for prog in "${progs[@]}"; do
	bin=$tmp/p/bin/$prog page=$src/man/$prog.1
	[[ -f $page ]] || { fail "$prog is installed but man/$prog.1 does not exist"; continue; }
	[[ -f $tmp/p/$mandir/man1/$prog.1 ]] || fail "$prog.1 is not installed to $mandir/man1"
	for sec in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
		grep -qx "\.SH $sec" "$page" || fail "$prog.1 has no section $sec"
	done
	grep -q "^\.TH $(echo "$prog" | tr a-z A-Z) 1 .*\"ri2n $version\"" "$page" ||
		fail "$prog.1: its .TH line does not name section 1 and ri2n $version"
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	[[ -z $warn ]] || fail "$prog.1 renders with warnings: $warn"

	"$bin" --help >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[[ $rc -eq 0 ]] || fail "$prog --help exits $rc"
	[[ -s $tmp/out ]] || fail "$prog --help prints nothing on stdout"
	[[ -s $tmp/err ]] && fail "$prog --help writes to stderr: $(cat "$tmp/err")"
	opts=$(page_options "$page")
	[[ -n $opts ]] || fail "$prog.1 lists no option"
	for o in $opts; do
		grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|$)" "$tmp/out" ||
			fail "$prog --help does not mention $o (listed in $prog.1)"
	done

	out=$("$bin" --version 2>&1)
	rc=$?
	[[ $rc -eq 0 && $out == "$prog $version" ]] ||
		fail "$prog --version: exit $rc, '$out' (want '$prog $version')"

	"$bin" --no-such-option >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[[ $rc -ne 0 ]] || fail "$prog --no-such-option exits 0"
	[[ -s $tmp/out ]] && fail "$prog --no-such-option writes to stdout"
	[[ -s $tmp/err ]] || fail "$prog --no-such-option says nothing on stderr"
	echo "ok: $prog ($(echo $opts | wc -w) options)"
done
# and no page for a program that is not installed
for page in "$src"/man/*.1; do
	[[ -x $tmp/p/bin/$(basename "$page" .1) ]] || fail "$(basename "$page") describes no installed program"
done
[[ $fails -eq 0 ]] || { echo "$fails failure(s)"; exit 1; }
echo "PASS: ${#progs[@]} programs, each with its page"
