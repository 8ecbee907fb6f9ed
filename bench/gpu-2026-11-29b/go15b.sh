#!/usr/bin/env bash
# The rest of the device budget after go15.sh's two machines were each
# taken back between polling calls (results up to the quantizing, next15.sh
# complete on both): the one file the H200 had not measured, llama-3.1-8b
# IQ4_XS, both engines, with main's CLI (b364667), and its gpu-profile.
# One call: bash bench/gpu-2026-11-29b/go15b.sh SECONDS (carry ['.sbs']).
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
gunzip -f .sbs/webgguf.gz; chmod +x .sbs/webgguf
chmod u+w .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i f=$(mf llama-3.1-8b-IQ4_XS); [ -n "$f" ] \&\& wg prof-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 32' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
