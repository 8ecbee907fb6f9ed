//! Byte-level BPE (`tokenizer.ggml.model = "gpt2"`).
//!
//! Each pre-tokenized word starts as one symbol per byte (each byte shown as
//! its GPT-2 stand-in character); the adjacent pair with the lowest merge
//! rank is merged, leftmost first on ties, until no ranked pair remains.
//!
//! Strings are interned as "pieces" so the hot loop hashes integer pairs:
//! piece ids below the vocabulary size are the token ids themselves, and
//! merge halves or results that are not tokens get ids above it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::hash::FxMap;
use super::pretok::{PreKind, PreTokenizer};
use super::unicode::BYTE_TO_CHAR;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub(crate) struct Bpe {
    pretok: PreTokenizer,
    /// Llama 3 style: a word that is already a token skips merging.
    ignore_merges: bool,
    /// Piece of the one-character string standing for each byte.
    byte_piece: [u32; 256],
    /// (left piece, right piece) -> (rank, merged piece).
    merges: FxMap<(u32, u32), (u32, u32)>,
    n_tokens: u32,
}

#[derive(Clone, Copy)]
struct Symbol {
    piece: u32,
    /// Byte range within the word.
    start: usize,
    len: usize,
    prev: usize,
    next: usize,
}

const NONE: usize = usize::MAX;

impl Bpe {
    /// `vocab` maps token text to id; `merges` is `tokenizer.ggml.merges`
    /// (one "left right" string per rank, best first).
    pub fn new(
        kind: PreKind,
        ignore_merges: bool,
        vocab: &FxMap<String, u32>,
        n_tokens: u32,
        merges: &[&str],
    ) -> Result<Bpe> {
        let mut extra: FxMap<String, u32> = FxMap::default();
        let mut next_id = n_tokens;
        let mut intern = |s: &str| -> Result<u32> {
            if let Some(&id) = vocab.get(s) {
                return Ok(id);
            }
            if let Some(&id) = extra.get(s) {
                return Ok(id);
            }
            let id = next_id;
            next_id = next_id
                .checked_add(1)
                .ok_or_else(|| Error::Tokenizer("too many distinct BPE merge pieces".into()))?;
            extra.insert(s.to_owned(), id);
            Ok(id)
        };

        let mut byte_piece = [0u32; 256];
        for (b, piece) in byte_piece.iter_mut().enumerate() {
            *piece = intern(BYTE_TO_CHAR[b].encode_utf8(&mut [0u8; 4]))?;
        }

        let mut table: FxMap<(u32, u32), (u32, u32)> = FxMap::default();
        table.reserve(merges.len());
        let mut joined = String::new();
        for (rank, merge) in merges.iter().enumerate() {
            // llama.cpp splits at the first space after the first byte, so a
            // left half may itself start with a space. A line with no
            // separator can never match a symbol pair, so it is skipped.
            let after_first = merge.as_bytes().get(1..).unwrap_or_default();
            let Some(sep) = after_first.iter().position(|&b| b == b' ').map(|i| i + 1) else {
                continue;
            };
            let (left, right) = (&merge[..sep], &merge[sep + 1..]);
            if left.is_empty() || right.is_empty() {
                continue;
            }
            let rank =
                u32::try_from(rank).map_err(|_| Error::Tokenizer("too many BPE merges".into()))?;
            let l = intern(left)?;
            let r = intern(right)?;
            joined.clear();
            joined.push_str(left);
            joined.push_str(right);
            let m = intern(&joined)?;
            // The first (best-ranked) occurrence of a pair wins.
            table.entry((l, r)).or_insert((rank, m));
        }

        Ok(Bpe {
            pretok: PreTokenizer::new(kind),
            ignore_merges,
            byte_piece,
            merges: table,
            n_tokens,
        })
    }

    /// Tokenize one raw-text fragment, appending ids to `out`.
    pub fn encode(&self, text: &str, vocab: &FxMap<String, u32>, out: &mut Vec<u32>) {
        let mut words = Vec::new();
        self.pretok.split(text, &mut words);
        let mut scratch = Scratch::default();
        for word in words {
            self.encode_word(word.as_bytes(), vocab, &mut scratch, out);
        }
    }

    fn encode_word(
        &self,
        word: &[u8],
        vocab: &FxMap<String, u32>,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) {
        if word.is_empty() {
            return;
        }
        if self.ignore_merges {
            byte_encode(word, &mut scratch.text);
            if let Some(&id) = vocab.get(scratch.text.as_str()) {
                out.push(id);
                return;
            }
        }

        let syms = &mut scratch.symbols;
        syms.clear();
        let n = word.len();
        syms.extend(word.iter().enumerate().map(|(i, &b)| Symbol {
            piece: self.byte_piece[b as usize],
            start: i,
            len: 1,
            prev: if i == 0 { NONE } else { i - 1 },
            next: if i + 1 == n { NONE } else { i + 1 },
        }));

        let queue = &mut scratch.queue;
        queue.clear();
        for i in 1..n {
            self.push_pair(syms, queue, i - 1, i);
        }
        while let Some(Reverse((_, left, right, lp, rp))) = queue.pop() {
            let (l, r) = (syms[left], syms[right]);
            // Stale entry: one side has been merged into something else since.
            if l.len == 0 || r.len == 0 || l.piece != lp || r.piece != rp {
                continue;
            }
            let Some(&(_, merged)) = self.merges.get(&(lp, rp)) else {
                continue;
            };
            let ls = &mut syms[left];
            ls.piece = merged;
            ls.len += r.len;
            ls.next = r.next;
            syms[right].len = 0;
            if r.next != NONE {
                syms[r.next].prev = left;
            }
            if l.prev != NONE {
                self.push_pair(syms, queue, l.prev, left);
            }
            if r.next != NONE {
                self.push_pair(syms, queue, left, r.next);
            }
        }

        let mut i = 0;
        while i != NONE {
            let s = syms[i];
            if s.piece < self.n_tokens {
                out.push(s.piece);
            } else {
                // Not a token: llama.cpp looks each byte of the symbol's
                // text up as a one-byte token, and only ASCII can be one.
                let bytes = &word[s.start..s.start + s.len];
                byte_encode(bytes, &mut scratch.text);
                for c in scratch.text.chars().filter(char::is_ascii) {
                    if let Some(&id) = vocab.get(c.encode_utf8(&mut [0u8; 4]) as &str) {
                        out.push(id);
                    }
                }
            }
            i = s.next;
        }
    }

    fn push_pair(&self, syms: &[Symbol], queue: &mut Queue, left: usize, right: usize) {
        let (lp, rp) = (syms[left].piece, syms[right].piece);
        if let Some(&(rank, _)) = self.merges.get(&(lp, rp)) {
            queue.push(Reverse((rank, left, right, lp, rp)));
        }
    }
}

/// Lowest rank first, then leftmost; the pieces identify stale entries.
type Queue = BinaryHeap<Reverse<(u32, usize, usize, u32, u32)>>;

#[derive(Default)]
struct Scratch {
    symbols: Vec<Symbol>,
    queue: Queue,
    text: String,
}

/// The GPT-2 byte-level spelling of `bytes`, written into `out`.
pub(crate) fn byte_encode(bytes: &[u8], out: &mut String) {
    out.clear();
    out.extend(bytes.iter().map(|&b| BYTE_TO_CHAR[b as usize]));
}
