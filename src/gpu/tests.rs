//! Kernel tests: each GPU kernel against a CPU twin on fresh random inputs,
//! with every output buffer poisoned with NaN first so that an element the
//! kernel forgets to write fails loudly. Sizes are deliberately not
//! multiples of the workgroup size (64) and rows start at unaligned bytes.
//!
//! Without a GPU adapter the tests print SKIPPED and pass, except under
//! CI=true, where lavapipe is installed and a missing adapter is a failure.

use super::*;
use crate::error::Error;
use crate::quant::{self, GgmlType};
use crate::sampler::{Rng, Sampler, SamplerParams};

/// The default tuning, except that the integer path takes any product:
/// the test matrices are far below `INT_MIN_BYTES`, and the tests that
/// compare both paths must get the integer one when they ask for it.
/// The cooperative-matrix prefill is off here: the tests below hold the
/// f32 tiled kernel to f32 bounds, and `matmul_coop_matches_cpu` holds
/// matmul_coop.wgsl to its own.
fn tuning() -> GpuTuning {
    GpuTuning {
        int_min_bytes: 0,
        int_min_bytes_q8_0: 0,
        // glu_q on the tests' narrow FFNs too.
        glu_q_min: 0,
        coop_matrix: false,
        ..GpuTuning::default()
    }
}

/// split.wgsl's shapes under test (keys per chunk x threads per key x
/// chunks per split, and whether V loads right after the K dots): the
/// default, and the others `GpuTuning::deep_shape` can pick: fewer
/// threads a workgroup (128, 64), more or fewer threads a key, chunks of
/// 16 to 128 keys, and splits of 2 and 3 chunks; three of them with
/// v_early (one walking several chunks, where the next chunk's K words
/// are in flight beside the V words). Each runs where it fits the heads.
const DEEP_SHAPES: [kernels::DeepShape; 8] = [
    kernels::DeepShape::DEFAULT,
    deep(32, 4, 1, false),
    deep(32, 8, 1, true),
    deep(16, 4, 1, false),
    deep(128, 2, 1, false),
    deep(16, 16, 1, true),
    deep(64, 4, 2, false),
    deep(32, 4, 3, true),
];

const fn deep(keys: u32, tpk: u32, chunks: u32, v_early: bool) -> kernels::DeepShape {
    kernels::DeepShape {
        keys,
        tpk,
        chunks,
        v_early,
    }
}

/// split.wgsl's default shape fits every head size the split path takes
/// (up to 256; 512 too) in every group of 1-8 query heads per kv head,
/// within WebGPU's 16 KiB of workgroup memory (`DeepShape::pick` falls
/// back to it); and a shape that would pass 16 KiB is refused.
#[test]
fn deep_shape_default_fits() {
    for hd in [32usize, 64, 80, 96, 128, 192, 256, 512] {
        for group in 1..=8 {
            let d = kernels::DeepShape::DEFAULT;
            assert!(d.fits(hd, group), "hd {hd} group {group}");
            assert!(d.workgroup_bytes(hd, group) <= 16384);
        }
    }
    let wide = deep(128, 2, 1, false);
    assert!(wide.workgroup_bytes(128, 8) > 16384);
    assert!(!wide.fits(128, 8));
    assert!(wide.fits(128, 4));
    for chunks in [0, kernels::DeepShape::MAX_CHUNKS + 1] {
        let sh = kernels::DeepShape {
            chunks,
            ..kernels::DeepShape::DEFAULT
        };
        assert!(!sh.fits(128, 4), "{chunks} chunks");
    }
}

fn gpu() -> Option<Gpu> {
    match pollster::block_on(Gpu::new()) {
        // With the f16 check run, as a model load runs it, so that the
        // kernels built from it take the forms a load would; and with
        // WEBGGUF_TEST_WGSL=DIR (scripts/test.sh) every kernel built is
        // also written to DIR, for tests/tint/check.mjs.
        Ok(g) => {
            let g = match std::env::var_os("WEBGGUF_TEST_WGSL") {
                Some(dir) => g.writing_shaders(std::path::Path::new(&dir)),
                None => g,
            };
            Some(pollster::block_on(g.checking_rounding()))
        }
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true requires a GPU adapter (lavapipe): {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no GPU adapter ({e})");
            None
        }
    }
}

/// `gpu()` where it has cooperative matrices (the tensor-core kernels'
/// tests); lavapipe has none, so these run on devices only.
fn coop_gpu() -> Option<Gpu> {
    let g = gpu()?;
    if !g.coop {
        eprintln!("SKIPPED: no cooperative matrices with 16x16 f16 products on this adapter");
        return None;
    }
    Some(g)
}

fn uniform(rng: &mut Rng) -> f32 {
    (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
}

fn randn(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| uniform(rng)).collect()
}

fn poisoned(g: &Gpu, len: usize) -> wgpu::Buffer {
    let b = g.storage("out", len as u64 * 4).unwrap();
    let nan: Vec<u8> = (0..len).flat_map(|_| f32::NAN.to_le_bytes()).collect();
    g.queue.write_buffer(&b, 0, &nan);
    b
}

fn read_f32(g: &Gpu, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    let rb = g.readback_buffer(len as u64 * 4);
    g.run(&[], 0, &[(buf, &rb, len as u64 * 4)]);
    let bytes = pollster::block_on(g.read(&rb, len as u64 * 4)).unwrap();
    g.check().unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Offsets of the f16 scale fields in one block: random bytes there could
/// be inf/NaN, so the tests put small finite scales in them.
fn f16_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL => &[0],
        GgmlType::Q4_1 | GgmlType::Q5_1 => &[0, 2],
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        GgmlType::Q4_K | GgmlType::Q5_K => &[0, 2],
        GgmlType::Q6_K => &[208],
        GgmlType::IQ4_XS => &[0],
        _ => &[],
    }
}

/// `rows` random rows of `cols` elements in `ty`: float types via the
/// encoder, block types as random bits with sane scales (this covers every
/// quant bit pattern, including the K-quants that have no encoder here).
fn random_matrix(rng: &mut Rng, ty: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
    let rb = ty.row_bytes(cols).unwrap();
    let mut data = vec![0u8; rows * rb];
    if matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        for r in 0..rows {
            let x = randn(rng, cols);
            assert!(quant::quantize_row(ty, &x, &mut data[r * rb..(r + 1) * rb]));
        }
        return data;
    }
    for b in data.iter_mut() {
        *b = rng.next_u32() as u8;
    }
    let bb = ty.block_bytes();
    for blk in data.chunks_exact_mut(bb) {
        for &at in f16_fields(ty) {
            let v = half::f16::from_f32(uniform(rng) * 0.05);
            blk[at..at + 2].copy_from_slice(&v.to_bits().to_le_bytes());
        }
    }
    data
}

const BLOCK_TYPES: [GgmlType; 15] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q6_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::BF16,
    GgmlType::Q3_K,
    GgmlType::Q2_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
];

/// Run `m . x[t]` for `n` tokens through the matvec kernel, optionally
/// accumulating onto `init`; through the integer path where `k` has an
/// `IntX`.
fn gpu_matvec(
    g: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    x: &[f32],
    n: usize,
    init: Option<&[f32]>,
) -> Vec<f32> {
    let xb = g.upload_f32("x", x);
    let y = match init {
        Some(v) => g.upload_f32("y", v),
        None => poisoned(g, n * m.rows),
    };
    let s = step(g, 0, n as u32);
    let a = MatvecArgs::plain(&xb, &y, &s, m.rows, init.is_some());
    let ops = matvec_ops(g, k, m, 0..m.rows, &a).unwrap();
    // The tests give an `IntX` exactly where they want the integer path.
    assert_eq!(ops[0].label == "quantize_x", k.int_x.is_some(), "{}", m.ty);
    g.run(&[&ops], n as u32, &[]);
    read_f32(g, &y, n * m.rows)
}

/// Matvec for every format vs dequantize_row + an f64 dot product, on the
/// f32 path and (`int`, for the formats with an integer decoder) the
/// integer path (x quantized to int8 blocks by quantize_x.wgsl).
/// Bound: |gpu - ref| <= 2e-5 * sum_k |w_k x_k| + 1e-30, plus on the
/// integer path `int_err` (x's quantization: sum over blocks of d_x / 2 *
/// sum |w|). The weights decode exactly as on the CPU (same f32
/// operations), so the only other error is f32 summation: about (cols /
/// 64 + 6) roundings of 6e-8 relative each, under 2e-6 at these sizes; the
/// bound leaves 10x room.
#[test]
fn matvec_every_format_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(7);
    // 3 blocks per row for the 32-element formats (rows start at odd
    // multiples of 2 bytes), 2 and 3 super-blocks for the K-quants (64 and
    // 96 units: with 64 threads some take a second unit and some do not;
    // Q6_K/Q3_K rows of 3 blocks start at odd multiples of 2 bytes); float
    // rows of 70 (scalar x loads) and 68 (vec4 x loads, not whole units).
    let cases = BLOCK_TYPES.iter().flat_map(|&ty| match ty.block_len() {
        1 => vec![(ty, 70), (ty, 68)],
        32 => vec![(ty, 96)],
        b => vec![(ty, 2 * b), (ty, 3 * b)],
    });
    let int_ok = k.int_dot;
    for ((ty, cols), int) in cases.flat_map(|c| [(c, false), (c, true)]) {
        let int = int && int_ok && kernels::int_decoder(ty).is_some();
        let rows = 37;
        let n = 3;
        k.int_x = int.then(|| IntX::new(&g, cols, n).unwrap());
        let data = random_matrix(&mut rng, ty, rows, cols);
        let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let x = randn(&mut rng, n * cols);
        let init = randn(&mut rng, n * rows);
        let got = gpu_matvec(&g, &mut k, &m, &x, n, None);
        let acc = gpu_matvec(&g, &mut k, &m, &x, n, Some(&init));
        let rb = ty.row_bytes(cols).unwrap();
        let mut wrow = vec![0f32; cols];
        let mut worst = 0f64;
        for r in 0..rows {
            quant::dequantize_row(ty, &data[r * rb..(r + 1) * rb], &mut wrow);
            for t in 0..n {
                let xs = &x[t * cols..(t + 1) * cols];
                let x64: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
                let (dot, mag) = dot_mag(&wrow, &x64);
                let qe = if int { int_err(&wrow, &x64) } else { 0.0 };
                let o = got[t * rows + r] as f64;
                let err = (o - dot).abs();
                assert!(
                    err <= 2e-5 * mag + qe + 1e-30,
                    "{ty} int {int} row {r} token {t}: gpu {o} vs cpu {dot} (scale {mag}, int8 x {qe})"
                );
                let a = acc[t * rows + r] as f64;
                let want = dot + init[t * rows + r] as f64;
                assert!(
                    (a - want).abs() <= 2e-5 * (mag + want.abs()) + qe + 1e-30,
                    "{ty} int {int} accumulate row {r} token {t}: {a} vs {want}"
                );
                worst = worst.max(err / mag.max(1e-30));
            }
        }
        eprintln!("{ty} x {cols} int {int}: max relative error {worst:.2e}");
    }
}

/// Splitting rows across buffers (forced tiny binding limit) changes no
/// bit of the result, for both the matvec and the embedding gather.
#[test]
fn row_split_matches_unsplit() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(11);
    for ty in [GgmlType::Q4_0, GgmlType::F32, GgmlType::Q6_K] {
        let cols = ty.block_len().max(32) * 2;
        let rows = 29;
        let rb = ty.row_bytes(cols).unwrap();
        let data = random_matrix(&mut rng, ty, rows, cols);
        let whole = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let split = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, (4 * rb + 6) as u64).unwrap();
        assert_eq!(whole.parts.len(), 1);
        assert_eq!(split.parts.len(), rows.div_ceil(4));
        let x = randn(&mut rng, 2 * cols);
        // Both paths: f32, and integer where the format has a decoder (one
        // quantize pass before the parts' dispatches).
        for int in [false, true] {
            let int = int && k.int_dot && kernels::int_decoder(ty).is_some();
            k.int_x = int.then(|| IntX::new(&g, cols, 2).unwrap());
            let a = gpu_matvec(&g, &mut k, &whole, &x, 2, None);
            let b = gpu_matvec(&g, &mut k, &split, &x, 2, None);
            assert_eq!(
                a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{ty} int {int}"
            );
        }
        k.int_x = None;
        let toks = [0u32, 28, 5, 17, 4];
        let ea = gpu_embed(&g, &mut k, &whole, &toks, 1.0);
        let eb = gpu_embed(&g, &mut k, &split, &toks, 1.0);
        assert_eq!(ea, eb, "{ty} embed");
    }
    // A row that cannot fit one binding is an error, not a panic.
    let data = vec![0u8; 4 * 18];
    assert!(matches!(
        GpuMatrix::upload(&g, "w", GgmlType::Q4_0, 2, 64, &data, 16),
        Err(Error::DeviceLimit(_))
    ));
}

fn gpu_embed(g: &Gpu, k: &mut Kernels, m: &GpuMatrix, toks: &[u32], scale: f32) -> Vec<f32> {
    let tb = g.upload(
        "tokens",
        &toks
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let x = poisoned(g, toks.len() * m.cols);
    let ops = embed_ops(g, k, m, &tb, &x, scale).unwrap();
    g.run(&[&ops], toks.len() as u32, &[]);
    read_f32(g, &x, toks.len() * m.cols)
}

/// The embedding gather decodes rows exactly like dequantize_row (bitwise:
/// the same f32 operations in the same order), and with a scale (gemma3's
/// sqrt(dim)) multiplies each decoded value by it in f32, as llama.cpp's
/// scale op after get_rows does: bitwise too (one rounded product). The
/// 1e-6 relative slack the test allows is for decoders whose f32
/// operations a GPU compiler may contract into a fused multiply-add.
#[test]
fn embed_every_format_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(3);
    for ty in BLOCK_TYPES {
        let cols = ty.block_len().max(2) * 3;
        let rows = 9;
        let rb = ty.row_bytes(cols).unwrap();
        let data = random_matrix(&mut rng, ty, rows, cols);
        let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let toks = [8u32, 0, 3, 3, 7];
        for scale in [1.0f32, (cols as f32).sqrt()] {
            let got = gpu_embed(&g, &mut k, &m, &toks, scale);
            let mut want = vec![0f32; cols];
            for (t, &tok) in toks.iter().enumerate() {
                let r = tok as usize;
                quant::dequantize_row(ty, &data[r * rb..(r + 1) * rb], &mut want);
                let row = &got[t * cols..(t + 1) * cols];
                for (i, (&a, &b)) in row.iter().zip(&want).enumerate() {
                    let b = b * scale;
                    assert!(
                        a == b || (a - b).abs() <= 1e-6 * b.abs(),
                        "{ty} scale {scale} token {t} elem {i}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

fn step(g: &Gpu, pos: u32, n: u32) -> wgpu::Buffer {
    let s = g.step_buffer();
    g.write_step(&s, pos, n);
    s
}

fn close(what: &str, got: &[f32], want: &[f64], rel: f64, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&a, &b)) in got.iter().zip(want).enumerate() {
        assert!(
            ((a as f64) - b).abs() <= rel * b.abs() + abs,
            "{what}[{i}]: gpu {a} vs cpu {b}"
        );
    }
}

/// `close` with a bound per element.
fn close_each(what: &str, got: &[f32], want: &[f64], tol: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((&a, &b), &e)) in got.iter().zip(want).zip(tol).enumerate() {
        assert!(
            ((a as f64) - b).abs() <= e,
            "{what}[{i}]: gpu {a} vs cpu {b} (bound {e:e})"
        );
    }
}

/// The attention twins' bound for one output acc / total. The twins
/// compute the kernel's scores exactly (f16 x f16 products are exact in
/// f32, summed in the same order), but the GPU's exp may differ from the
/// CPU's in the last bit, which can put a step of the f16 accumulator on
/// the other side of a rounding boundary: one f16 ulp (<= 2^-10 |acc|) of
/// the accumulator at that step, carried to the end scaled by the later
/// rescales, and possibly a second flip it causes. `peak` is the largest
/// |acc| of the recurrence in the final units (each step's |acc| times
/// the rescales after it), so the bound is 2^-9 peak / total, plus 2^-10
/// relative for the final rounding and 1e-6.
fn attention_bound(peak: f32, total: f32, want: f64) -> f64 {
    2f64.powi(-9) * peak as f64 / total as f64 + 1e-3 * want.abs() + 1e-6
}

/// rmsnorm vs an f64 twin at 100 (up to 4 values a thread of 256), 3000
/// (up to 16; neither a multiple of the threads) and 5000 elements a row
/// (past 16 x 256: the looping path, its last turn partial); bound 1e-5
/// relative + 1e-6 (f32 sums of at most ~30 squares a thread, a tree over
/// 256 threads, one sqrt: a few 1e-7 relative).
#[test]
fn rmsnorm_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(5);
    for (dim, n, eps) in [
        (100usize, 3usize, 1e-5f32),
        (3000, 2, 1e-6),
        (5000, 2, 1e-5),
    ] {
        rmsnorm_case(&g, &k, &mut rng, dim, n, eps);
    }
}

fn rmsnorm_case(g: &Gpu, k: &Kernels, rng: &mut Rng, dim: usize, n: usize, eps: f32) {
    let x = randn(rng, n * dim);
    let w = randn(rng, dim);
    let (xb, wb, s) = (
        g.upload_f32("x", &x),
        g.upload_f32("w", &w),
        step(g, 0, n as u32),
    );
    for last in [0u32, 1] {
        let rows = if last == 1 { 1 } else { n };
        let out = poisoned(g, rows * dim);
        let p = g.params([dim as u32, eps.to_bits(), last, 0, 0, 0, 0, 0]);
        let op = Op {
            bind: kernels::bind(
                g,
                &k.rmsnorm(g),
                &[(0, &xb), (1, &wb), (2, &out), (3, &p), (4, &s)],
            ),
            pipeline: k.rmsnorm(g),
            label: "test",
            shape: if last == 1 {
                Shape::Fixed([1, 1, 1])
            } else {
                Shape::PerToken([1, 1, 1], 0)
            },
        };
        g.run(&[&[op]], n as u32, &[]);
        let got = read_f32(g, &out, rows * dim);
        let mut want = Vec::new();
        for t in (n - rows)..n {
            let xs = &x[t * dim..(t + 1) * dim];
            let ms: f64 = xs.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / dim as f64;
            let sc = 1.0 / (ms + eps as f64).sqrt();
            want.extend(xs.iter().zip(&w).map(|(&v, &gw)| v as f64 * sc * gw as f64));
        }
        close(&format!("rmsnorm dim {dim}"), &got, &want, 1e-5, 1e-6);
    }
}

/// rmsnorm of `rows` rows of `dim` elements in f64 (the same gains for
/// every row).
fn norm_rows_f64(x: &[f32], gains: &[f32], eps: f32) -> Vec<f64> {
    x.chunks(gains.len())
        .flat_map(|r| norm_f64(r, gains, eps))
        .collect()
}

/// rmsnorm.wgsl per row: qwen3/gemma3's per-head q/k norm (rows of
/// head_dim = 72, dispatched (heads, tokens)) into another buffer and in
/// place, and `add` (X += rmsnorm(D) * G, gemma3's post-norms) over whole
/// rows of 100 and 5000 (past 16 x 256 threads: the looping path) and,
/// per head, of 72, vs f64 twins. 72 and 100 are not multiples of the 64
/// or 256 threads; 5 tokens of 3 heads. Bounds: the norm as
/// `rmsnorm_matches_cpu` (1e-5 relative + 1e-6); for `add`, 1e-5 of the
/// norm term plus one f32 rounding of the sum (6e-8 relative), + 1e-6.
#[test]
fn rmsnorm_per_head_in_place_and_add_match_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(47);
    let (heads, hd, n, eps) = (3usize, 72usize, 5usize, 1e-6f32);
    let s = step(&g, 0, n as u32);
    let per_head = Shape::PerToken([heads as u32, 1, 1], 1);
    // Per head, out of place (the output poisoned) and in place (the
    // input is the output: nothing to poison, every element is compared).
    for in_place in [false, true] {
        let q = randn(&mut rng, n * heads * hd);
        let w = randn(&mut rng, hd);
        let (qb, wb) = (g.upload_f32("q", &q), g.upload_f32("w", &w));
        let p = g.params([hd as u32, eps.to_bits(), 0, 0, 0, 0, 0, 0]);
        let (pipe, out) = if in_place {
            (k.rmsnorm_in_place(&g), g.upload_f32("q", &q))
        } else {
            (k.rmsnorm(&g), poisoned(&g, q.len()))
        };
        let mut bufs = vec![(1, &wb), (2, &out), (3, &p), (4, &s)];
        if !in_place {
            bufs.push((0, &qb));
        }
        let op = Op {
            bind: kernels::bind(&g, &pipe, &bufs),
            pipeline: pipe.clone(),
            label: "test",
            shape: per_head,
        };
        g.run(&[&[op]], n as u32, &[]);
        let got = read_f32(&g, &out, q.len());
        let want = norm_rows_f64(&q, &w, eps);
        close(
            &format!("per-head rmsnorm in_place={in_place}"),
            &got,
            &want,
            1e-5,
            1e-6,
        );
    }
    // X += rmsnorm(D) * G over token rows (dim 100, and 5000: past 16 x
    // 256, the looping path) and head rows (72).
    let token = Shape::PerToken([1, 1, 1], 0);
    for (dim, shape) in [(100usize, token), (5000, token), (hd, per_head)] {
        let rows = if dim == hd { n * heads } else { n };
        let d = randn(&mut rng, rows * dim);
        let x = randn(&mut rng, rows * dim);
        let w = randn(&mut rng, dim);
        let (db, wb, xb) = (
            g.upload_f32("d", &d),
            g.upload_f32("w", &w),
            g.upload_f32("x", &x),
        );
        let p = g.params([dim as u32, eps.to_bits(), 0, 0, 0, 0, 0, 0]);
        let op = Op {
            bind: kernels::bind(
                &g,
                &k.rmsnorm_add(&g),
                &[(0, &db), (1, &wb), (2, &xb), (3, &p)],
            ),
            pipeline: k.rmsnorm_add(&g),
            label: "test",
            shape,
        };
        g.run(&[&[op]], n as u32, &[]);
        let got = read_f32(&g, &xb, x.len());
        let nd = norm_rows_f64(&d, &w, eps);
        for (i, (&o, &nv)) in got.iter().zip(&nd).enumerate() {
            let want = x[i] as f64 + nv;
            let tol = 1e-5 * nv.abs() + 6e-8 * want.abs() + 1e-6;
            assert!(
                (o as f64 - want).abs() <= tol,
                "rmsnorm add dim {dim} [{i}]: gpu {o} vs cpu {want}"
            );
        }
    }
}

/// rope (both pairings, partial rotation, frequency divisors) vs a twin
/// that steps theta the same way; bound 2e-5 absolute on O(1) values
/// (GPU sin/cos of angles up to ~10 rad).
#[test]
fn rope_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(9);
    let (heads, hd, rd, n, pos) = (3usize, 10usize, 8usize, 2usize, 5usize);
    let ff: Vec<f32> = (0..rd / 2).map(|i| 1.0 + i as f32 * 0.5).collect();
    let (base, fscale) = (10000f32, 0.5f32);
    let theta_scale = base.powf(-2.0 / rd as f32);
    let ffb = g.upload_f32("ff", &ff);
    let s = step(&g, pos as u32, n as u32);
    for neox in [false, true] {
        let x = randn(&mut rng, n * heads * hd);
        let buf = g.upload_f32("x", &x);
        let p = g.params([
            heads as u32,
            hd as u32,
            rd as u32,
            neox as u32,
            theta_scale.to_bits(),
            fscale.to_bits(),
            1,
            0,
        ]);
        let op = Op {
            bind: kernels::bind(&g, &k.rope(&g), &[(0, &buf), (1, &ffb), (2, &p), (3, &s)]),
            pipeline: k.rope(&g),
            label: "test",
            shape: Shape::PerToken([((heads * rd / 2) as u32).div_ceil(64), 1, 1], 1),
        };
        g.run(&[&[op]], n as u32, &[]);
        let got = read_f32(&g, &buf, x.len());
        let mut want: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for t in 0..n {
            for h in 0..heads {
                let base_i = (t * heads + h) * hd;
                let mut theta = (pos + t) as f32;
                for (i, &fi) in ff.iter().enumerate() {
                    let angle = (fscale * theta / fi) as f64;
                    let (a, b) = if neox {
                        (i, i + rd / 2)
                    } else {
                        (2 * i, 2 * i + 1)
                    };
                    let (x0, x1) = (x[base_i + a] as f64, x[base_i + b] as f64);
                    want[base_i + a] = x0 * angle.cos() - x1 * angle.sin();
                    want[base_i + b] = x0 * angle.sin() + x1 * angle.cos();
                    theta *= theta_scale;
                }
            }
        }
        close(
            if neox { "rope neox" } else { "rope adjacent" },
            &got,
            &want,
            0.0,
            2e-5,
        );
    }
}

/// attention.wgsl's uniform block for `[heads, kv heads, head size,
/// context]`, the score scale, the split slots and the window.
fn att_params(
    g: &Gpu,
    shape: [usize; 4],
    scale: f32,
    splits: usize,
    window: usize,
) -> wgpu::Buffer {
    let [heads, kvh, hd, ctx] = shape.map(|v| v as u32);
    g.params([
        heads,
        kvh,
        hd,
        ctx,
        scale.to_bits(),
        0,
        splits as u32,
        window as u32,
    ])
}

/// kv_store.wgsl writing `n` tokens of keys `kb` and values `vb` (f32,
/// [n][kvd]) to the cache from step `s`'s position; `p` is the attention
/// uniform block.
fn kv_store_op(
    g: &Gpu,
    k: &Kernels,
    bufs: [&wgpu::Buffer; 4],
    p: &wgpu::Buffer,
    s: &wgpu::Buffer,
    kvd: usize,
) -> Op {
    let [kb, vb, kc, vc] = bufs;
    Op {
        bind: kernels::bind(
            g,
            &k.kv_store(g),
            &[(0, kb), (1, vb), (2, kc), (3, vc), (4, p), (5, s)],
        ),
        pipeline: k.kv_store(g),
        label: "test",
        shape: Shape::PerToken([((kvd / 2) as u32).div_ceil(64), 1, 1], 1),
    }
}

/// A KV cache of `ctx` positions of `kvd` values each, its first `len`
/// filled in one kv_store.wgsl pass from random keys and values (returned
/// as written, before their f16 rounding); `p` is the attention uniform
/// block.
fn filled_cache(
    g: &Gpu,
    k: &Kernels,
    rng: &mut Rng,
    [ctx, len]: [usize; 2],
    kvd: usize,
    p: &wgpu::Buffer,
) -> (wgpu::Buffer, wgpu::Buffer, Vec<f32>, Vec<f32>) {
    let kc = g.storage("kc", (ctx * kvd * 2) as u64).unwrap();
    let vc = g.storage("vc", (ctx * kvd * 2) as u64).unwrap();
    let kx = randn(rng, len * kvd);
    let vx = randn(rng, len * kvd);
    let (kb, vb) = (g.upload_f32("k", &kx), g.upload_f32("v", &vx));
    let s0 = step(g, 0, len as u32);
    let store = kv_store_op(g, k, [&kb, &vb, &kc, &vc], p, &s0, kvd);
    g.run(&[&[store]], len as u32, &[]);
    (kc, vc, kx, vx)
}

