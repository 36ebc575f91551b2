#!/usr/bin/env bash
# tests/ofi/test_ofi.sh - the libfabric provider (libri2n-fi.so) under libfabric's own tools.
#
#   test_ofi.sh fi_info     fi_info -p ri2n lists the provider with what mtl/ofi and
#                           fi_pingpong need (no root: any IPv4 interface will do)
#   test_ofi.sh pingpong    fi_pingpong -p ri2n -e rdm -c between two namespaces over 2
#                           rails, every size from 64 B to 1 MiB, untagged and tagged,
#                           each message's bytes checked by fi_pingpong (-c); each side's
#                           two connections (one per direction) share one rail monitor
#   test_ofi.sh blackhole   1 MiB ping-pongs, checked, while rail 2 is black-holed and
#                           healed mid-run: every exchange completes, the rail is seen down
#   test_ofi.sh addr-gone   the same ping-pongs while rail 2's address is deleted in the
#                           client's host and added back: the provider follows the kernel
#                           (netlink), so the rail is down at once with the cause "address
#                           removed" and in use again once the address is back
#   test_ofi.sh addr-change the same ping-pongs while rail 2's address in the client's host
#                           is replaced by another in its subnet: the provider moves the
#                           rail there (its socket bound anew, the links' peers told) and
#                           data crosses it again
#   test_ofi.sh rail-new    the same ping-pongs with rail 2 without an address in either
#                           host at start: both sides start on rail 1 and open rail 2 once its
#                           addresses come, offering it to their links (RAILS); data crosses it
#   test_ofi.sh v6          the black-hole run on a bed whose two rails are IPv6 only: the
#                           endpoints' names carry IPv6 rails (ri2n-stat shows each side's
#                           connections on them), rail 2 is seen down and back
#   test_ofi.sh dead-peer   a running ping-pong's client killed -9: the server's connections
#                           to it fail with "connection reset by peer" within 5 s (its host's
#                           port unreachable, checked against what was sent), not by the
#                           30 s dead-peer timeout
#   test_ofi.sh stat        the same, watched with ri2n-stat --json (RI2N_STAT: its path):
#                           both fi_pingpong processes publish their endpoint; ri2n-stat
#                           shows rail 1 down (with its cause) while rail 2 is black-holed
#                           and up again after the heal, and no snapshot is left behind
#
# FI_PROVIDER_PATH: the directory with libri2n-fi.so.  Needs libfabric-bin (fi_info,
# fi_pingpong); skips (77) without it, or without root for the namespace cases.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case_=${1:?usage: test_ofi.sh fi_info|pingpong|blackhole|v6|addr-gone|addr-change|rail-new|dead-peer|stat}
prov=${FI_PROVIDER_PATH:?FI_PROVIDER_PATH must name the directory of libri2n-fi.so}
[ -f "$prov/libri2n-fi.so" ] || { echo "SKIP: no libri2n-fi.so in $prov"; exit 77; }
for t in fi_info fi_pingpong; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed (libfabric-bin)"; exit 77; }
done
export FI_PROVIDER_PATH=$prov

if [ "$case_" = fi_info ]; then
	out=$(fi_info -p ri2n -v 2>&1) || {
		# no usable interface at all (only loopback): nothing to list
		ip -4 -o addr show scope global | grep -q . || { echo "SKIP: no IPv4 rail"; exit 77; }
		echo "FAIL: fi_info -p ri2n: $out"
		exit 1
	}
	fail=0
	for want in 'prov_name: ri2n' 'type:.*FI_EP_RDM' 'caps:.*FI_MSG' 'caps:.*FI_TAGGED' \
		'msg_order:.*FI_ORDER_SAS' 'inject_size: 4096' 'mem_tag_format: 0xaaaaaaaaaaaaaaaa' \
		'data_progress:.*FI_PROGRESS_MANUAL' 'resource_mgmt:.*FI_RM_ENABLED'; do
		if ! grep -q -- "$want" <<<"$out"; then
			echo "FAIL: fi_info -p ri2n -v has no line matching '$want'"
			fail=1
		fi
	done
	fi_info -p ri2n 2>&1 | grep -q '^provider: ri2n' || { echo "FAIL: fi_info -p ri2n"; fail=1; }
	# a parameter set in the system configuration file (docs/CONFIG.md); the environment wins
	conf=$(mktemp /tmp/ri2n-ofi-conf.XXXXXX)
	echo 'FI_RI2N_INJECT_SIZE = 1024' >"$conf"
	chmod 644 "$conf"
	RI2N_CONF=$conf fi_info -p ri2n -v 2>&1 | grep -q 'inject_size: 1024' ||
		{ echo "FAIL: FI_RI2N_INJECT_SIZE = 1024 in RI2N_CONF not applied"; fail=1; }
	RI2N_CONF=$conf FI_RI2N_INJECT_SIZE=2048 fi_info -p ri2n -v 2>&1 | grep -q 'inject_size: 2048' ||
		{ echo "FAIL: FI_RI2N_INJECT_SIZE=2048 in the environment does not win over the file"; fail=1; }
	rm -f "$conf"
	# what Open MPI's mtl/ofi asks for (ompi_mtl_ofi_component_init, 4.1)
	fi_info -p ri2n -t FI_EP_RDM -c FI_TAGGED >/dev/null 2>&1 ||
		{ echo "FAIL: no RDM endpoint with FI_TAGGED"; fail=1; }
	# and what it must refuse: no RMA, no atomics, no MSG endpoints
	fi_info -p ri2n -c FI_RMA >/dev/null 2>&1 && { echo "FAIL: claims FI_RMA"; fail=1; }
	fi_info -p ri2n -t FI_EP_MSG >/dev/null 2>&1 && { echo "FAIL: claims FI_EP_MSG"; fail=1; }
	[ $fail = 0 ] && echo "ok: fi_info -p ri2n lists the provider and its attributes"
	exit $fail
