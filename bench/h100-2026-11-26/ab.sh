#!/usr/bin/env bash
# Synthetic A/B, run by go.sh on the device while llama.cpp builds: base =
# the CLI at 3bca6ed (.dev/webgguf-base), new = this commit (.sbs/webgguf).
# Synthetic models: every matrix in one type, so they flatter; only the
# base/new and on/off comparisons within this file mean anything. Sections
# past a 480 s budget are skipped (the side-by-side waits for this).
set -u
B=.dev/webgguf-base N=.sbs/webgguf
S=${START:-$(date +%s)}
late() { [ $(( $(date +%s) - S )) -gt 480 ] && { echo "== skipped (time): $1"; return 0; }; return 1; }
r() { local bin=$1; shift; timeout 120 $bin bench "$@" 2>&1 | grep -E "^\| synthetic" | tr -s ' '; }
$N bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
echo "## 1. decode at depth, base vs new (split.wgsl, the merge, quantize_x NORM): tg128"
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do for d in 8192 2048; do for b in base new; do
  late "$b $m d$d" && continue
  bin=$B; [ $b = new ] && bin=$N
  echo "== $b $m d$d"; r $bin --synthetic $m --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d | grep tg128
done; done; done
echo "## 2. depth 0, base vs new, two rounds: pp512 / tg128"
for rd in 1 2; do for m in smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do for b in base new; do
  late "$b $m round $rd" && continue
  bin=$B; [ $b = new ] && bin=$N
  echo "== $b $m d0 round $rd"; r $bin --synthetic $m -p 512 -n 128 -r 3
done; done; done
echo "## 3. the integer prefill tile (opt-in) against the f32 tile, tensor-core tile off: pp512"
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K llama-3.2-1b:Q6_K smollm2-135m:Q4_0; do for ip in 0 1; do
  late "$m int $ip" && continue
  echo "== new $m coop 0 int_prefill $ip"; WEBGGUF_GPU_COOP=0 WEBGGUF_GPU_INT_PREFILL=$ip r $N --synthetic $m -p 512 -n 16 -r 3 | grep pp512
done; done
echo "## 4. the 32-element formats' decode through unit_q (56a54f7), base vs new, 1B: tg128"
for t in Q4_1 Q5_0 Q5_1 Q4_0 IQ4_XS; do for b in base new; do
  late "$b $t" && continue
  bin=$B; [ $b = new ] && bin=$N
  echo "== $b llama-3.2-1b:$t"; r $bin --synthetic llama-3.2-1b:$t -p 16 -n 128 -r 3 | grep tg128
done; done
echo "## 5. per-family decode profiles, synthetic 8B (new): prof-synth-TYPE.json"
for t in Q2_K Q3_K Q4_1 Q5_0 Q5_1 IQ4_NL BF16; do
  late "profile $t" && continue
  echo "== profile llama-3.1-8b:$t"; timeout 120 $N gpu-profile --synthetic llama-3.1-8b:$t -n 16 > $OUT/prof-synth-$t.json 2>/dev/null; echo "rc=$?"
done
echo "## 6. depth profile, synthetic 8B Q4_K at 8192 (new)"
late "d8192 profile" || { timeout 150 $N gpu-profile --synthetic llama-3.1-8b:Q4_K -d 8192 -n 16 > $OUT/prof-8b-q4k-d8192-new.json 2>/dev/null; echo "rc=$?"; }
echo "ab.sh done after $(( $(date +%s) - S )) s"
