#!/usr/bin/env bash
# bench/run.sh - ri2n side by side with single-rail TCP, MPTCP, plain UDP/TCP latency.
#
#   bench/run.sh [--quick | --smoke] [--reps N] [--out DIR] [--only LIST] [--bin-dir DIR] [--keep]
#
#   (default)  the full run: every figure 3 times, median and spread (about 35 minutes)
#   --quick    every figure once, shorter runs (about 8 minutes on 2 cores)
#   --smoke    tiny sizes, about a minute; exits non-zero if any program fails (ctest, root)
#   --reps N   repetitions of each figure (full: 3, quick and smoke: 1)
#   --out DIR  where results go (default bench/results; smoke: a temporary directory)
#   --only L   a comma-separated subset of: tp2,tp4,v6,veth,degraded,loss,failover,mtuhole,jumbo,mixed,
#              latency,redundant,mpi,mpin,incast,kv,close,web,cache,fork,iperf,mem,ofi,mpich,ompitcp (hole: mem's
#              black-hole row alone; mpiidle: mpi's 16 idle ranks alone)
#   --bin-dir D  use ri2n-stream, ri2n-pingpong (and D/ri2n/tools/ri2n-xfer if there) from D,
#              or from the build tree D (D/ri2n/bench, D/bench), instead of building them
#              (cmake -S bench -B build-bench)
#   --keep     keep the per-run logs (OUT/raw) even after a successful smoke run
#
# RI2N_BENCH_BED=P (or RI2N_BENCH_BED_PREFIX=P) names the beds P2g, P4g, P2u... instead of
# bn2g... (a session sharing the machine with another bench run; P is 1-2 characters of [a-z0-9]).
#
# Needs root (network namespaces). Builds, makes test beds with tools/ri2n-testbed.sh (rails
# 198.18.<i>.0/24 in namespaces ri2n-bN*-*, or ri2n-XN*-* with RI2N_BENCH_BED=X; nothing else is
# touched) and writes OUT/summary.md, throughput.csv, latency.csv, failover.csv,
# failover_events.csv, mtuhole.csv, mtuhole_events.csv, failover.png, latency.png, redundant.csv, mpi.csv, mpi_hosts.csv, kv.csv, close.csv, real.csv. bench/README.md says what each figure means. A step that fails is reported in summary.md
# with its reason and the run goes on; the beds are removed on exit, failure or Ctrl-C.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TESTBED=$ROOT/tools/ri2n-testbed.sh

mode=full reps="" out="" only="" bindir="" keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) mode=quick ;;
	--smoke) mode=smoke ;;
	--full) mode=full ;;
	--reps) reps=${2:?--reps N}; shift ;;
	--out) out=${2:?--out DIR}; shift ;;
	--only) only=${2:?--only LIST}; shift ;;
	--bin-dir) bindir=${2:?--bin-dir DIR}; shift ;;
	--keep) keep=1 ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

if [ "$(id -u)" -ne 0 ]; then
	echo "bench/run.sh: needs root (it makes network namespaces)"
	[ "$mode" = smoke ] && exit 77 # ctest's "skipped"
	exit 1
fi

# ---- what each mode runs ---------------------------------------------------------------
case $mode in
full)
	: "${reps:=3}"
	TP_SECS=10 SINGLE_SECS=10 FO_SECS=12 FO_FAULT=3 FO_HEAL=8
	RED_ITERS=20000
	PP_ITERS=2000 PP_BUDGET=64M PP_SIZES=$(awk 'BEGIN { for (i = 0; i <= 20; i++) printf "%s%d", (i ? "," : ""), 2 ^ i }') SP_SECS=2
	SP_SIZES_UDP="14 64 256 1024 1472" SP_SIZES_TCP="14 64 256 1024 1472 4096 16384"
	BUSY_SIZES="8,1k,64k"
	LAT_ROUNDS=1 LAT_ROUND_SIZES="1,8,64"
	KV_ROUNDS=5 KV_N_PIPE=3000000 KV_N=200000 KV_N_1000=200000
	MPI_SECS=5 MPI_ITERS=30000 MPI_FO_SECS=8 MPI_FO_AT=2 MPI_HANG=20 MPIN_ROUNDS=20 MPIN_A2A_ROUNDS=200
	OFI_ITERS=1000
	;;