fi

# shellcheck source=../netns/lib.sh
source "$here/../netns/lib.sh"
bed=()
[ "$case_" = v6 ] && bed=("" --v6 all) # no rate; IPv6 rails only
nt_init "ofi-$case_" 2 2 "${bed[@]}"
ns1=$(tb_ns 1) ns2=$(tb_ns 2)
ctl=$(tb_mgmt_addr 1)
penv=(env RI2N_RAILS=r1,r2 RI2N_LOG=info FI_PROVIDER_PATH="$prov")

# fi_pingpong ARGS...: server in host 1, client in host 2; both must exit 0.
pingpong() { # NAME ARGS...
	local name=$1 rc
	shift
	setsid timeout -s KILL 120 ip netns exec "$ns1" "${penv[@]}" fi_pingpong -p ri2n -e rdm "$@" \
		>"$NT_DIR/$name.srv" 2>&1 &
	NT_PIDS+=($!)
	local spid=$!
	sleep 0.5
	timeout -s KILL 120 ip netns exec "$ns2" "${penv[@]}" fi_pingpong -p ri2n -e rdm "$@" "$ctl" \
		>"$NT_DIR/$name.cli" 2>&1
	rc=$?
	wait "$spid"
	local src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		echo "--- client ($rc)"; tail -n 20 "$NT_DIR/$name.cli"
		echo "--- server ($src)"; tail -n 20 "$NT_DIR/$name.srv"
		nt_fail "fi_pingpong $* failed (client $rc, server $src)"
	fi
}

case $case_ in
pingpong)
	for mode in msg tagged; do
		pingpong "pp-$mode" -c -m "$mode" -I 20
		for sz in 64 1k 4k 64k 1m; do
			grep -Eq "^$sz +20 +=20 " "$NT_DIR/pp-$mode.cli" ||
				nt_fail "fi_pingpong -m $mode: no checked row for $sz"
		done
		nt_ok "fi_pingpong -c -m $mode: 64 B .. 1 MiB, 20 exchanges each, all bytes checked"
		# each side's two connections (its outbound and the other's) cross the same
		# rail sockets: one rail monitor for both (rn_hmon's count, at close)
		for f in "$NT_DIR/pp-$mode.srv" "$NT_DIR/pp-$mode.cli"; do
			grep -q 'rail monitors: 2 connections joined 1;' "$f" ||
				nt_fail "fi_pingpong -m $mode: $(basename "$f") did not put its 2 connections in one rail monitor: $(grep -h 'rail monitors' "$f")"
		done
		nt_ok "fi_pingpong -m $mode: each side's 2 connections shared one rail monitor"
	done
	;;
blackhole)
	(sleep 1.5; tb_fault blackhole 2 2 on; sleep 2; tb_fault blackhole 2 2 off) &
	NT_PIDS+=($!)
	pingpong bh -c -S 1048576 -I 400
	grep -Eq "^1m +400 +=400 " "$NT_DIR/bh.cli" || nt_fail "not every 1 MiB exchange completed"
	grep -q "rail 1 down" "$NT_DIR/bh.cli" "$NT_DIR/bh.srv" ||
		nt_fail "the black-holed rail was never seen down (finished before the fault?)"
	nt_ok "400 checked 1 MiB ping-pongs across a black-holed and healed rail"
	grep -h "rail 1 \(down\|up\)" "$NT_DIR/bh.cli" "$NT_DIR/bh.srv" | sed 's/^/  /' | head -n 8
	;;
