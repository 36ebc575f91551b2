#!/usr/bin/env bash
# Path MTU per rail on real processes over veth rails in network namespaces.
#
#   tests/netns/test_mtu.sh SCENARIO      (root; exit 77 = skipped)
#
#   hole     rail 2's switch silently drops IP packets over 1000 bytes on h1's
#            port (both ways, no ICMP) for 3 s of a verified stream both ways,
#            then forwards them again
#   mixed-hole  rail 1 at MTU 9000, rail 2 at 1500 (packets sized for 1500,
#            several per datagram on rail 1); rail 1's switch drops IP packets
#            over 1500 bytes (both ways, silently) for 3 s of a verified
#            stream, then forwards them again: rail 1 drops to a size that
#            gets through, keeps carrying DATA (never out of service), and is
#            back at jumbo size after the heal
#   mixed    rail 1 at MTU 9000, rail 2 at 1500: a verified stream both ways;
#            each end finds rail 1's size by probing (8972-byte datagrams
#            carrying several packets) and keeps 1472 on rail 2
#
# Checks come from ri2n's own events and per-rail counters (ri2n-xfer prints
# them), never from wall-clock speed; figures are printed as notes.
source "$(dirname "$0")/lib.sh"

scenario=${1:?usage: test_mtu.sh SCENARIO}
# These judge how fast and how cleanly rails are judged by size, in real
# time.  Under TSan everything runs 5-15 times slower (a 10 s stream took
# 65 s) and the size and count verdicts, tuned for real hosts, misfire for a
# few ms on healthy rails; the simulator (sim_mtu-*) and unit tests check
# the same logic with literal times, and the other netns tests run the same
# code paths under TSan for races.
if nt_linked "$NT_XFER" libtsan; then
	nt_skip "TSan build: verdict timing is not meaningful at its speed"
fi
# a bed of its own per scenario (nt_init makes its tag of this name: tests/netns/tag.sh)
tag=mtu-$scenario

# The first time (monotonic) at or after AFTER that RAIL went down on its own: a
# down that every rail shared within 10 ms is a process held off the CPU (its
# peer heard nothing on any rail), not a verdict on one rail's path, and skipped.
rail_down_alone() { # NAME RAIL AFTER_MONO NRAILS
	local t0
	t0=$(nt_mono0 "$1")
	awk -v r="$2" -v t0="$t0" -v after="$3" -v n="$4" '
		$1 == "xfer" && $2 == "event" && $5 == "down" {
			split($3, a, "="); split($4, b, "=")
			k++; t[k] = t0 + a[2]; rl[k] = b[2] }
		END {
			for (i = 1; i <= k; i++) {
				if (rl[i] != r || t[i] < after) continue
				delete seen
				for (j = 1; j <= k; j++)
					if (t[j] >= t[i] - 0.01 && t[j] <= t[i] + 0.01) seen[rl[j]] = 1
				m = 0
				for (x in seen) m++
				if (m < n) { printf "%.6f\n", t[i]; exit }
			}
		}' "$NT_DIR/$1.err"
}

# The first "xfer event" line for RAIL going down with a cause containing TEXT.
event_with_cause() { # NAME RAIL TEXT
	grep -F "rail=$2 down" "$NT_DIR/$1.err" | grep -F "$3" | head -n 1
}

# Outages of RAIL in NAME.err (a down to the next up) that are not a blip: longer
# than 5 ms, unended, or with an MTU verdict. Prints the first down line of each.
long_downs() { # NAME RAIL
	awk -v r="rail=$2" '$1=="xfer" && $2=="event" && $4==r {
		split($3, a, "="); t = a[2] + 0
		if ($5=="down") { if (!open) { open = 1; at = t; line = $0; mtu = 0 } if (index($0, "MTU")) mtu = 1 }
		else if ($5=="up" && open) { if (mtu || t - at > 0.005) print line; open = 0 }
	} END { if (open) print line }' "$NT_DIR/$1.err"
}

