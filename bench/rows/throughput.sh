# shellcheck shell=bash
# bench/rows/throughput.sh - goodput rows (tp2, tp4, v6, veth, degraded, loss, jumbo, mixed): ri2n-stream
# beside iperf3 over TCP per rail and MPTCP, keyed and integrity-only runs, iperf3 under ri2n-run,
# the capture check. Sourced by bench/run.sh; writes throughput.csv.

# ---- throughput ----------------------------------------------------------------------------
TP_CSV=$out/throughput.csv
echo "figure,system,rep,mbps,cpu_send_pct,cpu_recv_pct,rail_share_pct,subflows,verified,seconds,cpu_s_per_gbit" >"$TP_CSV"
tp_row() { # FIG SYS REP MBPS CPUS CPUR SHARE SUBFLOWS VERIFIED SECS
	local cpg=""
	# CPU seconds (sender + receiver process, user + system) per gigabit delivered
	[ -n "$4" ] && [ -n "$5" ] && [ -n "$6" ] &&
		cpg=$(awk -v m="$4" -v a="$5" -v b="$6" 'BEGIN { if (m > 0) printf "%.3f", (a + b) / 100 / (m / 1000) }')
	echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,${10},$cpg" >>"$TP_CSV"
	put "$1" "$2" "$3" mbps "$4"
	[ -n "$5" ] && put "$1" "$2" "$3" cpu_send "$5"
	[ -n "$6" ] && put "$1" "$2" "$3" cpu_recv "$6"
	[ -n "$cpg" ] && put "$1" "$2" "$3" cpu_gbit "$cpg"
	put "$1" "$2" "$3" share "$7"
	return 0
}

