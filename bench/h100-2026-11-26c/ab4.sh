#!/usr/bin/env bash
# Fourth device call (2026-11-26c). new = .dev/webgguf-main (wide Q4_1 and
# Q5_1 decoders; matmul_coop.wgsl double-buffered: one barrier a 32-column
# step instead of two), base = .dev/webgguf-base (a343ed6). Kernel tests
# on the H100 first; then pp512 (the tensor-core tile) and tg128 (the new
# decoders, and SmolLM2 Q4_1, the default model's shape), two rounds each;
# profiles of the new decoders.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 matmul_coop wide_int 2>&1 | grep -E "^test |result"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | tr -s ' '; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base main; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0; do
    r $b --synthetic $m -p 512 -n 1 -r 3
  done
done; done
echo "after $(( $(date +%s) - S )) s"
for rd in 1 2; do for b in base main; do
  for m in llama-3.1-8b:Q4_1 llama-3.1-8b:Q5_1 llama-3.2-1b:Q4_1 llama-3.2-1b:Q5_1 smollm2-135m:Q4_1; do
    r $b --synthetic $m -p 1 -n 128 -r 3
  done
done; done
echo "after $(( $(date +%s) - S )) s"
for t in Q4_1 Q5_1; do
  .dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:$t -n 8 > $OUT/prof-8b-$t-main.json 2>/dev/null; echo "profile $t rc=$?"
done
.dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 > $OUT/prof-8b-q4k-dbuf.json 2>/dev/null; echo "profile dbuf rc=$?"
echo "done after $(( $(date +%s) - S )) s"
