#!/usr/bin/env bash
# First device call (2026-11-26b): does decode's split attention (the
# Long list, from SPLIT_KEYS = 64 keys) cost the tg128 test its second
# half? The profile's greedy loop (positions 0..31) ran 7-8% faster than
# bench's tg128 on every real-layout file (2026-11-26 sbs). Here: tg32
# after d keys with splits (default) and without (WEBGGUF_GPU_SPLIT=0:
# the chunked kernel at every length), two rounds; and tg128 at d0.
# The first call's depth runs used a binary built before -d took a list
# (ab5-first.log: tg128 only); this is the rerun.
# Binary: .dev/webgguf-main (this commit's tree). .dev/gl: the Vulkan
# loader debs, as in 2026-11-26's scripts.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
B=.dev/webgguf-main
r() { echo "== $*"; timeout 150 $B bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
$B bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
D=0,32,64,96,128,192,256,384,512,768,1024
for rd in 1 2; do
  for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q4_0; do
    for sp in 1 0; do
      [ $rd = 1 ] && WEBGGUF_GPU_SPLIT=$sp r --synthetic $m --ctx 1280 -p 1 -n 32 -r 3 -d $D
      WEBGGUF_GPU_SPLIT=$sp r --synthetic $m --ctx 1280 -p 1 -n 128 -r 3
    done
    echo "t=$(( $(date +%s) - S ))"
  done
done
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  $B gpu-profile --synthetic $m -n 32 -d 100 > $OUT/prof-${m/:/-}-d100.json 2>/dev/null; echo "profile $m rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
