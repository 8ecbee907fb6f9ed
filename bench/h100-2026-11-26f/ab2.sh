#!/usr/bin/env bash
# Second device call (2026-11-26f). ab1's u32-word staging failed NVIDIA's
# compiler ("NVVM compilation failed": a cooperative f16 load from a u32
# array). new = the staging as vec2<f16> pairs (a conversion of two values
# and one 4-byte store per pair) plus 128-thread tile shapes; thr = the
# f16-scalar staging of main with the 128-thread shapes only; main =
# 571b057. iq4id = thr with IQ4_XS's code-book lookups replaced by the
# raw nibbles (wrong output, timing only).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
for t in lib thr; do echo "== tests-$t"; .dev/tests-$t --test-threads 1 matmul tiled 2>&1 | grep -E "result|FAIL|panicked|NVVM"; done
pp() { local b=$1 c=$2 m=$3; echo "== $b coop=$c $m after $(( $(date +%s) - S )) s"; WEBGGUF_GPU_COOP=$c timeout 120 .dev/webgguf-$b bench --synthetic $m -p 512 -n 1 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
B=new
.dev/tests-lib --test-threads 1 matmul_coop_matches 2>&1 | grep -q "test result: ok" || B=thr
echo "sweep binary: $B"
for b in main new thr; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
for c in 128x128x128 256x128x256 256x64x128 128x64x128 64x64x128; do pp $B $c llama-3.1-8b:Q4_K; done
for c in 128x128x128 128x64x128 64x64x128; do pp $B $c llama-3.2-1b:Q4_K; done
for b in main $B; do pp $b rule tinyllama-1.1b:Q4_0; pp $b rule smollm2-135m:Q4_0; done
for c in 128x64x128 64x64x128; do pp $B $c tinyllama-1.1b:Q4_0; pp $B $c smollm2-135m:Q4_0; done
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
a={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}
print(' '.join('%s %.0f us' % (n, a.get(n,0)) for n in ['qkv','gate_up','matvec']), 'sum %.0f us' % d['kernels_decode']['sum_of_kernels_us'])" "$1" 2>&1 | tail -1; }
for b in thr iq4id thr iq4id; do
  timeout 150 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 > $OUT/prof-iq4-$b.json 2>/tmp/err.txt
  echo "IQ4_XS profile $b: $(k $OUT/prof-iq4-$b.json) $(tail -c 300 /tmp/err.txt)"
done
for b in main new thr; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
echo "done after $(( $(date +%s) - S )) s"
