#!/usr/bin/env bash
# Hostile traffic at a ri2n server during a verified transfer (root; 77 = skipped).
#
#   tests/netns/test_hostile.sh SCENARIO
#
#   flood   h1 streams to h2 for 8 s over 2 shaped rails while a third host, h3,
#           floods h2's listening port on both rails with random garbage,
#           forged packets (right version, connection ids nobody holds) and a
#           SYN-style flood of INITs and COOKIE_ECHOs with made-up cookies.
#           Every byte must arrive verified, the server must accept no
#           connection but the real one, count the drops, and its resident
#           memory may grow by less than 20 MB while the flood lasts.
#   mangle  h1 streams to h2 for 8 s with a cluster key (RI2N_KEY) at both ends while
#           an attacker in each rail's switch re-sends mangled copies of h1's
#           packets (bits flipped, cut short, lengthened, replayed) to h2 with
#           h1's own addresses and ports.  Every byte must arrive verified and
#           h2's connection must count the forgeries as authentication drops.
#
# The streams last 8 s whatever the build's speed (the attack begins 1 s in); 800 MiB took
# 3.5 s in a release build and 30 to 40 s under TSan, checking nothing more. The counters
# come from ri2n-stat's snapshots, slower and rarer in a sanitizer build: with 5 s, one TSan
# run saw none of the flood's drops.
#
# Environment: RI2N_XFER, RI2N_FLOOD and RI2N_MANGLE (the attack tools), RI2N_STAT_BIN,
# RI2N_FLOOD_PPS.
source "$(dirname "$0")/lib.sh"
FLOOD=${RI2N_FLOOD:-$(dirname "$NT_XFER")/../tests/ri2n_flood}
MANGLE=${RI2N_MANGLE:-$(dirname "$NT_XFER")/../tests/ri2n_mangle}
STAT=${RI2N_STAT_BIN:-$(dirname "$NT_XFER")/ri2n-stat}
PPS=${RI2N_FLOOD_PPS:-20000}
scenario=${1:?usage: test_hostile.sh flood|mangle}

[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
command -v python3 >/dev/null || nt_skip "python3 is not installed"

rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null; }

scenario_flood() {
	local spid base peak=0 rss fpid drops accepts t_end
	[ -x "$FLOOD" ] || nt_skip "ri2n_flood not built at $FLOOD"
	nt_init hostl 3 2 1gbit
	nt_serve 2 --once
	spid=$(nt_xfer_pid 2 serve)
	[ -n "$spid" ] || nt_fail "server process not found"
	nt_send_bg x 1 2 --seconds 8
	local xpid=$NT_PID
	# the connection is up and its buffers are filled before the baseline is taken
	sleep 1
	kill -0 "$xpid" 2>/dev/null || nt_fail "the transfer ended before the flood began: $(cat "$NT_DIR/x.out")"
	base=$(rss_kb "$spid")
	[ -n "$base" ] || nt_fail "server's VmRSS not readable"
	setsid ip netns exec "$(tb_ns 3)" "$FLOOD" mix 7000 100 "$PPS" "$(nt_addr 2 1)" "$(nt_addr 2 2)" \
		>"$NT_DIR/flood.out" 2>"$NT_DIR/flood.err" &
	fpid=$!
	NT_PIDS+=("$fpid")
	# sample the server's memory while the transfer lasts, its counters now and then
	t_end=$(($(date +%s) + ${NT_TIMEOUT:-120}))
	local i=0 d a
	drops=none accepts=none
	while kill -0 "$xpid" 2>/dev/null && [ "$(date +%s)" -lt "$t_end" ]; do
		rss=$(rss_kb "$spid")
		[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
		if [ $((i++ % 5)) = 4 ]; then
			d=$(nt_listener "$STAT" 2 "$spid" drops accepts 2>/dev/null)
			# once the server is done with its one connection it is gone: keep the last answer
			if [ -n "$d" ] && [ "${d%% *}" != none ]; then
				read -r drops accepts <<<"$d"
			fi
		fi
		sleep 0.1
	done
	kill -TERM -- "-$fpid" 2>/dev/null
	wait "$fpid"
	wait "$xpid" || nt_fail "transfer failed under the flood: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/serve2.out" recv)" = yes ] || nt_fail "the server did not verify what it received"
	grep -q "^flood sent=" "$NT_DIR/flood.out" || nt_fail "the flood tool failed: $(cat "$NT_DIR/flood.err")"
	local sent
	sent=$(sed -n 's/^flood sent=\([0-9]*\).*/\1/p' "$NT_DIR/flood.out")
	[ "$sent" -gt 1000 ] || nt_fail "the flood sent only $sent datagrams"
	[ "$drops" != none ] && [ "$drops" -gt 0 ] ||
		nt_fail "the server's listener counted no drops ($drops) under $sent hostile datagrams"
	[ "$accepts" = 1 ] || nt_fail "the server accepted $accepts connections; only one was real"
	nt_note "flood: $sent datagrams ($(sed -n 's/.*bytes=//p' "$NT_DIR/flood.out") bytes) from h3; listener drops seen: $drops"
	nt_note "server RSS: $((base / 1024)) MB before the flood, peak $((peak / 1024)) MB during it (+$(((peak - base) / 1024)) MB)"
	[ $((peak - base)) -lt $((20 * 1024)) ] ||
		nt_fail "the server's memory grew by $(((peak - base) / 1024)) MB under the flood (limit 20 MB)"
	nt_ok "flood: an 8 s stream verified at $(nt_field "$NT_DIR/x.out" mbps) Mbit/s while $sent hostile datagrams hit the port"
}

