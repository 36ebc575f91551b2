#!/usr/bin/env bash
# ri2n-testbed.sh - build and break a multi-rail test network out of network namespaces.
#
# Both a library (`source tools/ri2n-testbed.sh`, then call tb_* functions) and a CLI:
#   tools/ri2n-testbed.sh [--tag T] create [--hosts H] [--rails N] [--rate R[,R..]] [--mtu M[,M..]]
#                                          [--mgmt-octet O] [--one-subnet] [--v6 I[,I..]|all]
#   tools/ri2n-testbed.sh [--tag T] fault KIND ARGS...      (see "Faults" below)
#   tools/ri2n-testbed.sh [--tag T] status | destroy [--force] | ns HOST | addr HOST RAIL
#   tools/ri2n-testbed.sh [--tag T] exec HOST CMD...
#   tools/ri2n-testbed.sh -h | --help | --version
# Library: source it; tb_use T; tb_cleanup_on_exit; tb_create --hosts 2 --rails 2 --rate 1gbit;
#   tb_exec 1 ping "$(tb_addr 2 1)"; tb_fault blackhole 1 2 on; ...; tb_destroy. Functions:
#   tb_use tb_create tb_destroy tb_fault tb_status tb_exists | tb_ns tb_sw_ns tb_addr
#   tb_mgmt_addr tb_mgmt_subnet tb_hosts tb_rails tb_exec tb_wait_pid | tb_cleanup_on_exit
#   tb_on_exit tb_cleanup_all. `--tag` on tb_create/tb_destroy acts on that call only; tb_use
#   (or TB_TAG) selects the bed for every call. HOST is 1..H (or h1..), RAIL 1..N (or r1..).
# Needs root. Debian packages: iproute2, nftables, util-linux (flock), procps (sysctl).
#
# Topology for tag T (default "tb"), H hosts (2..64), N rails (1..8):
#
#   ri2n-T-h1              ri2n-T-sw1 (rail 1)          ri2n-T-h2
#   +--------------+       +-------------+        +--------------+
#   | r1 198.18.1.1|--veth-|h1   br    h2|--veth--| r1 198.18.1.2|
#   |              |       +-------------+        |              |
#   |              |       ri2n-T-sw2 (rail 2)    |              |
#   |              |       +-------------+        |              |
#   | r2 198.18.2.1|--veth-|h1   br    h2|--veth--| r2 198.18.2.2|
#   | mgmt .250.1  |       +-------------+        | mgmt .250.2  |
#   +------|-------+                              +------|-------+
#          +--ri2n-T-p1--[ri2n-T-m 198.18.250.254]--ri2n-T-p2--+     (root namespace)
#
# Each rail is its own switch: a bridge "br" in namespace ri2n-T-sw<i>; host k plugs in with a
# veth whose host end is r<i> (198.18.<i>.<k>/24) and whose switch end is h<k>. The management
# bridge ri2n-T-m lives in the root namespace (198.18.250.254/24, host k is 198.18.250.<k> on
# "mgmt"); it is how mpirun reaches ranks. If another bed already uses 198.18.250.0/24 the next
# free 198.18.<249..200>.0/24 is taken (tb_mgmt_subnet prints it). IPv6 is off in the bed,
# but on the rails --v6 names (rail numbers, or "all"): such a rail is IPv6 only, host k's r<i>
# being 2001:2:0:<i>::<k>/64 (RFC 5180's benchmarking prefix; added with nodad, so it can be
# bound at once; neighbour discovery retried every TB_ARP_RETRANS_MS too), and tb_addr
# prints that address.
# Shaping (--rate) puts `tbf rate R burst 128kb latency 20ms` on both ends of every rail link:
# on r<i> in the host (host egress) and on h<k> in the switch (egress towards the host).
# --one-subnet: every rail of every host in one bridge (ri2n-T-sw1, host k's rail i plugged in
# as h<k>r<i>) and one subnet, 198.18.1.0/24, host k's r<i> being 198.18.1.<10i+k> (hosts
# 1..9): two NICs of a host in one subnet. Each host then answers ARP for an address only on
# its interface (arp_ignore=1), asks with the asking interface's own address
# (arp_announce=2) and checks sources loosely (rp_filter=2), as such a host needs
# (docs/OPERATIONS.md).
# ARP on the rails retries every TB_ARP_RETRANS_MS (default 100 ms; the kernel's default is
# 1 s): after an outage long enough to lose the neighbour entry, any transport waits for ARP.
#
# Faults (every one reversible, every one applicable under load):
#   cable HOST RAIL down|up        ip link set dev r<i> down/up in the host (cable pulled)
#   switch RAIL down|up            the whole bridge down: every host loses the rail at once
#   switch RAIL blackhole|heal     bridge up but forwarding nothing (nft bridge forward drop)
#   blackhole HOST RAIL on|off     silent black hole of one host's link, link stays up
#   mtuhole HOST RAIL BYTES|off    the same for IP packets over BYTES only (an MTU black
#                                  hole: small packets pass, large ones vanish, no ICMP)
#   loss HOST RAIL P               random loss P% each way on that host's link (0 clears)
#   rate HOST RAIL RATE|off        tbf at RATE on both ends of the link (off: creation rate)
#   dup HOST RAIL on|off           every frame the host sends on r<i> is sent twice
#   flap HOST RAIL PERIOD_MS DURATION_MS   down PERIOD/2, up PERIOD/2, for DURATION; prints
#                                  the flapper's pid, always ends with the link up
#   flap HOST RAIL stop            stop that link's flappers now (link left up)
# Black hole and loss drop in the rail's switch, on the host's port (bridge family, both
# directions): an nftables drop in the host's own output hook makes sendto() fail with EPERM
# (and a netdev egress drop gives ENOBUFS under IP_RECVERR), so the host would be told. Only a
# drop outside the host is silent. Duplication uses a netdev egress chain in the host.
#
# Everything created is listed in /run/ri2n-testbed/T.state; destroy removes exactly that.
# nftables: one table "ri2n_T" per namespace (netdev in hosts, bridge in switches), one chain
# per fault, so healing a fault is deleting its chain.

