//! The memory plan (`gpu::plan_memory`), made from a file's header alone
//! without a device, equals what a load counts (`Engine::memory`, from
//! `Gpu::memory`): weights, KV cache and scratch byte for byte, the
//! largest buffer and the buffer count; for real-layout files, with and
//! without a small `max_binding` that splits matrices (and unfuses
//! groups), at two contexts. The CPU engine's need equals what it holds,
//! and a fit check that fails names the limit.
#![cfg(all(not(target_arch = "wasm32"), feature = "gpu"))]

mod common;

use std::path::PathBuf;

use webgguf::engine::{Engine, EngineOptions};
use webgguf::gguf::Gguf;
use webgguf::gpu::{self, GpuOptions, GpuTuning, PlanOptions};
use webgguf::memory::{GpuLimits, WASM_LIMIT};

/// The files: ../shared's and .cache's real-layout models (each skipped
/// with a message where absent, a failure under CI=true).
fn files() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(shared) = common::shared() {
        for f in [
            "synth256.Q6_K.gguf",
            // Q3_K's blocks take 112 bytes on the GPU, not the file's 110.
            "synth256.Q3_K_S.gguf",
            "synthqwen3.Q4_K_S.gguf",
            "stories260K.F32.gguf",
            "synthgemma3.Q8_0.gguf",
            "synthphi3.Q4_K_S.gguf",
            "synthqwen2.Q4_0.gguf",
        ] {
            v.push(shared.join("models").join(f));
        }
    }
    v.extend(common::smollm2());
    v.extend(common::gemma3_270m());
    v
}

/// A file in memory as a `Source`.
struct Bytes<'a>(&'a [u8]);

impl webgguf::source::Source for Bytes<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read(
        &self,
        offset: u64,
        len: usize,
    ) -> webgguf::engine::LocalFuture<'_, webgguf::Result<Vec<u8>>> {
        self.0.read(offset, len)
    }
}

fn header(bytes: &[u8]) -> Gguf {
    Gguf::parse(bytes).unwrap()
}

/// The plan a load with these options would be checked against, in the
/// browser's wasm limit.
fn plan_for(
    h: &Gguf,
    engine: EngineOptions,
    gpu: GpuOptions,
    limits: GpuLimits,
) -> gpu::MemoryPlan {
    gpu::plan_memory(
        h,
        &PlanOptions {
            engine,
            gpu,
            limits,
            cpu_limit: WASM_LIMIT,
        },
    )
    .unwrap()
}

fn engine_opts(context: usize) -> EngineOptions {
    EngineOptions {
        context,
        max_batch: 64,
        ..EngineOptions::default()
    }
}

#[test]
fn the_plan_equals_what_a_gpu_load_holds() {
    let Some(g) = common::gpu() else { return };
    let files = files();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let h = header(&bytes);
        // Small models split at 16 KiB, the real ones at 1 MiB: both
        // split the embedding and some groups no longer fit one buffer.
        let small = if bytes.len() > 50 << 20 {
            1 << 20
        } else {
            16 << 10
        };
        for max_binding in [None, Some(small)] {
            for context in [100, 700] {
                let opts = engine_opts(context);
                let gpu_opts = GpuOptions {
                    max_binding,
                    ..GpuOptions::default()
                };
                let plan = plan_for(&h, opts, gpu_opts, g.plan_limits());
                let engine = pollster::block_on(gpu::load_engine_from(
                    g.clone(),
                    &Bytes(&bytes),
                    opts,
                    gpu_opts,
                    common::now_ms,
                    &|_, _| {},
                ))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                let held = engine.memory();
                let what = format!("{name}, max_binding {max_binding:?}, context {context}");
                assert_eq!(held.backend, "gpu");
                assert_eq!(plan.gpu, held.gpu, "{what}");
                assert!(plan.gpu_fits, "{what}: {:?}", plan.gpu_error);
                assert_eq!(plan.context, engine.context_len(), "{what}");
                let m = plan.gpu.unwrap();
                assert!(m.weights > 0 && m.scratch > 0, "{what}");
                let c = &engine.config;
                assert_eq!(
                    m.kv_cache,
                    (2 * c.n_layers * context * c.kv_dim() * 2) as u64,
                    "{what}"
                );
                eprintln!(
                    "{what}: weights {} kv {} scratch {} largest {} buffers {}",
                    m.weights, m.kv_cache, m.scratch, m.largest_binding, m.buffers
                );
                drop(engine);
            }
        }
        // A small binding splits matrices: more buffers, a smaller largest.
        let plan = |max_binding| {
            gpu::plan_memory(
                &h,
                &PlanOptions {
                    gpu: GpuOptions {
                        max_binding,
                        ..GpuOptions::default()
                    },
                    limits: g.plan_limits(),
                    ..PlanOptions::default()
                },
            )
            .unwrap()
            .gpu
            .unwrap()
        };
        let (whole, split) = (plan(None), plan(Some(small)));
        assert!(split.buffers > whole.buffers, "{name}");
        assert!(split.weights >= whole.weights, "{name}");
    }
}

