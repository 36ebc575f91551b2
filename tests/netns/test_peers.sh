#!/usr/bin/env bash
# Connections to one peer share its rail monitor, in the engine (root; 77 = skipped).
#
# ri2n-conns opens 300 connections from h1 to h2 over 2 unshaped rails, each
# carrying a hello both ways, then holds them idle.  Once all are quiet the
# rails carry a few keepalives a second for the whole peer, not a few per
# connection: over 3 s, fewer than 300 packets both ways on h1's rails
# (without the shared monitor: 300 connections x 2 rails x 2 ways x 1/s at
# the idle pace = 3,600).  Then rail 2 is black-holed while all idle; when
# the idle phase ends, 100 of them each stream 1 MiB, verified byte for
# byte by the server, and every connection is still open.
source "$(dirname "$0")/lib.sh"
CONNS=${RI2N_CONNS_BIN:-$(dirname "$NT_XFER")/../bench/ri2n-conns}
[ -x "$CONNS" ] || nt_skip "ri2n-conns not built at $CONNS"
nt_init peers 2 2
n=300 port=7600

rail_pkts() { # rx + tx packets on h1's rails
	ip netns exec "$(tb_ns 1)" cat /proc/net/dev | awk '$1 ~ /^r[12]:$/ { s += $3 + $11 } END { print s + 0 }'
}

RI2N_RAILS=$NT_RAILS ip netns exec "$(tb_ns 2)" "$CONNS" serve --port $port \
	>"$NT_DIR/srv.out" 2>"$NT_DIR/srv.err" &
srv=$!
NT_PIDS+=("$srv")
sleep 0.5
RI2N_RAILS=$NT_RAILS ip netns exec "$(tb_ns 1)" "$CONNS" run "$(nt_addr 2 1)" --port $port \
	--conns $n --busy 100 --bytes 1M --idle 14 >"$NT_DIR/cli.out" 2>"$NT_DIR/cli.err" &
cli=$!
NT_PIDS+=("$cli")
# the server holds two descriptors per connection it accepted
end=$((SECONDS + 30))
while [ "$(ls "/proc/$srv/fd" 2>/dev/null | wc -l)" -lt $((2 * n)) ]; do
	kill -0 "$cli" 2>/dev/null || nt_fail "the client ended early: $(tail -3 "$NT_DIR/cli.err")"
	[ $SECONDS -lt $end ] || nt_fail "the server holds $(ls "/proc/$srv/fd" | wc -l) descriptors after 30 s"
	sleep 0.2
done
sleep 3 # every connection idle past 1 s: the members are quiet
a=$(rail_pkts)
sleep 3
b=$(rail_pkts)
nt_note "$n idle connections: $((b - a)) packets on h1's rails in 3 s"
[ $((b - a)) -lt 300 ] || nt_fail "$n idle connections sent $((b - a)) packets in 3 s: each keeps its own rails"
tb_fault blackhole 1 2 on
wait "$cli"
rc=$?
grep '^conns done' "$NT_DIR/cli.out" | sed 's/^/  /'
[ $rc -eq 0 ] || nt_fail "ri2n-conns exit status $rc: $(grep -v warning "$NT_DIR/cli.err" | tail -3)"
grep -q "^conns done .*established=$n failed=0 .*verified=yes bad=0" "$NT_DIR/cli.out" ||
	nt_fail "not every connection lived and verified: $(grep '^conns done' "$NT_DIR/cli.out")"
nt_ok "$n idle connections quiet together; after a black hole while idle, 100 streamed 1 MiB each, verified"
