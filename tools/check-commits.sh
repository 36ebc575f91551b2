#!/usr/bin/env bash
# Commit subjects read "area: summary" within 72 characters, the detail in the
# body after a blank line (HACKING.md).  Checks the subject of every commit
# newer than BASE; history before it is left as it is.  A subject is what git
# shows on one line (%s): a first paragraph of several lines counts whole.
#
#   tools/check-commits.sh [BASE]   BASE defaults to 2cb067f; exit 77 (skipped)
#                                   outside a git checkout or when BASE is absent
#   tools/check-commits.sh MSGFILE  as a commit-msg hook: checks the message
#                                   (ln -s ../../tools/check-commits.sh .git/hooks/commit-msg)
set -euo pipefail
# count characters, not bytes
export LC_ALL=C.UTF-8
max=72

# commit-msg hook: git passes the message file
if [ $# -eq 1 ] && [ -f "$1" ]; then
	subject=$(sed -e '/^#/d' "$1" | awk 'NF == 0 { if (s != "") exit; next } { s = s (s == "" ? "" : " ") $0 } END { print s }')
	if [ ${#subject} -gt $max ]; then
		echo "commit subject is ${#subject} characters (at most $max; the detail goes in the body" \
			"after a blank line): $subject" >&2
		exit 1
	fi
	exit 0
fi

base=${1:-2cb067f}
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "not a git checkout: skipped"
	exit 77
fi
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
	echo "base commit $base is not in this clone (shallow?): skipped"
	exit 77
fi

n=0 bad=0
while IFS= read -r line; do
	n=$((n + 1))
	subject=${line#* }
	if [ ${#subject} -gt $max ]; then
		[ $bad -gt 0 ] || echo "commit subjects over $max characters since $base" \
			"(the detail goes in the body):"
		bad=$((bad + 1))
		printf '  %s (%d)\n' "$(printf '%s' "$line" | cut -c1-100)" ${#subject}
	fi
done < <(git log --format='%h %s' "$base..HEAD")
[ $bad -eq 0 ] || exit 1
echo "$n commits since $base: every subject within $max characters"
