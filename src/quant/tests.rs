use super::*;
use half::f16;
// On wasm32 the tests run in Node through wasm-bindgen-test-runner, which
// only sees functions marked with its own attribute.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// xorshift64*: enough randomness for test data, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

const WEIGHT_TYPES: [GgmlType; 17] = GgmlType::ALL;

fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_bits().to_le_bytes()
}

/// Byte offsets of the f16 scale fields in one block of `ty`.
fn scale_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL | GgmlType::IQ4_XS => {
            &[0]
        }
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q8_1 | GgmlType::Q4_K | GgmlType::Q5_K => {
            &[0, 2]
        }
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        GgmlType::Q6_K => &[208],
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 | GgmlType::Q8_K => &[],
    }
}

/// A random but valid weight row: random bytes everywhere except the scales,
/// which get finite magnitudes in [0.001, 0.02] with random signs (files hold
/// both signs: Q4_0's d is max / -8). Float rows get values in [-1, 1).
fn random_row(ty: GgmlType, n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut row = vec![0u8; ty.row_bytes(n).unwrap()];
    match ty {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => {
            assert!(quantize_row(ty, &rng.floats(n), &mut row));
        }
        GgmlType::Q8_K => assert!(quantize_row(ty, &rng.floats(n), &mut row)),
        _ => {
            row = rng.bytes(row.len());
            for blk in row.chunks_exact_mut(ty.block_bytes()) {
                for &at in scale_fields(ty) {
                    let mag = 0.001 + 0.019 * (rng.f32() * 0.5 + 0.5);
                    let v = if rng.next_u64() & 1 == 0 { mag } else { -mag };
                    blk[at..at + 2].copy_from_slice(&f16_bytes(v));
                }
            }
        }
    }
    row
}

fn dequant(ty: GgmlType, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; n];
    dequantize_row(ty, bytes, &mut out);
    out
}

fn quant(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_bytes(x.len()).unwrap()];
    assert!(quantize_row(ty, x, &mut out));
    out
}

#[test]
fn ids_names_and_sizes_match_ggml() {
    // (type, ggml id, name, elements per block, sizeof(block)) from ggml-common.h / ggml.c.
    let table = [
        (GgmlType::F32, 0, "F32", 1, 4),
        (GgmlType::F16, 1, "F16", 1, 2),
        (GgmlType::Q4_0, 2, "Q4_0", 32, 18),
        (GgmlType::Q4_1, 3, "Q4_1", 32, 20),
        (GgmlType::Q5_0, 6, "Q5_0", 32, 22),
        (GgmlType::Q5_1, 7, "Q5_1", 32, 24),
        (GgmlType::Q8_0, 8, "Q8_0", 32, 34),
        (GgmlType::Q8_1, 9, "Q8_1", 32, 36),
        (GgmlType::Q2_K, 10, "Q2_K", 256, 84),
        (GgmlType::Q3_K, 11, "Q3_K", 256, 110),
        (GgmlType::Q4_K, 12, "Q4_K", 256, 144),
        (GgmlType::Q5_K, 13, "Q5_K", 256, 176),
        (GgmlType::Q6_K, 14, "Q6_K", 256, 210),
        (GgmlType::Q8_K, 15, "Q8_K", 256, 292),
        (GgmlType::IQ4_NL, 20, "IQ4_NL", 32, 18),
        (GgmlType::IQ4_XS, 23, "IQ4_XS", 256, 136),
        (GgmlType::BF16, 30, "BF16", 1, 2),
    ];
    assert_eq!(table.len(), GgmlType::ALL.len());
    for (ty, id, name, len, bytes) in table {
        assert_eq!(ty.id(), id);
        assert_eq!(GgmlType::from_id(id), Some(ty));
        assert_eq!(ty.name(), name);
        assert_eq!(ty.to_string(), name);
        assert_eq!(ty.block_len(), len, "{name}");
        assert_eq!(ty.block_bytes(), bytes, "{name}");
        assert_eq!(ty.row_bytes(len * 3), Some(bytes * 3));
        assert_eq!(ty.row_bytes(0), Some(0));
        if len > 1 {
            assert_eq!(ty.row_bytes(len + 1), None);
        }
        if bytes > len {
            assert_eq!(
                ty.row_bytes(usize::MAX / len * len),
                None,
                "{name} overflow"
            );
        }
    }
    for id in [4, 5, 16, 17, 18, 19, 21, 22, 24, 29, 31, 1000] {
        assert_eq!(GgmlType::from_id(id), None);
    }
    use GgmlType::*;
    let pairs = [
        (F32, F32),
        (F16, F16),
        (BF16, BF16),
        (Q4_0, Q8_0),
        (Q5_0, Q8_0),
        (Q8_0, Q8_0),
        (IQ4_NL, Q8_0),
        (Q4_1, Q8_1),
        (Q5_1, Q8_1),
        (Q2_K, Q8_K),
        (Q3_K, Q8_K),
        (Q4_K, Q8_K),
        (Q5_K, Q8_K),
        (Q6_K, Q8_K),
        (IQ4_XS, Q8_K),
    ];
    for (w, a) in pairs {
        assert_eq!(w.vec_dot_type(), a, "{w}");
        assert!(a.can_quantize());
    }
}

