#!/usr/bin/env bash
# tests/api/run.sh TEST_BINARY [FILTER [SKIP]] - runs the API semantics test
# in a network namespace of its own, ri2n-api-<pid>, with lo up and two rails,
# r1 198.18.1.1/24 and r2 198.18.2.1/24 (dummy interfaces; a veth pair each
# where the kernel has no dummy driver).  Both ends of every connection live
# in the test process or its children, so traffic between the two local
# addresses goes over loopback inside the namespace.  The namespace is
# removed on exit, also on failure or Ctrl-C.  Exit 77 (skip) without root.
set -uo pipefail

bin=${1:?usage: run.sh TEST_BINARY}
shift

skip() {
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "the API test needs root (it creates a network namespace)"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
[ -x "$bin" ] || { echo "FAIL: no test binary at $bin"; exit 1; }

# a run killed outright (SIGKILL, e.g. a ctest timeout) cannot clean up: remove
# namespaces of earlier runs whose process is gone
for old in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ri2n-api-[0-9]+$'); do
	kill -0 "${old#ri2n-api-}" 2>/dev/null || ip netns del "$old" 2>/dev/null
done

ns=ri2n-api-$$
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

ip netns add "$ns" || skip "cannot create network namespace $ns"
ip -n "$ns" link set lo up || { echo "FAIL: lo up in $ns"; exit 1; }
# a dummy interface per rail; kernels without the dummy driver get a veth
# pair whose other end (rNp, no address) stays in the namespace and drops all
kind=dummy
for i in 1 2; do
	if [ "$kind" = dummy ] && ! ip -n "$ns" link add "r$i" type dummy 2>/dev/null; then
		kind=veth
	fi
	if [ "$kind" = veth ]; then
		ip -n "$ns" link add "r$i" type veth peer name "r${i}p" 2>/dev/null ||
			skip "cannot create dummy or veth interfaces"
		ip -n "$ns" link set "r${i}p" up
	fi
	if ! ip -n "$ns" addr add "198.18.$i.1/24" dev "r$i" || ! ip -n "$ns" link set "r$i" up; then
		echo "FAIL: rail r$i in $ns"
		exit 1
	fi
done
# 198.18.1.99 (the silent peer of the connect-timeout test) must swallow
# datagrams without an answer, not even a failed ARP's host unreachable
if [ "$kind" = veth ]; then
	ip -n "$ns" neigh replace 198.18.1.99 lladdr 02:00:00:00:01:99 nud permanent dev r1 ||
		{ echo "FAIL: neighbour entry in $ns"; exit 1; }
fi
echo "namespace $ns: rails r1 198.18.1.1/24, r2 198.18.2.1/24 ($kind)"

# not exec: the trap must run once the test ends
RI2N_RAILS=r1,r2 ip netns exec "$ns" "$bin" "$@"
