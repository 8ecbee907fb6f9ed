//! Text <-> token ids, behaving like llama.cpp's tokenizer (llama-vocab.cpp).
//!
//! Two vocabulary kinds are supported:
//! - SPM (`tokenizer.ggml.model = "llama"`): score-driven merges over
//!   characters, `▁` for spaces, `<0xXX>` byte fallback (`<unk>` for a byte
//!   the vocabulary cannot spell, where llama.cpp would abort), and a space
//!   prepended to the text when `add_space_prefix` (default true).
//! - BPE (`"gpt2"`): byte-level BPE with ranked merges, after a
//!   pre-tokenizer chosen by `tokenizer.ggml.pre`.
//!
//! Before either runs, special tokens are cut out of the text (llama.cpp's
//! `tokenizer_st_partition`): user-defined tokens always, control and
//! unknown tokens only when `parse_special` is set, longest first.
//!
//! Decoding choices (llama.cpp's `token_to_piece` with `special = false`,
//! which is what its generation examples print):
//! - `token_bytes` / `decode` / [`StreamDecoder`] give each token's piece
//!   as-is. In particular the space an SPM model put in front of the first
//!   word is kept, so a streamed generation concatenates exactly.
//!   [`Tokenizer::detokenize`] is llama.cpp's whole-sequence detokenizer,
//!   which drops that space (unless it removed a leading BOS, a llama.cpp
//!   quirk kept as is) and applies `clean_up_tokenization_spaces`.
//! - Control and unknown tokens contribute nothing unless asked for with
//!   [`Tokenizer::token_piece`]`(id, true)`; user-defined tokens always
//!   contribute their text.
//! - Ids outside the vocabulary contribute nothing.
//!
//! An unknown `tokenizer.ggml.pre` is an error, as in current llama.cpp:
//! silently using another regex gives subtly wrong ids. A missing one (old
//! conversions) selects llama.cpp's "default" regex list, as llama.cpp does.

mod bpe;
mod hash;
mod load;
mod pretok;
mod spm;
mod unicode;
mod unicode_table;

use crate::error::Result;
use crate::gguf::Gguf;
use hash::FxMap;

/// Token attribute bits, as llama.cpp derives them from `token_type`.
mod attr {
    pub const UNKNOWN: u16 = 1 << 0;
    pub const UNUSED: u16 = 1 << 1;
    pub const NORMAL: u16 = 1 << 2;
    pub const CONTROL: u16 = 1 << 3;
    pub const USER_DEFINED: u16 = 1 << 4;
    pub const BYTE: u16 = 1 << 5;
    pub const LSTRIP: u16 = 1 << 7;
    pub const RSTRIP: u16 = 1 << 8;
}

/// The SentencePiece stand-in for a space.
const SPM_SPACE: char = '\u{2581}';

#[derive(Debug, Clone)]
enum Model {
    Spm,
    Bpe(Box<bpe::Bpe>),
}

/// A vocabulary loaded from GGUF metadata, ready to encode and decode.
#[derive(Clone)]
pub struct Tokenizer {
    model: Model,
    texts: Vec<String>,
    scores: Vec<f32>,
    attrs: Vec<u16>,
    token_to_id: FxMap<String, u32>,
    /// SPM byte fallback: the token for each byte value.
    byte_tokens: [Option<u32>; 256],
    /// Control, user-defined and unknown tokens, longest text first.
    special: Vec<u32>,
    /// End-of-generation ids, sorted.
    eog: Vec<u32>,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    add_eos: bool,
    add_space_prefix: bool,
    clean_spaces: bool,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field(
                "model",
                &match self.model {
                    Model::Spm => "spm",
                    Model::Bpe(_) => "bpe",
                },
            )
            .field("vocab_size", &self.texts.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .field("add_bos", &self.add_bos)
            .field("add_eos", &self.add_eos)
            .field("eog", &self.eog)
            .finish()
    }
}

/// A piece of the input after special tokens have been cut out.
enum Fragment<'a> {
    Text(&'a str),
    Token(u32),
}

impl Tokenizer {
    /// Build the tokenizer from `tokenizer.ggml.*` metadata. All metadata is
    /// validated; inconsistencies are `Error::Tokenizer`.
    pub fn from_gguf(g: &Gguf) -> Result<Tokenizer> {
        load::from_gguf(g)
    }

    pub fn vocab_size(&self) -> usize {
        self.texts.len()
    }

    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// Whether `encode(.., add_special = true, ..)` starts with BOS: the
    /// `tokenizer.ggml.add_bos_token` key if present, else llama.cpp's
    /// default for the vocabulary (SPM and Llama-3-style BPE: yes).
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// Whether `encode(.., add_special = true, ..)` ends with EOS.
    pub fn add_eos(&self) -> bool {
        self.add_eos
    }

