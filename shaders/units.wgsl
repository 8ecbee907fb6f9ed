// Weight decoding 8 elements ("a unit") at a time, for the matrix kernels.
// Computes: unit u of a row covers 8 of its elements, in two groups of 4
//   consecutive elements starting at unit_cols_<group>(u).x and .y; and
//   unit_dot_<fmt>(rb, u, xa, xb) = sum of weight * x over the unit, with xa
//   and xb the x values of those two groups. Units are in row order, so
//   unit u lies in block u * 8 / block_len. A row has cols / 8 units; the
//   host picks a fast decoder only where its alignment holds (below) and
//   the per-element `_elem` one (any format, via load_weight) otherwise.
//   Each grouping follows its formats' packing, so that a unit reads whole
//   words of quants: `nib` (the 32-element nibble formats and IQ4_XS: a
//   word's low nibbles are 4 elements, its high nibbles the 4 sixteen
//   further on), `k64` (Q4_K/Q5_K/Q2_K/Q3_K: the two groups lie 32 apart
//   in one 64-element chunk), `q6k` (Q6_K: 64 apart in one 128-element
//   half) and `elem` (8 consecutive elements).
//   unit_w_<fmt>(rb, u) returns the unit's weights themselves (see below),
//   unit_idot_<fmt> the sum against int8 x and unit_q_<fmt> (the 32-element
//   formats and IQ4_XS) the quants and scales those two read;
//   the tiled kernel stages 32 columns at a time, so its groupings must map
//   units 4m .. 4m + 3 onto columns 32m .. 32m + 31: `nib` and `elem` do,
//   and the K-quants' unit_w decoders use `elem`.
//   Blocks of 144 (Q4_K), 176 (Q5_K), 84 (Q2_K), 136 (IQ4_XS) and 24
//   (Q5_1) bytes are read as whole words: rows of whole blocks start on
//   4-byte boundaries (the host pads mixed groups to keep it so). Q6_K
//   (210) and Q5_0 (22) blocks start on even bytes only and are read
//   through rd_w2. Q3_K's (110 bytes) are padded to 112 on the GPU
//   (`upload::block_pad`), so they start on 16-byte boundaries and are
//   read as whole words.
// Bindings: none of its own (reads `W` like dequant.wgsl, which must be
//   included too). Dispatch: none (a library). The host appends aliases
//   `unit_cols` and `unit_dot` (or `unit_w`) for the matrix's format.

// 4 bytes starting at an even byte offset: every block starts on an even
// byte, so two 16-bit halves of two words at worst. Both words are read
// (no divergent branch); the second may lie one word past the end, which
// WebGPU's bounds handling turns into a harmless zero or clamp.
fn rd_w2(b: u32) -> u32 {
    let i = b >> 2u;
    let lo = W[i];
    let hi = W[i + 1u];
    return select((lo >> 16u) | (hi << 16u), lo, (b & 2u) == 0u);
}

fn nib_lo(q: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(15u));
}

fn nib_hi(q: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(q >> 4u, q >> 12u, q >> 20u, q >> 28u) & vec4<u32>(15u));
}

fn i8x4(q: u32) -> vec4<f32> {
    let s = bitcast<i32>(q);
    return vec4<f32>(vec4<i32>(s << 24u, s << 16u, s << 8u, s) >> vec4<u32>(24u));
}

fn f16x4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}

fn bf16x4(a: u32, b: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xffff0000u, b << 16u, b & 0xffff0000u));
}

fn hsum(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// The four bytes of q as f32.
fn bytes4(q: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(255u));
}

// Bits 0..3 of h as 0 or 16 (Q5_0/Q5_1's fifth bits of four elements).
fn bits16(h: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(h, h >> 1u, h >> 2u, h >> 3u) & vec4<u32>(1u)) * 16.0;
}

// IQ4_NL's values of the low nibbles of q's four bytes.
fn iq4x4(q: u32) -> vec4<f32> {
    return iq4v4(vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(15u));
}

// Q4_K/Q5_K: the 6-bit scales and mins of sub-blocks 2c and 2c + 1 from
// the 12 scale bytes (words s0, s1, s2), as (scale 2c, scale 2c + 1,
// min 2c, min 2c + 1). Sub-blocks 0..3 keep theirs whole in the low 6 bits
// of bytes 0..3 (scales) and 4..7 (mins); 4..7 keep their low 4 bits in
// bytes 8..11 (scale low, min high nibble) and their top 2 bits in the
// spare top bits of bytes 0..7. A word's four bytes are decoded at once.
fn k4_scales(s0: u32, s1: u32, s2: u32, c: u32) -> vec4<f32> {
    return vec4<f32>(k4_scales_u(s0, s1, s2, c));
}

