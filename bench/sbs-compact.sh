#!/usr/bin/env bash
# Run here (not on the device), from the repository root, before a device
# call: packs the kit's llama.cpp source (.sbs/llama, ~28 MB) into
# .sbs/llama.tgz (~5 MB) and keeps only its gguf-py unpacked (the kit's
# mkmodel.py imports it), so that the carry (64 MiB with the working
# tree) has room for .sbs/llama-bin.tgz. On the device sbs_llama_src
# (sbs-common.sh) unpacks it again before device.sh copies .sbs, in case
# the prebuilt binaries fail and llama.cpp must build there. Idempotent.
set -eu
[ -d .sbs/llama ] || { echo "no .sbs/llama: run ../shared/tools/gpu-side-by-side/prepare.sh first"; exit 1; }
if [ ! -f .sbs/llama.tgz ]; then
  tar czf .sbs/llama.tgz -C .sbs llama
  find .sbs/llama -mindepth 1 -maxdepth 1 ! -name gguf-py -exec rm -rf {} +
fi
du -sh .sbs