case $scenario in
hole)
	nt_init "$tag" 2 2 1gbit
	rail=1 # testbed rail 2 (r2), ri2n rail 1
	nt_serve 2
	nt_send_bg x 1 2 1500M --duplex
	sleep 2
	tf0=$(nt_clock) # the down is looked for from here (nt_check_outage says why)
	tb_fault mtuhole 1 $((rail + 1)) 1000
	tf=$(nt_clock)
	sleep 3
	th0=$(nt_clock)
	tb_fault mtuhole 1 $((rail + 1)) off
	th=$(nt_clock)
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/x.out" recv-back)" = yes ] || nt_fail "return stream not verified"
	down=$(nt_event_mono x $rail down "$tf0")
	[ -n "$down" ] || nt_fail "rail $rail never reported down after the MTU black hole began"
	awk -v d="$down" -v h="$th0" 'BEGIN { exit !(d < h) }' ||
		nt_fail "rail $rail reported down only after the heal"
	# small packets (ACKs, LINK_STATE, small heartbeats) pass the hole: none may revive it
	up=$(nt_event_mono x $rail up "$down")
	[ -n "$up" ] || nt_fail "rail $rail not back in use after the heal"
	awk -v u="$up" -v h="$th0" 'BEGIN { exit !(u >= h) }' ||
		nt_fail "rail $rail came back inside the MTU black hole (small datagrams revived it)"
	used=$(nt_data_between x $rail "$(awk -v d="$down" 'BEGIN{printf "%.6f", d + 0.05}')" "$th0")
	[ "$used" -eq 0 ] || nt_fail "$used DATA packets on rail $rail while it was down"
	ev=$(event_with_cause x $rail "MTU black hole")
	[ -n "$ev" ] || nt_fail "no event named rail $rail an MTU black hole: $(grep -F "rail=$rail" "$NT_DIR/x.err" | grep event | head -n 4)"
	# the healthy rail is never taken for an MTU black hole (nor anything else).
	# Under a sanitizer on a loaded host the sender's rail sockets stall for tens
	# of ms (gaps of 16 ms were routine on the healthy rail): a receive-count
	# verdict may then take a rail for 1 ms until its next packet. There only
	# such blips are allowed besides the hole's own down: never an MTU verdict.
	sanitized=0
	nt_linked "${RI2N_XFER:-}" 'lib[at]san' && sanitized=1
	for f in x serve2; do
		downs0=$(nt_rail_field "$NT_DIR/$f.out" 0 downs)
		downs1=$(nt_rail_field "$NT_DIR/$f.out" $rail downs)
		if [ "$sanitized" = 1 ]; then
			long=$(long_downs "$f" 0)
			[ -z "$long" ] || nt_fail "$f: the healthy rail 0 went down: $long"
			[ "$(long_downs "$f" $rail | wc -l)" -le 1 ] ||
				nt_fail "$f: rail $rail went down more than once: $(long_downs "$f" $rail)"
			[ "$downs0" -eq 0 ] || nt_note "$f: rail 0 blipped down $downs0 time(s) for under 5 ms (sanitizer build)"
		else
			[ "$downs0" -eq 0 ] || nt_fail "$f.out: the healthy rail 0 went down"
			[ "$downs1" -eq 1 ] || nt_fail "$f.out: rail $rail went down more than once"
		fi
	done
	holes=$(nt_rail_field "$NT_DIR/x.out" $rail mtu_holes)
	[ "${holes:-0}" -ge 1 ] || nt_fail "rail $rail counts no MTU black hole (mtu_holes=${holes:-none})"
	nt_note "rail $rail: down $(awk -v a="$down" -v b="$tf" 'BEGIN{printf "%.1f", (a-b)*1000}') ms after the hole began, back $(awk -v a="$up" -v b="$th0" 'BEGIN{printf "%.0f", (a-b)*1000}') ms after the heal began (the command took $(awk -v a="$th" -v b="$th0" 'BEGIN{printf "%.0f", (a-b)*1000}') ms)"
	nt_note "slowest 100 ms inside the hole: $(nt_min_mbps_between x "$(awk -v d="$down" 'BEGIN{printf "%.6f", d + 0.2}')" "$th0") Mbit/s one way; event: $ev"
	nt_ok "hole: every byte verified both ways, rail $rail out of data service for the MTU black hole (not revived by small datagrams) and back after it"
	;;
