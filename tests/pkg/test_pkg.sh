#!/usr/bin/env bash
# Builds ri2n's Debian packages (debian/) from a copy of the source tree, installs them into
# this machine with apt, and checks, with no *_PATH variable set, what a user of the packages
# relies on: ompi_info lists btl ri2n, fi_info -p ri2n lists the provider, pkg-config and
# find_package(ri2n) build and link a program, ri2n-run, ri2n-info and the man pages are
# found, ri2n-xfer moves a verified stream over two rails between two namespaces and a 2-rank
# MPI job runs with --mca btl ri2n,self. Then it purges the packages and checks that no file
# they installed is left. The packages are purged also when a check fails.
#   tests/pkg/test_pkg.sh     (root, dpkg-buildpackage and debhelper; 77 = skipped)
# RI2N_PKG_KEEP_DEBS=DIR copies the .debs there.
src=$(cd "$(dirname "$0")/../.." && pwd)
export RI2N_XFER=/usr/bin/ri2n-xfer # lib.sh's ri2n-xfer: the installed one
source "$src/tests/netns/lib.sh"

PKGS=(libri2n0 libri2n-dev ri2n-tools ri2n-openmpi ri2n-libfabric)
# a failure before the packages are installed has nothing to purge
installed=0

pkg_purge() {
	[ "$installed" = 1 ] || return 0
	installed=0
	DEBIAN_FRONTEND=noninteractive dpkg --purge "${PKGS[@]}" >"$NT_DIR/purge.log" 2>&1 ||
		echo "test_pkg: dpkg --purge failed: $(tail -n 3 "$NT_DIR/purge.log")" >&2
}
# nt_init's exit hooks call nt_cleanup: purge first, then what lib.sh removes
eval "$(declare -f nt_cleanup | sed '1s/nt_cleanup/nt_cleanup_dirs/')"
nt_cleanup() {
	pkg_purge
	nt_cleanup_dirs
}
trap nt_cleanup EXIT
trap 'exit 143' INT TERM

[ "$(id -u)" -eq 0 ] || nt_skip "installing packages needs root"
for t in dpkg-buildpackage dh dh_auto_configure apt-get; do
	command -v "$t" >/dev/null || nt_skip "$t is not installed (tools/deps.sh: dpkg-dev, debhelper)"
done
for p in "${PKGS[@]}"; do
	# never remove a user's own install of the packages
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ -z "$s" ] || [ "$s" = not-installed ] || nt_skip "$p is already on this machine ($s): not touching it"
done
# nor an administrator's configuration file, which a purge would take away
[ -e /etc/ri2n/ri2n.conf ] && nt_skip "/etc/ri2n/ri2n.conf exists: not touching it"
# the programs find what they need where the packages put it, and nowhere else
for v in $(compgen -e); do
	case $v in
	PATH) ;;
	*_PATH | OMPI_MCA_* | FI_PROVIDER* | RI2N_RUN_LIB | RI2N_CONF | LD_PRELOAD) unset "$v" ;;
	esac
done

