//! Building a [`Tokenizer`] from GGUF metadata, with llama.cpp's defaults
//! and its text-based detection of special tokens.

use super::hash::FxMap;
use super::pretok::PreKind;
use super::{attr, bpe::Bpe, Model, Tokenizer};
use crate::error::{Error, Result};
use crate::gguf::Gguf;

const KEY_MODEL: &str = "tokenizer.ggml.model";
const KEY_PRE: &str = "tokenizer.ggml.pre";
const KEY_TOKENS: &str = "tokenizer.ggml.tokens";
const KEY_SCORES: &str = "tokenizer.ggml.scores";
const KEY_TYPES: &str = "tokenizer.ggml.token_type";
const KEY_MERGES: &str = "tokenizer.ggml.merges";

fn err(msg: impl Into<String>) -> Error {
    Error::Tokenizer(msg.into())
}

/// Per-`tokenizer.ggml.pre` settings for byte-level BPE vocabularies.
struct PreConfig {
    kind: PreKind,
    ignore_merges: bool,
    add_bos: bool,
    clean_spaces: bool,
}

/// llama.cpp's table of pre-tokenizer names, restricted to the regex
/// families implemented in `pretok`.
fn pre_config(name: Option<&str>) -> Option<PreConfig> {
    let cfg = |kind, ignore_merges, add_bos, clean_spaces| PreConfig {
        kind,
        ignore_merges,
        add_bos,
        clean_spaces,
    };
    Some(match name.unwrap_or("default") {
        "" | "default" => cfg(PreKind::Default, false, false, true),
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" => cfg(PreKind::Llama3, true, true, true),
        "dbrx" | "smaug-bpe" => cfg(PreKind::Llama3, false, false, true),
        "deepseek-llm" => cfg(PreKind::DeepseekLlm, false, false, false),
        "deepseek-coder" => cfg(PreKind::DeepseekCoder, false, false, false),
        "falcon" => cfg(PreKind::Falcon, false, false, true),
        "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es" | "jina-v2-de"
        | "a.x-4.0" | "mellum" | "modern-bert" | "mpt" | "olmo" | "jais" | "exaone4"
        | "jina-v1-en" | "jina-v2-code" | "roberta-bpe" => cfg(PreKind::Gpt2, false, false, true),
        "trillion" | "granite-docling" => cfg(PreKind::Gpt2, false, false, false),
        "starcoder" | "refact" | "codeshell" | "exaone" | "minerva-7b" | "mellum2" => {
            cfg(PreKind::StarCoder, false, false, true)
        }
        "smollm" | "command-r" => cfg(PreKind::StarCoder, false, false, false),
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "hunyuan" | "solar-open"
        | "grok-2" => cfg(PreKind::Qwen2, false, false, false),
        "stablelm2" | "megrez" => cfg(PreKind::Qwen2, false, false, true),
        _ => return None,
    })
}

/// Metadata key -> the special-token slot it sets, in llama.cpp's order
/// (the deprecated FIM keys come last and win).
const SPECIAL_KEYS: [(&str, Slot); 16] = [
    ("tokenizer.ggml.bos_token_id", Slot::Bos),
    ("tokenizer.ggml.eos_token_id", Slot::Eos),
    ("tokenizer.ggml.eot_token_id", Slot::Eot),
    ("tokenizer.ggml.eom_token_id", Slot::Eom),
    ("tokenizer.ggml.unknown_token_id", Slot::Unk),
    ("tokenizer.ggml.padding_token_id", Slot::Pad),
    ("tokenizer.ggml.fim_pre_token_id", Slot::FimPre),
    ("tokenizer.ggml.fim_suf_token_id", Slot::FimSuf),
    ("tokenizer.ggml.fim_mid_token_id", Slot::FimMid),
    ("tokenizer.ggml.fim_pad_token_id", Slot::FimPad),
    ("tokenizer.ggml.fim_rep_token_id", Slot::FimRep),
    ("tokenizer.ggml.fim_sep_token_id", Slot::FimSep),
    ("tokenizer.ggml.prefix_token_id", Slot::FimPre),
    ("tokenizer.ggml.suffix_token_id", Slot::FimSuf),
    ("tokenizer.ggml.middle_token_id", Slot::FimMid),
    ("tokenizer.ggml.mask_token_id", Slot::Mask),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Bos,
    Eos,
    Eot,
    Eom,
    Unk,
    Pad,
    Mask,
    FimPre,
    FimSuf,
    FimMid,
    FimPad,
    FimRep,
    FimSep,
}
const N_SLOTS: usize = 13;