/// Decode attention past SPLIT_KEYS keys: attention.wgsl's `split` (each
/// block an f32 online softmax over its chunks) and split.wgsl (each
/// block's softmax against its own max in f32), keys in blocks of
/// SPLIT_KEYS from the first key the query sees (attention.wgsl's `split`
/// also in `split_len`'s blocks, one to several chunks long by the key
/// count; split.wgsl in each of DEEP_SHAPES that fits, blocks of its
/// keys), then `merge` (the blocks rescaled to the largest max and
/// summed in f32; at 3 SPLIT_KEYS + 1 keys with a 1000x query, whose
/// split maxima lie hundreds apart) vs the exact softmax
/// (f64, exact scores) over f16-rounded queries, keys and values; at one
/// block past the boundary, at a ragged last block and near the end of
/// the context, for head sizes 6 (a row of 3 words: score parts past the
/// row), 64 (3 query heads per kv head, and 10 in workgroups of 8 and 2;
/// and 4 with 37 blocks, more than the merge's lanes) and 128 (also with
/// 37 blocks); without a window and with sliding windows of 5 (every split
/// but one wholly outside it), 64 (exactly one block), 65 and 130 (two and
/// three blocks, the last of one key); the merge in workgroups of whole
/// heads, 32 or 64 dimensions by turns; the output NaN-poisoned first.
/// Bound `flash_bound` with the f32 scores' error `ds`, the exps and
/// rescales of each kernel's chunks and the merge's rescale.
#[test]
fn split_attention_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(17);
    let ls = kernels::SPLIT_KEYS;
    // The last two cases have more splits (37) than the merge has lanes,
    // so each lane sums several.
    for (hd, heads, kvh, blocks) in [
        (6usize, 4usize, 2usize, 5usize),
        (64, 9, 3, 5),
        (64, 10, 1, 5),
        (128, 4, 2, 5),
        (64, 8, 2, 37),
        (128, 4, 1, 37),
    ] {
        let ctx = blocks * ls;
        let group = heads / kvh;
        let (c, _) = kernels::chunk_shape(hd, group);
        let chunk_wgs = kernels::chunk_workgroups(kvh, hd, group);
        // Split lengths by keys (`SplitRule`) with a cap of 4 splits' worth
        // of workgroups: one-chunk splits at the windows and the first
        // positions, longer ones further on, up to SPLIT_KEYS or 256 keys.
        let fixed = kernels::SplitRule::FIXED;
        let by_keys = |max| kernels::SplitRule {
            wgs: 4 * chunk_wgs,
            max,
        };
        let rules = [fixed, by_keys(ls), by_keys(256)];
        // split.wgsl in each of DEEP_SHAPES that fits the heads.
        let deep: Vec<kernels::DeepShape> = DEEP_SHAPES
            .iter()
            .copied()
            .filter(|sh| sh.fits(hd, group))
            .collect();
        assert!(!deep.is_empty());
        // Part's slots: enough for every rule's splits (each fits its own
        // slots at every key count), and the lengths used run from one
        // chunk (where it is shorter than SPLIT_KEYS) up to the longest.
        let splits = rules
            .iter()
            .copied()
            .chain(deep.iter().map(|sh| sh.rule()))
            .map(|r| r.slots(ctx, hd, group, kvh))
            .max()
            .unwrap();
        for r in &rules[1..] {
            let lens: Vec<usize> = (1..=ctx).map(|n| r.len(hd, group, kvh, n)).collect();
            let slots = r.slots(ctx, hd, group, kvh);
            assert!((1..=ctx).all(|n| n.div_ceil(lens[n - 1]) <= slots));
            assert_eq!(lens[0], c as usize);
            assert!(lens.windows(2).all(|w| w[0] <= w[1] && w[1] <= r.max));
            // Every case reaches SPLIT_KEYS keys (as before the rule had a
            // max); the 37-block ones reach 256 too.
            if r.max == ls || blocks >= 37 {
                assert_eq!(lens[ctx - 1], r.max);
            }
        }
        let (qd, kvd) = (heads * hd, kvh * hd);
        let scale = 1.0 / (hd as f32).sqrt();
        let params = |window: usize| att_params(&g, [heads, kvh, hd, ctx], scale, splits, window);
        let p = params(0);
        let part = g
            .storage("part", (heads * splits * (hd + 2) * 4) as u64)
            .unwrap();
        let (kc, vc, kx, vx) = filled_cache(&g, &k, &mut rng, [ctx, ctx], kvd, &p);
        // attention.wgsl's `split` by each rule: each weight through its
        // chunk's exp and the rescales of the chunks after it in its split;
        // split.wgsl likewise over its NC chunks. Each with the merge
        // built for its rule; (name, split kernel, workgroups, rule,
        // split.wgsl's chunks a split: None for attention.wgsl's).
        let names = ["split", "split by keys", "split by keys up to 256"];
        let mut kinds: Vec<_> = rules
            .iter()
            .zip(names)
            .map(|(&r, name)| {
                let sp = k.attention_entry(&g, hd, group, "split", r);
                (name, sp, chunk_wgs, r, None)
            })
            .collect();
        let deep_names: Vec<String> = deep.iter().map(|sh| format!("split.wgsl {sh}")).collect();
        for (sh, name) in deep.iter().zip(&deep_names) {
            // The tuning keeps a shape that fits (`DeepShape::pick`).
            assert_eq!(kernels::DeepShape::pick(*sh, hd, group), *sh);
            kinds.push((
                name.as_str(),
                k.attention_split(&g, hd, group, *sh),
                kernels::split_workgroups(kvh, hd, group),
                sh.rule(),
                Some(sh.chunks as usize),
            ));
        }
        let cases = [0usize, 5, 64, 65, 130]
            .into_iter()
            .flat_map(|w| [ls, ls + 7, 3 * ls + 1, ctx - 1].map(|pos| (w, pos)))
            .flat_map(|c| (0..kinds.len()).map(move |kind| (c, kind)));
        for ((window, pos), kind) in cases {
            let (name, sp, wgs, rule, deep_chunks) = &kinds[kind];
            let ny = rule.slots(ctx, hd, group, kvh);
            let p = params(window);
            let lo = if window == 0 {
                0
            } else {
                (pos + 1).saturating_sub(window)
            };
            // The exps and rescales a weight passes before the merge: one
            // per chunk of its split and the split's own (split.wgsl: its
            // exp against the running max and a rescale per later chunk).
            let chunks = match deep_chunks {
                None => rule.len(hd, group, kvh, pos + 1 - lo).div_ceil(c as usize) + 1,
                Some(nc) => *nc,
            };
            // At 3 SPLIT_KEYS + 1 keys the query is 1000x larger: split maxima
            // hundreds apart, so a merge that rescales against anything but
            // the largest overflows.
            let amp = if pos == 3 * ls + 1 { 1000.0 } else { 1.0 };
            // The merge in workgroups of whole heads, 32 or 64 dimensions
            // (`merge_parts`: whole heads where those do not divide it),
            // taking turns over the cases.
            let parts = kernels::merge_parts(hd, [0, 32, 64][(kind + window) % 3]);
            let mp = k.attention_merge(&g, hd, group, false, *rule, parts);
            let q: Vec<f32> = randn(&mut rng, qd).iter().map(|v| v * amp).collect();
            let qb = g.upload_f32("q", &q);
            let out = poisoned(&g, qd);
            let st = step(&g, pos as u32, 1);
            // split.wgsl also reads the keys as 16-byte words.
            let mut entries = vec![(8, &qb), (2, &kc), (3, &vc), (4, &p), (5, &st), (9, &part)];
            if deep_chunks.is_some() {
                entries.push((10, &kc));
            }
            let ops = [
                Op {
                    bind: kernels::bind(&g, sp, &entries),
                    pipeline: sp.clone(),
                    label: "test",
                    // As decode records it: only the splits that hold the
                    // token's keys launch (a count one short drops keys).
                    shape: Shape::Splits(kernels::SplitGrid {
                        x: *wgs,
                        slots: ny as u32,
                        window: window as u32,
                        rule: *rule,
                        head_dim: hd,
                        group,
                        kv_heads: kvh,
                    }),
                },
                Op {
                    bind: kernels::bind(&g, &mp, &[(9, &part), (4, &p), (5, &st), (6, &out)]),
                    pipeline: mp.clone(),
                    label: "test",
                    shape: Shape::Fixed([heads as u32, parts, 1]),
                },
            ];
            g.queue
                .submit([g.encode(&[], &[&ops], (1, Some(pos as u32)), &[], None)]);
            let got = read_f32(&g, &out, qd);
            // The exact softmax, which the splits and the merge approximate
            // within `flash_bound`: every weight passes the exps and
            // rescales `chunks` counts, then the merge's rescale.
            let (want, tol) = exact_attention(
                &q,
                [&kx, &vx],
                [hd, group, kvd],
                lo..=pos,
                scale,
                &|ds, r, n, v, o| flash_bound(ds, r, chunks, n, v, o),
            );
            close_each(
                &format!("{name} hd {hd} heads {heads}/{kvh} window {window} pos {pos}"),
                &got,
                &want,
                &tol,
            );
        }
    }
}

/// SplitGrid launches exactly the splits that hold a token's keys: split
/// s starts at first_key + s * len (the shaders' cut), counted here one by
/// one, for each rule, window and position of a context.
#[test]
fn split_grid_counts_the_splits_that_hold_keys() {
    let ctx = 700usize;
    let (hd, group, kvh) = (64usize, 4usize, 2usize);
    let rules = [
        kernels::SplitRule::FIXED,
        kernels::SplitRule { wgs: 8, max: 256 },
        kernels::DeepShape::DEFAULT.rule(),
    ];
    for rule in rules {
        let slots = rule.slots(ctx, hd, group, kvh);
        for window in [0usize, 5, 64, 65, 300] {
            let grid = kernels::SplitGrid {
                x: 3,
                slots: slots as u32,
                window: window as u32,
                rule,
                head_dim: hd,
                group,
                kv_heads: kvh,
            };
            for pos in 0..ctx {
                let first = if window == 0 || pos < window {
                    0
                } else {
                    pos + 1 - window
                };
                let len = rule.len(hd, group, kvh, pos + 1 - first);
                let want = (0..slots).filter(|s| first + s * len <= pos).count();
                assert_eq!(
                    grid.used(pos as u32) as usize,
                    want,
                    "{rule:?} window {window} pos {pos}"
                );
                assert_eq!(
                    Shape::Splits(grid).groups_at(1, Some(pos as u32)),
                    [3, want as u32, 1]
                );
            }
            assert_eq!(Shape::Splits(grid).groups(1), [3, slots as u32, 1]);
        }
    }
}

/// KV store + attention (GQA, more keys than threads and than a chunk, a
/// batch of queries at different positions) vs a CPU twin over the same
/// f16-rounded keys, values and queries (f64 scores, then the kernel's
/// f16-accumulated online softmax), for the one-key-at-a-time kernel and
/// the chunked one at head sizes 6 (64-key chunks, a ragged last chunk),
/// 64 (32-key chunks; 3 query heads per kv head in one workgroup, and 10
/// per kv head in workgroups of 4, the last one ragged) and 128 (16-key
/// chunks); each without a window and with a sliding window (gemma3) of 8
/// keys (smaller than a chunk; the 40- and 27-token prompts slide it) or
/// 37 (not a multiple of any chunk), where the twin starts at key
/// max(0, p + 1 - window) as llama.cpp's CPU loop does; bound one f16 ulp
/// plus 1e-4 on outputs of magnitude <= 1.
#[test]
fn attention_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(13);
    for (hd, chunked, heads, kvh, window) in [
        (6usize, false, 4usize, 2usize, 8usize),
        (6, true, 4, 2, 37),
        (64, true, 9, 3, 8),
        (64, true, 10, 1, 37),
        (128, true, 4, 2, 8),
    ] {
        for w in [0, window] {
            check_attention(&g, &mut k, &mut rng, hd, chunked, heads, kvh, w);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_attention(
    g: &Gpu,
    k: &mut Kernels,
    rng: &mut Rng,
    hd: usize,
    chunked: bool,
    heads: usize,
    kvh: usize,
    window: usize,
) {
    let ctx = 80usize;
    let (qd, kvd) = (heads * hd, kvh * hd);
    let f16r = |v: f32| half::f16::from_f32(v).to_f32() as f64;
    let kc = g.storage("kc", (ctx * kvd * 2) as u64).unwrap();
    let vc = g.storage("vc", (ctx * kvd * 2) as u64).unwrap();
    let scale = 1.0 / (hd as f32).sqrt();
    let p = att_params(g, [heads, kvh, hd, ctx], scale, 0, window);
    let mut keys = Vec::new();
    let mut vals = Vec::new();
    // Fill 67 positions in two batches, then attend with 3 queries.
    for (pos, n) in [(0usize, 40usize), (40, 27), (67, 3)] {
        let kx = randn(rng, n * kvd);
        let vx = randn(rng, n * kvd);
        let q = randn(rng, n * qd);
        keys.extend(kx.iter().map(|&v| f16r(v)));
        vals.extend(vx.iter().map(|&v| f16r(v)));
        let (kb, vb, qb) = (
            g.upload_f32("k", &kx),
            g.upload_f32("v", &vx),
            g.upload_f32("q", &q),
        );
        let out = poisoned(g, n * qd);
        let scores = g.storage("scores", (n * heads * ctx * 4) as u64).unwrap();
        let s = step(g, pos as u32, n as u32);
        let store = kv_store_op(g, k, [&kb, &vb, &kc, &vc], &p, &s, kvd);
        let groups = if chunked {
            kernels::chunk_workgroups(kvh, hd, heads / kvh)
        } else {
            heads as u32
        };
        let pipe = if chunked {
            k.attention_chunked(g, hd, heads / kvh)
        } else {
            k.attention(g)
        };
        let mut bufs = vec![(8, &qb), (2, &kc), (3, &vc), (4, &p), (5, &s), (6, &out)];
        if !chunked {
            bufs.push((7, &scores));
        }
        let att = Op {
            bind: kernels::bind(g, &pipe, &bufs),
            pipeline: pipe,
            label: "test",
            shape: Shape::PerToken([groups, 1, 1], 1),
        };
        g.run(&[&[store, att]], n as u32, &[]);
        let got = read_f32(g, &out, n * qd);
        let mut want = vec![0f64; n * qd];
        let mut tol = vec![0f64; n * qd];
        for t in 0..n {
            let len = pos + t + 1;
            let lo = if window == 0 {
                0
            } else {
                len.saturating_sub(window)
            };
            for h in 0..heads {
                let kh = h / (heads / kvh) * hd;
                let qh: Vec<f64> = (0..hd).map(|d| f16r(q[t * qd + h * hd + d])).collect();
                let cache = [&keys[..], &vals[..]];
                let (w, b) = replay_twin(&qh, cache, [kvd, kh], lo..len, scale, 1);
                let i = t * qd + h * hd;
                want[i..i + hd].copy_from_slice(&w);
                tol[i..i + hd].copy_from_slice(&b);
            }
        }
        close_each(
            &format!("attention hd {hd} chunked {chunked} window {window} pos {pos}"),
            &got,
            &want,
            &tol,
        );
    }
}

/// The chunked kernel's computation on the CPU for one head of one token
/// (f16-rounded query `qh`) over keys `keys` of the f16-rounded cache
/// `[keys, values]` (rows of `kvd`, this kv head at `kh`): the scores as
/// the kernel computes them (f16 x f16 products are exact in f32, summed
/// in f32 in d order, then scaled; with `parts` > 1, as few.wgsl does:
/// the row's words in `parts` runs of ceil(words / parts), each summed in
/// d order, the runs added in order), then the online softmax in key
/// order with the accumulator rounded to f16 at every step. Returns each
/// dim's value and its `attention_bound`.
fn replay_twin(
    qh: &[f64],
    [kc, vc]: [&[f64]; 2],
    [kvd, kh]: [usize; 2],
    keys: std::ops::Range<usize>,
    scale: f32,
    parts: usize,
) -> (Vec<f64>, Vec<f64>) {
    let hd = qh.len();
    let pw = (hd / 2).div_ceil(parts);
    let sc: Vec<(usize, f32)> = keys
        .map(|j| {
            let run = |p: usize| {
                let dims = (2 * p * pw).min(hd)..(2 * (p + 1) * pw).min(hd);
                dims.fold(0f32, |a, d| a + qh[d] as f32 * kc[j * kvd + kh + d] as f32)
            };
            let dot = (1..parts).fold(run(0), |a, p| a + run(p));
            (j, dot * scale)
        })
        .collect();
    let r16 = |v: f32| half::f16::from_f32(v).to_f32();
    let (mut want, mut tol) = (vec![0f64; hd], vec![0f64; hd]);
    for d in 0..hd {
        let (mut acc, mut mx, mut total) = (0f32, f32::MIN, 0f32);
        let mut peak = 0f32;
        for &(j, score) in &sc {
            let (mut rescale, mut weight) = (1f32, 1f32);
            if score > mx {
                rescale = (mx - score).exp();
                mx = score;
                acc = r16(acc * rescale);
                peak *= rescale;
            } else {
                weight = (score - mx).exp();
            }
            acc = r16(acc + vc[j * kvd + kh + d] as f32 * weight);
            total = total * rescale + weight;
            peak = peak.max(acc.abs());
        }
        want[d] = (acc * (1.0 / total)) as f64;
        tol[d] = attention_bound(peak, total, want[d]);
    }
    (want, tol)
}

/// few.wgsl (decode below SPLIT_KEYS keys) against its CPU twin
/// (`replay_twin` with scores in four parts, bound `attention_bound`);
/// `main_q`'s output bit for bit as `main`'s and its int8 x as
/// quantize_x.wgsl makes it of that output. One token at positions 0, 1,
/// 9 (one group of replay steps and two single steps), 17, 37 and 63 of
/// a 64-key cache (1 to 64 keys), for head sizes 6 (rows of 3 u32 words:
/// the fourth part empty; a stage of V shorter than one round of the
/// threads), 80 (parts of 10 u32 words), 32 (one int8 block a head), 64,
/// 96 (Phi-3's), 128 (V in stages of 48 keys: 64 keys take two) and 256
/// (stages of 24: 37 keys take two, 64 three; parts of 16-byte words at
/// both), 1 to
/// 10 query heads per kv head, without a window and with windows of 8 and
/// 37 (a query sees fewer keys than its position); every query 8x scaled
/// at one position, so that scores spread wide and exps underflow. The
/// replay rounds by hand (round_z_hand.wgsl), and where the device passed
/// the load-time check (`Gpu::round_pack`) also through pack2x16float
/// (round_z_pack.wgsl), bit for bit as by hand.
/// Outputs NaN-poisoned first.
#[test]
fn few_attention_matches_cpu() {
    let Some(g) = gpu() else { return };
    if g.round_pack != Some(true) {
        eprintln!(
            "note: pack2x16float does not round exactly here: only the hand-made replay runs"
        );
    }
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(59);
    let ctx = kernels::SPLIT_KEYS;
    let f16r = |v: f32| half::f16::from_f32(v).to_f32() as f64;
    for (hd, heads, kvh, window) in [
        (6usize, 4usize, 2usize, 0usize),
        (6, 4, 2, 8),
        (32, 6, 3, 0),
        (64, 9, 3, 37),
        (64, 10, 1, 0),
        (80, 4, 1, 8),
        (96, 6, 2, 0),
        (128, 4, 2, 0),
        (128, 8, 2, 8),
        (256, 4, 1, 37),
        (256, 2, 2, 0),
    ] {
        let (qd, kvd) = (heads * hd, kvh * hd);
        let scale = 1.0 / (hd as f32).sqrt();
        let p = att_params(&g, [heads, kvh, hd, ctx], scale, 0, window);
        let (kc, vc, kx, vx) = filled_cache(&g, &k, &mut rng, [ctx, ctx], kvd, &p);
        let cache = [kx, vx].map(|c| c.iter().map(|&v| f16r(v)).collect::<Vec<_>>());
        let group = heads / kvh;
        let kcb = if kernels::few_vec(hd) { 10 } else { 2 };
        for pos in [0usize, 1, 9, 17, 37, 63] {
            let mut q = randn(&mut rng, qd);
            if pos == 37 {
                q.iter_mut().for_each(|v| *v *= 8.0);
            }
            let qb = g.upload_f32("q", &q);
            let st = step(&g, pos as u32, 1);
            let what = format!("hd {hd} heads {heads}/{kvh} window {window} pos {pos}");
            let reads = [(8, &qb), (kcb, &kc), (3, &vc), (4, &p), (5, &st)];
            k.round_pack = false;
            let few = run_heads(&g, &k.attention_few(&g, hd, false), &reads, heads, qd, None);
            let got = read_f32(&g, &few, qd);
            if g.round_pack == Some(true) {
                // The device's conversion passed the load-time check: the
                // replay through it gives the hand-made one's bits.
                k.round_pack = true;
                let pl = k.attention_few(&g, hd, false);
                let packed = read_f32(&g, &run_heads(&g, &pl, &reads, heads, qd, None), qd);
                for (i, (a, b)) in got.iter().zip(&packed).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{what}: pack vs hand at {i}");
                }
            }
            let lo = if window == 0 {
                0
            } else {
                (pos + 1).saturating_sub(window)
            };
            let (mut want, mut tol) = (vec![0f64; qd], vec![0f64; qd]);
            for h in 0..heads {
                let kh = h / group * hd;
                let qh: Vec<f64> = (0..hd).map(|d| f16r(q[h * hd + d])).collect();
                let c = [&cache[0][..], &cache[1][..]];
                let (w, b) = replay_twin(&qh, c, [kvd, kh], lo..pos + 1, scale, 4);
                want[h * hd..(h + 1) * hd].copy_from_slice(&w);
                tol[h * hd..(h + 1) * hd].copy_from_slice(&b);
            }
            close_each(&what, &got, &want, &tol);
            if hd % 32 == 0 {
                let pl = k.attention_few(&g, hd, true);
                check_main_q(&g, &k, &what, &pl, &reads, heads, &few);
            }
        }
    }
}

/// mid.wgsl (decode from SPLIT_KEYS keys up to `kernels::mid_keys`, one
/// dispatch) against the exact softmax (f64, exact scores) over the same
/// f16-rounded query, keys and values, bound `flash_bound` with one exp a
/// weight and no rescale (its f32 sums run over lanes of at most MK keys,
/// fewer terms than the bound's keys + 2); `main_q`'s output bit for bit
/// as `main`'s and its int8 x as quantize_x.wgsl makes it of that output.
/// For each tier (`kernels::mid_tiers`: MK 128 and 256, or 128 alone),
/// one token at positions SPLIT_KEYS (65 keys: the second round's first
/// key), 100, 127 and the last the kernel takes (MK - 1: every round and
/// lane full), and 190 where MK is 256, of a cache of 256 keys, for head
/// sizes 8 (one 16-byte V word a row: 256 lanes; K as u32 words, parts of
/// one word), 32, 64, 80 (parts of 10 u32 words; 25 lanes of 10 V words:
/// 6 threads idle), 96 (Phi-3's: 21 lanes), 128 and 256 (MK 128), 1 to 10
/// query heads per kv head, without a window and with windows of 37 and
/// 100 (the first key moves); the query 1000x scaled at position 100, so
/// that the scores lie hundreds apart and every weight but the largest
/// few underflows. Outputs NaN-poisoned first.
#[test]
fn mid_attention_matches_cpu() {
    let Some(g) = gpu() else { return };
    let t = tuning();
    let mut k = Kernels::new(&g, &t);
    let mut rng = Rng::new(61);
    for (hd, heads, kvh, window) in [
        (8usize, 4usize, 2usize, 0usize),
        (32, 6, 3, 37),
        (64, 9, 3, 0),
        (64, 10, 1, 100),
        (80, 4, 1, 0),
        (96, 6, 2, 37),
        (128, 4, 2, 0),
        (128, 8, 2, 100),
        (256, 4, 1, 0),
        (256, 2, 2, 37),
    ] {
        let tiers = kernels::mid_tiers(&t, hd);
        let want = if hd == 256 { vec![128] } else { vec![128, 256] };
        assert_eq!(tiers, want, "hd {hd}");
        let ctx = *tiers.last().unwrap();
        let (qd, kvd) = (heads * hd, kvh * hd);
        let scale = 1.0 / (hd as f32).sqrt();
        let p = att_params(&g, [heads, kvh, hd, ctx], scale, 0, window);
        let (kc, vc, kx, vx) = filled_cache(&g, &k, &mut rng, [ctx, ctx], kvd, &p);
        let group = heads / kvh;
        let kcb = if kernels::few_vec(hd) { 10 } else { 2 };
        let ls = kernels::SPLIT_KEYS;
        let steps = tiers
            .iter()
            .flat_map(|&mk| [ls, 100, 127, 190, mk - 1].map(|pos| (mk, pos)))
            .filter(|&(mk, pos)| pos < mk);
        for (mk, pos) in steps {
            let amp = if pos == 100 { 1000.0 } else { 1.0 };
            let q: Vec<f32> = randn(&mut rng, qd).iter().map(|v| v * amp).collect();
            let qb = g.upload_f32("q", &q);
            let st = step(&g, pos as u32, 1);
            let what = format!("hd {hd} mk {mk} heads {heads}/{kvh} window {window} pos {pos}");
            let reads = [(8, &qb), (kcb, &kc), (11, &vc), (4, &p), (5, &st)];
            let out = run_heads(
                &g,
                &k.attention_mid(&g, hd, mk, false),
                &reads,
                heads,
                qd,
                None,
            );
            let got = read_f32(&g, &out, qd);
            let lo = if window == 0 {
                0
            } else {
                (pos + 1).saturating_sub(window)
            };
            let (want, tol) = exact_attention(
                &q,
                [&kx, &vx],
                [hd, group, kvd],
                lo..=pos,
                scale,
                &|ds, r, n, v, o| flash_bound(ds, r, 0, n, v, o),
            );
            close_each(&what, &got, &want, &tol);
            if hd % 32 == 0 {
                let pl = k.attention_mid(&g, hd, mk, true);
                check_main_q(&g, &k, &what, &pl, &reads, heads, &out);
            }
        }
    }
}

/// One decode step of a kernel that attends a query head a workgroup
/// (few.wgsl, mid.wgsl) with pipeline `pl` over `reads` (Q, the caches, P,
/// S) for `heads` heads: its output (`qd` values, NaN-poisoned first),
/// and with `ix` (`main_q`) its int8 x.
fn run_heads(
    g: &Gpu,
    pl: &std::rc::Rc<wgpu::ComputePipeline>,
    reads: &[(u32, &wgpu::Buffer)],
    heads: usize,
    qd: usize,
    ix: Option<&IntX>,
) -> wgpu::Buffer {
    let out = poisoned(g, qd);
    let mut bufs = reads.to_vec();
    bufs.push((6, &out));
    if let Some(ix) = ix {
        bufs.extend([(13, &ix.q), (14, &ix.d)]);
    }
    let op = Op {
        bind: kernels::bind(g, pl, &bufs),
        pipeline: pl.clone(),
        label: "test",
        shape: Shape::Fixed([heads as u32, 1, 1]),
    };
    g.run(&[&[op]], 1, &[]);
    out
}

/// A `main_q` pipeline `pl` of such a kernel against its `main`'s output
/// `out` on the same `reads`: the same output bits, and its int8 x
/// (poisoned first) bit for bit as quantize_x.wgsl makes it of `out`.
fn check_main_q(
    g: &Gpu,
    k: &Kernels,
    what: &str,
    pl: &std::rc::Rc<wgpu::ComputePipeline>,
    reads: &[(u32, &wgpu::Buffer)],
    heads: usize,
    out: &wgpu::Buffer,
) {
    let qd = (out.size() / 4) as usize;
    let bits = |b: &wgpu::Buffer, len| read_u32(g, b, len);
    let ix = IntX::new(g, qd, 1).unwrap();
    poison_int_x(g, &ix);
    let oq = run_heads(g, pl, reads, heads, qd, Some(&ix));
    assert_eq!(bits(&oq, qd), bits(out, qd), "{what}: main_q output");
    let want = quantize_x_gpu(g, k, out, out, [qd, 1], false, false, 0.0);
    assert_eq!(bits(&ix.q, qd / 4), bits(&want.q, qd / 4), "{what}: int8 x");
    assert_eq!(
        bits(&ix.d, qd / 32),
        bits(&want.d, qd / 32),
        "{what}: scales"
    );
}

/// flash.wgsl (tiled prefill attention) vs an f64 twin of attention over
/// the same f16 keys and values and f16-rounded queries, for 77 tokens at
/// position 29 and 130 at 0 (neither a multiple of any tile's tokens, and
/// past a chunk's keys), at head sizes 64, 128 and 256, with 4 query
/// heads per kv head (GQA), 1, 5 (head size 64: 6 tokens of 5 heads, two
/// rows of the tile unused) and 10 (head size 256: the group over two
/// workgroups, the second of 2 heads), each without a window and with a
/// sliding window of 20 keys (fewer than the tokens; chunks start mid-
/// window). Bound `flash_bound`.
#[test]
fn flash_attention_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(23);
    for shape in FLASH_SHAPES {
        check_flash_cases(&g, &mut k, &mut rng, shape, false);
    }
}

/// The heads of `flash_attention_matches_cpu`'s cases: [head size, query
/// heads, kv heads].
const FLASH_SHAPES: [[usize; 3]; 8] = [
    [64, 8, 2],
    [64, 3, 3],
    [64, 10, 2],
    [128, 8, 2],
    [128, 2, 2],
    [256, 4, 1],
    [256, 2, 2],
    [256, 10, 1],
];

/// `check_flash` on heads `shape` without a window and with one of 20
/// keys, for 77 tokens after 29 and 130 from 0.
fn check_flash_cases(g: &Gpu, k: &mut Kernels, rng: &mut Rng, shape: [usize; 3], coop: bool) {
    for window in [0, 20] {
        for (pos, n) in [(29usize, 77usize), (0, 130)] {
            check_flash(g, k, rng, shape, window, pos, n, coop);
        }
    }
}

/// flash_coop.wgsl (prefill attention on cooperative matrices), where the
/// device has them, against the same f64 twin as `flash_attention_matches_cpu`,
/// on its cases at head sizes 64 and 128 (group sizes 4, 1 and 5: 60 of the
/// tile's 64 rows in use, and 1). Bound `flash_bound` with no rescales
/// (each weight passes one exp against the final max), the f32 scores' error
/// three times over (the tensor cores' adders may truncate, as in
/// `matmul_coop_matches_cpu`) and each weight's rounding to f16 (relative
/// 2^-11; the sum divides by the rounded weights, so the output is their
/// exact convex combination: 2 vmax 2^-11 at first order, doubled).
#[test]
fn flash_coop_matches_cpu() {
    let Some(g) = coop_gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    k.coop = true;
    k.flash_coop_on = true;
    let mut rng = Rng::new(29);
    let shapes: Vec<[usize; 3]> = FLASH_SHAPES
        .into_iter()
        .filter(|&[hd, ..]| kernels::flash_coop_fits(hd))
        .collect();
    assert_eq!(shapes.len(), 5);
    for shape in shapes {
        assert!(k.flash_coop_attention(shape[0]));
        check_flash_cases(&g, &mut k, &mut rng, shape, true);
    }
}

/// The exact scores (f64) of query `qh` against keys `keys` (element d of
/// key j: `kr(j, d)`) times `scale`, and `ds`, the most by which an f32 dot
/// product of those exact f16 products (any order), scaled, can differ
/// from them: (hd + 1) u scale max_j sum_d |q_d k_jd| (u = 2^-24).
fn exact_scores(
    qh: &[f64],
    kr: impl Fn(usize, usize) -> f64,
    keys: std::ops::RangeInclusive<usize>,
    scale: f32,
) -> (Vec<f64>, f64) {
    let hd = qh.len();
    let sc = keys
        .clone()
        .map(|j| (0..hd).map(|d| qh[d] * kr(j, d)).sum::<f64>() * scale as f64)
        .collect();
    let mag = keys
        .map(|j| (0..hd).map(|d| (qh[d] * kr(j, d)).abs()).sum::<f64>())
        .fold(0f64, f64::max);
    (sc, 2f64.powi(-24) * (hd + 1) as f64 * scale as f64 * mag)
}

