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
///   activation rounding). Gemma 3 270M (18 layers, Q5_0/Q4_K/Q6_K/Q8_0,
///   logits up to ~20) measured 0.1-1.3 per step and 2.0 at one step of
///   96: its residual stream carries large outliers (embeddings x 25), so
///   a one-ulp difference before an 8-bit activation rounding moves a
///   whole quantization step; bound 2.5. The top-1 check still holds at
///   every step.
/// - the new architectures' synthetic files (qwen3, gemma3, phi3, llama3;
///   2-6 layers) measured at most 0.12 forced on their quantized files,
///   inside the 0.4 of the 2- and 5-layer models. A real kernel bug moves logits by whole units and
///   flips the top-1, which is checked separately at every step.
fn bound(model: &str) -> f32 {
    let float = [".F32.", ".F16.", ".BF16."]
        .iter()
        .any(|t| model.contains(t));
    if model.starts_with("gemma-3-270m") {
        return 2.5;
    }
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
        let Some(path) = common::model_path(&shared, r) else {
            continue;
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

#[test]
fn synthqwen3_matches_llama_cpp() {
    run_file("synthqwen3.json", &["synthqwen3.F32"]);
}

/// Gemma 3 with a window of 8 under prompts plus 32 generated tokens: the
/// exact F32 ids fail when the window is ignored (checked by mutation).
/// They do not tell llama.cpp's f16-table GELU from a plain f32 one; we
/// follow the table's rounding anyway (cpu::gelu_mul).
#[test]
fn synthgemma3_matches_llama_cpp() {
    run_file("synthgemma3.json", &["synthgemma3.F32"]);
}

#[test]
fn synthphi3_matches_llama_cpp() {
    run_file("synthphi3.json", &["synthphi3.F32"]);
}

/// Llama 3 rope scaling, carried as the rope_freqs tensor.
#[test]
fn synthllama3_matches_llama_cpp() {
    run_file("synthllama3.json", &["synthllama3.F32"]);
}

/// The real Gemma 3 270M (Q4_K_M, from PyPI through scripts/setup.sh).
#[test]
fn gemma3_270m_matches_llama_cpp() {
    run_file("gemma3-270m.json", &[]);
}
