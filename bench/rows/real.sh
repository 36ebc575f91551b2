# shellcheck shell=bash
# bench/rows/real.sh - unmodified programs under ri2n-run beside the same programs over TCP (or
# MPTCP), in alternating rounds, median [min–max]: web (nginx and wrk, keep-alive), cache
# (memcached and memaslap), fork (a server forking a process per client, bench/forkserve.py),
# iperf (iperf3 under ri2n-run and under mptcpize on 2 unshaped veth rails). Sourced by
# bench/run.sh; writes real.csv (the iperf runs also go to throughput.csv, as figure iperf-veth).

REAL_CSV=$out/real.csv
echo "row,system,round,seconds,rate,unit,errors,rail_share_pct" >"$REAL_CSV"
case $mode in
full) REAL_ROUNDS=5 REAL_SECS=5 REAL_IPERF_SECS=10 ;;
quick) REAL_ROUNDS=5 REAL_SECS=3 REAL_IPERF_SECS=5 ;; # 5 rounds: a 0.47x-0.83x spread shows
*) REAL_ROUNDS=1 REAL_SECS=1 REAL_IPERF_SECS=1 ;;
esac
REAL_RR="" REAL_TX0="" REAL_CLIENTS_WEB=16 REAL_CLIENTS_CACHE=32 REAL_CLIENTS_FORK=16
real_wrap() { [ "$1" = ri2n ] && printf '%s\n' env RI2N_RAILS="$(rails_list)" "$REAL_RR"; }
# real_row ROW SYS ROUND SECS RATE UNIT ERRORS: a row of real.csv and its metrics, with each
# rail's share of the bytes host 1 sent since REAL_TX0 (ri2n-run: both rails; TCP: rail 1)
real_row() {
	local sh
	sh=$(share "$REAL_TX0" "$(rail_tx)")
	echo "$1,$2,$3,$4,$5,$6,$7,$sh" >>"$REAL_CSV"
	put "$1" "$2" "$3" rate "$5"
	put "$1" "$2" "$3" errors "$7"
	log "   $2: $5 $6 (rails $sh %)$([ "$7" != 0 ] && echo ", $7 errors")"
}
# real_rounds ROW SERVER BENCH: a TCP and a ri2n-run server (SERVER SYS PORT, pid in BG), then
# REAL_ROUNDS rounds of BENCH SYS ROUND PORT, the two alternating which goes first
real_rounds() {
	local row=$1 server=$2 bench=$3 round r sys order ptcp pri st sr
	REAL_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	next_port; ptcp=$PORT
	next_port; pri=$PORT
	"$server" tcp "$ptcp"; st=$BG
	"$server" ri2n "$pri"; sr=$BG
	if ! wait_port 2 "$ptcp" tu || ! wait_port 2 "$pri" tu; then
		stop_bg $st; stop_bg $sr
		fail "$row: a server did not start: $(tail -q -c 200 "$RAW/$row"-*.srv.err | tr '\n' ' ')"
		return
	fi
	sleep 0.2
	sub_begin
	for ((round = 1; round <= REAL_ROUNDS; round++)); do
		r=1.$round
		order=$(round_order "$round" tcp ri2n)
		for sys in $order; do
			REAL_TX0=$(rail_tx)
			if [ "$sys" = tcp ]; then sub "$bench" tcp "$r" "$ptcp"; else sub "$bench" ri2n "$r" "$pri"; fi
		done
	done
	kill -0 $st 2>/dev/null || { SUB_FAIL=1 SUB_REASON="$row: the TCP server died: $(tail -c 200 "$RAW/$row-tcp.srv.err")"; }
	kill -0 $sr 2>/dev/null || { SUB_FAIL=1 SUB_REASON="$row: the server under ri2n-run died: $(tail -c 200 "$RAW/$row-ri2n.srv.err")"; }
	stop_bg $st
	stop_bg $sr
	sub_end
}

