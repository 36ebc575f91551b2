#!/bin/bash
# run_mpi.sh SCENARIO - Open MPI ranks in test-bed namespaces over btl_ri2n.
#
# Each rank runs in its own host namespace (netns-launch.sh picks it from
# OMPI_COMM_WORLD_RANK), reaches mpirun's PMIx server over the management
# bridge, and talks to the other ranks over rails r1,r2 (1 Gbit/s each).
# tests/mpi/mpi_check checks every byte.  Scenarios:
#
#   ompi-info       ompi_info lists the component and its btl_ri2n_* parameters
#   two-ranks       2 ranks, 2 hosts, --mca btl ri2n,self: the whole program
#   four-ranks      4 ranks, 4 hosts
#   no-self         2 ranks, --mca btl ri2n alone (sends to self in memory)
#   blackhole       2 ranks; rail 1 of host 1 silently black-holed 1.5 s into
#                   the stream phase, healed 2.5 s later: PASS, the BTL saw it
#                   go down and come back
#   blackhole-four  4 ranks; the black hole stays to the end, so connections
#                   opened later must connect over the other rail
#   addr-gone       2 ranks; rail 1's address deleted in host 1 1.5 s into the
#                   stream phase, added back 2.5 s later: PASS, the BTL followed
#                   the kernel (rail down for "address removed" at once), up again after
#   addr-change     2 ranks; rail 1's address in host 1 replaced by another in its subnet
#                   1.5 s into the stream phase: the BTL moves the rail to it, data crosses
#                   it again (PASS)
#   rail-new        2 ranks; rail 2 without an address in either host at start: the BTL
#                   waits for it, opens it once its addresses come mid-stream, offers it
#                   to the live link and data crosses it (PASS)
#   compute         a rank makes no MPI call for 5 s, dead-peer timeout 3 s:
#                   the keeper thread must keep it alive (PASS)
#   all-dead        both rails black-holed for good during the stream,
#                   dead-peer timeout 3 s: the job must abort with the BTL's
#                   sentence well within a minute (prints the time it took)
#   nudge-flood     2 ranks; during the stream phase 2000 well-formed nudges naming
#                   processes of no job (other job ids, vpids 1000..) reach rank 1's
#                   BTL port on both rails from host 1: PASS, rank 1 counts them
#                   refused and has still one link only (a nudge no longer makes an
#                   endpoint, nor an INIT to whoever sent it)
#   hostile-hello   2 ranks; during the stream phase a process of no job on host 1
#                   (tests/mpi/ri2n_hostile_hello) connects to rank 1's BTL port over
#                   ri2n and sends a hello naming rank 0, whose stream to rank 1 is up:
#                   PASS, rank 1 counts the hello refused, and the hostile process
#                   reads none of the bytes meant for rank 0
#   killed-rank     2 ranks streaming, rank 1 killed -9 (mpirun told to keep the job,
#                   orte_enable_recovery): rank 0's BTL reports "reset the connection"
#                   within 10 s (its host's port unreachable, checked against what was
#                   sent), not after the 30 s dead-peer timeout
#   eight-ranks     8 ranks on 4 hosts, 2 to a namespace (ranks r and r+4 share host
#                   r%4+1).  First a job that only pairs ranks (r, r^1): every rank
#                   opened fewer links than it has peers (connections open on first
#                   use).  Memory: an idle peer costs <= 256 KiB of Pss, and after
#                   alltoalls and 3 s of rest the core holds only first-size rings.
#                   Then the ring ceiling (btl_ri2n_ring_mem_mb): under NP/4
#                   MiB each peer's rings are held to a share of it (64 packets), and streams and
#                   alltoalls pass with no growth refused and nothing dropped for want
#                   of memory; under 1 MiB with no shares a stream passes, the ceiling
#                   refused growth and said so; no process held more than the ceiling
#                   and its handshakes' first rings.  Then
#                   the MPI suite's collectives: streams, allreduce, alltoall and random-pair
#                   exchanges verified, rail 1 of host 1 black-holed mid-stream for good
#   sixteen-ranks   the same job with 16 ranks on 8 hosts (manual: about 2 minutes on
#                   2 cores)
#   memory [NP HOSTS]  not a test: Pss growth per peer (mpi_check --phases memory)
#                   and the BTL's count of its core memory; 16 ranks on 8 hosts
#   idle [NP]       NP ranks (16) on 2 hosts, every pair connected, then 10 s without
#                   MPI calls: prints the datagrams per second on the rails between the
#                   two hosts (both directions) over 5 s of it; passes when every byte
#                   was verified and every rank's links all joined a rail monitor
#   idle-eight      the same with 8 ranks and 8 s (the test)
#   bench [N]       not a test: N interleaved rounds of ri2n and btl/tcp (one
#                   rail), 8-byte latency and streaming bandwidth, medians
#
# Environment: RI2N_BTL_DIR (directory of mca_btl_ri2n.so), RI2N_MPI_CHECK
# (the program; built here with mpicc if unset), MPI_KEEP=1 keeps the logs,
# RI2N_NETNS_TAG_LETTER (tests/netns/tag.sh: one letter that keeps two
# sessions on one machine from sharing a bed).
# Needs root (namespaces) and Open MPI 4.1 or 5.0 (mpirun, mpicc, ompi_info);
# skips with status 77 otherwise.  run_ompi5.sh runs it against 5.0 in a
# Debian 13 root (hostile-hello reads 4.1's OMPI_MCA_ess_base_jobid: 4.1 only).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SC=${1:-two-ranks}
WORK=$(mktemp -d /tmp/ri2n-mpi.XXXXXX)
TAG=""
NHOSTS=0

