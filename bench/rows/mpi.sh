# shellcheck shell=bash
# bench/rows/mpi.sh - Open MPI rows: mpi (btl_ri2n beside btl_tcp, mtl/ofi, a black hole, 16 idle
# ranks: mpiidle), ompitcp (Open MPI's own btl/tcp under ri2n-run beside plain btl/tcp) and mpin
# (alltoall over 4 and 8 hosts, memory per peer). Sourced by bench/run.sh; writes mpi.csv and
# mpi_hosts.csv.

# ---- MPI: btl_ri2n next to Open MPI's btl_tcp ---------------------------------------------
# Two ranks, one in each host's namespace (tests/mpi/netns-launch.sh), reaching mpirun's PMIx
# server over the management bridge; tests/mpi/mpi_check checks every byte. Rows in mpi.csv.
MPI_CSV=$out/mpi.csv
echo "system,btl,rails,rep,lat8_median_us,stream_MBps,outcome" >"$MPI_CSV"
MPI_PATH="" MPI_CHECK="" MPI_WRAP="" MPI_TCP_PORTS=21000-21999
mpi_setup() {
	local d btl_dir="" sys
	need mpirun "apt-get install openmpi-bin" || return
	need mpicc "apt-get install libopenmpi-dev" || return
	# beside the programs given with --bin-dir first, else the bench's own build
	for d in "${bindir:+$bindir/../btl_ri2n}" "$ROOT/build-bench/ri2n/btl_ri2n" "$ROOT/build/btl_ri2n"; do
		[ -n "$d" ] && [ -f "$d/mca_btl_ri2n.so" ] && { btl_dir=$(cd "$d" && pwd); break; }
	done
	[ -n "$btl_dir" ] || { fail "mca_btl_ri2n.so is not built (Open MPI's development files missing?)"; return; }
	MPI_CHECK=$RAW/mpi_check
	mpicc -O2 -I"$ROOT/tools/kit" -o "$MPI_CHECK" "$ROOT/tests/mpi/mpi_check.c" 2>"$RAW/mpicc.log" ||
		{ fail "mpicc failed: $(head -c 300 "$RAW/mpicc.log")"; return; }
	# ours first, Open MPI's own directories after it (docs/MPI.md)
	sys=$(ompi_info --param mca base --level 9 --parsable 2>/dev/null |
		sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' | head -n 1)
	MPI_PATH=$btl_dir${sys:+:$sys}
	log "   btl_ri2n from $btl_dir; Open MPI $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p')"
}
mpi_kill() { # whatever still runs in the hosts' namespaces after a job is a leftover rank
	local p
	local h
	for ((h = 1; h <= ${BED_HOSTS:-2}; h++)); do
		for p in $(ip netns pids "$(hns $h)" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
}
# mpi_job OUT BTL RAILS SECONDS mpi_check-args...: MPI_NP ranks (default 2) over --mca btl
# BTL,self on RAILS, rank r on host r % BED_HOSTS + 1, killed after SECONDS
# (BTL ofi: pml cm and mtl/ofi over the ri2n provider instead of a BTL)
# (BTL tcpport: btl/tcp on the first of RAILS, its listening ports pinned to MPI_TCP_PORTS; with
# MPI_WRAP set, every rank runs under it, as ri2n-run --verbose --ports MPI_TCP_PORTS -- over RAILS)
mpi_job() {
	local o=$1 btl=$2 rails=$3 tmo=$4 rc path=()
	shift 4
	if [ "$btl" = ofi ]; then
		path=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ri2n --mca btl self
			-x FI_PROVIDER=ri2n -x FI_PROVIDER_PATH="$OFI_PROV" -x RI2N_RAILS="$rails")
	elif [ "$btl" = tcpport ]; then
		path=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "${rails%%,*}"
			--mca btl_tcp_port_min_v4 "${MPI_TCP_PORTS%-*}" --mca btl_tcp_port_range_v4 1000 -x RI2N_RAILS="$rails")
	else
		path=(--mca btl "$btl,self" --mca btl_ri2n_if_include "$rails" --mca btl_tcp_if_include "$rails")
	fi
	RI2N_MPI_NS_PREFIX="ri2n-$BED-h" RI2N_MPI_HOSTS=${BED_HOSTS:-2} PMIX_MCA_ptl_base_if_include=$(tb_mgmt_subnet) \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -s KILL "$tmo" mpirun --oversubscribe --bind-to none -np "${MPI_NP:-2}" \
		--mca mca_base_component_path "$MPI_PATH" "${path[@]}" \
		-x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS -x PMIX_MCA_ptl_base_if_include \
		"$ROOT/tests/mpi/netns-launch.sh" ${MPI_WRAP:+"$MPI_WRAP" --verbose --ports "$MPI_TCP_PORTS" --} "$MPI_CHECK" "$@" >"$o" 2>&1
	rc=$?
	mpi_kill
	return $rc
}
mpi_rails() { [ "${1#*-}" = 2r ] && echo r1,r2 || echo r1; } # SYS (ri2n-2r, tcp-1r, ...)
# mpi_perf SYS REP: 8-byte ping-pong latency and streaming bandwidth
mpi_perf() {
	local sys=$1 rep=$2 btl=${1%-*} rails name lat bw rc
	rails=$(mpi_rails "$sys")
	name=$RAW/mpi-$sys-$rep
	mpi_job "$name.out" "$btl" "$rails" $((MPI_SECS * 2 + 90)) \
		--phases latency,stream --bw-seconds "$MPI_SECS" --lat-iters "$MPI_ITERS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys: mpirun exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 3 | tr '\n' ' ' | head -c 300)"; return; }
	lat=$(sed -n 's/.*latency size=8 .* median_one_way_us=\([0-9.]*\).*/\1/p' "$name.out")
	bw=$(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$name.out")
	put mpi "$sys" "$rep" lat_us "$lat"
	put mpi "$sys" "$rep" mbps "$bw"
	echo "$sys,$btl,${rails//,/+},$rep,$lat,$bw,pass" >>"$MPI_CSV" # r1+r2: one CSV field
	log "   $(mpi_path_name "$sys") over $rails: 8 B one-way $lat us (median), stream $bw MB/s, every byte checked"
}
# mpi_blackhole SYS REP: streaming over both rails; rail 2 of host 1 silently black-holed
# MPI_FO_AT s into the stream and left so; a job that stops moving is killed MPI_HANG s
# after the stream should have ended, and reported as hung
mpi_blackhole() {
	local sys=$1 rep=$2 btl=${1%-*} name pid i t0 tf rc m
	name=$RAW/mpi-bh-$btl-$rep
	# (the shell's own "Killed" notice for a hung job is not wanted in the log)
	{ mpi_job "$name.out" "$btl" r1,r2 $((MPI_FO_SECS + MPI_HANG + 30)) \
		--phases stream --bw-seconds "$MPI_FO_SECS" --interval 0.1 2>/dev/null; } 2>/dev/null &
	pid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -q 'phase=stream start' "$name.out" 2>/dev/null && break
		sleep 0.05
	done
	t0=$(date +%s.%N)
	sleep "$MPI_FO_AT"
	tb_fault blackhole 1 2 on >/dev/null 2>&1 || { wait $pid; fail "could not black-hole rail 2"; return; }
	tf=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	# the stream ends MPI_FO_SECS after it began; past MPI_HANG s more the job is hung
	i=$(((MPI_FO_SECS + MPI_HANG) * 10))
	while kill -0 $pid 2>/dev/null && [ $i -gt 0 ]; do sleep 0.1; i=$((i - 1)); done
	kill -0 $pid 2>/dev/null && pkill -KILL -f "mpirun .*$MPI_CHECK" 2>/dev/null
	wait $pid
	rc=$?
	mpi_kill
	tb_fault blackhole 1 2 off >/dev/null 2>&1
	# receiver's intervals (t = end of the interval, s since the stream began there)
	m=$(awk -v tf="$tf" '/mpi_check stream rank=1 t=/ { split($4, a, "="); split($5, b, "="); t = a[2] + 0; v = b[2] + 0
			if (t <= tf) { sb += v; nb++ } else { if (mn == "" || v < mn) mn = v; sa += v; na++ }
			if (last != "" && t > tf && t - last > gap) gap = t - last; last = t }
		END { printf "%s %s %s %.0f %s", (nb ? sprintf("%.1f", sb / nb) : "-"), (na ? sprintf("%.1f", sa / na) : "-"),
			(mn == "" ? "-" : mn), gap * 1000, (last == "" ? "-" : last) }' "$name.out")
	local before after low gap last outcome
	read -r before after low gap last <<<"$m"
	if grep -q 'result=PASS' "$name.out" && [ $rc -eq 0 ]; then
		outcome=pass
		log "   $btl: PASS, every byte checked; black hole at ${tf} s into the stream; before $before MB/s," \
			"after it $after MB/s (mean of 100 ms intervals), lowest interval $low MB/s, longest interval ${gap} ms (100 while messages complete)"
	elif [ $rc -eq 137 ]; then # killed: by the wait above or by the job's own timeout
		outcome=hung
		log "   $btl: HUNG: no progress after ${last} s into the stream (black hole at ${tf} s); killed" \
			"$MPI_HANG s after the stream should have ended"
	else
		outcome="failed ($rc)"
		log "   $btl: FAILED, mpirun exited $rc: $(grep -v 'mpi_check stream' "$name.out" | tail -n 2 | tr '\n' ' ' | head -c 200)"
	fi
	put mpi-bh "$btl" "$rep" outcome "$outcome"
	put mpi-bh "$btl" "$rep" fault_s "$tf"
	put mpi-bh "$btl" "$rep" before "$before"
	[ "$outcome" = pass ] && { put mpi-bh "$btl" "$rep" after "$after"; put mpi-bh "$btl" "$rep" low "$low"; put mpi-bh "$btl" "$rep" gap_ms "$gap"; }
	[ "$outcome" = hung ] && put mpi-bh "$btl" "$rep" last_s "$last"
	echo "bh-$btl,$btl,r1+r2,$rep,,$after,$outcome" >>"$MPI_CSV"
	[ "$btl" = ri2n ] && [ "$outcome" != pass ] && { fail "btl_ri2n did not survive the black hole ($outcome)"; return 1; }
	return 0
}
mpi_figure() { # REP
	local rep=$1 s
	[ -n "$MPI_PATH" ] || { mpi_setup || return; }
	sub_begin
	for s in ri2n-2r ri2n-1r tcp-1r tcp-2r; do sub mpi_perf "$s" "$rep"; done
	# Open MPI's other way to ri2n: mtl/ofi over the provider (where Open MPI has mtl/ofi)
	if ompi_info 2>/dev/null | grep -q 'MCA mtl: ofi' && ofi_find_prov; then
		sub mpi_perf ofi-2r "$rep"
	else
		log "   mtl/ofi: left out (Open MPI without mtl/ofi, or libri2n-fi.so not built)"
	fi
	for s in ri2n tcp; do sub mpi_blackhole "$s" "$rep"; done
	# not in --smoke (a ctest): 16 ranks take ~15 s, and tests/mpi's idle-eight covers the code
	[ "$rep" = 1 ] && [ "$mode" != smoke ] && sub mpi_idle "$rep"
	sub_end
}
# ---- Open MPI's own btl/tcp under ri2n-run beside plain btl/tcp (row ompitcp) ---------------
# docs/MPI.md's recipe: btl/tcp on rail 1, its ports pinned, each rank under ri2n-run --ports
# (that one connection per peer striped over both rails), against the same job without
# ri2n-run; REAL_ROUNDS rounds, the two alternating which goes first; 8-byte latency only.
ompitcp_perf() { # SYS(ri2n|tcp) ROUND
	local sys=$1 r=$2 name lat rc wrap=""
	name=$RAW/ompitcp-$sys-$r
	[ "$sys" = ri2n ] && wrap=$(ri2n_run_bin)
	MPI_WRAP=$wrap mpi_job "$name.out" tcpport "$([ "$sys" = ri2n ] && echo r1,r2 || echo r1)" 120 \
		--phases latency --lat-iters "$MPI_ITERS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "btl/tcp ($sys): mpirun exited $rc: $(tail -n 3 "$name.out" | tr '\n' ' ' | head -c 300)"; return; }
	lat=$(sed -n 's/.*latency size=8 .* median_one_way_us=\([0-9.]*\).*/\1/p' "$name.out")
	[ -n "$lat" ] || { fail "btl/tcp ($sys): no 8-byte latency in the output"; return; }
	# under ri2n-run, both ranks' connection must be ri2n's (ri2n-run --verbose), none left TCP
	if [ "$sys" = ri2n ]; then
		[ "$(grep -c '\(connect to\|accepted\) 198\.18\.[12]\..* over ri2n' "$name.out")" -ge 2 ] && ! grep -q 'connect to 198\.18\.[12]\..* stays TCP' "$name.out" ||
			{ fail "btl/tcp under ri2n-run: the ranks' connection is not over ri2n: $(grep -m2 'ri2n-run\[' "$name.out" | tr '\n' ' ')"; return; }
	fi
	put ompitcp "$sys" "$r" lat_us "$lat"
	echo "ompitcp-$([ "$sys" = ri2n ] && echo ri2n-run || echo plain),tcp,$([ "$sys" = ri2n ] && echo r1+r2 || echo r1),$r,$lat,,pass" >>"$MPI_CSV"
	log "   btl/tcp $([ "$sys" = ri2n ] && echo "under ri2n-run (r1,r2)" || echo "plain (r1)"): 8 B one-way $lat us (median), every byte checked"
}
ompitcp_figure() {
	local round r sys order
	[ -n "$MPI_PATH" ] || { mpi_setup || return; }
	ri2n_run_bin >/dev/null || { fail "ri2n-run is not built"; return; }
	sub_begin
	for ((round = 1; round <= REAL_ROUNDS; round++)); do
		r=1.$round
		order=$(round_order "$round" tcp ri2n)
		for sys in $order; do sub ompitcp_perf "$sys" "$r"; done
	done
	sub_end
}
ompitcp_summary() {
	echo "## MPI: Open MPI's own btl/tcp under ri2n-run next to plain btl/tcp"
	echo
	echo "2 ranks, one per host, on the 2 x GbE bed; \`--mca pml ob1 --mca btl tcp,self\`, btl/tcp on rail 1 with" \
		"its ports pinned ($MPI_TCP_PORTS); under ri2n-run (\`--ports $MPI_TCP_PORTS\`, RI2N_RAILS=r1,r2) each" \
		"rank's connection is striped over both rails. 8-byte ping-pong, median of $MPI_ITERS round trips halved" \
		"(busy-polling), every byte checked; $REAL_ROUNDS round(s), the two alternating which goes first; median" \
		"[min–max] over rounds, and of the ratio taken in each round. Target (issue 34): <= 1.3x plain."
	echo
	echo "| btl/tcp plain, r1 (µs) | under ri2n-run, r1,r2 (µs) | ri2n-run / plain, per round |"
	echo "|---|---|---|"
	echo "| $(fmtv ompitcp tcp lat_us 2) | $(fmtv ompitcp ri2n lat_us 2) | $(fmtr ompitcp ri2n tcp lat_us) |"
	echo
}
ompitcp_targets() {
	[ -n "$(agg ompitcp ri2n lat_us)" ] || return 0
	echo "| Open MPI btl/tcp under ri2n-run, 8-byte latency <= 1.3x plain btl/tcp (median of the rounds' ratios) |" \
		"$(fmtv ompitcp ri2n lat_us 2) vs $(fmtv ompitcp tcp lat_us 2) µs: $(fmtr ompitcp ri2n tcp lat_us) |" \
		"$(verdict "$(numcmp "$(rounds_med ompitcp ri2n tcp lat_us)" "<=" 1.3)") |"
}