/// The exact softmax attention (f64, exact scores) of every query head
/// of `q` (f32, [heads][hd], rounded to f16 as the kernels round it) over
/// keys `keys` of the caches `[kx, vx]` (f32 rows of `kvd`, rounded to f16
/// as stored; query head h reads kv head h / group), and each output's
/// bound: `bound(ds, range, keys, vmax, o)`, the kernel's error bound from
/// its scores' error, their range, the key count, max |v| and the output
/// (`flash_bound` with the exps and rescales the kernel's weights pass).
fn exact_attention(
    q: &[f32],
    [kx, vx]: [&[f32]; 2],
    [hd, group, kvd]: [usize; 3],
    keys: std::ops::RangeInclusive<usize>,
    scale: f32,
    bound: &dyn Fn(f64, f64, usize, f64, f64) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let f16r = |v: f32| half::f16::from_f32(v).to_f32() as f64;
    let (mut want, mut tol) = (vec![0f64; q.len()], vec![0f64; q.len()]);
    for h in 0..q.len() / hd {
        let kh = h / group * hd;
        let qh: Vec<f64> = (0..hd).map(|d| f16r(q[h * hd + d])).collect();
        let kr = |j: usize, d: usize| f16r(kx[j * kvd + kh + d]);
        let (sc, ds) = exact_scores(&qh, kr, keys.clone(), scale);
        let m = sc.iter().cloned().fold(f64::MIN, f64::max);
        let lo_s = sc.iter().cloned().fold(f64::MAX, f64::min);
        let w: Vec<f64> = sc.iter().map(|&s| (s - m).exp()).collect();
        let total: f64 = w.iter().sum();
        for d in 0..hd {
            let vs: Vec<f64> = keys.clone().map(|j| f16r(vx[j * kvd + kh + d])).collect();
            let o = w.iter().zip(&vs).map(|(a, b)| a * b).sum::<f64>() / total;
            let vmax = vs.iter().fold(0f64, |a, b| a.max(b.abs()));
            want[h * hd + d] = o;
            tol[h * hd + d] = bound(ds, m - lo_s, sc.len(), vmax, o);
        }
    }
    (want, tol)
}

/// The flash kernel's bound for one output o = sum_j w_j v_j / sum_j w_j
/// (w_j = e^(s_j - max)) against the exact value over the same f16 inputs,
/// from its f32 arithmetic (u = 2^-24): each score's f32 dot of exact f16
/// products (the two partial sums and the scale) is off by at most
/// `ds` = (hd + 1) u scale max_j sum_d |q_d k_jd|; each weight by a
/// relative `dw` = (chunks + 1) ((3 + 2 range) u + u): its exp and those
/// of the rescales after it (WGSL bounds exp by 3 + 2|x| ulp, and every
/// argument is within the `range` of the scores) and the rounding of
/// each rescale; the f32 sums over `keys` terms by keys u relative to
/// their sums of magnitudes. Since do/ds_j = w~_j (v_j - o), errors ds in
/// the scores or relative dw in the weights move o by at most 2 vmax ds
/// and 2 vmax dw (vmax = max_j |v_j|), and the sums and the final division
/// by (keys + 2) u (vmax + |o|); twice that first-order sum covers the
/// second-order terms.
fn flash_bound(ds: f64, range: f64, chunks: usize, keys: usize, vmax: f64, o: f64) -> f64 {
    let u = 2f64.powi(-24);
    let dw = (chunks + 1) as f64 * ((3.0 + 2.0 * range) * u + u);
    2.0 * (2.0 * vmax * (ds + dw) + (keys + 2) as f64 * u * (vmax + o.abs()))
}

/// One case of `flash_attention_matches_cpu` (flash.wgsl) or, with `coop`,
/// of `flash_coop_matches_cpu` (flash_coop.wgsl; its bound there).
#[allow(clippy::too_many_arguments)]
fn check_flash(
    g: &Gpu,
    k: &mut Kernels,
    rng: &mut Rng,
    [hd, heads, kvh]: [usize; 3],
    window: usize,
    pos: usize,
    n: usize,
    coop: bool,
) {
    let ctx = 160usize;
    let (qd, kvd, group) = (heads * hd, kvh * hd, heads / kvh);
    let tile = kernels::FlashTile::new(hd, group).unwrap();
    let scale = 1.0 / (hd as f32).sqrt();
    let p = att_params(g, [heads, kvh, hd, ctx], scale, 0, window);
    // The cache up to the batch's last key in one store, then the batch.
    let len = pos + n;
    let (kc, vc, kx, vx) = filled_cache(g, k, rng, [ctx, len], kvd, &p);
    let q = randn(rng, n * qd);
    let qb = g.upload_f32("q", &q);
    let out = poisoned(g, n * qd);
    let s = step(g, pos as u32, n as u32);
    let (pl, shape) = if coop {
        let gs = kernels::flash_coop_heads(group);
        (
            k.attention_flash_coop(g, hd, gs),
            kernels::flash_coop_shape(kvh, group),
        )
    } else {
        (k.attention_flash(g, tile), tile.shape(kvh, group))
    };
    let att = Op {
        bind: kernels::bind(
            g,
            &pl,
            &[(8, &qb), (2, &kc), (3, &vc), (4, &p), (5, &s), (6, &out)],
        ),
        pipeline: pl,
        label: "test",
        shape,
    };
    g.run(&[&[att]], n as u32, &[]);
    let got = read_f32(g, &out, n * qd);
    let first = |p: usize| {
        if window == 0 {
            0
        } else {
            (p + 1).saturating_sub(window)
        }
    };
    let (mut want, mut tol) = (Vec::new(), Vec::new());
    let tq = tile.tokens() as usize;
    for t in 0..n {
        let p = pos + t;
        // The chunks this token's tile walks: from its first token's
        // first key to its last token.
        let t0 = t / tq * tq;
        let tile_end = pos + (t0 + tq).min(n);
        let chunks = (tile_end - first(pos + t0)).div_ceil(tile.keys as usize);
        let qt = &q[t * qd..(t + 1) * qd];
        // flash_coop_matches_cpu's doc says why the coop bound differs.
        let bound = |ds: f64, range: f64, keys: usize, vmax: f64, o: f64| {
            if coop {
                flash_bound(3.0 * ds, range, 0, keys, vmax, o) + 2.0 * 2.0 * vmax * 2f64.powi(-11)
            } else {
                flash_bound(ds, range, chunks, keys, vmax, o)
            }
        };
        let (w, b) = exact_attention(
            qt,
            [&kx, &vx],
            [hd, group, kvd],
            first(p)..=p,
            scale,
            &bound,
        );
        want.extend(w);
        tol.extend(b);
    }
    close_each(
        &format!("flash attention (coop {coop}) hd {hd} heads {heads}/{kvh} window {window} pos {pos} n {n}"),
        &got,
        &want,
        &tol,
    );
}

/// silu·mul and bias add vs f64 twins; bound 1e-6 relative + 1e-7.
#[test]
fn elementwise_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(17);
    let (width, n) = (70usize, 3usize);
    let a = randn(&mut rng, n * width);
    let b = randn(&mut rng, n * width);
    let s = step(&g, 0, n as u32);
    let p = g.params([width as u32, kernels::NX, 0, 0, 0, 0, 0, 0]);
    for bias in [false, true] {
        let ab = g.upload_f32("a", &a);
        let bb = g.upload_f32("b", if bias { &b[..width] } else { &b });
        let pipe = if bias { k.add_bias(&g) } else { k.silu_mul(&g) };
        let op = Op {
            bind: kernels::bind(&g, &pipe, &[(0, &ab), (1, &bb), (2, &p), (3, &s)]),
            pipeline: pipe.clone(),
            label: "test",
            shape: Shape::Flat(width as u32),
        };
        g.run(&[&[op]], n as u32, &[]);
        let got = read_f32(&g, &ab, a.len());
        let want: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let x = x as f64;
                if bias {
                    x + b[i % width] as f64
                } else {
                    x / (1.0 + (-x).exp()) * b[i] as f64
                }
            })
            .collect();
        close(
            if bias { "add_bias" } else { "silu_mul" },
            &got,
            &want,
            1e-6,
            1e-7,
        );
    }
}

/// gelu(gate) * up exactly as llama.cpp's CPU computes it (ggml's geglu
/// with its f16 gelu table): 0 at gate <= -10, gate * up at gate >= 10,
/// else gelu of the f16-rounded gate, in f32 with libm's tanhf, rounded to
/// f16, widened, times up in f32.
fn geglu_llama(gate: f32, up: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const GELU_COEF_A: f32 = 0.044715;
    if gate <= -10.0 {
        return 0.0;
    }
    if gate >= 10.0 {
        return gate * up;
    }
    let x = half::f16::from_f32(gate).to_f32();
    let y = 0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)).tanh());
    half::f16::from_f32(y).to_f32() * up
}

/// The largest |GPU - llama.cpp| geglu allows for one element: the GPU's
/// tanh (f16.wgsl's tanh_f32, from the GPU's exp) may differ from libm's
/// by a couple of f32 ulps (WGSL leaves exp's accuracy to the
/// implementation). Where that moves gelu across an f16
/// rounding boundary the result is one f16 ulp off (2^-10 of the gelu
/// value at most, 2^-24 among f16 subnormals); below about -4, where
/// 1 + tanh is a few f32 ulps of 1, an ulp of tanh (6e-8) is a large part
/// of gelu but at most 0.5 |x| * 2 * 6e-8 <= 6e-7 in absolute terms (|x| <
/// 10). Times |up|, plus nothing for the product (both sides round the
/// same f32 product of an f16 value).
fn geglu_tolerance(gate: f32, up: f32) -> f64 {
    let gelu = half::f16::from_f32(geglu_llama(gate, 1.0)).to_f32() as f64;
    let x = gate.abs().min(10.0) as f64;
    (gelu.abs() * 2f64.powi(-10) + 0.5 * x * 1.2e-7 + 2f64.powi(-24)) * up.abs() as f64
}

/// elementwise.wgsl `gelu_mul` vs `geglu_llama`: 3 tokens of 1001 random
/// gates in [-12, 12] (both bypass branches) and ups in [-1, 1], plus the
/// edges: +-10 exactly, just inside them, zero, f16 subnormals, and f16
/// rounding ties (1 + 2^-11, -(2 + 2^-10)). Bound `geglu_tolerance`; the
/// count of bitwise-identical results is printed, and at least 99% must
/// be (a flip needs tanh's error to straddle an f16 boundary; on lavapipe
/// all 3003 are, and 299,998 of 300,003 in a larger run).
#[test]
fn gelu_mul_matches_llama_cpp() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(53);
    let (width, n) = (1001usize, 3usize);
    let mut a: Vec<f32> = randn(&mut rng, n * width)
        .iter()
        .map(|v| v * 12.0)
        .collect();
    let edges = [
        -10.0f32,
        10.0,
        -9.999,
        9.999,
        0.0,
        -0.0,
        3e-6,
        -5e-8,
        1.0 + 2f32.powi(-11),
        -(2.0 + 2f32.powi(-10)),
        -4.5,
        -7.0,
    ];
    a[..edges.len()].copy_from_slice(&edges);
    let b = randn(&mut rng, n * width);
    let (ab, bb) = (g.upload_f32("a", &a), g.upload_f32("b", &b));
    let s = step(&g, 0, n as u32);
    let p = g.params([width as u32, kernels::NX, 0, 0, 0, 0, 0, 0]);
    let op = Op {
        bind: kernels::bind(&g, &k.gelu_mul(&g), &[(0, &ab), (1, &bb), (2, &p), (3, &s)]),
        pipeline: k.gelu_mul(&g),
        label: "test",
        shape: Shape::Flat(width as u32),
    };
    g.run(&[&[op]], n as u32, &[]);
    let got = read_f32(&g, &ab, a.len());
    let mut same = 0;
    for (i, &o) in got.iter().enumerate() {
        let want = geglu_llama(a[i], b[i]);
        same += (o.to_bits() == want.to_bits() || o == want) as usize;
        let tol = geglu_tolerance(a[i], b[i]);
        assert!(
            (o as f64 - want as f64).abs() <= tol,
            "gelu_mul[{i}] gate {} up {}: gpu {o} vs llama.cpp {want}",
            a[i],
            b[i]
        );
    }
    eprintln!("gelu_mul: {same}/{} bitwise identical", got.len());
    assert!(same * 100 >= got.len() * 99, "{same}/{}", got.len());
}

/// f16.wgsl's round_f16 (every f16 rounding of the kernels: the KV
/// cache, the f16 replay, gelu's table) bit for bit against `half`'s
/// f32-to-f16 conversion on values around every f16 rounding boundary
/// (`quant::tests::f16_rounding_cases`: each f16, the midpoints to its
/// neighbours and the f32s either side, both signs; f32 subnormals, the
/// overflow threshold, infinities, NaNs; 20,000 random f32s), a NaN
/// matching any NaN. Output NaN-poisoned first.
#[test]
fn round_f16_matches_half_bitwise() {
    let Some(g) = gpu() else { return };
    let xs = crate::quant::tests::f16_rounding_cases();
    let src = format!(
        "{}\n@group(0) @binding(0) var<storage, read> X: array<f32>;\n\
         @group(0) @binding(1) var<storage, read_write> O: array<u32>;\n\
         @compute @workgroup_size(64)\n\
         fn main(@builtin(global_invocation_id) i: vec3<u32>) {{\n    \
         if i.x < arrayLength(&X) {{\n        O[i.x] = bitcast<u32>(round_f16(X[i.x]));\n    }}\n}}\n",
        include_str!("../../shaders/f16.wgsl")
    );
    let pl = kernels::pipeline(&g, "round_f16 test", &src, "main");
    let x = g.upload_f32("x", &xs);
    let out = poisoned(&g, xs.len());
    let op = Op {
        bind: kernels::bind(&g, &pl, &[(0, &x), (1, &out)]),
        pipeline: pl,
        label: "test",
        shape: Shape::Fixed([xs.len().div_ceil(64) as u32, 1, 1]),
    };
    g.run(&[&[op]], 1, &[]);
    let got = read_f32(&g, &out, xs.len());
    for (&x, &o) in xs.iter().zip(&got) {
        let want = half::f16::from_f32(x).to_f32();
        assert!(
            o.to_bits() == want.to_bits() || (o.is_nan() && want.is_nan()),
            "round_f16({x:e} = {:#x}): {o:e} ({:#x}), half: {want:e}",
            x.to_bits(),
            o.to_bits()
        );
    }
}

/// The load-time check of the f16 rounding (`probe`) can fail: a
/// round_f16_z that truncates (drops f32's low 13 mantissa bits, the
/// midpoints and near-ties then wrong) fails it, the hand-made one
/// (round_z_hand.wgsl over f16.wgsl) passes it, and round_z_pack.wgsl's
/// verdict is `Gpu::round_pack`'s. The cases hold every f16 midpoint
/// and its neighbours in both signs (`probe::cases`).
#[test]
fn round_check_tells_exact_from_truncating() {
    let Some(g) = gpu() else { return };
    let xs = super::probe::cases();
    assert!(xs.len() > 250_000 && xs.iter().all(|x| x.is_finite()));
    let run = |snippet: &str| {
        let got = pollster::block_on(super::probe::run(&g, snippet, &xs)).unwrap();
        super::probe::matches_half(&xs, &got)
    };
    let trunc = "fn round_f16_z(x: f32, zero: u32) -> f32 {\n    \
                 return bitcast<f32>((bitcast<u32>(x) & 0xffffe000u) ^ zero);\n}\n";
    assert!(!run(trunc), "a truncating rounding passed the check");
    let hand = format!(
        "{}\n{}",
        include_str!("../../shaders/round_z_hand.wgsl"),
        include_str!("../../shaders/f16.wgsl")
    );
    assert!(run(&hand), "the hand-made rounding failed the check");
    let pack = run(include_str!("../../shaders/round_z_pack.wgsl"));
    assert_eq!(Some(pack), g.round_pack);
    eprintln!("pack2x16float rounds exactly here: {pack}");
}

/// argmax returns exactly the CPU's pick, including the first of ties.
#[test]
fn argmax_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(19);
    for n in [1usize, 300, 1001] {
        let mut l = randn(&mut rng, n);
        if n > 10 {
            l[n - 3] = 5.0;
            l[n / 2] = 5.0;
        }
        let lb = g.upload_f32("l", &l);
        let out = g.storage("out", 4).unwrap();
        let p = g.params([n as u32, 0, 0, 0, 0, 0, 0, 0]);
        let op = Op {
            bind: kernels::bind(&g, &k.argmax(&g), &[(0, &lb), (1, &out), (2, &p)]),
            pipeline: k.argmax(&g),
            label: "test",
            shape: Shape::Fixed([1, 1, 1]),
        };
        g.run(&[&[op]], 1, &[]);
        let got = read_f32(&g, &out, 1)[0].to_bits() as usize;
        let mut want = 0;
        for (i, &v) in l.iter().enumerate() {
            if v > l[want] {
                want = i;
            }
        }
        assert_eq!(got, want, "argmax of {n}");
    }
}

/// rmsnorm of `x` times `gains` in f64, as the kernels fold it in.
fn norm_f64(x: &[f32], gains: &[f32], eps: f32) -> Vec<f64> {
    let ms = x.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / x.len() as f64;
    let sc = 1.0 / (ms + eps as f64).sqrt();
    x.iter()
        .zip(gains)
        .map(|(&v, &g)| v as f64 * sc * g as f64)
        .collect()
}

/// Dequantized rows of a random matrix.
fn rows_f32(ty: GgmlType, data: &[u8], rows: usize, cols: usize) -> Vec<Vec<f32>> {
    let rb = ty.row_bytes(cols).unwrap();
    (0..rows)
        .map(|r| {
            let mut v = vec![0f32; cols];
            quant::dequantize_row(ty, &data[r * rb..(r + 1) * rb], &mut v);
            v
        })
        .collect()
}

/// (dot, sum of |terms|) in f64.
fn dot_mag(w: &[f32], x: &[f64]) -> (f64, f64) {
    w.iter().zip(x).fold((0.0, 0.0), |(d, m), (&a, &b)| {
        (d + a as f64 * b, m + (a as f64 * b).abs())
    })
}

/// A fused group of random members of formats `tys` and `rows` rows each
/// (`cols` columns), uploaded as the builder does (one buffer, mixed when
/// the formats differ), and its rows dequantized, members in order.
fn random_group(
    g: &Gpu,
    rng: &mut Rng,
    tys: &[GgmlType],
    rows: &[usize],
    cols: usize,
) -> (MatGroup, Vec<Vec<f32>>) {
    let mut file = Vec::new();
    let mut mats = Vec::new();
    let mut w = Vec::new();
    for (&ty, &n) in tys.iter().zip(rows) {
        let data = random_matrix(rng, ty, n, cols);
        w.extend(rows_f32(ty, &data, n, cols));
        mats.push(crate::model::Matrix {
            ty,
            rows: n,
            cols,
            offset: file.len() as u64,
            row_bytes: ty.row_bytes(cols).unwrap(),
        });
        file.extend(data);
    }
    let members: Vec<(&str, &crate::model::Matrix)> = mats.iter().map(|m| ("m", m)).collect();
    let grp = MatGroup::upload_from(g, "group", &file, true, &members, u64::MAX, true).unwrap();
    assert!(grp.fused().is_some(), "{tys:?} not fused");
    assert_eq!(
        grp.mats[0].mixed.len(),
        if tys.iter().all(|&t| t == tys[0]) {
            0
        } else {
            tys.len()
        }
    );
    (grp, w)
}

/// The plain matvec with each rows-per-workgroup and workgroup-size
/// choice, both reductions (subgroup and shared-memory tree, where the
/// adapter has subgroups), the norm folded into the pass over x or applied
/// by a separate pass, a row range that starts mid-matrix, and the LM
/// head's flags (rmsnorm folded in, only the last token read) vs an f64
/// twin. Rows (29) and the last row group are ragged; 96 columns are 12
/// units, fewer than the threads, and 1056 columns (132 units) leave the
/// second unit of an iteration out of range for some threads. Each case
/// also through the integer path where the format has an int decoder.
/// Bound: 2e-5 * sum |w x| + 1e-6 * |y| (f32 sums plus the f32 norm
/// scale), plus on the integer path `int_err` of the normalised x.
#[test]
fn matvec_row_groups_norm_and_last_token() {
    let Some(g) = gpu() else { return };
    let mut rng = Rng::new(23);
    let eps = 1e-5f32;
    let (rows, n) = (29usize, 3usize);
    let cases = [
        (GgmlType::Q4_0, 96, 1u32, 64u32, true),
        (GgmlType::Q4_0, 1056, 2, 64, true),
        (GgmlType::Q4_0, 1056, 4, 128, false),
        (GgmlType::Q4_0, 96, 8, 256, true),
        (GgmlType::Q8_0, 1056, 2, 256, false),
        (GgmlType::F16, 96, 4, 64, false),
        (GgmlType::Q4_K, 256, 2, 128, true),
        (GgmlType::Q4_0, 1056, 16, 64, true),
        (GgmlType::Q8_0, 96, 16, 128, false),
    ];
    let int_cases = cases.into_iter().flat_map(|c| [(c, false), (c, true)]);
    for (i, ((ty, cols, r, wg, sub), int)) in int_cases.enumerate() {
        let mut k = Kernels::new(&g, &tuning());
        // The integer path (quantize_x.wgsl with the norm, LAST) where
        // the format has an int decoder.
        let int = int && k.int_dot && kernels::int_decoder(ty).is_some();
        k.int_x = int.then(|| IntX::new(&g, cols, n).unwrap());
        // Both ways of applying the norm: folded into the one pass over x,
        // and the separate pass.
        k.fold_norm = i % 4 < 2;
        if sub && !k.subgroups {
            eprintln!("no subgroups on this adapter: tree reduction only");
        }
        k.subgroups &= sub;
        k.matvec_wg = wg;
        let data = random_matrix(&mut rng, ty, rows, cols);
        let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let w = rows_f32(ty, &data, rows, cols);
        let x = randn(&mut rng, n * cols);
        let gains = randn(&mut rng, cols);
        let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
        let s = step(&g, 0, n as u32);
        let xn = norm_f64(&x[(n - 1) * cols..], &gains, eps);
        let y = poisoned(&g, rows - 3);
        let a = MatvecArgs {
            norm: Some((&gb, eps)),
            last: true,
            rows_per_group: r,
            ..MatvecArgs::plain(&xb, &y, &s, rows - 3, false)
        };
        let ops = matvec_ops(&g, &mut k, &m, 3..rows, &a).unwrap();
        assert_eq!(ops[0].label == "quantize_x", int);
        g.run(&[&ops], n as u32, &[]);
        let got = read_f32(&g, &y, rows - 3);
        for (i, &o) in got.iter().enumerate() {
            let (want, mag) = dot_mag(&w[i + 3], &xn);
            let qe = if int { int_err(&w[i + 3], &xn) } else { 0.0 };
            assert!(
                (o as f64 - want).abs() <= 2e-5 * mag + 1e-6 * want.abs() + qe,
                "{ty} cols {cols} int {int} R={r} WG={wg} subgroups={sub} fold={} row {}: {o} vs {want}",
                k.fold_norm,
                i + 3
            );
        }
    }
}

/// Fused gate/up (rmsnorm folded in, silu(gate) * up, or gelu as
/// `geglu_llama`) vs an f64 twin, for a nibble format, Q8_0 and F32 rows
/// that are not whole 8-element units (70 columns), K-quants, mixed groups
/// (gate and up in different formats: Q6_K's 37 rows end 2 bytes short of
/// a word, so the Q4_K member after it starts on padding), and the tiled
/// (prefill) kernel's epilogue; 37 rows, so the last workgroup (tile) is
/// ragged.
/// Bound (silu): the two dot products' 2e-5 * sum |w x| each, carried
/// through silu(g) * u (|silu'| < 1.1), plus 1e-6 relative. Bound (gelu,
/// vs `geglu_llama` of the f64 dots rounded to f32): the gate's error eg =
/// 2e-5 * sum |w x| can move its f16 rounding by one f16 ulp (2^-10 |g|)
/// on top of eg, which gelu (|gelu'| < 1.13) carries to the output, plus
/// `geglu_tolerance` (the GPU's tanh), plus the up product's error times
/// |gelu|, plus 1e-6 relative. Each decode case also through the integer
/// path where both formats have int decoders, and each tiled case through
/// the integer prefill tile (matmul_int.wgsl, mixed groups too) where both
/// have int8 tile decoders; there each product's error
/// grows by `int_err` (qg, qu), carried the same way: silu adds 1.1 qg
/// (|u| + qu) + qu |silu(g)|, gelu 1.13 qg (|u| + qu) + qu (|gelu(g)| +
/// 1.13 (its gate error)).
#[test]
fn gate_up_fused_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(29);
    let (ff, n, eps) = (37usize, 2usize, 1e-5f32);
    use GgmlType::*;
    let cases = [
        ([Q4_1, Q4_1], false),
        ([Q8_0, Q8_0], false),
        ([F32, F32], false),
        ([Q4_0, Q4_0], true),
        ([F16, F16], true),
        ([Q4_K, Q4_K], false),
        ([Q6_K, Q4_K], false),
        ([Q6_K, Q4_K], true),
        ([Q5_K, IQ4_XS], false),
        ([Q8_0, Q3_K], true),
        ([Q2_K, F16], false),
    ];
    let int_ok = k.int_dot;
    for (tys, tiled, mv, int) in cases.into_iter().flat_map(|(tys, tiled)| {
        [Mv::Silu, Mv::Gelu]
            .into_iter()
            .flat_map(move |mv| [(tys, tiled, mv, false), (tys, tiled, mv, true)])
    }) {
        // The integer path: decode (not tiled), every format with an int
        // decoder (mixed groups too); or the integer prefill tile (tiled,
        // every format with an int8 tile decoder).
        // (Silu only: the epilogue is the f32 tile's, and each tile
        // compiles for a while on lavapipe.)
        let int_tile = int
            && int_ok
            && tiled
            && mv == Mv::Silu
            && tys.iter().all(|&t| kernels::tile_q_decoder(t).is_some());
        let int = int_tile
            || int && int_ok && !tiled && tys.iter().all(|&t| kernels::int_decoder(t).is_some());
        k.int_prefill = int_tile;
        let cols = match tys.iter().map(|t| t.block_len()).max() {
            Some(256) => 512,
            _ if tys[0] == F32 => 70,
            _ => 96,
        };
        let ty = format!("{tys:?}");
        let (grp, w) = random_group(&g, &mut rng, &tys, &[ff, ff], cols);
        let m = grp.fused().unwrap();
        let x = randn(&mut rng, n * cols);
        let gains = randn(&mut rng, cols);
        // The tiled kernel takes x already normalised (prefill runs rmsnorm
        // first): give it the twin's normalised x, rounded to f32.
        let xn: Vec<Vec<f64>> = (0..n)
            .map(|t| norm_f64(&x[t * cols..(t + 1) * cols], &gains, eps))
            .collect();
        let xin: Vec<f32> = if tiled {
            xn.iter().flatten().map(|&v| v as f32).collect()
        } else {
            x.clone()
        };
        let (xb, gb) = (g.upload_f32("x", &xin), g.upload_f32("g", &gains));
        let s = step(&g, 0, n as u32);
        let y = poisoned(&g, n * ff);
        let a = MatvecArgs {
            mv,
            norm: (!tiled).then_some((&gb, eps)),
            split: ff,
            rows_per_group: 4,
            tiled,
            ..MatvecArgs::plain(&xb, &y, &s, ff, false)
        };
        k.int_x = int.then(|| IntX::new(&g, cols, n).unwrap());
        let ops = matvec_ops(&g, &mut k, m, 0..2 * ff, &a).unwrap();
        let tile = ops.iter().find(|o| o.label.starts_with("matmul"));
        assert_eq!(
            tile.map(|o| o.label),
            tiled.then_some(if int_tile { "matmul_int" } else { "matmul" })
        );
        assert_eq!(ops[0].label == "quantize_x", int);
        g.run(&[&ops], n as u32, &[]);
        let got = read_f32(&g, &y, n * ff);
        for (t, xn) in xn.iter().enumerate() {
            let xn: Vec<f64> = if tiled {
                xn.iter().map(|&v| v as f32 as f64).collect()
            } else {
                xn.clone()
            };
            for r in 0..ff {
                let (gt, mg) = dot_mag(&w[r], &xn);
                let (up, mu) = dot_mag(&w[ff + r], &xn);
                // The integer path's error in each product (int_err).
                let (qg, qu) = if int {
                    (int_err(&w[r], &xn), int_err(&w[ff + r], &xn))
                } else {
                    (0.0, 0.0)
                };
                let (want, tol) = if mv == Mv::Silu {
                    let silu = gt / (1.0 + (-gt).exp());
                    let want = silu * up;
                    let tol = 2e-5 * (1.1 * mg * up.abs() + mu * silu.abs())
                        + 1e-6 * want.abs()
                        + 1.1 * qg * (up.abs() + qu)
                        + qu * silu.abs();
                    (want, tol)
                } else {
                    let (g32, u32_) = (gt as f32, up as f32);
                    let want = geglu_llama(g32, u32_) as f64;
                    let gelu = geglu_llama(g32, 1.0) as f64;
                    let eg = 2e-5 * mg;
                    let tol = 1.13 * (eg + 2f64.powi(-10) * gt.abs()) * up.abs()
                        + geglu_tolerance(g32, u32_)
                        + 2e-5 * mu * gelu.abs()
                        + 1e-6 * want.abs()
                        + 1.13 * qg * (up.abs() + qu)
                        + qu * (gelu.abs() + 1.13 * (eg + 2f64.powi(-10) * gt.abs() + qg));
                    (want, tol)
                };
                let o = got[t * ff + r] as f64;
                assert!(
                    (o - want).abs() <= tol,
                    "{ty} {mv:?} tiled {tiled} int {int} token {t} row {r}: {o} vs {want}"
                );
            }
        }
    }
}

