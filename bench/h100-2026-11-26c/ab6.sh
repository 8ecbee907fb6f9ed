#!/usr/bin/env bash
# Sixth device call (2026-11-26c). new = .dev/webgguf-main (integer decode
# for Q2_K and Q3_K: per-unit and wide decoders), base = .dev/webgguf-base
# (e5ef211, where both take the f32 path). Kernel tests on the H100 first;
# tg128 on synthetic files, two rounds; profiles of the new decoders.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 int_ 2>&1 | grep -E "^test |result"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base main; do
  for m in llama-3.1-8b:Q3_K llama-3.1-8b:Q2_K llama-3.2-1b:Q3_K llama-3.2-1b:Q2_K; do
    r $b --synthetic $m -p 1 -n 128 -r 3
  done
done; done
echo "after $(( $(date +%s) - S )) s"
for t in Q3_K Q2_K; do
  .dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:$t -n 8 > $OUT/prof-8b-$t-main.json 2>/dev/null; echo "profile $t rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