mpi_idle_alone() { [ -n "$MPI_PATH" ] || { mpi_setup || return; }; mpi_idle 1; }
# Datagrams host 1 sent and received on its rails (with 2 hosts: all between the two).
mpi_rail_dgrams() {
	ip netns exec "$(hns 1)" awk '/^ *r[0-9]+:/ { sub(/^ *r[0-9]+: */, ""); n += $2 + $10 }
		END { print n + 0 }' /proc/net/dev
}
# mpi_idle REP: 16 ranks, 8 per host, over ri2n,self on both rails; one checked message each
# way between every pair (every link open), then 8 s without MPI calls (mpi_check --phases
# idle): datagrams a second on the rails between the two hosts over 5 s of it, from 2.5 s in
# (past the idle pace's start, 1 s without DATA). The same as tests/mpi/run_mpi.sh idle 16.
mpi_idle() {
	local rep=$1 pid a b i
	local o=$RAW/mpi-idle-$rep.out
	OMPI_MCA_btl_ri2n_verbose=1 MPI_NP=16 mpi_job "$o" ri2n r1,r2 180 --phases idle --idle-seconds 8 &
	pid=$!
	for ((i = 0; i < 1500; i++)); do
		grep -q 'phase=idle start' "$o" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2.5
	a=$(mpi_rail_dgrams)
	sleep 5
	b=$(mpi_rail_dgrams)
	wait "$pid" || { fail "16 idle ranks: mpirun failed (status $?)"; return; }
	grep -q 'mpi_check result=PASS' "$o" || { fail "16 idle ranks: mpi_check did not pass"; return; }
	put mpi-idle ri2n-16 "$rep" dgrams_per_s $(((b - a) / 5))
	put mpi-idle ri2n-16 "$rep" rail_downs "$(grep -c 'btl_ri2n: .*rail .* down' "$o")"
}

