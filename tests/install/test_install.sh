#!/usr/bin/env bash
# Installs ri2n into a scratch prefix, builds tests/install/contract.c the ways
# a user would (only <ri2n.h> and `pkg-config --cflags --libs ri2n`; a CMake
# project with find_package(ri2n CONFIG), against libri2n.so and libri2n.a),
# checks the installed programs and ri2n-run's shim run from the prefix (and from a copy of
# it elsewhere) with no LD_LIBRARY_PATH, and runs the contract program between two
# namespaces over two rails shaped to 1 Gbit/s: 512 MiB
# with every word checked, then an 8-byte ping-pong, also statically linked.
# Prints the figures.
#   tests/install/test_install.sh BUILD_DIR     (root; 77 = skipped)
source "$(dirname "$0")/../netns/lib.sh"
build=${1:-$NT_ROOT/build}
prefix=$NT_DIR/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null || nt_fail "cmake --install failed"
for f in lib/libri2n.so lib/libri2n.a include/ri2n.h lib/pkgconfig/ri2n.pc \
	lib/cmake/ri2n/ri2nConfig.cmake share/doc/ri2n/LICENSE; do
	[ -e "$prefix/$f" ] || nt_fail "install lacks $f"
done
soname=$(readelf -d "$prefix/lib/libri2n.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libri2n.so.0 ] || nt_fail "SONAME is '$soname'"
# An install runs where it is, moved or not, with no LD_LIBRARY_PATH: the programs carry a run
# path relative to themselves ($ORIGIN/../lib), and ri2n-run finds and loads its shim
cp -a "$prefix" "$NT_DIR/moved"
for p in "$prefix" "$NT_DIR/moved"; do
	for b in ri2n-xfer ri2n-stat ri2n-pingpong ri2n-conns ri2n-churn ri2n-run; do
		out=$(env -u LD_LIBRARY_PATH "$p/bin/$b" --version 2>&1) ||
			nt_fail "$p/bin/$b --version fails: $out"
	done
	for f in "$p"/bin/* "$p"/lib/*.so "$p"/lib/*/*.so; do
		[ -L "$f" ] || ! head -c 4 "$f" | grep -q ELF && continue
		deps=$(env -u LD_LIBRARY_PATH ldd "$f" 2>&1)
		! grep -q "not found" <<<"$deps" || nt_fail "$f: $(grep "not found" <<<"$deps")"
	done
	deps=$(env -u LD_LIBRARY_PATH ldd "$p/bin/ri2n-xfer")
	grep -q "libri2n.so.0 => $p/bin/../lib/libri2n.so.0" <<<"$deps" || nt_fail "$p/bin/ri2n-xfer does not use its own libri2n: $deps"
	# the shim mapped in the program ri2n-run starts
	out=$(env -u LD_LIBRARY_PATH -u RI2N_RUN_LIB "$p/bin/ri2n-run" sh -c 'cat /proc/$$/maps' 2>&1)
	grep -q "$p/lib/ri2n/libri2n-run.so" <<<"$out" ||
		nt_fail "ri2n-run in $p did not load its shim: $(grep -i "error\|ri2n" <<<"$out" | head -n 3)"
done
nt_note "installed and moved: the programs and ri2n-run's shim run with no LD_LIBRARY_PATH"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
cc -O2 -Wall -Werror -o "$NT_DIR/contract" "$NT_ROOT/tests/install/contract.c" \
	$(pkg-config --cflags --libs ri2n) || nt_fail "the contract program does not build with pkg-config"
cmake -S "$NT_ROOT/tests/install/cmake" -B "$NT_DIR/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
	>"$NT_DIR/cmake.log" 2>&1 && cmake --build "$NT_DIR/cmake" >>"$NT_DIR/cmake.log" 2>&1 ||
	nt_fail "the contract program does not build with find_package(ri2n): $(tail -n 5 "$NT_DIR/cmake.log")"
# ldd's output read whole first: `ldd | grep -q` under pipefail fails when grep stops reading
# before ldd has written its last line (SIGPIPE), as it did now and then
deps=$(ldd "$NT_DIR/cmake/contract_static")
grep -q libri2n <<<"$deps" && nt_fail "contract_static is not linked statically"
deps=$(ldd "$NT_DIR/cmake/contract_shared")
grep -q "libri2n.so.0 => $prefix" <<<"$deps" ||
	nt_fail "contract_shared does not use the installed libri2n.so"
export LD_LIBRARY_PATH=$prefix/lib
nt_init inst 2 2 1gbit
run() { # HOST ARGS...
	local h=$1
	shift
	RI2N_RAILS=$NT_RAILS timeout 120 ip netns exec "$(tb_ns "$h")" "$NT_DIR/contract" "$@"
}
# a server listens once its rails' UDP port is bound: connecting earlier is refused
wait_port() { # PORT
	for _ in $(seq 100); do
		ip netns exec "$(tb_ns 2)" ss -Hnlu "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
	nt_fail "no server on port $1 after 5 s"
}
run 2 serve 7100 >"$NT_DIR/serve.out" 2>&1 &
NT_PIDS+=($!)
wait_port 7100
out=$(run 1 send "$(tb_addr 2 1)" 7100 512) || nt_fail "512 MiB transfer: $out"
nt_note "$out"
run 2 serve 7101 >/dev/null 2>&1 &
NT_PIDS+=($!)
wait_port 7101
out=$(run 1 ping "$(tb_addr 2 1)" 7101 2000) || nt_fail "ping-pong: $out"
nt_note "$out"
# the statically linked build of the same program, both ends
RI2N_RAILS=$NT_RAILS timeout 120 ip netns exec "$(tb_ns 2)" "$NT_DIR/cmake/contract_static" \
	serve 7102 >/dev/null 2>&1 &
NT_PIDS+=($!)
wait_port 7102
out=$(RI2N_RAILS=$NT_RAILS timeout 120 ip netns exec "$(tb_ns 1)" "$NT_DIR/cmake/contract_static" \
	send "$(tb_addr 2 1)" 7102 64) || nt_fail "64 MiB with libri2n.a: $out"
nt_note "libri2n.a: $out"
nt_ok "installed libri2n: the contract program builds with pkg-config and with find_package(ri2n) (shared and static) and works over 2 rails"
