#!/bin/bash
# run_ri2n_run.sh SCENARIO - MPI libraries' own TCP paths carried by ri2n-run.
#
# The ranks run unchanged MPI libraries under tools/ri2n-run, in test-bed
# namespaces (netns-launch.sh picks a rank's host from PMI_RANK or
# OMPI_COMM_WORLD_RANK), so the MPI library's TCP connections become ri2n
# streams striped over rails r1 and r2 (1 Gbit/s each).  tests/mpi/mpi_check
# checks every byte.  Scenarios:
#
#   mpich            MPICH 4 (Debian's mpich: ch4:ucx, UCX's tcp transport), 2 ranks on
#                    2 hosts: ping-pong 1 B .. 256 KiB, alltoall, random-pair exchanges
#   mpich-four       the same with 4 ranks on 2 hosts (by hand: now and then a rank dies of
#                    SIGSEGV in UCX's tcp receive path under ri2n-run, docs/MPI.md)
#   mpich-plain      mpich-four without ri2n-run (UCX tcp on r1 alone): a baseline, by hand
#   mpich-blackhole  MPICH, 2 ranks: rail 1 of host 1 black-holed for good 1 s into the
#                    stream; the stream, alltoall and exchanges after it pass
#   ompi-tcp         Open MPI 4.1, --mca btl tcp,self (btl/tcp on r1) under ri2n-run,
#                    2 ranks: ping-pong, stream with rail 1 black-holed, alltoall
#   ompi-ucx         Open MPI 4.1, --mca pml ucx (UCX's tcp on r1) under ri2n-run, the same
#   bench [N]        not a test: N interleaved rounds of MPICH over ri2n-run and plain
#                    (UCX tcp on rail r1 alone), 8-byte latency and stream, medians
#
# Every scenario checks that each rank's connections to the other rank went
# over ri2n (ri2n-run --verbose says so), that none to a rail address stayed
# TCP, and for the black hole that ri2n saw the rail go down.
#
# Environment: RI2N_RUN_LIB (libri2n-run.so; default build/src), RI2N_MPI_CHECK_MPICH
# and RI2N_MPI_CHECK (mpi_check built with mpicc.mpich / mpicc; built here if unset),
# MPI_KEEP=1 keeps the logs, RI2N_NETNS_TAG_LETTER (tests/netns/tag.sh).
# Needs root; skips with 77 without it or without the MPI in question
# (tools/deps.sh installs both).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SC=${1:-mpich}
WORK=$(mktemp -d /tmp/ri2n-mpirun.XXXXXX)
TAG=""
NHOSTS=0
# the MPI libraries' data ports: pinned to this range, and only these go over ri2n
PORTS=21000-21999

MPI_BED_QUIET='pingpong size=|stream rank=.* t=|stays TCP \(loopback\)'
# shellcheck source=mpi_bed.sh
source "$HERE/mpi_bed.sh"

# ---- prerequisites ----

[ "$(id -u)" -eq 0 ] || skip "the MPI tests need root (network namespaces)"
for t in ip nft tc timeout; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
RUN_LIB=${RI2N_RUN_LIB:-$ROOT/build/src/libri2n-run.so}
[ -f "$RUN_LIB" ] || skip "libri2n-run.so not built ($RUN_LIB)"

case $SC in
mpich* | bench)
	for t in mpiexec.mpich mpicc.mpich; do
		command -v "$t" >/dev/null ||
			skip "MPICH is not installed ($t missing; tools/deps.sh installs mpich and libmpich-dev)"
	done
	MPI_CHECK=${RI2N_MPI_CHECK_MPICH:-}
	if [ -z "$MPI_CHECK" ] || [ ! -x "$MPI_CHECK" ]; then
		MPI_CHECK=$WORK/mpi_check_mpich
		mpicc.mpich -O2 -Wno-stringop-overflow -I"$ROOT/tools/kit" -o "$MPI_CHECK" \
			"$HERE/mpi_check.c" || fail "cannot build mpi_check with mpicc.mpich"
	fi
	;;