# ri2n_tp FIG REP SECS [stream args]: ri2n-stream over every rail of the bed
ri2n_tp() {
	local fig=$1 rep=$2 secs=$3 name rails b a rc mbps cs cr sh
	shift 3
	name=$RAW/$fig-ri2n-$rep
	rails=$(rails_list)
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env RI2N_RAILS="$rails" \
		"$STREAM" serve --once --quiet --port "$PORT" --csv "$name.recv.csv"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "ri2n-stream server did not start: $(head -c 300 "$name.srv.err")"; return; }
	b=$(rail_tx)
	timeout -s KILL $((${secs%.*} + 40)) ip netns exec "$(hns 1)" env RI2N_RAILS="$rails" \
		"$STREAM" send "$(haddr 2 1)" --port "$PORT" --seconds "$secs" --quiet --csv "$name.send.csv" "$@" \
		>"$name.out" 2>"$name.err"
	rc=$?
	a=$(rail_tx)
	wait_exit $srv 10
	[ $rc -eq 0 ] || { fail "ri2n-stream send exited $rc: $(grep -m1 done "$name.out") $(grep -v '^stream' "$name.err" | head -c 300)"; return; }
	grep -q 'verified=\(yes\|unchecked\)' "$name.srv.out" || { fail "receiver: $(cat "$name.srv.out")"; return; }
	# steady goodput: the receiver's bytes from 1 s after the start to the last full interval
	mbps=$(awk -F, -v s="$secs" 'NR > 1 && $1 == "recv" { if ($2 >= 1.0 && m1 == "") { m1 = $3; b1 = $5 }
		if ($2 <= s - 0.02) { m2 = $3; b2 = $5 } }
		END { if (m1 != "" && m2 > m1) printf "%.1f", (b2 - b1) * 8 / (m2 - m1) / 1e6
		      else if (m2 != "") printf "%.1f", b2 * 8 / s / 1e6 }' "$name.recv.csv")
	cs=$(cpu_pct "$name.out")
	cr=$(cpu_pct "$name.srv.out")
	sh=$(share "$b" "$a")
	tp_row "$fig" ri2n "$rep" "$mbps" "$cs" "$cr" "$sh" "" "$(field verified "$name.srv.out")" "$secs"
	log "   ri2n: $mbps Mbit/s (rails $sh %, cpu send/recv $cs/$cr %), $(field verified "$name.srv.out")"
	LAST_MBPS=$mbps
}
# iperf_tp FIG SYS REP SECS DST_RAIL [mptcp|ri2n-run]: iperf3 from host 1 to host 2's address
# on a rail; both ends under mptcpize or ri2n-run if asked
iperf_tp() {
	local fig=$1 sys=$2 rep=$3 secs=$4 rail=$5 how=${6:-} mp="" name wrap=() b a rc mbps cs cr sh sub rr
	name=$RAW/$fig-$sys-$rep
	need iperf3 "apt-get install iperf3" || return
	if [ "$how" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run) mp=1
	elif [ "$how" = ri2n-run ]; then
		rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
		wrap=(env RI2N_RAILS="$(rails_list)" "$rr")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" "${wrap[@]}" iperf3 -s -1 -p "$PORT"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "iperf3 server did not start"; return; }
	b=$(rail_tx)
	( sleep "$(awk -v s="$secs" 'BEGIN { print s / 2 + 1 }')"; mptcp_subflows >"$name.subflows" ) &
	local snap=$!
	timeout -s KILL $((secs + 30)) ip netns exec "$(hns 1)" "${wrap[@]}" iperf3 -c "$(haddr 2 "$rail")" \
		-p "$PORT" -t "$secs" -O 1 -J >"$name.json" 2>"$name.err"
	rc=$?
	a=$(rail_tx)
	wait $snap 2>/dev/null
	wait_exit $srv 10
	[ $rc -eq 0 ] || { fail "iperf3 exited $rc: $(jget "$name.json" error) $(head -c 300 "$name.err")"; return; }
	mbps=$(jget "$name.json" end.sum_received.bits_per_second | awk '{ printf "%.1f", $1 / 1e6 }')
	cs=$(jget "$name.json" end.cpu_utilization_percent.host_total | awk '{ printf "%.0f", $1 }')
	cr=$(jget "$name.json" end.cpu_utilization_percent.remote_total | awk '{ printf "%.0f", $1 }')
	[ -n "$mbps" ] || { fail "no result in iperf3's JSON ($name.json)"; return; }
	sh=$(share "$b" "$a")
	sub=""
	[ -n "$mp" ] && sub=$(cat "$name.subflows" 2>/dev/null)
	tp_row "$fig" "$sys" "$rep" "$mbps" "$cs" "$cr" "$sh" "$sub" "" "$secs"
	log "   $sys: $mbps Mbit/s (rails $sh %${mp:+, subflows carrying data: ${sub:-none seen}}, cpu send/recv $cs/$cr %)"
	if [ -n "$mp" ]; then
		local used
		used=$(awk -v s="$sh" 'BEGIN { n = split(s, x, "/"); for (i = 1; i <= n; i++) u += x[i] >= 5; print u }')
		put "$fig" "$sys" "$rep" rails_used "$used"
		[ "$used" -eq "$BED_RAILS" ] || log "   WARNING: MPTCP used $used of $BED_RAILS rails (shares $sh %)"
	fi
}

# A throughput figure: ri2n, every single rail with TCP, MPTCP; SUM of the single rails.
tp_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 i s=0 v
	shift 2
	sub_begin
	sub ri2n_tp "$fig" "$rep" "$((TP_SECS + 1))" "$@"
	for ((i = 1; i <= BED_RAILS; i++)); do
		sub iperf_tp "$fig" "tcp-r$i" "$rep" "$SINGLE_SECS" "$i"
		v=$(awk -F'\t' -v f="$fig" -v s="tcp-r$i" -v r="$rep" '$1 == f && $2 == s && $3 == r && $4 == "mbps" { print $5 }' "$METRICS")
		if [ -n "$v" ] && [ -n "$s" ]; then s=$(awk -v a="$s" -v b="$v" 'BEGIN { print a + b }'); else s=""; fi
	done
	if [ -n "$s" ]; then
		put "$fig" tcp-sum "$rep" mbps "$s"
		echo "$fig,tcp-sum,$rep,$s,,,,,,," >>"$TP_CSV"
	fi
	sub iperf_tp "$fig" mptcp "$rep" "$TP_SECS" 1 mptcp
	sub_end
}

