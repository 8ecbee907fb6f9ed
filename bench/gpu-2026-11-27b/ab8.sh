#!/usr/bin/env bash
# Eighth device call (2026-11-27b): every gpu:: kernel test of a60d3af (the
# replay's rescale by a branch) on the device's GPU.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
