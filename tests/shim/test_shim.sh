#!/usr/bin/env bash
# Unmodified TCP programs under ri2n-run in namespaces on 2 rails (root;
# exit 77 = skipped).
#
#   tests/shim/test_shim.sh SCENARIO
#
#   iperf3  iperf3 -s -1 (a dual-stack "::" listener) and iperf3 -c, both
#           under ri2n-run: a run, a reverse run, and a run with rail 2
#           black-holed for 2.5 s in the middle; ri2n must carry every stream
#           (iperf3's JSON names "ri2n" as the congestion control; ri2n-stat
#           shows both rails carrying the data connection) and every run must
#           complete
#   nc      netcat-openbsd moves 64 MiB, sha256 compared; again with rail 2
#           black-holed mid-transfer (rails slowed to 100 Mbit/s so that the
#           transfer lasts long enough)
#   http    python3 -m http.server and curl: a 64 MiB download, sha256
#           compared; again with rail 2 black-holed mid-transfer
#   probe   shim_probe: non-blocking connect + epoll + SO_ERROR, refused
#           connects, dup2/F_DUPFD/close_range, resets, forked server and
#           client children, an inetd-style exec, threads, sendfile/splice,
#           options, TCP_INFO, v4-mapped IPv6, a vfork()ed child's
#           close_range, RI2N_RUN_PORTS
#   early   shim_fidelity: an epoll server whose listener is registered (and
#           dup'ed) before listen(), and a client whose socket is registered
#           in epoll, dup'ed and given O_ASYNC/F_SETOWN before a non-blocking
#           connect(): the registrations keep delivering events, every byte
#           of a 4 MiB echo checked
#   nginx   an nginx reverse proxy (ri2n-run --ports 8080: its upstream
#           connections convert, its own listener stays TCP) in host 1 in
#           front of an nginx upstream under ri2n-run in host 2, whose two
#           prefork workers accept on the listener they inherited from the
#           master: curl fetches 100 MiB through the proxy, sha256 compared
#   close   a connection per request: nginx (a master and two prefork
#           workers) under ri2n-run in host 2 serves a small file; wrk under
#           ri2n-run in host 1 fetches it with `Connection: close` from 16
#           clients for 1 s, three times; a Lua check compares every response
#           with the file, and each wrk must exit within 5 s of its run (it
#           leaves with connects still under way: those must not hold the
#           exit for the whole exit linger, 30 s); then nginx as one process
#           (no master), whose thread reads the handshakes while it waits in
#           epoll: 32 clients for 1 s, verified, and its listener (ri2n-stat)
#           must have dropped no handshake datagram
#   exit    shim_fidelity: a process writes 16 MiB and exit()s at once, with
#           its peer's bytes unread and the socket never closed; the peer,
#           reading late and slowly, must get every byte and then EOF (client
#           and server side); an unmodified sockperf server under ri2n-run
#           serves three ping-pong clients and reports nothing
#   errors  shim_fidelity: a second bind on a served port fails with
#           EADDRINUSE (with SO_REUSEADDR too); TCP_USER_TIMEOUT becomes the
#           dead-peer timeout (a read fails with ETIMEDOUT once every rail is
#           black-holed), is refused (EISCONN) once connected; SO_LINGER
#           {1, 0} resets the connection at close, {1, N} is refused
#   quiet   the epoll server with an idle client; its host's rail interfaces
#           are deleted: the connection ends once (ETIMEDOUT, a 2 s dead-peer
#           timeout) and the server then uses under a quarter of a CPU over
#           2 s (a spin detector with a generous bound, not a speed figure)
#   posix   shim_posix: an epoll echo server and client whose epoll data use
#           all 64 bits (ri2n's old rail tag among them), waiting through their
#           sets and dups of them, with a forked child waiting on the client's
#           set by the raw system call: every event names a registration of the
#           program's; FIONREAD after readiness equals what the read gets (400
#           rounds, both ends); SIOCOUTQ falls to 0; every byte checked; every
#           socket(), accept(), epoll_create1(), dup() and pipe() returns the
#           lowest number the program does not hold (accept() also when the
#           server closed a number while the connection waited), and a converted
#           socket (blocking or non-blocking + close-on-exec) keeps its number
#           and flags; then a listener and two forked workers waiting on it in
#           their own epoll sets with EPOLLEXCLUSIVE (as nginx's): 200
#           connections in turn, each accepted and echoed, and each wakes one
#           worker (at most 50 empty wakes)
#   cancel  shim_cancel: threads blocked in epoll_wait, epoll_pwait, poll,
#           ppoll, select, pselect, read, accept and connect (to an address
#           on the rails nobody has) on ri2n sockets are
#           cancelled and end; a close() cancelled before it acts leaves its
#           connection working; then other connections on the same rails
#           move 4 MiB each way (blocking write and read, and epoll on a
#           non-blocking socket), the listener accepts again, every byte
#           checked, and exit() returns (RI2N_EXIT_LINGER_MS=500)
#   pollheld shim_pollheld: two connections served and read in one thread
#           waiting in poll and select by turns (300 rounds of up to 256 KiB
#           replies): a wake-up must find some replies in ri2n's buffer only
#           (the raw FIONREAD of the descriptor 0, the shim's not), and such a
#           reply left unread 300 ms is read whole by the raw read system call
#           within 3 s, as one read by raw non-blocking reads between poll,
#           select and epoll waits; then 20 replies that come while the thread
#           sleeps, each reported by an edge-triggered set's wait with no
#           timeout; every byte checked both ways
#   signal  shim_fidelity: 200 connections closed by a SIGALRM handler (1 ms
#           timer) while the main thread is inside the shim on them
#           (epoll_ctl, getsockopt, setsockopt); a watchdog fails a deadlock
#   order   shim_order: a TCP connection to itself written by another
#           number for it (dup, F_DUPFD, dup2 onto stdout + stdio), stdio on
#           fdopen(dup), fortified dprintf, pwritev2, a posix_spawn'ed and a
#           vfork'ed child and a process it was passed to by SCM_RIGHTS, each
#           alternating with write() for 2000 rounds: every byte arrives in
#           order (docs/RI2N-RUN.md)
#   sigrestart
#           shim_sigrestart: a blocking read() interrupted by 25 SIGCHLD
#           handlers installed with SA_RESTART returns the data, never EINTR,
#           as on a TCP socket
#   v6      an IPv6-only bed (2001:2:0:<i>::<k>/64): nc -6 (a dual-stack "::"
#           listener) and a python3 server on an IPV6_V6ONLY "::" listener
#           each take 8 MiB from an IPv6 client, sha256 compared; the
#           client's host sent its bytes as UDP over IPv6 on both rails and
#           no TCP segment (/proc/net/snmp, snmp6); options and TCP_INFO
#           answer as on IPv4; accept, getsockname and getpeername give the
#           rails' IPv6 addresses at both ends, and so do a forked child,
#           an exec'd child and a process the connection was sent to over
#           SCM_RIGHTS (the last two by the pair's name, rn_pairname.c); a
#           program listening on 0.0.0.0 and on an IPV6_V6ONLY "::" with one
#           port (redis) gets the IPv6 peer over ri2n on the first, the
#           second staying TCP; with link-local rails a connect to the
#           server's on r1 (with its scope) converts, every name with r1's
#           scope
#   v6-mixed
#           rail 1 IPv4, rail 2 IPv6: nc -6 -l takes 8 MiB from a client
#           connecting to its IPv6 address and 8 MiB from one connecting to
#           its IPv4 one (v4-mapped), sha256 compared, each over both rails
#           and no TCP segment
#
# Speed is not asserted (bench/ measures it); the figures are printed.
# Environment: RI2N_RUN (the launcher), RI2N_RUN_LIB (the shim), RI2N_STAT,
# RI2N_SHIM_PROBE, RI2N_XFER (lib.sh's check that the build exists).
source "$(dirname "$0")/../netns/lib.sh"

scenario=${1:?usage: test_shim.sh iperf3|nc|http|probe|early|nginx|close|forking|exit|errors|quiet|signal|order|posix|sigrestart|cancel|v6|v6-mixed}
RUN=${RI2N_RUN:-$NT_ROOT/tools/ri2n-run}
STAT=${RI2N_STAT:-$(dirname "$NT_XFER")/ri2n-stat}
PROBE=${RI2N_SHIM_PROBE:-$NT_ROOT/build/tests/shim_probe}
FIDELITY=${RI2N_SHIM_FIDELITY:-$NT_ROOT/build/tests/shim_fidelity}
ORDER=${RI2N_SHIM_ORDER:-$NT_ROOT/build/tests/shim_order}
POSIX=${RI2N_SHIM_POSIX:-$NT_ROOT/build/tests/shim_posix}
SIGRESTART=${RI2N_SHIM_SIGRESTART:-$NT_ROOT/build/tests/shim_sigrestart}
CANCEL=${RI2N_SHIM_CANCEL:-$NT_ROOT/build/tests/shim_cancel}
POLLHELD=${RI2N_SHIM_POLLHELD:-$NT_ROOT/build/tests/shim_pollheld}
tag=shim-$scenario # the bed's name: nt_init makes its tag (tests/netns/tag.sh)

[ -x "$RUN" ] || nt_skip "ri2n-run not found at $RUN"
if [ -n "${RI2N_RUN_LIB:-}" ]; then
	[ -f "$RI2N_RUN_LIB" ] || nt_skip "libri2n-run.so not built at $RI2N_RUN_LIB"
	export RI2N_RUN_LIB
fi
need() { for t in "$@"; do command -v "$t" >/dev/null || nt_skip "$t is not installed"; done; }
need sha256sum timeout setsid

