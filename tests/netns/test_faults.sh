#!/usr/bin/env bash
# Failure injection on real processes over veth rails in network namespaces.
#
#   tests/netns/test_faults.sh SCENARIO      (root; exit 77 = skipped)
#
# Each scenario runs a verified ri2n-xfer transfer while a fault happens and
# checks that every byte arrived and how ri2n reacted, from its own events
# and per-rail counters (ri2n-xfer prints them), never from wall-clock speed.
#
#   blackhole   one of 2 rails silently black-holed, then healed
#   cable       the cable of the rail the connection was opened on pulled, then back: the
#               rail is down with the cause "link down" (the kernel's event)
#   loss        1%, 5% and 20% random loss on every rail
#   degraded    a 1 Gbit/s and a 100 Mbit/s rail
#   flap        a rail going down and up every 200 ms for 5 s
#   dark-short  every rail black-holed for 2 s (< dead-peer timeout): completes
#   dark-long   every rail black-holed past the dead-peer timeout: both ends fail
#   stopped     the receiving process stopped (SIGSTOP) for 600 ms, three times: every
#               byte verified, and on resuming it finds no rail silent (its late timer
#               reads the packets waiting in the rails' sockets before the verdict); the
#               sender, which heard nothing meanwhile, may fail them, and the receive
#               count may then judge the sender's uneven return to its rails (noted)
#   kill        the receiving process killed: the sender fails within the timeout (at
#               once, in fact: h2 answers with port unreachable, see test_icmp.sh dead-peer)
#   restart     next to a healthy stream, one server killed and another killed and
#               started again on its port (h2 sends no ICMP destination unreachable,
#               which would tell the dead server's clients at once, see test_icmp.sh
#               dead-peer): the restarted one's client gets a
#               stateless reset ("connection reset", long before the 30 s dead-peer
#               timeout); the healthy stream arrives verified, none of its rails fails
#               from the kills on (three streams starting together on two shaped
#               rails may fail one by count for a few ms as slow start fills the
#               shared queues: noted, not failed; sharing rails is issue 17's)
#   restart-keyed  the same with a cluster key at every end: the restarted server's
#               listener cannot check the client's sealed datagrams, and its reset
#               is taken because its tag names the server's rail address
#   budget      a server allowed 2 connections (RI2N_MAX_CONNS=2): a third client is
#               refused at once (ECONNREFUSED, not the 30 s connect timeout), the
#               server's accept says EMFILE and its log says why, the two verified;
#               once they closed, a fourth is admitted at once (lingering holds no budget)
#   four-rails  4 rails, two failing at different times
#   mesh        4 hosts, a stream between every pair, one rail's switch failing
#   dup         duplication on one rail
#   iface-gone  a rail's interface deleted mid-transfer: that rail fails, nothing crashes
#   addr-gone   rail 1's address deleted at the sender mid-transfer, then added back: the
#               rail is down at once with the cause "address removed" (the kernel's
#               event, not a failed send or the receive count), no DATA on it meanwhile,
#               and it carries DATA again after the address returns
#   addr-change rail 1's address at the sender replaced mid-transfer, twice: a new one
#               added and the old deleted, then that one deleted and a third added later;
#               each time the rail is down for the old one, its sockets are bound to the
#               new one, the peer told (RAILS), and it carries DATA again; every byte verified
#   rail-new    3 rails, r3 without its address at both ends when the transfer starts: the
#               addresses added mid-transfer (receiver first), the engine opens the rail,
#               offers it to the live connection (RAILS) and it carries DATA; every byte
#               verified
#   stream      256 MiB both ways at once over 2 rails (the engine's basic test)
#   backup      RI2N_RAILS=r1,r2:backup at both ends: no DATA on r2 while r1 works; r1
#               black-holed: the stream goes on over r2 at once; healed: back on r1
#   one-subnet  two rails in one subnet on one bridge (testbed --one-subnet): each
#               interface carries its share of the frames (the kernel told to send each
#               rail's on its own interface), r2 black-holed and healed as in blackhole
source "$(dirname "$0")/lib.sh"

