#!/usr/bin/env bash
# Sixth device call (2026-11-27). ab5's rmsnorm change in the form
# committed: besides 16 values a thread for rows up to 16 x its threads,
# rows up to 4 x its threads load 4 (ab5's 16 loads a thread made the
# 64-thread head norm of 256-element Gemma 3 heads slower: 6.1 -> 7.4 us
# a dispatch). main (webgguf-wg) against new, pp512 / tg128, two rounds;
# decode profiles of the Gemma 3 shape with both.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in gemma3-270m:Q8_0 gemma3-270m:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0; do for b in wg new; do r $b $m; done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for b in wg new; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic gemma3-270m:Q8_0 -n 32 > ${OUT:-/tmp}/ab6-profile-gemma3-q8_0-$b.json 2>&1; echo "profile $b rc=$?"; done
echo "done after $(( $(date +%s) - S )) s"