# ---- web: nginx (a master, 2 workers) and wrk with keep-alive connections -------------------
web_server() { # SYS PORT: the close row's nginx (bench/rows/apps.sh), a 450-byte file
	CLOSE_RR=$REAL_RR
	close_server "$1" "$2" web
	ln -sf "close-nginx-$1-web.err" "$RAW/web-$1.srv.err" # where real_rounds looks
}
web_bench() { # SYS ROUND PORT
	local sys=$1 r=$2 wrap=() name rc rps se nx
	name=$RAW/web-$sys-$r
	mapfile -t wrap < <(real_wrap "$sys")
	timeout -s KILL $((REAL_SECS + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" wrk -t1 -c$REAL_CLIENTS_WEB \
		-d"${REAL_SECS}s" "http://$(haddr 2 1):$3/small" >"$name.out" 2>"$name.err"
	rc=$?
	[ $rc -eq 0 ] || { fail "wrk ($sys) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$name.out")
	[ -n "$rps" ] || { fail "no result from wrk ($sys): $(head -c 300 "$name.out" | tr '\n' ' ')"; return; }
	se=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$name.out")
	nx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$name.out")
	real_row web "$sys" "$r" "$REAL_SECS" "$rps" requests/s $((${se:-0} + ${nx:-0}))
}
web_figure() {
	need nginx "apt-get install nginx" || return
	need wrk "apt-get install wrk" || return
	mkdir -p "$RAW/close-www"
	head -c 450 /dev/zero | tr '\0' 'x' >"$RAW/close-www/small"
	real_rounds web web_server web_bench
}

# ---- cache: memcached and memaslap (Debian's memcaslap), 32 connections, 5% of gets verified ----
real_memaslap() { if have memcaslap; then echo memcaslap; elif have memaslap; then echo memaslap; else return 1; fi; }
cache_server() { # SYS PORT
	local wrap=()
	mapfile -t wrap < <(real_wrap "$1")
	bg "$RAW/cache-$1.srv.out" "$RAW/cache-$1.srv.err" ip netns exec "$(hns 2)" "${wrap[@]}" \
		memcached -u root -l "$(haddr 2 1)" -p "$2" -U 0 -t 2 -c 4096 -m 256
}
cache_bench() { # SYS ROUND PORT
	local sys=$1 r=$2 wrap=() name rc tps e
	name=$RAW/cache-$sys-$r
	mapfile -t wrap < <(real_wrap "$sys")
	timeout -s KILL $((REAL_SECS + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" "$(real_memaslap)" \
		-s "$(haddr 2 1):$3" -T 2 -c $REAL_CLIENTS_CACHE -t "${REAL_SECS}s" -v 0.05 >"$name.out" 2>"$name.err"
	rc=$?
	[ $rc -eq 0 ] || { fail "memaslap ($sys) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	tps=$(sed -n 's/.* TPS: \([0-9]*\) .*/\1/p' "$name.out" | tail -1)
	[ -n "$tps" ] || { fail "no result from memaslap ($sys): $(tail -c 300 "$name.out" | tr '\n' ' ')"; return; }
	# values that came back wrong, or not at all, among the verified gets
	e=$(awk '/^verify_(misses|failed):/ { s += $2 } END { print s + 0 }' "$name.out")
	grep -q '^verify_failed:' "$name.out" || { fail "memaslap ($sys) printed no verification counts"; return; }
	real_row cache "$sys" "$r" "$REAL_SECS" "$tps" ops/s "$e"
	[ "$e" -eq 0 ] || fail "memaslap ($sys): $e verified gets missing or wrong"
}
cache_figure() {
	need memcached "apt-get install memcached" || return
	real_memaslap >/dev/null || { need memcaslap "apt-get install libmemcached-tools"; return; }
	real_rounds cache cache_server cache_bench
}

# ---- fork: a process per client (Python's ForkingTCPServer), 16 connections ----------------
FORK_PY=$HERE/forkserve.py
fork_server() { # SYS PORT
	local wrap=()
	mapfile -t wrap < <(real_wrap "$1")
	bg "$RAW/fork-$1.srv.out" "$RAW/fork-$1.srv.err" ip netns exec "$(hns 2)" "${wrap[@]}" \
		python3 "$FORK_PY" serve "$(haddr 2 1)" "$2"
}
fork_bench() { # SYS ROUND PORT
	local sys=$1 r=$2 wrap=() name rc rps bad
	name=$RAW/fork-$sys-$r
	mapfile -t wrap < <(real_wrap "$sys")
	timeout -s KILL $((REAL_SECS + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" python3 "$FORK_PY" run \
		"$(haddr 2 1)" "$3" --clients $REAL_CLIENTS_FORK --procs 2 --secs "$REAL_SECS" >"$name.out" 2>"$name.err"
	rc=$?
	rps=$(field rps "$name.out") bad=$(field bad "$name.out")
	[ -n "$rps" ] || { fail "forkserve.py run ($sys) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	real_row fork "$sys" "$r" "$REAL_SECS" "$rps" requests/s "${bad:-0}"
	[ $rc -eq 0 ] || fail "forkserve.py run ($sys) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"
}
fork_figure() {
	need python3 "apt-get install python3" || return
	real_rounds fork fork_server fork_bench
}

# ---- iperf: iperf3 under ri2n-run and under mptcpize, 2 unshaped veth rails ----------------
# (the veth row has both too, once each per repetition; this one alternates them in rounds)
iperf_figure() {
	local round r sys order v
	sub_begin
	for ((round = 1; round <= REAL_ROUNDS; round++)); do
		r=1.$round
		order=$(round_order "$round" mptcp ri2n)
		for sys in $order; do
			if [ "$sys" = mptcp ]; then
				sub iperf_tp iperf-veth mptcp "$r" "$REAL_IPERF_SECS" 1 mptcp
			else
				sub iperf_tp iperf-veth ri2n "$r" "$REAL_IPERF_SECS" 1 ri2n-run
			fi
			v=$(awk -F'\t' -v s="$sys" -v r="$r" '$1 == "iperf-veth" && $2 == s && $3 == r && $4 == "mbps" { print $5 }' "$METRICS")
			[ -n "$v" ] && echo "iperf,$sys,$r,$REAL_IPERF_SECS,$v,Mbit/s,,$(sval iperf-veth "$sys" share)" >>"$REAL_CSV"
		done
	done
	sub_end
}

real_worst() { agg "$1" "$2" errors | awk '{ print $3 } END { if (NR == 0) print "–" }'; } # ROW SYS
# The real-programs section of summary.md
real_summary() {
	local row peer what target unit
	echo "## Real programs under ri2n-run vs the same over TCP (or MPTCP), alternating rounds"
	echo
	echo "Both ends of each pair under ri2n-run (ri2n over both rails) or both over plain TCP on rail 1 (iperf:" \
		"under mptcpize, MPTCP over both rails), 2 x GbE bed (iperf: 2 unshaped veth rails), unpinned. Both servers" \
		"run for the whole row; $REAL_ROUNDS round(s) of ${REAL_SECS} s (iperf ${REAL_IPERF_SECS} s), the two" \
		"alternating which goes first; median [min–max] over rounds, and of the ratio taken in each round (the" \
		"ri2n-run run over the peer's run of the same round). Targets: issue 34. Errors: the worst round's."
	echo
	echo "| row | peer | ri2n-run | ri2n-run / peer, per round | errors peer / ri2n-run | target |"
	echo "|---|---|---|---|---|---|"
	for row in web cache fork iperf-veth; do
		peer=tcp unit=rate
		case $row in
		web) what="nginx (master + 2 workers, 450-byte file), wrk -t1 -c$REAL_CLIENTS_WEB keep-alive, requests/s" target=0.9 ;;
		cache) what="memcached -t 2, memaslap -T 2 -c $REAL_CLIENTS_CACHE (get 90%, set 10%, 5% of gets verified), ops/s" target=0.8 ;;
		fork) what="ForkingTCPServer (a process per client), $REAL_CLIENTS_FORK clients from 2 processes, 64 B request / 1 KiB answer, requests/s" target=0.9 ;;
		iperf-veth) what="iperf3, 2 unshaped veth rails, Mbit/s (peer: mptcpize)" target=1.0 peer=mptcp unit=mbps ;;
		esac
		[ -n "$(agg "$row" "$peer" $unit)$(agg "$row" ri2n $unit)" ] || continue
		echo "| $what | $(fmtv "$row" "$peer" $unit) | $(fmtv "$row" ri2n $unit) | $(fmtr "$row" ri2n "$peer" $unit) |" \
			"$(real_worst "$row" "$peer") / $(real_worst "$row" ri2n) | >= ${target}x |"
	done
	echo
}
# real_targets: the rows' lines in the targets table
real_targets() {
	local row peer unit lim a name
	for row in web cache fork iperf-veth; do
		peer=tcp unit=rate
		case $row in
		web) lim=0.9 name="keep-alive web server (nginx, wrk 16 connections)" ;;
		cache) lim=0.8 name="cache server (memcached, memaslap 32 connections)" ;;
		fork) lim=0.9 name="forking server, 16 clients" ;;
		iperf-veth) lim=1.0 name="iperf3, 2 unshaped veth rails, against mptcpize" peer=mptcp unit=mbps ;;
		esac
		[ -n "$(agg "$row" ri2n $unit)" ] || continue
		a=$(rounds_med "$row" ri2n "$peer" $unit)
		echo "| under ri2n-run, $name: >= ${lim}x (median of the rounds' ratios) | $(fmtv "$row" ri2n $unit) vs $(fmtv "$row" "$peer" $unit): $(fmtr "$row" ri2n "$peer" $unit) | $(verdict "$(numcmp "$a" ">=" $lim)") |"
	done
}
