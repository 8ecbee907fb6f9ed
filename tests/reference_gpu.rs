//! End-to-end checks of the GPU backend against llama.cpp's references
//! (../shared/reference), driven by token ids (the tokenizer is not under
//! test here): exact greedy ids for stories260K F32, and teacher-forced
//! top-1 and top-10 logit agreement for every synth256 and synthqwen2 file.
//! Skips with a message when there is no GPU adapter (fails under CI=true).

mod common;

use common::{forced, references};
use webgguf::sampler::SamplerParams;

/// Largest |GPU logit - llama.cpp's| allowed on llama.cpp's top-10.
///
/// The GPU computes every dot product in f32 from dequantized weights;
/// llama.cpp rounds activations to f16 (F16/BF16 weights) or to 8 bits per
/// block (quantized weights) first, so the GPU is the more exact of the two
/// and differs from llama.cpp by about llama.cpp's own rounding noise.
/// - F32: same math up to summation order and sin/cos/exp: bound 0.1.
/// - F16/BF16: llama.cpp's f16 activations: bound 0.2.
/// - quantized: llama.cpp's 8-bit activations, amplified through the
///   layers: bound 0.75.
///
/// A kernel bug moves logits by whole units and flips the top-1, which is
/// checked separately.
fn bound(model: &str) -> f32 {
    if model.contains(".F32.") {
        0.1
    } else if model.contains(".F16.") || model.contains(".BF16.") {
        0.2
    } else {
        0.75
    }
}

/// A top-2 gap this small is a coin toss at f32 precision (the GPU's
/// stories260K F32 logits are within 0.02 of llama.cpp's).
const TIE: f32 = 0.02;

fn run_file(file: &str, only: &str, exact: bool) {
    let Some(shared) = common::shared() else {
        return;
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for r in references(&shared, file) {
        if !r.model.starts_with(only) {
            continue;
        }
        let path = shared.join("models").join(&r.model);
        let Some(mut e) = common::gpu_engine(&path, false) else {
            return;
        };
        checked += 1;
        if exact {
            e.reset();
            let g = pollster::block_on(e.generate(
                &r.prompt_ids,
                r.generated_ids.len(),
                SamplerParams::default(),
                &mut |_, _| true,
            ))
            .unwrap_or_else(|err| panic!("{}: {err}", r.model));
            // Exact up to the first near-tie in llama.cpp's logits (top-2
            // gap < TIE, below the f32-vs-llama.cpp noise measured by the
            // forced check); there either tied token is right and the
            // continuations may part ways.
            let tie = r
                .top10
                .iter()
                .position(|s| s.len() > 1 && s[0].1 - s[1].1 < TIE)
                .unwrap_or(r.generated_ids.len());
            let upto = tie.min(r.generated_ids.len());
            let ok = g.generated_ids.len() >= upto
                && g.generated_ids[..upto] == r.generated_ids[..upto]
                && (upto == r.generated_ids.len()
                    || g.generated_ids
                        .get(upto)
                        .is_some_and(|id| r.top10[upto][..2].iter().any(|p| p.0 == *id)));
            if upto < r.generated_ids.len() {
                eprintln!(
                    "note {} {:?}: llama.cpp's top-2 gap at step {upto} is {:.4}; compared up to there",
                    r.model,
                    r.prompt,
                    r.top10[upto][0].1 - r.top10[upto][1].1
                );
            }
            eprintln!(
                "{} {} {:?}: exact greedy",
                if ok { "ok  " } else { "FAIL" },
                r.model,
                r.prompt
            );
            if !ok {
                failures.push(format!(
                    "{} {:?}: ids {:?} vs {:?}",
                    r.model, r.prompt, g.generated_ids, r.generated_ids
                ));
            }
        }
        let (bad, worst) = forced(&mut e, &r);
        let b = bound(&r.model);
        let ok = bad.is_empty() && worst <= b;
        eprintln!(
            "{} {} {:?}: forced, max |dlogit| {worst:.4} (bound {b})",
            if ok { "ok  " } else { "FAIL" },
            r.model,
            r.prompt
        );
        if !ok {
            failures.push(format!(
                "{} {:?}: top-1 disagrees at steps {bad:?}; max |dlogit| {worst} > {b}?",
                r.model, r.prompt
            ));
        }
    }
    assert!(checked > 0, "no reference could be checked");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn gpu_greedy_stories260k_f32_matches_llama_cpp() {
    run_file("greedy.json", "stories260K.F32", true);
}

#[test]
fn gpu_stories260k_quantized_matches_llama_cpp() {
    run_file("greedy.json", "stories260K.Q", false);
}

#[test]
fn gpu_synth256_matches_llama_cpp() {
    run_file("synth256.json", "synth256", false);
}

#[test]
fn gpu_synthqwen2_matches_llama_cpp() {
    run_file("synthqwen2.json", "synthqwen2", false);
}

/// The non-greedy path (logits read back, CPU sampler) runs and yields
/// in-vocabulary ids; bad input is an error, not a panic.
#[test]
fn gpu_sampling_and_bad_input() {
    let Some(shared) = common::shared() else {
        return;
    };
    let Some(mut e) = common::gpu_engine(&shared.join("models/stories260K.F32.gguf"), false) else {
        return;
    };
    let params = SamplerParams {
        temperature: 0.8,
        repeat_penalty: 1.1,
        seed: 1,
        ..SamplerParams::default()
    };
    let g = pollster::block_on(e.generate(&[1, 403, 407], 16, params, &mut |_, _| true)).unwrap();
    assert!(!g.generated_ids.is_empty());
    assert!(g
        .generated_ids
        .iter()
        .all(|&t| (t as usize) < e.config.vocab_size));
    let vocab = e.config.vocab_size as u32;
    assert!(pollster::block_on(e.logits_at(&[1, vocab], 0, 5)).is_err());
    let long = vec![1u32; e.context_len() + 1];
    assert!(pollster::block_on(e.logits_at(&long, 0, 5)).is_err());
}
