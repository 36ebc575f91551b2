#!/usr/bin/env bash
# Kernel errors on shared rail sockets (root; 77 = skipped).  Issue 14, findings 1 and 2;
# issue 30, a dead process known at once (dead-peer*).
#
#   tests/netns/test_icmp.sh SCENARIO
#
#   fragneeded   h1 streams to h2 for 5 s over 2 shaped rails; 1 s in, forged ICMP
#                "fragmentation needed" (MTU 552) quoting the ri2n ports of each rail
#                reach both ends, 5 per rail and direction.  The kernel takes them (a
#                552-byte path MTU shows in its route cache), yet every byte arrives
#                verified and no send fails (no rail goes down on a send error): ri2n
#                sizes its own datagrams and the ICMP changes nothing it sends.
#   fragneeded-keyed  the same with a cluster key (RI2N_KEY) at both ends
#   killed-peer  a server, two clients on h1: A streams, B streams for 5 s; A is
#                killed -9 while B streams, so h1 answers the server's datagrams to A
#                with ICMP port unreachable on the rail sockets both share.  B's
#                transfer completes verified, no rail of the server or of B goes down
#                on a send error (the errors are about A, not the next datagram), the
#                server's connection to A ends with "Connection reset by peer" (its
#                ICMP quotes the server's own datagrams to A on both rails: see
#                dead-peer), and the server, idle afterwards (its RESETs to A still
#                draw port unreachable), uses < 20% of a CPU over 2 s (a spin
#                detector: an error-queue entry left behind kept the engine waking).
#   dead-peer    h2 runs servers S (port 7000) and K (7001); h1 runs A streaming to
#                K, B streaming to S for 5 s and C streaming to S.  K and C are
#                killed -9 at once: A's connection (a writer whose peer is gone)
#                and S's connection to C (a reader whose peer is gone) fail with
#                "Connection reset by peer" within 5 s (the dead-peer timeout is
#                30 s; the time each took is printed), and B's bytes are verified.
#   dead-peer-keyed  the same with a cluster key at both ends
#   dead-peer-idle  a client connected and idle 3 s (keepalives every second); its
#                server killed -9: the client's connection fails with "connection
#                reset by peer" (its log) within 5 s, the time it took printed
#   dead-peer-forged  h1 streams to h2 over 2 rails shaped at 20 Mbit/s; h3 sends
#                h1's rail sockets 25 port unreachable per rail quoting h1's flow to
#                h2 and a plausible ri2n DATA header (that rail's index, a fresh send
#                time, an id the forger cannot know): the 5 s stream goes on and is
#                verified.  Control: the same forgery quoting datagrams of a second
#                stream really sent (copied from h2's rails, as an on-path host could;
#                quote_capture.py) resets that stream's connection.
#   dead-peer-forged-keyed  the same with a cluster key
#   forged-refusal  h1 connects to h2 while h2's rails are black-holed, so its INIT
#                waits for an answer.  h3 sends h1's rail sockets ICMP port
#                unreachable quoting h1's ports and a destination other than the
#                one the INIT went to (h2's port 7001, an absent host's 7000, h2's
#                rail-2 address): the connect still waits, and once the black hole
#                is healed it succeeds and 20 MiB follow, verified.  Controls: the
#                same forgery naming the INIT's own destination (h2 rail 1 :7000)
#                fails the pending connect with "Connection refused" while h2 is
#                still black-holed (an ICMP naming it is believed), and a connect
#                to h2's port 7001, where nobody listens, is refused by h2's kernel.
#
# Environment: RI2N_XFER; RI2N_ICMP_NOFORGE=1 runs fragneeded without the forged
# packets (the baseline rate); RI2N_ICMP_SECONDS (default 5, fragneeded's 12).
source "$(dirname "$0")/lib.sh"
FORGE="$(dirname "$0")/icmp_forge.py"
# The verified streams last so long whatever the build's speed: past the forgery (done 3.5 s
# in) or the kill (1-1.5 s in) with time to spare. A byte count took 3.5 s in a release
# build and 20 s under TSan, checking nothing more.
SECS=${RI2N_ICMP_SECONDS:-5}
scenario=${1:?usage: test_icmp.sh fragneeded|fragneeded-keyed|killed-peer|forged-refusal|dead-peer[-keyed]|dead-peer-idle|dead-peer-forged[-keyed]}
command -v python3 >/dev/null || nt_skip "python3 is not installed"
command -v ss >/dev/null || nt_skip "ss is not installed"

