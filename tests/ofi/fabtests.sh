#!/usr/bin/env bash
# tests/ofi/fabtests.sh FABTESTS_DIR - libfabric's own test suite (fabtests) against
# the ri2n provider, on a two-host test bed with two rails (tests/netns/lib.sh).
#
# FABTESTS_DIR: where fabtests for the installed libfabric was installed (its bin/
# holds fi_rdm, fi_getinfo_test, ...).  fabtests is not in Debian: build it from
# the libfabric release's fabtests/ directory, outside this repository
# (docs/OFI.md, "fabtests").  FI_PROVIDER_PATH: the directory of libri2n-fi.so
# (default build/ofi/prov).  Needs root (namespaces); not part of tests/run.sh.
#
# Every client/server test that applies to an RDM provider with ri2n's
# capabilities runs twice: with out-of-band address exchange (-E: names pass over
# a TCP socket on the management network) and with fabtests' default exchange (the
# client finds the server by its rail-1 address and port through fi_getinfo's node
# and service).  The unit tests run once.  Each run has a timeout (FT_TIMEOUT
# seconds, default 90; FT_ONLY=REGEX and FT_MODES="oob default" pick a part;
# FT_VERBOSE=1 shows a failed test's last lines).  Prints a pass/fail/skip table, then the tests that do not
# apply and why.  Exit status: 0 if nothing failed, 1 otherwise, 77 if it cannot
# run here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ft=${1:?usage: fabtests.sh FABTESTS_DIR}
ft=$(cd "$ft" && pwd) || exit 1
[ -x "$ft/bin/fi_rdm" ] || { echo "SKIP: no fabtests in $ft/bin"; exit 77; }
prov=${FI_PROVIDER_PATH:-$here/../../build/ofi/prov}
prov=$(cd "$prov" && pwd) || exit 1
[ -f "$prov/libri2n-fi.so" ] || { echo "SKIP: no libri2n-fi.so in $prov"; exit 77; }
tmo=${FT_TIMEOUT:-90}

# client/server tests (arguments as fabtests' runfabtests.sh gives them, -e rdm added)
pair_tests=(
	"fi_rdm"
	"fi_rdm_pingpong -I 100 -v"
	"fi_rdm_pingpong -S 8388608 -I 5 -v"
	"fi_rdm_tagged_pingpong -I 100 -v"
	"fi_rdm_tagged_bw -I 20 -v"
	"fi_rdm_tagged_peek"
	"fi_av_xfer -e rdm"
	"fi_multi_ep -e rdm -v"
	"fi_recv_cancel -e rdm -V"
	"fi_unexpected_msg -e rdm -I 10"
	"fi_unexpected_msg -e rdm -C -I 10"
	"fi_unexpected_msg -e rdm -M 100 -S 1048576 -I 1"
	"fi_msg_inject -e rdm -A inject -v"
	"fi_msg_inject -e rdm -N -A inject -v"
	"fi_msg_inject -e rdm -A inj_complete -v"
	"fi_msg_inject -e rdm -N -A inj_complete -v"
	"fi_bw -e rdm -v -T 1"
	"fi_rdm_multi_client -C 10 -I 5"
	"fi_rdm_multi_client -C 10 -I 5 -R"
	"fi_cq_data -e rdm"
	"fi_rdm_cntr_pingpong -I 5"
)
# single-process tests: SERVER is host 1's rail-1 address, GOOD host 2's
unit_tests=(
	"fi_getinfo_test -s SERVER GOOD"
	"fi_dom_test -n 2"
	"fi_eq_test"
	"fi_cq_test"
	"fi_mr_test"
	"fi_cntr_test"
)
# what ri2n does not offer, and why (fi_getinfo refuses each of these)
not_applicable=(
	"fi_*_pingpong/bw/rdm/multi_client -U|FI_DELIVERY_COMPLETE: a send completes when its payload is in ri2n's send ring (inject complete); delivery is ri2n's job from there"
	"fi_rma_bw, fi_rdm_rma_event, fi_rdm_rma_trigger, fi_multi_mr|FI_RMA: no remote memory access"
	"fi_rdm_atomic|FI_ATOMIC: no atomics"
	"fi_rdm_shared_av|FI_SHARED_AV: no AV shared between processes"
	"fi_av_test|FI_SOCKADDR addresses and fi_av_insertsvc: ri2n names are its own (FI_FORMAT_UNSPEC)"
	"fi_scalable_ep, fi_shared_ctx|scalable endpoints and shared contexts: one tx and one rx context per endpoint"
	"fi_multi_recv|FI_MULTI_RECV: not offered"
	"fi_poll|poll sets: not offered"
	"fi_msg*, fi_cm_data, fi_stream_msg, fi_*  -e msg|FI_EP_MSG: RDM endpoints only"
	"fi_dgram*, fi_* -e dgram|FI_EP_DGRAM: RDM endpoints only (ri2n is a reliable stream)"
	"fi_rdm_deferred_wq, fi_resmgmt_test, fi_mcast, fi_loopback|deferred work, multicast, FI_RM_DISABLED tests, shm-style loopback: not offered"
	"fi_efa_*, ubertest, multinode|other providers' tests; ubertest needs a config per provider"
)