// The same as integers (the wide integer decoders multiply them into
// their i32 sums).
fn k4_scales_u(s0: u32, s1: u32, s2: u32, c: u32) -> vec4<u32> {
    let hi = c >= 2u;
    let sc = select(s0 & 0x3f3f3f3fu, (s2 & 0x0f0f0f0fu) | ((s0 >> 2u) & 0x30303030u), hi);
    let mn = select(s1 & 0x3f3f3f3fu, ((s2 >> 4u) & 0x0f0f0f0fu) | ((s1 >> 2u) & 0x30303030u), hi);
    let sh = 16u * (c & 1u);
    return vec4<u32>(sc >> sh, sc >> (sh + 8u), mn >> sh, mn >> (sh + 8u)) & vec4<u32>(255u);
}

// Any format: elements 8u .. 8u + 7, decoded one at a time.
fn unit_cols_elem(u: u32) -> vec2<u32> {
    return vec2<u32>(8u * u, 8u * u + 4u);
}

fn unit_dot_elem(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let k = 8u * u;
    let a = vec4<f32>(load_weight(rb, k), load_weight(rb, k + 1u), load_weight(rb, k + 2u), load_weight(rb, k + 3u));
    let b = vec4<f32>(load_weight(rb, k + 4u), load_weight(rb, k + 5u), load_weight(rb, k + 6u), load_weight(rb, k + 7u));
    return dot(a, xa) + dot(b, xb);
}

// The 32-element nibble formats: unit j of a block is its qs word j, whose
// low nibbles are elements 4j .. 4j + 3 and high nibbles 16 + 4j .. + 3.
fn unit_cols_nib(u: u32) -> vec2<u32> {
    let k = 32u * (u >> 2u) + 4u * (u & 3u);
    return vec2<u32>(k, k + 16u);
}

// Q4_0: 18-byte blocks (f16 d, 16 bytes of nibbles), value (q - 8) * d.
fn unit_dot_q4_0(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let m = vec4<f32>(8.0);
    return rd_f16(blk) * (dot(nib_lo(q) - m, xa) + dot(nib_hi(q) - m, xb));
}

// Q4_1: 20-byte blocks (f16 d, f16 m, nibbles), value q * d + m; rows are
// whole blocks, so every block is 4-byte aligned.
fn unit_dot_q4_1(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return dm.x * (dot(nib_lo(q), xa) + dot(nib_hi(q), xb)) + dm.y * (hsum(xa) + hsum(xb));
}

// IQ4_NL: Q4_0's layout with a lookup table instead of q - 8.
fn unit_dot_iq4_nl(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let lo = iq4x4(q);
    let hi = iq4x4(q >> 4u);
    return rd_f16(blk) * (dot(lo, xa) + dot(hi, xb));
}

// Q5_0: 22-byte blocks (f16 d, 32 fifth bits, nibbles as Q4_0's), value
// (q - 16) * d; the fifth bits of elements 4j .. 4j + 3 are bits 4j ..
// 4j + 3 of qh, those of 16 + 4j .. bits 16 + 4j ...
fn unit_dot_q5_0(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 22u;
    let q = rd_w2(blk + 6u + 4u * (u & 3u));
    let h = rd_w2(blk + 2u) >> (4u * (u & 3u));
    let m = vec4<f32>(16.0);
    return rd_f16(blk) * (dot(nib_lo(q) + bits16(h) - m, xa) + dot(nib_hi(q) + bits16(h >> 16u) - m, xb));
}

// Q5_1: 24-byte blocks (f16 d, f16 m, qh, nibbles), value q * d + m.
fn unit_dot_q5_1(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let bw = (rb >> 2u) + (u >> 2u) * 6u;
    let dm = unpack2x16float(W[bw]);
    let h = W[bw + 1u] >> (4u * (u & 3u));
    let q = W[bw + 2u + (u & 3u)];
    return dm.x * (dot(nib_lo(q) + bits16(h), xa) + dot(nib_hi(q) + bits16(h >> 16u), xb)) + dm.y * (hsum(xa) + hsum(xb));
}

// The K-quants' 256-element blocks. `k64`: unit 8c + w of a block covers
// elements 64c + 4w .. + 3 and 64c + 32 + 4w .. + 3 (one nibble word of
// Q4_K/Q5_K, a 2-bit pair of Q2_K/Q3_K), sub-blocks 2c and 2c + 1.
fn unit_cols_k64(u: u32) -> vec2<u32> {
    let k = 64u * (u >> 3u) + 4u * (u & 7u);
    return vec2<u32>(k, k + 32u);
}

