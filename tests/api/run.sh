#!/usr/bin/env bash
# tests/api/run.sh TEST_BINARY [FILTER [SKIP]] - runs the API semantics test
# in a network namespace of its own with lo up and two rails, r1
# 198.18.1.1/24 and r2 198.18.2.1/24 (dummy interfaces; a veth pair each
# where the kernel has no dummy driver).  Both ends of every connection live
# in the test process or its children, so traffic between the two local
# addresses goes over loopback inside the namespace.
#
# With RI2N_API_V6=1, r1 and r2 also hold 2001:2:0:1::1/64 and
# 2001:2:0:2::1/64 and the rails are those addresses (tests/api/api_v6.c).
#
# As root: a named namespace, ri2n-api-<pid>, removed on exit, also on
# failure or Ctrl-C.  As any other user (or with RI2N_API_USERNS=1): a user
# and network namespace of its own (unshare), where the user is root over
# that namespace only; it goes away with the test.  Exit 77 (skip) when
# neither is possible.
bin=${1:?usage: run.sh TEST_BINARY}
shift

skip() {
	echo "SKIP: $*"
	exit 77
}

command -v ip >/dev/null || skip "ip (iproute2) is not installed"
rails=r1,r2
[ "${RI2N_API_V6:-0}" = 1 ] && rails=2001:2:0:1::1,2001:2:0:2::1
[ -x "$bin" ] || { echo "FAIL: no test binary at $bin"; exit 1; }

# the rails in the current namespace: lo up, r1 and r2 with their addresses
# (ip -n NS ... for a named one); $kind says which interfaces
make_rails() { # [-n NS]
	local i
	ip "$@" link set lo up || { echo "FAIL: lo up"; exit 1; }
	kind=dummy
	for i in 1 2; do
		if [ "$kind" = dummy ] && ! ip "$@" link add "r$i" type dummy 2>/dev/null; then
			kind=veth
		fi
		if [ "$kind" = veth ]; then
			ip "$@" link add "r$i" type veth peer name "r${i}p" 2>/dev/null ||
				skip "cannot create dummy or veth interfaces"
			ip "$@" link set "r${i}p" up
		fi
		if ! ip "$@" addr add "198.18.$i.1/24" dev "r$i" || ! ip "$@" link set "r$i" up; then
			echo "FAIL: rail r$i"
			exit 1
		fi
		# nodad: an address under duplicate detection cannot be bound for a second or two
		if [ "${RI2N_API_V6:-0}" = 1 ] && ! ip "$@" addr add "2001:2:0:$i::1/64" dev "r$i" nodad; then
			echo "FAIL: rail r$i's IPv6 address"
			exit 1
		fi
	done
	# 198.18.1.99 (the silent peer of the connect-timeout test) must swallow
	# datagrams without an answer, not even a failed ARP's host unreachable
	if [ "$kind" = veth ]; then
		ip "$@" neigh replace 198.18.1.99 lladdr 02:00:00:00:01:99 nud permanent dev r1 ||
			{ echo "FAIL: neighbour entry"; exit 1; }
	fi
}

if [ "${RI2N_API_IN_USERNS:-0}" = 1 ]; then
	# inside the user and network namespace unshare made (below)
	make_rails
	echo "user namespace $(readlink /proc/self/ns/user): rails r1 198.18.1.1/24, r2 198.18.2.1/24 ($kind)"
	RI2N_RAILS=$rails exec "$bin" "$@"
fi
if [ "$(id -u)" -ne 0 ] || [ "${RI2N_API_USERNS:-0}" = 1 ]; then
	command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
	unshare --user --map-root-user --net true 2>/dev/null ||
		skip "this kernel does not let this user make a user and network namespace"
	RI2N_API_IN_USERNS=1 exec unshare --user --map-root-user --net -- "$0" "$bin" "$@"
fi

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
make_rails -n "$ns"
echo "namespace $ns: rails r1 198.18.1.1/24, r2 198.18.2.1/24 ($kind)"

# not exec: the trap must run once the test ends
RI2N_RAILS=$rails ip netns exec "$ns" "$bin" "$@"
