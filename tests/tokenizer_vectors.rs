//! Tokenizer checks against llama.cpp's reference outputs in shared/.
//!
//! The vector files come from llama.cpp's test-tokenizer-0: cases in `.inp`
//! are separated by "\n__ggml_vocab_test__\n" and line i of `.out` holds the
//! ids llama.cpp produced for case i (add_special = false,
//! parse_special = false).

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
