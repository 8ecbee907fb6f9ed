#!/usr/bin/env bash
# Seventh device call (2026-11-27): every gpu:: kernel test of a901d3b on
# the device's GPU, among them rmsnorm_matches_cpu and
# rmsnorm_per_head_in_place_and_add_match_cpu, which now cover the
# 256-thread load-once paths (6b67000).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name --format=csv,noheader
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM"