# The UDP port PID has bound to ADDR in HOST's namespace.
port_of() { # HOST PID ADDR
	ip netns exec "$(tb_ns "$1")" ss -uanpH | awk -v p="pid=$2," -v a="$3" '
		index($0, p) { n = split($4, x, ":"); if (x[1] == a) { print x[n]; exit } }'
}

# Rails a process failed because a send on them failed (what a kernel error
# charged to the wrong datagram does).  Other rail events are not counted:
# under a sanitizer, a starved process sees its rails flap by receive count.
send_failures() { # NAME (its .err)
	grep -c 'down fd=[0-9]* cause="local send error"' "$NT_DIR/$1.err"
}

# CPU ticks (utime + stime) of PID.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

icmp_stat() { # HOST FIELD: a counter of the Icmp line of /proc/net/snmp in HOST
	ip netns exec "$(tb_ns "$1")" awk -v f="$2" '$1 == "Icmp:" { if (!n) { for (i = 2; i <= NF; i++) k[i] = $i; n = 1; next }
		for (i = 2; i <= NF; i++) if (k[i] == f) print $i }' /proc/net/snmp
}

scenario_fragneeded() {
	local xpid cpid r a1 a2 p1 mtu downs try taken forgers=()
	# longer than the others: the forgers (python3, ~0.5 s to start here, four at once)
	# and their ss lookups sent the first ICMP 5 s in, after a 5 s stream had closed the
	# sockets it quotes, and the test skipped in every run of a full suite
	local secs=${RI2N_ICMP_SECONDS:-12}
	nt_init "icmp-$scenario" 2 2 1gbit
	NT_TIMEOUT=${NT_TIMEOUT:-90}
	nt_serve 2 --once
	nt_send_bg x 1 2 --seconds "$secs"
	xpid=$NT_PID
	sleep 1
	kill -0 "$xpid" 2>/dev/null || nt_fail "the transfer ended before the forgery: $(cat "$NT_DIR/x.out")"
	cpid=$(nt_xfer_pid 1 send)
	[ -n "$cpid" ] || nt_fail "sender process not found"
	if [ "${RI2N_ICMP_NOFORGE:-0}" != 1 ]; then
		# up to 3 tries: on a loaded machine a forger started late, or the port
		# was not listed yet, and the kernel had no path MTU to show in time
		for try in 1 2 3; do
			forgers=() taken=0
			for r in 1 2; do
				a1=$(nt_addr 1 "$r")
				a2=$(nt_addr 2 "$r")
				p1=$(port_of 1 "$cpid" "$a1")
				[ -n "$p1" ] || continue
				# to the sender, about its data; to the server, about its ACKs
				ip netns exec "$(tb_ns 2)" python3 "$FORGE" 4 552 "$a1" "$a1:$p1" "$a2:7000" 5 0.2 &
				forgers+=($!)
				ip netns exec "$(tb_ns 1)" python3 "$FORGE" 4 552 "$a2" "$a2:7000" "$a1:$p1" 5 0.2 &
				forgers+=($!)
			done
			[ ${#forgers[@]} -eq 0 ] || wait "${forgers[@]}" 2>/dev/null
			sleep 1.2
			for r in 1 2; do
				mtu=$(ip netns exec "$(tb_ns 1)" ip route get "$(nt_addr 2 "$r")" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')
				[ "$mtu" = 552 ] && taken=$((taken + 1))
			done
			[ "$taken" = 2 ] && break
			kill -0 "$xpid" 2>/dev/null || break
		done
		# seen on one machine in a third of the runs, serially too, base included: no
		# path MTU on either rail although the rail sockets were listed (not understood)
		[ "$taken" = 2 ] || nt_skip "the kernel did not take the forged ICMP on both rails in 3 tries (route mtu '${mtu}' on rail 2): the test would prove nothing"
		nt_note "h1's kernel holds a 552-byte path MTU to h2 on both rails"
	fi
	wait "$xpid" || nt_fail "transfer failed after forged ICMP: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/serve2.out" recv)" = yes ] || nt_fail "the server did not verify what it received"
	downs=$(send_failures x)
	[ "$downs" = 0 ] || nt_fail "the sender failed a rail $downs times on a send error: the forged ICMP did"
	nt_ok "fragneeded: a ${secs} s stream verified at $(nt_field "$NT_DIR/x.out" mbps) Mbit/s$([ "${RI2N_ICMP_NOFORGE:-0}" = 1 ] && echo ' (no forgery: baseline)')$([ -n "${RI2N_KEY:-}" ] && echo ', keyed'), no send failed"
}

scenario_killed_peer() {
	local spid apid bpid p unreach0 unreach1 t0 t1 used downs line
	nt_init "icmp-$scenario" 2 2 1gbit
	# every datagram the server sends to A once it is dead gets its port
	# unreachable (the default limit answers about one a second)
	ip netns exec "$(tb_ns 1)" sysctl -qw net.ipv4.icmp_ratelimit=0 || nt_fail "sysctl"
	nt_serve 2
	spid=$(nt_xfer_pid 2 serve)
	[ -n "$spid" ] || nt_fail "server process not found"
	nt_send_bg a 1 2 --seconds 60
	sleep 0.5
	for p in $(ip netns pids "$(tb_ns 1)"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "ri2n-xfer send.*--seconds" && apid=$p
	done
	[ -n "${apid:-}" ] || nt_fail "client A not found"
	nt_send_bg b 1 2 --seconds "$SECS"
	bpid=$NT_PID
	sleep 1
	kill -0 "$bpid" 2>/dev/null || nt_fail "B ended before A was killed: $(cat "$NT_DIR/b.out")"
	unreach0=$(icmp_stat 1 OutDestUnreachs)
	kill -9 "$apid"
	wait "$bpid" || nt_fail "B's transfer failed after A was killed: $(cat "$NT_DIR/b.out")"
	nt_require_verified b
	unreach1=$(icmp_stat 1 OutDestUnreachs)
	[ "$((unreach1 - unreach0))" -gt 0 ] || nt_fail "h1 sent no port unreachable: the test proves nothing"
	nt_note "h1 answered the server with $((unreach1 - unreach0)) ICMP destination unreachable while B streamed"
	downs=$(send_failures b)
	[ "$downs" = 0 ] || nt_fail "B failed a rail $downs times on a send error"
	# A's connection needs no send error either: its rails go by receive count
	downs=$(send_failures serve2)
	[ "$downs" = 0 ] || nt_fail "the server failed a rail $downs times on a send error: A's ICMP errors were charged to whichever datagram went next"
	# A is gone: its host's port unreachable, quoting the server's datagrams to
	# it on both rails, reset the server's connection to A
	line=$(grep 'xfer done role=recv.*verified=no' "$NT_DIR/serve2.out" | head -n 1)
	case $line in *"reason=Connection reset by peer"*) ;;
	*) nt_fail "the server's connection to the killed A did not end reset: '$line'" ;; esac
	sleep 1
	t0=$(ticks "$spid")
	sleep 2
	t1=$(ticks "$spid")
	[ -n "$t0" ] && [ -n "$t1" ] || nt_fail "server process gone"
	used=$((t1 - t0))
	nt_note "idle server: $used ticks of CPU in 2 s ($(getconf CLK_TCK)/s)"
	[ "$used" -lt $(($(getconf CLK_TCK) * 2 / 5)) ] ||
		nt_fail "the idle server used $used ticks in 2 s: it spins on its sockets' errors"
	nt_ok "killed-peer: B's ${SECS} s stream verified at $(nt_field "$NT_DIR/b.out" mbps) Mbit/s, no send failed, idle server at $((used * 100 / ($(getconf CLK_TCK) * 2)))% of a CPU"
}

# Waits (at most 5 s) until PID has bound a UDP port to ADDR in HOST's
# namespace and prints it.
wait_port() { # HOST PID ADDR
	local p
	for _ in $(seq 50); do
		p=$(port_of "$1" "$2" "$3")
		[ -n "$p" ] && { echo "$p"; return; }
		sleep 0.1
	done
}

# Waits (at most 10 s, a third of the connect timeout) for background PID to
# end; its status, or 124 if it is still running.
wait_end() { # PID
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || { wait "$1"; return; }
		sleep 0.1
	done
	return 124
}

# A client on h1 connecting to h2 whose rails are both black-holed: its
# pid in CPID and its rail ports in P1 P2 (the INIT is out, unanswered).
pending_connect() { # NAME [xfer args]
	local name=$1 r
	shift
	for r in 1 2; do tb_fault blackhole 2 "$r" on || nt_fail "blackhole"; done
	nt_send_bg "$name" 1 2 "$@"
	XPID=$NT_PID
	for r in 1 2; do
		sleep 0.1
		CPID=$(nt_xfer_pid 1 send)
		[ -n "$CPID" ] && break
	done
	[ -n "$CPID" ] || nt_fail "client $name not found"
	P1=$(wait_port 1 "$CPID" "$(nt_addr 1 1)")
	P2=$(wait_port 1 "$CPID" "$(nt_addr 1 2)")
	[ -n "$P1" ] && [ -n "$P2" ] || nt_fail "client $name's rail ports not found"
	sleep 0.3 # its INIT has gone out (into the black hole)
	kill -0 "$XPID" 2>/dev/null || nt_fail "client $name ended before the forgery: $(cat "$NT_DIR/$name.err")"
}

# From h3: port unreachable to h1's rail RAIL socket (port PORT) quoting a
# datagram it sent to DST.
forge_unreach() { # RAIL PORT DST
	ip netns exec "$(tb_ns 3)" python3 "$FORGE" 3 0 "$(nt_addr 1 "$1")" \
		"$(nt_addr 1 "$1"):$2" "$3" 3 0.05 || nt_fail "forging ICMP failed"
}

scenario_forged_refusal() {
	local a21 a22 absent st
	nt_init "icmp-$scenario" 3 2
	NT_TIMEOUT=${NT_TIMEOUT:-60}
	a21=$(nt_addr 2 1)
	a22=$(nt_addr 2 2)
	absent=${a21%.*}.200 # on rail 1's subnet, no host
	nt_serve 2

	# 1. errors naming other destinations: the pending connect goes on
	pending_connect x 20M
	forge_unreach 1 "$P1" "$a21:7001"
	forge_unreach 1 "$P1" "$absent:7000"
	forge_unreach 2 "$P2" "$a22:7000"
	forge_unreach 2 "$P2" "$a22:7001"
	sleep 0.5
	kill -0 "$XPID" 2>/dev/null ||
		nt_fail "a port unreachable naming another destination aborted the pending connect: $(cat "$NT_DIR/x.err")"
	nt_note "12 forged port unreachable naming other destinations: the connect still waits"
	for r in 1 2; do tb_fault blackhole 2 "$r" off || nt_fail "heal"; done
	wait "$XPID" || nt_fail "the transfer after the forgery failed: $(cat "$NT_DIR/x.err")"
	nt_require_verified x
	nt_note "black hole healed: connected, 20M verified"

	# 2. control: the same forgery naming the INIT's destination is believed
	pending_connect y 20M
	forge_unreach 1 "$P1" "$a21:7000"
	wait_end "$XPID"
	st=$?
	[ "$st" != 124 ] || nt_fail "a port unreachable naming the INIT's destination did not fail the connect: the test proves nothing"
	[ "$st" != 0 ] || nt_fail "the connect succeeded through a black hole"
	grep -q "cannot connect.*Connection refused" "$NT_DIR/y.err" ||
		nt_fail "the connect failed otherwise than refused: $(cat "$NT_DIR/y.err")"
	nt_note "port unreachable naming $a21:7000: connect refused while h2 was black-holed"
	for r in 1 2; do tb_fault blackhole 2 "$r" off || nt_fail "heal"; done

	# 3. control: nobody listens at h2's port 7001, h2's own kernel says so
	nt_send_bg z 1 2 --port 7001 1M
	XPID=$NT_PID
	wait_end "$XPID"
	st=$?
	[ "$st" != 124 ] && [ "$st" != 0 ] || nt_fail "a connect to a port nobody listens at was not refused (status $st)"
	grep -q "cannot connect.*Connection refused" "$NT_DIR/z.err" ||
		nt_fail "the connect to a closed port failed otherwise than refused: $(cat "$NT_DIR/z.err")"
	nt_ok "forged-refusal: forged port unreachable naming other destinations left the connect pending, 20M verified after; one naming the INIT's destination, and a closed port, refuse it"
}

# The pid of the process in HOST's namespace whose command line matches PATTERN.
pid_like() { # HOST PATTERN
	local p
	for p in $(ip netns pids "$(tb_ns "$1")"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "$2" && { echo "$p"; return; }
	done
}

now_ms() { date +%s%3N; }

# A server's recv line for a connection that ended otherwise than verified.
failed_recv() { # FILE
	grep 'xfer done role=recv.*verified=no' "$1" | head -n 1
}

scenario_dead_peer() {
	local kpid cpid apid bpid t0 ta= ts= now line
	nt_init "icmp-$scenario" 2 2 1gbit
	NT_TIMEOUT=${NT_TIMEOUT:-60}
	nt_serve 2             # S, port 7000: lives
	nt_serve 2 --port 7001 # K: killed
	kpid=$(pid_like 2 "ri2n-xfer serve.*--port 7001")
	[ -n "$kpid" ] || nt_fail "server K not found"
	nt_send_bg a 1 2 --port 7001 --seconds 30 # A streams to K
	apid=$NT_PID
	nt_send_bg c 1 2 --seconds 29 # C streams to S, killed
	nt_send_bg b 1 2 --seconds "$SECS" # B streams to S: verified
	bpid=$NT_PID
	sleep 1
	cpid=$(pid_like 1 "ri2n-xfer send.*--seconds 29")
	[ -n "$cpid" ] || nt_fail "client C not found"
	kill -0 "$apid" 2>/dev/null || nt_fail "A ended before K was killed: $(cat "$NT_DIR/a.out" "$NT_DIR/a.err")"
	kill -0 "$bpid" 2>/dev/null || nt_fail "B ended before the kill: $(cat "$NT_DIR/b.out")"
	t0=$(now_ms)
	kill -9 "$kpid" "$cpid"
	# A's connection (its peer K gone) and S's to C must fail within 5 s
	while [ -z "$ta" ] || [ -z "$ts" ]; do
		now=$(now_ms)
		[ -z "$ta" ] && ! kill -0 "$apid" 2>/dev/null && ta=$((now - t0))
		[ -z "$ts" ] && [ -n "$(failed_recv "$NT_DIR/serve2.out")" ] && ts=$((now - t0))
		[ $((now - t0)) -lt 5000 ] || break
		sleep 0.02
	done
	[ -n "$ta" ] || nt_fail "A still runs 5 s after its server was killed -9 (the dead-peer timeout is 30 s)"
	[ -n "$ts" ] || nt_fail "the server's connection to C, killed -9, did not end within 5 s"
	# a writer's write fails with EPIPE, the reason (SO_ERROR) is the reset
	grep -q 'conn failed .*error=Connection reset by peer' "$NT_DIR/a.err" ||
		nt_fail "A's connection did not fail with 'Connection reset by peer'"
	line=$(failed_recv "$NT_DIR/serve2.out")
	case $line in *"reason=Connection reset by peer"*) ;;
	*) nt_fail "the server's connection to C ended otherwise than reset: $line" ;; esac
	wait "$bpid" || nt_fail "B's transfer failed after the kills: $(cat "$NT_DIR/b.out")"
	nt_require_verified b
	[ "$(grep -c 'xfer done role=recv.*verified=yes' "$NT_DIR/serve2.out")" = 1 ] ||
		nt_fail "the server did not verify B's bytes: $(grep done "$NT_DIR/serve2.out")"
	nt_ok "dead-peer$([ -n "${RI2N_KEY:-}" ] && echo ' (keyed)'): kill -9 -> ECONNRESET at the sender after ${ta} ms, at the receiving server after ${ts} ms (bound 5000 ms, polled every 20 ms); B's ${SECS} s stream verified at $(nt_field "$NT_DIR/b.out" mbps) Mbit/s"
}

