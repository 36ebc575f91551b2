#!/usr/bin/env bash
# docs/CONFIG.md against the code:
#  - every RI2N_* environment variable the code reads is documented (the C
#    sources of the library, the BTL and the tools, the table of knobs
#    src/core/rn_knob_list.h, and the ri2n-run launcher);
#  - its tables of knobs, between the "<!-- knobs: begin" and "<!-- knobs:
#    end -->" marks and the same for process-knobs, are the ones
#    ri2n-knobs-doc prints from the code's (src/core/rn_knob_list.h,
#    src/host/rn_knobs.h), and so is docs/OFI.md's ofi-knobs table
#    (src/host/rfi_knob_list.h);
#  - the options of include/ri2n.h's enum ri2n_option are the tables' socket
#    options, no more and no fewer;
#  - etc/ri2n.conf, the system configuration file listing every knob at its
#    default, is the one ri2n-knobs-doc prints (`conf`).
# Exit 1 naming what disagrees.  --update rewrites the tables in the docs.
#
#   tests/config_doc.sh [REPO_ROOT [RI2N_KNOBS_DOC [--update]]]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
gen=${2:-}
doc=$root/docs/CONFIG.md
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

# The section of a doc ($2) between "<!-- NAME: begin" and "<!-- NAME: end -->".
section() {
	awk -v b="<!-- $1: begin" -v e="<!-- $1: end -->" 'index($0, e) == 1 { on = 0 } on { print }
		index($0, b) == 1 { on = 1 }' "$2"
}

if [ -n "$gen" ]; then
	[ -x "$gen" ] || { echo "FAIL: no generator $gen"; exit 1; }
	for name in knobs process-knobs ofi-knobs; do
		doc=$root/docs/CONFIG.md
		[ "$name" != ofi-knobs ] || doc=$root/docs/OFI.md
		table=$("$gen" "$name")
		if [ "${3:-}" = --update ]; then
			tmp=$(mktemp)
			TABLE=$table awk -v b="<!-- $name: begin" -v e="<!-- $name: end -->" '
				index($0, b) == 1 { print; print ENVIRON["TABLE"]; skip = 1; next }
				index($0, e) == 1 { skip = 0 }
				!skip' "$doc" >"$tmp"
			cat "$tmp" >"$doc"
			rm -f "$tmp"
			continue
		fi
		grep -q "^<!-- $name: begin" "$doc" && grep -q "^<!-- $name: end -->" "$doc" ||
			{ echo "FAIL: $doc has no <!-- $name: begin ... end --> section"; exit 1; }
		if ! diff -u <(section "$name" "$doc") <(echo "$table"); then
			echo "FAIL: $doc's $name table is not the code's (src/core/rn_knob_list.h,"
			echo "      src/host/rn_knobs.h, src/host/rfi_knob_list.h); tests/config_doc.sh ROOT"
			echo "      <build>/tools/ri2n-knobs-doc --update rewrites it"
			exit 1
		fi
	done
	doc=$root/docs/CONFIG.md
	if [ "${3:-}" = --update ]; then
		"$gen" conf >"$root/etc/ri2n.conf"
		echo "updated docs/CONFIG.md, docs/OFI.md and etc/ri2n.conf"
		exit 0
	fi
	if ! diff -u "$root/etc/ri2n.conf" <("$gen" conf); then
		echo "FAIL: etc/ri2n.conf is not the code's (tests/config_doc.sh ROOT"
		echo "      <build>/tools/ri2n-knobs-doc --update rewrites it)"
		exit 1
	fi
	# the socket options: include/ri2n.h's enum ri2n_option holds exactly the tables' ones
	header=$root/include/ri2n.h
	enum=$(awk '/^enum ri2n_option[[:space:]]*\{/ { on = 1; next } on && /^\};/ { on = 0 }
		on' "$header" | grep -oE '^[[:space:]]*RI2N_[A-Z0-9_]+[[:space:]]*([=,]|$)' |
		grep -oE 'RI2N_[A-Z0-9_]+' | sort)
	[ -n "$enum" ] || { echo "FAIL: no enum ri2n_option found in $header: the scan is broken"; exit 1; }
	if ! diff -u <(echo "$enum") <("$gen" options | sort); then
		echo "FAIL: include/ri2n.h's enum ri2n_option (-) and the tables' RI2N_SOL options (+)"
		echo "      (src/core/rn_knob_list.h, RN_PROC_LIST rows marked SOL) differ"
		exit 1
	fi
fi

# string literals in C ("RI2N_MTU"), the rows of the tables (X(MTU, ...) is RI2N_MTU),
# and variables the launcher script reads
vars=$({
	grep -rhoE '"RI2N_[A-Z0-9_]+"' "$root/src" "$root/btl_ri2n" "$root"/tools/*.c | tr -d '"'
	grep -hoE '^[[:space:]]*X\([A-Z][A-Z0-9_]*,' "$root/src/core/rn_knob_list.h" \
		"$root/src/host/rn_knobs.h" |
		sed -E 's/^[[:space:]]*X\(/RI2N_/; s/,$//'
	grep -ohE '\$\{?RI2N_[A-Z0-9_]+' "$root/tools/ri2n-run" | tr -d '${'
} | sort -u)
[ -n "$vars" ] || { echo "FAIL: no RI2N_ variable found in the sources: the scan is broken"; exit 1; }
echo "$vars" | grep -qx RI2N_HEARTBEAT_MS ||
	{ echo "FAIL: the scan of src/core/rn_knob_list.h found no RI2N_HEARTBEAT_MS: it is broken"; exit 1; }
missing=0
for v in $vars; do
	case $v in
	RI2N_RUN_VERSION) continue ;; # the launcher's version string, not a setting
	esac
	if ! grep -qE "\`$v\`" "$doc"; then
		echo "FAIL: $v is read by the code but not documented in docs/CONFIG.md"
		missing=$((missing + 1))
	fi
done
[ "$missing" -eq 0 ] || exit 1
echo "ok: $(echo "$vars" | wc -w) RI2N_ variables read by the code, all in docs/CONFIG.md${gen:+; its tables of knobs and include/ri2n.h's options are the code's}"