# st_bg NAME HOST CMD...: CMD under ri2n-run (verbose) in HOST's namespace, in the
# background, leading its own process group; stdout NAME.out, stderr NAME.err, pid ST_PID.
st_bg() {
	local name=$1 ns
	ns=$(tb_ns "$2")
	shift 2
	RI2N_RAILS=$NT_RAILS RI2N_LOG=warn setsid timeout -s KILL "${ST_TIMEOUT:-120}" \
		ip netns exec "$ns" "$RUN" --verbose -- "$@" \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err" &
	ST_PID=$!
	NT_PIDS+=("$ST_PID")
}

# st_fg NAME HOST CMD...: the same in the foreground; returns CMD's status.
st_fg() {
	local name=$1 ns
	ns=$(tb_ns "$2")
	shift 2
	RI2N_RAILS=$NT_RAILS RI2N_LOG=warn timeout -s KILL "${ST_TIMEOUT:-120}" \
		ip netns exec "$ns" "$RUN" --verbose -- "$@" \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err"
}

# The pid of the process in HOST's namespace whose command line starts with WORDS.
st_pid_of() { # HOST WORDS
	local p
	for p in $(ip netns pids "$(tb_ns "$1")"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$2" && { echo "$p"; return; }
	done
}

# Waits until something in HOST's namespace listens on PORT (TCP or ri2n's UDP).
st_wait_listen() { # HOST PORT
	for _ in $(seq 50); do
		ip netns exec "$(tb_ns "$1")" ss -Htuln "sport = :$2" | grep -q . && return 0
		sleep 0.1
	done
	nt_fail "nothing listens on port $2 in host $1"
}

# TSan stops a forked child of a threaded process that starts a thread (its
# die_after_fork), as a worker or child taking a connection over starts its engine:
# under TSan handing over is off (RI2N_HANDOVER=0) and not checked. Returns 0 then.
st_tsan_no_handover() {
	[ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" libtsan || return 1
	export RI2N_HANDOVER=0
	nt_note "TSan build: a forked child may not start threads; connections are not handed over"
}

# Requires the verbose lines saying both ends went over ri2n.
st_require_ri2n() { # CLIENT_NAME SERVER_NAME
	grep -q "connect to .* over ri2n" "$NT_DIR/$1.err" ||
		nt_fail "$1: the client's connection did not go over ri2n: $(grep ri2n-run "$NT_DIR/$1.err")"
	grep -q "accepted .* over ri2n" "$NT_DIR/$2.err" ||
		nt_fail "$2: the server accepted nothing over ri2n: $(grep ri2n-run "$NT_DIR/$2.err")"
}

# Requires ri2n's warnings (either end) to show rail 2 going down and coming back.
st_require_failover() { # NAME...
	local n down=0 up=0
	for n in "$@"; do
		grep -Eq 'rail 1 \(198\.18\.2\.[0-9]+ -> 198\.18\.2\.[0-9]+\) down' "$NT_DIR/$n.err" && down=1
		grep -Eq 'rail 1 \(198\.18\.2\.[0-9]+ -> 198\.18\.2\.[0-9]+\) up' "$NT_DIR/$n.err" && up=1
	done
	[ $down = 1 ] || nt_fail "no end reported rail 2 down during the black hole"
	[ $up = 1 ] || nt_fail "no end reported rail 2 up again after the heal"
}

# Black-holes rail 2 of host 1 after BEFORE s, for FOR s.
st_blackhole() { # BEFORE FOR
	sleep "$1"
	tb_fault blackhole 1 2 on
	sleep "$2"
	tb_fault blackhole 1 2 off
}

st_sha() { sha256sum "$1" | cut -d' ' -f1; }

# Stops a server started with st_bg (its whole process group), quietly.
st_stop() { # PID
	kill -TERM -- "-$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# ---- iperf3 ----

# iperf3's JSON (stdin): "BITS_PER_SECOND CONGESTION ZERO_INTERVALS"
iperf_summary() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
e = d["end"]
bps = e["sum_received"]["bits_per_second"]
# a stall is a whole interval without a byte, not the short tail iperf3 may
# close its last interval with
iv = [i["sum"] for i in d["intervals"]]
zero = sum(1 for i in iv if i["bytes"] == 0 and i["seconds"] >= 0.25)
print(int(bps), e.get("sender_tcp_congestion", "?"), zero,
      ",".join("%.2f+%.2f:%d" % (i["start"], i["seconds"], i["bytes"] >> 10) for i in iv))'
}

# iperf_start NAME PORT SECONDS [client args]: a one-off server (iperf3 -s -1) in host 2
# and the client in host 1, both in the background (client pid in ST_PID, server's
# in ST_SRV).  A fresh server per run: see the note in scenario_iperf3.
iperf_start() {
	local name=$1 port=$2 secs=$3
	shift 3
	# no -4: iperf3 listens on "::" (dual stack), which the shim takes for IPv4
	st_bg ${name}_srv 2 iperf3 -s -1 -p "$port"
	ST_SRV=$ST_PID
	st_wait_listen 2 "$port"
	st_bg "$name" 1 iperf3 -c "$(nt_addr 2)" -p "$port" -t "$secs" -J "$@"
}

# Waits for the client NAME and its server and checks the figures; sets ST_MBPS, ST_ZERO, ST_IV.
iperf_check() { # NAME CLIENT_PID SERVER_PID
	local name=$1 bps cc zero iv
	wait "$2" || nt_fail "$name: iperf3 client failed: $(tail -n 20 "$NT_DIR/$name.out")"
	wait "$3" || nt_fail "$name: iperf3 server failed: $(tail -n 20 "$NT_DIR/${name}_srv.out")"
	read -r bps cc zero iv < <(iperf_summary <"$NT_DIR/$name.out") ||
		nt_fail "$name: iperf3's JSON unreadable"
	[ "$cc" = ri2n ] || nt_fail "$name: congestion control '$cc': the data stream was not ri2n's"
	# sane: something moved, and no more than 2 rails of 1 Gbit/s can carry
	[ "$bps" -gt 0 ] && [ "$bps" -le 2100000000 ] || nt_fail "$name: $bps bit/s is not a sane figure"
	st_require_ri2n "$name" "${name}_srv"
	ST_MBPS=$((bps / 1000000))
	ST_ZERO=$zero
	ST_IV=$iv
}

# "state:rx_data state:rx_data" for the server connection that received the most.
stat_rails() { # PID
	ip netns exec "$(tb_ns 2)" "$STAT" --json --pid "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
best, most = "", 0
for p in d["processes"]:
    for c in p["connections"]:
        if c["app_rx_bytes"] > most:
            most = c["app_rx_bytes"]
            best = " ".join("%s:%d" % (x["state"], x["rx_data"]) for x in c["rails"])
print(best)'
}

scenario_iperf3() {
	local spid rails cpid
	need iperf3 python3
	[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
	nt_init "$tag" 2 2 1gbit
	# A fresh one-off server per run: a persistent `iperf3 -s` listens anew after
	# each test, which fails while a connection of the last test still holds the
	# port (ri2n: a peer that exits before acknowledging our FIN leaves the
	# connection, and its port, until the dead-peer timeout).

	# a plain run, with ri2n-stat looking at the server's connections half-way
	iperf_start plain 5201 6
	cpid=$ST_PID
	sleep 3
	spid=$(st_pid_of 2 "iperf3 -s")
	[ -n "$spid" ] || nt_fail "iperf3 server process not found"
	rails=$(stat_rails "$spid")
	iperf_check plain "$cpid" "$ST_SRV"
	read -r -a r <<<"$rails"
	[ ${#r[@]} -eq 2 ] || nt_fail "ri2n-stat: the data connection should use 2 rails: '$rails'"
	for x in "${r[@]}"; do
		[ "${x#*:}" -gt 1000 ] || nt_fail "ri2n-stat: a rail carried almost no data: '$rails'"
	done
	nt_note "iperf3 -c over ri2n: $ST_MBPS Mbit/s on 2 rails of 1 Gbit/s (ri2n-stat, rail state:DATA packets: $rails)"

	iperf_start reverse 5202 3 -R
	iperf_check reverse "$ST_PID" "$ST_SRV"
	nt_note "iperf3 -R (the server sends): $ST_MBPS Mbit/s"

	iperf_start blackhole 5203 8 -i 0.5
	cpid=$ST_PID
	st_blackhole 2.5 2.5
	iperf_check blackhole "$cpid" "$ST_SRV"
	# A sanitizer build streams at a third of the rate with every core busy, and its
	# rail verdict takes 0.2-0.7 s instead of 10-20 ms (0.1 s intervals, both before
	# and after the peer monitor), during which the window stays full: there one
	# empty half-second is the sanitizer's, two are a stall.
	local stall=0
	if [ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" "libasan|libtsan"; then
		stall=1
	fi
	[ "$ST_ZERO" -le "$stall" ] ||
		nt_fail "blackhole: $ST_ZERO half-second intervals moved nothing (start+seconds:KiB sent: $ST_IV)"
	st_require_failover blackhole blackhole_srv
	nt_note "iperf3 with rail 2 black-holed for 2.5 s: completed, $ST_MBPS Mbit/s overall, $ST_ZERO empty interval(s), $stall allowed"
	nt_ok "iperf3: unmodified client and server over ri2n, also through a black-holed rail"
}

# ---- netcat ----

nc_run() { # NAME PORT FILE
	local name=$1 port=$2 file=$3 spid
	# the listener's stdin is /dev/null: it exits when the sender's stream ends
	st_bg ${name}_srv 2 nc -l "$port" </dev/null
	spid=$ST_PID
	st_wait_listen 2 "$port"
	st_fg ${name}_cli 1 nc -N "$(nt_addr 2)" "$port" <"$file" || nt_fail "$name: nc sender failed"
	wait "$spid" || nt_fail "$name: nc listener failed"
	[ "$(st_sha "$NT_DIR/${name}_srv.out")" = "$(st_sha "$file")" ] ||
		nt_fail "$name: sha256 differs ($(stat -c %s "$NT_DIR/${name}_srv.out") bytes arrived)"
	st_require_ri2n ${name}_cli ${name}_srv
}

scenario_nc() {
	need nc
	nc -h 2>&1 | grep -qi openbsd || nt_skip "nc is not netcat-openbsd"
	nt_init "$tag" 2 2 1gbit
	head -c 64M /dev/urandom >"$NT_DIR/file"
	nc_run plain 7000 "$NT_DIR/file"
	nt_note "nc: 64 MiB, sha256 matches"

	for r in 1 2; do tb_fault rate 1 $r 100mbit; done
	st_blackhole 1 1.5 &
	local fpid=$!
	nc_run blackhole 7001 "$NT_DIR/file"
	wait $fpid
	st_require_failover blackhole_cli blackhole_srv
	nt_ok "nc: 64 MiB moved with a matching sha256, also with rail 2 black-holed mid-transfer"
}

# ---- python http.server and curl ----

http_get() { # NAME URL
	if [ -n "$ST_PYCLIENT" ]; then
		local try
		for try in 1 2; do
			ST_TIMEOUT=60 st_fg "$1" 1 "$ST_PYCLIENT" -c '
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=50) as r, open(sys.argv[2], "wb") as f:
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        f.write(b)
' "$2" "$NT_DIR/$1.body" && break
			# Rarely, python under a preloaded TSan runtime hangs at start-up, before it
			# opens a socket (the way curl always does); that is not ri2n's to answer
			# for, so it gets one more try.  A client that got as far as connecting
			# has no excuse.
			if [ "$try" = 1 ] && ! grep -q "connect to" "$NT_DIR/$1.err"; then
				nt_note "$1: the python client never connected (sanitizer start-up hang?); once more"
				continue
			fi
			nt_fail "$1: the python client failed: $(tail -n 5 "$NT_DIR/$1.err")"
		done
		echo 0 >"$NT_DIR/$1.out"
	else
		st_fg "$1" 1 curl -sS --max-time 100 -o "$NT_DIR/$1.body" -w '%{speed_download}\n' "$2" ||
			nt_fail "$1: curl failed: $(tail -n 5 "$NT_DIR/$1.err")"
	fi
	[ "$(st_sha "$NT_DIR/$1.body")" = "$(st_sha "$NT_DIR/www/file")" ] ||
		nt_fail "$1: sha256 differs ($(stat -c %s "$NT_DIR/$1.body") bytes)"
}

scenario_http() {
	local py spid
	need curl
	py=$(command -v /usr/bin/python3 python3 | head -n 1)
	[ -n "$py" ] || nt_skip "python3 is not installed"
	ST_PYCLIENT=
	if [ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" "libasan|libtsan"; then
		# curl hangs in setlocale with a sanitizer runtime preloaded (with or without the shim)
		ST_PYCLIENT=$py
		nt_note "sanitizer build: python's urllib instead of curl as the client"
	fi
	nt_init "$tag" 2 2 1gbit
	mkdir -p "$NT_DIR/www"
	head -c 64M /dev/urandom >"$NT_DIR/www/file"
	st_bg server 2 "$py" -m http.server 8000 --directory "$NT_DIR/www"
	spid=$ST_PID
	st_wait_listen 2 8000
	http_get plain "http://$(nt_addr 2):8000/file"
	st_require_ri2n plain server
	if [ -n "$ST_PYCLIENT" ]; then
		nt_note "urllib from python3 -m http.server: 64 MiB, sha256 matches"
	else
		nt_note "curl from python3 -m http.server: 64 MiB, sha256 matches, $(awk '{printf "%d", $1 * 8 / 1e6}' "$NT_DIR/plain.out") Mbit/s"
	fi

	for r in 1 2; do tb_fault rate 1 $r 100mbit; done
	st_blackhole 1 1.5 &
	local fpid=$!
	http_get blackhole "http://$(nt_addr 2):8000/file"
	wait $fpid
	st_require_failover blackhole server
	st_stop "$spid"
	nt_ok "http: 64 MiB downloaded with a matching sha256, also with rail 2 black-holed mid-transfer"
}

# ---- shim_probe ----

scenario_probe() {
	[ -x "$PROBE" ] || nt_skip "shim_probe not built at $PROBE"
	nt_init "$tag" 2 2 1gbit
	# 9002 is left out: it must stay TCP at both ends; 9003 must be refused over ri2n
	export RI2N_RUN_PORTS=9000,9001,9003
	st_bg server 2 "$PROBE" serve 9000
	local srv=$ST_PID
	st_wait_listen 2 9002
	st_fg check 1 "$PROBE" check "$(nt_addr 2)" 9000
	local rc=$?
	sed 's/^/  /' "$NT_DIR/check.out"
	[ $rc -eq 0 ] || nt_fail "shim_probe: $(grep -c FAIL "$NT_DIR/check.out") check(s) failed"
	grep -q "^listening ri2n ri2n tcp" "$NT_DIR/server.out" ||
		nt_fail "probe listeners: '$(head -n 1 "$NT_DIR/server.out")', want 'listening ri2n ri2n tcp'"
	kill -0 "$srv" 2>/dev/null || nt_fail "the probe server died: $(tail -n 5 "$NT_DIR/server.err")"
	st_stop "$srv"
	nt_ok "probe: $(grep -c '^ok' "$NT_DIR/check.out") socket behaviours kept under ri2n-run"
}

# ---- registrations made before connect and listen ----

scenario_early() {
	[ -x "$FIDELITY" ] || nt_skip "shim_fidelity not built at $FIDELITY"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$FIDELITY" serve 9100
	local srv=$ST_PID
	st_wait_listen 2 9100
	st_fg early 1 "$FIDELITY" early "$(nt_addr 2)" 9100
	local rc=$?
	sed 's/^/  /' "$NT_DIR/early.out"
	[ $rc -eq 0 ] || nt_fail "early: $(grep -c FAIL "$NT_DIR/early.out") check(s) failed: $(tail -n 3 "$NT_DIR/early.err")"
	grep -q "^listening ri2n ri2n" "$NT_DIR/server.out" ||
		nt_fail "the epoll server's listener and its dup: '$(head -n 1 "$NT_DIR/server.out")', want 'listening ri2n ri2n'"
	st_require_ri2n early server
	kill -0 "$srv" 2>/dev/null || nt_fail "the epoll server died: $(tail -n 5 "$NT_DIR/server.err")"
	st_stop "$srv"
	nt_ok "early: epoll registrations, dups, O_ASYNC and F_SETOWN made before connect/listen keep working"
}

# ---- POSIX use of sockets and epoll sets ----

scenario_posix() {
	[ -x "$POSIX" ] || nt_skip "shim_posix not built at $POSIX"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$POSIX" serve 9100
	local srv=$ST_PID rc
	st_wait_listen 2 9100
	ST_TIMEOUT=60 st_fg client 1 "$POSIX" client "$(nt_addr 2)" 9100
	rc=$?
	sed 's/^/  /' "$NT_DIR/client.out"
	[ $rc -eq 0 ] || nt_fail "client: $(grep -c FAIL "$NT_DIR/client.out") check(s) failed: $(tail -n 3 "$NT_DIR/client.err")"
	! grep FAIL "$NT_DIR/server.out" || nt_fail "the server saw the failures above"
	st_require_ri2n client server
	kill -0 "$srv" 2>/dev/null || nt_fail "the epoll server died: $(tail -n 5 "$NT_DIR/server.err")"
	st_stop "$srv"
	# prefork workers, each waiting on the inherited listener with EPOLLEXCLUSIVE
	st_tsan_no_handover || true
	st_bg prefork 2 "$POSIX" prefork 9101 200
	srv=$ST_PID
	st_wait_listen 2 9101
	ST_TIMEOUT=60 st_fg knock 1 "$POSIX" knock "$(nt_addr 2)" 9101 200 ||
		nt_fail "knock: $(cat "$NT_DIR/knock.out") $(tail -n 3 "$NT_DIR/knock.err")"
	wait "$srv"
	rc=$?
	sed 's/^/  /' "$NT_DIR/prefork.out"
	[ $rc -eq 0 ] || nt_fail "prefork: $(grep FAIL "$NT_DIR/prefork.out") $(tail -n 3 "$NT_DIR/prefork.err")"
	nt_ok "posix: epoll data of every value, dup'ed and shared epoll sets, FIONREAD after readiness, one prefork worker woken per connection"
}

# ---- poll and select: bytes held in ri2n's buffer ----

scenario_pollheld() {
	[ -x "$POLLHELD" ] || nt_skip "shim_pollheld not built at $POLLHELD"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$POLLHELD" serve 9150
	local srv=$ST_PID rc
	st_wait_listen 2 9150
	ST_TIMEOUT=90 st_fg client 1 "$POLLHELD" client "$(nt_addr 2)" 9150
	rc=$?
	sed 's/^/  /' "$NT_DIR/client.out"
	[ $rc -eq 0 ] || nt_fail "client: $(grep -c FAIL "$NT_DIR/client.out") check(s) failed: $(tail -n 3 "$NT_DIR/client.err")"
	for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done # it ends after both closes
	! grep FAIL "$NT_DIR/server.out" || nt_fail "the server saw the failures above"
	st_require_ri2n client server
	st_stop "$srv"
	nt_ok "pollheld: poll and select report bytes held in ri2n's buffer; a raw reader gets them after the age limit"
}

# ---- pthread_cancel in blocking calls ----

scenario_cancel() {
	[ -x "$CANCEL" ] || nt_skip "shim_cancel not built at $CANCEL"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$CANCEL" serve 9200
	local srv=$ST_PID rc
	st_wait_listen 2 9200
	RI2N_EXIT_LINGER_MS=500 ST_TIMEOUT=90 st_fg client 1 "$CANCEL" client \
		"$(nt_addr 2)" 9200 "$(nt_addr 1)" 9201 "$(nt_addr 2 | sed 's/\.[0-9]*$/.99/')"
	rc=$?
	sed 's/^/  /' "$NT_DIR/client.out"
	[ $rc -eq 0 ] || nt_fail "client: status $rc, $(grep -c FAIL "$NT_DIR/client.out") check(s) failed: $(tail -n 3 "$NT_DIR/client.err")"
	grep -q '^exiting' "$NT_DIR/client.out" || nt_fail "the client did not reach its end"
	! grep FAIL "$NT_DIR/server.out" || nt_fail "the server saw the failures above"
	st_require_ri2n client server
	kill -0 "$srv" 2>/dev/null || nt_fail "the server died: $(tail -n 5 "$NT_DIR/server.err")"
	st_stop "$srv"
	nt_ok "cancel: threads cancelled in epoll, poll, select, read, accept and close leave ri2n working; exit() returns"
}

# ---- nginx as a reverse proxy over ri2n ----

# nginx_conf NAME SERVER_BLOCK [MASTER [WORKERS]]: a foreground nginx's configuration under $NT_DIR/NAME.
nginx_conf() {
	local d=$NT_DIR/$1
	mkdir -p "$d/tmp"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process ${3:-on};
worker_processes ${4:-1};
user root;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	$2
}
EOF
}

scenario_nginx() {
	local up px
	need nginx curl
	nt_init "$tag" 2 2 1gbit
	mkdir -p "$NT_DIR/www"
	head -c 100M /dev/urandom >"$NT_DIR/www/file"
	# only the upstream port converts: the proxy's own listener (loopback) and curl stay TCP
	export RI2N_RUN_PORTS=8080
	local handover=1
	st_tsan_no_handover && handover=0
	# the upstream: a master and two prefork workers accepting on the listener they inherited
	nginx_conf upstream "server { listen 8080; root $NT_DIR/www; }" on 2
	st_bg upstream 2 nginx -e stderr -p "$NT_DIR/upstream" -c "$NT_DIR/upstream/nginx.conf"
	up=$ST_PID
	st_wait_listen 2 8080
	nginx_conf proxy "server { listen 127.0.0.1:8081; location / {
		proxy_pass http://$(nt_addr 2):8080; proxy_http_version 1.1; proxy_buffering off; } }"
	st_bg proxy 1 nginx -e stderr -p "$NT_DIR/proxy" -c "$NT_DIR/proxy/nginx.conf"
	px=$ST_PID
	st_wait_listen 1 8081
	ip netns exec "$(tb_ns 1)" timeout -s KILL 100 curl -sS --max-time 90 -o "$NT_DIR/body" \
		-w '%{http_code} %{speed_download}\n' http://127.0.0.1:8081/file >"$NT_DIR/curl.out" \
		2>"$NT_DIR/curl.err" ||
		nt_fail "curl through the nginx proxy failed: $(cat "$NT_DIR/curl.err") (proxy: $(tail -n 5 "$NT_DIR/proxy.err"))"
	[ "$(cut -d' ' -f1 "$NT_DIR/curl.out")" = 200 ] || nt_fail "nginx answered $(cat "$NT_DIR/curl.out")"
	[ "$(st_sha "$NT_DIR/body")" = "$(st_sha "$NT_DIR/www/file")" ] ||
		nt_fail "sha256 differs ($(stat -c %s "$NT_DIR/body") bytes)"
	st_require_ri2n proxy upstream
	grep -q "listener inherited" "$NT_DIR/upstream.err" ||
		nt_fail "the upstream's workers did not accept on the listener they inherited"
	# the worker drove the 100 MiB itself: the master handed the connection over
	[ "$handover" = 0 ] || grep -q "handed over by its listening process" "$NT_DIR/upstream.err" ||
		nt_fail "the worker that accepted the connection did not take it over: $(grep 'listener inherited' "$NT_DIR/upstream.err")"
	kill -0 "$up" 2>/dev/null && kill -0 "$px" 2>/dev/null || nt_fail "an nginx died"
	nt_note "curl via the nginx proxy: 100 MiB, sha256 matches, $(awk '{printf "%d", $2 * 8 / 1e6}' "$NT_DIR/curl.out") Mbit/s"
	st_stop "$px"
	st_stop "$up"
	nt_ok "nginx: a reverse proxy over ri2n delivers 100 MiB intact, driven by the worker that accepted it"
}

# ---- close: a connection per request (nginx and wrk) ----

# wrk's Lua hooks: every response must be a 200 carrying exactly the file named
# by the script's argument; done() prints the counts of every thread.
close_lua() {
	cat <<'EOF'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
	local f = assert(io.open(args[1], "rb"))
	want = f:read("*a")
	f:close()
	good, bad = 0, 0
end
function response(status, headers, body)
	if status == 200 and body == want then good = good + 1 else bad = bad + 1 end
end
function done(summary, latency, requests)
	local g, b = 0, 0
	for _, t in ipairs(threads) do g = g + t:get("good"); b = b + t:get("bad") end
	io.write(string.format("verified good=%d bad=%d\n", g, b))
end
EOF
}

# close_wrk NAME CLIENTS PORT: wrk under ri2n-run in host 1, a connection per
# request for 1 s to PORT of host 2, every response verified, gone within 5 s
# of its run; CLOSE_GOOD is the count of verified responses.
close_wrk() {
	local name=$1 pid n t0 t1 good bad
	t0=$(nt_clock)
	ST_TIMEOUT=60 st_bg "$name" 1 wrk -t1 "-c$2" -d1s -H 'Connection: close' \
		-s "$NT_DIR/check.lua" "http://$(nt_addr 2):$3/small" -- "$NT_DIR/www/small"
	pid=$ST_PID
	# its 1 s run, then 5 s to exit: it hung 30 s when it left with connects under way
	for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 -- "-$pid" 2>/dev/null
		nt_fail "$name did not exit within 5 s of its 1 s run: $(tail -n 3 "$NT_DIR/$name.err")"
	fi
	wait "$pid" || nt_fail "$name exited with status $?: $(tail -n 3 "$NT_DIR/$name.err")"
	t1=$(nt_clock)
	read -r good bad < <(sed -n 's/^verified good=\([0-9]*\) bad=\([0-9]*\)$/\1 \2/p' "$NT_DIR/$name.out")
	[ -n "$good" ] || nt_fail "$name printed no verified counts: $(cat "$NT_DIR/$name.out")"
	[ "$bad" = 0 ] || nt_fail "$name: $bad responses were not the file ($good were)"
	[ "$good" -gt 0 ] || nt_fail "$name got no response"
	! grep -q 'Socket errors' "$NT_DIR/$name.out" ||
		nt_fail "$name: $(grep 'Socket errors' "$NT_DIR/$name.out")"
	! grep -q 'still sending' "$NT_DIR/$name.err" ||
		nt_fail "$name: $(grep 'still sending' "$NT_DIR/$name.err")"
	n=$(grep -c 'connect to .* over ri2n' "$NT_DIR/$name.err")
	[ "$n" -ge "$good" ] || nt_fail "$name: $good responses but only $n connects over ri2n"
	nt_note "$name: $good responses verified over $n connections, wrk gone" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after its start"
	CLOSE_GOOD=$good
}

scenario_close() {
	local up run n total=0 handover=1 accepts drops
	need nginx wrk python3
	[ -x "$STAT" ] || nt_skip "ri2n-stat not built at $STAT"
	nt_init "$tag" 2 2
	st_tsan_no_handover && handover=0
	mkdir -p "$NT_DIR/www"
	head -c 600 /dev/urandom | base64 >"$NT_DIR/www/small"
	close_lua >"$NT_DIR/check.lua"
	nginx_conf upstream "server { listen $(nt_addr 2):8080; root $NT_DIR/www; }" on 2
	st_bg upstream 2 nginx -e stderr -p "$NT_DIR/upstream" -c "$NT_DIR/upstream/nginx.conf"
	up=$ST_PID
	st_wait_listen 2 8080
	for run in 1 2 3; do
		close_wrk "wrk$run" 16 8080
		total=$((total + CLOSE_GOOD))
	done
	st_require_ri2n wrk1 upstream
	kill -0 "$up" 2>/dev/null || nt_fail "nginx died: $(tail -n 5 "$NT_DIR/upstream.err")"
	# a connection per request: the workers took the first over from the master, then,
	# seeing them live a request each, leave most to the master's engine (one in 32 is
	# still taken, to keep measuring: rn_handover_want)
	n=$(grep -c 'handed over by its listening process' "$NT_DIR/upstream.err")
	[ "$handover" = 0 ] || { [ "$n" -ge 1 ] && [ "$n" -le $((total / 4)) ]; } ||
		nt_fail "$n of $total connections were handed over to the worker that accepted them, want 1 to $((total / 4))"
	nt_note "$n of the workers' $total accepts took the connection over from the master"
	st_stop "$up"

	# One process that listens and serves (no master): its thread, waiting in epoll,
	# reads the handshakes and puts the COOKIE_ECHOs and early data aside for the
	# engine.  32 clients connecting at once must lose none of them: a queue of 16
	# dropped the rest, and their clients waited up to 250 ms for the resend.
	nginx_conf single "server { listen $(nt_addr 2):8081; root $NT_DIR/www; }" off
	st_bg single 2 nginx -e stderr -p "$NT_DIR/single" -c "$NT_DIR/single/nginx.conf"
	up=$ST_PID
	st_wait_listen 2 8081
	close_wrk wrk4 32 8081
	# ri2n-stat's snapshot may lag a busy engine: poll until it counts every request
	for _ in $(seq 25); do
		read -r accepts drops <<<"$(nt_listener "$STAT" 2 "$(st_pid_of 2 nginx)" accepts drops_backlog)"
		[ "$accepts" -ge "$CLOSE_GOOD" ] 2>/dev/null && break
		sleep 0.2
	done
	[ "$accepts" -ge "$CLOSE_GOOD" ] 2>/dev/null ||
		nt_fail "single nginx: $CLOSE_GOOD responses, but its listener counts $accepts accepts"
	[ "$drops" = 0 ] ||
		nt_fail "single nginx: its listener dropped $drops handshake datagrams of 32 honest clients"
	nt_note "single nginx: $accepts accepts, no handshake datagram dropped"
	st_stop "$up"
	total=$((total + CLOSE_GOOD))
	nt_ok "close: $total requests, a connection each, every response verified; wrk exits promptly; a single-process server drops no handshake"
}

# ---- forking: a server with a process per client ----

# A ForkingTCPServer: each child reads a length line and that many bytes, then
# sends them back, and says on stdout which process served which peer.
# With argv[2] (seconds), every child but the first waits that long before its
# first read: their connections stay the listening process's meanwhile.
FORK_SERVER='
import os, socketserver, sys, time
hold = float(sys.argv[2]) if len(sys.argv) > 2 else 0
class H(socketserver.StreamRequestHandler):
	def handle(self):
		if self.server.forked > 1:
			time.sleep(hold)
		while True:  # requests until the client closes
			line = self.rfile.readline()
			if not line:
				return
			data = self.rfile.read(int(line))
			self.wfile.write(data)
			# one write(2) of the whole line: the children share the output file, and
			# print() unbuffered came out interleaved with a sibling ("servedserved  1079710796 ...")
			os.write(1, b"served %d %d %d %d\n" % (os.getpid(), os.getppid(), self.client_address[1], len(data)))
class S(socketserver.ForkingTCPServer):
	allow_reuse_address = True
	max_children = 64
	forked = 0
	def process_request(self, request, client_address):
		self.forked += 1  # the child sees its own number
		super().process_request(request, client_address)
with S(("0.0.0.0", int(sys.argv[1])), H) as s:
	s.serve_forever()
'
# 16 threads, each a connection: a random body of argv[3] bytes out, the same back.
FORK_CLIENT='
import os, socket, sys, threading
host, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = []
def one(i):
	body = os.urandom(size)
	got = bytearray()
	try:
		with socket.create_connection((host, port)) as c:
			c.sendall(b"%d\n" % size + body)
			while len(got) < size:
				b = c.recv(1 << 16)
				if not b:
					break
				got += b
	except OSError as e:
		print("connection", i, e, flush=True)
	if bytes(got) != body:
		bad.append(i)
ts = [threading.Thread(target=one, args=(i,)) for i in range(16)]
[t.start() for t in ts]
[t.join() for t in ts]
print("verified", 16 - len(bad), "bad", len(bad), flush=True)
sys.exit(1 if bad else 0)
'

# 8 connections made one after the other by one thread and a request on each;
# then requests on the first alone for 1.5 s (its child serves at once), each
# answer checked; then the other 7 answers (at most 10 s each): while their
# children wait, those connections idle.
FORK_IDLE_CLIENT='
import os, socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
cs = [socket.create_connection((host, port)) for _ in range(8)]
for c in cs:
	c.settimeout(10)
def ask(c):
	body = os.urandom(1000)
	c.sendall(b"1000\n" + body)
	return body
def answer(i, body):
	got = bytearray()
	try:
		while len(got) < len(body):
			b = cs[i].recv(1 << 16)
			if not b:
				break
			got += b
	except OSError as e:
		print("connection", i, e, flush=True)
	return bytes(got) == body
bodies = [ask(c) for c in cs]
bad, n, end = 0, 0, time.monotonic() + 1.5
while time.monotonic() < end and not bad:
	bad += not answer(0, bodies[0])
	bodies[0] = ask(cs[0])
	n += 1
for i in range(len(cs)):
	bad += not answer(i, bodies[i])
	cs[i].close()
print("verified", len(cs) - bad, "bad", bad, "first", n, flush=True)
sys.exit(1 if bad else 0)
'

scenario_forking() {
	local srv hold py=python3 run handed
	need "$py"
	if [ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" libtsan; then
		nt_skip "TSan build: a forked child of a threaded process may not start threads (die_after_fork)"
	fi
	nt_init "$tag" 2 2 1gbit # rails as the bench's (the idle part failed there, not unshaped)
	st_bg fork_srv 2 env RI2N_LOG=${FORK_LOG:-info} "$py" -c "$FORK_SERVER" 7000
	srv=$ST_PID
	st_wait_listen 2 7000
	for run in 1 2; do
		st_fg "fork_cli$run" 1 "$py" -c "$FORK_CLIENT" "$(nt_addr 2)" 7000 $((256 << 10)) ||
			nt_fail "run $run: the client failed: $(tail -n 5 "$NT_DIR/fork_cli$run.err" "$NT_DIR/fork_cli$run.out")"
		grep -qx "verified 16 bad 0" "$NT_DIR/fork_cli$run.out" ||
			nt_fail "run $run: $(cat "$NT_DIR/fork_cli$run.out")"
	done
	kill -0 "$srv" 2>/dev/null || nt_fail "the server died: $(tail -n 5 "$NT_DIR/fork_srv.err")"
	st_require_ri2n fork_cli1 fork_srv
	# idle connections, the first taken over at once, the others 1 s later: the
	# client's connection that moved must leave the rail monitor it shared with
	# the others (it kept it, silent towards the listening process, which
	# judged both rails dead, and the other 7 waited out the dead-peer timeout)
	# (timing decides whether the engine happens to see the move first: 3 rounds)
	for run in 1 2 3; do
		st_bg "fork_hold$run" 2 "$py" -c "$FORK_SERVER" $((7000 + run)) 1.0
		hold=$ST_PID
		st_wait_listen 2 $((7000 + run))
		st_fg "fork_idle$run" 1 "$py" -c "$FORK_IDLE_CLIENT" "$(nt_addr 2)" $((7000 + run)) ||
			nt_fail "idle connections, round $run: $(cat "$NT_DIR/fork_idle$run.out") $(tail -n 3 "$NT_DIR/fork_idle$run.err")"
		grep -q "^verified 8 bad 0 " "$NT_DIR/fork_idle$run.out" ||
			nt_fail "idle connections, round $run: $(cat "$NT_DIR/fork_idle$run.out")"
		st_stop "$hold"
	done
	# each connection was served by a child of the server, which took it over from
	# the listening process (its log) at its first read or write once the parent had
	# closed its copy; a child that wrote before the parent closed (a busy parent)
	# keeps the parent's engine, as before: most, not all, must have moved
	for _ in $(seq 50); do # the last children may still be on their way out
		[ "$(grep -c '^served' "$NT_DIR/fork_srv.out")" -ge 32 ] && break
		sleep 0.1
	done
	[ "$(grep -c '^served' "$NT_DIR/fork_srv.out")" -eq 32 ] ||
		nt_fail "the server's children served $(grep -c '^served' "$NT_DIR/fork_srv.out") of 32 connections"
	handed=$(grep -c 'info: connection from .* handed over' "$NT_DIR/fork_srv.err")
	[ "$handed" -ge 16 ] ||
		nt_fail "$handed of 32 connections were handed over to the child serving them: $(grep -E 'warn|not handed' "$NT_DIR/fork_srv.err" | head -n 3)"
	# and the children's own engines drove them: each child that took one logs its rails
	[ "$(grep -c 'info: rail 0:' "$NT_DIR/fork_srv.err")" -gt "$handed" ] ||
		nt_fail "no engine of the children's own drove the connections handed over"
	st_stop "$srv"
	nt_ok "forking: 32 connections, every byte verified; $handed were taken over by the child serving them; 8 idle ones, taken over one by one, all answered ($(sed -n 's/.* first \([0-9]*\)$/\1/p' "$NT_DIR"/fork_idle[123].out | paste -sd/) requests on the first meanwhile)"
}

# ---- exit: a graceful close, data first ----

# exit_pair: the reader listens on PORT, the exiter connects and exits
exit_pair() { # NAME PORT READER_HOST EXITER_HOST
	local name=$1 port=$2 rh=$3 eh=$4 rpid
	st_bg ${name}_reader "$rh" "$FIDELITY" reader "$port" $((16 << 20))
	rpid=$ST_PID
	st_wait_listen "$rh" "$port"
	st_fg ${name}_exiter "$eh" "$FIDELITY" exiter "$(nt_addr "$rh")" "$port" $((16 << 20)) ||
		nt_fail "$name: the exiter failed: $(tail -n 3 "$NT_DIR/${name}_exiter.err")"
	wait "$rpid"
	local rc=$?
	sed 's/^/  /' "$NT_DIR/${name}_reader.out"
	[ $rc -eq 0 ] || nt_fail "$name: the reader did not get every byte and a clean end: $(tail -n 3 "$NT_DIR/${name}_reader.err")"
	st_require_ri2n ${name}_exiter ${name}_reader
}

# The reader of EXIT_QUICK_CLIENT: 8 connections, each read to its end, then
# one line each: "eof BYTES OK" (every byte the connection's number) or "reset".
EXIT_QUICK_SERVER='
import os, socket, sys, threading
ls = socket.create_server(("0.0.0.0", int(sys.argv[1])))
def one(c):
	got, ok = 0, True
	try:
		while True:
			b = c.recv(1 << 16)
			if not b:
				break
			ok = ok and b == bytes([b[0]]) * len(b)
			got += len(b)
		line = "eof %d %s\n" % (got, ok)
	except OSError as e:
		line = "reset %s\n" % e
	os.write(1, line.encode())  # one write a line: the threads print side by side
	c.close()
ts = []
for _ in range(8):
	c, _ = ls.accept()
	ts.append(threading.Thread(target=one, args=(c,)))
	ts[-1].start()
[t.join() for t in ts]
'
# 8 connections, 256 KiB written on each, every one closed, then os._exit at once
# (as the children of a load generator, or of a socketserver, leave)
EXIT_QUICK_CLIENT='
import os, socket, sys
cs = [socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(8)]
for i, c in enumerate(cs):
	c.sendall(bytes([i + 1]) * (256 << 10))
for c in cs:
	c.close()
os._exit(0)
'

scenario_exit() {
	local n
	[ -x "$FIDELITY" ] || nt_skip "shim_fidelity not built at $FIDELITY"
	nt_init "$tag" 2 2 1gbit
	# 16 MiB written and exit() at once, the peer's 1 MiB unread, never closed;
	# the peer reads only after 1 s, its last 4 MiB slowly (longer than the 1 s
	# ri2n gives a peer to close before it resets): EOF, never a reset
	exit_pair client 9300 2 1
	exit_pair server 9301 1 2
	nt_note "an exit with unsent and unread data, client or server side: every byte, then EOF"

	# close, then _exit at once: what the program closed is delivered first, each
	# connection ends with EOF (its FINs died with the process: the reader
	# waited out ICMP or the dead-peer timeout and read a reset)
	need python3
	st_bg quick_srv 2 python3 -c "$EXIT_QUICK_SERVER" 9302
	st_wait_listen 2 9302
	st_fg quick_cli 1 python3 -c "$EXIT_QUICK_CLIENT" "$(nt_addr 2)" 9302 ||
		nt_fail "close then _exit: the client failed: $(tail -n 3 "$NT_DIR/quick_cli.err")"
	wait "$ST_PID"
	n=$(grep -cx "eof $((256 << 10)) True" "$NT_DIR/quick_srv.out")
	[ "$n" -eq 8 ] || nt_fail "close then _exit: $n of 8 connections ended with every byte and EOF: $(grep -v True "$NT_DIR/quick_srv.out" | head -n 3 | tr '\n' ' ')"
	nt_note "close then _exit: 8 connections, every byte, then EOF"

	if [ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" libtsan; then
		# under TSan the ping-pong client receives nothing through the shim (plain TCP
		# under TSan works): not understood yet, left out of this scenario
		nt_note "TSan build: the sockperf part is left out"
	elif command -v sockperf >/dev/null; then
		local spid out
		# as a user runs it (ri2n-run quiet), three ping-pong clients in a row
		RI2N_RAILS=$NT_RAILS setsid timeout -s KILL 60 ip netns exec "$(tb_ns 2)" "$RUN" -- \
			sockperf server --tcp -p 11111 >"$NT_DIR/sockperf_srv.out" 2>&1 &
		spid=$!
		NT_PIDS+=("$spid")
		st_wait_listen 2 11111
		for i in 1 2 3; do
			out=$(RI2N_RAILS=$NT_RAILS timeout -s KILL 30 ip netns exec "$(tb_ns 1)" "$RUN" -- \
				sockperf ping-pong --tcp -i "$(nt_addr 2)" -p 11111 -t 1 2>&1) ||
				nt_fail "sockperf ping-pong run $i failed: $(tail -n 3 <<<"$out")"
			grep -q "Summary: Latency" <<<"$out" || nt_fail "sockperf run $i: no summary: $(tail -n 5 <<<"$out")"
		done
		kill -0 "$spid" 2>/dev/null || nt_fail "the sockperf server died"
		! grep -iE "reset|error|fail" "$NT_DIR/sockperf_srv.out" ||
			nt_fail "the sockperf server reported the above"
		st_stop "$spid"
		nt_note "sockperf server: three ping-pong clients came and went, nothing reported"
	fi
	nt_ok "exit: a process that exits closes its connections gracefully, data first"
}

# ---- errors and options as TCP's ----

scenario_errors() {
	local srv cli
	[ -x "$FIDELITY" ] || nt_skip "shim_fidelity not built at $FIDELITY"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$FIDELITY" serve 9400
	srv=$ST_PID
	st_wait_listen 2 9400
	st_fg bind2 2 "$FIDELITY" bind2 9400
	local rc=$?
	sed 's/^/  /' "$NT_DIR/bind2.out"
	[ $rc -eq 0 ] || nt_fail "bind2: $(grep -c FAIL "$NT_DIR/bind2.out") check(s) failed"

	st_bg opts 1 "$FIDELITY" opts "$(nt_addr 2)" 9400
	cli=$ST_PID
	for _ in $(seq 100); do
		grep -q blocked "$NT_DIR/opts.out" && break
		kill -0 "$cli" 2>/dev/null || break
		sleep 0.1
	done
	grep -q blocked "$NT_DIR/opts.out" || nt_fail "opts: never got to its last check: $(tail -n 3 "$NT_DIR/opts.err")"
	tb_fault blackhole 1 1 on
	tb_fault blackhole 1 2 on
	wait "$cli"
	rc=$?
	tb_fault blackhole 1 1 off
	tb_fault blackhole 1 2 off
	sed 's/^/  /' "$NT_DIR/opts.out"
	[ $rc -eq 0 ] || nt_fail "opts: $(grep -c FAIL "$NT_DIR/opts.out") check(s) failed"
	grep -q "^end: reset" "$NT_DIR/server.out" ||
		nt_fail "the server did not see SO_LINGER {1, 0}'s close as a reset: $(grep '^end' "$NT_DIR/server.out")"
	kill -0 "$srv" 2>/dev/null || nt_fail "the server died: $(tail -n 5 "$NT_DIR/server.err")"
	st_stop "$srv"
	nt_ok "errors: EADDRINUSE at a second bind; TCP_USER_TIMEOUT and SO_LINGER honoured or refused"
}

# ---- no busy loops ----

# CPU time (clock ticks, user + system) PID has used.
st_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

scenario_quiet() {
	local srv spid t0 t1 hz
	[ -x "$FIDELITY" ] || nt_skip "shim_fidelity not built at $FIDELITY"
	hz=$(getconf CLK_TCK)
	nt_init "$tag" 2 2 1gbit
	# a 2 s dead-peer timeout, so that the connection dies within the test
	export RI2N_DEAD_PEER_MS=2000
	st_bg server 2 "$FIDELITY" serve 9600
	srv=$ST_PID
	unset RI2N_DEAD_PEER_MS
	st_wait_listen 2 9600
	st_bg idle 1 "$FIDELITY" idle "$(nt_addr 2)" 9600 60
	for _ in $(seq 100); do grep -q idle "$NT_DIR/idle.out" && break; sleep 0.1; done
	grep -q idle "$NT_DIR/idle.out" || nt_fail "the idle client never connected: $(tail -n 3 "$NT_DIR/idle.err")"
	spid=$(st_pid_of 2 "$FIDELITY serve 9600")
	[ -n "$spid" ] || nt_fail "the server process not found"
	# the server's rails vanish (what removing its namespace's links does)
	ip -n "$(tb_ns 2)" link del r1
	ip -n "$(tb_ns 2)" link del r2
	for _ in $(seq 100); do grep -q "^end:" "$NT_DIR/server.out" && break; sleep 0.1; done
	grep -q "^end:" "$NT_DIR/server.out" || nt_fail "the connection never ended after its rails vanished"
	# a spin detector, not a speed figure: a busy loop takes a whole CPU (2 s of ticks)
	t0=$(st_ticks "$spid")
	sleep 2
	t1=$(st_ticks "$spid")
	nt_note "server with its rails gone: $((t1 - t0)) of $((2 * hz)) CPU ticks in 2 s; ended: $(grep '^end:' "$NT_DIR/server.out" | tr '\n' ' ')"
	[ $((t1 - t0)) -lt $((hz / 2)) ] || nt_fail "the server used $((t1 - t0)) CPU ticks in 2 s with its rails gone: a busy loop"
	[ "$(grep -c '^end:' "$NT_DIR/server.out")" = 1 ] || nt_fail "the connection's end was reported more than once"
	grep -q "^end: Connection timed out" "$NT_DIR/server.out" ||
		nt_fail "the connection ended with '$(grep '^end:' "$NT_DIR/server.out")', want ETIMEDOUT"
	kill -0 "$srv" 2>/dev/null || nt_fail "the server died"
	st_stop "$srv"
	nt_ok "quiet: a server whose rails vanished reports the error once and stays idle"
}

# ---- close() in a signal handler ----

scenario_signal() {
	local srv rc
	[ -x "$FIDELITY" ] || nt_skip "shim_fidelity not built at $FIDELITY"
	# TSan runs a program's handlers itself, later, outside the shim's
	# trampoline (and reports any lock taken there): nothing to learn
	if [ -n "${RI2N_RUN_LIB:-}" ] && nt_linked "$RI2N_RUN_LIB" libtsan; then
		nt_skip "TSan build: it defers signal handlers past the shim's trampoline"
	fi
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$FIDELITY" serve 9700 late
	srv=$ST_PID
	st_wait_listen 2 9700
	ST_TIMEOUT=100 st_fg sigclose 1 "$FIDELITY" sigclose "$(nt_addr 2)" 9700
	rc=$?
	sed 's/^/  /' "$NT_DIR/sigclose.out"
	[ $rc -eq 0 ] || nt_fail "sigclose: $(grep -c FAIL "$NT_DIR/sigclose.out") check(s) failed (status $rc)"
	kill -0 "$srv" 2>/dev/null || nt_fail "the server died"
	st_stop "$srv"
	nt_ok "signal: close() of ri2n descriptors in a signal handler never deadlocks"
}

# ---- byte order whatever path a write takes ----

scenario_order() {
	[ -x "$ORDER" ] || nt_skip "shim_order not built at $ORDER"
	nt_init "$tag" 2 2 1gbit
	ST_TIMEOUT=60 st_fg order 1 "$ORDER" "$(nt_addr 1)" 9600
	local rc=$?
	sed 's/^/  /' "$NT_DIR/order.err" | grep -E '^  (ok|FAIL)'
	[ $rc -eq 0 ] || nt_fail "order: $(grep -c '^FAIL' "$NT_DIR/order.err") path(s) out of order (status $rc): $(grep '^FAIL' "$NT_DIR/order.err" | head -n 3)"
	grep -q "connect to .* over ri2n" "$NT_DIR/order.err" ||
		nt_fail "order: the connections did not go over ri2n: $(grep ri2n-run "$NT_DIR/order.err" | head -n 3)"
	nt_ok "order: $(grep -c '^ok' "$NT_DIR/order.err") ways of sharing a descriptor keep the byte order under ri2n-run"
}

scenario_sigrestart() {
	local srv rc
	[ -x "$SIGRESTART" ] || nt_skip "shim_sigrestart not built at $SIGRESTART"
	nt_init "$tag" 2 2 1gbit
	st_bg server 2 "$SIGRESTART" serve 9710
	srv=$ST_PID
	st_wait_listen 2 9710
	ST_TIMEOUT=60 st_fg client 1 "$SIGRESTART" client "$(nt_addr 2)" 9710
	rc=$?
	sed 's/^/  /' "$NT_DIR/client.out"
	[ $rc -eq 0 ] || nt_fail "client: $(grep FAIL "$NT_DIR/client.out") (status $rc)"
	wait "$srv" || nt_fail "server: $(cat "$NT_DIR/server.out")"
	st_require_ri2n client server
	nt_ok "sigrestart: a read under SA_RESTART handlers resumes, as on TCP"
}

# ---- IPv6 ----

# "TCP UDP6 R1 R2": the TCP segments and the UDP datagrams over IPv6 HOST has
# sent so far, and the bytes its rails r1 and r2 sent.
v6_counts() { # HOST
	local ns
	ns=$(tb_ns "$1")
	ip netns exec "$ns" awk '
		$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "Tcp:" { tcp = $col["OutSegs"] }
		$1 == "Udp6OutDatagrams" { udp = $2 }
		END { printf "%d %d ", tcp, udp }' /proc/net/snmp /proc/net/snmp6
	ip netns exec "$ns" cat /sys/class/net/r1/statistics/tx_bytes \
		/sys/class/net/r2/statistics/tx_bytes | paste -sd' '
}

# Requires that host 1 sent BYTES on both rails and no TCP since the counts in
# V6_T0 (v6_counts); V6_UDP: the UDP datagrams over IPv6 it sent meanwhile.
v6_require_rails() { # NAME BYTES
	local t u r1 r2 t0 u0 b1 b2
	read -r t0 u0 b1 b2 <<<"$V6_T0"
	read -r t u r1 r2 < <(v6_counts 1)
	[ $((t - t0)) -eq 0 ] || nt_fail "$1: the client's host sent $((t - t0)) TCP segments"
	# both rails carry data (1/64 of it at least: how it splits is the scheduler's,
	# uneven in a sanitizer build; heartbeats alone are a few hundred bytes)
	[ $((r1 - b1)) -gt $(($2 / 64)) ] && [ $((r2 - b2)) -gt $(($2 / 64)) ] ||
		nt_fail "$1: the rails sent $((r1 - b1)) and $((r2 - b2)) bytes for $2: not both carried it"
	V6_UDP=$((u - u0))
	nt_note "$1: the client's host sent no TCP segment; r1 $((r1 - b1)) bytes, r2 $((r2 - b2)) bytes"
}

# The same, all of it as UDP over IPv6.
v6_require_udp() { # NAME BYTES
	v6_require_rails "$@"
	# UDP GSO: one datagram counted may be up to 64 KiB of segments
	[ "$V6_UDP" -gt $(($2 / 65536)) ] ||
		nt_fail "$1: the client's host sent only $V6_UDP UDP datagrams over IPv6 for $2 bytes"
	nt_note "$1: $V6_UDP UDP datagrams over IPv6"
}

# The python3 server: an IPV6_V6ONLY "::" listener (create_server's default for
# AF_INET6); it prints the accepted connection's names (with "%<scope>" if it
# has one), then those a forked child sees, an exec'd child of the inherited
# descriptor and one it was sent to over SCM_RIGHTS, then stores what it
# reads (argv: port, file).
V6_SERVER='
import os, socket, subprocess, sys
N = "n = lambda a: a[0] + (\"%%%d\" % a[3] if a[3] else \"\")\n"
exec(N)
def names(tag, c):
	print(tag, n(c.getsockname()), n(c.getpeername()), c.family == socket.AF_INET6, flush=True)
CHILD = N + """
import socket, sys
fd = int(sys.argv[2])
if sys.argv[1] == "passed":
	fd = socket.recv_fds(socket.socket(fileno=fd), 1, 1)[1][0]
c = socket.socket(fileno=fd)
print(sys.argv[1], n(c.getsockname()), n(c.getpeername()), c.family == socket.AF_INET6)
c.detach()
"""
def child(tag, fd, send=None):
	p = subprocess.Popen([sys.executable, "-c", CHILD, tag, str(fd)], pass_fds=[fd],
			     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
	if send:
		send()
	out, err = p.communicate()
	print(out.strip() or tag + " failed: " + err.strip()[-300:], flush=True)
s = socket.create_server(("::", int(sys.argv[1])), family=socket.AF_INET6)
c, a = s.accept()
print("accepted", n(a), n(c.getsockname()), n(c.getpeername()), c.family == socket.AF_INET6,
      flush=True)
pid = os.fork()
if pid == 0:
	names("forked", c)
	os._exit(0)
os.waitpid(pid, 0)
child("child", c.fileno())
u, v = socket.socketpair()
child("passed", v.fileno(), lambda: socket.send_fds(u, [b"x"], [c.fileno()]))
with open(sys.argv[2], "wb") as f:
	while True:
		b = c.recv(1 << 20)
		if not b:
			break
		f.write(b)
'
# redis's listeners: 0.0.0.0 and an IPV6_V6ONLY "::" on one port; the first
# accept on the 0.0.0.0 one gives the peer's address, then what it reads is
# stored (argv: port, file).
V6_PAIR='
import socket, sys
S, P = socket.SOL_SOCKET, int(sys.argv[1])
a = socket.socket(socket.AF_INET)
a.setsockopt(S, socket.SO_REUSEADDR, 1)
a.bind(("0.0.0.0", P))
a.listen()
b = socket.socket(socket.AF_INET6)
b.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
b.setsockopt(S, socket.SO_REUSEADDR, 1)
b.bind(("::", P))
b.listen()
c, peer = a.accept()
print("pair", peer[0], flush=True)
with open(sys.argv[2], "wb") as f:
	while True:
		d = c.recv(1 << 20)
		if not d:
			break
		f.write(d)
'
# The client: prints its names and options (IPV6_TCLASS set before connect,
# TCP_NODELAY after; TCP_CONGESTION; TCP_INFO'"'"'s state), sends the file (argv:
# address, port, file).
V6_CLIENT='
import socket, sys
T = socket.IPPROTO_TCP
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0x20)
c.connect((sys.argv[1], int(sys.argv[2])))
c.setsockopt(T, socket.TCP_NODELAY, 1)
n = lambda a: a[0] + ("%%%d" % a[3] if a[3] else "")
print("client", n(c.getsockname()), n(c.getpeername()), c.family == socket.AF_INET6)
print("opts", c.getsockopt(T, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode(),
      c.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS), c.getsockopt(T, socket.TCP_NODELAY),
      c.getsockopt(T, socket.TCP_INFO, 104)[0], flush=True)
with open(sys.argv[3], "rb") as f:
	c.sendfile(f)
c.close()
'

scenario_v6() {
	local py srv a1 a2 size
	need nc
	nc -h 2>&1 | grep -qi openbsd || nt_skip "nc is not netcat-openbsd"
	py=$(command -v /usr/bin/python3 python3 | head -n 1)
	[ -n "$py" ] || nt_skip "python3 is not installed"
	nt_init "$tag" 2 2 1gbit --v6 all
	a1=$(nt_addr 1)
	a2=$(nt_addr 2)
	case $a2 in 2001:2:0:1::2) ;; *) nt_fail "the bed's rail 1 is not IPv6: $a2" ;; esac
	head -c 8M /dev/urandom >"$NT_DIR/file"
	size=$(stat -c %s "$NT_DIR/file")

	# nc -6 -l listens on "::", dual-stack
	st_bg nc_srv 2 nc -6 -l 7000 </dev/null
	srv=$ST_PID
	st_wait_listen 2 7000
	V6_T0=$(v6_counts 1)
	st_fg nc_cli 1 nc -6 -N "$a2" 7000 <"$NT_DIR/file" || nt_fail "nc: the sender failed"
	wait "$srv" || nt_fail "nc: the listener failed"
	[ "$(st_sha "$NT_DIR/nc_srv.out")" = "$(st_sha "$NT_DIR/file")" ] ||
		nt_fail "nc: sha256 differs ($(stat -c %s "$NT_DIR/nc_srv.out") bytes arrived)"
	st_require_ri2n nc_cli nc_srv
	v6_require_udp nc "$size"
	nt_note "nc -6: 8 MiB, sha256 matches"

	st_bg py_srv 2 "$py" -c "$V6_SERVER" 7001 "$NT_DIR/py.body"
	srv=$ST_PID
	st_wait_listen 2 7001
	V6_T0=$(v6_counts 1)
	st_fg py_cli 1 "$py" -c "$V6_CLIENT" "$a2" 7001 "$NT_DIR/file" ||
		nt_fail "python: the client failed: $(tail -n 5 "$NT_DIR/py_cli.err")"
	wait "$srv" || nt_fail "python: the server failed: $(tail -n 5 "$NT_DIR/py_srv.err")"
	[ "$(st_sha "$NT_DIR/py.body")" = "$(st_sha "$NT_DIR/file")" ] ||
		nt_fail "python: sha256 differs ($(stat -c %s "$NT_DIR/py.body") bytes arrived)"
	st_require_ri2n py_cli py_srv
	v6_require_udp python "$size"
	sed 's/^/  /' "$NT_DIR/py_cli.out" "$NT_DIR/py_srv.out"
	grep -qx "client $a1 $a2 True" "$NT_DIR/py_cli.out" ||
		nt_fail "python: the client's names: '$(cat "$NT_DIR/py_cli.out")', want 'client $a1 $a2 True'"
	# TCP_CONGESTION "ri2n": the shim's answer (the kernel's would be "cubic"); state 1: established
	grep -qx "opts ri2n 32 1 1" "$NT_DIR/py_cli.out" ||
		nt_fail "python: the client's options: '$(tail -n 1 "$NT_DIR/py_cli.out")', want 'opts ri2n 32 1 1'"
	grep -qx "accepted $a1 $a2 $a1 True" "$NT_DIR/py_srv.out" ||
		nt_fail "python: the server's names: '$(head -n 1 "$NT_DIR/py_srv.out")', want 'accepted $a1 $a2 $a1 True'"
	for k in forked child passed; do
		grep -qx "$k $a2 $a1 True" "$NT_DIR/py_srv.out" ||
			nt_fail "python: the $k child's names: '$(grep "^$k" "$NT_DIR/py_srv.out")', want '$k $a2 $a1 True'"
	done

	# redis's pair of listeners: the V6ONLY one stays TCP, the 0.0.0.0 one takes the IPv6 peer
	st_bg pair_srv 2 "$py" -c "$V6_PAIR" 7002 "$NT_DIR/pair.body"
	srv=$ST_PID
	st_wait_listen 2 7002
	head -c 1M "$NT_DIR/file" >"$NT_DIR/file1"
	st_fg pair_cli 1 nc -6 -N "$a2" 7002 <"$NT_DIR/file1" || nt_fail "pair: the sender failed"
	wait "$srv" || nt_fail "pair: the server failed: $(tail -n 5 "$NT_DIR/pair_srv.err")"
	[ "$(st_sha "$NT_DIR/pair.body")" = "$(st_sha "$NT_DIR/file1")" ] ||
		nt_fail "pair: sha256 differs ($(stat -c %s "$NT_DIR/pair.body") bytes arrived)"
	st_require_ri2n pair_cli pair_srv
	grep -q "listen on \[::\]:7002 stays TCP (IPV6_V6ONLY, and ri2n holds the port" \
		"$NT_DIR/pair_srv.err" || nt_fail "pair: the IPV6_V6ONLY listener did not stay TCP: $(grep ri2n-run "$NT_DIR/pair_srv.err")"
	# python's AF_INET accept has room for a sockaddr_in: an IPv6 peer reads 0.0.0.0
	grep -qx "pair 0.0.0.0" "$NT_DIR/pair_srv.out" ||
		nt_fail "pair: the 0.0.0.0 listener's peer: '$(cat "$NT_DIR/pair_srv.out")', want 'pair 0.0.0.0'"
	nt_note "redis's listeners (0.0.0.0 and an IPV6_V6ONLY \"::\" on one port): the second stays TCP, the first takes the IPv6 peer over ri2n"

	# link-local rails ("fe80::..%r1", as RI2N_RAILS names them): a connect to host 2's on
	# r1 with its scope converts; the names carry the scope, r1's index on each host
	local l11 l12 l21 l22 i1 i2 want
	l11=$(nt_link_local 1 1) && l12=$(nt_link_local 1 2) && l21=$(nt_link_local 2 1) &&
		l22=$(nt_link_local 2 2) || exit 1
	i1=$(ip -n "$(tb_ns 1)" -o link show r1 | cut -d: -f1)
	i2=$(ip -n "$(tb_ns 2)" -o link show r1 | cut -d: -f1)
	NT_RAILS="$l21%r1,$l22%r2" st_bg ll_srv 2 "$py" -c "$V6_SERVER" 7004 "$NT_DIR/ll.body"
	srv=$ST_PID
	st_wait_listen 2 7004
	V6_T0=$(v6_counts 1)
	NT_RAILS="$l11%r1,$l12%r2" st_fg ll_cli 1 "$py" -c "$V6_CLIENT" "$l21%r1" 7004 \
		"$NT_DIR/file1" || nt_fail "link-local: the client failed: $(tail -n 5 "$NT_DIR/ll_cli.err")"
	wait "$srv" || nt_fail "link-local: the server failed: $(tail -n 5 "$NT_DIR/ll_srv.err")"
	[ "$(st_sha "$NT_DIR/ll.body")" = "$(st_sha "$NT_DIR/file1")" ] ||
		nt_fail "link-local: sha256 differs ($(stat -c %s "$NT_DIR/ll.body") bytes arrived)"
	st_require_ri2n ll_cli ll_srv
	v6_require_udp link-local "$(stat -c %s "$NT_DIR/file1")"
	sed 's/^/  /' "$NT_DIR/ll_cli.out" "$NT_DIR/ll_srv.out"
	want="client $l11%$i1 $l21%$i1 True"
	grep -qx "$want" "$NT_DIR/ll_cli.out" ||
		nt_fail "link-local: the client's names: '$(head -n 1 "$NT_DIR/ll_cli.out")', want '$want'"
	want="accepted $l11%$i2 $l21%$i2 $l11%$i2 True"
	grep -qx "$want" "$NT_DIR/ll_srv.out" ||
		nt_fail "link-local: the server's names: '$(head -n 1 "$NT_DIR/ll_srv.out")', want '$want'"
	for k in forked child passed; do
		want="$k $l21%$i2 $l11%$i2 True"
		grep -qx "$want" "$NT_DIR/ll_srv.out" ||
			nt_fail "link-local: the $k child's names: '$(grep "^$k" "$NT_DIR/ll_srv.out")', want '$want'"
	done
	nt_note "link-local rails: 1 MiB, sha256 matches, the names carry r1's scope"
	nt_ok "v6: nc and python3 moved 8 MiB each over IPv6 rails under ri2n-run (sha256 matches, UDP and no TCP); the names are the rails' IPv6 addresses, also in forked, exec'd and SCM_RIGHTS children; redis's listeners and link-local rails too"
}

# A mixed bed (rail 1 IPv4, rail 2 IPv6): nc -6 -l takes 8 MiB from a client
# connecting to its IPv6 address, then 8 MiB from one connecting to its IPv4
# address (v4-mapped on the listener); both connections use both rails.
scenario_v6_mixed() {
	local srv size a
	need nc
	nc -h 2>&1 | grep -qi openbsd || nt_skip "nc is not netcat-openbsd"
	nt_init "$tag" 2 2 1gbit --v6 2
	case $(tb_addr 2 2) in 2001:2:0:2::2) ;; *) nt_fail "the bed's rail 2 is not IPv6: $(tb_addr 2 2)" ;; esac
	head -c 8M /dev/urandom >"$NT_DIR/file"
	size=$(stat -c %s "$NT_DIR/file")
	for a in "$(tb_addr 2 2)" "$(tb_addr 2 1)"; do
		st_bg srv 2 nc -6 -l 7010 </dev/null
		srv=$ST_PID
		st_wait_listen 2 7010
		V6_T0=$(v6_counts 1)
		st_fg cli 1 nc -N "$a" 7010 <"$NT_DIR/file" || nt_fail "to $a: the sender failed"
		wait "$srv" || nt_fail "to $a: the listener failed"
		[ "$(st_sha "$NT_DIR/srv.out")" = "$(st_sha "$NT_DIR/file")" ] ||
			nt_fail "to $a: sha256 differs ($(stat -c %s "$NT_DIR/srv.out") bytes arrived)"
		st_require_ri2n cli srv
		v6_require_rails "to $a" "$size"
	done
	nt_ok "v6-mixed: nc moved 8 MiB to the server's IPv6 address and 8 MiB to its IPv4 one, each over both rails (an IPv4 and an IPv6 one), sha256 matches"
}

case $scenario in
iperf3 | nc | http | probe | early | nginx | close | forking | exit | errors | quiet | signal | order | posix | sigrestart | cancel | v6 | pollheld) "scenario_$scenario" ;;
v6-mixed) scenario_v6_mixed ;;

*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
