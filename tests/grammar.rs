#![cfg(not(target_arch = "wasm32"))]
//! Constrained decoding (src/grammar.rs) on both samplers: a JSON schema
//! forces output that parses and validates on a model far too small to
//! follow one, and the GPU backend (lavapipe) picks the same ids as the CPU
//! under the mask, applying the mask itself (only ids come back, never
//! logits).

mod common;

use webgguf::engine::Engine;
use webgguf::grammar::GrammarSpec;
use webgguf::sampler::SamplerParams;

fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "mood": {"enum": ["happy", "sad"]},
            "tags": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 999}, "maxItems": 3},
            "pet": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["age"], "additionalProperties": false}
        },
        "required": ["name", "mood", "tags", "pet"],
        "additionalProperties": false
    })
}

fn constrained(e: &mut Engine, spec: &GrammarSpec, params: SamplerParams) -> (Vec<u32>, String) {
    let ids = e.prompt_ids("Once upon a time");
    e.begin(&ids, 120, params).unwrap();
    e.constrain(spec).unwrap();
    while pollster::block_on(e.next_token()).unwrap().is_some() {}
    let g = e.finish().unwrap();
    (g.generated_ids, g.text)
}

fn check(text: &str) {
    let v: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"));
    let o = v.as_object().expect("an object");
    assert!(o["name"].is_string(), "{text}");
    assert!(
        ["happy", "sad"].contains(&o["mood"].as_str().unwrap()),
        "{text}"
    );
    assert!(
        o["tags"].as_array().unwrap().iter().all(|t| t.is_i64()),
        "{text}"
    );
    assert!(o["pet"]["age"].is_i64(), "{text}");
    assert_eq!(o.len(), 4, "{text}");
}

#[test]
fn schema_forces_valid_json_and_gpu_matches_cpu() {
    let Some(shared) = common::shared() else {
        return;
    };
    let path = shared.join("models/stories260K.F32.gguf");
    let spec = GrammarSpec::JsonSchema(schema());
    let greedy = SamplerParams::default();
    let mut cpu = common::cpu_engine(&path, false);
    let (ids, text) = constrained(&mut cpu, &spec, greedy);
    check(&text);
    // Sampling at temperature 1 is constrained too.
    let hot = SamplerParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        seed: 7,
        ..SamplerParams::default()
    };
    let (_, hot_text) = constrained(&mut cpu, &spec, hot);
    check(&hot_text);
    // Unconstrained, this model writes a story, not JSON.
    let plain = pollster::block_on(cpu.generate(
        &cpu.prompt_ids("Once upon a time"),
        30,
        greedy,
        &mut |_, _| true,
    ))
    .unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&plain.text).is_err());
    assert!(cpu.last_grammar_ms == 0.0);

    let Some(device) = common::gpu() else {
        return;
    };
    let mut gpu = common::gpu_engine_on(device.clone(), &path, false);
    // Each masked step reads back its 4-byte id and nothing else: the mask
    // is applied on the GPU, not to logits read back (the model's 512
    // logits would add 2048 bytes a step).
    let read0 = device.bytes_read();
    let (gpu_ids, gpu_text) = constrained(&mut gpu, &spec, greedy);
    assert_eq!(gpu_ids, ids, "GPU {gpu_text:?} vs CPU {text:?}");
    let read1 = device.bytes_read();
    assert_eq!(read1 - read0, 4 * gpu_ids.len() as u64, "greedy");
    let (hot_ids, gpu_hot) = constrained(&mut gpu, &spec, hot);
    assert_eq!(gpu_hot, hot_text);
    let read2 = device.bytes_read();
    assert_eq!(read2 - read1, 4 * hot_ids.len() as u64, "sampled");
    // The GPU stays usable for unmasked (fed-ahead) runs afterwards.
    let after = pollster::block_on(gpu.generate(
        &gpu.prompt_ids("Once upon a time"),
        30,
        greedy,
        &mut |_, _| true,
    ))
    .unwrap();
    assert_eq!(after.text, plain.text);
}

#[test]
fn bad_schema_is_an_invalid_argument() {
    let Some(shared) = common::shared() else {
        return;
    };
    let mut cpu = common::cpu_engine(&shared.join("models/stories260K.F32.gguf"), false);
    let ids = cpu.prompt_ids("x");
    cpu.begin(&ids, 4, SamplerParams::default()).unwrap();
    let e = cpu
        .constrain(&GrammarSpec::JsonSchema(
            serde_json::json!({"type": "nonsense"}),
        ))
        .unwrap_err();
    assert_eq!(e.code(), "InvalidArgument", "{e}");
}