# The MPI section of summary.md
mpi_path_name() { [ "${1%-*}" = ofi ] && echo "(pml cm, mtl ofi, ri2n provider)" || echo "${1%-*},self"; }
mpi_summary() {
	local s b
	echo "## MPI: Open MPI 4.1, btl_ri2n next to btl_tcp, and mtl/ofi over the ri2n provider"
	echo
	echo "2 ranks, one per host, on the 2 x GbE bed; \`mpi_check\` (tests/mpi) checks every byte. Latency:" \
		"8-byte ping-pong, median of $MPI_ITERS round trips halved (MPI polls: this is busy-polling latency," \
		"not comparable with the blocking figures above). Stream: 1 MiB messages, 16 in flight, for $MPI_SECS s."
	echo
	echo "| path (--mca btl, or pml cm with mtl ofi) | rails | 8-byte one-way latency (µs) | stream (MB/s) | latency / btl_tcp on r1 | stream / btl_tcp on the same rails |"
	echo "|---|---|---|---|---|---|"
	for s in ri2n-2r ri2n-1r tcp-1r tcp-2r ofi-2r; do
		[ -n "$(agg mpi $s mbps)" ] || continue
		b=tcp-${s#*-}
		echo "| $(mpi_path_name "$s") | $(mpi_rails $s) | $(fmtv mpi $s lat_us 2) | $(fmtv mpi $s mbps 1) |" \
			"$(ratio "$(med mpi $s lat_us)" "$(med mpi tcp-1r lat_us)") | $(ratio "$(med mpi $s mbps)" "$(med mpi $b mbps)") |"
	done
	echo
	if [ -n "$(awk -F'\t' '$1 == "mpi-bh"' "$METRICS")" ]; then
		echo "Black hole: both rails in use (\`btl_ri2n_if_include\` / \`btl_tcp_if_include r1,r2\`), rail 2 of host 1" \
			"silently black-holed about $MPI_FO_AT s into a $MPI_FO_SECS s stream and left so; a job still running" \
			"$MPI_HANG s after its stream should have ended is killed and called hung. Intervals are 100 ms at the receiver."
		echo
		echo "| --mca btl | outcome | black hole at (s into the stream) | stream before (MB/s) | after: mean of intervals | lowest interval | longest interval (ms; 100 while messages complete) | last progress (s into the stream) |"
		echo "|---|---|---|---|---|---|---|---|"
		for b in ri2n tcp; do
			[ -n "$(awk -F'\t' -v b=$b '$1 == "mpi-bh" && $2 == b' "$METRICS")" ] || continue
			echo "| $b,self | $(awk -F'\t' -v b=$b '$1 == "mpi-bh" && $2 == b && $4 == "outcome" { printf "%s%s", n++ ? ", " : "", $5 }' "$METRICS") |" \
				"$(fmtv mpi-bh $b fault_s 2) | $(fmtv mpi-bh $b before 1) | $(fmtv mpi-bh $b after 1) | $(fmtv mpi-bh $b low 1) |" \
				"$(fmtv mpi-bh $b gap_ms) | $(fmtv mpi-bh $b last_s 2) |"
		done
		echo
	fi
}

# ---- MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer ---------------------
# One rank per host on beds of 4 and 8 hosts (2 rails x 1 Gbit/s each, one switch per rail);
# mpi_check's alltoall phase (blocks of 1 KiB, which also opens every connection, then 256 KiB,
# every byte checked) gives MB/s per rank: a rank's 256 KiB blocks to the others over the time
# the slowest rank spent in MPI_Alltoall, over MPIN_A2A_ROUNDS rounds (quick 100, full 200).
# 8 rounds are 20-40 ms of transfer on 4 hosts: on a shared 2-core machine one rank held off
# the CPU for a few ms moves either figure 2x, and ri2n / btl_tcp went from 0.2 to 2.3 between
# runs of one build; over 200 rounds (1-2 s) it stayed within 0.9-1.7 (4 runs each of main and
# of the code before the congestion controller: medians 1.17 and 1.25). Memory: 2 ranks per
# host on the 8-host bed (15 peers),
# mpi_check's memory phase (Pss growth per peer: idle, busy, rested). Rows in mpi_hosts.csv.
MPIN_CSV=$out/mpi_hosts.csv
echo "figure,system,hosts,ranks,rep,metric,value" >"$MPIN_CSV"
mpin_bed() { # HOSTS
	local tag
	tag=$(bed_tag "bn$1h")
	[ -n "$BED" ] && drop_bed
	tb_use "$tag"
	tb_exists && tb_destroy >/dev/null 2>&1
	log "   test bed $tag: $1 hosts, 2 rails x 1 Gbit/s (namespaces ri2n-$tag-*)"
	tb_create --hosts "$1" --rails 2 --rate 1gbit >"$RAW/bed-$tag.log" 2>&1 ||
		{ fail "could not create test bed $tag: $(tail -n 2 "$RAW/bed-$tag.log" | tr '\n' ' ')"; return 1; }
	tb_cleanup_on_exit "$tag"
	BED=$tag BED_RAILS=2 BED_HOSTS=$1
}
# mpin_alltoall SYS REP (SYS: ri2n-2r, tcp-2r, tcp-1r)
mpin_alltoall() {
	local sys=$1 rep=$2 btl=${1%-*} rails name rc v
	rails=$(mpi_rails "$sys")
	name=$RAW/mpin-a2a-$sys-h$BED_HOSTS-$rep
	MPI_NP=$BED_HOSTS mpi_job "$name.out" "$btl" "$rails" 240 --phases alltoall --rounds "$MPIN_A2A_ROUNDS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$sys on $BED_HOSTS hosts: mpirun exited $rc: $(tail -n 3 "$name.out" | tr '\n' ' ' | head -c 300)"; return; }
	v=$(sed -n 's/.*alltoall block=262144 .* MBps_per_rank=\([0-9.]*\).*/\1/p' "$name.out")
	put "mpin-a2a-h$BED_HOSTS" "$sys" "$rep" mbps "$v"
	echo "alltoall,$sys,$BED_HOSTS,$BED_HOSTS,$rep,MBps_per_rank,$v" >>"$MPIN_CSV"
	log "   $btl over $rails, $BED_HOSTS ranks on $BED_HOSTS hosts: alltoall of 256 KiB blocks $v MB/s per rank, every byte checked"
}
# mpin_memory BTL REP: 2 ranks per host
mpin_memory() {
	local btl=$1 rep=$2 np=$((BED_HOSTS * 2)) name rc k v line
	name=$RAW/mpin-mem-$btl-$rep
	MPI_NP=$np mpi_job "$name.out" "$btl" r1,r2 240 --phases memory --rounds "$MPIN_ROUNDS"
	rc=$?
	[ $rc -eq 0 ] && grep -q 'result=PASS' "$name.out" ||
		{ fail "$btl memory: mpirun exited $rc: $(tail -n 3 "$name.out" | tr '\n' ' ' | head -c 300)"; return; }
	line=$(grep -m1 'mpi_check memory peers=' "$name.out")
	for k in idle busy rested; do
		v=$(sed -n "s/.* ${k}_kib_per_peer=\([0-9.-]*\).*/\1/p" <<<"$line")
		put mpin-mem "$btl" "$rep" "$k" "$v"
		echo "memory,$btl,$BED_HOSTS,$np,$rep,${k}_KiB_per_peer,$v" >>"$MPIN_CSV"
	done
	log "   $btl, $np ranks on $BED_HOSTS hosts: Pss growth per peer ${line#*peers=} (KiB)"
}
mpin_figure() { # REP
	local rep=$1 h s
	[ -n "$MPI_PATH" ] || { mpi_setup || return; }
	sub_begin
	for h in 4 8; do
		mpin_bed "$h" || { sub_end; return 1; }
		for s in ri2n-2r tcp-2r $([ "$mode" = full ] && echo tcp-1r); do sub mpin_alltoall "$s" "$rep"; done
		if [ "$h" = 8 ]; then
			for s in ri2n tcp; do sub mpin_memory "$s" "$rep"; done
		fi
		drop_bed
	done
	sub_end
}
# The many-hosts MPI paragraph of summary.md
mpin_summary() {
	local h s
	echo "## MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer"
	echo
	echo "One rank per host, 2 rails x 1 Gbit/s per host (one switch per rail); \`mpi_check --phases alltoall\`" \
		"($MPIN_A2A_ROUNDS rounds of 256 KiB blocks, every byte checked). MB/s per rank: the bytes a rank sends to the" \
		"others over the time the slowest rank spent in MPI_Alltoall. btl/tcp on r1,r2 stripes over both rails."
	echo
	echo "| hosts | --mca btl | rails | alltoall (MB/s per rank) | / btl_tcp on r1,r2 |"
	echo "|---|---|---|---|---|"
	for h in 4 8; do
		for s in ri2n-2r tcp-2r tcp-1r; do
			[ -n "$(agg "mpin-a2a-h$h" $s mbps)" ] || continue
			echo "| $h | ${s%-*},self | $(mpi_rails $s) | $(fmtv "mpin-a2a-h$h" $s mbps 1) |" \
				"$(ratio "$(med "mpin-a2a-h$h" $s mbps)" "$(med "mpin-a2a-h$h" tcp-2r mbps)") |"
		done
	done
	echo
	if [ -n "$(agg mpin-mem ri2n idle)" ]; then
		echo "Memory: 16 ranks on the 8-host bed (15 peers each), \`mpi_check --phases memory\`: growth of each" \
			"rank's Pss per peer, the largest over the ranks, after one 64-byte message each way with every peer" \
			"and 3 s of rest (idle), right after $MPIN_ROUNDS alltoalls of 256 KiB blocks (busy), and after 3 s of" \
			"rest again (rested). It includes Open MPI's own per-peer state. Target: idle <= 256 KiB."
		echo
		echo "| --mca btl | idle (KiB/peer) | busy (KiB/peer) | rested (KiB/peer) |"
		echo "|---|---|---|---|"
		for s in ri2n tcp; do
			[ -n "$(agg mpin-mem $s idle)" ] || continue
			echo "| $s,self | $(fmtv mpin-mem $s idle 1) | $(fmtv mpin-mem $s busy 1) | $(fmtv mpin-mem $s rested 1) |"
		done
		echo
	fi
}
