#!/usr/bin/env bash
# Third device call (2026-11-26b): ab7.sh (split lengths by key count
# against 64-key splits), then a sweep of the matvec's workgroup shape
# (GpuTuning::matvec_wg, matvec_rows via WEBGGUF_GPU_MV_WG / _MV_ROWS):
# the 8B's q/k/v product read ~0.8 TB/s and o/down ~1.3 in the 2026-11-26
# profiles, against ~2.6 for gate/up, with the same decoders. tg128 from 0
# (-r 3), synthetic shapes. Binary .dev/webgguf-main; .dev/gl as before.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export START=$(date +%s)
mkdir -p /tmp/sbs && cp .dev/webgguf-main /tmp/sbs/webgguf
bash bench/h100-2026-11-26b/ab7.sh
B=.dev/webgguf-main
r() { echo "== $*"; timeout 150 $B bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.1-8b:F16 llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
  for cfg in "0 0,0,0" "64 0,0,0" "256 0,0,0" "0 8,0,0" "0 0,2,0" "0 0,8,0" "0 0,0,1" "0 0,0,4"; do
    set -- $cfg
    echo "-- wg $1 rows $2"; WEBGGUF_GPU_MV_WG=$1 WEBGGUF_GPU_MV_ROWS=$2 r --synthetic $m -p 1 -n 128 -r 3
  done
  echo "t=$(( $(date +%s) - START ))"
done
$B gpu-profile --synthetic llama-3.1-8b:Q4_K -n 32 -d 100 > $OUT/prof-8b-d100-adaptive.json 2>/dev/null
echo "done after $(( $(date +%s) - START )) s"
