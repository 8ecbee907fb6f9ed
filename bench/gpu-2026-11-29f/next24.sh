# Run by the kit's pipeline (go24.sh patches it in) while llama.cpp
# quantizes: pp512 / tg16 of main 23748aa (webgguf) and of fc8e7f8's code
# (webgguf-base) on the synthetic 8B Q3_K, two rounds, the pair swapped.
cd /tmp/sbs
for rd in 1 2; do
  bs="webgguf webgguf-base"; [ $rd = 2 ] && bs="webgguf-base webgguf"
  for b in $bs; do
    r=$(timeout 90 ./$b bench --backend gpu --synthetic llama-3.1-8b:Q3_K -p 512 -n 16 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("pp512 %.0f tg16 %.1f" % (d["pp_median_tok_s"], d["tg_median_tok_s"]))' 2>/dev/null)
    echo "$rd llama-3.1-8b:Q3_K $b ${r:-fail}"
  done
done