quick)
	: "${reps:=1}"
	TP_SECS=5 SINGLE_SECS=4 FO_SECS=12 FO_FAULT=3 FO_HEAL=8
	RED_ITERS=10000
	PP_ITERS=1000 PP_BUDGET=16M PP_SIZES="1,8,64,512,4k,32k,256k,1M" SP_SECS=1
	SP_SIZES_UDP="14 1024" SP_SIZES_TCP="14 1024"
	BUSY_SIZES=""
	LAT_ROUNDS=3 LAT_ROUND_SIZES="1,8,64"
	KV_ROUNDS=5 KV_N_PIPE=1000000 KV_N=60000 KV_N_1000=60000
	MPI_SECS=3 MPI_ITERS=10000 MPI_FO_SECS=6 MPI_FO_AT=2 MPI_HANG=15 MPIN_ROUNDS=8 MPIN_A2A_ROUNDS=100
	OFI_ITERS=200
	;;
smoke)
	: "${reps:=1}"
	TP_SECS=1 SINGLE_SECS=1 FO_SECS=4 FO_FAULT=1 FO_HEAL=2.5
	RED_ITERS=500
	PP_ITERS=50 PP_BUDGET=4M PP_SIZES="1,8,1k,64k,1M" SP_SECS=1
	SP_SIZES_UDP="14" SP_SIZES_TCP="14"
	BUSY_SIZES=""
	LAT_ROUNDS=1 LAT_ROUND_SIZES="8"
	KV_ROUNDS=1 KV_N_PIPE=50000 KV_N=5000 KV_N_1000=5000
	MPI_SECS=1 MPI_ITERS=1000 MPI_FO_SECS=3 MPI_FO_AT=1 MPI_HANG=5 MPIN_ROUNDS=2 MPIN_A2A_ROUNDS=2
	OFI_ITERS=20
	: "${only:=tp2,failover,latency,mpi,web,cache,fork,iperf,ompitcp}"
	;;
esac
if [ -z "$out" ]; then
	if [ "$mode" = smoke ]; then out=$(mktemp -d /tmp/ri2n-bench-smoke.XXXXXX); else out=$HERE/results; fi
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
RAW=$out/raw
rm -rf "$RAW"
rm -f "$out"/{summary.md,throughput.csv,latency.csv,redundant.csv,failover.csv,failover_events.csv,mtuhole.csv,mtuhole_events.csv,failover.png,latency.png,mpi.csv,kv.csv,close.csv,real.csv,ofi.csv}
mkdir -p "$RAW"
: "${only:=tp2,tp4,v6,veth,degraded,loss,failover,mtuhole,jumbo,mixed,latency,redundant,mpi,mpin,incast,kv,close,web,cache,fork,iperf,mem,ofi,mpich,ompitcp}"
want() { [[ ",$only," == *",$1,"* ]]; }

START=$(date +%s)
START_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[%4ds] %s\n' "$(($(date +%s) - START))" "$*"; }

# The shared helpers (bench/lib.sh), one file per row family (bench/rows/), the report (bench/report.sh)
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# ---- results: one metrics file, aggregated at the end --------------------------------------
METRICS=$RAW/metrics.tsv
: >"$METRICS"

# ---- tools ---------------------------------------------------------------------------------
log "ri2n bench, mode $mode, $reps repetition(s), figures: $only; results in $out"
if [ "$mode" != smoke ]; then
	log "== dependencies (tools/deps.sh --bench, mptcpize)"
	"$ROOT/tools/deps.sh" --bench || log "   tools/deps.sh failed: steps needing missing tools will fail"
	if ! command -v mptcpize >/dev/null; then
		log "   installing mptcpize (Debian package mptcpize)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mptcpize >/dev/null 2>&1 ||
			log "   could not install mptcpize: the MPTCP steps will fail"
	fi
