# shellcheck shell=bash
# bench/rows/apps.sh - real programs under ri2n-run beside plain TCP: the kv row (redis-server
# and redis-benchmark) and the close row (nginx and wrk, a connection per request). Sourced by
# bench/run.sh; writes kv.csv and close.csv.

# ---- request rate: a real key-value server under ri2n-run ----------------------------------
# redis-server in host 2 and redis-benchmark in host 1, both under ri2n-run (ri2n over every
# rail), next to the same pair over plain TCP on rail 1; rounds alternate which goes first.
KV_CSV=$out/kv.csv
echo "system,clients,pipeline,rep,test,requests,rps,avg_ms,p50_ms,p99_ms" >"$KV_CSV"
KV_SETTINGS="p16 c50 c1000" KV_RR=""
kv_args() { # SETTING -> redis-benchmark arguments
	case $1 in
	p16) echo "-c 50 -P 16 -n $KV_N_PIPE" ;;
	c50) echo "-c 50 -n $KV_N" ;;
	c1000) echo "-c 1000 -n $KV_N_1000" ;;
	esac
}
kv_label() { case $1 in p16) echo "50 clients, pipelined (-P 16)" ;; c50) echo "50 clients" ;; c1000) echo "1000 clients" ;; esac; }
kv_wrap() { [ "$1" = ri2n ] && printf '%s\n' env RI2N_RAILS="$(rails_list)" "$KV_RR"; }
# sh -c script: open files up to 65536 (or the hard limit if lower; 1000 clients under ri2n-run
# take about 4 descriptors each), then the command
KV_SH='n=$(ulimit -Hn); [ "$n" = unlimited ] && n=65536; [ "$n" -gt 65536 ] && n=65536; ulimit -n "$n" && exec "$@"'
# kv_server SYS PORT REP: redis without persistence on host 2's rail 1 address (pid in BG)
kv_server() {
	local sys=$1 port=$2 name=$RAW/kv-$1-$3 wrap=()
	mapfile -t wrap < <(kv_wrap "$sys")
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" sh -c "$KV_SH" sh "${wrap[@]}" \
		redis-server --bind "$(haddr 2 1)" --port "$port" --save '' --appendonly no --protected-mode no \
		--daemonize no --maxclients 10000
}
# kv_bench SYS SETTING REP PORT: one redis-benchmark run (SET then GET), ops/s into kv.csv
kv_bench() {
	local sys=$1 set=$2 rep=$3 port=$4 wrap=() args=() name rc c p n t v
	name=$RAW/kv-$sys-$set-$rep
	mapfile -t wrap < <(kv_wrap "$sys")
	read -r -a args <<<"$(kv_args "$set")"
	timeout -s KILL 150 ip netns exec "$(hns 1)" sh -c "$KV_SH" sh "${wrap[@]}" \
		redis-benchmark -h "$(haddr 2 1)" -p "$port" -t set,get "${args[@]}" --csv >"$name.csv" 2>"$name.err"
	rc=$?
	[ $rc -eq 0 ] || { fail "redis-benchmark ($sys, $(kv_label "$set")) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	c=$(sed 's/.*-c \([0-9]*\).*/\1/' <<<"${args[*]}") n=$(sed 's/.*-n \([0-9]*\).*/\1/' <<<"${args[*]}")
	p=1; [[ " ${args[*]} " == *" -P "* ]] && p=$(sed 's/.*-P \([0-9]*\).*/\1/' <<<"${args[*]}")
	for t in SET GET; do
		# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
		v=$(tr -d '"' <"$name.csv" | awk -F, -v t="$t" '$1 == t { print $2, $3, $5, $7 }')
		[ -n "$v" ] || { fail "no $t result from redis-benchmark ($sys, $(kv_label "$set")): $(head -c 200 "$name.csv" "$name.err" | tr '\n' ' ')"; return; }
		read -r -a v <<<"$v"
		echo "$sys,$c,$p,$rep,$t,$n,${v[0]},${v[1]},${v[2]},${v[3]}" >>"$KV_CSV"
		put "kv-$set" "$sys" "$rep" "${t,,}" "${v[0]}"
	done
	log "   $sys, $(kv_label "$set"): SET $(awk -F, -v s="$sys" -v r="$rep" -v c="$c" -v p="$p" '$1 == s && $2 == c && $3 == p && $4 == r && $5 == "SET" { print $7 }' "$KV_CSV")," \
		"GET $(awk -F, -v s="$sys" -v r="$rep" -v c="$c" -v p="$p" '$1 == s && $2 == c && $3 == p && $4 == r && $5 == "GET" { print $7 }' "$KV_CSV") requests/s"
}
# kv_figure REP: both servers up, then KV_ROUNDS rounds of every client setting, TCP and ri2n
# alternating which goes first; every process is stopped at the end (and by the exit trap)
kv_figure() {
	local rep=$1 round r set sys order ptcp pri st sr
	need redis-server "apt-get install redis-server" || return
	need redis-benchmark "apt-get install redis-tools" || return
	KV_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	next_port; ptcp=$PORT
	next_port; pri=$PORT
	kv_server tcp "$ptcp" "$rep"; st=$BG
	kv_server ri2n "$pri" "$rep"; sr=$BG
	if ! wait_port 2 "$ptcp" || ! wait_port 2 "$pri"; then
		stop_bg $st; stop_bg $sr
		fail "redis-server did not start: $(tail -q -c 200 "$RAW/kv-tcp-$rep".srv.* "$RAW/kv-ri2n-$rep".srv.* | tr '\n' ' ')"
		return
	fi
	sub_begin
	for ((round = 1; round <= KV_ROUNDS; round++)); do
		r=$rep; [ "$KV_ROUNDS" -gt 1 ] && r=$rep.$round
		order=$(round_order "$round" tcp ri2n)
		for set in $KV_SETTINGS; do
			for sys in $order; do
				if [ "$sys" = tcp ]; then sub kv_bench tcp "$set" "$r" "$ptcp"; else sub kv_bench ri2n "$set" "$r" "$pri"; fi
			done
		done
	done
	kill -0 $st 2>/dev/null || { SUB_FAIL=1 SUB_REASON="the TCP redis-server died: $(tail -c 200 "$RAW/kv-tcp-$rep.srv.out")"; }
	kill -0 $sr 2>/dev/null || { SUB_FAIL=1 SUB_REASON="redis-server under ri2n-run died: $(tail -c 200 "$RAW/kv-ri2n-$rep.srv.out")"; }
	stop_bg $st
	stop_bg $sr
	sub_end
}
# The request-rate section of summary.md
kv_summary() {
	local set t a b
	echo "## Request rate: redis under ri2n-run vs TCP (requests/s)"
	echo
	echo "$(redis-server --version 2>/dev/null | awk '{ print $1, $2, $3 }') in host 2 without persistence" \
		"(\`--save '' --appendonly no\`, bound to rail 1's address, protected mode off) and redis-benchmark in host 1" \
		"(\`-t set,get\`, default 3-byte values), both under ri2n-run (ri2n over both rails) or both over plain TCP on" \
		"rail 1, 2 x GbE bed, unpinned. $KV_ROUNDS round(s) in the first repetition, ri2n and TCP alternating which goes first;" \
		"median [min–max] over rounds, and of the ratio taken in each round (ri2n-run's run over TCP's of the same" \
		"round). Requests per run: $KV_N_PIPE pipelined, $KV_N with 50 clients, $KV_N_1000 with 1000."
	echo
	echo "| clients | test | TCP | ri2n-run | ri2n-run / TCP, per round | target (issue 34's) |"
	echo "|---|---|---|---|---|---|"
	for set in $KV_SETTINGS; do
		for t in set get; do
			[ -n "$(agg "kv-$set" tcp $t)$(agg "kv-$set" ri2n $t)" ] || continue
			case $set in p16) a=">= 0.8x (0.9x)" ;; c1000) a=">= 0.7x (0.8x)" ;; *) a="" ;; esac
			echo "| $(kv_label $set) | ${t^^} | $(fmtv "kv-$set" tcp $t) | $(fmtv "kv-$set" ri2n $t) |" \
				"$(fmtr "kv-$set" ri2n tcp $t) | $a |"
		done
	done
	echo
}

