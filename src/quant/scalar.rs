//! Portable reference implementation of every format.
//!
//! Clarity over speed: each weight block is first unpacked into plain
//! integers (quants with their offsets applied, per-group scales and mins),
//! and one generic routine per block size does the arithmetic. The SIMD
//! paths are tested against these functions, and targets without a fast
//! path run them directly.

use super::{whole_blocks, GgmlType, IQ4_NL_VALUES, QK32, QK_K};
use half::{bf16, f16};

/// IEEE half to single precision, exactly (subnormals, infinities and NaNs
/// included). `half`'s conversion checks for F16C at run time on every call
/// on x86_64, which made the scalar F16 paths crawl; this one inlines.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = (h as u32 & 0x8000) << 16;
    let em = h as u32 & 0x7fff;
    if em >= 0x7c00 {
        // Infinity or NaN: all-ones exponent, mantissa carried over.
        f32::from_bits(sign | 0x7f80_0000 | (em & 0x03ff) << 13)
    } else if em >= 0x0400 {
        // Normal: move the fields and rebias the exponent (15 -> 127).
        f32::from_bits(sign | ((em << 13) + ((127 - 15) << 23)))
    } else {
        // Subnormal or zero: em * 2^-24, exact in f32.
        f32::from_bits(sign | (em as f32 * (1.0 / 16_777_216.0)).to_bits())
    }
}

/// bfloat16 to single precision: bf16 is the top half of an f32.
#[inline]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

#[inline]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

#[inline]
fn put_f16(b: &mut [u8], at: usize, v: f32) {
    b[at..at + 2].copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes());
}

#[inline]
fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// ggml's `nearest_int` for |x| < 2^22: adding 1.5 * 2^23 leaves the
/// integer, rounded half to even, in the low mantissa bits. Written the same
/// way (rather than with `round_ties_even`, a libm call on baseline x86_64)
/// so that it is cheap and vectorizes.
#[inline]
fn nearest_int(x: f32) -> i32 {
    ((x + 12_582_912.0).to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// C's `roundf` (halves away from zero) for |x| < 2^31: truncate, then look
/// at the exact remainder. Avoids the libm call behind `f32::round`.
#[inline]
fn round_away(x: f32) -> i32 {
    let t = x as i32;
    let f = x - t as f32;
    t + (f >= 0.5) as i32 - (f <= -0.5) as i32
}

/// ggml's `MAX(a, |v|)` fold, in a form the compiler can vectorize.
#[inline]
fn abs_max(x: &[f32]) -> f32 {
    x.iter()
        .fold(0f32, |a, &v| if a > v.abs() { a } else { v.abs() })
}

/// A 32-element block with its quants already offset to signed values, so
/// that element i is `q[i] * d + m`.
struct Block32 {
    q: [i8; QK32],
    d: f32,
    /// Additive offset of the `_1` formats, 0 otherwise.
    m: f32,
}

/// Splits 16 packed bytes into the 32 nibbles in ggml's order: the low
/// nibbles are elements 0..16, the high nibbles elements 16..32.
#[inline]
fn nibbles(qs: &[u8]) -> [u8; QK32] {
    let mut out = [0u8; QK32];
    for (j, &b) in qs.iter().take(16).enumerate() {
        out[j] = b & 0x0f;
        out[j + 16] = b >> 4;
    }
    out
}

/// The fifth bit of Q5_0/Q5_1 element j is bit j of the little-endian u32.
#[inline]
fn fifth_bits(qh: &[u8]) -> u32 {
    u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]])
}

