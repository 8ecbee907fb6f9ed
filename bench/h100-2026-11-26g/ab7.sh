#!/usr/bin/env bash
# Seventh device call (2026-11-26g). The committed rule (b4b38d0) covers
# IQ4_NL too, which fills the same code book: main (1bffe89) against wg
# (b4b38d0) on the synthetic 8B and 1B IQ4_NL, two rounds, tg128.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for m in llama-3.1-8b:IQ4_NL llama-3.2-1b:IQ4_NL; do for b in main wg; do r $b $m; done; done; done
echo "done after $(( $(date +%s) - S )) s"
