#!/usr/bin/env bash
# 2026-11-27f, second device call. grid = wip/split-grid (decode's split
# dispatch sized by the token's keys, kernels::SplitGrid), base = main
# 42129d4 (one split workgroup column per slot of the whole context; the
# splits past the last key exit at once). Split tests on the device; tg32
# at depth 2048 and 8192 with the context allocated at 8448, 32768 and
# 131072 keys, synthetic llama-3.1-8b and llama-3.2-1b Q4_K, interleaved,
# two rounds. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 split_ 2>&1 | grep -E "^test |test result|panicked" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $* | $(timeout 150 .dev/webgguf-$b bench --backend gpu "$@" 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
.dev/webgguf-base bench --backend gpu --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
    for c in 8448 32768 131072; do
      for b in base grid; do r $b --synthetic $m --ctx $c -p 1 -n 32 -r 2 -d 2048,8192; done
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
