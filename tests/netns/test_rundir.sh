#!/usr/bin/env bash
# Where a ri2n process publishes its state for ri2n-stat, against another
# local user (root; 77 = skipped).  Each case runs ri2n-xfer serve for a
# moment in a network namespace of its own (one veth rail), with the
# directory planted beforehand:
#
#   symlink     RI2N_RUN_DIR is a symlink to another directory: refused, nothing
#               written there, a warning
#   foreign     RI2N_RUN_DIR is a directory of another user: refused, a warning
#   wide        RI2N_RUN_DIR is ours with mode 0777: used, no longer writable by others
#   new         RI2N_RUN_DIR does not exist: created with mode 0700 and used
#   default     as user nobody, the default /tmp/ri2n-65534 planted by root: refused
#   leftover    a snapshot a killed process left half-written (<pid>.stat.tmp): ri2n-stat
#               removes it once that process is gone, and keeps a live one's
#
# Environment: RI2N_XFER (the ri2n-xfer to run).
set -u
XFER=${RI2N_XFER:?RI2N_XFER: the ri2n-xfer binary}
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (namespaces, chown)"; exit 77; }
for t in unshare setpriv ip; do
	command -v "$t" >/dev/null || { echo "skip: $t is not installed"; exit 77; }
done
work=$(mktemp -d /tmp/ri2n-rundir.XXXXXX)
planted=""
cleanup() {
	rm -rf "$work"
	[ -n "$planted" ] && rm -rf "$planted"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# publish DIR [USER]: ri2n-xfer serve publishing every 20 ms; lists DIR's .stat
# files while it runs into $work/seen, its stderr into $work/err.  The server lives
# 1 s from its start, which comes after the rail's setup: it runs when DIR is listed,
# 0.6 s after the setup began, and nothing is looked at after that
publish() {
	local dir=$1 as=${2:-}
	local pre=""
	[ -n "$as" ] && pre="setpriv --reuid=$as --regid=$as --clear-groups"
	rm -f "$work/seen" "$work/err"
	RI2N_RUN_DIR=$dir RI2N_STAT_MS=20 unshare -n sh -c '
		ip link add d0 type veth peer name d1 && ip addr add 198.18.99.1/24 dev d0 &&
		ip link set d1 up && ip link set d0 up &&
		$1 env RI2N_RAILS=d0 timeout -s KILL 1 "$0" serve --port 7999 --quiet' \
		"$XFER" "$pre" 2>"$work/err" &
	local pid=$!
	sleep 0.6
	{ [ -n "$dir" ] && ls "$dir" 2>/dev/null | grep '\.stat$'; } >"$work/seen"
	wait "$pid" 2>/dev/null
}

# symlink
mkdir -p "$work/victim"
ln -s "$work/victim" "$work/link"
publish "$work/link"
[ -z "$(ls -A "$work/victim")" ] || fail "symlink: wrote through it: $(ls "$work/victim")"
grep -q "not publishing" "$work/err" || fail "symlink: no warning: $(cat "$work/err")"
echo "ok: symlink refused"

# foreign
mkdir "$work/foreign"
chown 12345:12345 "$work/foreign"
chmod 0777 "$work/foreign"
publish "$work/foreign"
[ -z "$(ls -A "$work/foreign")" ] || fail "foreign: wrote into another user's directory"
grep -q "owned by another user" "$work/err" || fail "foreign: no warning: $(cat "$work/err")"
echo "ok: another user's directory refused"

# wide
mkdir "$work/wide"
chmod 0777 "$work/wide"
publish "$work/wide"
[ -s "$work/seen" ] || fail "wide: nothing published: $(cat "$work/err")"
[ "$(stat -c %a "$work/wide")" = 755 ] || fail "wide: mode $(stat -c %a "$work/wide"), want 755"
echo "ok: our own wide directory narrowed to 755 and used"

# new
publish "$work/new"
[ -s "$work/seen" ] || fail "new: nothing published: $(cat "$work/err")"
[ "$(stat -c %a "$work/new")" = 700 ] || fail "new: mode $(stat -c %a "$work/new"), want 700"
echo "ok: a new directory made with mode 700"

# default, as nobody
if [ -e /tmp/ri2n-65534 ] || [ -e /run/user/65534 ]; then
	echo "note: /tmp/ri2n-65534 or /run/user/65534 exists: default case not run"
else
	planted=/tmp/ri2n-65534
	mkdir -m 0777 "$planted"
	RI2N_RUN_DIR= publish "" 65534
	[ -z "$(ls -A "$planted")" ] || fail "default: nobody's process wrote into root's planted directory"
	grep -q "owned by another user" "$work/err" || fail "default: no warning: $(cat "$work/err")"
	echo "ok: a planted default directory refused"
fi
# leftover: ri2n-stat tidies half-written snapshots of processes that are gone
STAT=${RI2N_STAT_BIN:-$(dirname "$XFER")/ri2n-stat}
if [ -x "$STAT" ]; then
	mkdir -m 0700 "$work/left"
	dead=$(sh -c 'echo $$') # a process that has exited
	: >"$work/left/$dead.stat.tmp"
	: >"$work/left/$$.fi0.stat.tmp"
	"$STAT" --dir "$work/left" >/dev/null 2>&1
	[ ! -e "$work/left/$dead.stat.tmp" ] || fail "leftover: the dead process's $dead.stat.tmp is still there"
	[ -e "$work/left/$$.fi0.stat.tmp" ] || fail "leftover: a live process's snapshot in progress was removed"
	echo "ok: a dead process's half-written snapshot removed, a live one's kept"
else
	echo "note: ri2n-stat not built at $STAT: leftover case not run"
fi
# conf: RI2N_RUN_DIR named only in the configuration file (RI2N_CONF): the process
# publishes there and ri2n-stat, with no --dir and no RI2N_RUN_DIR, finds it
if [ -x "$STAT" ]; then
	mkdir -m 0700 "$work/byconf"
	printf 'RI2N_RUN_DIR = %s\nRI2N_STAT_MS = 20\n' "$work/byconf" >"$work/ri2n.conf"
	# it is killed once ri2n-stat has looked: the timeout only bounds a hang (at 5 s a
	# TSan build on a loaded host was gone before ri2n-stat, itself slow to start, looked)
	RI2N_CONF=$work/ri2n.conf unshare -n sh -c '
		ip link add d0 type veth peer name d1 && ip addr add 198.18.99.1/24 dev d0 &&
		ip link set d1 up && ip link set d0 up &&
		env -u RI2N_RUN_DIR -u RI2N_STAT_MS RI2N_RAILS=d0 timeout -s KILL 30 "$0" serve --port 7999 --quiet' \
		"$XFER" 2>"$work/err" &
	pid=$!
	for i in $(seq 40); do # its first snapshot (4 s at most)
		seen=$(ls "$work/byconf" | sed -n 's/^\([0-9]*\)\.stat$/\1/p')
		[ -n "$seen" ] && break
		sleep 0.1
	done
	out=$(env -u RI2N_RUN_DIR RI2N_CONF="$work/ri2n.conf" "$STAT" 2>&1)
	kill -9 "$pid" 2>/dev/null
	pkill -KILL -f "ri2n-xfer serve --port 7999" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -n "$seen" ] || fail "conf: nothing published in the file's RI2N_RUN_DIR: $(cat "$work/err")"
	echo "$out" | grep -q "^process $seen (ri2n-xfer)" ||
		fail "conf: ri2n-stat did not read RI2N_RUN_DIR from the file: $out"
	echo "ok: RI2N_RUN_DIR from ri2n.conf, for the library and for ri2n-stat"
fi
echo "ok: rundir"
