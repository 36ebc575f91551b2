#!/usr/bin/env bash
# tests/ofi/test_rfi_netns.sh UNIT_RFI - runs the provider's unit tests in a test bed,
# where RI2N_RAILS names real rails and the endpoint cases run (they skip elsewhere).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: test_rfi_netns.sh path/to/unit_rfi}
# shellcheck source=../netns/lib.sh
source "$here/../netns/lib.sh"
nt_init ofi-unit 2 2
RI2N_RAILS=r1,r2 RFI_TEST_NETNS=1 timeout -s KILL 200 ip netns exec "$(tb_ns 1)" "$bin" ||
	nt_fail "unit_rfi in a test bed"
nt_ok "unit_rfi with rails"
