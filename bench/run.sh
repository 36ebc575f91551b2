#!/usr/bin/env bash
# bench/run.sh - ri2n side by side with single-rail TCP, MPTCP, plain UDP/TCP latency.
#
#   bench/run.sh [--quick | --smoke] [--reps N] [--out DIR] [--only LIST] [--bin-dir DIR] [--keep]
#
#   (default)  the full run: every figure 3 times, median and spread (about 35 minutes)
#   --quick    every figure once, shorter runs (about 8 minutes on 2 cores)
#   --smoke    tiny sizes, about a minute; exits non-zero if any program fails (ctest, root)
#   --reps N   repetitions of each figure (full: 3, quick and smoke: 1)
#   --out DIR  where results go (default bench/results; smoke: a temporary directory)
#   --only L   a comma-separated subset of: tp2,tp4,veth,degraded,loss,failover,mtuhole,jumbo,mixed,
#              latency,redundant,mpi,mpin,incast,kv,close,mem,ofi,mpich (hole: mem's black-hole row alone;
#              mpiidle: mpi's 16 idle ranks alone)
#   --bin-dir D  use ri2n-stream, ri2n-pingpong (and D/ri2n/tools/ri2n-xfer if there) from D,
#              or from the build tree D (D/ri2n/bench, D/bench), instead of building them
#              (cmake -S bench -B build-bench)
#   --keep     keep the per-run logs (OUT/raw) even after a successful smoke run
#
# RI2N_BENCH_BED=P (or RI2N_BENCH_BED_PREFIX=P) names the beds P2g, P4g, P2u... instead of
# bn2g... (a session sharing the machine with another bench run; P is 1-2 characters of [a-z0-9]).
#
# Needs root (network namespaces). Builds, makes test beds with tools/ri2n-testbed.sh (rails
# 198.18.<i>.0/24 in namespaces ri2n-bN*-*, or ri2n-XN*-* with RI2N_BENCH_BED=X; nothing else is
# touched) and writes OUT/summary.md, throughput.csv, latency.csv, failover.csv,
# failover_events.csv, mtuhole.csv, mtuhole_events.csv, failover.png, latency.png, redundant.csv, mpi.csv, mpi_hosts.csv, kv.csv, close.csv. bench/README.md says what each figure means. A step that fails is reported in summary.md
# with its reason and the run goes on; the beds are removed on exit, failure or Ctrl-C.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TESTBED=$ROOT/tools/ri2n-testbed.sh

mode=full reps="" out="" only="" bindir="" keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) mode=quick ;;
	--smoke) mode=smoke ;;
	--full) mode=full ;;
	--reps) reps=${2:?--reps N}; shift ;;
	--out) out=${2:?--out DIR}; shift ;;
	--only) only=${2:?--only LIST}; shift ;;
	--bin-dir) bindir=${2:?--bin-dir DIR}; shift ;;
	--keep) keep=1 ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

if [ "$(id -u)" -ne 0 ]; then
	echo "bench/run.sh: needs root (it makes network namespaces)"
	[ "$mode" = smoke ] && exit 77 # ctest's "skipped"
	exit 1
fi

# ---- what each mode runs ---------------------------------------------------------------
case $mode in
full)
	: "${reps:=3}"
	TP_SECS=10 SINGLE_SECS=10 FO_SECS=12 FO_FAULT=3 FO_HEAL=8
	RED_ITERS=20000
	PP_ITERS=2000 PP_BUDGET=64M PP_SIZES=$(awk 'BEGIN { for (i = 0; i <= 20; i++) printf "%s%d", (i ? "," : ""), 2 ^ i }') SP_SECS=2
	SP_SIZES_UDP="14 64 256 1024 1472" SP_SIZES_TCP="14 64 256 1024 1472 4096 16384"
	BUSY_SIZES="8,1k,64k"
	LAT_ROUNDS=1 LAT_ROUND_SIZES="1,8,64"
	KV_ROUNDS=1 KV_N_PIPE=3000000 KV_N=200000 KV_N_1000=200000
	MPI_SECS=5 MPI_ITERS=30000 MPI_FO_SECS=8 MPI_FO_AT=2 MPI_HANG=20 MPIN_ROUNDS=20 MPIN_A2A_ROUNDS=200
	OFI_ITERS=1000
	;;
quick)
	: "${reps:=1}"
	TP_SECS=5 SINGLE_SECS=4 FO_SECS=12 FO_FAULT=3 FO_HEAL=8
	RED_ITERS=10000
	PP_ITERS=1000 PP_BUDGET=16M PP_SIZES="1,8,64,512,4k,32k,256k,1M" SP_SECS=1
	SP_SIZES_UDP="14 1024" SP_SIZES_TCP="14 1024"
	BUSY_SIZES=""
	LAT_ROUNDS=3 LAT_ROUND_SIZES="1,8,64"
	KV_ROUNDS=3 KV_N_PIPE=1000000 KV_N=60000 KV_N_1000=60000
	MPI_SECS=3 MPI_ITERS=10000 MPI_FO_SECS=6 MPI_FO_AT=2 MPI_HANG=15 MPIN_ROUNDS=8 MPIN_A2A_ROUNDS=100
	OFI_ITERS=200
	;;
smoke)
	: "${reps:=1}"
	TP_SECS=1 SINGLE_SECS=1 FO_SECS=4 FO_FAULT=1 FO_HEAL=2.5
	RED_ITERS=500
	PP_ITERS=50 PP_BUDGET=4M PP_SIZES="1,8,1k,64k,1M" SP_SECS=1
	SP_SIZES_UDP="14" SP_SIZES_TCP="14"
	BUSY_SIZES=""
	LAT_ROUNDS=1 LAT_ROUND_SIZES="8"
	KV_ROUNDS=1 KV_N_PIPE=50000 KV_N=5000 KV_N_1000=5000
	MPI_SECS=1 MPI_ITERS=1000 MPI_FO_SECS=3 MPI_FO_AT=1 MPI_HANG=5 MPIN_ROUNDS=2 MPIN_A2A_ROUNDS=2
	OFI_ITERS=20
	: "${only:=tp2,failover,latency,mpi}"
	;;
esac
if [ -z "$out" ]; then
	if [ "$mode" = smoke ]; then out=$(mktemp -d /tmp/ri2n-bench-smoke.XXXXXX); else out=$HERE/results; fi
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
RAW=$out/raw
rm -rf "$RAW"
rm -f "$out"/{summary.md,throughput.csv,latency.csv,redundant.csv,failover.csv,failover_events.csv,mtuhole.csv,mtuhole_events.csv,failover.png,latency.png,mpi.csv,kv.csv,close.csv,ofi.csv}
mkdir -p "$RAW"
: "${only:=tp2,tp4,veth,degraded,loss,failover,mtuhole,jumbo,mixed,latency,redundant,mpi,mpin,incast,kv,close,mem,ofi,mpich}"
want() { [[ ",$only," == *",$1,"* ]]; }

START=$(date +%s)
START_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[%4ds] %s\n' "$(($(date +%s) - START))" "$*"; }

# ---- step bookkeeping: a failed step is recorded, never fatal ---------------------------
STEP_NAMES=() STEP_STATUS=() STEP_REASONS=()
FAIL_REASON=""
fail() { FAIL_REASON="$*"; return 1; }
record_step() {
	STEP_NAMES+=("$1") STEP_STATUS+=("$2") STEP_REASONS+=("${3:-}") STEP_LOADS+=("${STEP_LOAD_NOW:-$(load1)}")
	STEP_STEALS+=("$(steal_since "${STEP_CPU0:-}")")
	STEP_LOAD_NOW="" STEP_CPU0=""
}
# CPU time the hypervisor gave to other guests ("steal"), from /proc/stat: on a shared
# virtual machine a dip in one run is often this, not the code under test
cpu_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9; exit }' /proc/stat; }
steal_since() { # "TOTAL STEAL" from cpu_ticks -> % of the CPU time since then
	[ -n "$1" ] || return 0
	awk -v a="$1" -v b="$(cpu_ticks)" 'BEGIN { split(a, x, " "); split(b, y, " ")
		if (y[1] > x[1]) printf "%.1f", 100 * (y[2] - x[2]) / (y[1] - x[1]) }'
}
# step NAME FUNCTION ARGS...: runs it, prints and records the outcome
load1() { cut -d' ' -f1 /proc/loadavg; }
STEP_LOADS=() STEP_STEALS=() STEP_LOAD_NOW="" STEP_CPU0="" OTHERS=""
# Processes busy right now (between steps none of ours is): other people's work on the machine
others_busy() {
	local o
	o=$(top -b -n 2 -d 0.3 -w 200 2>/dev/null | awk '/^top -/ { f++ } f == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 > 20 { print $12 }' |
		grep -vE '^(top|ri2n-stream|ri2n-pingpong|iperf3|sockperf|nft)$' | sort -u | tr '\n' ' ')
	for o in $o; do [[ " $OTHERS " == *" $o "* ]] || OTHERS+="${OTHERS:+ }$o"; done
}
step() {
	local name=$1 rc
	shift
	others_busy
	STEP_LOAD_NOW=$(load1)
	log "== $name (load average $STEP_LOAD_NOW)"
	FAIL_REASON=""
	STEP_CPU0=$(cpu_ticks)
	"$@"
	rc=$?
	local st
	st=$(steal_since "$STEP_CPU0")
	[ -n "$st" ] && awk -v s="$st" 'BEGIN { exit !(s >= 2) }' && log "   (the hypervisor took $st% of the CPU time during this step: figures may be low)"
	if [ $rc -eq 0 ]; then
		record_step "$name" ok
	elif [ $rc -eq 77 ]; then
		log "   skipped: $FAIL_REASON"
		record_step "$name" skipped "$FAIL_REASON"
	else
		log "   step failed: ${FAIL_REASON:-exit status $rc}"
		record_step "$name" failed "${FAIL_REASON:-exit status $rc}"
	fi
	return 0
}
skip() { FAIL_REASON="$*"; return 77; }

# ---- results: one metrics file, aggregated at the end --------------------------------------
METRICS=$RAW/metrics.tsv
: >"$METRICS"
put() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$METRICS"; } # FIG SYS REP METRIC VALUE
# agg FIG SYS METRIC -> "median min max n" (nothing if there is no value)
agg() {
	awk -F'\t' -v f="$1" -v s="$2" -v m="$3" '$1 == f && $2 == s && $4 == m && $5 != "" { print $5 }' "$METRICS" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s %s %s %d\n", med, v[1], v[NR], NR }'
}
med() { agg "$@" | awk '{ print $1 }'; }
# fmtv FIG SYS METRIC [DECIMALS]: "1910" or "1910 [1902-1915]" over repetitions, "n/a" if none
fmtv() {
	local a
	a=$(agg "$1" "$2" "$3")
	[ -n "$a" ] || { echo "n/a"; return; }
	awk -v a="$a" -v d="${4:-0}" 'BEGIN { split(a, x, " ")
		if (x[4] > 1) printf "%.*f [%.*f–%.*f]", d, x[1], d, x[2], d, x[3]
		else printf "%.*f", d, x[1] }'
}
ratio() { # A B -> A/B with 3 decimals, or n/a
	awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.3f", a / b }'
}
sval() { printf '%s' "$(awk -F'\t' -v f="$1" -v s="$2" -v m="$3" '$1 == f && $2 == s && $4 == m { v = $5 } END { print v }' "$METRICS")"; }

# ---- tools ---------------------------------------------------------------------------------
log "ri2n bench, mode $mode, $reps repetition(s), figures: $only; results in $out"
if [ "$mode" != smoke ]; then
	log "== dependencies (tools/deps.sh --bench, mptcpize)"
	"$ROOT/tools/deps.sh" --bench || log "   tools/deps.sh failed: steps needing missing tools will fail"
	if ! command -v mptcpize >/dev/null; then
		log "   installing mptcpize (Debian package mptcpize)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mptcpize >/dev/null 2>&1 ||
			log "   could not install mptcpize: the MPTCP steps will fail"
	fi
fi
have() { command -v "$1" >/dev/null 2>&1; }
# need TOOL WHY: a missing tool fails the step, or skips it in a smoke run (it tests our programs)
need() {
	have "$1" && return 0
	if [ "$mode" = smoke ]; then skip "$1 is not installed"; else fail "$1 is not installed ($2)"; fi
}
# sub CMD...: one part of a figure; a failure is remembered (SUB_FAIL) and the figure goes on
sub() {
	local rc
	FAIL_REASON=""
	"$@"
	rc=$?
	case $rc in
	0) ;;
	77) log "   skipped: $FAIL_REASON" ;;
	*) log "   FAILED: ${FAIL_REASON:-exit status $rc}"; SUB_FAIL=1; SUB_REASON=${FAIL_REASON:-exit status $rc} ;;
	esac
	return 0
}
sub_begin() { SUB_FAIL=0 SUB_REASON=""; }
sub_end() { FAIL_REASON=$SUB_REASON; return $SUB_FAIL; }

if [ -n "$bindir" ]; then
	# the programs' own folder, or a build tree holding them (build-bench, build)
	for d in "$bindir" "$bindir/ri2n/bench" "$bindir/bench"; do
		[ -x "$d/ri2n-stream" ] && { bindir=$d; break; }
	done
	STREAM=$bindir/ri2n-stream PINGPONG=$bindir/ri2n-pingpong
	step "build (using $bindir)" true
else
	build() {
		log "   cmake -S bench -B build-bench (the library, tools and bench programs)"
		cmake -S "$HERE" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$RAW/build.log" 2>&1 &&
			cmake --build "$ROOT/build-bench" -j"$(nproc)" >>"$RAW/build.log" 2>&1 ||
			fail "build failed: $(grep -m3 -iE 'error' "$RAW/build.log" | tr '\n' ' ')"
	}
	step "build" build
	# the project's top level includes bench/ itself, so the programs land in its
	# bench/ folder of the build (ri2n/bench), not at the top of build-bench
	STREAM=$ROOT/build-bench/ri2n/bench/ri2n-stream PINGPONG=$ROOT/build-bench/ri2n/bench/ri2n-pingpong
fi
if [ ! -x "$STREAM" ] || [ ! -x "$PINGPONG" ]; then
	log "no bench programs ($STREAM, $PINGPONG): nothing to run"
	record_step "bench programs present" failed "missing $STREAM or $PINGPONG"
fi

# ---- test beds and processes, removed on exit ---------------------------------------------
# shellcheck source=../tools/ri2n-testbed.sh
source "$TESTBED"
set +e # the test bed library is sourced; failures here are handled step by step
BG_PIDS=()
kill_bg() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -9 -- "-$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null
	done
	BG_PIDS=()
}
tb_on_exit kill_bg
# bg OUT ERR CMD...: CMD in the background, leading its own process group (pid in BG)
bg() {
	local o=$1 e=$2
	shift 2
	setsid "$@" >"$o" 2>"$e" </dev/null &
	BG=$!
	BG_PIDS+=("$BG")
}
stop_bg() { kill -TERM -- "-$1" 2>/dev/null; sleep 0.1; kill -9 -- "-$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# wait_exit PID SECONDS: wait for a background process, kill it if it takes longer
wait_exit() {
	local n=$(($2 * 20))
	while kill -0 "$1" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.05; n=$((n - 1)); done
	if kill -0 "$1" 2>/dev/null; then
		stop_bg "$1"
		return 124
	fi
	wait "$1"
}

BED="" BED_RAILS=0 BED_HOSTS=2
hns() { echo "ri2n-$BED-h$1"; }
haddr() { echo "198.18.$2.$1"; } # HOST RAIL
rails_list() { seq -s, -f 'r%g' 1 "$BED_RAILS"; }
# wait_port HOST PORT: until something listens on PORT in HOST's namespace (5 s at most)
wait_port() {
	local n
	for n in $(seq 100); do
		[ -n "$(ip netns exec "$(hns "$1")" ss -Hln "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
PORT=7200
next_port() { PORT=$((PORT + 1)); }

# The bed tag for a figure's bed: RI2N_BENCH_BED (1-2 characters) replaces its "bn" prefix, so
# runs beside each other (or beside another engineer's) keep to beds of their own.
bed_tag() { echo "${RI2N_BENCH_BED:-${RI2N_BENCH_BED_PREFIX:-bn}}${1#bn}"; }

# make_bed TAG RAILS RATE [MTU[,MTU..]]: a fresh 2-host bed with MPTCP endpoints for every extra rail
make_bed() {
	local tag n=$2 rate=$3 mtu=${4:-1500} i
	tag=$(bed_tag "$1")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	log "   test bed $tag: 2 hosts, $n rails, rate $rate, MTU $mtu (namespaces ri2n-$tag-*)"
	if [ "$rate" = off ]; then
		tb_create --hosts 2 --rails "$n" --mtu "$mtu" >"$RAW/bed-$tag.log" 2>&1 || { cat "$RAW/bed-$tag.log"; return 1; }
	else
		tb_create --hosts 2 --rails "$n" --rate "$rate" --mtu "$mtu" >"$RAW/bed-$tag.log" 2>&1 || { cat "$RAW/bed-$tag.log"; return 1; }
	fi
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=$n
	# MPTCP: limits on both hosts, a subflow endpoint per extra rail on the client (host 1,
	# bound to the rail's device) and a signal endpoint per extra rail on the server (host 2)
	for h in 1 2; do
		ip netns exec "$(hns $h)" sysctl -qw net.mptcp.enabled=1
		ip -n "$(hns $h)" mptcp limits set subflows 8 add_addr_accepted 8
	done
	for ((i = 2; i <= n; i++)); do
		ip -n "$(hns 1)" mptcp endpoint add "$(haddr 1 $i)" dev "r$i" subflow
		ip -n "$(hns 2)" mptcp endpoint add "$(haddr 2 $i)" dev "r$i" signal
	done
	return 0
}
drop_bed() {
	[ -n "$BED" ] || return 0
	kill_bg
	tb_use "$BED"
	tb_destroy >/dev/null 2>&1
	BED="" BED_RAILS=0 BED_HOSTS=2
}
bed_step() { # TAG RAILS RATE [MTU]
	make_bed "$@" || fail "could not create test bed $1"
}

# Bytes host 1 sent on each rail (interface counters): "b1 b2 ..."
rail_tx() { # host 1's namespace has its own sysfs view through ip netns exec
	ip netns exec "$(hns 1)" sh -c 'for i in $(seq 1 '"$BED_RAILS"'); do cat /sys/class/net/r$i/statistics/tx_bytes; done' | tr '\n' ' '
}
# share "b1 b2.." "a1 a2..": each rail's percentage of the bytes sent, "50/50"
share() {
	awk -v b="$1" -v a="$2" 'BEGIN { n = split(b, x, " "); split(a, y, " ")
		for (i = 1; i <= n; i++) { d[i] = y[i] - x[i]; s += d[i] }
		for (i = 1; i <= n; i++) printf "%s%.0f", (i > 1 ? "/" : ""), (s > 0 ? 100 * d[i] / s : 0) }'
}
# MPTCP subflows carrying data on host 1 now: "r1:1 r2:2"
mptcp_subflows() {
	ip netns exec "$(hns 1)" ss -Htni 2>/dev/null | awk '
		/^[A-Z]/ { la = $4 }
		/tcp-ulp-mptcp/ { for (i = 1; i <= NF; i++) if ($i ~ /^bytes_acked:/) { split($i, a, ":")
			if (a[2] > 1000000) { split(la, o, "."); n[o[3]]++ } } }
		END { for (r = 1; r <= 8; r++) if (n[r]) printf "%sr%d:%d", s++ ? " " : "", r, n[r] }'
}

# ---- throughput ----------------------------------------------------------------------------
TP_CSV=$out/throughput.csv
echo "figure,system,rep,mbps,cpu_send_pct,cpu_recv_pct,rail_share_pct,subflows,verified,seconds,cpu_s_per_gbit" >"$TP_CSV"
tp_row() { # FIG SYS REP MBPS CPUS CPUR SHARE SUBFLOWS VERIFIED SECS
	local cpg=""
	# CPU seconds (sender + receiver process, user + system) per gigabit delivered
	[ -n "$4" ] && [ -n "$5" ] && [ -n "$6" ] &&
		cpg=$(awk -v m="$4" -v a="$5" -v b="$6" 'BEGIN { if (m > 0) printf "%.3f", (a + b) / 100 / (m / 1000) }')
	echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,${10},$cpg" >>"$TP_CSV"
	put "$1" "$2" "$3" mbps "$4"
	[ -n "$5" ] && put "$1" "$2" "$3" cpu_send "$5"
	[ -n "$6" ] && put "$1" "$2" "$3" cpu_recv "$6"
	[ -n "$cpg" ] && put "$1" "$2" "$3" cpu_gbit "$cpg"
	put "$1" "$2" "$3" share "$7"
	return 0
}

# ri2n_tp FIG REP SECS [stream args]: ri2n-stream over every rail of the bed
ri2n_tp() {
	local fig=$1 rep=$2 secs=$3 name rails b a rc mbps cs cr sh
	shift 3
	name=$RAW/$fig-ri2n-$rep
	rails=$(rails_list)
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env RI2N_RAILS="$rails" \
		"$STREAM" serve --once --quiet --port "$PORT" --csv "$name.recv.csv"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "ri2n-stream server did not start: $(head -c 300 "$name.srv.err")"; return; }
	b=$(rail_tx)
	timeout -s KILL $((${secs%.*} + 40)) ip netns exec "$(hns 1)" env RI2N_RAILS="$rails" \
		"$STREAM" send "$(haddr 2 1)" --port "$PORT" --seconds "$secs" --quiet --csv "$name.send.csv" "$@" \
		>"$name.out" 2>"$name.err"
	rc=$?
	a=$(rail_tx)
	wait_exit $srv 10
	[ $rc -eq 0 ] || { fail "ri2n-stream send exited $rc: $(grep -m1 done "$name.out") $(grep -v '^stream' "$name.err" | head -c 300)"; return; }
	grep -q 'verified=\(yes\|unchecked\)' "$name.srv.out" || { fail "receiver: $(cat "$name.srv.out")"; return; }
	# steady goodput: the receiver's bytes from 1 s after the start to the last full interval
	mbps=$(awk -F, -v s="$secs" 'NR > 1 && $1 == "recv" { if ($2 >= 1.0 && m1 == "") { m1 = $3; b1 = $5 }
		if ($2 <= s - 0.02) { m2 = $3; b2 = $5 } }
		END { if (m1 != "" && m2 > m1) printf "%.1f", (b2 - b1) * 8 / (m2 - m1) / 1e6
		      else if (m2 != "") printf "%.1f", b2 * 8 / s / 1e6 }' "$name.recv.csv")
	cs=$(cpu_pct "$name.out")
	cr=$(cpu_pct "$name.srv.out")
	sh=$(share "$b" "$a")
	tp_row "$fig" ri2n "$rep" "$mbps" "$cs" "$cr" "$sh" "" "$(field verified "$name.srv.out")" "$secs"
	log "   ri2n: $mbps Mbit/s (rails $sh %, cpu send/recv $cs/$cr %), $(field verified "$name.srv.out")"
	LAST_MBPS=$mbps
}
field() { awk -v k="$1" '/done/ { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) v = substr($i, length(k) + 2) } END { print v }' "$2"; }
cpu_pct() { awk '/done/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
	END { if (v["seconds"] > 0) printf "%.0f", 100 * (v["cpu_user"] + v["cpu_sys"]) / v["seconds"] }' "$1"; }

# jget FILE a.b.c: a value from a JSON file (iperf3 -J), nothing if it is not there
jget() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$1" "$2" 2>/dev/null
}

# ri2n-run from the bench's build (or next to the programs given with --bin-dir)
ri2n_run_bin() {
	local d
	for d in "${bindir:+$bindir/../tools}" "$ROOT/build-bench/ri2n/tools" "$ROOT/build/tools"; do
		[ -n "$d" ] && [ -x "$d/ri2n-run" ] && { echo "$d/ri2n-run"; return 0; }
	done
	return 1
}

# iperf_tp FIG SYS REP SECS DST_RAIL [mptcp|ri2n-run]: iperf3 from host 1 to host 2's address
# on a rail; both ends under mptcpize or ri2n-run if asked
iperf_tp() {
	local fig=$1 sys=$2 rep=$3 secs=$4 rail=$5 how=${6:-} mp="" name wrap=() b a rc mbps cs cr sh sub rr
	name=$RAW/$fig-$sys-$rep
	need iperf3 "apt-get install iperf3" || return
	if [ "$how" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run) mp=1
	elif [ "$how" = ri2n-run ]; then
		rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
		wrap=(env RI2N_RAILS="$(rails_list)" "$rr")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" "${wrap[@]}" iperf3 -s -1 -p "$PORT"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "iperf3 server did not start"; return; }
	b=$(rail_tx)
	( sleep "$(awk -v s="$secs" 'BEGIN { print s / 2 + 1 }')"; mptcp_subflows >"$name.subflows" ) &
	local snap=$!
	timeout -s KILL $((secs + 30)) ip netns exec "$(hns 1)" "${wrap[@]}" iperf3 -c "$(haddr 2 "$rail")" \
		-p "$PORT" -t "$secs" -O 1 -J >"$name.json" 2>"$name.err"
	rc=$?
	a=$(rail_tx)
	wait $snap 2>/dev/null
	wait_exit $srv 10
	[ $rc -eq 0 ] || { fail "iperf3 exited $rc: $(jget "$name.json" error) $(head -c 300 "$name.err")"; return; }
	mbps=$(jget "$name.json" end.sum_received.bits_per_second | awk '{ printf "%.1f", $1 / 1e6 }')
	cs=$(jget "$name.json" end.cpu_utilization_percent.host_total | awk '{ printf "%.0f", $1 }')
	cr=$(jget "$name.json" end.cpu_utilization_percent.remote_total | awk '{ printf "%.0f", $1 }')
	[ -n "$mbps" ] || { fail "no result in iperf3's JSON ($name.json)"; return; }
	sh=$(share "$b" "$a")
	sub=""
	[ -n "$mp" ] && sub=$(cat "$name.subflows" 2>/dev/null)
	tp_row "$fig" "$sys" "$rep" "$mbps" "$cs" "$cr" "$sh" "$sub" "" "$secs"
	log "   $sys: $mbps Mbit/s (rails $sh %${mp:+, subflows carrying data: ${sub:-none seen}}, cpu send/recv $cs/$cr %)"
	if [ -n "$mp" ]; then
		local used
		used=$(awk -v s="$sh" 'BEGIN { n = split(s, x, "/"); for (i = 1; i <= n; i++) u += x[i] >= 5; print u }')
		put "$fig" "$sys" "$rep" rails_used "$used"
		[ "$used" -eq "$BED_RAILS" ] || log "   WARNING: MPTCP used $used of $BED_RAILS rails (shares $sh %)"
	fi
}

# A throughput figure: ri2n, every single rail with TCP, MPTCP; SUM of the single rails.
tp_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 i s=0 v
	shift 2
	sub_begin
	sub ri2n_tp "$fig" "$rep" "$((TP_SECS + 1))" "$@"
	for ((i = 1; i <= BED_RAILS; i++)); do
		sub iperf_tp "$fig" "tcp-r$i" "$rep" "$SINGLE_SECS" "$i"
		v=$(awk -F'\t' -v f="$fig" -v s="tcp-r$i" -v r="$rep" '$1 == f && $2 == s && $3 == r && $4 == "mbps" { print $5 }' "$METRICS")
		if [ -n "$v" ] && [ -n "$s" ]; then s=$(awk -v a="$s" -v b="$v" 'BEGIN { print a + b }'); else s=""; fi
	done
	if [ -n "$s" ]; then
		put "$fig" tcp-sum "$rep" mbps "$s"
		echo "$fig,tcp-sum,$rep,$s,,,,,,," >>"$TP_CSV"
	fi
	sub iperf_tp "$fig" mptcp "$rep" "$TP_SECS" 1 mptcp
	sub_end
}