scenario=${1:?usage: test_faults.sh SCENARIO}
# a bed of its own per scenario (nt_init makes its tag of this name: tests/netns/tag.sh)
tag=faults-$scenario

# Frames HOST's r1 and r2 sent (tx) or received (rx) so far, "r1 r2" (/proc/net/dev).
frames() { # HOST tx|rx
	tb_exec "$1" cat /proc/net/dev | awk -v f="$([ "$2" = tx ] && echo 11 || echo 3)" '
		{ sub(/:/, " ") } $1 == "r1" { a = $f } $1 == "r2" { b = $f } END { print a + 0, b + 0 }'
}

# Runs a timed transfer from h1 to h2 while `fault_script` runs.
# hole_during NAME RAIL SECS: black-holes host 1's RAIL for SECS during transfer NAME
# (nt_timed_transfer), then waits for it and checks every byte; sets tf0 (just before the
# fault), tf (the fault in place), th0 (just before the heal) and th (the heal in place)
hole_during() {
	tf0=$(nt_clock)
	tb_fault blackhole 1 "$2" on
	tf=$(nt_clock)
	sleep "$3"
	th0=$(nt_clock)
	tb_fault blackhole 1 "$2" off
	th=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/$1.out")"
	nt_require_verified "$1"
}

case $scenario in
stream)
	nt_init "$tag" 2 2
	nt_serve 2 --once
	nt_send stream 1 2 256M --duplex || nt_fail "duplex transfer failed: $(cat "$NT_DIR/stream.out")"
	nt_require_verified stream
	[ "$(nt_verified "$NT_DIR/stream.out" recv-back)" = yes ] || nt_fail "return stream not verified"
	[ "$(nt_verified "$NT_DIR/serve2.out" recv)" = yes ] || nt_fail "server did not verify"
	for r in 0 1; do
		[ "$(nt_rail_field "$NT_DIR/stream.out" $r tx_data)" -gt 1000 ] ||
			nt_fail "rail $r carried almost nothing: striping is broken"
	done
	nt_ok "256 MiB each way at once, every byte verified: $(nt_field "$NT_DIR/stream.out" mbps) Mbit/s per direction"
	;;
blackhole | cable)
	nt_init "$tag" 2 2 1gbit
	rail=1 # testbed rail 2 (r2), ri2n rail 1
	[ "$scenario" = cable ] && rail=0 # the rail the handshake ran on
	nt_timed_transfer x 8
	sleep 2
	# times are taken once the fault / heal is in place (applying one takes ~10 ms), but for
	# a pulled cable, which the kernel's link event reports before the command returns
	tf0=$(nt_clock)
	tf=$tf0
	if [ "$scenario" = cable ]; then tb_fault cable 1 $((rail + 1)) down; else tb_fault blackhole 1 $((rail + 1)) on; fi
	[ "$scenario" = cable ] || tf=$(nt_clock)
	sleep 2.5
	th0=$(nt_clock)
	if [ "$scenario" = cable ]; then tb_fault cable 1 $((rail + 1)) up; else tb_fault blackhole 1 $((rail + 1)) off; fi
	th=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	nt_check_outage x $rail "$tf" "$th" "$th0" "$tf0"
	# the kernel's link event, not a failed send or the receive count, takes the rail out
	[ "$scenario" = blackhole ] || grep -q "^xfer event .* rail=$rail down .*cause=\"link down\"" "$NT_DIR/x.err" ||
		nt_fail "no rail $rail down event with the cause \"link down\""
	nt_ok "$scenario: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes), rail left out and taken back"
	;;