# shellcheck source=mpi_bed.sh
source "$HERE/mpi_bed.sh"

# ---- prerequisites ----

for t in mpirun ompi_info; do
	command -v "$t" >/dev/null || skip "Open MPI is not installed ($t missing)"
done
BTL_DIR=${RI2N_BTL_DIR-$ROOT/build/btl_ri2n}
[ -n "$BTL_DIR" ] || skip "mca_btl_ri2n.so is not part of this build (no Open MPI development files)"
[ -f "$BTL_DIR/mca_btl_ri2n.so" ] || skip "mca_btl_ri2n.so not built in $BTL_DIR"
# Open MPI's own directories stay in the path, ours goes first: 4.1 stops
# scanning at a directory that does not exist (the default path ends with
# ~/.openmpi/components, which usually does not)
SYS_PATH=$(ompi_info --param mca base --level 9 --parsable 2>/dev/null |
	sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' | head -n 1)
COMPONENT_PATH=$BTL_DIR${SYS_PATH:+:$SYS_PATH}

ompi_info_check() {
	local out=$WORK/ompi_info.out p
	OMPI_MCA_mca_base_component_path=$COMPONENT_PATH ompi_info --param btl ri2n --level 9 \
		>"$out" 2>&1 || fail "ompi_info failed"
	grep -q 'MCA btl: ri2n' "$out" || fail "ompi_info does not list the ri2n component"
	for p in if_include heartbeat_ms keepalive_ms rail_timeout_ms dead_peer_ms \
		connect_timeout_ms fail_window fail_min mtu sndbuf rcvbuf ring_mem_mb ring_share \
		eager_limit max_send_size; do
		grep -q "\"btl_ri2n_$p\"" "$out" || fail "ompi_info does not list btl_ri2n_$p"
	done
	ok "ompi_info lists btl ri2n with $(grep -c 'parameter "btl_ri2n_' "$out") parameters"
}

if [ "$SC" = ompi-info ]; then
	ompi_info_check
	rm -rf "$WORK"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || skip "the MPI tests need root (network namespaces)"
for t in ip nft tc timeout; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
MPI_CHECK=${RI2N_MPI_CHECK:-}
if [ -z "$MPI_CHECK" ] || [ ! -x "$MPI_CHECK" ]; then
	command -v mpicc >/dev/null || skip "mpicc is not installed"
	MPI_CHECK=$WORK/mpi_check
	mpicc -O2 -I"$ROOT/tools/kit" -o "$MPI_CHECK" "$HERE/mpi_check.c" || fail "cannot build mpi_check"
fi

# ---- the test bed ----

# shellcheck source=../../tools/ri2n-testbed.sh
source "$ROOT/tools/ri2n-testbed.sh"
# shellcheck source=../netns/tag.sh
source "$ROOT/tests/netns/tag.sh"
set +e

bed_up() { # HOSTS [TAG [OPTIONS...]]
	mpi_bed_up "$1" "mpi-${2:-mpi$1}" "${@:3}"
}

# mpi_run NAME NP BTL TIMEOUT [mpirun args...] -- [mpi_check args...]; output in $WORK/NAME.out
mpi_run() {
	local name=$1 np=$2 btl=$3 tmo=$4 args=()
	shift 4
	while (($#)) && [ "$1" != -- ]; do args+=("$1"); shift; done
	(($#)) && shift
	RI2N_MPI_NS_PREFIX=ri2n-$TAG-h RI2N_MPI_HOSTS=$NHOSTS PMIX_MCA_ptl_base_if_include=$MGMT \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -s KILL "$tmo" mpirun --oversubscribe --bind-to none -np "$np" \
		--mca mca_base_component_path "$COMPONENT_PATH" --mca btl "$btl" \
		--mca btl_ri2n_if_include r1,r2 --mca btl_tcp_if_include r1 \
		-x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS -x PMIX_MCA_ptl_base_if_include \
		"${args[@]}" "$HERE/netns-launch.sh" "$MPI_CHECK" "$@" >"$WORK/$name.out" 2>&1
	local rc=$?
	kill_ranks
	return $rc
}

# Waits until the program starts streaming; then waits $1 seconds more.
after_stream_start() { # NAME SECONDS
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q 'phase=stream start' "$WORK/$1.out" 2>/dev/null && break
		sleep 0.05
	done
	sleep "$2"
}

report() { # NAME: the figures a person wants to see
	local f=$WORK/$1.out
	grep -h 'mpi_check phase=\|result=PASS' "$f" | sed 's/^mpi_check /  /' | tr '\n' ' ' | fold -s -w 100
	echo
	grep -h 'one_way_us=' "$f" | grep 'latency size=8' | sed 's/^mpi_check /  /'
	grep -h 'stream rank=.*from=' "$f" | sed 's/^mpi_check /  /'
	grep -h 'btl_ri2n: .*rail .* \(down\|up again\)' "$f" | sed 's/^/  /' | head -n 8
}

# ---- scenarios ----

# Every rank reads the cluster key from a file (btl_ri2n_key_file): the job passes and
# every stream says it is keyed; the key never shows in the job's output.
sc_keyed() {
	local key
	bed_up 2
	key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	printf '%s\n' "$key" >"$WORK/key"
	chmod 600 "$WORK/key"
	mpi_run keyed 2 ri2n,self 240 --mca btl_ri2n_key_file "$WORK/key" --mca btl_ri2n_verbose 1 \
		-- --bw-seconds 3 || fail "mpirun failed (status $?)"
	require_pass keyed
	report keyed
	grep -q 'btl_ri2n .* -> .*: [a-z_]*, keyed (mss 1424' "$WORK/keyed.out" ||
		fail "the BTL's streams are not keyed: $(grep -m2 'btl_ri2n .* -> ' "$WORK/keyed.out")"
	! grep -q "$key" "$WORK/keyed.out" || fail "the key appears in the job's output"
	ok "2 ranks with btl_ri2n_key_file: every byte verified, every stream authenticated"
}

sc_ranks() { # NP HOSTS BTL
	bed_up "$2"
	mpi_run "ranks$1" "$1" "$3" 240 -- --bw-seconds 5 || fail "mpirun failed (status $?)"
	require_pass "ranks$1"
	report "ranks$1"
	ok "$1 ranks over --mca btl $3: every byte verified"
}

sc_blackhole() { # NP HOSTS HEAL(0/1)
	local name=bh$1 np=$1 pid
	bed_up "$2"
	mpi_run "$name" "$np" ri2n,self 240 -- --bw-seconds 6 &
	pid=$!
	after_stream_start "$name" 1.5
	local t0
	t0=$(date +%T.%N | cut -c1-12)
	tb_fault blackhole 1 1 on || fail "cannot black-hole rail 1"
	note "rail 1 of host 1 black-holed: command started $t0, done $(date +%T.%N | cut -c1-12)"
	if [ "$3" = 1 ]; then
		sleep 2.5
		t0=$(date +%T.%N | cut -c1-12)
		tb_fault blackhole 1 1 off
		note "healed: command started $t0, done $(date +%T.%N | cut -c1-12)"
	fi
	wait "$pid" || fail "mpirun failed with rail 1 black-holed (status $?)"
	require_pass "$name"
	grep -q 'btl_ri2n: .*rail r1 .* down' "$WORK/$name.out" ||
		fail "the BTL never reported rail 1 down"
	if [ "$3" = 1 ]; then
		grep -q 'btl_ri2n: .*rail r1 .* up again' "$WORK/$name.out" ||
			fail "the BTL never took rail 1 back after the heal"
	fi
	report "$name"
	grep -h 'stream rank=.* t=' "$WORK/$name.out" | sed 's/^mpi_check /  /'
	ok "$np ranks: rail 1 black-holed mid-stream$([ "$3" = 1 ] && echo ' and healed'), every byte verified"
}

# IPv6 rails (--v6 RAILS: "all", or "2" beside an IPv4 rail 1): the ranks publish them in the
# modex and stripe over both; rail 1 black-holed mid-stream and healed.  Every byte verified,
# and the finalize summary shows each rail on its family's addresses with data on both.
sc_v6() { # RAILS
	local name=v6 pid t0 r fam rows most
	bed_up 2 "v6-${1/,/}" --v6 "$1"
	mpi_run "$name" 2 ri2n,self 240 --mca btl_ri2n_verbose 1 -- --bw-seconds 6 &
	pid=$!
	after_stream_start "$name" 1.5
	t0=$(date +%T.%N | cut -c1-12)
	tb_fault blackhole 1 1 on || fail "cannot black-hole rail 1"
	note "rail 1 of host 1 black-holed: command started $t0"
	sleep 2
	tb_fault blackhole 1 1 off
	note "healed at $(date +%T.%N | cut -c1-12)"
	wait "$pid" || fail "mpirun failed over IPv6 rails (status $?)"
	require_pass "$name"
	grep -q 'btl_ri2n: .*rail r1 .* down' "$WORK/$name.out" || fail "the BTL never reported rail 1 down"
	grep -q 'btl_ri2n: .*rail r1 .* up again' "$WORK/$name.out" ||
		fail "the BTL never took rail 1 back after the heal"
	for r in 1 2; do
		fam='198\.18\.'"$r"'\.[12] -> 198\.18\.'"$r"'\.[12]'
		[[ ,$1, == *,$r,* || $1 == all ]] && fam="2001:2:0:$r::[12] -> 2001:2:0:$r::[12]"
		rows=$(grep -h "btl_ri2n .* -> .*: rail r$r ($fam): tx [0-9]* data " "$WORK/$name.out")
		most=$(sed -n 's/.*: tx [0-9]* data \([0-9]*\) .*/\1/p' <<<"$rows" | sort -n | tail -n 1)
		((${most:-0} >= 1000)) ||
			fail "rail $r: no stream data on its addresses ($fam): $(grep -h ': rail r[12] ([^)]*): tx' "$WORK/$name.out" | head -n 4)"
		note "rail r$r ($(sed -n 's/.*: rail r[12] (\([^)]*\)).*/\1/p' <<<"$rows" | head -n 1)) carried $most data packets (the busiest link end)"
	done
	report "$name"
	ok "2 ranks over IPv6 rails ($1): rail 1 black-holed mid-stream and healed, data on both rails, every byte verified"
}

# Rail 1's address deleted in host 1 mid-stream and added back: the BTL follows the kernel
# (netlink), so the rail is down at once for "address removed" and up with the address.
sc_addr_gone() {
	local name=ag pid a t0
	bed_up 2
	a=$(tb_addr 1 1)
	mpi_run "$name" 2 ri2n,self 240 -- --bw-seconds 6 &
	pid=$!
	after_stream_start "$name" 1.5
	t0=$(date +%T.%N | cut -c1-12)
	ip -n "ri2n-$TAG-h1" addr del "$a/24" dev r1 || fail "cannot delete $a from r1"
	note "rail 1's address deleted in host 1: command started $t0, done $(date +%T.%N | cut -c1-12)"
	sleep 2.5
	ip -n "ri2n-$TAG-h1" addr add "$a/24" dev r1 || fail "cannot add $a back to r1"
	wait "$pid" || fail "mpirun failed with rail 1's address deleted (status $?)"
	require_pass "$name"
	# the BTL followed the kernel: its rail (r1, the BTL's rail 0) down for the address at
	# once; a send on it may fail first and name the cause of the link's own event
	grep -q 'rail 0 (r1 .*): address removed: down' "$WORK/$name.out" ||
		fail "the BTL never followed the address's removal: $(grep -h 'r1' "$WORK/$name.out" | head -n 4)"
	grep -q 'btl_ri2n: .*rail r1 .* down (\(address removed\|local send error\))' "$WORK/$name.out" ||
		fail "the BTL's link never took rail 1 down: $(grep -h 'rail r1' "$WORK/$name.out" | head -n 4)"
	# back once packets cross it again both ways (the address's return lets it send)
	grep -q 'btl_ri2n: .*rail r1 .* up again' "$WORK/$name.out" ||
		fail "the BTL never took rail 1 back with its address: $(grep -h 'rail r1' "$WORK/$name.out" | head -n 6)"
	report "$name"
	ok "2 ranks: rail 1's address deleted mid-stream and added back, every byte verified"
}

# Rail 1's address in host 1 is replaced mid-stream (a secondary added, the primary deleted,
# the kernel keeping the new one): the BTL moves the rail to it (its socket bound anew, the
# link's peer told) and data crosses it again; every byte verified.
sc_addr_change() {
	local name=ac pid a b ns t0 b0 b1
	bed_up 2
	ns=ri2n-$TAG-h1
	a=$(tb_addr 1 1)
	b=${a%.*}.11
	rx1() { ip netns exec "$ns" awk '$1 == "r1:" { print $2 + $10 }' /proc/net/dev; }
	mpi_run "$name" 2 ri2n,self 240 -- --bw-seconds 6 &
	pid=$!
	after_stream_start "$name" 1.5
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.r1.promote_secondaries=1
	t0=$(date +%T.%N | cut -c1-12)
	ip -n "$ns" addr add "$b/24" dev r1 || fail "cannot add $b to r1"
	ip -n "$ns" addr del "$a/24" dev r1 || fail "cannot delete $a from r1"
	sleep 0.5
	b0=$(rx1)
	sleep 1.5
	b1=$(rx1)
	note "rail 1's address in host 1 changed from $a to $b at $t0"
	wait "$pid" || fail "mpirun failed with rail 1's address changed (status $?)"
	require_pass "$name"
	grep -q "rail 0 (r1 $b/24): address changed from $a: rebound, 1 link told" "$WORK/$name.out" ||
		fail "the BTL did not move rail 1 to $b: $(grep -h 'r1' "$WORK/$name.out" | head -n 4)"
	(((b1 - b0) > 10000000)) ||
		fail "only $((b1 - b0)) bytes crossed host 1's r1 in the 1.5 s after the change"
	note "host 1's r1 carried $(((b1 - b0) / 1000000)) MB in the 1.5 s after the move"
	report "$name"
	ok "2 ranks: rail 1's address changed mid-stream, the BTL moved the rail, every byte verified"
}

# Rail 2 has no address in either host when the job starts: the BTL waits for it instead of
# refusing the rank, carries the stream on rail 1, and once the addresses come (host 2's,
# then host 1's 0.3 s later) opens the rail, offers it to the live link (RAILS) and sends
# data on it; every byte verified.
sc_rail_new() {
	local name=rn pid h a2=() rows most
	bed_up 2
	for h in 1 2; do
		a2[h]=$(tb_addr "$h" 2)
		ip -n "ri2n-$TAG-h$h" addr del "${a2[h]}/24" dev r2 || fail "cannot delete ${a2[h]} from r2"
	done
	mpi_run "$name" 2 ri2n,self 240 --mca btl_ri2n_verbose 1 -- --phases pingpong,stream \
		--bw-seconds 5 &
	pid=$!
	after_stream_start "$name" 1.5
	ip -n "ri2n-$TAG-h2" addr add "${a2[2]}/24" dev r2 || fail "cannot add ${a2[2]} to r2"
	sleep 0.3
	ip -n "ri2n-$TAG-h1" addr add "${a2[1]}/24" dev r2 || fail "cannot add ${a2[1]} to r2"
	note "rail 2's addresses added mid-stream: host 2, then host 1 at $(date +%T.%N | cut -c1-12)"
	wait "$pid" || fail "mpirun failed with rail 2 waiting for its addresses (status $?)"
	require_pass "$name"
	# both ranks opened it when its address came, and told their link
	[ "$(grep -c 'rail 1 (r2 198\.18\.2\.[12]/24): new address: in use, offered to 1 link' \
		"$WORK/$name.out")" -eq 2 ] ||
		fail "a rank did not open rail 2 on its new address: $(grep -h 'r2' "$WORK/$name.out" | head -n 4)"
	# and data crossed it after (the finalize summary's per-rail lines)
	rows=$(grep -h 'btl_ri2n .* -> .*: rail r2 ([^)]*): tx [0-9]* data ' "$WORK/$name.out")
	most=$(sed -n 's/.*: rail r2 ([^)]*): tx [0-9]* data \([0-9]*\) .*/\1/p' <<<"$rows" | sort -n | tail -n 1)
	((${most:-0} >= 1000)) ||
		fail "no stream data went over rail 2 (${most:-0} packets at most): $(grep -h ': rail r[12] ([^)]*): tx' "$WORK/$name.out" | head -n 4)"
	note "rail r2 carried $most data packets of the stream (the busiest link end)"
	report "$name"
	ok "2 ranks: rail 2 without an address at start, opened when it came, data on it, every byte verified"
}

# Links rank VPID has at finalize (btl_ri2n_verbose lines "btl_ri2n [[J,S],V] -> peer: ...").
links_of() { # NAME VPID
	grep -c "btl_ri2n \[\[[0-9]*,[0-9]*\],$2\] -> .*failed authentication" "$WORK/$1.out"
}

# Growths the ceiling refused, and packets dropped for want of memory, over every process.
refused() { sed -n 's/.*(0: none), \([0-9]*\) growth.*/\1/p' "$WORK/$1.out" | awk '{ s += $1 } END { print s + 0 }'; }
nomem() { sed -n 's/.*, \([0-9]*\) dropped for no memory/\1/p' "$WORK/$1.out" | awk '{ s += $1 } END { print s + 0 }'; }
# The most core memory a process of job NAME held (MEM_MOST, KiB) is within CEILING KiB and
# the first rings of its handshakes (granted over the ceiling: a few tens of KiB each); every
# process printed TEXT in its memory line.
mem_check() { # NAME CEILING_KIB TEXT
	local lines
	lines=$(grep -h 'btl_ri2n \[\[[0-9]*,[0-9]*\],[0-9]*\]: core memory' "$WORK/$1.out")
	[ -n "$lines" ] || fail "$1: no core memory line in the verbose summary"
	[ "$(grep -c -F "$3" <<<"$lines")" = "$(wc -l <<<"$lines")" ] ||
		fail "$1: not every process says '$3': $(head -n 1 <<<"$lines")"
	MEM_MOST=$(sed -n 's/.* \([0-9]*\) KiB at most.*/\1/p' <<<"$lines" | sort -n | tail -n 1)
	((MEM_MOST <= $2 + 64 * np)) || fail "$1: a process held $MEM_MOST KiB of rings under a $2 KiB ceiling"
}

# NP ranks on HOSTS hosts (several to a namespace): connections open on first use, the
# ring ceiling holds, and the collectives survive a rail black-holed for good mid-stream.
sc_many() { # NP HOSTS
	local np=$1 hosts=$2 v n name pid most=0 mb
	bed_up "$hosts"
	# 1. only pairs (r, r^1) and barriers talk: no rank may connect to every peer
	mpi_run lazy "$np" ri2n,self 120 --mca btl_ri2n_verbose 1 -- --phases pingpong \
		--max-size 64k || fail "mpirun failed (status $?)"
	require_pass lazy
	for ((v = 0; v < np; v++)); do
		n=$(links_of lazy "$v")
		[ "$n" -ge 1 ] && [ "$n" -lt $((np - 1)) ] ||
			fail "rank $v opened $n links for a job that pairs ranks (lazy connections: 1..$((np - 2)) expected)"
		((n > most)) && most=$n
	done
	note "pairs and barriers only: at most $most links per rank of $((np - 1)) peers"
	# 1b. memory per peer: an idle peer costs <= 256 KiB of Pss (Open MPI's share included),
	# and after alltoalls and 3 s of rest every process's rings are back to their first size
	mpi_run mem "$np" ri2n,self 120 --mca btl_ri2n_verbose 1 -- --phases memory --rounds 2 ||
		fail "mpirun failed (status $?)"
	require_pass mem
	v=$(sed -n 's/.* idle_kib_per_peer=\([0-9.]*\).*/\1/p' "$WORK/mem.out")
	[ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v <= 256) }' ||
		fail "an idle peer costs ${v:-?} KiB of Pss (at most 256 expected)"
	n=$(sed -n 's/.*: core memory \([0-9]*\) KiB now.*/\1/p' "$WORK/mem.out" | sort -n | tail -n 1)
	# the listener's 64 KiB, and per peer a connection (6 KiB) with 16 KiB rings
	[ -n "$n" ] && ((n <= 64 + 48 * (np - 1))) ||
		fail "after the rest a process still holds ${n:-?} KiB in the core (rings not back to their first size)"
	note "$(grep -h 'mpi_check memory' "$WORK/mem.out" | sed 's/^mpi_check //'); core memory after the rest at most $n KiB"
	# 2a. NP/4 MiB for all rings of a process: each peer's rings are held to a share of it
	# (64 packets each), so streams and alltoalls never meet the ceiling: no growth refused,
	# nothing dropped for want of memory, every byte right
	mb=$((np / 4))
	mpi_run share "$np" ri2n,self 120 --mca btl_ri2n_verbose 1 --mca btl_ri2n_ring_mem_mb "$mb" \
		-- --phases stream,alltoall --bw-seconds 2 --rounds 2 ||
		fail "mpirun failed under a $mb MiB ring ceiling (status $?)"
	require_pass share
	mem_check share $((mb * 1024)) "rings of a peer up to 64 + 64 packets"
	[ "$(refused share)" = 0 ] || fail "the ceiling refused $(refused share) growths although every peer had its share"
	[ "$(nomem share)" = 0 ] || fail "$(nomem share) packets dropped for want of memory under the shares"
	note "ring ceiling $mb MiB shared by $((np - 1)) peers: the most any process held was $MEM_MOST KiB, nothing refused or dropped"
	grep -h 'mpi_check stream rank=.*from=\|mpi_check alltoall' "$WORK/share.out" | sed 's/^mpi_check /    /'
	# 2b. no shares, 1 MiB: the ceiling itself refuses growth, says so, and the job goes on
	mpi_run ceiling "$np" ri2n,self 120 --mca btl_ri2n_verbose 1 --mca btl_ri2n_ring_mem_mb 1 \
		--mca btl_ri2n_ring_share 0 -- --phases stream --bw-seconds 2 ||
		fail "mpirun failed under a 1 MiB ring ceiling (status $?)"
	require_pass ceiling
	grep -q 'btl_ri2n: the rings of this process hold .* at the ceiling of 1 MiB' "$WORK/ceiling.out" ||
		fail "no warning that the ring ceiling was reached"
	mem_check ceiling 1024 "ceiling 1024 KiB"
	[ "$(refused ceiling)" -gt 0 ] || fail "no growth refused under a 1 MiB ceiling"
	note "ring ceiling 1 MiB, no shares: the most any process held was $MEM_MOST KiB; $(refused ceiling) growths refused and said so"
	grep -h 'mpi_check stream rank=.*from=' "$WORK/ceiling.out" | sed 's/^mpi_check /    /'
	# 3. the collectives with a rail black-holed mid-stream, left so
	name=bh$np
	mpi_run "$name" "$np" ri2n,self 240 -- --phases stream,allreduce,alltoall,sendrecv --bw-seconds 4 \
		--rounds 4 &
	pid=$!
	after_stream_start "$name" 1.5
	tb_fault blackhole 1 1 on || fail "cannot black-hole rail 1"
	note "rail 1 of host 1 black-holed mid-stream, for good"
	wait "$pid" || fail "mpirun failed with rail 1 black-holed (status $?)"
	require_pass "$name"
	grep -q 'btl_ri2n: .*rail r1 .* down' "$WORK/$name.out" || fail "the BTL never reported rail 1 down"
	report "$name"
	grep -h 'mpi_check alltoall\|mpi_check phase=sendrecv' "$WORK/$name.out" | sed 's/^mpi_check /  /'
	ok "$np ranks on $hosts hosts: links opened on first use, the ring ceiling held, streams, allreduce," \
		"alltoall and random pairs verified with rail 1 of host 1 black-holed"
}

# Not a test: mpi_check's memory phase (Pss growth per peer) and the BTL's own count.
sc_memory() { # NP HOSTS
	bed_up "$2"
	mpi_run mem "$1" ri2n,self 240 --mca btl_ri2n_verbose 1 -- --phases memory --rounds 8 ||
		fail "mpirun failed (status $?)"
	require_pass mem
	grep -h 'mpi_check memory' "$WORK/mem.out" | sed 's/^mpi_check /  /'
	grep -h 'btl_ri2n .*: core memory' "$WORK/mem.out" | sed 's/^/  /' | sort | head -n 4
	grep -h 'btl_ri2n .*,0\] -> .*rings' "$WORK/mem.out" | sed 's/.*; rings/  rank 0: rings/' | head -n 4
}

# Datagrams host 1 sent and received on its rails: with 2 hosts, all between the two.
rail_dgrams() {
	ip netns exec "ri2n-$TAG-h1" awk '/^ *r[0-9]+:/ { sub(/^ *r[0-9]+: */, ""); n += $2 + $10 }
		END { print n + 0 }' /proc/net/dev
}

sc_idle() { # NP [SECONDS]: ranks on 2 hosts, every pair connected, then idle
	local np=$1 secs=${2:-10} pid a b i n
	bed_up 2
	mpi_run idle "$np" ri2n,self 400 --mca btl_ri2n_verbose 1 -- --phases idle \
		--idle-seconds "$secs" &
	pid=$!
	for ((i = 0; i < 3000; i++)); do
		grep -q 'phase=idle start' "$WORK/idle.out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2.5 # past the idle pace's start (1 s without DATA)
	a=$(rail_dgrams)
	sleep 5
	b=$(rail_dgrams)
	wait "$pid" || fail "mpirun failed (status $?)"
	require_pass idle
	# a starved rank (many ranks on few cores) fails rails, whose heartbeats then count too
	note "$np ranks on 2 hosts, idle: $(((b - a) / 5)) datagrams/s on the rails between the hosts;" \
		"$(grep -c 'btl_ri2n: .*rail .* down' "$WORK/idle.out") rail-down report(s) in the run"
	grep -h 'btl_ri2n .*rail monitors' "$WORK/idle.out" | sed 's/^/  /' | head -n 2
	# every rank's links to the NP-1 others joined a rail monitor (rn_hmon's count)
	n=$(grep -Ec "btl_ri2n .*rail monitors: ([0-9]+) links joined" "$WORK/idle.out")
	[ "$n" = "$np" ] || fail "$n of $np ranks reported their rail monitors"
	grep -h 'btl_ri2n .*rail monitors' "$WORK/idle.out" |
		awk -v want=$((np - 1)) '{ for (i = 1; i < NF; i++) if ($i == "links") n = $(i - 1);
			if (n < want) bad = 1 } END { exit bad }' ||
		fail "a rank's links did not all join a rail monitor"
	ok "$np ranks idle ${secs} s: every byte verified, every link in a rail monitor"
}

sc_compute() {
	bed_up 2
	mpi_run compute 2 ri2n,self 120 --mca btl_ri2n_dead_peer_ms 3000 -- \
		--phases pingpong,compute --max-size 64k --compute-seconds 5 ||
		fail "a rank that computed 5 s without MPI calls was taken for dead (status $?)"
	require_pass compute
	grep -h 'recv_after_nap_ms' "$WORK/compute.out" | sed 's/^mpi_check /  /'
	ok "5 s without MPI calls under a 3 s dead-peer timeout: the keeper kept the peer alive"
}

sc_all_dead() {
	local pid rc t0 t1 secs
	bed_up 2
	mpi_run dead 2 ri2n,self 150 --mca btl_ri2n_dead_peer_ms 3000 -- --bw-seconds 120 &
	pid=$!
	after_stream_start dead 1.5
	tb_fault blackhole 1 1 on && tb_fault blackhole 1 2 on || fail "cannot black-hole the rails"
	t0=$(date +%s.%N)
	wait "$pid"
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	[ "$rc" -ne 0 ] || fail "the job succeeded with every rail dead"
	[ "$rc" -ne 137 ] || fail "the job hung until killed ($secs s) instead of aborting"
	grep -q 'btl_ri2n: lost every rail to rank' "$WORK/dead.out" ||
		fail "no 'lost every rail' sentence from the BTL"
	awk -v s="$secs" 'BEGIN { exit !(s < 60) }' || fail "the abort took $secs s"
	grep -h 'btl_ri2n: lost every rail' "$WORK/dead.out" | head -n 1 | sed 's/^/  /'
	ok "every rail dead: the job aborted $secs s after the black hole (dead-peer timeout 3 s), status $rc"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }

sc_bench() { # N
	local n=${1:-5} i b f
	bed_up 2
	: >"$WORK/bench.txt"
	for ((i = 1; i <= n; i++)); do
		for b in ri2n tcp; do
			mpi_run "b-$b" 2 "$b,self" 120 -- --phases latency,stream --bw-seconds 5 \
				--lat-iters 30000 || fail "$b round $i failed"
			require_pass "b-$b"
			f=$WORK/b-$b.out
			echo "$b lat_mean $(sed -n 's/.*latency size=8 .* one_way_us=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
			echo "$b lat_median $(sed -n 's/.*median_one_way_us=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
			echo "$b stream $(sed -n 's/.*stream rank=1 from=0 .*MBps=\([0-9.]*\).*/\1/p' "$f")" >>"$WORK/bench.txt"
		done
	done
	echo "rounds: $n, 2 ranks on 2 hosts, rails shaped to 1 Gbit/s; btl/tcp uses rail r1 only"
	printf '%-34s %10s %10s %8s\n' "figure (median over rounds)" ri2n tcp ratio
	for f in lat_median lat_mean stream; do
		local a b
		a=$(awk -v f=$f '$1=="ri2n" && $2==f {print $3}' "$WORK/bench.txt" | median)
		b=$(awk -v f=$f '$1=="tcp" && $2==f {print $3}' "$WORK/bench.txt" | median)
		printf '%-34s %10s %10s %8s\n' "$f$([ $f = stream ] && echo ' (MB/s)' || echo ' one-way (us)')" \
			"$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2fx", a / b }')"
	done
	echo "per round:"
	awk '{ printf "  %-5s %-11s %s\n", $1, $2, $3 }' "$WORK/bench.txt"
}

# NUDGES datagrams shaped like nudges naming processes of no job, from HOST's
# namespace to ADDR:PORT (plain, untagged: the job has no key).
nudge_flood() { # HOST ADDR PORT NUDGES
	ip netns exec "ri2n-$TAG-h$1" python3 - "$2" "$3" "$4" <<'PY'
import socket, struct, sys, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(n):
    s.sendto(struct.pack("!IB3xII", 0x52324E42, 1, 0x7E570000 + i % 7, 1000 + i), (addr, port))
    if i % 50 == 49:
        time.sleep(0.005)
PY
}

# The UDP port the process named NAME has bound to ADDR in HOST's namespace.
udp_port_of() { # HOST NAME ADDR
	ip netns exec "ri2n-$TAG-h$1" ss -uanpH | awk -v p="\"$2\"" -v a="$3" '
		index($0, p) { n = split($4, x, ":"); if (x[1] == a) { print x[n]; exit } }'
}

sc_nudge_flood() {
	local name=nudge pid r a p i sent=0 refused links
	bed_up 2 mpinf
	mpi_run "$name" 2 ri2n,self 240 --mca btl_ri2n_verbose 1 -- --bw-seconds 4 &
	pid=$!
	after_stream_start "$name" 0.5
	for r in 1 2; do
		a=$(tb_addr 2 "$r")
		p=""
		for ((i = 0; i < 20 && ${#p} == 0; i++)); do
			p=$(udp_port_of 2 mpi_check "$a")
			[ -n "$p" ] || sleep 0.1
		done
		[ -n "$p" ] || fail "rank 1's BTL port on rail $r not found"
		nudge_flood 1 "$a" "$p" 1000 || fail "the nudge flood failed"
		sent=$((sent + 1000))
	done
	note "$sent nudges naming strangers sent to rank 1 during the stream phase"
	wait "$pid" || fail "mpirun failed (status $?)"
	require_pass "$name"
	report "$name"
	refused=$(sed -n 's/.*btl_ri2n \[\[[0-9]*,[0-9]*\],1\]: refused \([0-9]*\) nudges.*/\1/p' "$WORK/$name.out" | head -n 1)
	[ -n "$refused" ] && [ "$refused" -gt 0 ] || fail "rank 1 counted no refused nudge: $(grep -m3 'btl_ri2n .*refused' "$WORK/$name.out")"
	links=$(grep -c 'btl_ri2n \[\[[0-9]*,[0-9]*\],1\] -> .*failed authentication' "$WORK/$name.out")
	[ "$links" = 1 ] || fail "rank 1 has $links links after the flood (1 expected): $(grep 'btl_ri2n \[\[[0-9]*,[0-9]*\],1\] -> ' "$WORK/$name.out" | head -n 5)"
	ok "nudge flood: every byte verified; rank 1 refused $refused of $sent nudges naming strangers and kept its one link"
}

# The pid of the rank VPID (its mpi_check) in HOST's namespace.
rank_pid() { # HOST VPID
	local p
	for p in $(ip netns pids "ri2n-$TAG-h$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = mpi_check ] &&
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
			{ echo "$p"; return; }
	done
}

sc_killed_rank() {
	local pid rpid i t0 ms
	bed_up 2 mpikill
	# orte_enable_recovery: mpirun leaves the other ranks running when one dies,
	# so what rank 0's BTL makes of it is seen
	mpi_run kill 2 ri2n,self 90 --mca orte_enable_recovery 1 -- --phases stream \
		--bw-seconds 60 &
	pid=$!
	after_stream_start kill 1
	rpid=$(rank_pid 2 1)
	[ -n "$rpid" ] || fail "rank 1 not found"
	kill -9 "$rpid"
	t0=$(date +%s%N)
	for ((i = 0; i < 100; i++)); do
		grep -q 'btl_ri2n: .*reset the connection' "$WORK/kill.out" && break
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill_ranks
	wait "$pid" 2>/dev/null
	[ $i -lt 100 ] || fail "rank 0 was not told of the connection's reset within 10 s of rank 1's kill -9"
	grep -h 'btl_ri2n: .*reset the connection' "$WORK/kill.out" | head -n 1 | sed 's/^/  /'
	ok "rank 1 killed -9 mid-stream: rank 0's BTL reported the reset after ${ms} ms"
}

sc_hostile_hello() {
	local name=hello pid rpid a p jobid hostile=${RI2N_HOSTILE:-$ROOT/build/tests/mpi/ri2n_hostile_hello}
	local refused i
	[ -x "$hostile" ] || skip "ri2n_hostile_hello not built at $hostile"
	bed_up 2 mpihh
	# a taken-over stream leaves the job hanging: 120 s bound it
	mpi_run "$name" 2 ri2n,self 120 --mca btl_ri2n_verbose 1 -- --bw-seconds 4 &
	pid=$!
	after_stream_start "$name" 0.5
	rpid=$(rank_pid 2 1)
	[ -n "$rpid" ] || fail "rank 1 not found"
	jobid=$(tr '\0' '\n' <"/proc/$rpid/environ" | sed -n 's/^OMPI_MCA_ess_base_jobid=//p')
	[ -n "$jobid" ] || fail "rank 1's job id not found"
	a=$(tb_addr 2 1)
	p=""
	for ((i = 0; i < 20 && ${#p} == 0; i++)); do
		p=$(udp_port_of 2 mpi_check "$a")
		[ -n "$p" ] || sleep 0.1
	done
	[ -n "$p" ] || fail "rank 1's BTL port not found"
	RI2N_RAILS=r1,r2 ip netns exec "ri2n-$TAG-h1" timeout -s KILL 20 "$hostile" "$a" "$p" "$jobid" 0 2 \
		>"$WORK/hostile.log" 2>&1
	grep -q '^hostile hello: sent' "$WORK/hostile.log" ||
		fail "the hostile process did not send its hello: $(cat "$WORK/hostile.log")"
	note "$(grep 'hostile hello:' "$WORK/hostile.log" | tr '\n' ' ')(job $jobid, rank 1 at $a:$p)"
	wait "$pid" || fail "mpirun failed (status $?)"
	require_pass "$name"
	report "$name"
	grep -q '^hostile hello: read 0 bytes' "$WORK/hostile.log" ||
		fail "the hostile process read rank 0's traffic: $(cat "$WORK/hostile.log")"
	refused=$(sed -n 's/.*btl_ri2n \[\[[0-9]*,[0-9]*\],1\]: refused [0-9]* nudges, \([0-9]*\) hellos.*/\1/p' "$WORK/$name.out" | head -n 1)
	[ -n "$refused" ] && [ "$refused" -ge 1 ] ||
		fail "rank 1 counted no refused hello: $(grep -m3 'btl_ri2n .*refused' "$WORK/$name.out")"
	ok "hostile hello naming rank 0: every byte verified, rank 1 refused $refused hello(s), the impostor read nothing"
}

case $SC in
keyed) sc_keyed ;;
two-ranks) sc_ranks 2 2 ri2n,self ;;
four-ranks) sc_ranks 4 4 ri2n,self ;;
no-self) sc_ranks 2 2 ri2n ;;
blackhole) sc_blackhole 2 2 1 ;;
blackhole-four) sc_blackhole 4 4 0 ;;
v6) sc_v6 all ;;
v6-mixed) sc_v6 2 ;;
addr-gone) sc_addr_gone ;;
addr-change) sc_addr_change ;;
rail-new) sc_rail_new ;;
compute) sc_compute ;;
all-dead) sc_all_dead ;;
nudge-flood) sc_nudge_flood ;;
hostile-hello) sc_hostile_hello ;;
killed-rank) sc_killed_rank ;;
eight-ranks) sc_many 8 4 ;;
sixteen-ranks) sc_many 16 8 ;;
memory) sc_memory "${2:-16}" "${3:-8}" ;;
idle) sc_idle "${2:-16}" ;;
idle-eight) sc_idle 8 8 ;;
bench) sc_bench "${2:-5}" ;;
*) echo "usage: $0 ompi-info|keyed|two-ranks|four-ranks|no-self|blackhole|blackhole-four|v6|v6-mixed|addr-gone|addr-change|rail-new|compute|all-dead|nudge-flood|hostile-hello|killed-rank|eight-ranks|sixteen-ranks|memory [NP HOSTS]|idle [NP]|idle-eight|bench [N]"; exit 2 ;;
esac
exit 0
