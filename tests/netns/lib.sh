# shellcheck shell=bash
# tests/netns/lib.sh - shared by the namespace tests: a test bed of its own,
# ri2n-xfer servers and senders in host namespaces, and checks on what they
# printed.  Sourced; needs bash.
#
#   nt_init NAME HOSTS RAILS [RATE [OPTS]]  a bed of NAME's own (tag.sh: nt_tag NAME, in
#                                    NT_TAG), removed on exit (also on failure); OPTS go to
#                                    tb_create (--one-subnet); RATE may be ""
#   nt_serve HOST [xfer args]        ri2n-xfer serve in HOST's namespace (background)
#   nt_send NAME HOST DST [args]     ri2n-xfer send from HOST to DST's rail-1 address;
#                                    output in $NT_DIR/NAME.{out,err,csv}; returns its status
#   nt_send_bg NAME HOST DST [args]  the same in the background (pid in NT_PID)
#   nt_clock                         CLOCK_MONOTONIC seconds (the CSV's "mono" column)
#   nt_fail MSG / nt_ok MSG / nt_note MSG
set -uo pipefail

NT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tag.sh
source "$NT_ROOT/tests/netns/tag.sh"
NT_XFER=${RI2N_XFER:-$NT_ROOT/build/tools/ri2n-xfer}
NT_DIR=$(mktemp -d /tmp/ri2n-netns.XXXXXX)
[ "${NT_KEEP:-0}" = 1 ] && echo "NT_DIR=$NT_DIR" >&2
# a test that ends before nt_init (a skip, say) leaves no directory either; nt_init's
# traps replace this one and nt_cleanup removes it then
trap '[ "${NT_KEEP:-0}" = 1 ] || rm -rf "$NT_DIR"' EXIT
NT_PIDS=()
NT_FAILED=0

