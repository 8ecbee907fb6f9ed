//! End-to-end checks of the CPU engine against llama.cpp's references
//! (../shared/reference): exact greedy ids where the math is f32/f16, and
//! teacher-forced top-1 and top-10 logit agreement for quantized weights.
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use common::{assert_all_passed, check_forced, references, report, Reference};
use webgguf::engine::Engine;
use webgguf::sampler::SamplerParams;

/// Largest |our logit - llama.cpp's| allowed on llama.cpp's top-10, with
/// the reason. Logits here are O(10-20).
///
/// - f32/f16/bf16 weights: we follow llama.cpp's CPU numerics (f16 KV cache,
///   f16-rounded queries, flash-attention order with an f16 accumulator), so
///   only summation order in the matmuls and libm differ. Measured at most
///   0.017 (SmolLM2 F16) and 0.015 (synth256 BF16); bound 0.05.
/// - quantized weights: like llama.cpp we round activations to 8 bits per
///   block and take integer dot products, so Q6_K, Q2_K, IQ4_NL and IQ4_XS
///   match to the printed digit; the other formats differ in how llama.cpp's
///   SIMD kernels (and its repacked Q4_0) order the per-block float sums,
///   which moves logits by up to 0.17 on the 2- and 5-layer models (bound 0.4)
///   and up to 0.66 after SmolLM2's 30 layers (bound 1.5: the error grows
///   with depth, and a 0.83 was seen with a different but equally valid
///   activation rounding). A real kernel bug moves logits by whole units and
///   flips the top-1, which is checked separately at every step.
fn bound(model: &str) -> f32 {
    let float = [".F32.", ".F16.", ".BF16."]
        .iter()
        .any(|t| model.contains(t));
    match (float, model.starts_with("SmolLM2")) {
        (true, _) => 0.05,
        (false, false) => 0.4,
        (false, true) => 1.5,
    }
}

fn greedy(e: &mut Engine, r: &Reference) -> (Vec<u32>, Vec<u32>) {
    let ids = e.prompt_ids(&r.prompt);
    e.reset();
    let n = r.generated_ids.len();
    let g = pollster::block_on(e.generate(&ids, n, SamplerParams::default(), &mut |_, _| true));
    let g = g.unwrap();
    (ids, g.generated_ids)
}

fn run_file(file: &str, exact: &[&str]) {
    let Some(shared) = common::shared() else {
        return;
    };
    let refs = references(&shared, file);
    let mut failures = Vec::new();
    let mut checked = 0;
    for r in &refs {
        let path = if r.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
            || r.model == "SmolLM2-135M-Instruct.F16.from-Q4_1.gguf"
        {
            match common::smollm2() {
                Some(p) => p,
                None => continue,
            }
        } else if r.model.starts_with("SmolLM2") {
            // Made by llama-quantize from the Q4_1 file; not shipped here.
            eprintln!("skip {} (file not available)", r.model);
            continue;
        } else {
            shared.join("models").join(&r.model)
        };
        let upcast = r.model.contains(".F16.from-Q4_1");
        let mut e = common::cpu_engine(&path, upcast);
        checked += 1;
        if exact.iter().any(|x| r.model.contains(x)) {
            let (prompt, ids) = greedy(&mut e, r);
            let ok = prompt == r.prompt_ids && ids == r.generated_ids;
            let detail = format!(
                "prompt {prompt:?} vs {:?}; ids {ids:?} vs {:?}",
                r.prompt_ids, r.generated_ids
            );
            report(ok, r, "exact greedy", &detail, &mut failures);
        }
        check_forced(&mut e, r, bound(&r.model), &mut failures);
    }
    assert_all_passed(checked, &failures);
}

#[test]
fn greedy_json_matches_llama_cpp() {
    run_file(
        "greedy.json",
        &[
            "stories260K.F32",
            "stories260K.F16",
            "SmolLM2-135M-Instruct.F16",
        ],
    );
}

#[test]
fn synth256_matches_llama_cpp() {
    run_file("synth256.json", &["synth256.F32"]);
}

#[test]
fn synthqwen2_matches_llama_cpp() {
    run_file("synthqwen2.json", &["synthqwen2.F32"]);
}