/// Unpacks one block of a 32-element format; `blk` is exactly one block.
fn unpack32(ty: GgmlType, blk: &[u8]) -> Block32 {
    let mut q = [0i8; QK32];
    let (d, m) = match ty {
        GgmlType::Q4_0 => {
            for (o, v) in q.iter_mut().zip(nibbles(&blk[2..18])) {
                *o = v as i8 - 8;
            }
            (f16_at(blk, 0), 0.0)
        }
        GgmlType::Q4_1 => {
            for (o, v) in q.iter_mut().zip(nibbles(&blk[4..20])) {
                *o = v as i8;
            }
            (f16_at(blk, 0), f16_at(blk, 2))
        }
        GgmlType::Q5_0 => {
            let qh = fifth_bits(&blk[2..6]);
            for (j, (o, v)) in q.iter_mut().zip(nibbles(&blk[6..22])).enumerate() {
                *o = (v | (((qh >> j) & 1) as u8) << 4) as i8 - 16;
            }
            (f16_at(blk, 0), 0.0)
        }
        GgmlType::Q5_1 => {
            let qh = fifth_bits(&blk[4..8]);
            for (j, (o, v)) in q.iter_mut().zip(nibbles(&blk[8..24])).enumerate() {
                *o = (v | (((qh >> j) & 1) as u8) << 4) as i8;
            }
            (f16_at(blk, 0), f16_at(blk, 2))
        }
        GgmlType::Q8_0 => {
            for (o, &v) in q.iter_mut().zip(&blk[2..34]) {
                *o = v as i8;
            }
            (f16_at(blk, 0), 0.0)
        }
        // The second f16 of Q8_1 is d * sum(q), not an offset.
        GgmlType::Q8_1 => {
            for (o, &v) in q.iter_mut().zip(&blk[4..36]) {
                *o = v as i8;
            }
            (f16_at(blk, 0), 0.0)
        }
        GgmlType::IQ4_NL => {
            for (o, v) in q.iter_mut().zip(nibbles(&blk[2..18])) {
                *o = IQ4_NL_VALUES[v as usize];
            }
            (f16_at(blk, 0), 0.0)
        }
        _ => unreachable!("{ty} is not a 32-element block format"),
    };
    Block32 { q, d, m }
}

/// A 256-element super-block: element i is
/// `d * sc[i / 16] * q[i] - dmin * mn[i / 16]`. Formats with 32-element
/// sub-blocks repeat each scale twice, which keeps one code path for all.
struct BlockK {
    q: [i8; QK_K],
    sc: [i16; 16],
    mn: [i16; 16],
    d: f32,
    /// 0 and `has_min == false` for the formats without mins.
    dmin: f32,
    has_min: bool,
}

/// Q4_K/Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes:
/// the first four of each sit whole in bytes 0..8, the last four keep their
/// low nibble in bytes 8..12 and their top two bits in the spare high bits of
/// bytes 0..8.
#[inline]
pub(crate) fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