// `q6k`: unit 16h + 8p + w of a block covers elements 128h + 32p + 4w ..
// + 3 and the 4 at 64 further on (the low and high nibbles of Q6_K's ql
// word 16h + 8p + w).
fn unit_cols_q6k(u: u32) -> vec2<u32> {
    let k = 128u * (u >> 4u) + 32u * ((u >> 3u) & 1u) + 4u * (u & 7u);
    return vec2<u32>(k, k + 64u);
}

// Q4_K: 144-byte blocks (f16 d, f16 dmin, 12 scale bytes, 128 bytes of
// nibbles: chunk c's 32 bytes hold elements 64c .. + 31 in the low
// nibbles and the next 32 in the high ones); value d * scale * q - dmin *
// min per 32-element sub-block. A unit is nibble word j of the block.
fn unit_dot_q4_k(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 36u;
    let j = u & 31u;
    let q = W[bw + 4u + j];
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], j >> 3u);
    return dm.x * (s.x * dot(nib_lo(q), xa) + s.y * dot(nib_hi(q), xb)) - dm.y * (s.z * hsum(xa) + s.w * hsum(xb));
}

// Q5_K: 176-byte blocks, Q4_K's with 32 bytes of fifth bits (qh) before
// the nibbles: bit s of qh byte l is element 32s + l's.
fn unit_dot_q5_k(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 44u;
    let j = u & 31u;
    let c = j >> 3u;
    let q = W[bw + 12u + j];
    let h = W[bw + 4u + (j & 7u)] >> (2u * c);
    let lo = (q & 0x0f0f0f0fu) | ((h & 0x01010101u) << 4u);
    let hi = ((q >> 4u) & 0x0f0f0f0fu) | ((h & 0x02020202u) << 3u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], c);
    return dm.x * (s.x * dot(bytes4(lo), xa) + s.y * dot(bytes4(hi), xb)) - dm.y * (s.z * hsum(xa) + s.w * hsum(xb));
}

// Q6_K: 210-byte blocks (128 bytes of low nibbles ql, 64 of 2-bit high
// parts qh, 16 int8 scales, f16 d), value d * scale * (q - 32) per 16
// elements. In 128-element half h, ql byte 64h + l holds elements l (low
// nibble) and 64 + l (high), ql byte 64h + 32 + l elements 32 + l and
// 96 + l, and qh byte 32h + l the high parts of elements l, 32 + l, 64 + l
// and 96 + l (2 bits each, in that order). A unit is ql word j.
fn unit_dot_q6_k(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 5u) * 210u;
    let j = u & 31u;
    let hf = j >> 4u;
    let p = (j >> 3u) & 1u;
    let w = j & 7u;
    let ql = rd_w2(blk + 4u * j);
    let qh = rd_w2(blk + 128u + 32u * hf + 4u * w) >> (2u * p);
    let lo = (ql & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u);
    let hi = ((ql >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u);
    let si = blk + 192u + 8u * hf + 2u * p + (w >> 2u);
    let m = vec4<f32>(32.0);
    return rd_f16(blk + 208u) * (f32(rd_i8(si)) * dot(bytes4(lo) - m, xa) + f32(rd_i8(si + 4u)) * dot(bytes4(hi) - m, xb));
}

// IQ4_XS: 136-byte blocks (f16 d, 16 bits of scale high parts, 4 bytes of
// scale low nibbles, then per 32-element sub-block 16 bytes of nibbles
// laid out as IQ4_NL's), value d * (scale - 32) * iq4v(q). Grouping
// `nib`: unit j of a block is nibble word j, of sub-block j / 4.
fn iq4_xs_scale(bw: u32, u: u32) -> f32 {
    let sb = (u >> 2u) & 7u;
    let w0 = W[bw];
    let ls = ((W[bw + 1u] >> (4u * sb)) & 15u) | (((w0 >> (16u + 2u * sb)) & 3u) << 4u);
    return unpack2x16float(w0).x * f32(i32(ls) - 32);
}

fn unit_dot_iq4_xs(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 34u;
    let q = W[bw + 2u + (u & 31u)];
    return iq4_xs_scale(bw, u) * (dot(iq4x4(q), xa) + dot(iq4x4(q >> 4u), xb));
}