one-subnet)
	nt_init "$tag" 2 2 1gbit --one-subnet
	nt_timed_transfer x 8
	sleep 1
	a1=$(frames 1 tx); b2=$(frames 2 rx)
	sleep 1
	z1=$(frames 1 tx); y2=$(frames 2 rx)
	hole_during x 2 1.5
	# in the second before the fault: frames h1 sent on r1 and r2, and h2 received on them
	read -r s1 s2 <<<"$(awk -v a="$a1" -v z="$z1" 'BEGIN { split(a, p); split(z, q); print q[1] - p[1], q[2] - p[2] }')"
	read -r r1 r2 <<<"$(awk -v a="$b2" -v z="$y2" 'BEGIN { split(a, p); split(z, q); print q[1] - p[1], q[2] - p[2] }')"
	nt_note "frames in the second before the fault: h1 sent $s1 on r1, $s2 on r2; h2 received $r1 on r1, $r2 on r2"
	# the stripes are even: each interface has well over a quarter unless the kernel sent
	# both rails' datagrams out of the subnet's first interface
	for n in "$s1:$s2" "$s2:$s1" "$r1:$r2" "$r2:$r1"; do
		[ "${n%:*}" -gt $(( (${n%:*} + ${n#*:}) / 4 )) ] ||
			nt_fail "an interface carried under a quarter of the frames (h1 tx $s1/$s2, h2 rx $r1/$r2)"
	done
	nt_check_outage x 1 "$tf" "$th" "$th0" "$tf0"
	nt_ok "one-subnet: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes) over two rails in 198.18.1.0/24, r2 left out and taken back"
	;;
backup)
	nt_init "$tag" 2 2 1gbit
	NT_RAILS=r1,r2:backup
	nt_timed_transfer x 7
	t0=$(nt_clock)
	sleep 2.5
	hole_during x 1 2
	# ri2n rail 0 is r1, rail 1 the backup r2 (the CSV's intervals wholly inside each span)
	before=$(nt_data_between x 1 "$t0" "$tf")
	before0=$(nt_data_between x 0 "$t0" "$tf")
	during=$(nt_data_between x 1 "$(awk -v t="$tf" 'BEGIN{printf "%.6f", t + 0.2}')" "$th0")
	# The stream must not stop once the sender took r1 down (its event, on the CSV's clock).
	# Before that verdict r1 stalls and lends the backup its packets; the verdict itself
	# came 0.05-0.35 s after the fault in both this and earlier builds (the backup carries
	# few packets to compare with), and an interval in that window may be empty.
	tv=$(sed -n 's/^xfer event t=\([0-9.]*\) rail=0 down.*/\1/p' "$NT_DIR/x.err" | head -n 1)
	[ -n "$tv" ] || nt_fail "the sender never took r1 down during its black hole"
	tdown=$(awk -F, -v t="$tv" 'NR == 2 { printf "%.6f", $3 - $2 + t }' "$NT_DIR/x.csv")
	detect_ms=$(awk -v a="$tf" -v b="$tdown" 'BEGIN { printf "%d", (b - a) * 1000 }')
	((detect_ms <= 1000)) || nt_fail "r1 was taken down ${detect_ms} ms after its black hole began"
	low=$(nt_min_mbps_between x "$(awk -v t="$tdown" 'BEGIN{printf "%.6f", t + 0.1}')" "$th0")
	after0=$(nt_data_between x 0 "$(awk -v t="$th" 'BEGIN{printf "%.6f", t + 0.5}')" 1e12)
	after1=$(nt_data_between x 1 "$(awk -v t="$th" 'BEGIN{printf "%.6f", t + 0.5}')" 1e12)
	# A primary without an ACK for 4 ms beyond its own delays (srtt + 4 rttvar) counts as
	# stalled and lends the backup its packets (docs/PROTOCOL.md): none in a quiet release
	# build, under 1% under TSan, whose slow processes leave such gaps; a backup used as a
	# rail carries as much as r1
	[ "$before0" -gt 0 ] || nt_fail "r1 carried no DATA before the fault"
	[ "$before" -le $((before0 / 10)) ] ||
		nt_fail "$before DATA packets on the backup rail while r1 worked (r1: $before0)"
	[ "$during" -gt 0 ] || nt_fail "no DATA on the backup rail while r1 was black-holed"
	awk -v l="$low" 'BEGIN { exit !(l > 0) }' || nt_fail "the stream stopped after r1 was taken down (lowest interval $low Mbit/s)"
	[ "$after0" -gt 0 ] || nt_fail "r1 carried no DATA after the heal"
	[ "$after1" -le $((after0 / 10)) ] || nt_fail "the backup kept carrying DATA after the heal ($after1 packets; r1 $after0)"
	nt_note "backup DATA: $before before the fault (r1: $before0), $during during it (r1 down after $detect_ms ms; lowest interval after that $low Mbit/s), $after1 after the heal (r1: $after0)"
	nt_ok "backup: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); the backup rail carried the stream only while r1 was black-holed"
	;;
loss)
	nt_init "$tag" 2 2 1gbit
	for p in 1 5 20; do
		for r in 1 2; do tb_fault loss 1 $r "$p"; done
		# the last server may still linger (answering a resent FIN) on port 7000 for a
		# second; the sender's exit waits out its own linger, so the close completes
		if [ -n "${spid:-}" ]; then
			for ((i = 0; i < 100; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$spid" 2>/dev/null && nt_fail "the server of the last round has not exited after 10 s (its peer's close was lost)"
		fi
		nt_serve 2 --once
		spid=$NT_PID
		nt_send loss$p 1 2 64M || nt_fail "transfer at $p% loss failed: $(cat "$NT_DIR/loss$p.out")"
		nt_require_verified loss$p
		rt=$(($(nt_rail_field "$NT_DIR/loss$p.out" 0 retransmits) + $(nt_rail_field "$NT_DIR/loss$p.out" 1 retransmits)))
		[ "$rt" -gt 0 ] || nt_fail "$p% loss but no retransmission: was the loss applied?"
		nt_note "$p% loss: 64 MiB verified, $(nt_field "$NT_DIR/loss$p.out" mbps) Mbit/s, $rt retransmissions"
	done
	nt_ok "loss: every byte verified at 1%, 5% and 20% loss on every rail"
	;;
degraded)
	nt_init "$tag" 2 2 1gbit
	tb_fault rate 1 2 100mbit
	tb_fault rate 2 2 100mbit
	nt_serve 2 --once
	nt_send x 1 2 256M || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_rail_field "$NT_DIR/x.out" 1 tx_data)" -gt 0 ] || nt_fail "slow rail unused"
	nt_ok "degraded: 256 MiB verified over 1 Gbit/s + 100 Mbit/s, $(nt_field "$NT_DIR/x.out" mbps) Mbit/s"
	;;
flap)
	nt_init "$tag" 2 2 1gbit
	nt_timed_transfer x 8
	sleep 1.5
	tb_fault flap 1 2 200 5000 >/dev/null
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	downs=$(nt_rail_field "$NT_DIR/x.out" 1 downs)
	[ "${downs:-0}" -ge 1 ] || nt_fail "flapping rail never seen down"
	nt_ok "flap: every byte verified while rail 1 flapped ($downs down events)"
	;;
dark-short)
	nt_init "$tag" 2 2 1gbit
	nt_timed_transfer x 6
	sleep 1.5
	for r in 1 2; do tb_fault blackhole 1 $r on; done
	sleep 2
	for r in 1 2; do tb_fault blackhole 1 $r off; done
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	nt_ok "dark-short: every rail dark for 2 s, transfer completed and verified"
	;;
dark-long)
	nt_init "$tag" 2 2 1gbit
	export RI2N_DEAD_PEER_MS=3000
	nt_serve 2 --once
	spid=$NT_PID
	nt_send_bg x 1 2 --seconds 30
	sleep 1.5
	t0=$(nt_clock)
	for r in 1 2; do tb_fault blackhole 1 $r on; done
	wait "$NT_PID"
	rc=$?
	t1=$(nt_clock)
	[ $rc -eq 3 ] || nt_fail "sender exited $rc, expected 3 (connection failed): $(cat "$NT_DIR/x.out")"
	grep -q "verified=no" "$NT_DIR/x.out" || nt_fail "sender did not report the failure"
	wait "$spid"
	src=$?
	[ $src -ne 0 ] || nt_fail "receiver reported success on a dead connection"
	grep -q "verified=no" "$NT_DIR/serve2.out" || nt_fail "receiver did not report the failure"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
	awk -v s="$secs" 'BEGIN { exit !(s < 3 + 10) }' || nt_fail "sender took $secs s to give up"
	nt_ok "dark-long: both ends failed (sender after $secs s, dead-peer timeout 3 s), neither hung"
	;;
stopped)
	nt_init "$tag" 2 2
	nt_serve 2 --once
	spid=$NT_PID
	nt_send_bg x 1 2 --seconds 9
	xpid=$NT_PID
	sleep 1.5
	# both held at once, as a paused host holds them: neither heard the other
	# because neither sent, and neither may judge a rail by that silence
	for _ in 1 2; do
		kill -STOP -- "$spid" -"$xpid" # the sender runs under timeout: its group
		sleep 0.6
		kill -CONT -- -"$xpid" "$spid"
		sleep 0.6
	done
	tboth=$(nt_clock)
	# the receiver alone: the sender truly hears nothing and may judge
	for _ in 1 2 3; do
		kill -STOP "$spid"
		sleep 0.6
		kill -CONT "$spid"
		sleep 0.6
	done
	wait "$xpid" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	wait "$spid" || nt_fail "receiver failed: $(cat "$NT_DIR/serve2.out")"
	silent=$(grep "^xfer event .* down .*cause=\"nothing received\"" "$NT_DIR/serve2.err")
	[ -z "$silent" ] || nt_fail "the stopped receiver found a rail silent: $silent"
	silent=$(awk -v t0="$(nt_mono0 x)" -v end="$tboth" '$1 == "xfer" && $2 == "event" &&
		$5 == "down" && /cause="nothing received"/ { split($3, a, "="); if (t0 + a[2] < end) print }' \
		"$NT_DIR/x.err")
	[ -z "$silent" ] || nt_fail "the sender found a rail silent after both were held: $silent"
	own=$(grep "^xfer event .* down " "$NT_DIR/serve2.err" | grep -vc 'cause="peer report"')
	nt_ok "stopped: every byte verified through two stops of both ends and three of the receiver" \
		"(600 ms each); neither found a rail silent on resuming from its own stop" \
		"($(grep -c '^xfer event .* down ' "$NT_DIR/x.err") down events at the sender," \
		"$own of the receiver's own by other causes)"
	;;
kill)
	nt_init "$tag" 2 2 1gbit
	export RI2N_DEAD_PEER_MS=3000
	nt_serve 2 --once
	spid=$NT_PID
	nt_send_bg x 1 2 --seconds 30
	sleep 2
	t0=$(nt_clock)
	kill -KILL "$spid" # ip netns exec execs ri2n-xfer: this is the receiver itself
	wait "$spid" 2>/dev/null
	wait "$NT_PID"
	rc=$?
	t1=$(nt_clock)
	[ $rc -eq 3 ] || nt_fail "sender exited $rc, expected 3: $(cat "$NT_DIR/x.out")"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
	awk -v s="$secs" 'BEGIN { exit !(s <= 3 + 5) }' || nt_fail "sender took $secs s to notice"
	nt_ok "kill: the sender failed $secs s after the receiver was killed (dead-peer timeout 3 s)"
	;;
