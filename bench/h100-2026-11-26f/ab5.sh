#!/usr/bin/env bash
# Fifth device call (2026-11-26f). fin = the vec4<f16> staging (ab3's v4)
# with the tile picked per product by entry and rows (Tile::coop_for, from
# ab4's per-product table); main = 571b057. Kernel tests and the oracle
# suite (reference_gpu, with the synth256 and stories260K files that fit
# the carry) through the tensor-core tile on the H100; pp512 and tg128 on
# synthetic files, main against fin, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
# The test binaries read ../shared from the path they were built at.
mkdir -p /work/main /work/shared && cp -r .dev/shared/* /work/shared/
S=$(date +%s)
echo "== tests-lib (gpu::)"; .dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "test result|FAIL|panicked|NVVM"
echo "== reference_gpu"; .dev/tests-ref --test-threads 1 2>&1 | grep -E "^test |^ok|result|bound|panicked|No such" | cut -c1-160
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1 m=$2; echo "== $b $m"; timeout 150 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0; do for b in main fin; do r $b $m; done; done; done
for m in llama-3.1-8b:Q8_0 llama-3.1-8b:F16 gemma3-270m:Q8_0; do for b in main fin; do r $b $m; done; done
echo "done after $(( $(date +%s) - S )) s"
