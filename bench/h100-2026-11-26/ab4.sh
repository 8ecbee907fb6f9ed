#!/usr/bin/env bash
# Fourth device call (2026-11-26): IQ4_NL through a wide integer decoder
# (wide.wgsl wide_idot_iq4_nl) against the per-unit one: new = .dev/webgguf-nl,
# base = .dev/webgguf-new (74afbd1). Synthetic, every matrix IQ4_NL.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
.dev/webgguf-nl bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for m in llama-3.1-8b:IQ4_NL llama-3.2-1b:IQ4_NL tinyllama-1.1b:IQ4_NL llama-3.1-8b:IQ4_XS; do for b in new nl; do
  echo "== $b $m round $rd"; timeout 120 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "^\| synthetic" | tr -s ' '
done; done; done
for b in new nl; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:IQ4_NL -n 16 > $OUT/prof-synth-IQ4_NL-$b.json 2>/dev/null; echo "profile $b rc=$?"; done