#[test]
fn dequantize_hand_built_q4_0() {
    // d = 0.5; byte j holds code j (element j) and 15 - j (element j + 16).
    let mut blk = vec![0u8; 18];
    blk[0..2].copy_from_slice(&f16_bytes(0.5));
    for j in 0..16 {
        blk[2 + j] = j as u8 | ((15 - j as u8) << 4);
    }
    let y = dequant(GgmlType::Q4_0, &blk, 32);
    for j in 0..16 {
        assert_eq!(y[j], (j as f32 - 8.0) * 0.5);
        assert_eq!(y[j + 16], (7.0 - j as f32) * 0.5);
    }
    assert_eq!(y[0], -4.0);
    assert_eq!(y[16], 3.5);
}

#[test]
fn dequantize_hand_built_q4_1() {
    // d = 0.25, m = -1: element = code / 4 - 1.
    let mut blk = vec![0u8; 20];
    blk[0..2].copy_from_slice(&f16_bytes(0.25));
    blk[2..4].copy_from_slice(&f16_bytes(-1.0));
    blk[4] = 0xF0; // element 0 -> code 0, element 16 -> code 15
    blk[5] = 0x09; // element 1 -> code 9, element 17 -> code 0
    let y = dequant(GgmlType::Q4_1, &blk, 32);
    assert_eq!(&y[0..2], &[-1.0, 1.25]);
    assert_eq!(&y[16..18], &[2.75, -1.0]);
    assert!(y[2..16].iter().chain(&y[18..]).all(|&v| v == -1.0));
}

#[test]
fn dequantize_hand_built_q8_0() {
    let mut blk = vec![0u8; 34];
    blk[0..2].copy_from_slice(&f16_bytes(2.0));
    for j in 0..32 {
        blk[2 + j] = (j as i8 - 16) as u8;
    }
    blk[33] = (-128i8) as u8;
    let y = dequant(GgmlType::Q8_0, &blk, 32);
    for (j, &v) in y.iter().enumerate().take(31) {
        assert_eq!(v, (j as f32 - 16.0) * 2.0);
    }
    assert_eq!(y[31], -256.0);
}

#[test]
fn dequantize_hand_built_iq4_nl() {
    let mut blk = vec![0u8; 18];
    blk[0..2].copy_from_slice(&f16_bytes(1.0));
    for j in 0..16 {
        blk[2 + j] = j as u8 | ((15 - j as u8) << 4);
    }
    let y = dequant(GgmlType::IQ4_NL, &blk, 32);
    assert_eq!(y[0], -127.0);
    assert_eq!(y[8], 1.0);
    assert_eq!(y[15], 113.0);
    assert_eq!(y[16], 113.0);
    assert_eq!(y[31], -127.0);
    assert_eq!(y[20], 38.0); // element 16 + 4 has code 15 - 4 = 11
}

#[test]
fn dequantize_hand_built_q6_k() {
    // d = 1, scale of group g (16 elements) = g - 8. Every low-bits byte is
    // 0x21 (low nibble 1, high nibble 2) and every high-bits byte 0b11_10_01_00,
    // so each 32-element quarter of a 128-element half gets its own 6-bit code:
    // quarter 0: 1 | 0 << 4 = 1, quarter 1: 1 | 1 << 4 = 17,
    // quarter 2: 2 | 2 << 4 = 34, quarter 3: 2 | 3 << 4 = 50; minus 32.
    let mut blk = vec![0u8; 210];
    blk[0..128].fill(0x21);
    blk[128..192].fill(0b11_10_01_00);
    for g in 0..16 {
        blk[192 + g] = (g as i8 - 8) as u8;
    }
    blk[208..210].copy_from_slice(&f16_bytes(1.0));
    // One odd byte: ql[33] feeds element 33 (low nibble) and 97 (high nibble).
    blk[33] = 0x53;
    let y = dequant(GgmlType::Q6_K, &blk, 256);
    let code = [1 - 32, 17 - 32, 34 - 32, 50 - 32];
    for (e, &v) in y.iter().enumerate() {
        let mut q = code[(e % 128) / 32];
        if e == 33 {
            q = (3 | 1 << 4) - 32;
        }
        if e == 97 {
            q = (5 | 3 << 4) - 32;
        }
        let scale = (e / 16) as i32 - 8;
        assert_eq!(v, (scale * q) as f32, "element {e}");
    }
}

