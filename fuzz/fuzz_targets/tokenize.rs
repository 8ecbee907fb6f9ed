//! Bytes -> encode / decode / StreamDecoder on vocabularies loaded once:
//! a SentencePiece one (`WEBGGUF_FUZZ_VOCAB`, default
//! ../shared/models/stories260K.Q8_0.gguf) and, when present, a byte-level
//! BPE one (`WEBGGUF_FUZZ_BPE_VOCAB`, default
//! .cache/SmolLM2-135M-Instruct.Q4_1.gguf, which scripts/setup.sh fetches).
//!
//! The first byte picks the flags (bit 4: the BPE vocabulary); the rest is
//! both text (lossy UTF-8) and, read as little-endian u16s, a token-id
//! sequence.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use webgguf::gguf::Gguf;
use webgguf::tokenizer::{StreamDecoder, Tokenizer};

fn load(path: &str) -> Tokenizer {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let g = Gguf::parse(&bytes).expect("vocabulary file parses");
    Tokenizer::from_gguf(&g).expect("vocabulary loads")
}

fn tokenizers() -> &'static [Tokenizer] {
    static T: OnceLock<Vec<Tokenizer>> = OnceLock::new();
    T.get_or_init(|| {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let spm = std::env::var("WEBGGUF_FUZZ_VOCAB")
            .unwrap_or_else(|_| format!("{root}/../shared/models/stories260K.Q8_0.gguf"));
        let mut t = vec![load(&spm)];
        let bpe = std::env::var("WEBGGUF_FUZZ_BPE_VOCAB")
            .unwrap_or_else(|_| format!("{root}/.cache/SmolLM2-135M-Instruct.Q4_1.gguf"));
        if std::path::Path::new(&bpe).exists() {
            t.push(load(&bpe));
        } else {
            eprintln!("no BPE vocabulary at {bpe}: fuzzing {spm} only");
        }
        t
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let toks = tokenizers();
    let tok = &toks[((flags >> 4) & 1) as usize % toks.len()];
    let n = tok.vocab_size() as u32;
    let text = String::from_utf8_lossy(rest);
    let ids = tok.encode(&text, flags & 1 != 0, flags & 2 != 0);
    assert!(ids.iter().all(|&i| i < n));
    let _ = tok.decode(&ids);

    // Ids from the raw bytes; the top bit set reaches past the vocabulary.
    let ids: Vec<u32> = rest
        .chunks_exact(2)
        .map(|c| {
            let v = u16::from_le_bytes([c[0], c[1]]) as u32;
            if v & 0x8000 != 0 {
                v
            } else {
                v % n
            }
        })
        .collect();
    let whole = tok.decode(&ids);
    let mut d = StreamDecoder::new();
    let mut streamed = String::new();
    for &id in &ids {
        streamed.push_str(&d.push(tok, id));
    }
    streamed.push_str(&d.finish());
    assert_eq!(streamed, whole);
    let _ = tok.detokenize(&ids, flags & 4 != 0, flags & 8 != 0);
});