v6)
	stat=${RI2N_STAT:?RI2N_STAT must name ri2n-stat}
	run=$NT_DIR/run
	mkdir -m 0700 "$run"
	penv+=(RI2N_RUN_DIR="$run")
	(sleep 1.5; "$stat" --json --dir "$run" >"$NT_DIR/v6.json" 2>&1
	 tb_fault blackhole 2 2 on; sleep 2; tb_fault blackhole 2 2 off) &
	NT_PIDS+=($!)
	pingpong v6 -c -S 1048576 -I 400
	grep -Eq "^1m +400 +=400 " "$NT_DIR/v6.cli" || nt_fail "not every 1 MiB exchange completed"
	grep -q "rail 1 down" "$NT_DIR/v6.cli" "$NT_DIR/v6.srv" ||
		nt_fail "the black-holed rail was never seen down (finished before the fault?)"
	# both endpoints published, each connection on both rails, every address IPv6
	python3 - "$NT_DIR/v6.json" <<'PY' || nt_fail "ri2n-stat does not show both endpoints on IPv6 rails: $(head -c 600 "$NT_DIR/v6.json")"
import json, sys
d = json.load(open(sys.argv[1]))
eps = [p for p in d["processes"] if p.get("driver") == "libfabric" and p.get("cmd") == "fi_pingpong"]
conns = [c for p in eps for c in p["connections"]]
rails = [r for c in conns for r in c["rails"]]
ok = len(eps) == 2 and conns and all(len(c["rails"]) == 2 for c in conns) and \
     all(r["local"].startswith("2001:2:0:") and r["remote"].startswith("2001:2:0:") for r in rails)
print("  endpoints %d, connections %d, rails %s" % (len(eps), len(conns), sorted({r["local"] for r in rails})))
sys.exit(0 if ok else 1)
PY
	nt_ok "400 checked 1 MiB ping-pongs over IPv6 rails, rail 2 black-holed and healed"
	grep -h "rail 1 \(down\|up\)" "$NT_DIR/v6.cli" "$NT_DIR/v6.srv" | sed 's/^/  /' | head -n 4
	;;
addr-gone)
	a=$(tb_addr 2 2) # the client's rail 2 (ri2n rail 1)
	# once the client's endpoint has its socket on that address (on a loaded machine it may
	# start after a fixed delay, and then wait for the address as a new rail instead)
	(for ((i = 0; i < 200; i++)); do
		ip netns exec "$ns2" ss -uan | grep -q " $a:[0-9]" && break
		sleep 0.05
	 done
	 sleep 0.5; ip -n "$ns2" addr del "$a/24" dev r2; sleep 1; ip -n "$ns2" addr add "$a/24" dev r2) &
	NT_PIDS+=($!)
	pingpong ag -c -S 1048576 -I 800
	grep -Eq "^1m +800 +=800 " "$NT_DIR/ag.cli" || nt_fail "not every 1 MiB exchange completed"
	grep -q "rail 1 (r2 .*): address removed: down" "$NT_DIR/ag.cli" ||
		nt_fail "the client never followed the address's removal (finished before it?): $(grep -h 'rail 1' "$NT_DIR/ag.cli" | head -n 4)"
	grep -q "rail 1 (r2 .*): address back: in use again" "$NT_DIR/ag.cli" ||
		nt_fail "the client never took the rail back with its address: $(grep -h 'rail 1' "$NT_DIR/ag.cli" | head -n 6)"
	nt_ok "800 checked 1 MiB ping-pongs; rail 2 down at its address's removal and back with it"
	grep -h "rail 1 (r2" "$NT_DIR/ag.cli" | sed 's/^/  /' | head -n 4
	;;
