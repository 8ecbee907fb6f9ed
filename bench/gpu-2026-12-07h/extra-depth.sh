# Sourced by the kit's pipeline after the benches (go-depth.sh): both
# engines' decode at depth 2048 and 8192 on the real-layout 8B files
# (sbs_depth: ours as the CLI's defaults have it, WEBGGUF_GPU_DEEP_SG
# from the caller's SG where set), then ours with split.wgsl
# (WEBGGUF_GPU_DEEP_SG=0) on the same files, in the same run.
. $W/sbs-common.sh
[ -n "${SG:-}" ] && export WEBGGUF_GPU_DEEP_SG=$SG
sbs_depth llama-3.1-8b-Q4_K_M llama-3.1-8b-Q8_0 llama-3.1-8b-IQ4_XS
for n in llama-3.1-8b-Q4_K_M llama-3.1-8b-Q8_0 llama-3.1-8b-IQ4_XS; do
  f=$(mf $n); [ -n "$f" ] || continue
  WEBGGUF_GPU_DEEP_SG=0 wg depth-split-$n 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
done