/// f32 rope of one head as the CPU engine does it (theta stepped by
/// repeated f32 multiplication), in f64 after the angle.
#[allow(clippy::too_many_arguments)]
fn rope_f64(
    head: &mut [f64],
    pos: usize,
    rd: usize,
    neox: bool,
    theta_scale: f32,
    fscale: f32,
    ff: Option<&[f32]>,
) {
    let mut theta = pos as f32;
    for i in 0..rd / 2 {
        let angle = (fscale * theta / ff.map_or(1.0, |f| f[i])) as f64;
        let (a, b) = if neox {
            (i, i + rd / 2)
        } else {
            (2 * i, 2 * i + 1)
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * angle.cos() - x1 * angle.sin();
        head[b] = x0 * angle.sin() + x1 * angle.cos();
        theta *= theta_scale;
    }
}

/// The fused q/k/v kernel (rmsnorm folded in, bias, rope on q and k, k and
/// v stored as f16 in the cache at pos + t) vs an f64 twin, for both rope
/// pairings, full and partial rotation, with and without bias and
/// frequency divisors, 2 tokens at position 5, GQA (3 heads, 1 kv head),
/// in the matvec (decode) and tiled (prefill) kernels, for one-format and
/// mixed groups (q, k, v in different formats: Q4_K_M's Q6_K v among
/// them; 8 rows per workgroup, so that each workgroup's section picks its
/// decoder); each member of a mixed group is also read alone by the plain
/// matvec (as the unfused path does), vs the same twin's raw products.
/// Bounds: q 2e-5 * sum |w x| + 2e-5 (f32 sums, GPU sin/cos); k, v one f16
/// rounding (2^-11 relative) on top of that; the members alone as
/// matvec_every_format_matches_cpu, 2e-5 * sum |w x| + 1e-30. Each decode
/// case whose formats all have int decoders runs again through the
/// integer path, the members alone too; there each output may also move
/// by `int_err` of both rows its rope pair mixes (the members alone: of
/// their row).
#[test]
fn qkv_fused_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(31);
    let (heads, kvh, hd, n, pos, ctx, eps) =
        (3usize, 1usize, 8usize, 2usize, 5usize, 9usize, 1e-5f32);
    let (qd, kvd) = (heads * hd, kvh * hd);
    let rows = qd + 2 * kvd;
    let (theta_scale, fscale) = (10000f32.powf(-2.0 / 8.0), 0.5f32);
    use GgmlType::*;
    for (i, ((tys, neox, rd, bias, has_ff, tiled, rpg), int)) in [
        ([Q8_0; 3], false, 8, false, false, false, 4),
        ([Q4_0; 3], true, 8, true, true, false, 4),
        ([F32; 3], true, 4, false, true, false, 4),
        ([F16; 3], false, 4, true, false, false, 4),
        ([Q4_1; 3], true, 4, true, true, true, 4),
        ([Q8_0; 3], false, 8, false, false, true, 4),
        ([Q4_K; 3], true, 8, false, true, false, 4),
        ([Q4_K, Q4_K, Q6_K], true, 8, true, true, false, 4),
        ([Q4_K, Q4_K, Q6_K], false, 8, false, false, true, 4),
        ([Q6_K, Q5_K, IQ4_XS], false, 4, true, false, false, 8),
        ([Q8_0, Q3_K, F16], true, 4, false, true, true, 4),
    ]
    .into_iter()
    .flat_map(|c| [(c, false), (c, true)])
    .enumerate()
    {
        // The integer path: decode (not tiled), every format with an int
        // decoder, mixed groups too.
        let int =
            int && k.int_dot && !tiled && tys.iter().all(|&t| kernels::int_decoder(t).is_some());
        let i = i / 2;
        let ty = format!("{tys:?} int {int}");
        // The F16 case as on a device with WebGPU's guaranteed 8 storage
        // buffers per stage: no vec4 aliases (scalar x loads).
        k.storage_buffers = if i == 3 {
            8
        } else {
            g.limits.max_storage_buffers_per_shader_stage
        };
        let cols = match tys.iter().map(|t| t.block_len()).max() {
            Some(256) => 256,
            _ if tys[0] == F32 => 70,
            _ => 64,
        };
        let (grp, w) = random_group(&g, &mut rng, &tys, &[qd, kvd, kvd], cols);
        let m = grp.fused().unwrap();
        let x = randn(&mut rng, n * cols);
        let gains = randn(&mut rng, cols);
        let xn: Vec<Vec<f64>> = (0..n)
            .map(|t| {
                let v = norm_f64(&x[t * cols..(t + 1) * cols], &gains, eps);
                // The tiled kernel gets x normalised already, in f32.
                if tiled {
                    v.iter().map(|&e| e as f32 as f64).collect()
                } else {
                    v
                }
            })
            .collect();
        let xin: Vec<f32> = if tiled {
            xn.iter().flatten().map(|&v| v as f32).collect()
        } else {
            x.clone()
        };
        let bv = randn(&mut rng, rows);
        let ffv: Vec<f32> = (0..rd / 2).map(|i| 1.0 + 0.3 * i as f32).collect();
        let (xb, gb, bb, fb) = (
            g.upload_f32("x", &xin),
            g.upload_f32("g", &gains),
            g.upload_f32("b", &bv),
            g.upload_f32("ff", &ffv),
        );
        let s = step(&g, pos as u32, n as u32);
        let q_out = poisoned(&g, n * qd);
        // Both f16 halves NaN, so an unwritten cache word shows.
        let cache = || {
            let b = g.storage("cache", (ctx * kvd * 2) as u64).unwrap();
            let nan: Vec<u8> = (0..ctx * kvd / 2)
                .flat_map(|_| 0x7e00_7e00u32.to_le_bytes())
                .collect();
            g.queue.write_buffer(&b, 0, &nan);
            b
        };
        let (kc, vc) = (cache(), cache());
        let a = MatvecArgs {
            mv: Mv::Qkv,
            norm: (!tiled).then_some((&gb, eps)),
            tiled,
            split: qd,
            rows_per_group: rpg,
            qkv: Some(QkvArgs {
                kc: &kc,
                vc: &vc,
                bias: bias.then_some(&bb),
                ff: &fb,
                has_ff,
                kvd,
                head_dim: hd,
                rope_dim: rd,
                neox,
                theta_scale,
                freq_scale: fscale,
            }),
            ..MatvecArgs::plain(&xb, &q_out, &s, qd, false)
        };
        k.int_x = int.then(|| IntX::new(&g, cols, n).unwrap());
        let ops = matvec_ops(&g, &mut k, m, 0..rows, &a).unwrap();
        assert_eq!(ops[0].label == "quantize_x", int, "{ty}");
        g.run(&[&ops], n as u32, &[]);
        let gq = read_f32(&g, &q_out, n * qd);
        if !m.mixed.is_empty() && !tiled {
            // Each member alone (x itself, no norm), as the unfused path
            // reads a mixed group.
            let xp = g.upload_f32("x", &x);
            for i in 0..3 {
                let (mm, range) = grp.seg(i);
                let y = poisoned(&g, n * range.len());
                let a = MatvecArgs::plain(&xp, &y, &s, range.len(), false);
                let ops = matvec_ops(&g, &mut k, mm, range.clone(), &a).unwrap();
                g.run(&[&ops], n as u32, &[]);
                let got = read_f32(&g, &y, n * range.len());
                for t in 0..n {
                    let xt: Vec<f64> = x[t * cols..(t + 1) * cols]
                        .iter()
                        .map(|&v| v as f64)
                        .collect();
                    for (j, r) in range.clone().enumerate() {
                        let (d, mag) = dot_mag(&w[r], &xt);
                        let qe = if int { int_err(&w[r], &xt) } else { 0.0 };
                        let o = got[t * range.len() + j] as f64;
                        assert!(
                            (o - d).abs() <= 2e-5 * mag + qe + 1e-30,
                            "{ty} member {i} alone, token {t} row {r}: {o} vs {d}"
                        );
                    }
                }
            }
        }
        let unpack = |buf: &wgpu::Buffer| -> Vec<f32> {
            read_f32(&g, buf, ctx * kvd / 2)
                .iter()
                .flat_map(|w| {
                    let b = w.to_bits();
                    [
                        half::f16::from_bits(b as u16).to_f32(),
                        half::f16::from_bits((b >> 16) as u16).to_f32(),
                    ]
                })
                .collect()
        };
        let (gk, gv) = (unpack(&kc), unpack(&vc));
        let what = format!("{ty} neox={neox} rope_dim={rd} bias={bias} ff={has_ff} tiled={tiled}");
        for (t, xn) in xn.iter().enumerate() {
            let (mut raw, mut mag, mut qe) = (Vec::new(), Vec::new(), Vec::new());
            for (r, wr) in w.iter().enumerate() {
                let (d, mg) = dot_mag(wr, xn);
                raw.push(d + if bias { bv[r] as f64 } else { 0.0 });
                mag.push(mg);
                qe.push(if int { int_err(wr, xn) } else { 0.0 });
            }
            let ffs = has_ff.then_some(&ffv[..]);
            for h in raw[..qd + kvd].chunks_mut(hd) {
                rope_f64(h, pos + t, rd, neox, theta_scale, fscale, ffs);
            }
            // Rope mixes two rows: bound each output by both rows' terms.
            let head_mag = |r: usize| -> f64 {
                let h0 = r - r % hd;
                mag[h0..h0 + hd].iter().cloned().fold(0.0, f64::max)
            };
            // The integer path's error (int_err) of the two rows rope mixes.
            let head_qe = |r: usize| -> f64 {
                let h0 = r - r % hd;
                2.0 * qe[h0..h0 + hd].iter().cloned().fold(0.0, f64::max)
            };
            for i in 0..qd {
                let (o, want) = (gq[t * qd + i] as f64, raw[i]);
                let tol = 4e-5 * head_mag(i) + 2e-5 * (1.0 + want.abs()) + head_qe(i);
                assert!((o - want).abs() <= tol, "{what} q[{t}][{i}]: {o} vs {want}");
            }
            for i in 0..kvd {
                for (cache, base, name) in [(&gk, qd, "k"), (&gv, qd + kvd, "v")] {
                    let o = cache[(pos + t) * kvd + i] as f64;
                    let want = raw[base + i];
                    let tol = 4e-5 * head_mag(base + i)
                        + 2e-5
                        + 6e-4 * (want.abs() + head_qe(base + i))
                        + head_qe(base + i);
                    assert!(
                        (o - want).abs() <= tol,
                        "{what} {name}[{t}][{i}]: {o} vs {want}"
                    );
                }
            }
        }
    }
}

/// The GPU sampler vs the CPU sampler on random logits, drawing with the
/// same random sequence (two samplers of one seed): single- and multi-level
/// candidate selection (vocabularies of 100 to 70,000, so 0 to 2 merge
/// levels and fewer candidates than the 128-token cap), penalty with
/// repeated history tokens, greedy with penalty, top-k/top-p/min-p and
/// temperatures around 1, top-k disabled (softmax over the whole
/// vocabulary). Logits are a sum of 3 uniforms times 3, so at most a few
/// dozen tokens survive top-p/min-p and the 128-candidate cap never binds.
/// Rule: at least 98% of the draws give the same
/// id (the GPU's parallel sums and exp/log differ from the CPU's in the last
/// bits, which moves a boundary only for draws that land within ~1e-6 of
/// it; greedy must agree on every draw).
#[test]
fn sampling_matches_cpu_sampler() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(37);
    let base = SamplerParams {
        temperature: 0.8,
        top_k: 40,
        top_p: 0.95,
        min_p: 0.05,
        repeat_penalty: 1.0,
        repeat_last_n: 64,
        seed: 5,
    };
    let cases = [
        (
            5000usize,
            SamplerParams {
                repeat_penalty: 1.1,
                ..base
            },
        ),
        (
            3000,
            SamplerParams {
                temperature: 1.5,
                top_k: 0,
                top_p: 0.9,
                min_p: 0.1,
                ..base
            },
        ),
        (
            2100,
            SamplerParams {
                temperature: 0.0,
                repeat_penalty: 1.3,
                ..base
            },
        ),
        (
            100,
            SamplerParams {
                temperature: 1.0,
                top_k: 0,
                top_p: 1.0,
                min_p: 0.0,
                ..base
            },
        ),
        (
            70000,
            SamplerParams {
                temperature: 0.7,
                top_k: 64,
                top_p: 0.8,
                min_p: 0.02,
                ..base
            },
        ),
    ];
    for (vocab, params) in cases {
        let bufs = SampleBufs::new(&g, vocab).unwrap();
        let lb = g.storage("logits", vocab as u64 * 4).unwrap();
        let out = g.storage("id", 4).unwrap();
        let ops = sample_ops(&g, &k, &lb, &out, &bufs, vocab);
        let mut cpu = Sampler::new(params, vocab).unwrap();
        let mut gs = Sampler::new(params, vocab).unwrap();
        let draws = 150;
        let mut same = 0;
        for _ in 0..draws {
            let logits: Vec<f32> = (0..vocab)
                .map(|_| 3.0 * (uniform(&mut rng) + uniform(&mut rng) + uniform(&mut rng)))
                .collect();
            let history: Vec<u32> = (0..100)
                .map(|_| rng.next_u32() % vocab.min(300) as u32)
                .collect();
            let lbytes: Vec<u8> = logits.iter().flat_map(|v| v.to_le_bytes()).collect();
            g.queue.write_buffer(&lb, 0, &lbytes);
            let pen = gs.penalized(&history);
            let r = if params.temperature > 0.0 {
                gs.draw()
            } else {
                0.0
            };
            bufs.write(&g, vocab, &params, &pen, r, false);
            g.run(&[&ops], 1, &[]);
            let got = read_f32(&g, &out, 1)[0].to_bits();
            let want = cpu.sample(&mut logits.clone(), &history);
            assert!(
                (got as usize) < vocab,
                "vocab {vocab}: id {got} out of range"
            );
            same += (got == want) as usize;
        }
        eprintln!("vocab {vocab} {params:?}: {same}/{draws} draws identical");
        if params.temperature <= 0.0 {
            assert_eq!(same, draws, "greedy with penalty must match exactly");
        }
        assert!(
            same * 100 >= draws * 98,
            "vocab {vocab}: {same}/{draws} identical"
        );
    }
}

/// A grammar's allowed-token mask applied on the GPU: argmax.wgsl's
/// `masked` (greedy) and sample.wgsl with `masked` (greedy with a penalty,
/// and sampling), each against the CPU sampler given the same mask, on
/// fresh random logits whose counts are multiples of neither 32 nor the
/// workgroup size (one large enough for a merge level). Masks: random
/// (about 30% allowed), a single allowed token, everything but the best
/// logit, and one with its last word missing (nothing allowed there, as on
/// the CPU). Bounds: greedy (both kernels) the exact CPU id; sampling at
/// most one of 40 draws different (the parallel sums, see
/// `sampling_matches_cpu_sampler`) and every GPU id allowed; a single
/// allowed token is always the pick. Outputs are NaN-poisoned first.
#[test]
fn masked_picks_match_cpu_sampler() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(53);
    let greedy = SamplerParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        seed: 9,
        ..SamplerParams::default()
    };
    let penalized = SamplerParams {
        repeat_penalty: 1.3,
        ..greedy
    };
    // Top-k off: the softmax spans the allowed vocabulary. The logits are
    // spread wide (12 x a sum of three uniforms) so that min-p leaves fewer
    // than the GPU's 128 candidates, past which it differs by design
    // (sample.wgsl).
    let hot = SamplerParams {
        temperature: 1.2,
        top_k: 0,
        top_p: 0.9,
        min_p: 0.1,
        ..greedy
    };
    let warm = SamplerParams {
        temperature: 0.8,
        top_k: 40,
        top_p: 0.9,
        min_p: 0.05,
        ..greedy
    };
    for vocab in [1001usize, 5003, 70001] {
        let words = vocab.div_ceil(32);
        let bufs = SampleBufs::new(&g, vocab).unwrap();
        let lb = g.storage("logits", vocab as u64 * 4).unwrap();
        let out = poisoned(&g, 1);
        let sample = sample_ops(&g, &k, &lb, &out, &bufs, vocab);
        let p = g.params([vocab as u32, vocab as u32, 0, 0, 0, 0, 0, 0]);
        let argmax = [Op {
            bind: kernels::bind(
                &g,
                &k.argmax_masked(&g),
                &[(0, &lb), (1, &out), (2, &p), (4, &bufs.mask)],
            ),
            pipeline: k.argmax_masked(&g),
            label: "test",
            shape: Shape::Fixed([1, 1, 1]),
        }];
        let run = |ops: &[Op]| {
            let nan: Vec<u8> = f32::NAN.to_le_bytes().to_vec();
            g.queue.write_buffer(&out, 0, &nan);
            g.run(&[ops], 1, &[]);
            read_f32(&g, &out, 1)[0].to_bits()
        };
        for params in [greedy, penalized, hot, warm] {
            let mut cpu = Sampler::new(params, vocab).unwrap();
            let mut gs = Sampler::new(params, vocab).unwrap();
            let (mut same, mut draws) = (0, 0);
            for case in 0..40 {
                let logits: Vec<f32> = (0..vocab)
                    .map(|_| 12.0 * (uniform(&mut rng) + uniform(&mut rng) + uniform(&mut rng)))
                    .collect();
                let best = crate::sampler::argmax(&logits) as usize;
                let mut mask = vec![0u32; words];
                match case % 4 {
                    0 => {
                        for (i, w) in mask.iter_mut().enumerate() {
                            for b in 0..32 {
                                if i * 32 + b < vocab && rng.next_u32() % 10 < 3 {
                                    *w |= 1 << b;
                                }
                            }
                        }
                    }
                    1 => {
                        let t = rng.next_u32() as usize % vocab;
                        mask[t / 32] |= 1 << (t % 32);
                    }
                    2 => {
                        mask.fill(u32::MAX);
                        mask[best / 32] &= !(1 << (best % 32));
                    }
                    _ => {
                        mask.fill(u32::MAX);
                        mask.pop();
                    }
                }
                let history: Vec<u32> = (0..80)
                    .map(|_| rng.next_u32() % vocab.min(300) as u32)
                    .collect();
                let lbytes: Vec<u8> = logits.iter().flat_map(|v| v.to_le_bytes()).collect();
                g.queue.write_buffer(&lb, 0, &lbytes);
                bufs.write_mask(&g, vocab, &mask);
                gs.extras.mask = Some(mask.clone());
                cpu.extras.mask = Some(mask.clone());
                let want = cpu.sample(&mut logits.clone(), &history);
                let ops: &[Op] = if params == greedy {
                    &argmax
                } else {
                    let pen = gs.penalized(&history);
                    let r = if params.temperature > 0.0 {
                        gs.draw()
                    } else {
                        0.0
                    };
                    bufs.write(&g, vocab, &params, &pen, r, true);
                    &sample
                };
                let got = run(ops);
                let what = format!("vocab {vocab} case {case} {params:?}");
                assert!(gs.extras.allows(got), "{what}: {got} is masked out");
                if case % 4 == 1 {
                    assert_eq!(got, want, "{what}: the one allowed token");
                }
                if case % 4 == 2 && params.temperature <= 0.0 {
                    assert_ne!(got as usize, best, "{what}");
                }
                if params.temperature <= 0.0 {
                    assert_eq!(got, want, "{what}: greedy must match exactly");
                }
                same += (got == want) as usize;
                draws += 1;
            }
            eprintln!("vocab {vocab} {params:?}: {same}/{draws} identical");
            assert!(same + 1 >= draws, "vocab {vocab}: {same}/{draws}");
        }
    }
}

/// One tiled plain product of format `ty` on `k`'s tile vs dequantize_row +
/// an f64 dot: 150 rows and 67 tokens (ragged tiles both ways), columns a
/// multiple of 32 (2 blocks, 2 super-blocks for the K-quants, 96 for the
/// float formats), accumulating onto random values, rows from 3 on. Each
/// output may err by `err(w row, x)` (the kernel's bound for the product)
/// plus 1e-6 of the expected value and 1e-7.
fn check_tiled_plain(
    g: &Gpu,
    k: &mut Kernels,
    rng: &mut Rng,
    ty: GgmlType,
    what: &str,
    err: &dyn Fn(&[f32], &[f64]) -> f64,
) {
    let (rows, n, r0) = (150usize, 67usize, 3usize);
    let cols = match ty.block_len() {
        1 => 96,
        32 => 64,
        b => 2 * b,
    };
    let data = random_matrix(rng, ty, rows, cols);
    let m = GpuMatrix::upload(g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
    let w = rows_f32(ty, &data, rows, cols);
    let x = randn(rng, n * cols);
    let init = randn(rng, n * (rows - r0));
    let (xb, yb) = (g.upload_f32("x", &x), g.upload_f32("y", &init));
    let s = step(g, 0, n as u32);
    let a = MatvecArgs {
        tiled: true,
        ..MatvecArgs::plain(&xb, &yb, &s, rows - r0, true)
    };
    let ops = matvec_ops(g, k, &m, r0..rows, &a).unwrap();
    // The tensor-core tile's f16 x is packed by a pass first.
    let coop = k.tile_for([ty; 3], Mv::Main, rows - r0);
    let labels: Vec<&str> = ops.iter().map(|o| o.label).collect();
    let want: &[&str] = if k.half_tile(coop, rows - r0, cols).half_x {
        &["pack_f16", "matmul"]
    } else {
        &["matmul"]
    };
    assert_eq!(labels, want, "{what}");
    g.run(&[&ops], n as u32, &[]);
    let got = read_f32(g, &yb, n * (rows - r0));
    for t in 0..n {
        let xt: Vec<f64> = x[t * cols..(t + 1) * cols]
            .iter()
            .map(|&v| v as f64)
            .collect();
        for (r, wr) in w.iter().enumerate().skip(r0) {
            let (d, _) = dot_mag(wr, &xt);
            let i = t * (rows - r0) + r - r0;
            let want = d + init[i] as f64;
            let o = got[i] as f64;
            assert!(
                (o - want).abs() <= err(wr, &xt) + 1e-6 * want.abs() + 1e-7,
                "{ty} {what} token {t} row {r}: {o} vs {want}"
            );
        }
    }
}

/// The tiled (prefill) kernel for every format, both tile shapes, vs
/// dequantize_row + an f64 dot: 147 rows and 67 tokens (two tiles or more
/// each way, all ragged), columns a
/// multiple of 32 (2 blocks, or 2 super-blocks for the K-quants, 96 for
/// the float formats), accumulating onto random values, and a row range
/// that starts mid-matrix. Bound as for the matvec: 2e-5 * sum |w x| +
/// 1e-6 * |y|.
#[test]
fn matmul_every_format_matches_cpu() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(41);
    let tiles = [kernels::Tile::SMALL, kernels::Tile::LARGE];
    for (i, ty) in BLOCK_TYPES.into_iter().enumerate() {
        // Alternate the two tile shapes over the formats (the large one only
        // where the adapter has the workgroup memory).
        k.tile = tiles[i % 2];
        if g.limits.max_compute_workgroup_storage_size < 24 << 10 {
            k.tile = kernels::Tile::SMALL;
        }
        let what = format!("{:?}", k.tile);
        check_tiled_plain(&g, &mut k, &mut rng, ty, &what, &|w, x| {
            2e-5 * dot_mag(w, x).1
        });
    }
}

/// The formats with an int8 tile decoder (units_q.wgsl): those with an
/// integer decoder.
fn tile_q_types() -> impl Iterator<Item = GgmlType> {
    INT_TYPES.into_iter()
}

/// The test device, where its WGSL has dot4I8Packed (the integer path's
/// kernels); else none, said as SKIPPED.
fn int_gpu() -> Option<Gpu> {
    let g = gpu()?;
    if !Kernels::new(&g, &tuning()).int_dot {
        eprintln!("SKIPPED: no dot4I8Packed on this device");
        return None;
    }
    Some(g)
}

/// The integer prefill tile (matmul_int.wgsl) for every format with an
/// int8 tile decoder on the small tile, and Q4_K (Q4_K_M's main format) on
/// the large one too where the adapter has its workgroup memory: 150 rows
/// (3.. read: a row range from mid-matrix) and 67 tokens (ragged tiles
/// both ways), 2 blocks (2 and 3 super-blocks for the K-quants) per row;
/// output NaN-poisoned first (or, every other case, random values it
/// accumulates onto), the int8 x NaN-poisoned before its quantize pass.
/// Two references (each tile compiles for a while on lavapipe, so the f32
/// tile is not run again here: `matmul_every_format_matches_cpu` holds it
/// to the same f64 product):
/// 1. `int_twin` (16-element groups) on the int8 x and scales the GPU's
///    quantize pass left (read back; `quantize_x_matches_cpu` checks it):
///    the kernel's integer sums are exact, so only its f32 scaling and
///    summing of 2 cols / 16 pieces differ: `twin_bound(2 cols / 16)`,
///    plus 2^-23 of |y| for the accumulation onto y.
/// 2. The exact f64 product on the f32 x, as the f32 tile's test: they
///    differ by x's rounding to int8, `int_err(w, x)`, plus the f32 tile's
///    own bound, 2e-5 * sum |w x| + 1e-6 |y|.
#[test]
fn matmul_int_matches_integer_twin_and_f64() {
    let Some(g) = int_gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    k.int_prefill = true;
    let mut rng = Rng::new(59);
    let large = g.limits.max_compute_workgroup_storage_size >= 24 << 10;
    let mut cases: Vec<(GgmlType, usize, kernels::Tile)> = tile_q_types()
        .map(|ty| (ty, 2 * ty.block_len().max(32), kernels::Tile::SMALL))
        .collect();
    cases.push((GgmlType::Q4_K, 768, kernels::Tile::SMALL));
    if large {
        cases.push((GgmlType::Q4_K, 768, kernels::Tile::LARGE));
    }
    for (i, (ty, cols, tile)) in cases.into_iter().enumerate() {
        k.tile = tile;
        let acc = i % 2 == 1;
        let what = format!("{ty} x {cols} {tile:?} acc {acc}");
        let (rows, n, r0) = (150usize, 67usize, 3usize);
        let out = rows - r0;
        let data = random_matrix(&mut rng, ty, rows, cols);
        let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let w = rows_f32(ty, &data, rows, cols);
        let x = randn(&mut rng, n * cols);
        let init = if acc {
            randn(&mut rng, n * out)
        } else {
            vec![0.0; n * out]
        };
        let xb = g.upload_f32("x", &x);
        let s = step(&g, 0, n as u32);
        let y = if acc {
            g.upload_f32("y", &init)
        } else {
            poisoned(&g, n * out)
        };
        let ix = IntX::new(&g, cols, n).unwrap();
        poison_int_x(&g, &ix);
        k.int_x = Some(ix.clone());
        let a = MatvecArgs {
            tiled: true,
            ..MatvecArgs::plain(&xb, &y, &s, out, acc)
        };
        let ops = matvec_ops(&g, &mut k, &m, r0..rows, &a).unwrap();
        let labels: Vec<&str> = ops.iter().map(|o| o.label).collect();
        assert_eq!(labels, ["quantize_x", "matmul_int"], "{what}");
        g.run(&[&ops], n as u32, &[]);
        let got = read_f32(&g, &y, n * out);
        let (gq, gd) = read_int_x(&g, &ix, n, None);
        for t in 0..n {
            let xt: Vec<f64> = x[t * cols..(t + 1) * cols]
                .iter()
                .map(|&v| v as f64)
                .collect();
            for (r, wr) in w.iter().enumerate().skip(r0) {
                let j = t * out + r - r0;
                let (o, y0) = (got[j] as f64, init[j] as f64);
                let rb = ty.row_bytes(cols).unwrap();
                let row = &data[r * rb..(r + 1) * rb];
                let (val, mag) = int_twin(ty, row, &gq[t], &gd[t], 16);
                let want = val + y0;
                assert!(
                    (o - want).abs()
                        <= twin_bound(2 * cols / 16, mag) + 2f64.powi(-23) * want.abs(),
                    "{what} token {t} row {r}: int tile {o} vs twin {want} (scale {mag})"
                );
                let (d, dm) = dot_mag(wr, &xt);
                let exact = d + y0;
                let tol = int_err(wr, &xt) + 2e-5 * dm + 1e-6 * exact.abs() + 1e-7;
                assert!(
                    (o - exact).abs() <= tol,
                    "{what} token {t} row {r}: int tile {o} vs f64 {exact} (bound {tol})"
                );
            }
        }
    }
}