restart | restart-keyed)
	nt_init "$tag" 2 2 1gbit
	if [ "$scenario" = restart-keyed ]; then
		RI2N_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
		export RI2N_KEY
	fi
	serve_on() { # PORT: a server in h2 on PORT, its output in serveP.*
		RI2N_RAILS=$NT_RAILS setsid ip netns exec "$(tb_ns 2)" "$NT_XFER" serve --quiet \
			--port "$1" >>"$NT_DIR/serve$1.out" 2>>"$NT_DIR/serve$1.err" &
		NT_PIDS+=($!)
		NT_PID=$!
		sleep 0.3
	}
	# the stateless reset under test, not the port unreachable of the dead server's host
	ip netns exec "$(tb_ns 2)" nft -f - <<-'EOF' || nt_fail "nft"
		table inet ri2n_noicmp {
			chain out { type filter hook output priority 0; icmp type destination-unreachable drop; }
		}
	EOF
	serve_on 7001; s1=$NT_PID # killed, then started again
	serve_on 7002             # the healthy one's
	serve_on 7003; s3=$NT_PID # killed for good
	nt_send_bg x 1 2 --seconds 30 --port 7001; xpid=$NT_PID
	nt_send_bg y 1 2 --seconds 30 --port 7003; ypid=$NT_PID
	nt_send_bg h 1 2 --seconds 6 --port 7002; hpid=$NT_PID
	sleep 2
	kill -0 "$xpid" 2>/dev/null || nt_fail "the stream to 7001 ended early: $(cat "$NT_DIR/x.out")"
	tk=$(nt_clock)
	kill -KILL "$s1" "$s3"
	wait "$s1" "$s3" 2>/dev/null
	t0=$(nt_clock)
	serve_on 7001
	wait "$xpid"
	rc=$?
	t1=$(nt_clock)
	[ $rc -eq 3 ] || nt_fail "client of the restarted server exited $rc, expected 3: $(cat "$NT_DIR/x.out")"
	grep -qi "reset" "$NT_DIR/x.out" "$NT_DIR/x.err" ||
		nt_fail "client of the restarted server did not fail with a reset: $(tail -n 3 "$NT_DIR/x.out" "$NT_DIR/x.err")"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}')
	# the dead-peer timeout is 30 s: anything well below it is the reset
	awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || nt_fail "the reset took $secs s"
	wait "$hpid"
	rc=$?
	[ $rc -eq 0 ] || nt_fail "healthy stream exited $rc: $(cat "$NT_DIR/h.out")"
	nt_require_verified h
	for r in 1 2; do
		[ -z "$(nt_event_mono h "$r" down "$tk")" ] ||
			nt_fail "a rail of the healthy stream failed after the kills (rail $r)"
		d=$(nt_event_mono h "$r" down)
		[ -z "$d" ] || nt_note "rail $r of the healthy stream went down $(awk -v d="$d" -v k="$tk" 'BEGIN{printf "%.3f", k - d}') s before the kills (three streams starting on two shaped rails)"
	done
	# the killed server's client is still waiting for its dead-peer timeout: end it
	kill -9 -- "-$ypid" 2>/dev/null
	nt_ok "$scenario: reset $secs s after the restart (dead-peer timeout 30 s); the healthy stream verified, no rail of it failed after the kills"
	;;