fi

if [ -n "$bindir" ]; then
	# the programs' own folder, or a build tree holding them (build-bench, build)
	for d in "$bindir" "$bindir/ri2n/bench" "$bindir/bench"; do
		[ -x "$d/ri2n-stream" ] && { bindir=$d; break; }
	done
	STREAM=$bindir/ri2n-stream PINGPONG=$bindir/ri2n-pingpong
	step "build (using $bindir)" true
else
	build() {
		log "   cmake -S bench -B build-bench (the library, tools and bench programs)"
		cmake -S "$HERE" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$RAW/build.log" 2>&1 &&
			cmake --build "$ROOT/build-bench" -j"$(nproc)" >>"$RAW/build.log" 2>&1 ||
			fail "build failed: $(grep -m3 -iE 'error' "$RAW/build.log" | tr '\n' ' ')"
	}
	step "build" build
	# the project's top level includes bench/ itself, so the programs land in its
	# bench/ folder of the build (ri2n/bench), not at the top of build-bench
	STREAM=$ROOT/build-bench/ri2n/bench/ri2n-stream PINGPONG=$ROOT/build-bench/ri2n/bench/ri2n-pingpong
fi
if [ ! -x "$STREAM" ] || [ ! -x "$PINGPONG" ]; then
	log "no bench programs ($STREAM, $PINGPONG): nothing to run"
	record_step "bench programs present" failed "missing $STREAM or $PINGPONG"
fi

# ---- test beds and processes, removed on exit ---------------------------------------------
# shellcheck source=../tools/ri2n-testbed.sh
source "$TESTBED"
set +e # the test bed library is sourced; failures here are handled step by step
tb_on_exit kill_bg

# ---- the rows: each file defines its figures and starts its CSV files -----------------------
# shellcheck source=rows/throughput.sh
source "$HERE/rows/throughput.sh"
# shellcheck source=rows/redundant.sh
source "$HERE/rows/redundant.sh"
# shellcheck source=rows/failover.sh
source "$HERE/rows/failover.sh"
# shellcheck source=rows/latency.sh
source "$HERE/rows/latency.sh"
# shellcheck source=rows/apps.sh
source "$HERE/rows/apps.sh"
# shellcheck source=rows/real.sh
source "$HERE/rows/real.sh"
# shellcheck source=rows/mpi.sh
source "$HERE/rows/mpi.sh"
# shellcheck source=rows/incast.sh
source "$HERE/rows/incast.sh"
# shellcheck source=rows/ofi.sh
source "$HERE/rows/ofi.sh"
# shellcheck source=rows/mpich.sh
source "$HERE/rows/mpich.sh"
# shellcheck source=rows/conns.sh
source "$HERE/rows/conns.sh"
# shellcheck source=report.sh
source "$HERE/report.sh"

