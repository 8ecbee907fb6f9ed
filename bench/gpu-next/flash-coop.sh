#!/usr/bin/env bash
# Next session (wip/flash-coop): flash_coop.wgsl's
# test on the device, then pp512 with it off / on.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu::tests::flash 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM|coop" | cut -c1-400
echo "tests after $(( $(date +%s) - S )) s"
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do
  for v in 0 1 0 1; do
    echo "== $m FLASH_COOP=$v $(WEBGGUF_GPU_FLASH_COOP=$v timeout 40 .dev/webgguf-new bench --backend gpu --synthetic $m -p 512 -n 2 -r 2 2>&1 | grep -E 'pp512|rror' | tr -s ' ' | cut -c1-160)"
  done
done
echo "done after $(( $(date +%s) - S )) s"
