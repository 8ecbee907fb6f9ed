#!/usr/bin/env python3
"""Compare webgguf's tokenizer with llama.cpp's on random awkward text.

Needs the llama_cpp Python bindings (pip install llama-cpp-python; it builds
llama.cpp from source, which takes a while) and a release build of
examples/tokenizer_dump.rs:

    cargo build --release --example tokenizer_dump
    python3 scripts/tokenizer_vs_llamacpp.py VOCAB.gguf [VOCAB.gguf ...]

For every vocabulary it checks special-token facts (BOS/EOS, add_bos/add_eos,
the end-of-generation set), every token's piece, and for each random text the
ids with (add_special, parse_special) = (false, false) and (true, true) plus
three detokenizations. Exits non-zero on any difference.
"""

import ctypes
import json
import os
import random
import subprocess
import sys

import llama_cpp as L

DUMP = os.environ.get(
    "TOKENIZER_DUMP",
    os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "examples", "tokenizer_dump"),
)
CASES = int(os.environ.get("CASES", "1500"))

# Fragments chosen to hit the pre-tokenizers' corners: contractions, digit
# runs, every kind of space, marks, emoji sequences, CJK, special-token text.
PIECES = [
    "a", "Z", "e", "hello", " world", "é", "ß", "日", "本", "語", "한", "국", "ä", "\u0301", "\u200d",
    "🦙", "😶\u200d🌫️", "0", "7", "42", "1234567", "٣", "½", "Ⅻ", " ", "  ", "   ", "\t", "\n",
    "\n\n", "\r\n", "\r", "\u3000", "\u00a0", "\u2009", "\u0085", "'", "'s", "'S", "'LL", "'re",
    "'Ve", "'d", "!", "?", "...", "$", "~", "`", "<", ">", "|", "^", "+", "=", "_", "-", "--", "(",
    ")", "[", "]", "{", "}", '"', "#", "%", "&", "*", "/", "\\", ":", ";", "@", "<s>", "</s>",
    "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|user|>", "<|end|>", "<|eot_id|>",
    "<|begin_of_text|>", "<fim_prefix>", "<|fim_pad|>", "\0", "\x01", "\x1c", "\x7f", "\ufffd",
    "\ue000", "\U0010ffff", "\u0378", "ー", "ก", "\u0e31", "ก่", "Ω", "ǅ", "ﬁ", "Ａ", "！", "，",
    "。", "「", "‘", "“", "—", "…", "€", "£", "©", "°", "±", "→", "∑", "√", "Привет", "мир",
    "Γειά", "שלום", "مرحبا", "नमस्ते", "তুমি", "こんにちは", "カタカナ", "中文字符", "𝔘𝔫𝔦",
    "𐐀", "𞤀", "ℂ", "\u212a", "\u2126", "\u1fbe",
]


def random_texts(seed):
    rng = random.Random(seed)
    texts = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 25))) for _ in range(CASES)]
    texts += ["".join(rng.choice(PIECES) for _ in range(300)) for _ in range(20)]
    return texts


def load(path):
    params = L.llama_model_default_params()
    params.vocab_only = True
    model = L.llama_model_load_from_file(path.encode(), params)
    if not model:
        raise SystemExit(f"llama.cpp could not load {path}")
    return model, L.llama_model_get_vocab(model)


def tokenize(vocab, text, add_special, parse_special):
    data = text.encode("utf-8")
    n = len(data) + 8
    ids = (L.llama_token * n)()
    r = L.llama_tokenize(vocab, data, len(data), ids, n, add_special, parse_special)
    if r < 0:
        n = -r
        ids = (L.llama_token * n)()
        r = L.llama_tokenize(vocab, data, len(data), ids, n, add_special, parse_special)
    return list(ids[:r])


def detokenize(vocab, ids, remove_special, unparse_special):
    n = 64 + 32 * len(ids)
    buf = ctypes.create_string_buffer(n)
    arr = (L.llama_token * max(1, len(ids)))(*ids)
    r = L.llama_detokenize(vocab, arr, len(ids), buf, n, remove_special, unparse_special)
    return buf.raw[:r].decode("utf-8", errors="replace")


def piece(vocab, token, buf=ctypes.create_string_buffer(1024)):
    r = L.llama_token_to_piece(vocab, token, buf, len(buf), 0, False)
    return buf.raw[:r].decode("utf-8", errors="replace")


def compare(path):
    texts = random_texts(1234)
    dump = subprocess.run([DUMP, path], input=json.dumps(texts).encode(), capture_output=True, check=True)
    mine = json.loads(dump.stdout)
    _, vocab = load(path)
    n = L.llama_vocab_n_tokens(vocab)
    bos, eos = L.llama_vocab_bos(vocab), L.llama_vocab_eos(vocab)
    ref_meta = {
        "bos": bos if bos >= 0 else None,
        "eos": eos if eos >= 0 else None,
        "add_bos": bool(L.llama_vocab_get_add_bos(vocab)),
        "add_eos": bool(L.llama_vocab_get_add_eos(vocab)),
        "eog": [i for i in range(n) if L.llama_vocab_is_eog(vocab, i)],
    }
    problems = [f"{k}: llama.cpp {v!r}, webgguf {mine[k]!r}" for k, v in ref_meta.items() if mine[k] != v]
    bad_pieces = [i for i in range(n) if piece(vocab, i) != mine["pieces"][i]]
    if bad_pieces:
        problems.append(f"{len(bad_pieces)} token pieces differ, e.g. id {bad_pieces[0]}")
    for text, got in zip(texts, mine["cases"]):
        plain = tokenize(vocab, text, False, False)
        special = tokenize(vocab, text, True, True)
        want = {
            "plain": plain,
            "special": special,
            "detok_plain": detokenize(vocab, plain, False, False),
            "detok_special_removed": detokenize(vocab, special, True, True),
            "detok_special_kept": detokenize(vocab, special, False, False),
        }
        for k, v in want.items():
            if got[k] != v:
                problems.append(f"{k} for {text!r}: llama.cpp {v!r}, webgguf {got[k]!r}")
    name = os.path.basename(path)
    print(f"{name}: {len(texts)} texts, {n} tokens: {'OK' if not problems else f'{len(problems)} differences'}")
    for p in problems[:5]:
        print("   ", p[:400])
    return not problems


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    L.llama_backend_init()
    ok = all([compare(p) for p in sys.argv[1:]])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
