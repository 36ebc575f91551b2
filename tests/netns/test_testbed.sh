#!/usr/bin/env bash
# test_testbed.sh - self-test of tools/ri2n-testbed.sh: builds a 3-host, 2-rail bed with its own
# tag, checks reachability with ping, applies and heals every fault, checks that create refuses
# leftovers and that destroy removes exactly its own bed (also when an assertion fails: trap).
# Exit 0 pass, 77 skip (not root, or a tool missing), 1 fail. Runtime: about 15 s.
# Needs root and the Debian packages iproute2, nftables, iputils-ping, util-linux, procps.
# shellcheck disable=SC2016,SC2034  # checks are eval'd strings: they expand when they run
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed=$here/../../tools/ri2n-testbed.sh

skip() { echo "SKIP: $*"; exit 77; }
[[ $EUID -eq 0 ]] || skip "test_testbed needs root (network namespaces)"
for tool in ip tc nft ping flock sysctl awk; do
	command -v "$tool" >/dev/null || skip "missing tool '$tool' (apt-get install iproute2 nftables iputils-ping)"
done
[[ -f $testbed ]] || { echo "FAIL: $testbed not found"; exit 1; }

# shellcheck source=/dev/null
source "$testbed"

id=$(printf %05d $(($$ % 100000)))
tag=s$id          # the bed under test
other=u$id        # a second bed, destroyed while the first one lives
stray=v$id        # a name with leftovers but no state file
started=$SECONDS
failures=0

pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() {   # check DESCRIPTION COMMAND...
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

# Replies received by COUNT pings from FROM (a host number, or "root") to ADDR.
received() {
	local from=$1 addr=$2 count=$3 wait=$4 out
	if [[ $from == root ]]; then
		out=$(ping -q -n -c "$count" -i 0.01 -W "$wait" "$addr" 2>&1) || true
	else
		out=$(tb_exec "$from" ping -q -n -c "$count" -i 0.01 -W "$wait" "$addr" 2>&1) || true
	fi
	out=$(sed -n 's/.* \([0-9][0-9]*\) received.*/\1/p' <<<"$out")
	echo "${out:-0}"   # no summary: ping could not even send (e.g. network unreachable)
}
reach() { [[ $(received "$1" "$2" 3 1) == 3 ]]; }          # FROM ADDR: every ping answered
unreach() { [[ $(received "$1" "$2" 3 0.3) == 0 ]]; }      # FROM ADDR: none answered
duplicates() {   # FROM ADDR -> number of duplicate replies to 5 pings
	local out
	out=$(tb_exec "$1" ping -q -n -c 5 -i 0.02 -W 1 "$2" 2>&1) || true
	sed -n 's/.* +\([0-9][0-9]*\) duplicates.*/\1/p' <<<"$out" | grep . || echo 0
}
qdisc_has() { [[ $(tc -n "$1" qdisc show dev "$2" root) == *"$3"* ]]; }   # NS DEV TEXT
link_up() { [[ $(ip -n "$(tb_ns "$1")" -o link show dev "r$2") == *"state UP"* ]]; }
no_leftovers() {   # TAG: no namespace, root link or state file of that bed remains
	[[ -z $(ip netns list | awk '{print $1}' | grep "^ri2n-$1-" || true) ]] &&
		[[ -z $(ip -o link show | awk -F': ' '{print $2}' | grep "^ri2n-$1-" || true) ]] &&
		[[ ! -e $TB_STATE_DIR/$1.state ]]
}
rail_all_down() {   # RAIL: no host reaches another on it
	unreach 1 "$(tb_addr 2 "$1")" && unreach 2 "$(tb_addr 3 "$1")" && unreach 3 "$(tb_addr 1 "$1")"
}
rail_all_up() {
	reach 1 "$(tb_addr 2 "$1")" && reach 2 "$(tb_addr 3 "$1")" && reach 3 "$(tb_addr 1 "$1")"
}

# ---- build ----------------------------------------------------------------------------------
tb_use "$tag"
tb_cleanup_on_exit "$tag"
tb_cleanup_on_exit "$other"
tb_on_exit "ip netns del ri2n-$stray-h1 2>/dev/null"
tb_create --hosts 3 --rails 2 --rate 100mbit || { echo "FAIL: create"; exit 1; }
sw1=$(tb_sw_ns 1)

check "rate shaping installed on both ends (host r1, switch port h1)" \
	eval 'qdisc_has "$(tb_ns 1)" r1 "tbf" && qdisc_has "$(tb_ns 1)" r1 "rate 100Mbit" && qdisc_has "$sw1" h1 "rate 100Mbit"'

mesh_ok=1
for a in 1 2 3; do
	for b in 1 2 3; do
		((a != b)) || continue
		for r in 1 2; do reach "$a" "$(tb_addr "$b" "$r")" || { mesh_ok=0; echo "  h$a -> h$b rail $r"; }; done
		reach "$a" "$(tb_mgmt_addr "$b")" || { mesh_ok=0; echo "  h$a -> h$b mgmt"; }
	done
	reach root "$(tb_mgmt_addr "$a")" || { mesh_ok=0; echo "  root -> h$a mgmt"; }
done
check "every host reaches every host on every rail and on mgmt; root reaches every host" test $mesh_ok = 1

# ---- faults ---------------------------------------------------------------------------------
tb_fault blackhole 1 1 on
check "blackhole on: h1 -> h2 rail 1 fails" unreach 1 "$(tb_addr 2 1)"
check "blackhole on: h2 -> h1 rail 1 fails" unreach 2 "$(tb_addr 1 1)"
check "blackhole on: link stays up" link_up 1 1
check "blackhole on: h1 -> h2 rail 2 works" reach 1 "$(tb_addr 2 2)"
check "blackhole on: h2 -> h3 rail 1 works" reach 2 "$(tb_addr 3 1)"
tb_fault blackhole 1 1 off
check "blackhole off: h1 <-> h2 rail 1 works" eval 'reach 1 "$(tb_addr 2 1)" && reach 2 "$(tb_addr 1 1)"'

tb_fault cable 2 1 down
check "cable down: h1 -> h2 rail 1 fails" unreach 1 "$(tb_addr 2 1)"
check "cable down: h2 -> h3 rail 1 fails" unreach 2 "$(tb_addr 3 1)"
check "cable down: h2 -> h1 rail 2 works" reach 2 "$(tb_addr 1 2)"
tb_fault cable 2 1 up
check "cable up: address and connected route back" \
	eval '[[ $(tb_exec 2 ip -4 route show dev r1) == *"198.18.1.0/24"*"src 198.18.1.2"* ]]'
check "cable up: h1 <-> h2 rail 1 works again" eval 'reach 1 "$(tb_addr 2 1)" && reach 2 "$(tb_addr 1 1)"'

tb_fault switch 2 down
check "switch down: nobody reaches anybody on rail 2" rail_all_down 2
check "switch down: rail 1 works" reach 1 "$(tb_addr 3 1)"
tb_fault switch 2 up
check "switch up: rail 2 works for all" rail_all_up 2

tb_fault switch 2 blackhole
check "switch blackhole: nobody reaches anybody on rail 2" rail_all_down 2
check "switch blackhole: bridge stays up" eval '[[ $(ip -n "$(tb_sw_ns 2)" -o link show dev br) == *"state UP"* ]]'
tb_fault switch 2 heal
check "switch heal: rail 2 works for all" rail_all_up 2

tb_fault loss 1 1 50
got=$(received 2 "$(tb_addr 1 1)" 200 0.5)
check "loss 50: h2 -> h1 rail 1 lost $((200 - got))/200 round trips (want 20..180)" \
	test "$got" -ge 20 -a "$got" -le 180
tb_fault loss 1 1 0
check "loss 0: h2 -> h1 rail 1 loses nothing" eval '[[ $(received 2 "$(tb_addr 1 1)" 50 1) == 50 ]]'

tb_fault dup 1 2 on
dups=$(duplicates 1 "$(tb_addr 2 2)")
check "dup on: duplicates seen ($dups of 5 pings)" test "$dups" -ge 3
tb_fault dup 1 2 off
check "dup off: no duplicates" test "$(duplicates 1 "$(tb_addr 2 2)")" = 0

tb_fault rate 3 1 10mbit
check "rate 10mbit on both ends of h3 rail 1" \
	eval 'qdisc_has "$(tb_ns 3)" r1 "rate 10Mbit" && qdisc_has "$sw1" h3 "rate 10Mbit"'
tb_fault rate 3 1 off
check "rate off restores the creation rate" \
	eval 'qdisc_has "$(tb_ns 3)" r1 "rate 100Mbit" && qdisc_has "$sw1" h3 "rate 100Mbit"'

flapper=$(tb_fault flap 3 2 100 600)
seen_down=0
for _ in {1..30}; do link_up 3 2 || seen_down=1; sleep 0.02; done
check "flap: the link went down while flapping" test $seen_down = 1
check "flap: the flapper ends on time" tb_wait_pid "$flapper" 3
check "flap: the link is up afterwards and works" eval 'link_up 3 2 && reach 3 "$(tb_addr 1 2)"'
long_flapper=$(tb_fault flap 2 2 100 60000)   # destroy must stop this one

check "bad arguments are refused" eval '! tb_fault loss 1 1 150 2>/dev/null && ! tb_fault blackhole 4 1 on 2>/dev/null &&
	! tb_fault rate 1 3 1gbit 2>/dev/null && ! tb_fault cable 1 1 sideways 2>/dev/null'

# ---- ownership ------------------------------------------------------------------------------
check "create refuses a bed that exists" eval '! tb_create --hosts 2 --rails 1 2>/dev/null'
ip netns add "ri2n-$stray-h1"
check "create refuses unrecorded leftovers" eval '! tb_create --tag "$stray" 2>/dev/null'
tb_destroy --tag "$stray" 2>/dev/null
check "destroy leaves unrecorded leftovers alone" test -e "/run/netns/ri2n-$stray-h1"
tb_destroy --tag "$stray" --force >/dev/null
check "destroy --force removes them" test ! -e "/run/netns/ri2n-$stray-h1"

tb_create --tag "$other" --hosts 2 --rails 1
check "a second bed gets its own mgmt subnet" eval '[[ $(TB_TAG=$other tb_mgmt_subnet) != $(tb_mgmt_subnet) ]]'
check "the second bed works" eval 'TB_TAG=$other reach 1 "$(TB_TAG=$other tb_addr 2 1)"'
tb_destroy --tag "$other"
check "destroying the second bed removes it" no_leftovers "$other"
intact=1
for n in h1 h2 h3 sw1 sw2; do [[ -e /run/netns/ri2n-$tag-$n ]] || intact=0; done
check "... and leaves this bed intact" eval '((intact)) && reach 1 "$(tb_addr 2 1)" && reach root "$(tb_mgmt_addr 3)"'

tb_destroy
check "destroy removes every ri2n-$tag-* namespace, the mgmt bridge and the state file" no_leftovers "$tag"
check "destroy stops the flappers" eval '! tb__alive "$long_flapper"'

echo "test_testbed: $failures failure(s), $((SECONDS - started)) s"
((failures == 0))
