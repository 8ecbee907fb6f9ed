//! GPU memory is returned when a model is dropped: every buffer the GPU
//! backend creates, at load or later, is destroyed by its `Drop` (in the
//! browser a dropped handle frees nothing until the JS garbage collector
//! runs; tests/web.rs counts the browser's `createBuffer`/`destroy` calls).
#![cfg(all(not(target_arch = "wasm32"), feature = "gpu"))]

mod common;

use common::TINY;
use webgguf::engine::{context_for, Engine, EngineOptions, Loaded};
use webgguf::gpu::{GpuBackend, GpuOptions};
use webgguf::quant::GgmlType;
use webgguf::sampler::SamplerParams;
use webgguf::synthetic;

#[test]
fn dropping_a_gpu_model_destroys_every_buffer_it_created() {
    let Some(gpu) = common::gpu() else { return };
    let mut models = vec![(
        "synthetic llama".to_string(),
        synthetic::build(&TINY, GgmlType::Q8_0, 3).unwrap(),
    )];
    // qwen2's q/k/v biases and gemma3's extra norms are buffers of their own.
    if let Some(shared) = common::shared() {
        for f in ["synthqwen2.Q8_0.gguf", "synthgemma3.Q8_0.gguf"] {
            models.push((
                f.into(),
                std::fs::read(shared.join("models").join(f)).unwrap(),
            ));
        }
    }
    for (name, bytes) in models {
        let opts = EngineOptions {
            context: 64,
            ..EngineOptions::default()
        };
        let Loaded {
            config,
            tokenizer,
            info,
            weights,
        } = Loaded::from_bytes(bytes, opts.load).unwrap();
        let ctx = context_for(&config, &opts);
        let backend = pollster::block_on(GpuBackend::new(
            gpu.clone(),
            &config,
            &weights,
            ctx,
            opts.max_batch,
            GpuOptions::default(),
            &|_| {},
        ))
        .unwrap();
        let probe = backend.gpu().clone();
        let at_load = probe.live_buffers();
        assert!(at_load > 30, "{name}: {at_load} buffers tracked at load");
        let mut e =
            Engine::with_backend(config, tokenizer, info, Box::new(backend), common::now_ms);
        let ids = e.prompt_ids("hello");
        // Greedy, sampled (the GPU sampler's ops are built on first use)
        // and sampled with a penalty: every path that could allocate.
        for params in [
            SamplerParams::default(),
            SamplerParams {
                temperature: 0.8,
                seed: 1,
                ..SamplerParams::default()
            },
            SamplerParams {
                temperature: 0.8,
                repeat_penalty: 1.1,
                seed: 1,
                ..SamplerParams::default()
            },
        ] {
            e.reset();
            pollster::block_on(e.generate(&ids, 4, params, &mut |_, _| true)).unwrap();
        }
        // Every buffer, the sampler's level uniforms included, is made at
        // load, so that what a load holds (`Gpu::memory`) stays true.
        assert_eq!(
            probe.live_buffers(),
            at_load,
            "{name}: buffers made after the load"
        );
        assert_eq!(probe.memory().buffers, at_load as u64, "{name}");
        drop(e);
        assert_eq!(probe.live_buffers(), 0, "{name}: buffers left after drop");
        assert_eq!(probe.memory().total, 0, "{name}: bytes counted after drop");
    }
}

/// Only `Gpu::buffer` and `Gpu::buffer_init` call wgpu's buffer
/// constructors, so that the tracking above sees every buffer.
#[test]
fn every_gpu_buffer_is_made_through_the_tracking_wrappers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gpu");
    let mut calls = Vec::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "tests.rs" {
            continue; // kernel tests own their buffers
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            if line.contains(".create_buffer") {
                calls.push(format!("{name}: {}", line.trim()));
            }
        }
    }
    calls.sort();
    assert_eq!(
        calls,
        [
            "device.rs: self.own(self.device.create_buffer(desc))",
            "device.rs: self.own(self.device.create_buffer_init(desc))",
        ],
        "buffers made outside Gpu::buffer/buffer_init"
    );
}