/// Token texts llama.cpp takes as a slot's token when metadata names none.
const SLOT_TEXTS: [(Slot, &[&str]); 8] = [
    (
        Slot::Eot,
        &[
            "<|eot_id|>",
            "<|im_end|>",
            "<|end|>",
            "<end_of_turn>",
            "<|endoftext|>",
            "<|end_of_text|>",
            "<EOT>",
            "_<EOT>",
            "[EOT]",
            "<｜end▁of▁sentence｜>",
            "<end_of_utterance>",
        ],
    ),
    (Slot::Eom, &["<|eom_id|>"]),
    (
        Slot::FimPre,
        &[
            "<|fim_prefix|>",
            "<fim-prefix>",
            "<fim_prefix>",
            "<｜fim▁begin｜>",
            "<PRE>",
            "▁<PRE>",
            "<|code_prefix|>",
            "<|prefix|>",
        ],
    ),
    (
        Slot::FimSuf,
        &[
            "<|fim_suffix|>",
            "<fim-suffix>",
            "<fim_suffix>",
            "<｜fim▁hole｜>",
            "<SUF>",
            "▁<SUF>",
            "<|code_suffix|>",
            "<|suffix|>",
        ],
    ),
    (
        Slot::FimMid,
        &[
            "<|fim_middle|>",
            "<fim-middle>",
            "<fim_middle>",
            "<｜fim▁end｜>",
            "<MID>",
            "▁<MID>",
            "<|code_middle|>",
            "<|middle|>",
        ],
    ),
    (
        Slot::FimPad,
        &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    ),
    (
        Slot::FimRep,
        &[
            "<|fim_repo|>",
            "<|repo_name|>",
            "<fim-repo>",
            "<REPO>",
            "<reponame>",
        ],
    ),
    (Slot::FimSep, &["<|file_sep|>"]),
];

/// Texts of tokens that end generation (llama.cpp's list).
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];

/// An optional array-valued key: absent is fine, present but of the wrong
/// type or length is an error.
fn optional_array<T>(
    g: &Gguf,
    key: &str,
    n: usize,
    read: impl Fn(&Gguf, &str) -> Option<Vec<T>>,
) -> Result<Option<Vec<T>>> {
    if g.get(key).is_none() {
        return Ok(None);
    }
    let values = read(g, key).ok_or_else(|| err(format!("'{key}' is not a numeric array")))?;
    if values.len() != n {
        return Err(err(format!(
            "'{key}' has {} entries but the vocabulary has {n} tokens",
            values.len()
        )));
    }
    Ok(Some(values))
}

fn optional_bool(g: &Gguf, key: &str) -> Result<Option<bool>> {
    match g.get(key) {
        None => Ok(None),
        Some(_) => g
            .get_bool(key)
            .map(Some)
            .ok_or_else(|| err(format!("'{key}' is not a boolean"))),
    }
}

