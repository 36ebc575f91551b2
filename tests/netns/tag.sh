# shellcheck shell=bash
# tests/netns/tag.sh - the test-bed tag of a test, for every script that makes
# a bed (lib.sh's nt_init, the MPI and mtl scripts).  Sourced; needs bash.
#
#   nt_tag NAME   prints RI2N_NETNS_TAG_LETTER (one of a-z; t when unset)
#                 and five hex digits of NAME's md5
#
# Every test names its bed after itself (NAME), so tests never share one, and
# the one letter keeps sessions apart: two build trees running their suites
# at once on one machine set different letters (ctest passes the
# environment on to every test).

nt_tag() { # NAME
	local letter=${RI2N_NETNS_TAG_LETTER:-t}
	case $letter in
	[a-z]) ;;
	*)
		echo "RI2N_NETNS_TAG_LETTER must be one letter a-z, not '$letter'" >&2
		return 1
		;;
	esac
	printf '%s%s\n' "$letter" "$(printf '%s' "${1:?nt_tag NAME}" | md5sum | cut -c1-5)"
}