# ---- build, from a copy: dpkg-buildpackage writes into the source's parent directory ----
tree=$NT_DIR/src/ri2n
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# tracked and new files as they are in the work tree; build trees and ignored files left out
	git -C "$src" ls-files -z -co --exclude-standard | (cd "$src" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
		tar -xf - -C "$tree" 2>/dev/null || nt_fail "copying the source tree"
else
	tar -C "$src" --exclude='./build*' --exclude=./demo-out --exclude=./bench/results -cf - . |
		tar -xf - -C "$tree" || nt_fail "copying the source tree"
fi
(cd "$tree" && dpkg-checkbuilddeps) >"$NT_DIR/builddeps.log" 2>&1 ||
	nt_fail "build dependencies missing (apt-get build-dep ./ installs them): $(cat "$NT_DIR/builddeps.log")"
t0=$(date +%s)
(cd "$tree" && DEB_BUILD_OPTIONS="parallel=2 nocheck noddebs" dpkg-buildpackage -us -uc -b) \
	>"$NT_DIR/build.log" 2>&1 || nt_fail "dpkg-buildpackage: $(tail -n 25 "$NT_DIR/build.log")"
nt_note "dpkg-buildpackage -us -uc -b: $(($(date +%s) - t0)) s"
ver=$(cd "$tree" && dpkg-parsechangelog -S Version)
debs=()
for p in "${PKGS[@]}"; do
	debs+=("$NT_DIR/src/${p}_${ver}_$(dpkg --print-architecture).deb")
	[ -f "${debs[-1]}" ] || nt_fail "no ${debs[-1]##*/} built"
done
[ -n "${RI2N_PKG_KEEP_DEBS:-}" ] && mkdir -p "$RI2N_PKG_KEEP_DEBS" && cp "${debs[@]}" "$RI2N_PKG_KEEP_DEBS"
if command -v lintian >/dev/null; then
	t0=$(date +%s)
	lintian --fail-on error "$NT_DIR"/src/*.changes >"$NT_DIR/lintian.log" 2>&1 ||
		nt_fail "lintian: $(grep '^E:' "$NT_DIR/lintian.log" | head -n 10)"
	nt_note "lintian: no error, $(grep -c '^W:' "$NT_DIR/lintian.log") warnings ($(($(date +%s) - t0)) s)"
fi
rm -rf "$tree" # the rest of the test needs only the .debs

# ---- install ----
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" \
	>"$NT_DIR/install.log" 2>&1 || nt_fail "apt-get install: $(tail -n 5 "$NT_DIR/install.log")"
for p in "${PKGS[@]}"; do
	dpkg -L "$p" >>"$NT_DIR/files.list" || nt_fail "dpkg -L $p"
done
dpkg-query -W -f='${Conffiles}\n' ri2n-tools | grep -q '^ /etc/ri2n/ri2n.conf ' ||
	nt_fail "/etc/ri2n/ri2n.conf is not a conffile of ri2n-tools"

# ---- what a user finds with no path variable ----
lib=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libri2n.so.0
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libri2n.so.0 ] || nt_fail "$lib: SONAME '$soname'"
out=$(ri2n-info --version 2>&1)
grep -qw "${ver%%-*}" <<<"$out" || nt_fail "ri2n-info --version says '$out', the package ${ver%%-*}"
out=$(ompi_info 2>&1)
grep -q 'MCA btl: ri2n' <<<"$out" || nt_fail "ompi_info does not list btl ri2n"
out=$(fi_info -p ri2n 2>&1)
grep -q '^provider: ri2n' <<<"$out" || nt_fail "fi_info -p ri2n: $(head -n 3 <<<"$out")"
out=$(ri2n-info 2>&1)
grep -q '^configuration file: /etc/ri2n/ri2n.conf (read)$' <<<"$out" ||
	nt_fail "ri2n-info does not read /etc/ri2n/ri2n.conf: $(head -n 3 <<<"$out")"
ri2n-run --help >/dev/null 2>&1 || nt_fail "ri2n-run --help"
out=$(ri2n-run sh -c 'cat /proc/$$/maps' 2>&1)
grep -q '/ri2n/libri2n-run.so' <<<"$out" || nt_fail "ri2n-run does not load its shim: $(head -n 3 <<<"$out")"
# (a container's dpkg may be told to leave every manual page out)
if ! grep -qs '^path-exclude=*/usr/share/man' /etc/dpkg/dpkg.cfg.d/*; then
	for m in ri2n-run ri2n-stat ri2n-info ri2n-xfer ri2n-testbed ri2n-stream; do
		man -w "$m" >/dev/null 2>&1 || nt_fail "man $m: no page"
	done
fi
# shellcheck disable=SC2046
cc -O2 -Wall -Werror -o "$NT_DIR/contract" "$src/tests/install/contract.c" $(pkg-config --cflags --libs ri2n) ||
	nt_fail "a program does not build with pkg-config --cflags --libs ri2n"
# in /usr the system's own -I and -L are left out: nothing but -lri2n
read -r -a words <<<"$(pkg-config --cflags --libs ri2n)"
[ "${words[*]}" = -lri2n ] || nt_fail "pkg-config --cflags --libs ri2n: '${words[*]}', not just -lri2n"
deps=$(ldd "$NT_DIR/contract")
grep -q 'libri2n.so.0 => /lib/\|libri2n.so.0 => /usr/lib/' <<<"$deps" || nt_fail "contract: $deps"
{ cmake -S "$src/tests/install/cmake" -B "$NT_DIR/cmake" && cmake --build "$NT_DIR/cmake"; } \
	>"$NT_DIR/cmake.log" 2>&1 || nt_fail "find_package(ri2n): $(tail -n 5 "$NT_DIR/cmake.log")"
nt_note "ompi_info, fi_info, ri2n-info, ri2n-run, man, pkg-config and find_package(ri2n) find the packages"

# ---- a verified transfer over two rails, and a 2-rank MPI job over the BTL ----
nt_init pkg 2 2
nt_serve 2
nt_send xfer 1 2 64M || nt_fail "ri2n-xfer send: status $?"
nt_require_verified xfer
# both rails carried data (the sender's per-rail summary lines: tx_data=)
n=$(grep -c '^xfer rail=.* tx_data=[1-9]' "$NT_DIR/xfer.out")
[ "$n" -eq 2 ] || nt_fail "$n rails carried data: $(grep '^xfer rail=' "$NT_DIR/xfer.out")"
nt_note "/usr/bin/ri2n-xfer: 64 MiB verified over 2 rails"
mpicc -O2 -I"$src/tools/kit" -o "$NT_DIR/mpi_check" "$src/tests/mpi/mpi_check.c" || nt_fail "mpicc mpi_check.c"
RI2N_MPI_NS_PREFIX=ri2n-$NT_TAG-h RI2N_MPI_HOSTS=2 PMIX_MCA_ptl_base_if_include=$(tb_mgmt_subnet) \
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	timeout -s KILL 120 mpirun --oversubscribe --bind-to none -np 2 --mca btl ri2n,self \
	--mca btl_ri2n_if_include "$NT_RAILS" -x RI2N_MPI_NS_PREFIX -x RI2N_MPI_HOSTS \
	-x PMIX_MCA_ptl_base_if_include "$src/tests/mpi/netns-launch.sh" "$NT_DIR/mpi_check" \
	--phases pingpong,stream --bw-seconds 1 >"$NT_DIR/mpi.out" 2>&1 ||
	nt_fail "mpirun --mca btl ri2n,self: status $?: $(tail -n 8 "$NT_DIR/mpi.out")"
grep -q 'mpi_check result=PASS' "$NT_DIR/mpi.out" || nt_fail "mpi_check did not pass: $(tail -n 8 "$NT_DIR/mpi.out")"
nt_note "mpirun -np 2 --mca btl ri2n,self: mpi_check passed"

# ---- remove: nothing left ----
pkg_purge
for p in "${PKGS[@]}"; do
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ -z "$s" ] || [ "$s" = not-installed ] || nt_fail "$p is $s after dpkg --purge"
done
left=() dirs=()
while read -r f; do
	[ "$f" = /. ] && continue
	if [ -d "$f" ] && [ ! -L "$f" ]; then
		dirs+=("$f")
	elif [ -e "$f" ] || [ -L "$f" ]; then
		left+=("$f")
	fi
done <"$NT_DIR/files.list"
# a directory may stay only while another package has it (/usr/bin, /usr/share/man/man1, ...)
if [ ${#dirs[@]} -gt 0 ]; then
	while read -r f; do
		left+=("$f")
	done < <(LC_ALL=C dpkg-query -S "${dirs[@]}" 2>&1 >/dev/null | sed -n 's/^dpkg-query: no path found matching pattern //p')
fi
[ ${#left[@]} -eq 0 ] || nt_fail "left after dpkg --purge: ${left[*]:0:10}"
nt_ok "packages built, installed, used with no path variable and purged without a trace ($(wc -l <"$NT_DIR/files.list") paths)"