scenario_dead_peer_idle() {
	local spid t0 now dt
	nt_init "icmp-$scenario" 2 2 1gbit
	NT_TIMEOUT=${NT_TIMEOUT:-60}
	nt_serve 2
	spid=$(nt_xfer_pid 2 serve)
	[ -n "$spid" ] || nt_fail "server not found"
	# a client whose input stays open and empty (this shell holds the fifo's
	# other end): connected, then idle
	mkfifo "$NT_DIR/in" || nt_fail "mkfifo"
	exec 7<>"$NT_DIR/in"
	# (nt_send_bg's own & would give it /dev/null for input)
	RI2N_RAILS=$NT_RAILS setsid timeout -s KILL "$NT_TIMEOUT" ip netns exec "$(tb_ns 1)" \
		"$NT_XFER" send "$(nt_addr 2)" --file - <"$NT_DIR/in" >"$NT_DIR/i.out" 2>"$NT_DIR/i.err" &
	NT_PIDS+=($!)
	sleep 3 # past the idle pace (1 s without DATA): keepalives every second
	grep -q 'conn connected' "$NT_DIR/i.err" || nt_fail "the idle client did not connect: $(cat "$NT_DIR/i.err")"
	dt=
	t0=$(now_ms)
	kill -9 "$spid"
	while [ -z "$dt" ]; do
		now=$(now_ms)
		grep -q 'failed: connection reset by peer' "$NT_DIR/i.err" && dt=$((now - t0))
		[ $((now - t0)) -lt 5000 ] || break
		sleep 0.02
	done
	[ -n "$dt" ] || nt_fail "the idle client's connection did not fail within 5 s of its server's kill -9"
	nt_ok "dead-peer-idle$([ -n "${RI2N_KEY:-}" ] && echo ' (keyed)'): an idle connection reset ${dt} ms after its server's kill -9 (bound 5000 ms; keepalives every second when idle)"
}