// Q2_K: 84-byte blocks (16 scale bytes, scale low and min high nibble per
// 16 elements; 64 bytes of 2-bit quants; f16 d, f16 dmin), value d * scale
// * q - dmin * min. In 128-element half h, byte 32h + l holds elements l,
// 32 + l, 64 + l and 96 + l (2 bits each, in that order). Grouping `k64`:
// unit 8c + w is quant word 8 (c / 2) + w's pairs c % 2 * 2 and + 1.
fn unit_dot_q2_k(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 21u;
    let j = u & 31u;
    let hf = j >> 4u;
    let cp = (j >> 3u) & 1u;
    let w = j & 7u;
    let q = W[bw + 4u + 8u * hf + w] >> (4u * cp);
    // Scale bytes 8h + 4cp + w / 4 and 2 further, in one word.
    let sw = W[bw + 2u * hf + cp] >> (8u * (w >> 2u));
    let sa = sw & 255u;
    let sb = (sw >> 16u) & 255u;
    let dm = unpack2x16float(W[bw + 20u]);
    let qa = bytes4(q & 0x03030303u);
    let qb = bytes4((q >> 2u) & 0x03030303u);
    return dm.x * (f32(sa & 15u) * dot(qa, xa) + f32(sb & 15u) * dot(qb, xb)) - dm.y * (f32(sa >> 4u) * hsum(xa) + f32(sb >> 4u) * hsum(xb));
}

// Q3_K: 110-byte blocks, 112 on the GPU (32 bytes hmask, 64 bytes of 2-bit quants laid
// out as Q2_K's, 12 bytes of 6-bit scales, f16 d), value d * (scale - 32)
// * (q - 4 * (1 - hbit)); the high bit of element 128h + 32i + l is bit
// 4h + i of hmask byte l. Scale g (per 16 elements) keeps its low 4 bits
// in byte g (g < 8) or the high nibble of byte g - 8, its top 2 bits in
// bits 2 (g / 4) of byte 8 + g % 4. Grouping `k64`, as Q2_K.
fn unit_dot_q3_k(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 5u) * 112u;
    let j = u & 31u;
    let hf = j >> 4u;
    let cp = (j >> 3u) & 1u;
    let w = j & 7u;
    let bw = blk >> 2u;
    let q = W[bw + 8u + 8u * hf + w] >> (4u * cp);
    let hm = W[bw + w] >> (4u * hf + 2u * cp);
    let qa = (q & 0x03030303u) | ((hm & 0x01010101u) << 2u);
    let qb = ((q >> 2u) & 0x03030303u) | ((hm & 0x02020202u) << 1u);
    // Scales 8h + 4cp + w / 4 and 2 further: bytes w / 4 and + 2 of the
    // four scales 8h + 4cp .. + 3, decoded a word at a time.
    let lw = W[bw + 24u + cp] >> (4u * hf);
    let hw = W[bw + 26u] >> (2u * (2u * hf + cp));
    let sv = ((lw & 0x0f0f0f0fu) | ((hw & 0x03030303u) << 4u)) >> (8u * (w >> 2u));
    let sa = f32(i32(sv & 63u) - 32);
    let sb = f32(i32((sv >> 16u) & 63u) - 32);
    let m = vec4<f32>(4.0);
    return rd_f16(blk + 108u) * (sa * dot(bytes4(qa) - m, xa) + sb * dot(bytes4(qb) - m, xb));
}

// Q8_0: 34-byte blocks (f16 d, 32 int8); unit j = elements 8j .. 8j + 7.
fn unit_dot_q8_0(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    return rd_f16(blk) * (dot(i8x4(rd_w2(b)), xa) + dot(i8x4(rd_w2(b + 4u)), xb));
}

// F16 with cols % 8 == 0 (rows 16-byte aligned): 4 words per unit.
fn unit_dot_f16(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 4u * u;
    return dot(f16x4(W[w], W[w + 1u]), xa) + dot(f16x4(W[w + 2u], W[w + 3u]), xb);
}

// BF16 with cols % 8 == 0.
fn unit_dot_bf16(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 4u * u;
    return dot(bf16x4(W[w], W[w + 1u]), xa) + dot(bf16x4(W[w + 2u], W[w + 3u]), xb);
}

// F32 with cols % 8 == 0.
fn unit_dot_f32(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 8u * u;
    let a = bitcast<vec4<f32>>(vec4<u32>(W[w], W[w + 1u], W[w + 2u], W[w + 3u]));
    let b = bitcast<vec4<f32>>(vec4<u32>(W[w + 4u], W[w + 5u], W[w + 6u], W[w + 7u]));
    return dot(a, xa) + dot(b, xb);
}

// The unit's weights themselves, for kernels that stage them in shared
// memory: column 0 holds the elements at unit_cols(u).x .. + 3, column 1
// those at unit_cols(u).y .. + 3. Same preconditions as unit_dot_<fmt>.
fn unit_w_elem(rb: u32, u: u32) -> mat2x4<f32> {
    let k = 8u * u;
    return mat2x4<f32>(
        vec4<f32>(load_weight(rb, k), load_weight(rb, k + 1u), load_weight(rb, k + 2u), load_weight(rb, k + 3u)),
        vec4<f32>(load_weight(rb, k + 4u), load_weight(rb, k + 5u), load_weight(rb, k + 6u), load_weight(rb, k + 7u)));
}

