#!/usr/bin/env bash
# The main job (README): builds ri2n, makes two hosts joined by two rails
# shaped like Gigabit Ethernet (network namespaces, veth, tbf), streams a
# verified byte pattern from host 1 to host 2 while rail 1 is silently
# black-holed at 5 s and healed at 12 s, and shows what happened: a line per
# 100 ms while it runs, a summary, and a plot (demo-out/demo.png).  It
# removes the namespaces, links and rules it made, also on failure or Ctrl-C.
#
#   ./demo.sh [--seconds N] [--fail-at S] [--heal-at S] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")"

secs=17 fail_at=5 heal_at=12 out=demo-out
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) secs=$2; shift ;;
	--fail-at) fail_at=$2; shift ;;
	--heal-at) heal_at=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root (it makes network namespaces)" >&2; exit 1; }

tools/deps.sh
echo "== building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
xfer=$PWD/build/tools/ri2n-xfer
mkdir -p "$out"
rm -f "$out"/recv.csv "$out"/send.csv "$out"/*.log

# shellcheck source=tools/ri2n-testbed.sh
source tools/ri2n-testbed.sh
set +e
tb_use demo
tb_exists && tb_destroy >/dev/null 2>&1
tb_cleanup_on_exit
echo "== test bed: 2 hosts, 2 rails of 1 Gbit/s (tbf), namespaces ri2n-demo-*"
tb_create --hosts 2 --rails 2 --rate 1gbit >/dev/null || exit 1
export RI2N_RAILS=r1,r2

ip netns exec "$(tb_ns 2)" "$xfer" serve --once --csv "$out/recv.csv" \
	>"$out/recv.log" 2>"$out/recv.err" &
server=$!
tb_on_exit "kill $server 2>/dev/null"
sleep 0.3
echo "== streaming ${secs} s from host 1 to host 2; rail 1 black-holed at ${fail_at} s, healed at ${heal_at} s"
echo "   (receiver's view: time, goodput over the last 100 ms, rails U=up D=down)"
t0=$("$xfer" clock)
ip netns exec "$(tb_ns 1)" "$xfer" send "$(tb_addr 2 1)" --seconds "$secs" --quiet \
	--csv "$out/send.csv" >"$out/send.log" 2>"$out/send.err" &
sender=$!
tb_on_exit "kill $sender 2>/dev/null"

# the receiver's lines as they come, while the faults happen on schedule.  Read by the
# shell, a line at a time: mawk (Debian's awk) reads a pipe in 4 KB blocks and held
# about 6 s of lines back, printing them after the announcements made meanwhile.
# Rails are numbered from 1 here as in the test bed (r1, r2); ri2n-xfer's rail=N and
# ri2n's events count from 0.
view() {
	local line t m r rail state cause LC_ALL=C
	while IFS= read -r line; do
		case $line in
		"xfer t="*)
			read -r _ t m _ r _ <<<"$line"
			printf '   %6.1f s  %7.1f Mbit/s  rails %s\n' "${t#t=}" "${m#mbps=}" "${r#rails=}"
			;;
		"xfer event t="*" rail="*)
			read -r _ _ t rail state _ <<<"$line"
			cause=${line#*cause=\"}
			printf '   %8.3f s  receiver: rail %d %s (%s)\n' "${t#t=}" $((${rail#rail=} + 1)) \
				"$state" "${cause%\"}"
			;;
		"xfer event t="*)
			read -r _ _ t _ state _ <<<"$line"
			printf '   %8.3f s  receiver: connection %s\n' "${t#t=}" "$state"
			;;
		esac
	done
}
tail -n +1 -f "$out/recv.err" --pid=$server 2>/dev/null | view &
viewer=$!
at() { # wait until S seconds after the start
	local now
	now=$("$xfer" clock)
	sleep "$(awk -v t0="$t0" -v s="$1" -v n="$now" 'BEGIN { d = t0 + s - n; print (d > 0 ? d : 0) }')"
}
# when the drop rule really goes in and out: nftables in rail 1's switch says so
# (the fault command itself takes tens of milliseconds)
# (each line stamped with CLOCK_MONOTONIC by the bench's ri2n-stream, built with the rest)
setsid sh -c 'ip netns exec ri2n-demo-sw1 stdbuf -oL nft monitor 2>/dev/null | "$1" stamp' sh \
	"$PWD/build/bench/ri2n-stream" >"$out/nft.log" &
monitor=$!
tb_on_exit "kill -- -$monitor 2>/dev/null"
in_place() { # AFTER add|delete: when the black-hole chain was added or deleted, from nft's log
	awk -v a="$1" -v w="$2" '$1 >= a - 0.001 && $2 == w && $3 == "chain" && $6 == "bh_h1" { s = 1 }
		s && /new generation/ { print $1; exit }' "$out/nft.log"
}
# announce WHAT: a line at the receiver's time (its first CSV row gives its start), so it
# reads between the receiver's 100 ms lines before and after it
announce() {
	local now t0r
	now=$("$xfer" clock)
	t0r=$(awk -F, 'NR==2 {printf "%.6f", $3 - $2}' "$out/recv.csv")
	awk -v n="$now" -v t0="$t0r" -v w="$1" 'BEGIN { printf "   %8.3f s  >>> %s\n", n - t0, w }'
}
at "$fail_at"
tf=$("$xfer" clock)
tb_fault blackhole 1 1 on
tf_end=$("$xfer" clock)
announce "rail 1 of host 1 silently black-holed (link up, every packet dropped)"
at "$heal_at"
th=$("$xfer" clock)
tb_fault blackhole 1 1 off
th_end=$("$xfer" clock)
announce "rail 1 healed"
wait $sender
src=$?
wait $server
rrc=$?
wait $viewer 2>/dev/null # tail ends with the receiver

# ---- summary, from the receiver's own lines and ri2n's own events ----
t0r=$(awk -F, 'NR==2 {printf "%.6f", $3 - $2}' "$out/recv.csv")
summary=$(awk -F, -v t0="$t0r" -v tf="$tf" -v th="$th" '
	NR > 1 && $1 == "recv" {
		m = $3; v = $4
		if (m < tf - 0.05 && m > t0 + 0.5) { b += v; nb++ }
		else if (m > tf + 0.15 && m < th) { d += v; nd++; if (mind == "" || v < mind) mind = v }
		else if (m > th + 0.7) { a += v; na++ }
	}
	END { printf "%.0f %.0f %.0f %.0f", nb ? b / nb : 0, nd ? d / nd : 0, na ? a / na : 0, mind }' "$out/recv.csv")
read -r before during after mindur <<<"$summary"
# ri2n-xfer's rail=0 is ri2n's rail index 0: the test bed's rail 1 (r1)
event_after() { # FILE STATE AFTER: first "xfer event rail=0 STATE" at or after a time
	awk -v s="$2" -v t0="$3" -v after="$4" '$1 == "xfer" && $2 == "event" && $4 == "rail=0" && $5 == s {
		split($3, a, "="); m = t0 + a[2]; if (m >= after - 0.05) { printf "%.6f", m; exit } }' "$1"
}
# the fault's and the heal's moments: nftables' report, else the command's end (a bound)
sleep 0.2
kill -- -"$monitor" 2>/dev/null
tf_in=$(in_place "$tf" add) th_in=$(in_place "$th" delete) how="in place"
[ -n "$tf_in" ] && [ -n "$th_in" ] || { tf_in=$tf_end th_in=$th_end how="commands done (at most)"; }
down=$(event_after "$out/recv.err" down "$t0r" "$tf")
t0s=$(awk -F, 'NR==2 {printf "%.6f", $3 - $2}' "$out/send.csv" 2>/dev/null)
back=$(event_after "$out/send.err" up "$t0s" "$th")
ms() { [ -n "$1" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f ms", (a - b) * 1000 }' || echo "not seen"; }
bytes=$(awk '/done role=recv/ { for (i = 1; i <= NF; i++) if ($i ~ /^bytes=/) print substr($i, 7) }' "$out/recv.log")
verified=$(awk '/done role=recv/ { for (i = 1; i <= NF; i++) if ($i ~ /^verified=/) print substr($i, 10) }' "$out/recv.log")

echo
echo "== what happened"
printf '   goodput before the fault    %6s Mbit/s  (2 rails)\n' "$before"
printf '   goodput while rail 1 dead   %6s Mbit/s  (lowest 100 ms: %s Mbit/s)\n' "$during" "$mindur"
printf '   goodput after the heal      %6s Mbit/s\n' "$after"
# nft monitor's stamp is taken when its line is read, a few ms late on a busy machine: an event
# seen before it is timed from the command's start instead (the rule went in after that)
since() { # EVENT IN START WHAT: "<ms> after the WHAT was in place", or from the command's start
	if [ -n "$1" ] && awk -v e="$1" -v i="$2" 'BEGIN { exit !(e < i) }'; then
		echo "$(ms "$1" "$3") after the $4 command began (nftables' report came later)"
	else
		echo "$(ms "$1" "$2") after the $4 was $how"
	fi
}
printf '   fault detected by receiver  %s\n' "$(since "$down" "$tf_in" "$tf" "black hole")"
printf '   rail 1 back in use          %s\n' "$(since "$back" "$th_in" "$th" heal)"
printf '   bytes verified              %s (%s)\n' "${bytes:-0}" "${verified:-no}"

# ---- the plot ----
awk -F, -v t0="$t0r" -v tf="$tf" -v th="$th" 'NR > 1 && $1 == "recv" {
	printf "%.3f %.2f %d %d\n", $2, $4, substr($6, 1, 1) == "U", substr($6, 2, 1) == "U" }' \
	"$out/recv.csv" >"$out/recv.dat"
ftime=$(awk -v a="$tf" -v b="$t0r" 'BEGIN { printf "%.2f", a - b }')
htime=$(awk -v a="$th" -v b="$t0r" 'BEGIN { printf "%.2f", a - b }')
gnuplot <<EOF 2>/dev/null && echo "   plot: $out/demo.png" || echo "   (no plot: gnuplot failed)"
set terminal pngcairo size 1100,650 font "DejaVu Sans,11"
set output "$out/demo.png"
set multiplot
set lmargin at screen 0.12; set rmargin at screen 0.97
set tmargin at screen 0.93; set bmargin at screen 0.36
set title "ri2n over 2 x 1 Gbit/s rails: rail 1 silently black-holed at ${fail_at} s, healed at ${heal_at} s"
set ylabel "goodput (Mbit/s, per 100 ms)"
set yrange [0:2200]; set grid
set xrange [0:$secs + 0.5]
set format x ""
set object 1 rect from $ftime, graph 0 to $htime, graph 1 fc rgb "#ffdddd" fs solid 0.5 noborder behind
plot "$out/recv.dat" using 1:2 with lines lw 2 lc rgb "#1f5fa8" title "ri2n goodput at the receiver", \
     1000 with lines dt 2 lc rgb "#888888" title "one rail (1 Gbit/s)"
unset object 1; unset title
set tmargin at screen 0.33; set bmargin at screen 0.10
set xlabel "time (s)"; set format x "%g"
unset ylabel
set yrange [-0.5:3.5]; unset grid; unset key
set ytics ("rail 1 up" 3, "rail 1 down" 2, "rail 2 up" 1, "rail 2 down" 0)
plot "$out/recv.dat" using 1:(\$3 + 2) with steps lw 3 lc rgb "#2a9d3a", \
     "$out/recv.dat" using 1:4 with steps lw 3 lc rgb "#2a9d3a"
unset multiplot
EOF
[ "$src" -eq 0 ] && [ "$rrc" -eq 0 ] && [ "$verified" = yes ] || { echo "demo: the transfer failed"; exit 1; }
echo "== done; the test bed is removed on exit"
