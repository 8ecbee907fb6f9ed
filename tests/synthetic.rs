//! Synthetic models: a custom shape builds, parses, loads and generates.
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use common::TINY;
use webgguf::cpu::Serial;
use webgguf::engine::{Engine, EngineOptions, StopReason};
use webgguf::quant::GgmlType;
use webgguf::sampler::SamplerParams;
use webgguf::synthetic::{self, Shape};

fn opts() -> EngineOptions {
    EngineOptions {
        context: 64,
        ..EngineOptions::default()
    }
}

#[test]
fn tiny_shape_loads_and_generates_on_cpu() {
    for ty in [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::F16,
    ] {
        for tied in [false, true] {
            let shape = Shape { tied, ..TINY };
            let bytes = synthetic::build(&shape, ty, 7).unwrap();
            assert_eq!(bytes.len() as u64, shape.file_bytes(ty).unwrap());
            assert_eq!(bytes, synthetic::build(&shape, ty, 7).unwrap(), "seeded");
            let mut e = Engine::load_cpu(bytes, opts(), Box::new(Serial), common::now_ms).unwrap();
            assert_eq!(e.config.vocab_size, 300);
            assert_eq!(e.config.tied_embeddings, tied);
            assert_eq!(e.tokenizer.vocab_size(), 300);
            let ids = e.prompt_ids("hello");
            let g =
                pollster::block_on(e.generate(&ids, 4, SamplerParams::default(), &mut |_, _| true))
                    .unwrap();
            assert!(!g.generated_ids.is_empty(), "{ty} tied={tied}");
            let steps = pollster::block_on(e.logits_at(&[1, 5, 9], 0, 3)).unwrap();
            assert!(steps.iter().flatten().all(|(_, l)| l.is_finite()));
            let b = pollster::block_on(e.bench(8, 4, 1)).unwrap();
            assert!(b.pp_tok_s > 0.0 && b.tg_tok_s > 0.0);
        }
    }
}

/// A tiny gemma3-layout file (head size apart from dim / heads, a window
/// shorter than the prompt): the writer's layout is what the loader's
/// gemma3 description expects.
const TINY_GEMMA: Shape = Shape {
    name: "tiny-gemma3",
    arch: "gemma3",
    n_layers: 6,
    head_dim: 32,
    window: 4,
    tied: true,
    ..TINY
};

#[test]
fn tiny_gemma3_shape_loads_and_generates_on_cpu() {
    let bytes = synthetic::build(&TINY_GEMMA, GgmlType::Q8_0, 5).unwrap();
    let mut e = Engine::load_cpu(bytes, opts(), Box::new(Serial), common::now_ms).unwrap();
    let spec = &e.config.spec;
    assert_eq!(e.config.head_dim, 32);
    assert_eq!(spec.embed_scale, Some(8.0));
    let windows: Vec<Option<usize>> = spec.layers.iter().map(|l| l.window).collect();
    let w = Some(4);
    assert_eq!(windows, [w, w, w, w, w, None]);
    let ids = e.prompt_ids("hello hello hello hello hello");
    let g = pollster::block_on(e.generate(&ids, 8, SamplerParams::default(), &mut |_, _| true))
        .unwrap();
    assert_eq!(g.generated_ids.len(), 8);
}

#[test]
fn presets_parse_and_bad_specs_are_errors() {
    let (s, _) = synthetic::parse_spec("gemma3-270m:Q8_0").unwrap();
    assert_eq!(s, synthetic::GEMMA3_270M);
    let (s, ty) = synthetic::parse_spec("tinyllama-1.1b:q8_0").unwrap();
    assert_eq!((s, ty), (synthetic::TINYLLAMA_1_1B, GgmlType::Q8_0));
    // TinyLlama in F16 is about 2.2 GB.
    let f16 = s.file_bytes(GgmlType::F16).unwrap();
    assert!((2_150_000_000..2_250_000_000).contains(&f16), "{f16}");
    for bad in [
        "smollm2-135m",
        "nope:Q4_0",
        // A real format synthetic models are not written in (Q2_K was
        // one until the per-family decode profiles needed it).
        "smollm2-135m:Q8_1",
        "smollm2-135m:",
    ] {
        assert!(synthetic::parse_spec(bad).is_err(), "{bad}");
    }
    let odd = Shape { dim: 48, ..TINY };
    assert!(
        synthetic::build(&odd, GgmlType::Q4_0, 1).is_err(),
        "48 is not a block multiple"
    );
    // Q4_K parses, but SmolLM2's 576-wide rows are not whole 256-blocks.
    let (s, ty) = synthetic::parse_spec("smollm2-135m:Q4_K").unwrap();
    assert!(
        synthetic::build(&s, ty, 1).is_err(),
        "576 is not a K-block multiple"
    );
    let few = Shape { vocab: 10, ..TINY };
    assert!(synthetic::build(&few, GgmlType::F16, 1).is_err());
}