fn unit_w_q4_0(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let d = rd_f16(blk);
    let m = vec4<f32>(8.0);
    return mat2x4<f32>((nib_lo(q) - m) * d, (nib_hi(q) - m) * d);
}

fn unit_w_q4_1(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return mat2x4<f32>(nib_lo(q) * dm.x + dm.y, nib_hi(q) * dm.x + dm.y);
}

fn unit_w_iq4_nl(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let d = rd_f16(blk);
    let lo = iq4x4(q);
    let hi = iq4x4(q >> 4u);
    return mat2x4<f32>(lo * d, hi * d);
}

fn unit_w_q5_0(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 22u;
    let q = rd_w2(blk + 6u + 4u * (u & 3u));
    let h = rd_w2(blk + 2u) >> (4u * (u & 3u));
    let d = rd_f16(blk);
    let m = vec4<f32>(16.0);
    return mat2x4<f32>((nib_lo(q) + bits16(h) - m) * d, (nib_hi(q) + bits16(h >> 16u) - m) * d);
}

fn unit_w_q5_1(rb: u32, u: u32) -> mat2x4<f32> {
    let bw = (rb >> 2u) + (u >> 2u) * 6u;
    let dm = unpack2x16float(W[bw]);
    let h = W[bw + 1u] >> (4u * (u & 3u));
    let q = W[bw + 2u + (u & 3u)];
    return mat2x4<f32>((nib_lo(q) + bits16(h)) * dm.x + dm.y, (nib_hi(q) + bits16(h >> 16u)) * dm.x + dm.y);
}

fn unit_w_iq4_xs(rb: u32, u: u32) -> mat2x4<f32> {
    let bw = (rb >> 2u) + (u >> 5u) * 34u;
    let q = W[bw + 2u + (u & 31u)];
    let dl = iq4_xs_scale(bw, u);
    return mat2x4<f32>(iq4x4(q) * dl, iq4x4(q >> 4u) * dl);
}

// The K-quants' unit_w decoders take grouping `elem`: unit j of a block is
// elements 8j .. 8j + 7, in sub-block j / 4 (Q4_K/Q5_K) or 16-element
// scale group j / 2 (Q6_K/Q2_K/Q3_K), read as two words of quants. Each
// format's quants and scales come from one decoder, unit_r_<fmt>, which
// the integer prefill tile (units_q.wgsl) reads too: UnitQ's q holds the
// unit's quants as unsigned bytes (below 0x80), and with sm = (s, m) its
// weights are s * q + m (Q4_K, Q5_K, Q2_K: m = -dmin * min) or s * (q - o)
// with the format's fixed offset o (Q6_K: 32, Q3_K: 4; m = 0).

struct UnitQ {
    q: vec2<u32>,
    sm: vec2<f32>,
}

fn unit_w_min(r: UnitQ) -> mat2x4<f32> {
    return mat2x4<f32>(bytes4(r.q.x) * r.sm.x + r.sm.y, bytes4(r.q.y) * r.sm.x + r.sm.y);
}

fn unit_w_off(r: UnitQ, o: f32) -> mat2x4<f32> {
    let m = vec4<f32>(o);
    return mat2x4<f32>((bytes4(r.q.x) - m) * r.sm.x, (bytes4(r.q.y) - m) * r.sm.x);
}

fn unit_r_q4_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 36u;
    let sb = (u >> 2u) & 7u;
    let qw = bw + 4u + 8u * (sb >> 1u) + 2u * (u & 3u);
    let sh = 4u * (sb & 1u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], sb >> 1u);
    let sm = select(s.xz, s.yw, (sb & 1u) == 1u);
    let q = vec2<u32>((W[qw] >> sh) & 0x0f0f0f0fu, (W[qw + 1u] >> sh) & 0x0f0f0f0fu);
    return UnitQ(q, vec2<f32>(dm.x * sm.x, -(dm.y * sm.y)));
}

fn unit_w_q4_k(rb: u32, u: u32) -> mat2x4<f32> {
    return unit_w_min(unit_r_q4_k(rb, u));
}