#[test]
fn dequantize_hand_built_q4_k() {
    // Sub-block 0: scale 1, min 2. Sub-block 4 takes its low bits from byte 8
    // and its top bits from the spare bits of bytes 0 (scale) and 4 (min):
    // scale = 3 | 1 << 4 = 19, min = 7 | 2 << 4 = 39.
    let mut blk = vec![0u8; 144];
    blk[0..2].copy_from_slice(&f16_bytes(1.0));
    blk[2..4].copy_from_slice(&f16_bytes(0.5));
    blk[4] = 0x41;
    blk[8] = 0x82;
    blk[12] = 0x73;
    blk[16..144].fill(0x21);
    let y = dequant(GgmlType::Q4_K, &blk, 256);
    // d * scale * q - dmin * min with d = 1, scale = 1, q = 1, dmin = 0.5, min = 2.
    let (d, scale, q, dmin, min) = (1.0, 1.0, 1.0, 0.5, 2.0);
    assert!(y[0..32].iter().all(|&v| v == d * scale * q - dmin * min));
    assert!(y[128..160].iter().all(|&v| v == 19.0 - 0.5 * 39.0));
    assert!(y[32..64].iter().all(|&v| v == 0.0));
}

#[test]
fn quantize_q8_0_hand_values() {
    let mut x = vec![0f32; 32];
    x[0] = 1.27;
    x[1] = -0.635; // -63.5 -> rounds away from zero to -64
    x[2] = 0.005; // 0.5 -> 1
    let q = quant(GgmlType::Q8_0, &x);
    assert_eq!(q[0..2], f16_bytes(0.01));
    assert_eq!(q[2] as i8, 127);
    assert_eq!(q[3] as i8, -64);
    assert_eq!(q[4] as i8, 1);
    assert!(q[5..].iter().all(|&b| b == 0));
    // Q8_1 stores d * sum(q) alongside.
    let q1 = quant(GgmlType::Q8_1, &x);
    assert_eq!(q1[2..4], f16_bytes(64.0 * 0.01));
}

#[test]
fn quantize_q8_k_matches_ggml_rules() {
    let mut rng = Rng::new(7);
    let x = rng.floats(512);
    let q = quant(GgmlType::Q8_K, &x);
    for (blk, xs) in q.chunks_exact(292).zip(x.chunks_exact(256)) {
        let d = f32::from_le_bytes(blk[0..4].try_into().unwrap());
        let (imax, _) = xs.iter().enumerate().fold((0, 0f32), |(bi, bv), (i, &v)| {
            if v.abs() > bv {
                (i, v.abs())
            } else {
                (bi, bv)
            }
        });
        assert_eq!(blk[4 + imax] as i8, -127, "largest magnitude maps to -127");
        for g in 0..16 {
            let s: i32 = blk[4 + 16 * g..20 + 16 * g]
                .iter()
                .map(|&b| b as i8 as i32)
                .sum();
            assert_eq!(
                i16::from_le_bytes([blk[260 + 2 * g], blk[261 + 2 * g]]) as i32,
                s
            );
        }
        for (i, &v) in xs.iter().enumerate() {
            assert!((blk[4 + i] as i8 as f32 * d - v).abs() <= d.abs() * 0.5001);
        }
    }
    assert!(quant(GgmlType::Q8_K, &[0.0; 256]).iter().all(|&b| b == 0));
}

/// ggml's fp32 -> bf16: round to nearest even, NaNs stay quiet NaNs.
fn ggml_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    if (u & 0x7fff_ffff) > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    ((u + (0x7fff + ((u >> 16) & 1))) >> 16) as u16
}

#[test]
fn float_encodings_round_to_nearest_even() {
    let mut rng = Rng::new(3);
    let mut xs = rng.floats(1000);
    xs.extend([
        1.0 + f32::EPSILON * 64.0,
        1.0 + f32::EPSILON * 192.0,
        3.0e38,
        -0.0,
    ]);
    let b = quant(GgmlType::BF16, &xs);
    for (c, &x) in b.chunks_exact(2).zip(&xs) {
        assert_eq!(u16::from_le_bytes([c[0], c[1]]), ggml_bf16(x), "{x}");
    }
    let h = quant(GgmlType::F16, &xs);
    let back = dequant(GgmlType::F16, &h, xs.len());
    for (&x, &y) in xs.iter().zip(&back).filter(|(x, _)| x.abs() < 65504.0) {
        assert!((x - y).abs() <= x.abs() * 2f32.powi(-11) + 1e-7, "{x} {y}");
    }
}

