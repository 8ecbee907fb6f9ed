# Sourced by the kit's pipeline after the benches (go.sh): the code book
# by shuffles (main) against the table (WEBGGUF_GPU_BOOK_SHUFFLE=0) on the
# real-layout 8B IQ4_XS, tg128 medians of 3, two rounds in opposite
# orders (book.txt); gpu-profile both ways; then tg64 A/Bs on synthetic
# files (book-syn.txt).
x_tg() {  # LABEL MODEL [ENV=VALUE]
  local label=$1 f=$2; shift 2
  local v=$(env "$@" timeout 120 $WG bench -m $f --backend gpu -p 1 -n 128 -r 3 --json 2>/dev/null \
    | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$label ${v:-fail}" >> $R/book.txt; log "book: $label ${v:-fail}"
}
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  x_tg "1 shuffle" $f
  x_tg "1 table" $f WEBGGUF_GPU_BOOK_SHUFFLE=0
  x_tg "2 table" $f WEBGGUF_GPU_BOOK_SHUFFLE=0
  x_tg "2 shuffle" $f
  wg prof-llama-3.1-8b-IQ4_XS 120 gpu-profile -m $f -n 32
  WEBGGUF_GPU_BOOK_SHUFFLE=0 wg prof-table-llama-3.1-8b-IQ4_XS 120 gpu-profile -m $f -n 32
fi
(cd /tmp && . /tmp/sbs/sbs-common.sh && sbs_ab $R/book-syn.txt "llama-3.2-1b:IQ4_XS tinyllama-1.1b:IQ4_XS llama-3.1-8b:IQ4_NL" \
  shuffle:webgguf table:webgguf:WEBGGUF_GPU_BOOK_SHUFFLE=0)