/// The GPU loads a synthetic model whose embedding must be split by rows.
#[cfg(feature = "gpu")]
#[test]
fn tiny_shape_runs_on_gpu_with_split_matrices() {
    let Some(gpu) = common::gpu() else { return };
    let bytes = synthetic::build(&TINY, GgmlType::Q4_0, 3).unwrap();
    let gopts = webgguf::gpu::GpuOptions {
        max_binding: Some(1024),
        ..Default::default()
    };
    // The upload reports each layer, in order, ending at 1.
    let seen = std::cell::RefCell::new(Vec::new());
    let mut e = pollster::block_on(webgguf::gpu::load_engine(
        gpu,
        bytes,
        opts(),
        gopts,
        common::now_ms,
        &|f| seen.borrow_mut().push(f),
    ))
    .unwrap();
    let seen = seen.into_inner();
    assert_eq!(seen.len(), e.config.n_layers, "progress reports {seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]) && seen.last() == Some(&1.0),
        "{seen:?}"
    );
    let b = pollster::block_on(e.bench(8, 4, 1)).unwrap();
    assert!(b.pp_tok_s > 0.0 && b.tg_tok_s > 0.0);
}

/// A huge `max_tokens` (the JS `maxTokens` is allowed up to u32::MAX, the
/// CLI's `-n` is any usize) must not size an allocation: the run ends when
/// the context fills, and nothing was reserved past it. Before the fix
/// `begin` reserved prompt + max_tokens ids: a capacity-overflow panic for
/// usize::MAX / 2, 16 GiB for u32::MAX (fatal in wasm, see tests/web.rs),
/// and a wrapped sum for usize::MAX in release builds.
#[test]
fn huge_max_tokens_stops_at_the_context() {
    let bytes = synthetic::build(&TINY, GgmlType::Q8_0, 7).unwrap();
    let mut e = Engine::load_cpu(bytes, opts(), Box::new(Serial), common::now_ms).unwrap();
    let ids = e.prompt_ids("hello");
    for max in [usize::MAX / 2, usize::MAX, u32::MAX as usize] {
        e.reset();
        let g =
            pollster::block_on(e.generate(&ids, max, SamplerParams::default(), &mut |_, _| true))
                .unwrap();
        let total = g.prompt_ids.len() + g.generated_ids.len();
        assert!(
            total <= e.context_len() + 1,
            "{total} ids in a context of 64"
        );
        assert!(
            matches!(g.stop, StopReason::Context | StopReason::Eog),
            "{:?}",
            g.stop
        );
    }
}

/// The formats written as random bits (K-quants, IQ4_NL, IQ4_XS; rows a
/// multiple of 256) build to the size the layout says, deterministically,
/// and load and run on the CPU with finite logits (so the scales sit where
/// each layout has them: random bits there could decode to inf or NaN).
#[test]
fn random_bit_formats_load_and_run_on_cpu() {
    let shape = Shape {
        dim: 256,
        ffn_dim: 512,
        ..TINY
    };
    for ty in [
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::IQ4_NL,
        GgmlType::IQ4_XS,
    ] {
        let bytes = synthetic::build(&shape, ty, 9).unwrap();
        assert_eq!(bytes.len() as u64, shape.file_bytes(ty).unwrap());
        assert_eq!(bytes, synthetic::build(&shape, ty, 9).unwrap(), "seeded");
        let mut e = Engine::load_cpu(bytes, opts(), Box::new(Serial), common::now_ms).unwrap();
        let steps = pollster::block_on(e.logits_at(&[1, 5, 9], 0, 3)).unwrap();
        assert!(steps.iter().flatten().all(|(_, l)| l.is_finite()), "{ty}");
    }
    let (s, ty) = synthetic::parse_spec("llama-3.1-8b:Q4_K").unwrap();
    assert_eq!((s, ty), (synthetic::LLAMA31_8B, GgmlType::Q4_K));
}
