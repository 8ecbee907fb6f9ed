#!/usr/bin/env bash
# 2026-11-27f: every gpu:: test of main 19b445e (gate/up's 2 rows on the
# wide path) on the device. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED|wide_int|split_|flash_coop" | cut -c1-300
