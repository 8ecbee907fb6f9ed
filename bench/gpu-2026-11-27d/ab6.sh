#!/usr/bin/env bash
# Sixth device call (2026-11-27d), on an H100: the f16 x for products with
# rows of 4096 or more only (HALF_X_COLS), new = the working tree, base =
# c349bd5 (ab4's binary). Every gpu:: test of new first (the coop test runs
# every case with x in f32 and in f16); pp512 two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local b=$1 m=$2; echo "== $b $m"; timeout 120 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 512 -n 4 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    r base $m
    r new $m
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
