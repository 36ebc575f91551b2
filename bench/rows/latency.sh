# shellcheck shell=bash
# bench/rows/latency.sh - the latency row: ri2n-pingpong (ri2n, its fast API, TCP, UDP) and
# sockperf (UDP, TCP, TCP under ri2n-run), pinned and unpinned. Sourced by bench/run.sh; writes
# latency.csv.

# ---- latency -------------------------------------------------------------------------------
LAT_CSV=$out/latency.csv
echo "system,wait,rep,size,iterations,median_us,p99_us,min_us,mean_us,pinned" >"$LAT_CSV"
# latency figures in the metrics: lat-block (blocking reads, pinned), lat-unpinned (blocking
# reads, not pinned), lat-busy (busy polling, not pinned)
lat_fig() { # WAIT PIN
	if [ "$1" = busy ]; then echo lat-busy; elif [ "$2" = yes ]; then echo lat-block; else echo lat-unpinned; fi
}
# Does this ri2n-pingpong have the fast API (ri2n_send/ri2n_recv, --fast)?
# (the usage text in a variable: grep -q in a pipe would make the pipe fail under pipefail)
pp_has_fast() { [[ $("$PINGPONG" --help 2>&1) == *--fast* ]]; }

# pingpong SYS REP [WAIT] [PIN] [SIZES]: ri2n-pingpong. SYS: ri2n (plain read/write on the
# descriptor: libri2n's own, the fast path), ri2n-desc (the same with RI2N_PLAIN_FAST=0: through
# the socketpair and the engine thread), ri2n-fast (the fast API, --fast), tcp, udp. PIN yes (the default for blocking
# reads): host 1 on CPU 0, host 2 on CPU 1 (two one-core hosts); no: wherever the scheduler
# puts them. Busy polling always runs unpinned (ri2n's engine thread needs a core too).
pingpong() {
	local sys=$1 rep=$2 wait=${3:-block} pin=${4:-yes} psizes=${5:-$PP_SIZES} name targ=() pin1=() pin2=() sizes=() rc fig
	local penv=(RI2N_RAILS="$(rails_list)")
	[ "$wait" = busy ] && pin=no
	[ "$sys" = ri2n-desc ] && penv+=(RI2N_PLAIN_FAST=0)
	fig=$(lat_fig "$wait" "$pin")
	name=$RAW/latency-$sys-$wait-pin$pin-$rep
	case $sys in tcp) targ=(--tcp) ;; udp) targ=(--udp) ;; esac
	if [ "$sys" = ri2n-fast ]; then
		pp_has_fast || { skip "ri2n-pingpong has no --fast (the fast API) yet"; return; }
	fi
	if [ "$wait" = busy ]; then
		targ+=(--busy-poll) sizes=(--sizes "$BUSY_SIZES")
	else
		[ "$pin" = yes ] && pin1=(taskset -c 0) pin2=(taskset -c 1)
		[ -n "$psizes" ] && sizes=(--sizes "$psizes")
	fi
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env "${penv[@]}" "${pin2[@]}" \
		"$PINGPONG" serve --once --port "$PORT" "${targ[@]}"
	local srv=$BG
	# the server follows the client's --fast
	[ "$sys" = ri2n-fast ] && targ+=(--fast)
	if [ "$sys" = udp ]; then sleep 0.3; else wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }; fi
	timeout -s KILL 300 ip netns exec "$(hns 1)" env "${penv[@]}" "${pin1[@]}" \
		"$PINGPONG" client "$(haddr 2 1)" --port "$PORT" "${targ[@]}" --iterations "$PP_ITERS" \
		--budget "$PP_BUDGET" "${sizes[@]}" --csv "$name.csv" >"$name.out" 2>"$name.err"
	rc=$?
	wait_exit $srv 5
	[ $rc -eq 0 ] || { fail "ri2n-pingpong $sys exited $rc: $(head -c 300 "$name.err")"; return; }
	awk -F, -v s="$sys" -v r="$rep" -v p="$pin" 'NR > 1 && $5 != "n/a" { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", s, $2, r, $3, $4, $5, $6, $7, $8, p }' \
		"$name.csv" >>"$LAT_CSV"
	awk -F, -v s="$sys" -v r="$rep" -v f="$fig" 'NR > 1 && $5 != "n/a" {
		printf "%s\t%s\t%s\tmed_%s\t%s\n%s\t%s\t%s\tp99_%s\t%s\n", f, s, r, $3, $5, f, s, r, $3, $6 }' \
		"$name.csv" >>"$METRICS"
	log "   $sys ($wait, pinned: $pin): $(awk -F, 'NR > 1 && $5 != "n/a" { printf "%s B %s [%s] us; ", $3, $5, $6 }' "$name.csv" | cut -c1-220)"
}