budget)
	nt_init "$tag" 2 2 1gbit
	RI2N_MAX_CONNS=2 nt_serve 2
	nt_send_bg a 1 2 --seconds 6; apid=$NT_PID
	nt_send_bg b 1 2 --seconds 6; bpid=$NT_PID
	sleep 1.5
	t0=$(nt_clock)
	nt_send c 1 2 1M
	rc=$?
	t1=$(nt_clock)
	[ $rc -eq 3 ] || nt_fail "the third client exited $rc, expected 3: $(cat "$NT_DIR/c.out" "$NT_DIR/c.err")"
	grep -qi "refused" "$NT_DIR/c.out" "$NT_DIR/c.err" ||
		nt_fail "the third client was not refused: $(tail -n 3 "$NT_DIR/c.out" "$NT_DIR/c.err")"
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}')
	awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || nt_fail "the refusal took $secs s (connect timeout 30 s)"
	grep -q "accept: Too many open files" "$NT_DIR/serve2.err" ||
		nt_fail "the server's accept did not say EMFILE: $(cat "$NT_DIR/serve2.err")"
	grep -q "refusing connections" "$NT_DIR/serve2.err" ||
		nt_fail "no log line for the refusal: $(cat "$NT_DIR/serve2.err")"
	wait "$apid"; ra=$?
	wait "$bpid"; rb=$?
	[ $ra -eq 0 ] && [ $rb -eq 0 ] || nt_fail "the admitted streams exited $ra/$rb"
	nt_require_verified a
	nt_require_verified b
	# closed cleanly, a and b linger (1 s) holding no descriptor: their budget is back
	nt_send d 1 2 1M || nt_fail "a client right after two clean closes was not admitted: $(tail -n 3 "$NT_DIR/d.err")"
	nt_require_verified d
	nt_ok "budget: the third client refused in $secs s, the server said EMFILE and why, the two admitted verified, a fourth admitted as soon as they closed"
	;;
