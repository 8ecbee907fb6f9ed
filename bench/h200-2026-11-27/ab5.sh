#!/usr/bin/env bash
# Fifth device call (2026-11-27). rmsnorm.wgsl with 256 threads for
# hidden-state rows (64 for heads) and, for rows up to 16 x its threads,
# every value and gain loaded at once and kept for the write (one round
# trip instead of 24 at 4096 elements with 64 threads). main (webgguf-wg)
# against new: pp512 / tg128 two rounds on the files whose steps run it
# (Gemma 3 270M decode: its q/k norm takes the unfused q/k/v, and its
# post-norms; every prefill: the norm before the tiled products), and the
# F16 8B with the separate-norm experiment of ab4 (WEBGGUF_EXP_PRENORM,
# this binary only) again, now that the norm is fast. Then decode profiles
# of the Gemma 3 shape with both.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in gemma3-270m:Q8_0 gemma3-270m:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 llama-3.1-8b:F16; do for b in wg new; do r $b $m; done; done
  echo "== new+prenorm llama-3.1-8b:F16"; WEBGGUF_EXP_PRENORM=1 timeout 100 .dev/webgguf-new bench --synthetic llama-3.1-8b:F16 -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for b in wg new; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic gemma3-270m:Q8_0 -n 32 > ${OUT:-/tmp}/ab5-profile-gemma3-q8_0-$b.json 2>&1; echo "profile $b rc=$?"; done
echo "done after $(( $(date +%s) - S )) s"
