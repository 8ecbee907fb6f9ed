//! Tokenizer checks against llama.cpp's reference outputs in shared/.
//!
//! The vector files come from llama.cpp's test-tokenizer-0: cases in `.inp`
//! are separated by "\n__ggml_vocab_test__\n" and line i of `.out` holds the
//! ids llama.cpp produced for case i (add_special = false,
//! parse_special = false).
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

use std::path::{Path, PathBuf};

use webgguf::gguf::Gguf;
use webgguf::tokenizer::Tokenizer;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// The shared reference data, or `None` (after saying why) when this
/// checkout has none. Under CI its absence is a failure.
fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(SHARED);
    if dir.join("reference/tokenizer").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("shared reference data not found at {SHARED} (required when CI=true)");
    }
    eprintln!("SKIP: shared reference data not found at {SHARED}");
    None
}

/// SmolLM2's real model file: fetched into the repository's .cache by
/// scripts/setup.sh, or found in the main checkout next to this worktree.
fn smollm2_path() -> Option<PathBuf> {
    let name = "SmolLM2-135M-Instruct.Q4_1.gguf";
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(".cache")
            .join(name),
        PathBuf::from("/work/main/.cache").join(name),
    ];
    let found = candidates.into_iter().find(|p| p.is_file());
    if found.is_none() {
        eprintln!("SKIP: {name} not found (run scripts/setup.sh)");
    }
    found
}

fn load(path: &Path) -> Tokenizer {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let g = Gguf::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Tokenizer::from_gguf(&g).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The (input, expected ids) pairs of one vector file pair.
fn read_cases(inp: &Path, out: &Path) -> Vec<(String, Vec<u32>)> {
    let raw = std::fs::read_to_string(inp).unwrap();
    let sep = "\n__ggml_vocab_test__\n";
    let mut inputs = Vec::new();
    let mut rest = raw.as_str();
    while !rest.is_empty() {
        match rest.find(sep) {
            Some(i) => {
                inputs.push(rest[..i].to_string());
                rest = &rest[i + sep.len()..];
            }
            None => {
                inputs.push(rest.to_string());
                rest = "";
            }
        }
    }
    let expected: Vec<Vec<u32>> = std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        inputs.len(),
        expected.len(),
        "{}: input and output case counts differ",
        inp.display()
    );
    inputs.into_iter().zip(expected).collect()
}

/// Runs one vector file; returns (passed, total) and prints the failures.
fn run_vectors(name: &str, tok: &Tokenizer, inp: &Path, out: &Path) -> (usize, usize) {
    let cases = read_cases(inp, out);
    let mut passed = 0;
    for (text, want) in &cases {
        let got = tok.encode(text, false, false);
        if &got == want {
            passed += 1;
        } else {
            eprintln!("  {name}: {text:?}\n    want {want:?}\n    got  {got:?}");
        }
    }
    (passed, cases.len())
}

#[test]
fn llama_cpp_vectors() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("reference/tokenizer");
    let mut vocabs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    vocabs.sort();

    let mut runs: Vec<(String, PathBuf, PathBuf, PathBuf)> = vocabs
        .iter()
        .map(|v| {
            let name = v.file_name().unwrap().to_string_lossy().into_owned();
            let inp = dir.join(format!("{name}.inp"));
            let out = dir.join(format!("{name}.out"));
            (name, v.clone(), inp, out)
        })
        .collect();
    runs.push((
        "stories260K".into(),
        shared.join("models/stories260K.F32.gguf"),
        dir.join("stories260K.inp"),
        dir.join("stories260K.out"),
    ));
    match smollm2_path() {
        Some(p) => runs.push((
            "SmolLM2-135M".into(),
            p,
            dir.join("SmolLM2-135M.inp"),
            dir.join("SmolLM2-135M.out"),
        )),
        None => eprintln!("SKIP: SmolLM2-135M vectors"),
    }

    let mut all_ok = true;
    let mut summary = Vec::new();
    for (name, vocab, inp, out) in &runs {
        let tok = load(vocab);
        let (passed, total) = run_vectors(name, &tok, inp, out);
        all_ok &= passed == total;
        summary.push(format!("{name}: {passed}/{total}"));
    }
    for line in &summary {
        println!("{line}");
    }
    assert!(
        all_ok,
        "some tokenizer vectors failed:\n{}",
        summary.join("\n")
    );
}