mixed-hole)
	nt_init "$tag" 2 2
	tb_destroy >/dev/null 2>&1
	tb_create --hosts 2 --rails 2 --rate 1gbit --mtu 9000,1500 >/dev/null || nt_fail "test bed"
	rail=0 # testbed rail 1 (r1, MTU 9000), ri2n rail 0
	nt_serve 2
	nt_send_bg x 1 2 1500M
	sleep 2
	tb_fault mtuhole 1 $((rail + 1)) 1500
	tf=$(nt_clock)
	sleep 3
	th0=$(nt_clock)
	tb_fault mtuhole 1 $((rail + 1)) off
	wait "$NT_PID" || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	# the rail carries DATA at its smaller size through the hole (from 0.2 s in: detection)
	used=$(nt_data_between x $rail "$(awk -v t="$tf" 'BEGIN{printf "%.6f", t + 0.2}')" "$th0")
	[ "$used" -gt 1000 ] || nt_fail "rail $rail carried $used DATA datagrams inside the hole: out of service"
	down=$(rail_down_alone x $rail "$tf" 2)
	[ -z "$down" ] || awk -v d="$down" -v h="$th0" 'BEGIN { exit !(d >= h) }' ||
		nt_fail "rail $rail went down inside the hole (it should shrink instead)"
	[ -z "$down" ] || nt_note "rail $rail went down $(awk -v d="$down" -v h="$th0" 'BEGIN{printf "%.0f", (d-h)*1000}') ms after the heal began"
	# and is back at jumbo size after the heal (the old size is retried every 250 ms)
	d=$(nt_rail_field "$NT_DIR/x.out" $rail dgram)
	[ "${d:-0}" -gt 8900 ] || nt_fail "rail $rail ends at ${d:-?} bytes, not back at jumbo size"
	nt_note "rail $rail carried $used DATA datagrams inside the hole; slowest 100 ms there: $(nt_min_mbps_between x "$(awk -v t="$tf" 'BEGIN{printf "%.6f", t + 0.2}')" "$th0") Mbit/s"
	nt_ok "mixed-hole: every byte verified, rail $rail shrank for the MTU black hole and kept carrying data, $d bytes after the heal"
	;;
mixed)
	nt_init "$tag" 2 2
	tb_destroy >/dev/null 2>&1
	tb_create --hosts 2 --rails 2 --rate 1gbit --mtu 9000,1500 >/dev/null || nt_fail "test bed"
	nt_serve 2 --once
	nt_send x 1 2 256M --duplex || nt_fail "transfer failed: $(cat "$NT_DIR/x.out")"
	nt_require_verified x
	[ "$(nt_verified "$NT_DIR/x.out" recv-back)" = yes ] || nt_fail "return stream not verified"
	for r in 0 1; do
		[ "$(nt_rail_field "$NT_DIR/x.out" $r tx_data)" -gt 1000 ] || nt_fail "rail $r carried almost nothing"
		[ "$(nt_rail_field "$NT_DIR/x.out" $r downs)" -eq 0 ] || nt_fail "rail $r went down on a healthy bed"
	done
	# the size each end sends on each rail: jumbo where the rail carries it, found by probing
	for f in x.out serve2.out; do
		d0=$(nt_rail_field "$NT_DIR/$f" 0 dgram)
		d1=$(nt_rail_field "$NT_DIR/$f" 1 dgram)
		[ "${d0:-0}" -gt 8900 ] && [ "${d0:-0}" -le 8972 ] ||
			nt_fail "$f: the jumbo rail sends datagrams of ${d0:-?} bytes, not ~8972"
		[ "${d1:-0}" -eq 1472 ] || nt_fail "$f: the 1500 rail sends datagrams of ${d1:-?} bytes, not 1472"
	done
	nt_ok "mixed: MTU 9000 + 1500 rails, 256 MiB each way verified, $(nt_field "$NT_DIR/x.out" mbps) Mbit/s, datagrams of $(nt_rail_field "$NT_DIR/x.out" 0 dgram) + $(nt_rail_field "$NT_DIR/x.out" 1 dgram) bytes"
	;;
*)
	echo "unknown scenario '$scenario'" >&2
	exit 2
	;;
esac
