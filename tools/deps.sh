#!/usr/bin/env bash
# Installs the Debian packages ri2n needs, only when some are missing.
#   tools/deps.sh          build + test + demo dependencies
#   tools/deps.sh --build  only what building the library needs
#   tools/deps.sh --bench  those of the default, plus the programs bench/run.sh measures
#                          ri2n-run with (redis-server and redis-benchmark, memcached and memaslap)
set -euo pipefail

# libssl-dev: OpenSSL 3's libcrypto seals keyed datagrams (AES-256-GCM, HKDF)
build_pkgs=(build-essential cmake pkg-config libsodium-dev libssl-dev libevent-dev libcmocka-dev
	libhwloc-dev libopenmpi-dev openmpi-bin clang libclang-rt-14-dev libfabric-dev)
# libipsec-mb-dev (amd64 only): Intel's AES-256-GCM, about 3 times faster per keyed datagram
# than OpenSSL 3.0's; without it the build seals with OpenSSL, on the same wire
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] && build_pkgs+=(libipsec-mb-dev)
# libfabric-dev: ofi/ builds the libfabric provider libri2n-fi.so against it
run_pkgs=(iproute2 nftables iputils-ping iperf3 sockperf gnuplot-nox netcat-openbsd curl nginx
	procps util-linux python3 psmisc mptcpize groff-base libfabric-bin wrk mpich libmpich-dev
	prometheus debhelper lintian shellcheck)
# libfabric-bin: fi_info and fi_pingpong for tests/ofi and the bench's libfabric rows
# mpich, libmpich-dev: tests/mpi/run_ri2n_run.sh runs MPICH 4 under ri2n-run (mpiexec.mpich,
# mpicc.mpich); Open MPI stays the default mpirun/mpicc (restored below if installing moved them)
# prometheus: its promtool checks ri2n-stat --prometheus (netns_prom); where systemd runs,
# Debian's package also enables a prometheus service on port 9090 (the tests need none)
# debhelper, lintian: tests/pkg builds the Debian packages (debian/) and checks them
# (dpkg-dev, which builds them, comes with build-essential)
# the lint_shellcheck test (tests/check_shell.sh) runs shellcheck
# groff-base: tests/man checks that the man pages render without warnings
# wrk: tests/shim (netns_shim_close) and the bench's connection-per-request figure
# nginx: tests/shim (netns_shim_nginx, netns_shim_close); like redis-server, Debian enables its service where
# systemd runs (the tests start their own in their namespaces).
# Only for the bench (Debian's redis-server package also enables a redis service on
# 127.0.0.1:6379 where systemd runs; the bench starts its own servers in its namespaces)
# memcached, libmemcached-tools (memaslap, as memcaslap): the bench's cache row
bench_pkgs=(redis-server redis-tools memcached libmemcached-tools)

want=("${build_pkgs[@]}")
[ "${1:-}" = "--build" ] || want+=("${run_pkgs[@]}")
[ "${1:-}" = "--bench" ] && want+=("${bench_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "ri2n: missing Debian packages: ${missing[*]}" >&2
	echo "ri2n: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "ri2n: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Debian's alternatives pick Open MPI (priority 50) over MPICH (40) for mpirun, mpicc and
# mpiexec; should a setting have moved them, put back what they pointed to
alt_mpi=$(readlink /etc/alternatives/mpi 2>/dev/null || true)
alt_mpirun=$(readlink /etc/alternatives/mpirun 2>/dev/null || true)
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for a in mpi:"$alt_mpi" mpirun:"$alt_mpirun"; do
	name=${a%%:*} was=${a#*:}
	[ -n "$was" ] && [ -e "$was" ] || continue
	[ "$(readlink "/etc/alternatives/$name")" = "$was" ] || update-alternatives --set "$name" "$was"
done
