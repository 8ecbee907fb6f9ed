//! Code point classification as llama.cpp's pre-tokenizers see it, and the
//! GPT-2 byte <-> character map used by byte-level BPE vocabularies.
//!
//! llama.cpp folds the Unicode general categories into eight coarse classes
//! plus a separate White_Space bit; the splitting rules in `pretok` are
//! written against exactly that view, so it is reproduced here rather than
//! using finer-grained categories.

use super::unicode_table::{RUN_CLASSES, RUN_STARTS};

/// Coarse general category. The discriminants are the values stored in
/// `unicode_table.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Class {
    Unassigned = 0,
    Number = 1,
    Letter = 2,
    Separator = 3,
    Mark = 4,
    Punctuation = 5,
    Symbol = 6,
    Control = 7,
}

impl Class {
    fn from_u8(v: u8) -> Class {
        match v {
            1 => Class::Number,
            2 => Class::Letter,
            3 => Class::Separator,
            4 => Class::Mark,
            5 => Class::Punctuation,
            6 => Class::Symbol,
            7 => Class::Control,
            _ => Class::Unassigned,
        }
    }
}

/// What the splitters need to know about one code point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flags {
    pub class: Class,
    pub whitespace: bool,
}

impl Flags {
    pub fn is_letter(self) -> bool {
        self.class == Class::Letter
    }
    pub fn is_number(self) -> bool {
        self.class == Class::Number
    }
}

pub(crate) fn class_of(cp: u32) -> Class {
    // Index of the last run starting at or before `cp`; run 0 starts at 0.
    let i = RUN_STARTS.partition_point(|&start| start <= cp);
    Class::from_u8(RUN_CLASSES[i.saturating_sub(1)])
}

/// Unicode's White_Space property (the set llama.cpp uses for `\s`).
pub(crate) fn is_whitespace(cp: u32) -> bool {
    matches!(
        cp,
        0x09..=0x0D
            | 0x20
            | 0x85
            | 0xA0
            | 0x1680
            | 0x2000..=0x200A
            | 0x2028
            | 0x2029
            | 0x202F
            | 0x205F
            | 0x3000
    )
}

pub(crate) fn flags_of(c: char) -> Flags {
    let cp = c as u32;
    Flags {
        class: class_of(cp),
        whitespace: is_whitespace(cp),
    }
}

/// Whether byte `b` stands for itself in the GPT-2 byte-level alphabet
/// (printable Latin-1 except the soft hyphen); every other byte is moved
/// to U+0100 and up so that no token contains whitespace or control bytes.
const fn is_self_mapped(b: u32) -> bool {
    (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
}

const fn build_byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut next = 0x100u32;
    let mut b = 0u32;
    while b < 256 {
        let cp = if is_self_mapped(b) {
            b
        } else {
            let cp = next;
            next += 1;
            cp
        };
        map[b as usize] = match char::from_u32(cp) {
            Some(c) => c,
            None => '\0',
        };
        b += 1;
    }
    map
}

/// The GPT-2 byte-to-unicode map.
pub(crate) static BYTE_TO_CHAR: [char; 256] = build_byte_to_char();

/// Number of bytes moved to U+0100 and up.
const N_REMAPPED: usize = 68;

const fn build_remapped() -> [u8; N_REMAPPED] {
    let mut out = [0u8; N_REMAPPED];
    let mut k = 0;
    let mut b = 0u32;
    while b < 256 {
        if !is_self_mapped(b) {
            out[k] = b as u8;
            k += 1;
        }
        b += 1;
    }
    out
}

/// `REMAPPED[k]` is the byte shown as U+0100 + k.
static REMAPPED: [u8; N_REMAPPED] = build_remapped();

/// Inverse of `BYTE_TO_CHAR`.
pub(crate) fn char_to_byte(c: char) -> Option<u8> {
    let cp = c as u32;
    if cp < 0x100 {
        return is_self_mapped(cp).then_some(cp as u8);
    }
    REMAPPED.get((cp - 0x100) as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_common_characters() {
        assert_eq!(class_of('a' as u32), Class::Letter);
        assert_eq!(class_of('Z' as u32), Class::Letter);
        assert_eq!(class_of('7' as u32), Class::Number);
        assert_eq!(class_of('!' as u32), Class::Punctuation);
        assert_eq!(class_of('$' as u32), Class::Symbol);
        assert_eq!(class_of(' ' as u32), Class::Separator);
        assert_eq!(class_of(0x0301), Class::Mark);
        assert_eq!(class_of('日' as u32), Class::Letter);
        assert_eq!(class_of(0), Class::Control);
        assert_eq!(class_of(0x10FFFF), Class::Unassigned);
        assert!(is_whitespace(0x3000));
        assert!(!is_whitespace(0x1C));
    }

    #[test]
    fn byte_map_round_trips() {
        for b in 0..=255u8 {
            assert_eq!(char_to_byte(BYTE_TO_CHAR[b as usize]), Some(b));
        }
        assert_eq!(BYTE_TO_CHAR[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_TO_CHAR[b'\n' as usize], 'Ċ');
        assert_eq!(char_to_byte('日'), None);
    }
}
