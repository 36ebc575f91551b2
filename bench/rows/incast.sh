# shellcheck shell=bash
# bench/rows/incast.sh - the incast row: N senders into one host over shared switches, and TCP
# sharing a rail with ri2n. Sourced by bench/run.sh; figures in summary.md only.

# ---- incast: N senders into one host over shared switches; ri2n beside TCP on one rail ----
# incast_bed HOSTS: every rail one bridge, 1 Gbit/s host ports; MPTCP: each sender adds a
# subflow on r2, the receiver (the last host) signals its r2 address
incast_bed() {
	local tag h n=$1
	tag=$(bed_tag "bn${n}i")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	log "   test bed $tag: $n hosts, 2 rails x 1 Gbit/s host ports (namespaces ri2n-$tag-*)"
	tb_create --hosts "$n" --rails 2 --rate 1gbit >"$RAW/bed-$tag.log" 2>&1 ||
		{ fail "could not create test bed $tag: $(tail -n 2 "$RAW/bed-$tag.log" | tr '\n' ' ')"; return 1; }
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=2 BED_HOSTS=$n
	for ((h = 1; h <= n; h++)); do
		ip netns exec "$(hns $h)" sysctl -qw net.mptcp.enabled=1
		ip -n "$(hns $h)" mptcp limits set subflows 8 add_addr_accepted 8
		if ((h < n)); then
			ip -n "$(hns $h)" mptcp endpoint add "$(haddr $h 2)" dev r2 subflow
		else
			ip -n "$(hns $h)" mptcp endpoint add "$(haddr $h 2)" dev r2 signal
		fi
	done
}
# incast_put FIG SYS REP CAP KIND FILES...: Jain's index per whole second (bench/jain.py)
incast_put() {
	local fig=$1 sys=$2 rep=$3 cap=$4 kind=$5 res k v
	shift 5
	python3 "$HERE/jain.py" "$cap" "$kind" "$@" >"$RAW/$fig-$sys-$rep.jain" 2>&1 ||
		{ fail "$sys: $(tail -n 1 "$RAW/$fig-$sys-$rep.jain")"; return 1; }
	res=$(tail -n 1 "$RAW/$fig-$sys-$rep.jain")
	for kv in $res; do
		k=${kv%%=*} v=${kv#*=}
		put "$fig" "$sys" "$rep" "$k" "$v"
	done
	log "   $sys: $res"
}
# incast_ri2n SENDERS REP SECS: ri2n-xfer from every sender to the last host, verified
incast_ri2n() {
	local n=$1 rep=$2 secs=$3 rx=$(($1 + 1)) fig="incast$1" xfer k srv files=() pids=() bad=0
	xfer=$(xfer_bin) || { fail "ri2n-xfer is not built"; return; }
	next_port
	bg "$RAW/$fig-ri2n-$rep.srv.log" "$RAW/$fig-ri2n-$rep.srv.err" env RI2N_RAILS=r1,r2 \
		ip netns exec "$(hns $rx)" "$xfer" serve --port "$PORT" --quiet
	srv=$BG
	sleep 0.5
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-ri2n-$rep-s$k.out" "$RAW/$fig-ri2n-$rep-s$k.err" env RI2N_RAILS=r1,r2 \
			ip netns exec "$(hns $k)" "$xfer" send "$(haddr $rx 1)" --port "$PORT" \
			--seconds "$secs" --seed "$k" --csv "$RAW/$fig-ri2n-$rep-s$k.csv"
		pids+=("$BG")
		files+=("$RAW/$fig-ri2n-$rep-s$k.csv")
	done
	for ((k = 1; k <= n; k++)); do
		wait_exit "${pids[k - 1]}" $((secs + 30)) || bad=1
		[ "$(field verified "$RAW/$fig-ri2n-$rep-s$k.out")" = yes ] || bad=1
	done
	stop_bg "$srv"
	[ $bad -eq 0 ] || { fail "a ri2n transfer failed or was not verified ($RAW/$fig-ri2n-$rep-s*.out)"; return; }
	incast_put "$fig" ri2n "$rep" 2000 xfer "${files[@]}"
}
# incast_iperf SENDERS REP SECS mptcp|tcp: iperf3 from every sender to the last host
# (MPTCP over both rails, or TCP over rail 1 only: its capacity is one port)
incast_iperf() {
	local n=$1 rep=$2 secs=$3 how=$4 rx=$(($1 + 1)) fig="incast$1" k wrap=() files=() pids=() srvs=() bad=0
	need iperf3 "apt-get install iperf3" || return
	if [ "$how" = mptcp ]; then
		need mptcpize "apt-get install mptcpize" || return
		wrap=(mptcpize run)
	fi
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-$how-$rep-srv$k.out" "$RAW/$fig-$how-$rep-srv$k.err" \
			ip netns exec "$(hns $rx)" "${wrap[@]}" iperf3 -s -1 -p $((PORT + 10 + k))
		srvs+=("$BG")
	done
	for ((k = 1; k <= n; k++)); do wait_port "$rx" $((PORT + 10 + k)) || bad=1; done
	for ((k = 1; k <= n; k++)); do
		bg "$RAW/$fig-$how-$rep-c$k.json" "$RAW/$fig-$how-$rep-c$k.err" \
			ip netns exec "$(hns $k)" "${wrap[@]}" iperf3 -c "$(haddr $rx 1)" -p $((PORT + 10 + k)) \
			-t "$secs" -i 1 -J
		pids+=("$BG")
		files+=("$RAW/$fig-$how-$rep-c$k.json")
	done
	for ((k = 1; k <= n; k++)); do wait_exit "${pids[k - 1]}" $((secs + 30)) || bad=1; done
	for k in "${srvs[@]}"; do stop_bg "$k"; done
	PORT=$((PORT + 20))
	[ $bad -eq 0 ] || { fail "an iperf3 client failed ($RAW/$fig-$how-$rep-c*.err)"; return; }
	incast_put "$fig" "$how" "$rep" "$([ "$how" = tcp ] && echo 1000 || echo 2000)" iperf "${files[@]}"
}
incast_figure() { # SENDERS REP
	local secs=10
	[ "$mode" = quick ] && secs=6
	[ "$mode" = smoke ] && secs=3
	sub_begin
	incast_bed $(($1 + 1)) || { sub_end; return 1; }
	sub incast_ri2n "$1" "$2" "$secs"
	[ "$mode" = smoke ] || for s in mptcp tcp; do sub incast_iperf "$1" "$2" "$secs" "$s"; done
	drop_bed
	sub_end
}
# The shared rail: a ri2n stream over both rails and a TCP flow (iperf3) on rail 1 between the
# same two hosts at once; TCP's share is its rate over the rail's 1 Gbit/s.
sharedrail_figure() { # REP
	local rep=$1 secs=10 xfer name srv tcp ri rc
	[ "$mode" = quick ] && secs=6
	[ "$mode" = smoke ] && secs=3
	name=$RAW/sharedrail-$rep
	xfer=$(xfer_bin) || { fail "ri2n-xfer is not built"; return; }
	need iperf3 "apt-get install iperf3" || return
	make_bed bnsr 2 1gbit || { fail "test bed"; return; }
	next_port
	bg "$name.srv.log" "$name.srv.err" env RI2N_RAILS=r1,r2 ip netns exec "$(hns 2)" "$xfer" serve --port "$PORT" --quiet
	srv=$BG
	bg "$name.tsrv.out" "$name.tsrv.err" ip netns exec "$(hns 2)" iperf3 -s -1 -p $((PORT + 1))
	tcp=$BG
	sleep 0.5
	bg "$name.ri2n.out" "$name.ri2n.err" env RI2N_RAILS=r1,r2 ip netns exec "$(hns 1)" "$xfer" send "$(haddr 2 1)" \
		--port "$PORT" --seconds "$secs" --seed 1
	ri=$BG
	timeout -s KILL $((secs + 30)) ip netns exec "$(hns 1)" iperf3 -c "$(haddr 2 1)" -p $((PORT + 1)) \
		-t "$secs" -O 2 -J >"$name.tcp.json" 2>"$name.tcp.err"
	rc=$?
	wait_exit "$ri" 30
	stop_bg "$srv"
	wait_exit "$tcp" 5
	PORT=$((PORT + 2))
	drop_bed
	[ $rc -eq 0 ] || { fail "iperf3 exited $rc"; return; }
	[ "$(field verified "$name.ri2n.out")" = yes ] || { fail "the ri2n transfer was not verified"; return; }
	local t r
	t=$(jget "$name.tcp.json" end.sum_received.bits_per_second | awk '{ printf "%.1f", $1 / 1e6 }')
	r=$(field mbps "$name.ri2n.out")
	put sharedrail tcp "$rep" mbps "$t"
	put sharedrail tcp "$rep" share "$(awk -v t="$t" 'BEGIN { printf "%.3f", t / 1000 }')"
	put sharedrail ri2n "$rep" mbps "$r"
	log "   TCP on rail 1: $t Mbit/s beside ri2n on both rails: $r Mbit/s"
}
incast_summary() {
	local n s
	echo "### Incast: N senders into one host over shared switches (1 Gbit/s host ports, 2 rails)"
	echo
	echo "Per whole second while every sender ran (the first skipped): Jain's index (least, mean) and the"
	echo "aggregate (least second, as a fraction of the receiver's rails: 2 Gbit/s; TCP uses rail 1 only: 1 Gbit/s)."
	echo
	echo "| senders | system | least Jain | mean Jain | least aggregate | mean total Mbit/s |"
	echo "|---|---|---|---|---|---|"
	for n in 3 7; do
		for s in ri2n mptcp tcp; do
			[ -n "$(agg "incast$n" $s min_jain)" ] || continue
			echo "| $n | $s | $(fmtv "incast$n" $s min_jain 3) | $(fmtv "incast$n" $s mean_jain 3) | $(fmtv "incast$n" $s min_agg 3) | $(fmtv "incast$n" $s mean_mbps 0) |"
		done
	done
	if [ -n "$(agg sharedrail tcp share)" ]; then
		echo
		echo "Shared rail: TCP on rail 1 keeps $(fmtv sharedrail tcp mbps 0) Mbit/s ($(fmtv sharedrail tcp share 3) of the rail) beside ri2n on both rails ($(fmtv sharedrail ri2n mbps 0) Mbit/s)."
	fi
}
