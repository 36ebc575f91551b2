#!/usr/bin/env bash
# IPv6 rails (issue 32) on real processes over veth rails in network namespaces.
#
#   tests/netns/test_v6.sh SCENARIO      (root; exit 77 = skipped)
#
# The bed's rails are IPv6 only where the scenario says (testbed --v6): host k's r<i> is
# 2001:2:0:<i>::<k>/64, RFC 5180's benchmarking prefix. RI2N_RAILS names the interfaces, as
# for IPv4 (an interface with no IPv4 address is taken by its global IPv6 one).
#
#   v6          two IPv6-only rails: a verified stream to host 2's IPv6 address runs on
#               both (ri2n-xfer prints their ends in brackets); rail 1 black-holed: down,
#               no DATA on it meanwhile, every byte verified; healed: used again
#   v6-addr-gone  rail 1's IPv6 address deleted at the sender mid-transfer: the rail is down
#               at once with the cause "address removed" (the kernel's IPv6 address event),
#               and carries DATA again once the address is back
#   v6-addr-change  rail 1's IPv6 address deleted at the sender mid-transfer and another
#               added (with duplicate detection): the rail moves to it once it can be
#               bound, the peer is told, and it carries DATA; every byte verified
#   v6-rail-new three IPv6 rails, r3 with no global address at either end when the transfer
#               starts (only its link-local one, which a named rail never takes): the
#               addresses added mid-transfer, the engine opens the rail on its IPv6 address,
#               offers it to the live connection and it carries DATA (still up at the end);
#               every byte verified
#   v6-rail-new-mixed  the same with rails 1 and 2 IPv4: the late IPv6 rail must carry the
#               connection's datagrams (the engine sizes them for a waiting rail as IPv6)
#   v6-link-local  two IPv6 rails named by their link-local addresses ("fe80::..%r1"), the
#               connection made to host 2's on r1 with its interface: both rails carry
#               DATA (link-local rails are told apart by interface, not subnet), every byte
#               verified
#   v6-mixed    rail 1 IPv4, rail 2 IPv6: a connection to rail 1's IPv4 address uses both,
#               each carrying its share, every byte verified; ri2n-stat shows rail 2's ends
#               in brackets; a connection to the server's IPv6 address uses both too
source "$(dirname "$0")/lib.sh"

scenario=${1:?usage: test_v6.sh SCENARIO}
tag=v6-$scenario

# The sender's summary line of ri2n rail RAIL names IPv6 ends ([addr]) or IPv4 ones.
rail_family() { # NAME RAIL
	local l
	l=$(nt_rail_field "$NT_DIR/$1.out" "$2" local)
	case $l in
	\[2001:2:0:*\]) echo 6 ;;
	198.18.*) echo 4 ;;
	*) echo "?$l" ;;
	esac
}

case $scenario in
v6)
	nt_init "$tag" 2 2 1gbit --v6 all
	case $(nt_addr 2) in 2001:2:0:1::2) ;; *) nt_fail "the bed's rail 1 is not IPv6: $(nt_addr 2)" ;; esac
	nt_timed_transfer x 8
	sleep 2
	tf0=$(nt_clock)
	tb_fault blackhole 1 2 on
	tf=$(nt_clock)
	sleep 2.5
	th0=$(nt_clock)
	tb_fault blackhole 1 2 off
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	for r in 0 1; do
		[ "$(rail_family x $r)" = 6 ] || nt_fail "rail $r is not IPv6: $(rail_family x $r)"
		[ "$(nt_rail_field "$NT_DIR/x.out" $r tx_data)" -gt 1000 ] ||
			nt_fail "rail $r carried almost nothing"
	done
	nt_check_outage x 1 "$tf" "$th0" "$th0" "$tf0"
	nt_ok "v6: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes) over two IPv6 rails; rail 1 left out while black-holed and taken back"
	;;
