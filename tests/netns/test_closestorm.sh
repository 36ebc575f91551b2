#!/usr/bin/env bash
# A close storm between two processes (root; 77 = skipped).
#
#   test_closestorm.sh [N]     N connections (default 4000)
#
# ri2n-conns opens N connections from h1 to h2 over 2 unshaped veth rails;
# each carries its 8-byte hello and the server's echo, every byte verified
# by ri2n-conns (verified=yes, established=N, failed=0).  Then the client
# tells the server to quit and both close all N at once and exit (the
# client right after the server: a simultaneous close storm).  Checked with
# RI2N_LOG=info, which logs every connection's end:
#   - on each side N connections closed cleanly, none failed (no dead-peer
#     timeout, no reset), the last within CLOSE_BOUND_S of the storm;
#   - each process gone within EXIT_BOUND_S of closing its connections;
#   - no rail judged down on either side after the storm began.
# The bounds are far below the 30 s (dead-peer timeout, exit linger) the
# faults took, and far above a clean run's time on a loaded machine.
#
# N: 4000 fit comfortably in a CI run (their handshakes take ~5 s on an
# idle machine, ~30 s on a loaded one); the descriptor limit (20,000 here)
# allows ~9,950 per process, and bench/run.sh --quick runs 9,000.
source "$(dirname "$0")/lib.sh"
CONNS_BIN=${RI2N_CONNS:-$NT_ROOT/build/bench/ri2n-conns}
N=${1:-4000}
# Under a sanitizer (5-15 times slower) 4,000 connections' storm outran the bounds on a slow
# machine (late exits, a few resets; issue 30's note): the sanitizer runs check the same
# paths on 1,000, the release run keeps the count and the bounds.
[ -z "${1:-}" ] && nt_linked "$CONNS_BIN" 'lib[at]san' && N=1000
CLOSE_BOUND_S=10
EXIT_BOUND_S=10
[ -x "$CONNS_BIN" ] || nt_skip "ri2n-conns not built at $CONNS_BIN"
nt_init closestorm 2 2

port=7400
RI2N_RAILS=$NT_RAILS RI2N_LOG=info setsid ip netns exec "$(tb_ns 2)" "$CONNS_BIN" serve \
	--port $port >"$NT_DIR/srv.out" 2>"$NT_DIR/srv.err" &
spid=$!
NT_PIDS+=("$spid")
sleep 0.5
RI2N_RAILS=$NT_RAILS RI2N_LOG=info timeout -s KILL 240 ip netns exec "$(tb_ns 1)" "$CONNS_BIN" run \
	"$(nt_addr 2)" --port $port --conns "$N" --busy 0 --idle 1 \
	>"$NT_DIR/cli.out" 2>"$NT_DIR/cli.err"
rc=$?
cli_gone=$(nt_clock)
# the server ended before the client closed: it must be gone by now, or soon
for _ in $(seq 1 $((EXIT_BOUND_S * 10))); do
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$spid" 2>/dev/null && nt_fail "the server is still running $EXIT_BOUND_S s after the client left"
wait "$spid"
src=$?

done_line=$(awk '$1 == "conns" && $2 == "done"' "$NT_DIR/cli.out")
nt_note "$done_line"
[ $rc -eq 0 ] || nt_fail "ri2n-conns run exited with $rc"
[ $src -eq 0 ] || nt_fail "ri2n-conns serve exited with $src"
echo "$done_line" | grep -q "established=$N failed=0 .*verified=yes" ||
	nt_fail "not every hello and echo verified on $N connections: $done_line"

# field FILE KEY: KEY=value from the ri2n-conns line of the close
field() { grep -o "$2=[0-9.]*" "$1" | tail -1 | cut -d= -f2; }
# secs_of LINE: the time of day of a log line (HH:MM:SS.mmm), in seconds
last_close() { # FILE: the time of day of its last "closed" line, in seconds
	grep ' info: connection .* closed$' "$1" | tail -1 |
		awk '{ split($1, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3] }'
}
for side in cli srv; do
	f=$NT_DIR/$side.err
	closed=$(grep -c ' info: connection .* closed$' "$f")
	failed=$(grep -c ' failed: ' "$f")
	resets=$(grep -c 'reset by peer\|never closed: reset' "$f")
	dead=$(grep -c 'dead-peer' "$f")
	nt_note "$side: $closed closed cleanly, $failed failed ($dead dead-peer, $resets resets)"
	[ "$failed" -eq 0 ] && [ "$resets" -eq 0 ] ||
		nt_fail "$side: $failed connections failed ($dead past the dead-peer timeout), $resets resets: $(grep ' failed: \|reset' "$f" | sed 's/.*: //' | sort | uniq -c | tr '\n' ' ')"
	[ "$closed" -eq "$N" ] || nt_fail "$side: $closed of $N connections closed cleanly"
	wall=$(field "$f" wall)
	[ -n "$wall" ] || nt_fail "$side: ri2n-conns did not say when it closed"
	late=$(awk -v a="$wall" -v b="$(last_close "$f")" 'BEGIN { d = b - a % 86400; if (d < -43200) d += 86400; printf "%.3f", d }')
	nt_note "$side: last clean close ${late} s after it closed its connections"
	# closing connections judge no rail by silence (rn_timer.c, closing_quiet): a busy
	# engine's silence during the storm failed every rail of both ends, then resets
	downs=$(awk -v a="$wall" '/ down: / { split($1, t, ":"); d = t[1] * 3600 + t[2] * 60 + t[3] - a % 86400
		if (d < -43200) d += 86400; if (d >= 0) n++ } END { print n + 0 }' "$f")
	[ "$downs" -eq 0 ] || nt_fail "$side: $downs rail-down verdicts after the storm: $(grep ' down: ' "$f" | tail -1)"
	awk -v d="$late" -v m=$CLOSE_BOUND_S 'BEGIN { exit !(d <= m) }' ||
		nt_fail "$side: the last connection closed ${late} s after the storm (bound ${CLOSE_BOUND_S} s)"
done
exit_s=$(awk -v a="$(field "$NT_DIR/cli.err" mono)" -v b="$cli_gone" 'BEGIN { printf "%.3f", b - a }')
nt_note "the client was gone ${exit_s} s after closing its $N connections"
awk -v d="$exit_s" -v m=$EXIT_BOUND_S 'BEGIN { exit !(d <= m) }' ||
	nt_fail "the client took ${exit_s} s to exit after closing (bound ${EXIT_BOUND_S} s)"
grep -q 'still sending' "$NT_DIR/cli.err" "$NT_DIR/srv.err" &&
	nt_fail "an exit gave up on connections still sending: $(grep -h 'still sending' "$NT_DIR"/*.err)"
nt_ok "close storm of $N connections: all clean on both sides, exits prompt"
