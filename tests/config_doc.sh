#!/usr/bin/env bash
# docs/CONFIG.md against the code:
#  - every RI2N_* environment variable the code reads is documented (the C
#    sources of the library, the BTL and the tools, the table of knobs
#    src/core/rn_knob_list.h, and the ri2n-run launcher);
#  - its table of knobs, between the "knobs: begin" and "knobs: end" marks,
#    is the one ri2n-knobs-doc prints from src/core/rn_knob_list.h.
# Exit 1 naming what disagrees.  --update rewrites the table in the doc.
#
#   tests/config_doc.sh [REPO_ROOT [RI2N_KNOBS_DOC [--update]]]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
gen=${2:-}
doc=$root/docs/CONFIG.md
begin='<!-- knobs: begin'
end='<!-- knobs: end -->'
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

if [ -n "$gen" ]; then
	[ -x "$gen" ] || { echo "FAIL: no generator $gen"; exit 1; }
	table=$("$gen")
	if [ "${3:-}" = --update ]; then
		tmp=$(mktemp)
		trap 'rm -f "$tmp"' EXIT
		TABLE=$table awk -v b="$begin" -v e="$end" '
			index($0, b) == 1 { print; print ENVIRON["TABLE"]; skip = 1; next }
			index($0, e) == 1 { skip = 0 }
			!skip' "$doc" >"$tmp"
		cat "$tmp" >"$doc"
		echo "updated $doc"
		exit 0
	fi
	grep -q "^$begin" "$doc" && grep -q "^$end" "$doc" ||
		{ echo "FAIL: docs/CONFIG.md has no '$begin' ... '$end' section"; exit 1; }
	if ! diff -u <(awk -v b="$begin" -v e="$end" 'index($0, e) == 1 { on = 0 } on { print }
		index($0, b) == 1 { on = 1 }' "$doc") <(echo "$table"); then
		echo "FAIL: docs/CONFIG.md's table of knobs is not the code's (src/core/rn_knob_list.h);"
		echo "      tests/config_doc.sh <root> <build>/tools/ri2n-knobs-doc --update rewrites it"
		exit 1
	fi
fi

# string literals in C ("RI2N_MTU"), the knobs of the table (X(MTU, ...) is RI2N_MTU),
# and variables the launcher script reads
vars=$({
	grep -rhoE '"RI2N_[A-Z0-9_]+"' "$root/src" "$root/btl_ri2n" "$root"/tools/*.c | tr -d '"'
	grep -hoE '^[[:space:]]*X\([A-Z][A-Z0-9_]*,' "$root/src/core/rn_knob_list.h" |
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
echo "ok: $(echo "$vars" | wc -w) RI2N_ variables read by the code, all in docs/CONFIG.md${gen:+; its table of knobs is the one in the code}"
