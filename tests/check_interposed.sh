#!/usr/bin/env bash
# Fails if an object of libri2n, ri2n-run, the BTL or the libfabric provider
# other than an interposer itself references a name libri2n or ri2n-run
# interposes (read, write, send, close, dup3, poll, setsockopt, ...).  ri2n's
# own system calls go through src/host/rn_sys.h: a call by the interposed
# name would come back into ri2n's interposer (or one loaded ahead of it) and
# be a cancellation point under a ri2n lock.
#
# The names are the interposers' exported definitions (nm -D of the two
# libraries), so a new interposer is checked without touching this script;
# an interposer object is one that defines one of them (rn_datacalls.o, the
# shim's interposing files).  Libraries ri2n links (libevent, ...) are out of
# scope: only the build tree's own objects are read.
set -euo pipefail
lib=${1:?usage: check_interposed.sh libri2n.so libri2n-run.so build-dir}
shim=${2:?usage: check_interposed.sh libri2n.so libri2n-run.so build-dir}
bin=${3:?usage: check_interposed.sh libri2n.so libri2n-run.so build-dir}

names=$( { nm -D --defined-only "$lib"; nm -D --defined-only "$shim"; } |
	awk 'NF==3 && $2 ~ /^[TWi]$/ {sub(/@.*/, "", $3); print $3}' | grep -v '^ri2n_' | sort -u)
[ -n "$names" ] || { echo "no interposed names found in $lib and $shim"; exit 1; }
pat="^($(printf '%s\n' $names | paste -sd'|'))\$"

# the BTL and the provider are built only where Open MPI and libfabric are installed
objs=$( { find "$bin/src/CMakeFiles" "$bin/btl_ri2n/CMakeFiles" "$bin/ofi/CMakeFiles" \
	-name '*.o' 2>/dev/null || true; } | sort)
[ -n "$objs" ] || { echo "no objects under $bin"; exit 1; }
bad=0
for o in $objs; do
	# an object defining an interposed name is an interposer: it may call the real one
	if nm --defined-only "$o" | awk 'NF==3 && $2 ~ /^[TW]$/ {print $3}' | grep -Eq "$pat"; then
		continue
	fi
	refs=$(nm -u "$o" | awk '{print $NF}' | sed 's/@.*//' | grep -E "$pat" | sort -u || true)
	if [ -n "$refs" ]; then
		echo "${o#"$bin"/} calls interposed names (use rn_sys.h):" $refs
		bad=1
	fi
done
if [ "$bad" -ne 0 ]; then
	exit 1
fi
echo "no object outside the interposers calls an interposed name ($(printf '%s\n' $names | wc -l) names)"
