# shellcheck shell=bash
# mpi_bed.sh - what the MPI test scripts share (sourced by run_mpi.sh and
# run_ri2n_run.sh after they set HERE, ROOT, WORK, TAG="" and NHOSTS=0):
# messages, the test bed of NHOSTS hosts with two 1 Gbit/s rails, and the
# cleanup that leaves no rank behind (the bed's functions come from
# tools/ri2n-testbed.sh and tests/netns/tag.sh, which the scripts source).

# fail's excerpt of each log leaves out lines matching this (extended regex)
MPI_BED_QUIET=${MPI_BED_QUIET:-'pingpong size=|stream rank=.* t='}

skip() { echo "SKIP: $*"; rm -rf "$WORK"; exit 77; }
note() { printf '  %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
	echo "FAIL: $*"
	for f in "$WORK"/*.out; do
		[ -f "$f" ] || continue
		echo "--- last lines of $(basename "$f")"
		grep -Ev "$MPI_BED_QUIET" "$f" | tail -n 25
	done
	exit 1
}

require_pass() { # NAME
	grep -q 'mpi_check result=PASS' "$WORK/$1.out" || fail "$1: the program did not pass"
}

kill_ranks() { # whatever still runs in our hosts' namespaces is ours
	local h p
	[ -n "$TAG" ] || return 0
	for ((h = 1; h <= NHOSTS; h++)); do
		for p in $(ip netns pids "ri2n-$TAG-h$h" 2>/dev/null); do
			kill -9 "$p" 2>/dev/null
		done
	done
}

cleanup() {
	kill_ranks
	[ "${MPI_KEEP:-0}" = 1 ] && echo "logs kept in $WORK" || rm -rf "$WORK"
}

# A fresh bed of HOSTS hosts named after NAME (more tb_create options after it, as
# --v6 all); MGMT is its management subnet.
mpi_bed_up() { # HOSTS NAME [OPTIONS...]
	NHOSTS=$1
	TAG=$(nt_tag "$2") || fail "no test-bed tag"
	tb_use "$TAG"
	tb_on_exit cleanup
	tb_cleanup_on_exit
	tb_exists && tb_destroy >/dev/null 2>&1
	tb_create --hosts "$NHOSTS" --rails 2 --rate 1gbit "${@:3}" >/dev/null || fail "test bed"
	MGMT=$(tb_mgmt_subnet)
}