/// The LM head's argmax partials (matvec `head`) and argmax `pairs`: the
/// id equals the CPU argmax of the GPU's own logits, including the lowest
/// of two tied maxima in different workgroups and, with the matrix split
/// into parts, in different parts; for each rows-per-workgroup choice.
#[test]
fn head_argmax_matches_logits() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(43);
    let (rows, cols) = (1003usize, 64usize);
    let mut w = randn(&mut rng, rows * cols);
    for r in [300usize, 700] {
        w[r * cols..(r + 1) * cols].fill(1.0);
    }
    let data: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let x: Vec<f32> = (0..2 * cols)
        .map(|_| uniform(&mut rng).abs() + 0.1)
        .collect();
    let gains = vec![1.0f32; cols];
    let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
    let s = step(&g, 0, 2);
    for (r, limit) in [
        (2u32, u64::MAX),
        (16, u64::MAX),
        (16, 512 * 4 * cols as u64),
    ] {
        let m = GpuMatrix::upload(&g, "head", GgmlType::F32, rows, cols, &data, limit).unwrap();
        let logits = poisoned(&g, rows);
        let part = g.storage("partials", rows as u64 * 8).unwrap();
        let out = g.storage("id", 4).unwrap();
        let a = MatvecArgs {
            mv: Mv::Head,
            norm: Some((&gb, 1e-5)),
            last: true,
            rows_per_group: r,
            partials: Some(&part),
            ..MatvecArgs::plain(&xb, &logits, &s, rows, false)
        };
        let mut ops = matvec_ops(&g, &mut k, &m, 0..rows, &a).unwrap();
        let groups: usize = m.parts.iter().map(|p| p.rows.div_ceil(r as usize)).sum();
        let p = g.params([groups as u32, rows as u32, 0, 0, 0, 0, 0, 0]);
        ops.push(Op {
            bind: kernels::bind(&g, &k.argmax_pairs(&g), &[(3, &part), (1, &out), (2, &p)]),
            pipeline: k.argmax_pairs(&g),
            shape: Shape::Fixed([1, 1, 1]),
            label: "test",
        });
        g.run(&[&ops], 2, &[]);
        let l = read_f32(&g, &logits, rows);
        let got = read_f32(&g, &out, 1)[0].to_bits();
        assert_eq!(l[300], l[700], "tied rows");
        assert_eq!(
            got,
            crate::sampler::argmax(&l),
            "R={r} parts={}",
            m.parts.len()
        );
        assert_eq!(got, 300, "R={r} parts={}", m.parts.len());
    }
}

fn random_words(rng: &mut Rng, words: usize) -> Vec<u8> {
    (0..words * 4)
        .flat_map(|_| rng.next_u32().to_le_bytes())
        .collect()
}

fn read_u32(g: &Gpu, buf: &wgpu::Buffer, len: usize) -> Vec<u32> {
    read_f32(g, buf, len).iter().map(|v| v.to_bits()).collect()
}

/// Word counts for the bandwidth kernels (not multiples of 256 threads
/// times 8 loads) with the workgroups to launch: the host's choice, and
/// few enough that each thread takes several whole turns of 8 loads and
/// then the remainder loop, and more threads than words.
const BANDWIDTH_CASES: [(usize, Option<u32>); 4] = [
    (100_003, None),
    (100_003, Some(3)),
    (2_053, Some(1)),
    (5, Some(2)),
];

/// The CPU twin of the read kernels: the wrapping sums, lane by lane, of
/// the 32-bit words of `data` (lane = word index mod 4).
fn lane_sums(data: &[u8]) -> [u32; 4] {
    let mut want = [0u32; 4];
    for (i, w) in data.chunks_exact(4).enumerate() {
        let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        want[i % 4] = want[i % 4].wrapping_add(v);
    }
    want
}

/// Run a read kernel's `op` and fold the `groups` per-workgroup sums it
/// left in `out`.
fn run_folded(g: &Gpu, op: Op, out: &wgpu::Buffer, groups: u32) -> [u32; 4] {
    g.run(&[&[op]], 1, &[]);
    let sums: Vec<u8> = read_u32(g, out, groups as usize * 4)
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    bandwidth::fold(&sums)
}

/// The read kernel's per-workgroup sums add up, lane by lane, to the CPU's
/// wrapping sums of the same random data: every word is read exactly once.
#[test]
fn bandwidth_read_sums_every_word_once() {
    let Some(g) = gpu() else { return };
    let mut rng = Rng::new(29);
    for (words, groups) in BANDWIDTH_CASES {
        let groups = groups.unwrap_or(bandwidth::groups_for(words as u64));
        let data = random_words(&mut rng, words);
        let want = lane_sums(&data);
        let src = g.upload("src", &data);
        // NaN bits in every word of every workgroup's sums.
        let out = poisoned(&g, groups as usize * 4);
        let op = bandwidth::read_op(&g, &src, &out, groups);
        assert_eq!(
            run_folded(&g, op, &out, groups),
            want,
            "{words} words over {groups} workgroups"
        );
    }
}

/// bandwidth_shapes.wgsl in each order, with workgroups of 32 to 1,024
/// threads and 1 to 16 loads a turn, over word counts that are not
/// multiples of a turn and workgroup counts from fewer than a turn needs
/// to more threads than words: its per-workgroup sums add up to the CPU's
/// wrapping sums, so every word is read exactly once.
#[test]
fn bandwidth_shaped_read_sums_every_word_once() {
    use bandwidth::{Order, ReadShape};
    let Some(g) = gpu() else { return };
    let mut rng = Rng::new(37);
    let shapes = [
        (Order::GridStride, 256, 8),
        (Order::GridStride, 32, 3),
        (Order::Spans, 128, 4),
        (Order::Spans, 1024, 16),
        (Order::Spans, 64, 1),
        (Order::Runs, 256, 5),
        (Order::Runs, 512, 16),
        (Order::Runs, 32, 1),
        (Order::ReadSum, 256, 8),
    ];
    for (words, groups) in [(100_003usize, 7u32), (2_053, 1), (5, 3), (70_001, 300)] {
        let data = random_words(&mut rng, words);
        let want = lane_sums(&data);
        let src = g.upload("src", &data);
        for (order, wg, loads) in shapes {
            let shape = ReadShape {
                order,
                wg,
                loads,
                turns: 1,
            };
            let out = poisoned(&g, groups as usize * 4);
            let op = bandwidth::read_shaped_op(&g, shape, &src, &out, groups);
            assert_eq!(
                run_folded(&g, op, &out, groups),
                want,
                "{shape:?}: {words} words over {groups} workgroups"
            );
        }
    }
}

/// `--shapes` parses ORDER:WG:LOADS:TURNS and names what it refuses; the
/// workgroups follow the turns, within the device's limit.
#[test]
fn read_shapes_parse_and_size() {
    use bandwidth::{Order, ReadShape};
    let s = ReadShape::parse("1:512:4:16").unwrap();
    assert_eq!(
        s,
        ReadShape {
            order: Order::Spans,
            wg: 512,
            loads: 4,
            turns: 16
        }
    );
    for bad in [
        "3:256:8:4",
        "0:100:8:4",
        "0:2048:8:4",
        "0:256:0:4",
        "0:256:17:4",
        "0:256:8:0",
        "0:256:8",
        "x",
    ] {
        let e = ReadShape::parse(bad).unwrap_err().to_string();
        assert!(e.contains(bad), "{bad}: {e}");
    }
    // 1 GiB of words: read_sum's shape takes groups_for's 8,192.
    let words = 1u64 << 26;
    assert_eq!(
        ReadShape::READ_SUM.groups(words, 65_535),
        bandwidth::groups_for(words)
    );
    assert_eq!(s.groups(words, 65_535), 2_048);
    assert_eq!(
        ReadShape::parse("0:32:1:1").unwrap().groups(words, 65_535),
        65_535
    );
    assert_eq!(s.groups(3, 65_535), 1);
    assert_eq!(ReadShape::all().len(), 180);
    // `sum` is read_sum itself, at groups_for's workgroups.
    let sum = ReadShape::parse("sum").unwrap();
    assert_eq!(sum.order, Order::ReadSum);
    for w in [3, 100_003, 1 << 26, 1 << 28] {
        assert_eq!(sum.groups(w, 65_535), bandwidth::groups_for(w));
    }
}

/// The copy kernel's destination is the source, bit for bit.
#[test]
fn bandwidth_copy_matches_source() {
    let Some(g) = gpu() else { return };
    let mut rng = Rng::new(31);
    for (words, groups) in BANDWIDTH_CASES {
        let groups = groups.unwrap_or(bandwidth::groups_for(words as u64));
        let data = random_words(&mut rng, words);
        let src = g.upload("src", &data);
        let dst = poisoned(&g, words * 4);
        g.run(&[&[bandwidth::copy_op(&g, &src, &dst, groups)]], 1, &[]);
        let got = read_u32(&g, &dst, words * 4);
        let want: Vec<u32> = data
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(
            bad, 0,
            "{words} words over {groups} workgroups: {bad} differ"
        );
    }
}

/// quantize_x.wgsl's twin: per 32-element block (the last padded with
/// zeros) d = amax / 127 and q = round(x / d), ties to even; in f64.
fn quantize_x_f64(x: &[f64]) -> (Vec<i8>, Vec<f64>) {
    let nb = x.len().div_ceil(32);
    let (mut q, mut d) = (vec![0i8; nb * 32], vec![0f64; nb]);
    for b in 0..nb {
        let blk = &x[32 * b..x.len().min(32 * b + 32)];
        let amax = blk.iter().fold(0f64, |m, v| m.max(v.abs()));
        d[b] = amax / 127.0;
        for (i, &v) in blk.iter().enumerate() {
            q[32 * b + i] = if amax > 0.0 {
                (v * 127.0 / amax).round_ties_even() as i8
            } else {
                0
            };
        }
    }
    (q, d)
}

/// The `IntX` a test's products left: each token's int8 values and scales;
/// with `norm` (the product's cols and eps: a norm's quantize pass, which
/// leaves the norm's scale to the product) each scale times that token's
/// rmsnorm scale, in f64 from the blocks' sums of squares the pass wrote,
/// so that a twin of the product reads them as it read a normed x.
fn read_int_x(
    g: &Gpu,
    ix: &IntX,
    tokens: usize,
    norm: Option<(usize, f32)>,
) -> (Vec<Vec<i8>>, Vec<Vec<f64>>) {
    let q = read_f32(g, &ix.q, ix.tokens * ix.blocks * 8);
    let d = read_int_d(g, ix);
    let sq = &d[ix.sq_base() as usize..];
    let per = ix.blocks * 32;
    let bytes: Vec<i8> = q
        .iter()
        .flat_map(|w| w.to_bits().to_le_bytes().map(|b| b as i8))
        .collect();
    let scale = |t: usize| match norm {
        Some((cols, eps)) => {
            let sums = &sq[t * ix.blocks..t * ix.blocks + cols.div_ceil(32)];
            let ss: f64 = sums.iter().map(|&v| v as f64).sum();
            1.0 / (ss / cols as f64 + eps as f64).sqrt()
        }
        None => 1.0,
    };
    (
        (0..tokens)
            .map(|t| bytes[t * per..(t + 1) * per].to_vec())
            .collect(),
        (0..tokens)
            .map(|t| {
                let s = scale(t);
                d[t * ix.blocks..(t + 1) * ix.blocks]
                    .iter()
                    .map(|&v| v as f64 * s)
                    .collect()
            })
            .collect(),
    )
}

/// The terms to add to `twin_bound`'s for a product that finishes a norm
/// from the blocks' sums of squares (`read_int_x` with `norm`): the GPU's
/// f32 sum of the `cols / 32` sums (each rounded at most that many times
/// less one), the division, eps, the square root (which halves what came
/// before), the reciprocal and the rows' multiplication by it.
fn norm_terms(cols: usize) -> usize {
    cols.div_ceil(32) / 2 + 4
}

/// An `IntX`'s scale buffer, whole: the scales, then the sums of squares
/// (`IntX::sq_base`) where it has them (`IntX::without_sums` has not).
fn read_int_d(g: &Gpu, ix: &IntX) -> Vec<f32> {
    read_f32(g, &ix.d, ix.d.size() as usize / 4)
}

/// The blocks' sums of squares a norm's quantize pass left (from
/// `IntX::sq_base`), each token's.
fn read_int_sq(g: &Gpu, ix: &IntX, tokens: usize) -> Vec<Vec<f32>> {
    let d = read_int_d(g, ix);
    let base = ix.sq_base() as usize;
    (0..tokens)
        .map(|t| d[base + t * ix.blocks..base + (t + 1) * ix.blocks].to_vec())
        .collect()
}

/// The integer path's error bound against the exact product of `w` and
/// `x` (f64): x_k is replaced by q_k d_b with |x_k - q_k d_b| <= d_b / 2
/// (the rounding to an integer; d_b = amax_b / 127 of x's block b, taken
/// 0.1% larger for the f32 rounding of d, of 127 / amax and of the norm),
/// so |delta| <= sum_b d_b / 2 * sum_{k in b} |w_k|.
fn int_err(w: &[f32], x: &[f64]) -> f64 {
    let (_, d) = quantize_x_f64(x);
    w.chunks(32)
        .zip(d)
        .map(|(wb, db)| 0.5005 * db * wb.iter().map(|v| v.abs() as f64).sum::<f64>())
        .sum()
}

/// quantize_x.wgsl alone vs `quantize_x_f64`, on 3 tokens of random x
/// (uniform in [-3, 3]) with rows of 100, 37 and 1000 columns (not
/// multiples of 32: the last block padded with zeros; 1000 takes a
/// workgroup's 64 blocks and part of a second) and 64, with and without
/// NORM (x times the gains quantized, and each block's sum of squares of
/// x), and with LAST (only token S.n - 1 quantized); every output
/// NaN-poisoned first. Bounds: q exact except where the twin's x / d lies
/// within 1e-3 of a rounding tie (the GPU's f32 x * (127 / amax) and
/// x * g move it by ~1e-5), and there |dq| <= 1; d within 1e-5 relative
/// (f32 product and division); a block's sum of squares within 1e-5
/// relative (32 f32 squares and adds, ~2e-6); the padding exactly 0.
#[test]
fn quantize_x_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(41);
    let eps = 1e-5f32;
    for (cols, norm, last) in [
        (100usize, false, false),
        (100, true, false),
        (64, true, true),
        (37, false, true),
        (1000, true, false),
        // Rows of several 2048-element workgroups (2, 3, 5): each token's
        // blocks and sums in their own slots, the last workgroup's partly
        // past the row.
        (2049, true, false),
        (5000, true, true),
        (9000, true, false),
        (9000, false, false),
    ] {
        let n = 3usize;
        let x: Vec<f32> = randn(&mut rng, n * cols).iter().map(|v| v * 3.0).collect();
        let gains = randn(&mut rng, cols);
        let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
        // Both outputs NaN-poisoned first (quantize_x_gpu).
        let ix = quantize_x_gpu(&g, &k, &xb, &gb, [cols, n], norm, last, eps);
        let (gq, gd) = read_int_x(&g, &ix, n, None);
        let gs = read_int_sq(&g, &ix, n);
        let toks: Vec<usize> = if last { vec![n - 1] } else { (0..n).collect() };
        for t in toks {
            let xt = &x[t * cols..(t + 1) * cols];
            let xn: Vec<f64> = if norm {
                xt.iter()
                    .zip(&gains)
                    .map(|(&v, &g)| v as f64 * g as f64)
                    .collect()
            } else {
                xt.iter().map(|&v| v as f64).collect()
            };
            let (q, d) = quantize_x_f64(&xn);
            let what = format!("cols {cols} norm {norm} last {last} token {t}");
            for (b, blk) in xt.chunks(32).enumerate().filter(|_| norm) {
                let want: f64 = blk.iter().map(|&v| v as f64 * v as f64).sum();
                assert!(
                    (gs[t][b] as f64 - want).abs() <= 1e-5 * want,
                    "{what} block {b}: sum of squares {} vs {want}",
                    gs[t][b]
                );
            }
            for b in 0..d.len() {
                assert!(
                    (gd[t][b] - d[b]).abs() <= 1e-5 * d[b],
                    "{what} block {b}: d {} vs {}",
                    gd[t][b],
                    d[b]
                );
            }
            for i in 0..q.len() {
                let (a, e) = (gq[t][i], q[i]);
                if i >= cols {
                    assert_eq!(a, 0, "{what}: padding element {i}");
                    continue;
                }
                let r = xn[i] / d[i / 32];
                let tie = (r - r.floor() - 0.5).abs() < 1e-3;
                assert!(
                    a == e || (tie && (a as i32 - e as i32).abs() <= 1),
                    "{what} element {i}: q {a} vs {e} (x / d = {r})"
                );
            }
        }
    }
}

/// The formats with an integer decoder: every block format.
const INT_TYPES: [GgmlType; 12] = [
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
];

/// The integer matvec for every format with an int decoder vs an integer
/// twin: the int8 x and scales the GPU's own quantize pass left (read
/// back; `quantize_x_matches_cpu` checks that pass), times the CPU's
/// dequantized weights, summed in f64: w_k = (weight scale products) *
/// integer quant, so the twin's sum is the GPU's integer sums times the
/// same scales, and the only difference is the GPU's f32 rounding of the
/// scale products (about 4 roundings of 6e-8 per 4-element term) and of
/// the f32 sum over units: bound 2e-5 * sum_k |w_k q_k d_x| + 1e-30, as
/// matvec_every_format_matches_cpu's. Shapes as there: 3 blocks per row
/// (odd row starts) for the 32-element formats, 2 and 3 super-blocks for
/// the K-quants; 37 rows, 3 tokens, with and without the folded norm.
#[test]
fn int_matvec_matches_integer_twin() {
    let Some(g) = int_gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(43);
    let eps = 1e-5f32;
    let cases = INT_TYPES.iter().flat_map(|&ty| match ty.block_len() {
        32 => vec![(ty, 96)],
        b => vec![(ty, 2 * b), (ty, 3 * b)],
    });
    for (i, (ty, cols)) in cases.enumerate() {
        let (rows, n) = (37usize, 3usize);
        let norm = i % 2 == 1;
        let ix = IntX::new(&g, cols, n).unwrap();
        k.int_x = Some(ix.clone());
        let data = random_matrix(&mut rng, ty, rows, cols);
        let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
        let w = rows_f32(ty, &data, rows, cols);
        let x = randn(&mut rng, n * cols);
        let gains = randn(&mut rng, cols);
        let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
        let s = step(&g, 0, n as u32);
        let y = poisoned(&g, n * rows);
        let a = MatvecArgs {
            norm: norm.then_some((&gb, eps)),
            ..MatvecArgs::plain(&xb, &y, &s, rows, false)
        };
        let ops = matvec_ops(&g, &mut k, &m, 0..rows, &a).unwrap();
        assert_eq!(ops[0].label, "quantize_x", "{ty}: not the integer path");
        g.run(&[&ops], n as u32, &[]);
        let got = read_f32(&g, &y, n * rows);
        let (gq, gd) = read_int_x(&g, &ix, n, norm.then_some((cols, eps)));
        for t in 0..n {
            let xq: Vec<f64> = (0..cols).map(|c| gq[t][c] as f64 * gd[t][c / 32]).collect();
            for (r, wr) in w.iter().enumerate() {
                let (want, mag) = dot_mag(wr, &xq);
                let o = got[t * rows + r] as f64;
                assert!(
                    (o - want).abs() <= 2e-5 * mag + 1e-30,
                    "{ty} x {cols} norm {norm} row {r} token {t}: gpu {o} vs twin {want} (scale {mag})"
                );
            }
        }
    }
}

/// The formats with a wide integer decoder (wide.wgsl).
const WIDE_TYPES: [GgmlType; 12] = [
    GgmlType::Q4_K,
    GgmlType::Q6_K,
    GgmlType::Q5_K,
    GgmlType::IQ4_XS,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::IQ4_NL,
    GgmlType::Q5_0,
    GgmlType::Q4_1,
    GgmlType::Q5_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
];

/// The integer twin of one row's product: `row` (`ty` bytes) times the int8
/// x `xq` with scales `xd` (per 32 elements, as quantize_x.wgsl left them).
/// Per group of `grp` elements (inside one 16-element scale group and one
/// x block): the integer sums I = sum q_i x_i and S = sum x_i, exact, then
/// the pieces p = d sc I dx and m = dmin mn S dx in f64 (`int_block`'s
/// integers and scales). Returns (sum (p - m), sum (|p| + |m|)). The GPU
/// computes the same integers and multiplies the same scales in f32; its
/// pieces cover `grp` elements or more, so their magnitudes sum to at most
/// the twin's (the bound `twin_bound` is relative to it).
fn int_twin(ty: GgmlType, row: &[u8], xq: &[i8], xd: &[f64], grp: usize) -> (f64, f64) {
    let (bl, bb) = (ty.block_len(), ty.block_bytes());
    let (mut val, mut mag) = (0f64, 0f64);
    for (b, blk) in row.chunks_exact(bb).enumerate() {
        let (q, sc, mn, d, dmin) = quant::scalar::int_block(ty, blk);
        for e0 in (0..bl).step_by(grp) {
            let k0 = b * bl + e0;
            let (mut i, mut s) = (0i64, 0i64);
            for e in 0..grp {
                let xv = xq[k0 + e] as i64;
                i += q[e0 + e] as i64 * xv;
                s += xv;
            }
            let dx = xd[k0 / 32];
            let p = d as f64 * sc[e0 / 16] as f64 * i as f64 * dx;
            let m = dmin as f64 * mn[e0 / 16] as f64 * s as f64 * dx;
            val += p - m;
            mag += p.abs() + m.abs();
        }
    }
    (val, mag)
}

/// The bound on |gpu - int_twin| for a row of twin magnitude `mag` whose
/// product the GPU sums as `terms` f32 terms (one per wide unit, cols / 32,
/// or per unit, cols / 8): each term is made of the twin's exact pieces
/// (exact integer sums, f16 or f32 scales, the GPU's own x scales) with at
/// most 5 f32 roundings on any piece's path (scale products, the min's
/// subtraction, the two groups' addition), and the terms are summed in
/// some order (per thread, then the workgroup's tree or subgroup sums), in
/// which no term is rounded more than terms - 1 times. So |gpu - twin| <=
/// (5 + terms) * 2^-24 * mag to first order; 1% on top covers the rest.
fn twin_bound(terms: usize, mag: f64) -> f64 {
    1.01 * (5 + terms) as f64 * 2f64.powi(-24) * mag + 1e-30
}

/// `int_block` against the CPU's dequantize_row on every element of `row`:
/// d sc q - dmin mn is the CPU's f32 weight up to its f32 rounding (the
/// twin decodes what the CPU reference decodes).
fn check_int_block(ty: GgmlType, row: &[u8], cols: usize) {
    let mut w = vec![0f32; cols];
    quant::dequantize_row(ty, row, &mut w);
    for (b, blk) in row.chunks_exact(ty.block_bytes()).enumerate() {
        let (q, sc, mn, d, dmin) = quant::scalar::int_block(ty, blk);
        for (e, &qe) in q.iter().enumerate() {
            let p = d as f64 * sc[e / 16] as f64 * qe as f64;
            let m = dmin as f64 * mn[e / 16] as f64;
            let want = w[b * ty.block_len() + e] as f64;
            assert!(
                (p - m - want).abs() <= 4.0 * 2f64.powi(-24) * (p.abs() + m.abs()),
                "{ty} int_block element {e} of block {b}: {} vs {want}",
                p - m
            );
        }
    }
}

/// The code book's 16-lane form (book_shuffle.wgsl with BOOK_LANES = 16:
/// one shuffle a nibble), which devices whose subgroups have 16 lanes or
/// more take (NVIDIA's and AMD's, natively and in a browser), built here
/// whatever this device's subgroups are, so that with WEBGGUF_TEST_WGSL
/// (scripts/test.sh) Chrome's compiler checks that form too: lavapipe's
/// 8-lane subgroups otherwise build only the 8-lane one. Built, never run
/// (on narrower subgroups its lookups would read lanes that do not hold
/// their values; `wide_int_matvec_matches_integer_twin` runs the form this
/// device takes, and the H100's and H200's runs of it the 16-lane form).
/// The team kernels too: glu_q (gate/up, SiLU and GELU, in the default
/// and the narrow team shape where this device holds them, reading the
/// int8 x of a quantize pass and quantizing its own where that fits) and
/// main_q (Wo and down) in the engine's shape; the real 8B IQ4_XS decodes
/// through those. Fails where a build errors or the source lacks the
/// 16-lane shuffles.
#[test]
fn code_book_16_lanes_builds_for_every_entry() {
    let Some(g) = int_gpu() else { return };
    let (g, list) = g.recording_shaders();
    let mut k = Kernels::new(&g, &tuning());
    if k.book_lanes == 0 {
        eprintln!("SKIPPED: no code book by shuffles on this device");
        return;
    }
    k.book_lanes = 16;
    for ty in [GgmlType::IQ4_XS, GgmlType::IQ4_NL] {
        for mv in [Mv::Main, Mv::Silu, Mv::Qkv, Mv::Head] {
            let path = k.int_path([ty; 3], mv, true);
            assert!(matches!(path, MvPath::Wide { .. }), "{ty} {mv:?}: {path:?}");
            k.matvec(&g, [ty; 3], mv, 4, 4096, path, false).unwrap();
            g.check().unwrap_or_else(|e| panic!("{ty} {mv:?}: {e}"));
        }
    }
    let mut want = 8;
    for ty in [GgmlType::IQ4_XS, GgmlType::IQ4_NL] {
        let f = [ty; 3];
        for mv in [Mv::Silu, Mv::Gelu] {
            let path = k.int_path(f, mv, true);
            let mut shapes = vec![k.glu_q_shape, k.glu_q_narrow_shape];
            shapes.dedup();
            shapes.retain(|&s| k.glu_q_fits(s, f));
            for shape in shapes {
                for own_x in [false, true] {
                    if own_x && !kernels::own_x_fits(shape, f, 4096) {
                        continue;
                    }
                    k.matvec_glu_q(&g, f, mv, shape, 4096, path, own_x, true)
                        .unwrap();
                    g.check()
                        .unwrap_or_else(|e| panic!("{ty} {mv:?} {shape:?} own x {own_x}: {e}"));
                    want += 1;
                }
            }
        }
        let path = k.int_path(f, Mv::Main, true);
        k.matvec_main_q(&g, f, k.wo_q_shape, 4096, path).unwrap();
        g.check().unwrap_or_else(|e| panic!("{ty} main_q: {e}"));
        want += 1;
    }
    // At least the default glu_q shape (256 threads) and main_q for both
    // formats, beside the 8 plain entries.
    assert!(want >= 8 + 2 * 3, "{want} kernels built");
    eprintln!("{want} kernels of the 16-lane code book built");
    let built = lock_shaders(&list);
    assert_eq!(built.len(), want);
    for r in built.iter() {
        assert!(
            r.source.contains("const BOOK_LANES: u32 = 16u;")
                && r.source.contains("subgroupShuffle"),
            "{}: not the 16-lane code book",
            r.label
        );
    }
}

/// The integer matvec, wide (wide.wgsl) and per-unit, for every format
/// with a wide decoder vs `int_twin` on the int8 x the GPU's own quantize
/// pass left (read back; `quantize_x_matches_cpu` checks that pass). Rows
/// (37) are ragged for every rows-per-group (1, 2, 4, 8) and the columns
/// give wide units per row that are no multiple of the threads (3, 67 and
/// 131 for the 32-element formats, the last with 256 threads; 8, 72 and
/// 136 for the K-quants: 136 with 128 threads leaves 8 threads a second
/// wide unit); rows start mid-matrix (3..37) or at 0, the matrix in one
/// buffer or in parts of 5 rows; the norm folded into the quantize pass or
/// not; all 3 tokens or LAST (only token 2 read); Q4_K/Q5_K through the
/// vec4 alias of W or, as on a device with no storage binding to spare,
/// through 4 scalar loads; IQ4_XS and IQ4_NL on the wide path with each
/// code book (book_shuffle.wgsl where the device's subgroups allow it, so
/// on lavapipe's 8 lanes its two-register lookup, and book_table.wgsl).
/// Output NaN-poisoned first. Bound: `twin_bound` (2^-24 * (5 + terms)
/// relative to the twin's magnitude, with terms = cols / 32 wide or cols
/// / 8 per unit).
#[test]
fn wide_int_matvec_matches_integer_twin() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(47);
    let eps = 1e-5f32;
    let (rows, n) = (37usize, 3usize);
    let mut case = 0usize;
    // Where the device's subgroups have 8 lanes or more the shuffles must
    // be what the code-book cases below run (lavapipe: 8).
    let lanes = Kernels::new(&g, &tuning()).book_lanes;
    let can = g.features.contains(wgpu::Features::SUBGROUP) && g.adapter.subgroup_min_size >= 8;
    assert_eq!(lanes > 0, can, "code book by shuffles: {lanes} lanes");
    eprintln!("code book by shuffles: {lanes} lanes");
    for &ty in &WIDE_TYPES {
        // (columns, rows per group, threads: 0 picks)
        let shapes = if ty.block_len() == 32 {
            [(96usize, 2u32, 0u32), (2144, 4, 0), (4192, 1, 256)]
        } else {
            [(256, 2, 0), (2304, 8, 0), (4352, 4, 0)]
        };
        // (wide path, code book by shuffles)
        let paths: &[(bool, bool)] = if kernels::has_code_book(ty) {
            &[(true, true), (true, false), (false, true)]
        } else {
            &[(true, true), (false, true)]
        };
        for (cols, r, wg) in shapes {
            for &(wide, book_shuffle) in paths {
                case += 1;
                let mut k = Kernels::new(
                    &g,
                    &GpuTuning {
                        wide_int: wide,
                        book_shuffle,
                        ..tuning()
                    },
                );
                k.matvec_wg = wg;
                // Main binds Y, XQ, XD besides the weights: 3 leaves no
                // room for the alias.
                if case % 3 == 1 {
                    k.storage_buffers = 3;
                }
                let want_path = if wide {
                    MvPath::Wide {
                        wq: kernels::wide_vec(ty) && case % 3 != 1,
                    }
                } else {
                    MvPath::Int
                };
                assert_eq!(k.int_path([ty; 3], Mv::Main, true), want_path, "{ty}");
                // Rows off 16-byte boundaries never get the alias.
                if wide {
                    let p = k.int_path([ty; 3], Mv::Main, false);
                    assert_eq!(p, MvPath::Wide { wq: false }, "{ty}");
                }
                // Flags by case number, mixed across formats and paths.
                let (norm, last) = (matches!(case % 4, 1 | 2), case % 3 == 2);
                let lo = if case % 4 < 2 { 3 } else { 0 };
                let rb = ty.row_bytes(cols).unwrap();
                let limit = if case % 5 == 3 {
                    5 * rb as u64
                } else {
                    u64::MAX
                };
                let data = random_matrix(&mut rng, ty, rows, cols);
                check_int_block(ty, &data[..rb], cols);
                let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, limit).unwrap();
                assert_eq!(m.parts.len() > 1, limit != u64::MAX);
                let ix = IntX::new(&g, cols, n).unwrap();
                k.int_x = Some(ix.clone());
                let x = randn(&mut rng, n * cols);
                let gains = randn(&mut rng, cols);
                let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
                let s = step(&g, 0, n as u32);
                let nout = rows - lo;
                let toks: Vec<usize> = if last { vec![n - 1] } else { (0..n).collect() };
                let y = poisoned(&g, toks.len() * nout);
                let a = MatvecArgs {
                    norm: norm.then_some((&gb, eps)),
                    last,
                    rows_per_group: r,
                    ..MatvecArgs::plain(&xb, &y, &s, nout, false)
                };
                let ops = matvec_ops(&g, &mut k, &m, lo..rows, &a).unwrap();
                assert_eq!(ops[0].label, "quantize_x", "{ty}: not the integer path");
                g.run(&[&ops], n as u32, &[]);
                let got = read_f32(&g, &y, toks.len() * nout);
                let (gq, gd) = read_int_x(&g, &ix, n, norm.then_some((cols, eps)));
                let (grp, mut terms) = if wide { (16, cols / 32) } else { (4, cols / 8) };
                if norm {
                    terms += norm_terms(cols);
                }
                let what = format!(
                    "{ty} x {cols} wide {wide} book lanes {} R={r} WG={wg} {want_path:?} norm {norm} last {last} rows {lo}.. parts {}",
                    k.book_lanes,
                    m.parts.len()
                );
                let mut worst = 0f64;
                for (ti, &t) in toks.iter().enumerate() {
                    for row in lo..rows {
                        let w = &data[row * rb..(row + 1) * rb];
                        let (want, mag) = int_twin(ty, w, &gq[t], &gd[t], grp);
                        let o = got[ti * nout + row - lo] as f64;
                        let bound = twin_bound(terms, mag);
                        assert!(
                            (o - want).abs() <= bound,
                            "{what} token {t} row {row}: gpu {o} vs twin {want} (bound {bound:e})"
                        );
                        worst = worst.max((o - want).abs() / bound);
                    }
                }
                eprintln!("{what}: worst error {worst:.3} of the bound");
            }
        }
    }
}