#[test]
fn weight_quantizers_round_trip() {
    // Round to nearest on a uniform grid: error at most d / 2 per element,
    // plus the f16 rounding of d and m (relative 2^-11 of each term).
    let mut rng = Rng::new(11);
    for ty in [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
    ] {
        let x = rng.floats(32 * 8);
        let y = dequant(ty, &quant(ty, &x), x.len());
        let levels = match ty {
            GgmlType::Q4_0 | GgmlType::Q4_1 => 16.0,
            GgmlType::Q5_0 | GgmlType::Q5_1 => 32.0,
            _ => 255.0,
        };
        for (xb, yb) in x.chunks(32).zip(y.chunks(32)) {
            let range = xb.iter().fold(0f32, |a, v| a.max(v.abs())) * 2.0;
            let d = range / (levels - 1.0);
            for (&a, &b) in xb.iter().zip(yb) {
                // Q4_0/Q5_0 use d = amax / 8 (one code is lost to the sign), so
                // allow a full step for them.
                let tol = d * if matches!(ty, GgmlType::Q4_0 | GgmlType::Q5_0) {
                    1.1
                } else {
                    0.51
                } + range * 2f32.powi(-10);
                assert!((a - b).abs() <= tol, "{ty}: {a} vs {b} (tol {tol})");
            }
        }
    }
    for ty in [
        GgmlType::Q2_K,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
        GgmlType::IQ4_NL,
    ] {
        assert!(!quantize_row(ty, &[0.0; 256], &mut [0u8; 512]));
    }
}

/// f64 reference dot product.
fn dot64(a: &[f32], b: &[f32]) -> (f64, f64) {
    let mut s = 0f64;
    let mut abs = 0f64;
    for (&x, &y) in a.iter().zip(b) {
        s += x as f64 * y as f64;
        abs += (x as f64 * y as f64).abs();
    }
    (s, abs)
}

fn test_sizes(ty: GgmlType) -> Vec<usize> {
    match ty.block_len() {
        1 => vec![1, 7, 16, 33, 64, 100, 576],
        32 => vec![32, 64, 96, 160, 256, 576, 1536],
        _ => vec![256, 512, 768, 1536],
    }
}

/// Bound on what Q8_1's rounded sum field contributes beyond the decoded
/// activation: sum over blocks of |m_w| * |s_a| * 2^-10.
fn sum_field_error(ty: GgmlType, w: &[u8], a: &[u8]) -> f64 {
    if !matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1) {
        return 0.0;
    }
    w.chunks_exact(ty.block_bytes())
        .zip(a.chunks_exact(36))
        .map(|(wb, ab)| {
            (scalar::f16_at(wb, 2) * scalar::f16_at(ab, 2)).abs() as f64 * 2f64.powi(-10)
        })
        .sum()
}

#[test]
fn vec_dot_matches_dequantized_dot_for_every_type() {
    // The weight and the encoded activation are both exactly representable
    // after decoding, so this measures only vec_dot's own arithmetic. The
    // per-block integer sums are exact; each block then costs at most ~4
    // f32 roundings (d_w * d_a, * isum, the min term, the running sum), and
    // the running f32 sum over nb <= 48 blocks adds at most nb ulps relative
    // to the sum of magnitudes. Decoding itself rounds each element once
    // (d * sc * q - dmin * m in f32), and with mins that can be relative to
    // terms ~4x larger than the element. Bound: 4 * (4 + 48) * 2^-24 ~ 1.3e-5
    // of sum |w_i a_i|; use 2e-5.
    // Exception: Q8_1's s = f16(d_f32 * sum q) is not what decoding gives
    // (d_f16 * sum q); the two differ by up to 2^-10 relative, which reaches
    // the result through m_w * s. That term is added to the bound.
    let mut rng = Rng::new(1);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        for n in test_sizes(ty) {
            for _ in 0..4 {
                let w = random_row(ty, n, &mut rng);
                let a = quant(at, &rng.floats(n));
                let (exact, mag) = dot64(&dequant(ty, &w, n), &dequant(at, &a, n));
                let s_err = sum_field_error(ty, &w, &a);
                for (name, got) in [
                    ("dispatch", vec_dot(ty, n, &w, &a)),
                    ("scalar", scalar::vec_dot(ty, n, &w, &a)),
                ] {
                    let err = (got as f64 - exact).abs();
                    assert!(
                        err <= 2e-5 * mag + s_err,
                        "{ty} n={n} {name}: {got} vs {exact} (mag {mag})"
                    );
                }
            }
        }
    }
}

