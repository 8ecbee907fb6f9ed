#!/usr/bin/env bash
# The rest of the device budget (~9 minutes, one call: go16.sh's two
# machines were each taken back between its polling calls, as in
# 2026-11-29b, even with the second call sent at once): the 8B files the
# H200 has no side-by-side figures for (Q4_0, Q8_0, F16, then Q5_K_M, whose
# quantizing is the longest, last), both engines, main's CLI (455c372),
# then extra16b.sh's profiles. No tests (next16.sh ran on both machines).
#   bash bench/gpu-2026-11-29c/go16b.sh SECONDS   (carry ['.sbs'])
set -u
export SHAPES='llama-3.1-8b' QUANTS='Q4_0 Q8_0 F16 Q5_K_M'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-490}"; fi
. "$H"/../sbs-common.sh
sbs_unpack webgguf
sbs_after "$H"/extra16b.sh
exec bash .sbs/device.sh "${1:-490}"
