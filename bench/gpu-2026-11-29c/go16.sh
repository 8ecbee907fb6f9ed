#!/usr/bin/env bash
# The whole side-by-side matrix on a lent H200 with main's CLI (455c372),
# as the session's first device call; next16.sh (every gpu:: test of that
# build) while llama.cpp builds, extra16.sh (depth, profiles, a second
# pass of the 1B files) after the kit's benches. From the repository root,
# carry ['.sbs']: the kit (../shared/tools/gpu-side-by-side/prepare.sh)
# with main's stripped CLI gzipped as .sbs/webgguf.gz and its stripped
# test binary as .sbs/tests-lib.gz; then
#   bash bench/gpu-2026-11-29c/go16.sh SECONDS
# The matrix is set here, so a polling call that lands on a fresh machine
# restarts the same run; a call on the same warm machine only polls.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
. "$H"/../sbs-common.sh
sbs_unpack webgguf
sbs_vulkan
sbs_diag webgguf
sbs_patch "$H"/next16.sh "$H"/extra16.sh
exec bash .sbs/device.sh "${1:-540}"
