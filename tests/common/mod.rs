//! Shared helpers for the integration tests: locating ../shared, loading
//! llama.cpp's reference files, and building engines.
#![allow(dead_code)]

use std::path::PathBuf;

use webgguf::cpu::Serial;
use webgguf::engine::{Engine, EngineOptions};
use webgguf::model::LoadOptions;
use webgguf::synthetic::Shape;

#[path = "oracle.rs"]
pub mod oracle;
pub use oracle::Reference;

/// `../shared` next to the crate, or `None` (after saying why) when it is
/// absent outside CI. Under `CI=true` its absence fails the test.
pub fn shared() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.join("reference").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("../shared is missing, and CI=true requires it");
    }
    eprintln!("SKIPPED: ../shared is absent; reference checks need llama.cpp's oracle files");
    None
}

/// The default SmolLM2 model fetched by scripts/setup.sh, if present.
pub fn smollm2() -> Option<PathBuf> {
    cached("SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// Gemma 3 270M Q4_K_M, assembled by scripts/setup.sh, if present.
pub fn gemma3_270m() -> Option<PathBuf> {
    cached("gemma-3-270m-q4_k_m.gguf")
}

/// A model file that scripts/setup.sh puts in .cache (required under CI).
pub fn cached(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".cache")
        .join(name);
    if p.is_file() {
        return Some(p);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing; run scripts/setup.sh", p.display());
    }
    eprintln!("SKIPPED: {} is absent; run scripts/setup.sh", p.display());
    None
}

pub fn now_ms() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static T0: OnceLock<Instant> = OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

pub fn cpu_engine(path: &std::path::Path, upcast_f16: bool) -> Engine {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let opts = EngineOptions {
        context: 512,
        load: LoadOptions { upcast_f16 },
        ..EngineOptions::default()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    Engine::load_cpu(
        bytes,
        opts,
        Box::new(webgguf::pool::ThreadPool::new(threads)),
        now_ms,
    )
    .unwrap_or_else(|e| panic!("load {}: {e}", path.display()))
}

/// A GPU, or `None` (after saying why) when no adapter exists; under
/// CI=true (lavapipe installed) that is a failure.
#[cfg(feature = "gpu")]
pub fn gpu() -> Option<webgguf::gpu::Gpu> {
    match pollster::block_on(webgguf::gpu::Gpu::new()) {
        // With WEBGGUF_TEST_WGSL=DIR (scripts/test.sh) every kernel the
        // whole-model tests build is written to DIR too, so that
        // tests/tint/check.mjs also sees the kernels only a real model's
        // shapes and type mixes select.
        Ok(g) => Some(match std::env::var_os("WEBGGUF_TEST_WGSL") {
            Some(dir) => g.writing_shaders(std::path::Path::new(&dir)),
            None => g,
        }),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true requires a GPU adapter (lavapipe): {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

/// The engine on the GPU backend, or `None` when no adapter exists.
#[cfg(feature = "gpu")]
pub fn gpu_engine(path: &std::path::Path, upcast_f16: bool) -> Option<Engine> {
    Some(gpu_engine_on(gpu()?, path, upcast_f16))
}

/// `gpu_engine` with `tune` applied to the tests' tuning first.
#[cfg(feature = "gpu")]
pub fn gpu_engine_tuned(
    path: &std::path::Path,
    tune: fn(&mut webgguf::gpu::GpuTuning),
) -> Option<Engine> {
    Some(gpu_engine_with(gpu()?, path, false, tune))
}

/// The engine on the GPU backend of `gpu` (whose handle then sees, for
/// instance, the bytes the engine reads back).
#[cfg(feature = "gpu")]
pub fn gpu_engine_on(gpu: webgguf::gpu::Gpu, path: &std::path::Path, upcast_f16: bool) -> Engine {
    gpu_engine_with(gpu, path, upcast_f16, |_| {})
}

#[cfg(feature = "gpu")]
fn gpu_engine_with(
    gpu: webgguf::gpu::Gpu,
    path: &std::path::Path,
    upcast_f16: bool,
    tune: fn(&mut webgguf::gpu::GpuTuning),
) -> Engine {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let opts = EngineOptions {
        context: 512,
        load: LoadOptions { upcast_f16 },
        ..EngineOptions::default()
    };
    // The test models are far smaller than the integer path's default
    // thresholds (`gpu::INT_MIN_BYTES`, `INT_MIN_BYTES_Q8_0`): take it for
    // every product, so that the oracle checks cover it (float weights
    // never take it), and with it the attention kernels' int8 output for Wo
    // where heads are whole 32-element blocks (the real Gemma 3 270M).
    let mut gpu_opts = webgguf::gpu::GpuOptions::default();
    gpu_opts.tuning.int_min_bytes = 0;
    gpu_opts.tuning.int_min_bytes_q8_0 = 0;
    tune(&mut gpu_opts.tuning);
    pollster::block_on(webgguf::gpu::load_engine(
        gpu,
        bytes,
        opts,
        gpu_opts,
        now_ms,
        &|_| {},
    ))
    .unwrap_or_else(|e| panic!("load {} on the GPU: {e}", path.display()))
}

pub fn serial_engine(path: &std::path::Path) -> Engine {
    let bytes = std::fs::read(path).unwrap();
    let opts = EngineOptions {
        context: 512,
        ..EngineOptions::default()
    };
    Engine::load_cpu(bytes, opts, Box::new(Serial), now_ms).unwrap()
}

/// Where reference `r`'s model file is: ../shared/models, or .cache for
/// the real models setup fetches; `None` when it is not available here.
pub fn model_path(shared: &std::path::Path, r: &Reference) -> Option<PathBuf> {
    match r.model.as_str() {
        "SmolLM2-135M-Instruct.Q4_1.gguf" | "SmolLM2-135M-Instruct.F16.from-Q4_1.gguf" => smollm2(),
        "gemma-3-270m-q4_k_m.gguf" => gemma3_270m(),
        m if m.starts_with("SmolLM2") => {
            // Made by llama-quantize from the Q4_1 file; not shipped here.
            eprintln!("skip {m} (file not available)");
            None
        }
        m => Some(shared.join("models").join(m)),
    }
}

/// Teacher-forced check of `e` against reference `r`: the steps where our
/// top-1 differs from llama.cpp's outside a near-tie, and the largest
/// |dlogit| over llama.cpp's top-10 (see `oracle::compare_forced`).
pub fn forced(e: &mut Engine, r: &Reference) -> (Vec<usize>, f32) {
    let (toks, start) = oracle::forced_input(r);
    let steps = pollster::block_on(e.logits_at(&toks, start, 10))
        .unwrap_or_else(|err| panic!("{}: {err}", r.model));
    oracle::compare_forced(&steps, r)
}

pub fn references(shared: &std::path::Path, file: &str) -> Vec<Reference> {
    let text = std::fs::read_to_string(shared.join("reference").join(file)).unwrap();
    oracle::parse_references(&text)
}

/// Minimal GGUF v3 writer for building malformed and synthetic files in tests.
pub mod gguf_writer {
    pub enum Val {
        U32(u32),
        F32(f32),
        Bool(bool),
        Str(String),
        StrArr(Vec<String>),
        F32Arr(Vec<f32>),
        I32Arr(Vec<i32>),
    }

    pub struct Tensor {
        pub name: String,
        pub dims: Vec<u64>,
        pub ty: u32,
        pub data: Vec<u8>,
    }

    fn put_str(b: &mut Vec<u8>, s: &str) {
        b.extend((s.len() as u64).to_le_bytes());
        b.extend(s.as_bytes());
    }

    /// Serialize; returns the bytes and the offset of each tensor-info record
    /// (so tests can corrupt specific fields).
    pub fn build(kv: &[(&str, Val)], tensors: &[Tensor]) -> (Vec<u8>, Vec<usize>) {
        let mut b = Vec::new();
        b.extend(b"GGUF");
        b.extend(3u32.to_le_bytes());
        b.extend((tensors.len() as u64).to_le_bytes());
        b.extend((kv.len() as u64).to_le_bytes());
        for (k, v) in kv {
            put_str(&mut b, k);
            match v {
                Val::U32(x) => {
                    b.extend(4u32.to_le_bytes());
                    b.extend(x.to_le_bytes());
                }
                Val::F32(x) => {
                    b.extend(6u32.to_le_bytes());
                    b.extend(x.to_le_bytes());
                }
                Val::Bool(x) => {
                    b.extend(7u32.to_le_bytes());
                    b.push(*x as u8);
                }
                Val::Str(s) => {
                    b.extend(8u32.to_le_bytes());
                    put_str(&mut b, s);
                }
                Val::StrArr(a) => {
                    b.extend(9u32.to_le_bytes());
                    b.extend(8u32.to_le_bytes());
                    b.extend((a.len() as u64).to_le_bytes());
                    for s in a {
                        put_str(&mut b, s);
                    }
                }
                Val::F32Arr(a) => {
                    b.extend(9u32.to_le_bytes());
                    b.extend(6u32.to_le_bytes());
                    b.extend((a.len() as u64).to_le_bytes());
                    for x in a {
                        b.extend(x.to_le_bytes());
                    }
                }
                Val::I32Arr(a) => {
                    b.extend(9u32.to_le_bytes());
                    b.extend(5u32.to_le_bytes());
                    b.extend((a.len() as u64).to_le_bytes());
                    for x in a {
                        b.extend(x.to_le_bytes());
                    }
                }
            }
        }
        let mut infos = Vec::new();
        let mut off = 0u64;
        for t in tensors {
            infos.push(b.len());
            put_str(&mut b, &t.name);
            b.extend((t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                b.extend(d.to_le_bytes());
            }
            b.extend(t.ty.to_le_bytes());
            b.extend(off.to_le_bytes());
            off += (t.data.len() as u64).div_ceil(32) * 32;
        }
        while b.len() % 32 != 0 {
            b.push(0);
        }
        for t in tensors {
            let start = b.len();
            b.extend(&t.data);
            while (b.len() - start) % 32 != 0 {
                b.push(0);
            }
        }
        (b, infos)
    }

    /// A tiny but complete llama model (random f32 weights) with a
    /// 4-token SPM vocabulary; `vocab` rows in the embedding.
    pub fn tiny_llama(arch: &str, vocab: usize) -> (Vec<u8>, Vec<usize>) {
        tiny_llama_with(arch, vocab, |_, _| {})
    }

    /// `tiny_llama`, with `edit` applied to its metadata and tensors before
    /// serializing (to drop or retype an entry).
    pub fn tiny_llama_with(
        arch: &str,
        vocab: usize,
        edit: impl FnOnce(&mut Vec<(&str, Val)>, &mut Vec<Tensor>),
    ) -> (Vec<u8>, Vec<usize>) {
        let dim = 32u64;
        let ff = 64u64;
        let f32s = |n: u64, seed: u32| -> Vec<u8> {
            (0..n)
                .flat_map(|i| {
                    let x = ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32
                        / (1u32 << 24) as f32;
                    (x - 0.5).to_le_bytes()
                })
                .collect()
        };
        let t = |name: &str, dims: Vec<u64>, seed| Tensor {
            name: name.into(),
            data: f32s(dims.iter().product(), seed),
            dims,
            ty: 0,
        };
        let mut tensors = vec![
            t("token_embd.weight", vec![dim, vocab as u64], 1),
            t("output_norm.weight", vec![dim], 2),
        ];
        for (i, (n, d)) in [
            ("attn_norm.weight", vec![dim]),
            ("attn_q.weight", vec![dim, dim]),
            ("attn_k.weight", vec![dim, dim]),
            ("attn_v.weight", vec![dim, dim]),
            ("attn_output.weight", vec![dim, dim]),
            ("ffn_norm.weight", vec![dim]),
            ("ffn_gate.weight", vec![dim, ff]),
            ("ffn_up.weight", vec![dim, ff]),
            ("ffn_down.weight", vec![ff, dim]),
        ]
        .into_iter()
        .enumerate()
        {
            tensors.push(t(&format!("blk.0.{n}"), d, 10 + i as u32));
        }
        let kv = vec![
            ("general.architecture", Val::Str(arch.into())),
            (
                &*Box::leak(format!("{arch}.embedding_length").into_boxed_str()),
                Val::U32(dim as u32),
            ),
            (
                &*Box::leak(format!("{arch}.block_count").into_boxed_str()),
                Val::U32(1),
            ),
            (
                &*Box::leak(format!("{arch}.attention.head_count").into_boxed_str()),
                Val::U32(4),
            ),
            (
                &*Box::leak(format!("{arch}.feed_forward_length").into_boxed_str()),
                Val::U32(ff as u32),
            ),
            ("tokenizer.ggml.model", Val::Str("llama".into())),
            (
                "tokenizer.ggml.tokens",
                Val::StrArr(vec![
                    "<unk>".into(),
                    "<s>".into(),
                    "</s>".into(),
                    "\u{2581}a".into(),
                ]),
            ),
            (
                "tokenizer.ggml.scores",
                Val::F32Arr(vec![0.0, 0.0, 0.0, -1.0]),
            ),
            ("tokenizer.ggml.token_type", Val::I32Arr(vec![2, 3, 3, 1])),
            ("tokenizer.ggml.bos_token_id", Val::U32(1)),
            ("tokenizer.ggml.eos_token_id", Val::U32(2)),
        ];
        let mut kv = kv;
        edit(&mut kv, &mut tensors);
        build(&kv, &tensors)
    }
}

/// Teacher-forced check of one reference against `bound`: prints a line and
/// records a failure.
pub fn check_forced(e: &mut Engine, r: &Reference, bound: f32, failures: &mut Vec<String>) {
    let (bad, worst) = forced(e, r);
    report(
        bad.is_empty() && worst <= bound,
        r,
        &format!("forced, max |dlogit| {worst:.4} (bound {bound})"),
        &format!("top-1 disagrees at steps {bad:?}; max |dlogit| {worst} > {bound}?"),
        failures,
    );
}

/// Print one check's line; on failure record `detail` for the final assert.
pub fn report(ok: bool, r: &Reference, check: &str, detail: &str, failures: &mut Vec<String>) {
    let mark = if ok { "ok  " } else { "FAIL" };
    eprintln!("{mark} {} {:?}: {check}", r.model, r.prompt);
    if !ok {
        failures.push(format!("{} {:?}: {detail}", r.model, r.prompt));
    }
}

/// At least one reference ran, and none failed. Outside CI a run where
/// every model was absent (each already said SKIPPED and why) skips; under
/// CI those models are required (`cached` panics first), so no reference
/// checked is a failure there: a filter that matches nothing.
pub fn assert_all_passed(checked: usize, failures: &[String]) {
    if checked == 0 && std::env::var("CI").as_deref() != Ok("true") {
        eprintln!("SKIPPED: no reference could be checked (see above)");
        return;
    }
    assert!(checked > 0, "no reference could be checked");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A small llama-shaped model for the synthetic tests (two layers, GQA),
/// shared so that they build the same model.
pub const TINY: Shape = Shape {
    name: "tiny",
    arch: "llama",
    dim: 64,
    n_layers: 2,
    n_heads: 4,
    n_kv_heads: 2,
    ffn_dim: 128,
    vocab: 300,
    tied: false,
    rope_base: 10000.0,
    context: 64,
    head_dim: 0,
    window: 0,
};
