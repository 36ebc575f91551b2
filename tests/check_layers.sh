#!/usr/bin/env bash
# Fails if a layer of src/ reaches one above it.  From the bottom: core (the
# sans-I/O protocol), host (the kit every driver shares), engine (the engine
# thread and the inline driver), api (ri2n.h's calls), shim (ri2n-run's
# interposers); the drivers btl_ri2n/ and ofi/ sit on the host kit beside the
# engine.  Checked three ways, so neither a header, a call nor a source slips by:
#  - includes: a quoted include in src/core or src/host, or in a header
#    they include, that names a header of a layer above it or of a driver;
#    a driver header in src/engine; an engine header in src/shim; an
#    engine, API or shim header in a driver;
#  - symbols: an undefined symbol of a core, host or shim object that an
#    object compiled from a layer above it (for the shim: from src/engine)
#    defines.  The shim reaches the engine through the API layer (rn_api.h);
#  - sources: a driver target (after --target NAME: its sources and include
#    directories) compiles no file of src/engine, src/api or src/shim and
#    searches none of their directories: what drivers share is in src/host.
#
#   tests/check_layers.sh SRC BUILD [--target NAME SOURCE-OR-DIR...]...
set -euo pipefail
usage="usage: check_layers.sh src-dir build-dir [--target name source-or-dir...]..."
src=${1:?$usage}
bin=${2:?$usage}
shift 2
bad=0
drivers=(btl_ri2n ofi)

# Every header of src/ and include/ by name (names are unique), and the
# quoted includes of a file.
declare -A path_of
for h in "$src"/*/*.h "$src"/../include/*.h "$src"/../btl_ri2n/*.h "$src"/../ofi/*.h; do
	path_of[${h##*/}]=$h
done
includes() {
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

# the directory of a layer: src/<layer>, or a driver's beside src/
dir_of() {
	if [ -d "$src/$1" ]; then echo "$src/$1"; else echo "$src/../$1"; fi
}

# check_includes LAYER ABOVE...: LAYER's files include no header of ABOVE,
# directly or through the headers they include
check_includes() {
	local layer=$1 f n p d r hit=
	local -A seen=()
	local -a queue
	shift
	queue=("$(dir_of "$layer")"/*.[ch])
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
			r=${f#"$src"/}
			case " $* " in
			*" $d "*) hit+="  ${r#../} includes $d/$n"$'\n' ;;
			*) queue+=("$p") ;;
			esac
		done
	done
	if [ -n "$hit" ]; then
		echo "$layer includes headers of a layer above it ($*):"
		printf '%s' "$hit"
		bad=1
	fi
}

check_includes core host engine api shim "${drivers[@]}"
check_includes host engine api shim "${drivers[@]}"
check_includes engine "${drivers[@]}"
check_includes shim engine
for d in "${drivers[@]}"; do
	check_includes "$d" engine api shim
done

# --target NAME SOURCE-OR-DIR...: what a driver's target compiles and searches
while [ $# -gt 0 ]; do
	if [ "$1" != --target ] || [ $# -lt 2 ]; then
		echo "$usage" >&2
		exit 2
	fi
	t=$2
	shift 2
	while [ $# -gt 0 ] && [ "$1" != --target ]; do
		case ${1%/} in
		*src/engine | *src/api | *src/shim)
			echo "driver $t searches src/${1##*/src/} for headers: share them through src/host"
			bad=1 ;;
		*src/engine/* | *src/api/* | *src/shim/*)
			echo "driver $t compiles src/${1##*/src/}: share it through src/host instead"
			bad=1 ;;
		esac
		shift
	done
done

# objects of a layer (the directory its sources are in, within a target),
# whose source is still there: a tree built before a file moved keeps its old object
objs() {
	local f o=
	for f in "$bin/src/CMakeFiles/$1.dir/$2"/*.o; do
		if [ -f "$f" ] && [ -f "$src/$2/$(basename "$f" .o)" ]; then
			o+="$f"$'\n'
		fi
	done
	[ -n "$o" ] || { echo "no objects for src/$2 under $bin" >&2; exit 1; }
	printf '%s' "$o"
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
echo "layers hold: core and host reach nothing above them, the shim no engine header or call," \
	"the drivers nothing of src/engine"