four-rails)
	nt_init "$tag" 2 4 1gbit
	nt_timed_transfer x 9
	sleep 1.5
	tf20=$(nt_clock)
	tb_fault blackhole 1 2 on
	tf2=$(nt_clock)
	sleep 1.5
	tf30=$(nt_clock)
	tb_fault blackhole 1 3 on
	tf3=$(nt_clock)
	sleep 2
	th20=$(nt_clock)
	tb_fault blackhole 1 2 off
	th2=$(nt_clock)
	sleep 1.5
	th30=$(nt_clock)
	tb_fault blackhole 1 3 off
	th3=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	nt_check_outage x 1 "$tf2" "$th2" "$th20" "$tf20"
	nt_check_outage x 2 "$tf3" "$th3" "$th30" "$tf30"
	nt_ok "four-rails: two rails failed at different times, both left out and taken back, every byte verified"
	;;
mesh)
	nt_init "$tag" 4 2 1gbit
	for h in 1 2 3 4; do nt_serve $h; done
	pids=()
	for a in 1 2 3 4; do
		for b in 1 2 3 4; do
			[ $a -lt $b ] || continue
			nt_send_bg m$a$b $a $b --seconds 6 --quiet
			pids+=("$NT_PID:m$a$b")
		done
	done
	sleep 2
	tb_fault switch 1 blackhole
	sleep 2
	tb_fault switch 1 heal
	for p in "${pids[@]}"; do
		wait "${p%%:*}" || nt_fail "stream ${p#*:} failed: $(cat "$NT_DIR/${p#*:}.out")"
		nt_require_verified "${p#*:}"
	done
	nt_ok "mesh: 6 streams between 4 hosts survived rail 1's switch failing, every byte verified"
	;;
dup)
	nt_init "$tag" 2 2 1gbit
	tb_fault dup 1 1 on
	nt_serve 2 --once
	nt_send x 1 2 128M || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	nt_ok "dup: 128 MiB verified with every packet duplicated on rail 0"
	;;