addr-change)
	a=$(tb_addr 2 2) b=$(tb_addr 2 2 | sed 's/\.[0-9]*$/.11/') # the client's rail 2 (ri2n rail 1)
	tx2() { ip netns exec "$ns2" awk '$1 == "r2:" { print $10 }' /proc/net/dev; }
	ip netns exec "$ns2" sysctl -qw net.ipv4.conf.r2.promote_secondaries=1
	(for ((i = 0; i < 200; i++)); do
		ip netns exec "$ns2" ss -uan | grep -q " $a:[0-9]" && break
		sleep 0.05
	 done
	 sleep 0.5; ip -n "$ns2" addr add "$b/24" dev r2; ip -n "$ns2" addr del "$a/24" dev r2
	 sleep 0.3; tx2 >"$NT_DIR/tx2.0") &
	NT_PIDS+=($!)
	pingpong ac -c -S 1048576 -I 800
	grep -Eq "^1m +800 +=800 " "$NT_DIR/ac.cli" || nt_fail "not every 1 MiB exchange completed"
	grep -q "rail 1 (r2 $b/24): address changed from $a: rebound, [1-9][0-9]* links\\? told" "$NT_DIR/ac.cli" ||
		nt_fail "the client did not move rail 2 to $b (finished before it?): $(grep -h 'rail 1' "$NT_DIR/ac.cli" | head -n 4)"
	[ -s "$NT_DIR/tx2.0" ] || nt_fail "the address was never changed (the run ended first?)"
	sent=$(($(tx2) - $(cat "$NT_DIR/tx2.0")))
	((sent > 10000000)) || nt_fail "only $sent bytes left the client on rail 2 after the move"
	nt_ok "800 checked 1 MiB ping-pongs; rail 2's address changed, the rail moved, $((sent / 1000000)) MB sent on it after"
	grep -h "rail 1 (r2" "$NT_DIR/ac.cli" | sed 's/^/  /' | head -n 3
	;;
rail-new)
	# rail 2 has no address in either host at start: each side waits for it, then opens it
	a1=$(tb_addr 1 2) a2=$(tb_addr 2 2)
	ip -n "$ns1" addr del "$a1/24" dev r2 && ip -n "$ns2" addr del "$a2/24" dev r2 ||
		nt_fail "cannot delete rail 2's addresses"
	tx2() { ip netns exec "$ns2" awk '$1 == "r2:" { print $10 }' /proc/net/dev; }
	(sleep 1; ip -n "$ns1" addr add "$a1/24" dev r2; sleep 0.3; tx2 >"$NT_DIR/tx2.0"
	 ip -n "$ns2" addr add "$a2/24" dev r2) &
	NT_PIDS+=($!)
	pingpong rn -c -S 1048576 -I 800
	grep -Eq "^1m +800 +=800 " "$NT_DIR/rn.cli" || nt_fail "not every 1 MiB exchange completed"
	for f in rn.srv rn.cli; do
		grep -q "rail 1 (r2 198\.18\.2\.[12]/24): new address: in use, offered to" \
			"$NT_DIR/$f" || nt_fail "$f: rail 2 not opened on its new address (finished before it?): $(grep -h 'r2' "$NT_DIR/$f" | head -n 4)"
	done
	[ -s "$NT_DIR/tx2.0" ] || nt_fail "the addresses were never added (the run ended first?)"
	sent=$(($(tx2) - $(cat "$NT_DIR/tx2.0")))
	((sent > 10000000)) || nt_fail "only $sent bytes left the client on rail 2 once it had its address"
	nt_ok "800 checked 1 MiB ping-pongs; rail 2 without an address at start, opened when it came, $((sent / 1000000)) MB sent on it"
	grep -h "rail 1 (r2" "$NT_DIR/rn.cli" | sed 's/^/  /' | head -n 2
	;;
dead-peer)
	setsid timeout -s KILL 60 ip netns exec "$ns1" "${penv[@]}" fi_pingpong -p ri2n -e rdm \
		-S 1024 -I 100000000 >"$NT_DIR/dp.srv" 2>&1 &
	NT_PIDS+=($!)
	srv=$!
	sleep 0.5
	setsid timeout -s KILL 60 ip netns exec "$ns2" "${penv[@]}" fi_pingpong -p ri2n -e rdm \
		-S 1024 -I 100000000 "$ctl" >"$NT_DIR/dp.cli" 2>&1 &
	NT_PIDS+=($!)
	cli=$!
	sleep 1.5
	kill -0 "$cli" 2>/dev/null && kill -0 "$srv" 2>/dev/null ||
		nt_fail "the ping-pong ended before the kill: $(tail -n 5 "$NT_DIR/dp.cli" "$NT_DIR/dp.srv")"
	kill -9 -- "-$cli"
	t0=$(date +%s%N)
	for ((i = 0; i < 50; i++)); do
		grep -q 'connection failed: connection reset by peer' "$NT_DIR/dp.srv" && break
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill -9 -- "-$srv" 2>/dev/null
	wait "$cli" "$srv" 2>/dev/null
	[ $i -lt 50 ] || nt_fail "no connection of the server failed with a reset within 5 s of its client's kill -9: $(tail -n 5 "$NT_DIR/dp.srv")"
	grep -q 'dead-peer timeout' "$NT_DIR/dp.srv" && nt_fail "a connection ended by the dead-peer timeout"
	nt_ok "the killed client's server saw its connections reset by peer (after ${ms} ms)"
	;;