# shellcheck source=../netns/lib.sh
source "$here/../netns/lib.sh"
nt_init fabtests 2 2
ns1=$(tb_ns 1) ns2=$(tb_ns 2)
ctl=$(tb_mgmt_addr 1)
srv_rail=$(tb_addr 1 1)
cli_rail=$(tb_addr 2 1)
penv=(env "RI2N_RAILS=r1,r2" FI_PROVIDER=ri2n FI_PROVIDER_PATH="$prov" PATH="$ft/bin:$PATH")
results=()
npass=0 nfail=0 nskip=0

# fabtests' exit codes: 0 pass; FI_ENODATA / FI_ENOSYS: the provider lacks something (skip)
verdict() { # RC [RC2]
	local r
	for r in "$@"; do
		case $r in
		0) ;;
		61 | 38) echo skip; return ;;
		137) echo "fail (timeout)"; return ;;
		*) echo "fail ($r)"; return ;;
		esac
	done
	echo pass
}

record() { # NAME MODE VERDICT SECONDS LOG
	local v=$3
	results+=("$(printf '%-52s %-8s %-16s %5s' "$1" "$2" "$v" "$4")")
	case $v in
	pass) npass=$((npass + 1)) ;;
	skip) nskip=$((nskip + 1)) ;;
	*)
		nfail=$((nfail + 1))
		[ "${FT_VERBOSE:-0}" = 1 ] && { echo "--- $1 ($2)"; tail -n 15 "$5"; }
		;;
	esac
}

# Waits until host 1 listens on TCP port $1 (the out-of-band socket); 5 s at most.
wait_tcp() {
	for _ in $(seq 100); do
		ip netns exec "$ns1" ss -Hntl "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

run_pair() { # MODE TEST...
	local mode=$1 log t0 src crc spid srv_args cli_args
	shift
	log="$NT_DIR/$(echo "$*-$mode" | tr -c 'A-Za-z0-9_-' _)"
	if [ "$mode" = oob ]; then
		srv_args=(-E) cli_args=(-E "$ctl")
	else
		srv_args=(-s "$srv_rail") cli_args=("$srv_rail")
	fi
	t0=$SECONDS
	setsid timeout -s KILL "$tmo" ip netns exec "$ns1" "${penv[@]}" "$@" -p ri2n "${srv_args[@]}" \
		>"$log.srv" 2>&1 &
	spid=$!
	NT_PIDS+=("$spid")
	if [ "$mode" = oob ]; then
		wait_tcp 3000
	else
		sleep 0.5 # the client's connect attempts retry until the server's rails are bound
	fi
	# (stderr off around it: a run killed at its timeout is in the table, not told by bash)
	{ timeout -s KILL "$tmo" ip netns exec "$ns2" "${penv[@]}" "$@" -p ri2n "${cli_args[@]}" \
		>"$log.cli" 2>&1; } 2>/dev/null
	crc=$?
	[ $crc = 137 ] && kill -9 -- "-$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	src=$?
	record "$*" "$mode" "$(verdict $crc $src)" $((SECONDS - t0)) "$log.cli"
	[ "${FT_VERBOSE:-0}" = 1 ] && [ "$(verdict $crc $src)" != pass ] && tail -n 5 "$log.srv"
}

run_unit() { # TEST...
	local cmd log t0 rc
	cmd=$(echo "$*" | sed "s/SERVER/$srv_rail/; s/GOOD/$cli_rail/")
	log="$NT_DIR/$(echo "$*" | tr -c 'A-Za-z0-9_-' _)"
	t0=$SECONDS
	# shellcheck disable=SC2086
	{ timeout -s KILL "$tmo" ip netns exec "$ns1" "${penv[@]}" $cmd -p ri2n >"$log" 2>&1; } 2>/dev/null
	rc=$?
	record "$*" unit "$(verdict $rc)" $((SECONDS - t0)) "$log"
}

# FT_ONLY=REGEX: only the tests whose command line matches
only=${FT_ONLY:-.}
for t in "${unit_tests[@]}"; do
	# shellcheck disable=SC2086  # a test's words are its arguments
	[[ $t =~ $only ]] && run_unit $t
done
for mode in ${FT_MODES:-oob default}; do
	for t in "${pair_tests[@]}"; do
		# shellcheck disable=SC2086
		[[ $t =~ $only ]] && run_pair "$mode" $t
	done
done

printf '\nfabtests (%s) against the ri2n provider, 2 hosts x 2 rails\n' "$ft"
printf '%-52s %-8s %-16s %5s\n' test mode result s
printf '%s\n' "${results[@]}"
printf '%d passed, %d failed, %d skipped\n' "$npass" "$nfail" "$nskip"
printf '\nnot applicable (ri2n does not offer it; fi_getinfo refuses it):\n'
for n in "${not_applicable[@]}"; do
	printf '  %-58s %s\n' "${n%%|*}" "${n#*|}"
done
[ "$nfail" = 0 ]