# ---- a connection per request: nginx and wrk with Connection: close ----------------------
# nginx (a master, 2 workers, a small file) in host 2 and wrk (-t1, 1 and 16 clients,
# `Connection: close`: a new connection for every request) in host 1, both under ri2n-run
# (both rails) or both over plain TCP on rail 1; rounds alternate which goes first. Besides
# requests/s: how long wrk took to exit after its run (its Lua done() hook notes
# /proc/uptime when it prints the results; the bench reads it again when the process is gone).
CLOSE_CSV=$out/close.csv
echo "system,clients,rep,requests,seconds,rps,exit_s,socket_errors,non2xx" >"$CLOSE_CSV"
CLOSE_RR=""
close_setup() { # -> CLOSE_SECS CLOSE_ROUNDS for the mode
	case $mode in
	full) CLOSE_SECS=5 CLOSE_ROUNDS=1 ;;
	quick) CLOSE_SECS=3 CLOSE_ROUNDS=2 ;;
	*) CLOSE_SECS=1 CLOSE_ROUNDS=1 ;;
	esac
}
close_setup
# close_server SYS PORT REP: nginx serving $RAW/close-www on host 2's rail 1 address (pid in BG)
close_server() {
	local sys=$1 port=$2 d=$RAW/close-nginx-$1-$3 wrap=()
	[ "$sys" = ri2n ] && wrap=(env RI2N_RAILS="$(rails_list)" "$CLOSE_RR")
	mkdir -p "$d/tmp"
	cat >"$d/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $d/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server { listen $(haddr 2 1):$port; root $RAW/close-www; }
}
EOF
	bg "$d.out" "$d.err" ip netns exec "$(hns 2)" "${wrap[@]}" nginx -e stderr -p "$d" -c "$d/nginx.conf"
}
# close_bench SYS CLIENTS REP PORT: one wrk run, a row in close.csv
close_bench() {
	local sys=$1 c=$2 rep=$3 port=$4 wrap=() name rc gone end n secs rps se nx ex
	name=$RAW/close-$sys-c$c-$rep
	[ "$sys" = ri2n ] && wrap=(env RI2N_RAILS="$(rails_list)" "$CLOSE_RR")
	timeout -s KILL $((CLOSE_SECS + 60)) ip netns exec "$(hns 1)" "${wrap[@]}" wrk -t1 -c"$c" -d"${CLOSE_SECS}s" \
		-H 'Connection: close' -s "$RAW/close-done.lua" "http://$(haddr 2 1):$port/small" >"$name.out" 2>"$name.err"
	rc=$?
	gone=$(awk '{ print $1 }' /proc/uptime)
	[ $rc -eq 0 ] || { fail "wrk ($sys, $c clients) exited $rc: $(tail -c 300 "$name.err" | tr '\n' ' ')"; return; }
	end=$(sed -n 's/^run_end_uptime \([0-9.]*\)$/\1/p' "$name.out")
	read -r n secs < <(sed -n 's/^ *\([0-9]*\) requests in \([0-9.]*\)\(m*\)s,.*/\1 \2\3/p' "$name.out")
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$name.out")
	[ -n "$rps" ] && [ -n "$end" ] || { fail "no result from wrk ($sys, $c clients): $(head -c 300 "$name.out" | tr '\n' ' ')"; return; }
	se=$(awk '/Socket errors:/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$name.out")
	nx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$name.out")
	ex=$(awk -v a="$end" -v b="$gone" 'BEGIN { printf "%.2f", b - a }')
	echo "$sys,$c,$rep,$n,$secs,$rps,$ex,${se:-0},${nx:-0}" >>"$CLOSE_CSV"
	put "close-c$c" "$sys" "$rep" rps "$rps"
	put "close-c$c" "$sys" "$rep" exit_s "$ex"
	put "close-c$c" "$sys" "$rep" errors $((${se:-0} + ${nx:-0}))
	log "   $sys, $c client(s): $rps requests/s, exit $ex s after the run$([ $((${se:-0} + ${nx:-0})) -gt 0 ] && echo ", ${se:-0} socket errors, ${nx:-0} non-2xx")"
}
# close_figure REP: both servers up, then CLOSE_ROUNDS rounds of 1 and 16 clients, TCP and
# ri2n-run alternating which goes first; both servers stopped at the end (and by the exit trap)
close_figure() {
	local rep=$1 round r c sys order ptcp pri st sr
	need nginx "apt-get install nginx" || return
	need wrk "apt-get install wrk" || return
	CLOSE_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	mkdir -p "$RAW/close-www"
	head -c 450 /dev/zero | tr '\0' 'x' >"$RAW/close-www/small" # a small page
	cat >"$RAW/close-done.lua" <<'EOF'
function done(summary, latency, requests)
	local f = io.open("/proc/uptime", "r")
	io.write(string.format("run_end_uptime %.2f\n", f:read("*n")))
	f:close()
end
EOF
	next_port; ptcp=$PORT
	next_port; pri=$PORT
	close_server tcp "$ptcp" "$rep"; st=$BG
	close_server ri2n "$pri" "$rep"; sr=$BG
	if ! wait_port 2 "$ptcp" || ! wait_port 2 "$pri" u; then
		stop_bg $st; stop_bg $sr
		fail "nginx did not start: $(tail -q -c 200 "$RAW"/close-nginx-*-"$rep".err | tr '\n' ' ')"
		return
	fi
	# Every TCP round connects to one server port: without tw_reuse the first round's
	# ~15,000 TIME_WAIT tuples left wrk's connect() searching the ephemeral range at 90% of
	# a CPU, and TCP fell to ~150 requests/s for the rest of the row.
	tw_reuse_on
	sub_begin
	for ((round = 1; round <= CLOSE_ROUNDS; round++)); do
		r=$rep; [ "$CLOSE_ROUNDS" -gt 1 ] && r=$rep.$round
		order=$(round_order "$round" tcp ri2n)
		for c in 1 16; do
			for sys in $order; do
				if [ "$sys" = tcp ]; then sub close_bench tcp "$c" "$r" "$ptcp"; else sub close_bench ri2n "$c" "$r" "$pri"; fi
			done
		done
	done
	kill -0 $st 2>/dev/null || { SUB_FAIL=1 SUB_REASON="the TCP nginx died: $(tail -c 200 "$RAW/close-nginx-tcp-$rep.err")"; }
	kill -0 $sr 2>/dev/null || { SUB_FAIL=1 SUB_REASON="nginx under ri2n-run died: $(tail -c 200 "$RAW/close-nginx-ri2n-$rep.err")"; }
	stop_bg $st
	stop_bg $sr
	tw_reuse_off
	sub_end
}
# The connection-per-request section of summary.md
close_summary() {
	local c
	echo "## A connection per request: nginx under ri2n-run vs TCP (requests/s)"
	echo
	echo "$(nginx -v 2>&1 | sed 's/.*: //') (a master and 2 workers, access log off, sendfile) in host 2 serving a" \
		"450-byte file, and $(wrk -v 2>&1 | awk 'NR == 1 { print $1, $2 }') \`-t1 -d${CLOSE_SECS}s -H 'Connection: close'\`" \
		"(a new connection for every request) in host 1; both under ri2n-run (ri2n over both rails) or both over plain" \
		"TCP on rail 1, 2 x GbE bed, unpinned. $CLOSE_ROUNDS round(s) per repetition, TCP and ri2n-run alternating" \
		"which goes first; median [min–max] over rounds. Exit: seconds from the end of wrk's run (its" \
		"results printed) to the process gone; errors: socket errors and non-2xx responses."
	echo
	echo "| clients | TCP | ri2n-run | ri2n-run / TCP | exit TCP (s) | exit ri2n-run (s) | errors TCP / ri2n-run (worst run) | target |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in 1 16; do
		[ -n "$(agg "close-c$c" tcp rps)$(agg "close-c$c" ri2n rps)" ] || continue
		echo "| $c | $(fmtv "close-c$c" tcp rps) | $(fmtv "close-c$c" ri2n rps) |" \
			"$(ratio "$(med "close-c$c" ri2n rps)" "$(med "close-c$c" tcp rps)") |" \
			"$(fmtv "close-c$c" tcp exit_s 2) | $(fmtv "close-c$c" ri2n exit_s 2) |" \
			"$(agg "close-c$c" tcp errors | awk '{ print $3 }') / $(agg "close-c$c" ri2n errors | awk '{ print $3 }') |" \
			">= 0.5x, exit <= 1 s |"
	done
	echo
}
