//! Pre-tokenization for byte-level BPE: cutting text into words before any
//! merge is applied, with the same boundaries llama.cpp produces.
//!
//! llama.cpp describes each pre-tokenizer as a list of regexes applied in
//! turn, each one splitting every chunk the previous ones left (matches and
//! the gaps between them both become chunks). Two families of regex have
//! hand-written matchers there (GPT-2's and Llama 3's); the rest run through
//! `std::regex` on a "collapsed" copy of the text in which every non-ASCII
//! code point is replaced by a stand-in for its coarse category and every
//! non-ASCII space by U+000B. The regexes in question are all of the shape
//! `\s?[class]+`, `[class]{n}` or `\s+$`, so rather than pulling a regex
//! engine into the wasm build they are matched directly here, with class
//! membership decided the way the collapsed text would decide it.

use super::unicode::{flags_of, Class, Flags};

/// Which of llama.cpp's regex lists a vocabulary uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PreKind {
    /// llama.cpp's fallback list when `tokenizer.ggml.pre` is absent or "default".
    Default,
    Gpt2,
    /// Llama 3's regex (digits in groups of up to three).
    Llama3,
    /// Llama 3's regex with single digits (Qwen2 and relatives). llama.cpp
    /// runs this one through `std::regex` on the collapsed text rather than
    /// a hand-written matcher, but every class test (`\s`, `\p{L}`,
    /// `\p{N}`, `[\r\n]`) answers the same in both views, so the Llama 3
    /// matcher yields the same words.
    Qwen2,
    /// Single digits, then GPT-2 (StarCoder, SmolLM, ...).
    StarCoder,
    Falcon,
    DeepseekLlm,
    DeepseekCoder,
}

/// One code point with its classification, computed once per fragment.
#[derive(Clone, Copy)]
struct Cp {
    c: u32,
    flags: Flags,
}

impl Cp {
    /// `\s` in the regexes: White_Space, which the collapsed text keeps for
    /// ASCII and turns into U+000B for everything else.
    fn ws(self) -> bool {
        self.flags.whitespace
    }
    fn letter(self) -> bool {
        self.flags.is_letter()
    }
    fn number(self) -> bool {
        self.flags.is_number()
    }
    /// The code point a literal character class compares against: llama.cpp
    /// folds non-ASCII whitespace to U+000B before running such regexes.
    fn literal(self) -> u32 {
        if self.c >= 0x80 && self.flags.whitespace {
            0x0B
        } else {
            self.c
        }
    }
}

/// A character class as one of the simple regexes uses it.
#[derive(Clone, Debug)]
enum CharSet {
    /// `\p{..}` classes plus ASCII extras, as seen through the collapsed
    /// text: whitespace never matches a category.
    Classes {
        classes: &'static [Class],
        ascii_extra: &'static str,
    },
    /// A literal `[...]` class: sorted inclusive code point ranges.
    Ranges(Vec<(u32, u32)>),
    Whitespace,
}

impl CharSet {
    fn ranges(spec: &str) -> CharSet {
        let chars: Vec<char> = spec.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if i + 2 < chars.len() && chars[i + 1] == '-' {
                out.push((chars[i] as u32, chars[i + 2] as u32));
                i += 3;
            } else {
                out.push((chars[i] as u32, chars[i] as u32));
                i += 1;
            }
        }
        out.sort_unstable();
        // Merge overlaps so that membership needs only the nearest range.
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(out.len());
        for (lo, hi) in out {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        CharSet::Ranges(merged)
    }

