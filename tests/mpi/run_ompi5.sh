#!/bin/bash
# run_ompi5.sh [SCENARIO...] - the MPI suite against Open MPI 5.0, from a Debian 13 root.
#
# The same btl_ri2n source the build makes for the machine's Open MPI (4.1 on
# Debian 12) is built inside a Debian 13 (trixie) root against its Open MPI
# 5.0, and run_mpi.sh's scenarios run there, ranks in test-bed namespaces.
# Default scenarios: ompi-info (the component and its parameters) and
# blackhole-four (4 ranks on 4 hosts: every byte of the ping-pong, stream,
# allreduce, alltoall and random-pair phases verified, rail 1 of host 1
# black-holed mid-stream for good).
#
# The root is made once with debootstrap and kept (RI2N_TRIXIE_ROOT, default
# /var/cache/ri2n/trixie; made again only when missing or its package list
# changed): Debian 13 with openmpi-bin, libopenmpi-dev and what building ri2n
# needs, and, from Debian's source package of the same Open MPI, the few
# headers libopenmpi-dev leaves out (docs/MPI.md).  The mirror is the first
# Debian one in /etc/apt/sources.list* (RI2N_DEBIAN_MIRROR overrides it).
#
# Everything runs in a private mount namespace: /proc, /sys, /dev, a fresh
# /run and /tmp, and the source (read-only, at /src) are mounted into the root
# there and vanish with it, whatever way the run ends.  The test beds'
# records go to a directory of this run's own in the machine's /run, shared
# into the root, so a bed the run leaves behind is removed from outside.
#
# Needs root; skips (77) with one line saying why where the root cannot be
# made (no debootstrap, no network) or namespaces cannot be.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TROOT=${RI2N_TRIXIE_ROOT:-/var/cache/ri2n/trixie}
# what the root holds; a change to the list makes the root again
PKGS="build-essential cmake pkg-config libsodium-dev libssl-dev libcmocka-dev"
PKGS+=" openmpi-bin libopenmpi-dev iproute2 nftables procps util-linux"
STAMP=.ri2n-root

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# ---- inside the root (chroot): build, then the scenarios ----

if [ "${1:-}" = --in-root ]; then
	shift
	export RI2N_NETNS_TAG_LETTER=${RI2N_NETNS_TAG_LETTER:-} PATH=/usr/sbin:/usr/bin:/sbin:/bin
	b=/tmp/build
	echo "== building in Debian $(cat /etc/debian_version): Open MPI $(ompi_info --version 2>/dev/null |
		sed -n 's/^Open MPI v//p')"
	cmake -S /src -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRI2N_UNIT=OFF -DRI2N_OFI=OFF \
		-DRI2N_OMPI_SOURCE=/opt/ompi-src >$b.log 2>&1 || { tail -n 20 $b.log; fail "cmake failed"; }
	grep 'btl_ri2n:' $b.log
	grep -q 'btl_ri2n: building mca_btl_ri2n.so' $b.log || fail "the BTL is not part of the build against Open MPI 5"
	cmake --build $b -j2 --target mca_btl_ri2n mpi_check >>$b.log 2>&1 ||
		{ grep -B2 -A8 'error' $b.log | head -n 40; fail "the build failed"; }
	echo "built mca_btl_ri2n.so and mpi_check in $SECONDS s"
	rc=0
	for sc in "$@"; do
		echo "== $sc (Open MPI 5)"
		RI2N_BTL_DIR=$b/btl_ri2n RI2N_MPI_CHECK=$b/tests/mpi/mpi_check /src/tests/mpi/run_mpi.sh "$sc"
		r=$?
		[ $r -eq 0 ] || { echo "scenario $sc: status $r"; rc=1; }
	done
	exit $rc
fi

# ---- on the machine ----

[ "$(id -u)" -eq 0 ] || skip "the Open MPI 5 stage needs root (chroot, namespaces)"
for t in unshare chroot mount flock; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done

mirror() {
	local m
	m=${RI2N_DEBIAN_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v '^ *#' |
		grep -o 'https\?://[^ ]*/debian/\?\( \|$\)' | head -n 1 | tr -d ' ')}
	echo "${m:-http://deb.debian.org/debian}"
}

root_ready() { [ -f "$TROOT/$STAMP" ] && [ "$(cat "$TROOT/$STAMP")" = "$PKGS" ]; }

# Commands in the root, in a mount namespace of their own: its mounts go with it.
in_root() { # SCRIPT (run by /bin/sh inside the root)
	unshare -m --propagation private /bin/sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && exec chroot "$r" /bin/sh -c "$1"
	' sh "$1" "$2"
}