ompi-*)
	for t in mpirun.openmpi mpicc.openmpi ompi_info; do
		command -v "$t" >/dev/null || skip "Open MPI is not installed ($t missing)"
	done
	MPI_CHECK=${RI2N_MPI_CHECK:-}
	if [ -z "$MPI_CHECK" ] || [ ! -x "$MPI_CHECK" ]; then
		MPI_CHECK=$WORK/mpi_check
		mpicc.openmpi -O2 -I"$ROOT/tools/kit" -o "$MPI_CHECK" "$HERE/mpi_check.c" ||
			fail "cannot build mpi_check with mpicc.openmpi"
	fi
	;;
esac

# ---- the test bed ----

# shellcheck source=../../tools/ri2n-testbed.sh
source "$ROOT/tools/ri2n-testbed.sh"
# shellcheck source=../netns/tag.sh
source "$ROOT/tests/netns/tag.sh"
set +e

bed_up() { # HOSTS NAME
	mpi_bed_up "$1" "mpirun-$2"
}

# What every rank runs under: ri2n-run on the rails, converting only the MPI
# library's data ports (the launcher's connections stay TCP, wherever they go).
# MODE plain: nothing (the baseline, UCX or btl/tcp on rail r1 alone).
wrap() { # MODE
	[ "$1" = plain ] && return 0
	echo "$ROOT/tools/ri2n-run --verbose --ports $PORTS --"
}

# mpich_run NAME NP MODE TIMEOUT [mpi_check args...]; output in $WORK/NAME.out
# UCX: its tcp transport only (sm would join ranks through /dev/shm, which the
# bed's namespaces share), on one rail (ri2n stripes the connection over all),
# listening in $PORTS.  MPIR_CVAR_NOLOCAL: every namespace has the same host
# name, and MPICH would otherwise join "local" ranks through shared memory.
mpich_run() {
	local name=$1 np=$2 mode=$3 tmo=$4
	shift 4
	# shellcheck disable=SC2046
	RI2N_MPI_NS_PREFIX=ri2n-$TAG-h RI2N_MPI_HOSTS=$NHOSTS RI2N_RUN_LIB=$RUN_LIB RI2N_RAILS=r1,r2 \
	UCX_TLS=tcp,self UCX_NET_DEVICES=r1 UCX_TCP_PORT_RANGE=$PORTS MPIR_CVAR_NOLOCAL=1 \
		timeout -s KILL "$tmo" mpiexec.mpich -launcher fork -n "$np" \
		"$HERE/netns-launch.sh" $(wrap "$mode") "$MPI_CHECK" "$@" >"$WORK/$name.out" 2>&1 &
	finalize_wait "$name" $!
	local rc=$?
	kill_ranks
	return $rc
}

# Waits for job NAME (PID).  Every rank prints PASS's line only after a barrier that
# follows all its checks; a job still there FINALIZE_GRACE s later hangs in MPI_Finalize,
# a hang of UCX's tcp transport (ranks spin in ucp_worker_progress; seen as well without
# ri2n-run, like openucx/ucx#8738): it is killed and passes, and the log says so.
FINALIZE_GRACE=5
finalize_wait() { # NAME PID
	local i=0
	while kill -0 "$2" 2>/dev/null; do
		if grep -q 'mpi_check result=PASS' "$WORK/$1.out" 2>/dev/null; then
			((i++ >= FINALIZE_GRACE * 10)) && {
				kill_ranks
				wait "$2"
				echo "run_ri2n_run: every rank passed; MPI_Finalize hung ${FINALIZE_GRACE} s in UCX, killed" >>"$WORK/$1.out"
				note "$1: MPI_Finalize hung in UCX after PASS (UCX tcp, not ri2n: seen without ri2n-run too); killed"
				return 0
			}
		fi
		sleep 0.1
	done
	wait "$2"
}

