#!/usr/bin/env bash
# After first.sh (same warm machine): is it the CUDA process just before
# (llama-bench in the kit) that makes our next bench slow? A torch CUDA
# process (fp16 matmuls for ~2 s, as a llama-bench run lasts) then at once
# our bench on the synthetic 1B, against the same bench with nothing
# before it, three times each, interleaved.
set -u
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
gunzip -kf .dev/webgguf.gz; chmod +x .dev/webgguf
cuda() { python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda', dtype=torch.float16)
t = time.time()
while time.time() - t < 2.0:
    b = a @ a
torch.cuda.synchronize()
" 2>&1 | tail -1; }
b() { .dev/webgguf bench --backend gpu --synthetic llama-3.2-1b:$1 -p 512 -n 128 -r 3 --json 2>&1 | tail -1 | python3 -c "import json,sys; d=json.load(sys.stdin); print('pp %.0f tg %.1f pp_ms %s tg_ms %s' % (d['pp_tok_s'], d['tg_tok_s'], [round(x,1) for x in d['pp_rep_ms']], [round(x,1) for x in d['tg_rep_ms']]))"; }
for i in 1 2 3; do
  for t in Q5_K Q4_K; do
    echo "$t alone:      $(b $t)"
    cuda; echo "$t after CUDA: $(b $t)"
  done
done
