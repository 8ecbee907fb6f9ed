//! Speed of the CPU engine's kernels and of whole-model decoding, built for
//! wasm32 and run single-threaded in Node: `bench/wasm_bench.sh` builds it
//! with and without simd128 and runs `bench/wasm_bench.mjs` on each.
//! Natively, `cargo run --release --example wasm_bench [MODEL.gguf]` prints
//! the same tables for reference.
//!
//! Kernels: for each weight format, the decode matrix-vector product
//! (`gemm` with one token, SmolLM2's 1536 x 576 FFN shape, 1536 x 768 for
//! the K-quants) in GB/s of weight bytes, and a 32-token prefill `gemm` in
//! GMAC/s, through the dispatching `quant::gemm` and through
//! `quant::scalar::gemm`. Then activation encoding and the attention's f16
//! rounding in ns per element. Model: llama-bench's pp and tg on a GGUF
//! file, on the serial CPU engine.
#![cfg_attr(target_arch = "wasm32", no_main)]

use std::future::Future;
use std::task::{Context, Poll, Waker};
use webgguf::cpu::Serial;
use webgguf::engine::{Engine, EngineOptions};
use webgguf::quant::{self, GgmlType};

#[cfg(target_arch = "wasm32")]
mod host {
    #[link(wasm_import_module = "env")]
    extern "C" {
        fn now_ms() -> f64;
        fn print(ptr: *const u8, len: usize);
    }
    pub fn now() -> f64 {
        // SAFETY: an import without preconditions.
        unsafe { now_ms() }
    }
    pub fn out(s: &str) {
        // SAFETY: the host reads `len` bytes at `ptr`, which `s` holds.
        unsafe { print(s.as_ptr(), s.len()) }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    use std::sync::OnceLock;
    use std::time::Instant;
    pub fn now() -> f64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
    pub fn out(s: &str) {
        println!("{s}")
    }
}

/// Buffer for the host to copy a model file into; `bench_model` takes it back.
#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn bench_alloc(len: usize) -> *mut u8 {
    let mut v = std::mem::ManuallyDrop::new(vec![0u8; len]);
    v.as_mut_ptr()
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn bench_kernels(budget_ms: f64) {
    kernels(budget_ms);
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn bench_matmuls(budget_ms: f64) {
    matmuls(budget_ms);
}

/// # Safety
/// `ptr` and `len` come from `bench_alloc(len)`, whose buffer the host filled.
#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub unsafe extern "C" fn bench_model(ptr: *mut u8, len: usize, pp: usize, tg: usize, reps: usize) {
    model(Vec::from_raw_parts(ptr, len, len), pp, tg, reps);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    kernels(300.0);
    if let Some(path) = args.get(1) {
        model(std::fs::read(path).expect("model file"), 128, 128, 2);
    }
}

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Milliseconds per call of `f`: the best of three runs of about
/// `budget / 4` each.
fn time(budget: f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut iters = 1u32;
    loop {
        let t = host::now();
        for _ in 0..iters {
            f();
        }
        if host::now() - t > budget / 4.0 {
            break;
        }
        iters *= 2;
    }
    (0..3)
        .map(|_| {
            let t = host::now();
            for _ in 0..iters {
                f();
            }
            (host::now() - t) / iters as f64
        })
        .fold(f64::MAX, f64::min)
}

/// `rows` random rows: random floats encoded where `quantize_row` can,
/// otherwise random bytes with f16 scales of 0.01.
fn weights(ty: GgmlType, rows: usize, n: usize, rng: &mut Rng) -> Vec<u8> {
    let wf: Vec<f32> = (0..rows * n).map(|_| rng.f32()).collect();
    let mut w = vec![0u8; ty.row_bytes(rows * n).unwrap()];
    if quant::quantize_row(ty, &wf, &mut w) {
        return w;
    }
    for (i, b) in w.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2654435761).rotate_right(13) as u8;
    }
    let d = half::f16::from_f32(0.01).to_bits().to_le_bytes();
    let fields: &[usize] = match ty {
        GgmlType::Q6_K => &[208],
        GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        _ => &[0],
    };
    for blk in w.chunks_exact_mut(ty.block_bytes()) {
        for &at in fields {
            blk[at..at + 2].copy_from_slice(&d);
        }
    }
    w
}

