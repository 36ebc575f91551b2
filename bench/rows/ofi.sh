# shellcheck shell=bash
# bench/rows/ofi.sh - the ofi row: fi_pingpong over the ri2n provider, tcp and udp;ofi_rxd.
# Sourced by bench/run.sh; writes ofi.csv.

# ---- libfabric: fi_pingpong over the ri2n provider, tcp and udp;ofi_rxd --------------------
# fi_pingpong (libfabric-bin) between the two hosts, RDM endpoints, data checked (-c): ri2n over
# both rails (libri2n-fi.so, FI_PROVIDER_PATH), libfabric's tcp (tcp;ofi_rxm) and udp;ofi_rxd on
# rail 1.  Latency: fi_pingpong's usec/xfer at 64 bytes (half a round trip, busy-polling);
# bandwidth: its MB/sec at 1 MiB (ping-pong, one message in flight).  Rows in ofi.csv.
OFI_CSV=$out/ofi.csv
echo "provider,rails,rep,lat64_us,bw1m_MBps,outcome" >"$OFI_CSV"
OFI_PROV=""
ofi_one() { # PROVIDER REP
	local prov=$1 rep=$2 name env=() rails=r1 rc lat bw spid
	name=$RAW/ofi-${prov//;/+}-$rep
	case $prov in
	ri2n) env=(FI_PROVIDER_PATH="$OFI_PROV" RI2N_RAILS=r1,r2) rails=r1,r2 ;;
	tcp) env=(FI_TCP_IFACE=r1) ;;
	*) env=(FI_UDP_IFACE=r1) ;;
	esac
	setsid timeout -s KILL 120 ip netns exec "$(hns 1)" env "${env[@]}" fi_pingpong -p "$prov" -e rdm \
		-c -I "$OFI_ITERS" >"$name.srv" 2>&1 &
	spid=$!
	sleep 0.5
	timeout -s KILL 120 ip netns exec "$(hns 2)" env "${env[@]}" fi_pingpong -p "$prov" -e rdm \
		-c -I "$OFI_ITERS" "$(tb_addr 1 1)" >"$name.out" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	[ $rc -eq 0 ] || { fail "fi_pingpong -p $prov exited $rc: $(tail -n 2 "$name.out" | tr '\n' ' ' | head -c 200)"; return; }
	lat=$(awk '$1 == "64" { print $7 }' "$name.out")
	bw=$(awk '$1 == "1m" { print $6 }' "$name.out")
	put ofi "$prov" "$rep" lat_us "$lat"
	put ofi "$prov" "$rep" mbps "$bw"
	echo "$prov,${rails//,/+},$rep,$lat,$bw,pass" >>"$OFI_CSV"
	log "   fi_pingpong -p $prov over $rails: 64 B $lat us/xfer, 1 MiB $bw MB/s, data checked"
}
# OFI_PROV: the directory of libri2n-fi.so, beside --bin-dir's programs first, else the bench's own build
ofi_find_prov() {
	local d
	[ -n "$OFI_PROV" ] && return 0
	for d in "${bindir:+$bindir/ofi/prov}" "${bindir:+$bindir/../ofi/prov}" "$ROOT/build-bench/ri2n/ofi/prov" \
		"$ROOT/build/ofi/prov"; do
		[ -n "$d" ] && [ -f "$d/libri2n-fi.so" ] && { OFI_PROV=$(cd "$d" && pwd); return 0; }
	done
	return 1
}
ofi_figure() { # REP
	local p
	need fi_pingpong "apt-get install libfabric-bin" || return
	ofi_find_prov || { fail "libri2n-fi.so is not built (libfabric-dev missing?)"; return; }
	sub_begin
	for p in ri2n tcp "udp;ofi_rxd"; do sub ofi_one "$p" "$1"; done
	sub_end
}
ofi_summary() {
	local p ver
	ver=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')
	echo "## libfabric: fi_pingpong over the ri2n provider, tcp and udp;ofi_rxd"
	echo
	echo "2 x GbE bed; \`fi_pingpong -e rdm -c -I $OFI_ITERS\` (libfabric $ver), data checked." \
		"ri2n over both rails, the others on rail 1. Latency: usec/xfer at 64 B (busy-polling; the" \
		"first size also pays for connecting); bandwidth: MB/sec at 1 MiB, one message in flight."
	echo
	echo "| provider | rails | 64 B (µs/xfer) | 1 MiB (MB/s) | latency / tcp | bandwidth / tcp |"
	echo "|---|---|---|---|---|---|"
	for p in ri2n tcp "udp;ofi_rxd"; do
		[ -n "$(agg ofi "$p" mbps)" ] || continue
		echo "| $p | $([ "$p" = ri2n ] && echo r1,r2 || echo r1) | $(fmtv ofi "$p" lat_us 2) |" \
			"$(fmtv ofi "$p" mbps 1) | $(ratio "$(med ofi "$p" lat_us)" "$(med ofi tcp lat_us)") |" \
			"$(ratio "$(med ofi "$p" mbps)" "$(med ofi tcp mbps)") |"
	done
	echo
}