/// A fused group's rows as `random_group` uploads them, with each row's
/// bytes and format kept for `int_twin` (members in order).
fn group_rows_bytes(
    g: &Gpu,
    rng: &mut Rng,
    tys: &[GgmlType],
    rows: &[usize],
    cols: usize,
) -> (MatGroup, Vec<(GgmlType, Vec<u8>)>) {
    let mut file = Vec::new();
    let mut mats = Vec::new();
    let mut out = Vec::new();
    for (&ty, &n) in tys.iter().zip(rows) {
        let data = random_matrix(rng, ty, n, cols);
        let rb = ty.row_bytes(cols).unwrap();
        out.extend(data.chunks_exact(rb).map(|r| (ty, r.to_vec())));
        mats.push(crate::model::Matrix {
            ty,
            rows: n,
            cols,
            offset: file.len() as u64,
            row_bytes: rb,
        });
        file.extend(data);
    }
    let members: Vec<(&str, &crate::model::Matrix)> = mats.iter().map(|m| ("m", m)).collect();
    let grp = MatGroup::upload_from(g, "group", &file, true, &members, u64::MAX, true).unwrap();
    assert!(grp.fused().is_some(), "{tys:?} not fused");
    (grp, out)
}

/// Fused gate/up (silu(gate) * up, the norm folded into the quantize pass)
/// through the wide and the per-unit integer paths vs `int_twin`, for
/// mixed groups (gate and up in different formats, one buffer: the second
/// member starts after 16-byte padding, since 37 Q6_K rows of 2304 columns
/// are 69930 bytes) and a uniform one; 37 gate and 37 up rows, 4 per
/// workgroup (the last group ragged), 72 wide units per row (2304
/// columns) or 67 (2144, the 32-element pair). Output NaN-poisoned first.
/// Bound: with eg, eu the gate's and up's `twin_bound`s, |silu'| < 1.1
/// carries eg, so |gpu - silu(G) U| <= 1.1 eg (|U| + eu) + eu |silu(G)| +
/// 1e-6 |silu(G) U| (the GPU's f32 exp and division, a few ulp).
#[test]
fn wide_int_gate_up_mixed_matches_integer_twin() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(53);
    let (ff, n, eps) = (37usize, 2usize, 1e-5f32);
    use GgmlType::*;
    for tys in [
        [Q6_K, Q4_K],
        [Q4_K, Q6_K],
        [Q5_K, IQ4_XS],
        [Q8_0, Q4_0],
        [Q4_K, Q4_K],
        [Q3_K, Q2_K],
    ] {
        for wide in [true, false] {
            let mut k = Kernels::new(
                &g,
                &GpuTuning {
                    wide_int: wide,
                    ..tuning()
                },
            );
            let cols = if tys[0].block_len() == 32 { 2144 } else { 2304 };
            let (grp, w) = group_rows_bytes(&g, &mut rng, &tys, &[ff, ff], cols);
            let m = grp.fused().unwrap();
            let fmts = [tys[0], tys[1], tys[1]];
            let path = k.int_path(fmts, Mv::Silu, true);
            let want_path = match wide {
                false => MvPath::Int,
                true => MvPath::Wide {
                    wq: tys.iter().any(|&t| kernels::wide_vec(t)),
                },
            };
            assert_eq!(path, want_path, "{tys:?}");
            let x = randn(&mut rng, n * cols);
            let gains = randn(&mut rng, cols);
            let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
            let s = step(&g, 0, n as u32);
            let y = poisoned(&g, n * ff);
            let a = MatvecArgs {
                mv: Mv::Silu,
                norm: Some((&gb, eps)),
                split: ff,
                // The wide path's default (wide_glu_rows), 4 otherwise.
                rows_per_group: if wide { 0 } else { 4 },
                ..MatvecArgs::plain(&xb, &y, &s, ff, false)
            };
            let ix = IntX::new(&g, cols, n).unwrap();
            k.int_x = Some(ix.clone());
            let ops = matvec_ops(&g, &mut k, m, 0..2 * ff, &a).unwrap();
            assert_eq!(ops[0].label, "quantize_x", "{tys:?}: not the integer path");
            let rows = if wide {
                super::ops::wide_glu_rows([tys[0], tys[1], tys[1]])
            } else {
                4
            };
            assert_eq!(
                ops[1].shape.groups(n as u32)[0],
                (2 * ff as u32).div_ceil(rows)
            );
            g.run(&[&ops], n as u32, &[]);
            let got = read_f32(&g, &y, n * ff);
            let what = format!("{tys:?} wide {wide} {path:?}");
            check_gate_up_twin(&g, &ix, &got, &w, [ff, n, cols], eps, wide, &what);
        }
    }
}

/// A fused silu gate/up product's outputs `got` ([tokens][ff]) against
/// `int_twin` on the int8 x its quantize pass left in `ix`: rows `w` (ff
/// gate rows, then ff up rows, `cols` long), the wide path's 16-element x
/// groups or the per-unit path's 4; bound: each member's `twin_bound`
/// carried through silu(gate) * up (silu's slope is under 1.1), plus 1e-6
/// relative for the f32 activation. The pass had the FFN norm (`eps`),
/// whose scale the product applies (`norm_terms`).
#[allow(clippy::too_many_arguments)]
fn check_gate_up_twin(
    g: &Gpu,
    ix: &IntX,
    got: &[f32],
    w: &[(GgmlType, Vec<u8>)],
    [ff, n, cols]: [usize; 3],
    eps: f32,
    wide: bool,
    what: &str,
) {
    let (gq, gd) = read_int_x(g, ix, n, Some((cols, eps)));
    let (grp_len, terms) = if wide { (16, cols / 32) } else { (4, cols / 8) };
    let terms = terms + norm_terms(cols);
    for t in 0..n {
        for r in 0..ff {
            let twin = |(ty, row): &(GgmlType, Vec<u8>)| {
                let (v, mag) = int_twin(*ty, row, &gq[t], &gd[t], grp_len);
                (v, twin_bound(terms, mag))
            };
            let (gt, eg) = twin(&w[r]);
            let (up, eu) = twin(&w[ff + r]);
            let silu = gt / (1.0 + (-gt).exp());
            let want = silu * up;
            let tol = 1.1 * eg * (up.abs() + eu) + eu * silu.abs() + 1e-6 * want.abs();
            let o = got[t * ff + r] as f64;
            assert!(
                (o - want).abs() <= tol,
                "{what} token {t} row {r}: {o} vs {want} (tol {tol:e})"
            );
        }
    }
}

/// A gate/up test's input: `tokens` rows of random x (`cols` long) and
/// random norm gains, uploaded, with the step of those tokens.
struct GluQX {
    x: wgpu::Buffer,
    gains: wgpu::Buffer,
    step: wgpu::Buffer,
    tokens: usize,
    cols: usize,
}

impl GluQX {
    fn new(g: &Gpu, rng: &mut Rng, tokens: usize, cols: usize) -> GluQX {
        GluQX {
            x: g.upload_f32("x", &randn(rng, tokens * cols)),
            gains: g.upload_f32("g", &randn(rng, cols)),
            step: step(g, 0, tokens as u32),
            tokens,
            cols,
        }
    }
}

/// One run of a fused silu gate/up product that may take `glu_q`.
struct GluQRun {
    ops: Vec<Op>,
    /// Its outputs ([tokens][ff]: `y` read back), NaN-poisoned first.
    y: wgpu::Buffer,
    got: Vec<f32>,
    /// The int8 x the product read, as its quantize pass left it (NaN-
    /// poisoned first: a product that quantizes its own x leaves it so).
    ix: IntX,
    /// The int8 x it wrote for the down product, NaN-poisoned first.
    ih: IntX,
}

/// `m` (`ff` gate rows, then `ff` up rows) over `xg` with the norm (eps)
/// through `k`, whose `int_x` it sets to its own `ix`.
/// A tuning whose glu_q runs in `shape` at any width: `GluQShape::NARROW`
/// through the narrow rows' choice (`Kernels::glu_q_shape_for`), every
/// other shape as `glu_q_shape` with that choice off.
fn glu_q_tuning(shape: GluQShape) -> GpuTuning {
    if shape == GluQShape::NARROW {
        GpuTuning {
            glu_q_narrow_cols: usize::MAX,
            glu_q_narrow_shape: shape,
            ..tuning()
        }
    } else {
        GpuTuning {
            glu_q_shape: shape,
            glu_q_narrow_cols: 0,
            ..tuning()
        }
    }
}

fn run_glu_q(g: &Gpu, k: &mut Kernels, m: &GpuMatrix, xg: &GluQX, eps: f32, ff: usize) -> GluQRun {
    let n = xg.tokens;
    let y = poisoned(g, n * ff);
    let ix = IntX::new(g, xg.cols, n).unwrap();
    poison_int_x(g, &ix);
    let ih = IntX::without_sums(g, ff, n).unwrap();
    poison_int_x(g, &ih);
    let a = MatvecArgs {
        mv: Mv::Silu,
        norm: Some((&xg.gains, eps)),
        split: ff,
        int_out: Some(&ih),
        ..MatvecArgs::plain(&xg.x, &y, &xg.step, ff, false)
    };
    k.int_x = Some(ix.clone());
    let ops = matvec_ops(g, k, m, 0..2 * ff, &a).unwrap();
    g.run(&[&ops], n as u32, &[]);
    let got = read_f32(g, &y, n * ff);
    GluQRun {
        ops,
        y,
        got,
        ix,
        ih,
    }
}

/// The ops' labels, in order.
fn labels(ops: &[Op]) -> Vec<&'static str> {
    ops.iter().map(|o| o.label).collect()
}

/// matvec.wgsl's `glu_q` (the gate/up product writing the down product's
/// int8 x) through the wide and per-unit integer paths, on mixed groups,
/// code-book ones included, in every team shape the tuning takes a sample
/// of (8x32, the default; 2x32, NARROW's 1,024 threads, which lavapipe
/// takes; 4x16, 2x8 with 32 teams; 16x64 with 4), with
/// and without subgroup sums (a shape whose team is narrower than the
/// adapter's subgroups sums through shared memory). 37 and 70 outputs: a
/// workgroup holds 32, so the last one's teams run past the rows, and the
/// last block is part padding. Its outputs as `wide_int_gate_up_mixed`
/// checks them (the integer twin, the same bound); its int8 x, NaN-
/// poisoned first, must equal bit for bit what quantize_x.wgsl makes of
/// those outputs on the same device (one definition of the block
/// arithmetic, int8_block.wgsl), padding included; and the ops must be
/// x's quantize pass and the one "gate_up_q" dispatch.
#[test]
fn glu_q_matches_integer_twin_and_quantize_pass() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(59);
    let (n, eps) = (2usize, 1e-5f32);
    use GgmlType::*;
    let shapes = [(8, 32), (2, 32), (4, 16), (2, 8), (16, 64)]
        .map(|(rows, threads)| GluQShape { rows, threads });
    for (i, tys) in [
        [Q4_K, Q4_K],
        [IQ4_XS, IQ4_XS],
        [Q5_K, IQ4_XS],
        [Q8_0, Q4_0],
        [Q6_K, Q4_K],
        [Q3_K, Q2_K],
        [IQ4_NL, IQ4_NL],
    ]
    .into_iter()
    .enumerate()
    {
        let wide = i % 2 == 0 || tys[0] == IQ4_XS;
        let shape = shapes[i % shapes.len()];
        for (ff, subgroups) in [(37usize, true), (70, false)] {
            let mut k = Kernels::new(
                &g,
                &GpuTuning {
                    wide_int: wide,
                    subgroups,
                    ..glu_q_tuning(shape)
                },
            );
            let what = format!("{tys:?} wide {wide} shape {shape} ff {ff} subgroups {subgroups}");
            let cols = if tys[0].block_len() == 32 { 2144 } else { 2304 };
            assert_eq!(
                k.glu_q_shape_for(cols, [tys[0], tys[1], tys[1]]),
                shape,
                "{what}"
            );
            let (grp, w) = group_rows_bytes(&g, &mut rng, &tys, &[ff, ff], cols);
            let m = grp.fused().unwrap();
            let xg = GluQX::new(&g, &mut rng, n, cols);
            let r = run_glu_q(&g, &mut k, m, &xg, eps, ff);
            assert_eq!(labels(&r.ops), ["quantize_x", "gate_up_q"], "{what}");
            let pairs = shape.teams() * shape.rows / 2;
            assert_eq!(pairs, 32, "{what}");
            assert_eq!(
                r.ops[1].shape.groups(n as u32)[0],
                ff.div_ceil(32) as u32,
                "{what}: one workgroup a block"
            );
            check_gate_up_twin(&g, &r.ix, &r.got, &w, [ff, n, cols], eps, wide, &what);
            // The quantize pass over the same outputs (no norm).
            let ones = g.upload_f32("ones", &vec![1.0; ff]);
            let want = quantize_x_gpu(&g, &k, &r.y, &ones, [ff, n], false, false, eps);
            let (hq, hd) = read_int_x(&g, &r.ih, n, None);
            let (wq, wd) = read_int_x(&g, &want, n, None);
            for t in 0..n {
                assert_eq!(hq[t], wq[t], "{what} token {t}: int8 values");
                let bits = |d: &[f64]| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&hd[t]), bits(&wd[t]), "{what} token {t}: scales");
            }
        }
    }
}

/// matvec.wgsl's `main_q` (a plain product on the integer path writing
/// the next fused product's int8 x, `GpuTuning::wo_q`) through the wide
/// and per-unit integer paths, code-book formats and others, in team
/// shapes 2x64 (the default: 1,024 threads, which lavapipe takes), 8x64,
/// 4x16, 1x8 (32 teams) and 16x16, with and
/// without subgroup sums. 37 and 70 rows: a workgroup holds 32, so the
/// last one's teams run past the rows, and the last block is part
/// padding. Its outputs (37 rows: added to random values, as Wo's
/// residual; 70: into NaN-poisoned ones) against the integer twin, with
/// `twin_bound` plus the f32 addition's rounding; the int8 x it wrote,
/// NaN-poisoned first, must equal bit for bit what quantize_x.wgsl with
/// the norm's gains makes of those outputs on the same device: values,
/// scales and the blocks' sums of squares, padding included; and the ops
/// must be x's quantize pass and the one "wo_q" dispatch.
#[test]
fn wo_q_matches_integer_twin_and_quantize_pass() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(61);
    let (n, eps) = (2usize, 1e-5f32);
    use GgmlType::*;
    let shapes = [(2, 64), (8, 64), (4, 16), (1, 8), (16, 16)]
        .map(|(rows, threads)| MainQShape { rows, threads });
    for (i, ty) in [IQ4_XS, Q4_K, IQ4_NL, Q4_0, Q6_K, Q8_0]
        .into_iter()
        .enumerate()
    {
        let wide = i % 3 != 2;
        let shape = shapes[i % shapes.len()];
        for (rows, subgroups) in [(37usize, true), (70, false)] {
            let acc = rows == 37;
            let mut k = Kernels::new(
                &g,
                &GpuTuning {
                    wide_int: wide,
                    subgroups,
                    wo_q_min: 0,
                    wo_q_shape: shape,
                    ..tuning()
                },
            );
            assert!(shape.valid(k.max_threads), "{shape} on this device");
            let what =
                format!("{ty:?} wide {wide} shape {shape} rows {rows} subgroups {subgroups}");
            let cols = if ty.block_len() == 32 { 2144 } else { 2304 };
            let data = random_matrix(&mut rng, ty, rows, cols);
            let rb = ty.row_bytes(cols).unwrap();
            let m = GpuMatrix::upload(&g, "w", ty, rows, cols, &data, u64::MAX).unwrap();
            let ix = IntX::new(&g, cols, n).unwrap();
            k.int_x = Some(ix.clone());
            let xb = g.upload_f32("x", &randn(&mut rng, n * cols));
            let gains = g.upload_f32("g", &randn(&mut rng, rows));
            let s = step(&g, 0, n as u32);
            let prior = randn(&mut rng, n * rows);
            let y = if acc {
                g.upload_f32("y", &prior)
            } else {
                poisoned(&g, n * rows)
            };
            let gx = IntX::new(&g, rows, n).unwrap();
            poison_int_x(&g, &gx);
            let a = MatvecArgs {
                int_next: Some((&gx, &gains)),
                ..MatvecArgs::plain(&xb, &y, &s, rows, acc)
            };
            let ops = matvec_ops(&g, &mut k, &m, 0..rows, &a).unwrap();
            assert_eq!(labels(&ops), ["quantize_x", "wo_q"], "{what}");
            assert_eq!(
                ops[1].shape.groups(n as u32)[0],
                rows.div_ceil(32) as u32,
                "{what}: one workgroup a block"
            );
            g.run(&[&ops], n as u32, &[]);
            let got = read_f32(&g, &y, n * rows);
            let (gq, gd) = read_int_x(&g, &ix, n, None);
            let (grp, terms) = if wide { (16, cols / 32) } else { (4, cols / 8) };
            for t in 0..n {
                for r in 0..rows {
                    let (v, mag) = int_twin(ty, &data[r * rb..(r + 1) * rb], &gq[t], &gd[t], grp);
                    let base = if acc { prior[t * rows + r] as f64 } else { 0.0 };
                    let want = base + v;
                    let tol = twin_bound(terms, mag) + 2f64.powi(-24) * (want.abs() + mag);
                    let o = got[t * rows + r] as f64;
                    assert!(
                        (o - want).abs() <= tol,
                        "{what} token {t} row {r}: {o} vs {want} (tol {tol:e})"
                    );
                }
            }
            // The pass with the norm's gains over the same outputs.
            let want = quantize_x_gpu(&g, &k, &y, &gains, [rows, n], true, false, eps);
            let (hq, hd) = read_int_x(&g, &gx, n, None);
            let (wq, wd) = read_int_x(&g, &want, n, None);
            let bits = |d: &[f64]| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            let sq_bits = |d: &[Vec<f32>]| {
                d.iter()
                    .map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            };
            for t in 0..n {
                assert_eq!(hq[t], wq[t], "{what} token {t}: int8 values");
                assert_eq!(bits(&hd[t]), bits(&wd[t]), "{what} token {t}: scales");
            }
            assert_eq!(
                sq_bits(&read_int_sq(&g, &gx, n)),
                sq_bits(&read_int_sq(&g, &want, n)),
                "{what}: sums of squares"
            );
        }
    }
}

/// glu_q quantizing its own x (matvec.wgsl's OWN_X, own_x.wgsl) against
/// glu_q after the quantize pass, on the wide path: uniform, mixed and
/// code-book groups, 37 and 70 outputs (the last workgroup's teams past
/// the rows), 2 tokens, with and without subgroup sums. own_x.wgsl does
/// the pass's arithmetic in the pass's order, so the outputs (NaN-poisoned
/// first) and the int8 x written for the down product must equal the
/// pass's bit for bit; the outputs are also checked against the integer
/// twin on the pass's int8 x, as `glu_q_matches_integer_twin_and_quantize_pass`
/// checks them; also in a team shape of 128 threads and in NARROW's
/// 1,024 (llama-3.2-1b's and TinyLlama's gate/up). The ops: one
/// "gate_up_q" dispatch with OWN_X, the pass and it without; rows longer
/// than `glu_own_x` keep the pass, and 8,192 columns with the code book do
/// not fit 16 KiB of workgroup memory beside 8x32's sums.
#[test]
fn glu_q_own_x_matches_quantize_pass() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(61);
    let (n, eps) = (2usize, 1e-5f32);
    use GgmlType::*;
    for tys in [
        [Q4_K, Q4_K],
        [IQ4_XS, IQ4_XS],
        [Q5_K, IQ4_XS],
        [Q6_K, Q4_K],
        [Q4_0, Q5_0],
        [Q2_K, Q2_K],
    ] {
        // 4 teams of 32 threads: own x in 128 threads.
        let narrow = GluQShape {
            rows: 16,
            threads: 32,
        };
        for (ff, subgroups, shape) in [
            (37usize, true, GluQShape::DEFAULT),
            (70, false, GluQShape::DEFAULT),
            (70, true, narrow),
            (37, true, GluQShape::NARROW),
        ] {
            let what = format!("{tys:?} ff {ff} subgroups {subgroups} {shape}");
            let cols = if tys[0].block_len() == 32 { 2144 } else { 2304 };
            let (grp, w) = group_rows_bytes(&g, &mut rng, &tys, &[ff, ff], cols);
            let m = grp.fused().unwrap();
            let xg = GluQX::new(&g, &mut rng, n, cols);
            // With its own x, and with the pass.
            let [own, pass] = [usize::MAX, 0].map(|own| {
                let mut k = Kernels::new(
                    &g,
                    &GpuTuning {
                        subgroups,
                        glu_own_x: own,
                        ..glu_q_tuning(shape)
                    },
                );
                run_glu_q(&g, &mut k, m, &xg, eps, ff)
            });
            let fits = kernels::own_x_fits(shape, [tys[0], tys[1], tys[1]], cols);
            let want: &[&str] = if fits {
                &["gate_up_q"]
            } else {
                &["quantize_x", "gate_up_q"]
            };
            assert_eq!(labels(&own.ops), want, "{what}");
            assert_eq!(labels(&pass.ops), ["quantize_x", "gate_up_q"], "{what}");
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&own.got), bits(&pass.got), "{what}: outputs");
            let (oq, od) = read_int_x(&g, &own.ih, n, None);
            let (pq, pd) = read_int_x(&g, &pass.ih, n, None);
            for t in 0..n {
                assert_eq!(oq[t], pq[t], "{what} token {t}: int8 values");
                let bits = |d: &[f64]| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&od[t]), bits(&pd[t]), "{what} token {t}: scales");
            }
            check_gate_up_twin(&g, &pass.ix, &own.got, &w, [ff, n, cols], eps, true, &what);
        }
    }
    // Where OWN_X is not taken.
    let tys = [Q4_K, Q4_K];
    let (ff, cols) = (37usize, 2304usize);
    let (grp, _) = group_rows_bytes(&g, &mut rng, &tys, &[ff, ff], cols);
    let m = grp.fused().unwrap();
    let xg = GluQX::new(&g, &mut rng, 1, cols);
    // Rows longer than glu_own_x.
    let mut k = Kernels::new(
        &g,
        &GpuTuning {
            glu_own_x: cols - 32,
            ..tuning()
        },
    );
    let r = run_glu_q(&g, &mut k, m, &xg, eps, ff);
    assert_eq!(labels(&r.ops), ["quantize_x", "gate_up_q"], "glu_own_x");
    assert!(!kernels::own_x_fits(GluQShape::DEFAULT, [IQ4_XS; 3], 8192));
}

/// Which team shape glu_q takes by row length (`Kernels::glu_q_shape_for`):
/// NARROW up to `glu_q_narrow_cols` (2,048 by default: llama-3.2-1b's and
/// TinyLlama's gate/up, where it measured faster), DEFAULT past it (the
/// 8B's 4,096, where it measured slower), DEFAULT where the device holds
/// fewer threads a workgroup than NARROW's 1,024 (WebGPU guarantees 256)
/// or the choice is off; and at 2,048 columns NARROW quantizes its own x
/// (glu_own_x), as on the 1B. Q8_0 pairs take NARROW at any length, and
/// glu_q only in it (`kernels::glu_q_takes`).
#[test]
fn glu_q_shape_follows_the_row_length() {
    let Some(g) = int_gpu() else { return };
    use GgmlType::*;
    let f = [Q4_K, Q4_K, Q4_K];
    let mut k = Kernels::new(&g, &tuning());
    assert_eq!(GpuTuning::default().glu_q_narrow_cols, 2048);
    assert_eq!(GpuTuning::default().glu_q_narrow_shape, GluQShape::NARROW);
    assert_eq!(k.glu_q_shape_for(2048, f), GluQShape::NARROW);
    assert_eq!(k.glu_q_shape_for(2080, f), GluQShape::DEFAULT);
    assert_eq!(k.glu_q_shape_for(4096, f), GluQShape::DEFAULT);
    // Q8_0 pairs: narrow teams at any length, and glu_q only in those.
    let q8 = [Q8_0, Q8_0, Q8_0];
    assert_eq!(k.glu_q_shape_for(4096, q8), GluQShape::NARROW);
    assert_eq!(
        k.glu_q_shape_for(4096, [Q8_0, Q4_K, Q4_K]),
        GluQShape::DEFAULT
    );
    assert!(kernels::glu_q_takes(q8, GluQShape::NARROW));
    assert!(!kernels::glu_q_takes(q8, GluQShape::DEFAULT));
    assert!(kernels::glu_q_takes([Q8_0, Q4_K, Q4_K], GluQShape::DEFAULT));
    assert!(!kernels::glu_q_takes([Q3_K; 3], GluQShape::NARROW));
    assert!(!kernels::glu_q_takes([Q8_0, Q3_K, Q3_K], GluQShape::NARROW));
    assert!(kernels::own_x_fits(GluQShape::NARROW, f, 2048));
    assert!(kernels::own_x_fits(GluQShape::NARROW, [IQ4_XS; 3], 2048));
    k.max_threads = 256;
    assert_eq!(
        k.glu_q_shape_for(2048, f),
        GluQShape::DEFAULT,
        "256 threads"
    );
    assert_eq!(
        k.glu_q_shape_for(4096, q8),
        GluQShape::DEFAULT,
        "256 threads"
    );
    let k = Kernels::new(
        &g,
        &GpuTuning {
            glu_q_narrow_cols: 0,
            ..tuning()
        },
    );
    assert_eq!(k.glu_q_shape_for(2048, f), GluQShape::DEFAULT, "off");
    assert_eq!(k.glu_q_shape_for(4096, q8), GluQShape::DEFAULT, "off");
}

/// `kernels::own_x_fits` against the kernels it admits: glu_q with its own
/// x, compiled for uniform, mixed and code-book groups at 256, 2,048 and
/// 4,096 columns and at the widest that fits (found here: 5,376 or 5,568
/// without the code book, 4,608 with it), and in NARROW at 256 and 2,048
/// columns, has workgroup variables, as naga lays
/// them out, within `kernels::own_x_bytes` and so within WebGPU's
/// guaranteed 16 KiB (which lavapipe, allowing more, would not hold it to).
#[test]
fn own_x_workgroup_memory_fits_webgpu() {
    let Some(g) = int_gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let (g, list) = g.recording_shaders();
    use GgmlType::*;
    let shape = GluQShape::DEFAULT;
    for tys in [
        [Q4_K, Q4_K, Q4_K],
        [IQ4_XS, IQ4_XS, IQ4_XS],
        [Q6_K, Q4_K, Q4_K],
        [Q4_0, Q4_0, Q4_0],
        [Q5_K, IQ4_XS, IQ4_XS],
    ] {
        let step = tys[0].block_len().max(32);
        let widest = (1..)
            .map(|i| i * step)
            .take_while(|&c| kernels::own_x_fits(shape, tys, c))
            .last()
            .unwrap_or(0);
        let book = tys.iter().any(|&t| kernels::has_code_book(t));
        // 16 KiB less 8x32's sums (9,408 bytes, 10,432 with the code
        // book), 1.25 bytes a column, in whole blocks of the format.
        let want = match (book, step) {
            (true, _) => 4608,
            (false, 32) => 5568,
            _ => 5376,
        };
        assert_eq!(widest, want, "{tys:?}");
        for cols in [256, 2048, 4096, widest] {
            let what = format!("{tys:?} cols {cols}");
            let shared = glu_q_workgroup_bytes(&mut k, &g, &list, tys, shape, cols, true, &what);
            let bound = kernels::own_x_bytes(shape, tys, cols);
            assert!(
                shared <= bound && bound <= 16384,
                "{what}: {shared} bytes, bound {bound}"
            );
        }
        // NARROW (1,024 threads), at the widths it takes (rows of at most
        // 2,048 by default).
        for cols in [256, 2048] {
            let what = format!("{tys:?} NARROW cols {cols}");
            let narrow = GluQShape::NARROW;
            assert!(kernels::own_x_fits(narrow, tys, cols), "{what}");
            let shared = glu_q_workgroup_bytes(&mut k, &g, &list, tys, narrow, cols, true, &what);
            let bound = kernels::own_x_bytes(narrow, tys, cols);
            assert!(
                shared <= bound && bound <= 16384,
                "{what}: {shared} bytes, bound {bound}"
            );
        }
    }
}

