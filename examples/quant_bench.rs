//! Throughput of the quantized dot products on this CPU.
//!
//! `cargo run --release --example quant_bench [filter]`
//!
//! For each weight type: a matrix-vector product done row by row with
//! `vec_dot` (decode), the same with one `gemm` call on one token, and a
//! 64-token `gemm` (prefill); SIMD against the scalar reference. Shapes are
//! SmolLM2-135M's FFN (576 -> 1536 and 1536 -> 576). Single-threaded.
//! Also `quant_bench TYPE MODE ITERS` (one loop, for `perf stat`) and
//! `quant_bench model [THREADS]` (all matrix products of a SmolLM2 token).
//! `WEBGGUF_SIMD=scalar|avx2|avxvnni` caps the instruction set.

use std::time::Instant;
use webgguf::quant::{self, GgmlType};

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Seconds per call of `f`: the best of several runs of about `budget / 5`
/// seconds each, since the machine may be shared.
fn time(budget: f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        if t.elapsed().as_secs_f64() > budget / 5.0 {
            break;
        }
        iters *= 2;
    }
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .fold(f64::MAX, f64::min)
}

/// `rows` random weight rows of `n` elements: random floats quantized where
/// `quantize_row` can, otherwise random bytes with small f16 scales.
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
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
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

/// `quant_bench TYPE MODE ITERS`: only one measurement loop, for counting
/// cycles with `perf stat -e cycles:u` on a shared machine. MODE is `dot`
/// (vec_dot per row), `gemm1` or `gemm64`; the shape is 1536 x 576.
fn single(ty: GgmlType, mode: &str, iters: usize) {
    let (rows, n) = if ty.block_len() == 256 {
        (1536, 768)
    } else {
        (1536, 576)
    };
    let mut rng = Rng(42);
    let wrb = ty.row_bytes(n).unwrap();
    let w = weights(ty, rows, n, &mut rng);
    let at = ty.vec_dot_type();
    let arb = at.row_bytes(n).unwrap();
    let xf: Vec<f32> = (0..n * 64).map(|_| rng.f32()).collect();
    let mut act = vec![0u8; arb * 64];
    assert!(quant::quantize_row(at, &xf, &mut act));
    let mut out = vec![0f32; rows * 64];
    let mut macs = 0usize;
    for _ in 0..iters {
        match mode {
            "dot" => {
                for (r, o) in out[..rows].iter_mut().enumerate() {
                    *o = quant::vec_dot(ty, n, &w[r * wrb..(r + 1) * wrb], &act[..arb]);
                }
                macs += rows * n;
            }
            "gemm1" => {
                quant::gemm(ty, n, &w, &act[..arb], 1, &mut out[..rows]);
                macs += rows * n;
            }
            _ => {
                quant::gemm(ty, n, &w, &act, 64, &mut out);
                macs += rows * n * 64;
            }
        }
    }
    println!(
        "{} {mode}: {macs} MACs, checksum {}",
        ty.name(),
        out.iter().sum::<f32>()
    );
}