# sockperf_lat SYS REP [PIN] [SIZES]: sockperf ping-pong at each size. SYS: sockperf-udp,
# sockperf-tcp (--tcp over rail 1), sockperf-ri2n-run (--tcp with both ends under ri2n-run:
# ri2n over every rail). PIN as for pingpong (default yes).
sockperf_lat() {
	local sys=$1 rep=$2 pin=${3:-yes} proto=() szs=${4:-} sz name rc fig wrap=() pin1=() pin2=() rr
	need sockperf "apt-get install sockperf" || return
	case $sys in
	sockperf-tcp) proto=(--tcp) ;;
	sockperf-ri2n-run)
		proto=(--tcp)
		[ "$mode" = smoke ] && { skip "sockperf under ri2n-run is not part of the smoke run"; return; }
		[ -n "$SP_RR_FAILED" ] && { skip "not run again after it failed ($SP_RR_FAILED)"; return; }
		rr=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
		wrap=(env RI2N_RAILS="$(rails_list)" "$rr")
		;;
	esac
	if [ -z "$szs" ]; then if [ -n "${proto[*]}" ]; then szs=$SP_SIZES_TCP; else szs=$SP_SIZES_UDP; fi; fi
	[ "$pin" = yes ] && pin1=(taskset -c 0) pin2=(taskset -c 1)
	fig=$(lat_fig block "$pin")
	name=$RAW/latency-$sys-pin$pin-$rep
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" "${pin2[@]}" "${wrap[@]}" sockperf server "${proto[@]}" \
		-i "$(haddr 2 1)" -p "$PORT"
	local srv=$BG
	if [ -n "${proto[*]}" ]; then
		wait_port 2 "$PORT" || { stop_bg $srv; fail "sockperf server did not start: $(head -c 300 "$name.srv.out")"; return; }
	else
		sleep 0.5
	fi
	for sz in $szs; do
		timeout -s KILL $((SP_SECS + 30)) ip netns exec "$(hns 1)" "${pin1[@]}" "${wrap[@]}" sockperf ping-pong "${proto[@]}" \
			-i "$(haddr 2 1)" -p "$PORT" -m "$sz" -t "$SP_SECS" >"$name-$sz.out" 2>&1
		rc=$?
		if [ $rc -ne 0 ]; then
			stop_bg $srv
			fail "sockperf ping-pong -m $sz ($sys) exited $rc: $(grep -m1 -i error "$name-$sz.out" | cut -c1-200)"
			[ "$sys" = sockperf-ri2n-run ] && SP_RR_FAILED="pinned: $pin, $sz B, exit status $rc"
			return
		fi
		# sockperf prints half round trips (one-way latency) in usec
		awk -v s="$sys" -v r="$rep" -v z="$sz" -v p="$pin" '/percentile 50.000/ { med = $NF } /percentile 99.000/ { p99 = $NF }
			/<MIN> observation/ { mn = $NF } /avg-latency=/ { match($0, /avg-latency=[0-9.]+/); avg = substr($0, RSTART + 12, RLENGTH - 12) }
			END { if (med != "") printf "%s,block,%s,%s,,%s,%s,%s,%s,%s\n", s, r, z, med, p99, mn, avg, p }' "$name-$sz.out" >>"$LAT_CSV"
		awk -v s="$sys" -v r="$rep" -v z="$sz" -v f="$fig" '/percentile 50.000/ { med = $NF } /percentile 99.000/ { p99 = $NF }
			END { if (med != "") printf "%s\t%s\t%s\tmed_%s\t%s\n%s\t%s\t%s\tp99_%s\t%s\n", f, s, r, z, med, f, s, r, z, p99 }' \
			"$name-$sz.out" >>"$METRICS"
	done
	stop_bg $srv
	log "   $sys (pinned: $pin): $(awk -F, -v s="$sys" -v r="$rep" -v p="$pin" '$1 == s && $3 == r && $10 == p { printf "%s B %s [%s] us; ", $4, $6, $7 }' "$LAT_CSV")"
}

