//! SentencePiece-style BPE (`tokenizer.ggml.model = "llama"`).
//!
//! The text (spaces already replaced by U+2581) starts as one symbol per
//! character. Repeatedly, the adjacent pair whose concatenation is a token
//! with the highest score is merged (leftmost on ties). Symbols that end up
//! not being tokens are spelled out as `<0xXX>` byte tokens.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::hash::FxMap;

#[derive(Clone, Copy)]
struct Symbol {
    /// Byte range within the text.
    start: usize,
    len: usize,
    prev: usize,
    next: usize,
}

const NONE: usize = usize::MAX;

struct Pair {
    score: f32,
    left: usize,
    right: usize,
    /// Byte length of the merged text, to recognise stale entries.
    len: usize,
}

impl PartialEq for Pair {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pair {}
impl PartialOrd for Pair {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pair {
    /// Max-heap order: higher score first, then the leftmost pair. Scores are
    /// sanitized at load time (no NaN, no -0.0), so `total_cmp` agrees with
    /// ordinary float comparison.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// What the merge loop needs from the vocabulary.
pub(crate) struct SpmVocab<'a> {
    pub token_to_id: &'a FxMap<String, u32>,
    pub scores: &'a [f32],
    /// Token for each byte value, used for characters that are not tokens.
    pub byte_tokens: &'a [Option<u32>; 256],
}

/// Tokenize `text` (already space-escaped), appending ids to `out`.
pub(crate) fn encode(text: &str, vocab: &SpmVocab, out: &mut Vec<u32>) {
    if text.is_empty() {
        return;
    }
    let mut syms: Vec<Symbol> = Vec::with_capacity(text.len());
    for (i, (start, ch)) in text.char_indices().enumerate() {
        syms.push(Symbol {
            start,
            len: ch.len_utf8(),
            prev: if i == 0 { NONE } else { i - 1 },
            next: i + 1,
        });
    }
    if let Some(last) = syms.last_mut() {
        last.next = NONE;
    }

    let mut queue = BinaryHeap::new();
    for i in 1..syms.len() {
        push_pair(text, vocab, &syms, &mut queue, i - 1, i);
    }
    while let Some(pair) = queue.pop() {
        let (l, r) = (syms[pair.left], syms[pair.right]);
        // Stale entry: one side was merged elsewhere since it was queued.
        if l.len == 0 || r.len == 0 || l.len + r.len != pair.len {
            continue;
        }
        let ls = &mut syms[pair.left];
        ls.len += r.len;
        ls.next = r.next;
        syms[pair.right].len = 0;
        if r.next != NONE {
            syms[r.next].prev = pair.left;
        }
        if l.prev != NONE {
            push_pair(text, vocab, &syms, &mut queue, l.prev, pair.left);
        }
        if r.next != NONE {
            push_pair(text, vocab, &syms, &mut queue, pair.left, r.next);
        }
    }

    let mut i = 0;
    while i != NONE {
        let s = syms[i];
        let piece = &text[s.start..s.start + s.len];
        match vocab.token_to_id.get(piece) {
            Some(&id) => out.push(id),
            // Only single characters can get here (merges always form
            // tokens), so llama.cpp's "undo the merge" step has nothing to
            // undo and the character goes straight to byte fallback.
            None => out.extend(piece.bytes().filter_map(|b| vocab.byte_tokens[b as usize])),
        }
        i = s.next;
    }
}

fn push_pair(
    text: &str,
    vocab: &SpmVocab,
    syms: &[Symbol],
    queue: &mut BinaryHeap<Pair>,
    left: usize,
    right: usize,
) {
    let (l, r) = (syms[left], syms[right]);
    let start = l.start;
    let end = r.start + r.len;
    let Some(&id) = vocab.token_to_id.get(&text[start..end]) else {
        return;
    };
    let Some(&score) = vocab.scores.get(id as usize) else {
        return;
    };
    queue.push(Pair {
        score,
        left,
        right,
        len: end - start,
    });
}