/// `quant_bench model [THREADS]`: the matrix products of one SmolLM2-135M
/// token (30 layers of Q4_1 q/k/v/o/gate/up/down, a Q8_0 LM head), with
/// each matrix's rows split over the threads and no other work: an upper
/// bound on decode and prefill speed from the kernels alone.
fn model(threads: usize) {
    let (d, kv, ff, vocab, layers) = (576usize, 192usize, 1536usize, 49152usize, 30usize);
    let mut rng = Rng(99);
    let q41 = GgmlType::Q4_1;
    // (rows, n) of each layer's matrices.
    let shapes = [(d, d), (kv, d), (kv, d), (d, d), (ff, d), (ff, d), (d, ff)];
    let mut mats: Vec<(GgmlType, usize, usize, Vec<u8>)> = (0..layers)
        .flat_map(|_| shapes.to_vec())
        .map(|(r, n)| (q41, r, n, weights(q41, r, n, &mut rng)))
        .collect();
    let head = weights(GgmlType::Q8_0, vocab, d, &mut rng);
    mats.push((GgmlType::Q8_0, vocab, d, head));
    for (ntok, lm_head) in [(1usize, true), (64, false)] {
        let acts: Vec<Vec<u8>> = [d, ff]
            .iter()
            .map(|&n| {
                let x: Vec<f32> = (0..n * ntok).map(|_| rng.f32()).collect();
                let mut a = vec![0u8; GgmlType::Q8_1.row_bytes(n * ntok).unwrap()];
                quant::quantize_row(GgmlType::Q8_1, &x, &mut a);
                a
            })
            .collect();
        let mut a80 = vec![0u8; GgmlType::Q8_0.row_bytes(d * ntok).unwrap()];
        let x: Vec<f32> = (0..d * ntok).map(|_| rng.f32()).collect();
        quant::quantize_row(GgmlType::Q8_0, &x, &mut a80);
        let pass = || {
            std::thread::scope(|sc| {
                for th in 0..threads {
                    let (mats, acts, a80) = (&mats, &acts, &a80);
                    sc.spawn(move || {
                        let mut out = vec![0f32; vocab * ntok];
                        for (ty, rows, n, w) in mats {
                            if *ty == GgmlType::Q8_0 && !lm_head {
                                continue;
                            }
                            let act = if *ty == GgmlType::Q8_0 {
                                a80
                            } else if *n == d {
                                &acts[0]
                            } else {
                                &acts[1]
                            };
                            let (r0, r1) = (rows * th / threads, rows * (th + 1) / threads);
                            let wrb = ty.row_bytes(*n).unwrap();
                            let o = &mut out[..(r1 - r0) * ntok];
                            quant::gemm(*ty, *n, &w[r0 * wrb..r1 * wrb], act, ntok, o);
                        }
                    });
                }
            })
        };
        let t = time(2.0, pass);
        let what = if ntok == 1 {
            "decode (with LM head)"
        } else {
            "prefill, 64 tokens (no LM head)"
        };
        println!(
            "{what}, {threads} threads: {:.1} ms per pass, {:.0} tok/s",
            t * 1e3,
            ntok as f64 / t
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("model") {
        model(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2));
        return;
    }
    if args.len() == 4 {
        let ty = (0..40)
            .filter_map(GgmlType::from_id)
            .find(|t| t.name().eq_ignore_ascii_case(&args[1]));
        single(
            ty.expect("unknown type"),
            &args[2],
            args[3].parse().unwrap(),
        );
        return;
    }
    let filter = args.get(1).cloned();
    // Activation encoding: one prefill batch of 64 tokens x 1536.
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..64 * 1536).map(|_| rng.f32()).collect();
    for ty in [
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q8_K,
        GgmlType::F16,
    ] {
        let mut dst = vec![0u8; ty.row_bytes(x.len()).unwrap()];
        let t = time(0.3, || {
            quant::quantize_row(ty, &x, &mut dst);
        });
        println!(
            "quantize_row {:5}: {:.2} ns/element",
            ty.name(),
            t / x.len() as f64 * 1e9
        );
    }
    println!("simd level: {}", quant::simd_level());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let types = [
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::IQ4_NL,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::F32,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
    ];
    println!(
        "{:7} {:>11} | {:>17} {:>17} {:>17} | {:>9} {:>9} {:>9}",
        "type",
        "rows x n",
        "vec_dot GB/s GMAC",
        "gemm1 GB/s GMAC",
        "gemm64 GMAC/s",
        "scal dot",
        "scal g64",
        "speedup"
    );
    for ty in types {
        if filter
            .as_deref()
            .is_some_and(|f| !ty.name().eq_ignore_ascii_case(f))
        {
            continue;
        }
        // SmolLM2-135M's FFN shapes; K-quants need n % 256 == 0, so they get
        // a 768-wide model's instead.
        let shapes = if ty.block_len() == 256 {
            [(1536usize, 768usize), (768, 1536)]
        } else {
            [(1536, 576), (576, 1536)]
        };
        for (rows, n) in shapes {
            let wrb = ty.row_bytes(n).unwrap();
            let w = weights(ty, rows, n, &mut rng);
            let at = ty.vec_dot_type();
            let arb = at.row_bytes(n).unwrap();
            let ntok = 64;
            let xf: Vec<f32> = (0..n * ntok).map(|_| rng.f32()).collect();
            let mut act = vec![0u8; arb * ntok];
            assert!(quant::quantize_row(at, &xf, &mut act));
            let a1 = &act[..arb];

            let macs1 = (rows * n) as f64;
            let bytes1 = (rows * wrb) as f64;
            let mut out = vec![0f32; rows * ntok];

            let t_dot = time(0.3, || {
                for (r, o) in out[..rows].iter_mut().enumerate() {
                    *o = quant::vec_dot(ty, n, &w[r * wrb..(r + 1) * wrb], a1);
                }
            });
            let t_g1 = time(0.3, || quant::gemm(ty, n, &w, a1, 1, &mut out[..rows]));
            let t_g64 = time(0.5, || quant::gemm(ty, n, &w, &act, ntok, &mut out));
            let t_sdot = time(0.2, || {
                quant::scalar::gemm(ty, n, &w, a1, 1, &mut out[..rows])
            });
            let t_sg64 = time(0.3, || quant::scalar::gemm(ty, n, &w, &act, ntok, &mut out));
            println!(
                "{:7} {:>5}x{:<5} | {:>7.2} {:>8.2} {:>7.2} {:>8.2} {:>17.2} | {:>9.2} {:>9.2} {:>4.1}/{:<4.1}",
                ty.name(),
                rows,
                n,
                bytes1 / t_dot / 1e9,
                macs1 / t_dot / 1e9,
                bytes1 / t_g1 / 1e9,
                macs1 / t_g1 / 1e9,
                macs1 * ntok as f64 / t_g64 / 1e9,
                macs1 / t_sdot / 1e9,
                macs1 * ntok as f64 / t_sg64 / 1e9,
                t_sdot / t_g1,
                t_sg64 / t_g64,
            );
        }
    }
}