/// Tuning flags that change buffers (no fusing, the simple attention
/// kernel and its score scratch, no split attention, no flash prefill
/// list), and the in-memory
/// load (uploads rather than deferred writes), give what the plan says.
#[test]
fn the_plan_follows_tuning_and_the_in_memory_load() {
    let Some(g) = common::gpu() else { return };
    let files = files();
    for path in files.iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.starts_with("synth") || n.starts_with("SmolLM2")
    }) {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let h = header(&bytes);
        let tunings = [
            GpuTuning {
                fuse: false,
                ..GpuTuning::default()
            },
            GpuTuning {
                chunked_attention: false,
                ..GpuTuning::default()
            },
            GpuTuning {
                split_attention: false,
                ..GpuTuning::default()
            },
            GpuTuning {
                flash_prefill: false,
                ..GpuTuning::default()
            },
            // The integer path everywhere, with the int8 x that gate/up
            // writes for down (glu_q) and that Wo writes for gate/up
            // (wo_q), which the plan counts, and the down products made
            // again to write q/k/v's (down_q), whose first uniforms the
            // load releases.
            GpuTuning {
                int_min_bytes: 0,
                int_min_bytes_q8_0: 0,
                glu_q_min: 0,
                glu_own_x: 0,
                wo_q_min: 0,
                ..GpuTuning::default()
            },
        ];
        for tuning in tunings {
            let opts = engine_opts(300);
            let gpu_opts = GpuOptions {
                tuning,
                max_batch: 32,
                ..GpuOptions::default()
            };
            let plan = plan_for(&h, opts, gpu_opts, g.plan_limits());
            let engine: Engine = pollster::block_on(gpu::load_engine(
                g.clone(),
                bytes.clone(),
                opts,
                gpu_opts,
                common::now_ms,
                &|_| {},
            ))
            .unwrap();
            assert_eq!(plan.gpu, engine.memory().gpu, "{name}, {tuning:?}");
            // Sampling on the GPU (its ops are built on first use) and a
            // greedy run allocate nothing more: the load held it all.
            let mut engine = engine;
            for temperature in [0.8, 0.0] {
                let params = webgguf::sampler::SamplerParams {
                    temperature,
                    ..Default::default()
                };
                pollster::block_on(engine.generate(&[1, 2, 3], 4, params, &mut |_, _| true))
                    .unwrap();
            }
            assert_eq!(
                plan.gpu,
                engine.memory().gpu,
                "{name}, {tuning:?}, after use"
            );
        }
    }
}

