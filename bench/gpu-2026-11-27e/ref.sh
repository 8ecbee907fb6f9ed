#!/usr/bin/env bash
# flash_coop.wgsl on by default (a4ffe38), on the H100: the gpu:: tests,
# the oracle tests that fit the carry (gpu_long_prefill_follows_the_cpu
# prefills 200 tokens in one batch, so in flash tiles: flash_coop.wgsl
# where the device has cooperative matrices; synthllama3 against
# llama.cpp's references), then pp512 with it off and on (default), two
# rounds. Carry ['.dev']: tests-lib, tests-ref and webgguf (stripped,
# gzipped), gl/*.deb, shared/ (synthllama3.*, synthgemma3.F32).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name --format=csv,noheader
# The test binary reads ../shared from the path it was built at.
mkdir -p /work/main /work/shared && cp -r .dev/shared/* /work/shared/
S=$(date +%s)
.dev/tests-ref --test-threads 1 gpu_long_prefill gpu_synthllama3 2>&1 | grep -E "^test |result|max \||FAIL|panicked" | cut -c1-240
echo "ref after $(( $(date +%s) - S )) s"
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|flash" | cut -c1-240
echo "lib after $(( $(date +%s) - S )) s"
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    for v in 0 1; do
      echo "== pp512 $m FLASH_COOP=$v $(WEBGGUF_GPU_FLASH_COOP=$v timeout 100 .dev/webgguf bench --backend gpu --synthetic $m -p 512 -n 4 -r 3 2>&1 | grep -E 'pp512|rror' | tr -s ' ' | cut -c1-160)"
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