# shellcheck disable=SC2015,SC2030,SC2031  # `a && b || die` is meant; (..) bodies are meant

# the project's version (CMakeLists.txt); tests/man/test_man.sh fails if they differ
TB_VERSION=0.1.1
TB_TAG="${TB_TAG:-tb}"
TB_STATE_DIR="${TB_STATE_DIR:-/run/ri2n-testbed}"
TB_SELF="${BASH_SOURCE[0]}"
TB_TBF_OPTS="burst 128kb latency 20ms"
TB_DUP_MARK=0x40000000          # marks our duplicate so the egress chain lets it pass

# ---- small helpers (tb__*: internal) ------------------------------------------------------
TB_ARP_RETRANS_MS=${TB_ARP_RETRANS_MS:-100}

tb__die() { echo "ri2n-testbed: $*" >&2; exit 1; }
tb__warn() { echo "ri2n-testbed: $*" >&2; }
tb__do() { "$@" || tb__die "command failed: $*"; }
tb__state_file() { echo "$TB_STATE_DIR/$TB_TAG.state"; }
tb__record() { echo "$*" >>"$(tb__state_file)"; }
tb__require_root() { [[ $EUID -eq 0 ]] || tb__die "must run as root"; }
tb__require_tools() {
	local t
	for t in ip tc nft flock sysctl; do
		command -v "$t" >/dev/null || tb__die "missing tool '$t' (apt-get install iproute2 nftables util-linux procps)"
	done
}
tb__check_tag() { [[ $1 =~ ^[a-z0-9]{1,6}$ ]] || tb__die "bad tag '$1': 1-6 characters of [a-z0-9]"; }
tb__is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
tb__valid_rate() { [[ $1 =~ ^[0-9]+([.][0-9]+)?([kmgtKMGT]i?)?(bit|bps)$ ]]; }
tb__lock() { mkdir -p "$TB_STATE_DIR"; exec {TB__LOCK_FD}>"$TB_STATE_DIR/.lock"; flock "$TB__LOCK_FD"; }

# Value of "conf KEY [SUB] VALUE" in the state file.
tb__conf() { awk -v k="$1" -v s="${2-}" '$1=="conf" && $2==k && (s=="" || $3==s) {print $NF}' "$(tb__state_file)"; }

# Load the bed's shape into TB__H (hosts), TB__N (rails), TB__MGMT (mgmt third octet),
# TB__ONE (1: --one-subnet).
tb__load() {
	tb__check_tag "$TB_TAG"
	[[ -f $(tb__state_file) ]] || tb__die "no test bed '$TB_TAG' ($(tb__state_file) missing); create it first"
	TB__H=$(tb__conf hosts); TB__N=$(tb__conf rails); TB__MGMT=$(tb__conf mgmt)
	TB__ONE=$(tb__conf onesubnet); TB__ONE=${TB__ONE:-0}
}

