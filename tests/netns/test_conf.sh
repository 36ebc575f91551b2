#!/usr/bin/env bash
# The system configuration file in a real program (root; 77 = skipped).
#
# A sender runs ri2n-xfer with RI2N_CONF naming a file that picks one rail
# of two (RI2N_RAILS = r1) and a smaller MTU (RI2N_MTU = 1200), and with
# neither variable in its environment.  While it streams to a server on
# both rails, ri2n-stat must show the sender's connection on that one rail
# with 1172-byte datagrams, ri2n-info with the same RI2N_CONF must give
# both values from the file's lines, and the transfer must be verified.
#
# Environment: RI2N_XFER, RI2N_STAT_BIN, RI2N_INFO_BIN (the programs to run).
source "$(dirname "$0")/lib.sh"
STAT=${RI2N_STAT_BIN:-$(dirname "$NT_XFER")/ri2n-stat}
INFO=${RI2N_INFO_BIN:-$(dirname "$NT_XFER")/ri2n-info}
[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
[ -x "$INFO" ] || nt_fail "ri2n-info not built at $INFO"
command -v python3 >/dev/null || nt_skip "python3 is not installed"
export RI2N_CONF=/dev/null # the server: no file (the sender names its own)
nt_init conf 2 2

conf=$NT_DIR/ri2n.conf
printf '# a site that keeps ri2n off its second network\nRI2N_RAILS = r1\nRI2N_MTU = 1200\n' >"$conf"
chmod 644 "$conf"

# the file as ri2n-info reads it: both lines, with their numbers
info=$(RI2N_CONF=$conf env -u RI2N_RAILS -u RI2N_MTU "$INFO" 2>&1)
echo "$info" | grep -Eq "^RI2N_RAILS +r1 +$conf:2\$" || nt_fail "ri2n-info: no 'RI2N_RAILS r1 $conf:2': $info"
echo "$info" | grep -Eq "^RI2N_MTU +1200 +$conf:3\$" || nt_fail "ri2n-info: no 'RI2N_MTU 1200 $conf:3': $info"

nt_serve 2 --once
RI2N_CONF=$conf setsid timeout -s KILL 60 env -u RI2N_RAILS -u RI2N_MTU RI2N_STAT_MS=50 \
	ip netns exec "$(tb_ns 1)" "$NT_XFER" send "$(nt_addr 2)" --seconds 3 \
	>"$NT_DIR/x.out" 2>"$NT_DIR/x.err" &
NT_PIDS+=($!)
NT_PID=$!

# the sender's connection in ri2n-stat: its rails and their datagram size, polled
got=none
end=$((SECONDS + 5))
while [ $SECONDS -lt $end ]; do
	sleep 0.3
	spid=$(nt_xfer_pid 1 send)
	[ -n "$spid" ] || continue
	got=$(ip netns exec "$(tb_ns 1)" "$STAT" --json --pid "$spid" 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
c = [c for p in d['processes'] for c in p['connections'] if c['state'] == 'established']
print(' '.join('%s/%s' % (r.get('local', '?'), r['dgram']) for r in c[0]['rails']) if c else 'none')" 2>/dev/null)
	[ "$got" != none ] && [ -n "$got" ] && break
done
case $got in
*/1172) [ "$(echo "$got" | wc -w)" -eq 1 ] || nt_fail "ri2n-stat: rails '$got', want one, of 1172-byte datagrams" ;;
*) nt_fail "ri2n-stat: rails '$got', want one, of 1172-byte datagrams" ;;
esac
nt_note "ri2n-stat: the sender's connection has rails '$got'"

wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
nt_require_verified x
nt_ok "a rail list and an MTU from the configuration file: in ri2n-info, ri2n-stat and the transfer"