fn kernels(budget: f64) {
    host::out(&format!("simd level: {}", quant::simd_level()));
    host::out(&format!(
        "{:7} {:>10} | {:>14} {:>14} {:>7} | {:>14} {:>14}",
        "type", "rows x n", "decode GB/s", "scalar GB/s", "speedup", "pp32 GMAC/s", "scalar GMAC/s"
    ));
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let types = [
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::IQ4_NL,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::F32,
    ];
    const NTOK: usize = 32;
    for ty in types {
        let rows = 1536;
        let n = if ty.block_len() == 256 { 768 } else { 576 };
        let (wrb, at) = (ty.row_bytes(n).unwrap(), ty.vec_dot_type());
        let arb = at.row_bytes(n).unwrap();
        let w = weights(ty, rows, n, &mut rng);
        let x: Vec<f32> = (0..n * NTOK).map(|_| rng.f32()).collect();
        let mut act = vec![0u8; arb * NTOK];
        assert!(quant::quantize_row(at, &x, &mut act));
        let mut out = vec![0f32; rows * NTOK];
        let gb = |ms: f64| (rows * wrb) as f64 / ms / 1e6;
        let gmac = |ms: f64| (rows * n * NTOK) as f64 / ms / 1e6;
        let t1 = time(budget, || {
            quant::gemm(ty, n, &w, &act[..arb], 1, &mut out[..rows])
        });
        let s1 = time(budget, || {
            quant::scalar::gemm(ty, n, &w, &act[..arb], 1, &mut out[..rows])
        });
        let tp = time(budget, || quant::gemm(ty, n, &w, &act, NTOK, &mut out));
        let sp = time(budget, || {
            quant::scalar::gemm(ty, n, &w, &act, NTOK, &mut out)
        });
        host::out(&format!(
            "{:7} {:>10} | {:>14.2} {:>14.2} {:>6.1}x | {:>14.2} {:>14.2}",
            ty.name(),
            format!("{rows}x{n}"),
            gb(t1),
            gb(s1),
            s1 / t1,
            gmac(tp),
            gmac(sp),
        ));
    }
    let x: Vec<f32> = (0..NTOK * 1536).map(|_| rng.f32()).collect();
    for ty in [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::F16] {
        let mut dst = vec![0u8; ty.row_bytes(x.len()).unwrap()];
        let t = time(budget / 2.0, || {
            quant::quantize_row(ty, &x, &mut dst);
        });
        let s = time(budget / 2.0, || {
            quant::scalar::quantize_row(ty, &x, &mut dst);
        });
        host::out(&format!(
            "quantize_row {:5}: {:.2} ns/element (scalar {:.2})",
            ty.name(),
            t / x.len() as f64 * 1e6,
            s / x.len() as f64 * 1e6
        ));
    }
    let mut y = x.clone();
    let t = time(budget / 2.0, || quant::round_f16_in_place(&mut y));
    let s = time(budget / 2.0, || quant::scalar::round_f16_in_place(&mut y));
    host::out(&format!(
        "round_f16: {:.2} ns/element (scalar {:.2})",
        t / x.len() as f64 * 1e6,
        s / x.len() as f64 * 1e6
    ));
    matmuls(budget * 4.0);
}

