#!/usr/bin/env bash
# tests/netns/test_redundant.sh - redundant small messages (RI2N_REDUNDANT_BYTES) between real
# processes: 8-byte request/response (ri2n-pingpong --verify: every echo compared) over 2 rails,
# host 1's port on rail 1 losing 1% of frames each way.
#   copies   RI2N_REDUNDANT_BYTES=64 at both ends: every echo right, and host 1 sent at least
#            9 datagrams per 10 requests on each rail (each request went on both; the first
#            few go once, before the server's address on r2 is proven)
#   normal   without it: every echo right, and the requests were shared between the rails
#            (each carried under 3 per 4): what makes the first check mean something
# Speed is the bench's (bench/run.sh --only redundant), not this test's.
#
#   tests/netns/test_redundant.sh        (root; RI2N_PINGPONG names the program)
source "$(dirname "$0")/lib.sh"

PP=${RI2N_PINGPONG:-$NT_ROOT/build/bench/ri2n-pingpong}
N=3000
[ -x "$PP" ] || nt_skip "ri2n-pingpong not built at $PP"
nt_init redundant 2 2

# Datagrams host 1 sent on rail I so far.
tx_packets() { ip netns exec "$(tb_ns 1)" cat "/sys/class/net/r$1/statistics/tx_packets"; }

# run NAME [VAR=VALUE...]: N round trips of 8 bytes, the environment at both ends; sets D1 D2,
# the datagrams host 1 sent on each rail meanwhile
run() {
	local name=$1 port=$((7300 + RANDOM % 100)) b1 b2 srv
	shift
	env RI2N_RAILS="$NT_RAILS" "$@" setsid ip netns exec "$(tb_ns 2)" "$PP" serve --once \
		--port "$port" >"$NT_DIR/$name.srv.out" 2>"$NT_DIR/$name.srv.err" &
	srv=$!
	NT_PIDS+=("$srv")
	sleep 0.3
	b1=$(tx_packets 1) b2=$(tx_packets 2)
	env RI2N_RAILS="$NT_RAILS" "$@" timeout -s KILL 60 ip netns exec "$(tb_ns 1)" "$PP" client \
		"$(nt_addr 2)" --port "$port" --sizes 8 --iterations "$N" --warmup 0 --verify \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err" ||
		nt_fail "$name: ri2n-pingpong failed: $(cat "$NT_DIR/$name.err")"
	wait "$srv" || nt_fail "$name: the server failed: $(cat "$NT_DIR/$name.srv.err")"
	D1=$(($(tx_packets 1) - b1)) D2=$(($(tx_packets 2) - b2))
	nt_note "$name: host 1 sent $D1 datagrams on r1, $D2 on r2 for $N requests;" \
		"$(grep -o 'p99_us=[0-9.]*' "$NT_DIR/$name.out") (one way)"
}

tb_fault loss 1 1 1 || nt_fail "tb_fault loss"
run copies RI2N_REDUNDANT_BYTES=64
[ "$D1" -ge $((N * 9 / 10)) ] && [ "$D2" -ge $((N * 9 / 10)) ] ||
	nt_fail "copies: every request should go on both rails ($D1 on r1, $D2 on r2 for $N)"
run normal
[ "$D1" -lt $((N * 3 / 4)) ] && [ "$D2" -lt $((N * 3 / 4)) ] ||
	nt_fail "normal: a rail carried every request ($D1 on r1, $D2 on r2 for $N): the copies check proves nothing"
nt_ok "redundant: $N echoes verified with and without copies; with them each request went on both rails"
