#!/usr/bin/env bash
# ri2n-stat --prometheus on snapshots written here (no root, no network): a
# process with a listener and a connection over 2 rails whose program name
# holds a backslash (escaped in the label), a libfabric endpoint of the same
# pid (its own series: an endpoint label), and a process with no connection.
# promtool check metrics must pass on both levels; the values must be the
# snapshot's (sums over rails and connections, rails numbered from 1, RTT in
# seconds), per-connection series only with =conns; the table shows a
# connection's copies (redundant small messages) only where it has some.
# 77 without promtool.
#   tests/stat_prom.sh RI2N_STAT
set -euo pipefail
stat=${1:?usage: stat_prom.sh RI2N_STAT}
command -v promtool >/dev/null || { echo "SKIP: promtool is not installed (Debian's prometheus package)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# snapshots of this shell's pid (alive; start=0: not checked against /proc)
rail() { # CONN INDEX LOCAL STATE TXB RXB SRTT_US
	echo "rail conn=$1 index=$2 local=$3 remote=${3%.1}.2 state=$4 rx=$4 tx=$4 tx_packets=10 rx_packets=20 tx_bytes=$5 rx_bytes=$6 tx_data=9 rx_data=19 retransmits=1 lost=2 heartbeats=3 keepalives=0 downs=4 ups=3 cwnd=10 srtt_us=$7 changed_ms_ago=-1 dgram=1472 mtu_holes=0 small_ok=0 cause=\"\""
}
conn() { # N LOCAL PEER APP_TX [COPIES]
	echo "conn n=$1 fd=$((4 + $1)) role=client local=$2 peer=$3 state=established age_ms=1500 error=\"\" mss=1400 app_tx_bytes=$4 app_rx_bytes=7 tx_packets=30 rx_packets=40 retransmits=2 rto=1 drops_malformed=5 drops_source=0 drops_window=0 drops_duplicate=1 drops_auth=0 drops_other=0 keyed=0 copies=${5:-0}"
}
{
	echo "ri2n-stat 1"
	echo "process pid=$$ start=0 cmd=\"a\\b\" time=1700000000 mono_ms=5"
	echo "listener port=7000 rails=2 queued=0 inits=3 accepts=2 drops=1 drops_backlog=0 drops_auth=0 drops_rate=0 keyed=0 refused=0 resets=0 accept_idle_wakes=0"
	conn 1 198.18.1.1:4000 198.18.1.2:7000 1000
	rail 1 0 198.18.1.1 up 100 200 300
	rail 1 1 198.18.2.1 down 110 210 0
	conn 2 198.18.1.1:4001 198.18.1.2:7000 2000 9
	rail 2 0 198.18.1.1 up 100 200 500
	rail 2 1 198.18.2.1 up 110 210 700
} >"$dir/$$.stat"
{
	echo "ri2n-stat 1"
	echo "process pid=$$ start=0 cmd=\"fi_app\" time=1700000000 mono_ms=5 driver=\"libfabric\" endpoint=\"198.18.1.1:9000\""
	conn 1 198.18.1.1:9000 198.18.1.2:9000 64
	rail 1 0 198.18.1.1 up 1 2 10
} >"$dir/$$.fi1.stat"
printf 'ri2n-stat 1\nprocess pid=%s start=0 cmd="idle" time=1700000000 mono_ms=5\n' "$$" >"$dir/$$.fi2.stat"

"$stat" --prometheus --dir "$dir" >"$dir/agg.txt" || fail "ri2n-stat --prometheus failed"
"$stat" --prometheus=conns --dir "$dir" >"$dir/conns.txt" || fail "ri2n-stat --prometheus=conns failed"
for f in agg conns; do
	out=$(promtool check metrics <"$dir/$f.txt" 2>&1) || fail "promtool on $f: $out"
	[ -z "$out" ] || fail "promtool on $f: $out"
done
# value NAME LABELS: the sample with exactly these labels in agg.txt (or $3)
value() { K="$1{$2}" awk '$1 == ENVIRON["K"] { print $2 }' "$dir/${3:-agg}.txt"; }
p="pid=\"$$\",program=\"a\\\\b\""
check() { # NAME LABELS WANT [FILE]
	local v
	v=$(value "$1" "$2" "${4:-agg}")
	[ "$v" = "$3" ] || fail "$1{$2} is '$v', want $3: $(grep "^$1" "$dir/${4:-agg}.txt")"
}
check ri2n_sent_bytes_total "$p" 3000
check ri2n_connections "$p,state=\"established\"" 2
check ri2n_dropped_packets_total "$p,reason=\"malformed\"" 10
check ri2n_listener_accepted_total "$p,port=\"7000\"" 2
check ri2n_rail_sent_bytes_total "$p,rail=\"1\",rail_local=\"198.18.1.1\"" 200
check ri2n_rail_received_bytes_total "$p,rail=\"2\",rail_local=\"198.18.2.1\"" 420
check ri2n_rail_connections "$p,rail=\"2\",rail_local=\"198.18.2.1\",state=\"down\"" 1
check ri2n_rail_connections "$p,rail=\"2\",rail_local=\"198.18.2.1\",state=\"up\"" 1
check ri2n_rail_rtt_seconds "$p,rail=\"1\",rail_local=\"198.18.1.1\"" 0.000400
check ri2n_rail_rtt_seconds "$p,rail=\"2\",rail_local=\"198.18.2.1\"" 0.000700
check ri2n_sent_bytes_total "pid=\"$$\",program=\"fi_app\",endpoint=\"198.18.1.1:9000\"" 64
check ri2n_connections "pid=\"$$\",program=\"idle\",state=\"established\"" 0
! grep -q '^ri2n_conn_' "$dir/agg.txt" || fail "per-connection series without =conns"
c="$p,local=\"198.18.1.1:4001\",peer=\"198.18.1.2:7000\""
check ri2n_conn_sent_bytes_total "$c" 2000 conns
check ri2n_conn_age_seconds "$c" 1.500 conns
check ri2n_copies_total "$p" 9
check ri2n_conn_copies_total "$c" 9 conns
check ri2n_conn_copies_total "$p,local=\"198.18.1.1:4000\",peer=\"198.18.1.2:7000\"" 0 conns
check ri2n_conn_rail_up "$p,local=\"198.18.1.1:4000\",peer=\"198.18.1.2:7000\",rail=\"2\",rail_local=\"198.18.2.1\"" 0 conns
# the table: copies on the line of the connection that sent some, and only there
"$stat" --dir "$dir" >"$dir/table.txt" || fail "ri2n-stat failed"
grep -q ':4001 -> .*drops 6  copies 9$' "$dir/table.txt" || fail "no 'copies 9' on connection 2: $(cat "$dir/table.txt")"
[ "$(grep -c copies "$dir/table.txt")" = 1 ] || fail "copies shown where there are none: $(cat "$dir/table.txt")"
echo "ok: ri2n-stat --prometheus: promtool passes; sums, rails from 1, RTT in seconds, endpoints apart"