fn unpack_k(ty: GgmlType, blk: &[u8]) -> BlockK {
    let mut b = BlockK {
        q: [0; QK_K],
        sc: [0; 16],
        mn: [0; 16],
        d: 0.0,
        dmin: 0.0,
        has_min: false,
    };
    match ty {
        GgmlType::Q2_K => {
            let (scales, qs) = (&blk[0..16], &blk[16..80]);
            for (g, &s) in scales.iter().enumerate() {
                b.sc[g] = (s & 0x0f) as i16;
                b.mn[g] = (s >> 4) as i16;
            }
            // Each 128-element half reads 32 bytes four times, two bits at a time.
            for (e, q) in b.q.iter_mut().enumerate() {
                let (half, shift, l) = (e / 128, (e % 128) / 32 * 2, e % 32);
                *q = ((qs[half * 32 + l] >> shift) & 3) as i8;
            }
            b.d = f16_at(blk, 80);
            b.dmin = f16_at(blk, 82);
            b.has_min = true;
        }
        GgmlType::Q3_K => {
            let (hmask, qs, s) = (&blk[0..32], &blk[32..96], &blk[96..108]);
            for g in 0..16 {
                let low = if g < 8 { s[g] & 0x0f } else { s[g - 8] >> 4 };
                let high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
                b.sc[g] = (low | high << 4) as i16 - 32;
            }
            // Same 2-bit layout as Q2_K; a clear bit in hmask subtracts 4.
            for (e, q) in b.q.iter_mut().enumerate() {
                let (half, j, l) = (e / 128, (e % 128) / 32, e % 32);
                let low = ((qs[half * 32 + l] >> (2 * j)) & 3) as i8;
                let hbit = hmask[l] >> (half * 4 + j) & 1;
                *q = low - if hbit == 0 { 4 } else { 0 };
            }
            b.d = f16_at(blk, 108);
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let s = &blk[4..16];
            let (qh, qs) = if ty == GgmlType::Q5_K {
                (Some(&blk[16..48]), &blk[48..176])
            } else {
                (None, &blk[16..144])
            };
            for sub in 0..8 {
                let (sc, mn) = scale_min_k4(sub, s);
                b.sc[2 * sub] = sc as i16;
                b.sc[2 * sub + 1] = sc as i16;
                b.mn[2 * sub] = mn as i16;
                b.mn[2 * sub + 1] = mn as i16;
            }
            // 64-element chunks: 32 bytes whose low nibbles are the first 32
            // elements and high nibbles the next 32; Q5_K's fifth bit of
            // sub-block `sub` is bit `sub` of qh[l].
            for (e, q) in b.q.iter_mut().enumerate() {
                let (chunk, hi, l) = (e / 64, (e % 64) / 32, e % 32);
                let byte = qs[chunk * 32 + l];
                let mut v = if hi == 1 { byte >> 4 } else { byte & 0x0f };
                if let Some(qh) = qh {
                    v |= ((qh[l] >> (e / 32)) & 1) << 4;
                }
                *q = v as i8;
            }
            b.d = f16_at(blk, 0);
            b.dmin = f16_at(blk, 2);
            b.has_min = true;
        }
        GgmlType::Q6_K => {
            let (ql, qh, sc) = (&blk[0..128], &blk[128..192], &blk[192..208]);
            for (o, &s) in b.sc.iter_mut().zip(sc) {
                *o = s as i8 as i16;
            }
            // Per 128-element half: 64 bytes of low nibbles (elements
            // 0..32 and 32..64 in the low nibbles, 64..128 in the high ones)
            // and 32 bytes holding four 2-bit high parts each.
            for (e, q) in b.q.iter_mut().enumerate() {
                let (half, quarter, l) = (e / 128, (e % 128) / 32, e % 32);
                let lbyte = ql[half * 64 + (quarter % 2) * 32 + l];
                let low = if quarter < 2 {
                    lbyte & 0x0f
                } else {
                    lbyte >> 4
                };
                let high = (qh[half * 32 + l] >> (2 * quarter)) & 3;
                *q = (low | high << 4) as i8 - 32;
            }
            b.d = f16_at(blk, 208);
        }
        GgmlType::IQ4_XS => {
            let scales_h = u16::from_le_bytes([blk[2], blk[3]]);
            let (scales_l, qs) = (&blk[4..8], &blk[8..136]);
            for sub in 0..8 {
                let low = (scales_l[sub / 2] >> (4 * (sub % 2))) & 0x0f;
                let high = ((scales_h >> (2 * sub)) & 3) as u8;
                let ls = (low | high << 4) as i16 - 32;
                b.sc[2 * sub] = ls;
                b.sc[2 * sub + 1] = ls;
                let vals = nibbles(&qs[sub * 16..sub * 16 + 16]);
                for (o, v) in b.q[sub * 32..sub * 32 + 32].iter_mut().zip(vals) {
                    *o = IQ4_NL_VALUES[v as usize];
                }
            }
            b.d = f16_at(blk, 0);
        }
        GgmlType::Q8_K => {
            for (o, &v) in b.q.iter_mut().zip(&blk[4..260]) {
                *o = v as i8;
            }
            b.sc = [1; 16];
            b.d = f32_at(blk, 0);
        }
        _ => unreachable!("{ty} is not a 256-element block format"),
    }
    b
}