v6-addr-gone)
	nt_init "$tag" 2 2 1gbit --v6 all
	nt_timed_transfer x 5
	sleep 1.5
	ns1=$(tb_ns 1)
	a=$(tb_addr 1 2) # ri2n rail 1 is r2
	tf=$(nt_clock)
	ip -n "$ns1" addr del "$a/64" dev r2 || nt_fail "could not delete $a from r2"
	sleep 1.5
	th0=$(nt_clock)
	ip -n "$ns1" addr add "$a/64" dev r2 nodad || nt_fail "could not add $a back to r2"
	th=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	grep -q '^xfer event .* rail=1 down .*cause="address removed"' "$NT_DIR/x.err" ||
		nt_fail "no rail 1 down event with the cause \"address removed\""
	grep -q "rail 1 (r2 $a): address removed: down" "$NT_DIR/x.err" ||
		nt_fail "the log does not say rail 1 ($a) went down for its address"
	nt_check_outage x 1 "$tf" "$th0"
	after=$(nt_data_between x 1 "$th" 1e12)
	[ "$after" -gt 0 ] || nt_fail "rail 1 carried no DATA after its address came back"
	nt_ok "v6-addr-gone: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 1 down at once for its IPv6 address, used again once it was back ($after DATA packets)"
	;;
v6-addr-change)
	nt_init "$tag" 2 2 1gbit --v6 all
	nt_timed_transfer x 6
	sleep 1.2
	ns1=$(tb_ns 1)
	a=$(tb_addr 1 2) # ri2n rail 1 is r2
	b=${a%::*}::11
	tf=$(nt_clock)
	ip -n "$ns1" addr del "$a/64" dev r2 || nt_fail "could not delete $a from r2"
	sleep 0.3
	# with duplicate detection this time: the address is usable once the kernel says so
	ip netns exec "$ns1" sysctl -qw net.ipv6.conf.r2.dad_transmits=1 net.ipv6.conf.r2.retrans_time_ms=200
	tg0=$(nt_clock)
	ip -n "$ns1" addr add "$b/64" dev r2 || nt_fail "could not add $b to r2"
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	grep -q '^xfer event .* rail=1 down .*cause="address removed"' "$NT_DIR/x.err" ||
		nt_fail "no rail 1 down event with the cause \"address removed\""
	grep -q "rail 1 (r2 $b/64): address changed from $a: rebound, 1 connection told" "$NT_DIR/x.err" ||
		nt_fail "the log does not say rail 1 moved to $b: $(grep 'rail 1' "$NT_DIR/x.err" | tail -4)"
	after=$(nt_data_between x 1 "$tg0" 1e12)
	[ "$after" -gt 0 ] || nt_fail "rail 1 carried no DATA at $b"
	up=$(nt_event_mono x 1 up "$tg0")
	nt_note "rail 1 up $(awk -v a="$up" -v b="$tg0" 'BEGIN{printf "%.0f", (a-b)*1000}') ms after $b was added (duplicate detection 200 ms), $after DATA packets there"
	nt_ok "v6-addr-change: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 1 rebound to its new IPv6 address and carried data"
	;;
v6-rail-new | v6-rail-new-mixed)
	if [ "$scenario" = v6-rail-new ]; then v6=all; else v6=3; fi
	nt_init "$tag" 2 3 1gbit --v6 "$v6"
	nt_rail_comes 64 nodad
	[ "$(rail_family x 2)" = 6 ] || nt_fail "rail 2 is not IPv6: $(rail_family x 2)"
	[ "$after" -gt 1000 ] || nt_fail "rail 2 carried almost no DATA after r3's addresses came: $after"
	[ "$(nt_rail_field "$NT_DIR/x.out" 2 up)" = 1 ] || nt_fail "rail 2 is down at the end"
	nt_ok "$scenario: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes); rail 2 opened on its IPv6 address mid-transfer and carried $after DATA packets"
	;;
