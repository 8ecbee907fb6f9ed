//! Constrained decoding: llguidance turns a JSON schema (or a Lark grammar)
//! into the set of tokens allowed at each step, which the sampler applies
//! as a mask ([`crate::sampler::Extras::mask`]).
//!
//! llguidance needs the vocabulary as bytes in a token trie. We build it
//! from our tokenizer: each token's bytes as it appears in generated text;
//! control and other tokens that produce no text are named with toktrie's
//! special-token marker (0xFF), so a grammar never spells text with them.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};
use llguidance::{Matcher, ParserFactory};

use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// What the output must match.
#[derive(Debug, Clone)]
pub enum GrammarSpec {
    /// Any JSON object (OpenAI's `json_object`).
    JsonObject,
    /// A JSON schema (OpenAI's `json_schema`).
    JsonSchema(serde_json::Value),
    /// A Lark grammar in llguidance's dialect.
    Lark(String),
}

/// The per-model part: the token trie and llguidance's parser factory
/// (slow to build, so built once per model and shared by requests).
pub struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    pub fn new(tok: &Tokenizer) -> Result<Grammars> {
        let n = tok.vocab_size();
        let words: Vec<Vec<u8>> = (0..n as u32)
            .map(|id| {
                let b = tok.token_bytes(id);
                if b.is_empty() {
                    let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    w.extend_from_slice(tok.token_text(id).unwrap_or("").as_bytes());
                    w
                } else {
                    b
                }
            })
            .collect();
        let eos = tok
            .eos()
            .or_else(|| (0..n as u32).find(|&i| tok.is_eog(i)))
            .ok_or_else(|| {
                Error::Unsupported("constrained output needs an end-of-generation token".into())
            })?;
        let info = TokRxInfo {
            vocab_size: n as u32,
            tok_eos: eos,
            tok_bos: tok.bos(),
            tok_pad: None,
            tok_unk: None,
            tok_end_of_turn: None,
        };
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| Error::InvalidArgument(format!("grammar setup: {e}")))?;
        // Warnings go nowhere (a browser has no stderr worth writing to).
        factory.set_stderr_log_level(0);
        Ok(Grammars { factory })
    }

    /// A fresh matcher for `spec`; a schema llguidance cannot compile is
    /// an `InvalidArgument` naming why.
    pub fn constraint(&self, spec: &GrammarSpec) -> Result<Constraint> {
        let g = match spec {
            GrammarSpec::JsonObject => {
                TopLevelGrammar::from_json_schema(compact(serde_json::json!({"type": "object"})))
            }
            GrammarSpec::JsonSchema(s) => TopLevelGrammar::from_json_schema(compact(s.clone())),
            GrammarSpec::Lark(s) => TopLevelGrammar::from_lark(s.clone()),
        };
        let parser = self
            .factory
            .create_parser(g)
            .map_err(|e| Error::InvalidArgument(format!("the schema or grammar: {e}")))?;
        Ok(Constraint {
            matcher: Matcher::new(Ok(parser)),
            ms: 0.0,
        })
    }
}

/// One generation's grammar state.
pub struct Constraint {
    matcher: Matcher,
    /// Milliseconds spent computing masks and advancing the parser.
    pub ms: f64,
}

impl Constraint {
    /// The tokens allowed next, as bits in 32-bit words (vocab/32 rounded up);
    /// only end-of-generation once the grammar is complete.
    pub fn mask(&mut self) -> Result<Vec<u32>> {
        let v = self.matcher.compute_mask_or_eos().map_err(grammar_error)?;
        Ok(v.as_slice().to_vec())
    }

    pub fn consume(&mut self, id: u32) -> Result<()> {
        self.matcher.consume_token(id).map_err(grammar_error)
    }

    /// The grammar is complete: nothing but end-of-generation may follow.
    pub fn is_stopped(&self) -> bool {
        self.matcher.is_stopped()
    }
}

/// JSON without free whitespace (`{"a": 1, "b": [2, 3]}`) unless the schema
/// says otherwise in llguidance's `x-guidance`: with whitespace allowed
/// between tokens, a small model can pad with newlines until it runs out
/// of tokens instead of closing the object.
fn compact(mut schema: serde_json::Value) -> serde_json::Value {
    if let Some(o) = schema.as_object_mut() {
        o.entry("x-guidance").or_insert_with(|| {
            serde_json::json!({
                "whitespace_flexible": false,
                "item_separator": ", ",
                "key_separator": ": ",
            })
        });
    }
    schema
}

fn grammar_error(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("constrained decoding failed: {e}"))
}
