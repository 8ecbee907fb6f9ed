#!/usr/bin/env bash
# 2026-11-28: per-format matvec shapes (IQ4_XS/IQ4_NL gate/up 4 rows;
# Q2_K/Q3_K gate/up and Q3_K q/k/v 64 threads) against main 6c562f5,
# synthetic files (every matrix in one type), webgguf bench tg128 after a
# 64-token prompt, three repetitions, two interleaved rounds (ab.log).
# Run 2 (ab2.log, FILES="llama-3.1-8b:Q4_K llama-3.1-8b:Q5_K
# llama-3.1-8b:Q6_K llama-3.1-8b:Q4_0"): a build that also took 64 threads
# for Q4_K, Q5_K, Q6_K and Q4_0 gate/up and Q4_K, Q5_K q/k/v, as
# shape2.log's per-kernel timings favoured; in-stream it gained nothing
# (Q4_0 lost 1-9%), so it did not land. Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
.dev/webgguf-main bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for round in 1 2; do
for f in ${FILES:-llama-3.1-8b:IQ4_XS llama-3.1-8b:Q2_K llama-3.1-8b:Q3_K llama-3.1-8b:IQ4_NL llama-3.2-1b:IQ4_XS}; do
for b in main shape; do
  r=$(timeout 150 .dev/webgguf-$b bench --backend gpu --synthetic $f -p 64 -n 128 -r 3 2>&1 | grep '| tg128 |' | tail -1)
  echo "$round $f $b $r"
done; done; done