# Unmodified iperf3 with both ends under ri2n-run (what a user of mptcpize would try)
runiperf_figure() { # FIG REP
	iperf_tp "$1-ri2n-run" ri2n "$2" "$TP_SECS" 1 ri2n-run
}

# The cost of publishing state for ri2n-stat: ri2n alone, with publishing off
# (RI2N_STAT_MS=0 in both processes), to compare with the figure's ri2n.
nopub_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2
	shift 2
	RI2N_STAT_MS=0 ri2n_tp "$fig-nopub" "$rep" "$((TP_SECS + 1))" "$@"
}

# The same with a cluster key at both ends: every datagram sealed with AES-128-GCM (the cost of
# RI2N_KEY); authonly_figure: the integrity-only mode (RI2N_KEY_AUTH_ONLY=1, AES-GMAC).
keyed_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 key
	shift 2
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	RI2N_KEY=$key ri2n_tp "$fig-keyed" "$rep" "$((TP_SECS + 1))" "$@"
}
authonly_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 key
	shift 2
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	RI2N_KEY=$key RI2N_KEY_AUTH_ONLY=1 ri2n_tp "$fig-keyauth" "$rep" "$((TP_SECS + 1))" "$@"
}

# ri2n-xfer from the bench's build (or next to the programs given with --bin-dir)
xfer_bin() {
	local d
	for d in "${bindir:+$bindir/../tools}" "$ROOT/build-bench/ri2n/tools" "$ROOT/build/tools"; do
		[ -n "$d" ] && [ -x "$d/ri2n-xfer" ] && { echo "$d/ri2n-xfer"; return 0; }
	done
	return 1
}

# The capture check: host 2 captures every UDP frame arriving on its rails (a raw socket)
# while host 1 sends 64 MiB of a known text with ri2n-xfer, without a key and with one; the
# figures are the bytes captured and how many frames hold a 16-byte piece of the text (with a
# key: 0, or the payload is readable on the wire).
CAPTURE_PY=$ROOT/tests/netns/rail_capture.py
capture_figure() { # FIG REP
	local fig=$1 rep=$2 xfer mode name cap srv key v
	xfer=$(xfer_bin) || { fail "ri2n-xfer not built"; return; }
	need python3 "apt-get install python3" || return
	python3 -c '
import sys
line = b"ri2n capture check: the quick brown fox jumps over the lazy dog 0123456789\n"
sys.stdout.buffer.write(line * (64 * 1024 * 1024 // len(line)))' >"$RAW/capture-text"
	for mode in plain keyed; do
		name=$RAW/$fig-capture-$mode-$rep
		key=""
		[ "$mode" = keyed ] && key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
		rm -f "$name.stop"
		bg "$name.cap" "$name.cap.err" ip netns exec "$(hns 2)" python3 "$CAPTURE_PY" "$name.stop" \
			"$RAW/capture-text" $(rails_list | tr , ' ')
		cap=$BG
		for v in $(seq 50); do grep -qs capturing "$name.cap" && break; sleep 0.1; done
		next_port
		bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env ${key:+RI2N_KEY=$key} \
			RI2N_RAILS="$(rails_list)" "$xfer" serve --quiet --once --port "$PORT" --out "$name.recv"
		srv=$BG
		wait_port 2 "$PORT" || { stop_bg $srv; stop_bg $cap; fail "ri2n-xfer server did not start"; return; }
		timeout -s KILL 60 ip netns exec "$(hns 1)" env ${key:+RI2N_KEY=$key} RI2N_RAILS="$(rails_list)" \
			"$xfer" send "$(haddr 2 1)" --port "$PORT" --file "$RAW/capture-text" >"$name.out" 2>"$name.err" ||
			{ stop_bg $srv; stop_bg $cap; fail "ri2n-xfer send failed: $(tail -c 300 "$name.out")"; return; }
		wait_exit $srv 10
		touch "$name.stop"
		wait_exit $cap 10
		cmp -s "$RAW/capture-text" "$name.recv" || { fail "$mode: the text arrived changed"; return; }
		rm -f "$name.recv"
		v=$(sed -n 's/^frames=[0-9]* bytes=\([0-9]*\) hits=\([0-9]*\)$/\1 \2/p' "$name.cap")
		[ -n "$v" ] || { fail "$mode: the capture failed: $(tail -c 300 "$name.cap.err")"; return; }
		put "$fig-capture" "$mode" "$rep" bytes "${v% *}"
		put "$fig-capture" "$mode" "$rep" hits "${v#* }"
		log "   $mode: $((${v% *} >> 20)) MiB captured, ${v#* } frames holding the text"
	done
}

# A figure with a condition on every rail: ri2n and MPTCP only.
cond_figure() { # FIG REP
	sub_begin
	sub ri2n_tp "$1" "$2" "$((TP_SECS + 1))"
	sub iperf_tp "$1" mptcp "$2" "$TP_SECS" 1 mptcp
	sub_end
}

degraded_figure() { # REP: rail 2 of host 1 at 250 Mbit/s (both directions of its link)
	local rep=$1 s1 s2
	tb_fault rate 1 2 250mbit || { fail "tb_fault rate 1 2 250mbit failed"; return; }
	sub_begin
	sub ri2n_tp degraded "$rep" "$((TP_SECS + 1))"
	sub iperf_tp degraded mptcp "$rep" "$TP_SECS" 1 mptcp
	sub iperf_tp degraded tcp-r1 "$rep" "$SINGLE_SECS" 1
	sub iperf_tp degraded tcp-r2 "$rep" "$SINGLE_SECS" 2
	tb_fault rate 1 2 off
	s1=$(sval degraded tcp-r1 mbps) s2=$(sval degraded tcp-r2 mbps)
	[ -n "$s1" ] && [ -n "$s2" ] && put degraded tcp-sum "$rep" mbps "$(awk -v a="$s1" -v b="$s2" 'BEGIN { print a + b }')"
	sub_end
}

loss_figure() { # REP PERCENT
	local rep=$1 p=$2 i rc
	for ((i = 1; i <= BED_RAILS; i++)); do tb_fault loss 1 "$i" "$p" || { fail "tb_fault loss failed"; return; }; done
	cond_figure "loss$p" "$rep"
	rc=$?
	for ((i = 1; i <= BED_RAILS; i++)); do tb_fault loss 1 "$i" 0; done
	return $rc
}

# ---- redundant small messages ----------------------------------------------------------------
# redundant_figure REP: 8-byte request/response, RED_ITERS round trips per system, host 1's port
# on rail 1 losing 1% each way (nftables numgen in the switch): ri2n with RI2N_REDUNDANT_BYTES=64
# at both ends (each message also on the other rail), ri2n without (normal), TCP (on rail 1, the
# lossy one); first ri2n without loss, the reference. Pinned as the latency figure; the order of
# the lossy three alternates with REP. Round trips, twice ri2n-pingpong's half round trips.
RED_CSV=$out/redundant.csv
echo "system,rep,loss_pct,iterations,p50_us,p99_us,p999_us,max_us" >"$RED_CSV"
red_run() { # SYS REP LOSS
	local sys=$1 rep=$2 loss=$3 name targ=() penv=(RI2N_RAILS="$(rails_list)") rc iters=$RED_ITERS
	# TCP: a fifth of the round trips, each of its losses waits for its 200 ms RTO floor
	case $sys in tcp) targ=(--tcp) iters=$((RED_ITERS / 5)) ;; ri2n-redundant) penv+=(RI2N_REDUNDANT_BYTES=64) ;; esac
	name=$RAW/redundant-$sys-$loss-$rep
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env "${penv[@]}" taskset -c 1 \
		"$PINGPONG" serve --once --port "$PORT" "${targ[@]}"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }
	timeout -s KILL 120 ip netns exec "$(hns 1)" env "${penv[@]}" taskset -c 0 "$PINGPONG" client \
		"$(haddr 2 1)" --port "$PORT" "${targ[@]}" --sizes 8 --iterations "$iters" --warmup 200 \
		--budget 1G --verify --csv "$name.csv" >"$name.out" 2>"$name.err"
	rc=$?
	wait_exit $srv 5
	[ $rc -eq 0 ] || { fail "ri2n-pingpong $sys exited $rc: $(head -c 300 "$name.err")"; return; }
	awk -F, -v s="$sys" -v r="$rep" -v l="$loss" 'NR == 2 {
		printf "%s,%s,%s,%s,%.1f,%.1f,%.1f,%.1f\n", s, r, l, $4, 2 * $5, 2 * $6, 2 * $11, 2 * $9 }' "$name.csv" >>"$RED_CSV"
	awk -F, -v s="$sys$([ "$loss" = 0 ] && echo -clean)" -v r="$rep" 'NR == 2 {
		printf "redundant\t%s\t%s\tp50\t%.1f\nredundant\t%s\t%s\tp99\t%.1f\n", s, r, 2 * $5, s, r, 2 * $6
		printf "redundant\t%s\t%s\tp999\t%.1f\nredundant\t%s\t%s\tmax\t%.1f\n", s, r, 2 * $11, s, r, 2 * $9 }' \
		"$name.csv" >>"$METRICS"
	log "   $sys, loss $loss%: round trip p50/p99/p99.9 $(awk -F, 'NR == 2 { printf "%.1f/%.1f/%.1f us", 2 * $5, 2 * $6, 2 * $11 }' "$name.csv")"
}
redundant_figure() { # REP
	local rep=$1 s order="ri2n-redundant ri2n tcp"
	[ $((rep % 2)) -eq 0 ] && order="tcp ri2n ri2n-redundant"
	sub_begin
	sub red_run ri2n "$rep" 0
	tb_fault loss 1 1 1 || { fail "tb_fault loss failed"; return; }
	for s in $order; do sub red_run "$s" "$rep" 1; done
	tb_fault loss 1 1 0
	sub_end
}
# The redundant-mode paragraph of summary.md
redundant_summary() {
	local s
	echo "## Redundant small messages: 8-byte request/response, 1% loss on one rail"
	echo
	echo "2 x GbE bed, host 1's port on rail 1 dropping 1% of frames each way; $RED_ITERS round trips per row" \
		"($((RED_ITERS / 5)) for TCP, whose every loss waits for its 200 ms RTO floor)," \
		"pinned, every echo checked. ri2n redundant: \`RI2N_REDUNDANT_BYTES=64\` at both ends (each packet of" \
		"a message up to 64 bytes also goes on the other rail); TCP runs on rail 1. Round trips in µs."
	echo
	echo "| system | loss on rail 1 | p50 | p99 | p99.9 | max | p99 / loss-free ri2n p99 |"
	echo "|---|---|---|---|---|---|---|"
	for s in ri2n-clean ri2n-redundant ri2n tcp; do
		[ -n "$(agg redundant $s p50)" ] || continue
		echo "| ${s%-clean} | $([ "$s" = ri2n-clean ] && echo 0% || echo 1%) | $(fmtv redundant $s p50 1) |" \
			"$(fmtv redundant $s p99 1) | $(fmtv redundant $s p999 1) | $(fmtv redundant $s max 1) |" \
			"$(ratio "$(med redundant $s p99)" "$(med redundant ri2n-clean p99)") |"
	done
	echo
}

# ---- failover ------------------------------------------------------------------------------
FO_CSV=$out/failover.csv # the plot's; mtuhole.csv and mtuhole_events.csv have the same columns
FO_EV=$out/failover_events.csv
for f in failover mtuhole; do
	echo "system,rep,t,mbps,rail1_state,rail2_state,rail1_mbps,rail2_mbps,rail1_pkts,rail2_pkts" >"$out/$f.csv"
	echo "system,rep,what,t,ms_after" >"$out/${f}_events.csv"
done

