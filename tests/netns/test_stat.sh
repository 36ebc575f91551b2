#!/usr/bin/env bash
# ri2n-stat and the event API during a real transfer (root; 77 = skipped).
#
# While h1 streams to h2 over 2 shaped rails, `ri2n-stat --json` run in h1's
# namespace must show the sender's connection with both rails up and
# counters growing; within 3 s of rail 1 (the second rail) being black-holed
# it must show it down, and within 3 s of the heal up again (polled: on a
# loaded machine each look at ri2n-stat can take most of a second).  The
# sender's application must have received the events: connected, rail 1
# down, rail 1 up, closed.
source "$(dirname "$0")/lib.sh"
STAT=${RI2N_STAT_BIN:-$(dirname "$NT_XFER")/ri2n-stat}
[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
command -v python3 >/dev/null || nt_skip "python3 is not installed"
nt_init stat 2 2 1gbit

# field PID EXPR: evaluates EXPR over the sender's connection `c` in ri2n-stat's JSON
field() {
	ip netns exec "$(tb_ns 1)" "$STAT" --json --pid "$1" | python3 -c "
import json, sys
d = json.load(sys.stdin)
p = [p for p in d['processes'] if p['pid'] == $1]
if not p or not p[0]['connections']:
    print('none'); sys.exit(0)
c = p[0]['connections'][0]
print($2)"
}

# rails_become PID WANT: polls the rails' states until they read WANT, for at most 3 s
rails_become() {
	local states end=$((SECONDS + 3))
	while :; do
		states=$(field "$1" "' '.join(r['state'] for r in c['rails'])")
		[ "$states" = "$2" ] && return 0
		[ $SECONDS -lt $end ] || break
		sleep 0.2
	done
	echo "$states"
	return 1
}

nt_serve 2 --once
# long enough for every check below even on a slow (sanitizer) build
nt_send_bg x 1 2 --seconds 14
sleep 1.5
spid=$(nt_xfer_pid 1 send)
[ -n "$spid" ] || nt_fail "sender process not found"

# polled too: a sanitizer build on a loaded machine may not have published its first snapshot yet
states=$(rails_become "$spid" "up up") ||
	nt_fail "before the fault: rails are '$states', want 'up up': $(ip netns exec "$(tb_ns 1)" "$STAT" --pid "$spid")"
[ "$(field "$spid" "c['state']")" = established ] || nt_fail "connection not established"
a=$(field "$spid" "sum(r['tx_packets'] for r in c['rails'])")
end=$((SECONDS + 3))
while :; do
	sleep 0.6
	b=$(field "$spid" "sum(r['tx_packets'] for r in c['rails'])")
	[ "$b" != none ] && [ "$a" != none ] && [ "$b" -gt "$a" ] && break
	[ $SECONDS -lt $end ] || nt_fail "counters do not grow ($a then $b)"
	[ "$a" = none ] && a=$b
done
nt_note "both rails up, tx packets $a -> $b"

tb_fault blackhole 1 2 on
states=$(rails_become "$spid" "up down") ||
	nt_fail "3 s after the black hole: rails are '$states', want 'up down'"
cause=$(field "$spid" "c['rails'][1]['cause']")
nt_note "rail 1 down after the black hole ($cause)"

tb_fault blackhole 1 2 off
states=$(rails_become "$spid" "up up") || {
	kill -0 "$NT_PID" 2>/dev/null || nt_fail "the transfer ended before the heal could be checked (a slow machine?)"
	nt_fail "3 s after the heal: rails are '$states', want 'up up'"
}
nt_note "rail 1 up again after the heal"

wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
nt_require_verified x
ev=$NT_DIR/x.err
grep -q "conn connected" "$ev" || nt_fail "the application got no 'connected' event"
grep -q "rail=1 down" "$ev" || nt_fail "the application got no 'rail 1 down' event"
grep -q "rail=1 up" "$ev" || nt_fail "the application got no 'rail 1 up' event"
grep -q "conn closed" "$ev" || nt_fail "the application got no 'closed' event"
[ -z "$(ls /run/ri2n/"$spid".stat 2>/dev/null)" ] || nt_fail "the snapshot of an exited process was left behind"
nt_ok "ri2n-stat showed the rail go down and up; the application got connected, down, up, closed"
