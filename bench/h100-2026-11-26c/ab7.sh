#!/usr/bin/env bash
# Seventh device call (2026-11-26c). new = .dev/webgguf-main (IQ4_XS and
# IQ4_NL code book by nibble with one copy per bank lane: 8 conflict-free
# lookups a quant word instead of 4 byte lookups that collide), base =
# .dev/webgguf-base (f9c19e0). Kernel tests on the H100 first; tg128 on
# synthetic files, two rounds; a profile of the new 8B IQ4_XS.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 wide_int 2>&1 | grep -E "^test |result"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base main; do
  for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    r $b --synthetic $m -p 1 -n 128 -r 3
  done
done; done
.dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 > $OUT/prof-8b-IQ4_XS-main.json 2>/dev/null; echo "profile rc=$?"
echo "done after $(( $(date +%s) - S )) s"
