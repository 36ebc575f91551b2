#!/usr/bin/env bash
# The main job (README): builds ri2n and shows a stream surviving a rail
# that silently black-holes and heals.  Until the engine runs over real
# sockets this runs the protocol core in the deterministic simulator: two
# GbE-like rails, rail 1 black-holed at 40 ms and healed at 120 ms.
set -euo pipefail
cd "$(dirname "$0")"
tools/deps.sh --build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "ri2n simulator: 2 x 1 Gbit/s rails, rail 1 black-holed from 40 to 120 ms"
RI2N_SIM_TRACE=${RI2N_SIM_TRACE:-10} build/tests/sim/ri2n-sim --seeds 1 --mib 32 blackhole