# ompi_run NAME NP MODE PATH TIMEOUT [mpi_check args...]; PATH tcp (btl/tcp on r1, its
# listening ports in $PORTS) or ucx (pml/ucx, UCX's tcp on r1, as for MPICH).  Ranks reach
# mpirun's PMIx server over the management bridge, which is not a rail: it stays TCP.
ompi_run() {
	local name=$1 np=$2 mode=$3 path=$4 tmo=$5 mca
	shift 5
	if [ "$path" = tcp ]; then
		mca=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include r1
			--mca btl_tcp_port_min_v4 "${PORTS%-*}" --mca btl_tcp_port_range_v4 1000)
	else
		# pml_ucx_tls/devices any: by default 4.1 takes pml/ucx only over InfiniBand-class transports
		mca=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
			--mca btl ^tcp,vader,openib --mca osc ^ucx
			-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=r1 -x UCX_TCP_PORT_RANGE=$PORTS)
	fi
	# shellcheck disable=SC2046
	RI2N_MPI_NS_PREFIX=ri2n-$TAG-h RI2N_MPI_HOSTS=$NHOSTS PMIX_MCA_ptl_base_if_include=$MGMT \
	RI2N_RUN_LIB=$RUN_LIB RI2N_RAILS=r1,r2 \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -s KILL "$tmo" mpirun.openmpi --oversubscribe --bind-to none -np "$np" "${mca[@]}" \
		-x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS -x PMIX_MCA_ptl_base_if_include \
		-x RI2N_RUN_LIB -x RI2N_RAILS \
		"$HERE/netns-launch.sh" $(wrap "$mode") "$MPI_CHECK" "$@" >"$WORK/$name.out" 2>&1 &
	finalize_wait "$name" $!
	local rc=$?
	kill_ranks
	return $rc
}

# Waits until job NAME (PID) starts streaming, then $3 seconds more; fails if it ended first.
after_stream_start() { # NAME PID SECONDS
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q 'phase=stream start' "$WORK/$1.out" 2>/dev/null && break
		kill -0 "$2" 2>/dev/null || { wait "$2"; fail "$1: the job ended before streaming (status $?)"; }
		sleep 0.05
	done
	sleep "$3"
}

# Every one of NP ranks made or accepted a connection over ri2n; no connection
# to a rail address stayed TCP.
require_ri2n() { # NAME NP
	local f=$WORK/$1.out n
	n=$(sed -n 's/^ri2n-run\[\([0-9]*\)\]: fd [0-9]*: \(connect to\|accepted\) 198\.18\.[12]\..* over ri2n.*/\1/p' "$f" |
		sort -u | wc -l)
	[ "$n" -ge "$2" ] || fail "$1: only $n of $2 ranks have a connection over ri2n"
	! grep -q 'connect to 198\.18\.[12]\..* stays TCP' "$f" ||
		fail "$1: a connection to a rail stayed TCP: $(grep -m1 'connect to 198\.18\.[12]\..* stays TCP' "$f")"
	note "$1: $(grep -c 'connect to 198\.18\.[12]\..* over ri2n' "$f") connections over ri2n from $n ranks, none to a rail left TCP"
}

report() { # NAME
	grep -h 'mpi_check \(latency\|stream rank=.*from=\|alltoall\|sendrecv\)' "$WORK/$1.out" |
		sed 's/^mpi_check /    /'
}

# ---- scenarios ----

sc_mpich() { # NP HOSTS [plain]
	local mode=${3:-ri2n}
	bed_up "$2" "mpich$1"
	mpich_run mpich "$1" "$mode" 120 --phases pingpong,alltoall,sendrecv --max-size 256k --rounds 2 ||
		fail "mpiexec failed (status $?)"
	require_pass mpich
	[ "$mode" = plain ] || require_ri2n mpich "$1"
	report mpich
	ok "MPICH $([ "$mode" = plain ] && echo 'without ri2n-run' || echo 'over ri2n-run'), $1 ranks on $2 hosts: ping-pong, alltoall and exchanges, every byte verified"
}

