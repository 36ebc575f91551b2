# shellcheck shell=bash
# bench/rows/mpich.sh - the mpich row: MPICH under ri2n-run beside plain UCX tcp, in alternating
# rounds. Sourced by bench/run.sh; its rows go to mpi.csv (mpich-*).

# ---- MPI: MPICH 4 under ri2n-run next to plain UCX tcp on one rail -------------------------
# Two ranks, one per host (hydra's mpiexec.mpich; tests/mpi/netns-launch.sh reads PMI_RANK);
# Debian's MPICH is ch4:ucx: UCX's tcp transport on rail r1 (UCX_NET_DEVICES), its ports pinned
# to MPICH_PORTS; each rank runs under ri2n-run (that one connection striped over both rails)
# or plain (the baseline: one rail). mpi_check checks every byte. Rows in mpi.csv (mpich-*).
MPICH_CHECK="" MPICH_RR="" MPICH_PORTS=21000-21999
mpich_job() { # OUT ri2n|plain SECONDS mpi_check-args...
	local o=$1 how=$2 tmo=$3 run=() rc
	shift 3
	[ "$how" = ri2n ] && run=("$MPICH_RR" --ports "$MPICH_PORTS" --)
	RI2N_MPI_NS_PREFIX="ri2n-$BED-h" RI2N_MPI_HOSTS=2 RI2N_RAILS="$(rails_list)" \
	UCX_TLS=tcp,self UCX_NET_DEVICES=r1 UCX_TCP_PORT_RANGE=$MPICH_PORTS MPIR_CVAR_NOLOCAL=1 \
		timeout -s KILL "$tmo" mpiexec.mpich -launcher fork -n 2 \
		"$ROOT/tests/mpi/netns-launch.sh" "${run[@]}" "$MPICH_CHECK" "$@" >"$o" 2>&1 &
	local pid=$! i=0 hung=0
	# PASS comes after a barrier that follows every check; UCX's tcp transport sometimes
	# hangs in MPI_Finalize after it (with or without ri2n-run; tests/mpi/run_ri2n_run.sh).
	# (Noted in a variable: a line appended to OUT is overwritten by mpiexec's own
	# report of the killed ranks, written at its own offset.)
	while kill -0 $pid 2>/dev/null; do
		if [ $hung -eq 0 ] && grep -q 'result=PASS' "$o" 2>/dev/null && ((i++ >= 50)); then
			mpi_kill
			hung=1
		fi
		sleep 0.1
	done
	wait $pid
	rc=$?
	[ $hung -eq 1 ] && { echo "finalize hung, killed" >>"$o"; rc=0; }
	mpi_kill
	return $rc
}
mpich_perf() { # SYS(mpich-ri2n-run|mpich-ucx-tcp) REP
	local sys=$1 rep=$2 how=plain name lat bw rc
	[ "$sys" = mpich-ri2n-run ] && how=ri2n
	name=$RAW/$sys-$rep
	mpich_job "$name.out" "$how" $((MPI_SECS * 2 + 90)) \
		--phases latency,stream --bw-seconds "$MPI_SECS" --lat-iters "$MPI_ITERS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys: mpiexec exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 3 | tr '\n' ' ' | head -c 300)"; return; }
	lat=$(sed -n 's/.*latency size=8 .* median_one_way_us=\([0-9.]*\).*/\1/p' "$name.out")
	bw=$(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$name.out")
	put mpich "$sys" "$rep" lat_us "$lat"
	put mpich "$sys" "$rep" mbps "$bw"
	echo "$sys,ucx-tcp,$([ "$how" = ri2n ] && echo r1+r2 || echo r1),$rep,$lat,$bw,pass" >>"$MPI_CSV"
	log "   $sys: 8 B one-way $lat us (median), stream $bw MB/s, every byte checked"
}
# mpich_figure REP: REAL_ROUNDS rounds, plain and ri2n-run alternating which goes first, so both
# see the same machine
mpich_figure() {
	local round r order s
	need mpiexec.mpich "apt-get install mpich" || return
	need mpicc.mpich "apt-get install libmpich-dev" || return
	MPICH_RR=$(ri2n_run_bin) || { fail "ri2n-run is not built"; return; }
	if [ -z "$MPICH_CHECK" ]; then
		MPICH_CHECK=$RAW/mpi_check_mpich
		mpicc.mpich -O2 -Wno-stringop-overflow -I"$ROOT/tools/kit" -o "$MPICH_CHECK" \
			"$ROOT/tests/mpi/mpi_check.c" 2>"$RAW/mpicc-mpich.log" ||
			{ MPICH_CHECK=""; fail "mpicc.mpich failed: $(head -c 300 "$RAW/mpicc-mpich.log")"; return; }
	fi
	sub_begin
	for ((round = 1; round <= REAL_ROUNDS; round++)); do
		r=$1; [ "$REAL_ROUNDS" -gt 1 ] && r=$1.$round
		order=$(round_order "$round" mpich-ucx-tcp mpich-ri2n-run)
		for s in $order; do sub mpich_perf "$s" "$r"; done
	done
	sub_end
}
mpich_summary() {
	echo "## MPI: MPICH 4 under ri2n-run next to plain UCX tcp"
	echo
	echo "2 ranks, one per host, on the 2 x GbE bed; MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p')" \
		"(ch4:ucx) over UCX's tcp transport on rail r1; \`mpi_check\` checks every byte. Under ri2n-run" \
		"UCX's connection is striped over both rails. Latency: 8-byte ping-pong, median of $MPI_ITERS" \
		"round trips halved (busy-polling). Stream: 1 MiB messages, 16 in flight, for $MPI_SECS s. $REAL_ROUNDS" \
		"round(s), the two alternating which goes first; median [min–max] over rounds, and of the ratio taken" \
		"in each round. Target (issue 34): latency <= 1.3x plain."
	echo
	echo "| path | rails | 8-byte one-way latency (µs) | stream (MB/s) | latency / plain, per round | stream / plain, per round |"
	echo "|---|---|---|---|---|---|"
	local s
	for s in mpich-ri2n-run mpich-ucx-tcp; do
		[ -n "$(agg mpich $s mbps)" ] || continue
		echo "| $([ $s = mpich-ri2n-run ] && echo 'UCX tcp under ri2n-run' || echo 'UCX tcp, plain') |" \
			"$([ $s = mpich-ri2n-run ] && echo r1,r2 || echo r1) | $(fmtv mpich $s lat_us 2) | $(fmtv mpich $s mbps 1) |" \
			"$(fmtr mpich $s mpich-ucx-tcp lat_us) | $(fmtr mpich $s mpich-ucx-tcp mbps) |"
	done
	echo
}
mpich_targets() {
	[ -n "$(agg mpich mpich-ri2n-run lat_us)" ] || return 0
	echo "| MPICH (UCX tcp) under ri2n-run, 8-byte latency <= 1.3x plain (median of the rounds' ratios) |" \
		"$(fmtv mpich mpich-ri2n-run lat_us 2) vs $(fmtv mpich mpich-ucx-tcp lat_us 2) µs: $(fmtr mpich mpich-ri2n-run mpich-ucx-tcp lat_us) |" \
		"$(verdict "$(numcmp "$(rounds_med mpich mpich-ri2n-run mpich-ucx-tcp lat_us)" "<=" 1.3)") |"
}