pub(super) fn from_gguf(g: &Gguf) -> Result<Tokenizer> {
    let model_name = g
        .get_str(KEY_MODEL)
        .ok_or_else(|| err(format!("'{KEY_MODEL}' is missing or not a string")))?;
    let is_spm = match model_name {
        "llama" => true,
        "gpt2" => false,
        other => {
            return Err(err(format!(
                "tokenizer model '{other}' is not supported (supported: 'llama' (SentencePiece), 'gpt2' (byte-level BPE))"
            )))
        }
    };
    let pre_name = match g.get(KEY_PRE) {
        None => None,
        Some(_) => Some(
            g.get_str(KEY_PRE)
                .ok_or_else(|| err(format!("'{KEY_PRE}' is not a string")))?,
        ),
    };

    let raw_tokens = g
        .get_str_array(KEY_TOKENS)
        .ok_or_else(|| err(format!("'{KEY_TOKENS}' is missing or not a string array")))?;
    let n = raw_tokens.len();
    if n == 0 {
        return Err(err("the vocabulary is empty"));
    }
    // Ids are u32 and u32::MAX is never a valid one.
    if n >= u32::MAX as usize {
        return Err(err(format!("the vocabulary has too many tokens ({n})")));
    }
    let scores = optional_array(g, KEY_SCORES, n, Gguf::get_f32_array)?;
    let types = optional_array(g, KEY_TYPES, n, Gguf::get_i64_array)?;

    let mut texts = Vec::with_capacity(n);
    let mut token_to_id: FxMap<String, u32> = FxMap::default();
    token_to_id.reserve(n);
    for (i, t) in raw_tokens.iter().enumerate() {
        // llama.cpp gives empty entries a placeholder so they cannot match.
        let text = if t.is_empty() {
            format!("[EMPTY_{i}]")
        } else {
            (*t).to_owned()
        };
        if let Some(prev) = token_to_id.insert(text.clone(), i as u32) {
            return Err(err(format!(
                "duplicate token in vocabulary: {text:?} has ids {prev} and {i}"
            )));
        }
        texts.push(text);
    }

    let scores: Vec<f32> = match scores {
        // NaN and -0.0 would order differently from llama.cpp's float `<`.
        Some(s) => s
            .into_iter()
            .map(|x| {
                if x.is_nan() {
                    f32::NEG_INFINITY
                } else {
                    x + 0.0
                }
            })
            .collect(),
        None => vec![0.0; n],
    };
    let mut attrs: Vec<u16> = match types {
        Some(t) => t
            .into_iter()
            .map(|ty| match ty {
                1 => attr::NORMAL,
                2 => attr::UNKNOWN,
                3 => attr::CONTROL,
                4 => attr::USER_DEFINED,
                5 => attr::UNUSED,
                6 => attr::BYTE,
                _ => 0,
            })
            .collect(),
        None => vec![attr::NORMAL; n],
    };

    // Defaults by model kind, then metadata overrides (llama.cpp's order).
    let mut slots: [Option<u32>; N_SLOTS] = [None; N_SLOTS];
    let in_range = |id: u32| (id as usize) < n;
    let pre = if is_spm {
        slots[Slot::Bos as usize] = Some(1).filter(|&i| in_range(i));
        slots[Slot::Eos as usize] = Some(2).filter(|&i| in_range(i));
        slots[Slot::Unk as usize] = Some(0);
        None
    } else {
        slots[Slot::Bos as usize] = Some(11).filter(|&i| in_range(i));
        slots[Slot::Eos as usize] = Some(11).filter(|&i| in_range(i));
        Some(pre_config(pre_name).ok_or_else(|| {
            err(format!(
                "pre-tokenizer '{}' is not supported (supported families: default, gpt-2, \
                 llama-bpe, qwen2, smollm/starcoder, falcon, deepseek-llm, deepseek-coder)",
                pre_name.unwrap_or_default()
            ))
        })?)
    };
    let (mut add_bos, clean_spaces) = match &pre {
        Some(p) => (p.add_bos, p.clean_spaces),
        None => (true, false),
    };
    let mut add_eos = false;
    let mut add_space_prefix = is_spm;
    if let Some(v) = optional_bool(g, "tokenizer.ggml.add_space_prefix")? {
        add_space_prefix = v;
    }
    if let Some(v) = optional_bool(g, "tokenizer.ggml.add_bos_token")? {
        add_bos = v;
    }
    if let Some(v) = optional_bool(g, "tokenizer.ggml.add_eos_token")? {
        add_eos = v;
    }
    // An id outside the vocabulary is ignored, as llama.cpp does (real files
    // use u32::MAX for "none").
    for (key, slot) in SPECIAL_KEYS {
        if let Some(id) = g.get_u64(key).and_then(|v| u32::try_from(v).ok()) {
            if in_range(id) {
                slots[slot as usize] = Some(id);
            }
        }
    }

    // Tokens recognised by text when metadata did not name them; they must
    // behave as control tokens whatever their declared type.
    for (slot, candidates) in SLOT_TEXTS {
        if slots[slot as usize].is_some() {
            continue;
        }
        // llama.cpp walks a hash map, so its pick among several present
        // candidates is arbitrary; the lowest id is as good. (All candidates
        // that end generation are handled by the EOG list regardless.)
        let found = candidates
            .iter()
            .filter_map(|t| token_to_id.get(*t).copied())
            .min();
        if let Some(id) = found {
            slots[slot as usize] = Some(id);
            attrs[id as usize] |= attr::CONTROL;
        }
    }

    // Control tokens named "unused" are placeholders.
    for (text, a) in texts.iter().zip(attrs.iter_mut()) {
        if *a & attr::CONTROL != 0 && text.contains("unused") {
            *a |= attr::UNUSED;
        }
    }

    let mut eog: Vec<u32> = Vec::new();
    for slot in [Slot::FimPad, Slot::FimRep, Slot::FimSep] {
        eog.extend(slots[slot as usize]);
    }
    for text in EOG_TEXTS {
        if let Some(&id) = token_to_id.get(*text) {
            eog.push(id);
            attrs[id as usize] |= attr::CONTROL;
        }
    }
    // gpt-oss channel markers must always be rendered.
    for text in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
        if let Some(&id) = token_to_id.get(text) {
            attrs[id as usize] = attr::USER_DEFINED;
        }
    }
    for slot in [Slot::Eos, Slot::Eot, Slot::Eom] {
        eog.extend(slots[slot as usize]);
    }
    eog.sort_unstable();
    eog.dedup();
    // In harmony-style vocabularies "<|end|>" separates messages and must
    // not stop generation.
    let eog_has = |eog: &[u32], text: &str| {
        token_to_id
            .get(text)
            .is_some_and(|id| eog.binary_search(id).is_ok())
    };
    if eog_has(&eog, "<|end|>")
        && ((eog_has(&eog, "<|return|>") && eog_has(&eog, "<|call|>"))
            || ((eog_has(&eog, "<|call|>") || eog_has(&eog, "<|calls|>"))
                && eog_has(&eog, "<|flush|>")))
    {
        let id = token_to_id["<|end|>"];
        eog.retain(|&e| e != id);
        attrs[id as usize] = attr::USER_DEFINED;
    }
    if eog_has(&eog, "<|tool_response>") && eog_has(&eog, "</s>") {
        let id = token_to_id["</s>"];
        eog.retain(|&e| e != id);
        attrs[id as usize] = attr::NORMAL;
    }

    let bos = slots[Slot::Bos as usize];
    let eos = slots[Slot::Eos as usize];
    if add_bos && bos.is_none() {
        return Err(err(
            "tokenizer.ggml.add_bos_token is true but there is no valid BOS token",
        ));
    }
    if add_eos && eos.is_none() {
        return Err(err(
            "tokenizer.ggml.add_eos_token is true but there is no valid EOS token",
        ));
    }

    let mut special: Vec<u32> = (0..n as u32)
        .filter(|&i| attrs[i as usize] & (attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN) != 0)
        .collect();
    special.sort_by_key(|&i| std::cmp::Reverse(texts[i as usize].len()));

    strip_attributes(g, pre_name, &token_to_id, &special, &mut attrs);

    let mut byte_tokens = [None; 256];
    let model = if is_spm {
        for (b, slot) in byte_tokens.iter_mut().enumerate() {
            let hex = format!("<0x{b:02X}>");
            *slot = token_to_id.get(&hex).copied().or_else(|| {
                // Some vocabularies spell bytes as themselves.
                char::from_u32(b as u32)
                    .filter(char::is_ascii)
                    .and_then(|c| token_to_id.get(c.encode_utf8(&mut [0u8; 4]) as &str))
                    .copied()
            });
            // llama.cpp aborts when a byte has no token at all; standing in
            // <unk> keeps the position visible instead.
            if slot.is_none() {
                *slot = slots[Slot::Unk as usize];
            }
        }
        Model::Spm
    } else {
        let merges = g
            .get_str_array(KEY_MERGES)
            .ok_or_else(|| err(format!("'{KEY_MERGES}' is missing or not a string array")))?;
        let p = pre.as_ref().map_or(PreKind::Default, |p| p.kind);
        let ignore = pre.as_ref().is_some_and(|p| p.ignore_merges);
        Model::Bpe(Box::new(Bpe::new(
            p,
            ignore,
            &token_to_id,
            n as u32,
            &merges,
        )?))
    };

    Ok(Tokenizer {
        model,
        texts,
        scores,
        attrs,
        token_to_id,
        byte_tokens,
        special,
        eog,
        bos,
        eos,
        add_bos,
        add_eos,
        add_space_prefix,
        clean_spaces,
    })
}

