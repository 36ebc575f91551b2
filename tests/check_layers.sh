#!/usr/bin/env bash
# Fails if a layer of src/ reaches one above it.  From the bottom: core (the
# sans-I/O protocol), host (the kit every driver shares), engine (the engine
# thread and the inline driver), api (ri2n.h's calls), shim (ri2n-run's
# interposers).  Checked twice, so neither a header nor a call slips by:
#  - includes: a quoted include in src/core or src/host, or in a header
#    they include, that names a header of a layer above it; the same for an
#    engine header in src/shim;
#  - symbols: an undefined symbol of a core, host or shim object that an
#    object compiled from a layer above it (for the shim: from src/engine)
#    defines.  The shim reaches the engine through the API layer (rn_api.h).
set -euo pipefail
src=${1:?usage: check_layers.sh src-dir build-dir}
bin=${2:?usage: check_layers.sh src-dir build-dir}
bad=0

# Every header of src/ and include/ by name (names are unique), and the
# quoted includes of a file.
declare -A path_of
for h in "$src"/*/*.h "$src"/../include/*.h; do
	path_of[${h##*/}]=$h
done
includes() {
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

# check_includes LAYER ABOVE...: LAYER's files include no header of ABOVE,
# directly or through the headers they include
check_includes() {
	local layer=$1 f n p d hit=
	local -A seen=()
	local -a queue
	shift
	queue=("$src/$layer"/*.[ch])
	while [ ${#queue[@]} -gt 0 ]; do
		f=${queue[0]}
		queue=("${queue[@]:1}")
		for n in $(includes "$f"); do
			p=${path_of[$n]:-}
			if [ -z "$p" ] || [ -n "${seen[$p]:-}" ]; then
				continue
			fi
			seen[$p]=1
			d=${p%/*}
			d=${d##*/}
			case " $* " in
			*" $d "*) hit+="  ${f#"$src"/} includes $d/$n"$'\n' ;;
			*) queue+=("$p") ;;
			esac
		done
	done
	if [ -n "$hit" ]; then
		echo "src/$layer includes headers of a layer above it ($*):"
		printf '%s' "$hit"
		bad=1
	fi
}

check_includes core host engine api shim
check_includes host engine api shim
check_includes shim engine

# objects of a layer (the directory its sources are in, within a target)
objs() {
	local o
	o=$(find "$bin/src/CMakeFiles/$1.dir/$2" -maxdepth 1 -name '*.o' 2>/dev/null | sort)
	[ -n "$o" ] || { echo "no objects for src/$2 under $bin" >&2; exit 1; }
	printf '%s\n' "$o"
}

# check_symbols NAME "OBJECTS" "ABOVE": OBJECTS use no global symbol ABOVE defines
check_symbols() {
	local hit
	hit=$(comm -12 <(printf '%s\n' "$2" | xargs nm -u | awk 'NF==2 {print $2}' | sort -u) \
		<(printf '%s\n' "$3" | xargs nm --defined-only |
			awk 'NF==3 && $2 ~ /^[A-Z]$/ {print $3}' | sort -u))
	if [ -n "$hit" ]; then
		echo "src/$1 calls up into a layer above it:"
		printf '%s\n' "$hit" | sed 's/^/  /'
		bad=1
	fi
}

core=$(objs rn_core core)
host=$(objs rn_host host)
engine=$(objs rn_engine engine)
api=$(objs rn_engine api)
shim=$(objs ri2n-run shim)
check_symbols core "$core" "$host
$engine
$api
$shim"
check_symbols host "$host" "$engine
$api
$shim"
check_symbols shim "$shim" "$engine"

[ $bad = 0 ] || exit 1
echo "layers hold: core and host reach nothing above them, the shim no engine header or call"