    fn contains(&self, cp: Cp) -> bool {
        match self {
            CharSet::Classes {
                classes,
                ascii_extra,
            } => {
                (!cp.ws() && classes.contains(&cp.flags.class))
                    || (cp.c < 0x80 && ascii_extra.as_bytes().contains(&(cp.c as u8)))
            }
            CharSet::Ranges(ranges) => {
                let c = cp.literal();
                let i = ranges.partition_point(|&(lo, _)| lo <= c);
                i > 0 && c <= ranges[i - 1].1
            }
            CharSet::Whitespace => cp.ws(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Repeat {
    One,
    Three,
    OneOrMore,
}

#[derive(Clone, Debug)]
enum Step {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
    Gpt2,
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
    ///  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    Llama3 { max_digits: usize },
    /// `\s?` (when `ws_prefix`) followed by the class repeated.
    Run {
        ws_prefix: bool,
        set: CharSet,
        repeat: Repeat,
    },
    /// `set+$`: the maximal run of `set` that ends the chunk.
    TrailingRun(CharSet),
}

const PUNCT: &[Class] = &[Class::Punctuation];
const LETTER: &[Class] = &[Class::Letter];
const NUMBER: &[Class] = &[Class::Number];

/// The letters DeepSeek LLM's first word regex accepts (from its
/// tokenizer.json, as llama.cpp lists it). Code points with a canonical
/// singleton decomposition (OHM SIGN, KELVIN SIGN, some Greek) are escaped:
/// Unicode normalization in an editor or clipboard would silently swap them
/// for their equivalents and change the ranges.
const DEEPSEEK_LETTERS: &str = "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u{1F7D}ᾀ-ᾴᾶ-ᾼ\u{1FBE}ῂ-ῄῆ-ῌῐ-\u{1FD3}ῖ-\u{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u{2126}ℨ\u{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃";
const DEEPSEEK_PUNCT: &str = "!-/:-~！-／：-～‘-‟　-。";
const CJK_HANGUL: &str = "一-龥ࠀ-一가-퟿";

fn run(ws_prefix: bool, set: CharSet, repeat: Repeat) -> Step {
    Step::Run {
        ws_prefix,
        set,
        repeat,
    }
}

fn classes(classes: &'static [Class], ascii_extra: &'static str) -> CharSet {
    CharSet::Classes {
        classes,
        ascii_extra,
    }
}

/// A compiled pre-tokenizer: the steps of one of llama.cpp's regex lists.
#[derive(Clone, Debug)]
pub(crate) struct PreTokenizer {
    steps: Vec<Step>,
}

impl PreTokenizer {
    pub fn new(kind: PreKind) -> PreTokenizer {
        use Repeat::*;
        let steps = match kind {
            PreKind::Default => vec![
                run(false, classes(PUNCT, "$+<=>^~|"), OneOrMore),
                Step::Gpt2,
                run(false, classes(NUMBER, ""), OneOrMore),
                run(false, CharSet::ranges("0-9"), Three),
            ],
            PreKind::Gpt2 => vec![Step::Gpt2],
            PreKind::Llama3 => vec![Step::Llama3 { max_digits: 3 }],
            PreKind::Qwen2 => vec![Step::Llama3 { max_digits: 1 }],
            PreKind::StarCoder => vec![run(false, classes(NUMBER, ""), One), Step::Gpt2],
            PreKind::Falcon => vec![
                run(false, classes(PUNCT, "$+<=>^~|`"), OneOrMore),
                Step::Gpt2,
                run(false, CharSet::ranges("0-9"), Three),
            ],
            PreKind::DeepseekLlm => vec![
                run(false, CharSet::ranges("\r\n"), One),
                run(true, CharSet::ranges(DEEPSEEK_LETTERS), OneOrMore),
                run(true, CharSet::ranges(DEEPSEEK_PUNCT), OneOrMore),
                Step::TrailingRun(CharSet::Whitespace),
                run(false, CharSet::ranges(CJK_HANGUL), OneOrMore),
                run(false, classes(NUMBER, ""), OneOrMore),
            ],
            PreKind::DeepseekCoder => vec![
                run(false, CharSet::ranges("\r\n"), One),
                run(true, classes(LETTER, ""), OneOrMore),
                run(true, classes(PUNCT, ""), OneOrMore),
                run(false, CharSet::ranges(CJK_HANGUL), OneOrMore),
                run(false, classes(NUMBER, ""), One),
            ],
        };
        PreTokenizer { steps }
    }

    /// Cut `text` into words, appended to `words` in order. Every byte of
    /// `text` ends up in exactly one word.
    pub fn split<'t>(&self, text: &'t str, words: &mut Vec<&'t str>) {
        if text.is_empty() {
            return;
        }
        let mut cps = Vec::with_capacity(text.len());
        let mut byte_at = Vec::with_capacity(text.len() + 1);
        for (i, ch) in text.char_indices() {
            cps.push(Cp {
                c: ch as u32,
                flags: flags_of(ch),
            });
            byte_at.push(i);
        }
        byte_at.push(text.len());

        let mut chunks = vec![(0usize, cps.len())];
        let mut next = Vec::with_capacity(cps.len());
        for step in &self.steps {
            next.clear();
            for &(start, end) in &chunks {
                split_chunk(step, &cps[..end], start, &mut next);
            }
            std::mem::swap(&mut chunks, &mut next);
        }
        words.extend(chunks.iter().map(|&(s, e)| &text[byte_at[s]..byte_at[e]]));
    }
}

/// Split `cps[start..]` (the chunk ends where the slice ends) by one step,
/// pushing the pieces as code point ranges.
fn split_chunk(step: &Step, cps: &[Cp], start: usize, out: &mut Vec<(usize, usize)>) {
    match step {
        Step::Gpt2 => cut_all(cps, start, out, gpt2_token),
        Step::Llama3 { max_digits } => cut_all(cps, start, out, |cps, pos| {
            llama3_token(cps, pos, *max_digits)
        }),
        Step::Run {
            ws_prefix,
            set,
            repeat,
        } => {
            let end = cps.len();
            let mut last = start;
            let mut pos = start;
            while pos < end {
                match match_run(cps, pos, *ws_prefix, set, *repeat) {
                    Some(m) => {
                        if pos > last {
                            out.push((last, pos));
                        }
                        out.push((pos, m));
                        last = m;
                        pos = m;
                    }
                    None => pos += 1,
                }
            }
            if last < end {
                out.push((last, end));
            }
        }
        Step::TrailingRun(set) => {
            let end = cps.len();
            let mut from = end;
            while from > start && set.contains(cps[from - 1]) {
                from -= 1;
            }
            if from > start {
                out.push((start, from));
            }
            if from < end {
                out.push((from, end));
            }
        }
    }
}

/// Apply a matcher that always consumes at least one code point, left to
/// right, until the chunk is used up.
fn cut_all(
    cps: &[Cp],
    start: usize,
    out: &mut Vec<(usize, usize)>,
    next_end: impl Fn(&[Cp], usize) -> usize,
) {
    let mut pos = start;
    while pos < cps.len() {
        // Guard against a matcher bug turning into an endless loop.
        let end = next_end(cps, pos).clamp(pos + 1, cps.len());
        out.push((pos, end));
        pos = end;
    }
}

/// Where the leftmost match of `\s?set{repeat}` starting exactly at `pos` ends.
fn match_run(
    cps: &[Cp],
    pos: usize,
    ws_prefix: bool,
    set: &CharSet,
    repeat: Repeat,
) -> Option<usize> {
    let body = |at: usize| -> Option<usize> {
        let hit = |i: usize| cps.get(i).is_some_and(|&cp| set.contains(cp));
        match repeat {
            Repeat::One => hit(at).then_some(at + 1),
            Repeat::Three => (hit(at) && hit(at + 1) && hit(at + 2)).then_some(at + 3),
            Repeat::OneOrMore => {
                if !hit(at) {
                    return None;
                }
                let mut e = at + 1;
                while hit(e) {
                    e += 1;
                }
                Some(e)
            }
        }
    };
    // `\s?` is greedy: take the space if the rest still matches after it.
    if ws_prefix && cps[pos].ws() {
        if let Some(e) = body(pos + 1) {
            return Some(e);
        }
    }
    body(pos)
}

fn at(cps: &[Cp], i: usize) -> Option<Cp> {
    cps.get(i).copied()
}

fn is_letter_at(cps: &[Cp], i: usize) -> bool {
    at(cps, i).is_some_and(Cp::letter)
}

fn is_number_at(cps: &[Cp], i: usize) -> bool {
    at(cps, i).is_some_and(Cp::number)
}

fn is_ws_at(cps: &[Cp], i: usize) -> bool {
    at(cps, i).is_some_and(Cp::ws)
}

/// `[^\s\p{L}\p{N}]`
fn is_other(cp: Cp) -> bool {
    !(cp.ws() || cp.letter() || cp.number())
}

fn is_other_at(cps: &[Cp], i: usize) -> bool {
    at(cps, i).is_some_and(is_other)
}

fn is_cr_or_lf_at(cps: &[Cp], i: usize) -> bool {
    at(cps, i).is_some_and(|cp| cp.c == '\r' as u32 || cp.c == '\n' as u32)
}

/// Length of an English contraction (`'s`, `'re`, ...) at `pos`, if any.
fn contraction(cps: &[Cp], pos: usize, fold_case: bool) -> Option<usize> {
    let ch = |i: usize| -> u32 {
        let c = at(cps, i).map_or(0, |cp| cp.c);
        // Only ASCII capitals lower-case onto the letters tested below.
        if fold_case && (b'A' as u32..=b'Z' as u32).contains(&c) {
            c + 32
        } else {
            c
        }
    };
    if ch(pos) != '\'' as u32 || pos + 1 >= cps.len() {
        return None;
    }
    let n1 = char::from_u32(ch(pos + 1))?;
    if matches!(n1, 's' | 't' | 'm' | 'd') {
        return Some(2);
    }
    if pos + 2 < cps.len() {
        let n2 = char::from_u32(ch(pos + 2))?;
        if matches!((n1, n2), ('r', 'e') | ('v', 'e') | ('l', 'l')) {
            return Some(3);
        }
    }
    None
}

/// Length of a whitespace run at `pos`, and the end of the last CR/LF in it.
fn whitespace_run(cps: &[Cp], pos: usize) -> (usize, Option<usize>) {
    let mut n = 0;
    let mut last_newline = None;
    while is_ws_at(cps, pos + n) {
        if is_cr_or_lf_at(cps, pos + n) {
            last_newline = Some(pos + n + 1);
        }
        n += 1;
    }
    (n, last_newline)
}

/// End of the GPT-2 regex's match at `pos` (a lone code point if none).
fn gpt2_token(cps: &[Cp], pos: usize) -> usize {
    if let Some(n) = contraction(cps, pos, false) {
        return pos + n;
    }
    let cp = cps[pos];
    // ` ?X+`: an optional leading space, judged by what follows it.
    let lead = usize::from(cp.c == ' ' as u32);
    let first = pos + lead;
    if is_letter_at(cps, first) {
        return run_end(cps, first, is_letter_at);
    }
    if is_number_at(cps, first) {
        return run_end(cps, first, is_number_at);
    }
    if is_other_at(cps, first) {
        return run_end(cps, first, is_other_at);
    }
    let (n_ws, _) = whitespace_run(cps, pos);
    // `\s+(?!\S)`: leave the last space to prefix the next word.
    if n_ws > 1 && pos + n_ws < cps.len() {
        return pos + n_ws - 1;
    }
    if n_ws > 0 {
        return pos + n_ws;
    }
    pos + 1
}

/// End of the Llama 3 regex's match at `pos`. Digit runs come out one group
/// of at most `max_digits` at a time; the next call continues the run.
fn llama3_token(cps: &[Cp], pos: usize, max_digits: usize) -> usize {
    if let Some(n) = contraction(cps, pos, true) {
        return pos + n;
    }
    let cp = cps[pos];
    let is_newline = cp.c == '\r' as u32 || cp.c == '\n' as u32;
    // `[^\r\n\p{L}\p{N}]?\p{L}+`
    if !is_newline && !cp.number() && (cp.letter() || is_letter_at(cps, pos + 1)) {
        return run_end(cps, pos + 1, is_letter_at);
    }
    // `\p{N}{1,max_digits}`
    if cp.number() {
        let mut e = pos + 1;
        while e - pos < max_digits && is_number_at(cps, e) {
            e += 1;
        }
        return e;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`. As in llama.cpp, a space that ends the
    // chunk also takes this branch (and becomes a word on its own).
    let lead = usize::from(cp.c == ' ' as u32);
    let first = pos + lead;
    if at(cps, first).is_none_or(is_other) {
        let mut e = run_end(cps, first, is_other_at);
        while is_cr_or_lf_at(cps, e) {
            e += 1;
        }
        return e;
    }
    let (n_ws, last_newline) = whitespace_run(cps, pos);
    // `\s*[\r\n]+`
    if let Some(e) = last_newline {
        return e;
    }
    // `\s+(?!\S)`
    if n_ws > 1 && pos + n_ws < cps.len() {
        return pos + n_ws - 1;
    }
    // `\s+`
    if n_ws > 0 {
        return pos + n_ws;
    }
    pos + 1
}

/// First index at or after `from` where `pred` fails.
fn run_end(cps: &[Cp], from: usize, pred: fn(&[Cp], usize) -> bool) -> usize {
    let mut e = from;
    while pred(cps, e) {
        e += 1;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(kind: PreKind, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        PreTokenizer::new(kind).split(text, &mut out);
        assert_eq!(out.concat(), text);
        out.into_iter().map(String::from).collect()
    }

    #[test]
    fn gpt2_splits_words_and_spaces() {
        assert_eq!(
            words(PreKind::Gpt2, "Hello world's  end!!\n"),
            ["Hello", " world", "'s", " ", " end", "!!", "\n"]
        );
    }

    #[test]
    fn llama3_groups_digits_and_newlines() {
        assert_eq!(
            words(PreKind::Llama3, "1234567 ab\n\n  x"),
            ["123", "456", "7", " ab", "\n\n", " ", " x"]
        );
        assert_eq!(words(PreKind::Qwen2, "123"), ["1", "2", "3"]);
    }

    #[test]
    fn literal_classes_are_well_formed() {
        for spec in [DEEPSEEK_LETTERS, DEEPSEEK_PUNCT, CJK_HANGUL] {
            let chars: Vec<char> = spec.chars().collect();
            for w in chars.windows(3).filter(|w| w[1] == '-') {
                assert!(w[0] <= w[2], "reversed range {}-{} in {spec}", w[0], w[2]);
            }
        }
        let letters = CharSet::ranges(DEEPSEEK_LETTERS);
        let cp = |c: char| Cp {
            c: c as u32,
            flags: flags_of(c),
        };
        let singletons = [
            '\u{212A}', '\u{2126}', '\u{1FBE}', '\u{1F7D}', '\u{1FD3}', '\u{1FDB}',
        ];
        for c in ['a', 'Z', 'ß'].into_iter().chain(singletons) {
            assert!(letters.contains(cp(c)), "{c:?}");
        }
        for c in ['_', '|', '\'', '[', '`', '{'] {
            assert!(!letters.contains(cp(c)), "{c:?}");
        }
    }

    #[test]
    fn trailing_whitespace_run() {
        assert_eq!(words(PreKind::DeepseekLlm, "ab  \n"), ["ab", "  ", "\n"]);
    }
}
