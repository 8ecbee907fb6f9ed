# Sourced by the kit's pipeline.sh (go.sh patches it in) after its
# benches: the 8B IQ4_XS again with few.wgsl's replay rounding by hand
# (WEBGGUF_GPU_ROUND_PACK=0), so that the call measures the 2026-12-01
# rounding change on the real file beside the default.
f=$(mf llama-3.1-8b-IQ4_XS)
[ -n "$f" ] && WEBGGUF_GPU_ROUND_PACK=0 wg hand-llama-3.1-8b-IQ4_XS 60 bench -m $f --backend gpu -p 1 -n 128 -r 3 --json