/// Prompts from llama.cpp's greedy reference run, tokenized with
/// add_special = true and parse_special = true.
#[test]
fn greedy_reference_prompts() {
    let Some(shared) = shared_dir() else { return };
    let json = std::fs::read_to_string(shared.join("reference/greedy.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let refs = v["references"].as_array().expect("references array");
    let mut checked = 0;
    let mut cache: Vec<(String, Tokenizer)> = Vec::new();
    for r in refs {
        let model = r["model"].as_str().unwrap();
        let prompt = r["prompt"].as_str().unwrap();
        let want: Vec<u32> = r["prompt_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let path = if model.starts_with("SmolLM2-135M-Instruct.Q4_1") {
            smollm2_path()
        } else {
            Some(shared.join("models").join(model)).filter(|p| p.is_file())
        };
        let Some(path) = path else {
            eprintln!("SKIP: {model} not available");
            continue;
        };
        let key = path.display().to_string();
        if !cache.iter().any(|(k, _)| *k == key) {
            cache.push((key.clone(), load(&path)));
        }
        let tok = &cache.iter().find(|(k, _)| *k == key).unwrap().1;
        assert_eq!(tok.encode(prompt, true, true), want, "{model}: {prompt:?}");
        checked += 1;
    }
    println!("greedy.json: {checked} prompts checked");
    assert!(checked > 0, "no reference prompt could be checked");
}

fn stories() -> Option<Tokenizer> {
    let shared = shared_dir()?;
    Some(load(&shared.join("models/stories260K.F32.gguf")))
}

fn smollm2() -> Option<Tokenizer> {
    shared_dir()?;
    Some(load(&smollm2_path()?))
}

#[test]
fn special_tokens_are_parsed_only_when_asked() {
    let Some(tok) = smollm2() else { return };
    let text = "<|im_start|>user\nhi<|im_end|>";
    let parsed = tok.encode(text, false, true);
    assert_eq!(parsed.first(), Some(&1), "{parsed:?}");
    assert_eq!(parsed.last(), Some(&2), "{parsed:?}");
    assert_eq!(parsed.iter().filter(|&&t| t == 1 || t == 2).count(), 2);

    let literal = tok.encode(text, false, false);
    assert!(
        !literal.contains(&1) && !literal.contains(&2),
        "{literal:?}"
    );
    // Rendered as control tokens only on request; the text survives either way.
    assert_eq!(tok.decode(&literal), text);
    assert_eq!(tok.decode(&parsed), "user\nhi");
    assert_eq!(tok.token_piece(1, true), b"<|im_start|>");
    assert!(tok.is_eog(2));
    assert!(!tok.is_eog(1));
}

#[test]
fn add_bos_follows_model_rules() {
    if let Some(tok) = stories() {
        assert!(tok.add_bos());
        assert_eq!(tok.bos(), Some(1));
        assert_eq!(tok.eos(), Some(2));
        let ids = tok.encode("Once upon a time", true, false);
        assert_eq!(ids.first(), Some(&1));
        assert_ne!(
            tok.encode("Once upon a time", false, false).first(),
            Some(&1)
        );
        // SPM: an empty prompt with add_special is just BOS.
        assert_eq!(tok.encode("", true, false), vec![1]);
        assert!(tok.is_eog(2));
    }
    if let Some(tok) = smollm2() {
        assert!(!tok.add_bos());
        let ids = tok.encode("The capital of France is", true, true);
        assert_eq!(ids, tok.encode("The capital of France is", false, false));
        assert!(tok.encode("", true, true).is_empty());
    }
}

#[test]
fn stream_decoder_holds_back_split_characters() {
    let Some(tok) = stories() else { return };
    let text = "日本 and ü";
    let ids = tok.encode(text, false, false);
    // The tiny vocabulary has no CJK tokens: the characters arrive as
    // <0xXX> byte tokens, one byte at a time.
    let byte_tokens = ids
        .iter()
        .filter(|&&id| tok.token_text(id).is_some_and(|t| t.starts_with("<0x")))
        .count();
    assert!(byte_tokens >= 6, "{ids:?}");

    let mut dec = webgguf::tokenizer::StreamDecoder::new();
    let mut pieces = Vec::new();
    for &id in &ids {
        pieces.push(dec.push(&tok, id));
    }
    pieces.push(dec.finish());
    for p in &pieces {
        assert!(!p.contains('\u{FFFD}'), "piece {p:?} of {pieces:?}");
    }
    assert!(pieces.iter().any(String::is_empty), "nothing was held back");
    let joined = pieces.concat();
    // The SPM space prefix stays in streamed output.
    assert_eq!(joined, format!(" {text}"));
    assert_eq!(joined, tok.decode(&ids));
    assert_eq!(tok.detokenize(&ids, false, false), text);
}

#[test]
fn stream_decoder_flushes_unfinished_characters() {
    let Some(tok) = stories() else { return };
    let first_byte = (0..tok.vocab_size() as u32)
        .find(|&id| tok.token_text(id) == Some("<0xE6>"))
        .expect("byte token");
    let mut dec = webgguf::tokenizer::StreamDecoder::new();
    assert_eq!(dec.push(&tok, first_byte), "");
    assert_eq!(dec.finish(), "\u{FFFD}");
    assert_eq!(dec.finish(), "");
    // A byte that cannot continue the pending one releases it as U+FFFD.
    assert_eq!(dec.push(&tok, first_byte), "");
    let a = tok.encode("a", false, false);
    let out: String = a.iter().map(|&id| dec.push(&tok, id)).collect();
    assert_eq!(out, "\u{FFFD} a");
}

#[test]
fn odd_inputs_do_not_panic() {
    let toks: Vec<Tokenizer> = [stories(), smollm2()].into_iter().flatten().collect();
    let long_word = "a".repeat(50_000);
    let long_space = " \n\t".repeat(20_000);
    let long_digits = "1".repeat(30_000);
    let inputs = [
        "",
        "\u{0301}",
        "\u{0301}\u{0308}\u{20DD}",
        "\0",
        "a\0b\0",
        "\u{FEFF}\u{200B}\u{10FFFF}\u{E000}",
        "<|im_start|><|im_start|",
        "<0xZZ><0x>",
        "'s'S'll'",
        long_word.as_str(),
        long_space.as_str(),
        long_digits.as_str(),
    ];
    for tok in &toks {
        for text in inputs {
            for (a, p) in [(false, false), (true, true)] {
                let ids = tok.encode(text, a, p);
                assert!(ids.iter().all(|&id| (id as usize) < tok.vocab_size()));
                let _ = tok.decode(&ids);
                let _ = tok.detokenize(&ids, true, true);
            }
        }
        let n = tok.vocab_size() as u32;
        for id in [n, n + 1, u32::MAX] {
            assert_eq!(tok.token_text(id), None);
            assert!(tok.token_bytes(id).is_empty());
            assert!(!tok.is_eog(id));
        }
        assert_eq!(tok.decode(&[n, u32::MAX]), "");
        let mut dec = webgguf::tokenizer::StreamDecoder::new();
        assert_eq!(dec.push(tok, u32::MAX), "");
        assert_eq!(dec.finish(), "");
        // Every token decodes without trouble.
        for id in 0..n {
            let _ = tok.token_piece(id, true);
        }
    }
}

#[test]
fn tokenizing_a_long_prompt_is_fast() {
    let Some(tok) = smollm2() else { return };
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(50);
    let ids = tok.encode(&text, true, true);
    assert!(ids.len() >= 500, "{}", ids.len());
    let runs = 20;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        std::hint::black_box(tok.encode(std::hint::black_box(&text), true, true));
    }
    let per = start.elapsed() / runs;
    println!("{} tokens in {per:?}", ids.len());
    // Generous bound: a shared CI core, unoptimised dependencies.
    assert!(per.as_millis() < 50, "{per:?}");
}

/// Random text from a deliberately awkward alphabet, deterministic per seed.
fn random_text(seed: &mut u64, len: usize) -> String {
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "é",
        "ß",
        "日",
        "本",
        "語",
        "한",
        "ä",
        "\u{0301}",
        "\u{200D}",
        "🦙",
        "😶\u{200D}🌫\u{FE0F}",
        "0",
        "7",
        "٣",
        "½",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\u{3000}",
        "\u{A0}",
        "'",
        "'s",
        "'LL",
        "!",
        "?",
        "...",
        "$",
        "~",
        "`",
        "<",
        ">",
        "|",
        "<s",
        "</",
        "<|im_",
        "\0",
        "\u{7F}",
        "\u{FFFD}",
        "\u{E000}",
        "\u{10FFFF}",
        "ー",
        "ก",
        "\u{0E31}",
    ];
    let mut s = String::new();
    for _ in 0..len {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        s.push_str(PIECES[(*seed % PIECES.len() as u64) as usize]);
    }
    s
}

/// Every vocabulary here can spell any byte, so plain-text encoding must
/// decode back to the input exactly (plus the SPM space prefix).
#[test]
fn random_text_round_trips() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("reference/tokenizer");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    paths.sort();
    paths.push(shared.join("models/stories260K.F32.gguf"));
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for path in paths {
        let tok = load(&path);
        // SPM vocabularies put a space in front of the text.
        let prefix = if tok.decode(&tok.encode("a", false, false)) == " a" {
            " "
        } else {
            ""
        };
        for case in 0..60 {
            let text = random_text(&mut seed, 1 + case % 40);
            let ids = tok.encode(&text, false, false);
            assert!(ids.iter().all(|&id| (id as usize) < tok.vocab_size()));
            assert_eq!(
                tok.decode(&ids),
                format!("{prefix}{text}"),
                "{}: {ids:?}",
                path.display()
            );
            let with_special = tok.encode(&text, true, true);
            assert!(with_special
                .iter()
                .all(|&id| (id as usize) < tok.vocab_size()));
        }
    }
}
