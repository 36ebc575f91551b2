# shellcheck shell=bash
# bench/rows/redundant.sh - the redundant row: 8-byte request/response with 1% loss on one rail.
# Sourced by bench/run.sh; writes redundant.csv.

# ---- redundant small messages ----------------------------------------------------------------
# redundant_figure REP: 8-byte request/response, RED_ITERS round trips per system, host 1's port
# on rail 1 losing 1% each way (nftables numgen in the switch): ri2n with RI2N_REDUNDANT_BYTES=64
# at both ends (each message also on the other rail), ri2n without (normal), TCP (on rail 1, the
# lossy one); first ri2n without loss, the reference. Pinned as the latency figure; the order of
# the lossy three alternates with REP. Round trips, twice ri2n-pingpong's half round trips.
RED_CSV=$out/redundant.csv
echo "system,rep,loss_pct,iterations,p50_us,p99_us,p999_us,max_us" >"$RED_CSV"
red_run() { # SYS REP LOSS
	local sys=$1 rep=$2 loss=$3 name targ=() penv=(RI2N_RAILS="$(rails_list)") rc iters=$RED_ITERS
	# TCP: a fifth of the round trips, each of its losses waits for its 200 ms RTO floor
	case $sys in tcp) targ=(--tcp) iters=$((RED_ITERS / 5)) ;; ri2n-redundant) penv+=(RI2N_REDUNDANT_BYTES=64) ;; esac
	name=$RAW/redundant-$sys-$loss-$rep
	next_port
	bg "$name.srv.out" "$name.srv.err" ip netns exec "$(hns 2)" env "${penv[@]}" taskset -c 1 \
		"$PINGPONG" serve --once --port "$PORT" "${targ[@]}"
	local srv=$BG
	wait_port 2 "$PORT" || { stop_bg $srv; fail "server did not start: $(head -c 300 "$name.srv.err")"; return; }
	timeout -s KILL 120 ip netns exec "$(hns 1)" env "${penv[@]}" taskset -c 0 "$PINGPONG" client \
		"$(haddr 2 1)" --port "$PORT" "${targ[@]}" --sizes 8 --iterations "$iters" --warmup 200 \
		--budget 1G --verify --csv "$name.csv" >"$name.out" 2>"$name.err"
	rc=$?
	wait_exit $srv 5
	[ $rc -eq 0 ] || { fail "ri2n-pingpong $sys exited $rc: $(head -c 300 "$name.err")"; return; }
	awk -F, -v s="$sys" -v r="$rep" -v l="$loss" 'NR == 2 {
		printf "%s,%s,%s,%s,%.1f,%.1f,%.1f,%.1f\n", s, r, l, $4, 2 * $5, 2 * $6, 2 * $11, 2 * $9 }' "$name.csv" >>"$RED_CSV"
	awk -F, -v s="$sys$([ "$loss" = 0 ] && echo -clean)" -v r="$rep" 'NR == 2 {
		printf "redundant\t%s\t%s\tp50\t%.1f\nredundant\t%s\t%s\tp99\t%.1f\n", s, r, 2 * $5, s, r, 2 * $6
		printf "redundant\t%s\t%s\tp999\t%.1f\nredundant\t%s\t%s\tmax\t%.1f\n", s, r, 2 * $11, s, r, 2 * $9 }' \
		"$name.csv" >>"$METRICS"
	log "   $sys, loss $loss%: round trip p50/p99/p99.9 $(awk -F, 'NR == 2 { printf "%.1f/%.1f/%.1f us", 2 * $5, 2 * $6, 2 * $11 }' "$name.csv")"
}
redundant_figure() { # REP
	local rep=$1 s order="ri2n-redundant ri2n tcp"
	[ $((rep % 2)) -eq 0 ] && order="tcp ri2n ri2n-redundant"
	sub_begin
	sub red_run ri2n "$rep" 0
	tb_fault loss 1 1 1 || { fail "tb_fault loss failed"; return; }
	for s in $order; do sub red_run "$s" "$rep" 1; done
	tb_fault loss 1 1 0
	sub_end
}
# The redundant-mode paragraph of summary.md
redundant_summary() {
	local s
	echo "## Redundant small messages: 8-byte request/response, 1% loss on one rail"
	echo
	echo "2 x GbE bed, host 1's port on rail 1 dropping 1% of frames each way; $RED_ITERS round trips per row" \
		"($((RED_ITERS / 5)) for TCP, whose every loss waits for its 200 ms RTO floor)," \
		"pinned, every echo checked. ri2n redundant: \`RI2N_REDUNDANT_BYTES=64\` at both ends (each packet of" \
		"a message up to 64 bytes also goes on the other rail); TCP runs on rail 1. Round trips in µs."
	echo
	echo "| system | loss on rail 1 | p50 | p99 | p99.9 | max | p99 / loss-free ri2n p99 |"
	echo "|---|---|---|---|---|---|---|"
	for s in ri2n-clean ri2n-redundant ri2n tcp; do
		[ -n "$(agg redundant $s p50)" ] || continue
		echo "| ${s%-clean} | $([ "$s" = ri2n-clean ] && echo 0% || echo 1%) | $(fmtv redundant $s p50 1) |" \
			"$(fmtv redundant $s p99 1) | $(fmtv redundant $s p999 1) | $(fmtv redundant $s max 1) |" \
			"$(ratio "$(med redundant $s p99)" "$(med redundant ri2n-clean p99)") |"
	done
	echo
}