fn unit_r_q5_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 44u;
    let sb = (u >> 2u) & 7u;
    let i = 2u * (u & 3u);
    let qw = bw + 12u + 8u * (sb >> 1u) + i;
    let sh = 4u * (sb & 1u);
    let q0 = ((W[qw] >> sh) & 0x0f0f0f0fu) | (((W[bw + 4u + i] >> sb) & 0x01010101u) << 4u);
    let q1 = ((W[qw + 1u] >> sh) & 0x0f0f0f0fu) | (((W[bw + 5u + i] >> sb) & 0x01010101u) << 4u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], sb >> 1u);
    let sm = select(s.xz, s.yw, (sb & 1u) == 1u);
    return UnitQ(vec2<u32>(q0, q1), vec2<f32>(dm.x * sm.x, -(dm.y * sm.y)));
}

fn unit_w_q5_k(rb: u32, u: u32) -> mat2x4<f32> {
    return unit_w_min(unit_r_q5_k(rb, u));
}

fn unit_r_q6_k(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 5u) * 210u;
    let hf = (u >> 4u) & 1u;
    let qt = (u >> 2u) & 3u;
    let l = 8u * (u & 3u);
    let lb = blk + 64u * hf + 32u * (qt & 1u) + l;
    let sh = 4u * (qt >> 1u);
    let hb = blk + 128u + 32u * hf + l;
    let q0 = ((rd_w2(lb) >> sh) & 0x0f0f0f0fu) | (((rd_w2(hb) >> (2u * qt)) & 0x03030303u) << 4u);
    let q1 = ((rd_w2(lb + 4u) >> sh) & 0x0f0f0f0fu) | (((rd_w2(hb + 4u) >> (2u * qt)) & 0x03030303u) << 4u);
    let dl = rd_f16(blk + 208u) * f32(rd_i8(blk + 192u + ((u & 31u) >> 1u)));
    return UnitQ(vec2<u32>(q0, q1), vec2<f32>(dl, 0.0));
}

fn unit_w_q6_k(rb: u32, u: u32) -> mat2x4<f32> {
    return unit_w_off(unit_r_q6_k(rb, u), 32.0);
}

fn unit_r_q2_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 21u;
    let j = u & 31u;
    let qw = bw + 4u + 8u * (j >> 4u) + 2u * (j & 3u);
    let sh = 2u * ((j >> 2u) & 3u);
    let s = (W[bw + (j >> 3u)] >> (8u * ((j >> 1u) & 3u))) & 255u;
    let dm = unpack2x16float(W[bw + 20u]);
    let q = vec2<u32>((W[qw] >> sh) & 0x03030303u, (W[qw + 1u] >> sh) & 0x03030303u);
    return UnitQ(q, vec2<f32>(dm.x * f32(s & 15u), -(dm.y * f32(s >> 4u))));
}

fn unit_w_q2_k(rb: u32, u: u32) -> mat2x4<f32> {
    return unit_w_min(unit_r_q2_k(rb, u));
}

fn unit_r_q3_k(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 5u) * 112u;
    let j = u & 31u;
    let hf = j >> 4u;
    let i = (j >> 2u) & 3u;
    let l = 8u * (j & 3u);
    let bw = blk >> 2u;
    let qw = bw + 8u + 8u * hf + (l >> 2u);
    let hs = 4u * hf + i;
    let q0 = ((W[qw] >> (2u * i)) & 0x03030303u) | (((W[bw + (l >> 2u)] >> hs) & 0x01010101u) << 2u);
    let q1 = ((W[qw + 1u] >> (2u * i)) & 0x03030303u) | (((W[bw + (l >> 2u) + 1u] >> hs) & 0x01010101u) << 2u);
    let g = j >> 1u;
    let low = (rd_u8(blk + 96u + (g & 7u)) >> (4u * (g >> 3u))) & 15u;
    let high = (rd_u8(blk + 104u + (g & 3u)) >> (2u * (g >> 2u))) & 3u;
    let dl = rd_f16(blk + 108u) * f32(i32(low | (high << 4u)) - 32);
    return UnitQ(vec2<u32>(q0, q1), vec2<f32>(dl, 0.0));
}

fn unit_w_q3_k(rb: u32, u: u32) -> mat2x4<f32> {
    return unit_w_off(unit_r_q3_k(rb, u), 4.0);
}

fn unit_w_q8_0(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    let d = rd_f16(blk);
    return mat2x4<f32>(i8x4(rd_w2(b)) * d, i8x4(rd_w2(b + 4u)) * d);
}

fn unit_w_f16(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 4u * u;
    return mat2x4<f32>(f16x4(W[w], W[w + 1u]), f16x4(W[w + 2u], W[w + 3u]));
}

fn unit_w_bf16(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 4u * u;
    return mat2x4<f32>(bf16x4(W[w], W[w + 1u]), bf16x4(W[w + 2u], W[w + 3u]));
}