nt_note() { printf '  %s\n' "$*"; }
nt_ok() { printf 'ok: %s\n' "$*"; }
nt_fail() {
	printf 'FAIL: %s\n' "$*"
	NT_FAILED=1
	for f in "$NT_DIR"/*.err; do
		[ -f "$f" ] || continue
		printf -- '--- last lines of %s\n' "$(basename "$f")"
		grep -v '^xfer t=' "$f" | tail -n 15
	done
	exit 1
}

nt_skip() {
	echo "SKIP: $*"
	exit 77
}

nt_cleanup() {
	local p
	# each background command leads its own process group (setsid): kill it whole,
	# or a sender outliving `timeout` would go on in a namespace that is gone
	for p in "${NT_PIDS[@]}"; do
		kill -9 -- "-$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ "${NT_KEEP:-0}" = 1 ] || rm -rf "$NT_DIR"
}

nt_init() { # NAME HOSTS RAILS [RATE [OPTS]]
	local tag hosts=$2 rails=$3 rate=${4:-}
	local -a opts=("${@:5}")
	tag=$(nt_tag "$1") || nt_fail "no test-bed tag for '$1'"
	NT_TAG=$tag
	[ "$(id -u)" -eq 0 ] || nt_skip "namespace tests need root"
	for t in ip nft tc; do
		command -v "$t" >/dev/null || nt_skip "$t is not installed"
	done
	[ -x "$NT_XFER" ] || nt_skip "ri2n-xfer not built at $NT_XFER"
	# shellcheck source=../../tools/ri2n-testbed.sh
	source "$NT_ROOT/tools/ri2n-testbed.sh"
	set +e # the test bed library turns on -e; checks here handle failures
	tb_use "$tag" || nt_fail "bad test-bed tag '$tag' (1-6 of [a-z0-9]): it would share the default bed"
	tb_on_exit nt_cleanup
	tb_cleanup_on_exit
	if tb_exists; then
		tb_destroy >/dev/null 2>&1
	fi
	[ -z "$rate" ] || opts+=(--rate "$rate")
	tb_create --hosts "$hosts" --rails "$rails" "${opts[@]}" >/dev/null || nt_fail "test bed"
	NT_RAILS=$(seq -s, -f 'r%g' 1 "$rails")
}

# CLOCK_MONOTONIC, as ri2n-xfer's events and CSV rows: ri2n-clock beside the xfer
# (built without a sanitizer: a sanitized program took up to a second to start on
# a loaded host, moving the faults the tests time by as much), else the xfer's own.
NT_CLOCK=$(dirname "$NT_XFER")/ri2n-clock
[ -x "$NT_CLOCK" ] || NT_CLOCK=
nt_clock() { if [ -n "$NT_CLOCK" ]; then "$NT_CLOCK"; else "$NT_XFER" clock; fi; }

# nt_linked FILE REGEX: FILE is linked with a library matching REGEX (say a sanitizer runtime).
# ldd's output is read whole first: under pipefail `ldd | grep -q` fails whenever grep stops
# reading before ldd is done writing (SIGPIPE), and the test then takes the wrong branch.
nt_linked() {
	local l
	l=$(ldd "$1" 2>/dev/null) || return 1
	grep -qE "$2" <<<"$l"
}

nt_addr() { tb_addr "$1" "${2:-1}"; }

nt_serve() { # HOST [args]
	local host=$1 port=7000 a prev=
	shift
	for a in "$@"; do
		[ "$prev" = --port ] && port=$a
		prev=$a
	done
	RI2N_RAILS=$NT_RAILS setsid ip netns exec "$(tb_ns "$host")" "$NT_XFER" serve --quiet "$@" \
		>"$NT_DIR/serve$host.out" 2>"$NT_DIR/serve$host.err" &
	NT_PIDS+=($!)
	NT_PID=$!
	sleep 0.3
	# it listens once its rails' UDP port is bound: a loaded host may take longer (refused)
	for _ in $(seq 100); do
		ip netns exec "$(tb_ns "$host")" ss -Hnlu "sport = :$port" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
}

nt_send() { # NAME HOST DST [args]
	local name=$1 ns addr
	ns=$(tb_ns "$2")
	addr=$(nt_addr "$3")
	shift 3
	RI2N_RAILS=$NT_RAILS timeout -s KILL "${NT_TIMEOUT:-120}" ip netns exec "$ns" \
		"$NT_XFER" send "$addr" --csv "$NT_DIR/$name.csv" "$@" \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err"
}

nt_send_bg() { # the same, in the background, leading its own process group
	local name=$1 ns addr
	ns=$(tb_ns "$2")
	addr=$(nt_addr "$3")
	shift 3
	RI2N_RAILS=$NT_RAILS setsid timeout -s KILL "${NT_TIMEOUT:-120}" ip netns exec "$ns" \
		"$NT_XFER" send "$addr" --csv "$NT_DIR/$name.csv" "$@" \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err" &
	NT_PIDS+=($!)
	NT_PID=$!
}

# The fault's time and the heal's, and what the sender saw of a rail in between.
# T_HEAL0 is when the heal command began: the rail may work again before the
# command returns (T_HEAL), so DATA on it is only counted before T_HEAL0.  Likewise
# T_FAIL0 is when the fault command began: on a loaded host (two sanitized tests at
# once) the command and the clock's own start took longer than the detection, so the
# down event is looked for from there (or from 0.1 s before T_FAIL without it).
nt_check_outage() { # NAME RAIL T_FAIL T_HEAL [T_HEAL0] [T_FAIL0]
	local name=$1 rail=$2 tf=$3 th=$4 th0=${5:-$4} tf0=${6:-} down up used
	[ -n "$tf0" ] || tf0=$(awk -v t="$tf" 'BEGIN{printf "%.6f", t - 0.1}')
	down=$(nt_event_mono "$name" "$rail" down "$tf0")
	[ -n "$down" ] || nt_fail "$name: rail $rail never reported down after the fault"
	awk -v d="$down" -v h="$th" 'BEGIN { exit !(d < h) }' ||
		nt_fail "$name: rail $rail reported down only after the heal"
	used=$(nt_data_between "$name" "$rail" "$(awk -v d="$down" 'BEGIN{printf "%.6f", d + 0.05}')" "$th0")
	[ "$used" -eq 0 ] || nt_fail "$name: $used DATA packets on rail $rail while it was down"
	up=$(nt_event_mono "$name" "$rail" up "$th0")
	[ -n "$up" ] || nt_fail "$name: rail $rail not back in use after the heal"
	nt_note "rail $rail: down $(awk -v a="$down" -v b="$tf" 'BEGIN{printf "%.1f", (a-b)*1000}') ms after the fault, up $(awk -v a="$up" -v b="$th0" 'BEGIN{printf "%.0f", (a-b)*1000}') ms after the heal began (the command took $(awk -v a="$th" -v b="$th0" 'BEGIN{printf "%.0f", (a-b)*1000}') ms)"
}

# A server in host 2 and a timed stream from host 1 to it, in the background (NT_PID).
# Returns once the stream runs (its CSV's first interval, 0.1 s in): the callers time
# their faults from here, and on a loaded host (two sanitized tests at once) the
# programs took up to 2 s to start, leaving too little of the stream after a heal.
nt_timed_transfer() { # NAME SECONDS [xfer args]
	local name=$1 secs=$2 i
	shift 2
	nt_serve 2
	nt_send_bg "$name" 1 2 --seconds "$secs" "$@"
	for i in $(seq 300); do
		[ "$(wc -l <"$NT_DIR/$name.csv" 2>/dev/null || echo 0)" -ge 2 ] && return 0
		kill -0 "$NT_PID" 2>/dev/null || return 0 # its failure is the caller's to report
		sleep 0.1
	done
	nt_fail "$name: the stream did not start within 30 s: $(tail -n 3 "$NT_DIR/$name.err")"
}

# A timed stream from host 1 to host 2 (nt_timed_transfer x 4) begun while both hosts' r3
# (ri2n rail 2) have no address; then the receiver's address comes back, 0.3 s later the
# sender's (`ip addr add` with ADD_FLAGS).  Checks every byte, that rail 2 carried nothing
# before, both logs' "new address ... offered" lines and the sender's up event "new rail".
# Sets ta and tb0 (the clock as the receiver's and the sender's add began) and after (DATA
# packets on rail 2 since tb0).
nt_rail_comes() { # PREFIXLEN [ADD_FLAGS...]
	local plen=$1 ns1 ns2 a1 a2 f
	shift
	ns1=$(tb_ns 1)
	ns2=$(tb_ns 2)
	a1=$(tb_addr 1 3)
	a2=$(tb_addr 2 3)
	ip -n "$ns1" addr del "$a1/$plen" dev r3 || nt_fail "could not delete $a1 from r3"
	ip -n "$ns2" addr del "$a2/$plen" dev r3 || nt_fail "could not delete $a2 from r3"
	nt_timed_transfer x 4
	sleep 1.2
	[ "$(nt_data_between x 2 0 1e12)" -eq 0 ] || nt_fail "DATA on rail 2 before r3 had an address"
	ta=$(nt_clock)
	ip -n "$ns2" addr add "$a2/$plen" dev r3 "$@" || nt_fail "could not add $a2 to r3"
	sleep 0.3
	tb0=$(nt_clock)
	ip -n "$ns1" addr add "$a1/$plen" dev r3 "$@" || nt_fail "could not add $a1 to r3"
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	for f in x:"$a1" serve2:"$a2"; do
		grep -qF "rail 2 (r3 ${f#*:}/$plen): new address: in use, offered to 1 connection" \
			"$NT_DIR/${f%%:*}.err" ||
			nt_fail "${f%%:*}: the log does not say rail 2 was opened on ${f#*:} and offered"
	done
	grep -q '^xfer event .* rail=2 up .*cause="new rail"' "$NT_DIR/x.err" ||
		nt_fail "no rail 2 up event with the cause \"new rail\""
	after=$(nt_data_between x 2 "$tb0" 1e12)
}

# The pid of the ri2n-xfer running in HOST's namespace with ROLE (send|serve).
nt_xfer_pid() { # HOST ROLE
	local p
	for p in $(ip netns pids "$(tb_ns "$1")"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "ri2n-xfer $2" && { echo "$p"; return; }
	done
}

# The FIELDs of PID's first listener in host HOST, as ri2n-stat (binary STAT) publishes
# them, on one line; "none" for a field it lacks, or for all when PID has no listener.
nt_listener() { # STAT HOST PID FIELD...
	local stat=$1 host=$2 pid=$3
	shift 3
	ip netns exec "$(tb_ns "$host")" "$stat" --json --pid "$pid" | python3 -c '
import json, sys
pid = int(sys.argv[1])
p = [p for p in json.load(sys.stdin)["processes"] if p["pid"] == pid]
l = p[0]["listeners"][0] if p and p[0]["listeners"] else {}
print(" ".join(str(l.get(k, "none")) for k in sys.argv[2:]))' "$pid" "$@"
}

# The verdict line of a transfer, "yes" or "no".
nt_verified() { # FILE ROLE
	awk -v r="$2" '$1=="xfer" && $2=="done" && $3=="role="r {
		for (i = 1; i <= NF; i++) if ($i ~ /^verified=/) { sub("verified=", "", $i); print $i } }' "$1" | tail -n 1
}

nt_field() { # FILE KEY: the value of KEY= on the "done role=send|recv" line
	awk -v k="$2" '$1=="xfer" && $2=="done" {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2) } }' "$1" | head -n 1
}

nt_rail_field() { # FILE RAIL KEY: from the per-rail summary line
	awk -v r="rail=$2" -v k="$3" '$1=="xfer" && $2==r {
		for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$1"
}

# The monotonic clock at a transfer's t=0 (its events' times count from there).
nt_mono0() { # NAME
	awk -F, 'NR==2 {printf "%.6f", $3 - $2}' "$NT_DIR/$1.csv"
}

# The first "xfer event" for RAIL going STATE, as an absolute CLOCK_MONOTONIC time.
nt_event_mono() { # NAME RAIL STATE [AFTER_MONO]
	local err=$NT_DIR/$1.err
	local t0
	t0=$(nt_mono0 "$1")
	awk -v r="rail=$2" -v s="$3" -v t0="$t0" -v after="${4:-0}" '$1=="xfer" && $2=="event" && $4==r && $5==s {
		split($3, a, "="); m = t0 + a[2]; if (m >= after) { printf "%.6f\n", m; exit } }' "$err"
}

# A CSV row covers the time since the row before it (nominally 100 ms, longer
# when the sender was blocked in a write or starved of CPU): the two functions
# below take only rows whose whole interval lies between the two times.

# DATA packets the sender put on RAIL in intervals wholly between two times.
nt_data_between() { # NAME RAIL FROM_MONO TO_MONO
	awk -F, -v r="$2" -v from="$3" -v to="$4" 'NR > 1 && $1 == "send" {
		if (prev != "" && prev >= from && $3 <= to && 7 + r <= NF) s += $(7 + r) # data: one column a rail
		prev = $3 } END { print s + 0 }' "$NT_DIR/$1.csv"
}

# The lowest receiver throughput per interval between two times, in Mbit/s.
nt_min_mbps_between() { # NAME FROM_MONO TO_MONO
	awk -F, -v from="$2" -v to="$3" 'NR > 1 && $1 == "send" {
		if (prev != "" && prev >= from && $3 <= to && (min == "" || $4 < min)) min = $4
		prev = $3 } END { print (min == "" ? -1 : min) }' "$NT_DIR/$1.csv"
}

nt_require_verified() { # NAME
	local out=$NT_DIR/$1.out
	[ "$(nt_verified "$out" send)" = yes ] || nt_fail "$1: transfer not verified: $(grep done "$out")"
}

# HOST's link-local address on r<RAIL>, once duplicate detection is over (up to 5 s).
nt_link_local() { # HOST RAIL
	local ns a
	ns=$(tb_ns "$1")
	for _ in $(seq 50); do
		a=$(ip -n "$ns" -6 -o addr show dev "r$2" scope link)
		[[ -n $a && $a != *tentative* ]] && break
		sleep 0.1
	done
	[[ $a == *tentative* ]] && nt_fail "h$1's r$2 link-local address still tentative"
	awk '{ sub("/.*", "", $4); print $4; exit }' <<<"$a"
}