# latency_figure REP: LAT_ROUNDS rounds, each pinned then unpinned; the order of the systems
# alternates from round to round. Round 1 sweeps every size, later rounds only LAT_ROUND_SIZES
# (sockperf TCP: its smallest size; sockperf UDP, pinned, only in round 1), so the
# small-message medians are over LAT_ROUNDS runs.
SP_RR_FAILED=""
latency_figure() { # REP
	local rep=$1 s r round order pin ppsz spsz_tcp spsz_udp
	sub_begin
	pp_has_fast || log "   ri2n-pingpong has no --fast (the fast API) yet: its rows are left out"
	for ((round = 1; round <= LAT_ROUNDS; round++)); do
		r=$rep; [ "$LAT_ROUNDS" -gt 1 ] && r=$rep.$round
		ppsz=$PP_SIZES spsz_tcp=$SP_SIZES_TCP spsz_udp=$SP_SIZES_UDP
		[ "$round" -gt 1 ] && ppsz=$LAT_ROUND_SIZES spsz_tcp=${SP_SIZES_TCP%% *}
		[ "$LAT_ROUNDS" -gt 1 ] && log "   round $round of $LAT_ROUNDS"
		for pin in yes no; do
			if [ $((round % 2)) -eq 1 ]; then order="ri2n tcp ri2n-fast udp"; else order="tcp ri2n udp ri2n-fast"; fi
			for s in $order; do
				[ "$s" = ri2n-fast ] && ! pp_has_fast && continue
				sub pingpong "$s" "$r" block "$pin" "$ppsz"
			done
			# the descriptor's way (raw system calls, stdio), small messages, first round only
			[ "$round" -eq 1 ] && sub pingpong ri2n-desc "$r" block "$pin" "$LAT_ROUND_SIZES"
			order=$(round_order "$round" sockperf-tcp sockperf-ri2n-run)
			for s in $order; do sub sockperf_lat "$s" "$r" "$pin" "$spsz_tcp"; done
			[ "$pin" = yes ] && [ "$round" -eq 1 ] && sub sockperf_lat sockperf-udp "$r" yes "$spsz_udp"
		done
	done
	if [ -n "$BUSY_SIZES" ]; then
		for s in ri2n tcp udp; do sub pingpong "$s" "$rep" busy; done
		pp_has_fast && sub pingpong ri2n-fast "$rep" busy
	fi
	sub_end
}

