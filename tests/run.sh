#!/usr/bin/env bash
# The test command (README): installs what is missing, builds, and runs every
# suite: unit and sim tests, a short fuzz run, the namespace and MPI suites (as root),
# and all of them again under ASan+UBSan and under TSan.
#
#   tests/run.sh               everything
#   tests/run.sh --quick       skip the sanitizer builds
#   tests/run.sh --no-ompi5    without the MPI suite against Open MPI 5 in a Debian 13 root
#                              (tests/mpi/run_ompi5.sh: 1-2 min the first time, when it
#                              makes the root in /var/cache/ri2n, then under 30 s; it skips
#                              with a line saying why where the root cannot be made)
#   RI2N_SIM_SEEDS=1-200 tests/run.sh   more seeds per sim scenario
#   RI2N_FUZZ_SECONDS=60 tests/run.sh   longer fuzz runs (default 20 s a target)
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
ompi5=1
for a in "$@"; do
	case "$a" in
	--quick) quick=1 ;;
	--ompi5) ompi5=1 ;;
	--no-ompi5) ompi5=0 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "tests/run.sh: unknown option $a" >&2; exit 2 ;;
	esac
done

jobs=$(nproc)
seeds=${RI2N_SIM_SEEDS:-1-8}
start=$(date +%s)
results=()
step() { printf '\n==== %s\n' "$*"; }
record() { results+=("$(printf '%-34s %s' "$1" "$2")"); }

run_suite() { # name builddir ctest-args...
	local name=$1 dir=$2; shift 2
	if ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@"; then
		record "$name" ok
	else
		record "$name" FAILED
		failed=1
	fi
}

failed=0
# the tests set their own knobs: a system configuration file (/etc/ri2n/ri2n.conf) must not
# change them (the configuration file's own tests name theirs)
export RI2N_CONF=/dev/null
tools/deps.sh

step "build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRI2N_SIM_SEEDS="$seeds" >/dev/null
cmake --build build -j"$jobs"

step "unit, sim and lint tests"
run_suite "unit + sim + lint" build -L 'unit|sim|lint'

step "namespace and MPI tests"
if [ "$(id -u)" -eq 0 ]; then
	# two at a time: each test makes a bed of its own; those that judge a rate or a time
	# window, or load both cores, run alone (RUN_SERIAL, tests/CMakeLists.txt)
	run_suite "netns + mpi" build -L 'netns|mpi' -j2
else
	echo "not root: skipping the namespace tests"
	record "netns" "skipped (not root)"
fi

if [ "$ompi5" -eq 1 ]; then
	step "MPI suite against Open MPI 5 (Debian 13 root)"
	# debootstrap makes the root (tests/mpi/run_ompi5.sh); the stage skips without it
	if ! command -v debootstrap >/dev/null && [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	fi
	run_suite "open mpi 5 (debian 13)" build -L debian13 -j1
fi

step "fuzz (${RI2N_FUZZ_SECONDS:-20} s a target)"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DRI2N_FUZZ=ON -DRI2N_SANITIZE=address >/dev/null
cmake --build build-fuzz -j"$jobs"
run_suite "fuzz" build-fuzz -L fuzz -j1

# Debian's hwloc PCI plugin leaks about 1 KB each time a topology is loaded
# (not ri2n's memory; LeakSanitizer cannot name it once the plugin is unloaded)
export HWLOC_PLUGINS_BLACKLIST=hwloc_pci
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}
sanitized() { # NAME DIR SANITIZER SEEDS
	step "$1: unit, sim and namespace suites"
	cmake -S . -B "$2" -DCMAKE_BUILD_TYPE=Debug -DRI2N_SANITIZE="$3" -DRI2N_SIM_SEEDS="$4" >/dev/null
	cmake --build "$2" -j"$jobs"
	# the shared-switch scenarios of 4 to 16 senders take minutes each under a sanitizer (16
	# senders: 8 min under TSan); incast3 covers the same code, the release stage runs them all.
	# incast3's loss and hole variants took 2 min each under ASan (2.5 under TSan) for code
	# the loss, blackhole and backup scenarios run too: the release stage runs them
	local incast='2|4|8|16|8-loss|8-hole|8-mem|16-mem|3-loss|3-hole' labels='unit|sim' skip=()
	# the simulator drives the core on one thread: TSan has no race to find there
	# (and took 4 min of CPU over it); TSan runs the unit and namespace suites. The
	# unit tests of the core alone (label core) are one thread too: unit_conn took
	# 45 s under TSan for nothing the ASan stage does not check
	[ "$3" = thread ] && labels=unit skip=(-LE '^core$')
	run_suite "$1 $(echo "$labels" | sed 's/|/ + /')" "$2" -L "$labels" "${skip[@]}" \
		-E "^sim_incast($incast)\$"
	if [ "$(id -u)" -eq 0 ]; then
		# bench_smoke (90 s under a sanitizer) drives the same programs the netns tests do;
		# netns_churn is a rate test (16 threads connecting for 3 s: about 2 min under ASan);
		# the listener's trust it checks runs under the sanitizers in unit_trust
		# api_posix_stress_tcp runs the stress program on kernel TCP: a check of the
		# program, which the release stage makes
		# two at a time, as the release stage: the tests that count a rail's downs run
		# alone (ri2n_run_alone in tests/CMakeLists.txt; beside another sanitized test
		# the receive count of a healthy rail once fell below its threshold in
		# netns_mtu-hole). Two at a time took the ASan suite from 739 s to 513 s and
		# TSan's from 594 s to 401 s
		# TSan's namespace suite is the tests labelled threads (ri2n_threads in
		# tests/CMakeLists.txt): its value is races between threads, which the API, shim
		# and libfabric tests and a few fault scenarios raise; the rest of the namespace
		# tests run the same engine code one more time (about 6 min) for no new race
		local netns=netns
		[ "$3" = thread ] && netns=threads
		run_suite "$1 $netns" "$2" -L "^$netns\$" \
			-E '^(bench_smoke|netns_churn|api_posix_stress_tcp)$' -j2
	fi
}
if [ "$quick" -eq 0 ]; then
	sanitized "ASan+UBSan" build-asan address 1-2
	sanitized "TSan" build-tsan thread 1-2
fi

printf '\n==== summary (%d s)\n' $(($(date +%s) - start))
printf '%s\n' "${results[@]}"
exit $failed
