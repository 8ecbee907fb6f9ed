#!/usr/bin/env bash
# Third device call (2026-11-26c). new = .dev/webgguf-main (split.wgsl's V
# half read 16 bytes a thread in one round; a wide Q5_0 decoder; the
# tensor-core probe in gpu-bandwidth), base = .dev/webgguf-base (86e3af8).
# Kernel tests on the H100 first; depth A/B (split.wgsl runs on the 8B
# from 2048 keys), two rounds; Q5_0 A/B; profiles; the probe last, under a
# time limit (its first form hung).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 split_attention wide_int 2>&1 | grep -E "^test |result"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base main; do
  r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 0,2048,8192
  r $b --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
done; done
for rd in 1 2; do for b in base main; do
  r $b --synthetic llama-3.1-8b:Q5_0 -p 1 -n 128 -r 3
  r $b --synthetic llama-3.2-1b:Q5_0 -p 1 -n 128 -r 3
done; done
echo "after $(( $(date +%s) - S )) s"
.dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:Q5_0 -n 8 > $OUT/prof-8b-q5_0-main.json 2>/dev/null; echo "profile q5_0 rc=$?"
for b in base main; do
  .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-8b-d8192-$b.json 2>/dev/null; echo "profile $b rc=$?"
done
echo "after $(( $(date +%s) - S )) s"
timeout 60 .dev/webgguf-main gpu-bandwidth --mib 256 -r 3; echo "probe rc=$?"
echo "done after $(( $(date +%s) - S )) s"
