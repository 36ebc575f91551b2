#!/usr/bin/env bash
# bench/idle-cost.sh - what N idle ri2n connections cost: packets on the rails and CPU.
#
#   bench/idle-cost.sh [--conns-bin PATH] [--tag TAG] N [N ...]
#
# For each N: a 2-host, 2-rail bed (unshaped veth; tag TAG, else RI2N_NETNS_TAG_LETTER + "idle"),
# `ri2n-conns serve` in host 2, `ri2n-conns run --conns N --busy 0 --idle 60` in host 1.
# Once the server holds N connections (2 descriptors each) and 5 s more have passed (every
# connection quiet), it samples 10 s: packets both ways on the client's rails
# (/proc/net/dev) and each process's CPU (utime + stime, /proc/PID/stat).  One line per N:
#   idle conns=N pkts_per_s=... client_cpu_pct=... server_cpu_pct=...
# Root only.  Timing figures: noisy on a shared machine; a benchmark, never a test.
# bench/run.sh runs it for its idle-cost rows (the mem figure).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bench/ri2n-conns
tag=${RI2N_NETNS_TAG_LETTER:-t}idle
while [ $# -gt 0 ]; do
	case $1 in
	--conns-bin) bin=$2; shift 2 ;;
	--tag) tag=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--conns-bin PATH] [--tag TAG] N [N ...]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "idle-cost: needs root" >&2; exit 77; }
[ -x "$bin" ] || { echo "idle-cost: no $bin" >&2; exit 2; }
# shellcheck source=../tools/ri2n-testbed.sh
source "$root/tools/ri2n-testbed.sh"
set +e
tb_use "$tag" || exit 1
tmp=$(mktemp -d)
pids=()
finish() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	tb_destroy >/dev/null 2>&1
	rm -rf "$tmp"
}
trap finish EXIT
tb_exists && tb_destroy >/dev/null 2>&1
tb_create --hosts 2 --rails 2 >/dev/null || { echo "idle-cost: test bed" >&2; exit 1; }

rail_pkts() { # NS: rx + tx packets of r1 and r2
	ip netns exec "$1" cat /proc/net/dev |
		awk '$1 ~ /^r[12]:$/ { s += $3 + $11 } END { print s + 0 }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

port=7300
for n in "$@"; do
	port=$((port + 1))
	ip netns exec "$(tb_ns 2)" env RI2N_RAILS=r1,r2 "$bin" serve --port "$port" \
		>"$tmp/srv.out" 2>"$tmp/srv.err" &
	srv=$!
	pids+=("$srv")
	sleep 0.5
	ip netns exec "$(tb_ns 1)" env RI2N_RAILS=r1,r2 "$bin" run "$(tb_addr 2 1)" --port "$port" \
		--conns "$n" --busy 0 --idle 60 >"$tmp/cli.out" 2>"$tmp/cli.err" &
	cli=$!
	pids+=("$cli")
	t0=$(date +%s)
	# connected: the server holds two descriptors per accepted connection (its socketpair)
	while [ "$(ls "/proc/$srv/fd" 2>/dev/null | wc -l)" -lt $((2 * n)) ]; do
		kill -0 "$cli" 2>/dev/null || break
		[ $(($(date +%s) - t0)) -gt 50 ] && break
		sleep 0.2
	done
	conn_s=$(($(date +%s) - t0))
	sleep 5
	hz=$(getconf CLK_TCK)
	p0=$(rail_pkts "$(tb_ns 1)") c0=$(cpu_ticks "$cli") s0=$(cpu_ticks "$srv")
	sleep 10
	p1=$(rail_pkts "$(tb_ns 1)") c1=$(cpu_ticks "$cli") s1=$(cpu_ticks "$srv")
	fds=$(ls "/proc/$srv/fd" 2>/dev/null | wc -l)
	echo "idle conns=$n server_fds=$fds connect_s=$conn_s pkts_per_s=$(((p1 - p0) / 10))" \
		"client_cpu_pct=$(awk -v a="$c0" -v b="$c1" -v h="$hz" 'BEGIN { printf "%.1f", (b - a) * 100 / h / 10 }')" \
		"server_cpu_pct=$(awk -v a="$s0" -v b="$s1" -v h="$hz" 'BEGIN { printf "%.1f", (b - a) * 100 / h / 10 }')"
	kill "$cli" "$srv" 2>/dev/null
	wait "$cli" "$srv" 2>/dev/null
	pids=()
done
