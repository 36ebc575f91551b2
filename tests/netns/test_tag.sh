#!/usr/bin/env bash
# tests/netns/test_tag.sh - the test beds' tags (tag.sh), without root:
#  - nt_tag gives a valid tag (a letter and five hex digits), the same for a
#    name every time, another for another name or another letter, and
#    refuses a letter that is not one of a-z;
#  - every script under tests/ that makes a bed itself (tb_use) takes its
#    tag from nt_tag (the namespace tests go through nt_init, which does).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tag.sh
source "$root/tests/netns/tag.sh"
fail=0
no() { echo "FAIL: $*"; fail=1; }

unset RI2N_NETNS_TAG_LETTER
a=$(nt_tag stat) || no "nt_tag stat failed"
[[ $a =~ ^t[0-9a-f]{5}$ ]] || no "nt_tag stat gave '$a', not t and five hex digits"
[ "$(nt_tag stat)" = "$a" ] || no "nt_tag stat differs between calls"
[ "$(nt_tag kcap)" != "$a" ] || no "two names share a tag"
b=$(RI2N_NETNS_TAG_LETTER=b nt_tag stat)
[ "$b" = "b${a#t}" ] || no "RI2N_NETNS_TAG_LETTER=b gave '$b' for stat (t's was '$a')"
for bad in B 1 ab ''; do
	if [ -n "$bad" ] && RI2N_NETNS_TAG_LETTER=$bad nt_tag stat >/dev/null 2>&1; then
		no "RI2N_NETNS_TAG_LETTER='$bad' was taken"
	fi
done

while IFS= read -r f; do
	case $f in
	*/tests/netns/lib.sh | */tests/netns/test_testbed.sh) continue ;; # the library; its own tests
	esac
	grep -q 'nt_tag' "$f" || no "$f makes a test bed (tb_use) with a tag not from nt_tag (tests/netns/tag.sh)"
done < <(grep -rlE '^[^#]*\btb_use\b' "$root/tests" --include='*.sh')

[ "$fail" = 0 ] && echo "ok: test-bed tags come from RI2N_NETNS_TAG_LETTER and the test's name"
exit "$fail"
