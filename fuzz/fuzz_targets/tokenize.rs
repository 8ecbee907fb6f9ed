//! Bytes -> encode / decode / StreamDecoder on a vocabulary loaded once
//! (`WEBGGUF_FUZZ_VOCAB`, default ../shared/models/stories260K.Q8_0.gguf).
//!
//! The first byte picks the flags; the rest is both text (lossy UTF-8) and,
//! read as little-endian u16s, a token-id sequence.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use webgguf::gguf::Gguf;
use webgguf::tokenizer::{StreamDecoder, Tokenizer};

fn tokenizer() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let path = std::env::var("WEBGGUF_FUZZ_VOCAB").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/models/stories260K.Q8_0.gguf").into()
        });
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let g = Gguf::parse(&bytes).expect("vocabulary file parses");
        Tokenizer::from_gguf(&g).expect("vocabulary loads")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let tok = tokenizer();
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
            if v & 0x8000 != 0 { v } else { v % n }
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