    /// Whether generating `id` should end generation (EOS, EOT, EOM and the
    /// end-of-turn style tokens llama.cpp recognises by their text).
    pub fn is_eog(&self, id: u32) -> bool {
        self.eog.binary_search(&id).is_ok()
    }

    /// Tokenize `text`. `add_special` adds BOS/EOS per [`Self::add_bos`] /
    /// [`Self::add_eos`]; `parse_special` lets the text of control tokens
    /// (e.g. `<|im_start|>`) stand for those tokens.
    pub fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_special && self.add_bos {
            out.extend(self.bos);
        }
        let fragments = self.partition(text, parse_special);
        match &self.model {
            Model::Spm => {
                let vocab = spm::SpmVocab {
                    token_to_id: &self.token_to_id,
                    scores: &self.scores,
                    byte_tokens: &self.byte_tokens,
                };
                // llama.cpp puts the space prefix in front of the text at the
                // start and after every special token.
                let mut after_special = true;
                let mut escaped = String::new();
                for fragment in fragments {
                    match fragment {
                        Fragment::Text(t) => {
                            escaped.clear();
                            if self.add_space_prefix && after_special {
                                escaped.push(SPM_SPACE);
                            }
                            escaped.extend(t.chars().map(|c| if c == ' ' { SPM_SPACE } else { c }));
                            spm::encode(&escaped, &vocab, &mut out);
                            after_special = false;
                        }
                        Fragment::Token(id) => {
                            out.push(id);
                            after_special = true;
                        }
                    }
                }
            }
            Model::Bpe(bpe) => {
                for fragment in fragments {
                    match fragment {
                        Fragment::Text(t) => bpe.encode(t, &self.token_to_id, &mut out),
                        Fragment::Token(id) => out.push(id),
                    }
                }
            }
        }
        if add_special && self.add_eos {
            out.extend(self.eos);
        }
        out
    }

    /// Cut special tokens out of `text`, longest token text first; every
    /// occurrence of a token splits the text fragments it appears in.
    fn partition<'a>(&self, text: &'a str, parse_special: bool) -> Vec<Fragment<'a>> {
        let mut fragments = Vec::new();
        if !text.is_empty() {
            fragments.push(Fragment::Text(text));
        }
        let c_isspace = |c: char| matches!(c, ' ' | '\t'..='\r');
        for &id in &self.special {
            let flags = self.attrs[id as usize];
            if !parse_special && flags & (attr::CONTROL | attr::UNKNOWN) != 0 {
                continue;
            }
            let needle = self.texts[id as usize].as_str();
            let present = fragments
                .iter()
                .any(|f| matches!(f, Fragment::Text(t) if t.contains(needle)));
            if needle.is_empty() || !present {
                continue;
            }
            let mut next = Vec::with_capacity(fragments.len() + 2);
            for fragment in fragments {
                let mut rest = match fragment {
                    Fragment::Text(t) => t,
                    token => {
                        next.push(token);
                        continue;
                    }
                };
                while let Some(at) = rest.find(needle) {
                    let mut left = &rest[..at];
                    if flags & attr::LSTRIP != 0 {
                        left = left.trim_end_matches(c_isspace);
                    }
                    if !left.is_empty() {
                        next.push(Fragment::Text(left));
                    }
                    next.push(Fragment::Token(id));
                    rest = &rest[at + needle.len()..];
                    if flags & attr::RSTRIP != 0 {
                        rest = rest.trim_start_matches(c_isspace);
                    }
                }
                if !rest.is_empty() {
                    next.push(Fragment::Text(rest));
                }
            }
            fragments = next;
        }
        fragments
    }

    /// The token's raw vocabulary string, or `None` for an unknown id.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.texts.get(id as usize).map(String::as_str)
    }

    /// The bytes `id` contributes to generated text: `token_piece(id, false)`.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        self.token_piece(id, false)
    }

    /// llama.cpp's `token_to_piece` (without stripping): SPM `▁` becomes a
    /// space, byte tokens become their byte, byte-level BPE text is mapped
    /// back to bytes. Control and unknown tokens give their text only when
    /// `special` is set; unused/undefined tokens and unknown ids give nothing.
    pub fn token_piece(&self, id: u32, special: bool) -> Vec<u8> {
        let (Some(text), Some(&flags)) = (self.texts.get(id as usize), self.attrs.get(id as usize))
        else {
            return Vec::new();
        };
        if flags & (attr::UNKNOWN | attr::CONTROL) != 0 && !special {
            return Vec::new();
        }
        if flags & (attr::UNKNOWN | attr::CONTROL | attr::USER_DEFINED) != 0 {
            return text.as_bytes().to_vec();
        }
        if flags & attr::NORMAL != 0 {
            return match self.model {
                Model::Spm => text.replace(SPM_SPACE, " ").into_bytes(),
                Model::Bpe(_) => byte_level_decode(text),
            };
        }
        if flags & attr::BYTE != 0 {
            return parse_byte_token(text).map(|b| vec![b]).unwrap_or_default();
        }
        Vec::new()
    }

    /// Concatenated `token_bytes`, decoded as UTF-8 with invalid sequences
    /// replaced. Equal to everything a [`StreamDecoder`] emits for `ids`.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            bytes.extend(self.token_bytes(id));
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// llama.cpp's `llama_detokenize`: drops the leading space an SPM model's
    /// space prefix introduced, optionally drops the BOS/EOS that
    /// `add_special` would add (`remove_special`), renders control tokens
    /// when `unparse_special`, and applies the vocabulary's
    /// `clean_up_tokenization_spaces` rules.
    pub fn detokenize(&self, ids: &[u32], remove_special: bool, unparse_special: bool) -> String {
        let mut ids = ids;
        let mut strip_space = self.add_space_prefix;
        if remove_special && self.add_bos && ids.first().is_some_and(|&f| Some(f) == self.bos) {
            strip_space = false;
            ids = &ids[1..];
        }
        if remove_special && self.add_eos && ids.last().is_some_and(|&l| Some(l) == self.eos) {
            ids = &ids[..ids.len() - 1];
        }
        let mut bytes = Vec::new();
        for &id in ids {
            let piece = self.token_piece(id, unparse_special);
            let piece = match piece.split_first() {
                Some((b' ', rest)) if strip_space => rest,
                _ => &piece[..],
            };
            bytes.extend_from_slice(piece);
            strip_space = false;
        }
        if self.clean_spaces {
            bytes = clean_up_spaces(&bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Map byte-level BPE text back to bytes. A character outside the GPT-2
/// alphabet cannot come from a real vocabulary; llama.cpp renders it as a
/// visible `[UNK_BYTE_0x..]` marker and so do we.
fn byte_level_decode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match unicode::char_to_byte(c) {
            Some(b) => out.push(b),
            None => {
                out.extend_from_slice(b"[UNK_BYTE_0x");
                for b in c.encode_utf8(&mut [0u8; 4]).bytes() {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
                out.extend_from_slice(text.as_bytes());
                out.push(b']');
            }
        }
    }
    out
}

/// The byte of a `<0xXX>` token.
fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// llama.cpp's `clean_up_tokenization_spaces` passes: no space before
/// `? ! . ,`, a lone `'` between spaces joins its neighbours, and no space
/// before `'s 'm 're 've`.
fn clean_up_spaces(text: &[u8]) -> Vec<u8> {
    // Pass 1: " ?" " !" " ." " ," lose the space.
    let mut a = Vec::with_capacity(text.len());
    for (i, &x) in text.iter().enumerate() {
        if i > 0 && text[i - 1] == b' ' && matches!(x, b'?' | b'!' | b'.' | b',') {
            a.pop();
        }
        a.push(x);
    }

    // Pass 2: " ' " becomes "'". The dropped following space no longer
    // counts as a space before the next character either.
    let mut src = a;
    let mut b = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        let x = src[i];
        if x == b'\'' && i > 0 && i + 1 < src.len() && src[i - 1] == b' ' && src[i + 1] == b' ' {
            b.pop();
            src[i + 1] = 0;
            b.push(x);
            i += 2;
            continue;
        }
        b.push(x);
        i += 1;
    }

    // Pass 3: " 's" " 'm" " 're" " 've" lose the space.
    let mut c = Vec::with_capacity(b.len());
    for (i, &x) in b.iter().enumerate() {
        if i > 0 && b[i - 1] == b' ' && x == b'\'' && i + 1 < b.len() {
            let x1 = b[i + 1];
            let x2 = b.get(i + 2).copied();
            let joins = matches!(x1, b's' | b'm')
                || (i + 2 < b.len() && matches!((x1, x2), (b'r', Some(b'e')) | (b'v', Some(b'e'))));
            if joins {
                c.pop();
            }
        }
        c.push(x);
    }
    c
}

/// Turns a stream of generated ids into text without ever splitting a
/// UTF-8 character: bytes of an incomplete character are held back until
/// the token completing it arrives. Byte sequences that can never become
/// valid are emitted as U+FFFD, so the concatenated output always equals
/// [`Tokenizer::decode`] of all ids pushed.
#[derive(Debug, Clone, Default)]
pub struct StreamDecoder {
    pending: Vec<u8>,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one token; returns the text that is now complete (maybe empty).
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> String {
        self.pending.extend(tok.token_bytes(id));
        let mut out = String::new();
        let mut done = 0;
        loop {
            match std::str::from_utf8(&self.pending[done..]) {
                Ok(s) => {
                    out.push_str(s);
                    done = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[done..done + valid]));
                    done += valid;
                    match e.error_len() {
                        // An incomplete character at the end: wait for more.
                        None => break,
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            done += bad;
                        }
                    }
                }
            }
        }
        self.pending.drain(..done);
        out
    }

    /// Flush whatever is held back (an unfinished character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}