/// The matrix products of one SmolLM2-135M Q4_1 decode step (30 layers of
/// Q4_1 q/k/v/o/gate/up/down, the Q8_0 LM head), about 95 MB of weights,
/// more than any cache holds: what the kernels allow, as tokens per second.
fn matmuls(budget: f64) {
    let (d, kv, ff, vocab, layers) = (576usize, 192usize, 1536usize, 49152usize, 30usize);
    let shapes = [(d, d), (kv, d), (kv, d), (d, d), (ff, d), (ff, d), (d, ff)];
    let mut mats: Vec<(GgmlType, usize, usize)> = (0..layers)
        .flat_map(|_| shapes)
        .map(|(r, n)| (GgmlType::Q4_1, r, n))
        .collect();
    mats.push((GgmlType::Q8_0, vocab, d));
    // Random bytes with sane f16 scales: the values do not matter for speed.
    let bytes: Vec<Vec<u8>> = mats
        .iter()
        .enumerate()
        .map(|(i, &(ty, r, n))| {
            let mut w: Vec<u8> = (0..r * ty.row_bytes(n).unwrap())
                .map(|j| ((i + j) as u32).wrapping_mul(2654435761).rotate_right(13) as u8)
                .collect();
            let (d, m) = (half::f16::from_f32(0.01), half::f16::from_f32(-0.05));
            for blk in w.chunks_exact_mut(ty.block_bytes()) {
                blk[0..2].copy_from_slice(&d.to_bits().to_le_bytes());
                if ty == GgmlType::Q4_1 {
                    blk[2..4].copy_from_slice(&m.to_bits().to_le_bytes());
                }
            }
            w
        })
        .collect();
    let total: usize = bytes.iter().map(Vec::len).sum();
    let mut rng = Rng(5);
    let acts: Vec<(GgmlType, usize, Vec<u8>)> = [
        (GgmlType::Q8_1, d),
        (GgmlType::Q8_1, ff),
        (GgmlType::Q8_0, d),
    ]
    .iter()
    .map(|&(ty, n)| {
        let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let mut a = vec![0u8; ty.row_bytes(n).unwrap()];
        quant::quantize_row(ty, &x, &mut a);
        (ty, n, a)
    })
    .collect();
    let mut out = vec![0f32; vocab];
    let mut pass = |scalar: bool| {
        for (&(ty, rows, n), w) in mats.iter().zip(&bytes) {
            let (_, _, a) = acts
                .iter()
                .find(|(at, an, _)| *at == ty.vec_dot_type() && *an == n)
                .unwrap();
            if scalar {
                quant::scalar::gemm(ty, n, w, a, 1, &mut out[..rows]);
            } else {
                quant::gemm(ty, n, w, a, 1, &mut out[..rows]);
            }
        }
    };
    let t = time(budget, || pass(false));
    let s = time(budget, || pass(true));
    // The memory system's share: the same bytes only read (summed as u64).
    let mut sink = 0u64;
    let r = time(budget, || {
        for w in &bytes {
            for c in w.chunks_exact(8) {
                sink = sink.wrapping_add(u64::from_le_bytes(c.try_into().unwrap()));
            }
        }
    });
    host::out(&format!(
        "reading those bytes alone: {:.1} ms = {:.2} GB/s ({sink:x})",
        r,
        total as f64 / r / 1e6
    ));
    host::out(&format!(
        "one token's matmuls ({:.1} MB): {:.1} ms = {:.1} tok/s, {:.2} GB/s (scalar {:.1} ms = {:.1} tok/s)",
        total as f64 / 1e6,
        t,
        1e3 / t,
        total as f64 / t / 1e6,
        s,
        1e3 / s
    ));
}

/// Polls a future that never waits (the CPU backend's) to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn model(bytes: Vec<u8>, pp: usize, tg: usize, reps: usize) {
    let opts = EngineOptions {
        context: 2 * pp.max(tg),
        ..EngineOptions::default()
    };
    let t = host::now();
    let mut e = match Engine::load_cpu(bytes, opts, Box::new(Serial), host::now) {
        Ok(e) => e,
        Err(err) => return host::out(&format!("load failed: {err}")),
    };
    host::out(&format!(
        "loaded {} in {:.0} ms ({:.1} MB of weights per token)",
        e.info.name.as_deref().unwrap_or("model"),
        host::now() - t,
        e.info.weight_bytes_per_token as f64 / 1e6
    ));
    // Greedy text, and a fingerprint of the logits along it: every build of
    // the same engine on wasm32 (simd128 or not) must print the same.
    let prompt = e.prompt_ids("The capital of France is");
    let params = webgguf::sampler::SamplerParams::default();
    match block_on(e.generate(&prompt, 24, params, &mut |_, _| true)) {
        Ok(g) => {
            let tokens: Vec<u32> = prompt.iter().chain(&g.generated_ids).copied().collect();
            let steps = block_on(e.logits_at(&tokens, prompt.len() - 1, 4)).unwrap_or_default();
            let print = steps.iter().flatten().fold(0u32, |h, &(id, l)| {
                (h ^ id ^ l.to_bits())
                    .rotate_left(5)
                    .wrapping_mul(0x9e37_79b1)
            });
            host::out(&format!(
                "greedy: {:?} (logits fingerprint {print:08x})",
                g.text
            ));
        }
        Err(err) => host::out(&format!("generate failed: {err}")),
    }
    match block_on(e.bench(pp, tg, reps)) {
        Ok(r) => host::out(&format!(
            "pp{pp}: {:.2} tok/s   tg{tg}: {:.2} tok/s   (1 thread, {} reps)",
            r.pp_tok_s, r.tg_tok_s, reps
        )),
        Err(err) => host::out(&format!("bench failed: {err}")),
    }
}