# The latency section of summary.md
latency_summary() {
	local spz z
	echo "## Latency: one-way (half round trip), µs, median [p99]; blocking reads"
	echo
	echo "ri2n-pingpong for ri2n (2 rails) through plain read/write on its descriptor (libri2n defines them: the fast" \
		"path; with RI2N_PLAIN_FAST=0 they cross the socketpair and the engine thread, the way raw system calls and stdio" \
		"go) and through the fast API (ri2n_send/ri2n_recv, \`--fast\`), TCP (TCP_NODELAY) and UDP (one datagram, so only up to 1472 B) over rail 1," \
		"the same code and wait mode; sockperf ping-pong over UDP and TCP on rail 1, and sockperf --tcp with both ends" \
		"under ri2n-run. Pinned: host 1 on CPU 0, host 2 on CPU 1 (two one-core hosts; ri2n's engine thread shares its" \
		"host's core); unpinned: wherever the scheduler puts them (on 2 CPUs both ends may share one, which spares" \
		"TCP a cross-CPU wake-up). $LAT_ROUNDS round(s) per repetition, the order of the systems alternating;" \
		"sizes $LAT_ROUND_SIZES (sockperf: its smallest, ${SP_SIZES_TCP%% *} B) in every round, the others in the first."
	echo
	echo "### 8-byte one-way latency"
	echo
	echo "| path | pinned median | pinned p99 | median / TCP | p99 / TCP p99 | unpinned median | unpinned p99 | median / TCP | p99 / TCP p99 | target |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	spz=${SP_SIZES_TCP%% *}
	lat8_row "ri2n, plain read/write (ri2n-pingpong: libri2n's read/write, the fast path)" ri2n tcp 8 "median <= 2x TCP"
	if [ -n "$(agg lat-block ri2n-desc med_8)$(agg lat-unpinned ri2n-desc med_8)" ]; then
		lat8_row "ri2n, through the descriptor (RI2N_PLAIN_FAST=0: as raw system calls and stdio go)" ri2n-desc tcp 8 "reported"
	fi
	if [ -n "$(agg lat-block ri2n-fast med_8)$(agg lat-unpinned ri2n-fast med_8)" ]; then
		lat8_row "ri2n, fast API (ri2n-pingpong --fast)" ri2n-fast tcp 8 "median <= 1.3x, p99 <= 2x TCP"
	else
		echo "| ri2n, fast API: not measured (ri2n-pingpong has no --fast) | | | | | | | | | median <= 1.3x, p99 <= 2x TCP |"
	fi
	lat8_row "TCP (ri2n-pingpong --tcp)" tcp tcp 8 "the peer"
	lat8_row "ri2n-run: sockperf --tcp, both ends under ri2n-run ($spz B)" sockperf-ri2n-run sockperf-tcp "$spz" "median <= 1.3x, p99 <= 2x TCP"
	lat8_row "TCP: sockperf --tcp ($spz B)" sockperf-tcp sockperf-tcp "$spz" "the peer of ri2n-run"
	echo
	echo "sockperf's smallest message is $spz bytes (its header), so its rows are for $spz B."
	echo
	lat_table lat-block "### Every size, pinned"
	lat_table lat-unpinned "### Every size, unpinned"
	if [ -n "$(awk -F'\t' '$1 == "lat-busy"' "$METRICS")" ]; then
		echo "Busy polling (\`--busy-poll\`, unpinned), median µs: $(for z in $(awk -F'\t' '$1 == "lat-busy" && $4 ~ /^med_/ { print substr($4, 5) }' "$METRICS" | sort -n | uniq); do
			printf '%s B: ri2n %s, fast API %s, TCP %s, UDP %s; ' "$z" "$(fmtv lat-busy ri2n med_$z 1)" "$(fmtv lat-busy ri2n-fast med_$z 1)" "$(fmtv lat-busy tcp med_$z 1)" "$(fmtv lat-busy udp med_$z 1)"; done | sed 's/; $/./')"
	fi
}
latcell() { # FIG SYS SIZE
	local m p
	m=$(med "$1" "$2" "med_$3")
	p=$(med "$1" "$2" "p99_$3")
	[ -n "$m" ] || { echo "n/a"; return; }
	awk -v m="$m" -v p="$p" 'BEGIN { printf "%.1f [%.1f]", m, p }'
}
# lat8_row LABEL SYS PEER SIZE TARGET: a row of the 8-byte table, pinned and unpinned
lat8_row() {
	local out="| $1" f m p
	for f in lat-block lat-unpinned; do
		m=$(med $f "$2" "med_$4") p=$(med $f "$2" "p99_$4")
		out+=" | $(fmtv $f "$2" "med_$4" 1) | $(fmtv $f "$2" "p99_$4" 1) | $(ratio "$m" "$(med $f "$3" "med_$4")") | $(ratio "$p" "$(med $f "$3" "p99_$4")")"
	done
	echo "$out | $5 |"
}
# lat_table FIG TITLE: median [p99] at every size measured for FIG
lat_table() {
	local f=$1 z
	[ -n "$(awk -F'\t' -v f="$f" '$1 == f' "$METRICS")" ] || return 0
	echo "$2"
	echo
	echo "| size (B) | ri2n | ri2n fast API | TCP | UDP | sockperf TCP | sockperf under ri2n-run | sockperf UDP | ri2n / TCP | fast / TCP | ri2n / UDP | ri2n-run / TCP (sockperf) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	for z in $(awk -F'\t' -v f="$f" '$1 == f && $4 ~ /^med_/ { print substr($4, 5) }' "$METRICS" | sort -n | uniq); do
		echo "| $z | $(latcell $f ri2n $z) | $(latcell $f ri2n-fast $z) | $(latcell $f tcp $z) | $(latcell $f udp $z) |" \
			"$(latcell $f sockperf-tcp $z) | $(latcell $f sockperf-ri2n-run $z) | $(latcell $f sockperf-udp $z) |" \
			"$(ratio "$(med $f ri2n med_$z)" "$(med $f tcp med_$z)") | $(ratio "$(med $f ri2n-fast med_$z)" "$(med $f tcp med_$z)") |" \
			"$(ratio "$(med $f ri2n med_$z)" "$(med $f udp med_$z)") | $(ratio "$(med $f sockperf-ri2n-run med_$z)" "$(med $f sockperf-tcp med_$z)") |"
	done
	echo
}
