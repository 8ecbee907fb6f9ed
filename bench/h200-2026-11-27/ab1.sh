#!/usr/bin/env bash
# First device call (2026-11-27). IQ4 x regrouping: the code-book formats'
# wide decoders take x regrouped once per unit (iq4_xlo/iq4_xhi) and a
# doubled table (one OR per byte pair), instead of regrouping the looked-up
# weights of every row. main = 98c38ac (webgguf-wg: same code as b4b38d0)
# against new, synthetic 8B and 1B IQ4_XS and IQ4_NL, 8B Q4_K as control,
# two rounds, tg128; then gpu-profile of the 8B IQ4_XS with each.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS llama-3.1-8b:IQ4_NL llama-3.1-8b:Q4_K; do for b in wg new; do r $b $m; done; done; done
for b in wg new; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 64 > ${OUT:-/tmp}/profile-8b-iq4xs-$b.txt 2>&1; echo "profile $b rc=$?"; done
echo "done after $(( $(date +%s) - S )) s"