#[test]
fn vec_dot_activation_error_is_within_quantization_bound() {
    // Against the original f32 activation x the only extra error is the
    // activation encoding: Q8_0/Q8_1 round each element to within d/2 with
    // d = amax/127 stored as f16 (so q*d16 - x <= amax*(1/254 + 2^-11)); Q8_1's
    // sum field s = f16(d*sum q) adds |m_w| * |s| * 2^-11 per block; Q8_K keeps
    // d in f32 (error <= |d|/2); F16 rounds each element by 2^-11 relative,
    // BF16 by 2^-8, F32 not at all. The bound is the sum of |w_i| times the
    // element bound, plus 2e-5 of sum |w_i x_i| for the arithmetic (see above).
    let mut rng = Rng::new(2);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        for n in test_sizes(ty) {
            let w = random_row(ty, n, &mut rng);
            let wf = dequant(ty, &w, n);
            let x = rng.floats(n);
            let a = quant(at, &x);
            let got = vec_dot(ty, n, &w, &a) as f64;
            let (exact, mag) = dot64(&wf, &x);
            let mut bound = 2e-5 * mag;
            let blk = at.block_len().max(32).min(n);
            for (i, (wb, xb)) in wf.chunks(blk).zip(x.chunks(blk)).enumerate() {
                let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
                let wabs: f64 = wb.iter().map(|v| v.abs() as f64).sum();
                bound += match at {
                    GgmlType::Q8_0 => wabs * amax * (1.0 / 254.0 + 2f64.powi(-11)),
                    GgmlType::Q8_1 => {
                        let m = scalar::f16_at(&w, i * ty.block_bytes() + 2).abs() as f64;
                        wabs * amax * (1.0 / 254.0 + 2f64.powi(-11))
                            + m * 32.0 * amax * 2f64.powi(-10)
                    }
                    GgmlType::Q8_K => wabs * amax / 254.0 * 1.0001,
                    GgmlType::F16 => dot64(wb, xb).1 * 2f64.powi(-11),
                    GgmlType::BF16 => dot64(wb, xb).1 * 2f64.powi(-8),
                    _ => 0.0,
                };
            }
            assert!(
                (got - exact).abs() <= bound,
                "{ty} n={n}: {got} vs {exact} (bound {bound})"
            );
        }
    }
}

#[test]
fn simd_agrees_with_scalar() {
    // Same integer block sums, different f32 summation order: agreement to
    // a few ulps of sum |w_i a_i| per block (bound as in the test above).
    eprintln!("simd level: {}", simd_level());
    let mut rng = Rng::new(5);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        let sizes: Vec<usize> = match ty.block_len() {
            1 => vec![
                1, 3, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 576, 1000,
            ],
            32 => (1..=20).map(|k| 32 * k).chain([576, 1536]).collect(),
            _ => vec![256, 512, 768, 1024, 1280, 1536],
        };
        for n in sizes {
            let w = random_row(ty, n, &mut rng);
            let a = quant(at, &rng.floats(n));
            let (_, mag) = dot64(&dequant(ty, &w, n), &dequant(at, &a, n));
            let fast = vec_dot(ty, n, &w, &a) as f64;
            let slow = scalar::vec_dot(ty, n, &w, &a) as f64;
            assert!(
                (fast - slow).abs() <= 2e-5 * mag + 1e-30,
                "{ty} n={n}: simd {fast} scalar {slow}"
            );
        }
    }
}

#[test]
fn gemm_equals_vec_dot_bitwise() {
    let mut rng = Rng::new(9);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        let n = match ty.block_len() {
            1 => 77,
            32 => 32 * 7,
            _ => 256 * 3,
        };
        let rows = 6;
        let w: Vec<u8> = (0..rows)
            .flat_map(|_| random_row(ty, n, &mut rng))
            .collect();
        let wrb = ty.row_bytes(n).unwrap();
        let arb = at.row_bytes(n).unwrap();
        for ntok in [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 37, 70] {
            let a = quant(at, &rng.floats(n * ntok));
            let mut out = vec![f32::NAN; rows * ntok];
            gemm(ty, n, &w, &a, ntok, &mut out);
            let mut out_s = vec![f32::NAN; rows * ntok];
            scalar::gemm(ty, n, &w, &a, ntok, &mut out_s);
            for r in 0..rows {
                for t in 0..ntok {
                    let wr = &w[r * wrb..(r + 1) * wrb];
                    let ar = &a[t * arb..(t + 1) * arb];
                    let v = vec_dot(ty, n, wr, ar);
                    assert_eq!(
                        out[r * ntok + t].to_bits(),
                        v.to_bits(),
                        "{ty} ntok={ntok} r={r} t={t}"
                    );
                    let vs = scalar::vec_dot(ty, n, wr, ar);
                    assert_eq!(
                        out_s[r * ntok + t].to_bits(),
                        vs.to_bits(),
                        "{ty} scalar ntok={ntok}"
                    );
                }
            }
        }
    }
}

#[test]
fn short_slices_do_not_read_out_of_bounds() {
    // Release builds truncate to the whole blocks present instead of
    // indexing past the end; debug builds flag the caller's bug.
    if cfg!(debug_assertions) {
        return;
    }
    let mut rng = Rng::new(4);
    for ty in WEIGHT_TYPES {
        let n = ty.block_len() * 64;
        let w = random_row(ty, n, &mut rng);
        let a = quant(ty.vec_dot_type(), &rng.floats(n));
        let short = &w[..w.len() / 2 + 1];
        let _ = vec_dot(ty, n, short, &a);
        let _ = vec_dot(ty, n, &w, &a[..a.len() / 3]);
        let mut out = [0f32; 8];
        gemm(ty, n, short, &a, 4, &mut out);
    }
}

