#!/usr/bin/env bash
# Runs in go.sh's call (2026-11-26b) while llama.cpp's CUDA build (nice 19)
# is the only other load: the merge with 4 dimensions a thread and a tree
# as deep as the splits in use (new = /tmp/sbs/webgguf, 2989ad4) against
# base = /tmp/sbs/webgguf-base (adaee75: split lengths by key count, the
# old merge); and split lengths by key count against 64-key splits always
# (WEBGGUF_GPU_SPLIT_WGS=0 on new). Synthetic shapes; tg32 after d keys,
# tg128 from 0.
set -u
r() { local b=$1; shift; echo "== $b $*"; timeout 200 /tmp/sbs/webgguf$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
/tmp/sbs/webgguf bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q4_0; do
  D=0,128,512,2048; case $m in llama-3*) D=$D,8192;; esac
  for b in -base ""; do r "$b" --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d $D; done
  WEBGGUF_GPU_SPLIT_WGS=0 r "" --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d 512,2048
  for rd in 1 2; do for b in -base ""; do r "$b" --synthetic $m -p 1 -n 128 -r 3; done; done
  echo "t=$(( $(date +%s) - START ))"
done
echo "ab9 done after $(( $(date +%s) - START )) s"