/// See [`super::dequantize_row`].
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) {
    debug_assert_eq!(dst.len() % ty.block_len(), 0);
    debug_assert!(src.len() >= dst.len() / ty.block_len() * ty.block_bytes());
    let bb = ty.block_bytes();
    match ty {
        GgmlType::F32 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *o = f32_at(c, 0);
            }
        }
        GgmlType::F16 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *o = f16_to_f32(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        GgmlType::BF16 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                *o = bf16_to_f32(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        _ if ty.block_len() == QK32 => {
            for (out, blk) in dst.chunks_exact_mut(QK32).zip(src.chunks_exact(bb)) {
                let b = unpack32(ty, blk);
                let has_min = matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1);
                for (o, &q) in out.iter_mut().zip(&b.q) {
                    *o = if has_min {
                        q as f32 * b.d + b.m
                    } else {
                        q as f32 * b.d
                    };
                }
            }
        }
        _ => {
            for (out, blk) in dst.chunks_exact_mut(QK_K).zip(src.chunks_exact(bb)) {
                let b = unpack_k(ty, blk);
                for (g, out16) in out.chunks_exact_mut(16).enumerate() {
                    let dl = b.d * b.sc[g] as f32;
                    let ml = b.dmin * b.mn[g] as f32;
                    for (o, &q) in out16.iter_mut().zip(&b.q[g * 16..g * 16 + 16]) {
                        *o = if b.has_min {
                            dl * q as f32 - ml
                        } else {
                            dl * q as f32
                        };
                    }
                }
            }
        }
    }
}

/// One block of a 32- or 256-element format as the integers its decoders
/// multiply, for the GPU kernel tests' integer twin: element i is
/// `d * sc[i / 16] * q[i] - dmin * mn[i / 16]` (the 32-element formats:
/// scales 1, and their additive offset m as `dmin = -m` with mins 1).
#[cfg(all(test, feature = "gpu", not(target_arch = "wasm32")))]
pub(crate) fn int_block(ty: GgmlType, blk: &[u8]) -> (Vec<i8>, Vec<i16>, Vec<i16>, f32, f32) {
    if ty.block_len() == QK32 {
        let b = unpack32(ty, blk);
        (b.q.to_vec(), vec![1; 2], vec![1; 2], b.d, -b.m)
    } else {
        let b = unpack_k(ty, blk);
        (b.q.to_vec(), b.sc.to_vec(), b.mn.to_vec(), b.d, b.dmin)
    }
}

/// See [`super::round_f16_in_place`]: through `half`'s slice conversions
/// (which use F16C when the CPU has it), 64 values at a time.
pub fn round_f16_in_place(x: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    let mut tmp = [f16::ZERO; 64];
    for xc in x.chunks_mut(64) {
        let t = &mut tmp[..xc.len()];
        t.convert_from_f32_slice(xc);
        t.convert_to_f32_slice(xc);
    }
}

/// See [`super::dot_f32_lanes16`].
pub fn dot_f32_lanes16(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    for (ac, bc) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        for l in 0..16 {
            lanes[l] += ac[l] * bc[l];
        }
    }
    let mut w = 8;
    while w > 0 {
        for l in 0..w {
            lanes[l] += lanes[l + w];
        }
        w /= 2;
    }
    lanes[0]
}