/// The tensor's ggml type id and raw bytes in a GGUF file.
#[cfg(not(target_arch = "wasm32"))]
fn gguf_tensor(path: &std::path::Path, name: &str) -> Option<(u32, Vec<u64>, Vec<u8>)> {
    use gguf_rs_lib::prelude::GGUFFileReader;
    let bytes = std::fs::read(path).ok()?;
    let reader = match GGUFFileReader::new(std::io::Cursor::new(&bytes)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: cannot parse ({e})", path.display());
            return None;
        }
    };
    let info = reader.get_tensor_info(name)?;
    let start = (reader.tensor_data_offset() + info.data_offset()) as usize;
    let dims = info.shape().dims().to_vec();
    let ty = info.tensor_type() as u32;
    let n: u64 = dims.iter().product();
    let len = GgmlType::from_id(ty)?.row_bytes(n as usize)?;
    Some((ty, dims, bytes.get(start..start + len)?.to_vec()))
}

// Reads files: not on wasm32.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn real_gguf_files_decode_close_to_f32() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/models");
    let name = "blk.0.ffn_up.weight";
    let Some((fty, dims, fbytes)) = gguf_tensor(&dir.join("synth256.F32.gguf"), name) else {
        eprintln!("skipping: {} not available", dir.display());
        return;
    };
    assert_eq!(fty, 0);
    let n: usize = dims.iter().product::<u64>() as usize;
    let reference = dequant(GgmlType::F32, &fbytes, n);
    let ref_rms = (reference.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / n as f64).sqrt();
    // Relative RMS error bounds: about twice what each format measured on
    // this tensor (printed below; F16 0, BF16 0.0017, Q8_0 0.0054, Q6_K
    // 0.018, Q5_* 0.036-0.043, Q4_*/IQ4_* 0.071-0.086, Q3_K 0.15, Q2_K 0.30),
    // so that a layout bug (errors ~100% or more) fails.
    let files = [
        ("F32", 0.0),
        ("F16", 0.001),
        ("BF16", 0.005),
        ("Q8_0", 0.01),
        ("Q6_K", 0.03),
        ("Q5_K_S", 0.06),
        ("Q5_0", 0.06),
        ("Q5_1", 0.06),
        ("Q4_K_S", 0.12),
        ("Q4_0", 0.15),
        ("Q4_1", 0.15),
        ("IQ4_NL", 0.15),
        ("IQ4_XS", 0.15),
        ("Q3_K_S", 0.3),
        ("Q2_K", 0.6),
    ];
    for (suffix, bound) in files {
        let path = dir.join(format!("synth256.{suffix}.gguf"));
        let Some((ty, d2, bytes)) = gguf_tensor(&path, name) else {
            eprintln!("skipping {suffix}: tensor not readable");
            continue;
        };
        assert_eq!(d2, dims);
        let ty = GgmlType::from_id(ty).unwrap();
        let got = dequant(ty, &bytes, n);
        let err = (got
            .iter()
            .zip(&reference)
            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt()
            / ref_rms;
        eprintln!("{suffix:7} stored as {ty:7}: relative RMS error {err:.5}");
        assert!(err <= bound, "{suffix}: relative RMS error {err} > {bound}");

        // The dot products must follow the decoded values too.
        let cols = dims[0] as usize;
        let x = Rng::new(8).floats(cols);
        let act = quant(ty.vec_dot_type(), &x);
        let wrb = ty.row_bytes(cols).unwrap();
        for (r, wrow) in bytes.chunks_exact(wrb).take(16).enumerate() {
            let (exact, mag) = dot64(
                &got[r * cols..(r + 1) * cols],
                &dequant(ty.vec_dot_type(), &act, cols),
            );
            let v = vec_dot(ty, cols, wrow, &act) as f64;
            let bound = 2e-5 * mag + sum_field_error(ty, wrow, &act);
            assert!(
                (v - exact).abs() <= bound,
                "{suffix} row {r}: {v} vs {exact}"
            );
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn every_x86_level_gives_identical_results() {
    // The integer block sums are exact and the f32 operations are the same
    // at every level, so Avx2 (maddubs), AVX-VNNI and AVX512-VNNI agree
    // bit for bit.
    let levels = x86::levels();
    eprintln!("levels: {levels:?}");
    let mut rng = Rng::new(12);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        let n = ty.block_len().max(32) * 7;
        let (rows, ntok) = (5, 11);
        let w: Vec<u8> = (0..rows)
            .flat_map(|_| random_row(ty, n, &mut rng))
            .collect();
        let a = quant(at, &rng.floats(n * ntok));
        let mut reference = vec![f32::NAN; rows * ntok];
        gemm(ty, n, &w, &a, ntok, &mut reference);
        for &lvl in &levels {
            let mut out = vec![f32::NAN; rows * ntok];
            if x86::gemm_level(lvl, ty, n, &w, &a, ntok, &mut out) {
                let same = out
                    .iter()
                    .zip(&reference)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{ty} at {lvl}: {out:?} vs {reference:?}");
            }
        }
    }
}

#[test]
fn rounding_helpers_match_std() {
    // quantize_row rounds with bit tricks; they must agree with the libm
    // functions ggml's reference uses (roundf, and rint for nearest_int).
    let mut rng = Rng::new(13);
    let mut xs: Vec<f32> = (0..100_000).map(|_| rng.f32() * 130.0).collect();
    for k in -260..=260 {
        let h = k as f32 * 0.5;
        xs.extend([
            h,
            h + f32::EPSILON * h.abs(),
            h - f32::EPSILON * h.abs(),
            0.5 - 2f32.powi(-25),
        ]);
    }
    for &x in &xs {
        let mut q = [0u8; 34];
        let mut block = [0f32; 32];
        block[0] = 127.0; // d = 1 and id = 1, so the quant is round(x)
        block[1] = x.clamp(-127.0, 127.0);
        quantize_row(GgmlType::Q8_0, &block, &mut q);
        assert_eq!(q[3] as i8 as f32, block[1].round(), "roundf({})", block[1]);
    }
    let mut block = [0f32; 256];
    block[0] = -127.0; // iscale = 1
    for &x in &xs {
        block[1] = x.clamp(-127.0, 127.0);
        let mut q = [0u8; 292];
        quantize_row(GgmlType::Q8_K, &block, &mut q);
        assert_eq!(
            q[5] as i8 as f32,
            block[1].round_ties_even().min(127.0),
            "rint({})",
            block[1]
        );
    }
}

#[test]
fn fast_activation_encoders_match_scalar_bitwise() {
    let mut rng = Rng::new(14);
    for ty in [
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q8_K,
        GgmlType::F16,
        GgmlType::BF16,
    ] {
        for n in [256, 512, 1536] {
            let n = if ty.block_len() == 1 { n + 5 } else { n };
            let mut x = rng.floats(n);
            // Exact halves after scaling, zeros, and an all-zero block.
            x[3] = 0.0;
            x[10] = x[0] * 0.5;
            if n >= 64 {
                x[32..64].fill(0.0);
            }
            let fast = quant(ty, &x);
            let mut slow = vec![0u8; fast.len()];
            scalar::quantize_row(ty, &x, &mut slow);
            assert_eq!(fast, slow, "{ty} n={n}");
        }
    }
}

#[test]
fn half_conversions_are_exact_for_every_bit_pattern() {
    for h in 0..=u16::MAX {
        let want = f16::from_bits(h).to_f32();
        let got = scalar::f16_to_f32(h);
        if want.is_nan() {
            assert!(got.is_nan(), "{h:#06x}");
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
        }
        let want = half::bf16::from_bits(h).to_f32();
        let got = scalar::bf16_to_f32(h);
        assert!(
            got.to_bits() == want.to_bits() || (want.is_nan() && got.is_nan()),
            "bf16 {h:#06x}"
        );
    }
}

/// Any f16 bit pattern, mostly finite (subnormals and zeros included, both
/// signs); one in 16 an infinity or NaN.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn wild_f16_bits(rng: &mut Rng) -> [u8; 2] {
    let special = rng.next_u64().is_multiple_of(16);
    loop {
        let h = rng.next_u64() as u16;
        if (h & 0x7c00 == 0x7c00) == special {
            return h.to_le_bytes();
        }
    }
}

/// Like `random_row`, but every other block's f16 scales (or every other
/// float of a 16-bit float row) take wild bit patterns, so that the fast
/// paths' f16 conversions meet subnormals, zeros, large values, infinities
/// and NaNs.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn wild_row(ty: GgmlType, n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut row = random_row(ty, n, rng);
    match ty {
        GgmlType::F16 | GgmlType::BF16 => {
            for (i, c) in row.chunks_exact_mut(2).enumerate() {
                if i % 2 == 1 {
                    c.copy_from_slice(&wild_f16_bits(rng));
                }
            }
        }
        _ => {
            for blk in row.chunks_exact_mut(ty.block_bytes()).skip(1).step_by(2) {
                for &at in scale_fields(ty) {
                    blk[at..at + 2].copy_from_slice(&wild_f16_bits(rng));
                }
            }
        }
    }
    row
}

