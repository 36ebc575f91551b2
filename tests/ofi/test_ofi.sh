#!/usr/bin/env bash
# tests/ofi/test_ofi.sh - the libfabric provider (libri2n-fi.so) under libfabric's own tools.
#
#   test_ofi.sh fi_info     fi_info -p ri2n lists the provider with what mtl/ofi and
#                           fi_pingpong need (no root: any IPv4 interface will do)
#   test_ofi.sh pingpong    fi_pingpong -p ri2n -e rdm -c between two namespaces over 2
#                           rails, every size from 64 B to 1 MiB, untagged and tagged,
#                           each message's bytes checked by fi_pingpong (-c)
#   test_ofi.sh blackhole   1 MiB ping-pongs, checked, while rail 2 is black-holed and
#                           healed mid-run: every exchange completes, the rail is seen down
#
# FI_PROVIDER_PATH: the directory with libri2n-fi.so.  Needs libfabric-bin (fi_info,
# fi_pingpong); skips (77) without it, or without root for the namespace cases.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case_=${1:?usage: test_ofi.sh fi_info|pingpong|blackhole}
prov=${FI_PROVIDER_PATH:?FI_PROVIDER_PATH must name the directory of libri2n-fi.so}
[ -f "$prov/libri2n-fi.so" ] || { echo "SKIP: no libri2n-fi.so in $prov"; exit 77; }
for t in fi_info fi_pingpong; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed (libfabric-bin)"; exit 77; }
done
export FI_PROVIDER_PATH=$prov

if [ "$case_" = fi_info ]; then
	out=$(fi_info -p ri2n -v 2>&1) || {
		# no usable interface at all (only loopback): nothing to list
		ip -4 -o addr show scope global | grep -q . || { echo "SKIP: no IPv4 rail"; exit 77; }
		echo "FAIL: fi_info -p ri2n: $out"
		exit 1
	}
	fail=0
	for want in 'prov_name: ri2n' 'type:.*FI_EP_RDM' 'caps:.*FI_MSG' 'caps:.*FI_TAGGED' \
		'msg_order:.*FI_ORDER_SAS' 'inject_size: 4096' 'mem_tag_format: 0xaaaaaaaaaaaaaaaa' \
		'data_progress:.*FI_PROGRESS_MANUAL' 'resource_mgmt:.*FI_RM_ENABLED'; do
		if ! grep -q -- "$want" <<<"$out"; then
			echo "FAIL: fi_info -p ri2n -v has no line matching '$want'"
			fail=1
		fi
	done
	fi_info -p ri2n 2>&1 | grep -q '^provider: ri2n' || { echo "FAIL: fi_info -p ri2n"; fail=1; }
	# what Open MPI's mtl/ofi asks for (ompi_mtl_ofi_component_init, 4.1)
	fi_info -p ri2n -t FI_EP_RDM -c FI_TAGGED >/dev/null 2>&1 ||
		{ echo "FAIL: no RDM endpoint with FI_TAGGED"; fail=1; }
	# and what it must refuse: no RMA, no atomics, no MSG endpoints
	fi_info -p ri2n -c FI_RMA >/dev/null 2>&1 && { echo "FAIL: claims FI_RMA"; fail=1; }
	fi_info -p ri2n -t FI_EP_MSG >/dev/null 2>&1 && { echo "FAIL: claims FI_EP_MSG"; fail=1; }
	[ $fail = 0 ] && echo "ok: fi_info -p ri2n lists the provider and its attributes"
	exit $fail
fi

# shellcheck source=../netns/lib.sh
source "$here/../netns/lib.sh"
nt_init f20t 2 2
ns1=$(tb_ns 1) ns2=$(tb_ns 2)
ctl=$(tb_mgmt_addr 1)
penv=(env RI2N_RAILS=r1,r2 RI2N_LOG=info FI_PROVIDER_PATH="$prov")

# fi_pingpong ARGS...: server in host 1, client in host 2; both must exit 0.
pingpong() { # NAME ARGS...
	local name=$1 rc
	shift
	setsid timeout -s KILL 120 ip netns exec "$ns1" "${penv[@]}" fi_pingpong -p ri2n -e rdm "$@" \
		>"$NT_DIR/$name.srv" 2>&1 &
	NT_PIDS+=($!)
	local spid=$!
	sleep 0.5
	timeout -s KILL 120 ip netns exec "$ns2" "${penv[@]}" fi_pingpong -p ri2n -e rdm "$@" "$ctl" \
		>"$NT_DIR/$name.cli" 2>&1
	rc=$?
	wait "$spid"
	local src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		echo "--- client ($rc)"; tail -n 20 "$NT_DIR/$name.cli"
		echo "--- server ($src)"; tail -n 20 "$NT_DIR/$name.srv"
		nt_fail "fi_pingpong $* failed (client $rc, server $src)"
	fi
}

case $case_ in
pingpong)
	for mode in msg tagged; do
		pingpong "pp-$mode" -c -m "$mode" -I 20
		for sz in 64 1k 4k 64k 1m; do
			grep -Eq "^$sz +20 +=20 " "$NT_DIR/pp-$mode.cli" ||
				nt_fail "fi_pingpong -m $mode: no checked row for $sz"
		done
		nt_ok "fi_pingpong -c -m $mode: 64 B .. 1 MiB, 20 exchanges each, all bytes checked"
	done
	;;
blackhole)
	(sleep 1.5; tb_fault blackhole 2 2 on; sleep 2; tb_fault blackhole 2 2 off) &
	NT_PIDS+=($!)
	pingpong bh -c -S 1048576 -I 400
	grep -Eq "^1m +400 +=400 " "$NT_DIR/bh.cli" || nt_fail "not every 1 MiB exchange completed"
	grep -q "rail 1 down" "$NT_DIR/bh.cli" "$NT_DIR/bh.srv" ||
		nt_fail "the black-holed rail was never seen down (finished before the fault?)"
	nt_ok "400 checked 1 MiB ping-pongs across a black-holed and healed rail"
	grep -h "rail 1 \(down\|up\)" "$NT_DIR/bh.cli" "$NT_DIR/bh.srv" | sed 's/^/  /' | head -n 8
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
exit 0
