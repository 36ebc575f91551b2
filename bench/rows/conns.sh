# shellcheck shell=bash
# bench/rows/conns.sh - connection-cost rows (mem, hole): memory and descriptors per connection,
# churn, close storm, a black hole while idle, idle cost. Sourced by bench/run.sh; writes memory.csv.

# ---- memory and descriptors per connection ------------------------------------------------
# ri2n-conns: N connections (full 10,000, quick 1000, smoke 200) from one client process to one
# server process, held idle, then 100 of them streaming 8 MiB each (verified); memory.csv has
# each process's Rss/Pss per phase. Above 2000 connections the keepalive is 1 s (rail timeout
# 3.5 s): at the default 100 ms every idle connection sends 20 datagrams a second and one engine
# thread per process no longer keeps up near 5000 of them (rails flap, handshakes time out).
MEM_CSV=$out/memory.csv
memory_figure() {
	local n=10000 conns=${STREAM%/*}/ri2n-conns env=(RI2N_STAT_MS=250) srv rc
	[ "$mode" = quick ] && n=1000
	[ "$mode" = smoke ] && n=200
	[ -x "$conns" ] || { fail "no $conns"; return; }
	[ "$n" -gt 2000 ] && env+=(RI2N_KEEPALIVE_MS=1000 RI2N_RAIL_TIMEOUT_MS=3500) && put mem ri2n 1 keepalive_ms 1000
	rm -f "$MEM_CSV"
	next_port
	bg "$RAW/conns.srv.out" "$RAW/conns.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" "${env[@]}" "$conns" serve --port "$PORT"
	srv=$BG
	ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" "${env[@]}" "$conns" run "$(haddr 2 1)" \
		--port "$PORT" --conns "$n" --busy 100 --bytes 8M --idle 5 --rest 3 --csv "$MEM_CSV" \
		>"$RAW/conns.out" 2>"$RAW/conns.err"
	rc=$?
	wait_exit "$srv" 20
	awk '$1 == "conns" && $2 == "done"' "$RAW/conns.out" | tr ' ' '\n' | awk -F= 'NF == 2' |
		while IFS="=" read -r k v; do put mem ri2n 1 "$k" "$v"; done
	awk '$1 == "conns" && $2 == "mem"' "$RAW/conns.out" | while read -r line; do
		local role phase
		role=$(sed -n 's/.* role=\([a-z]*\).*/\1/p' <<<"$line") phase=$(sed -n 's/.* phase=\([a-z]*\).*/\1/p' <<<"$line")
		for k in pss_per_conn fds_per_conn conns; do
			put mem "$role" 1 "${phase}_$k" "$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$line")"
		done
	done
	[ $rc -eq 0 ] || fail "ri2n-conns exit status $rc: $(grep -v warning "$RAW/conns.err" | tail -2 | tr '\n' ' ')"
}
# ---- a connection per request ------------------------------------------------------------
# ri2n-churn: connect / 8-byte hello / verified echo / close, sequential from one thread (full
# 2000 cycles, quick 500, smoke 100: the connect's median) and from 16 threads for a few seconds
# (full 5, quick 3, smoke 1: connections a second from one client host), over ri2n's own calls,
# TCP sockets under ri2n-run, and plain TCP (the peer), on the same bed, one server each. The
# 16-thread run goes CHURN_ROUNDS times (full 5, quick 3, smoke 1), the transports' order
# rotating from round to round: one run of a few seconds moves by half on this machine.
churn_figure() {
	local churn=${STREAM%/*}/ri2n-churn n=2000 secs=5 rounds=${CHURN_ROUNDS:-5} sys rr k r i rc=0
	local systems=(ri2n ri2n-run tcp) order
	local -A port srvpid
	[ "$mode" = quick ] && n=500 secs=3 rounds=${CHURN_ROUNDS:-3}
	[ "$mode" = smoke ] && n=100 secs=1 rounds=${CHURN_ROUNDS:-1}
	[ -x "$churn" ] || { fail "no $churn"; return; }
	rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	# churn_wrap SYS: the command that runs ri2n-churn for SYS, in CHURN_WRAP
	churn_wrap() {
		case $1 in
		ri2n) CHURN_WRAP=(env RI2N_RAILS="$(rails_list)" "$churn") ;;
		ri2n-run) CHURN_WRAP=(env RI2N_RAILS="$(rails_list)" "$rr" "$churn") ;;
		tcp) CHURN_WRAP=("$churn") ;;
		esac
		CHURN_PROTO=()
		[ "$1" = ri2n ] || CHURN_PROTO=(--tcp)
	}
	# churn_run SYS KIND ROUND ARGS...: one client run, its figures put as ROUND
	churn_run() {
		local sys=$1 kind=$2 round=$3 out line m
		shift 3
		churn_wrap "$sys"
		out="$RAW/churn-$sys-$kind-$round"
		timeout -s KILL $((secs + 60)) ip netns exec "$(hns 1)" "${CHURN_WRAP[@]}" run "$(haddr 2 1)" \
			--port "${port[$sys]}" "${CHURN_PROTO[@]}" "$@" >"$out.out" 2>"$out.err" ||
			{ fail "ri2n-churn $sys $kind: $(tail -2 "$out.err" | tr '\n' ' ')"; return 1; }
		line=$(grep '^churn done' "$out.out")
		for m in conns failed bad rate connect_med_us connect_p90_us cycle_med_us; do
			put churn "$sys" "$round" "${kind}_$m" "$(sed -n "s/.* $m=\([0-9.]*\).*/\1/p" <<<"$line")"
		done
	}
	for sys in "${systems[@]}"; do
		churn_wrap "$sys"
		next_port
		port[$sys]=$PORT
		bg "$RAW/churn-$sys.srv.out" "$RAW/churn-$sys.srv.err" ip netns exec "$(hns 2)" "${CHURN_WRAP[@]}" serve \
			--port "$PORT" --workers 16 "${CHURN_PROTO[@]}"
		srvpid[$sys]=$BG
		for k in $(seq 100); do grep -q serving "$RAW/churn-$sys.srv.out" 2>/dev/null && break; sleep 0.05; done
	done
	sleep 0.2
	# TCP's client closes first: without tw_reuse the second round's connects met the first's
	# TIME_WAIT tuples (440 cycles/s against 4,800)
	tw_reuse_on
	for sys in "${systems[@]}"; do
		churn_run "$sys" seq 1 --count "$n" || rc=1
	done
	for r in $(seq "$rounds"); do
		order=()
		for i in 0 1 2; do order+=("${systems[$(((i + r - 1) % 3))]}"); done
		for sys in "${order[@]}"; do
			churn_run "$sys" par "$r" --threads 16 --count 1000000 --secs "$secs" || rc=1
		done
	done
	tw_reuse_off
	for sys in "${systems[@]}"; do
		stop_bg "${srvpid[$sys]}" # killed: its status is not the figure's
	done
	return $rc
}
# churn_sum SYS METRIC: the metric added over every run of SYS (0 if none)
churn_sum() {
	awk -F'\t' -v s="$1" -v m="$2" '$1 == "churn" && $2 == s && $4 == m { t += $5 } END { print t + 0 }' "$METRICS"
}
# The connection-per-request paragraph of summary.md
churn_summary() {
	local sys
	[ -n "$(sval churn ri2n seq_conns)" ] || return 0
	echo "## A connection per request (ri2n-churn)"
	echo
	echo "2 unshaped veth rails; connect / 8-byte hello / verified echo / close. Sequential: one thread's" \
		"connect median and p90 and whole cycle median (us); parallel: 16 threads, cycles a second from" \
		"one client host, median [min–max] over the rounds, the transports' order rotating (target:" \
		"sequential connect under ri2n-run <= 0.3 ms, 2,000 connects/s with no handshake dropped)."
	echo
	echo "| transport | connect median (us) | connect p90 (us) | cycle median (us) | parallel cycles/s | failed | bad echoes |"
	echo "|---|---|---|---|---|---|---|"
	for sys in ri2n ri2n-run tcp; do
		echo "| $sys | $(sval churn "$sys" seq_connect_med_us) | $(sval churn "$sys" seq_connect_p90_us) |" \
			"$(sval churn "$sys" seq_cycle_med_us) | $(fmtv churn "$sys" par_rate) |" \
			"$(($(churn_sum "$sys" seq_failed) + $(churn_sum "$sys" par_failed))) |" \
			"$(($(churn_sum "$sys" seq_bad) + $(churn_sum "$sys" par_bad))) |"
	done
	echo
}
# ---- idle cost ----------------------------------------------------------------------------------
# bench/idle-cost.sh on a bed of its own (2 unshaped veth rails): N idle connections from one
# client process to one server (full and quick: 9000 and 1000, smoke: 200), 5 s after the last
# one connected, 10 s sampled: packets a second on the client's rails (both directions) and the
# CPU of each process (percent of one core).
idle_cost_figure() {
	local conns=${STREAM%/*}/ri2n-conns counts=(9000 1000) line n k
	[ "$mode" = smoke ] && counts=(200)
	[ -x "$conns" ] || { fail "no $conns"; return; }
	"$HERE/idle-cost.sh" --conns-bin "$conns" --tag "$(bed_tag bn2i)" "${counts[@]}" \
		>"$RAW/idle.out" 2>"$RAW/idle.err" || { fail "idle-cost.sh: $(tail -2 "$RAW/idle.err" | tr '\n' ' ')"; return; }
	while read -r line; do
		n=$(sed -n 's/.* conns=\([0-9]*\).*/\1/p' <<<"$line")
		for k in server_fds connect_s pkts_per_s client_cpu_pct server_cpu_pct; do
			put idle "$n" 1 "$k" "$(sed -n "s/.* $k=\([0-9.]*\).*/\1/p" <<<"$line")"
		done
	done < <(grep '^idle conns=' "$RAW/idle.out")
	[ -n "$(sval idle "${counts[0]}" pkts_per_s)" ] || fail "idle-cost.sh printed no figure"
}
# ---- close storm ------------------------------------------------------------------------------
# ri2n-conns: N connections (full and quick 9000, smoke 500), each a verified hello and echo,
# then both processes close all of them at once and exit. From RI2N_LOG=info (every
# connection's end): clean closes and failures per side, the last clean close after each
# side's close, and how long the client took to exit after closing.
storm_figure() {
	local n=9000 conns=${STREAM%/*}/ri2n-conns srv rc gone side f wall last
	[ "$mode" = smoke ] && n=500
	[ -x "$conns" ] || { fail "no $conns"; return; }
	next_port
	bg "$RAW/storm.srv.out" "$RAW/storm.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" RI2N_LOG=info "$conns" serve --port "$PORT"
	srv=$BG
	ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" RI2N_LOG=info "$conns" run \
		"$(haddr 2 1)" --port "$PORT" --conns "$n" --busy 0 --idle 1 \
		>"$RAW/storm.out" 2>"$RAW/storm.cli.err"
	rc=$?
	gone=$(awk '{ print $1 }' /proc/uptime)
	wait_exit "$srv" 40
	put storm ri2n 1 conns "$(sed -n 's/.* established=\([0-9]*\).*/\1/p' "$RAW/storm.out")"
	put storm ri2n 1 connect_s "$(sed -n 's/.* connect_secs=\([0-9.]*\).*/\1/p' "$RAW/storm.out")"
	for side in cli srv; do
		f=$RAW/storm.$side.err
		put storm "$side" 1 closed "$(grep -c ' info: connection .* closed$' "$f")"
		put storm "$side" 1 failed "$(grep -c ' failed: ' "$f")"
		put storm "$side" 1 dead_peer "$(grep -c 'dead-peer' "$f")"
		put storm "$side" 1 resets "$(grep -c 'reset by peer\|never closed: reset' "$f")"
		wall=$(grep -o 'wall=[0-9.]*' "$f" | tail -1 | cut -d= -f2)
		last=$(grep ' info: connection .* closed$' "$f" | tail -1 |
			awk '{ split($1, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3] }')
		[ -n "$wall" ] && [ -n "$last" ] && put storm "$side" 1 last_close_s \
			"$(awk -v a="$wall" -v b="$last" 'BEGIN { d = b - a % 86400; if (d < -43200) d += 86400; printf "%.2f", d }')"
	done
	# CLOCK_MONOTONIC (ri2n-conns' mono=) and /proc/uptime share their origin closely enough here
	put storm cli 1 exit_s "$(awk -v a="$(grep -o 'mono=[0-9.]*' "$RAW/storm.cli.err" | tail -1 | cut -d= -f2)" \
		-v b="$gone" 'BEGIN { printf "%.2f", b - a }')"
	[ $rc -eq 0 ] || fail "ri2n-conns (close storm) exit status $rc"
}
# ---- a black hole while idle ----------------------------------------------------------------
# ri2n-conns --probes: N connections (full and quick 9000, smoke 500), each a verified hello and
# echo, idle 3 s; then rail 2 of host 1 black-holed in its switch (both ways) and, once both
# processes have it down both ways, the first write (8 bytes, echoed and checked) on 32 connections
# spread over the set (smoke 8), one at a time: the echo's delay, and by both processes' counters
# the DATA sent on the dead rail, resent, or timed out. The rail is healed afterwards.
hole_figure() {
	local n=9000 k=32 conns=${STREAM%/*}/ri2n-conns srv rc line m
	[ "$mode" = smoke ] && n=500 k=8
	[ -x "$conns" ] || { fail "no $conns"; return; }
	next_port
	bg "$RAW/hole.srv.out" "$RAW/hole.srv.err" ip netns exec "$(hns 2)" \
		env RI2N_RAILS="$(rails_list)" "$conns" serve --port "$PORT"
	srv=$BG
	timeout -s KILL 300 ip netns exec "$(hns 1)" env RI2N_RAILS="$(rails_list)" "$conns" run \
		"$(haddr 2 1)" --port "$PORT" --conns "$n" --busy 0 --idle 3 --probes "$k" \
		--hole-cmd "$TESTBED --tag $BED fault blackhole 1 2 on" >"$RAW/hole.out" 2>"$RAW/hole.err"
	rc=$?
	"$TESTBED" --tag "$BED" fault blackhole 1 2 off >/dev/null 2>&1
	wait_exit "$srv" 40
	put hole ri2n 1 conns "$(sed -n 's/.* established=\([0-9]*\).*/\1/p' "$RAW/hole.out")"
	line=$(grep '^conns hole' "$RAW/hole.out")
	for m in detect_s probes echoed echo_med_us echo_max_us rto_min_us dead_rail_data retransmits rto \
		seen_down srv_probes srv_dead_rail_data srv_retransmits srv_rto verdict; do
		put hole ri2n 1 "$m" "$(sed -n "s/.* $m=\([0-9a-z.]*\).*/\1/p" <<<"$line")"
	done
	[ -n "$line" ] || { fail "ri2n-conns (black hole) printed no probe line: $(tail -2 "$RAW/hole.err" | tr '\n' ' ')"; return; }
	[ $rc -eq 0 ] || fail "ri2n-conns (black hole) exit status $rc: $line"
}
storm_summary() {
	[ -n "$(sval storm ri2n conns)" ] || return 0
	echo "## Close storm"
	echo
	echo "ri2n-conns over 2 unshaped veth rails: $(sval storm ri2n conns) connections (hello and echo" \
		"verified), then both processes close all at once and exit." \
		"Client: $(sval storm cli closed) closed cleanly, $(sval storm cli failed) failed" \
		"($(sval storm cli dead_peer) dead-peer, $(sval storm cli resets) resets), last clean close" \
		"$(sval storm cli last_close_s) s after its close, process gone $(sval storm cli exit_s) s after." \
		"Server: $(sval storm srv closed) closed cleanly, $(sval storm srv failed) failed" \
		"($(sval storm srv dead_peer) dead-peer, $(sval storm srv resets) resets), last clean close" \
		"$(sval storm srv last_close_s) s after its close. Target: all clean within 2 s, exit within 3 s."
	echo
}
# The connection-cost table of summary.md: idle cost, handshake rate, churn and close storm
conns_summary() {
	local n cs ss cst sst
	[ -n "$(awk -F'\t' '$1 == "idle" || $1 == "storm" || $1 == "churn" || $1 == "hole" || $1 == "mpi-idle"' "$METRICS")" ] || return 0
	echo "## Connection cost"
	echo
	echo "ri2n-conns and ri2n-churn between two processes over 2 unshaped veth rails, the BTL's row on the" \
		"2 x GbE bed (issue 30's rows; bench/README.md says how each is measured)."
	echo
	echo "| row | measured | target |"
	echo "|---|---|---|"
	for n in $(awk -F'\t' '$1 == "idle" { print $2 }' "$METRICS" | sort -un | sort -rn); do
		echo "| idle, $n connections | $(sval idle "$n" pkts_per_s) packets/s on the rails;" \
			"CPU $(sval idle "$n" client_cpu_pct) % client, $(sval idle "$n" server_cpu_pct) % server |" \
			"<= 100 packets/s, <= 1 % of a core per process |"
	done
	n=$(sval storm ri2n conns) cs=$(sval storm ri2n connect_s)
	[ -n "$cs" ] && echo "| handshake rate | $n connections established in $cs s" \
		"($(awk -v n="$n" -v s="$cs" 'BEGIN { if (s > 0) printf "%.0f", n / s }')/s) | $n in <= 3 s |"
	[ -n "$(sval churn ri2n seq_conns)" ] &&
		echo "| churn (connect / hello / echo / close) | connect median $(sval churn ri2n seq_connect_med_us) us" \
			"(ri2n-run $(sval churn ri2n-run seq_connect_med_us) us, TCP $(sval churn tcp seq_connect_med_us) us);" \
			"16 threads $(fmtv churn ri2n par_rate) cycles/s (ri2n-run $(fmtv churn ri2n-run par_rate)," \
			"TCP $(fmtv churn tcp par_rate)), median [min–max] of the rounds |" \
			"ri2n-run <= 300 us; 2,000/s, none dropped |"
	if [ -n "$n" ]; then
		cst="$(sval storm cli closed) clean, $(sval storm cli dead_peer) dead-peer, $(sval storm cli resets) resets"
		sst="$(sval storm srv closed) clean, $(sval storm srv dead_peer) dead-peer, $(sval storm srv resets) resets"
		echo "| close storm, $n connections | client: $cst, last close $(sval storm cli last_close_s) s," \
			"exit $(sval storm cli exit_s) s; server: $sst, last close $(sval storm srv last_close_s) s |" \
			"all clean within 2 s on both sides, exit within 3 s |"
	fi
	if [ -n "$(sval mpi-idle ri2n-16 dgrams_per_s)" ]; then
		echo "| btl_ri2n, 16 ranks on 2 hosts (8 each, every pair connected), idle |" \
			"$(sval mpi-idle ri2n-16 dgrams_per_s) datagrams/s on the rails between the two hosts" \
			"($(sval mpi-idle ri2n-16 rail_downs) rail-down reports) | a rail monitor per pair of ranks:" \
			"a keepalive per rail per second each way per pair (PROTOCOL.md, \"Rail health per peer\") |"
	fi
	if [ -n "$(sval hole ri2n echoed)" ]; then
		echo "| black hole while $(sval hole ri2n conns) idle: the first write |" \
			"rail down both ways $(sval hole ri2n detect_s) s after the fault; first write on" \
			"$(sval hole ri2n echoed) of $(sval hole ri2n probes) connections, echo median" \
			"$(sval hole ri2n echo_med_us) us, max $(sval hole ri2n echo_max_us) us (RTO floor" \
			"$(sval hole ri2n rto_min_us) us); DATA on the dead rail $(sval hole ri2n dead_rail_data)" \
			"client / $(sval hole ri2n srv_dead_rail_data) server, resent $(sval hole ri2n retransmits) /" \
			"$(sval hole ri2n srv_retransmits), RTOs $(sval hole ri2n rto) / $(sval hole ri2n srv_rto) |" \
			"delivered without an RTO on the dead rail (all 0) |"
	fi
	echo
}
# The memory paragraph of summary.md
mem_summary() {
	local kib='{ printf "%.1f", $1 / 1024 }' ic is bc bs
	[ -n "$(sval mem ri2n conns)" ] || return 0
	ic=$(sval mem client idle_pss_per_conn | awk "$kib") is=$(sval mem server idle_pss_per_conn | awk "$kib")
	bc=$(sval mem client busy_pss_per_conn | awk "$kib") bs=$(sval mem server busy_pss_per_conn | awk "$kib")
	echo "## Memory and descriptors per connection"
	echo
	echo "ri2n-conns over 2 unshaped veth rails: $(sval mem ri2n established) connections established of" \
		"$(sval mem ri2n wanted) wanted$([ "$(sval mem ri2n fd_limited)" = 1 ] && echo " (RLIMIT_NOFILE could not be raised: as many as the descriptor limit holds)")," \
		"$(sval mem ri2n failed) failed, from one client process to one server" \
		"process$([ -n "$(sval mem ri2n keepalive_ms)" ] && echo " (keepalive 1 s, rail timeout 3.5 s)")." \
		"Growth of each process's Pss (/proc/self/smaps_rollup) per connection (the client's counted from its first connection, which also opens the rail sockets all share):" \
		"idle **$ic KiB** client, **$is KiB** server (target <= 8 KiB, issue 30);" \
		"each of 100 busy connections (8 MiB streamed, verified: $(sval mem ri2n verified)) $bc KiB client, $bs KiB server;" \
		"descriptors per connection $(sval mem client idle_fds_per_conn) client (the socketpair; the UDP sockets, one per rail, are shared by every connection of the process)," \
		"$(sval mem server idle_fds_per_conn) server. memory.csv has every phase."
	echo
}
