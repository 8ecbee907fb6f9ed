#!/usr/bin/env bash
# Second device call (2026-11-26c): tensor-core throughput through wgpu's
# cooperative matrices (gpu-bandwidth's coop_peak). The first try (1024
# steps x 2048 workgroups, 10 reps) printed nothing in 300 s; this one
# is smaller, with a time limit.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv
timeout 90 .dev/webgguf-main gpu-bandwidth --mib 256 -r 2; echo "rc=$?"