/// The wasm32 simd128 kernels do the scalar code's f32 operations in its
/// order, lane by lane, so their results are identical, not just close
/// (weights with infinite or NaN f16 scales take the scalar code itself):
/// for every format, odd block counts, row counts around the four-row
/// groups and token counts around the four-token groups.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[test]
fn wasm_simd_is_bitwise_scalar() {
    assert_eq!(simd_level(), "simd128");
    // Equal bits, or both NaN: wasm leaves NaN payloads unspecified.
    let same = |x: f32, y: f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
    let mut rng = Rng::new(21);
    for ty in WEIGHT_TYPES {
        let at = ty.vec_dot_type();
        let blocks: &[usize] = match ty.block_len() {
            1 => &[1, 2, 3, 4, 5, 7, 17, 33, 100, 577],
            32 => &[1, 2, 3, 5, 7, 9, 13, 18, 47, 49],
            _ => &[1, 2, 3, 5],
        };
        for &nb in blocks {
            let n = nb * ty.block_len();
            let (wrb, arb) = (ty.row_bytes(n).unwrap(), at.row_bytes(n).unwrap());
            for (rows, ntok) in [(1, 1), (3, 1), (5, 1), (8, 1), (7, 2), (6, 5), (9, 19)] {
                let w: Vec<u8> = (0..rows).flat_map(|_| wild_row(ty, n, &mut rng)).collect();
                let a = quant(at, &rng.floats(n * ntok));
                let mut fast = vec![f32::NAN; rows * ntok];
                gemm(ty, n, &w, &a, ntok, &mut fast);
                let mut slow = vec![f32::NAN; rows * ntok];
                scalar::gemm(ty, n, &w, &a, ntok, &mut slow);
                for (i, (x, y)) in fast.iter().zip(&slow).enumerate() {
                    assert!(
                        same(*x, *y),
                        "{ty} n={n} rows={rows} ntok={ntok} out[{i}]: simd {x} scalar {y}"
                    );
                }
                let (w0, a0) = (&w[(rows - 1) * wrb..], &a[(ntok - 1) * arb..]);
                let v = vec_dot(ty, n, w0, a0);
                let vs = scalar::vec_dot(ty, n, w0, a0);
                assert!(same(v, vs), "{ty} n={n} vec_dot: {v} vs {vs}");
            }
        }
    }
}

