#!/usr/bin/env bash
# Runs a libFuzzer target for a while from a copy of its corpus, so the run
# never writes into the repository.  Crash inputs go to the current
# directory (crash-*, timeout-*, leak-*: the build tree under ctest).
#
#   run_fuzz.sh BINARY CORPUS_DIR SECONDS [extra libFuzzer flags...]
set -euo pipefail
bin=${1:?usage: run_fuzz.sh BINARY CORPUS_DIR SECONDS [flags...]}
corpus=${2:?usage: run_fuzz.sh BINARY CORPUS_DIR SECONDS [flags...]}
secs=${3:?usage: run_fuzz.sh BINARY CORPUS_DIR SECONDS [flags...]}
shift 3
name=$(basename "$bin")

work=$(mktemp -d "${TMPDIR:-/tmp}/ri2n-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
if [ -d "$corpus" ]; then
	cp -R "$corpus/." "$work/corpus/"
fi
echo "$name: fuzzing for $secs s from $(find "$work/corpus" -type f | wc -l) seed inputs"

set +e
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$PWD/" "$@" "$work/corpus" >"$work/log" 2>&1
rc=$?
set -e
# the log without the line per new input
grep -Ev '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$work/log" || true

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
cov=$(grep -Eo 'cov: [0-9]+' "$work/log" | tail -1)
echo "$name: ${execs:-?} executions in $secs s (${cov:-cov: ?}), exit $rc"
exit "$rc"
