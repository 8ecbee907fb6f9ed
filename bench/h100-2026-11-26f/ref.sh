#!/usr/bin/env bash
# The oracle suite (reference_gpu, .dev/tests-ref, built at the tensor-core
# tile's final code) on the H100, where prefill takes the tensor-core tile,
# with the shared files that fit the carry (synth256 in every format,
# stories260K); carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# The test binary reads ../shared from the path it was built at.
mkdir -p /work/main /work/shared && cp -r .dev/shared/* /work/shared/
gunzip -kf .dev/tests-ref.gz && chmod +x .dev/tests-ref
.dev/tests-ref --test-threads 1 > $OUT/reference-gpu.txt 2>&1
grep -E "^test |result|^ok|FAIL" $OUT/reference-gpu.txt | cut -c1-200
