#!/usr/bin/env bash
# Set everything up and run the main job: generate text from the default
# model (SmolLM2-135M-Instruct Q4_1), streaming to the terminal.
# Extra arguments go to `webgguf generate` (e.g. -p "Your prompt" -n 64).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
if [ $# -eq 0 ]; then
  set -- -p "<|im_start|>user
Write a short poem about the sea.<|im_end|>
<|im_start|>assistant
" -n 128
fi
exec target/release/webgguf generate "$@"
