//! Tokenizer construction from small hand-made GGUF files: defaults,
//! validation of untrusted metadata, and behaviour that needs no real model.
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

use webgguf::gguf::Gguf;
use webgguf::tokenizer::{StreamDecoder, Tokenizer};
use webgguf::Error;

/// A minimal GGUF v3 writer: metadata only, no tensors.
#[derive(Default)]
struct Meta {
    kvs: Vec<u8>,
    n: u64,
}

const T_U32: u32 = 4;
const T_I32: u32 = 5;
const T_F32: u32 = 6;
const T_BOOL: u32 = 7;
const T_STRING: u32 = 8;
const T_ARRAY: u32 = 9;

fn put_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend((s.len() as u64).to_le_bytes());
    buf.extend(s.as_bytes());
}

impl Meta {
    fn key(&mut self, k: &str, ty: u32) {
        put_str(&mut self.kvs, k);
        self.kvs.extend(ty.to_le_bytes());
        self.n += 1;
    }
    fn string(mut self, k: &str, v: &str) -> Self {
        self.key(k, T_STRING);
        put_str(&mut self.kvs, v);
        self
    }
    fn u32(mut self, k: &str, v: u32) -> Self {
        self.key(k, T_U32);
        self.kvs.extend(v.to_le_bytes());
        self
    }
    fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k, T_BOOL);
        self.kvs.push(v as u8);
        self
    }
    fn strings(mut self, k: &str, v: &[&str]) -> Self {
        self.key(k, T_ARRAY);
        self.kvs.extend(T_STRING.to_le_bytes());
        self.kvs.extend((v.len() as u64).to_le_bytes());
        for s in v {
            put_str(&mut self.kvs, s);
        }
        self
    }
    fn f32s(mut self, k: &str, v: &[f32]) -> Self {
        self.key(k, T_ARRAY);
        self.kvs.extend(T_F32.to_le_bytes());
        self.kvs.extend((v.len() as u64).to_le_bytes());
        for x in v {
            self.kvs.extend(x.to_le_bytes());
        }
        self
    }
    fn i32s(mut self, k: &str, v: &[i32]) -> Self {
        self.key(k, T_ARRAY);
        self.kvs.extend(T_I32.to_le_bytes());
        self.kvs.extend((v.len() as u64).to_le_bytes());
        for x in v {
            self.kvs.extend(x.to_le_bytes());
        }
        self
    }
    fn build(&self) -> Result<Tokenizer, Error> {
        let mut buf = b"GGUF".to_vec();
        buf.extend(3u32.to_le_bytes());
        buf.extend(0u64.to_le_bytes());
        buf.extend(self.n.to_le_bytes());
        buf.extend(&self.kvs);
        while !buf.len().is_multiple_of(32) {
            buf.push(0);
        }
        let g = Gguf::parse(&buf).expect("test GGUF parses");
        Tokenizer::from_gguf(&g)
    }
}

const SPM_TOKENS: &[&str] = &[
    "<unk>", "<s>", "</s>", "<0x0A>", "<0xC3>", "<0xA9>", "▁", "h", "i", "▁h", "▁hi", "<|user|>",
];
const SPM_TYPES: &[i32] = &[2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 4];

fn spm_with(scores: &[f32], types: &[i32]) -> Meta {
    Meta::default()
        .string("tokenizer.ggml.model", "llama")
        .strings("tokenizer.ggml.tokens", SPM_TOKENS)
        .f32s("tokenizer.ggml.scores", scores)
        .i32s("tokenizer.ggml.token_type", types)
}

fn spm() -> Meta {
    let scores: Vec<f32> = (0..SPM_TOKENS.len()).map(|i| -(i as f32)).collect();
    spm_with(&scores, SPM_TYPES)
}

/// A byte-level BPE vocabulary: every byte's stand-in is a token.
fn bpe_tokens() -> Vec<String> {
    let mut t: Vec<String> = (0u8..=255)
        .map(|b| {
            // The GPT-2 map: printable Latin-1 stays, the rest moves to U+0100+.
            let keep = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
            let c = if keep {
                char::from(b)
            } else {
                let k = (0u8..b)
                    .filter(|&x| !matches!(x, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF))
                    .count() as u32;
                char::from_u32(0x100 + k).unwrap()
            };
            c.to_string()
        })
        .collect();
    t.extend(["Ġh", "Ġhi", "<|endoftext|>", "<|im_end|>"].map(String::from));
    t
}

fn bpe() -> Meta {
    bpe_with_pre("gpt-2")
}

fn bpe_with_pre(pre: &str) -> Meta {
    let tokens = bpe_tokens();
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let mut types = vec![1; refs.len()];
    let n = types.len();
    types[n - 2] = 3;
    Meta::default()
        .string("tokenizer.ggml.model", "gpt2")
        .string("tokenizer.ggml.pre", pre)
        .strings("tokenizer.ggml.tokens", &refs)
        .i32s("tokenizer.ggml.token_type", &types)
        .strings("tokenizer.ggml.merges", &["Ġ h", "Ġh i"])
        .u32("tokenizer.ggml.eos_token_id", 258)
}

fn tokenizer_error(r: Result<Tokenizer, Error>) -> String {
    match r {
        Err(Error::Tokenizer(msg)) => msg,
        Err(e) => panic!("expected a tokenizer error, got {e}"),
        Ok(_) => panic!("expected a tokenizer error, got a tokenizer"),
    }
}