iface-gone)
	nt_init "$tag" 2 2 1gbit
	nt_timed_transfer x 5
	sleep 1.5
	ip -n "$(tb_ns 1)" link del r2 || nt_fail "could not delete r2"
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_rail_field "$NT_DIR/x.out" 1 up)" = 0 ] || nt_fail "rail 1 still up without its interface"
	nt_ok "iface-gone: rail 1's interface deleted mid-transfer; every byte verified over rail 0"
	;;
addr-gone)
	nt_init "$tag" 2 2 1gbit
	nt_timed_transfer x 5
	sleep 1.5
	ns1=$(tb_ns 1)
	a=$(tb_addr 1 2) # ri2n rail 1 is r2
	tf0=$(nt_clock)
	ip -n "$ns1" addr del "$a/24" dev r2 || nt_fail "could not delete $a from r2"
	tf=$(nt_clock)
	sleep 1.5
	th0=$(nt_clock)
	ip -n "$ns1" addr add "$a/24" dev r2 || nt_fail "could not add $a back to r2"
	th=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	grep -q '^xfer event .* rail=1 down .*cause="address removed"' "$NT_DIR/x.err" ||
		nt_fail "no rail 1 down event with the cause \"address removed\""
	grep -q 'rail 1 (r2 .*): address removed: down' "$NT_DIR/x.err" ||
		nt_fail "the log does not say rail 1 went down for its address"
	nt_check_outage x 1 "$tf0" "$th" "$th0"
	after=$(nt_data_between x 1 "$th" 1e12)
	[ "$after" -gt 0 ] || nt_fail "rail 1 carried no DATA after its address came back"
	down=$(nt_event_mono x 1 down "$tf0")
	nt_note "rail 1 down $(awk -v a="$down" -v b="$tf0" 'BEGIN{printf "%.2f", (a-b)*1000}') ms after \`ip addr del\` began ($(awk -v a="$tf" -v b="$tf0" 'BEGIN{printf "%.2f", (a-b)*1000}') ms until it and the clock after it returned); $after DATA packets on it after the address came back"
	nt_ok "addr-gone: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 1 down at once for its address, used again once it was back"
	;;
