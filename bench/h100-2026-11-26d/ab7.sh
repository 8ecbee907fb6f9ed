#!/usr/bin/env bash
# Seventh device call (2026-11-26d). new = the matvec's per-row arrays
# (row starts, the reduction's reads of the sums) written out with
# constant indices by the host instead of loops; base = 18b5b8b. Kernel
# tests on the H100; tg128 on synthetic files, two rounds interleaved;
# profiles of the 8B Q4_0.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -k "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 matvec wide_int int_ 2>&1 | grep -E "result|FAIL|panicked"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-base bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base new; do
  for m in llama-3.1-8b:Q4_0 llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:F16 llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0; do
    r $b --synthetic $m -p 1 -n 128 -r 3
  done
done; echo "after $(( $(date +%s) - S )) s"; done
for b in base new; do .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_0 -n 8 > $OUT/prof-8b-q4_0-$b.json 2>/dev/null; echo "profile $b rc=$?"; done
echo "done after $(( $(date +%s) - S )) s"
