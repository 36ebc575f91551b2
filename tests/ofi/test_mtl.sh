#!/usr/bin/env bash
# tests/ofi/test_mtl.sh SCENARIO - Open MPI over libfabric's ri2n provider:
# --mca pml cm --mca mtl ofi, FI_PROVIDER=ri2n, each rank in its own test-bed
# namespace (tests/mpi/netns-launch.sh), 2 rails shaped to 1 Gbit/s;
# tests/mpi/mpi_check checks every byte (ping-pong, stream, allreduce,
# alltoall, sendrecv).
#
#   mtl            2 ranks: the whole program passes
#   mtl-blackhole  2 ranks; rail 1 of host 1 black-holed 1.5 s into the stream
#                  phase, healed 2.5 s later: the program passes, the provider
#                  saw the rail go down
#
# Environment: FI_PROVIDER_PATH (directory of libri2n-fi.so), RI2N_MPI_CHECK.
# Skips (77) without root, Open MPI's mtl/ofi or the provider.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SC=${1:?usage: test_mtl.sh mtl|mtl-blackhole}
WORK=$(mktemp -d /tmp/ri2n-mtl.XXXXXX)

skip() { echo "SKIP: $*"; rm -rf "$WORK"; exit 77; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
	echo "FAIL: $*"
	[ -f "$WORK/run.out" ] && grep -v 'stream rank=.* t=' "$WORK/run.out" | tail -n 30
	exit 1
}

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v mpirun >/dev/null || skip "Open MPI is not installed"
ompi_info 2>/dev/null | grep -q 'MCA mtl: ofi' || skip "Open MPI has no mtl/ofi"
PROV=${FI_PROVIDER_PATH:-}
[ -f "$PROV/libri2n-fi.so" ] || skip "libri2n-fi.so not built (FI_PROVIDER_PATH=$PROV)"
MPI_CHECK=${RI2N_MPI_CHECK:-}
[ -x "$MPI_CHECK" ] || skip "mpi_check not built (mpicc)"

# shellcheck source=../../tools/ri2n-testbed.sh
source "$ROOT/tools/ri2n-testbed.sh"
# shellcheck source=../netns/tag.sh
source "$ROOT/tests/netns/tag.sh"
set +e
TAG=$(nt_tag "mtl-$SC") || fail "no test-bed tag"
kill_ranks() {
	local h p
	for h in 1 2; do
		for p in $(ip netns pids "ri2n-$TAG-h$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
}
cleanup() { kill_ranks; [ "${MPI_KEEP:-0}" = 1 ] && echo "logs in $WORK" || rm -rf "$WORK"; }
tb_use "$TAG"
tb_on_exit cleanup
tb_cleanup_on_exit
tb_exists && tb_destroy >/dev/null 2>&1
tb_create --hosts 2 --rails 2 --rate 1gbit >/dev/null || fail "test bed"
MGMT=$(tb_mgmt_subnet)

run() { # mpi_check args...
	RI2N_MPI_NS_PREFIX=ri2n-$TAG-h RI2N_MPI_HOSTS=2 PMIX_MCA_ptl_base_if_include=$MGMT \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	FI_PROVIDER=ri2n FI_PROVIDER_PATH=$PROV RI2N_RAILS=r1,r2 RI2N_LOG=info \
		timeout -s KILL 240 mpirun --oversubscribe --bind-to none -np 2 \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ri2n --mca btl self \
		-x FI_PROVIDER -x FI_PROVIDER_PATH -x RI2N_RAILS -x RI2N_LOG \
		-x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS -x PMIX_MCA_ptl_base_if_include \
		"$ROOT/tests/mpi/netns-launch.sh" "$MPI_CHECK" "$@" >"$WORK/run.out" 2>&1
	local rc=$?
	kill_ranks
	return $rc
}

report() {
	grep -h 'latency size=8 ' "$WORK/run.out" | sed 's/^mpi_check /  /'
	grep -h 'stream rank=.*from=' "$WORK/run.out" | sed 's/^mpi_check /  /'
	grep -h 'ri2n provider: .*rail [0-9] \(down\|up\)' "$WORK/run.out" | sed 's/^/  /' | head -n 8
}

case $SC in
mtl)
	run --bw-seconds 5 || fail "mpirun failed (status $?)"
	grep -q 'mpi_check result=PASS' "$WORK/run.out" || fail "the program did not pass"
	grep -q 'ri2n provider: endpoint closed' "$WORK/run.out" || fail "ri2n was not the provider"
	report
	ok "2 ranks over mtl/ofi with FI_PROVIDER=ri2n: every byte verified"
	;;
mtl-blackhole)
	run --bw-seconds 6 &
	pid=$!
	for ((i = 0; i < 1200; i++)); do
		grep -q 'phase=stream start' "$WORK/run.out" 2>/dev/null && break
		sleep 0.05
	done
	sleep 1.5
	tb_fault blackhole 1 1 on || fail "cannot black-hole rail 1"
	sleep 2.5
	tb_fault blackhole 1 1 off
	wait "$pid" || fail "mpirun failed with rail 1 black-holed (status $?)"
	grep -q 'mpi_check result=PASS' "$WORK/run.out" || fail "the program did not pass"
	grep -q 'ri2n provider: .*rail 0 down' "$WORK/run.out" ||
		fail "the provider never reported rail 1 (index 0) down"
	report
	grep -h 'stream rank=.* t=' "$WORK/run.out" | sed 's/^mpi_check /  /' | head -n 16
	ok "mtl/ofi over ri2n: rail 1 black-holed mid-stream and healed, every byte verified"
	;;
*) fail "unknown scenario $SC" ;;
esac
exit 0