fn unit_w_f32(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 8u * u;
    return mat2x4<f32>(
        bitcast<vec4<f32>>(vec4<u32>(W[w], W[w + 1u], W[w + 2u], W[w + 3u])),
        bitcast<vec4<f32>>(vec4<u32>(W[w + 4u], W[w + 5u], W[w + 6u], W[w + 7u])));
}

// Integer unit decoders, for the int8-x matvec (quantize_x.wgsl):
// unit_idot_<fmt>(rb, u, xa, xc, da, dc) = the same sum as unit_dot_<fmt>
// with x given as packed int8 words (xa: the 4 elements at
// unit_cols(u).x, xc: those at .y) and their blocks' scales da, dc. Each
// decoder packs its weights' quants into signed int8 words too, so that
// a 4-element sum is one dot4I8Packed (an integer dot instruction where
// the device has one, naga's exact polyfill otherwise), and applies the
// scales in f32 once per 4 elements. Offsets (Q4_0's -8, Q6_K's -32) are
// folded into the bytes: (n + 0x80 - o) ^ 0x80 maps an unsigned byte n
// < 0x80 + o ... to the int8 n - o with no carry between bytes; mins
// (Q4_1, Q5_1, the K-quants) multiply the sum of x, dot4I8Packed(1, x).
// Same groupings and alignment as unit_dot_<fmt>.

const ONES: u32 = 0x01010101u;

// The bytes of q (each < 0x80) minus o, as packed int8 (`off` = (0x80 -
// o) in every byte).
fn i8_off(q: u32, off: u32) -> u32 {
    return (q + off) ^ 0x80808080u;
}

fn idot(w: u32, x: u32) -> f32 {
    return f32(dot4I8Packed(w, x));
}