# From h3: port unreachable to h1's rail RAIL socket (port PORT) about its
# datagram to DST, quoting QUOTE (icmp_forge.py), COUNT times 20 ms apart.
forge_quoted() { # RAIL PORT DST QUOTE COUNT
	ip netns exec "$(tb_ns 3)" python3 "$FORGE" 3 0 "$(nt_addr 1 "$1")" \
		"$(nt_addr 1 "$1"):$2" "$3" "$5" 0.02 "$4" || nt_fail "forging ICMP failed"
}

scenario_dead_peer_forged() {
	local xpid cpid p1 p2 r u0 u1 st hdr pn="" fp=() cp=()
	nt_init "icmp-$scenario" 3 2 20mbit
	NT_TIMEOUT=${NT_TIMEOUT:-60}
	[ -n "${RI2N_KEY:-}" ] && pn=0000000000000001 # a packet number: epoch 0, counter 1
	nt_serve 2
	# 1. plausible forgeries (the type, rail, a fresh send time; an id the
	# forger cannot know) on both rails: nothing changes
	nt_send_bg x 1 2 --seconds 5
	xpid=$NT_PID
	sleep 0.5
	cpid=$(nt_xfer_pid 1 send)
	[ -n "$cpid" ] || nt_fail "client x not found"
	p1=$(port_of 1 "$cpid" "$(nt_addr 1 1)")
	p2=$(port_of 1 "$cpid" "$(nt_addr 1 2)")
	[ -n "$p1" ] && [ -n "$p2" ] || nt_fail "client x's rail ports not found"
	u0=$(icmp_stat 1 InDestUnreachs)
	for r in 1 2; do
		# DATA on rail r-1, a random id, seq 1, now, a 1400-byte payload
		hdr=0101000$((r - 1))$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')00000001now05780000$pn
		forge_quoted "$r" "$([ "$r" = 1 ] && echo "$p1" || echo "$p2")" "$(nt_addr 2 "$r"):7000" "$hdr" 25 &
		fp+=($!)
	done
	wait "${fp[@]}"
	u1=$(icmp_stat 1 InDestUnreachs)
	[ "$((u1 - u0))" -ge 50 ] || nt_fail "h1's kernel took $((u1 - u0)) of the 50 forged port unreachable: the test proves nothing"
	wait "$xpid" || nt_fail "the transfer failed under forged port unreachable: $(cat "$NT_DIR/x.out" "$NT_DIR/x.err")"
	nt_require_verified x
	nt_note "50 forged port unreachable quoting an unsent DATA header on both rails: 5 s stream verified"

	# 2. control: the same forgery quoting a datagram really sent (copied on
	# the path, as only an on-path host could) resets the connection
	nt_send_bg y 1 2 --seconds 30
	xpid=$NT_PID
	sleep 0.5
	cpid=$(pid_like 1 "ri2n-xfer send.*--seconds 30")
	[ -n "$cpid" ] || nt_fail "client y not found"
	# both rails' datagrams copied at once, then both forged at once: the
	# connection fails only once every rail brought one within 2 s, and one
	# rail after the other (a Python start each) once took longer than that
	# on a loaded machine
	cp=()
	for r in 1 2; do
		ip netns exec "$(tb_ns 2)" python3 "$(dirname "$0")/quote_capture.py" "r$r" \
			"$(nt_addr 1 "$r")" 7000 1 $((24 + ${#pn} / 2)) >"$NT_DIR/quote$r" &
		cp+=($!)
	done
	for r in 1 2; do
		wait "${cp[r - 1]}" || nt_fail "no DATA of y seen on rail $r"
	done
	fp=()
	for r in 1 2; do
		p1=$(port_of 1 "$cpid" "$(nt_addr 1 "$r")")
		forge_quoted "$r" "$p1" "$(nt_addr 2 "$r"):7000" "$(cat "$NT_DIR/quote$r")" 5 &
		fp+=($!)
	done
	wait "${fp[@]}"
	wait_end "$xpid"
	st=$?
	[ "$st" != 124 ] || nt_fail "port unreachable quoting real datagrams on both rails did not end the connection: the test proves nothing"
	grep -q 'conn failed .*error=Connection reset by peer' "$NT_DIR/y.err" ||
		nt_fail "y's connection failed otherwise than reset: $(cat "$NT_DIR/y.out")"
	nt_ok "dead-peer-forged$([ -n "${RI2N_KEY:-}" ] && echo ' (keyed)'): forged port unreachable quoting unsent headers change nothing; quoting real datagrams (copied on the path) they reset the connection"
}

case $scenario in
fragneeded) scenario_fragneeded ;;
fragneeded-keyed) # the same with a cluster key at both ends (the ICMP is not authenticated)
	RI2N_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	export RI2N_KEY
	scenario_fragneeded ;;
killed-peer) scenario_killed_peer ;;
forged-refusal) scenario_forged_refusal ;;
dead-peer) scenario_dead_peer ;;
dead-peer-idle) scenario_dead_peer_idle ;;
dead-peer-keyed|dead-peer-forged-keyed)
	RI2N_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	export RI2N_KEY
	[ "$scenario" = dead-peer-keyed ] && scenario_dead_peer || scenario_dead_peer_forged ;;
dead-peer-forged) scenario_dead_peer_forged ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