# ri2n's warning for rail r1 (its rail 0: 198.18.1.x) of a connection
RAIL1_DOWN='rail 0 (198\.18\.1\.[0-9]* -> 198\.18\.1\.[0-9]*) down'

# Black-holes rail 1 of host 1 for good 1 s into the stream of job NAME (running as PID).
blackhole_during() { # NAME PID
	after_stream_start "$1" "$2" 1
	tb_fault blackhole 1 1 on || fail "cannot black-hole rail 1"
	note "rail 1 of host 1 black-holed at $(date +%T.%N | cut -c1-12)"
	wait "$2" || fail "$1: the job failed with rail 1 black-holed (status $?)"
	require_pass "$1"
	grep -q "$RAIL1_DOWN" "$WORK/$1.out" ||
		fail "$1: ri2n never reported rail r1 down"
	note "$(grep -m1 "$RAIL1_DOWN" "$WORK/$1.out")"
}

sc_mpich_blackhole() {
	local pid
	bed_up 2 mpichbh
	mpich_run mpichbh 2 ri2n 120 --phases stream,alltoall,sendrecv --bw-seconds 3 --rounds 4 &
	pid=$!
	blackhole_during mpichbh "$pid"
	require_ri2n mpichbh 2
	report mpichbh
	ok "MPICH over ri2n-run: rail 1 black-holed mid-stream, stream, alltoall and exchanges verified"
}

sc_ompi() { # tcp|ucx
	local pid name=ompi$1
	bed_up 2 "ompi$1"
	ompi_run "$name" 2 ri2n "$1" 120 --phases pingpong,stream,alltoall --max-size 1m \
		--bw-seconds 3 --rounds 4 &
	pid=$!
	blackhole_during "$name" "$pid"
	require_ri2n "$name" 2
	report "$name"
	ok "Open MPI $1 over ri2n-run: ping-pong, stream across a black-holed rail, alltoall verified"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }

sc_bench() { # N
	local n=${1:-5} i m f a b
	bed_up 2 bench
	: >"$WORK/bench.txt"
	for ((i = 1; i <= n; i++)); do
		for m in ri2n plain; do
			mpich_run "b-$m" 2 "$m" 120 --phases latency,stream --bw-seconds 4 --lat-iters 20000 ||
				fail "$m round $i failed"
			require_pass "b-$m"
			f=$WORK/b-$m.out
			echo "$m lat_median $(sed -n 's/.*median_one_way_us=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
			echo "$m lat_mean $(sed -n 's/.*latency size=8 .* one_way_us=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
			echo "$m stream $(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
		done
	done
	echo "rounds: $n, MPICH 2 ranks on 2 hosts, rails shaped to 1 Gbit/s; plain: UCX tcp on rail r1 only"
	printf '%-34s %10s %10s %8s\n' "figure (median over rounds)" ri2n-run plain ratio
	for f in lat_median lat_mean stream; do
		a=$(awk -v f=$f '$1=="ri2n" && $2==f {print $3}' "$WORK/bench.txt" | median)
		b=$(awk -v f=$f '$1=="plain" && $2==f {print $3}' "$WORK/bench.txt" | median)
		printf '%-34s %10s %10s %8s\n' "$f$([ $f = stream ] && echo ' (MB/s)' || echo ' one-way (us)')" \
			"$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2fx", a / b }')"
	done
	echo "per round:"
	awk '{ printf "  %-5s %-11s %s\n", $1, $2, $3 }' "$WORK/bench.txt"
}

case $SC in
mpich) sc_mpich 2 2 ;;
mpich-four) sc_mpich 4 2 ;;
mpich-plain) sc_mpich 4 2 plain ;;
mpich-blackhole) sc_mpich_blackhole ;;
ompi-tcp) sc_ompi tcp ;;
ompi-ucx) sc_ompi ucx ;;
bench) sc_bench "${2:-5}" ;;
*) echo "usage: $0 mpich|mpich-four|mpich-plain|mpich-blackhole|ompi-tcp|ompi-ucx|bench [N]"; exit 2 ;;
esac
exit 0