# Parse HOST ("2" or "h2") into TB__K and RAIL ("1" or "r1") into TB__I; die with the valid range.
tb__host_arg() {
	local a=${1-}; a=${a#h}
	tb__is_uint "$a" && ((a >= 1 && a <= TB__H)) || tb__die "no host '${1-}' in bed '$TB_TAG' (hosts are 1..$TB__H)"
	TB__K=$((10#$a))
}
tb__rail_arg() {
	local a=${1-}; a=${a#r}
	tb__is_uint "$a" && ((a >= 1 && a <= TB__N)) || tb__die "no rail '${1-}' in bed '$TB_TAG' (rails are 1..$TB__N)"
	TB__I=$((10#$a))
}
tb__host_ns() { echo "ri2n-$TB_TAG-h$1"; }
# Rail I's switch; with --one-subnet every rail's is sw1.
tb__sw_ns() { echo "ri2n-$TB_TAG-sw$((${TB__ONE:-0} ? 1 : $1))"; }
# Host K's port in rail I's switch, host K's address on rail I, rail I's subnet.
tb__port() { if ((${TB__ONE:-0})); then echo "h$1r$2"; else echo "h$1"; fi; }
tb__ip() {
	if ((${TB__ONE:-0})); then echo "198.18.1.$(($2 * 10 + $1))"
	elif tb__v6 "$2"; then echo "2001:2:0:$2::$1"
	else echo "198.18.$2.$1"; fi
}
# Whether rail I is IPv6 (--v6).
tb__v6() { [[ $(tb__conf v6 "$1") == 1 ]]; }
tb__net() { echo "198.18.$((${TB__ONE:-0} ? 1 : $1)).0/24"; }
tb__nft_table() { echo "ri2n_$TB_TAG"; }

# Wait (up to 5 s) until every named link in NS is operationally UP: the kernel applies a carrier
# change (and attaches the qdisc) up to ~1 s late, and drops what is sent before.
tb__wait_up() {
	local ns=$1 n up dev
	shift
	for ((n = 0; n < 250; n++)); do
		up=" $(ip ${ns:+-n "$ns"} -o link show up 2>/dev/null | awk '/state UP/ {sub(/[@:].*/, "", $2); printf "%s ", $2}')"
		for dev in "$@"; do
			[[ $up == *" $dev "* ]] || { sleep 0.02; continue 2; }
		done
		return 0
	done
	tb__die "links $* in ${ns:-the root namespace} did not come up within 5 s"
}

tb__ns_exists() { [[ -e /run/netns/$1 ]]; }
tb__link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# Process start time (clock ticks since boot): guards against killing a recycled pid.
tb__starttime() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	set -- $s   # split on purpose
	echo "${20}"
}

# Is PID running (not a zombie; this init reaps orphans lazily) and, if given, started at START?
tb__alive() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[[ ${s%% *} != Z ]] || return 1
	[[ -z ${2-} || $(tb__starttime "$1") == "$2" ]]
}

# Names that look like bed T's but are not recorded in its state file.
tb__leftovers() {
	{
		ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^ri2n-$TB_TAG-(h|sw)[0-9]+$"
		ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
			grep -E "^ri2n-$TB_TAG-(m|p[0-9]+)$"
	} || true
}

# ---- nftables: one table per namespace, one chain per fault ------------------------------
tb__nft() { ip netns exec "$1" nft "${@:2}"; }
tb__nft_has_chain() { tb__nft "$1" list chain "$2" "$(tb__nft_table)" "$3" >/dev/null 2>&1; }
# tb__nft_add_chain NS FAMILY CHAIN "HOOK SPEC" RULE...: (re)create a base chain with its rules.
tb__nft_add_chain() {
	local ns=$1 fam=$2 chain=$3 hook=$4 t r
	shift 4
	t=$(tb__nft_table)
	tb__nft_del_chain "$ns" "$fam" "$chain"
	{
		echo "table $fam $t {"
		echo "  chain $chain {"
		echo "    type filter hook $hook priority 0; policy accept;"
		for r in "$@"; do echo "    $r;"; done
		echo "  }"
		echo "}"
	} | tb__nft "$ns" -f - || tb__die "nft failed in $ns adding $fam $t $chain"
}
tb__nft_del_chain() {
	if tb__nft_has_chain "$1" "$2" "$3"; then
		tb__nft "$1" delete chain "$2" "$(tb__nft_table)" "$3" || tb__die "nft: cannot delete chain $3 in $1"
	fi
}

# tbf on one device in one namespace; RATE "off" removes our root qdisc.
tb__shape() {
	local ns=$1 dev=$2 rate=$3
	if [[ $rate == off ]]; then
		[[ $(tc -n "$ns" qdisc show dev "$dev" root) == "qdisc tbf"* ]] &&
			tb__do tc -n "$ns" qdisc del dev "$dev" root
	else
		# shellcheck disable=SC2086
		tb__do tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$rate" $TB_TBF_OPTS
	fi
	return 0
}

# ---- create --------------------------------------------------------------------------------
# Spread "a" or "a,b,c" over N rails into the array named $3; die if the count is wrong.
# shellcheck disable=SC2034  # out is written through the nameref
tb__per_rail() {
	local -n out=$3
	local IFS=, i vals
	read -r -a vals <<<"$2"
	((${#vals[@]} == 1 || ${#vals[@]} == TB__N)) || tb__die "$1 needs one value or $TB__N (one per rail): '$2'"
	out=()
	for ((i = 0; i < TB__N; i++)); do out[i]=${vals[${#vals[@]} == 1 ? 0 : i]}; done
}

tb__pick_mgmt() {
	local o used
	used=$(cat "$TB_STATE_DIR"/*.state 2>/dev/null; ip -4 -o addr show; ip -4 route show)
	for o in $(seq 250 -1 200); do
		[[ $used == *"conf mgmt $o"* || $used == *" 198.18.$o."* || $used == *"198.18.$o.0/"* ]] && continue
		echo "$o"; return 0
	done
	return 1
}

tb__create_switch() {
	local i=$1 mtu=$2 ns
	ns=$(tb__sw_ns "$i")
	tb__do ip netns add "$ns"; tb__record "ns $ns"
	tb__do ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	tb__do ip -n "$ns" link set dev lo up
	tb__do ip -n "$ns" link add name br mtu "$mtu" type bridge stp_state 0 nf_call_iptables 0 nf_call_ip6tables 0
	tb__do ip -n "$ns" link set dev br up
}

tb__create_host() {
	local k=$1 ns port o=$TB__MGMT
	ns=$(tb__host_ns "$k")
	port="ri2n-$TB_TAG-p$k"
	tb__do ip netns add "$ns"; tb__record "ns $ns"
	tb__do ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	tb__do ip -n "$ns" link set dev lo up
	tb__do ip link add name "$port" type veth peer name mgmt netns "$ns"; tb__record "link $port"
	echo 1 >"/proc/sys/net/ipv6/conf/$port/disable_ipv6"
	tb__do ip link set dev "$port" master "ri2n-$TB_TAG-m" up
	tb__do ip -n "$ns" addr add "198.18.$o.$k/24" dev mgmt
	tb__do ip -n "$ns" link set dev mgmt up
}

tb__plug() {
	local k=$1 i=$2 mtu=$3 rate=$4 hns sns port
	hns=$(tb__host_ns "$k"); sns=$(tb__sw_ns "$i"); port=$(tb__port "$k" "$i")
	tb__do ip -n "$hns" link add name "r$i" mtu "$mtu" type veth peer name "$port" mtu "$mtu" netns "$sns"
	tb__do ip -n "$sns" link set dev "$port" master br up
	if tb__v6 "$i"; then
		# IPv6 is off in the namespace: on for this interface only, found by its neighbours
		# as fast as ARP finds IPv4 ones
		tb__do ip netns exec "$hns" sysctl -qw "net.ipv6.conf.r$i.disable_ipv6=0" \
			"net.ipv6.neigh.r$i.retrans_time_ms=$TB_ARP_RETRANS_MS"
		tb__do ip -n "$hns" addr add "$(tb__ip "$k" "$i")/64" dev "r$i" nodad
		tb__do ip -n "$hns" link set dev "r$i" up
		tb__shape "$hns" "r$i" "$rate"
		tb__shape "$sns" "$port" "$rate"
		return
	fi
	tb__do ip -n "$hns" addr add "$(tb__ip "$k" "$i")/24" dev "r$i"
	# ARP retried every ${TB_ARP_RETRANS_MS} ms (kernel default 1 s, as clusters with fast
	# failover tune it): a neighbour lost in a long outage is found again that fast
	tb__do ip netns exec "$hns" sysctl -qw "net.ipv4.neigh.r$i.retrans_time_ms=$TB_ARP_RETRANS_MS"
	tb__do ip -n "$hns" link set dev "r$i" up
	tb__shape "$hns" "r$i" "$rate"
	tb__shape "$sns" "$port" "$rate"
}

# --one-subnet: ARP and source checks of a host with several interfaces in one subnet.
tb__one_subnet_host() {
	tb__do ip netns exec "$(tb__host_ns "$1")" sysctl -qw net.ipv4.conf.all.arp_ignore=1 \
		net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.rp_filter=2
}

# tb_create [--tag T] [--hosts H] [--rails N] [--rate R[,R..]] [--mtu M[,M..]] [--mgmt-octet O]
tb_create() (
	local hosts=2 rate=off mtu=1500 octet="" v6="" k i left state nsw
	local -a rates mtus
	TB__N=2 TB__ONE=0
	while (($#)); do
		case $1 in
		--tag) TB_TAG=${2-}; shift 2 ;;
		--hosts) hosts=${2-}; shift 2 ;;
		--rails) TB__N=${2-}; shift 2 ;;
		--rate) rate=${2-}; shift 2 ;;
		--mtu) mtu=${2-}; shift 2 ;;
		--mgmt-octet) octet=${2-}; shift 2 ;;
		--one-subnet) TB__ONE=1; shift ;;
		--v6) v6=${2-}; shift 2 ;;
		*) tb__die "create: unknown option '$1' (see --help)" ;;
		esac
	done
	tb__require_root; tb__require_tools; tb__check_tag "$TB_TAG"
	tb__is_uint "$hosts" && ((hosts >= 2 && hosts <= 64)) || tb__die "--hosts must be 2..64, not '$hosts'"
	tb__is_uint "$TB__N" && ((TB__N >= 1 && TB__N <= 8)) || tb__die "--rails must be 1..8, not '$TB__N'"
	TB__H=$hosts
	((TB__ONE == 0 || hosts <= 9)) || tb__die "--one-subnet takes 2..9 hosts, not '$hosts'"
	[[ $TB__ONE == 0 || $mtu != *,* ]] || tb__die "--one-subnet takes one MTU (one bridge), not '$mtu'"
	[[ $TB__ONE == 0 || -z $v6 ]] || tb__die "--one-subnet beds are IPv4 only (no --v6)"
	[[ $v6 == all ]] && v6=$(seq -s, 1 "$TB__N")
	for i in ${v6//,/ }; do
		tb__is_uint "$i" && ((i >= 1 && i <= TB__N)) || tb__die "--v6 takes rail numbers 1..$TB__N or 'all', not '$v6'"
	done
	tb__per_rail --rate "$rate" rates
	tb__per_rail --mtu "$mtu" mtus
	for ((i = 0; i < TB__N; i++)); do
		[[ ${rates[i]} == off ]] || tb__valid_rate "${rates[i]}" || tb__die "bad rate '${rates[i]}' (e.g. 1gbit, 250mbit, off)"
		tb__is_uint "${mtus[i]}" && ((mtus[i] >= 576 && mtus[i] <= 65535)) || tb__die "bad MTU '${mtus[i]}' (576..65535)"
	done
	tb__lock
	state=$(tb__state_file)
	[[ -e $state ]] && tb__die "test bed '$TB_TAG' already exists ($state); destroy it first: $TB_SELF destroy --tag $TB_TAG"
	left=$(tb__leftovers)
	[[ -z $left ]] || tb__die "leftovers named like bed '$TB_TAG' exist but no bed records them:" $left \
		"-- if they are yours, remove them with: $TB_SELF destroy --tag $TB_TAG --force"
	if [[ -z $octet ]]; then
		octet=$(tb__pick_mgmt) || tb__die "no free management subnet in 198.18.200-250.0/24"
	else
		tb__is_uint "$octet" && ((octet >= 200 && octet <= 250)) || tb__die "--mgmt-octet must be 200..250"
	fi
	TB__MGMT=$octet

	# From here on we own the state file; a failure tears down what was made so far.
	{
		echo "# ri2n-testbed bed '$TB_TAG', created $(date -Is) by pid $$"
		echo "conf hosts $TB__H"; echo "conf rails $TB__N"; echo "conf mgmt $TB__MGMT"
		echo "conf onesubnet $TB__ONE"
		for ((i = 1; i <= TB__N; i++)); do echo "conf rate $i ${rates[i - 1]}"; echo "conf mtu $i ${mtus[i - 1]}"; done
		for i in ${v6//,/ }; do echo "conf v6 $i 1"; done
	} >"$state"
	trap 'rc=$?; ((rc == 0)) || { tb__warn "create failed; removing the partial bed"; tb__teardown; }' EXIT
	trap 'exit 130' INT TERM

	tb__do ip link add name "ri2n-$TB_TAG-m" type bridge stp_state 0 nf_call_iptables 0 nf_call_ip6tables 0
	tb__record "link ri2n-$TB_TAG-m"
	echo 1 >"/proc/sys/net/ipv6/conf/ri2n-$TB_TAG-m/disable_ipv6"
	tb__do ip addr add "198.18.$TB__MGMT.254/24" dev "ri2n-$TB_TAG-m"
	tb__do ip link set dev "ri2n-$TB_TAG-m" up
	nsw=$((TB__ONE ? 1 : TB__N))
	for ((i = 1; i <= nsw; i++)); do tb__create_switch "$i" "${mtus[i - 1]}"; done
	for ((k = 1; k <= TB__H; k++)); do
		tb__create_host "$k"
		((TB__ONE)) && tb__one_subnet_host "$k"
		for ((i = 1; i <= TB__N; i++)); do tb__plug "$k" "$i" "${mtus[i - 1]}" "${rates[i - 1]}"; done
	done
	local devs=() ports=() mports=("ri2n-$TB_TAG-m")
	for ((i = 1; i <= TB__N; i++)); do devs+=("r$i"); done
	for ((k = 1; k <= TB__H; k++)); do
		mports+=("ri2n-$TB_TAG-p$k")
		tb__wait_up "$(tb__host_ns "$k")" mgmt "${devs[@]}"
	done
	for ((i = 1; i <= TB__N; i++)); do
		ports=()
		for ((k = 1; k <= TB__H; k++)); do ports+=("$(tb__port "$k" "$i")"); done
		tb__wait_up "$(tb__sw_ns "$i")" br "${ports[@]}"
	done
	tb__wait_up "" "${mports[@]}"
)

# ---- destroy -------------------------------------------------------------------------------
# Remove what the state file lists (flappers, root links, namespaces), then the file itself.
tb__teardown() {
	local state kind a b pid
	state=$(tb__state_file)
	[[ -f $state ]] || return 0
	while read -r kind pid a b; do
		[[ $kind == flap ]] || continue
		tb__alive "$pid" "$a" && kill -TERM "$pid" 2>/dev/null || true
	done <"$state"
	while read -r kind pid a b; do   # give flappers up to 1 s to finish, then insist
		[[ $kind == flap ]] && tb__alive "$pid" "$a" || continue
		for _ in {1..20}; do tb__alive "$pid" || break; sleep 0.05; done
		kill -KILL "$pid" 2>/dev/null || true
	done <"$state"
	while read -r kind a; do
		[[ $kind == link ]] && tb__link_exists "$a" && { ip link del dev "$a" || tb__warn "cannot delete link $a"; }
	done <"$state"
	while read -r kind a; do
		[[ $kind == ns ]] && tb__ns_exists "$a" && { ip netns del "$a" || tb__warn "cannot delete namespace $a"; }
	done <"$state"
	rm -f "$state"
}

# tb_destroy [--tag T] [--force]: --force also removes unrecorded ri2n-T-* namespaces/links.
tb_destroy() (
	local force=0 n
	while (($#)); do
		case $1 in
		--tag) TB_TAG=${2-}; shift 2 ;;
		--force) force=1; shift ;;
		*) tb__die "destroy: unknown option '$1'" ;;
		esac
	done
	tb__require_root; tb__check_tag "$TB_TAG"
	tb__lock
	[[ -f $(tb__state_file) ]] || ((force)) || tb__warn "no test bed '$TB_TAG' recorded; nothing to destroy"
	tb__teardown
	if ((force)); then
		for n in $(tb__leftovers); do
			if tb__ns_exists "$n"; then ip netns del "$n"; else ip link del dev "$n"; fi
			echo "ri2n-testbed: removed unrecorded $n"
		done
	elif [[ -n $(tb__leftovers) ]]; then
		# shellcheck disable=SC2046
		tb__warn "unrecorded leftovers remain:" $(tb__leftovers) "(not ours to delete; use --force)"
	fi
	return 0
)

# ---- faults --------------------------------------------------------------------------------
tb__fault_cable() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns dev addr net i=$TB__I
	ns=$(tb__host_ns "$TB__K"); dev=r$i; addr=$(tb__ip "$TB__K" "$i"); net=$(tb__net "$i")
	case ${3-} in
	down) tb__do ip -n "$ns" link set dev "$dev" down ;;
	up)
		tb__do ip -n "$ns" link set dev "$dev" up
		tb__wait_up "$ns" "$dev"
		tb__wait_up "$(tb__sw_ns "$i")" "$(tb__port "$TB__K" "$i")"
		if tb__v6 "$i"; then # the kernel drops IPv6 addresses with the link
			[[ $(ip -n "$ns" -6 -o addr show dev "$dev") == *" $addr/64 "* ]] ||
				tb__do ip -n "$ns" addr add "$addr/64" dev "$dev" nodad
			return 0
		fi
		[[ $(ip -n "$ns" -4 -o addr show dev "$dev") == *" $addr/24 "* ]] ||
			tb__do ip -n "$ns" addr add "$addr/24" dev "$dev"
		[[ -n $(ip -n "$ns" -4 route show "$net" dev "$dev") ]] ||
			tb__do ip -n "$ns" route add "$net" dev "$dev" proto kernel scope link src "$addr"
		;;
	*) tb__die "cable HOST RAIL down|up" ;;
	esac
}

tb__fault_switch() {
	tb__rail_arg "${1-}"
	local ns
	ns=$(tb__sw_ns "$TB__I")
	case ${2-} in
	down) tb__do ip -n "$ns" link set dev br down ;;
	up) tb__do ip -n "$ns" link set dev br up; tb__wait_up "$ns" br ;;
	blackhole) tb__nft_add_chain "$ns" bridge blackhole forward "counter drop" ;;
	heal) tb__nft_del_chain "$ns" bridge blackhole ;;
	*) tb__die "switch RAIL down|up|blackhole|heal" ;;
	esac
}

# Black hole and loss sit on the host's port in the rail's switch (see the header for why).
tb__fault_blackhole() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns port
	ns=$(tb__sw_ns "$TB__I"); port=$(tb__port "$TB__K" "$TB__I")
	case ${3-} in
	on) tb__nft_add_chain "$ns" bridge "bh_$port" forward \
		"iifname \"$port\" counter drop" "oifname \"$port\" counter drop" ;;
	off) tb__nft_del_chain "$ns" bridge "bh_$port" ;;
	*) tb__die "blackhole HOST RAIL on|off" ;;
	esac
}

# Drops by length (nft meta length: the IP packet, without the Ethernet header).  A GSO
# batch crosses veth and the bridge as one skb, which a real switch never sees: while the
# hole is in place every host's r<i> on the rail segments in software (gso_max_segs 1),
# so the rule judges frames (a small datagram sent right after a large one would
# otherwise vanish with it).
tb__fault_mtuhole() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns port n=${3-} k segs=1
	ns=$(tb__sw_ns "$TB__I"); port=$(tb__port "$TB__K" "$TB__I")
	[[ $n == off ]] && segs=65535
	for ((k = 1; k <= TB__H; k++)); do
		tb__do ip -n "$(tb__host_ns "$k")" link set dev "r$TB__I" gso_max_segs "$segs"
	done
	if [[ $n == off ]]; then
		tb__nft_del_chain "$ns" bridge "mtu_$port"
		return
	fi
	tb__is_uint "$n" && ((n >= 68)) || tb__die "mtuhole HOST RAIL BYTES|off: BYTES >= 68, not '$n'"
	tb__nft_add_chain "$ns" bridge "mtu_$port" forward \
		"iifname \"$port\" meta length > $n counter drop" \
		"oifname \"$port\" meta length > $n counter drop"
}

tb__fault_loss() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns port p=${3-}
	ns=$(tb__sw_ns "$TB__I"); port=$(tb__port "$TB__K" "$TB__I")
	tb__is_uint "$p" && ((p <= 100)) || tb__die "loss HOST RAIL P: P is a percentage 0..100, not '$p'"
	p=$((10#$p))
	if ((p == 0)); then
		tb__nft_del_chain "$ns" bridge "loss_$port"
	else
		tb__nft_add_chain "$ns" bridge "loss_$port" forward \
			"iifname \"$port\" numgen random mod 100 < $p counter drop" \
			"oifname \"$port\" numgen random mod 100 < $p counter drop"
	fi
}

tb__fault_rate() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local rate=${3-}
	[[ $rate == off ]] && rate=$(tb__conf rate "$TB__I")
	[[ $rate == off ]] || tb__valid_rate "$rate" || tb__die "rate HOST RAIL RATE|off: bad rate '${3-}' (e.g. 250mbit)"
	tb__shape "$(tb__host_ns "$TB__K")" "r$TB__I" "$rate"
	tb__shape "$(tb__sw_ns "$TB__I")" "$(tb__port "$TB__K" "$TB__I")" "$rate"
}

# The duplicate re-enters the egress hook; the mark bit lets it through instead of looping.
tb__fault_dup() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns dev=r$TB__I m=$TB_DUP_MARK
	ns=$(tb__host_ns "$TB__K")
	case ${3-} in
	on) tb__nft_add_chain "$ns" netdev "dup_$dev" "egress device \"$dev\"" \
		"meta mark & $m == $m counter accept" \
		"counter meta mark set meta mark | $m dup to \"$dev\" meta mark set meta mark & $(printf '0x%x' $((~m & 0xffffffff)))" ;;
	off) tb__nft_del_chain "$ns" netdev "dup_$dev" ;;
	*) tb__die "dup HOST RAIL on|off" ;;
	esac
}

tb__now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }
tb__sleep_until() {   # absolute time in microseconds
	local d=$(($1 - $(tb__now_us)))
	((d > 0)) || return 0
	sleep "$((d / 1000000)).$(printf %06d $((d % 1000000)))" & TB__SLEEP_PID=$!
	wait "$TB__SLEEP_PID"
}

# Toggle NS/DEV down, up, down... every HALF_MS on an absolute schedule, for DURATION_MS, and
# end with the link up, also when killed. Runs in the background (tb__fault_flap).
tb__flap_loop() {
	local ns=$1 dev=$2 half_us=$(($3 * 1000)) t0 end n=0
	set +e
	TB__SLEEP_PID=""
	trap '[[ -n $TB__SLEEP_PID ]] && kill "$TB__SLEEP_PID" 2>/dev/null; ip -n "$ns" link set dev "$dev" up; exit 0' TERM INT HUP
	t0=$(tb__now_us)
	end=$((t0 + $4 * 1000))
	while ((t0 + n * half_us < end)); do
		tb__sleep_until $((t0 + n * half_us))
		if ((n % 2 == 0)); then ip -n "$ns" link set dev "$dev" down || break
		else ip -n "$ns" link set dev "$dev" up || break; fi
		n=$((n + 1))
	done
	tb__sleep_until "$end"
	ip -n "$ns" link set dev "$dev" up
}

tb__fault_flap() {
	tb__host_arg "${1-}"; tb__rail_arg "${2-}"
	local ns dev=r$TB__I period=${3-} dur=${4-} pid kind p st k i
	ns=$(tb__host_ns "$TB__K")
	if [[ $period == stop ]]; then
		while read -r kind p st k i; do
			[[ $kind == flap && $k == "$TB__K" && $i == "$TB__I" ]] && tb__alive "$p" "$st" &&
				kill -TERM "$p" 2>/dev/null || true
		done <"$(tb__state_file)"
		return 0
	fi
	tb__is_uint "$period" && ((period >= 2)) || tb__die "flap: PERIOD_MS must be an integer >= 2, not '$period'"
	tb__is_uint "$dur" || tb__die "flap: DURATION_MS must be an integer, not '$dur'"
	tb__flap_loop "$ns" "$dev" $((period / 2)) "$dur" </dev/null >/dev/null 2>&1 &
	pid=$!
	tb__record "flap $pid $(tb__starttime "$pid" || echo gone) $TB__K $TB__I"
	echo "$pid"
}

# tb_fault KIND ARGS...: apply or clear one fault (kinds listed in the header).
tb_fault() (
	local kind=${1-}
	shift || true
	tb__require_root; tb__load
	case $kind in
	cable | switch | blackhole | mtuhole | loss | rate | dup | flap) "tb__fault_$kind" "$@" ;;
	*) tb__die "unknown fault '$kind' (cable, switch, blackhole, mtuhole, loss, rate, dup, flap)" ;;
	esac
)

# ---- queries -------------------------------------------------------------------------------
tb_ns() ( tb__load; tb__host_arg "${1-}"; tb__host_ns "$TB__K"; )          # HOST -> namespace
tb_sw_ns() ( tb__load; tb__rail_arg "${1-}"; tb__sw_ns "$TB__I"; )         # RAIL -> switch ns
tb_addr() ( tb__load; tb__host_arg "${1-}"; tb__rail_arg "${2-}"; tb__ip "$TB__K" "$TB__I"; )
tb_mgmt_addr() ( tb__load; tb__host_arg "${1-}"; echo "198.18.$TB__MGMT.$TB__K"; )
tb_mgmt_subnet() ( tb__load; echo "198.18.$TB__MGMT.0/24"; )
tb_hosts() ( tb__load; echo "$TB__H"; )
tb_rails() ( tb__load; echo "$TB__N"; )
tb_exists() { [[ -f $(tb__state_file) ]]; }

# tb_wait_pid PID [TIMEOUT_S]: wait for a process that is not our child (e.g. a flapper) to end.
tb_wait_pid() {
	local n=$((${2:-30} * 50))
	while tb__alive "$1"; do ((n-- > 0)) || return 1; sleep 0.02; done
}

# tb_exec HOST CMD...: run CMD inside the host's namespace.
tb_exec() {
	local ns
	ns=$(tb_ns "${1-}") || return 1
	shift
	ip netns exec "$ns" "$@"
}

# Select the bed the other functions act on (the default is $TB_TAG or "tb").
tb_use() {
	[[ ${1-} =~ ^[a-z0-9]{1,6}$ ]] || { echo "ri2n-testbed: bad tag '${1-}'" >&2; return 1; }
	TB_TAG=$1
}

tb_status() (
	local k i ns t fam kind p st a b
	tb__require_root; tb__load
	echo "bed '$TB_TAG': $TB__H hosts, $TB__N rails, mgmt 198.18.$TB__MGMT.0/24 on ri2n-$TB_TAG-m"
	for ((i = 1; i <= TB__N; i++)); do
		ns=$(tb__sw_ns "$i")
		echo "rail $i: switch $ns, bridge $(ip -n "$ns" -br link show dev br | awk '{print $2}')," \
			"rate $(tb__conf rate "$i"), mtu $(tb__conf mtu "$i")"
	done
	for ((k = 1; k <= TB__H; k++)); do
		ns=$(tb__host_ns "$k")
		echo "host $k: $ns"
		ip -n "$ns" -br addr show | awk '$1 ~ /^(r[0-9]+|mgmt)@/ {
			sub(/@.*/, "", $1); printf "    %-5s %-8s %s\n", $1, $2, $3 }'
		for ((i = 1; i <= TB__N; i++)); do
			echo "    r$i qdisc: $(tc -n "$ns" qdisc show dev "r$i" root)"
			echo "    $(tb__port "$k" "$i") qdisc (switch $i): $(tc -n "$(tb__sw_ns "$i")" qdisc show dev "$(tb__port "$k" "$i")" root)"
		done
	done
	echo "active nftables faults (chain: rules):"
	t=$(tb__nft_table)
	# shellcheck disable=SC2013
	for ns in $(awk '$1=="ns" {print $2}' "$(tb__state_file)"); do
		for fam in netdev bridge; do
			tb__nft "$ns" list table "$fam" "$t" 2>/dev/null |
				awk -v ns="$ns" '/chain/ {c=$2} /counter/ {sub(/^[ \t]+/, ""); print "    " ns " " c ": " $0}' || true
		done
	done
	while read -r kind p st a b; do
		[[ $kind == flap ]] && tb__alive "$p" "$st" && echo "    flapper pid $p on host $a rail $b"
	done <"$(tb__state_file)"
	return 0
)

# ---- cleanup on exit -----------------------------------------------------------------------
TB__CLEANUP_TAGS=()
TB__ON_EXIT=()
# Run the queued commands (tb_on_exit), then destroy the registered beds; safe to call twice.
tb_cleanup_all() {
	local t c
	for c in "${TB__ON_EXIT[@]}"; do eval "$c" || true; done
	for t in "${TB__CLEANUP_TAGS[@]}"; do
		[[ -f $TB_STATE_DIR/$t.state ]] && { tb_destroy --tag "$t" || true; }
	done
	TB__ON_EXIT=(); TB__CLEANUP_TAGS=()
}
tb__install_traps() {
	trap 'tb_cleanup_all' EXIT
	trap 'tb_cleanup_all; trap - INT; kill -INT $$' INT
	trap 'tb_cleanup_all; exit 143' TERM
}
# tb_cleanup_on_exit [TAG]: destroy this bed (default $TB_TAG) when the caller's shell exits,
# fails or is interrupted. Installs EXIT/INT/TERM traps, replacing the caller's: queue extra
# cleanup with tb_on_exit instead.
tb_cleanup_on_exit() { TB__CLEANUP_TAGS+=("${1:-$TB_TAG}"); tb__install_traps; }
# tb_on_exit CMD...: also run CMD (as one eval'd string) at exit, before the beds go.
tb_on_exit() { TB__ON_EXIT+=("$*"); tb__install_traps; }

# ---- CLI -----------------------------------------------------------------------------------
tb_usage() {
	sed -n '2,/^$/p' "$TB_SELF" | sed 's/^# \{0,1\}//'
}

tb_main() {
	local -a args=()
	while (($#)); do
		case $1 in
		--tag) [[ $# -ge 2 ]] || tb__die "--tag needs a value"; TB_TAG=$2; shift 2 ;;
		-h | --help | help) tb_usage; return 0 ;;
		--version) echo "ri2n-testbed $TB_VERSION"; return 0 ;;
		*) args+=("$1"); shift
		   [[ ${args[0]} == exec && ${#args[@]} -eq 2 ]] && { args+=("$@"); break; } ;;
		esac
	done
	tb__check_tag "$TB_TAG"
	set -- "${args[@]}"
	local cmd=${1-}
	shift || true
	case $cmd in
	create) tb_create "$@" ;;
	destroy) tb_destroy "$@" ;;
	status) tb_status ;;
	fault) tb_fault "$@" ;;
	ns) tb_ns "$@" ;;
	addr) tb_addr "$@" ;;
	mgmt-subnet) tb_mgmt_subnet ;;
	exec) tb__require_root; tb_exec "$@" ;;
	"") tb_usage >&2; return 2 ;;
	*) tb__die "unknown command '$cmd' (create, destroy, status, fault, ns, addr, mgmt-subnet, exec; --help)" ;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	tb_main "$@"
fi
