#!/usr/bin/env bash
# Incast on shared switches: several hosts stream into one receiver at once.
#
#   tests/netns/test_incast.sh [SENDERS] [hold]   (root; exit 77 = skipped; default 3)
#
# A bed of SENDERS+1 hosts on 2 rails, each rail one bridge with 1 Gbit/s
# host ports (tbf), so the receiver's two ports are the shared bottleneck.
# Every sender streams a verified pattern to the last host for 8 s; in the
# middle rail 2's switch black-holes everything for 1 s (with `hold`: from
# 3 s to the end, a rail failed under every connection at once).  Every
# transfer must arrive verified and no sender may fail, each within 60 s.
# NT_TAG names the bed (default ciSENDERS, or ciSENDERSh with hold).  Each second's share per sender and
# Jain's index are printed (a note: speed is bench/'s, `bench/run.sh --only
# incast` measures it beside MPTCP).
source "$(dirname "$0")/lib.sh"

n=${1:-3}
hold=${2:-}
rx=$((n + 1))
secs=8
nt_init "${NT_TAG:-ci$n${hold:+h}}" "$rx" 2 1gbit
nt_serve "$rx"
t0=$(nt_clock)
for ((k = 1; k <= n; k++)); do
	NT_TIMEOUT=60 nt_send_bg "s$k" "$k" "$rx" --seconds "$secs" --seed "$k"
	pids[k]=$NT_PID
done
sleep 3
tb_fault switch 2 blackhole || nt_fail "black hole on rail 2's switch"
if [ -z "$hold" ]; then
	sleep 1
	tb_fault switch 2 heal || nt_fail "heal rail 2's switch"
fi
for ((k = 1; k <= n; k++)); do
	wait "${pids[k]}" || nt_fail "sender $k ended with status $? (see s$k.err)"
	nt_require_verified "s$k"
	nt_note "sender $k: $(nt_field "$NT_DIR/s$k.out" bytes) bytes verified"
done

# per whole second while every sender ran: each one's Mbit/s and Jain's index
awk -F, -v t0="$t0" -v n="$n" '
	FNR == 1 { k++; prev = 0; next }
	$1 == "send" { s = int($3 - t0); b[k, s] += $5 - prev; prev = $5; if (s > last) last = s }
	END {
		for (s = 1; s < last; s++) {
			sum = 0; sq = 0; line = ""
			for (i = 1; i <= n; i++) { x = b[i, s] * 8 / 1e6; sum += x; sq += x * x; line = line sprintf(" %6.0f", x) }
			if (sq > 0) printf "  second %d:%s Mbit/s  total %.0f  Jain %.3f\n", s, line, sum, sum * sum / (n * sq)
		}
	}' $(for ((k = 1; k <= n; k++)); do echo "$NT_DIR/s$k.csv"; done)
nt_ok "incast: $n senders into one host over shared switches, $([ -n "$hold" ] && echo "rail 2 black-holed from 3 s to the end" || echo "a 1 s black hole on rail 2"), every byte verified"