# Unmodified iperf3 with both ends under ri2n-run (what a user of mptcpize would try)
runiperf_figure() { # FIG REP
	iperf_tp "$1-ri2n-run" ri2n "$2" "$TP_SECS" 1 ri2n-run
}

# IPv6 against IPv4: two 2 x 1 Gbit/s beds side by side, one with IPv6-only rails
# (2001:2:0:<rail>::/64), rounds alternating between them (which goes first alternates too):
# ri2n-stream, and TCP on rail 1 (iperf3) for what the longer header costs any transport.
v6_figure() { # ROUNDS
	local r fam order t4 t6
	t4=$(bed_tag bn2a) t6=$(bed_tag bn2b)
	make_bed bn2a 2 1gbit || { fail "could not create the IPv4 bed"; return; }
	BED="" # it stays: the IPv6 bed comes beside it
	BED_V6=all make_bed bn2b 2 1gbit || { BED=$t4 BED_RAILS=2; drop_bed; fail "could not create the IPv6 bed"; return; }
	sub_begin
	for ((r = 1; r <= $1; r++)); do
		order="4 6"
		[ $((r % 2)) -eq 0 ] && order="6 4"
		for fam in $order; do
			if [ "$fam" = 4 ]; then BED=$t4; else BED=$t6; fi
			tb_use "$BED"
			log "   round $r, IPv$fam"
			sub ri2n_tp "v6-ipv$fam" "$r" "$((TP_SECS + 1))"
			sub iperf_tp "v6-ipv$fam" tcp-r1 "$r" "$SINGLE_SECS" 1
		done
	done
	BED=$t6
	drop_bed
	BED=$t4 BED_RAILS=2
	drop_bed
	sub_end
}

# The cost of publishing state for ri2n-stat: ri2n alone, with publishing off
# (RI2N_STAT_MS=0 in both processes), to compare with the figure's ri2n.
nopub_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2
	shift 2
	RI2N_STAT_MS=0 ri2n_tp "$fig-nopub" "$rep" "$((TP_SECS + 1))" "$@"
}