# failover SYS REP [FIG]: rail 2 of host 1 black-holed at FO_FAULT s, healed at FO_HEAL s.
# FIG mtuhole: the same, but only IP packets over 1000 bytes are dropped (an MTU black hole)
failover() {
	local sys=$1 rep=$2 fig=${3:-failover} name wrap=() targs=() rails t0 tf tf0 th th0 rc m
	local fault="blackhole 1 2 on" heal="blackhole 1 2 off" chain=bh_h1
	local FO_CSV=$out/$fig.csv FO_EV=$out/${fig}_events.csv
	[ "$fig" = mtuhole ] && fault="mtuhole 1 2 1000" heal="mtuhole 1 2 off" chain=mtu_h1
	name=$RAW/$fig-$sys-$rep
	rails=$(rails_list)
	if [ "$sys" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run) targs=(--tcp --rails "$BED_RAILS")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env RI2N_RAILS="$rails" "${wrap[@]}" \
		"$STREAM" serve --once --quiet --port "$PORT" --csv "$name.recv.csv" "${targs[@]}"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }
	# nft monitor in rail 2's switch: when the drop rule really went in (a new ruleset
	# generation) and when it went out, to the millisecond (the command takes tens of ms)
	bg "$name.nft" "$name.nft.err" sh -c "ip netns exec ri2n-$BED-sw2 stdbuf -oL nft monitor | '$STREAM' stamp"
	local mon=$BG
	sleep 0.2
	timeout -s KILL $((${FO_SECS%.*} + 40)) ip netns exec "$(hns 1)" env RI2N_RAILS="$rails" "${wrap[@]}" \
		"$STREAM" send "$(haddr 2 1)" --port "$PORT" --seconds "$FO_SECS" --quiet --csv "$name.send.csv" \
		"${targs[@]}" \
		--fault-at "$FO_FAULT" --fault-cmd "$TESTBED --tag $BED fault $fault" \
		--heal-at "$FO_HEAL" --heal-cmd "$TESTBED --tag $BED fault $heal" \
		>"$name.out" 2>"$name.err"
	rc=$?
	stop_bg $mon
	wait_exit $srv 10
	# shellcheck disable=SC2086 # word splitting of the fault's arguments is meant
	tb_fault $heal >/dev/null 2>&1 # whatever happened, heal
	[ $rc -eq 0 ] || { fail "$sys stream exited $rc: $(grep -m1 done "$name.out") $(grep -v '^stream' "$name.err" | head -c 300)"; return; }
	tf=$(awk '/stream fault what=fault/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_end=/) print substr($i, 10) }' "$name.err")
	tf0=$(awk '/stream fault what=fault/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_start=/) print substr($i, 12) }' "$name.err")
	th=$(awk '/stream fault what=heal/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_end=/) print substr($i, 10) }' "$name.err")
	th0=$(awk '/stream fault what=heal/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_start=/) print substr($i, 12) }' "$name.err")
	[ -n "$tf" ] && [ -n "$th" ] || { fail "the fault or the heal did not run: $(grep 'stream fault' "$name.err")"; return; }
	# in place: the earlier of the command's end and the monitor's "new generation" line
	# after the black hole chain was added (removed); the monitor sees it ~1 ms late at most
	local mf mh
	mf=$(awk -v a="$tf0" -v c="$chain" '$1 >= a - 0.001 && $0 ~ (" add chain .* " c " ") { s = 1 } s && /new generation/ { print $1; exit }' "$name.nft")
	mh=$(awk -v a="$th0" -v c="$chain" '$1 >= a - 0.001 && $0 ~ (" delete chain .* " c) { s = 1 } s && /new generation/ { print $1; exit }' "$name.nft")
	[ -n "$mf" ] && tf=$(awk -v a="$tf" -v b="$mf" 'BEGIN { printf "%.6f", (b < a ? b : a) }')
	[ -n "$mh" ] && th=$(awk -v a="$th" -v b="$mh" 'BEGIN { printf "%.6f", (b < a ? b : a) }')
	[ -n "$mf" ] || log "   (no nft monitor line for the fault: timing from the command's end)"
	grep -q 'stream fault.* rc=0' "$name.err" || { fail "a fault command failed: $(grep 'stream fault' "$name.err")"; return; }
	t0=$(awk -F, 'NR == 2 { printf "%.6f", $3 - $2 }' "$name.recv.csv")
	# per-100 ms rows for the plot and the CSV
	awk -F, -v sys="$sys" -v rep="$rep" 'NR > 1 && $1 == "recv" {
		split($7, mb, ";"); split($8, pk, ";")
		printf "%s,%s,%.3f,%.2f,%s,%s,%s,%s,%s,%s\n", sys, rep, $2, $4, substr($6, 1, 1), substr($6, 2, 1),
			mb[1], mb[2], pk[1], pk[2] }' "$name.recv.csv" >>"$FO_CSV"
	# the figures, from the receiver's intervals (each ends at "mono", 100 ms long)
	m=$(awk -F, -v tf="$tf" -v th="$th" -v t0="$t0" -v secs="$FO_SECS" -v one=1000 '
		NR > 1 && $1 == "recv" { mono = $3; v = $4; split($8, pk, ";"); end = t0 + secs - 0.02
			if (mono > tf && mono - 0.1 < th) { if (mo == "" || v < mo) mo = v }
			if (mono > tf && mono <= end) { if (ma == "" || v < ma) ma = v; if (v < 0.4 * one) below += 0.1 }
			if (mono > th && mono <= end && back == "" && pk[2] > 0) back = mono - th
			if (mono > th && mono <= end && agg == "" && v >= 1.5 * one) agg = mono - th
			if (mono - 0.1 >= t0 + 1 && mono <= tf) { sb += v; nb++ }
			if (mono - 0.1 >= tf + 0.3 && mono <= th) { sd += v; nd++ }
		}
		END { printf "%s %s %.1f %s %s %s %s", (mo == "" ? "NA" : mo), (ma == "" ? "NA" : ma), below,
			(back == "" ? "NA" : sprintf("%.0f", back * 1000)), (agg == "" ? "NA" : sprintf("%.0f", agg * 1000)),
			(nb ? sprintf("%.0f", sb / nb) : "NA"), (nd ? sprintf("%.0f", sd / nd) : "NA") }' "$name.recv.csv")
	local min_out min_all below back aggb before during v
	read -r min_out min_all below back aggb before during <<<"${m//NA/-}"
	for v in min_out min_all below back aggb before during; do [ "${!v}" = - ] && printf -v "$v" '%s' ""; done
	put "$fig" "$sys" "$rep" min_outage "$min_out"
	put "$fig" "$sys" "$rep" min_all "$min_all"
	put "$fig" "$sys" "$rep" below40 "$below"
	put "$fig" "$sys" "$rep" data_back_ms "$back"
	put "$fig" "$sys" "$rep" agg_back_ms "$aggb"
	put "$fig" "$sys" "$rep" before "$before"
	put "$fig" "$sys" "$rep" during "$during"
	put "$fig" "$sys" "$rep" fault_cmd_ms "$(awk -v a="$tf0" -v b="$tf" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
	put "$fig" "$sys" "$rep" verified "$(field verified "$name.srv.out")"
	{
		echo "$sys,$rep,fault_cmd_start,$(awk -v a="$tf0" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),"
		echo "$sys,$rep,fault_in_place,$(awk -v a="$tf" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),0"
		echo "$sys,$rep,heal_cmd_start,$(awk -v a="$th0" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),"
		echo "$sys,$rep,heal_in_place,$(awk -v a="$th" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),0"
	} >>"$FO_EV"
	local det="" up="" line
	if [ "$sys" = ri2n ]; then
		# ri2n's own events (CLOCK_MONOTONIC): the first "rail=1 down" on either side after the
		# fault, and the sender's first "rail=1 up" after the heal (ri2n rail 1 = bed rail 2)
		det=$(cat "$name.err" "$name.srv.err" | awk -v a="$tf0" -v tf="$tf" '/stream event/ && / rail=1 down/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^mono=/) m = substr($i, 6) + 0
			if (m >= a - 0.005 && (d == "" || m < d)) d = m } END { if (d != "") printf "%.1f", (d - tf) * 1000 }')
		up=$(awk -v a="$th0" -v th="$th" '/stream event/ && / rail=1 up/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^mono=/) m = substr($i, 6) + 0
			if (m >= a - 0.005 && u == "") u = m } END { if (u != "") printf "%.1f", (u - th) * 1000 }' "$name.err")
		put "$fig" ri2n "$rep" detect_ms "$det"
		put "$fig" ri2n "$rep" up_ms "$up"
		for line in "detected_down,$det" "up_event,$up"; do
			local ms=${line#*,}
			[ -n "$ms" ] && echo "$sys,$rep,${line%%,*},$(awk -v a="$tf" -v b="$th" -v m="$ms" -v t="$t0" -v w="${line%%,*}" \
				'BEGIN { printf "%.4f", (w == "up_event" ? b : a) - t + m / 1000 }'),$ms" >>"$FO_EV"
		done
	fi
	[ -n "$back" ] && echo "$sys,$rep,rail2_data_back_bin_end,$(awk -v b="$th" -v m="$back" -v t="$t0" 'BEGIN { printf "%.4f", b - t + m / 1000 }'),$back" >>"$FO_EV"
	log "   $sys: before $before, during $during Mbit/s; lowest 100 ms bin: outage $min_out, fault..end $min_all Mbit/s;" \
		"below 400 Mbit/s: $below s${det:+; detected in $det ms}${up:+; up event $up ms after the heal};" \
		"rail 2 data again in the bin ending ${back:-never} ms after the heal; verified $(field verified "$name.srv.out")"
}

# ---- latency -------------------------------------------------------------------------------
LAT_CSV=$out/latency.csv
echo "system,wait,rep,size,iterations,median_us,p99_us,min_us,mean_us,pinned" >"$LAT_CSV"
# latency figures in the metrics: lat-block (blocking reads, pinned), lat-unpinned (blocking
# reads, not pinned), lat-busy (busy polling, not pinned)
lat_fig() { # WAIT PIN
	if [ "$1" = busy ]; then echo lat-busy; elif [ "$2" = yes ]; then echo lat-block; else echo lat-unpinned; fi
}
# Does this ri2n-pingpong have the fast API (ri2n_send/ri2n_recv, --fast)?
# (the usage text in a variable: grep -q in a pipe would make the pipe fail under pipefail)
pp_has_fast() { [[ $("$PINGPONG" --help 2>&1) == *--fast* ]]; }

# pingpong SYS REP [WAIT] [PIN] [SIZES]: ri2n-pingpong. SYS: ri2n (plain read/write on the
# descriptor: libri2n's own, the fast path), ri2n-desc (the same with RI2N_PLAIN_FAST=0: through
# the socketpair and the engine thread), ri2n-fast (the fast API, --fast), tcp, udp. PIN yes (the default for blocking
# reads): host 1 on CPU 0, host 2 on CPU 1 (two one-core hosts); no: wherever the scheduler
# puts them. Busy polling always runs unpinned (ri2n's engine thread needs a core too).
pingpong() {
	local sys=$1 rep=$2 wait=${3:-block} pin=${4:-yes} psizes=${5:-$PP_SIZES} name targ=() pin1=() pin2=() sizes=() rc fig
	local penv=(RI2N_RAILS="$(rails_list)")
	[ "$wait" = busy ] && pin=no
	[ "$sys" = ri2n-desc ] && penv+=(RI2N_PLAIN_FAST=0)
	fig=$(lat_fig "$wait" "$pin")
	name=$RAW/latency-$sys-$wait-pin$pin-$rep
	case $sys in tcp) targ=(--tcp) ;; udp) targ=(--udp) ;; esac
	if [ "$sys" = ri2n-fast ]; then
		pp_has_fast || { skip "ri2n-pingpong has no --fast (the fast API) yet"; return; }
	fi
	if [ "$wait" = busy ]; then
		targ+=(--busy-poll) sizes=(--sizes "$BUSY_SIZES")
	else
		[ "$pin" = yes ] && pin1=(taskset -c 0) pin2=(taskset -c 1)
		[ -n "$psizes" ] && sizes=(--sizes "$psizes")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env "${penv[@]}" "${pin2[@]}" \
		"$PINGPONG" serve --once --port "$PORT" "${targ[@]}"
	local srv=$BG
	# the server follows the client's --fast
	[ "$sys" = ri2n-fast ] && targ+=(--fast)
	if [ "$sys" = udp ]; then sleep 0.3; else wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }; fi
	timeout -s KILL 300 ip netns exec "$(hns 1)" env "${penv[@]}" "${pin1[@]}" \
		"$PINGPONG" client "$(haddr 2 1)" --port "$PORT" "${targ[@]}" --iterations "$PP_ITERS" \
		--budget "$PP_BUDGET" "${sizes[@]}" --csv "$name.csv" >"$name.out" 2>"$name.err"
	rc=$?
	wait_exit $srv 5
	[ $rc -eq 0 ] || { fail "ri2n-pingpong $sys exited $rc: $(head -c 300 "$name.err")"; return; }
	awk -F, -v s="$sys" -v r="$rep" -v p="$pin" 'NR > 1 && $5 != "n/a" { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", s, $2, r, $3, $4, $5, $6, $7, $8, p }' \
		"$name.csv" >>"$LAT_CSV"
	awk -F, -v s="$sys" -v r="$rep" -v f="$fig" 'NR > 1 && $5 != "n/a" {
		printf "%s\t%s\t%s\tmed_%s\t%s\n%s\t%s\t%s\tp99_%s\t%s\n", f, s, r, $3, $5, f, s, r, $3, $6 }' \
		"$name.csv" >>"$METRICS"
	log "   $sys ($wait, pinned: $pin): $(awk -F, 'NR > 1 && $5 != "n/a" { printf "%s B %s [%s] us; ", $3, $5, $6 }' "$name.csv" | cut -c1-220)"
}

# sockperf_lat SYS REP [PIN] [SIZES]: sockperf ping-pong at each size. SYS: sockperf-udp,
# sockperf-tcp (--tcp over rail 1), sockperf-ri2n-run (--tcp with both ends under ri2n-run:
# ri2n over every rail). PIN as for pingpong (default yes).
sockperf_lat() {
	local sys=$1 rep=$2 pin=${3:-yes} proto=() szs=${4:-} sz name rc fig wrap=() pin1=() pin2=() rr
	need sockperf "apt-get install sockperf" || return
	case $sys in
	sockperf-tcp) proto=(--tcp) ;;
	sockperf-ri2n-run)
		proto=(--tcp)
		[ "$mode" = smoke ] && { skip "sockperf under ri2n-run is not part of the smoke run"; return; }
		[ -n "$SP_RR_FAILED" ] && { skip "not run again after it failed ($SP_RR_FAILED)"; return; }
		rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
		wrap=(env RI2N_RAILS="$(rails_list)" "$rr")
		;;
	esac
	if [ -z "$szs" ]; then if [ -n "${proto[*]}" ]; then szs=$SP_SIZES_TCP; else szs=$SP_SIZES_UDP; fi; fi
	[ "$pin" = yes ] && pin1=(taskset -c 0) pin2=(taskset -c 1)
	fig=$(lat_fig block "$pin")
	name=$RAW/latency-$sys-pin$pin-$rep
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" "${pin2[@]}" "${wrap[@]}" sockperf server "${proto[@]}" \
		-i "$(haddr 2 1)" -p "$PORT"
	local srv=$BG
	if [ -n "${proto[*]}" ]; then
		wait_port 2 "$PORT" || { stop_bg $srv; fail "sockperf server did not start: $(head -c 300 "$name.srv.out")"; return; }
	else
		sleep 0.5
	fi
	for sz in $szs; do
		timeout -s KILL $((SP_SECS + 30)) ip netns exec "$(hns 1)" "${pin1[@]}" "${wrap[@]}" sockperf ping-pong "${proto[@]}" \
			-i "$(haddr 2 1)" -p "$PORT" -m "$sz" -t "$SP_SECS" >"$name-$sz.out" 2>&1
		rc=$?
		if [ $rc -ne 0 ]; then
			stop_bg $srv
			fail "sockperf ping-pong -m $sz ($sys) exited $rc: $(grep -m1 -i error "$name-$sz.out" | cut -c1-200)"
			[ "$sys" = sockperf-ri2n-run ] && SP_RR_FAILED="pinned: $pin, $sz B, exit status $rc"
			return
		fi
		# sockperf prints half round trips (one-way latency) in usec
		awk -v s="$sys" -v r="$rep" -v z="$sz" -v p="$pin" '/percentile 50.000/ { med = $NF } /percentile 99.000/ { p99 = $NF }
			/<MIN> observation/ { mn = $NF } /avg-latency=/ { match($0, /avg-latency=[0-9.]+/); avg = substr($0, RSTART + 12, RLENGTH - 12) }
			END { if (med != "") printf "%s,block,%s,%s,,%s,%s,%s,%s,%s\n", s, r, z, med, p99, mn, avg, p }' "$name-$sz.out" >>"$LAT_CSV"
		awk -v s="$sys" -v r="$rep" -v z="$sz" -v f="$fig" '/percentile 50.000/ { med = $NF } /percentile 99.000/ { p99 = $NF }
			END { if (med != "") printf "%s\t%s\t%s\tmed_%s\t%s\n%s\t%s\t%s\tp99_%s\t%s\n", f, s, r, z, med, f, s, r, z, p99 }' \
			"$name-$sz.out" >>"$METRICS"
	done
	stop_bg $srv
	log "   $sys (pinned: $pin): $(awk -F, -v s="$sys" -v r="$rep" -v p="$pin" '$1 == s && $3 == r && $10 == p { printf "%s B %s [%s] us; ", $4, $6, $7 }' "$LAT_CSV")"
}

# latency_figure REP: LAT_ROUNDS rounds, each pinned then unpinned; the order of the systems
# alternates from round to round. Round 1 sweeps every size, later rounds only LAT_ROUND_SIZES
# (sockperf TCP: its smallest size; sockperf UDP, pinned, only in round 1), so the
# small-message medians are over LAT_ROUNDS runs.
SP_RR_FAILED=""
latency_figure() { # REP
	local rep=$1 s r round order pin ppsz spsz_tcp spsz_udp
	sub_begin
	pp_has_fast || log "   ri2n-pingpong has no --fast (the fast API) yet: its rows are left out"
	for ((round = 1; round <= LAT_ROUNDS; round++)); do
		r=$rep; [ "$LAT_ROUNDS" -gt 1 ] && r=$rep.$round
		ppsz=$PP_SIZES spsz_tcp=$SP_SIZES_TCP spsz_udp=$SP_SIZES_UDP
		[ "$round" -gt 1 ] && ppsz=$LAT_ROUND_SIZES spsz_tcp=${SP_SIZES_TCP%% *}
		[ "$LAT_ROUNDS" -gt 1 ] && log "   round $round of $LAT_ROUNDS"
		for pin in yes no; do
			if [ $((round % 2)) -eq 1 ]; then order="ri2n tcp ri2n-fast udp"; else order="tcp ri2n udp ri2n-fast"; fi
			for s in $order; do
				[ "$s" = ri2n-fast ] && ! pp_has_fast && continue
				sub pingpong "$s" "$r" block "$pin" "$ppsz"
			done
			# the descriptor's way (raw system calls, stdio), small messages, first round only
			[ "$round" -eq 1 ] && sub pingpong ri2n-desc "$r" block "$pin" "$LAT_ROUND_SIZES"
			if [ $((round % 2)) -eq 1 ]; then order="sockperf-tcp sockperf-ri2n-run"; else order="sockperf-ri2n-run sockperf-tcp"; fi
			for s in $order; do sub sockperf_lat "$s" "$r" "$pin" "$spsz_tcp"; done
			[ "$pin" = yes ] && [ "$round" -eq 1 ] && sub sockperf_lat sockperf-udp "$r" yes "$spsz_udp"
		done
	done
	if [ -n "$BUSY_SIZES" ]; then
		for s in ri2n tcp udp; do sub pingpong "$s" "$rep" busy; done
		pp_has_fast && sub pingpong ri2n-fast "$rep" busy
	fi
	sub_end
}