/// See [`super::quantize_row`].
pub fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> bool {
    debug_assert_eq!(src.len() % ty.block_len(), 0);
    debug_assert!(dst.len() >= src.len() / ty.block_len() * ty.block_bytes());
    let bb = ty.block_bytes();
    match ty {
        GgmlType::F32 => {
            for (c, &x) in dst.chunks_exact_mut(4).zip(src) {
                c.copy_from_slice(&x.to_le_bytes());
            }
        }
        GgmlType::F16 => {
            for (c, &x) in dst.chunks_exact_mut(2).zip(src) {
                c.copy_from_slice(&f16::from_f32(x).to_bits().to_le_bytes());
            }
        }
        GgmlType::BF16 => {
            for (c, &x) in dst.chunks_exact_mut(2).zip(src) {
                c.copy_from_slice(&bf16::from_f32(x).to_bits().to_le_bytes());
            }
        }
        GgmlType::Q8_0 | GgmlType::Q8_1 => {
            for (blk, x) in dst.chunks_exact_mut(bb).zip(src.chunks_exact(QK32)) {
                let amax = abs_max(x);
                let d = amax / 127.0;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                let qs_at = if ty == GgmlType::Q8_0 { 2 } else { 4 };
                let mut sum = 0i32;
                for (o, &v) in blk[qs_at..].iter_mut().zip(x) {
                    let q = round_away(v * id) as i8;
                    sum += q as i32;
                    *o = q as u8;
                }
                put_f16(blk, 0, d);
                if ty == GgmlType::Q8_1 {
                    put_f16(blk, 2, sum as f32 * d);
                }
            }
        }
        GgmlType::Q8_K => {
            for (blk, x) in dst.chunks_exact_mut(bb).zip(src.chunks_exact(QK_K)) {
                // The scale maps the element of largest magnitude to exactly
                // -127, keeping its sign; others may round to +127 at most.
                let (mut amax, mut max) = (0f32, 0f32);
                for &v in x {
                    if v.abs() > amax {
                        amax = v.abs();
                        max = v;
                    }
                }
                blk.fill(0);
                if amax == 0.0 {
                    continue;
                }
                let iscale = -127.0 / max;
                for (o, &v) in blk[4..260].iter_mut().zip(x) {
                    *o = nearest_int(iscale * v).min(127) as i8 as u8;
                }
                for g in 0..16 {
                    let s: i32 = blk[4 + g * 16..4 + g * 16 + 16]
                        .iter()
                        .map(|&q| q as i8 as i32)
                        .sum();
                    blk[260 + 2 * g..262 + 2 * g].copy_from_slice(&(s as i16).to_le_bytes());
                }
                blk[0..4].copy_from_slice(&(1.0 / iscale).to_le_bytes());
            }
        }
        GgmlType::Q4_0 | GgmlType::Q5_0 => {
            // Symmetric: the element of largest magnitude gets code 0 (-8 or
            // -16 times d), so d carries its sign.
            let (levels, qs_at) = if ty == GgmlType::Q4_0 {
                (16, 2)
            } else {
                (32, 6)
            };
            let half = (levels / 2) as f32;
            // One constant, as in ggml: (x * id + 8.0) + 0.5 would round differently.
            let off = half + 0.5;
            for (blk, x) in dst.chunks_exact_mut(bb).zip(src.chunks_exact(QK32)) {
                let (mut amax, mut max) = (0f32, 0f32);
                for &v in x {
                    if v.abs() > amax {
                        amax = v.abs();
                        max = v;
                    }
                }
                let d = max / -half;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                // `as i8` truncates toward zero like C's (int8_t) cast.
                let code = |v: f32| ((v * id + off) as i8).min(levels as i8 - 1) as u8;
                pack_codes(ty, blk, qs_at, x, code);
                put_f16(blk, 0, d);
            }
        }
        GgmlType::Q4_1 | GgmlType::Q5_1 => {
            let (levels, qs_at) = if ty == GgmlType::Q4_1 {
                (16, 4)
            } else {
                (32, 8)
            };
            for (blk, x) in dst.chunks_exact_mut(bb).zip(src.chunks_exact(QK32)) {
                let min = x.iter().fold(f32::MAX, |a, &v| a.min(v));
                let max = x.iter().fold(-f32::MAX, |a, &v| a.max(v));
                let d = (max - min) / (levels - 1) as f32;
                let id = if d != 0.0 { 1.0 / d } else { 0.0 };
                let code = |v: f32| (((v - min) * id + 0.5) as i8).min(levels as i8 - 1) as u8;
                pack_codes(ty, blk, qs_at, x, code);
                put_f16(blk, 0, d);
                put_f16(blk, 2, min);
            }
        }
        _ => return false,
    }
    true
}

/// Stores 32 codes as nibbles (element j and j + 16 share byte j) plus, for
/// the 5-bit formats, their fifth bits as a u32 just before the nibbles.
fn pack_codes(ty: GgmlType, blk: &mut [u8], qs_at: usize, x: &[f32], code: impl Fn(f32) -> u8) {
    let mut qh = 0u32;
    for j in 0..16 {
        let (c0, c1) = (code(x[j]), code(x[j + 16]));
        blk[qs_at + j] = (c0 & 0x0f) | (c1 & 0x0f) << 4;
        qh |= ((c0 >> 4) as u32 & 1) << j | ((c1 >> 4) as u32 & 1) << (j + 16);
    }
    if matches!(ty, GgmlType::Q5_0 | GgmlType::Q5_1) {
        blk[qs_at - 4..qs_at].copy_from_slice(&qh.to_le_bytes());
    }
}