# conn PID EXPR: EXPR over the first connection `c` of PID (in h2) in ri2n-stat's JSON
conn() {
	ip netns exec "$(tb_ns 2)" "$STAT" --json --pid "$1" | python3 -c "
import json, sys
d = json.load(sys.stdin)
p = [p for p in d['processes'] if p['pid'] == $1]
if not p or not p[0]['connections']:
    print('none'); sys.exit(0)
c = p[0]['connections'][0]
print($2)"
}

scenario_mangle() {
	local spid xpid r p pids=() d auth=none keyed=none sent
	[ -x "$MANGLE" ] || nt_skip "ri2n_mangle not built at $MANGLE"
	nt_init mangle 2 2 1gbit
	RI2N_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	export RI2N_KEY
	nt_serve 2 --once
	spid=$(nt_xfer_pid 2 serve)
	[ -n "$spid" ] || nt_fail "server process not found"
	nt_send_bg x 1 2 --seconds 8
	xpid=$NT_PID
	sleep 1
	kill -0 "$xpid" 2>/dev/null || nt_fail "the transfer ended before the attack began: $(cat "$NT_DIR/x.out")"
	for r in 1 2; do
		setsid ip netns exec "$(tb_sw_ns "$r")" "$MANGLE" h1 h2 "$(nt_addr 2 "$r")" 7000 100 20000 \
			>"$NT_DIR/mangle$r.out" 2>"$NT_DIR/mangle$r.err" &
		pids+=($!)
		NT_PIDS+=($!)
	done
	# the server's counters while it lives (it leaves with its one connection)
	local t_end=$(($(date +%s) + ${NT_TIMEOUT:-120}))
	while kill -0 "$xpid" 2>/dev/null && [ "$(date +%s)" -lt "$t_end" ]; do
		d=$(conn "$spid" "c.get('drops_auth', 'missing'), c.get('keyed', 'missing')" 2>/dev/null)
		[ -n "$d" ] && [ "$d" != none ] && read -r auth keyed <<<"$d"
		sleep 0.3
	done
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; wait "$p"; done
	wait "$xpid" || nt_fail "transfer failed under the attack: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/serve2.out" recv)" = yes ] || nt_fail "the server did not verify what it received"
	for r in 1 2; do
		grep -q "^mangle seen=" "$NT_DIR/mangle$r.out" || nt_fail "the attacker on rail $r failed: $(cat "$NT_DIR/mangle$r.err")"
		sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' "$NT_DIR/mangle$r.out")
		[ "$sent" -gt 1000 ] || nt_fail "the attacker on rail $r injected only $sent copies: $(cat "$NT_DIR/mangle$r.out")"
		nt_note "rail $r: $(sed 's/^mangle //' "$NT_DIR/mangle$r.out")"
		[ -s "$NT_DIR/mangle$r.err" ] && nt_note "rail $r: $(cat "$NT_DIR/mangle$r.err")"
	done
	[ "$auth" != missing ] && [ "$keyed" != missing ] ||
		nt_fail "ri2n-stat --json has no drops_auth or keyed for the connection (drops_auth=$auth keyed=$keyed): is the cluster key in the library?"
	[ "$auth" != none ] || nt_fail "ri2n-stat never showed the server's connection"
	[ "$keyed" = 1 ] || nt_fail "the server's connection is not keyed (keyed=$keyed)"
	[ "$auth" != none ] && [ "$auth" -gt 0 ] || nt_fail "the server counted no authentication drops ($auth)"
	nt_ok "mangle: an 8 s stream verified at $(nt_field "$NT_DIR/x.out" mbps) Mbit/s with a cluster key while forged copies arrived; $auth dropped for authentication"
}

case $scenario in
flood | mangle) "scenario_$scenario" ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
