# shellcheck shell=bash
# bench/lib.sh - what every row family of bench/run.sh uses: step bookkeeping, the metrics
# file and its aggregates, background processes, the test beds and their counters, finding
# the programs. Sourced by bench/run.sh (which sets mode, out, RAW, ROOT, HERE, bindir, STREAM
# and log before any of these run); it defines functions and their state, runs nothing.

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
# round_order ROUND A B: "A B" in odd rounds, "B A" in even ones (which goes first alternates)
round_order() { if [ $(($1 % 2)) -eq 1 ]; then echo "$2 $3"; else echo "$3 $2"; fi; }
ratio() { # A B -> A/B with 3 decimals, or n/a
	awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.3f", a / b }'
}
# rounds_agg FIG SYS PEER METRIC -> "median min max n" of SYS / PEER taken round by round (the
# repetitions, "1.3", both measured), nothing if no round has both: a ratio's spread between
# rounds of one run, which the ratio of two medians hides
rounds_agg() {
	awk -F'\t' -v f="$1" -v s="$2" -v p="$3" -v m="$4" '$1 == f && $4 == m && $5 != "" {
			if ($2 == s) a[$3] = $5; if ($2 == p) b[$3] = $5 }
		END { for (r in a) if ((r in b) && b[r] + 0 != 0) print a[r] / b[r] }' "$METRICS" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.3f %.3f %.3f %d\n", med, v[1], v[NR], NR }'
}
rounds_med() { rounds_agg "$@" | awk '{ print $1 }'; } # FIG SYS PEER METRIC: the median ratio
# fmtr FIG SYS PEER METRIC: "0.712 [0.470–0.830]" (the per-round ratios), "n/a" if none
fmtr() {
	local a
	a=$(rounds_agg "$@")
	[ -n "$a" ] || { echo "n/a"; return; }
	awk -v a="$a" 'BEGIN { split(a, x, " ")
		if (x[4] > 1) printf "%.2fx [%.2f–%.2f]", x[1], x[2], x[3]; else printf "%.2fx", x[1] }'
}
sval() { printf '%s' "$(awk -F'\t' -v f="$1" -v s="$2" -v m="$3" '$1 == f && $2 == s && $4 == m { v = $5 } END { print v }' "$METRICS")"; }

# ---- tools ---------------------------------------------------------------------------------
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

# ---- test beds and processes, removed on exit ---------------------------------------------
BG_PIDS=()
kill_bg() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -9 -- "-$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null
	done
	BG_PIDS=()
}
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
declare -A BED6=() # beds whose rails are IPv6 only (make_bed with BED_V6=all)
haddr() { # HOST RAIL (the testbed's plan: tools/ri2n-testbed.sh --help)
	if [ -n "${BED6[${BED:-none}]:-}" ]; then echo "2001:2:0:$2::$1"; else echo "198.18.$2.$1"; fi
}
rails_list() { seq -s, -f 'r%g' 1 "$BED_RAILS"; }
# tw_reuse_on / tw_reuse_off: TCP's tw_reuse in host 1 for a row whose TCP client opens and
# closes thousands of connections to one server port (a load generator's setting): without
# it the first run's TIME_WAIT tuples leave the next run's connect() searching the ephemeral
# range. ri2n has no TIME_WAIT. The value before is kept in TW_REUSE_WAS and restored.
tw_reuse_on() {
	TW_REUSE_WAS=$(ip netns exec "$(hns 1)" sysctl -n net.ipv4.tcp_tw_reuse)
	ip netns exec "$(hns 1)" sysctl -qw net.ipv4.tcp_tw_reuse=1
}
tw_reuse_off() { ip netns exec "$(hns 1)" sysctl -qw net.ipv4.tcp_tw_reuse="${TW_REUSE_WAS:-2}"; }
# wait_port HOST PORT [KINDS]: until something listens on PORT in HOST's namespace (5 s at
# most); KINDS narrows it with ss's flags (u: ri2n-run's UDP sockets, not a TCP listener)
wait_port() {
	local n
	for n in $(seq 100); do
		[ -n "$(ip netns exec "$(hns "$1")" ss -H"${3:-}"ln "sport = :$2" 2>/dev/null)" ] && return 0
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
# (BED_V6=all: IPv6-only rails, 2001:2:0:<rail>::<host>/64)
make_bed() {
	local tag n=$2 rate=$3 mtu=${4:-1500} i v6=()
	tag=$(bed_tag "$1")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	[ -n "${BED_V6:-}" ] && v6=(--v6 "$BED_V6")
	log "   test bed $tag: 2 hosts, $n rails, rate $rate, MTU $mtu${BED_V6:+, IPv6 only} (namespaces ri2n-$tag-*)"
	if [ "$rate" = off ]; then
		tb_create --hosts 2 --rails "$n" --mtu "$mtu" "${v6[@]}" >"$RAW/bed-$tag.log" 2>&1 || { cat "$RAW/bed-$tag.log"; return 1; }
	else
		tb_create --hosts 2 --rails "$n" --rate "$rate" --mtu "$mtu" "${v6[@]}" >"$RAW/bed-$tag.log" 2>&1 || { cat "$RAW/bed-$tag.log"; return 1; }
	fi
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=$n
	BED6[$tag]=${BED_V6:+1}
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

# ---- results of the bench programs, and where the other programs are ------------------------
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

# One of ri2n's tools from the bench's build (or next to the programs given with --bin-dir)
tool_bin() {
	local d
	for d in "${bindir:+$bindir/../tools}" "$ROOT/build-bench/ri2n/tools" "$ROOT/build/tools"; do
		[ -n "$d" ] && [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

ri2n_run_bin() { tool_bin ri2n-run; }
xfer_bin() { tool_bin ri2n-xfer; }
