#!/usr/bin/env bash
# 2026-11-27f, experiment (wip/pad6, not merged): Q6_K blocks padded to
# 224 bytes on the GPU and read as 16-byte words (WEBGGUF_GPU_PAD_Q6K=1)
# against the 210-byte blocks read as words (=0), one binary. Decode only:
# with the padding the other Q6_K decoders (embedding, prefill, the f32
# matvec of small products) read the wrong bytes, so the outputs are
# wrong and only the timings count. The padded decoder's test on the
# device; tg128 on synthetic Q6_K files, interleaved, two rounds; 8B
# gate/up, matvec and LM head in gpu-profile. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 wip_pad6 2>&1 | grep -E "^test |test result|panicked" | cut -c1-300
r() { local v=$1; shift; echo "== PAD_Q6K=$v $* | $(WEBGGUF_GPU_PAD_Q6K=$v timeout 120 .dev/webgguf bench --backend gpu "$@" 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
.dev/webgguf bench --backend gpu --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q6_K llama-3.2-1b:Q6_K; do
    for v in 0 1; do r $v --synthetic $m -p 1 -n 128 -r 3; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for v in 0 1; do
  WEBGGUF_GPU_PAD_Q6K=$v timeout 100 .dev/webgguf gpu-profile --synthetic llama-3.1-8b:Q6_K -n 4 > /tmp/p.json 2>/dev/null
  echo "profile 8B Q6_K PAD_Q6K=$v: $(python3 -c "
import json
d = json.load(open('/tmp/p.json'))['kernels_decode']['by_kernel']
print(' '.join('%s=%.1f' % (k['kernel'], k['us']) for k in d if k['kernel'] in ('gate_up', 'matvec', 'qkv', 'lm_head')))
" 2>&1 | tail -1)"
done
echo "done after $(( $(date +%s) - S )) s"
