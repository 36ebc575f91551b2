#!/usr/bin/env bash
# Runs shellcheck over the repository's shell scripts (every *.sh, and the scripts
# without the suffix that start with a shell's #!: .ci/run, tools/ri2n-run).
#
# What is checked: findings of severity "error" only (scripts that do not
# parse as bash, unknown shells, misused operators).  Warnings are not: today
# they are mostly deliberate (commas inside mpirun argument arrays, variables a
# sourced library sets for its caller, "done" as a word grep looks for) and a
# wholesale exclusion list would say nothing.  Sourced libraries name their
# shell with a "# shellcheck shell=bash" line.
#
#   tests/check_shell.sh [REPO_ROOT]     exit 77 when shellcheck is missing
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

if ! command -v shellcheck >/dev/null; then
	echo "shellcheck is not installed (tools/deps.sh installs it): skipped"
	exit 77
fi

# the tracked files in a git checkout, else the files of the source tree (a tarball)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files)
else
	files=$(find . -path './build*' -prune -o -path './.git' -prune -o -type f -print | sed 's|^\./||')
fi
scripts=()
while IFS= read -r f; do
	[ -f "$f" ] || continue
	case "$f" in
	*.sh) scripts+=("$f") ;;
	*.*) ;;
	*) head -n1 "$f" | grep -qE '^#!.*[/ ](ba)?sh( |$)' && scripts+=("$f") ;;
	esac
done <<<"$files"

[ ${#scripts[@]} -gt 0 ] || { echo "no shell scripts found under $root"; exit 1; }
if shellcheck -S error "${scripts[@]}"; then
	echo "shellcheck -S error: ${#scripts[@]} scripts clean"
else
	echo "shellcheck -S error found the problems above in the repository's scripts"
	exit 1
fi