addr-change)
	nt_init "$tag" 2 2 1gbit
	nt_timed_transfer x 6
	sleep 1.2
	ns1=$(tb_ns 1)
	a=$(tb_addr 1 2) # ri2n rail 1 is r2
	b=${a%.*}.11      # other addresses in the rail's subnet
	c=${a%.*}.12
	# the new address first, then the old one goes (as systemd's sysctl defaults have it,
	# the kernel keeps the new one, a secondary, when the primary goes)
	ip netns exec "$ns1" sysctl -qw net.ipv4.conf.r2.promote_secondaries=1
	tf0=$(nt_clock)
	ip -n "$ns1" addr add "$b/24" dev r2 || nt_fail "could not add $b to r2"
	ip -n "$ns1" addr del "$a/24" dev r2 || nt_fail "could not delete $a from r2"
	tf=$(nt_clock)
	sleep 1.5
	# the other order: the address goes (none left), another comes later
	ip -n "$ns1" addr del "$b/24" dev r2 || nt_fail "could not delete $b from r2"
	sleep 0.5
	tg0=$(nt_clock)
	ip -n "$ns1" addr add "$c/24" dev r2 || nt_fail "could not add $c to r2"
	tg=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(grep -c '^xfer event .* rail=1 down .*cause="address removed"' "$NT_DIR/x.err")" -ge 2 ] ||
		nt_fail "not two rail 1 down events with the cause \"address removed\""
	for to in "$b" "$c"; do
		grep -q "rail 1 (r2 $to/24): address changed from .*: rebound, 1 connection told" "$NT_DIR/x.err" ||
			nt_fail "the log does not say rail 1 moved to $to: $(grep 'rail 1' "$NT_DIR/x.err" | tail -4)"
	done
	mid=$(nt_data_between x 1 "$tf" "$tg0")
	after=$(nt_data_between x 1 "$tg" 1e12)
	[ "$mid" -gt 0 ] || nt_fail "rail 1 carried no DATA at $b"
	[ "$after" -gt 0 ] || nt_fail "rail 1 carried no DATA at $c"
	up1=$(nt_event_mono x 1 up "$tf0")
	up2=$(nt_event_mono x 1 up "$tg0")
	nt_note "rail 1 up $(awk -v a="$up1" -v b="$tf0" 'BEGIN{printf "%.1f", (a-b)*1000}') ms after $a gave way to $b ($mid DATA packets there), $(awk -v a="$up2" -v b="$tg0" 'BEGIN{printf "%.1f", (a-b)*1000}') ms after $c came ($after DATA packets)"
	nt_ok "addr-change: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 1 rebound to each new address and carried data"
	;;
rail-new)
	nt_init "$tag" 2 3 1gbit
	nt_rail_comes 24
	[ "$after" -gt 0 ] || nt_fail "rail 2 carried no DATA after r3's addresses came"
	up=$(nt_event_mono x 2 up "$tb0")
	nt_note "rail 2 up $(awk -v a="$up" -v b="$tb0" 'BEGIN{printf "%.1f", (a-b)*1000}') ms after the sender's \`ip addr add\` began ($(awk -v a="$tb0" -v b="$ta" 'BEGIN{printf "%.0f", (a-b)*1000}') ms after the receiver's); $after DATA packets on it"
	nt_ok "rail-new: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 2 opened mid-transfer and carried data"
	;;
*)
	echo "unknown scenario $scenario" >&2
	exit 2
	;;
esac
exit 0