# ---- the run -------------------------------------------------------------------------------
if [ -x "$STREAM" ] && [ -x "$PINGPONG" ]; then
	if want tp2 || want degraded || want loss || want failover || want mtuhole || want latency || want redundant || want mpi || want mpiidle || want kv || want close || want web || want cache || want fork || want ofi || want mpich || want ompitcp; then
		step "test bed: 2 rails x 1 Gbit/s" bed_step bn2g 2 1gbit
		if [ "$BED" = "$(bed_tag bn2g)" ]; then
			for rep in $(seq "$reps"); do
				want tp2 && step "goodput, 2 x GbE (rep $rep)" tp_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, with a cluster key (rep $rep)" keyed_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, with a cluster key, integrity only (rep $rep)" authonly_figure tp2 "$rep"
				want tp2 && step "goodput, 2 x GbE, unmodified iperf3 under ri2n-run (rep $rep)" runiperf_figure tp2 "$rep"
				want degraded && step "goodput, degraded pair 1 Gbit/s + 250 Mbit/s (rep $rep)" degraded_figure "$rep"
				if want loss; then
					step "goodput, 1% loss on every rail (rep $rep)" loss_figure "$rep" 1
					step "goodput, 5% loss on every rail (rep $rep)" loss_figure "$rep" 5
				fi
				if want failover; then
					step "failover, ri2n: rail 2 black-holed at ${FO_FAULT} s, healed at ${FO_HEAL} s (rep $rep)" failover ri2n "$rep"
					if [ "$mode" = smoke ] && ! have mptcpize; then
						record_step "failover, mptcp (rep $rep)" skipped "mptcpize is not installed"
					else
						step "failover, MPTCP: the same (rep $rep)" failover mptcp "$rep"
					fi
				fi
				if want mtuhole; then
					step "MTU black hole, ri2n: rail 2 drops IP packets over 1000 bytes from ${FO_FAULT} s to ${FO_HEAL} s (rep $rep)" failover ri2n "$rep" mtuhole
					if [ "$mode" = smoke ] && ! have mptcpize; then
						record_step "MTU black hole, mptcp (rep $rep)" skipped "mptcpize is not installed"
					else
						step "MTU black hole, MPTCP: the same (rep $rep)" failover mptcp "$rep" mtuhole
					fi
				fi
				want latency && step "latency vs message size, pinned and unpinned (rep $rep)" latency_figure "$rep"
				want redundant && step "8 B request/response, 1% loss on rail 1: redundant, normal, TCP (rep $rep)" redundant_figure "$rep"
				# redis: KV_ROUNDS alternating rounds in the first repetition (its spread is the figure)
				want kv && [ "$rep" = 1 ] && step "request rate: redis-server and redis-benchmark under ri2n-run vs TCP, $KV_ROUNDS rounds" kv_figure "$rep"
				want close && step "a connection per request: nginx and wrk (Connection: close) under ri2n-run vs TCP (rep $rep)" close_figure "$rep"
				# the real-program rows take their rounds in one repetition
				if [ "$rep" = 1 ]; then
					want web && step "keep-alive web server: nginx and wrk under ri2n-run vs TCP, $REAL_ROUNDS rounds" web_figure
					want cache && step "cache server: memcached and memaslap under ri2n-run vs TCP, $REAL_ROUNDS rounds" cache_figure
					want fork && step "forking server, a process per client: under ri2n-run vs TCP, $REAL_ROUNDS rounds" fork_figure
				fi
				want mpi && step "MPI: btl_ri2n and btl_tcp, latency, stream, a black hole, 16 idle ranks (rep $rep)" mpi_figure "$rep"
				# mpi includes it; --only mpiidle runs it alone
				want mpiidle && ! want mpi && [ "$rep" = 1 ] && step "MPI: 16 idle ranks (rep $rep)" mpi_idle_alone
				want ofi && step "libfabric: fi_pingpong over ri2n, tcp and udp;ofi_rxd (rep $rep)" ofi_figure "$rep"
				want mpich && [ "$rep" = 1 ] && step "MPI: MPICH under ri2n-run and plain UCX tcp, latency, stream, $REAL_ROUNDS rounds" mpich_figure "$rep"
				want ompitcp && [ "$rep" = 1 ] && step "MPI: Open MPI's btl/tcp under ri2n-run and plain, 8 B latency, $REAL_ROUNDS rounds" ompitcp_figure
			done
		fi
		drop_bed
	fi
	# ri2n finds each rail's datagram size by probing (up to the interface's MTU): on the mixed
	# bed it sends 8972-byte datagrams (several packets each) on the 9000 rail, 1472 on the other
	for fig in jumbo mixed; do
		want $fig || continue
		mtus=9000 tag=bn2j; [ $fig = mixed ] && mtus=9000,1500 tag=bn2x
		step "test bed: 2 rails x 1 Gbit/s, MTU $mtus" bed_step "$tag" 2 1gbit "$mtus"
		if [ "$BED" = "$(bed_tag "$tag")" ]; then
			for rep in $(seq "$reps"); do
				step "goodput, 2 x GbE at MTU $mtus (rep $rep)" tp_figure "$fig" "$rep"
			done
		fi
		drop_bed
	done
	if want v6; then
		step "goodput, 2 x GbE over IPv6-only rails against IPv4, $((reps < 2 ? 2 : reps)) alternating rounds" v6_figure "$((reps < 2 ? 2 : reps))"
	fi
	if want tp4; then
		step "test bed: 4 rails x 1 Gbit/s" bed_step bn4g 4 1gbit
		if [ "$BED" = "$(bed_tag bn4g)" ]; then
			for rep in $(seq "$reps"); do
				step "goodput, 4 x GbE (rep $rep)" tp_figure tp4 "$rep"
				step "goodput, 4 x GbE, with a cluster key (rep $rep)" keyed_figure tp4 "$rep"
			done
		fi
		drop_bed
	fi
	if want veth || want iperf; then
		step "test bed: 2 unshaped veth rails" bed_step bn2u 2 off
		if [ "$BED" = "$(bed_tag bn2u)" ] && want iperf; then
			step "iperf3 under ri2n-run vs under mptcpize, 2 unshaped veth rails, $REAL_ROUNDS rounds" iperf_figure
		fi
		if [ "$BED" = "$(bed_tag bn2u)" ] && want veth; then
			for rep in $(seq "$reps"); do
				step "goodput, 2 unshaped veth rails (rep $rep)" tp_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, no ri2n-stat publishing (rep $rep)" \
					nopub_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, with a cluster key (rep $rep)" \
					keyed_figure veth "$rep" --no-verify
				step "goodput, 2 unshaped veth rails, with a cluster key, integrity only (rep $rep)" \
					authonly_figure veth "$rep" --no-verify
				step "capture check: a known text sent with and without a cluster key, captured on the rails (rep $rep)" \
					capture_figure veth "$rep"
				step "goodput, 2 unshaped veth rails, unmodified iperf3 under ri2n-run (rep $rep)" \
					runiperf_figure veth "$rep"
			done
		fi
		drop_bed
	fi
	if want incast; then
		for rep in $(seq "$reps"); do
			step "incast: 3 senders into one host over shared switches, ri2n, MPTCP, TCP (rep $rep)" incast_figure 3 "$rep"
			[ "$mode" = smoke ] || step "incast: 7 senders into one host (rep $rep)" incast_figure 7 "$rep"
			step "shared rail: TCP beside ri2n on rail 1 (rep $rep)" sharedrail_figure "$rep"
		done
		drop_bed
	fi
	if want mpin; then
		for rep in $(seq "$reps"); do
			step "MPI over 4 and 8 hosts: alltoall beside btl_tcp, memory per peer (rep $rep)" mpin_figure "$rep"
		done
		drop_bed
	fi
	if want mem || want hole; then
		step "test bed: 2 unshaped veth rails (connections)" bed_step bn2m 2 off
		if [ "$BED" = "$(bed_tag bn2m)" ] && want mem; then
			step "memory and descriptors per connection (ri2n-conns)" memory_figure
			step "a connection per request (ri2n-churn)" churn_figure
			step "close storm: all connections closed at once (ri2n-conns)" storm_figure
		fi
		# mem includes it; --only hole runs it alone
		[ "$BED" = "$(bed_tag bn2m)" ] &&
			step "a black hole while idle: first writes (ri2n-conns --probes)" hole_figure
		drop_bed
		want mem && step "idle cost: 9,000 and 1,000 idle connections (bench/idle-cost.sh)" idle_cost_figure
	fi
fi

step "plots (failover.png, latency.png)" plots
step "result files: every CSV row has its header's fields" csv_check

summary
log "summary: $out/summary.md"

nfail=0
for i in "${!STEP_STATUS[@]}"; do [ "${STEP_STATUS[$i]}" = failed ] && nfail=$((nfail + 1)); done
drop_bed
if [ "$mode" = smoke ] && [ $nfail -eq 0 ] && [ $keep -eq 0 ]; then
	rm -rf "$RAW"
fi
if [ $nfail -gt 0 ]; then
	log "$nfail step(s) failed (see $out/summary.md)"
	exit 1
fi
log "done in $(($(date +%s) - START)) s"
exit 0
