//! Bounded-time fuzzing that runs under plain `cargo test` (stable Rust).
//!
//! Mutates valid GGUF files (byte flips, truncations, insertions, deletions,
//! splices and overwrites of the header's numeric fields) and loads them;
//! whatever loads runs one forward step. Separately feeds random text, bytes
//! and ids to the tokenizers. Any panic fails the test, naming the seed and
//! iteration and saving the input under `$CARGO_TARGET_TMPDIR`.
//!
//! `WEBGGUF_FUZZ_SECS` (default 20) is the total budget, split between the
//! two tests; `WEBGGUF_FUZZ_SEED` picks the RNG seed (default fixed).
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use webgguf::cpu::Serial;
use webgguf::engine::{CpuBackend, Engine, Loaded};
use webgguf::gguf::Gguf;
use webgguf::model::LoadOptions;
use webgguf::tokenizer::{StreamDecoder, Tokenizer};

/// xorshift64*: tiny, seedable, good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

fn budget(share: f64) -> Duration {
    let total: f64 = std::env::var("WEBGGUF_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0);
    Duration::from_secs_f64(total * share)
}

fn seed() -> u64 {
    std::env::var("WEBGGUF_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_9906)
}

fn save_crash(name: &str, bytes: &[u8]) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models")
}

fn smollm2_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// Positions and widths of the numeric fields in a GGUF header, metadata
/// and tensor table (counts, lengths, type tags, dims, offsets, scalars):
/// the places where an overwrite tests a check rather than a string.
fn numeric_fields(b: &[u8]) -> Vec<(usize, usize)> {
    let mut f = vec![(4, 4), (8, 8), (16, 8)];
    let rd = |at: usize, w: usize| -> Option<u64> {
        let s = b.get(at..at + w)?;
        let mut a = [0u8; 8];
        a[..w].copy_from_slice(s);
        Some(u64::from_le_bytes(a))
    };
    let mut pos = 24;
    // Returns the new position, or None past the end (the seed is valid, so
    // that only happens on a bug here).
    fn value(
        f: &mut Vec<(usize, usize)>,
        rd: &dyn Fn(usize, usize) -> Option<u64>,
        ty: u64,
        mut pos: usize,
    ) -> Option<usize> {
        let w = match ty {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => {
                f.push((pos, 8));
                return Some(pos + 8 + rd(pos, 8)? as usize);
            }
            9 => {
                f.push((pos, 4));
                f.push((pos + 4, 8));
                let et = rd(pos, 4)?;
                let n = rd(pos + 4, 8)?;
                pos += 12;
                for i in 0..n {
                    // Only the first few elements' fields are worth recording.
                    let mut scratch = Vec::new();
                    let sink = if i < 4 { &mut *f } else { &mut scratch };
                    pos = value(sink, rd, et, pos)?;
                }
                return Some(pos);
            }
            _ => return None,
        };
        if w == 4 || w == 8 {
            f.push((pos, w));
        }
        Some(pos + w)
    }
    let (Some(nt), Some(nkv)) = (rd(8, 8), rd(16, 8)) else {
        return f;
    };
    for _ in 0..nkv {
        let Some(kl) = rd(pos, 8) else { return f };
        f.push((pos, 8));
        pos += 8 + kl as usize;
        let Some(ty) = rd(pos, 4) else { return f };
        f.push((pos, 4));
        match value(&mut f, &rd, ty, pos + 4) {
            Some(p) => pos = p,
            None => return f,
        }
    }
    for _ in 0..nt {
        let Some(nl) = rd(pos, 8) else { return f };
        f.push((pos, 8));
        pos += 8 + nl as usize;
        let Some(nd) = rd(pos, 4) else { return f };
        f.push((pos, 4));
        pos += 4;
        for _ in 0..nd {
            f.push((pos, 8));
            pos += 8;
        }
        f.push((pos, 4));
        f.push((pos + 4, 8));
        pos += 12;
    }
    f
}

const INTERESTING: [u64; 14] = [
    0,
    1,
    2,
    3,
    7,
    31,
    32,
    255,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    1 << 62,
    u64::MAX,
];

/// Apply 1-4 random mutations to a copy of `seed`.
fn mutate(rng: &mut Rng, seed: &[u8], fields: &[(usize, usize)]) -> Vec<u8> {
    let mut b = seed.to_vec();
    // Most of the interesting structure is in the header; aim there often.
    let header_end = fields.last().map_or(b.len(), |&(p, w)| p + w);
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        // Earlier mutations may have shortened the buffer.
        let region = if rng.chance(2) { header_end } else { b.len() }.clamp(1, b.len());
        match rng.below(8) {
            0 => {
                let at = rng.below(region);
                b[at] ^= 1 << rng.below(8);
            }
            1 => {
                let at = rng.below(region);
                b[at] = [0, 0xff, 0x7f, 0x80, 1][rng.below(5)];
            }
            2 => {
                let cut = rng.below(b.len());
                b.truncate(cut);
            }
            3 => {
                let at = rng.below(region + 1);
                let n = 1 + rng.below(16);
                let junk: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                b.splice(at..at, junk);
            }
            4 => {
                let at = rng.below(region);
                let n = (1 + rng.below(16)).min(b.len() - at);
                b.drain(at..at + n);
            }
            5 => {
                // Copy a chunk elsewhere (duplicated names, shifted records).
                let from = rng.below(region);
                let n = (1 + rng.below(32)).min(b.len() - from);
                let chunk = b[from..from + n].to_vec();
                let to = rng.below(b.len() - n + 1);
                b[to..to + n].copy_from_slice(&chunk);
            }
            _ => {
                // Overwrite a numeric field with an edge value or a nudge.
                if fields.is_empty() {
                    continue;
                }
                let (at, w) = fields[rng.below(fields.len())];
                if at + w > b.len() {
                    continue;
                }
                let mut old = [0u8; 8];
                old[..w].copy_from_slice(&b[at..at + w]);
                let old = u64::from_le_bytes(old);
                let v = match rng.below(4) {
                    0 => old.wrapping_add(1 + rng.below(64) as u64),
                    1 => old.wrapping_sub(1 + rng.below(64) as u64),
                    2 => seed.len() as u64 + rng.below(64) as u64,
                    _ => INTERESTING[rng.below(INTERESTING.len())],
                };
                b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
        }
    }
    b
}

/// Load `bytes`; if it loads, run a one-token generation on the CPU.
fn load_and_step(bytes: Vec<u8>) -> bool {
    let Ok(l) = Loaded::from_bytes(bytes, LoadOptions::default()) else {
        return false;
    };
    let vocab = l.config.vocab_size as u32;
    let Ok(backend) = CpuBackend::new(l.config.clone(), l.weights, 8, 4, Box::new(Serial)) else {
        return true;
    };
    let mut e = Engine::with_backend(
        l.config,
        l.tokenizer,
        l.info,
        Box::new(backend),
        common::now_ms,
    );
    let prompt = [1 % vocab, 3 % vocab];
    let _ = pollster::block_on(e.generate(&prompt, 1, Default::default(), &mut |_, _| true));
    true
}

#[test]
fn fuzz_gguf_load() {
    let mut seeds = vec![("tiny_llama", common::gguf_writer::tiny_llama("llama", 4).0)];
    for name in ["stories260K.Q8_0.gguf", "synthqwen2.Q4_0.gguf"] {
        match std::fs::read(models_dir().join(name)) {
            Ok(b) => seeds.push((name, b)),
            Err(_) => eprintln!("SKIPPED seed {name}: not in ../shared/models"),
        }
    }
    for (name, s) in &seeds {
        assert!(load_and_step(s.clone()), "seed {name} must load");
    }
    let fields: Vec<_> = seeds.iter().map(|(_, s)| numeric_fields(s)).collect();
    let seed = seed();
    let mut rng = Rng::new(seed);
    let deadline = budget(0.6);
    let t0 = Instant::now();
    let (mut execs, mut loaded) = (0u64, 0u64);
    let mut crashes = Vec::new();
    while t0.elapsed() < deadline {
        let k = rng.below(seeds.len());
        let input = mutate(&mut rng, &seeds[k].1, &fields[k]);
        let r = catch_unwind(AssertUnwindSafe(|| load_and_step(input.clone())));
        match r {
            Ok(true) => loaded += 1,
            Ok(false) => {}
            Err(_) => {
                let p = save_crash(&format!("gguf-crash-{seed}-{execs}.gguf"), &input);
                crashes.push(format!("iteration {execs}: saved {}", p.display()));
            }
        }
        execs += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "fuzz_gguf_load: seed {seed}, {execs} executions in {secs:.1} s ({:.0}/s), {loaded} loaded",
        execs as f64 / secs
    );
    assert!(crashes.is_empty(), "panics: {crashes:#?}");
}

/// Random text built from pieces that stress a tokenizer: ASCII, odd
/// whitespace, combining marks, emoji, CJK, special-token lookalikes, vocab
/// pieces and arbitrary scalar values.
fn random_text(rng: &mut Rng, vocab: &[String]) -> String {
    const PIECES: [&str; 22] = [
        " ",
        "  ",
        "\n",
        "\r\n",
        "\t",
        "\u{a0}",
        "\u{3000}",
        "\u{200b}",
        "a",
        "Hello",
        " world",
        "'s",
        "'LL",
        "123456",
        "\u{301}",
        "é",
        "🦀",
        "👩‍👩‍👧",
        "日本語",
        "<s>",
        "</s>",
        "<|im_start|>",
    ];
    let mut s = String::new();
    for _ in 0..rng.below(24) {
        match rng.below(5) {
            0 => s.push_str(PIECES[rng.below(PIECES.len())]),
            1 if !vocab.is_empty() => s.push_str(&vocab[rng.below(vocab.len())]),
            2 => {
                if let Some(c) = char::from_u32(rng.below(0x11_0000) as u32) {
                    s.push(c);
                }
            }
            3 => {
                if let Some(c) = char::from_u32(rng.below(0x800) as u32) {
                    s.push(c);
                }
            }
            _ => s.push((b' ' + rng.below(95) as u8) as char),
        }
    }
    s
}

/// One round on one tokenizer; panics on a broken invariant.
/// `byte_level` is `Some(bytes the vocabulary has a token for)` for a
/// byte-level BPE vocabulary, where encoding then decoding must give back the
/// text exactly unless the text uses a byte the vocabulary lacks (SmolLM2
/// lacks 21 of them; llama.cpp drops those bytes too).
fn tokenizer_round(rng: &mut Rng, tok: &Tokenizer, vocab: &[String], byte_level: Option<&[bool]>) {
    let n = tok.vocab_size() as u32;
    let text = if rng.chance(4) {
        let raw: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        String::from_utf8_lossy(&raw).into_owned()
    } else {
        random_text(rng, vocab)
    };
    let parse_special = rng.chance(2);
    let ids = tok.encode(&text, rng.chance(2), parse_special);
    assert!(ids.iter().all(|&i| i < n), "id out of range for {text:?}");
    let covered = |bytes: &[bool]| text.bytes().all(|b| bytes[b as usize]);
    if byte_level.is_some_and(covered) && !parse_special {
        let plain = tok.encode(&text, false, false);
        assert_eq!(tok.decode(&plain), text, "byte-level round trip");
    }
    // Arbitrary ids, some outside the vocabulary.
    let mut ids = ids;
    for _ in 0..rng.below(8) {
        let id = if rng.chance(8) {
            rng.next() as u32
        } else {
            rng.below(n as usize) as u32
        };
        ids.insert(rng.below(ids.len() + 1), id);
    }
    let whole = tok.decode(&ids);
    let mut d = StreamDecoder::new();
    let mut streamed = String::new();
    for &id in &ids {
        streamed.push_str(&d.push(tok, id));
        let _ = tok.token_piece(id, true);
    }
    streamed.push_str(&d.finish());
    assert_eq!(streamed, whole, "stream decode vs decode for {ids:?}");
    let _ = tok.detokenize(&ids, rng.chance(2), rng.chance(2));
}

#[test]
fn fuzz_tokenizers() {
    let mut toks = Vec::new();
    let tiny = common::gguf_writer::tiny_llama("llama", 4).0;
    let mut files = vec![("tiny_llama".to_string(), tiny)];
    for p in [models_dir().join("stories260K.Q8_0.gguf"), smollm2_path()] {
        match std::fs::read(&p) {
            Ok(b) => files.push((p.display().to_string(), b)),
            Err(_) => eprintln!("SKIPPED vocabulary {}: absent", p.display()),
        }
    }
    for (name, bytes) in &files {
        let g = Gguf::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tok = Tokenizer::from_gguf(&g).unwrap_or_else(|e| panic!("{name}: {e}"));
        let byte_level = (g.get_str("tokenizer.ggml.model") == Some("gpt2")).then(|| {
            let mut has = vec![false; 256];
            for id in 0..tok.vocab_size() as u32 {
                if let [b] = tok.token_bytes(id)[..] {
                    has[b as usize] = true;
                }
            }
            has
        });
        let vocab = g.get_str_array("tokenizer.ggml.tokens").unwrap();
        let vocab: Vec<String> = vocab.iter().map(|s| s.to_string()).collect();
        toks.push((name.clone(), tok, vocab, byte_level));
    }
    let seed = seed();
    let mut rng = Rng::new(seed ^ 0x70c);
    let deadline = budget(0.4);
    let t0 = Instant::now();
    let mut execs = 0u64;
    while t0.elapsed() < deadline {
        let (name, tok, vocab, byte_level) = &toks[rng.below(toks.len())];
        let state = rng.0;
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| {
            tokenizer_round(&mut rng, tok, vocab, byte_level.as_deref())
        })) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name}: iteration {execs} (rng state {state}) panicked: {msg}");
        }
        execs += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "fuzz_tokenizers: seed {seed}, {execs} rounds in {secs:.1} s ({:.0}/s) over {} vocabularies",
        execs as f64 / secs,
        toks.len()
    );
}