/// `kernels::glu_q_bytes` against the kernels it admits: glu_q without its
/// own x, uniform, mixed and code-book groups, in the team shapes the glu_q
/// test samples, has workgroup variables, as naga lays them out, within
/// that bound; and the bound keeps the default shape within WebGPU's
/// guaranteed 16 KiB but not 16x64 (which the host then refuses on such a
/// device; lavapipe allows more).
#[test]
fn glu_q_workgroup_memory_bound() {
    let Some(g) = int_gpu() else { return };
    // The code book's table: the layout the bound counts (the shuffles'
    // kernels hold 1 KiB less).
    let mut k = Kernels::new(
        &g,
        &GpuTuning {
            glu_own_x: 0,
            book_shuffle: false,
            ..tuning()
        },
    );
    let (g, list) = g.recording_shaders();
    use GgmlType::*;
    for (rows, threads) in [(8, 32), (2, 32), (4, 16), (2, 8), (16, 64)] {
        let shape = GluQShape { rows, threads };
        for tys in [
            [Q4_K; 3],
            [IQ4_XS; 3],
            [Q5_K, IQ4_XS, IQ4_XS],
            [Q8_0, Q4_0, Q4_0],
        ] {
            let what = format!("{tys:?} {shape}");
            let shared = glu_q_workgroup_bytes(&mut k, &g, &list, tys, shape, 4096, false, &what);
            assert_tight_bound(shared, kernels::glu_q_bytes(shape, tys), &what);
        }
    }
    assert!(kernels::glu_q_bytes(GluQShape::DEFAULT, [IQ4_XS; 3]) <= 16384);
    assert!(kernels::glu_q_bytes(GluQShape::NARROW, [IQ4_XS; 3]) <= 16384);
    let wide = GluQShape {
        rows: 16,
        threads: 64,
    };
    assert!(kernels::glu_q_bytes(wide, [Q4_K; 3]) > 16384);
}

/// A workgroup-memory bound against the bytes naga laid out: it holds
/// them, and by no more than 128 bytes (not loose).
fn assert_tight_bound(shared: usize, bound: usize, what: &str) {
    assert!(shared <= bound, "{what}: {shared} bytes, bound {bound}");
    assert!(
        bound <= shared + 128,
        "{what}: {shared} bytes, bound {bound} (loose)"
    );
}

/// `kernels::main_q_bytes` against the kernels it admits: main_q over
/// plain and code-book formats in the team shapes the main_q test samples
/// has workgroup variables, as naga lays them out, within that bound (and
/// not loose); the default shape is within WebGPU's guaranteed 16 KiB.
#[test]
fn main_q_workgroup_memory_bound() {
    let Some(g) = int_gpu() else { return };
    // The code book's table, as glu_q_workgroup_memory_bound.
    let mut k = Kernels::new(
        &g,
        &GpuTuning {
            book_shuffle: false,
            ..tuning()
        },
    );
    let (g, list) = g.recording_shaders();
    use GgmlType::*;
    for (rows, threads) in [(2, 64), (8, 64), (4, 16), (1, 8), (16, 16)] {
        let shape = MainQShape { rows, threads };
        for ty in [Q4_K, IQ4_XS, Q8_0] {
            let what = format!("{ty:?} {shape}");
            let tys = [ty; 3];
            let path = k.int_path(tys, Mv::Main, true);
            k.matvec_main_q(&g, tys, shape, 4096, path)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let src = lock_shaders(&list).pop().map(|r| r.source).unwrap();
            let shared = entry_workgroup_bytes(&src, "main_q", &what);
            assert_tight_bound(shared, kernels::main_q_bytes(shape, tys), &what);
        }
    }
    assert!(kernels::main_q_bytes(MainQShape::DEFAULT, [IQ4_XS; 3]) <= 16384);
}

/// The workgroup bytes of glu_q (Silu) over `tys` in `shape`, rows of
/// `cols`, with or without its own x, as naga lays out the source the
/// recording device `g` compiled (`entry_workgroup_bytes`).
#[allow(clippy::too_many_arguments)]
fn glu_q_workgroup_bytes(
    k: &mut Kernels,
    g: &Gpu,
    list: &std::sync::Arc<std::sync::Mutex<Vec<ShaderRecord>>>,
    tys: kernels::Fmts,
    shape: GluQShape,
    cols: usize,
    own_x: bool,
    what: &str,
) -> usize {
    let path = k.int_path(tys, Mv::Silu, true);
    k.matvec_glu_q(g, tys, Mv::Silu, shape, cols, path, own_x, true)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let src = lock_shaders(list).pop().map(|r| r.source).unwrap();
    entry_workgroup_bytes(&src, "glu_q", what)
}

/// The workgroup variables' bytes that entry point `entry` of `src` uses,
/// as naga lays them out (a variable it does not use takes no memory in
/// its pipeline).
fn entry_workgroup_bytes(src: &str, entry: &str, what: &str) -> usize {
    use wgpu::naga;
    let module = compile_wgsl(src, what);
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(src)));
    let ep = module
        .entry_points
        .iter()
        .position(|e| e.name == entry)
        .unwrap_or_else(|| panic!("{what}: no entry point {entry}"));
    let uses = info.get_entry_point(ep);
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    module
        .global_variables
        .iter()
        .filter(|&(h, v)| v.space == naga::AddressSpace::WorkGroup && !uses[h].is_empty())
        .map(|(_, v)| layouter[v.ty].size as usize)
        .sum()
}

fn lock_shaders(
    list: &std::sync::Arc<std::sync::Mutex<Vec<ShaderRecord>>>,
) -> std::sync::MutexGuard<'_, Vec<ShaderRecord>> {
    list.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fused q/k/v of mixed groups (and a uniform Q4_K one) through the wide
/// and per-unit integer paths vs `int_twin`, with rope off (rope_dim 0)
/// and no bias, so that q is the rows' products and the k and v cache
/// entries their f16 roundings; each group also as on a device with
/// WebGPU's guaranteed 8 storage buffers: a mixed group that reads W for
/// its Q6_K or IQ4_XS rows then reads Q4_K/Q5_K through 4 scalar loads
/// (no room for the alias), the uniform Q4_K group keeps the alias (W is
/// not bound). 5 heads of 8 dims (40 q rows), 2 kv heads (16 k, 16 v
/// rows), 8 rows per workgroup; 768 columns (24 wide units, fewer than the
/// 64 threads); 2 tokens at positions 3 and 4 of a 6-slot cache whose
/// words are NaN-poisoned, as is q. Bounds: q `twin_bound`; k, v that plus
/// one f16 rounding, 2^-11 relative (2^-25 absolute in f16's subnormals).
#[test]
fn wide_int_qkv_mixed_matches_integer_twin() {
    let Some(g) = int_gpu() else { return };
    let mut rng = Rng::new(59);
    let (hd, qd, kvd, n, pos, ctx, cols, eps) = (
        8usize, 40usize, 16usize, 2usize, 3usize, 6usize, 768usize, 1e-5f32,
    );
    use GgmlType::*;
    for tys in [
        [Q4_K, Q4_K, Q6_K],
        [Q6_K, Q5_K, IQ4_XS],
        [Q4_K; 3],
        [Q3_K, Q3_K, Q5_K],
    ] {
        for (wide, sb) in [(true, 0u32), (true, 8), (false, 0)] {
            let mut k = Kernels::new(
                &g,
                &GpuTuning {
                    wide_int: wide,
                    ..tuning()
                },
            );
            if sb != 0 {
                k.storage_buffers = sb;
            }
            let reads_w = tys.iter().any(|&t| !kernels::wide_vec(t));
            let want_path = match wide {
                false => MvPath::Int,
                true => MvPath::Wide {
                    wq: !(reads_w && k.storage_buffers < 9),
                },
            };
            let path = k.int_path(tys, Mv::Qkv, true);
            assert_eq!(path, want_path, "{tys:?}");
            let (grp, w) = group_rows_bytes(&g, &mut rng, &tys, &[qd, kvd, kvd], cols);
            let m = grp.fused().unwrap();
            let x = randn(&mut rng, n * cols);
            let gains = randn(&mut rng, cols);
            let (xb, gb) = (g.upload_f32("x", &x), g.upload_f32("g", &gains));
            let ffb = g.upload_f32("ff", &[1.0]);
            let s = step(&g, pos as u32, n as u32);
            let q_out = poisoned(&g, n * qd);
            // Both f16 halves NaN, so an unwritten cache entry shows.
            let cache = || {
                let b = g.storage("cache", (ctx * kvd * 2) as u64).unwrap();
                let nan: Vec<u8> = (0..ctx * kvd / 2)
                    .flat_map(|_| 0x7e00_7e00u32.to_le_bytes())
                    .collect();
                g.queue.write_buffer(&b, 0, &nan);
                b
            };
            let (kc, vc) = (cache(), cache());
            let a = MatvecArgs {
                mv: Mv::Qkv,
                norm: Some((&gb, eps)),
                split: qd,
                rows_per_group: 8,
                qkv: Some(QkvArgs {
                    kc: &kc,
                    vc: &vc,
                    bias: None,
                    ff: &ffb,
                    has_ff: false,
                    kvd,
                    head_dim: hd,
                    rope_dim: 0,
                    neox: false,
                    theta_scale: 1.0,
                    freq_scale: 1.0,
                }),
                ..MatvecArgs::plain(&xb, &q_out, &s, qd, false)
            };
            let ix = IntX::new(&g, cols, n).unwrap();
            k.int_x = Some(ix.clone());
            let ops = matvec_ops(&g, &mut k, m, 0..qd + 2 * kvd, &a).unwrap();
            assert_eq!(ops[0].label, "quantize_x", "{tys:?}: not the integer path");
            g.run(&[&ops], n as u32, &[]);
            let gq_out = read_f32(&g, &q_out, n * qd);
            let f16s = |buf: &wgpu::Buffer| -> Vec<f64> {
                read_u32(&g, buf, ctx * kvd / 2)
                    .iter()
                    .flat_map(|&b| [b as u16, (b >> 16) as u16])
                    .map(|h| half::f16::from_bits(h).to_f64())
                    .collect()
            };
            let (gk, gv) = (f16s(&kc), f16s(&vc));
            let (gq, gd) = read_int_x(&g, &ix, n, Some((cols, eps)));
            let (grp_len, terms) = if wide { (16, cols / 32) } else { (4, cols / 8) };
            let terms = terms + norm_terms(cols);
            let what = format!("{tys:?} wide {wide} {path:?}");
            for t in 0..n {
                for (r, (ty, row)) in w.iter().enumerate() {
                    let (want, mag) = int_twin(*ty, row, &gq[t], &gd[t], grp_len);
                    let b = twin_bound(terms, mag);
                    let (o, tol, name) = if r < qd {
                        (gq_out[t * qd + r] as f64, b, "q")
                    } else {
                        let (cache, j, name) = if r < qd + kvd {
                            (&gk, r - qd, "k")
                        } else {
                            (&gv, r - qd - kvd, "v")
                        };
                        let tol = b + 2f64.powi(-11) * (want.abs() + b) + 2f64.powi(-25);
                        (cache[(pos + t) * kvd + j], tol, name)
                    };
                    assert!(
                        (o - want).abs() <= tol,
                        "{what} token {t} row {r} ({name}): {o} vs {want} (tol {tol:e})"
                    );
                }
            }
            eprintln!("{what}: ok");
        }
    }
}

/// matmul_coop.wgsl (cooperative matrices), where the device has them: every
/// format it takes, plain (accumulating onto random values, a row range
/// that starts mid-matrix) and gate/up with silu in a mixed Q6_K/Q4_K
/// group (the epilogue's pairs), vs dequantize_row + an f64 dot; 150 rows
/// and 67 tokens, so tiles are ragged both ways; each tile shape; every
/// case with x read in f32 and in f16 (packed by pack_f16.wgsl first,
/// `Kernels::half_tile`). F32 and BF16 weights must
/// fall back to matmul.wgsl (`Kernels::tile_for`).
/// Bound: rounding w and x to f16 errs by at most 2^-11 relative (normal
/// range) or 2^-25 absolute (subnormal) per factor, so each product by
/// (2^-10 + 2^-22) |w x| + 2^-25 (|w| + |x|) (|w|, |x| <= 1 here);
/// accumulating in f32 in the hardware's order adds at most 1e-4 sum |w x|
/// for these <= 512-term sums (n 2^-24 with n = 512 is 3e-5; the
/// tensor cores' adders may truncate, so 3x that). With silu(g) * u the two
/// product errors carry as in `gate_up_fused_matches_cpu`.
#[test]
fn matmul_coop_matches_cpu() {
    let Some(g) = coop_gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let shapes = [
        (128, 64, 256),
        (128, 128, 256),
        (256, 64, 256),
        (64, 64, 256),
        (128, 128, 128),
        (64, 64, 128),
        (128, 64, 128),
        (128, 256, 256),
        (64, 256, 128),
    ];
    k.coop = true;
    // The f16 x, for up to 512 columns and the longest batch below.
    k.half_x = Some(super::ops::HalfX::new(&g, 512, kernels::LONG_BATCH as usize + 1).unwrap());
    assert!(!k.tile_for([GgmlType::F32; 3], Mv::Main, 150).coop);
    assert!(!k.tile_for([GgmlType::BF16; 3], Mv::Main, 150).coop);
    let mut rng = Rng::new(43);
    let err = |w: &[f32], x: &[f64]| -> f64 {
        let (_, mag) = dot_mag(w, x);
        let abs: f64 = w
            .iter()
            .zip(x)
            .map(|(&a, &b)| a.abs() as f64 + b.abs())
            .sum();
        (2f64.powi(-10) + 2f64.powi(-22) + 1e-4) * mag + 2f64.powi(-25) * abs
    };
    // Each case with x read in f32 and in f16 (packed by a pass first:
    // `Kernels::half_tile`, here for rows of any length).
    for half in [false, true] {
        k.half_x_min = if half { 0 } else { usize::MAX };
        let t = k.tile_for([GgmlType::Q4_K; 3], Mv::Main, 150);
        assert_eq!(k.half_tile(t, 150, 512).half_x, half);
        coop_cases(&g, &mut k, &mut rng, &shapes, half, &err);
    }
}

/// `matmul_coop_matches_cpu`'s cases, x in f16 (`half`) or f32: every
/// format on a tile shape (in turn), every shape on Q4_K, a mixed gate/up
/// and a gate/up with a tile for long batches.
fn coop_cases(
    g: &Gpu,
    k: &mut Kernels,
    rng: &mut Rng,
    shapes: &[(u32, u32, u32)],
    half: bool,
    err: &dyn Fn(&[f32], &[f64]) -> f64,
) {
    for (i, ty) in BLOCK_TYPES.into_iter().enumerate() {
        if matches!(ty, GgmlType::F32 | GgmlType::BF16) {
            continue;
        }
        // Every tile shape, alternating over the formats.
        let (tr, tt, tw) = shapes[i % shapes.len()];
        k.coop_fixed = kernels::Tile::coop(tr, tt, tw);
        let what = format!("coop {tr}x{tt}x{tw}, f16 x {half}");
        check_tiled_plain(g, k, rng, ty, &what, err);
    }
    // Every shape once more on the most common format, Q4_K.
    for &(tr, tt, tw) in shapes {
        k.coop_fixed = kernels::Tile::coop(tr, tt, tw);
        let what = format!("coop {tr}x{tt}x{tw}, f16 x {half}");
        check_tiled_plain(g, k, rng, GgmlType::Q4_K, &what, err);
    }
    // Gate/up with silu, a mixed group, 37 rows each, 67 tokens.
    let pack: &[&str] = if half { &["pack_f16"] } else { &[] };
    let mixed = [GgmlType::Q6_K, GgmlType::Q4_K];
    let ops = check_coop_silu(g, k, rng, &mixed, 37, 512, 67, 1, err);
    let labels: Vec<&str> = ops.iter().map(|o| o.label).collect();
    assert_eq!(labels, [pack, &["matmul"]].concat());
    // Gate/up of 2 x 6144 rows with the per-product tiles: a second op on
    // `Tile::coop_long`'s 256-token tile runs batches past LONG_BATCH
    // tokens, the first the rest (every 7th row checked, and the last).
    k.coop_fixed = None;
    let q4k = [GgmlType::Q4_K; 2];
    let long = k.long_tile([GgmlType::Q4_K; 3], Mv::Silu, 2 * 6144);
    assert_eq!(long.map(|t| t.tokens), Some(256));
    let lb = kernels::LONG_BATCH as usize;
    for n in [67, lb + 1] {
        let ops = check_coop_silu(g, k, rng, &q4k, 6144, 256, n, 7, err);
        let labels: Vec<&str> = ops.iter().map(|o| o.label).collect();
        assert_eq!(labels, [pack, &["matmul", "matmul"]].concat());
        let runs: Vec<bool> = ops[pack.len()..]
            .iter()
            .map(|o| o.shape.groups(n as u32)[1] > 0)
            .collect();
        assert_eq!(runs, [n <= lb, n > lb], "{n} tokens");
    }
}

/// Gate/up with silu in `fmts` (`ff` rows each, `cols` columns) on the
/// tiled path for `n` tokens against the f64 dot products, rows r with r
/// % every == 0 and the last checked; `err` as in `matmul_coop_matches_cpu`.
/// Returns the product's ops.
#[allow(clippy::too_many_arguments)]
fn check_coop_silu(
    g: &Gpu,
    k: &mut Kernels,
    rng: &mut Rng,
    fmts: &[GgmlType],
    ff: usize,
    cols: usize,
    n: usize,
    every: usize,
    err: &dyn Fn(&[f32], &[f64]) -> f64,
) -> Vec<Op> {
    let (grp, w) = random_group(g, rng, fmts, &[ff, ff], cols);
    let m = grp.fused().unwrap();
    let x = randn(rng, n * cols);
    let (xb, y) = (g.upload_f32("x", &x), poisoned(g, n * ff));
    let s = step(g, 0, n as u32);
    let a = MatvecArgs {
        mv: Mv::Silu,
        split: ff,
        rows_per_group: 4,
        tiled: true,
        ..MatvecArgs::plain(&xb, &y, &s, ff, false)
    };
    let ops = matvec_ops(g, k, m, 0..2 * ff, &a).unwrap();
    g.run(&[&ops], n as u32, &[]);
    let got = read_f32(g, &y, n * ff);
    for t in 0..n {
        let xt: Vec<f64> = x[t * cols..(t + 1) * cols]
            .iter()
            .map(|&v| v as f64)
            .collect();
        for r in (0..ff).filter(|r| r % every == 0 || r + 1 == ff) {
            let (gt, _) = dot_mag(&w[r], &xt);
            let (up, _) = dot_mag(&w[ff + r], &xt);
            let (eg, eu) = (err(&w[r], &xt), err(&w[ff + r], &xt));
            let silu = gt / (1.0 + (-gt).exp());
            let want = silu * up;
            let tol = 1.1 * eg * (up.abs() + eu) + eu * silu.abs() + 1e-6 * want.abs() + 1e-7;
            let o = got[t * ff + r] as f64;
            assert!(
                (o - want).abs() <= tol,
                "coop silu ({n} tokens, {ff} rows) token {t} row {r}: {o} vs {want}"
            );
        }
    }
    ops
}

/// pack_f16.wgsl (the tensor-core tile's x) against `half`'s f32-to-f16
/// rounding, on any device (it needs no f16 feature): 37 tokens of 96
/// values (normal, subnormal in f16, exact ties, zeros, negatives), the
/// output NaN-poisoned one token further, which must stay so. WGSL lets
/// the conversion take either neighbour of an inexact value: each half
/// must be the nearest f16 (half's, ties to even) or its neighbour toward
/// x, and bit-exact where x is an f16 already.
#[test]
fn pack_f16_matches_cpu() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(71);
    let (n, cols) = (37usize, 96usize);
    let mut x = randn(&mut rng, n * cols);
    for (i, v) in x.iter_mut().enumerate() {
        *v *= match i % 6 {
            0 => 3000.0,
            1 => 1e-5,
            2 => 1.0,
            3 => 0.0,
            _ => 17.0,
        };
        if i % 11 == 5 {
            // Halfway between two f16 values (10 fraction bits, then a 1).
            *v = f32::from_bits(0x3f80_1000 | ((i as u32 % 7) << 14));
        }
    }
    let xb = g.upload_f32("x", &x);
    let out = poisoned(&g, (n + 1) * cols / 2);
    let params = g.params_words(&[0, cols as u32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let s = step(&g, 0, n as u32);
    let pl = k.pack_f16(&g);
    let op = Op {
        bind: kernels::bind(&g, &pl, &[(1, &xb), (3, &params), (5, &s), (16, &out)]),
        pipeline: pl,
        shape: Shape::Flat((cols / 4) as u32),
        label: "pack_f16",
    };
    g.run(&[&[op]], n as u32, &[]);
    let got = read_u32(&g, &out, (n + 1) * cols / 2);
    for (i, &v) in x.iter().enumerate() {
        let h = (got[i / 2] >> (16 * (i % 2))) as u16;
        let near = half::f16::from_f32(v);
        let ok = if near.to_f32() == v {
            h == near.to_bits()
        } else {
            let toward = if (near.to_f32() < v) == near.is_sign_negative() {
                near.to_bits().wrapping_sub(1)
            } else {
                near.to_bits().wrapping_add(1)
            };
            h == near.to_bits() || h == toward
        };
        assert!(
            ok,
            "value {i}: {v} packed as {h:#06x}, nearest {:#06x}",
            near.to_bits()
        );
    }
    for &w in &got[n * cols / 2..] {
        assert_eq!(w, f32::NAN.to_bits(), "written past the last token");
    }
}

/// A product with a tile for long batches has two ops, each dispatching
/// only for its batches (`Shape::TokenTilesIn`): up to LONG_BATCH tokens
/// the short tile, past it the long one; and `Tile::coop_long` picks the
/// 256-token tile only for the products it measured faster on.
#[test]
fn long_batches_take_their_own_tile() {
    let lb = kernels::LONG_BATCH;
    let short = Shape::TokenTilesIn(3, 128, 1, lb);
    let long = Shape::TokenTilesIn(3, 256, lb + 1, u32::MAX);
    for n in [1, 2, 67, lb, lb + 1, 255, 256, 257, 512] {
        let (s, l) = (short.groups(n), long.groups(n));
        if n <= lb {
            assert_eq!((s, l), ([3, n.div_ceil(128), 1], [0, 0, 0]), "{n}");
        } else {
            assert_eq!((s, l), ([0, 0, 0], [3, n.div_ceil(256), 1]), "{n}");
        }
    }
    let long = |mv, rows| kernels::Tile::coop_long(mv, rows).map(|t| (t.rows, t.tokens));
    assert_eq!(long(Mv::Silu, 28672), Some((128, 256)));
    assert_eq!(long(Mv::Gelu, 12288), Some((128, 256)));
    assert_eq!(long(Mv::Silu, 11264), None);
    assert_eq!(long(Mv::Qkv, 6144), Some((128, 256)));
    assert_eq!(long(Mv::Qkv, 3072), None);
    assert_eq!(long(Mv::Main, 4096), None);
    assert!(kernels::Tile::coop(128, 256, 256).unwrap().shared_bytes() <= 48 << 10);
}

/// matmul_coop.wgsl's generated sources parse, validate and translate to
/// SPIR-V with naga, for every entry and a mixed group: lavapipe has no
/// cooperative matrices, so this is what CI can check of the kernel
/// without such a device (`matmul_coop_matches_cpu` runs it on one).
/// `src` parsed, validated (every capability) and translated to SPIR-V
/// by naga, as wgpu would; panics naming `what` and the error.
fn compile_wgsl(src: &str, what: &str) -> wgpu::naga::Module {
    use wgpu::naga;
    let module = naga::front::wgsl::parse_str(src)
        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(src)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(src)));
    naga::back::spv::write_vec(&module, &info, &naga::back::spv::Options::default(), None)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    module
}

/// flash_coop.wgsl's generated sources parse, validate and translate to
/// SPIR-V with naga for every head size it takes and several group sizes
/// (lavapipe has no cooperative matrices; `flash_coop_matches_cpu` runs
/// it where there are).
#[test]
fn flash_coop_source_compiles() {
    for hd in [64, 128] {
        assert!(kernels::flash_coop_fits(hd));
        for gs in [1, 4, 5, 8, 16] {
            let src = kernels::flash_coop_src(hd, gs);
            compile_wgsl(&src, &format!("flash_coop hd {hd} gs {gs}"));
        }
    }
    assert!(!kernels::flash_coop_fits(256));
}

#[test]
fn matmul_coop_source_compiles() {
    use GgmlType::*;
    for (f, mv) in [
        ([Q4_K; 3], Mv::Main),
        ([Q6_K, Q4_K, Q4_K], Mv::Silu),
        ([F16; 3], Mv::Gelu),
        ([Q4_K, Q4_K, Q6_K], Mv::Qkv),
        ([Q8_0; 3], Mv::Qkv),
    ] {
        for (vx, (tr, tt, tw)) in [
            (false, (128, 64, 256)),
            (true, (128, 128, 256)),
            (true, (256, 64, 256)),
            (true, (128, 128, 128)),
            (true, (128, 256, 256)),
        ] {
            let tile = kernels::Tile::coop(tr, tt, tw).unwrap();
            let src = kernels::matmul_source(f, mv, tile, vx);
            compile_wgsl(&src, &format!("{f:?} {mv:?}"));
        }
    }
}

/// The integer path's floor: all-Q8_0 products get their own, any other
/// mix (a Q8_0 member beside another format included) the general one.
#[test]
fn int_floor_by_formats() {
    use kernels::int_floor;
    let (min, q8) = (4, 24);
    assert_eq!(int_floor([GgmlType::Q8_0; 3], min, q8), q8);
    assert_eq!(int_floor([GgmlType::Q8_0], min, q8), q8);
    assert_eq!(int_floor([GgmlType::Q8_0, GgmlType::Q6_K], min, q8), min);
    assert_eq!(int_floor([GgmlType::Q4_K; 2], min, q8), min);
    assert_eq!(int_floor([], min, q8), min);
}

/// argmax `pairs_part` then `pairs`, as the graph runs them, over a ragged
/// count of pairs (9 groups of PAIRS_PER_GROUP, the last partial): the best
/// value wins, the lowest row among equal values (the tie placed so that
/// the lower row comes later in the array and in another group), and the
/// outputs (poisoned) are written.
#[test]
fn argmax_pairs_in_two_passes() {
    let Some(g) = gpu() else { return };
    let k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(47);
    let n = 9001usize;
    let mut pairs: Vec<(f32, u32)> = (0..n)
        .map(|i| (uniform(&mut rng), 3 * i as u32 + 1))
        .collect();
    pairs[1234] = (5.0, 600);
    pairs[8999] = (5.0, 40);
    let data: Vec<u8> = pairs
        .iter()
        .flat_map(|&(v, r)| [v.to_bits().to_le_bytes(), r.to_le_bytes()].concat())
        .collect();
    let part = g.upload("pairs", &data);
    let groups = n.div_ceil(kernels::PAIRS_PER_GROUP);
    let (bests, out) = (poisoned(&g, 2 * groups), poisoned(&g, 1));
    let p = g.params([n as u32, 1 << 20, 0, 0, 0, 0, 0, 0]);
    let pb = g.params([groups as u32, 1 << 20, 0, 0, 0, 0, 0, 0]);
    let ops = [
        Op {
            bind: kernels::bind(
                &g,
                &k.argmax_pairs_part(&g),
                &[(3, &part), (5, &bests), (2, &p)],
            ),
            pipeline: k.argmax_pairs_part(&g),
            shape: Shape::Fixed([groups as u32, 1, 1]),
            label: "test",
        },
        Op {
            bind: kernels::bind(&g, &k.argmax_pairs(&g), &[(3, &bests), (1, &out), (2, &pb)]),
            pipeline: k.argmax_pairs(&g),
            shape: Shape::Fixed([1, 1, 1]),
            label: "test",
        },
    ];
    g.run(&[&ops], 1, &[]);
    // Each group's best, as the CPU picks it from its slice.
    let b = read_u32(&g, &bests, 2 * groups);
    for (gi, chunk) in pairs.chunks(kernels::PAIRS_PER_GROUP).enumerate() {
        let want = chunk.iter().fold((f32::MIN, u32::MAX), |a, &p| {
            if p.0 > a.0 || (p.0 == a.0 && p.1 < a.1) {
                p
            } else {
                a
            }
        });
        assert_eq!(
            (b[2 * gi], b[2 * gi + 1]),
            (want.0.to_bits(), want.1),
            "group {gi}"
        );
    }
    assert_eq!(read_f32(&g, &out, 1)[0].to_bits(), 40);
}

