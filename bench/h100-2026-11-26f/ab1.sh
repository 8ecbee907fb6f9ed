#!/usr/bin/env bash
# First device call (2026-11-26f). new = matmul_coop.wgsl staging into u32
# words (pack2x16float, 4-byte stores) instead of f16 scalars, and tile
# shapes of 128 threads (2 x 2 subgroups, up to 4 x 4 blocks each) beside
# the 256-thread ones; main = 571b057. Kernel tests of the tiled products
# on the H100; pp512 on synthetic files by binary and shape; iq4id = new
# with IQ4_XS's code-book lookups replaced by the raw nibbles (wrong
# output, timing only): what do the lookups cost the 8B IQ4_XS matvecs?
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 matmul tiled 2>&1 | grep -E "result|FAIL|panicked|coop"
pp() { local b=$1 c=$2 m=$3; echo "== $b coop=$c $m after $(( $(date +%s) - S )) s"; WEBGGUF_GPU_COOP=$c timeout 120 .dev/webgguf-$b bench --synthetic $m -p 512 -n 1 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' '; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for b in main new; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
for c in 128x128x128 256x128x256 256x64x128 128x64x128 64x64x128; do pp new $c llama-3.1-8b:Q4_K; done
for c in 128x128x128 128x64x128 64x64x128; do pp new $c llama-3.2-1b:Q4_K; done
for b in main new; do pp $b rule tinyllama-1.1b:Q4_0; pp $b rule smollm2-135m:Q4_0; done
for c in 128x64x128 64x64x128; do pp new $c tinyllama-1.1b:Q4_0; pp new $c smollm2-135m:Q4_0; done
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
a={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}
print(' '.join('%s %.0f us' % (n, a.get(n,0)) for n in ['qkv','gate_up','matvec']), 'sum %.0f us' % d['kernels_decode']['sum_of_kernels_us'])" "$1"; }
for b in new iq4id new iq4id; do
  timeout 150 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 > /tmp/p.json 2>/dev/null
  echo "IQ4_XS profile $b: $(k /tmp/p.json)"
done
for b in main new; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
echo "done after $(( $(date +%s) - S )) s"