/// Per-model whitespace stripping around special tokens, which llama.cpp
/// sets by model name because GGUF does not carry it.
fn strip_attributes(
    g: &Gguf,
    pre_name: Option<&str>,
    token_to_id: &FxMap<String, u32>,
    special: &[u32],
    attrs: &mut [u16],
) {
    let name = g.get_str("general.name").unwrap_or("").to_lowercase();
    let arch = g.get_str("general.architecture").unwrap_or("");
    let pre = pre_name.unwrap_or("");
    let id_of = |text: &str| token_to_id.get(text).copied();
    let mut set = |id: Option<u32>, bit: u16, on: bool| {
        if let Some(a) = id.and_then(|id| attrs.get_mut(id as usize)) {
            *a = if on { *a | bit } else { *a & !bit };
        }
    };
    let any = |s: &str, subs: &[&str]| subs.iter().any(|sub| s.contains(sub));
    if any(pre, &["jina-v2-de", "jina-v2-es", "jina-v2-code"])
        || any(arch, &["nomic-bert-moe", "jina-bert-v3"])
    {
        set(id_of("<mask>"), attr::LSTRIP, true);
    } else if any(&name, &["phi-3", "phi3"]) {
        for &id in special {
            set(Some(id), attr::RSTRIP, true);
        }
        set(id_of("</s>"), attr::RSTRIP, true);
        for t in ["<unk>", "<s>", "<|endoftext|>"] {
            set(id_of(t), attr::RSTRIP, false);
        }
    } else if name.contains("modern-bert") {
        set(id_of("[MASK]"), attr::LSTRIP, true);
    }
}