/// Values around every f16 rounding boundary: each f16 value, the
/// midpoints to its neighbours and the f32s next to those, in both signs
/// (`quant::f16_boundary_values`, then the largest f16 and what lies past
/// it: inf, the NaN above it, f32's max); plus f32 subnormals, huge
/// values, infinities and NaNs. The GPU's round_f16 is checked on the same
/// values (src/gpu/tests.rs).
pub(crate) fn f16_rounding_cases() -> Vec<f32> {
    let mut xs = super::f16_boundary_values();
    for x in [
        65504.0,
        f32::INFINITY,
        f32::from_bits(0x7f80_0001),
        f32::MAX,
    ] {
        xs.extend([x, -x]);
    }
    let mut rng = Rng::new(22);
    for _ in 0..20_000 {
        xs.push(f32::from_bits(rng.next_u64() as u32));
    }
    xs.extend([
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        1e-8,
        2.0f32.powi(-25),
        2.0f32.powi(-24) * 1.5,
    ]);
    xs
}

#[test]
fn f16_rounding_matches_half_bitwise() {
    let xs = f16_rounding_cases();
    let want: Vec<u32> = xs
        .iter()
        .map(|&x| f16::from_f32(x).to_f32().to_bits())
        .collect();
    // Unaligned starts and odd lengths exercise the vector tails.
    for skip in [0, 1, 3] {
        let mut got = xs[skip..].to_vec();
        round_f16_in_place(&mut got);
        for (i, (g, w)) in got.iter().zip(&want[skip..]).enumerate() {
            assert_eq!(g.to_bits(), *w, "round_f16({:e})", xs[skip + i]);
        }
        let mut out = vec![0f32; xs.len() - skip];
        round_f16(&xs[skip..], &mut out);
        assert!(out
            .iter()
            .zip(&got)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    // F16 encoding of activations: the same values, as f16 bits.
    let n = xs.len() / 8 * 8 - 3;
    let fast = quant(GgmlType::F16, &xs[..n]);
    let mut slow = vec![0u8; fast.len()];
    scalar::quantize_row(GgmlType::F16, &xs[..n], &mut slow);
    for (i, (f, s)) in fast.chunks_exact(2).zip(slow.chunks_exact(2)).enumerate() {
        assert_eq!(f, s, "f16 encoding of {:e}", xs[i]);
    }
}

#[test]
fn dot_f32_lanes16_is_bitwise_scalar() {
    let mut rng = Rng::new(23);
    for n in [16, 32, 64, 128, 272, 1024] {
        for _ in 0..20 {
            let a = rng.floats(n);
            let b: Vec<f32> = rng.floats(n).iter().map(|v| v * 1e3).collect();
            let (x, y) = (dot_f32_lanes16(&a, &b), scalar::dot_f32_lanes16(&a, &b));
            assert_eq!(x.to_bits(), y.to_bits(), "n={n}: {x} vs {y}");
        }
    }
}