/// See [`super::vec_dot`].
pub fn vec_dot(ty: GgmlType, n: usize, w: &[u8], act: &[u8]) -> f32 {
    let at = ty.vec_dot_type();
    match ty {
        GgmlType::F32 => {
            let mut sum = 0f32;
            for (a, b) in w.chunks_exact(4).zip(act.chunks_exact(4)).take(n) {
                sum += f32_at(a, 0) * f32_at(b, 0);
            }
            sum
        }
        GgmlType::F16 => dot_16bit(n, w, act, f16_to_f32),
        GgmlType::BF16 => dot_16bit(n, w, act, bf16_to_f32),
        _ if ty.block_len() == QK32 => {
            let nb = whole_blocks(n, QK32, w, ty.block_bytes(), act, at.block_bytes());
            let has_min = matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1);
            let mut sum = 0f32;
            for (wb, ab) in w
                .chunks_exact(ty.block_bytes())
                .zip(act.chunks_exact(at.block_bytes()))
                .take(nb)
            {
                let b = unpack32(ty, wb);
                let qa = &ab[ab.len() - QK32..];
                let isum: i32 =
                    b.q.iter()
                        .zip(qa)
                        .map(|(&x, &y)| x as i32 * y as i8 as i32)
                        .sum();
                let da = f16_at(ab, 0);
                sum += b.d * da * isum as f32;
                if has_min {
                    // Q8_1's second field is d_a * sum(q_a), so this adds m * sum(a).
                    sum += b.m * f16_at(ab, 2);
                }
            }
            sum
        }
        _ => {
            let nb = whole_blocks(n, QK_K, w, ty.block_bytes(), act, at.block_bytes());
            let mut sum = 0f32;
            for (wb, ab) in w
                .chunks_exact(ty.block_bytes())
                .zip(act.chunks_exact(at.block_bytes()))
                .take(nb)
            {
                let b = unpack_k(ty, wb);
                let da = f32_at(ab, 0);
                let qa = &ab[4..260];
                let mut isum = 0i32;
                let mut msum = 0i32;
                for g in 0..16 {
                    let dot: i32 = b.q[g * 16..g * 16 + 16]
                        .iter()
                        .zip(&qa[g * 16..g * 16 + 16])
                        .map(|(&x, &y)| x as i32 * y as i8 as i32)
                        .sum();
                    isum += b.sc[g] as i32 * dot;
                    let bsum = i16::from_le_bytes([ab[260 + 2 * g], ab[261 + 2 * g]]);
                    msum += b.mn[g] as i32 * bsum as i32;
                }
                sum += da * b.d * isum as f32;
                if b.has_min {
                    sum -= da * b.dmin * msum as f32;
                }
            }
            sum
        }
    }
}

/// Dot product of two rows of 16-bit floats, accumulated in f32 in order.
/// Generic over the conversion so that it inlines.
#[inline]
fn dot_16bit(n: usize, w: &[u8], act: &[u8], conv: impl Fn(u16) -> f32) -> f32 {
    let mut sum = 0f32;
    for (a, b) in w.chunks_exact(2).zip(act.chunks_exact(2)).take(n) {
        sum += conv(u16::from_le_bytes([a[0], a[1]])) * conv(u16::from_le_bytes([b[0], b[1]]));
    }
    sum
}

/// See [`super::gemm`].
pub fn gemm(ty: GgmlType, n: usize, w: &[u8], act: &[u8], ntok: usize, out: &mut [f32]) {
    debug_assert!(ntok > 0 && out.len().is_multiple_of(ntok));
    let (Some(wrb), Some(arb)) = (ty.row_bytes(n), ty.vec_dot_type().row_bytes(n)) else {
        debug_assert!(false, "n = {n} is not a multiple of {}", ty.block_len());
        return;
    };
    if ntok == 0 || wrb == 0 {
        out.fill(0.0);
        return;
    }
    let rows = out.len() / ntok;
    debug_assert!(w.len() >= rows * wrb && act.len() >= ntok * arb);
    for (wrow, out_r) in w.chunks_exact(wrb).zip(out.chunks_exact_mut(ntok)) {
        for (o, arow) in out_r.iter_mut().zip(act.chunks_exact(arb)) {
            *o = vec_dot(ty, n, wrow, arow);
        }
    }
}