/// Runs quantize_x.wgsl over `n` tokens of `cols` values in `x` into a
/// fresh, NaN-poisoned `IntX`: with `norm` (gains `gains`, epsilon `eps`)
/// rmsnorm first, with `last` only token n - 1.
#[allow(clippy::too_many_arguments)]
fn quantize_x_gpu(
    g: &Gpu,
    k: &Kernels,
    x: &wgpu::Buffer,
    gains: &wgpu::Buffer,
    [cols, n]: [usize; 2],
    norm: bool,
    last: bool,
    eps: f32,
) -> IntX {
    let ix = IntX::new(g, cols, n).unwrap();
    poison_int_x(g, &ix);
    let s = step(g, 0, n as u32);
    let mut words = [0u32; 24];
    words[1] = cols as u32;
    words[6] = (norm as u32) << 1 | (last as u32) << 2;
    words[8] = eps.to_bits();
    words[21] = ix.sq_base();
    let params = g.params_words(&words);
    let qp = k.quantize_x(g);
    let bind = kernels::bind(
        g,
        &qp,
        &[
            (1, x),
            (3, &params),
            (4, gains),
            (5, &s),
            (13, &ix.q),
            (14, &ix.d),
        ],
    );
    let wgs = (cols.div_ceil(32) * 32).div_ceil(kernels::QUANTIZE_X_SPAN) as u32;
    let op = Op {
        pipeline: qp,
        bind,
        shape: if last {
            Shape::Fixed([wgs, 1, 1])
        } else {
            Shape::PerToken([wgs, 1, 1], 2)
        },
        label: "quantize_x",
    };
    g.run(&[&[op]], n as u32, &[]);
    ix
}

fn poison_int_x(g: &Gpu, ix: &IntX) {
    for (b, len) in [
        (&ix.q, ix.tokens * ix.blocks * 8),
        (&ix.d, ix.d.size() as usize / 4),
    ] {
        let nan: Vec<u8> = (0..len).flat_map(|_| f32::NAN.to_le_bytes()).collect();
        g.queue.write_buffer(b, 0, &nan);
    }
}

/// attention.wgsl `chunked_q` and `merge_q` (decode's attention writing
/// Wo's int8 x itself) against `chunked` and `merge` followed by
/// quantize_x.wgsl on their output: the f32 output bit for bit, and the
/// int8 blocks and scales bit for bit (the same f32 operations on the same
/// values), every word written (NaN-poisoned first). Head sizes 64 (10
/// query heads on one kv head: workgroups of 4, 4 and 2 slots), 128 and 32
/// (a block per head); `chunked_q` on 3 tokens at positions 20-22,
/// `merge_q` on one token past 2 splits (whole heads a workgroup) and at
/// the context's end (32 dimensions a workgroup, `merge_parts`).
#[test]
fn attention_int8_matches_quantize_x() {
    let Some(g) = gpu() else { return };
    let mut k = Kernels::new(&g, &tuning());
    let mut rng = Rng::new(53);
    let ls = kernels::SPLIT_KEYS;
    for (hd, heads, kvh) in [(64usize, 10usize, 1usize), (128, 4, 2), (32, 6, 3)] {
        let ctx = 3 * ls + 5;
        let splits = ctx.div_ceil(ls);
        let (qd, kvd) = (heads * hd, kvh * hd);
        let scale = 1.0 / (hd as f32).sqrt();
        let p = att_params(&g, [heads, kvh, hd, ctx], scale, splits, 0);
        let part = g
            .storage("part", (heads * splits * (hd + 2) * 4) as u64)
            .unwrap();
        let (kc, vc, _, _) = filled_cache(&g, &k, &mut rng, [ctx, ctx], kvd, &p);
        let group = heads / kvh;
        let wgs = kernels::chunk_workgroups(kvh, hd, group);
        let split_wgs = kernels::split_workgroups(kvh, hd, group);
        let sh = kernels::DeepShape::pick(tuning().deep_shape, hd, group);
        let sp = k.attention_split(&g, hd, group, sh);
        let [cp, cq] = ["chunked", "chunked_q"]
            .map(|e| k.attention_entry(&g, hd, group, e, kernels::SplitRule::FIXED));
        // (pos, tokens, split path, the merge's workgroups a head: whole
        // heads, then 32 dimensions each)
        for (pos, n, split, parts) in [
            (20usize, 3usize, false, 1),
            (ls + 9, 1, true, 1),
            (ctx - 1, 1, true, kernels::merge_parts(hd, 32)),
        ] {
            let q = randn(&mut rng, n * qd);
            let qb = g.upload_f32("q", &q);
            let st = step(&g, pos as u32, n as u32);
            let [mp, mq] = [false, true]
                .map(|q| k.attention_merge(&g, hd, group, q, kernels::SplitRule::FIXED, parts));
            let run = |quant: Option<&IntX>| -> wgpu::Buffer {
                let out = poisoned(&g, n * qd);
                let mut ops = Vec::new();
                let mut last = vec![(4, &p), (5, &st), (6, &out)];
                if let Some(ix) = quant {
                    last.extend([(13, &ix.q), (14, &ix.d)]);
                }
                if split {
                    ops.push(Op {
                        bind: kernels::bind(
                            &g,
                            &sp,
                            &[
                                (8, &qb),
                                (2, &kc),
                                (3, &vc),
                                (4, &p),
                                (5, &st),
                                (9, &part),
                                (10, &kc),
                            ],
                        ),
                        pipeline: sp.clone(),
                        label: "test",
                        shape: Shape::Fixed([split_wgs, splits as u32, 1]),
                    });
                    let m = if quant.is_some() { &mq } else { &mp };
                    last.push((9, &part));
                    ops.push(Op {
                        bind: kernels::bind(&g, m, &last),
                        pipeline: m.clone(),
                        label: "test",
                        shape: Shape::Fixed([heads as u32, parts, 1]),
                    });
                } else {
                    let c = if quant.is_some() { &cq } else { &cp };
                    last.extend([(8, &qb), (2, &kc), (3, &vc)]);
                    ops.push(Op {
                        bind: kernels::bind(&g, c, &last),
                        pipeline: c.clone(),
                        label: "test",
                        shape: Shape::PerToken([wgs, 1, 1], 1),
                    });
                }
                g.run(&[&ops], n as u32, &[]);
                out
            };
            let plain = run(None);
            let want = quantize_x_gpu(&g, &k, &plain, &plain, [qd, n], false, false, 0.0);
            let got = IntX::new(&g, qd, n).unwrap();
            poison_int_x(&g, &got);
            let fused = run(Some(&got));
            let what = format!("hd {hd} heads {heads}/{kvh} pos {pos} n {n}");
            let bits = |b: &wgpu::Buffer, len| read_u32(&g, b, len);
            assert_eq!(bits(&fused, n * qd), bits(&plain, n * qd), "{what}: output");
            assert!(
                read_f32(&g, &plain, n * qd).iter().all(|v| v.is_finite()),
                "{what}"
            );
            let (words, blocks) = (n * qd / 4, n * qd / 32);
            assert_eq!(bits(&got.q, words), bits(&want.q, words), "{what}: int8 x");
            assert_eq!(
                bits(&got.d, blocks),
                bits(&want.d, blocks),
                "{what}: scales"
            );
            assert!(
                read_f32(&g, &got.d, blocks).iter().all(|v| v.is_finite()),
                "{what}"
            );
        }
    }
}

/// A GPU backend on a one-layer synthetic model (SmolLM2's settings, `dim`
/// wide: 2 query heads of dim / 2 on one kv head, ffn 64, vocabulary
/// 300, context 256, a 128-token batch) with every matrix in `ty`.
fn one_layer(g: &Gpu, dim: usize, ty: GgmlType, tuning: GpuTuning) -> GpuBackend {
    layers_model(g, dim, ty, 1, tuning)
}

/// `one_layer` with `n_layers` layers.
fn layers_model(
    g: &Gpu,
    dim: usize,
    ty: GgmlType,
    n_layers: usize,
    tuning: GpuTuning,
) -> GpuBackend {
    let shape = crate::synthetic::Shape {
        name: "one-layer",
        dim,
        n_layers,
        n_heads: 2,
        n_kv_heads: 1,
        // The K-quants' rows are whole 256-element blocks.
        ffn_dim: 64usize.next_multiple_of(ty.block_len()),
        vocab: 300,
        context: 256,
        ..crate::synthetic::SMOLLM2_135M
    };
    let bytes = crate::synthetic::build(&shape, ty, 1).unwrap();
    let loaded =
        crate::engine::Loaded::from_parts(bytes, &crate::gguf::Parts::one(), Default::default())
            .unwrap();
    let opts = GpuOptions {
        tuning,
        ..GpuOptions::default()
    };
    pollster::block_on(GpuBackend::new(
        g.clone(),
        &loaded.config,
        &loaded.weights,
        256,
        128,
        opts,
        &|_| {},
    ))
    .unwrap()
}

/// The layer list a step runs: one token attends in one pass up to
/// SPLIT_KEYS keys, in mid.wgsl's one dispatch up to `mid_keys` keys (256,
/// 128, or with 0 not at all), and in splits past them, from
/// `deep_split_keys` keys (100 or 1 here; mid.wgsl first) in split.wgsl's
/// at head size 128 and from `deep_split_keys_64` at 64 (not with 0), and
/// at head size 128 from `deep_far_keys` (200 here) in its far tier (two
/// chunks a split; none at 64, nor where it is not past the first, nor
/// past the context of 256 keys); a
/// batch with the chunked kernel (llama.cpp's exact order) while its keys,
/// pos + n, are at most SPLIT_KEYS, and in tiles (flash.wgsl) past them
/// unless `GpuTuning::flash_prefill` is off; on one-layer synthetic models
/// with 64- and 128-dim heads.
#[test]
fn layer_lists_follow_the_keys() {
    let Some(g) = gpu() else { return };
    // (model dim: heads of dim / 2, flash, deep keys at 128, at 64, mid
    // keys, far keys)
    for (dim, flash, deep128, deep64, mid, far_keys) in [
        (128, true, 100, 0, 0, 200),
        (128, false, 1, 0, 256, 0),
        (128, true, 0, 100, 128, 0),
        (256, true, 100, 0, 0, 200),
        (256, true, 100, 0, 0, 100),
        (256, true, 100, 0, 0, 300),
        (256, true, 1, 100, 128, 0),
        (256, true, 1, 0, 128, 130),
        (256, true, 0, 1, 256, 200),
    ] {
        let tune = GpuTuning {
            flash_prefill: flash,
            deep_split_keys: deep128,
            deep_split_keys_64: deep64,
            deep_far_keys: far_keys,
            deep_far_chunks: 2,
            mid_keys: mid,
            ..tuning()
        };
        let b = one_layer(&g, dim, GgmlType::F32, tune);
        let k = kernels::SPLIT_KEYS;
        let deep_keys = if dim == 256 { deep128 } else { deep64 };
        let deep = deep_keys > 0;
        // one_layer's context is 256 keys: a tier past it is not built.
        let far = deep && dim == 256 && far_keys > deep_keys && far_keys <= 256;
        let prefill_long: &[Op] = if flash { &b.layers_flash } else { &b.layers };
        let hd = dim / 2;
        let tiers = kernels::mid_tiers(&tune, hd);
        assert_eq!(
            tiers,
            if mid == 256 {
                vec![128, 256]
            } else if mid == 128 {
                vec![128]
            } else {
                vec![]
            }
        );
        let one = |pos: usize| -> &[Op] {
            // One token past SPLIT_KEYS: mid.wgsl's first tier that holds
            // the keys, then split.wgsl from deep_keys keys, in two chunks
            // a split from far_keys.
            if let Some(t) = tiers.iter().position(|&mk| pos < mk) {
                &b.layers_mid[t].1
            } else if far && pos + 1 >= far_keys {
                &b.layers_deep[1].1
            } else if deep && pos + 1 >= deep_keys {
                &b.layers_deep[0].1
            } else {
                &b.layers_long
            }
        };
        for (n, pos, want) in [
            (1, 0, &b.layers_one[..]),
            (1, k - 1, &b.layers_one),
            (1, k, one(k)),
            (1, 98, one(98)),
            (1, 99, one(99)),
            (1, 127, one(127)),
            (1, 128, one(128)),
            (1, 198, one(198)),
            (1, 199, one(199)),
            (1, 200, one(200)),
            (1, 255, one(255)),
            (2, 0, &b.layers),
            (k, 0, &b.layers),
            (2, k - 2, &b.layers),
            (k + 1, 0, prefill_long),
            (2, k - 1, prefill_long),
            (77, 29, prefill_long),
            (2, 150, prefill_long),
        ] {
            let got = b.layer_list(n, b.keys(n, pos));
            assert!(
                std::ptr::eq(got, want),
                "dim {dim} flash {flash} deep keys {deep128}/{deep64} far {far_keys}: {n} tokens at {pos} picked the wrong list"
            );
        }
        assert_eq!(b.layers_flash.is_empty(), !flash);
        let deep_from: Vec<usize> = b.layers_deep.iter().map(|(from, _)| *from).collect();
        let want_from = match (deep, far) {
            (false, _) => vec![],
            (true, false) => vec![deep_keys],
            (true, true) => vec![deep_keys, far_keys],
        };
        assert_eq!(
            deep_from, want_from,
            "dim {dim} deep keys {deep128}/{deep64} far {far_keys}"
        );
        // one_layer: 2 query heads on 1 kv head.
        let shapes: Vec<u32> = kernels::deep_tiers(&tune, hd, 2, 256)
            .iter()
            .map(|(_, sh)| sh.chunks)
            .collect();
        assert_eq!(shapes, [1, 2][..want_from.len()]);
        let built: Vec<usize> = b.layers_mid.iter().map(|(mk, _)| *mk).collect();
        assert_eq!(built, tiers);
    }
    // Without the split list, one token past SPLIT_KEYS keys runs the
    // decode list, so its attention must be the chunked kernel (a
    // workgroup row per token), not few.wgsl (one dispatch of a workgroup
    // per head, which attends at most SPLIT_KEYS keys), and there is no
    // mid.wgsl list.
    let tune = GpuTuning {
        split_attention: false,
        ..tuning()
    };
    let b = one_layer(&g, 256, GgmlType::F32, tune);
    let got = b.layer_list(1, b.keys(1, 100));
    assert!(std::ptr::eq(got, &b.layers_one[..]));
    assert!(b.layers_mid.is_empty());
    let att: Vec<&Op> = got.iter().filter(|o| o.label == "attention").collect();
    assert_eq!(att.len(), 1);
    assert!(matches!(att[0].shape, Shape::PerToken(..)));
}

/// `GpuTuning::int_prefill` on and `int_dot` off: the prefill list runs
/// every layer product on the integer tile (matmul_int.wgsl after a
/// quantize_x pass, or for Wo after the attention kernel that writes its
/// int8 x; the `IntX` made for the prefill's rows alone), the
/// decode list none on the integer path; on a one-layer Q8_0 synthetic
/// model (the products' results are `matmul_int_matches_integer_twin_and_f64`'s
/// and the oracle tests' to check).
#[test]
fn int_prefill_lists_use_the_int_tile() {
    let Some(g) = int_gpu() else { return };
    let tune = GpuTuning {
        int_prefill: true,
        int_dot: false,
        ..tuning()
    };
    let b = one_layer(&g, 128, GgmlType::Q8_0, tune);
    let count = |ops: &[Op], label: &str| ops.iter().filter(|o| o.label == label).count();
    // q/k/v, Wo, gate/up and down: fused or not, at least 4 products.
    let tiles = count(&b.layers, "matmul_int");
    assert!(tiles >= 4, "{tiles} integer tiles in the prefill list");
    // Wo's int8 x comes from the chunked attention kernel (`chunked_q`:
    // 64-dim heads are whole blocks), the rest from quantize passes.
    assert_eq!(count(&b.layers, "quantize_x"), tiles - 1);
    assert_eq!(count(&b.layers, "matmul"), 0);
    assert_eq!(count(&b.layers_one, "quantize_x"), 0);
}

/// glu_q in the decode list: with the integer path, the fused gate/up
/// product writes the down product's int8 x ("gate_up_q") and the down
/// product has no quantize pass of its own, one dispatch fewer than with
/// `glu_q` off; the down product then reads `Kernels::int_h`, which the
/// bit-exact `glu_q_matches_integer_twin_and_quantize_pass` and the oracle
/// tests' decode steps check. Below `glu_q_min` outputs, for Q3_K gate/up
/// (`kernels::glu_q_takes`; Q2_K, a K-quant of the same 256-element
/// blocks, keeps glu_q) and for Q8_0 gate/up outside 2-row teams, the
/// pass stays. Where glu_q quantizes
/// its own x (`glu_own_x`, rows up to 2,048 by default) the pass before
/// gate/up goes as well.
#[test]
fn decode_list_uses_glu_q() {
    let Some(g) = int_gpu() else { return };
    let count = |ops: &[Op], label: &str| ops.iter().filter(|o| o.label == label).count();
    let list = |ty: GgmlType, tune: GpuTuning| {
        let b = one_layer(&g, 128usize.next_multiple_of(ty.block_len()), ty, tune);
        let l = b.layer_list(1, b.keys(1, 10)).to_vec();
        (
            count(&l, "gate_up_q"),
            count(&l, "gate_up"),
            count(&l, "quantize_x"),
            l.len(),
        )
    };
    let q4 = GgmlType::Q4_0;
    // glu_q with the quantize pass before it (own x off).
    let base = GpuTuning {
        glu_own_x: 0,
        ..tuning()
    };
    let (q_on, g_on, x_on, n_on) = list(q4, base);
    let (q_off, g_off, x_off, n_off) = list(
        q4,
        GpuTuning {
            glu_q: false,
            ..base
        },
    );
    let (q_min, _, x_min, _) = list(
        q4,
        GpuTuning {
            glu_q_min: usize::MAX,
            ..base
        },
    );
    // With its own x (the default at 128 columns), gate/up's pass goes too.
    let (q_own, _, x_own, n_own) = list(q4, tuning());
    assert_eq!((q_own, x_own, n_own), (1, x_on - 1, n_on - 1), "own x");
    assert_eq!((q_on, g_on), (1, 0), "glu_q on");
    assert_eq!((q_off, g_off), (0, 1), "glu_q off");
    assert_eq!(x_off, x_on + 1, "the down product's quantize pass");
    assert_eq!(n_off, n_on + 1);
    assert_eq!((q_min, x_min), (0, x_off), "below glu_q_min");
    let (q8, g8, _, _) = list(GgmlType::Q8_0, tuning());
    assert_eq!((q8, g8), (1, 0), "Q8_0 gate/up, narrow teams");
    let no_narrow = GpuTuning {
        glu_q_narrow_cols: 0,
        ..tuning()
    };
    let (q8, g8, _, _) = list(GgmlType::Q8_0, no_narrow);
    assert_eq!((q8, g8), (0, 1), "Q8_0 gate/up, 8-row teams");
    let (q3, g3, _, _) = list(GgmlType::Q3_K, tuning());
    assert_eq!((q3, g3), (0, 1), "Q3_K gate/up");
    let (q2, g2, _, _) = list(GgmlType::Q2_K, tuning());
    assert_eq!((q2, g2), (1, 0), "Q2_K gate/up");
}

/// wo_q in the decode list: where the fused gate/up product would
/// quantize its x in a pass, the Wo product writes that x ("wo_q") and
/// the pass goes, one dispatch fewer than with `wo_q` off; gate/up then
/// reads `Kernels::int_g`, which the bit-exact
/// `wo_q_matches_integer_twin_and_quantize_pass` and
/// `gpu_wo_q_matches_llama_cpp`'s decode steps check. Not below
/// `wo_q_min` outputs, nor in a shape past the device's threads a
/// workgroup (1x64: 2,048), nor where gate/up quantizes its own x
/// (`glu_own_x`: there is no pass to replace).
#[test]
fn decode_list_uses_wo_q() {
    let Some(g) = int_gpu() else { return };
    let count = |ops: &[Op], label: &str| ops.iter().filter(|o| o.label == label).count();
    let list = |ty: GgmlType, tune: GpuTuning| {
        let b = one_layer(&g, 256, ty, tune);
        let l = b.layer_list(1, b.keys(1, 10)).to_vec();
        (
            count(&l, "wo_q"),
            count(&l, "wo"),
            count(&l, "quantize_x"),
            l.len(),
        )
    };
    let base = GpuTuning {
        glu_own_x: 0,
        wo_q_min: 0,
        ..tuning()
    };
    for ty in [GgmlType::IQ4_XS, GgmlType::Q4_0] {
        let (q_on, w_on, x_on, n_on) = list(ty, base);
        let (q_off, w_off, x_off, n_off) = list(
            ty,
            GpuTuning {
                wo_q: false,
                ..base
            },
        );
        assert_eq!((q_on, w_on), (1, 0), "{ty} on");
        assert_eq!((q_off, w_off), (0, 1), "{ty} off");
        assert_eq!((x_off, n_off), (x_on + 1, n_on + 1), "{ty}: gate/up's pass");
        let (q_min, _, x_min, _) = list(
            ty,
            GpuTuning {
                wo_q_min: 257,
                ..base
            },
        );
        assert_eq!((q_min, x_min), (0, x_off), "{ty} below wo_q_min");
        let wide = MainQShape {
            rows: 1,
            threads: 64,
        };
        assert!(!wide.valid(g.limits.max_compute_invocations_per_workgroup));
        let (q_wide, _, x_wide, _) = list(
            ty,
            GpuTuning {
                wo_q_shape: wide,
                ..base
            },
        );
        assert_eq!(
            (q_wide, x_wide),
            (0, x_off),
            "{ty} past the device's threads"
        );
        let (q_own, _, _, _) = list(
            ty,
            GpuTuning {
                wo_q_min: 0,
                ..tuning()
            },
        );
        assert_eq!(q_own, 0, "{ty}: gate/up with its own x");
    }
}

/// down_q in the layer lists: with it on, each down product but the last
/// layer's also writes the next layer's q/k/v int8 x ("down_q") and that
/// q/k/v product's pass goes, in every one-token list (and untiled
/// batches), beside wo_q; so a 3-layer decode list has 2 "down_q", 1
/// "down" and 2 quantize passes fewer than with it off (on by default,
/// from `wo_q_min`). `gpu_wo_q_matches_llama_cpp` checks its numbers
/// against the oracle.
#[test]
fn layer_lists_use_down_q() {
    let Some(g) = int_gpu() else { return };
    let count = |ops: &[Op], label: &str| ops.iter().filter(|o| o.label == label).count();
    let base = GpuTuning {
        glu_own_x: 0,
        glu_q_min: 0,
        wo_q_min: 0,
        down_q: false,
        ..tuning()
    };
    assert!(GpuTuning::default().down_q, "down_q is on by default");
    for ty in [GgmlType::IQ4_XS, GgmlType::Q4_0] {
        let off = layers_model(&g, 256, ty, 3, base);
        let on = layers_model(
            &g,
            256,
            ty,
            3,
            GpuTuning {
                down_q: true,
                ..base
            },
        );
        for keys in [10, 100] {
            let (a, b) = (
                off.layer_list(1, off.keys(1, keys)),
                on.layer_list(1, on.keys(1, keys)),
            );
            let what = format!("{ty} at {keys} keys");
            assert_eq!((count(a, "down_q"), count(a, "down")), (0, 3), "{what} off");
            assert_eq!((count(b, "down_q"), count(b, "down")), (2, 1), "{what} on");
            assert_eq!(count(a, "wo_q"), 3, "{what}");
            assert_eq!(count(b, "wo_q"), 3, "{what}");
            assert_eq!(count(a, "quantize_x"), count(b, "quantize_x") + 2, "{what}");
            assert_eq!(a.len(), b.len() + 2, "{what}");
            // The last layer's down product stays a plain one, last.
            assert_eq!(b.last().map(|o| o.label), Some("down"), "{what}");
        }
    }
}

/// The workgroup variables' bytes of `module` as naga lays them out.
fn workgroup_bytes(module: &wgpu::naga::Module) -> u32 {
    let mut layouter = wgpu::naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == wgpu::naga::AddressSpace::WorkGroup)
        .map(|(_, v)| layouter[v.ty].size)
        .sum()
}

/// few.wgsl's generated source parses, validates and translates to SPIR-V
/// for every even head size it may take (2 .. 256; the kernel test runs
/// 6, 32, 64, 128 and 256), with either rounding snippet, and its
/// workgroup variables stay within WebGPU's 16 KiB.
#[test]
fn few_source_compiles_for_every_head_size() {
    for hd in (2usize..=256).step_by(2) {
        for pack in [false, true] {
            let what = format!("few.wgsl hd {hd} pack {pack}");
            let shared = workgroup_bytes(&compile_wgsl(&kernels::few_src(hd, pack), &what));
            assert!(
                shared <= 16384,
                "{what}: {shared} bytes of workgroup memory"
            );
        }
    }
}

/// mid.wgsl's generated source parses, validates and translates to
/// SPIR-V for every head size it takes (multiples of 8 up to 256; the
/// kernel test runs 8, 32, 64, 80, 96, 128 and 256) for each of its tiers
/// (`kernels::mid_tiers`), and its workgroup variables
/// stay within WebGPU's 16 KiB; `mid_keys` is 0 for the head sizes it
/// does not take and for a tuning of 64 keys or fewer.
#[test]
fn mid_source_compiles_for_every_head_size() {
    let t = tuning();
    for hd in 1usize..=512 {
        let mk = kernels::mid_keys(&t, hd);
        assert_eq!(mk > 0, hd % 8 == 0 && hd <= 256, "hd {hd}: {mk} keys");
        let few = GpuTuning {
            mid_keys: kernels::SPLIT_KEYS,
            ..t
        };
        assert_eq!(kernels::mid_keys(&few, hd), 0);
        if mk == 0 {
            continue;
        }
        for keys in kernels::mid_tiers(&t, hd) {
            let what = format!("mid.wgsl hd {hd} keys {keys}");
            let module = compile_wgsl(&kernels::mid_src(hd, keys), &what);
            let shared = workgroup_bytes(&module);
            assert!(
                shared <= 16384,
                "{what}: {shared} bytes of workgroup memory"
            );
        }
    }
}

/// split.wgsl's generated source parses, validates and translates to
/// SPIR-V for every head size the split path may take (32 .. 512) in
/// groups of 1-8 query heads per kv head, in every DEEP_SHAPES shape that
/// fits them (the kernel tests run 6, 64 and 128 only); and its workgroup
/// variables, as naga lays them out, come to `DeepShape::workgroup_bytes`
/// (which `fits` holds to WebGPU's 16 KiB) exactly.
#[test]
fn split_source_compiles_for_every_head_size() {
    for hd in [32usize, 64, 80, 96, 128, 192, 256, 512] {
        for group in 1..=8 {
            for sh in DEEP_SHAPES.iter().filter(|sh| sh.fits(hd, group)) {
                let what = format!("hd {hd} group {group} shape {sh}");
                let module = compile_wgsl(&kernels::split_src(hd, group, *sh), &what);
                let shared = workgroup_bytes(&module);
                assert_eq!(shared as usize, sh.workgroup_bytes(hd, group), "{what}");
            }
        }
    }
}

/// A kernel whose loops' trip counts come from its input: y[i] = sum over
/// j < n[i] of (j + 1) * x[i], and an inner loop over a constant bound.
const LOOPS_WGSL: &str = "
@group(0) @binding(0) var<storage, read> N: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= arrayLength(&Y) {
        return;
    }
    var s = 0.0;
    for (var j = 0u; j < N[i]; j++) {
        var k = 0u;
        loop {
            if k >= 2u {
                break;
            }
            s += 0.5 * f32(j + 1u) * X[i];
            k++;
        }
    }
    Y[i] = s;
}
";

/// Both compile paths of `Gpu::shader_module` (naga's loop counters off,
/// main's default, and on, wgpu's) give the CPU's values for loops whose
/// trip counts are data (0 to 300 turns), on outputs poisoned with NaN;
/// and a recording handle keeps each compiled source, while the handle it
/// came from keeps none.
#[test]
fn loops_compile_both_ways_and_recording_keeps_each_source() {
    let Some(g) = gpu() else { return };
    let len = 197; // not a multiple of the 64-thread workgroup
    let mut rng = Rng::new(0x100b);
    let n: Vec<u32> = (0..len).map(|_| rng.next_u32() % 301).collect();
    let x = randn(&mut rng, len);
    // Exact in f32: (j + 1) / 2 * 2 summed is n (n + 1) / 2, times x.
    let want: Vec<f64> = (0..len)
        .map(|i| (n[i] as f64 * (n[i] as f64 + 1.0) / 2.0) * x[i] as f64)
        .collect();
    let nb = g.storage("n", len as u64 * 4).unwrap();
    g.queue.write_buffer(
        &nb,
        0,
        &n.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
    );
    let xb = g.storage("x", len as u64 * 4).unwrap();
    g.queue.write_buffer(
        &xb,
        0,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
    );
    let (rec, list) = g.recording_shaders();
    for trust in [true, false] {
        let h = rec.trusting_loops(trust);
        let p = kernels::pipeline(&h, "loops", LOOPS_WGSL, "main");
        let y = poisoned(&g, len);
        let bind = g.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: nb.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: xb.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: y.as_entire_binding(),
                },
            ],
        });
        let op = Op {
            pipeline: p,
            bind,
            shape: Shape::Fixed([(len as u32).div_ceil(64), 1, 1]),
            label: "test",
        };
        g.run(&[std::slice::from_ref(&op)], 1, &[]);
        let got = read_f32(&g, &y, len);
        // Up to 600 f32 additions of same-signed terms, each rounding the
        // running sum by at most 2^-24 of it: under 600 x 6e-8 = 3.6e-5 of
        // the result. n = 0 gives 0 exactly.
        close(&format!("loops, trusted {trust}"), &got, &want, 4e-5, 0.0);
    }
    let l = list.lock().unwrap();
    assert_eq!(l.len(), 2, "one record per compiled pipeline");
    assert!(l
        .iter()
        .all(|r| r.label == "loops" && r.entry == "main" && r.source == LOOPS_WGSL));
    drop(l);
    kernels::pipeline(&g, "unrecorded", LOOPS_WGSL, "main");
    assert_eq!(
        list.lock().unwrap().len(),
        2,
        "the plain handle records nothing"
    );
}
