//! Dumps what `webgguf::tokenizer` makes of a GGUF vocabulary, as JSON, for
//! comparison with llama.cpp (see scripts/tokenizer_vs_llamacpp.py).
//!
//! Usage: tokenizer_dump MODEL.gguf < texts.json
//! where texts.json is a JSON array of strings. Prints one JSON object:
//! the vocabulary's special-token facts, every token's piece, and for each
//! text its ids (plain and with add_special/parse_special) and their
//! detokenizations.

use std::io::Read;

use serde_json::json;
use webgguf::gguf::Gguf;
use webgguf::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: tokenizer_dump MODEL.gguf < texts.json")?;
    let bytes = std::fs::read(&path)?;
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes)?)?;
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let texts: Vec<String> = serde_json::from_str(&input)?;

    let n = tok.vocab_size() as u32;
    let eog: Vec<u32> = (0..n).filter(|&id| tok.is_eog(id)).collect();
    let pieces: Vec<String> = (0..n)
        .map(|id| String::from_utf8_lossy(&tok.token_piece(id, false)).into_owned())
        .collect();
    let cases: Vec<_> = texts
        .iter()
        .map(|t| {
            let plain = tok.encode(t, false, false);
            let special = tok.encode(t, true, true);
            json!({
                "plain": plain,
                "special": special,
                "detok_plain": tok.detokenize(&plain, false, false),
                "detok_special_removed": tok.detokenize(&special, true, true),
                "detok_special_kept": tok.detokenize(&special, false, false),
            })
        })
        .collect();
    let out = json!({
        "bos": tok.bos(),
        "eos": tok.eos(),
        "add_bos": tok.add_bos(),
        "add_eos": tok.add_eos(),
        "eog": eog,
        "pieces": pieces,
        "cases": cases,
    });
    println!("{out}");
    Ok(())
}