# Removes the root DIR unless something is mounted under it (never a
# directory /dev or /sys is bound into).
drop() { # DIR
	findmnt -rn -o TARGET | grep -q "^$1/" && { echo "mounts left under $1"; return 1; }
	rm -rf --one-file-system "$1"
}

# debootstrap into a new directory, then the packages, then the headers; the
# new root replaces the old one only once whole.
make_root() {
	local new=$TROOT.new log=$TROOT.log m
	m=$(mirror)
	drop "$new" || return 1
	mkdir -p "$(dirname "$TROOT")"
	echo "making the Debian 13 root in $TROOT from $m (once; 1-2 minutes)"
	debootstrap --variant=minbase trixie "$new" "$m" >"$log" 2>&1 ||
		{ echo "debootstrap failed: $(grep -m1 '^E:' "$log" || tail -n 1 "$log")"; drop "$new"; return 1; }
	cp /etc/resolv.conf "$new/etc/resolv.conf"
	echo "deb-src $m trixie main" >"$new/etc/apt/sources.list.d/ri2n-src.list"
	# the source package of the same Open MPI gives the headers libopenmpi-dev leaves out
	in_root "$new" "export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $PKGS &&
		mkdir -p /opt/ompi-src && cd /opt/ompi-src && apt-get source --download-only -qq openmpi &&
		tar -xJf openmpi_*.orig.tar.xz --strip-components=1 --wildcards \
			'*/opal/mca/threads/pthreads/*.h' '*/opal/mca/timer/linux/*.h' &&
		rm -f openmpi_* && apt-get clean" >>"$log" 2>&1 ||
		{ echo "installing Open MPI 5 in the root failed: $(grep -m1 '^E:' "$log" || tail -n 1 "$log")"
		  drop "$new"; return 1; }
	echo "$PKGS" >"$new/$STAMP"
	drop "$TROOT" || return 1
	mv "$new" "$TROOT"
	echo "made the root in $SECONDS s"
}

mkdir -p "$(dirname "$TROOT")"
exec {lock}>"$TROOT.lock"
flock "$lock"
if ! root_ready; then
	command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
	why=$(make_root) || skip "cannot make the Debian 13 root: $(echo "$why" | tail -n 1)"
	echo "$why"
fi

[ $# -gt 0 ] || set -- ompi-info blackhole-four

# The beds the run makes are recorded in a directory of its own, shared into
# the root; one still there after the run (it was killed) is removed from
# here: its namespaces went with the mount namespace, its links in this
# network namespace (the management bridge) did not.
STATE=$(mktemp -d /run/ri2n-testbed-ompi5.XXXXXX) || fail "cannot make a directory in /run"
pid=""
mntns=""
leftovers() {
	local f i p
	if [ -n "$pid" ]; then # interrupted: the root's side cleans up first (its traps), 10 s at most
		kill -- -"$pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	# whatever still runs in the run's mount namespace (timeout(1) puts mpirun in a
	# process group of its own) is the run's
	[ -n "$mntns" ] && for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$mntns" ] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	for f in "$STATE"/*.state; do
		[ -f "$f" ] || continue
		echo "removing the bed $(basename "$f" .state) the run left"
		TB_STATE_DIR=$STATE "$ROOT/tools/ri2n-testbed.sh" destroy --tag "$(basename "$f" .state)" \
			--force >/dev/null 2>&1
	done
	rm -rf "$STATE"
}
trap leftovers EXIT
trap 'exit 130' INT TERM

# its own process group (set -m), so that what it started can be killed with it
set -m
unshare -m --propagation private /bin/sh -c '
	r=$1 src=$2 state=$3; shift 3
	# the root a mount point of its own: ip netns exec makes / a slave mount
	mount --bind "$r" "$r" && mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" &&
	mount --rbind /dev "$r/dev" &&
	mount -t tmpfs tmpfs "$r/run" && mount -t tmpfs tmpfs "$r/tmp" &&
	mkdir -p "$r/run/ri2n-testbed" "$r/src" && mount --bind "$state" "$r/run/ri2n-testbed" &&
	mount --bind "$src" "$r/src" && mount -o remount,bind,ro "$r/src" ||
		{ echo "SKIP: cannot mount into the root"; exit 77; }
	exec chroot "$r" /bin/bash /src/tests/mpi/run_ompi5.sh --in-root "$@"
' sh "$TROOT" "$ROOT" "$STATE" "$@" &
pid=$!
set +m
for ((i = 0; i < 100; i++)); do # the mount namespace it made, once it made it
	mntns=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)
	[ -n "$mntns" ] && [ "$mntns" != "$(readlink /proc/self/ns/mnt)" ] && break
	mntns=""
	sleep 0.02
done
wait "$pid"
rc=$?
pid=""
echo "Open MPI 5 stage: $SECONDS s in all"
exit $rc