// The 32-element formats' quants and scales as UnitQ (grouping `nib`,
// Q8_0 `elem`), the fixed offsets folded into the bytes: read by the
// integer decode here and by the integer prefill tile (units_q.wgsl).
fn unit_q_q8_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    return UnitQ(vec2<u32>(rd_w2(b), rd_w2(b + 4u)), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q4_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let lo = i8_off(q & 0x0f0f0f0fu, 0x78787878u);
    let hi = i8_off((q >> 4u) & 0x0f0f0f0fu, 0x78787878u);
    return UnitQ(vec2<u32>(lo, hi), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q4_1(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return UnitQ(vec2<u32>(q & 0x0f0f0f0fu, (q >> 4u) & 0x0f0f0f0fu), dm);
}

fn unit_q_iq4_nl(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    return UnitQ(vec2<u32>(iq4_bytes(q), iq4_bytes(q >> 4u)), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q5_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 22u;
    let q = rd_w2(blk + 6u + 4u * (u & 3u));
    let h = rd_w2(blk + 2u) >> (4u * (u & 3u));
    let lo = i8_off((q & 0x0f0f0f0fu) | bits16_bytes(h), 0x70707070u);
    let hi = i8_off(((q >> 4u) & 0x0f0f0f0fu) | bits16_bytes(h >> 16u), 0x70707070u);
    return UnitQ(vec2<u32>(lo, hi), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q5_1(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 2u) * 6u;
    let dm = unpack2x16float(W[bw]);
    let h = W[bw + 1u] >> (4u * (u & 3u));
    let q = W[bw + 2u + (u & 3u)];
    let lo = (q & 0x0f0f0f0fu) | bits16_bytes(h);
    let hi = ((q >> 4u) & 0x0f0f0f0fu) | bits16_bytes(h >> 16u);
    return UnitQ(vec2<u32>(lo, hi), dm);
}

fn unit_q_iq4_xs(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 34u;
    let q = W[bw + 2u + (u & 31u)];
    return UnitQ(vec2<u32>(iq4_bytes(q), iq4_bytes(q >> 4u)), vec2<f32>(iq4_xs_scale(bw, u), 0.0));
}

// A unit's integer sum against x's two words, from its UnitQ: s * sum
// for the formats without a min (m = 0), s * sum + m * sum(x) for Q4_1
// and Q5_1.
fn idot_s(r: UnitQ, xa: u32, xc: u32, da: f32) -> f32 {
    return r.sm.x * da * f32(dot4I8Packed(r.q.x, xa) + dot4I8Packed(r.q.y, xc));
}

fn idot_sm(r: UnitQ, xa: u32, xc: u32, da: f32) -> f32 {
    let s = dot4I8Packed(r.q.x, xa) + dot4I8Packed(r.q.y, xc);
    return da * (r.sm.x * f32(s) + r.sm.y * f32(dot4I8Packed(ONES, xa) + dot4I8Packed(ONES, xc)));
}

fn unit_idot_q8_0(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_s(unit_q_q8_0(rb, u), xa, xc, da);
}

// Q2_K and Q3_K: unit_r's units are 8 consecutive elements (grouping
// `elem`) inside one 16-element scale group; Q3_K's -4 folded into the
// bytes, Q2_K's min times the sum of x.
fn unit_idot_q2_k(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_sm(unit_r_q2_k(rb, u), xa, xc, da);
}

fn unit_idot_q3_k(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    let r = unit_r_q3_k(rb, u);
    return idot_s(UnitQ(vec2<u32>(i8_off(r.q.x, 0x7c7c7c7cu), i8_off(r.q.y, 0x7c7c7c7cu)), r.sm), xa, xc, da);
}

fn unit_idot_q4_0(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_s(unit_q_q4_0(rb, u), xa, xc, da);
}

fn unit_idot_q4_1(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_sm(unit_q_q4_1(rb, u), xa, xc, da);
}

fn unit_idot_iq4_nl(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_s(unit_q_iq4_nl(rb, u), xa, xc, da);
}

// Bits 0..3 of h as bit 4 of four bytes (Q5_0/Q5_1's fifth bits).
fn bits16_bytes(h: u32) -> u32 {
    return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u;
}

fn unit_idot_q5_0(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_s(unit_q_q5_0(rb, u), xa, xc, da);
}

fn unit_idot_q5_1(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_sm(unit_q_q5_1(rb, u), xa, xc, da);
}

// IQ4_NL's values of the low nibbles of q's four bytes, as packed int8
// (the bytes of the IQ4_W words: two selects and a shift, no array).
fn iq4_bytes(q: u32) -> u32 {
    let v = vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(15u);
    let b4 = (v & vec4<u32>(4u)) != vec4<u32>(0u);
    let lo = select(vec4<u32>(IQ4_W0), vec4<u32>(IQ4_W1), b4);
    let hi = select(vec4<u32>(IQ4_W2), vec4<u32>(IQ4_W3), b4);
    let w = select(lo, hi, v >= vec4<u32>(8u));
    let b = (w >> ((v & vec4<u32>(3u)) * 8u)) & vec4<u32>(255u);
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

fn unit_idot_iq4_xs(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    return idot_s(unit_q_iq4_xs(rb, u), xa, xc, da);
}

// Q4_K/Q5_K: the two groups are sub-blocks 2c and 2c + 1 (x blocks of
// their own, da and dc), each with its scale and min.
fn unit_idot_q4_k(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 36u;
    let j = u & 31u;
    let q = W[bw + 4u + j];
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], j >> 3u);
    let ia = idot(q & 0x0f0f0f0fu, xa);
    let ic = idot((q >> 4u) & 0x0f0f0f0fu, xc);
    return da * (dm.x * s.x * ia - dm.y * s.z * idot(ONES, xa)) + dc * (dm.x * s.y * ic - dm.y * s.w * idot(ONES, xc));
}

fn unit_idot_q5_k(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    let bw = (rb >> 2u) + (u >> 5u) * 44u;
    let j = u & 31u;
    let c = j >> 3u;
    let q = W[bw + 12u + j];
    let h = W[bw + 4u + (j & 7u)] >> (2u * c);
    let lo = (q & 0x0f0f0f0fu) | ((h & 0x01010101u) << 4u);
    let hi = ((q >> 4u) & 0x0f0f0f0fu) | ((h & 0x02020202u) << 3u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], c);
    return da * (dm.x * s.x * idot(lo, xa) - dm.y * s.z * idot(ONES, xa)) + dc * (dm.x * s.y * idot(hi, xc) - dm.y * s.w * idot(ONES, xc));
}

// Q6_K: the groups lie 64 apart (x blocks of their own), 6-bit quants
// minus 32 as int8.
fn unit_idot_q6_k(rb: u32, u: u32, xa: u32, xc: u32, da: f32, dc: f32) -> f32 {
    let blk = rb + (u >> 5u) * 210u;
    let j = u & 31u;
    let hf = j >> 4u;
    let p = (j >> 3u) & 1u;
    let w = j & 7u;
    let ql = rd_w2(blk + 4u * j);
    let qh = rd_w2(blk + 128u + 32u * hf + 4u * w) >> (2u * p);
    let lo = i8_off((ql & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u), 0x60606060u);
    let hi = i8_off(((ql >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u), 0x60606060u);
    let si = blk + 192u + 8u * hf + 2u * p + (w >> 2u);
    return rd_f16(blk + 208u) * (f32(rd_i8(si)) * da * idot(lo, xa) + f32(rd_i8(si + 4u)) * dc * idot(hi, xc));
}
