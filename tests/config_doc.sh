#!/usr/bin/env bash
# Every RI2N_* environment variable the code reads is documented in
# docs/CONFIG.md (the C sources of the library, the BTL and the tools, and
# the ri2n-run launcher).  Exit 1 naming those that are not.
#
#   tests/config_doc.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
doc=$root/docs/CONFIG.md
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

# string literals in C ("RI2N_MTU"), and variables the launcher script reads
vars=$({
	grep -rhoE '"RI2N_[A-Z0-9_]+"' "$root/src" "$root/btl_ri2n" "$root"/tools/*.c | tr -d '"'
	grep -ohE '\$\{?RI2N_[A-Z0-9_]+' "$root/tools/ri2n-run" | tr -d '${'
} | sort -u)
[ -n "$vars" ] || { echo "FAIL: no RI2N_ variable found in the sources: the scan is broken"; exit 1; }
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
echo "ok: $(echo "$vars" | wc -w) RI2N_ variables read by the code, all in docs/CONFIG.md"
