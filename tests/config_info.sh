#!/usr/bin/env bash
# ri2n-info against a configuration file of its own (RI2N_CONF): every knob's
# effective value and where it comes from (default, file:line, environment),
# --knob NAME for one, a bad line reported on stderr with its file and line,
# an unreadable file reported and not fatal, RI2N_CONF=/dev/null for none.
#
#   tests/config_info.sh RI2N_INFO
set -u
info=${1:?usage: config_info.sh RI2N_INFO}
[ -x "$info" ] || { echo "FAIL: no ri2n-info at $info"; exit 1; }
dir=$(mktemp -d /tmp/ri2n-info-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# row OUTPUT KNOB VALUE FROM: OUTPUT has the row "KNOB VALUE FROM"
row() {
	echo "$1" | awk -v k="$2" -v v="$3" -v f="$4" '$1 == k && $2 == v && $3 == f { ok = 1 }
		END { exit !ok }' || fail "no row '$2 $3 $4' in:
$1"
}

conf=$dir/ri2n.conf
cat >"$conf" <<'CONF'
# test site
RI2N_HEARTBEAT_MS = 250
RI2N_DEAD_PEER_MS = 9000   # shorter
RI2N_RAILS = r1,r2
RI2N_STAT_MS = 1000
RI2N_BOGUS = 1
RI2N_FAIL_WINDOW = 1
FI_RI2N_INJECT_SIZE = 1024
CONF
chmod 644 "$conf"
unset RI2N_HEARTBEAT_MS RI2N_DEAD_PEER_MS RI2N_RAILS RI2N_STAT_MS RI2N_FAIL_WINDOW RI2N_KEEPALIVE_MS
out=$(RI2N_CONF=$conf RI2N_DEAD_PEER_MS=12000 RI2N_KEEPALIVE_MS=50 "$info" 2>"$dir/err") ||
	fail "ri2n-info exited $?"
echo "$out" | grep -q "^configuration file: $conf (read)\$" || fail "no file line in: $out"
row "$out" RI2N_HEARTBEAT_MS 250 "$conf:2"
row "$out" RI2N_DEAD_PEER_MS 12000 environment # the environment wins over line 3
row "$out" RI2N_KEEPALIVE_MS 50 environment
row "$out" RI2N_RAILS r1,r2 "$conf:4"
row "$out" RI2N_STAT_MS 1000 "$conf:5"
row "$out" RI2N_FAIL_WINDOW 100 default # its line is bad
row "$out" RI2N_MTU 1500 default
row "$out" RI2N_KEY none default
row "$out" FI_RI2N_INJECT_SIZE 1024 "$conf:8"
row "$out" FI_RI2N_LINGER_MS 2000 default
n=$(echo "$out" | grep -c '^RI2N_')
[ "$n" -ge 20 ] || fail "only $n knobs listed"
[ "$(echo "$out" | grep -c '^FI_RI2N_')" -ge 5 ] || fail "the provider's parameters are not listed"
grep -q "$conf:6: RI2N_BOGUS: unknown knob" "$dir/err" || fail "bad line 6 not reported: $(cat "$dir/err")"
grep -q "$conf:7: RI2N_FAIL_WINDOW: 1 is not an integer from 2" "$dir/err" ||
	fail "bad line 7 not reported: $(cat "$dir/err")"
[ "$(grep -c "$conf:" "$dir/err")" -eq 2 ] || fail "bad lines reported more than once: $(cat "$dir/err")"
echo "ok: every knob with its value and source; bad lines 6 and 7 reported once"

one=$(RI2N_CONF=$conf "$info" --knob heartbeat_ms 2>/dev/null) || fail "--knob exited $?"
[ "$(echo "$one" | wc -l)" -eq 1 ] || fail "--knob printed more than one line: $one"
row "$one" RI2N_HEARTBEAT_MS 250 "$conf:2"
RI2N_CONF=$conf "$info" --knob RI2N_NOPE >/dev/null 2>&1 && fail "--knob RI2N_NOPE succeeded"
echo "ok: --knob"

out=$(RI2N_CONF=$dir/missing.conf "$info" 2>"$dir/err") || fail "a missing file is fatal"
grep -q "cannot read the configuration file $dir/missing.conf" "$dir/err" || fail "missing file not reported"
row "$out" RI2N_HEARTBEAT_MS 100 default
chmod 666 "$conf"
out=$(RI2N_CONF=$conf "$info" 2>"$dir/err") || fail "an untrusted file is fatal"
grep -q "writable by its group or others" "$dir/err" || fail "a file others may write was not refused"
row "$out" RI2N_HEARTBEAT_MS 100 default
out=$(RI2N_CONF=/dev/null "$info" 2>"$dir/err") || fail "RI2N_CONF=/dev/null is fatal"
echo "$out" | grep -q '^configuration file: none (none)$' || fail "RI2N_CONF=/dev/null: $out"
[ ! -s "$dir/err" ] || fail "RI2N_CONF=/dev/null printed: $(cat "$dir/err")"
echo "ok: a missing or untrusted file is reported and ignored; /dev/null is none"

# etc/ri2n.conf (every knob commented out at its default): read cleanly, and with its
# number lines uncommented every knob keeps its default, now from its line of the file
example=$(dirname "$0")/../etc/ri2n.conf
cp "$example" "$dir/example.conf" && chmod 644 "$dir/example.conf"
out=$(RI2N_CONF=$dir/example.conf "$info" 2>"$dir/err") || fail "etc/ri2n.conf: ri2n-info exited $?"
[ ! -s "$dir/err" ] || fail "etc/ri2n.conf: $(cat "$dir/err")"
sed -E 's/^#((FI_)?RI2N_[A-Z0-9_]+ = -?[0-9]+)$/\1/' "$example" >"$dir/example.conf"
before=$(RI2N_CONF=/dev/null "$info" | awk 'NR > 2 { print $1, $2 }')
out=$(RI2N_CONF=$dir/example.conf "$info" 2>"$dir/err") || fail "etc/ri2n.conf uncommented: exited $?"
[ ! -s "$dir/err" ] || fail "etc/ri2n.conf uncommented: $(cat "$dir/err")"
[ "$(echo "$out" | awk 'NR > 2 { print $1, $2 }')" = "$before" ] ||
	fail "etc/ri2n.conf's values are not the defaults: $out"
n=$(echo "$out" | grep -c " $dir/example.conf:[0-9]*\$")
[ "$n" -ge 18 ] || fail "etc/ri2n.conf uncommented sets only $n knobs: $out"
echo "ok: etc/ri2n.conf reads cleanly; its $n numbers are the defaults"