stat)
	stat=${RI2N_STAT:?RI2N_STAT must name ri2n-stat}
	command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
	run=$NT_DIR/run
	mkdir -m 0700 "$run"
	penv+=(RI2N_RUN_DIR="$run")
	# 1 MiB ping-pongs, checked, for as long as the checks below take (then ended)
	setsid ip netns exec "$ns1" "${penv[@]}" fi_pingpong -p ri2n -e rdm -c -S 1048576 -I 1000000 \
		>"$NT_DIR/st.srv" 2>&1 &
	NT_PIDS+=($!)
	srv=$!
	sleep 0.5
	setsid ip netns exec "$ns2" "${penv[@]}" fi_pingpong -p ri2n -e rdm -c -S 1048576 -I 1000000 \
		"$ctl" >"$NT_DIR/st.cli" 2>&1 &
	NT_PIDS+=($!)
	pp=$!
	# rails STATE: 0 when ri2n-stat shows both fi_pingpong endpoints, each with a
	# connection whose rail 1 is STATE (down: with a cause; up: after a down and an up)
	rails() {
		"$stat" --json --dir "$run" >"$NT_DIR/stat.json" 2>&1 || return 2
		python3 - "$1" "$NT_DIR/stat.json" <<'PY'
import json, sys
want, d = sys.argv[1], json.load(open(sys.argv[2]))
eps = [p for p in d["processes"] if p.get("driver") == "libfabric" and p.get("cmd") == "fi_pingpong"]
def ok(c):
    r = c["rails"][1] if len(c["rails"]) > 1 else None
    if not r or r["state"] != want:
        return False
    return r["cause"] != "" if want == "down" else r["downs"] >= 1 and r["ups"] >= 1
sys.exit(0 if len(eps) == 2 and all(any(ok(c) for c in p["connections"]) for p in eps) else 1)
PY
	}
	# wait_rails STATE SECONDS
	wait_rails() {
		local i
		for ((i = 0; i < $2 * 10; i++)); do
			kill -0 "$pp" 2>/dev/null || return 1
			rails "$1" && return 0
			sleep 0.1
		done
		return 1
	}
	for ((i = 0; i < 100; i++)); do
		"$stat" --json --dir "$run" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
eps = [p for p in d["processes"] if p.get("driver") == "libfabric" and p.get("cmd") == "fi_pingpong"]
sys.exit(0 if len(eps) == 2 and all(any(len(c["rails"]) == 2 and all(r["state"] == "up" for r in c["rails"])
                                         for c in p["connections"]) for p in eps) else 1)' && break
		sleep 0.1
	done
	[ $i -lt 100 ] || nt_fail "ri2n-stat never showed both fi_pingpong endpoints with both rails up: $(cat "$NT_DIR/stat.json" 2>/dev/null | head -c 600)"
	nt_note "both endpoints published, rails up"
	tb_fault blackhole 2 2 on
	wait_rails down 10 || nt_fail "ri2n-stat never showed rail 1 down in the black hole: $(head -c 1500 "$NT_DIR/stat.json")"
	nt_note "in the black hole: $("$stat" --dir "$run" | grep -E '^ +1 ' | head -n 2 | tr -s ' ' | tr '\n' ';')"
	tb_fault blackhole 2 2 off
	wait_rails up 10 || nt_fail "ri2n-stat never showed rail 1 up again after the heal: $(head -c 1500 "$NT_DIR/stat.json")"
	nt_note "after the heal: $("$stat" --dir "$run" | grep -E '^ +1 ' | head -n 2 | tr -s ' ' | tr '\n' ';')"
	kill -0 "$srv" 2>/dev/null || nt_fail "the fi_pingpong server ended early: $(tail -n 5 "$NT_DIR/st.srv")"
	# enough seen: end the ping-pong (killed: no fi_close removes the snapshots, ri2n-stat
	# must know them for files of gone processes and remove them)
	kill -9 -- "-$pp" "-$srv" 2>/dev/null
	wait "$pp" "$srv" 2>/dev/null
	"$stat" --dir "$run" >/dev/null
	# (a temporary a process was killed while writing is no snapshot: ri2n-stat reads *.stat)
	[ -z "$(ls "$run" | grep -v '\.tmp$')" ] ||
		nt_fail "snapshots of gone processes left in the run directory: $(ls "$run")"
	nt_ok "ri2n-stat showed both fi_pingpong endpoints' rail 1 go down in the black hole and come back"
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
exit 0