# ---- request rate: a real key-value server under ri2n-run ----------------------------------
# redis-server in host 2 and redis-benchmark in host 1, both under ri2n-run (ri2n over every
# rail), next to the same pair over plain TCP on rail 1; rounds alternate which goes first.
KV_CSV=$out/kv.csv
echo "system,clients,pipeline,rep,test,requests,rps,avg_ms,p50_ms,p99_ms" >"$KV_CSV"
KV_SETTINGS="p16 c50 c1000" KV_RR=""
kv_args() { # SETTING -> redis-benchmark arguments
	case $1 in
	p16) echo "-c 50 -P 16 -n $KV_N_PIPE" ;;
	c50) echo "-c 50 -n $KV_N" ;;
	c1000) echo "-c 1000 -n $KV_N_1000" ;;
	esac
}
kv_label() { case $1 in p16) echo "50 clients, pipelined (-P 16)" ;; c50) echo "50 clients" ;; c1000) echo "1000 clients" ;; esac; }
kv_wrap() { [ "$1" = ri2n ] && printf '%s\n' env RI2N_RAILS="$(rails_list)" "$KV_RR"; }
# sh -c script: open files up to 65536 (or the hard limit if lower; 1000 clients under ri2n-run
# take about 4 descriptors each), then the command
KV_SH='n=$(ulimit -Hn); [ "$n" = unlimited ] && n=65536; [ "$n" -gt 65536 ] && n=65536; ulimit -n "$n" && exec "$@"'
# kv_server SYS PORT REP: redis without persistence on host 2's rail 1 address (pid in BG)
kv_server() {
	local sys=$1 port=$2 name=$RAW/kv-$1-$3 wrap=()
	mapfile -t wrap < <(kv_wrap "$sys")
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" sh -c "$KV_SH" sh "${wrap[@]}" \
		redis-server --bind "$(haddr 2 1)" --port "$port" --save '' --appendonly no --protected-mode no \
		--daemonize no --maxclients 10000
}
# kv_bench SYS SETTING REP PORT: one redis-benchmark run (SET then GET), ops/s into kv.csv
kv_bench() {
	local sys=$1 set=$2 rep=$3 port=$4 wrap=() args=() name rc c p n t v
	name=$RAW/kv-$sys-$set-$rep
	mapfile -t wrap < <(kv_wrap "$sys")
	read -r -a args <<<"$(kv_args "$set")"
	timeout -s KILL 150 ip netns exec "$(hns 1)" sh -c "$KV_SH" sh "${wrap[@]}" \
		redis-benchmark -h "$(haddr 2 1)" -p "$port" -t set,get "${args[@]}" --csv >"$name.csv" 2>"$name.err"
	rc=$?
	[ $rc -eq 0 ] || { fail "redis-benchmark ($sys, $(kv_label "$set")) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	c=$(sed 's/.*-c \([0-9]*\).*/\1/' <<<"${args[*]}") n=$(sed 's/.*-n \([0-9]*\).*/\1/' <<<"${args[*]}")
	p=1; [[ " ${args[*]} " == *" -P "* ]] && p=$(sed 's/.*-P \([0-9]*\).*/\1/' <<<"${args[*]}")
	for t in SET GET; do
		# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
		v=$(tr -d '"' <"$name.csv" | awk -F, -v t="$t" '$1 == t { print $2, $3, $5, $7 }')
		[ -n "$v" ] || { fail "no $t result from redis-benchmark ($sys, $(kv_label "$set")): $(head -c 200 "$name.csv" "$name.err" | tr '\n' ' ')"; return; }
		read -r -a v <<<"$v"
		echo "$sys,$c,$p,$rep,$t,$n,${v[0]},${v[1]},${v[2]},${v[3]}" >>"$KV_CSV"
		put "kv-$set" "$sys" "$rep" "${t,,}" "${v[0]}"
	done
	log "   $sys, $(kv_label "$set"): SET $(awk -F, -v s="$sys" -v r="$rep" -v c="$c" -v p="$p" '$1 == s && $2 == c && $3 == p && $4 == r && $5 == "SET" { print $7 }' "$KV_CSV")," \
		"GET $(awk -F, -v s="$sys" -v r="$rep" -v c="$c" -v p="$p" '$1 == s && $2 == c && $3 == p && $4 == r && $5 == "GET" { print $7 }' "$KV_CSV") requests/s"
}
# kv_figure REP: both servers up, then KV_ROUNDS rounds of every client setting, TCP and ri2n
# alternating which goes first; every process is stopped at the end (and by the exit trap)
kv_figure() {
	local rep=$1 round r set sys order ptcp pri st sr
	need redis-server "apt-get install redis-server" || return
	need redis-benchmark "apt-get install redis-tools" || return
	KV_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	next_port; ptcp=$PORT
	next_port; pri=$PORT
	kv_server tcp "$ptcp" "$rep"; st=$BG
	kv_server ri2n "$pri" "$rep"; sr=$BG
	if ! wait_port 2 "$ptcp" || ! wait_port 2 "$pri"; then
		stop_bg $st; stop_bg $sr
		fail "redis-server did not start: $(tail -q -c 200 "$RAW/kv-tcp-$rep".srv.* "$RAW/kv-ri2n-$rep".srv.* | tr '\n' ' ')"
		return
	fi
	sub_begin
	for ((round = 1; round <= KV_ROUNDS; round++)); do
		r=$rep; [ "$KV_ROUNDS" -gt 1 ] && r=$rep.$round
		if [ $((round % 2)) -eq 1 ]; then order="tcp ri2n"; else order="ri2n tcp"; fi
		for set in $KV_SETTINGS; do
			for sys in $order; do
				if [ "$sys" = tcp ]; then sub kv_bench tcp "$set" "$r" "$ptcp"; else sub kv_bench ri2n "$set" "$r" "$pri"; fi
			done
		done
	done
	kill -0 $st 2>/dev/null || { SUB_FAIL=1 SUB_REASON="the TCP redis-server died: $(tail -c 200 "$RAW/kv-tcp-$rep.srv.out")"; }
	kill -0 $sr 2>/dev/null || { SUB_FAIL=1 SUB_REASON="redis-server under ri2n-run died: $(tail -c 200 "$RAW/kv-ri2n-$rep.srv.out")"; }
	stop_bg $st
	stop_bg $sr
	sub_end
}

# ---- a connection per request: nginx and wrk with Connection: close ----------------------
# nginx (a master, 2 workers, a small file) in host 2 and wrk (-t1, 1 and 16 clients,
# `Connection: close`: a new connection for every request) in host 1, both under ri2n-run
# (both rails) or both over plain TCP on rail 1; rounds alternate which goes first. Besides
# requests/s: how long wrk took to exit after its run (its Lua done() hook notes
# /proc/uptime when it prints the results; the bench reads it again when the process is gone).
CLOSE_CSV=$out/close.csv
echo "system,clients,rep,requests,seconds,rps,exit_s,socket_errors,non2xx" >"$CLOSE_CSV"
CLOSE_RR=""
close_setup() { # -> CLOSE_SECS CLOSE_ROUNDS for the mode
	case $mode in
	full) CLOSE_SECS=5 CLOSE_ROUNDS=1 ;;
	quick) CLOSE_SECS=3 CLOSE_ROUNDS=2 ;;
	*) CLOSE_SECS=1 CLOSE_ROUNDS=1 ;;
	esac
}
close_setup
# close_server SYS PORT REP: nginx serving $RAW/close-www on host 2's rail 1 address (pid in BG)
close_server() {
	local sys=$1 port=$2 d=$RAW/close-nginx-$1-$3 wrap=()
	[ "$sys" = ri2n ] && wrap=(env RI2N_RAILS="$(rails_list)" "$CLOSE_RR")
	mkdir -p "$d/tmp"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server { listen $(haddr 2 1):$port; root $RAW/close-www; }
}
EOF
	bg "$d.out" "$d.err" ip netns exec "$(hns 2)" "${wrap[@]}" nginx -e stderr -p "$d" -c "$d/nginx.conf"
}
# close_bench SYS CLIENTS REP PORT: one wrk run, a row in close.csv
close_bench() {
	local sys=$1 c=$2 rep=$3 port=$4 wrap=() name rc gone end n secs rps se nx ex
	name=$RAW/close-$sys-c$c-$rep
	[ "$sys" = ri2n ] && wrap=(env RI2N_RAILS="$(rails_list)" "$CLOSE_RR")
	timeout -s KILL $((CLOSE_SECS + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" wrk -t1 -c"$c" -d"${CLOSE_SECS}s" \
		-H 'Connection: close' -s "$RAW/close-done.lua" "http://$(haddr 2 1):$port/small" >"$name.out" 2>"$name.err"
	rc=$?
	gone=$(awk '{ print $1 }' /proc/uptime)
	[ $rc -eq 0 ] || { fail "wrk ($sys, $c clients) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	end=$(sed -n 's/^run_end_uptime \([0-9.]*\)$/\1/p' "$name.out")
	read -r n secs < <(sed -n 's/^ *\([0-9]*\) requests in \([0-9.]*\)\(m*\)s,.*/\1 \2\3/p' "$name.out")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$name.out")
	[ -n "$rps" ] && [ -n "$end" ] || { fail "no result from wrk ($sys, $c clients): $(head -c 300 "$name.out" | tr '\n' ' ')"; return; }
	se=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$name.out")
	nx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$name.out")
	ex=$(awk -v a="$end" -v b="$gone" 'BEGIN { printf "%.2f", b - a }')
	echo "$sys,$c,$rep,$n,$secs,$rps,$ex,${se:-0},${nx:-0}" >>"$CLOSE_CSV"
	put "close-c$c" "$sys" "$rep" rps "$rps"
	put "close-c$c" "$sys" "$rep" exit_s "$ex"
	put "close-c$c" "$sys" "$rep" errors $((${se:-0} + ${nx:-0}))
	log "   $sys, $c client(s): $rps requests/s, exit $ex s after the run$([ $((${se:-0} + ${nx:-0})) -gt 0 ] && echo ", ${se:-0} socket errors, ${nx:-0} non-2xx")"
}
# close_figure REP: both servers up, then CLOSE_ROUNDS rounds of 1 and 16 clients, TCP and
# ri2n-run alternating which goes first; both servers stopped at the end (and by the exit trap)
close_figure() {
	local rep=$1 round r c sys order ptcp pri st sr
	need nginx "apt-get install nginx" || return
	need wrk "apt-get install wrk" || return
	CLOSE_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	mkdir -p "$RAW/close-www"
	head -c 450 /dev/zero | tr '\0' 'x' >"$RAW/close-www/small" # a small page
	cat >"$RAW/close-done.lua" <<'EOF'
function done(summary, latency, requests)
	local f = io.open("/proc/uptime", "r")
	io.write(string.format("run_end_uptime %.2f\n", f:read("*n")))
	f:close()
end
EOF
	next_port; ptcp=$PORT
	next_port; pri=$PORT
	close_server tcp "$ptcp" "$rep"; st=$BG
	close_server ri2n "$pri" "$rep"; sr=$BG
	if ! wait_port 2 "$ptcp" || ! close_wait_ri2n "$pri"; then
		stop_bg $st; stop_bg $sr
		fail "nginx did not start: $(tail -q -c 200 "$RAW"/close-nginx-*-"$rep".err | tr '\n' ' ')"
		return
	fi
	sub_begin
	for ((round = 1; round <= CLOSE_ROUNDS; round++)); do
		r=$rep; [ "$CLOSE_ROUNDS" -gt 1 ] && r=$rep.$round
		if [ $((round % 2)) -eq 1 ]; then order="tcp ri2n"; else order="ri2n tcp"; fi
		for c in 1 16; do
			for sys in $order; do
				if [ "$sys" = tcp ]; then sub close_bench tcp "$c" "$r" "$ptcp"; else sub close_bench ri2n "$c" "$r" "$pri"; fi
			done
		done
	done
	kill -0 $st 2>/dev/null || { SUB_FAIL=1 SUB_REASON="the TCP nginx died: $(tail -c 200 "$RAW/close-nginx-tcp-$rep.err")"; }
	kill -0 $sr 2>/dev/null || { SUB_FAIL=1 SUB_REASON="nginx under ri2n-run died: $(tail -c 200 "$RAW/close-nginx-ri2n-$rep.err")"; }
	stop_bg $st
	stop_bg $sr
	sub_end
}
# close_wait_ri2n PORT: until ri2n's UDP sockets for PORT are open in host 2 (5 s at most)
close_wait_ri2n() {
	local k
	for k in $(seq 100); do
		[ -n "$(ip netns exec "$(hns 2)" ss -Huln "sport = :$1" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}
# The connection-per-request section of summary.md
close_summary() {
	local c
	echo "## A connection per request: nginx under ri2n-run vs TCP (requests/s)"
	echo
	echo "$(nginx -v 2>&1 | sed 's/.*: //') (a master and 2 workers, access log off, sendfile) in host 2 serving a" \
		"450-byte file, and $(wrk -v 2>&1 | awk 'NR == 1 { print $1, $2 }') \`-t1 -d${CLOSE_SECS}s -H 'Connection: close'\`" \
		"(a new connection for every request) in host 1; both under ri2n-run (ri2n over both rails) or both over plain" \
		"TCP on rail 1, 2 x GbE bed, unpinned. $CLOSE_ROUNDS round(s) per repetition, TCP and ri2n-run alternating" \
		"which goes first; median [min–max] over rounds. Exit: seconds from the end of wrk's run (its" \
		"results printed) to the process gone; errors: socket errors and non-2xx responses."
	echo
	echo "| clients | TCP | ri2n-run | ri2n-run / TCP | exit TCP (s) | exit ri2n-run (s) | errors TCP / ri2n-run (worst run) | target |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in 1 16; do
		[ -n "$(agg "close-c$c" tcp rps)$(agg "close-c$c" ri2n rps)" ] || continue
		echo "| $c | $(fmtv "close-c$c" tcp rps) | $(fmtv "close-c$c" ri2n rps) |" \
			"$(ratio "$(med "close-c$c" ri2n rps)" "$(med "close-c$c" tcp rps)") |" \
			"$(fmtv "close-c$c" tcp exit_s 2) | $(fmtv "close-c$c" ri2n exit_s 2) |" \
			"$(agg "close-c$c" tcp errors | awk '{ print $3 }') / $(agg "close-c$c" ri2n errors | awk '{ print $3 }') |" \
			">= 0.5x, exit <= 1 s |"
	done
	echo
}

# ---- MPI: btl_ri2n next to Open MPI's btl_tcp ---------------------------------------------
# Two ranks, one in each host's namespace (tests/mpi/netns-launch.sh), reaching mpirun's PMIx
# server over the management bridge; tests/mpi/mpi_check checks every byte. Rows in mpi.csv.
MPI_CSV=$out/mpi.csv
echo "system,btl,rails,rep,lat8_median_us,stream_MBps,outcome" >"$MPI_CSV"
MPI_PATH="" MPI_CHECK=""
mpi_setup() {
	local d btl_dir="" sys
	need mpirun "apt-get install openmpi-bin" || return
	need mpicc "apt-get install libopenmpi-dev" || return
	# beside the programs given with --bin-dir first, else the bench's own build
	for d in "${bindir:+$bindir/../btl_ri2n}" "$ROOT/build-bench/ri2n/btl_ri2n" "$ROOT/build/btl_ri2n"; do
		[ -n "$d" ] && [ -f "$d/mca_btl_ri2n.so" ] && { btl_dir=$(cd "$d" && pwd); break; }
	done
	[ -n "$btl_dir" ] || { fail "mca_btl_ri2n.so is not built (Open MPI's development files missing?)"; return; }
	MPI_CHECK=$RAW/mpi_check
	mpicc -O2 -I"$ROOT/tools/kit" -o "$MPI_CHECK" "$ROOT/tests/mpi/mpi_check.c" 2>"$RAW/mpicc.log" ||
		{ fail "mpicc failed: $(head -c 300 "$RAW/mpicc.log")"; return; }
	# ours first, Open MPI's own directories after it (docs/MPI.md)
	sys=$(ompi_info --param mca base --level 9 --parsable 2>/dev/null |
		sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' | head -n 1)
	MPI_PATH=$btl_dir${sys:+:$sys}
	log "   btl_ri2n from $btl_dir; Open MPI $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p')"
}
mpi_kill() { # whatever still runs in the hosts' namespaces after a job is a leftover rank
	local p
	local h
	for ((h = 1; h <= ${BED_HOSTS:-2}; h++)); do
		for p in $(ip netns pids "$(hns $h)" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
}
# mpi_job OUT BTL RAILS SECONDS mpi_check-args...: MPI_NP ranks (default 2) over --mca btl
# BTL,self on RAILS, rank r on host r % BED_HOSTS + 1, killed after SECONDS
# (BTL ofi: pml cm and mtl/ofi over the ri2n provider instead of a BTL)
mpi_job() {
	local o=$1 btl=$2 rails=$3 tmo=$4 rc path=()
	shift 4
	if [ "$btl" = ofi ]; then
		path=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ri2n --mca btl self
			-x FI_PROVIDER=ri2n -x FI_PROVIDER_PATH="$OFI_PROV" -x RI2N_RAILS="$rails")
	else
		path=(--mca btl "$btl,self" --mca btl_ri2n_if_include "$rails" --mca btl_tcp_if_include "$rails")
	fi
	RI2N_MPI_NS_PREFIX="ri2n-$BED-h" RI2N_MPI_HOSTS=${BED_HOSTS:-2} PMIX_MCA_ptl_base_if_include=$(tb_mgmt_subnet) \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -s KILL "$tmo" mpirun --oversubscribe --bind-to none -np "${MPI_NP:-2}" \
		--mca mca_base_component_path "$MPI_PATH" "${path[@]}" \
		-x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS -x PMIX_MCA_ptl_base_if_include \
		"$ROOT/tests/mpi/netns-launch.sh" "$MPI_CHECK" "$@" >"$o" 2>&1
	rc=$?
	mpi_kill
	return $rc
}
mpi_rails() { [ "${1#*-}" = 2r ] && echo r1,r2 || echo r1; } # SYS (ri2n-2r, tcp-1r, ...)
# mpi_perf SYS REP: 8-byte ping-pong latency and streaming bandwidth
mpi_perf() {
	local sys=$1 rep=$2 btl=${1%-*} rails name lat bw rc
	rails=$(mpi_rails "$sys")
	name=$RAW/mpi-$sys-$rep
	mpi_job "$name.out" "$btl" "$rails" $((MPI_SECS * 2 + 90)) \
		--phases latency,stream --bw-seconds "$MPI_SECS" --lat-iters "$MPI_ITERS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys: mpirun exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 3 | tr '\n' ' ' | head -c 300)"; return; }
	lat=$(sed -n 's/.*latency size=8 .* median_one_way_us=\([0-9.]*\).*/\1/p' "$name.out")
	bw=$(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$name.out")
	put mpi "$sys" "$rep" lat_us "$lat"
	put mpi "$sys" "$rep" mbps "$bw"
	echo "$sys,$btl,${rails//,/+},$rep,$lat,$bw,pass" >>"$MPI_CSV" # r1+r2: one CSV field
	log "   $(mpi_path_name "$sys") over $rails: 8 B one-way $lat us (median), stream $bw MB/s, every byte checked"
}
# mpi_blackhole SYS REP: streaming over both rails; rail 2 of host 1 silently black-holed
# MPI_FO_AT s into the stream and left so; a job that stops moving is killed MPI_HANG s
# after the stream should have ended, and reported as hung
mpi_blackhole() {
	local sys=$1 rep=$2 btl=${1%-*} name pid i t0 tf rc m
	name=$RAW/mpi-bh-$btl-$rep
	# (the shell's own "Killed" notice for a hung job is not wanted in the log)
	{ mpi_job "$name.out" "$btl" r1,r2 $((MPI_FO_SECS + MPI_HANG + 30)) \
		--phases stream --bw-seconds "$MPI_FO_SECS" --interval 0.1 2>/dev/null; } 2>/dev/null &
	pid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -q 'phase=stream start' "$name.out" 2>/dev/null && break
		sleep 0.05
	done
	t0=$(date +%s.%N)
	sleep "$MPI_FO_AT"
	tb_fault blackhole 1 2 on >/dev/null 2>&1 || { wait $pid; fail "could not black-hole rail 2"; return; }
	tf=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	# the stream ends MPI_FO_SECS after it began; past MPI_HANG s more the job is hung
	i=$(((MPI_FO_SECS + MPI_HANG) * 10))
	while kill -0 $pid 2>/dev/null && [ $i -gt 0 ]; do sleep 0.1; i=$((i - 1)); done
	kill -0 $pid 2>/dev/null && pkill -KILL -f "mpirun .*$MPI_CHECK" 2>/dev/null
	wait $pid
	rc=$?
	mpi_kill
	tb_fault blackhole 1 2 off >/dev/null 2>&1
	# receiver's intervals (t = end of the interval, s since the stream began there)
	m=$(awk -v tf="$tf" '/mpi_check stream rank=1 t=/ { split($4, a, "="); split($5, b, "="); t = a[2] + 0; v = b[2] + 0
			if (t <= tf) { sb += v; nb++ } else { if (mn == "" || v < mn) mn = v; sa += v; na++ }
			if (last != "" && t > tf && t - last > gap) gap = t - last; last = t }
		END { printf "%s %s %s %.0f %s", (nb ? sprintf("%.1f", sb / nb) : "-"), (na ? sprintf("%.1f", sa / na) : "-"),
			(mn == "" ? "-" : mn), gap * 1000, (last == "" ? "-" : last) }' "$name.out")
	local before after low gap last outcome
	read -r before after low gap last <<<"$m"
	if grep -q 'result=PASS' "$name.out" && [ $rc -eq 0 ]; then
		outcome=pass
		log "   $btl: PASS, every byte checked; black hole at ${tf} s into the stream; before $before MB/s," \
			"after it $after MB/s (mean of 100 ms intervals), lowest interval $low MB/s, longest interval ${gap} ms (100 while messages complete)"
	elif [ $rc -eq 137 ]; then # killed: by the wait above or by the job's own timeout
		outcome=hung
		log "   $btl: HUNG: no progress after ${last} s into the stream (black hole at ${tf} s); killed" \
			"$MPI_HANG s after the stream should have ended"
	else
		outcome="failed ($rc)"
		log "   $btl: FAILED, mpirun exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 2 | tr '\n' ' ' | head -c 200)"
	fi
	put mpi-bh "$btl" "$rep" outcome "$outcome"
	put mpi-bh "$btl" "$rep" fault_s "$tf"
	put mpi-bh "$btl" "$rep" before "$before"
	[ "$outcome" = pass ] && { put mpi-bh "$btl" "$rep" after "$after"; put mpi-bh "$btl" "$rep" low "$low"; put mpi-bh "$btl" "$rep" gap_ms "$gap"; }
	[ "$outcome" = hung ] && put mpi-bh "$btl" "$rep" last_s "$last"
	echo "bh-$btl,$btl,r1+r2,$rep,,$after,$outcome" >>"$MPI_CSV"
	[ "$btl" = ri2n ] && [ "$outcome" != pass ] && { fail "btl_ri2n did not survive the black hole ($outcome)"; return 1; }
	return 0
}
mpi_figure() { # REP
	local rep=$1 s
	[ -n "$MPI_PATH" ] || { mpi_setup || return; }
	sub_begin
	for s in ri2n-2r ri2n-1r tcp-1r tcp-2r; do sub mpi_perf "$s" "$rep"; done
	# Open MPI's other way to ri2n: mtl/ofi over the provider (where Open MPI has mtl/ofi)
	if ompi_info 2>/dev/null | grep -q 'MCA mtl: ofi' && ofi_find_prov; then
		sub mpi_perf ofi-2r "$rep"
	else
		log "   mtl/ofi: left out (Open MPI without mtl/ofi, or libri2n-fi.so not built)"
	fi
	for s in ri2n tcp; do sub mpi_blackhole "$s" "$rep"; done
	# not in --smoke (a ctest): 16 ranks take ~15 s, and tests/mpi's idle-eight covers the code
	[ "$rep" = 1 ] && [ "$mode" != smoke ] && sub mpi_idle "$rep"
	sub_end
}
mpi_idle_alone() { [ -n "$MPI_PATH" ] || { mpi_setup || return; }; mpi_idle 1; }
# Datagrams host 1 sent and received on its rails (with 2 hosts: all between the two).
mpi_rail_dgrams() {
	ip netns exec "$(hns 1)" awk '/^ *r[0-9]+:/ { sub(/^ *r[0-9]+: */, ""); n += $2 + $10 }
		END { print n + 0 }' /proc/net/dev
}
# mpi_idle REP: 16 ranks, 8 per host, over ri2n,self on both rails; one checked message each
# way between every pair (every link open), then 8 s without MPI calls (mpi_check --phases
# idle): datagrams a second on the rails between the two hosts over 5 s of it, from 2.5 s in
# (past the idle pace's start, 1 s without DATA). The same as tests/mpi/run_mpi.sh idle 16.
mpi_idle() {
	local rep=$1 pid a b i
	local o=$RAW/mpi-idle-$rep.out
	OMPI_MCA_btl_ri2n_verbose=1 MPI_NP=16 mpi_job "$o" ri2n r1,r2 180 --phases idle --idle-seconds 8 &
	pid=$!
	for ((i = 0; i < 1500; i++)); do
		grep -q 'phase=idle start' "$o" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2.5
	a=$(mpi_rail_dgrams)
	sleep 5
	b=$(mpi_rail_dgrams)
	wait "$pid" || { fail "16 idle ranks: mpirun failed (status $?)"; return; }
	grep -q 'mpi_check result=PASS' "$o" || { fail "16 idle ranks: mpi_check did not pass"; return; }
	put mpi-idle ri2n-16 "$rep" dgrams_per_s $(((b - a) / 5))
	put mpi-idle ri2n-16 "$rep" rail_downs "$(grep -c 'btl_ri2n: .*rail .* down' "$o")"
}

# ---- MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer ---------------------
# One rank per host on beds of 4 and 8 hosts (2 rails x 1 Gbit/s each, one switch per rail);
# mpi_check's alltoall phase (blocks of 1 KiB, which also opens every connection, then 256 KiB,
# every byte checked) gives MB/s per rank: a rank's 256 KiB blocks to the others over the time
# the slowest rank spent in MPI_Alltoall, over MPIN_A2A_ROUNDS rounds (quick 100, full 200).
# 8 rounds are 20-40 ms of transfer on 4 hosts: on a shared 2-core machine one rank held off
# the CPU for a few ms moves either figure 2x, and ri2n / btl_tcp went from 0.2 to 2.3 between
# runs of one build; over 200 rounds (1-2 s) it stayed within 0.9-1.7 (4 runs each of main and
# of the code before the congestion controller: medians 1.17 and 1.25). Memory: 2 ranks per
# host on the 8-host bed (15 peers),
# mpi_check's memory phase (Pss growth per peer: idle, busy, rested). Rows in mpi_hosts.csv.
MPIN_CSV=$out/mpi_hosts.csv
echo "figure,system,hosts,ranks,rep,metric,value" >"$MPIN_CSV"
# ---- incast: N senders into one host over shared switches; ri2n beside TCP on one rail ----
# incast_bed HOSTS: every rail one bridge, 1 Gbit/s host ports; MPTCP: each sender adds a
# subflow on r2, the receiver (the last host) signals its r2 address
incast_bed() {
	local tag h n=$1
	tag=$(bed_tag "bn${n}i")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	log "   test bed $tag: $n hosts, 2 rails x 1 Gbit/s host ports (namespaces ri2n-$tag-*)"
	tb_create --hosts "$n" --rails 2 --rate 1gbit >"$RAW/bed-$tag.log" 2>&1 ||
		{ fail "could not create test bed $tag: $(tail -n 2 "$RAW/bed-$tag.log" | tr '\n' ' ')"; return 1; }
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=2 BED_HOSTS=$n
	for ((h = 1; h <= n; h++)); do
		ip netns exec "$(hns $h)" sysctl -qw net.mptcp.enabled=1
		ip -n "$(hns $h)" mptcp limits set subflows 8 add_addr_accepted 8
		if ((h < n)); then
			ip -n "$(hns $h)" mptcp endpoint add "$(haddr $h 2)" dev r2 subflow
		else
			ip -n "$(hns $h)" mptcp endpoint add "$(haddr $h 2)" dev r2 signal
		fi
	done
}
# incast_put FIG SYS REP CAP KIND FILES...: Jain's index per whole second (bench/jain.py)
incast_put() {
	local fig=$1 sys=$2 rep=$3 cap=$4 kind=$5 res k v
	shift 5
	python3 "$HERE/jain.py" "$cap" "$kind" "$@" >"$RAW/$fig-$sys-$rep.jain" 2>&1 ||
		{ fail "$sys: $(tail -n 1 "$RAW/$fig-$sys-$rep.jain")"; return 1; }
	res=$(tail -n 1 "$RAW/$fig-$sys-$rep.jain")
	for kv in $res; do
		k=${kv%%=*} v=${kv#*=}
		put "$fig" "$sys" "$rep" "$k" "$v"
	done
	log "   $sys: $res"
}
# incast_ri2n SENDERS REP SECS: ri2n-xfer from every sender to the last host, verified
incast_ri2n() {
	local n=$1 rep=$2 secs=$3 rx=$(($1 + 1)) fig="incast$1" xfer k srv files=() pids=() bad=0
	xfer=$(xfer_bin) || { fail "ri2n-xfer is not built"; return; }
	next_port
	bg "$RAW/$fig-ri2n-$rep.srv.log" "$RAW/$fig-ri2n-$rep.srv.err" env RI2N_RAILS=r1,r2 \
		ip netns exec "$(hns $rx)" "$xfer" serve --port "$PORT" --quiet
	srv=$BG
	sleep 0.5
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-ri2n-$rep-s$k.out" "$RAW/$fig-ri2n-$rep-s$k.err" env RI2N_RAILS=r1,r2 \
			ip netns exec "$(hns $k)" "$xfer" send "$(haddr $rx 1)" --port "$PORT" \
			--seconds "$secs" --seed "$k" --csv "$RAW/$fig-ri2n-$rep-s$k.csv"
		pids+=("$BG")
		files+=("$RAW/$fig-ri2n-$rep-s$k.csv")
	done
	for ((k = 1; k <= n; k++)); do
		wait_exit "${pids[k - 1]}" $((secs + 30)) || bad=1
		[ "$(field verified "$RAW/$fig-ri2n-$rep-s$k.out")" = yes ] || bad=1
	done
	stop_bg "$srv"
	[ $bad -eq 0 ] || { fail "a ri2n transfer failed or was not verified ($RAW/$fig-ri2n-$rep-s*.out)"; return; }
	incast_put "$fig" ri2n "$rep" 2000 xfer "${files[@]}"
}
# incast_iperf SENDERS REP SECS mptcp|tcp: iperf3 from every sender to the last host
# (MPTCP over both rails, or TCP over rail 1 only: its capacity is one port)
incast_iperf() {
	local n=$1 rep=$2 secs=$3 how=$4 rx=$(($1 + 1)) fig="incast$1" k wrap=() files=() pids=() srvs=() bad=0
	need iperf3 "apt-get install iperf3" || return
	if [ "$how" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run)
	fi
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-$how-$rep-srv$k.out" "$RAW/$fig-$how-$rep-srv$k.err" \
			ip netns exec "$(hns $rx)" "${wrap[@]}" iperf3 -s -1 -p $((PORT + 10 + k))
		srvs+=("$BG")
	done
	for ((k = 1; k <= n; k++)); do wait_port "$rx" $((PORT + 10 + k)) || bad=1; done
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-$how-$rep-c$k.json" "$RAW/$fig-$how-$rep-c$k.err" \
			ip netns exec "$(hns $k)" "${wrap[@]}" iperf3 -c "$(haddr $rx 1)" -p $((PORT + 10 + k)) \
			-t "$secs" -i 1 -J
		pids+=("$BG")
		files+=("$RAW/$fig-$how-$rep-c$k.json")
	done
	for ((k = 1; k <= n; k++)); do wait_exit "${pids[k - 1]}" $((secs + 30)) || bad=1; done
	for k in "${srvs[@]}"; do stop_bg "$k"; done
	PORT=$((PORT + 20))
	[ $bad -eq 0 ] || { fail "an iperf3 client failed ($RAW/$fig-$how-$rep-c*.err)"; return; }
	incast_put "$fig" "$how" "$rep" "$([ "$how" = tcp ] && echo 1000 || echo 2000)" iperf "${files[@]}"
}
incast_figure() { # SENDERS REP
	local secs=10
	[ "$mode" = quick ] && secs=6
	[ "$mode" = smoke ] && secs=3
	sub_begin
	incast_bed $(($1 + 1)) || { sub_end; return 1; }
	sub incast_ri2n "$1" "$2" "$secs"
	[ "$mode" = smoke ] || for s in mptcp tcp; do sub incast_iperf "$1" "$2" "$secs" "$s"; done
	drop_bed
	sub_end
}
# The shared rail: a ri2n stream over both rails and a TCP flow (iperf3) on rail 1 between the
# same two hosts at once; TCP's share is its rate over the rail's 1 Gbit/s.
sharedrail_figure() { # REP
	local rep=$1 secs=10 xfer name srv tcp ri rc
	[ "$mode" = quick ] && secs=6
	[ "$mode" = smoke ] && secs=3
	name=$RAW/sharedrail-$rep
	xfer=$(xfer_bin) || { fail "ri2n-xfer is not built"; return; }
	need iperf3 "apt-get install iperf3" || return
	make_bed bnsr 2 1gbit || { fail "test bed"; return; }
	next_port
	bg "$name.srv.log" "$name.srv.err" env RI2N_RAILS=r1,r2 ip netns exec "$(hns 2)" "$xfer" serve --port "$PORT" --quiet
	srv=$BG
	bg "$name.tsrv.out" "$name.tsrv.err" ip netns exec "$(hns 2)" iperf3 -s -1 -p $((PORT + 1))
	tcp=$BG
	sleep 0.5
	bg "$name.ri2n.out" "$name.ri2n.err" env RI2N_RAILS=r1,r2 ip netns exec "$(hns 1)" "$xfer" send "$(haddr 2 1)" \
		--port "$PORT" --seconds "$secs" --seed 1
	ri=$BG
	timeout -s KILL $((secs + 30)) ip netns exec "$(hns 1)" iperf3 -c "$(haddr 2 1)" -p $((PORT + 1)) \
		-t "$secs" -O 2 -J >"$name.tcp.json" 2>"$name.tcp.err"
	rc=$?
	wait_exit "$ri" 30
	stop_bg "$srv"
	wait_exit "$tcp" 5
	PORT=$((PORT + 2))
	drop_bed
	[ $rc -eq 0 ] || { fail "iperf3 exited $rc"; return; }
	[ "$(field verified "$name.ri2n.out")" = yes ] || { fail "the ri2n transfer was not verified"; return; }
	local t r
	t=$(jget "$name.tcp.json" end.sum_received.bits_per_second | awk '{ printf "%.1f", $1 / 1e6 }')
	r=$(field mbps "$name.ri2n.out")
	put sharedrail tcp "$rep" mbps "$t"
	put sharedrail tcp "$rep" share "$(awk -v t="$t" 'BEGIN { printf "%.3f", t / 1000 }')"
	put sharedrail ri2n "$rep" mbps "$r"
	log "   TCP on rail 1: $t Mbit/s beside ri2n on both rails: $r Mbit/s"
}
incast_summary() {
	local n s
	echo "### Incast: N senders into one host over shared switches (1 Gbit/s host ports, 2 rails)"
	echo
	echo "Per whole second while every sender ran (the first skipped): Jain's index (least, mean) and the"
	echo "aggregate (least second, as a fraction of the receiver's rails: 2 Gbit/s; TCP uses rail 1 only: 1 Gbit/s)."
	echo
	echo "| senders | system | least Jain | mean Jain | least aggregate | mean total Mbit/s |"
	echo "|---|---|---|---|---|---|"
	for n in 3 7; do
		for s in ri2n mptcp tcp; do
			[ -n "$(agg "incast$n" $s min_jain)" ] || continue
			echo "| $n | $s | $(fmtv "incast$n" $s min_jain 3) | $(fmtv "incast$n" $s mean_jain 3) | $(fmtv "incast$n" $s min_agg 3) | $(fmtv "incast$n" $s mean_mbps 0) |"
		done
	done
	if [ -n "$(agg sharedrail tcp share)" ]; then
		echo
		echo "Shared rail: TCP on rail 1 keeps $(fmtv sharedrail tcp mbps 0) Mbit/s ($(fmtv sharedrail tcp share 3) of the rail) beside ri2n on both rails ($(fmtv sharedrail ri2n mbps 0) Mbit/s)."
	fi
}

mpin_bed() { # HOSTS
	local tag
	tag=$(bed_tag "bn$1h")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	log "   test bed $tag: $1 hosts, 2 rails x 1 Gbit/s (namespaces ri2n-$tag-*)"
	tb_create --hosts "$1" --rails 2 --rate 1gbit >"$RAW/bed-$tag.log" 2>&1 ||
		{ fail "could not create test bed $tag: $(tail -n 2 "$RAW/bed-$tag.log" | tr '\n' ' ')"; return 1; }
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=2 BED_HOSTS=$1
}
# mpin_alltoall SYS REP (SYS: ri2n-2r, tcp-2r, tcp-1r)
mpin_alltoall() {
	local sys=$1 rep=$2 btl=${1%-*} rails name rc v
	rails=$(mpi_rails "$sys")
	name=$RAW/mpin-a2a-$sys-h$BED_HOSTS-$rep
	MPI_NP=$BED_HOSTS mpi_job "$name.out" "$btl" "$rails" 240 --phases alltoall --rounds "$MPIN_A2A_ROUNDS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys on $BED_HOSTS hosts: mpirun exited $rc: $(tail -n 3 "$name.out" | tr '\n' ' ' | head -c 300)"; return; }
	v=$(sed -n 's/.*alltoall block=262144 .* MBps_per_rank=\([0-9.]*\).*/\1/p' "$name.out")
	put "mpin-a2a-h$BED_HOSTS" "$sys" "$rep" mbps "$v"
	echo "alltoall,$sys,$BED_HOSTS,$BED_HOSTS,$rep,MBps_per_rank,$v" >>"$MPIN_CSV"
	log "   $btl over $rails, $BED_HOSTS ranks on $BED_HOSTS hosts: alltoall of 256 KiB blocks $v MB/s per rank, every byte checked"
}
# mpin_memory BTL REP: 2 ranks per host
mpin_memory() {
	local btl=$1 rep=$2 np=$((BED_HOSTS * 2)) name rc k v line
	name=$RAW/mpin-mem-$btl-$rep
	MPI_NP=$np mpi_job "$name.out" "$btl" r1,r2 240 --phases memory --rounds "$MPIN_ROUNDS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$btl memory: mpirun exited $rc: $(tail -n 3 "$name.out" | tr '\n' ' ' | head -c 300)"; return; }
	line=$(grep -m1 'mpi_check memory peers=' "$name.out")
	for k in idle busy rested; do
		v=$(sed -n "s/.* ${k}_kib_per_peer=\([0-9.-]*\).*/\1/p" <<<"$line")
		put mpin-mem "$btl" "$rep" "$k" "$v"
		echo "memory,$btl,$BED_HOSTS,$np,$rep,${k}_KiB_per_peer,$v" >>"$MPIN_CSV"
	done
	log "   $btl, $np ranks on $BED_HOSTS hosts: Pss growth per peer ${line#*peers=} (KiB)"
}
mpin_figure() { # REP
	local rep=$1 h s
	[ -n "$MPI_PATH" ] || { mpi_setup || return; }
	sub_begin
	for h in 4 8; do
		mpin_bed "$h" || { sub_end; return 1; }
		for s in ri2n-2r tcp-2r $([ "$mode" = full ] && echo tcp-1r); do sub mpin_alltoall "$s" "$rep"; done
		if [ "$h" = 8 ]; then
			for s in ri2n tcp; do sub mpin_memory "$s" "$rep"; done
		fi
		drop_bed
	done
	sub_end
}
# The many-hosts MPI paragraph of summary.md
mpin_summary() {
	local h s
	echo "## MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer"
	echo
	echo "One rank per host, 2 rails x 1 Gbit/s per host (one switch per rail); \`mpi_check --phases alltoall\`" \
		"($MPIN_A2A_ROUNDS rounds of 256 KiB blocks, every byte checked). MB/s per rank: the bytes a rank sends to the" \
		"others over the time the slowest rank spent in MPI_Alltoall. btl/tcp on r1,r2 stripes over both rails."
	echo
	echo "| hosts | --mca btl | rails | alltoall (MB/s per rank) | / btl_tcp on r1,r2 |"
	echo "|---|---|---|---|---|"
	for h in 4 8; do
		for s in ri2n-2r tcp-2r tcp-1r; do
			[ -n "$(agg "mpin-a2a-h$h" $s mbps)" ] || continue
			echo "| $h | ${s%-*},self | $(mpi_rails $s) | $(fmtv "mpin-a2a-h$h" $s mbps 1) |" \
				"$(ratio "$(med "mpin-a2a-h$h" $s mbps)" "$(med "mpin-a2a-h$h" tcp-2r mbps)") |"
		done
	done
	echo
	if [ -n "$(agg mpin-mem ri2n idle)" ]; then
		echo "Memory: 16 ranks on the 8-host bed (15 peers each), \`mpi_check --phases memory\`: growth of each" \
			"rank's Pss per peer, the largest over the ranks, after one 64-byte message each way with every peer" \
			"and 3 s of rest (idle), right after $MPIN_ROUNDS alltoalls of 256 KiB blocks (busy), and after 3 s of" \
			"rest again (rested). It includes Open MPI's own per-peer state. Target: idle <= 256 KiB."
		echo
		echo "| --mca btl | idle (KiB/peer) | busy (KiB/peer) | rested (KiB/peer) |"
		echo "|---|---|---|---|"
		for s in ri2n tcp; do
			[ -n "$(agg mpin-mem $s idle)" ] || continue
			echo "| $s,self | $(fmtv mpin-mem $s idle 1) | $(fmtv mpin-mem $s busy 1) | $(fmtv mpin-mem $s rested 1) |"
		done
		echo
	fi
}

# ---- libfabric: fi_pingpong over the ri2n provider, tcp and udp;ofi_rxd --------------------
# fi_pingpong (libfabric-bin) between the two hosts, RDM endpoints, data checked (-c): ri2n over
# both rails (libri2n-fi.so, FI_PROVIDER_PATH), libfabric's tcp (tcp;ofi_rxm) and udp;ofi_rxd on
# rail 1.  Latency: fi_pingpong's usec/xfer at 64 bytes (half a round trip, busy-polling);
# bandwidth: its MB/sec at 1 MiB (ping-pong, one message in flight).  Rows in ofi.csv.
OFI_CSV=$out/ofi.csv
echo "provider,rails,rep,lat64_us,bw1m_MBps,outcome" >"$OFI_CSV"
OFI_PROV=""
ofi_one() { # PROVIDER REP
	local prov=$1 rep=$2 name env=() rails=r1 rc lat bw spid
	name=$RAW/ofi-${prov//;/+}-$rep
	case $prov in
	ri2n) env=(FI_PROVIDER_PATH="$OFI_PROV" RI2N_RAILS=r1,r2) rails=r1,r2 ;;
	tcp) env=(FI_TCP_IFACE=r1) ;;
	*) env=(FI_UDP_IFACE=r1) ;;
	esac
	setsid timeout -s KILL 120 ip netns exec "$(hns 1)" env "${env[@]}" fi_pingpong -p "$prov" -e rdm \
		-c -I "$OFI_ITERS" >"$name.srv" 2>&1 &
	spid=$!
	sleep 0.5
	timeout -s KILL 120 ip netns exec "$(hns 2)" env "${env[@]}" fi_pingpong -p "$prov" -e rdm \
		-c -I "$OFI_ITERS" "$(tb_addr 1 1)" >"$name.out" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	[ $rc -eq 0 ] || { fail "fi_pingpong -p $prov exited $rc: $(tail -n 2 "$name.out" | tr '\n' ' ' | head -c 200)"; return; }
	lat=$(awk '$1 == "64" { print $7 }' "$name.out")
	bw=$(awk '$1 == "1m" { print $6 }' "$name.out")
	put ofi "$prov" "$rep" lat_us "$lat"
	put ofi "$prov" "$rep" mbps "$bw"
	echo "$prov,${rails//,/+},$rep,$lat,$bw,pass" >>"$OFI_CSV"
	log "   fi_pingpong -p $prov over $rails: 64 B $lat us/xfer, 1 MiB $bw MB/s, data checked"
}
# OFI_PROV: the directory of libri2n-fi.so, beside --bin-dir's programs first, else the bench's own build
ofi_find_prov() {
	local d
	[ -n "$OFI_PROV" ] && return 0
	for d in "${bindir:+$bindir/ofi/prov}" "${bindir:+$bindir/../ofi/prov}" "$ROOT/build-bench/ri2n/ofi/prov" \
		"$ROOT/build/ofi/prov"; do
		[ -n "$d" ] && [ -f "$d/libri2n-fi.so" ] && { OFI_PROV=$(cd "$d" && pwd); return 0; }
	done
	return 1
}
ofi_figure() { # REP
	local p
	need fi_pingpong "apt-get install libfabric-bin" || return
	ofi_find_prov || { fail "libri2n-fi.so is not built (libfabric-dev missing?)"; return; }
	sub_begin
	for p in ri2n tcp "udp;ofi_rxd"; do sub ofi_one "$p" "$1"; done
	sub_end
}
ofi_summary() {
	local p ver
	ver=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')
	echo "## libfabric: fi_pingpong over the ri2n provider, tcp and udp;ofi_rxd"
	echo
	echo "2 x GbE bed; \`fi_pingpong -e rdm -c -I $OFI_ITERS\` (libfabric $ver), data checked." \
		"ri2n over both rails, the others on rail 1. Latency: usec/xfer at 64 B (busy-polling; the" \
		"first size also pays for connecting); bandwidth: MB/sec at 1 MiB, one message in flight."
	echo
	echo "| provider | rails | 64 B (µs/xfer) | 1 MiB (MB/s) | latency / tcp | bandwidth / tcp |"
	echo "|---|---|---|---|---|---|"
	for p in ri2n tcp "udp;ofi_rxd"; do
		[ -n "$(agg ofi "$p" mbps)" ] || continue
		echo "| $p | $([ "$p" = ri2n ] && echo r1,r2 || echo r1) | $(fmtv ofi "$p" lat_us 2) |" \
			"$(fmtv ofi "$p" mbps 1) | $(ratio "$(med ofi "$p" lat_us)" "$(med ofi tcp lat_us)") |" \
			"$(ratio "$(med ofi "$p" mbps)" "$(med ofi tcp mbps)") |"
	done
	echo
}

# ---- MPI: MPICH 4 under ri2n-run next to plain UCX tcp on one rail -------------------------
# Two ranks, one per host (hydra's mpiexec.mpich; tests/mpi/netns-launch.sh reads PMI_RANK);
# Debian's MPICH is ch4:ucx: UCX's tcp transport on rail r1 (UCX_NET_DEVICES), its ports pinned
# to MPICH_PORTS; each rank runs under ri2n-run (that one connection striped over both rails)
# or plain (the baseline: one rail). mpi_check checks every byte. Rows in mpi.csv (mpich-*).
MPICH_CHECK="" MPICH_RR="" MPICH_PORTS=21000-21999
mpich_job() { # OUT ri2n|plain SECONDS mpi_check-args...
	local o=$1 how=$2 tmo=$3 run=() rc
	shift 3
	[ "$how" = ri2n ] && run=("$MPICH_RR" --ports "$MPICH_PORTS" --)
	RI2N_MPI_NS_PREFIX="ri2n-$BED-h" RI2N_MPI_HOSTS=2 RI2N_RAILS="$(rails_list)" \
	UCX_TLS=tcp,self UCX_NET_DEVICES=r1 UCX_TCP_PORT_RANGE=$MPICH_PORTS MPIR_CVAR_NOLOCAL=1 \
		timeout -s KILL "$tmo" mpiexec.mpich -launcher fork -n 2 \
		"$ROOT/tests/mpi/netns-launch.sh" "${run[@]}" "$MPICH_CHECK" "$@" >"$o" 2>&1 &
	local pid=$! i=0 hung=0
	# PASS comes after a barrier that follows every check; UCX's tcp transport sometimes
	# hangs in MPI_Finalize after it (with or without ri2n-run; tests/mpi/run_ri2n_run.sh).
	# (Noted in a variable: a line appended to OUT is overwritten by mpiexec's own
	# report of the killed ranks, written at its own offset.)
	while kill -0 $pid 2>/dev/null; do
		if [ $hung -eq 0 ] && grep -q 'result=PASS' "$o" 2>/dev/null && ((i++ >= 50)); then
			mpi_kill
			hung=1
		fi
		sleep 0.1
	done
	wait $pid
	rc=$?
	[ $hung -eq 1 ] && { echo "finalize hung, killed" >>"$o"; rc=0; }
	mpi_kill
	return $rc
}
mpich_perf() { # SYS(mpich-ri2n-run|mpich-ucx-tcp) REP
	local sys=$1 rep=$2 how=plain name lat bw rc
	[ "$sys" = mpich-ri2n-run ] && how=ri2n
	name=$RAW/$sys-$rep
	mpich_job "$name.out" "$how" $((MPI_SECS * 2 + 90)) \
		--phases latency,stream --bw-seconds "$MPI_SECS" --lat-iters "$MPI_ITERS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys: mpiexec exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 3 | tr '\n' ' ' | head -c 300)"; return; }
	lat=$(sed -n 's/.*latency size=8 .* median_one_way_us=\([0-9.]*\).*/\1/p' "$name.out")
	bw=$(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$name.out")
	put mpich "$sys" "$rep" lat_us "$lat"
	put mpich "$sys" "$rep" mbps "$bw"
	echo "$sys,ucx-tcp,$([ "$how" = ri2n ] && echo r1+r2 || echo r1),$rep,$lat,$bw,pass" >>"$MPI_CSV"
	log "   $sys: 8 B one-way $lat us (median), stream $bw MB/s, every byte checked"
}
mpich_figure() { # REP: plain and ri2n-run alternate, so both see the same machine
	need mpiexec.mpich "apt-get install mpich" || return
	need mpicc.mpich "apt-get install libmpich-dev" || return
	MPICH_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	if [ -z "$MPICH_CHECK" ]; then
		MPICH_CHECK=$RAW/mpi_check_mpich
		mpicc.mpich -O2 -Wno-stringop-overflow -I"$ROOT/tools/kit" -o "$MPICH_CHECK" \
			"$ROOT/tests/mpi/mpi_check.c" 2>"$RAW/mpicc-mpich.log" ||
			{ MPICH_CHECK=""; fail "mpicc.mpich failed: $(head -c 300 "$RAW/mpicc-mpich.log")"; return; }
	fi
	sub_begin
	sub mpich_perf mpich-ucx-tcp "$1"
	sub mpich_perf mpich-ri2n-run "$1"
	sub_end
}
mpich_summary() {
	echo "## MPI: MPICH 4 under ri2n-run next to plain UCX tcp"
	echo
	echo "2 ranks, one per host, on the 2 x GbE bed; MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p')" \
		"(ch4:ucx) over UCX's tcp transport on rail r1; \`mpi_check\` checks every byte. Under ri2n-run" \
		"UCX's connection is striped over both rails. Latency: 8-byte ping-pong, median of $MPI_ITERS" \
		"round trips halved (busy-polling). Stream: 1 MiB messages, 16 in flight, for $MPI_SECS s."
	echo
	echo "| path | rails | 8-byte one-way latency (µs) | stream (MB/s) | latency / plain | stream / plain |"
	echo "|---|---|---|---|---|---|"
	local s
	for s in mpich-ri2n-run mpich-ucx-tcp; do
		[ -n "$(agg mpich $s mbps)" ] || continue
		echo "| $([ $s = mpich-ri2n-run ] && echo 'UCX tcp under ri2n-run' || echo 'UCX tcp, plain') |" \
			"$([ $s = mpich-ri2n-run ] && echo r1,r2 || echo r1) | $(fmtv mpich $s lat_us 2) | $(fmtv mpich $s mbps 1) |" \
			"$(ratio "$(med mpich $s lat_us)" "$(med mpich mpich-ucx-tcp lat_us)") |" \
			"$(ratio "$(med mpich $s mbps)" "$(med mpich mpich-ucx-tcp mbps)") |"
	done
	echo
}

# ---- memory and descriptors per connection ------------------------------------------------
# ri2n-conns: N connections (full 10,000, quick 1000, smoke 200) from one client process to one
# server process, held idle, then 100 of them streaming 8 MiB each (verified); memory.csv has
# each process's Rss/Pss per phase. Above 2000 connections the keepalive is 1 s (rail timeout
# 3.5 s): at the default 100 ms every idle connection sends 20 datagrams a second and one engine
# thread per process no longer keeps up near 5000 of them (rails flap, handshakes time out).
MEM_CSV=$out/memory.csv
memory_figure() {
	local n=10000 conns=${STREAM%/*}/ri2n-conns env=(RI2N_STAT_MS=250) srv rc
	[ "$mode" = quick ] && n=1000
	[ "$mode" = smoke ] && n=200
	[ -x "$conns" ] || { fail "no $conns"; return; }
	[ "$n" -gt 2000 ] && env+=(RI2N_KEEPALIVE_MS=1000 RI2N_RAIL_TIMEOUT_MS=3500) && put mem ri2n 1 keepalive_ms 1000
	rm -f "$MEM_CSV"
	next_port
	bg "$RAW/conns.srv.out" "$RAW/conns.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" "${env[@]}" "$conns" serve --port "$PORT"
	srv=$BG
	ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" "${env[@]}" "$conns" run "$(haddr 2 1)" \
		--port "$PORT" --conns "$n" --busy 100 --bytes 8M --idle 5 --rest 3 --csv "$MEM_CSV" \
		>"$RAW/conns.out" 2>"$RAW/conns.err"
	rc=$?
	wait_exit "$srv" 20
	awk '$1 == "conns" && $2 == "done"' "$RAW/conns.out" | tr ' ' '\n' | awk -F= 'NF == 2' |
		while IFS="=" read -r k v; do put mem ri2n 1 "$k" "$v"; done
	awk '$1 == "conns" && $2 == "mem"' "$RAW/conns.out" | while read -r line; do
		local role phase
		role=$(sed -n 's/.* role=\([a-z]*\).*/\1/p' <<<"$line") phase=$(sed -n 's/.* phase=\([a-z]*\).*/\1/p' <<<"$line")
		for k in pss_per_conn fds_per_conn conns; do
			put mem "$role" 1 "${phase}_$k" "$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$line")"
		done
	done
	[ $rc -eq 0 ] || fail "ri2n-conns exit status $rc: $(grep -v warning "$RAW/conns.err" | tail -2 | tr '\n' ' ')"
}
# ---- a connection per request ------------------------------------------------------------
# ri2n-churn: connect / 8-byte hello / verified echo / close, sequential from one thread (full
# 2000 cycles, quick 500, smoke 100: the connect's median) and from 16 threads for a few seconds
# (full 5, quick 3, smoke 1: connections a second from one client host), over ri2n's own calls,
# TCP sockets under ri2n-run, and plain TCP (the peer), in that order on the same bed.
churn_figure() {
	local churn=${STREAM%/*}/ri2n-churn n=2000 secs=5 sys wrap srv rr k rc=0
	[ "$mode" = quick ] && n=500 secs=3
	[ "$mode" = smoke ] && n=100 secs=1
	[ -x "$churn" ] || { fail "no $churn"; return; }
	rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	for sys in ri2n ri2n-run tcp; do
		case $sys in
		ri2n) wrap=(env RI2N_RAILS="$(rails_list)" "$churn") ;;
		ri2n-run) wrap=(env RI2N_RAILS="$(rails_list)" "$rr" "$churn") ;;
		tcp) wrap=("$churn") ;;
		esac
		local proto=()
		[ "$sys" = ri2n ] || proto=(--tcp)
		next_port
		bg "$RAW/churn-$sys.srv.out" "$RAW/churn-$sys.srv.err" ip netns exec "$(hns 2)" "${wrap[@]}" serve \
			--port "$PORT" --workers 16 "${proto[@]}"
		srv=$BG
		for k in $(seq 100); do grep -q serving "$RAW/churn-$sys.srv.out" 2>/dev/null && break; sleep 0.05; done
		sleep 0.2
		for k in seq par; do
			local args=(--count "$n") line
			[ $k = par ] && args=(--threads 16 --count 1000000 --secs "$secs")
			timeout -s KILL $((secs + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" run "$(haddr 2 1)" --port "$PORT" \
				"${proto[@]}" "${args[@]}" >"$RAW/churn-$sys-$k.out" 2>"$RAW/churn-$sys-$k.err" ||
				{ fail "ri2n-churn $sys $k: $(tail -2 "$RAW/churn-$sys-$k.err" | tr '\n' ' ')"; rc=1; }
			line=$(grep '^churn done' "$RAW/churn-$sys-$k.out")
			for m in conns failed bad rate connect_med_us connect_p90_us cycle_med_us; do
				put churn "$sys" 1 "${k}_$m" "$(sed -n "s/.* $m=\([0-9.]*\).*/\1/p" <<<"$line")"
			done
		done
		stop_bg "$srv" # killed: its status is not the figure's
	done
	return $rc
}
# The connection-per-request paragraph of summary.md
churn_summary() {
	local sys
	[ -n "$(sval churn ri2n seq_conns)" ] || return 0
	echo "## A connection per request (ri2n-churn)"
	echo
	echo "2 unshaped veth rails; connect / 8-byte hello / verified echo / close. Sequential: one thread's" \
		"connect median and p90 and whole cycle median (us); parallel: 16 threads, cycles a second from" \
		"one client host (target: sequential connect under ri2n-run <= 0.3 ms, 2,000 connects/s with no handshake dropped)."
	echo
	echo "| transport | connect median (us) | connect p90 (us) | cycle median (us) | parallel cycles/s | failed | bad echoes |"
	echo "|---|---|---|---|---|---|---|"
	for sys in ri2n ri2n-run tcp; do
		local sf pf sb pb
		sf=$(sval churn "$sys" seq_failed) pf=$(sval churn "$sys" par_failed)
		sb=$(sval churn "$sys" seq_bad) pb=$(sval churn "$sys" par_bad)
		echo "| $sys | $(sval churn "$sys" seq_connect_med_us) | $(sval churn "$sys" seq_connect_p90_us) |" \
			"$(sval churn "$sys" seq_cycle_med_us) | $(sval churn "$sys" par_rate) |" \
			"$((${sf:-0} + ${pf:-0})) | $((${sb:-0} + ${pb:-0})) |"
	done
	echo
}
# ---- idle cost ----------------------------------------------------------------------------------
# bench/idle-cost.sh on a bed of its own (2 unshaped veth rails): N idle connections from one
# client process to one server (full and quick: 9000 and 1000, smoke: 200), 5 s after the last
# one connected, 10 s sampled: packets a second on the client's rails (both directions) and the
# CPU of each process (percent of one core).
idle_cost_figure() {
	local conns=${STREAM%/*}/ri2n-conns counts=(9000 1000) line n k
	[ "$mode" = smoke ] && counts=(200)
	[ -x "$conns" ] || { fail "no $conns"; return; }
	"$HERE/idle-cost.sh" --conns-bin "$conns" --tag "$(bed_tag bn2i)" "${counts[@]}" \
		>"$RAW/idle.out" 2>"$RAW/idle.err" || { fail "idle-cost.sh: $(tail -2 "$RAW/idle.err" | tr '\n' ' ')"; return; }
	while read -r line; do
		n=$(sed -n 's/.* conns=\([0-9]*\).*/\1/p' <<<"$line")
		for k in server_fds connect_s pkts_per_s client_cpu_pct server_cpu_pct; do
			put idle "$n" 1 "$k" "$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$line")"
		done
	done < <(grep '^idle conns=' "$RAW/idle.out")
	[ -n "$(sval idle "${counts[0]}" pkts_per_s)" ] || fail "idle-cost.sh printed no figure"
}
# ---- close storm ------------------------------------------------------------------------------
# ri2n-conns: N connections (full and quick 9000, smoke 500), each a verified hello and echo,
# then both processes close all of them at once and exit. From RI2N_LOG=info (every
# connection's end): clean closes and failures per side, the last clean close after each
# side's close, and how long the client took to exit after closing.
storm_figure() {
	local n=9000 conns=${STREAM%/*}/ri2n-conns srv rc gone side f wall last
	[ "$mode" = smoke ] && n=500
	[ -x "$conns" ] || { fail "no $conns"; return; }
	next_port
	bg "$RAW/storm.srv.out" "$RAW/storm.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" RI2N_LOG=info "$conns" serve --port "$PORT"
	srv=$BG
	ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" RI2N_LOG=info "$conns" run \
		"$(haddr 2 1)" --port "$PORT" --conns "$n" --busy 0 --idle 1 \
		>"$RAW/storm.out" 2>"$RAW/storm.cli.err"
	rc=$?
	gone=$(awk '{ print $1 }' /proc/uptime)
	wait_exit "$srv" 40
	put storm ri2n 1 conns "$(sed -n 's/.* established=\([0-9]*\).*/\1/p' "$RAW/storm.out")"
	put storm ri2n 1 connect_s "$(sed -n 's/.* connect_secs=\([0-9.]*\).*/\1/p' "$RAW/storm.out")"
	for side in cli srv; do
		f=$RAW/storm.$side.err
		put storm "$side" 1 closed "$(grep -c ' info: connection .* closed$' "$f")"
		put storm "$side" 1 failed "$(grep -c ' failed: ' "$f")"
		put storm "$side" 1 dead_peer "$(grep -c 'dead-peer' "$f")"
		put storm "$side" 1 resets "$(grep -c 'reset by peer\|never closed: reset' "$f")"
		wall=$(grep -o 'wall=[0-9.]*' "$f" | tail -1 | cut -d= -f2)
		last=$(grep ' info: connection .* closed$' "$f" | tail -1 |
			awk '{ split($1, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3] }')
		[ -n "$wall" ] && [ -n "$last" ] && put storm "$side" 1 last_close_s \
			"$(awk -v a="$wall" -v b="$last" 'BEGIN { d = b - a % 86400; if (d < -43200) d += 86400; printf "%.2f", d }')"
	done
	# CLOCK_MONOTONIC (ri2n-conns' mono=) and /proc/uptime share their origin closely enough here
	put storm cli 1 exit_s "$(awk -v a="$(grep -o 'mono=[0-9.]*' "$RAW/storm.cli.err" | tail -1 | cut -d= -f2)" \
		-v b="$gone" 'BEGIN { printf "%.2f", b - a }')"
	[ $rc -eq 0 ] || fail "ri2n-conns (close storm) exit status $rc"
}
# ---- a black hole while idle ----------------------------------------------------------------
# ri2n-conns --probes: N connections (full and quick 9000, smoke 500), each a verified hello and
# echo, idle 3 s; then rail 2 of host 1 black-holed in its switch (both ways) and, once both
# processes have it down both ways, the first write (8 bytes, echoed and checked) on 32 connections
# spread over the set (smoke 8), one at a time: the echo's delay, and by both processes' counters
# the DATA sent on the dead rail, resent, or timed out. The rail is healed afterwards.
hole_figure() {
	local n=9000 k=32 conns=${STREAM%/*}/ri2n-conns srv rc line m
	[ "$mode" = smoke ] && n=500 k=8
	[ -x "$conns" ] || { fail "no $conns"; return; }
	next_port
	bg "$RAW/hole.srv.out" "$RAW/hole.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" "$conns" serve --port "$PORT"
	srv=$BG
	timeout -s KILL 300 ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" "$conns" run \
		"$(haddr 2 1)" --port "$PORT" --conns "$n" --busy 0 --idle 3 --probes "$k" \
		--hole-cmd "$TESTBED --tag $BED fault blackhole 1 2 on" >"$RAW/hole.out" 2>"$RAW/hole.err"
	rc=$?
	"$TESTBED" --tag "$BED" fault blackhole 1 2 off >/dev/null 2>&1
	wait_exit "$srv" 40
	put hole ri2n 1 conns "$(sed -n 's/.* established=\([0-9]*\).*/\1/p' "$RAW/hole.out")"
	line=$(grep '^conns hole' "$RAW/hole.out")
	for m in detect_s probes echoed echo_med_us echo_max_us rto_min_us dead_rail_data retransmits rto \
		seen_down srv_probes srv_dead_rail_data srv_retransmits srv_rto verdict; do
		put hole ri2n 1 "$m" "$(sed -n "s/.* $m=\([0-9a-z.]*\).*/\1/p" <<<"$line")"
	done
	[ -n "$line" ] || { fail "ri2n-conns (black hole) printed no probe line: $(tail -2 "$RAW/hole.err" | tr '\n' ' ')"; return; }
	[ $rc -eq 0 ] || fail "ri2n-conns (black hole) exit status $rc: $line"
}
storm_summary() {
	[ -n "$(sval storm ri2n conns)" ] || return 0
	echo "## Close storm"
	echo
	echo "ri2n-conns over 2 unshaped veth rails: $(sval storm ri2n conns) connections (hello and echo" \
		"verified), then both processes close all at once and exit." \
		"Client: $(sval storm cli closed) closed cleanly, $(sval storm cli failed) failed" \
		"($(sval storm cli dead_peer) dead-peer, $(sval storm cli resets) resets), last clean close" \
		"$(sval storm cli last_close_s) s after its close, process gone $(sval storm cli exit_s) s after." \
		"Server: $(sval storm srv closed) closed cleanly, $(sval storm srv failed) failed" \
		"($(sval storm srv dead_peer) dead-peer, $(sval storm srv resets) resets), last clean close" \
		"$(sval storm srv last_close_s) s after its close. Target: all clean within 2 s, exit within 3 s."
	echo
}
# The connection-cost table of summary.md: idle cost, handshake rate, churn and close storm
conns_summary() {
	local n cs ss cst sst
	[ -n "$(awk -F'\t' '$1 == "idle" || $1 == "storm" || $1 == "churn" || $1 == "hole" || $1 == "mpi-idle"' "$METRICS")" ] || return 0
	echo "## Connection cost"
	echo
	echo "ri2n-conns and ri2n-churn between two processes over 2 unshaped veth rails, the BTL's row on the" \
		"2 x GbE bed (issue 30's rows; bench/README.md says how each is measured)."
	echo
	echo "| row | measured | target |"
	echo "|---|---|---|"
	for n in $(awk -F'\t' '$1 == "idle" { print $2 }' "$METRICS" | sort -un | sort -rn); do
		echo "| idle, $n connections | $(sval idle "$n" pkts_per_s) packets/s on the rails;" \
			"CPU $(sval idle "$n" client_cpu_pct) % client, $(sval idle "$n" server_cpu_pct) % server |" \
			"<= 100 packets/s, <= 1 % of a core per process |"
	done
	n=$(sval storm ri2n conns) cs=$(sval storm ri2n connect_s)
	[ -n "$cs" ] && echo "| handshake rate | $n connections established in $cs s" \
		"($(awk -v n="$n" -v s="$cs" 'BEGIN { if (s > 0) printf "%.0f", n / s }')/s) | $n in <= 3 s |"
	[ -n "$(sval churn ri2n seq_conns)" ] &&
		echo "| churn (connect / hello / echo / close) | connect median $(sval churn ri2n seq_connect_med_us) us" \
			"(ri2n-run $(sval churn ri2n-run seq_connect_med_us) us, TCP $(sval churn tcp seq_connect_med_us) us);" \
			"16 threads $(sval churn ri2n par_rate) cycles/s (TCP $(sval churn tcp par_rate)) |" \
			"ri2n-run <= 300 us; 2,000/s, none dropped |"
	if [ -n "$n" ]; then
		cst="$(sval storm cli closed) clean, $(sval storm cli dead_peer) dead-peer, $(sval storm cli resets) resets"
		sst="$(sval storm srv closed) clean, $(sval storm srv dead_peer) dead-peer, $(sval storm srv resets) resets"
		echo "| close storm, $n connections | client: $cst, last close $(sval storm cli last_close_s) s," \
			"exit $(sval storm cli exit_s) s; server: $sst, last close $(sval storm srv last_close_s) s |" \
			"all clean within 2 s on both sides, exit within 3 s |"
	fi
	if [ -n "$(sval mpi-idle ri2n-16 dgrams_per_s)" ]; then
		echo "| btl_ri2n, 16 ranks on 2 hosts (8 each, every pair connected), idle |" \
			"$(sval mpi-idle ri2n-16 dgrams_per_s) datagrams/s on the rails between the two hosts" \
			"($(sval mpi-idle ri2n-16 rail_downs) rail-down reports) | a rail monitor per pair of ranks:" \
			"a keepalive per rail per second each way per pair (PROTOCOL.md, \"Rail health per peer\") |"
	fi
	if [ -n "$(sval hole ri2n echoed)" ]; then
		echo "| black hole while $(sval hole ri2n conns) idle: the first write |" \
			"rail down both ways $(sval hole ri2n detect_s) s after the fault; first write on" \
			"$(sval hole ri2n echoed) of $(sval hole ri2n probes) connections, echo median" \
			"$(sval hole ri2n echo_med_us) us, max $(sval hole ri2n echo_max_us) us (RTO floor" \
			"$(sval hole ri2n rto_min_us) us); DATA on the dead rail $(sval hole ri2n dead_rail_data)" \
			"client / $(sval hole ri2n srv_dead_rail_data) server, resent $(sval hole ri2n retransmits) /" \
			"$(sval hole ri2n srv_retransmits), RTOs $(sval hole ri2n rto) / $(sval hole ri2n srv_rto) |" \
			"delivered without an RTO on the dead rail (all 0) |"
	fi
	echo
}
# The memory paragraph of summary.md
mem_summary() {
	local kib='{ printf "%.1f", $1 / 1024 }' ic is bc bs
	[ -n "$(sval mem ri2n conns)" ] || return 0
	ic=$(sval mem client idle_pss_per_conn | awk "$kib") is=$(sval mem server idle_pss_per_conn | awk "$kib")
	bc=$(sval mem client busy_pss_per_conn | awk "$kib") bs=$(sval mem server busy_pss_per_conn | awk "$kib")
	echo "## Memory and descriptors per connection"
	echo
	echo "ri2n-conns over 2 unshaped veth rails: $(sval mem ri2n established) connections established of" \
		"$(sval mem ri2n wanted) wanted$([ "$(sval mem ri2n fd_limited)" = 1 ] && echo " (RLIMIT_NOFILE could not be raised: as many as the descriptor limit holds)")," \
		"$(sval mem ri2n failed) failed, from one client process to one server" \
		"process$([ -n "$(sval mem ri2n keepalive_ms)" ] && echo " (keepalive 1 s, rail timeout 3.5 s)")." \
		"Growth of each process's Pss (/proc/self/smaps_rollup) per connection:" \
		"idle **$ic KiB** client, **$is KiB** server (target <= 64 KiB);" \
		"each of 100 busy connections (8 MiB streamed, verified: $(sval mem ri2n verified)) $bc KiB client, $bs KiB server;" \
		"descriptors per connection $(sval mem client idle_fds_per_conn) client (the socketpair; the UDP sockets, one per rail, are shared by every connection of the process)," \
		"$(sval mem server idle_fds_per_conn) server. memory.csv has every phase."
	echo
}

# ---- the run -------------------------------------------------------------------------------
if [ -x "$STREAM" ] && [ -x "$PINGPONG" ]; then
	if want tp2 || want degraded || want loss || want failover || want mtuhole || want latency || want redundant || want mpi || want mpiidle || want kv || want close || want ofi || want mpich; then
		step "test bed: 2 rails x 1 Gbit/s" bed_step bn2g 2 1gbit
		if [ "$BED" = "$(bed_tag bn2g)" ]; then
			for rep in $(seq "$reps"); do
				want tp2 && step "goodput, 2 x GbE (rep $rep)" tp_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, with a cluster key (rep $rep)" keyed_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, with a cluster key, integrity only (rep $rep)" authonly_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, unmodified iperf3 under ri2n-run (rep $rep)" runiperf_figure tp2 "$rep"
				want degraded && step "goodput, degraded pair 1 Gbit/s + 250 Mbit/s (rep $rep)" degraded_figure "$rep"
				if want loss; then
					step "goodput, 1% loss on every rail (rep $rep)" loss_figure "$rep" 1
					step "goodput, 5% loss on every rail (rep $rep)" loss_figure "$rep" 5
				fi
				if want failover; then
					step "failover, ri2n: rail 2 black-holed at ${FO_FAULT} s, healed at ${FO_HEAL} s (rep $rep)" failover ri2n "$rep"
					if [ "$mode" = smoke ] && ! have mptcpize; then
						record_step "failover, mptcp (rep $rep)" skipped "mptcpize is not installed"
					else
						step "failover, MPTCP: the same (rep $rep)" failover mptcp "$rep"
					fi
				fi
				if want mtuhole; then
					step "MTU black hole, ri2n: rail 2 drops IP packets over 1000 bytes from ${FO_FAULT} s to ${FO_HEAL} s (rep $rep)" failover ri2n "$rep" mtuhole
					if [ "$mode" = smoke ] && ! have mptcpize; then
						record_step "MTU black hole, mptcp (rep $rep)" skipped "mptcpize is not installed"
					else
						step "MTU black hole, MPTCP: the same (rep $rep)" failover mptcp "$rep" mtuhole
					fi
				fi
				want latency && step "latency vs message size, pinned and unpinned (rep $rep)" latency_figure "$rep"
				want redundant && step "8 B request/response, 1% loss on rail 1: redundant, normal, TCP (rep $rep)" redundant_figure "$rep"
				want kv && step "request rate: redis-server and redis-benchmark under ri2n-run vs TCP (rep $rep)" kv_figure "$rep"
				want close && step "a connection per request: nginx and wrk (Connection: close) under ri2n-run vs TCP (rep $rep)" close_figure "$rep"
				want mpi && step "MPI: btl_ri2n and btl_tcp, latency, stream, a black hole, 16 idle ranks (rep $rep)" mpi_figure "$rep"
				# mpi includes it; --only mpiidle runs it alone
				want mpiidle && ! want mpi && [ "$rep" = 1 ] && step "MPI: 16 idle ranks (rep $rep)" mpi_idle_alone
				want ofi && step "libfabric: fi_pingpong over ri2n, tcp and udp;ofi_rxd (rep $rep)" ofi_figure "$rep"
				want mpich && step "MPI: MPICH under ri2n-run and plain UCX tcp, latency, stream (rep $rep)" mpich_figure "$rep"
			done
		fi
		drop_bed
	fi
	# ri2n finds each rail's datagram size by probing (up to the interface's MTU): on the mixed
	# bed it sends 8972-byte datagrams (several packets each) on the 9000 rail, 1472 on the other
	for fig in jumbo mixed; do
		want $fig || continue
		mtus=9000 tag=bn2j; [ $fig = mixed ] && mtus=9000,1500 tag=bn2x
		step "test bed: 2 rails x 1 Gbit/s, MTU $mtus" bed_step "$tag" 2 1gbit "$mtus"
		if [ "$BED" = "$(bed_tag "$tag")" ]; then
			for rep in $(seq "$reps"); do
				step "goodput, 2 x GbE at MTU $mtus (rep $rep)" tp_figure "$fig" "$rep"
			done
		fi
		drop_bed
	done
	if want tp4; then
		step "test bed: 4 rails x 1 Gbit/s" bed_step bn4g 4 1gbit
		if [ "$BED" = "$(bed_tag bn4g)" ]; then
			for rep in $(seq "$reps"); do
				step "goodput, 4 x GbE (rep $rep)" tp_figure tp4 "$rep"
				step "goodput, 4 x GbE, with a cluster key (rep $rep)" keyed_figure tp4 "$rep"
			done
		fi
		drop_bed
	fi
	if want veth; then
		step "test bed: 2 unshaped veth rails" bed_step bn2u 2 off
		if [ "$BED" = "$(bed_tag bn2u)" ]; then
			for rep in $(seq "$reps"); do
				step "goodput, 2 unshaped veth rails (rep $rep)" tp_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, no ri2n-stat publishing (rep $rep)" \
					nopub_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, with a cluster key (rep $rep)" \
					keyed_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, with a cluster key, integrity only (rep $rep)" \
					authonly_figure veth "$rep" --no-verify
				step "capture check: a known text sent with and without a cluster key, captured on the rails (rep $rep)" \
					capture_figure veth "$rep"
				step "goodput, 2 unshaped veth rails, unmodified iperf3 under ri2n-run (rep $rep)" \
					runiperf_figure veth "$rep"
			done
		fi
		drop_bed
	fi
	if want incast; then
		for rep in $(seq "$reps"); do
			step "incast: 3 senders into one host over shared switches, ri2n, MPTCP, TCP (rep $rep)" incast_figure 3 "$rep"
			[ "$mode" = smoke ] || step "incast: 7 senders into one host (rep $rep)" incast_figure 7 "$rep"
			step "shared rail: TCP beside ri2n on rail 1 (rep $rep)" sharedrail_figure "$rep"
		done
		drop_bed
	fi
	if want mpin; then
		for rep in $(seq "$reps"); do
			step "MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer (rep $rep)" mpin_figure "$rep"
		done
		drop_bed
	fi
	if want mem || want hole; then
		step "test bed: 2 unshaped veth rails (connections)" bed_step bn2m 2 off
		if [ "$BED" = "$(bed_tag bn2m)" ] && want mem; then
			step "memory and descriptors per connection (ri2n-conns)" memory_figure
			step "a connection per request (ri2n-churn)" churn_figure
			step "close storm: all connections closed at once (ri2n-conns)" storm_figure
		fi
		# mem includes it; --only hole runs it alone
		[ "$BED" = "$(bed_tag bn2m)" ] &&
			step "a black hole while idle: first writes (ri2n-conns --probes)" hole_figure
		drop_bed
		want mem && step "idle cost: 9,000 and 1,000 idle connections (bench/idle-cost.sh)" idle_cost_figure
	fi
fi

# ---- plots ---------------------------------------------------------------------------------
plots() {
	have gnuplot || { fail "gnuplot is not installed"; return; }
	local ok=0 f
	if [ "$(wc -l <"$FO_CSV")" -gt 1 ]; then
		local fr hr
		fr=$(awk -F, '$1 == "ri2n" && $2 == 1 && $3 == "fault_in_place" { print $4 }' "$FO_EV")
		hr=$(awk -F, '$1 == "ri2n" && $2 == 1 && $3 == "heal_in_place" { print $4 }' "$FO_EV")
		: "${fr:=$FO_FAULT}" "${hr:=$FO_HEAL}"
		for s in ri2n mptcp; do
			awk -F, -v s="$s" '$1 == s && $2 == 1 { printf "%s %s %d %d\n", $3, $4, ($6 == "U"), (($10 + 0) > 0) }' "$FO_CSV" >"$RAW/fo-$s.dat"
		done
		gnuplot >"$RAW/gnuplot-failover.log" 2>&1 <<EOF || { ok=1; FAIL_REASON="gnuplot failed on failover.png: $(head -c 200 "$RAW/gnuplot-failover.log")"; }
set terminal pngcairo size 1200,720 font "DejaVu Sans,11"
set output "$out/failover.png"
set multiplot
set lmargin at screen 0.15; set rmargin at screen 0.97
set tmargin at screen 0.93; set bmargin at screen 0.40
set title "2 rails x 1 Gbit/s: rail 2 silently black-holed at ${FO_FAULT} s, healed at ${FO_HEAL} s (receiver goodput per 100 ms, run 1)"
set ylabel "goodput (Mbit/s per 100 ms)"
set yrange [0:2900<*]; set grid
set xrange [0:${FO_SECS}]
set format x ""
set key top right opaque box
set object 1 rect from $fr, graph 0 to $hr, graph 1 fc rgb "#ffdddd" fs solid 0.5 noborder behind
plot "$RAW/fo-ri2n.dat" using 1:2 with fsteps lw 2 lc rgb "#1f5fa8" title "ri2n", \
     "$RAW/fo-mptcp.dat" using 1:2 with fsteps lw 2 lc rgb "#d9730d" title "MPTCP (mptcpize ri2n-stream --tcp)", \
     1000 with lines dt 2 lc rgb "#666666" title "one rail (1 Gbit/s)", \
     400 with lines dt 3 lc rgb "#cc0000" title "40% of the surviving rail (400 Mbit/s)"
unset object 1; unset title
set tmargin at screen 0.37; set bmargin at screen 0.09
set xlabel "time since the start of the stream (s)"; set format x "%g"
set ylabel "rail 2"
set yrange [-0.6:5.6]; unset grid; set key off
set ytics ("rail 2 black-holed" 5, "ri2n: rail 2 up" 3.5, "ri2n: data on rail 2" 2, "MPTCP: data on rail 2" 0.5) font ",9"
set object 2 rect from $fr, 4.7 to $hr, 5.3 fc rgb "#cc0000" fs solid 0.8 noborder
plot "$RAW/fo-ri2n.dat" using 1:(\$3 * 0.9 + 3.05) with fsteps lw 3 lc rgb "#1f5fa8", \
     "$RAW/fo-ri2n.dat" using 1:(\$4 * 0.9 + 1.55) with fsteps lw 3 lc rgb "#1f5fa8", \
     "$RAW/fo-mptcp.dat" using 1:(\$4 * 0.9 + 0.05) with fsteps lw 3 lc rgb "#d9730d"
unset multiplot
EOF
	fi
	if [ "$(wc -l <"$LAT_CSV")" -gt 1 ]; then
		for s in ri2n tcp udp sockperf-udp sockperf-tcp ri2n-fast sockperf-ri2n-run ri2n-unpinned tcp-unpinned; do
			# per size, the median over repetitions of each run's median; pinned unless named so
			awk -F, -v s="$s" 'BEGIN { p = "yes"; if (sub(/-unpinned$/, "", s)) p = "no" }
				$1 == s && ($2 == "block" || $2 == "fast") && ($10 == p || ($10 == "" && p == "yes")) { print $4, $6 }' "$LAT_CSV" | sort -k1,1n -k2,2g |
				awk '{ v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
					END { for (i = 1; i <= n; i++) { z = order[i]; k = split(v[z], x, " ")
						printf "%s %s\n", z, (k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2) } }' \
				>"$RAW/lat-$s.dat"
		done
		gnuplot >"$RAW/gnuplot-latency.log" 2>&1 <<EOF || { ok=1; FAIL_REASON="gnuplot failed on latency.png: $(head -c 200 "$RAW/gnuplot-latency.log")"; }
set terminal pngcairo size 1100,700 font "DejaVu Sans,11"
set output "$out/latency.png"
set title "One-way latency (half round trip, median), 2 rails x 1 Gbit/s, blocking reads, pinned unless said"
set xlabel "message size (bytes)"
set ylabel "one-way latency (µs)"
set logscale xy 2
set logscale y 10
set xtics ("1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304)
set format y "%g"
set grid xtics ytics mytics
set key top left opaque box
set xrange [0.8:6e6]
plot "$RAW/lat-ri2n.dat" using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f5fa8" title "ri2n (2 rails, ri2n-pingpong)", \
     "$RAW/lat-tcp.dat" using 1:2 with linespoints lw 2 pt 5 lc rgb "#2a9d3a" title "TCP, 1 rail (ri2n-pingpong --tcp)", \
     "$RAW/lat-udp.dat" using 1:2 with linespoints lw 2 pt 9 lc rgb "#d9730d" title "UDP, 1 rail (ri2n-pingpong --udp, <= 1472 B)", \
     "$RAW/lat-sockperf-udp.dat" using 1:2 with points pt 8 ps 1.6 lc rgb "#d9730d" title "sockperf UDP", \
     "$RAW/lat-sockperf-tcp.dat" using 1:2 with points pt 4 ps 1.6 lc rgb "#2a9d3a" title "sockperf TCP", \
     "$RAW/lat-ri2n-fast.dat" using 1:2 with linespoints lw 2 pt 13 lc rgb "#7b2fbf" title "ri2n fast API (ri2n-pingpong --fast)", \
     "$RAW/lat-sockperf-ri2n-run.dat" using 1:2 with points pt 6 ps 1.6 lc rgb "#1f5fa8" title "sockperf TCP under ri2n-run", \
     "$RAW/lat-ri2n-unpinned.dat" using 1:2 with linespoints lw 1 dt 2 pt 7 ps 0.6 lc rgb "#1f5fa8" title "ri2n, unpinned", \
     "$RAW/lat-tcp-unpinned.dat" using 1:2 with linespoints lw 1 dt 2 pt 5 ps 0.6 lc rgb "#2a9d3a" title "TCP, unpinned"
EOF
	fi
	return $ok
}
step "plots (failover.png, latency.png)" plots

# Every CSV row has its header's fields (a value holding a comma would shift the columns)
csv_check() {
	local f bad=""
	for f in "$out"/*.csv; do
		[ -f "$f" ] || continue
		awk -F, 'NR == 1 { n = NF } NR > 1 && NF != n { bad = 1 } END { exit bad }' "$f" ||
			bad="$bad $(basename "$f")"
	done
	[ -z "$bad" ] || fail "rows with more or fewer fields than their header in:$bad"
}
step "result files: every CSV row has its header's fields" csv_check

# The MPI section of summary.md
mpi_path_name() { [ "${1%-*}" = ofi ] && echo "(pml cm, mtl ofi, ri2n provider)" || echo "${1%-*},self"; }
mpi_summary() {
	local s b
	echo "## MPI: Open MPI 4.1, btl_ri2n next to btl_tcp, and mtl/ofi over the ri2n provider"
	echo
	echo "2 ranks, one per host, on the 2 x GbE bed; \`mpi_check\` (tests/mpi) checks every byte. Latency:" \
		"8-byte ping-pong, median of $MPI_ITERS round trips halved (MPI polls: this is busy-polling latency," \
		"not comparable with the blocking figures above). Stream: 1 MiB messages, 16 in flight, for $MPI_SECS s."
	echo
	echo "| path (--mca btl, or pml cm with mtl ofi) | rails | 8-byte one-way latency (µs) | stream (MB/s) | latency / btl_tcp on r1 | stream / btl_tcp on the same rails |"
	echo "|---|---|---|---|---|---|"
	for s in ri2n-2r ri2n-1r tcp-1r tcp-2r ofi-2r; do
		[ -n "$(agg mpi $s mbps)" ] || continue
		b=tcp-${s#*-}
		echo "| $(mpi_path_name "$s") | $(mpi_rails $s) | $(fmtv mpi $s lat_us 2) | $(fmtv mpi $s mbps 1) |" \
			"$(ratio "$(med mpi $s lat_us)" "$(med mpi tcp-1r lat_us)") | $(ratio "$(med mpi $s mbps)" "$(med mpi $b mbps)") |"
	done
	echo
	if [ -n "$(awk -F'\t' '$1 == "mpi-bh"' "$METRICS")" ]; then
		echo "Black hole: both rails in use (\`btl_ri2n_if_include\` / \`btl_tcp_if_include r1,r2\`), rail 2 of host 1" \
			"silently black-holed about $MPI_FO_AT s into a $MPI_FO_SECS s stream and left so; a job still running" \
			"$MPI_HANG s after its stream should have ended is killed and called hung. Intervals are 100 ms at the receiver."
		echo
		echo "| --mca btl | outcome | black hole at (s into the stream) | stream before (MB/s) | after: mean of intervals | lowest interval | longest interval (ms; 100 while messages complete) | last progress (s into the stream) |"
		echo "|---|---|---|---|---|---|---|---|"
		for b in ri2n tcp; do
			[ -n "$(awk -F'\t' -v b=$b '$1 == "mpi-bh" && $2 == b' "$METRICS")" ] || continue
			echo "| $b,self | $(awk -F'\t' -v b=$b '$1 == "mpi-bh" && $2 == b && $4 == "outcome" { printf "%s%s", n++ ? ", " : "", $5 }' "$METRICS") |" \
				"$(fmtv mpi-bh $b fault_s 2) | $(fmtv mpi-bh $b before 1) | $(fmtv mpi-bh $b after 1) | $(fmtv mpi-bh $b low 1) |" \
				"$(fmtv mpi-bh $b gap_ms) | $(fmtv mpi-bh $b last_s 2) |"
		done
		echo
	fi
}
# ---- summary.md ----------------------------------------------------------------------------
summary() {
	local S=$out/summary.md fig label r m s1 s2 cpu
	local cpu_model
	cpu_model=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
	{
		echo "# ri2n benchmark summary"
		echo
		echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); mode: **$mode**, $reps repetition(s) of each figure" \
			"(values: median [min–max] over repetitions); run time $(($(date +%s) - START)) s"
		echo "- machine: $(nproc) CPUs ($cpu_model), kernel $(uname -r); load average at the start $START_LOAD, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "- other processes sharing the machine during the run (more than 20% of a CPU when sampled at each step): ${OTHERS:-none seen}"
		echo "- ri2n commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (work tree has changes)');" \
			"TCP congestion control in the beds: $(sysctl -n net.ipv4.tcp_congestion_control); iperf3 $(iperf3 --version 2>/dev/null | awk 'NR == 1 { print $2 }'), sockperf $(sockperf --version 2>/dev/null | awk '/version/ { print $3; exit }' | tr -d ',')"
		echo "- test beds: 2 hosts in network namespaces, each rail its own bridge; GbE rails are" \
			"\`tbf rate 1gbit burst 128kb latency 20ms\` on both ends, MTU 1500 (tools/ri2n-testbed.sh)"
		echo
		echo "## Throughput (goodput at the receiver, Mbit/s)"
		echo
		echo "ri2n: ri2n-stream (every byte verified, except on unshaped veth: \`--no-verify\`), steady state after 1 s." \
			"TCP per rail and MPTCP: iperf3 (\`-O 1\`: the first second left out), MPTCP under \`mptcpize run\`." \
			"\"rails\" is each rail's share of the bytes host 1 sent (interface counters)."
		echo
		echo "| figure | ri2n | MPTCP | sum of single-rail TCP | ri2n / MPTCP | ri2n / sum TCP | ri2n rails % | MPTCP rails % (subflows) |"
		echo "|---|---|---|---|---|---|---|---|"
		for fig in tp2 tp4 veth degraded loss1 loss5 jumbo mixed; do
			case $fig in
			tp2) label="2 x 1 Gbit/s" ;; tp4) label="4 x 1 Gbit/s" ;; veth) label="2 unshaped veth rails" ;;
			jumbo) label="2 x 1 Gbit/s, MTU 9000" ;; mixed) label="1 Gbit/s at MTU 9000 + 1 Gbit/s at 1500" ;;
			degraded) label="1 Gbit/s + 250 Mbit/s" ;; loss1) label="2 x 1 Gbit/s, 1% loss each" ;;
			loss5) label="2 x 1 Gbit/s, 5% loss each" ;;
			esac
			[ -n "$(agg $fig ri2n mbps)$(agg $fig mptcp mbps)" ] || continue
			echo "| $label | $(fmtv $fig ri2n mbps) | $(fmtv $fig mptcp mbps) | $(fmtv $fig tcp-sum mbps) |" \
				"$(ratio "$(med $fig ri2n mbps)" "$(med $fig mptcp mbps)") | $(ratio "$(med $fig ri2n mbps)" "$(med $fig tcp-sum mbps)") |" \
				"$(sval $fig ri2n share) | $(sval $fig mptcp share) ($(awk -F, -v f=$fig '$1 == f && $2 == "mptcp" { s = $8 } END { print s }' "$TP_CSV")) |"
		done
		echo
		if [ -n "$(agg veth-nopub ri2n mbps)" ]; then
			echo "Cost of publishing state for ri2n-stat (unshaped veth, CPU-bound): ri2n $(fmtv veth ri2n mbps)" \
				"Mbit/s with it, $(fmtv veth-nopub ri2n mbps) without (RI2N_STAT_MS=0):" \
				"ratio $(ratio "$(med veth ri2n mbps)" "$(med veth-nopub ri2n mbps)")."
			echo
		fi
		if [ -n "$(agg tp2-ri2n-run ri2n mbps)$(agg veth-ri2n-run ri2n mbps)" ]; then
			echo "Unmodified iperf3 with both ends under \`ri2n-run\` (the LD_PRELOAD shim; iperf3's own figure):" \
				"2 x GbE $(fmtv tp2-ri2n-run ri2n mbps) Mbit/s (ri2n-stream $(fmtv tp2 ri2n mbps), MPTCP under" \
				"mptcpize $(fmtv tp2 mptcp mbps)); unshaped veth $(fmtv veth-ri2n-run ri2n mbps)" \
				"(ri2n-stream $(fmtv veth ri2n mbps), MPTCP $(fmtv veth mptcp mbps))."
			echo
		fi
		if [ -n "$(agg tp2-keyed ri2n mbps)$(agg veth-keyed ri2n mbps)" ]; then
			echo "Cost of a cluster key (RI2N_KEY: every datagram sealed with AES-128-GCM under keys of its" \
				"connection; target >= 0.98 on GbE, >= 0.85 on unshaped veth): 2 x GbE $(fmtv tp2-keyed ri2n mbps)" \
				"Mbit/s keyed vs $(fmtv tp2 ri2n mbps) (ratio $(ratio "$(med tp2-keyed ri2n mbps)" "$(med tp2 ri2n mbps)"));" \
				"4 x GbE $(fmtv tp4-keyed ri2n mbps) vs $(fmtv tp4 ri2n mbps)" \
				"(ratio $(ratio "$(med tp4-keyed ri2n mbps)" "$(med tp4 ri2n mbps)")); unshaped veth" \
				"$(fmtv veth-keyed ri2n mbps) vs $(fmtv veth ri2n mbps)" \
				"(ratio $(ratio "$(med veth-keyed ri2n mbps)" "$(med veth ri2n mbps)")). Integrity only" \
				"(RI2N_KEY_AUTH_ONLY=1, AES-GMAC): 2 x GbE $(fmtv tp2-keyauth ri2n mbps)" \
				"(ratio $(ratio "$(med tp2-keyauth ri2n mbps)" "$(med tp2 ri2n mbps)")), unshaped veth" \
				"$(fmtv veth-keyauth ri2n mbps) (ratio $(ratio "$(med veth-keyauth ri2n mbps)" "$(med veth ri2n mbps)"))."
			echo
		fi
		if [ -n "$(agg veth-capture keyed hits)" ]; then
			echo "Capture check (64 MiB of a known text, every UDP frame on host 2's rails captured): without a key" \
				"$(fmtv veth-capture plain hits) frames held a piece of it ($(fmtv veth-capture plain bytes) bytes" \
				"captured); with a cluster key $(fmtv veth-capture keyed hits) ($(fmtv veth-capture keyed bytes) bytes)."
			echo
		fi
		if [ -n "$(agg tp2 tcp-r1 mbps)" ]; then
			echo "Single-rail TCP (iperf3): $(for fig in tp2 tp4 veth degraded; do
				for r in 1 2 3 4; do [ -n "$(agg $fig tcp-r$r mbps)" ] && printf '%s rail %s: %s; ' "$fig" "$r" "$(fmtv $fig tcp-r$r mbps)"; done
			done | sed 's/; $/./')"
			echo
		fi
		if [ -n "$(agg veth ri2n mbps)" ]; then
			echo "### CPU per gigabit, 2 unshaped veth rails"
			echo
			echo "Unshaped veth: each single-rail TCP run has the whole machine to itself, so their sum is no ceiling there." \
				"CPU: user + system time of the sending and of the receiving process, % of one CPU (ri2n's engine thread" \
				"included; kernel softirq work is only partly charged to the processes, so compare runs of one kind rather" \
				"than ri2n with TCP). CPU s per Gbit: the two processes' CPU seconds per gigabit delivered."
			echo
			echo "| system | goodput (Mbit/s) | CPU send % | CPU receive % | CPU s per Gbit | / MPTCP |"
			echo "|---|---|---|---|---|---|"
			local row f s l
			for row in "veth ri2n ri2n (ri2n-stream --no-verify)" "veth-nopub ri2n ri2n, no ri2n-stat publishing" \
				"veth-keyed ri2n ri2n with a cluster key" "veth-keyauth ri2n ri2n with a cluster key, integrity only" "veth-ri2n-run ri2n iperf3, both ends under ri2n-run" \
				"veth mptcp MPTCP (mptcpize run iperf3)" "veth tcp-r1 TCP on rail 1 (iperf3)" "veth tcp-r2 TCP on rail 2 (iperf3)"; do
				read -r f s l <<<"$row"
				[ -n "$(agg "$f" "$s" mbps)" ] || continue
				echo "| $l | $(fmtv "$f" "$s" mbps) | $(fmtv "$f" "$s" cpu_send) | $(fmtv "$f" "$s" cpu_recv) |" \
					"$(fmtv "$f" "$s" cpu_gbit 3) | $(ratio "$(med "$f" "$s" cpu_gbit)" "$(med veth mptcp cpu_gbit)") |"
			done
			echo
		fi
		echo "## Failover: rail 2 of 2 silently black-holed at ${FO_FAULT} s, healed at ${FO_HEAL} s (stream of ${FO_SECS} s)"
		echo
		echo "Both through ri2n-stream (MPTCP: \`mptcpize run ri2n-stream --tcp\`, per-subflow counters from" \
			"MPTCP_TCPINFO). Times are from the moment the drop rule went in (or out): the new nftables ruleset" \
			"generation as \`nft monitor\` in the rail's switch saw it (at most a millisecond or two late), or the end of the" \
			"test bed's command if that came first (the command takes $(fmtv failover ri2n fault_cmd_ms) ms)." \
			"Bins are 100 ms at the receiver; \"data back\" is the end of the first bin in which rail 2 delivered data."
		echo
		echo "| system | before (Mbit/s) | during outage | lowest bin, outage | lowest bin, fault..end | time below 400 Mbit/s (s) | detection (ms) | up event after heal (ms) | rail 2 data back (ms, bin end) | back above 1.5 rails (ms) | verified |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		for s in ri2n mptcp; do
			[ -n "$(agg failover $s min_all)" ] || continue
			echo "| $s | $(fmtv failover $s before) | $(fmtv failover $s during) | $(fmtv failover $s min_outage) | $(fmtv failover $s min_all) |" \
				"$(fmtv failover $s below40 1) | $(fmtv failover $s detect_ms 1) | $(fmtv failover $s up_ms 1) | $(fmtv failover $s data_back_ms) |" \
				"$(fmtv failover $s agg_back_ms) | $(awk -F'\t' -v s=$s '$1 == "failover" && $2 == s && $4 == "verified" { printf "%s%s", n++ ? "," : "", $5 }' "$METRICS") |"
		done
		echo
		if [ -n "$(agg mtuhole ri2n min_all)$(agg mtuhole mptcp min_all)" ]; then
			echo "## MTU black hole: rail 2 of 2 drops IP packets over 1000 bytes from ${FO_FAULT} s to ${FO_HEAL} s (silently, both ways)"
			echo
			echo "As the failover table, with \`tools/ri2n-testbed.sh fault mtuhole 1 2 1000\` (nftables \`meta length > 1000 drop\`" \
				"on host 1's port in rail 2's switch; the rail's hosts segment GSO batches in software meanwhile," \
				"so the switch judges frames). Small packets (ACKs, heartbeats) pass; full-size ones vanish."
			echo
			echo "| system | before (Mbit/s) | during the hole | lowest bin, hole | lowest bin, hole..end | time below 400 Mbit/s (s) | detection (ms) | up event after heal (ms) | rail 2 data back (ms, bin end) | back above 1.5 rails (ms) | verified |"
			echo "|---|---|---|---|---|---|---|---|---|---|---|"
			for s in ri2n mptcp; do
				[ -n "$(agg mtuhole $s min_all)" ] || continue
				echo "| $s | $(fmtv mtuhole $s before) | $(fmtv mtuhole $s during) | $(fmtv mtuhole $s min_outage) | $(fmtv mtuhole $s min_all) |" \
					"$(fmtv mtuhole $s below40 1) | $(fmtv mtuhole $s detect_ms 1) | $(fmtv mtuhole $s up_ms 1) | $(fmtv mtuhole $s data_back_ms) |" \
					"$(fmtv mtuhole $s agg_back_ms) | $(awk -F'\t' -v s=$s '$1 == "mtuhole" && $2 == s && $4 == "verified" { printf "%s%s", n++ ? "," : "", $5 }' "$METRICS") |"
			done
			echo
		fi
		echo "## Latency: one-way (half round trip), µs, median [p99]; blocking reads"
		echo
		echo "ri2n-pingpong for ri2n (2 rails) through plain read/write on its descriptor (libri2n defines them: the fast" \
			"path; with RI2N_PLAIN_FAST=0 they cross the socketpair and the engine thread, the way raw system calls and stdio" \
			"go) and through the fast API (ri2n_send/ri2n_recv, \`--fast\`), TCP (TCP_NODELAY) and UDP (one datagram, so only up to 1472 B) over rail 1," \
			"the same code and wait mode; sockperf ping-pong over UDP and TCP on rail 1, and sockperf --tcp with both ends" \
			"under ri2n-run. Pinned: host 1 on CPU 0, host 2 on CPU 1 (two one-core hosts; ri2n's engine thread shares its" \
			"host's core); unpinned: wherever the scheduler puts them (on 2 CPUs both ends may share one, which spares" \
			"TCP a cross-CPU wake-up). $LAT_ROUNDS round(s) per repetition, the order of the systems alternating;" \
			"sizes $LAT_ROUND_SIZES (sockperf: its smallest, ${SP_SIZES_TCP%% *} B) in every round, the others in the first."
		echo
		echo "### 8-byte one-way latency"
		echo
		echo "| path | pinned median | pinned p99 | median / TCP | p99 / TCP p99 | unpinned median | unpinned p99 | median / TCP | p99 / TCP p99 | target |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		local spz=${SP_SIZES_TCP%% *}
		lat8_row "ri2n, plain read/write (ri2n-pingpong: libri2n's read/write, the fast path)" ri2n tcp 8 "median <= 2x TCP"
		if [ -n "$(agg lat-block ri2n-desc med_8)$(agg lat-unpinned ri2n-desc med_8)" ]; then
			lat8_row "ri2n, through the descriptor (RI2N_PLAIN_FAST=0: as raw system calls and stdio go)" ri2n-desc tcp 8 "reported"
		fi
		if [ -n "$(agg lat-block ri2n-fast med_8)$(agg lat-unpinned ri2n-fast med_8)" ]; then
			lat8_row "ri2n, fast API (ri2n-pingpong --fast)" ri2n-fast tcp 8 "median <= 1.3x, p99 <= 2x TCP"
		else
			echo "| ri2n, fast API: not measured (ri2n-pingpong has no --fast) | | | | | | | | | median <= 1.3x, p99 <= 2x TCP |"
		fi
		lat8_row "TCP (ri2n-pingpong --tcp)" tcp tcp 8 "the peer"
		lat8_row "ri2n-run: sockperf --tcp, both ends under ri2n-run ($spz B)" sockperf-ri2n-run sockperf-tcp "$spz" "median <= 1.3x, p99 <= 2x TCP"
		lat8_row "TCP: sockperf --tcp ($spz B)" sockperf-tcp sockperf-tcp "$spz" "the peer of ri2n-run"
		echo
		echo "sockperf's smallest message is $spz bytes (its header), so its rows are for $spz B."
		echo
		lat_table lat-block "### Every size, pinned"
		lat_table lat-unpinned "### Every size, unpinned"
		if [ -n "$(awk -F'\t' '$1 == "lat-busy"' "$METRICS")" ]; then
			local z
			echo "Busy polling (\`--busy-poll\`, unpinned), median µs: $(for z in $(awk -F'\t' '$1 == "lat-busy" && $4 ~ /^med_/ { print substr($4, 5) }' "$METRICS" | sort -n | uniq); do
				printf '%s B: ri2n %s, fast API %s, TCP %s, UDP %s; ' "$z" "$(fmtv lat-busy ri2n med_$z 1)" "$(fmtv lat-busy ri2n-fast med_$z 1)" "$(fmtv lat-busy tcp med_$z 1)" "$(fmtv lat-busy udp med_$z 1)"; done | sed 's/; $/./')"
		fi
		if [ -n "$(awk -F'\t' '$1 == "redundant"' "$METRICS")" ]; then
			echo
			redundant_summary
		fi
		if [ -n "$(awk -F'\t' '$1 ~ /^kv-/' "$METRICS")" ]; then
			echo
			kv_summary
		fi
		if [ -n "$(awk -F'\t' '$1 ~ /^close-/' "$METRICS")" ]; then
			echo
			close_summary
		fi
		if [ -n "$(awk -F'\t' '$1 == "mpi" || $1 == "mpi-bh"' "$METRICS")" ]; then
			echo
			mpi_summary
		fi
		if [ -n "$(awk -F'\t' '$1 ~ /^mpin-/' "$METRICS")" ]; then
			echo
			mpin_summary
		fi
		if [ -n "$(awk -F'\t' '$1 ~ /^incast/ || $1 == "sharedrail"' "$METRICS")" ]; then
			echo
			incast_summary
		fi
		if [ -n "$(awk -F'\t' '$1 == "ofi"' "$METRICS")" ]; then
			echo
			ofi_summary
		fi
		if [ -n "$(awk -F'\t' '$1 == "mpich"' "$METRICS")" ]; then
			echo
			mpich_summary
		fi
		echo
		conns_summary
		mem_summary
		churn_summary
		storm_summary
		echo "## Targets (DESIGN.md)"
		echo
		echo "| target | measured | verdict |"
		echo "|---|---|---|"
		targets
		echo
		echo "## Steps"
		echo
		echo "The load average when each step began tells whether something else ran on the machine (2 CPUs;" \
			"the bench itself adds up to ~2 while it runs); steal is the share of CPU time the hypervisor" \
			"gave to other guests during the step (/proc/stat): a figure measured under steal may be low."
		echo
		echo "| step | status | load average | steal % | reason |"
		echo "|---|---|---|---|---|"
		local i
		for i in "${!STEP_NAMES[@]}"; do
			echo "| ${STEP_NAMES[$i]} | ${STEP_STATUS[$i]} | ${STEP_LOADS[$i]:-} | ${STEP_STEALS[$i]:-} | $(printf '%s' "${STEP_REASONS[$i]}" | tr '\n|' '  ' | cut -c1-300) |"
		done
		echo
		echo "Files: throughput.csv, latency.csv, failover.csv (per-100 ms bins), failover_events.csv, failover.png, latency.png, mpi.csv, kv.csv, close.csv, ofi.csv; per-run logs in raw/."
	} >"$S"
}
latcell() { # FIG SYS SIZE
	local m p
	m=$(med "$1" "$2" "med_$3")
	p=$(med "$1" "$2" "p99_$3")
	[ -n "$m" ] || { echo "n/a"; return; }
	awk -v m="$m" -v p="$p" 'BEGIN { printf "%.1f [%.1f]", m, p }'
}
# lat8_row LABEL SYS PEER SIZE TARGET: a row of the 8-byte table, pinned and unpinned
lat8_row() {
	local out="| $1" f m p
	for f in lat-block lat-unpinned; do
		m=$(med $f "$2" "med_$4") p=$(med $f "$2" "p99_$4")
		out+=" | $(fmtv $f "$2" "med_$4" 1) | $(fmtv $f "$2" "p99_$4" 1) | $(ratio "$m" "$(med $f "$3" "med_$4")") | $(ratio "$p" "$(med $f "$3" "p99_$4")")"
	done
	echo "$out | $5 |"
}
# lat_table FIG TITLE: median [p99] at every size measured for FIG
lat_table() {
	local f=$1 z
	[ -n "$(awk -F'\t' -v f="$f" '$1 == f' "$METRICS")" ] || return 0
	echo "$2"
	echo
	echo "| size (B) | ri2n | ri2n fast API | TCP | UDP | sockperf TCP | sockperf under ri2n-run | sockperf UDP | ri2n / TCP | fast / TCP | ri2n / UDP | ri2n-run / TCP (sockperf) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	for z in $(awk -F'\t' -v f="$f" '$1 == f && $4 ~ /^med_/ { print substr($4, 5) }' "$METRICS" | sort -n | uniq); do
		echo "| $z | $(latcell $f ri2n $z) | $(latcell $f ri2n-fast $z) | $(latcell $f tcp $z) | $(latcell $f udp $z) |" \
			"$(latcell $f sockperf-tcp $z) | $(latcell $f sockperf-ri2n-run $z) | $(latcell $f sockperf-udp $z) |" \
			"$(ratio "$(med $f ri2n med_$z)" "$(med $f tcp med_$z)") | $(ratio "$(med $f ri2n-fast med_$z)" "$(med $f tcp med_$z)") |" \
			"$(ratio "$(med $f ri2n med_$z)" "$(med $f udp med_$z)") | $(ratio "$(med $f sockperf-ri2n-run med_$z)" "$(med $f sockperf-tcp med_$z)") |"
	done
	echo
}
# The request-rate section of summary.md
kv_summary() {
	local set t a b
	echo "## Request rate: redis under ri2n-run vs TCP (requests/s)"
	echo
	echo "$(redis-server --version 2>/dev/null | awk '{ print $1, $2, $3 }') in host 2 without persistence" \
		"(\`--save '' --appendonly no\`, bound to rail 1's address, protected mode off) and redis-benchmark in host 1" \
		"(\`-t set,get\`, default 3-byte values), both under ri2n-run (ri2n over both rails) or both over plain TCP on" \
		"rail 1, 2 x GbE bed, unpinned. $KV_ROUNDS round(s) per repetition, ri2n and TCP alternating which goes first;" \
		"median [min–max] over rounds. Requests per run: $KV_N_PIPE pipelined, $KV_N with 50 clients, $KV_N_1000 with 1000."
	echo
	echo "| clients | test | TCP | ri2n-run | ri2n-run / TCP | target |"
	echo "|---|---|---|---|---|---|"
	for set in $KV_SETTINGS; do
		for t in set get; do
			[ -n "$(agg "kv-$set" tcp $t)$(agg "kv-$set" ri2n $t)" ] || continue
			case $set in p16) a=">= 0.8x" ;; c1000) a=">= 0.7x" ;; *) a="" ;; esac
			echo "| $(kv_label $set) | ${t^^} | $(fmtv "kv-$set" tcp $t) | $(fmtv "kv-$set" ri2n $t) |" \
				"$(ratio "$(med "kv-$set" ri2n $t)" "$(med "kv-$set" tcp $t)") | $a |"
		done
	done
	echo
}
# both A B: 1 if both are 1, 0 if either is 0, x if either was not measured
both() { if [ "$1" = x ] || [ "$2" = x ]; then echo x; else echo $(($1 && $2)); fi; }
# verdict MEASURED_OK: "met", "not met" or "not measured"
verdict() { case $1 in 1) echo "**met**" ;; 0) echo "**not met**" ;; *) echo "not measured" ;; esac; }
numcmp() { awk -v a="${1:-}" -v op="$2" -v b="${3:-}" 'BEGIN { if (a == "" || b == "" || a == "n/a" || b == "n/a") { print "x"; exit }
	if (op == ">=") print (a + 0 >= b + 0) ? 1 : 0; else print (a + 0 <= b + 0) ? 1 : 0 }'; }
targets() {
	local r m s v a b
	r=$(med tp2 ri2n mbps) s=$(med tp2 tcp-sum mbps) m=$(med tp2 mptcp mbps)
	a=$(numcmp "$r" ">=" "$(awk -v s="$s" 'BEGIN { if (s != "") print 0.985 * s }')")
	b=$(numcmp "$r" ">=" "$m")
	v=x; [ "$a" != x ] && [ "$b" != x ] && v=$((a && b))
	echo "| 2 x 1 Gbit/s: >= 98.5% of 2x single-rail TCP and >= MPTCP | ri2n ${r:-n/a}, $(ratio "$r" "$s") of TCP sum, MPTCP ${m:-n/a} | $(verdict $v) |"
	r=$(med tp4 ri2n mbps) s=$(med tp4 tcp-sum mbps)
	echo "| 4 x 1 Gbit/s: >= 97% of 4x single-rail TCP | ri2n ${r:-n/a}, $(ratio "$r" "$s") of TCP sum | $(verdict "$(numcmp "$(ratio "$r" "$s")" ">=" 0.97)") |"
	a=$(awk -F'\t' '$1 == "failover" && $2 == "ri2n" && $4 == "min_all" && $5 != "" { if (m == "" || $5 < m) m = $5 } END { print m }' "$METRICS")
	b=$(awk -F'\t' '$1 == "failover" && $2 == "ri2n" && $4 == "detect_ms" && $5 != "" { if (m == "" || $5 > m) m = $5 } END { print m }' "$METRICS")
	v=x; [ -n "$a" ] && [ -n "$b" ] && v=$(( $(numcmp "$a" ">=" 400) && $(numcmp "$b" "<=" 10) ))
	echo "| black hole under load: no 100 ms bin below 40% of the surviving rail (400 Mbit/s), detection <= 10 ms | worst bin from the fault to the end ${a:-n/a} Mbit/s, worst detection ${b:-n/a} ms (MPTCP worst bin $(awk -F'\t' '$1 == "failover" && $2 == "mptcp" && $4 == "min_all" && $5 != "" { if (m == "" || $5 < m) m = $5 } END { print m }' "$METRICS")) | $(verdict $v) |"
	a=$(awk -F'\t' '$1 == "failover" && $2 == "ri2n" && $4 == "up_ms" && $5 != "" { if (m == "" || $5 > m) m = $5 } END { print m }' "$METRICS")
	b=$(awk -F'\t' '$1 == "failover" && $2 == "ri2n" && $4 == "data_back_ms" && $5 != "" { if (m == "" || $5 > m) m = $5 } END { print m }' "$METRICS")
	echo "| healed rail back in use <= 300 ms after the heal | worst up event ${a:-n/a} ms, data on the rail in the bin ending ${b:-n/a} ms after (MPTCP: $(fmtv failover mptcp data_back_ms) ms) | $(verdict "$(numcmp "$a" "<=" 300)") |"
	a=$(awk -F'\t' '$1 == "mtuhole" && $2 == "ri2n" && $4 == "min_outage" && $5 != "" { if (m == "" || $5 < m) m = $5 } END { print m }' "$METRICS")
	b=$(awk -F'\t' '$1 == "mtuhole" && $2 == "ri2n" && $4 == "data_back_ms" && $5 != "" { if (m == "" || $5 > m) m = $5 } END { print m }' "$METRICS")
	s=$(med tp2 tcp-sum mbps)
	s=$(awk -v s="$s" 'BEGIN { print (s == "" ? 941 : s / 2) }') # one rail: half the single-rail TCP sum
	v=x; [ -n "$a" ] && [ -n "$b" ] && v=$(( $(numcmp "$a" ">=" "$(awk -v s="$s" 'BEGIN { print 0.9 * s }')") && $(numcmp "$b" "<=" 1000) ))
	echo "| rail 2 silently dropping IP packets over 1000 bytes for $(awk -v a="$FO_FAULT" -v b="$FO_HEAL" 'BEGIN { print b - a }') s: >= 90% of one rail throughout, full size back <= 1 s after the heal | lowest 100 ms bin in the hole ${a:-n/a} Mbit/s (one rail: $s), rail 2 data back in the bin ending ${b:-n/a} ms after the heal (MPTCP lowest bin $(awk -F'\t' '$1 == "mtuhole" && $2 == "mptcp" && $4 == "min_outage" && $5 != "" { if (m == "" || $5 < m) m = $5 } END { print m }' "$METRICS")) | $(verdict $v) |"
	for f in jumbo mixed; do
		r=$(med $f ri2n mbps) s=$(med $f tcp-sum mbps)
		[ -n "$r$s" ] || continue
		echo "| $([ $f = jumbo ] && echo "MTU 9000 on both rails" || echo "rail 1 at MTU 9000, rail 2 at 1500"): >= 98.5% of the rails' single-rail TCP sum | ri2n ${r:-n/a}, $(ratio "$r" "$s") of TCP sum ${s:-n/a}, MPTCP $(med $f mptcp mbps) | $(verdict "$(numcmp "$(ratio "$r" "$s")" ">=" 0.985)") |"
	done
	r=$(med degraded ri2n mbps)
	echo "| degraded pair 1 Gbit/s + 250 Mbit/s: >= 95% of 1.25 Gbit/s (1187.5 Mbit/s) | ri2n ${r:-n/a} ($(ratio "$r" 1250) of 1250; the two rails alone with TCP: $(med degraded tcp-sum mbps). Framing caps goodput near 95.6% of the rate (1448 of 1514 bytes for TCP), so this target leaves almost no room) | $(verdict "$(numcmp "$r" ">=" 1187.5)") |"
	r=$(med loss5 ri2n mbps) s=$(med tp2 ri2n mbps)
	echo "| 5% random loss on every rail: >= 90% of the loss-free goodput | ri2n ${r:-n/a} vs ${s:-n/a} loss-free: $(ratio "$r" "$s") | $(verdict "$(numcmp "$(ratio "$r" "$s")" ">=" 0.90)") |"
	local f pin sys peer z what
	for f in lat-block lat-unpinned; do
		pin=pinned; [ $f = lat-unpinned ] && pin=unpinned
		for what in fast ri2n-run; do
			if [ $what = fast ]; then sys=ri2n-fast peer=tcp z=8; else sys=sockperf-ri2n-run peer=sockperf-tcp z=${SP_SIZES_TCP%% *}; fi
			r=$(med $f $sys med_$z) s=$(med $f $peer med_$z) a=$(med $f $sys p99_$z) b=$(med $f $peer p99_$z)
			v=$(both "$(numcmp "$(ratio "$r" "$s")" "<=" 1.3)" "$(numcmp "$(ratio "$a" "$b")" "<=" 2)")
			echo "| 8-byte one-way latency, $( [ $what = fast ] && echo "fast API (ri2n-pingpong --fast)" || echo "under ri2n-run (sockperf --tcp, $z B)"), $pin:" \
				"median <= 1.3x TCP, p99 <= 2x TCP's p99 (same program, same run) | ${r:-n/a} [p99 ${a:-n/a}] µs, TCP ${s:-n/a} [${b:-n/a}]:" \
				"$(ratio "$r" "$s")x, p99 $(ratio "$a" "$b")x | $(verdict "$v") |"
		done
		r=$(med $f ri2n med_8) s=$(med $f tcp med_8)
		echo "| 8-byte one-way latency, plain read/write, $pin: median <= 2x TCP | ri2n ${r:-n/a} µs, TCP ${s:-n/a} µs: $(ratio "$r" "$s")x | $(verdict "$(numcmp "$(ratio "$r" "$s")" "<=" 2)") |"
	done
	local set lim
	for set in p16 c1000; do
		if [ $set = p16 ]; then lim=0.8; else lim=0.7; fi
		a=$(ratio "$(med kv-$set ri2n set)" "$(med kv-$set tcp set)") b=$(ratio "$(med kv-$set ri2n get)" "$(med kv-$set tcp get)")
		v=$(both "$(numcmp "$a" ">=" $lim)" "$(numcmp "$b" ">=" $lim)")
		echo "| request rate under ri2n-run (redis), $(kv_label $set): >= ${lim}x TCP | SET $(fmtv kv-$set ri2n set) vs TCP $(fmtv kv-$set tcp set): ${a}x; GET $(fmtv kv-$set ri2n get) vs $(fmtv kv-$set tcp get): ${b}x | $(verdict "$v") |"
	done
	local c e
	for c in 1 16; do
		a=$(ratio "$(med close-c$c ri2n rps)" "$(med close-c$c tcp rps)")
		e=$(agg close-c$c ri2n exit_s | awk '{ print $3 }') # the slowest exit
		v=$(both "$(numcmp "$a" ">=" 0.5)" "$(numcmp "$e" "<=" 1)")
		echo "| a connection per request (nginx, wrk, \`Connection: close\`), $c client(s): >= 0.5x TCP's request rate, wrk exits within 1 s of its run | $(fmtv close-c$c ri2n rps) vs TCP $(fmtv close-c$c tcp rps): ${a}x; slowest exit ${e:-n/a} s (TCP $(agg close-c$c tcp exit_s | awk '{ print $3 }') s) | $(verdict "$v") |"
	done
	r=$(med mpi ri2n-2r mbps) s=$(med mpi ri2n-2r lat_us) m=$(med mpi tcp-1r lat_us)
	v=x; [ -n "$r" ] && [ -n "$s" ] && [ -n "$m" ] && v=$(( $(numcmp "$r" ">=" 235) && $(numcmp "$(ratio "$s" "$m")" "<=" 1.3) ))
	echo "| MPI over btl_ri2n, 2 rails: stream >= 235 MB/s, 8-byte latency <= 1.3x btl/tcp | stream ${r:-n/a} MB/s; latency ${s:-n/a} µs vs btl_tcp ${m:-n/a} µs: $(ratio "$s" "$m")x | $(verdict $v) |"
	r=$(med veth ri2n mbps) m=$(med veth mptcp mbps)
	echo "| unshaped veth, 2 rails: >= 1.0x MPTCP goodput | ri2n ${r:-n/a}, MPTCP ${m:-n/a}: $(ratio "$r" "$m")x; CPU s per Gbit ri2n $(fmtv veth ri2n cpu_gbit 3), MPTCP $(fmtv veth mptcp cpu_gbit 3) | $(verdict "$(numcmp "$(ratio "$r" "$m")" ">=" 1.0)") |"
	local done_lines nt nv nu nbad no nov
	done_lines=$(cat "$RAW"/*.srv.out 2>/dev/null | grep 'stream done role=recv')
	nt=$(grep -c 'transport=ri2n' <<<"$done_lines")
	nv=$(grep 'transport=ri2n' <<<"$done_lines" | grep -c 'verified=yes')
	nu=$(grep 'transport=ri2n' <<<"$done_lines" | grep -c 'verified=unchecked')
	nbad=$((nt - nv - nu))
	no=$(grep -vc 'transport=ri2n' <<<"$done_lines")
	nov=$(grep -v 'transport=ri2n' <<<"$done_lines" | grep -c 'verified=yes')
	v=x; [ "$nt" -gt 0 ] && v=$((nbad == 0))
	echo "| bytes lost or corrupted: 0 | ri2n: $nv of $nt transfers verified byte for byte, $nu unchecked (\`--no-verify\` on unshaped veth), $nbad failed (MPTCP/TCP through ri2n-stream: $nov of $no verified) | $(verdict $v) |"
	local h
	for h in 4 8; do
		a=$(med "mpin-a2a-h$h" ri2n-2r mbps) b=$(med "mpin-a2a-h$h" tcp-2r mbps)
		v=x; [ -n "$a" ] && [ -n "$b" ] && v=$(numcmp "$a" ">=" "$b")
		echo "| MPI alltoall over $h hosts >= btl_tcp (MB/s per rank, both on r1,r2) | ri2n ${a:-n/a}, btl_tcp ${b:-n/a} | $(verdict $v) |"
	done
	for h in 3 7; do
		a=$(med "incast$h" ri2n min_jain) b=$(med "incast$h" ri2n min_agg) lim=$([ $h = 3 ] && echo 0.9 || echo 0.85)
		v=x; [ -n "$a" ] && [ -n "$b" ] && v=$(both "$(numcmp "$a" ">=" $lim)" "$(numcmp "$b" ">=" 0.9)")
		echo "| $h senders into one host: Jain's index per second >= $lim, aggregate >= 90% of the receiver's rails | least Jain ${a:-n/a} (MPTCP $(med "incast$h" mptcp min_jain)), least aggregate ${b:-n/a} | $(verdict $v) |"
	done
	a=$(med sharedrail tcp share)
	echo "| TCP sharing a rail with ri2n keeps >= 40% of it | ${a:-n/a} ($(med sharedrail tcp mbps) Mbit/s) | $(verdict "$(numcmp "$a" ">=" 0.4)") |"
	a=$(med mpin-mem ri2n idle)
	echo "| MPI: an idle peer costs <= 256 KiB (Pss growth per peer, 15 peers) | ${a:-n/a} KiB (busy $(med mpin-mem ri2n busy), rested $(med mpin-mem ri2n rested); btl_tcp idle $(med mpin-mem tcp idle)) | $(verdict "$(numcmp "$a" "<=" 256)") |"
}
summary
log "summary: $out/summary.md"

nfail=0
for i in "${!STEP_STATUS[@]}"; do [ "${STEP_STATUS[$i]}" = failed ] && nfail=$((nfail + 1)); done
drop_bed
if [ "$mode" = smoke ] && [ $nfail -eq 0 ] && [ $keep -eq 0 ]; then
	rm -rf "$RAW"
fi
if [ $nfail -gt 0 ]; then
	log "$nfail step(s) failed (see $out/summary.md)"
	exit 1
fi
log "done in $(($(date +%s) - START)) s"
exit 0
