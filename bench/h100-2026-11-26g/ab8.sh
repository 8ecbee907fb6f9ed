#!/usr/bin/env bash
# Eighth device call (2026-11-26g): every gpu:: kernel test of bc2e9ad on
# the H100, among them wide_int_matvec_matches_integer_twin, whose IQ4_XS
# case of 4352 columns now takes 64 threads a workgroup (b4b38d0).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM"