v6-link-local)
	nt_init "$tag" 2 2 1gbit --v6 all
	for k in 1 2; do
		for i in 1 2; do
			a=$(nt_link_local "$k" "$i") || exit 1
			[[ $a == fe80:* ]] || nt_fail "h$k's r$i has no link-local address: '$a'"
			ll[k * 10 + i]=$a
		done
	done
	# shellcheck disable=SC2034  # nt_serve (lib.sh) reads it: host 2's own list
	NT_RAILS="${ll[21]}%r1,${ll[22]}%r2"
	nt_serve 2
	RI2N_RAILS="${ll[11]}%r1,${ll[12]}%r2" setsid timeout -s KILL "${NT_TIMEOUT:-120}" \
		ip netns exec "$(tb_ns 1)" "$NT_XFER" send "${ll[21]}%r1" --seconds 3 \
		--csv "$NT_DIR/x.csv" >"$NT_DIR/x.out" 2>"$NT_DIR/x.err" &
	NT_PIDS+=($!)
	wait $! || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	for r in 0 1; do
		[[ $(nt_rail_field "$NT_DIR/x.out" $r local) == "[fe80:"* ]] ||
			nt_fail "rail $r is not link-local: $(nt_rail_field "$NT_DIR/x.out" $r local)"
		[ "$(nt_rail_field "$NT_DIR/x.out" $r tx_data)" -gt 1000 ] ||
			nt_fail "rail $r carried almost nothing"
	done
	nt_ok "v6-link-local: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes) over two link-local rails"
	;;
v6-mixed)
	nt_init "$tag" 2 2 1gbit --v6 2
	case $(nt_addr 2) in 198.18.1.2) ;; *) nt_fail "the bed's rail 1 is not IPv4: $(nt_addr 2)" ;; esac
	nt_timed_transfer x 4
	# ri2n-stat shows the IPv6 rail's ends in brackets, the IPv4 rail's as before
	sleep 1.5
	pid=$(nt_xfer_pid 1 send)
	st=$(ip netns exec "$(tb_ns 1)" "$(dirname "$NT_XFER")/ri2n-stat" --pid "$pid" 2>&1)
	grep -qE '^ +1 +198\.18\.1\.1 +198\.18\.1\.2 ' <<<"$st" ||
		nt_fail "ri2n-stat does not show rail 1 as IPv4: $st"
	grep -qE '^ +2 +\[2001:2:0:2::1\] +\[2001:2:0:2::2\] ' <<<"$st" ||
		nt_fail "ri2n-stat does not show rail 2 as IPv6 in brackets: $st"
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(rail_family x 0)" = 4 ] || nt_fail "rail 0 is not IPv4: $(rail_family x 0)"
	[ "$(rail_family x 1)" = 6 ] || nt_fail "rail 1 is not IPv6: $(rail_family x 1)"
	for r in 0 1; do
		[ "$(nt_rail_field "$NT_DIR/x.out" $r tx_data)" -gt 1000 ] ||
			nt_fail "rail $r carried almost nothing"
	done
	# the same server reached at its IPv6 address: the handshake runs on rail 2, both used
	RI2N_RAILS=$NT_RAILS timeout -s KILL "${NT_TIMEOUT:-120}" ip netns exec "$(tb_ns 1)" \
		"$NT_XFER" send "$(tb_addr 2 2)" 64M >"$NT_DIR/y.out" 2>"$NT_DIR/y.err" ||
		nt_fail "transfer to $(tb_addr 2 2) failed: $(cat "$NT_DIR/y.out")"
	nt_require_verified y
	for r in 0 1; do
		[ "$(nt_rail_field "$NT_DIR/y.out" $r tx_data)" -gt 1000 ] ||
			nt_fail "to the IPv6 address: rail $r carried almost nothing"
	done
	nt_ok "v6-mixed: every byte verified ($(nt_field "$NT_DIR/x.out" bytes) bytes) over an IPv4 and an IPv6 rail, $(nt_rail_field "$NT_DIR/x.out" 0 tx_data) and $(nt_rail_field "$NT_DIR/x.out" 1 tx_data) DATA packets"
	;;
*)
	echo "unknown scenario '$scenario'" >&2
	exit 2
	;;
esac