#[test]
fn the_plan_equals_what_the_cpu_engine_holds() {
    let Some(shared) = common::shared() else {
        return;
    };
    for f in ["stories260K.F32.gguf", "synth256.Q6_K.gguf"] {
        let bytes = std::fs::read(shared.join("models").join(f)).unwrap();
        let h = header(&bytes);
        for context in [0, 333] {
            let opts = engine_opts(context);
            let plan = gpu::plan_memory(
                &h,
                &PlanOptions {
                    engine: opts,
                    ..PlanOptions::default()
                },
            )
            .unwrap();
            let engine = Engine::load_cpu(
                bytes.clone(),
                opts,
                Box::new(webgguf::cpu::Serial),
                common::now_ms,
            )
            .unwrap();
            let held = engine.memory();
            assert_eq!(held.backend, "cpu");
            assert_eq!(held.gpu, None);
            assert_eq!(held.cpu, Some(plan.cpu), "{f}, context {context}");
            assert_eq!(plan.cpu.file, bytes.len() as u64);
            assert!(plan.cpu_fits);
            // The same need against a limit it exceeds.
            let tight = gpu::plan_memory(
                &h,
                &PlanOptions {
                    engine: opts,
                    cpu_limit: plan.cpu.total - 1,
                    ..PlanOptions::default()
                },
            )
            .unwrap();
            assert!(!tight.cpu_fits);
            let e = tight.cpu_error.unwrap();
            assert!(
                e.contains("memory limit") && e.contains(&plan.cpu.total.to_string()),
                "{e}"
            );
        }
    }
}

/// A plan that does not fit says which limit, with the sizes; one that
/// cannot be made at all (a row over the binding) says why.
#[test]
fn a_failed_fit_check_names_the_limit() {
    let Some(shared) = common::shared() else {
        return;
    };
    let bytes = std::fs::read(shared.join("models/synth256.Q6_K.gguf")).unwrap();
    let h = header(&bytes);
    let plan = |limits: GpuLimits| {
        gpu::plan_memory(
            &h,
            &PlanOptions {
                limits,
                ..PlanOptions::default()
            },
        )
        .unwrap()
    };
    let ok = plan(GpuLimits::WEBGPU_DEFAULT);
    assert!(ok.gpu_fits && ok.gpu_error.is_none());
    let m = ok.gpu.unwrap();
    assert_eq!(m.total, m.weights + m.kv_cache + m.scratch);

    // The logits (vocab x 4 bytes) outgrow a binding that the split
    // weights still fit.
    let vocab_bytes = 512 * 4;
    let p = plan(GpuLimits {
        max_storage_buffer_binding_size: vocab_bytes + 4,
        max_buffer_size: 1 << 30,
        total_memory: None,
    });
    assert!(!p.gpu_fits);
    let e = p.gpu_error.unwrap();
    assert!(e.contains("max_storage_buffer_binding_size"), "{e}");
    assert!(
        e.contains(&p.gpu.unwrap().largest_binding.to_string()),
        "{e}"
    );

    let p = plan(GpuLimits {
        max_storage_buffer_binding_size: 1 << 30,
        max_buffer_size: m.largest_binding - 4,
        total_memory: None,
    });
    let e = p.gpu_error.unwrap();
    assert!(e.contains("max_buffer_size"), "{e}");

    let p = plan(GpuLimits {
        total_memory: Some(m.total - 1),
        ..GpuLimits::WEBGPU_DEFAULT
    });
    let e = p.gpu_error.unwrap();
    assert!(!p.gpu_fits && e.contains(&m.total.to_string()), "{e}");

    // A binding smaller than one row: the GPU cannot take the model.
    let p = plan(GpuLimits {
        max_storage_buffer_binding_size: 64,
        max_buffer_size: 64,
        total_memory: None,
    });
    assert!(p.gpu.is_none() && !p.gpu_fits);
    assert!(p.gpu_error.unwrap().contains("storage binding"));
    // The CPU side does not depend on the adapter.
    assert_eq!(p.cpu, ok.cpu);
}
