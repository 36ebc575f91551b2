#!/usr/bin/env bash
# Kernel errors on shared rail sockets (root; 77 = skipped).  Issue 14, findings 1 and 2.
#
#   tests/netns/test_icmp.sh SCENARIO
#
#   fragneeded   h1 sends 800 MiB to h2 over 2 shaped rails; 1 s in, forged ICMP
#                "fragmentation needed" (MTU 552) quoting the ri2n ports of each rail
#                reach both ends, 5 per rail and direction.  The kernel takes them (a
#                552-byte path MTU shows in its route cache), yet every byte arrives
#                verified and no send fails (no rail goes down on a send error): ri2n
#                sizes its own datagrams and the ICMP changes nothing it sends.
#   fragneeded-keyed  the same with a cluster key (RI2N_KEY) at both ends
#   killed-peer  a server, two clients on h1: A streams, B streams 800 MiB; A is
#                killed -9 while B streams, so h1 answers the server's datagrams to A
#                with ICMP port unreachable on the rail sockets both share.  B's
#                transfer completes verified, no rail of the server or of B goes down
#                on a send error (the errors are about A, not the next datagram), and
#                the server, idle afterwards with A's connection still waiting for its
#                dead-peer timeout, uses < 20% of a CPU over 2 s (a spin detector:
#                an error-queue entry left behind kept the engine waking).
#
# Environment: RI2N_XFER; RI2N_ICMP_NOFORGE=1 runs fragneeded without the forged
# packets (the baseline rate); RI2N_ICMP_BYTES (default 800M).
source "$(dirname "$0")/lib.sh"
FORGE="$(dirname "$0")/icmp_forge.py"
BYTES=${RI2N_ICMP_BYTES:-800M}
scenario=${1:?usage: test_icmp.sh fragneeded|fragneeded-keyed|killed-peer}
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
	local xpid cpid r a1 a2 p1 mtu downs
	nt_init hkf 2 2 1gbit
	NT_TIMEOUT=${NT_TIMEOUT:-90}
	nt_serve 2 --once
	nt_send_bg x 1 2 "$BYTES"
	xpid=$NT_PID
	sleep 1
	kill -0 "$xpid" 2>/dev/null || nt_fail "the transfer ended before the forgery: $(cat "$NT_DIR/x.out")"
	cpid=$(nt_xfer_pid 1 send)
	[ -n "$cpid" ] || nt_fail "sender process not found"
	if [ "${RI2N_ICMP_NOFORGE:-0}" != 1 ]; then
		for r in 1 2; do
			a1=$(nt_addr 1 "$r")
			a2=$(nt_addr 2 "$r")
			p1=$(port_of 1 "$cpid" "$a1")
			[ -n "$p1" ] || nt_fail "the sender's port on rail $r not found"
			# to the sender, about its data; to the server, about its ACKs
			ip netns exec "$(tb_ns 2)" python3 "$FORGE" 4 552 "$a1" "$a1:$p1" "$a2:7000" 5 0.2 &
			ip netns exec "$(tb_ns 1)" python3 "$FORGE" 4 552 "$a2" "$a2:7000" "$a1:$p1" 5 0.2 &
		done
		wait %% 2>/dev/null
		sleep 1.2
		for r in 1 2; do
			mtu=$(ip netns exec "$(tb_ns 1)" ip route get "$(nt_addr 2 "$r")" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')
			[ "$mtu" = 552 ] || nt_fail "rail $r: the kernel did not take the forged ICMP (route mtu '${mtu}'): the test proves nothing"
		done
		nt_note "h1's kernel holds a 552-byte path MTU to h2 on both rails"
	fi
	wait "$xpid" || nt_fail "transfer failed after forged ICMP: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/serve2.out" recv)" = yes ] || nt_fail "the server did not verify what it received"
	downs=$(send_failures x)
	[ "$downs" = 0 ] || nt_fail "the sender failed a rail $downs times on a send error: the forged ICMP did"
	nt_ok "fragneeded: $BYTES verified at $(nt_field "$NT_DIR/x.out" mbps) Mbit/s$([ "${RI2N_ICMP_NOFORGE:-0}" = 1 ] && echo ' (no forgery: baseline)')$([ -n "${RI2N_KEY:-}" ] && echo ', keyed'), no send failed"
}

scenario_killed_peer() {
	local spid apid bpid p unreach0 unreach1 t0 t1 used downs
	nt_init hkk 2 2 1gbit
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
	nt_send_bg b 1 2 "$BYTES"
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
	# A's connection waits for its dead-peer timeout (30 s): the server keeps
	# sending to it and h1 keeps answering with port unreachable
	sleep 1
	t0=$(ticks "$spid")
	sleep 2
	t1=$(ticks "$spid")
	[ -n "$t0" ] && [ -n "$t1" ] || nt_fail "server process gone"
	used=$((t1 - t0))
	nt_note "idle server: $used ticks of CPU in 2 s ($(getconf CLK_TCK)/s)"
	[ "$used" -lt $(($(getconf CLK_TCK) * 2 / 5)) ] ||
		nt_fail "the idle server used $used ticks in 2 s: it spins on its sockets' errors"
	nt_ok "killed-peer: B's $BYTES verified at $(nt_field "$NT_DIR/b.out" mbps) Mbit/s, no send failed, idle server at $((used * 100 / ($(getconf CLK_TCK) * 2)))% of a CPU"
}

case $scenario in
fragneeded) scenario_fragneeded ;;
fragneeded-keyed) # the same with a cluster key at both ends (the ICMP is not authenticated)
	RI2N_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	export RI2N_KEY
	scenario_fragneeded ;;
killed-peer) scenario_killed_peer ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