#[test]
fn spm_defaults_and_byte_fallback() {
    let tok = spm().build().unwrap();
    assert_eq!(tok.vocab_size(), SPM_TOKENS.len());
    assert!(tok.add_bos());
    assert_eq!((tok.bos(), tok.eos()), (Some(1), Some(2)));
    assert_eq!(tok.encode("hi", true, false), vec![1, 10]);
    // "é" is not a token: it falls back to its two UTF-8 bytes.
    assert_eq!(tok.encode("é\n", false, false), vec![6, 4, 5, 3]);
    assert_eq!(tok.decode(&[6, 4, 5, 3]), " é\n");
    // llama.cpp strips the prefix space only when no BOS was removed.
    assert_eq!(tok.detokenize(&[10], false, false), "hi");
    assert_eq!(tok.detokenize(&[1, 10], true, false), " hi");
    assert_eq!(tok.detokenize(&[1, 10], false, true), "<s> hi");
    // User-defined tokens are matched even without parse_special.
    assert_eq!(tok.encode("hi<|user|>hi", false, false), vec![10, 11, 10]);
    assert_eq!(tok.decode(&[11]), "<|user|>");
    // Control tokens only with parse_special.
    assert_eq!(tok.encode("</s>", false, true), vec![2]);
    assert_ne!(tok.encode("</s>", false, false), vec![2]);
    assert!(tok.is_eog(2));
}

#[test]
fn spm_add_space_prefix_can_be_disabled() {
    let tok = spm()
        .bool("tokenizer.ggml.add_space_prefix", false)
        .build()
        .unwrap();
    assert_eq!(tok.encode("hi", false, false), vec![7, 8]);
}

#[test]
fn bpe_defaults_and_merges() {
    let tok = bpe().build().unwrap();
    assert!(!tok.add_bos());
    assert_eq!(tok.eos(), Some(258));
    let hi = tok.token_text(257).unwrap();
    assert_eq!(hi, "Ġhi");
    assert_eq!(tok.encode(" hi", true, false), vec![257]);
    assert_eq!(tok.decode(&[257]), " hi");
    assert!(tok.is_eog(258));
    // "<|im_end|>" ends generation by its text alone.
    assert!(tok.is_eog(259));
    assert_eq!(tok.encode("<|im_end|>", false, true), vec![259]);
}

#[test]
fn stream_decoder_matches_decode() {
    let tok = spm().build().unwrap();
    let ids = [6, 4, 5, 3, 4, 9999, 10, 4];
    let mut dec = StreamDecoder::new();
    let mut out = String::new();
    for id in ids {
        out.push_str(&dec.push(&tok, id));
    }
    out.push_str(&dec.finish());
    assert_eq!(out, tok.decode(&ids));
    assert_eq!(out, " é\n\u{FFFD} hi\u{FFFD}");
}

#[test]
fn rejects_inconsistent_metadata() {
    let msg = tokenizer_error(spm_with(&[0.0, 1.0], SPM_TYPES).build());
    assert!(msg.contains("scores"), "{msg}");

    let scores = [0.0; 12];
    let msg = tokenizer_error(spm_with(&scores, &[1]).build());
    assert!(msg.contains("token_type"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", SPM_TOKENS)
            .strings("tokenizer.ggml.scores", SPM_TOKENS)
            .build(),
    );
    assert!(msg.contains("scores"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", &["a", "b", "a"])
            .build(),
    );
    assert!(msg.contains("duplicate"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", &[])
            .build(),
    );
    assert!(msg.contains("empty"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .build(),
    );
    assert!(msg.contains("tokenizer.ggml.tokens"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .strings("tokenizer.ggml.tokens", &["a"])
            .build(),
    );
    assert!(msg.contains("tokenizer.ggml.model"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "t5")
            .strings("tokenizer.ggml.tokens", &["a"])
            .build(),
    );
    assert!(msg.contains("t5"), "{msg}");

    let msg = tokenizer_error(bpe_with_pre("no-such-pre").build());
    assert!(msg.contains("no-such-pre"), "{msg}");

    let tokens = bpe_tokens();
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "gpt2")
            .strings("tokenizer.ggml.tokens", &refs)
            .build(),
    );
    assert!(msg.contains("merges"), "{msg}");

    // BOS requested but the only candidate id is outside the vocabulary.
    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", &["<unk>"])
            .bool("tokenizer.ggml.add_bos_token", true)
            .build(),
    );
    assert!(msg.contains("BOS"), "{msg}");

    let msg = tokenizer_error(
        Meta::default()
            .string("tokenizer.ggml.model", "llama")
            .strings("tokenizer.ggml.tokens", SPM_TOKENS)
            .u32("tokenizer.ggml.add_bos_token", 1)
            .build(),
    );
    assert!(msg.contains("add_bos_token"), "{msg}");
}

#[test]
fn out_of_range_special_ids_are_ignored() {
    let tok = Meta::default()
        .string("tokenizer.ggml.model", "llama")
        .strings("tokenizer.ggml.tokens", SPM_TOKENS)
        .u32("tokenizer.ggml.bos_token_id", u32::MAX)
        .u32("tokenizer.ggml.eos_token_id", 1000)
        .u32("tokenizer.ggml.padding_token_id", u32::MAX)
        .build()
        .unwrap();
    // The defaults stay in force, as in llama.cpp.
    assert_eq!((tok.bos(), tok.eos()), (Some(1), Some(2)));
}

#[test]
fn missing_pre_uses_default_regexes() {
    let tokens = bpe_tokens();
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let tok = Meta::default()
        .string("tokenizer.ggml.model", "gpt2")
        .strings("tokenizer.ggml.tokens", &refs)
        .strings("tokenizer.ggml.merges", &["Ġ h", "Ġh i", "no-separator"])
        .build()
        .unwrap();
    assert_eq!(tok.encode(" hi", false, false), vec![257]);
    // BPE's default BOS/EOS id is 11, as in llama.cpp.
    assert_eq!(tok.bos(), Some(11));
}
