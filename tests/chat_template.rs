//! Which chat template real files get: their own when they carry one, else
//! the fallback for their architecture or vocabulary (see src/chat.rs).
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use std::path::PathBuf;

use webgguf::chat::{ChatTemplate, Message, TemplateOrigin, CHATML_TEMPLATE, GEMMA_TEMPLATE};
use webgguf::gguf::Gguf;

fn origin(path: &std::path::Path) -> (TemplateOrigin, Option<String>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let g = Gguf::parse(&bytes).unwrap();
    let own = g.get_str("tokenizer.chat_template").map(str::to_string);
    (TemplateOrigin::from_gguf(&g), own)
}

/// Gemma 3 270M as scripts/setup.sh fetches it, if present.
fn gemma3_270m() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/gemma-3-270m-q4_k_m.gguf");
    if p.is_file() {
        return Some(p);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing; run scripts/setup.sh", p.display());
    }
    eprintln!("SKIPPED: {} is absent; run scripts/setup.sh", p.display());
    None
}

#[test]
fn smollm2_keeps_its_own_template() {
    let Some(path) = common::smollm2() else {
        return;
    };
    let e = common::cpu_engine(&path, false);
    assert_eq!(e.info.chat_template_origin, TemplateOrigin::File);
    let own = e
        .info
        .chat_template
        .as_deref()
        .expect("SmolLM2 has a template");
    assert_eq!(e.info.chat_template_source(), own);
    // Its template adds its own system prompt, which no fallback does.
    let t = ChatTemplate::new(e.info.chat_template_source(), "", "").unwrap();
    let p = t.apply(&[Message::new("user", "Hi")], true).unwrap();
    assert!(
        p.starts_with("<|im_start|>system\nYou are a helpful AI assistant named SmolLM"),
        "{p}"
    );
}

#[test]
fn gemma3_270m_falls_back_to_gemma_turns() {
    let Some(path) = gemma3_270m() else {
        return;
    };
    let (o, own) = origin(&path);
    assert_eq!(own, None, "the file now has a template of its own");
    assert_eq!(o, TemplateOrigin::Gemma);
    assert_eq!(o.fallback_source(), Some(GEMMA_TEMPLATE));
}

#[test]
fn template_less_synthetic_files_fall_back_by_architecture() {
    let Some(shared) = common::shared() else {
        return;
    };
    let models = shared.join("models");
    // synthgemma3 has the stories260K vocabulary (no <start_of_turn>): its
    // architecture alone picks Gemma's turns.
    let (o, own) = origin(&models.join("synthgemma3.F32.gguf"));
    assert_eq!((o, own), (TemplateOrigin::Gemma, None));
    // A llama without a template and without <|im_start|>: ChatML anyway,
    // and a loaded engine makes its prompts with it.
    let e = common::cpu_engine(&models.join("stories260K.F32.gguf"), false);
    assert_eq!(e.info.chat_template, None);
    assert_eq!(e.info.chat_template_origin, TemplateOrigin::ChatMl);
    assert_eq!(e.info.chat_template_source(), CHATML_TEMPLATE);
}
