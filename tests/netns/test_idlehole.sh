#!/usr/bin/env bash
# A rail black-holed while many connections idle: the first write on any of them
# afterwards does not go onto the dead rail (root; 77 = skipped).
#
# ri2n-conns opens 300 connections from h1 to h2 over 2 unshaped rails (a hello
# both ways on each) and holds them idle 3 s: past the idle time (1 s), all but
# each process's keeper send nothing of their own.  Then rail 2 is black-holed
# in its switch (both ways) and ri2n-conns waits until the connection that
# reported it down has it down both ways, in both processes.  Then 12
# connections spread over the set each write 8 pattern bytes, one at a time,
# and wait for the server's echo, checked byte for byte.  Evidence, not time:
# by both processes' counters (ri2n_stats), neither a probe nor its echo was
# sent on the dead rail, resent, or waited for a retransmission timeout.
source "$(dirname "$0")/lib.sh"
CONNS=${RI2N_CONNS_BIN:-$(dirname "$NT_XFER")/../bench/ri2n-conns}
[ -x "$CONNS" ] || nt_skip "ri2n-conns not built at $CONNS"
nt_init idlehole 2 2
n=300 probes=12 port=7610

RI2N_RAILS=$NT_RAILS setsid ip netns exec "$(tb_ns 2)" "$CONNS" serve --port $port \
	>"$NT_DIR/srv.out" 2>"$NT_DIR/srv.err" &
NT_PIDS+=($!)
sleep 0.5
hole="$NT_ROOT/tools/ri2n-testbed.sh --tag $NT_TAG fault blackhole 1 2 on"
RI2N_RAILS=$NT_RAILS setsid timeout -s KILL 90 ip netns exec "$(tb_ns 1)" "$CONNS" run \
	"$(nt_addr 2 1)" --port $port --conns $n --busy 0 --idle 3 --probes $probes \
	--hole-cmd "$hole" >"$NT_DIR/cli.out" 2>"$NT_DIR/cli.err" &
cli=$!
NT_PIDS+=("$cli")
wait "$cli"
rc=$?
grep '^conns hole\|^conns done' "$NT_DIR/cli.out" | sed 's/^/  /'
line=$(grep '^conns hole' "$NT_DIR/cli.out")
[ -n "$line" ] || nt_fail "no probe verdict (exit status $rc): $(grep -v warning "$NT_DIR/cli.err" | tail -3)"
for want in "probes=$probes" "echoed=$probes" dead_rail_data=0 retransmits=0 rto=0 \
	"srv_probes=$probes" srv_dead_rail_data=0 srv_retransmits=0 srv_rto=0 verdict=ok; do
	[[ " $line " == *" $want "* ]] ||
		nt_fail "after the black hole, not $want: $(grep '^conns probe' "$NT_DIR/cli.out" | head -n $probes)"
done
[ $rc -eq 0 ] || nt_fail "ri2n-conns exit status $rc: $(grep -v warning "$NT_DIR/cli.err" | tail -3)"
grep -q "^conns done .*established=$n failed=0 " "$NT_DIR/cli.out" ||
	nt_fail "not every connection lived: $(grep '^conns done' "$NT_DIR/cli.out")"
seen=$(sed -n 's/.* seen_down=\([0-9]*\) .*/\1/p' <<<"$line")
nt_ok "$n idle connections, rail 2 black-holed: $probes first writes and their echoes verified," \
	"none on the dead rail or resent ($seen of $probes showed the rail down before writing)"
