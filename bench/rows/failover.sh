# shellcheck shell=bash
# bench/rows/failover.sh - the failover and mtuhole rows: a rail black-holed (or dropping large
# packets) under a stream, ri2n beside MPTCP. Sourced by bench/run.sh; writes failover.csv,
# failover_events.csv, mtuhole.csv, mtuhole_events.csv.

# ---- failover ------------------------------------------------------------------------------
FO_CSV=$out/failover.csv # the plot's; mtuhole.csv and mtuhole_events.csv have the same columns
FO_EV=$out/failover_events.csv
for f in failover mtuhole; do
	echo "system,rep,t,mbps,rail1_state,rail2_state,rail1_mbps,rail2_mbps,rail1_pkts,rail2_pkts" >"$out/$f.csv"
	echo "system,rep,what,t,ms_after" >"$out/${f}_events.csv"
done

# failover SYS REP [FIG]: rail 2 of host 1 black-holed at FO_FAULT s, healed at FO_HEAL s.
# FIG mtuhole: the same, but only IP packets over 1000 bytes are dropped (an MTU black hole)
failover() {
	local sys=$1 rep=$2 fig=${3:-failover} name wrap=() targs=() rails t0 tf tf0 th th0 rc m
	local fault="blackhole 1 2 on" heal="blackhole 1 2 off" chain=bh_h1
	local FO_CSV=$out/$fig.csv FO_EV=$out/${fig}_events.csv
	[ "$fig" = mtuhole ] && fault="mtuhole 1 2 1000" heal="mtuhole 1 2 off" chain=mtu_h1
	name=$RAW/$fig-$sys-$rep
	rails=$(rails_list)
	if [ "$sys" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run) targs=(--tcp --rails "$BED_RAILS")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env RI2N_RAILS="$rails" "${wrap[@]}" \
		"$STREAM" serve --once --quiet --port "$PORT" --csv "$name.recv.csv" "${targs[@]}"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }
	# nft monitor in rail 2's switch: when the drop rule really went in (a new ruleset
	# generation) and when it went out, to the millisecond (the command takes tens of ms)
	bg "$name.nft" "$name.nft.err" sh -c "ip netns exec ri2n-$BED-sw2 stdbuf -oL nft monitor | '$STREAM' stamp"
	local mon=$BG
	sleep 0.2
	timeout -s KILL $((${FO_SECS%.*} + 40)) ip netns exec "$(hns 1)" env RI2N_RAILS="$rails" "${wrap[@]}" \
		"$STREAM" send "$(haddr 2 1)" --port "$PORT" --seconds "$FO_SECS" --quiet --csv "$name.send.csv" \
		"${targs[@]}" \
		--fault-at "$FO_FAULT" --fault-cmd "$TESTBED --tag $BED fault $fault" \
		--heal-at "$FO_HEAL" --heal-cmd "$TESTBED --tag $BED fault $heal" \
		>"$name.out" 2>"$name.err"
	rc=$?
	stop_bg $mon
	wait_exit $srv 10
	# shellcheck disable=SC2086 # word splitting of the fault's arguments is meant
	tb_fault $heal >/dev/null 2>&1 # whatever happened, heal
	[ $rc -eq 0 ] || { fail "$sys stream exited $rc: $(grep -m1 done "$name.out") $(grep -v '^stream' "$name.err" | head -c 300)"; return; }
	tf=$(awk '/stream fault what=fault/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_end=/) print substr($i, 10) }' "$name.err")
	tf0=$(awk '/stream fault what=fault/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_start=/) print substr($i, 12) }' "$name.err")
	th=$(awk '/stream fault what=heal/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_end=/) print substr($i, 10) }' "$name.err")
	th0=$(awk '/stream fault what=heal/ { for (i = 1; i <= NF; i++) if ($i ~ /^mono_start=/) print substr($i, 12) }' "$name.err")
	[ -n "$tf" ] && [ -n "$th" ] || { fail "the fault or the heal did not run: $(grep 'stream fault' "$name.err")"; return; }
	# in place: the earlier of the command's end and the monitor's "new generation" line
	# after the black hole chain was added (removed); the monitor sees it ~1 ms late at most
	local mf mh
	mf=$(awk -v a="$tf0" -v c="$chain" '$1 >= a - 0.001 && $0 ~ (" add chain .* " c " ") { s = 1 } s && /new generation/ { print $1; exit }' "$name.nft")
	mh=$(awk -v a="$th0" -v c="$chain" '$1 >= a - 0.001 && $0 ~ (" delete chain .* " c) { s = 1 } s && /new generation/ { print $1; exit }' "$name.nft")
	[ -n "$mf" ] && tf=$(awk -v a="$tf" -v b="$mf" 'BEGIN { printf "%.6f", (b < a ? b : a) }')
	[ -n "$mh" ] && th=$(awk -v a="$th" -v b="$mh" 'BEGIN { printf "%.6f", (b < a ? b : a) }')
	[ -n "$mf" ] || log "   (no nft monitor line for the fault: timing from the command's end)"
	grep -q 'stream fault.* rc=0' "$name.err" || { fail "a fault command failed: $(grep 'stream fault' "$name.err")"; return; }
	t0=$(awk -F, 'NR == 2 { printf "%.6f", $3 - $2 }' "$name.recv.csv")
	# per-100 ms rows for the plot and the CSV
	awk -F, -v sys="$sys" -v rep="$rep" 'NR > 1 && $1 == "recv" {
		split($7, mb, ";"); split($8, pk, ";")
		printf "%s,%s,%.3f,%.2f,%s,%s,%s,%s,%s,%s\n", sys, rep, $2, $4, substr($6, 1, 1), substr($6, 2, 1),
			mb[1], mb[2], pk[1], pk[2] }' "$name.recv.csv" >>"$FO_CSV"
	# the figures, from the receiver's intervals (each ends at "mono", 100 ms long)
	m=$(awk -F, -v tf="$tf" -v th="$th" -v t0="$t0" -v secs="$FO_SECS" -v one=1000 '
		NR > 1 && $1 == "recv" { mono = $3; v = $4; split($8, pk, ";"); end = t0 + secs - 0.02
			if (mono > tf && mono - 0.1 < th) { if (mo == "" || v < mo) mo = v }
			if (mono > tf && mono <= end) { if (ma == "" || v < ma) ma = v; if (v < 0.4 * one) below += 0.1 }
			if (mono > th && mono <= end && back == "" && pk[2] > 0) back = mono - th
			if (mono > th && mono <= end && agg == "" && v >= 1.5 * one) agg = mono - th
			if (mono - 0.1 >= t0 + 1 && mono <= tf) { sb += v; nb++ }
			if (mono - 0.1 >= tf + 0.3 && mono <= th) { sd += v; nd++ }
		}
		END { printf "%s %s %.1f %s %s %s %s", (mo == "" ? "NA" : mo), (ma == "" ? "NA" : ma), below,
			(back == "" ? "NA" : sprintf("%.0f", back * 1000)), (agg == "" ? "NA" : sprintf("%.0f", agg * 1000)),
			(nb ? sprintf("%.0f", sb / nb) : "NA"), (nd ? sprintf("%.0f", sd / nd) : "NA") }' "$name.recv.csv")
	local min_out min_all below back aggb before during v
	read -r min_out min_all below back aggb before during <<<"${m//NA/-}"
	for v in min_out min_all below back aggb before during; do [ "${!v}" = - ] && printf -v "$v" '%s' ""; done
	put "$fig" "$sys" "$rep" min_outage "$min_out"
	put "$fig" "$sys" "$rep" min_all "$min_all"
	put "$fig" "$sys" "$rep" below40 "$below"
	put "$fig" "$sys" "$rep" data_back_ms "$back"
	put "$fig" "$sys" "$rep" agg_back_ms "$aggb"
	put "$fig" "$sys" "$rep" before "$before"
	put "$fig" "$sys" "$rep" during "$during"
	put "$fig" "$sys" "$rep" fault_cmd_ms "$(awk -v a="$tf0" -v b="$tf" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
	put "$fig" "$sys" "$rep" verified "$(field verified "$name.srv.out")"
	{
		echo "$sys,$rep,fault_cmd_start,$(awk -v a="$tf0" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),"
		echo "$sys,$rep,fault_in_place,$(awk -v a="$tf" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),0"
		echo "$sys,$rep,heal_cmd_start,$(awk -v a="$th0" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),"
		echo "$sys,$rep,heal_in_place,$(awk -v a="$th" -v t="$t0" 'BEGIN { printf "%.4f", a - t }'),0"
	} >>"$FO_EV"
	local det="" up="" line
	if [ "$sys" = ri2n ]; then
		# ri2n's own events (CLOCK_MONOTONIC): the first "rail=1 down" on either side after the
		# fault, and the sender's first "rail=1 up" after the heal (ri2n rail 1 = bed rail 2)
		det=$(cat "$name.err" "$name.srv.err" | awk -v a="$tf0" -v tf="$tf" '/stream event/ && / rail=1 down/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^mono=/) m = substr($i, 6) + 0
			if (m >= a - 0.005 && (d == "" || m < d)) d = m } END { if (d != "") printf "%.1f", (d - tf) * 1000 }')
		up=$(awk -v a="$th0" -v th="$th" '/stream event/ && / rail=1 up/ {
			for (i = 1; i <= NF; i++) if ($i ~ /^mono=/) m = substr($i, 6) + 0
			if (m >= a - 0.005 && u == "") u = m } END { if (u != "") printf "%.1f", (u - th) * 1000 }' "$name.err")
		put "$fig" ri2n "$rep" detect_ms "$det"
		put "$fig" ri2n "$rep" up_ms "$up"
		for line in "detected_down,$det" "up_event,$up"; do
			local ms=${line#*,}
			[ -n "$ms" ] && echo "$sys,$rep,${line%%,*},$(awk -v a="$tf" -v b="$th" -v m="$ms" -v t="$t0" -v w="${line%%,*}" \
				'BEGIN { printf "%.4f", (w == "up_event" ? b : a) - t + m / 1000 }'),$ms" >>"$FO_EV"
		done
	fi
	[ -n "$back" ] && echo "$sys,$rep,rail2_data_back_bin_end,$(awk -v b="$th" -v m="$back" -v t="$t0" 'BEGIN { printf "%.4f", b - t + m / 1000 }'),$back" >>"$FO_EV"
	log "   $sys: before $before, during $during Mbit/s; lowest 100 ms bin: outage $min_out, fault..end $min_all Mbit/s;" \
		"below 400 Mbit/s: $below s${det:+; detected in $det ms}${up:+; up event $up ms after the heal};" \
		"rail 2 data again in the bin ending ${back:-never} ms after the heal; verified $(field verified "$name.srv.out")"
}

# The failover and MTU black hole sections of summary.md
failover_summary() {
	local s
	echo "## Failover: rail 2 of 2 silently black-holed at ${FO_FAULT} s, healed at ${FO_HEAL} s (stream of ${FO_SECS} s)"
	echo
	echo "Both through ri2n-stream (MPTCP: \`mptcpize run ri2n-stream --tcp\`, per-subflow counters from" \
		"MPTCP_TCPINFO). Times are from the moment the drop rule went in (or out): the new nftables ruleset" \
		"generation as \`nft monitor\` in the rail's switch saw it (at most a millisecond or two late), or the end of the" \
		"test bed's command if that came first (the command takes $(fmtv failover ri2n fault_cmd_ms) ms)." \
		"Bins are 100 ms at the receiver; \"data back\" is the end of the first bin in which rail 2 delivered data."
	echo
	echo "| system | before (Mbit/s) | during outage | lowest bin, outage | lowest bin, fault..end | time below 400 Mbit/s (s) | detection (ms) | up event after heal (ms) | rail 2 data back (ms, bin end) | back above 1.5 rails (ms) | verified |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for s in ri2n mptcp; do
		[ -n "$(agg failover $s min_all)" ] || continue
		echo "| $s | $(fmtv failover $s before) | $(fmtv failover $s during) | $(fmtv failover $s min_outage) | $(fmtv failover $s min_all) |" \
			"$(fmtv failover $s below40 1) | $(fmtv failover $s detect_ms 1) | $(fmtv failover $s up_ms 1) | $(fmtv failover $s data_back_ms) |" \
			"$(fmtv failover $s agg_back_ms) | $(awk -F'\t' -v s=$s '$1 == "failover" && $2 == s && $4 == "verified" { printf "%s%s", n++ ? "," : "", $5 }' "$METRICS") |"
	done
	echo
	if [ -n "$(agg mtuhole ri2n min_all)$(agg mtuhole mptcp min_all)" ]; then
		echo "## MTU black hole: rail 2 of 2 drops IP packets over 1000 bytes from ${FO_FAULT} s to ${FO_HEAL} s (silently, both ways)"
		echo
		echo "As the failover table, with \`tools/ri2n-testbed.sh fault mtuhole 1 2 1000\` (nftables \`meta length > 1000 drop\`" \
			"on host 1's port in rail 2's switch; the rail's hosts segment GSO batches in software meanwhile," \
			"so the switch judges frames). Small packets (ACKs, heartbeats) pass; full-size ones vanish."
		echo
		echo "| system | before (Mbit/s) | during the hole | lowest bin, hole | lowest bin, hole..end | time below 400 Mbit/s (s) | detection (ms) | up event after heal (ms) | rail 2 data back (ms, bin end) | back above 1.5 rails (ms) | verified |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		for s in ri2n mptcp; do
			[ -n "$(agg mtuhole $s min_all)" ] || continue
			echo "| $s | $(fmtv mtuhole $s before) | $(fmtv mtuhole $s during) | $(fmtv mtuhole $s min_outage) | $(fmtv mtuhole $s min_all) |" \
				"$(fmtv mtuhole $s below40 1) | $(fmtv mtuhole $s detect_ms 1) | $(fmtv mtuhole $s up_ms 1) | $(fmtv mtuhole $s data_back_ms) |" \
				"$(fmtv mtuhole $s agg_back_ms) | $(awk -F'\t' -v s=$s '$1 == "mtuhole" && $2 == s && $4 == "verified" { printf "%s%s", n++ ? "," : "", $5 }' "$METRICS") |"
		done
		echo
	fi
}