# The same with a cluster key at both ends: every datagram sealed with AES-128-GCM (the cost of
# RI2N_KEY); authonly_figure: the integrity-only mode (RI2N_KEY_AUTH_ONLY=1, AES-GMAC).
keyed_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 key
	shift 2
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	RI2N_KEY=$key ri2n_tp "$fig-keyed" "$rep" "$((TP_SECS + 1))" "$@"
}
authonly_figure() { # FIG REP [ri2n-stream args]
	local fig=$1 rep=$2 key
	shift 2
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	RI2N_KEY=$key RI2N_KEY_AUTH_ONLY=1 ri2n_tp "$fig-keyauth" "$rep" "$((TP_SECS + 1))" "$@"
}
# The capture check: host 2 captures every UDP frame arriving on its rails (a raw socket)
# while host 1 sends 64 MiB of a known text with ri2n-xfer, without a key and with one; the
# figures are the bytes captured and how many frames hold a 16-byte piece of the text (with a
# key: 0, or the payload is readable on the wire).
CAPTURE_PY=$ROOT/tests/netns/rail_capture.py
capture_figure() { # FIG REP
	local fig=$1 rep=$2 xfer mode name cap srv key v
	xfer=$(xfer_bin) || { fail "ri2n-xfer not built"; return; }
	need python3 "apt-get install python3" || return
	python3 -c '
import sys
line = b"ri2n capture check: the quick brown fox jumps over the lazy dog 0123456789\n"
sys.stdout.buffer.write(line * (64 * 1024 * 1024 // len(line)))' >"$RAW/capture-text"
	for mode in plain keyed; do
		name=$RAW/$fig-capture-$mode-$rep
		key=""
		[ "$mode" = keyed ] && key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
		rm -f "$name.stop"
		bg "$name.cap" "$name.cap.err" ip netns exec "$(hns 2)" python3 "$CAPTURE_PY" "$name.stop" \
			"$RAW/capture-text" $(rails_list | tr , ' ')
		cap=$BG
		for v in $(seq 50); do grep -qs capturing "$name.cap" && break; sleep 0.1; done
		next_port
		bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env ${key:+RI2N_KEY=$key} \
			RI2N_RAILS="$(rails_list)" "$xfer" serve --quiet --once --port "$PORT" --out "$name.recv"
		srv=$BG
		wait_port 2 "$PORT" || { stop_bg $srv; stop_bg $cap; fail "ri2n-xfer server did not start"; return; }
		timeout -s KILL 60 ip netns exec "$(hns 1)" env ${key:+RI2N_KEY=$key} RI2N_RAILS="$(rails_list)" \
			"$xfer" send "$(haddr 2 1)" --port "$PORT" --file "$RAW/capture-text" >"$name.out" 2>"$name.err" ||
			{ stop_bg $srv; stop_bg $cap; fail "ri2n-xfer send failed: $(tail -c 300 "$name.out")"; return; }
		wait_exit $srv 10
		touch "$name.stop"
		wait_exit $cap 10
		cmp -s "$RAW/capture-text" "$name.recv" || { fail "$mode: the text arrived changed"; return; }
		rm -f "$name.recv"
		v=$(sed -n 's/^frames=[0-9]* bytes=\([0-9]*\) hits=\([0-9]*\)$/\1 \2/p' "$name.cap")
		[ -n "$v" ] || { fail "$mode: the capture failed: $(tail -c 300 "$name.cap.err")"; return; }
		put "$fig-capture" "$mode" "$rep" bytes "${v% *}"
		put "$fig-capture" "$mode" "$rep" hits "${v#* }"
		log "   $mode: $((${v% *} >> 20)) MiB captured, ${v#* } frames holding the text"
	done
}

# A figure with a condition on every rail: ri2n and MPTCP only.
cond_figure() { # FIG REP
	sub_begin
	sub ri2n_tp "$1" "$2" "$((TP_SECS + 1))"
	sub iperf_tp "$1" mptcp "$2" "$TP_SECS" 1 mptcp
	sub_end
}

degraded_figure() { # REP: rail 2 of host 1 at 250 Mbit/s (both directions of its link)
	local rep=$1 s1 s2
	tb_fault rate 1 2 250mbit || { fail "tb_fault rate 1 2 250mbit failed"; return; }
	sub_begin
	sub ri2n_tp degraded "$rep" "$((TP_SECS + 1))"
	sub iperf_tp degraded mptcp "$rep" "$TP_SECS" 1 mptcp
	sub iperf_tp degraded tcp-r1 "$rep" "$SINGLE_SECS" 1
	sub iperf_tp degraded tcp-r2 "$rep" "$SINGLE_SECS" 2
	tb_fault rate 1 2 off
	s1=$(sval degraded tcp-r1 mbps) s2=$(sval degraded tcp-r2 mbps)
	[ -n "$s1" ] && [ -n "$s2" ] && put degraded tcp-sum "$rep" mbps "$(awk -v a="$s1" -v b="$s2" 'BEGIN { print a + b }')"
	sub_end
}

loss_figure() { # REP PERCENT
	local rep=$1 p=$2 i rc
	for ((i = 1; i <= BED_RAILS; i++)); do tb_fault loss 1 "$i" "$p" || { fail "tb_fault loss failed"; return; }; done
	cond_figure "loss$p" "$rep"
	rc=$?
	for ((i = 1; i <= BED_RAILS; i++)); do tb_fault loss 1 "$i" 0; done
	return $rc
}

# The throughput section of summary.md (with the keyed, ri2n-run, capture and CPU paragraphs)
tp_summary() {
	local fig label r row f s l
	echo "## Throughput (goodput at the receiver, Mbit/s)"
	echo
	echo "ri2n: ri2n-stream (every byte verified, except on unshaped veth: \`--no-verify\`), steady state after 1 s." \
		"TCP per rail and MPTCP: iperf3 (\`-O 1\`: the first second left out), MPTCP under \`mptcpize run\`." \
		"\"rails\" is each rail's share of the bytes host 1 sent (interface counters)."
	echo
	echo "| figure | ri2n | MPTCP | sum of single-rail TCP | ri2n / MPTCP | ri2n / sum TCP | ri2n rails % | MPTCP rails % (subflows) |"
	echo "|---|---|---|---|---|---|---|---|"
	for fig in tp2 tp4 veth degraded loss1 loss5 jumbo mixed; do
		case $fig in
		tp2) label="2 x 1 Gbit/s" ;; tp4) label="4 x 1 Gbit/s" ;; veth) label="2 unshaped veth rails" ;;
		jumbo) label="2 x 1 Gbit/s, MTU 9000" ;; mixed) label="1 Gbit/s at MTU 9000 + 1 Gbit/s at 1500" ;;
		degraded) label="1 Gbit/s + 250 Mbit/s" ;; loss1) label="2 x 1 Gbit/s, 1% loss each" ;;
		loss5) label="2 x 1 Gbit/s, 5% loss each" ;;
		esac
		[ -n "$(agg $fig ri2n mbps)$(agg $fig mptcp mbps)" ] || continue
		echo "| $label | $(fmtv $fig ri2n mbps) | $(fmtv $fig mptcp mbps) | $(fmtv $fig tcp-sum mbps) |" \
			"$(ratio "$(med $fig ri2n mbps)" "$(med $fig mptcp mbps)") | $(ratio "$(med $fig ri2n mbps)" "$(med $fig tcp-sum mbps)") |" \
			"$(sval $fig ri2n share) | $(sval $fig mptcp share) ($(awk -F, -v f=$fig '$1 == f && $2 == "mptcp" { s = $8 } END { print s }' "$TP_CSV")) |"
	done
	echo
	if [ -n "$(agg veth-nopub ri2n mbps)" ]; then
		echo "Cost of publishing state for ri2n-stat (unshaped veth, CPU-bound): ri2n $(fmtv veth ri2n mbps)" \
			"Mbit/s with it, $(fmtv veth-nopub ri2n mbps) without (RI2N_STAT_MS=0):" \
			"ratio $(ratio "$(med veth ri2n mbps)" "$(med veth-nopub ri2n mbps)")."
		echo
	fi
	if [ -n "$(agg tp2-ri2n-run ri2n mbps)$(agg veth-ri2n-run ri2n mbps)" ]; then
		echo "Unmodified iperf3 with both ends under \`ri2n-run\` (the LD_PRELOAD shim; iperf3's own figure):" \
			"2 x GbE $(fmtv tp2-ri2n-run ri2n mbps) Mbit/s (ri2n-stream $(fmtv tp2 ri2n mbps), MPTCP under" \
			"mptcpize $(fmtv tp2 mptcp mbps)); unshaped veth $(fmtv veth-ri2n-run ri2n mbps)" \
			"(ri2n-stream $(fmtv veth ri2n mbps), MPTCP $(fmtv veth mptcp mbps))."
		echo
	fi
	if [ -n "$(agg v6-ipv6 ri2n mbps)" ]; then
		echo "IPv6-only rails against IPv4 (two 2 x 1 Gbit/s beds side by side, alternating rounds):" \
			"ri2n $(fmtv v6-ipv6 ri2n mbps) Mbit/s over IPv6, $(fmtv v6-ipv4 ri2n mbps) over IPv4" \
			"(ratio $(ratio "$(med v6-ipv6 ri2n mbps)" "$(med v6-ipv4 ri2n mbps)")); TCP on one rail" \
			"$(fmtv v6-ipv6 tcp-r1 mbps) vs $(fmtv v6-ipv4 tcp-r1 mbps)" \
			"(ratio $(ratio "$(med v6-ipv6 tcp-r1 mbps)" "$(med v6-ipv4 tcp-r1 mbps)")). An IPv6 header is 20" \
			"bytes longer than IPv4's: at MTU 1500 that is 1.4 % of each packet's payload for either."
		echo
	fi
	if [ -n "$(agg tp2-keyed ri2n mbps)$(agg veth-keyed ri2n mbps)" ]; then
		echo "Cost of a cluster key (RI2N_KEY: every datagram sealed with AES-128-GCM under keys of its" \
			"connection; target >= 0.98 on GbE, >= 0.85 on unshaped veth): 2 x GbE $(fmtv tp2-keyed ri2n mbps)" \
			"Mbit/s keyed vs $(fmtv tp2 ri2n mbps) (ratio $(ratio "$(med tp2-keyed ri2n mbps)" "$(med tp2 ri2n mbps)"));" \
			"4 x GbE $(fmtv tp4-keyed ri2n mbps) vs $(fmtv tp4 ri2n mbps)" \
			"(ratio $(ratio "$(med tp4-keyed ri2n mbps)" "$(med tp4 ri2n mbps)")); unshaped veth" \
			"$(fmtv veth-keyed ri2n mbps) vs $(fmtv veth ri2n mbps)" \
			"(ratio $(ratio "$(med veth-keyed ri2n mbps)" "$(med veth ri2n mbps)")). Integrity only" \
			"(RI2N_KEY_AUTH_ONLY=1, AES-GMAC): 2 x GbE $(fmtv tp2-keyauth ri2n mbps)" \
			"(ratio $(ratio "$(med tp2-keyauth ri2n mbps)" "$(med tp2 ri2n mbps)")), unshaped veth" \
			"$(fmtv veth-keyauth ri2n mbps) (ratio $(ratio "$(med veth-keyauth ri2n mbps)" "$(med veth ri2n mbps)"))."
		echo
	fi
	if [ -n "$(agg veth-capture keyed hits)" ]; then
		echo "Capture check (64 MiB of a known text, every UDP frame on host 2's rails captured): without a key" \
			"$(fmtv veth-capture plain hits) frames held a piece of it ($(fmtv veth-capture plain bytes) bytes" \
			"captured); with a cluster key $(fmtv veth-capture keyed hits) ($(fmtv veth-capture keyed bytes) bytes)."
		echo
	fi
	if [ -n "$(agg tp2 tcp-r1 mbps)" ]; then
		echo "Single-rail TCP (iperf3): $(for fig in tp2 tp4 veth degraded; do
			for r in 1 2 3 4; do [ -n "$(agg $fig tcp-r$r mbps)" ] && printf '%s rail %s: %s; ' "$fig" "$r" "$(fmtv $fig tcp-r$r mbps)"; done
		done | sed 's/; $/./')"
		echo
	fi
	if [ -n "$(agg veth ri2n mbps)" ]; then
		echo "### CPU per gigabit, 2 unshaped veth rails"
		echo
		echo "Unshaped veth: each single-rail TCP run has the whole machine to itself, so their sum is no ceiling there." \
			"CPU: user + system time of the sending and of the receiving process, % of one CPU (ri2n's engine thread" \
			"included; kernel softirq work is only partly charged to the processes, so compare runs of one kind rather" \
			"than ri2n with TCP). CPU s per Gbit: the two processes' CPU seconds per gigabit delivered."
		echo
		echo "| system | goodput (Mbit/s) | CPU send % | CPU receive % | CPU s per Gbit | / MPTCP |"
		echo "|---|---|---|---|---|---|"
		for row in "veth ri2n ri2n (ri2n-stream --no-verify)" "veth-nopub ri2n ri2n, no ri2n-stat publishing" \
			"veth-keyed ri2n ri2n with a cluster key" "veth-keyauth ri2n ri2n with a cluster key, integrity only" "veth-ri2n-run ri2n iperf3, both ends under ri2n-run" \
			"veth mptcp MPTCP (mptcpize run iperf3)" "veth tcp-r1 TCP on rail 1 (iperf3)" "veth tcp-r2 TCP on rail 2 (iperf3)"; do
			read -r f s l <<<"$row"
			[ -n "$(agg "$f" "$s" mbps)" ] || continue
			echo "| $l | $(fmtv "$f" "$s" mbps) | $(fmtv "$f" "$s" cpu_send) | $(fmtv "$f" "$s" cpu_recv) |" \
				"$(fmtv "$f" "$s" cpu_gbit 3) | $(ratio "$(med "$f" "$s" cpu_gbit)" "$(med veth mptcp cpu_gbit)") |"
		done
		echo
	fi
}
