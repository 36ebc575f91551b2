#!/usr/bin/env bash
# ri2n-stat --prometheus after a known transfer (root; 77 = skipped).
#
# h1 sends 8 MiB of a file to h2 over 2 rails, then holds the connection
# open (its input pipe stays open) while ri2n-stat --prometheus, in both
# namespaces, must pass `promtool check metrics` (with and without
# per-connection series) and read back at least the 8 MiB: the sender's
# stream and per-rail sent bytes, the receiver's stream and per-rail received
# bytes, and both rails numbered 1 and 2.  Then the input ends and the
# receiver's copy must match the file byte for byte.
source "$(dirname "$0")/lib.sh"
STAT=${RI2N_STAT_BIN:-$(dirname "$NT_XFER")/ri2n-stat}
[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
command -v promtool >/dev/null || nt_skip "promtool is not installed (Debian's prometheus package)"
nt_init prom 2 2
bytes=$((8 << 20))
head -c "$bytes" /dev/urandom >"$NT_DIR/data"
mkfifo "$NT_DIR/go"

nt_serve 2 --once --out "$NT_DIR/copy"
# the file, then nothing until the test writes to the fifo: the connection stays open
{ cat "$NT_DIR/data"; read -r _ <"$NT_DIR/go"; } |
	RI2N_RAILS=$NT_RAILS setsid timeout -s KILL 60 ip netns exec "$(tb_ns 1)" "$NT_XFER" send \
		"$(nt_addr 2)" --file - --quiet >"$NT_DIR/x.out" 2>"$NT_DIR/x.err" &
NT_PIDS+=($!)
sender=$!
release() { echo >"$NT_DIR/go"; }
for _ in $(seq 200); do
	[ "$(stat -c %s "$NT_DIR/copy" 2>/dev/null || echo 0)" -ge "$bytes" ] && break
	sleep 0.05
done
[ "$(stat -c %s "$NT_DIR/copy" 2>/dev/null || echo 0)" -ge "$bytes" ] ||
	{ release; nt_fail "the receiver has not got the $bytes bytes after 10 s"; }
spid=$(nt_xfer_pid 1 send)
rpid=$(nt_xfer_pid 2 serve)
[ -n "$spid" ] && [ -n "$rpid" ] || { release; nt_fail "sender ($spid) or receiver ($rpid) not found"; }

# sum NAME PID [LABEL_MATCH]: the sum of a family's samples for a process
sum() {
	awk -v n="$1" -v p="pid=\"$2\"" -v m="${3:-}" '$1 ~ "^" n "{" && index($1, p) && index($1, m) {
		s += $2 } END { printf "%.0f\n", s }' "$NT_DIR/prom.txt"
}
# look HOST PID: scrapes until the snapshot (every 250 ms) shows the bytes, at most 3 s
look() {
	local end=$((SECONDS + 3)) want=$3
	while :; do
		ip netns exec "$(tb_ns "$1")" "$STAT" --prometheus=conns --pid "$2" >"$NT_DIR/prom.txt"
		[ "$(sum "$want" "$2")" -ge "$bytes" ] && return 0
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
look 1 "$spid" ri2n_sent_bytes_total ||
	{ release; nt_fail "sender: ri2n_sent_bytes_total $(sum ri2n_sent_bytes_total "$spid") < $bytes"; }
# both processes (only these: other processes on the machine are not this test's)
for opt in --prometheus --prometheus=conns; do
	for p in "$spid" "$rpid"; do
		lint=$("$STAT" "$opt" --pid "$p" 2>&1 | promtool check metrics 2>&1) ||
			{ release; nt_fail "promtool check metrics on ri2n-stat $opt --pid $p: $lint"; }
		[ -z "$lint" ] || { release; nt_fail "promtool check metrics on ri2n-stat $opt --pid $p: $lint"; }
	done
done
for f in ri2n_rail_sent_bytes_total ri2n_conn_sent_bytes_total ri2n_conn_rail_sent_bytes_total; do
	v=$(sum "$f" "$spid")
	[ "$v" -ge "$bytes" ] || { release; nt_fail "sender: $f is $v, less than the $bytes bytes sent"; }
done
# each rail, numbered from 1 with its address, up or down on the one connection (a loaded
# machine may see a rail down for a moment: its state is not the point here)
for r in 1 2; do
	[ "$(sum ri2n_rail_connections "$spid" "rail=\"$r\",rail_local=\"198.18.$r.1\",state=")" = 1 ] ||
		{ release; nt_fail "sender: rail $r is not on its one connection: $(grep '^ri2n_rail_connections' "$NT_DIR/prom.txt")"; }
done
nt_note "sender: $(grep -E '^ri2n_(sent_bytes_total|rail_sent_bytes_total)' "$NT_DIR/prom.txt" | sed 's/{.*rail="\([0-9]\)".*}/ rail \1/; s/{.*}//' | tr '\n' ';')"
look 2 "$rpid" ri2n_received_bytes_total ||
	{ release; nt_fail "receiver: ri2n_received_bytes_total $(sum ri2n_received_bytes_total "$rpid") < $bytes"; }
v=$(sum ri2n_rail_received_bytes_total "$rpid")
[ "$v" -ge "$bytes" ] || { release; nt_fail "receiver: ri2n_rail_received_bytes_total is $v, less than $bytes"; }
nt_note "receiver: ri2n_received_bytes_total $(sum ri2n_received_bytes_total "$rpid"), rails $v"

release
wait "$sender" || nt_fail "the sender failed: $(cat "$NT_DIR/x.out" "$NT_DIR/x.err")"
for _ in $(seq 100); do
	kill -0 "$NT_PID" 2>/dev/null || break
	sleep 0.05
done
cmp -s "$NT_DIR/data" "$NT_DIR/copy" || nt_fail "the receiver's copy differs from the file sent"
nt_ok "ri2n-stat --prometheus passes promtool and reads back the $bytes bytes sent and received"
