# Sourced by the kit's pipeline.sh after its benches (go2.sh): decode at
# 8192 keys on the 8B Q4_K_M, both engines.
f=$(mf llama-3.1-8b-Q4_K_M); if [ -n "$f" ]; then
  lb d8192-llama-3.1-8b-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d 8192
  wg d8192-llama-3.1-8b-Q4_K_M 240 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -r 3 -d 8192 --json
fi
